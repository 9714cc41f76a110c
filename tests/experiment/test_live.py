"""One real search end to end: DigitsCNN on a 2-worker local Dask cluster, a short deadline."""

import math
import time

import pytest

from hypersched_nb import Experiment

pytestmark = pytest.mark.cluster


def test_a_live_search_ends_by_its_deadline_and_frees_every_worker(tmp_path):
    from hypersched_nb.train.examples import DigitsCNN

    exp = Experiment(DigitsCNN, DigitsCNN.space(), metric="val_acc", deadline="30s", max_epochs=4,
                     policy="asha", cluster=2, seed=0, checkpoint_dir=str(tmp_path))  # fmt: skip
    assert exp.start() is exp  # returns at once: the search runs on its own thread
    assert exp.statistics().status in ("running", "finished")
    exp.wait()
    snap = exp.statistics()
    assert snap.status == "finished" and snap.workers == 2
    assert snap.time <= snap.deadline  # nothing ran past the deadline
    assert all(e["time"] <= snap.deadline for e in exp.events)
    assert all(r.state == "TERMINATED" for r in snap.trials)  # every trial was stopped or completed
    _, series = snap.allocation_series()
    assert all(s[-1] == 0 for s in series.values())  # and gave its worker back
    assert any(e["action"] == "Start" for e in exp.events)
    if snap.best is not None:  # a loaded machine may finish no epoch in 30 s
        assert (
            0.0 <= snap.best.metric <= 1.0
            and snap.best.config == snap.trials[snap.best.trial_id].config
        )
        assert not math.isnan(exp.results().loc[snap.best.trial_id, "best"])
        model = exp.load_best()  # the best trial's weights at its best epoch, on this CPU
        correct, count, _ = model._evaluate()
        assert model.epoch == snap.best.epoch and float(correct / count) == snap.best.metric


def test_once_a_search_has_ended_nothing_more_is_written_into_its_folder(tmp_path):
    """An epoch still training at the deadline is dropped: it writes no checkpoint and no
    best weights when it ends after the search, so its folder can be copied or removed at
    once."""
    import optuna

    from hypersched_nb.testing.trainables import TinyRegression

    space = {
        "lr": optuna.distributions.FloatDistribution(0.01, 0.1),
        "sleep": optuna.distributions.CategoricalDistribution([1.5]),
    }
    exp = Experiment(TinyRegression, space, metric="loss", mode="min", deadline="12s",
                     max_epochs=50, cluster=1, seed=0, checkpoint_dir=str(tmp_path))  # fmt: skip
    exp.start()
    exp.wait()

    def written() -> dict:
        return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in tmp_path.rglob("*")}

    before = written()
    time.sleep(3.0)  # the epoch in flight at the deadline has ended on its worker meanwhile
    assert written() == before
