"""An elastic policy on a real Dask cluster that grows and shrinks, under a cost budget."""

import pytest

from hypersched_nb import Experiment
from hypersched_nb.errors import ConfigError
from hypersched_nb.experiment.journal import read_journal
from hypersched_nb.testing.trainables import TinyRegression

pytestmark = pytest.mark.cluster

BUDGET = 60.0  # worker-seconds


def worker_seconds(capacity, end: float) -> float:
    """∫ workers dt from the cluster's reported sizes ``[(time, workers), ...]`` to ``end``."""
    ends = [t for t, _ in capacity[1:]] + [end]
    return sum(n * (min(t2, end) - t) for (t, n), t2 in zip(capacity, ends, strict=True))


def held_at(allocation, t: float) -> int:
    """Workers held by trials just after time ``t``."""
    holding = {}
    for change in allocation:
        if change.time <= t:
            holding[change.trial] = change.workers
    return sum(holding.values())


def test_seer_grows_and_shrinks_a_local_cluster_billed_for_the_workers_it_really_had(tmp_path):
    configs = [{"lr": 0.005 + 0.01 * i, "sleep": 0.5} for i in range(16)]
    exp = Experiment(
        TinyRegression, configs, metric="loss", mode="min", deadline="90s", max_epochs=8,
        policy="seer", cluster=1, max_workers=3, cost_budget=BUDGET, sampler="random",
        checkpoint_dir=str(tmp_path),
    )  # fmt: skip
    exp.start().wait()
    snap = exp.statistics()
    assert snap.status == "finished" and snap.best is not None
    capacity = list(snap.capacity)
    asked = [e for e in exp.events if e["action"] == "ScaleCluster"]
    assert asked[0]["reason"] == "1 -> 3 workers"  # it asked for more at once
    assert max(n for _, n in capacity) >= 2  # and the cluster really grew
    assert capacity[-1][1] == 0  # every worker given back at the end
    # billed: the workers there, from when they arrived to when they were retired, never
    # more than the budget and one epoch of one worker
    epochs = [
        e for r in read_journal(tmp_path).inputs() if r["k"] == "events"
        for e in r["events"] if e["type"] == "Result"
    ]  # fmt: skip
    longest = max(e["seconds"] + e["startup"] for e in epochs)
    billed = worker_seconds(capacity, snap.time)
    assert 0 < billed <= BUDGET + longest
    # no trial was handed a worker that had not arrived yet
    for change in snap.allocation:
        there = [n for t, n in capacity if t <= change.time][-1]  # the size then
        assert held_at(snap.allocation, change.time) <= there, change


def test_a_budget_below_one_epoch_of_one_worker_is_one_line_and_what_was_trained_stays(tmp_path):
    configs = [{"lr": 0.01 * (i + 1), "sleep": 1.0} for i in range(4)]
    exp = Experiment(
        TinyRegression, configs, metric="loss", mode="min", deadline="60s", max_epochs=4,
        policy="seer", cluster=1, max_workers=2, cost_budget=0.5, sampler="random",
        checkpoint_dir=str(tmp_path),
    )  # fmt: skip
    with pytest.raises(ConfigError) as caught:
        exp.start().wait()
    (line,) = str(caught.value).splitlines()
    # what it says depends on whether the budget ran out before the first epoch ended
    assert line.startswith("`cost_budget` is 0.5 worker-seconds, ")
    assert "less than one epoch of one worker" in line or "spent before any trial" in line
    assert len(exp.results()) >= 1  # what the search did stays: rows, results, journal
