"""A cluster started with the ``dask scheduler`` and ``dask worker`` commands on loopback,
attached by address: workers are slots by the names they were given."""

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from hypersched_nb.core.policies import create
from hypersched_nb.core.trial import TrialState
from hypersched_nb.experiment.driver import Driver
from hypersched_nb.runtime import DaskRuntime, WallClock, start_cluster
from hypersched_nb.testing.trainables import TinyRegression

pytestmark = pytest.mark.cluster


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def scheduler_address():
    dask = str(Path(sys.executable).with_name("dask"))
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    procs = [
        subprocess.Popen(
            [
                dask,
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--dashboard-address",
                ":0",
            ],
            **quiet,
        )
    ]
    for i in range(2):
        procs.append(subprocess.Popen(
            [dask, "worker", address, "--nthreads", "1", "--nworkers", "1", "--name", f"ext-{i}",
             "--host", "127.0.0.1", "--no-dashboard", "--no-nanny"], **quiet,
        ))  # fmt: skip
    try:
        yield address, procs[0]
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def test_a_search_runs_on_a_cluster_attached_by_address(scheduler_address, tmp_path):
    address, scheduler = scheduler_address
    client, close = start_cluster(address=address)
    try:
        client.wait_for_workers(2, timeout=120)
        clock = WallClock()
        runtime = DaskRuntime(
            TinyRegression, client=client, clock=clock, metric="loss", checkpoint_dir=str(tmp_path)
        )
        assert runtime.workers() == 2
        placed = []
        driver = Driver(
            create("random", max_epochs=3), runtime, clock, iter([{"lr": 0.05}, {"lr": 0.02}]),
            deadline=120.0, max_epochs=3, mode="min",
            on_trial_over=lambda t, ending: placed.append(t.trial_id),
        )  # fmt: skip
        names = set()
        real_execute = runtime.execute

        def execute(ins):
            real_execute(ins)
            names.update(runtime.placement(getattr(ins, "trial_id", -1)))

        runtime.execute = execute
        driver.run()
        runtime.close()
    finally:
        close()
    assert all(t.state is TrialState.TERMINATED and t.epochs == 3 for t in driver.trials.values())
    assert names == {"ext-0", "ext-1"}  # slots are the names given to `dask worker`
    assert scheduler.poll() is None  # closing an attached client leaves the cluster running
