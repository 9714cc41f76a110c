"""Synchronous HyperBand, as Ray Tune's ``HyperBandScheduler``.

Li et al., "Hyperband: A Novel Bandit-Based Approach to Hyperparameter Optimization"
(JMLR 2018); Ray Tune's ``python/ray/tune/schedulers/hyperband.py`` (after ray#39157).

Symbols: R = ``max_epochs`` (Ray's ``max_t``), η = ``eta``, s_max + 1 =
round(log R / log η) + 1 brackets per band. Bracket s starts n = ⌈(s_max + 1)/(s + 1)·η^s⌉
trials at r = ⌊R·η^−s⌋ epochs, and each halving keeps ⌈n/η⌉ of them and moves the milestone
to ⌊min(r·η, R)⌋ (s halvings in all). R = 81, η = 3 gives (n, r) = (5, 81), (8, 27), (15, 9),
(34, 3), (81, 1). Published defaults (Ray Tune): R = 81, η = 3, ``stop_last_trials=True``.

Rule: offered trials fill the current bracket; a full bracket opens the next one (s + 1) of
the band, and a full band opens a new band. A trial that reaches its bracket's milestone is
paused until every live trial of the bracket has reached it; the last one to arrive halves
the bracket: the bottom trials stop, the top ⌈n/η⌉ go on (paused ones are resumed through
``choose_trial_to_run``, which serves the least complete bracket first, band by band). The
last milestone is ⌊r·η^s⌋, which falls short of R when R is no power of η (R = 52, η = 4:
3 → 12 → 48), as in Ray Tune.

Deviations from Ray Tune:
- Arrival: Ray Tune usually holds every sample pending from the start, so its brackets are
  full before anyone reaches a milestone; here the driver offers a configuration when a
  worker is free. So a bracket takes n trials in all (Ray refills a bracket whose trials
  finished) and is halved only once it has them or no more configurations will come
  (``ctx.offers_left``), which keeps Ray's halving sizes.
- ``min_epochs`` r: brackets whose first milestone is below r are skipped (Ray skips those
  below 1, which is the default r = 1).
- A trial removed from a bracket (diverged, errored, ended early) always re-checks the
  bracket, so paused peers never wait for it (Ray stops re-checking after a first halving).
  A trial paused below its milestone (its worker was lost) is resumed like a promoted one.
- The completion used to order brackets counts the epochs a full bracket trains, not Ray's
  older work formula; it only decides which waiting trial starts first.

Example:
    >>> from hypersched_nb.core.trial import Trial
    >>> from hypersched_nb.core.events import Result
    >>> from hypersched_nb.core.context import PolicyContext
    >>> hb = HyperBand(max_epochs=4, eta=2)
    >>> ctx = PolicyContext.for_test()
    >>> trials = [Trial(i, {}) for i in range(10)]
    >>> for t in trials: hb.on_trial_add(t, ctx)
    >>> hb.bracket_sizes()
    [(3, 4), (3, 2), (4, 1)]
    >>> [hb.on_trial_result(t, Result(t.trial_id, 1, s, 0, 1, 1), ctx).decision.name
    ...  for t, s in zip(trials[6:], [0.1, 0.9, 0.5, 0.3])]
    ['PAUSE', 'PAUSE', 'PAUSE', 'STOP']
    >>> list(hb.retire(ctx))  # trial 6 was paused below the top half: it never runs again
    [6]
"""

from __future__ import annotations

import math
from itertools import chain

from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.decisions import CONTINUE, Verdict
from hypersched_nb.core.events import Result
from hypersched_nb.core.policies._base import Policy, check_budget
from hypersched_nb.core.policies._describe import count, top_share
from hypersched_nb.core.trial import Trial, TrialState

__all__ = ["HyperBand", "bracket_plan"]

_FINISHED = "bracket finished"


def bracket_plan(max_epochs: float, eta: float, min_epochs: float = 1) -> list:
    """(n, r) of each bracket s of a band; None where r < ``min_epochs`` (bracket skipped)."""
    s_max_1 = round(math.log(max_epochs) / math.log(eta)) + 1
    plan: list[tuple[int, int] | None] = []
    for s in range(s_max_1):
        n, r = math.ceil(s_max_1 / (s + 1) * eta**s), int(max_epochs * eta ** (-s))
        plan.append((n, r) if r >= min_epochs and r >= 1 else None)
    return plan


