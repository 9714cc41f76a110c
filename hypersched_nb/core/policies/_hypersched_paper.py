"""HyperSched exactly as its authors implemented it (ucbrise/hypersched on Ray Tune 0.7).

Liaw, Bhardwaj, Dunlap, Stoica, Gonzalez and Sen, "HyperSched: Dynamic Resource
Reallocation for Model Development on a Deadline", SoCC 2019.

Symbols: r = ``min_epochs`` (grace), R = ``max_epochs``, η = ``eta``, s(k) = the scaling
curve in ``ctx.scaling``, T_left = ``ctx.time_left``, O = the ``startup_percentile`` of
``ctx.startups``. Published defaults: η = 4, r = 1, R = 100, pausing on, UNIFORM split,
benefit threshold 1.1, recharge period 5 (a grow needs ≥ 6 results since the last
(re)start), O = 90th percentile.

Rules (the authors' ``hypersched.py`` and ``dyn_allocator.py``):

1. *Termination.* One bracket with milestones r·η^i. On every result, every rung the trial
   has passed is checked, highest first: the value kept there is the trial's first report at
   or past the milestone; cutoff = percentile (1 − 1/η) of the values recorded at that rung,
   only with ≥ 2 recorded, computed before the trial's own value is added; a kept value
   strictly below the cutoff pauses the trial (``pause=False``: stops it).
2. *Promotion.* ``choose_trial_to_run`` first resumes the best paused trial of the highest
   rung whose kept value has risen to that rung's cutoff, then starts a pending trial, then
   (as Ray's FIFO fallback, once no configurations are left to offer) any paused trial.
3. *Admission.* Nothing starts or resumes unless T_left > min((longest cumulative training
   time of any trial − O)·η, R·median one-worker epoch time). The first time this fails,
   every pending and paused trial is retired (``retire``) and admission stays closed.
4. *Reallocation* (``allocate``). Each RUNNING trial holds one worker and spare workers go
   round-robin best-first by last score (``split="uniform"``: 8 over 3 -> 3/3/2) or all to
   the best (``"top_job"``). A trial grows only if s(new)·(T_left − O)/(T_left·s(cur)) >
   ``grow_threshold`` and it has more than ``recharge`` results since its last (re)start;
   a shrink always goes ahead. The driver applies targets at the trial's next epoch.

Where we differ, and only in mechanics: the deadline comes from ``ctx`` at every call (the
authors fixed it at construction); training time is the driver's epoch seconds, start-ups
excluded (Ray's ``time_total_s``); O is the percentile of every observed start-up (the
authors' of the set of distinct values) and 0 before any (they used −1); milestones past R
are not built (they can never be reached); a shrink needs no recharge (the rule as the
paper describes it, "grow after the recharge period, shrink always"; the authors' allocator
also waited out the recharge period before shrinking).

Example (rule 1 with η = 2, r = 1: A's rung-1 value 0.5 is below the median 0.7 of the two
values recorded there, so A pauses at epoch 2):
    >>> from hypersched_nb.core.trial import Trial
    >>> from hypersched_nb.core.events import Result
    >>> from hypersched_nb.core.context import PolicyContext
    >>> hs = HyperSchedPaper(max_epochs=10, min_epochs=1, eta=2)
    >>> ctx = PolicyContext.for_test(workers=2)
    >>> a, b = Trial(0, {}), Trial(1, {})
    >>> hs.on_trial_result(a, Result(0, 1, 0.5, 0, 1, 1), ctx).decision.name
    'CONTINUE'
    >>> hs.on_trial_result(b, Result(1, 1, 0.9, 0, 1, 1), ctx).decision.name
    'CONTINUE'
    >>> hs.on_trial_result(a, Result(0, 2, 0.6, 0, 1, 1), ctx).decision.name
    'PAUSE'
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.decisions import CONTINUE, Verdict
from hypersched_nb.core.events import Result
from hypersched_nb.core.policies._base import Policy, check_budget
from hypersched_nb.core.policies._describe import duration, epoch_list, time_left, top_share
from hypersched_nb.core.policies._paused import PausedQueue
from hypersched_nb.core.policies._reallocation import (
    Reallocation,
    startup_overhead,
    startup_sample,
)
from hypersched_nb.core.policies._rungs import Rung, milestones
from hypersched_nb.core.policies._sample import Sample
from hypersched_nb.core.trial import Trial

__all__ = ["HyperSchedPaper", "admission_open"]

_CLOSED = "admission closed: no new trial can catch the leader by the deadline"


def admission_open(
    time_left: float,
    longest: float,
    startup: float,
    eta: float,
    max_epochs: int,
    median_epoch: float | None,
) -> tuple[bool, float]:
    """May a trial start? T_left > min((longest − O)·η, R·median epoch): (open, bar)."""
    bar = (longest - startup) * eta
    if median_epoch is not None:
        bar = min(bar, max_epochs * median_epoch)
    return time_left > bar, bar


class HyperSchedPaper(Policy):
    name = "hypersched-paper"

    def __init__(
        self,
        *,
        max_epochs: int = 100,
        min_epochs: int = 1,
        eta: float = 4,
        pause: bool = True,
        split: str = "uniform",
        grow_threshold: float = 1.1,
        recharge: int = 5,
        startup_percentile: float = 90,
        max_workers_per_trial: int | None = None,
    ):
        check_budget(max_epochs, min_epochs, eta)
        self.reallocation = Reallocation(split, grow_threshold, recharge, max_workers_per_trial)
        self.max_epochs, self.min_epochs, self.eta, self.pause = max_epochs, min_epochs, eta, pause
        self._startups = startup_sample(startup_percentile)
        self.rungs = [  # at least two values for a cutoff
            Rung(m, eta, min_count=2) for m in reversed(milestones(max_epochs, min_epochs, eta))
        ]
        self._waiting = PausedQueue()  # paused trials by the index of the rung that paused them
        self._train: dict[int, float] = {}  # trial -> cumulative training seconds
        self._longest = 0.0
        self._epoch = Sample(percentile=50)  # one-worker epoch seconds, for their median
        self.closed = False  # admission closed for good

    # ------------------------------------------------------------------ termination

    def on_trial_result(self, trial: Trial, result: Result, ctx: PolicyContext) -> Verdict:
        tid = trial.trial_id
        self._waiting.discard(tid)  # it runs again
        self._train[tid] = spent = self._train.get(tid, 0.0) + result.seconds
        self._longest = max(self._longest, spent)
        if result.workers == 1:
            self._epoch.add(result.seconds)
        score = result.metric if ctx.mode == "max" else -result.metric
        for i, rung in enumerate(self.rungs):  # highest first
            if result.epoch < rung.milestone:
                continue
            cutoff = rung.cutoff()  # before the trial's own value is added
            kept = rung.record(tid, score)
            if cutoff is not None and kept < cutoff:
                late = "" if kept == score else " (re-checked)"
                reason = f"rung {rung.milestone:g}: {kept:.4g} below cutoff {cutoff:.4g}{late}"
                if not self.pause:
                    return Verdict.stop(reason)
                self._waiting.add(tid, i, kept)
                return Verdict.pause(reason)
        return CONTINUE

    def on_trial_remove(self, trial: Trial, ctx: PolicyContext) -> None:
        self._waiting.discard(trial.trial_id)

    # ------------------------------------------------------------------ admission

    def startup(self, ctx: PolicyContext) -> float:
        """O: the ``startup_percentile`` of the start-ups observed so far."""
        return startup_overhead(self._startups, ctx.startups)

    def admission_bar(self, ctx: PolicyContext) -> tuple[bool, float]:
        """(open, bar): would a trial be admitted now, and the time left it needs."""
        if self.closed:
            return False, float("inf")
        return admission_open(
            ctx.time_left,
            self._longest,
            self.startup(ctx),
            self.eta,
            self.max_epochs,
            self._epoch.percentile(),
        )

    def admission(self, ctx: PolicyContext) -> tuple[bool, float]:
        """As :meth:`admission_bar`, closing admission for good the first time it fails."""
        ok, bar = self.admission_bar(ctx)
        if not ok:
            self.closed = True  # a one-way switch to exploitation
        return ok, bar

    def retire(self, ctx: PolicyContext) -> dict[int, str]:
        if self.admission(ctx)[0]:
            return {}
        return dict.fromkeys([*ctx.pending, *ctx.paused], _CLOSED)

    def choose_trial_to_run(self, ctx: PolicyContext) -> Trial | None:
        if not self.admission(ctx)[0]:
            return None
        for i, rung in enumerate(self.rungs):  # promotion, highest rung first
            cutoff = rung.cutoff()
            best = self._waiting.best(i, ctx.paused) if cutoff is not None else None
            if best is not None and best[1] >= cutoff:
                return ctx.paused[best[0]]
        for trial in ctx.pending.values():
            return trial
        if not ctx.offers_left:
            for trial in ctx.paused.values():
                return trial
        return None

    # ------------------------------------------------------------------ reallocation

    def allocate(self, ctx: PolicyContext) -> Mapping[int, int] | None:
        if not ctx.running:
            return None
        order = sorted(ctx.running.values(), key=lambda t: (-_last(t, ctx.mode), t.trial_id))
        return self.reallocation.targets(order, ctx, self.startup(ctx))

    def describe(self, ctx: PolicyContext) -> str:
        """Whom it pauses and until when it explores (rules 1 and 3), in the user's words:
        "pausing trials below the top quarter at epochs 1, 4, 16 · 12 min left: exploring
        until 3 min remain"; once closed, that no new trial could catch the leader."""
        if math.isfinite(ctx.deadline) and ctx.time_left <= 0:
            return "deadline reached"
        admitting, bar = self.admission_bar(ctx)
        if not admitting:
            return (
                f"{time_left(ctx)}, too late for a new trial to catch the leader: "
                "freed workers go to the leaders"
            )
        judged = [r.milestone for r in reversed(self.rungs) if r.milestone < self.max_epochs]
        pausing = f"pausing trials below the {top_share(self.eta)} at {epoch_list(judged)}"
        until = f" until {duration(bar)} remain" if 1 <= bar < ctx.time_left else ""
        return f"{pausing} · {time_left(ctx)}: exploring{until}"


def _last(trial: Trial, mode: str) -> float:
    """The trial's last score (higher is better), as the authors sort by last result."""
    if trial.scores:
        return trial.scores[-1]
    if trial.metrics:
        return trial.metrics[-1] if mode == "max" else -trial.metrics[-1]
    return float("-inf")
