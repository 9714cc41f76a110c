"""HyperSched, the project's default: deadline-aware ASHA, admission and reallocation.

Liaw et al., "HyperSched: Dynamic Resource Reallocation for Model Development on a
Deadline" (SoCC 2019); :mod:`._hypersched_paper` is the authors' rule exactly. Symbols:
r = ``min_epochs``, R = ``max_epochs``, η = ``eta``, s(k) = ``ctx.scaling``, T_left =
``ctx.time_left``, O = the ``startup_percentile`` of ``ctx.startups``, e₁ / ē = median
first / later one-worker epoch seconds. Paper defaults kept: η = 4, r = 1, UNIFORM split,
benefit threshold 1.1, recharge period 5, O at the 90th percentile.

Rules, and how and why they differ from the paper's (which lost to ASHA on LCBench curves
that level off early, while its depth suits long runs whose ranks change late); the
figures are in ``benchmarks/hypersched_targets.py``'s output:

1. *Judge each rung once* (ASHA), pause instead of stop: a result that newly passes a
   trusted milestone r·η^i is compared with the (1 − 1/η) percentile of the values recorded
   there before it (≥ ``min_peers``: one, as in ASHA; the paper needs two) and paused below
   it. The paper re-checks every passed rung on every result, which pauses good trials late
   on their oldest, noisiest values; here only a pass made with at most ``confirm_peers``
   (η − 1) peers is checked once more, when the rung has more values. Paused trials resume
   when no configuration is left to try; ``promote=True`` also promotes one whose value
   enters the top 1/η of its rung (the paper's promotion: it spent workers on middling
   trials that new configurations used better on every trace family measured).
2. *The lowest ``probation`` rung earns trust.* It records values but judges no one until
   its verdicts hold at the next rung: at ``probation_pairs``·2^j pairs, the chance that a
   trial it would keep (top 1/η) beats one it would pause there (Mann–Whitney AUC) must
   exceed ``probation_floor`` (chance) by ``probation_z`` standard errors. First-epoch scores
   can rank trials badly or backwards (warm-up, initialisation, a slow first epoch); the
   AUC looks only at the verdict, so a noisy order among non-learners does not count. The
   price: where epoch 1 is a good filter and the deadline short (a quarter or half of one
   configuration's full training), trust comes after the first trials reach rung η·r, and
   ASHA, which prunes at r from the start, is ahead; ``probation=0`` trusts every rung.
3. *Breadth or depth, measured.* depth = median gain of the trials that passed the first
   trusted rung m, projected over the (η − 1)·m epochs to the next rung, over the rung's
   spread (cutoff − median). Above ``depth_threshold`` training the leaders on gains more
   than choosing among more configurations: the *depth* regime; else *breadth*. It is
   re-estimated every 8 results (and whenever a trial passes that rung).
4. *Admission by reach* (replaces min((longest − O)·η, R·ē), which closed after 8–16 trials
   on LCBench): a trial starts only while, started now on one worker, it can reach
   ``breadth_reach``·m epochs (breadth) or η·m (depth) by the deadline: T_left ≥ O + e₁ +
   (need − 1)·ē, the first epoch timed apart because it is often slower. Where not even a
   second worker would pay (flat scaling) admission stays open: an idle worker helps no one.
   The test reopens when the deadline moves, so nothing is retired.
5. *Exploitation* (admission closed): spare workers go to running trials best-first with the
   paper's split, benefit test and recharge period. A trial is paused (by its rung, or in
   the depth regime for being outside the running top 1/η) only when a leader can take its
   worker at once; the paper pauses even when the worker would sit idle.

Example:
    >>> from hypersched_nb.core.trial import Trial
    >>> from hypersched_nb.core.events import Result
    >>> from hypersched_nb.core.context import PolicyContext
    >>> hs = HyperSched(max_epochs=16, min_epochs=1, eta=4)
    >>> ctx = PolicyContext.for_test(workers=8)
    >>> trials = [Trial(i, {}) for i in range(10)]
    >>> def report(epoch, scores):
    ...     return [hs.on_trial_result(t, Result(t.trial_id, epoch, s, 0, 1, 1), ctx).decision.name
    ...             for t, s in zip(trials, scores)]
    >>> report(1, [0.5, 0.9, 0.4, 0.95, 0.1, 0.7, 0.8, 0.2, 0.99, 0.3]).count("PAUSE")  # untrusted
    0
    >>> report(4, [0.6, 0.5, 0.9, 0.4])  # rung 4 judges
    ['CONTINUE', 'PAUSE', 'CONTINUE', 'PAUSE']
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.decisions import CONTINUE, Verdict
from hypersched_nb.core.events import Result
from hypersched_nb.core.policies._base import Policy, check_budget
from hypersched_nb.core.policies._describe import epoch_number, time_left, top_share
from hypersched_nb.core.policies._hypersched_rules import (
    GainWindow,
    PausedQueue,
    Probation,
    Reallocation,
    at_least,
    epochs_reachable,
    startup_overhead,
    startup_sample,
)
from hypersched_nb.core.policies._rungs import Rung, milestones
from hypersched_nb.core.policies._sample import Sample
from hypersched_nb.core.trial import Trial

__all__ = ["HyperSched"]

_MAKE_WAY = Verdict.pause("exploiting: its worker goes to a leader that can use it")


class HyperSched(Policy):
    name = "hypersched"

    def __init__(
        self,
        *,
        max_epochs: int = 100,
        min_epochs: int = 1,
        eta: float = 4,
        pause: bool = True,
        min_peers: int = 1,
        confirm_peers: int | None = None,
        promote: bool = False,
        probation: int = 1,
        probation_pairs: int = 8,
        probation_z: float = 1.645,
        probation_floor: float = 0.5,
        breadth_reach: float = 2.0,
        depth_threshold: float = 1.0,
        depth_window: int = 64,
        focus: bool = True,
        split: str = "uniform",
        grow_threshold: float = 1.1,
        recharge: int = 5,
        startup_percentile: float = 90,
        max_workers_per_trial: int | None = None,
    ):
        check_budget(max_epochs, min_epochs, eta)
        self.reallocation = Reallocation(split, grow_threshold, recharge, max_workers_per_trial)
        at_least(
            min_peers=(min_peers, 1), probation=(probation, 0), breadth_reach=(breadth_reach, 1)
        )
        at_least(probation_pairs=(probation_pairs, 4), depth_window=(depth_window, 2))
        self.max_epochs, self.min_epochs, self.eta, self.pause = max_epochs, min_epochs, eta, pause
        self.min_peers, self.promote = min_peers, promote
        self.confirm_peers = int(eta) - 1 if confirm_peers is None else confirm_peers
        self.probation, self.probation_pairs = probation, probation_pairs
        self.probation_z, self.probation_floor = probation_z, probation_floor
        self.breadth_reach, self.depth_threshold = breadth_reach, depth_threshold
        self.depth_window, self.focus = depth_window, focus
        self._startups = startup_sample(startup_percentile)
        self.rungs = [Rung(m, eta, min_peers) for m in milestones(max_epochs, min_epochs, eta)]
        self.trust = Probation(
            len(self.rungs), probation, probation_pairs, probation_z, probation_floor, eta
        )
        self._gains = [GainWindow(depth_window) for _ in self.rungs]
        self._depth: float | None = None  # rule 3's ratio as last estimated
        self._stale = False  # re-estimate it now rather than at the next 8th result
        self._results = 0
        self._surely_open: tuple | None = None  # _open's caches (see there)
        self._verdict: tuple = (None, True)
        self._provisional: dict[int, set[int]] = {}  # trial -> rungs it passed with few peers
        self._passed: dict[int, int] = {}  # trial -> how many rungs (the lowest) hold its value
        self._waiting = PausedQueue()  # trials this policy paused (rung -1: for a leader)
        # one-worker epoch seconds, first epochs apart, for their medians
        self._first, self._later = Sample(percentile=50), Sample(percentile=50)

    # ------------------------------------------------------------------ termination

    def on_trial_result(self, trial: Trial, result: Result, ctx: PolicyContext) -> Verdict:
        tid, epoch = trial.trial_id, result.epoch
        self._results += 1
        self._waiting.discard(tid)
        score = result.metric if ctx.mode == "max" else -result.metric
        if result.workers == 1:
            (self._first if epoch == 1 else self._later).add(result.seconds)
        judge = None  # (rung index, cutoff before this trial's value)
        rungs, passed = self.rungs, self._passed.get(tid, 0)  # rungs[:passed] have its value
        i = passed
        while i < len(rungs) and epoch >= rungs[i].milestone:  # a rung it reaches now
            cutoff = rungs[i].cutoff()
            rungs[i].record(tid, score)
            if i == passed > 0 and self.trust.pair(rungs[i - 1], rungs[i], i - 1):  # two reports
                self._stale = True
            if self.trust.trusted[i]:
                judge = (i, cutoff)
            i += 1
            self._passed[tid] = i
        i = self.trust.first()
        self._gains[i].note(tid, self.rungs[i], epoch, score, self.eta)
        below = None  # (rung index, value, cutoff) of rule 1's verdict, if below
        if judge is not None or tid in self._provisional:
            below = self._below(tid, judge, score)
        if below is None and judge is not None:
            self._pass(tid, judge[0])
        if self._stale or self._results % 8 == 0:  # at fixed points: watching changes nothing
            self._depth, self._stale = self.depth(), False
            if self._surely_open is not None and self._surely_open[2] != self._need():
                self._surely_open = None  # rule 4's bar moved: regime or first judged rung
        if below is not None and (self._open(ctx) or self._taker(trial, ctx, ctx.running.values())):
            i, value, cutoff = below
            reason = f"rung {self.rungs[i].milestone:g}: {value:.4g} below cutoff {cutoff:.4g}"
            if not self.pause:
                return Verdict.stop(reason)
            self._waiting.add(tid, i, value)
            return Verdict.pause(reason)
        if self.focus and self.regime() == "depth" and self._outclassed(trial, ctx):
            self._waiting.add(tid, -1, trial.best_score)
            return _MAKE_WAY
        return CONTINUE

    def _below(self, tid: int, judge: tuple | None, score: float) -> tuple | None:
        """Rule 1: the rung whose cutoff the trial is below, if any. A pass made with no
        more than ``confirm_peers`` peers is checked once more when the rung has more."""
        provisional = self._provisional.get(tid)
        for i in sorted(provisional) if provisional else ():
            rung = self.rungs[i]
            if len(rung.recorded) > self.confirm_peers + 1:
                self._provisional[tid].discard(i)
                if rung.below(tid):
                    return i, rung.recorded[tid], rung.cutoff()
        if judge is not None and judge[1] is not None and score < judge[1]:
            return judge[0], score, judge[1]
        return None

    def _pass(self, tid: int, i: int) -> None:
        if len(self.rungs[i].recorded) <= self.confirm_peers:  # few peers: provisional
            self._provisional.setdefault(tid, set()).add(i)
        self._gains[i].add(tid)
        self._stale = True

    def _outclassed(self, trial: Trial, ctx: PolicyContext) -> bool:
        """Rule 5, depth regime: outside the running top 1/η by best score, with a taker."""
        if len(ctx.running) < 2 or trial.trial_id not in ctx.running or self.regime() != "depth":
            return False
        if self._open(ctx):
            return False
        ranked = sorted(ctx.running.values(), key=lambda t: (-t.best_score, t.trial_id))
        leaders = ranked[: math.ceil(len(ranked) / self.eta)]
        return trial not in leaders and self._taker(trial, ctx, leaders)

    def _taker(self, trial: Trial, ctx: PolicyContext, among) -> bool:
        """Could one of ``among`` (not ``trial``) take a worker at once?"""
        startup, grows = self.startup(ctx), self.reallocation.could_grow
        return any(t is not trial and grows(t, ctx, startup) for t in among)

    def on_trial_remove(self, trial: Trial, ctx: PolicyContext) -> None:
        self._waiting.discard(trial.trial_id)
        self._provisional.pop(trial.trial_id, None)

    # ------------------------------------------------------------------ breadth or depth

    def first_judged(self) -> int:
        """Index of the lowest trusted rung."""
        return self.trust.first()

    def depth(self) -> float | None:
        """Rule 3's ratio (None until two trials have trained past the first judged rung)."""
        i = self.first_judged()
        return self._gains[i].ratio(self.rungs[i].spread())

    def regime(self) -> str:
        """``depth`` or ``breadth`` (rule 3), re-estimated every 8 results."""
        d = self._depth
        return "depth" if d is not None and d > self.depth_threshold else "breadth"

    def startup(self, ctx: PolicyContext) -> float:
        """O: the ``startup_percentile`` of the start-ups observed so far."""
        return startup_overhead(self._startups, ctx.startups)

    def admission(self, ctx: PolicyContext) -> tuple[bool, float, float]:
        """Rule 4: (open, epochs a trial started now would reach, epochs it needs)."""
        need = self._need()
        first = self._first.percentile() or self._later.percentile()
        if first is None:
            return True, math.inf, need
        startup = self.startup(ctx)
        reach = epochs_reachable(ctx.time_left, startup, first, self._later.percentile() or first)
        if reach < need and ctx.workers > 1 and ctx.scaling(2) <= self.reallocation.grow_threshold:
            return True, reach, need  # exploiting could not use the workers: keep exploring
        return reach >= need, reach, need

    def _need(self) -> float:
        """Rule 4: the epochs a new trial must be able to reach."""
        m = self.rungs[self.first_judged()].milestone
        return min(
            self.max_epochs, m * (self.eta if self.regime() == "depth" else self.breadth_reach)
        )

    def _open(self, ctx: PolicyContext) -> bool:
        """``admission(ctx)[0]``, which every result asks, mostly without the medians.

        Rule 4's verdict only worsens for a trial that starts later or whose epochs take
        longer, and no median exceeds the slowest one-worker epoch seen. So while even a
        trial whose every epoch took that long would reach the epochs it needs, admission
        is open whatever the medians are (they are not even worked out). Two caches:

        - ``_surely_open`` = (key, until, need): that bound holds up to time ``until`` for
          key = (deadline, start-ups seen, slowest first epoch, slowest later epoch). The
          rest it reads is ``need``, which changes only in on_trial_result: it drops the
          cache when it re-estimates the regime and finds ``need`` changed. A change to
          rule 4 must keep this list whole.
        - ``_verdict``: else the exact verdict, for one moment (key: time, deadline,
          workers, start-ups seen, scaling and the number of results seen).
        """
        key = (ctx.deadline, len(ctx.startups), self._first.largest, self._later.largest)
        known = self._surely_open
        if known is None or known[0] != key or ctx.now > known[1]:
            need = self._need()
            until = self._open_until(ctx, need)
            known = self._surely_open = None if until is None else (key, until, need)
        if known is not None:
            return True
        key = (ctx.now, ctx.deadline, ctx.workers, len(ctx.startups), ctx.scaling, self._results)
        if self._verdict[0] != key:
            self._verdict = (key, self.admission(ctx)[0])
        return self._verdict[1]

    def _open_until(self, ctx: PolicyContext, need: float) -> float | None:
        """Until when a trial started on one worker, whose every epoch took as long as the
        slowest seen, would still reach ``need`` epochs (None: not even now). Checked now
        and half-way to where it would fail, it holds at every time between."""
        slowest = max(self._first.largest, self._later.largest)
        now, startup = ctx.now, self.startup(ctx)
        reach = epochs_reachable(ctx.time_left, startup, slowest, slowest)
        if reach < need:
            return None
        until = now + (reach - need) * slowest / 2  # an epoch of slack lasts `slowest` seconds
        then = max(0.0, ctx.deadline - until)  # the time left at `until`
        if until > now and epochs_reachable(then, startup, slowest, slowest) >= need:
            return until
        return now  # not finite or not confirmed: for now only

    def choose_trial_to_run(self, ctx: PolicyContext) -> Trial | None:
        if not self._open(ctx):
            return None
        waiting = self._waiting
        for i in waiting.rungs() if self.promote else ():  # highest rung first
            best = waiting.best(i, ctx.paused) if i >= 0 else None
            if best is not None and best[1] >= self.rungs[i].cutoff():
                return ctx.paused[best[0]]
        for trial in ctx.pending.values():
            return trial
        if not ctx.offers_left and ctx.paused:  # nothing new to try: the most promising paused
            for i in waiting.rungs():
                best = waiting.best(i, ctx.paused)
                if best is not None:
                    return ctx.paused[best[0]]
            return next(iter(ctx.paused.values()))
        return None

    # ------------------------------------------------------------------ reallocation

    def allocate(self, ctx: PolicyContext) -> Mapping[int, int] | None:
        if not ctx.running or self._open(ctx):
            return None
        order = sorted(ctx.running.values(), key=lambda t: (-t.best_score, t.trial_id))
        return self.reallocation.targets(order, ctx, self.startup(ctx))

    def describe(self, ctx: PolicyContext) -> str:
        """What it does now and why, in the user's words: whom it keeps, the time left, and
        whether it explores, admits no new trials or gives the freed workers to the leaders:

        "keeping the top 8 of 40 after epoch 4 · 5 min left: no new trials (epoch 8 out of
        reach), leaders get freed workers". Rule 4's numbers stay in the reasons."""
        if math.isfinite(ctx.deadline) and ctx.time_left <= 0:
            return f"{self._keeping()} · deadline reached"
        return f"{self._keeping()} · {time_left(ctx)}: {self._phase(ctx)}"

    def _keeping(self) -> str:
        """Rule 1 at the first judged rung: the trials it keeps there so far."""
        rung = self.rungs[self.first_judged()]
        after = f"after epoch {epoch_number(rung.milestone)}"
        cutoff = rung.cutoff()
        if len(rung) < 2 or cutoff is None:
            return f"keeping the {top_share(self.eta)} {after}"
        kept = sum(value >= cutoff for value in rung.recorded.values())
        return f"keeping the top {kept} of {len(rung)} {after}"

    def _phase(self, ctx: PolicyContext) -> str:
        """Rules 4 and 5 as the user sees them: exploring, or no new trials and why."""
        admitting, reach, need = self.admission(ctx)
        target = f"epoch {epoch_number(need)}"
        if not admitting:
            if not ctx.running:
                return f"no new trials ({target} out of reach)"
            leaders = self._reallocating(ctx)
            rest = "leaders get freed workers" if leaders else "running trials carry on"
            return f"no new trials ({target} out of reach), {rest}"
        if not ctx.offers_left and not ctx.pending:
            rest = "resuming the best paused" if ctx.paused else "the rest train on"
            return f"every configuration tried, {rest}"
        if reach < need:  # open only because a second worker would not pay
            return "still exploring, as more workers would not speed up the leaders"
        if math.isinf(reach):
            return "exploring, starting new trials"
        return f"exploring while a new trial can still reach {target}"

    def _reallocating(self, ctx: PolicyContext) -> bool:
        """Does a running trial hold, or could it take now, more than one worker?"""
        running = ctx.running.values()
        return any(t.workers > 1 for t in running) or self._taker(None, ctx, running)
