"""How long an epoch may run on the Dask runtime: ``step_timeout``, and the stuck-step warning.

Both count from a trial's ``t_launch``: the tasks going out, or, within a batch, the
previous epoch's report, so that they bound one epoch, never a whole batch.

``step_timeout``: a ``step()`` that never returns would hold its worker until the cluster
closes (a Python thread cannot be killed), so an epoch that runs past it has its workers
restarted (their processes replaced) and its trial resumes from its last checkpoint; the
second time, the trial fails. ``"auto"`` (the default) bounds an epoch by
:data:`FACTOR` × the trial's own median ``step()`` and :data:`FLOOR` seconds at least:
epochs vary (a validation pass, a garbage collection, a machine loaded two to four times
over) and a false alarm costs a worker's restart (seconds, torch imported again) and the
epochs since the last checkpoint, so the bound is loose; a stuck step is still freed
within minutes. A trial with no epoch measured yet has no bound under ``"auto"`` (its first
epoch builds the model and may load data: nothing says how long that takes). A number is
a bound in seconds for every epoch. A start's epoch first builds the trainable (imports,
data) on a worker that may have just joined, restores the checkpoint and trains again the
epochs reported since it: it gets one bound for each of those epochs, plus
:data:`STARTUP` seconds.
"""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Iterable

from hypersched_nb.errors import ConfigError
from hypersched_nb.runtime._live import LiveTrial, Phase

__all__ = ["FACTOR", "FLOOR", "STARTUP", "StepTimeouts", "check_step_timeout", "stuck", "training"]

FACTOR = 10.0  # "auto": an epoch may take this many times the trial's median step()
FLOOR = 60.0  # "auto": and this many seconds at least
STARTUP = 60.0  # what a start's epoch may take on top: building, restoring, importing torch
_KEEP = 25  # step() times kept per trial for its median


def training(trials: Iterable[LiveTrial]) -> list[LiveTrial]:
    """The trials with an epoch in flight (not one heard early while the driver decides)."""
    return [t for t in trials if t.phase is Phase.TRAINING]


def check_step_timeout(value) -> float | str | None:
    """``value`` if it is a valid ``step_timeout`` (seconds > 0, "auto" or None: no bound),
    else a one-line :class:`ConfigError`."""
    if value is None or value == "auto":
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ConfigError(
            f"`step_timeout` is {value!r}, but must be a number of seconds > 0, 'auto' "
            "(a multiple of the trial's median epoch) or None (no bound)"
        )
    return float(value)


class StepTimeouts:
    """The bound on each trial's epoch in flight: ``timeout`` seconds, ``"auto"`` (see the
    module) or None (no bound). Hears each trial's ``step()`` times (:meth:`measured`) and
    counts the epochs that ran past their bound (:meth:`strike`)."""

    def __init__(self, timeout: float | str | None):
        self.timeout = check_step_timeout(timeout)
        self._steps: dict[int, deque[float]] = {}
        self._strikes: dict[int, int] = {}

    def measured(self, t: LiveTrial) -> None:
        """Trial ``t`` just reported an epoch whose ``step()`` took ``t.step`` seconds."""
        if t.step > 0:
            self._steps.setdefault(t.tid, deque(maxlen=_KEEP)).append(t.step)

    def bound(self, t: LiveTrial) -> float | None:
        """Seconds the epoch of ``t`` in flight may run (None: no bound)."""
        if self.timeout is None:
            return None
        if self.timeout == "auto":
            steps = self._steps.get(t.tid)
            if not steps:
                return None
            one = max(FACTOR * statistics.median(steps), FLOOR)
        else:
            one = self.timeout
        if t.starting:  # it trains again the epochs reported since its checkpoint first
            one = one * (1 + t.reported - (t.ckpt.epoch if t.ckpt else 0)) + STARTUP
        return one

    def late(self, trials: Iterable[LiveTrial], now: float) -> list[tuple[LiveTrial, float]]:
        """The trials whose epoch in flight ran past its bound by ``now``, with that bound."""
        out = []
        for t in training(trials):
            bound = self.bound(t)
            if bound is not None and now - t.t_launch > bound:
                out.append((t, bound))
        return out

    def next_timeout(self, trials: Iterable[LiveTrial]) -> float:
        """When the first epoch in flight runs past its bound (inf: never)."""
        ends = [t.t_launch + b for t in training(trials) if (b := self.bound(t)) is not None]
        return min(ends, default=float("inf"))

    def strike(self, tid: int) -> int:
        """An epoch of trial ``tid`` ran past its bound: how many times so far."""
        self._strikes[tid] = self._strikes.get(tid, 0) + 1
        return self._strikes[tid]

    def describe(self, bound: float) -> str:
        """The setting as the messages name it, with the bound it gave (seconds)."""
        if self.timeout == "auto":
            return f"step_timeout='auto' ({bound:.3g} s: {FACTOR:g} x its median epoch, {FLOOR:g} s at least)"
        return f"step_timeout={bound:g}s"


def stuck(t: LiveTrial, now: float) -> float | None:
    """Seconds the epoch of ``t`` in flight has run, if that looks stuck: 5 × its longest
    ``step()`` so far and 5 s at least (a trial with no epoch yet has no measure: never). A
    start's epoch first builds, restores and trains again the epochs since its checkpoint:
    it may take that many epochs more, plus :data:`STARTUP` seconds."""
    if t.phase is not Phase.TRAINING or t.longest <= 0:
        return None
    allowed = max(5 * t.longest, 5.0)
    if t.starting:
        allowed = allowed * (1 + t.reported - (t.ckpt.epoch if t.ckpt else 0)) + STARTUP
    running = now - t.t_launch
    return running if running > allowed else None
