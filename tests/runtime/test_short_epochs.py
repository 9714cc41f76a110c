"""Short epochs on a local cluster of 2 single-threaded worker processes: a single-worker
trial trains a batch of epochs per task and still reports every epoch, once, in order; a
pause, a stop or a resize decided mid-batch halts the batch at its next boundary and the
trial goes on from the last checkpoint it reported, with the weights of straight training;
a trial on two workers keeps one epoch per task."""

import math

import pytest

from hypersched_nb.core.decisions import CONTINUE, Verdict
from hypersched_nb.core.events import Continue, Result, Start, Stop
from hypersched_nb.core.policies import Policy, create
from hypersched_nb.core.trial import TrialState
from hypersched_nb.experiment.driver import Driver
from hypersched_nb.runtime import DaskRuntime, WallClock, start_cluster
from hypersched_nb.testing.trainables import TinyRegression

pytestmark = pytest.mark.cluster

SHORT = {"lr": 0.05, "sleep": 0.02}  # 20 ms epochs: dozens to a one-second batch


@pytest.fixture(scope="module")
def client():
    client, close = start_cluster(2)
    yield client
    close()


class PauseOnce(Policy):
    """Goes on with every trial, but pauses the first at epoch ``at``, once."""

    name = "pause-once"

    def __init__(self, at):
        self.at, self.paused = at, False

    def on_trial_result(self, trial, result, ctx):
        if result.epoch == self.at and not self.paused:
            self.paused = True
            return Verdict.pause("scripted")
        return CONTINUE


class Recorder:
    """The runtime as the driver sees it, keeping every event."""

    def __init__(self, runtime):
        self.runtime, self.events = runtime, []

    def workers(self):
        return self.runtime.workers()

    def execute(self, ins):
        self.runtime.execute(ins)

    def advance(self, until):
        found = self.runtime.advance(until)
        self.events += found
        return found

    def epochs(self, tid):
        return [e.epoch for e in self.events if type(e) is Result and e.trial_id == tid]

    def digests(self, tid):
        return [e.info["digest"] for e in self.events if type(e) is Result and e.trial_id == tid]


def runtime_on(client, folder, clock, **kw):
    return DaskRuntime(
        TinyRegression, client=client, clock=clock, metric="loss", mode="min",
        checkpoint_dir=str(folder), **kw,
    )  # fmt: skip


def task_names(runtime):
    """The names of the tasks ``runtime`` sends from now on (its board's, wrapped)."""
    board, names = runtime._board, []
    submit = board.submit

    def counting(fn, *args, name, **kwargs):
        names.append(name)
        return submit(fn, *args, name=name, **kwargs)

    board.submit = counting
    return names


def search(client, folder, policy, config, *, max_epochs, **runtime_kw):
    clock = WallClock()
    runtime = runtime_on(client, folder, clock, **runtime_kw)
    names, rec = task_names(runtime), Recorder(runtime)
    driver = Driver(policy, rec, clock, iter([config]), deadline=120.0, max_epochs=max_epochs,
                    mode="min")  # fmt: skip
    try:
        driver.run()
    finally:
        runtime.close()
    return driver, rec, names


def _epoch_tasks(names):
    return [n for n in names if n.startswith(("hs-start-", "hs-epoch-", "hs-epochs-"))]


def test_short_epochs_train_in_batches_and_every_epoch_is_reported_once_in_order(client, tmp_path):
    driver, rec, names = search(
        client, tmp_path, create("random", max_epochs=40), SHORT, max_epochs=40
    )
    assert rec.epochs(0) == list(range(1, 41))  # every epoch's Result, once, in order
    assert driver.trials[0].state is TrialState.TERMINATED
    assert any(n.startswith("hs-epochs-") for n in names)  # batches went out
    assert len(_epoch_tasks(names)) < 40  # fewer tasks than epochs


def test_a_pause_mid_batch_resumes_at_the_next_epoch_with_the_weights_of_straight_training(
    client, tmp_path
):
    # one checkpoint only (epoch 1's): the resume trains epochs 2..6 again, silently
    kw = {"max_epochs": 12, "checkpoint_overhead": 0.0, "batch_seconds": 10.0}
    driver, paused, names = search(client, tmp_path / "a", PauseOnce(at=6), SHORT, **kw)
    _, straight, _ = search(client, tmp_path / "b", create("random", max_epochs=12), SHORT, **kw)
    assert driver.trials[0].starts == 2  # paused at epoch 6 (mid-batch), then resumed
    assert paused.epochs(0) == list(range(1, 13))  # the Result after the pause is epoch 7
    assert paused.digests(0) == straight.digests(0)  # identical weights, epoch by epoch
    assert not any(n.startswith("hs-pause-") for n in names)  # the ahead replica never saved


def test_a_stop_mid_batch_frees_the_worker_and_no_result_of_the_trial_comes_after_it(
    client, tmp_path
):
    clock = WallClock()
    # a batch of 64 epochs of 50 ms, checkpointed at every epoch (all kept in the batch)
    runtime = runtime_on(client, tmp_path, clock, batch_seconds=100.0, checkpoint_overhead=math.inf)
    config = {"lr": 0.05, "sleep": 0.05}
    seen, stopped, freed = [], None, None
    try:
        runtime.execute(Start(0, config, 1))
        runtime.execute(Start(1, config, 1))
        end = clock.now() + 120.0
        while clock.now() < end and not any(e.trial_id == 2 for e in seen if type(e) is Result):
            for e in runtime.advance(end):
                seen.append(e)
                if type(e) is not Result or e.trial_id == 2:
                    continue
                if (e.trial_id, e.epoch) == (0, 3):
                    freed = runtime.placement(0)
                    runtime.execute(Stop(0))
                    stopped = len(seen)
                    runtime.execute(Start(2, config, 1))  # only trial 0's worker is free
                    placed = runtime.placement(2)
                else:
                    runtime.execute(Continue(e.trial_id))
        runtime.execute(Stop(1))
        runtime.execute(Stop(2))
    finally:
        runtime.close()
    (started,) = [e for e in seen if type(e) is Result and e.trial_id == 2]
    assert started.epoch == 1 and placed == freed  # trial 2 trained on trial 0's worker
    assert [e.epoch for e in seen[:stopped] if type(e) is Result and e.trial_id == 0] == [1, 2, 3]
    assert not [e for e in seen[stopped:] if getattr(e, "trial_id", None) == 0]  # none after
    written = list((tmp_path / "trial-00000").glob("epoch-*.pt"))
    assert len(written) < 1 + 64  # the halt ended its batch long before its 64 epochs


def test_a_trial_on_two_workers_trains_one_epoch_per_task(client, tmp_path):
    clock = WallClock()
    runtime = runtime_on(client, tmp_path, clock)
    names, results = task_names(runtime), []
    try:
        runtime.execute(Start(0, SHORT, 2))
        end = clock.now() + 120.0
        while clock.now() < end and len(results) < 5:
            for e in runtime.advance(end):
                assert type(e) is Result, e
                results.append(e)
                if len(results) < 5:
                    runtime.execute(Continue(0))
        runtime.execute(Stop(0))
    finally:
        runtime.close()
    assert [(r.epoch, r.workers) for r in results] == [(e, 2) for e in range(1, 6)]
    # its ranks agree at every boundary: one task per rank per epoch, no batch
    assert sorted(n.split("-")[1] for n in _epoch_tasks(names)) == ["epoch"] * 8 + ["start"] * 2
