"""The oracle bound: the best metric one offered configuration could reach by the deadline.

It trains one configuration alone on all ``workers`` from t = 0 (one start-up, the fastest
worker count the scaling curve allows) for up to ``max_epochs`` epochs. No policy can beat
it: any trial pays at least one start-up and runs no faster than on all workers.
"""

from __future__ import annotations

import math

import numpy as np

from hypersched_nb.core.scaling import ScalingCurve
from hypersched_nb.sim.trace import TRACE_KEY, Trace

__all__ = ["oracle_best"]


def oracle_best(
    trace: Trace,
    offered: list[dict],
    *,
    workers: int,
    deadline: float,
    max_epochs: int,
    scaling: ScalingCurve,
    startup: float,
) -> float:
    speed = max(scaling(k) for k in range(1, workers + 1))
    sign = 1.0 if trace.mode == "max" else -1.0
    best = -math.inf
    for config in offered:
        curve = config[TRACE_KEY]
        secs = trace.seconds[curve][:max_epochs]
        finish = startup + np.cumsum(secs) / speed
        reached = trace.metrics[curve][: int(np.searchsorted(finish, deadline, side="right"))]
        reached = reached[np.isfinite(reached)]
        if reached.size:
            best = max(best, float((sign * reached).max()))
    return sign * best if math.isfinite(best) else math.nan