class _Bracket:
    """One successive-halving bracket: its live trials and their last (epoch, score)."""

    __slots__ = ("added", "band", "closed", "done_work", "eta", "halves", "live", "max_t", "n")
    __slots__ += ("n0", "r", "s", "stop_last", "work")

    def __init__(self, n: int, r: int, band: int, s: int, hb: HyperBand):
        self.n = self.n0 = n
        self.r, self.band, self.s, self.halves = r, band, s, s
        self.max_t, self.eta, self.stop_last = hb.max_epochs, hb.eta, hb.stop_last_trials
        self.live: dict[int, tuple[float, float] | None] = {}
        self.added = 0
        self.closed = False  # it had its n trials, or no more trials will come
        self.done_work = 0.0
        self.work, m, prev = 0.0, r, 0
        for _ in range(s + 1):  # epochs a full bracket trains
            self.work += n * (m - prev)
            n, prev, m = math.ceil(n / self.eta), m, int(min(m * self.eta, self.max_t))

    def epoch(self, tid: int) -> float:
        last = self.live[tid]
        return 0 if last is None else last[0]

    def add(self, tid: int) -> None:
        self.live[tid] = None
        self.added += 1
        self.closed = self.closed or self.added >= self.n0

    def keeps_going(self, tid: int) -> bool:
        return (not self.stop_last and self.halves == 0) or self.epoch(tid) < self.r

    def round_done(self) -> bool:
        return self.closed and all(self.epoch(tid) >= self.r for tid in self.live)

    def finished(self) -> bool:
        return self.stop_last and self.halves == 0 and self.round_done()

    def waiting(self) -> Verdict:
        """Pause: the trial waits at the milestone for its peers."""
        behind = sum(self.epoch(tid) < self.r for tid in self.live)
        return Verdict.pause(f"paused at milestone {self.r}: waiting for {behind} peer(s)")

    def halve(self) -> tuple[list[int], list[int]]:
        """Keep the top ⌈n/η⌉ by last score and move the milestone; (good, bad)."""
        if self.halves == 0:  # only without stop_last_trials: everyone goes on
            return list(self.live), []
        self.halves -= 1
        self.n = math.ceil(self.n / self.eta)
        self.r = int(min(self.r * self.eta, self.max_t))
        ranked = sorted(self.live, key=lambda tid: self.live[tid][1])
        return ranked[-self.n :], ranked[: -self.n]

    def completion(self) -> float:
        return 1.0 if self.finished() else min(self.done_work / self.work, 1.0)


