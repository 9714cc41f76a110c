"""SLAQ: quality-driven scheduling, workers to the jobs whose loss would drop the most.

Zhang, Stafman, Or and Freedman, "SLAQ: Quality-Driven Scheduling for Distributed Machine
Learning" (SoCC 2017), as its authors' scheduler computes an allocation; the third
baseline Hermes was compared with.

Symbols: G = ``ctx.workers``; a job is a trial; its loss ℓ is 1 − metric in ``max`` mode
(an accuracy) and the metric itself in ``min`` mode; ℓ and ℓ₋ are its last two losses;
D = its largest past drop max(ℓ₋ᵢ − ℓᵢ); t its last epoch's seconds on one worker; s(a)
the scaling curve; Δ the slice (``slice_seconds``); c the mean observed start-up.

Rule: in a slice Δ, a trial on a workers trains k(a) = (Δ − c·[a ≠ its workers now])·s(a)/t
epochs (a change of allocation costs a start-up), and its loss is predicted by geometric
extrapolation, ℓ·(ℓ/ℓ₋)^k(a). Its score is the predicted drop over its largest past drop,

    gain(a) = ℓ·(1 − (ℓ/ℓ₋)^k(a)) / max(D, ``norm_floor``),   gain(0) = 0.

Trials with at most one report cannot be extrapolated: they get an equal share first (one
worker each, for their first two epochs), and then every remaining worker goes, one at a
time, to the trial whose gain grows most with one more (a trial's allocation is capped at
``max_workers_per_trial``). The plan is remade every slice, as SLAQ re-plans every
scheduling epoch, and at once when a trial arrives, is first ranked or ends; a trial whose
planned allocation is 0 is paused at its next epoch when a planned or new trial waits;
``allocate`` sets the planned worker counts of running trials; a free worker goes to a new
configuration first, else to the paused trial with the largest planned allocation.

Our world, and why: SLAQ re-plans Spark cores every few seconds; here a worker is a GPU,
trials can only be preempted at epoch boundaries, and a resize costs a start-up, so the
slice is an epoch long and the start-up is charged inside k(a). With ≫ G configurations
an equal share is under one worker, so each new one gets a whole worker for the two epochs
the extrapolation needs (time-sharing), and configurations still to be offered count as
new ones waiting. Defaults: ``slice_seconds = None`` (the median of the live trials' last
one-worker epoch times: one epoch of a typical trial, the slice of Hermes and RR);
``norm_floor = 1e-9`` (a trial that never improved gets a tiny denominator, not a division
by zero); ``max_workers_per_trial = None`` (up to G, as SLAQ caps only by the cluster).

Example:
    >>> from hypersched_nb.core.trial import Trial, TrialState
    >>> from hypersched_nb.core.events import Result
    >>> from hypersched_nb.core.context import PolicyContext
    >>> from hypersched_nb.core.scaling import LINEAR
    >>> slaq = SLAQ(slice_seconds=10.0)
    >>> a, b = Trial(0, {}), Trial(1, {})
    >>> for t in (a, b): t.state = TrialState.RUNNING; t.workers = 1
    >>> ctx = PolicyContext.for_test(
    ...     trials={0: a, 1: b}, workers=3, offers_left=False, scaling=LINEAR)
    >>> for t, curve in ((a, [0.2, 0.6, 0.8]), (b, [0.5, 0.6, 0.62])):  # accuracies
    ...     for e, m in enumerate(curve, 1):
    ...         t.scores.append(m); t.metrics.append(m); t.epochs = e
    ...         _ = slaq.on_trial_result(t, Result(t.trial_id, e, m, 10.0 * e, 10.0, 1), ctx)
    >>> later = ctx._replace(now=10.0)  # the next scheduling epoch
    >>> slaq.plan(later)  # b's steady drops, against its own best, earn the second worker
    {1: 2, 0: 1}
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.decisions import CONTINUE, Verdict
from hypersched_nb.core.events import Result
from hypersched_nb.core.policies._base import Policy
from hypersched_nb.core.policies._describe import count
from hypersched_nb.core.policies._sample import Sample
from hypersched_nb.core.trial import Trial
from hypersched_nb.errors import ConfigError

__all__ = ["SLAQ", "predicted_gain"]

_MAX_EXP, _HUGE = 700.0, 1e300  # float limits, so a wildly rising loss ranks last, not NaN
_UNPLANNED = Verdict.pause("no worker in SLAQ's plan for the next slice")


def _predicted_gains(loss, prev, drop, epochs, norm_floor: float):
    """:func:`predicted_gain` over arrays (jobs along the last axis)."""
    ok = (loss > 0) & (prev > 0)
    ratio = np.where(ok, loss / np.where(ok, prev, 1.0), 1.0)
    growth = np.exp(np.minimum(_MAX_EXP, epochs * np.log(ratio)))
    gain = np.where(
        (epochs > 0) & (loss > 0), loss * (1.0 - growth) / np.maximum(drop, norm_floor), 0.0
    )
    return np.clip(gain, -_HUGE, _HUGE)


def predicted_gain(
    loss: float, prev: float, max_drop: float, epochs: float, norm_floor: float
) -> float:
    """Normalised predicted loss drop after ``epochs`` more epochs (geometric extrapolation).

    >>> predicted_gain(0.5, 1.0, 0.5, 1.0, 1e-9)  # loss halves again: drops 0.25 of a best 0.5
    0.5
    """
    if epochs <= 0 or loss <= 0:
        return 0.0
    ratio = loss / prev if prev > 0 else 1.0
    growth = math.exp(min(_MAX_EXP, epochs * math.log(ratio)))  # ratio**epochs, no overflow
    gain = loss * (1.0 - growth) / max(max_drop, norm_floor)
    return max(-_HUGE, min(_HUGE, gain))


class _Jobs:
    """Each ranked trial's last loss, previous loss, largest drop and one-worker epoch
    seconds, in parallel arrays (one slot per trial), so that a plan is a few vector ops."""

    __slots__ = ("slot", "tids", "free", "data")

    LOSS, PREV, DROP, SECS = range(4)

    def __init__(self):
        self.slot: dict[int, int] = {}
        self.tids = np.zeros(0, dtype=int)  # slot -> trial id (-1: free)
        self.free: list[int] = []
        self.data = np.zeros((4, 0))

    def add(self, tid: int) -> int:
        if self.free:
            i = self.free.pop()
        else:
            i = len(self.slot)
            if i >= len(self.tids):
                size = max(16, 2 * i)
                self.data = np.hstack([self.data, np.zeros((4, size - len(self.tids)))])
                self.tids = np.concatenate([self.tids, np.full(size - len(self.tids), -1)])
        self.tids[i] = tid
        self.slot[tid] = i
        return i

    def drop_trial(self, tid: int) -> None:
        i = self.slot.pop(tid, None)
        if i is not None:
            self.tids[i] = -1
            self.free.append(i)

    def live(self) -> tuple[np.ndarray, np.ndarray]:
        """(slots, trial ids) of the ranked trials, in slot order."""
        slots = np.flatnonzero(self.tids >= 0)
        return slots, self.tids[slots]


class SLAQ(Policy):
    name = "slaq"

    def __init__(
        self,
        *,
        slice_seconds: float | None = None,
        norm_floor: float = 1e-9,
        max_workers_per_trial: int | None = None,
    ):
        if slice_seconds is not None and not slice_seconds > 0:
            raise ConfigError(f"`slice_seconds` is {slice_seconds}, but must be > 0 or None")
        if not norm_floor > 0:
            raise ConfigError(f"`norm_floor` is {norm_floor}, but must be > 0")
        if max_workers_per_trial is not None and max_workers_per_trial < 1:
            raise ConfigError(
                f"`max_workers_per_trial` is {max_workers_per_trial}, but must be >= 1 or None"
            )
        self.slice_seconds = slice_seconds
        self.norm_floor = norm_floor
        self.max_workers_per_trial = max_workers_per_trial
        self._jobs = _Jobs()  # trials with two reports or more
        self._first: dict[int, tuple[float, float]] = {}  # one report: (loss, seconds)
        self._startups = Sample()  # observed start-up seconds
        self._version = 0  # bumped when a trial arrives, is first ranked or ends
        self._cache: tuple[tuple, dict[int, int]] | None = None
        self._plan_until = -math.inf  # the current scheduling epoch ends then

    # ------------------------------------------------------------------ hooks

    def on_trial_result(self, trial: Trial, result: Result, ctx: PolicyContext) -> Verdict:
        tid, jobs = trial.trial_id, self._jobs
        loss = 1.0 - result.metric if ctx.mode == "max" else result.metric
        secs = result.seconds * ctx.scaling(result.workers)
        if result.startup > 0:
            self._startups.add(result.startup)
        i = jobs.slot.get(tid)
        if i is None and tid not in self._first:
            self._first[tid] = (loss, secs)
        else:
            if i is None:
                i = jobs.add(tid)
                jobs.data[:, i] = (*self._first.pop(tid), 0.0, 0.0)
                self._version += 1
            d = jobs.data
            d[jobs.PREV, i] = d[jobs.LOSS, i]
            d[jobs.DROP, i] = max(d[jobs.DROP, i], d[jobs.PREV, i] - loss)
            d[jobs.LOSS, i], d[jobs.SECS, i] = loss, secs
        plan = self.plan(ctx)
        if i is None:
            return CONTINUE  # one report: no extrapolation yet
        if tid not in plan and self._someone_waits(plan, ctx):
            return _UNPLANNED
        return CONTINUE

    def on_trial_add(self, trial: Trial, ctx: PolicyContext) -> None:
        self._version += 1
        self.plan(ctx)

    def on_trial_remove(self, trial: Trial, ctx: PolicyContext) -> None:
        self._forget(trial.trial_id, ctx)

    def choose_trial_to_run(self, ctx: PolicyContext) -> Trial | None:
        for trial in ctx.pending.values():
            return trial
        lost = sorted(tid for tid in self._first if tid in ctx.paused)
        if lost:
            return ctx.paused[lost[0]]  # one report: its worker was lost
        if ctx.offers_left:
            return None  # the driver offers the next configuration
        for tid in self.plan(ctx):  # largest allocation first
            if tid in ctx.paused:
                return ctx.paused[tid]
        return None

    def allocate(self, ctx: PolicyContext) -> dict[int, int] | None:
        return {tid: a for tid, a in self.plan(ctx).items() if tid in ctx.running} or None

    def describe(self, ctx: PolicyContext) -> str:
        """The current plan, largest first: "workers go where the loss should fall most
        next: #6 (2 workers), #0, #4", or that new configurations come first."""
        plan = self._cache[1] if self._cache else {}
        if not plan:
            return (
                "new configurations first, 2 epochs each to measure their loss; "
                "then workers go where the loss falls fastest"
            )
        shown = [
            f"#{tid}" + (f" ({count(a, 'worker')})" if a > 1 else "") for tid, a in plan.items()
        ]
        more = " …" if len(shown) > 4 else ""
        return "workers go where the loss should fall most next: " + ", ".join(shown[:4]) + more

    # ------------------------------------------------------------------ the plan

    def plan(self, ctx: PolicyContext) -> dict[int, int]:
        """Planned workers per ranked live trial for this scheduling epoch (largest first)."""
        key = (self._version, ctx.offers_left, ctx.workers)
        if self._cache is None or self._cache[0] != key or ctx.now >= self._plan_until:
            plan, slice_s = self._greedy(ctx)
            self._cache, self._plan_until = (key, plan), ctx.now + slice_s
        return self._cache[1]

    def _greedy(self, ctx: PolicyContext) -> tuple[dict[int, int], float]:
        """The plan and the slice it is for."""
        jobs = self._jobs
        if ctx.offers_left or not jobs.slot:
            return {}, 0.0  # new configurations wait: they take every worker first
        new = len(ctx.pending) + sum(
            1 for tid in self._first if tid in ctx.running or tid in ctx.paused
        )
        spare = ctx.workers - new
        if spare <= 0:
            return {}, 0.0
        slots, ids = jobs.live()
        loss, prev, drop, secs = jobs.data[:, slots]
        slice_s = self.slice_seconds or float(np.median(secs))
        startup = self._startups.mean()
        cap = min(spare, self.max_workers_per_trial or spare)
        now = np.zeros(len(ids), dtype=int)
        for tid, trial in ctx.running.items():  # few: find their positions among the slots
            i = jobs.slot.get(tid)
            if i is not None:
                now[np.searchsorted(slots, i)] = trial.workers
        # only the `spare` best first workers can win any worker (ties to the lower id)
        first = self._gains(1, loss, prev, drop, secs, now, slice_s, startup, ctx)
        order = np.arange(len(ids))
        if len(ids) > spare:
            cut = np.partition(-first, spare - 1)[spare - 1]
            order = np.flatnonzero(-first <= cut)
        order = order[np.lexsort((ids[order], -first[order]))][:spare]
        loss, prev, drop, secs, now, ids = (a[order] for a in (loss, prev, drop, secs, now, ids))
        gains = np.array(
            [
                self._gains(a, loss, prev, drop, secs, now, slice_s, startup, ctx)
                for a in range(cap + 1)
            ]
        )
        gains[0] = 0.0
        marginal = np.diff(gains, axis=0)  # marginal[a, j]: gain of job j's (a+1)-th worker
        alloc = [0] * len(ids)
        heap = [(-float(marginal[0, j]), int(ids[j]), j) for j in range(len(ids))]
        heapq.heapify(heap)
        for _ in range(spare):
            _, _, j = heapq.heappop(heap)
            alloc[j] += 1
            if alloc[j] < cap:
                heapq.heappush(heap, (-float(marginal[alloc[j], j]), int(ids[j]), j))
            if not heap:
                break
        planned = sorted((-a, int(tid)) for tid, a in zip(ids, alloc, strict=True) if a)
        return {tid: -a for a, tid in planned}, slice_s

    def _gains(self, a, loss, prev, drop, secs, now, slice_s, startup, ctx) -> np.ndarray:
        """gain(a) of every job: k(a) = (Δ − c·[a ≠ its workers now])·s(a)/t epochs."""
        steps = np.maximum(0.0, slice_s - startup * (now != a)) * ctx.scaling(a)
        return _predicted_gains(
            loss, prev, drop, steps / np.maximum(secs, self.norm_floor), self.norm_floor
        )

    # ------------------------------------------------------------------ helpers

    def _someone_waits(self, plan: dict[int, int], ctx: PolicyContext) -> bool:
        if ctx.pending or ctx.offers_left:
            return True
        return any(tid in ctx.paused for tid in plan) or any(
            tid in ctx.paused for tid in self._first
        )

    def _forget(self, tid: int, ctx: PolicyContext) -> None:
        self._jobs.drop_trial(tid)
        self._first.pop(tid, None)
        self._version += 1
        self.plan(ctx)
