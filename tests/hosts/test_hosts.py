"""A search on several hosts that share no disk (see ``conftest.py``): checkpoints travel
from worker to worker through Dask, never through this kernel, as a trial migrates and
resizes across hosts; the kernel loads the best weights it copied in the background, and a
host whose link is cut mid-search costs no completed work."""

import threading
import time
import warnings
from collections import Counter

import pytest
from distributed import Client

from hypersched_nb import Experiment
from hypersched_nb.core.decisions import CONTINUE, Verdict
from hypersched_nb.core.events import Result, Start, WorkersChanged
from hypersched_nb.core.policies import Policy, create
from hypersched_nb.core.trial import TrialState
from hypersched_nb.errors import ConfigError
from hypersched_nb.experiment.driver import Driver
from hypersched_nb.runtime import DaskRuntime, WallClock, load_checkpoint, start_cluster
from hypersched_nb.runtime.checkpoint import written_checkpoint
from hypersched_nb.testing.trainables import TinyRegression
from hypersched_nb.train.context import TrainContext

pytestmark = pytest.mark.cluster


class Plan(Policy):
    """One trial on ``plan[i]`` workers for epoch i + 1, paused once after ``pause_after``."""

    name = "plan"

    def __init__(self, plan, pause_after):
        self.plan, self.pause_after, self.paused = plan, pause_after, False

    def on_trial_result(self, trial, result, ctx):
        if result.epoch == self.pause_after and not self.paused:
            self.paused = True
            return Verdict.pause("to move it")
        return CONTINUE

    def allocate(self, ctx):
        return {
            tid: self.plan[min(t.epochs + 1, len(self.plan) - 1)] for tid, t in ctx.running.items()
        }


class Placed:
    """The runtime as the driver sees it, keeping its events, and for each Start the trial,
    where it went and the checkpoint it restored from (read at its first Result: a start
    waits for the checkpoints still being written or copied when it came)."""

    def __init__(self, runtime):
        self.runtime, self.events, self._starts, self._waiting = runtime, [], [], {}

    def workers(self):
        return self.runtime.workers()

    def execute(self, ins):
        self.runtime.execute(ins)
        if type(ins) is Start:
            tid = ins.trial_id
            self._waiting[tid] = len(self._starts)
            self._starts.append([tid, self.runtime.placement(tid), None])

    def advance(self, until):
        events = self.runtime.advance(until)
        self.events += events
        for e in events:
            if type(e) is Result and e.trial_id in self._waiting:
                self._starts[self._waiting.pop(e.trial_id)][2] = self.runtime.restored_from(
                    e.trial_id
                )
        return events

    @property
    def starts(self) -> list[tuple]:
        return [tuple(s) for s in self._starts]

    @property
    def results(self) -> list[Result]:
        return [e for e in self.events if type(e) is Result]


def attached(hosts) -> Client:
    client, _ = start_cluster(address=hosts.scheduler)
    client.wait_for_workers(len(hosts.names), timeout=120)
    return client


def runtime_on(client: Client, clock: WallClock, hosts, **options) -> DaskRuntime:
    """A runtime training :class:`TinyRegression` on the hosts, checkpointing under their
    folder (a disk of each host's own)."""
    return DaskRuntime(
        TinyRegression, client=client, clock=clock, metric="loss", mode="min",
        checkpoint_dir=str(hosts.folder), **options,
    )  # fmt: skip


def plain_digests(config: dict, seed: int, epochs: int) -> list[str]:
    """The weights' digest after each epoch of one uninterrupted run, in this process."""
    trainable = TinyRegression()
    trainable.setup(config, TrainContext(seed=seed))
    return [trainable.step()["digest"] for _ in range(epochs)]


