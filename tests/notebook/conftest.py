"""Finished simulated searches to draw (a small one, and one of a hundred trials), the views a
dashboard has of a search while it runs, and a fresh IPython shell with the magic loaded."""

import dataclasses

import numpy as np
import pytest

from hypersched_nb import Experiment
from hypersched_nb.core.scaling import ScalingCurve
from hypersched_nb.experiment.snapshot import ExperimentSnapshot
from hypersched_nb.sim.trace import Trace
from hypersched_nb.testing.traces import synthetic_trace


def small_trace(configs: int = 10, epochs: int = 6) -> Trace:
    ids = tuple(range(configs))
    e = np.arange(1, epochs + 1)
    metrics = {i: (0.5 + 0.04 * i) * (1 - np.exp(-e / (1 + i % 3))) for i in ids}
    return Trace("small", ids, metrics, {i: np.full(epochs, 10.0) for i in ids},
                 {i: {"lr": 10.0 ** -(1 + i % 4)} for i in ids}, metric_name="acc",
                 scaling=ScalingCurve({2: 2.0}), startup_seconds=1.0)  # fmt: skip


@pytest.fixture(autouse=True)
def no_front_end(monkeypatch):
    """No front end builds the widgets here: a dashboard waits for none (a test that plays
    one sets its own grace)."""
    from hypersched_nb.notebook import _front_end

    monkeypatch.setattr(_front_end, "GRACE", 0.0)


@pytest.fixture
def replay():
    """A simulated search, not started yet (HyperSched-style reallocation needs 2+ workers)."""
    return Experiment.replay(
        small_trace(), policy="asha", deadline=120, workers=3, configs=10, seed=0
    )


@pytest.fixture
def finished(replay):
    replay.run()
    return replay


@pytest.fixture
def crowded():
    """A finished search in which about a hundred trials held workers: more than the figures
    draw one by one."""
    exp = Experiment.replay(
        synthetic_trace(n=120, epochs=8), policy="hypersched", deadline=300, workers=4,
        configs=120, seed=0,
    )  # fmt: skip
    exp.run()
    return exp


def views(snap: ExperimentSnapshot, count: int) -> list[ExperimentSnapshot]:
    """``count`` snapshots of the search ``snap`` ends, as a dashboard sees it while it runs:
    the first k allocation records (the same objects, as a live search shares them), at the
    time of the last of them; the last view is ``snap`` itself."""
    n = len(snap.allocation)
    cuts = sorted({max(1, n * i // count) for i in range(1, count)})
    return [
        dataclasses.replace(
            snap,
            allocation=snap.allocation[:k],
            time=snap.allocation[k - 1].time,
            status="running",
            version=k,
        )  # fmt: skip
        for k in cuts
    ] + [snap]


class Recorded:
    """What a dashboard watches, standing in for an experiment: the snapshot set by hand."""

    def __init__(self, snap: ExperimentSnapshot):
        self.snap = snap

    def statistics(self) -> ExperimentSnapshot:
        return self.snap


@pytest.fixture
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    from hypersched_nb import load_ipython_extension

    sh = InteractiveShell.instance()
    load_ipython_extension(sh)  # a fresh %hypersched with no current search
    yield sh
    sh.user_ns.pop("exp", None)
