"""How long an epoch may run on the Dask runtime: ``task_timeout``, and the stuck-step warning.

Both count from a trial's ``t_launch``: the tasks going out, or, within a batch, the
previous epoch's report, so that they bound one epoch, never a whole batch.
"""

from __future__ import annotations

from collections.abc import Iterable

from hypersched_nb.runtime._live import LiveTrial, Phase

__all__ = ["late", "next_timeout", "stuck", "training"]


def training(trials: Iterable[LiveTrial]) -> list[LiveTrial]:
    """The trials with an epoch in flight (not one heard early while the driver decides)."""
    return [t for t in trials if t.phase is Phase.TRAINING]


def late(trials: Iterable[LiveTrial], now: float, timeout: float | None) -> list[LiveTrial]:
    """The trials whose epoch in flight ran past ``timeout`` seconds by ``now`` (None: none)."""
    if timeout is None:
        return []
    return [t for t in training(trials) if now - t.t_launch > timeout]


def next_timeout(trials: Iterable[LiveTrial], timeout: float | None) -> float:
    """When the first epoch in flight runs past ``timeout`` (inf: never)."""
    if timeout is None:
        return float("inf")
    return min((t.t_launch for t in training(trials)), default=float("inf")) + timeout


def stuck(t: LiveTrial, now: float) -> float | None:
    """Seconds the epoch of ``t`` in flight has run, if that looks stuck: 5 × its longest
    ``step()`` so far and 5 s at least (a trial with no epoch yet has no measure: never)."""
    running = now - t.t_launch
    if t.phase is Phase.TRAINING and t.longest > 0 and running > max(5 * t.longest, 5.0):
        return running
    return None
