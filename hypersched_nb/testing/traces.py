"""Learning-curve traces built in code, for tests: synthetic families and hand-written curves."""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence

import numpy as np

from hypersched_nb.core.scaling import ScalingCurve
from hypersched_nb.sim.trace import Trace

__all__ = ["FAMILIES", "synthetic_trace", "trace_from_curves"]


#: curve families of :func:`synthetic_trace`, assigned to configurations in turn
FAMILIES = ("plateau", "late", "diverging", "short")


def synthetic_trace(
    n: int = 24,
    epochs: int = 16,
    *,
    seed: int = 0,
    mode: str = "max",
    scaling: Mapping[int, float] | None = None,
    startup: float = 3.0,
) -> Trace:
    """A small trace of accuracy-like curves (``mode="min"`` gives 1 − accuracy).

    ``plateau``: rises fast to 0.55–0.85 and stays; ``late``: near 0.1–0.3 until the second
    half, then blooms to 0.85–0.95 (the best in the long run, the worst early);
    ``diverging``: rises, then its last epoch (3 … epochs/2) is NaN; ``short``: a plateau
    that stops after 2 … epochs/2 epochs. Epochs take 1–4 s (the first one 1.5× longer).
    """
    rng = np.random.default_rng(seed)
    metrics, seconds, params = {}, {}, {}
    for i in range(n):
        family = FAMILIES[i % len(FAMILIES)]
        length = epochs if family in ("plateau", "late") else int(rng.integers(2, epochs // 2 + 1))
        e = np.arange(1, length + 1, dtype=float)
        if family == "late":
            low, top = rng.uniform(0.1, 0.3), rng.uniform(0.85, 0.95)
            mid, width = rng.uniform(0.5, 0.8) * epochs, rng.uniform(0.5, 2.0)
            m = low + (top - low) / (1 + np.exp(-(e - mid) / width))
        else:
            top, tau = rng.uniform(0.4 if family == "short" else 0.55, 0.85), rng.uniform(0.5, 2.0)
            m = top * (1 - np.exp(-e / tau))
        m = np.clip(m + rng.normal(0, 0.01, length), 0.0, 1.0)
        if family == "diverging":
            length = max(length, 3)
            m = np.append(m, [np.nan] * (length - len(m)))[:length]
            m[-1] = np.nan
        secs = rng.uniform(1.0, 4.0) * rng.uniform(0.9, 1.1, length)
        secs[0] *= 1.5
        metrics[i] = 1.0 - m if mode == "min" else m
        seconds[i] = secs
        params[i] = {"family": family, "lr": float(10 ** rng.uniform(-4, -1))}
    return Trace(
        name=f"synthetic-{mode}-{seed}",
        ids=tuple(range(n)),
        metrics=metrics,
        seconds=seconds,
        params=params,
        mode=mode,
        scaling=ScalingCurve({2: 1.8, 4: 3.2} if scaling is None else scaling),
        startup_seconds=startup,
    )


def trace_from_curves(
    curves: Sequence[Sequence[float]],
    seconds: float | Sequence[Sequence[float]] = 1.0,
    *,
    mode: str = "max",
    scaling: Mapping[int, float] | None = None,
    startup: float = 0.0,
) -> Trace:
    """A hand-written trace: curve ``i`` is configuration ``i`` (seconds per epoch: one
    number for all, or one list per curve)."""
    metrics = {i: np.asarray(c, dtype=float) for i, c in enumerate(curves)}
    if isinstance(seconds, numbers.Real):
        secs = {i: np.full(len(c), float(seconds)) for i, c in metrics.items()}
    else:
        secs = {i: np.asarray(s, dtype=float) for i, s in enumerate(seconds)}
    return Trace(
        name="hand-written",
        ids=tuple(metrics),
        metrics=metrics,
        seconds=secs,
        params={i: {"index": i} for i in metrics},
        mode=mode,
        scaling=ScalingCurve(scaling),
        startup_seconds=startup,
    )
