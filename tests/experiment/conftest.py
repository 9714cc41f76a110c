"""A small learning-curve trace built in memory."""

import numpy as np
import pytest

from hypersched_nb.core.scaling import ScalingCurve
from hypersched_nb.sim.trace import Trace


def tiny_trace(configs: int = 12, epochs: int = 8) -> Trace:
    """Config i climbs towards 0.5 + 0.04 i, faster when i is even; every epoch takes 10 s on
    one worker, start-ups 2 s, linear speed-up to 4 workers."""
    ids = tuple(range(configs))
    e = np.arange(1, epochs + 1)
    metrics = {i: (0.5 + 0.04 * i) * (1 - np.exp(-e / (1.5 if i % 2 == 0 else 4.0))) for i in ids}
    seconds = {i: np.full(epochs, 10.0) for i in ids}
    params = {i: {"lr": 10.0 ** -(1 + i % 4), "width": 16 * (1 + i % 3)} for i in ids}
    return Trace("tiny", ids, metrics, seconds, params, metric_name="acc", mode="max",
                 scaling=ScalingCurve({2: 2.0, 4: 4.0}), startup_seconds=2.0)  # fmt: skip


@pytest.fixture
def trace() -> Trace:
    return tiny_trace()
