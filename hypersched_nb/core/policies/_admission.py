"""HyperSched's rule 4: admission by reach. May a new trial start now?

The paper admits while T_left > min((longest − O)·η, R·ē), which closed after 8–16 trials
on LCBench. Here a trial starts only while, started now on one worker, it can reach the
epochs it needs by the deadline (the policy says how many: ``breadth_reach``·m in the
breadth regime, η·m in depth, m the first judging rung): T_left ≥ O + e₁ + (need − 1)·ē,
with O the ``startup_percentile`` of the start-ups seen, e₁ / ē the median first / later
one-worker epoch seconds (the first timed apart because it is often slower). Where not even
a second worker would pay (flat scaling), admission stays open: an idle worker helps no
one. The test is asked again at every call, so a deadline that moves reopens it and
nothing is retired.

A past search's timings (``prior``: its median first and later epoch and its start-up)
stand in for any of the three until this search has timed its own, so that admission and
rule 2's timing do not wait for the first results to know them.

Every result asks it, so :meth:`Admission.is_open` mostly answers without the medians: the
verdict only worsens for a trial that starts later or whose epochs take longer, and no
median exceeds the slowest one-worker epoch seen. While even a trial whose every epoch
took that long would reach ``need``, admission is open whatever the medians are.

Example (first epochs 100 s, later ones 10 s: epoch 8 needs 100 + 7 x 10 = 170 s):
    >>> from hypersched_nb.core.context import PolicyContext
    >>> from hypersched_nb.core.events import Result
    >>> from hypersched_nb.core.scaling import LINEAR
    >>> def at(left):
    ...     return PolicyContext.for_test(deadline=left, workers=8, scaling=LINEAR)
    >>> admission = Admission(startup_percentile=90, grow_threshold=1.1)
    >>> for epoch, seconds in ((1, 100.0), (2, 10.0), (3, 10.0)):
    ...     admission.observe(Result(0, epoch, 0.5, 0.0, seconds, 1))
    >>> admission.verdict(at(170.0), need=8)
    (True, 8.0, 8)
    >>> admission.is_open(at(169.0), need=8)
    False
"""

from __future__ import annotations

import math

from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.events import Result
from hypersched_nb.core.policies._prior import PriorEvidence
from hypersched_nb.core.policies._reallocation import startup_overhead, startup_sample
from hypersched_nb.core.policies._sample import Sample

__all__ = ["Admission", "epochs_reachable"]


def epochs_reachable(time_left: float, startup: float, first_epoch: float, epoch: float) -> float:
    """Epochs a trial started now completes on one worker by the deadline (the first one
    costs ``first_epoch`` seconds, each later one ``epoch``)."""
    rest = time_left - startup - first_epoch
    if rest < 0:
        return 0.0
    return 1.0 + (rest / epoch if epoch > 0 else math.inf)


class Admission:
    """The timings rule 4 reads (one-worker epoch seconds, first epochs apart, and the
    start-ups), and its verdict, kept for as long as nothing it reads has changed."""

    __slots__ = ("_startups", "_surely_open", "_verdict", "first", "grow_threshold", "later")
    __slots__ += ("_prior",)

    def __init__(
        self,
        *,
        startup_percentile: float,
        grow_threshold: float,
        prior: PriorEvidence | None = None,
    ):
        self._prior = prior
        self._startups = startup_sample(startup_percentile)
        self.grow_threshold = grow_threshold
        self.first, self.later = Sample(percentile=50), Sample(percentile=50)
        self._surely_open: tuple | None = None  # (key, until): open up to `until`
        self._verdict: tuple = (None, True)  # (key, open) of the last exact verdict

    def observe(self, result: Result) -> None:
        """Time a one-worker epoch (the first apart)."""
        if result.workers == 1:
            (self.first if result.epoch == 1 else self.later).add(result.seconds)

    def startup(self, ctx: PolicyContext) -> float:
        """O: the ``startup_percentile`` of the start-ups observed so far (the prior's
        before any)."""
        prior = self._prior
        if not ctx.startups and prior is not None and prior.startup_seconds is not None:
            return prior.startup_seconds
        return startup_overhead(self._startups, ctx.startups)

    def _first(self) -> float | None:
        """e₁: the median first epoch (the later one while none, then the prior's)."""
        own = self.first.percentile() or self.later.percentile()
        if own is not None or self._prior is None:
            return own
        return self._prior.first_seconds or self._prior.epoch_seconds

    def _later(self) -> float | None:
        """ē: the median later epoch (the first while none, then the prior's)."""
        own = self.later.percentile() or self.first.percentile()
        if own is not None or self._prior is None:
            return own
        return self._prior.epoch_seconds or self._prior.first_seconds

    def seconds(self, epochs: float) -> float | None:
        """One worker's seconds for ``epochs`` more epochs past the first (the median later
        epoch, or the first while no later one is timed); None before any epoch is timed."""
        epoch = self._later()
        return None if epoch is None else epochs * epoch

    def verdict(self, ctx: PolicyContext, need: float) -> tuple[bool, float, float]:
        """(open, epochs a trial started now would reach, ``need``)."""
        first = self._first()
        if first is None:
            return True, math.inf, need
        startup = self.startup(ctx)
        reach = epochs_reachable(ctx.time_left, startup, first, self._later() or first)
        if reach < need and ctx.workers > 1 and ctx.scaling(2) <= self.grow_threshold:
            return True, reach, need  # exploiting could not use the workers: keep exploring
        return reach >= need, reach, need

    def is_open(self, ctx: PolicyContext, need: float) -> bool:
        """``verdict(ctx, need)[0]``, from the bound of the module docstring while it holds:
        its key is everything the bound reads (the deadline, the start-ups seen, the slowest
        epochs and ``need``) and it holds up to a time; else the exact verdict, kept for one
        moment (its key: everything :meth:`verdict` reads)."""
        first, later = self.first, self.later
        key = (ctx.deadline, len(ctx.startups), first.largest, later.largest, need)
        known = self._surely_open
        if known is None or known[0] != key or ctx.now > known[1]:
            until = self._open_until(ctx, need)
            known = self._surely_open = None if until is None else (key, until)
        if known is not None:
            return True
        key = (ctx.now, ctx.deadline, ctx.workers, len(ctx.startups), ctx.scaling)
        key += (len(first), len(later), need)
        if self._verdict[0] != key:
            self._verdict = (key, self.verdict(ctx, need)[0])
        return self._verdict[1]

    def _open_until(self, ctx: PolicyContext, need: float) -> float | None:
        """Until when a trial started on one worker, whose every epoch took as long as the
        slowest seen, would still reach ``need`` epochs (None: not even now). Checked now
        and half-way to where it would fail, it holds at every time between."""
        slowest = max(self.first.largest, self.later.largest)
        if not slowest and self._prior is not None:  # nothing timed yet: the prior's
            slowest = max(self._prior.first_seconds or 0.0, self._prior.epoch_seconds or 0.0)
        now, startup = ctx.now, self.startup(ctx)
        reach = epochs_reachable(ctx.time_left, startup, slowest, slowest)
        if reach < need:
            return None
        until = now + (reach - need) * slowest / 2  # an epoch of slack lasts `slowest` seconds
        then = max(0.0, ctx.deadline - until)  # the time left at `until`
        if until > now and epochs_reachable(then, startup, slowest, slowest) >= need:
            return until
        return now  # not finite or not confirmed: for now only
