"""The same search on a cluster Dask starts over SSH (``distributed.SSHCluster``, as
``docs/guide/clusters.md`` shows): the scheduler on one host, a worker on each of two
others, every host with a disk of its own (see ``conftest.py``)."""

import os
import sys

import pytest
from distributed import Client, SSHCluster

from hypersched_nb import Experiment
from hypersched_nb.testing.trainables import TinyRegression
from tests.hosts.test_hosts import loss_of

pytestmark = pytest.mark.cluster


def test_a_search_runs_on_an_ssh_cluster_whose_hosts_share_no_disk(ssh_hosts):
    scheduler, *workers = ssh_hosts.addresses
    with SSHCluster(
        ssh_hosts.addresses, connect_options=ssh_hosts.connect_options,
        worker_options={"nthreads": 1},
        # its address on its own link (a host with no default route would take 127.0.0.1)
        scheduler_options={"host": scheduler, "port": 0, "dashboard_address": None},
        remote_python=sys.executable,
    ) as cluster, Client(cluster) as client:  # fmt: skip
        client.wait_for_workers(2, timeout=120)
        assert cluster.scheduler_address.startswith(f"tcp://{scheduler}:")
        hosts = {w["host"] for w in client.scheduler_info()["workers"].values()}
        assert hosts == set(workers)  # the scheduler is out of this process and its host
        configs = [{"lr": 0.01 + 0.015 * i, "sleep": 0.2} for i in range(6)]
        exp = Experiment(
            TinyRegression, configs, metric="loss", mode="min", deadline="90s", max_epochs=4,
            policy="asha", cluster=client, checkpoint_dir=str(ssh_hosts.folder),
        )  # fmt: skip
        exp.run()
        snap = exp.statistics()
        assert snap.status == "finished" and snap.stopped == len(configs)
        written = client.run(_files_under, str(ssh_hosts.folder))
        assert len(written) == 2 and all(written.values())  # both hosts trained, each on its disk
        best, model = exp.best, exp.load_best()  # weights a host wrote, copied to the kernel
        assert model.epoch == best.epoch
        assert loss_of(model) == pytest.approx(best.metric, rel=1e-6)


def _files_under(folder: str) -> list[str]:
    return [os.path.join(d, f) for d, _, files in os.walk(folder) for f in files]