def test_a_trial_resizes_and_moves_across_hosts_that_share_no_disk(hosts):
    """Epochs 3-4 on two hosts (one process group across them); paused after epoch 4 and
    resumed on the third host, whose disk never held its checkpoint: the bytes come from
    the host that wrote them, through Dask and not this kernel, and it goes on from them,
    not from the start."""
    client = attached(hosts)
    try:
        clock = WallClock()
        runtime = runtime_on(client, clock, hosts)
        placed = Placed(runtime)
        driver = Driver(
            Plan([1, 1, 2, 2, 1, 1], pause_after=4), placed, clock, iter([{"lr": 0.05}]),
            deadline=600.0, max_epochs=6, mode="min",
        )  # fmt: skip
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            driver.run()
            runtime.close()
    finally:
        client.close()
    results, others = placed.results, [e for e in placed.events if type(e) is not Result]
    assert [r.epoch for r in results] == [1, 2, 3, 4, 5, 6], others  # each once, in order
    assert [r.workers for r in results] == [1, 1, 2, 2, 1, 1]
    assert all(r.info["replica_gap"] == 0.0 for r in results)  # the group agreed across hosts
    assert len(placed.starts) == 2, (placed.starts, others)  # no other: no host was lost
    (_, first, _), (_, resumed, restored) = placed.starts
    assert resumed[0] not in first  # resumed on a host that had not held it
    assert restored is not None and restored.epoch == 4  # the pause's: every epoch reported
    assert not [w for w in said if "restored" in str(w.message)]  # from its checkpoint
    traffic = runtime.checkpoint_traffic()  # the resize's second host, then the move
    assert traffic.sent == 0 and traffic.shipped >= 2  # from worker to worker
    # the kernel holds a copy of the last checkpoint and the best weights, and loads them
    assert written_checkpoint(str(hosts.folder), 0, at_most=6) is not None
    best = runtime.best_checkpoint()
    assert best is not None
    assert set(load_checkpoint(best.url, best.sha256)) == {"model", "opt", "epoch", "ballast"}


def test_a_trial_moves_to_another_host_with_its_exact_weights(hosts):
    """Paused after epoch 3 on one host and resumed on another: epoch by epoch, the same
    weights as one uninterrupted run."""
    client = attached(hosts)
    try:
        clock = WallClock()
        runtime = runtime_on(client, clock, hosts)
        placed = Placed(runtime)
        driver = Driver(
            Plan([1], pause_after=3), placed, clock, iter([{"lr": 0.05}]),
            deadline=600.0, max_epochs=6, mode="min", journal=True,
        )  # fmt: skip
        driver.run()
        runtime.close()
        seed = runtime.trial_seed(0)
    finally:
        client.close()
    (_, first, _), (_, resumed, _) = placed.starts
    assert first != resumed
    traffic = runtime.checkpoint_traffic()
    assert traffic.sent == 0 and traffic.shipped >= 1  # from worker to worker
    assert [r.info["digest"] for r in placed.results] == plain_digests({"lr": 0.05}, seed, 6)


