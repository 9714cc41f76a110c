"""A finished simulated search to draw, and a fresh IPython shell with the magic loaded."""

import numpy as np
import pytest

from hypersched_nb import Experiment
from hypersched_nb.core.scaling import ScalingCurve
from hypersched_nb.sim.trace import Trace


def small_trace(configs: int = 10, epochs: int = 6) -> Trace:
    ids = tuple(range(configs))
    e = np.arange(1, epochs + 1)
    metrics = {i: (0.5 + 0.04 * i) * (1 - np.exp(-e / (1 + i % 3))) for i in ids}
    return Trace("small", ids, metrics, {i: np.full(epochs, 10.0) for i in ids},
                 {i: {"lr": 10.0 ** -(1 + i % 4)} for i in ids}, metric_name="acc",
                 scaling=ScalingCurve({2: 2.0}), startup_seconds=1.0)  # fmt: skip


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
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    from hypersched_nb import load_ipython_extension

    sh = InteractiveShell.instance()
    load_ipython_extension(sh)  # a fresh %hypersched with no current search
    yield sh
    sh.user_ns.pop("exp", None)