class HyperBand(Policy):
    name = "hyperband"

    def __init__(
        self,
        *,
        max_epochs: int = 81,
        min_epochs: int = 1,
        eta: float = 3,
        stop_last_trials: bool = True,
    ):
        check_budget(max_epochs, min_epochs, eta)
        self.max_epochs, self.min_epochs, self.eta = max_epochs, min_epochs, eta
        self.stop_last_trials = stop_last_trials
        self._plan = bracket_plan(max_epochs, eta, min_epochs)
        self._bands: list[list[_Bracket | None]] = [[]]
        self._current: _Bracket | None = None
        self._of: dict[int, _Bracket] = {}
        self._retire: list[int] = []
        self._closed_all = False
        # what a retired trial is journaled with: the latest verdict's reason, which may be
        # another trial's ("promoted to milestone 3"), as the journals have always had it
        self._last_reason = ""

    # ------------------------------------------------------------------ filling brackets

    def on_trial_add(self, trial: Trial, ctx: PolicyContext) -> None:
        bracket = self._current
        while bracket is None or bracket.closed:
            band = self._bands[-1]
            if len(band) == len(self._plan):
                band = []
                self._bands.append(band)
            s, plan = len(band), self._plan[len(band)]
            bracket = self._current = (
                None if plan is None else _Bracket(*plan, len(self._bands) - 1, s, self)
            )
            band.append(bracket)
        bracket.add(trial.trial_id)
        self._of[trial.trial_id] = bracket

    def _close_all(self, ctx: PolicyContext, current: int | None) -> None:
        """No more configurations will come: halve the brackets that waited to fill."""
        if ctx.offers_left or self._closed_all:
            return
        self._closed_all = True
        for bracket in chain.from_iterable(self._bands):
            if bracket is not None and not bracket.closed:
                bracket.closed = True
                if bracket.live and current not in bracket.live:
                    self._process(bracket, None)

    def bracket_sizes(self, band: int = 0) -> list[tuple[int, int]]:
        """(n, milestone) of each bracket opened in ``band`` so far."""
        return [(b.n, b.r) for b in self._bands[band] if b is not None]

    # ------------------------------------------------------------------ results

    def on_trial_result(self, trial: Trial, result: Result, ctx: PolicyContext) -> Verdict:
        tid = trial.trial_id
        bracket = self._of[tid]
        score = result.metric if ctx.mode == "max" else -result.metric
        bracket.done_work += max(0.0, result.epoch - bracket.epoch(tid))
        bracket.live[tid] = (result.epoch, score)
        self._close_all(ctx, tid)
        verdict = CONTINUE if bracket.keeps_going(tid) else self._process(bracket, tid)
        self._last_reason = verdict.reason
        return verdict

    def _process(self, bracket: _Bracket, current: int | None) -> Verdict:
        """Halve ``bracket`` once every live trial reached its milestone (Ray's
        ``_process_bracket``); ``current`` is the trial reporting now, if any, and the
        verdict is its. Kept paused trials now sit below the new milestone, so
        ``choose_trial_to_run`` resumes them."""
        if not bracket.round_done():
            return bracket.waiting()
        if bracket.finished():
            for tid in list(bracket.live):
                self._drop(bracket, tid, current, _FINISHED)
            return Verdict.stop(f"stopped: {_FINISHED}")
        verdict = None
        good, bad = bracket.halve()
        for tid in bad:
            reason = f"below the top {bracket.n} at the milestone"
            verdict = self._drop(bracket, tid, current, reason) or verdict
        for tid in good:
            if bracket.keeps_going(tid):
                if tid == current:
                    verdict = Verdict.go(f"promoted to milestone {bracket.r}")
            elif bracket.finished():
                verdict = self._drop(bracket, tid, current, _FINISHED) or verdict
        return verdict or bracket.waiting()

    def _drop(
        self, bracket: _Bracket, tid: int, current: int | None, reason: str
    ) -> Verdict | None:
        """Take ``tid`` out of the bracket: the current trial's stop verdict, or None (any
        other trial is retired)."""
        del bracket.live[tid]
        if tid == current:
            return Verdict.stop(f"stopped: {reason}")
        self._retire.append(tid)
        return None

    # ------------------------------------------------------------------ endings

    def on_trial_remove(self, trial: Trial, ctx: PolicyContext) -> None:
        bracket = self._of.get(trial.trial_id)
        if bracket is None or trial.trial_id not in bracket.live:
            return
        del bracket.live[trial.trial_id]
        self._close_all(ctx, None)
        if bracket.live and not bracket.finished():
            self._process(bracket, None)

    def retire(self, ctx: PolicyContext) -> dict[int, str]:
        out, self._retire = self._retire, []
        return dict.fromkeys(out, self._last_reason)

    # ------------------------------------------------------------------ scheduling

    def choose_trial_to_run(self, ctx: PolicyContext) -> Trial | None:
        """A pending trial, or a paused one below its milestone (promoted), of the least
        complete bracket, oldest band first (Ray's order; ties in bracket then id order)."""
        self._close_all(ctx, None)
        best, best_key, completion = None, None, {}
        for trial in chain(ctx.pending.values(), ctx.paused.values()):
            tid = trial.trial_id
            bracket = self._of.get(tid)
            if bracket is None or tid not in bracket.live:
                continue
            if trial.state is TrialState.PAUSED and not bracket.keeps_going(tid):
                continue  # waiting at its milestone
            done = completion.get(bracket)
            if done is None:
                done = completion[bracket] = bracket.completion()
            key = (bracket.band, done, bracket.s, tid)
            if best_key is None or key < best_key:
                best, best_key = trial, key
        return best

    def next_wakeup(self, ctx: PolicyContext) -> float | None:
        """Now, when a halving done in ``choose_trial_to_run`` left trials to retire or to
        resume while nothing runs; otherwise results drive everything."""
        if self._retire or (ctx.free > 0 and self.choose_trial_to_run(ctx) is not None):
            return ctx.now
        return None

    def describe(self, ctx: PolicyContext) -> str:
        """The groups (brackets) in progress, newest three: "successive halving, each
        group's top third goes on · 3 trials heading for epoch 9, 8 for epoch 3"."""
        rule = f"successive halving, each group's {top_share(self.eta)} goes on"
        live = [b for b in chain.from_iterable(self._bands) if b is not None and b.live]
        if not live:
            return f"{rule} · no group in progress"
        first, *others = live[-3:]
        groups = [f"{count(len(first.live), 'trial')} heading for epoch {first.r}"]
        groups += [f"{len(b.live)} for epoch {b.r}" for b in others]
        return f"{rule} · " + ", ".join(groups)