def test_a_host_cut_off_mid_search_loses_no_completed_work(hosts_lost_soon):
    """Host 2's link goes down while it trains: its trial resumes on another host from the
    last checkpoint this kernel had a copy of, every epoch is reported once, and the search
    ends by its deadline."""
    hosts = hosts_lost_soon
    client, watch = attached(hosts), Client(hosts.scheduler, timeout=60)
    try:
        clock = WallClock()
        # an epoch per task, so that each epoch's checkpoint comes home between two of the
        # host's tasks (a batch of epochs holds the host's one thread until it ends)
        runtime = runtime_on(client, clock, hosts, batch_seconds=0.01)  # < an epoch
        placed = Placed(runtime)
        configs = [{"lr": 0.01 + 0.01 * i, "sleep": 0.3} for i in range(4)]
        driver = Driver(
            create("fifo"), placed, clock, iter(configs), deadline=90.0, max_epochs=10,
            mode="min", journal=True,
        )  # fmt: skip
        cutter = threading.Thread(
            target=cut_when_training, args=(watch, hosts, 2, placed), daemon=True
        )
        cutter.start()
        outcome = driver.run()
        runtime.close()
        cutter.join()
    finally:
        watch.close()
        client.close()
    assert outcome.ended_at <= 90.0
    lost = [e for e in placed.events if type(e) is WorkersChanged and e.lost]
    assert len(lost) == 1 and len(lost[0].lost) == 1
    (tid,) = lost[0].lost
    before = [r.epoch for r in placed.results if r.trial_id == tid and r.time < lost[0].time]
    (cut_off, resumed) = [where for t, where, _ in placed.starts if t == tid]
    assert cut_off == ["host-2"] and resumed != ["host-2"]
    restored = [ckpt for t, _, ckpt in placed.starts if t == tid][1]
    assert restored is not None and before[-1] - 1 <= restored.epoch <= before[-1]
    assert runtime.checkpoint_traffic().sent > 0  # no worker has its disk: this kernel's copy
    for t in driver.trials.values():  # every epoch of every trial, once, in order
        assert t.state is TrialState.TERMINATED
        assert [r.epoch for r in placed.results if r.trial_id == t.trial_id] == list(range(1, 11))
    best = min(placed.results, key=lambda r: r.metric)
    weights = runtime.best_checkpoint()
    assert (weights.trial_id, weights.epoch) == (best.trial_id, best.epoch)
    assert load_checkpoint(weights.url, weights.sha256)["epoch"] == best.epoch


def cut_when_training(watch: Client, hosts, host: int, placed: Placed) -> None:
    """Cut ``host``'s link once its worker trains a trial this kernel holds a checkpoint of
    (copied from that host), so that there is one to resume from, and that has epochs left
    after the one in flight (its last may be reported before the cut is noticed)."""
    end = time.monotonic() + 120
    address = None
    while address is None and time.monotonic() < end:  # its worker may not be listed yet
        named = {w["name"]: a for a, w in watch.scheduler_info(n_workers=-1)["workers"].items()}
        address = named.get(hosts.names[host])
        time.sleep(0 if address else 0.2)
    end = time.monotonic() + 60
    while time.monotonic() < end:
        keys = watch.processing(workers=[address]).get(address, [])
        trials = [
            int(str(k).split("-")[2])
            for k in keys
            if str(k).startswith(("hs-epoch-", "hs-epochs-"))
        ]
        reported = Counter(r.trial_id for r in placed.results)
        if any(
            reported[tid] <= 7 and list(hosts.folder.glob(f"trial-{tid:05d}/epoch-*.pt"))
            for tid in trials
        ):
            hosts.cut(host)
            return
        time.sleep(0.05)


def test_load_best_in_the_kernel_reads_weights_a_host_wrote(hosts):
    configs = [{"lr": 0.01 + 0.02 * i} for i in range(3)]
    exp = Experiment(
        TinyRegression, configs, metric="loss", mode="min", deadline="60s", max_epochs=4,
        policy="fifo", cluster=hosts.scheduler, checkpoint_dir=str(hosts.folder),
    )  # fmt: skip
    exp.run()
    best, model = exp.best, exp.load_best()
    assert model.epoch == best.epoch
    assert loss_of(model) == pytest.approx(best.metric, rel=1e-6)


def loss_of(model: TinyRegression) -> float:
    import torch

    with torch.no_grad():
        return torch.nn.functional.mse_loss(model.net(model.x), model.y).item()


def test_a_checkpoint_url_that_is_not_one_store_for_every_host_is_one_line(hosts):
    client = attached(hosts)
    try:
        with pytest.raises(ConfigError) as err:
            DaskRuntime(
                TinyRegression, client=client, clock=WallClock(), metric="loss",
                checkpoint_dir=f"file://{hosts.folder}",
            )  # fmt: skip
    finally:
        client.close()
    message = str(err.value)
    assert "\n" not in message
    assert f"file://{hosts.folder}" in message and "(host 10.213." in message
    assert "this kernel (host " in message and "a local folder" in message
