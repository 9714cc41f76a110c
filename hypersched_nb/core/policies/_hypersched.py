"""HyperSched, the project's default: deadline-aware ASHA, admission and reallocation.

Liaw et al., "HyperSched: Dynamic Resource Reallocation for Model Development on a
Deadline" (SoCC 2019); :mod:`._hypersched_paper` is the authors' rule exactly. Symbols:
r = ``min_epochs``, R = ``max_epochs``, η = ``eta``, s(k) = ``ctx.scaling``, T_left =
``ctx.time_left``, O = the start-up overhead. Paper defaults kept: η = 4, r = 1, UNIFORM
split, benefit threshold 1.1, recharge period 5, O at the 90th percentile. The settings
are one :class:`~._hypersched_params.HyperSchedParams`.

The paper's rule lost to ASHA on LCBench curves that level off early, while its depth suits
long runs whose ranks change late; these rules keep its deadline-awareness and change how
it judges and admits (figures: ``benchmarks/hypersched_targets.py``'s output). Each rule
reads on its own in the module named after what it decides:

1. *Judge each rung once* (:mod:`._judging`): ASHA's cutoff on a newly passed rung, a pass
   with few peers confirmed once; a trial below pauses (``pause=False``: stops). Paused
   trials resume when no configuration is left (``promote=True``: also when their value
   enters the top 1/η, the paper's promotion).
2. *Trust, or doubt, the first epochs* (:mod:`._trust`): the lowest rung judges for good
   once its verdicts have held at the next rung, and until then tentatively, one trial in
   η left untested for the test (``early_signal="auto"``) while the deadline leaves the
   test time to act; a failed test brings the trials it paused back. ``"doubt"`` judges
   nothing until the test passes, ``"trust"`` judges at once (as ASHA). While in doubt, a
   trial that gains nothing on the epoch after the lowest rung pauses there
   (``pause_stalled``).
3. *Breadth or depth* (:mod:`._breadth_depth`): do the leaders still gain more than choosing
   among more configurations would?
4. *Admission by reach* (:mod:`._admission`): a trial starts only while it can reach far
   enough by the deadline.
5. *Exploitation* (here, with :mod:`._reallocation`, the paper's): with admission closed,
   spare workers go to running trials best-first where the benefit test passes. A trial is
   paused (by its rung, or in the depth regime for being outside the running top 1/η) only
   when a leader can take its worker at once; the paper pauses even when the worker would
   sit idle. A worker that no running trial can take resumes the most promising paused
   trial; the paper leaves it idle to the deadline.

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
    >>> report(1, [0.5, 0.9, 0.4, 0.95, 0.1, 0.7, 0.8, 0.2, 0.99, 0.3]).count("PAUSE")
    5
    >>> hs.trust.short()  # 0.2, the 8th, is the one trial in 4 that trains on untested
    'trusting epoch 1 for now, testing it at epoch 4'
    >>> report(4, [0.6, 0.5]), hs.early_signal_state()[:47]  # rung 4 judges for good
    (['CONTINUE', 'PAUSE'], 'doubt: epoch 1 judges tentatively, 1 trial in 4')
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import ClassVar

from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.decisions import CONTINUE, Verdict
from hypersched_nb.core.events import Result
from hypersched_nb.core.policies._admission import Admission
from hypersched_nb.core.policies._base import Policy, check_budget
from hypersched_nb.core.policies._breadth_depth import BreadthOrDepth
from hypersched_nb.core.policies._describe import epoch_number, time_left, top_share
from hypersched_nb.core.policies._hypersched_params import HyperSchedParams
from hypersched_nb.core.policies._judging import Judging
from hypersched_nb.core.policies._paused import PausedQueue
from hypersched_nb.core.policies._prior import PriorEvidence
from hypersched_nb.core.policies._rungs import Rung, milestones
from hypersched_nb.core.policies._trust import Trust
from hypersched_nb.core.trial import Trial

__all__ = ["HyperSched", "HyperSchedParams"]

_MAKE_WAY = Verdict.pause("exploiting: its worker goes to a leader that can use it")


class HyperSched(Policy):
    """The default policy: ``HyperSched(max_epochs=…, min_epochs=…, eta=…)`` with any
    :class:`HyperSchedParams` field as a keyword (``probation=0``), or ``params=``;
    ``prior`` what a past search of the same model showed (rules 2 and 4 read it)."""

    name = "hypersched"
    params_class: ClassVar[type] = HyperSchedParams

    def __init__(
        self,
        *,
        max_epochs: int = 100,
        min_epochs: int = 1,
        eta: float = 4,
        params: HyperSchedParams | None = None,
        prior: PriorEvidence | None = None,
        **settings,
    ):
        check_budget(max_epochs, min_epochs, eta)
        self.params = p = HyperSchedParams.of(params, **settings)
        self.max_epochs, self.min_epochs, self.eta = max_epochs, min_epochs, eta
        self.rungs = [Rung(m, eta, p.min_peers) for m in milestones(max_epochs, min_epochs, eta)]
        self.judging = Judging(self.rungs, p.confirm(eta))
        self.trust = Trust(
            self.rungs, probation=p.probation_rungs, pairs=p.probation_pairs,
            z=p.probation_z, floor=p.probation_floor, eta=eta, early_signal=p.early_signal,
            pause_stalled=p.pause_stalled, audit=p.audit, prior=prior,
        )  # fmt: skip
        self.breadth = BreadthOrDepth(
            self.rungs, threshold=p.depth_threshold, window=p.depth_window, eta=eta
        )
        self.admit = Admission(
            startup_percentile=p.startup_percentile,
            grow_threshold=p.grow_threshold,
            prior=prior,
        )
        self.prior = prior  # a past search's evidence (rules 2 and 4), or None
        self.reallocation = p.reallocation()
        self._results = 0
        self._waiting = PausedQueue()  # trials this policy paused (rung -1: for a leader)

    # ------------------------------------------------------------------ termination

    def on_trial_result(self, trial: Trial, result: Result, ctx: PolicyContext) -> Verdict:
        tid = trial.trial_id
        self._results += 1
        self._waiting.discard(tid)
        self.trust.release(tid)
        score = result.metric if ctx.mode == "max" else -result.metric
        sign = 1.0 if ctx.mode == "max" else -1.0
        self.admit.observe(result)
        arrived = tid not in self.rungs[0]
        before = self.rungs[0].cutoff() if arrived else None  # for a tentative verdict
        paired, judge = self.judging.reach(tid, result.epoch, score, self.trust.trusted)
        if paired is not None and self.trust.pair(
            self.rungs[paired], self.rungs[paired + 1], paired, ctx.now
        ):
            self.breadth.moved()  # rule 2 moved the first rung whose verdicts are final
        self.breadth.note(tid, self.trust.first(), result.epoch, score)
        below = None  # (rung index, value, cutoff) of rule 1's verdict, if below
        if judge is not None or self.judging.has_provisional(tid):
            below = self.judging.below(tid, judge, score)
        if below is None and judge is not None:
            self.judging.passed(tid, judge[0])
            self.breadth.passed(tid, judge[0])
        self.breadth.update(self._results, self.trust.first())
        paused = None  # (rung index, value kept, reason): a pause by rule 1 or by rule 2
        tentative = None  # rule 2's reason when the pause is a tentative verdict
        if below is not None:
            i, value, cutoff = below
            reason = f"rung {self.rungs[i].milestone:g}: {value:.4g} below cutoff {cutoff:.4g}"
            paused = (i, value, reason)
        elif arrived and (
            tentative := self.trust.tentative(
                self.rungs[0], tid, score, before, sign, testable=self._test_can_act(ctx)
            )
        ):
            paused = (0, score, tentative)
        elif stall := self.trust.stalled(self.rungs[0], tid, result.epoch, score, sign=sign):
            paused = (0, self.rungs[0].recorded[tid], stall)
        if paused is not None and (
            self._open(ctx) or self._taker(trial, ctx, ctx.running.values())
        ):
            i, value, reason = paused
            if not self.params.pause:
                return Verdict.stop(reason)
            self._waiting.add(tid, i, value)
            if tentative or self.trust.holds(i):
                self.trust.hold(tid)
            return Verdict.pause(reason)
        if self.params.focus and self.regime() == "depth" and self._outclassed(trial, ctx):
            self._waiting.add(tid, -1, trial.best_score)
            return _MAKE_WAY
        return CONTINUE

    def on_trial_remove(self, trial: Trial, ctx: PolicyContext) -> None:
        self._waiting.discard(trial.trial_id)
        self.trust.release(trial.trial_id)
        self.judging.forget(trial.trial_id)

    # ------------------------------------------------------------------ rules 2 to 4

    def first_judged(self) -> int:
        """Index of the lowest rung whose verdicts are final (rule 2), which rules 3 and 4
        read: a rung that judges for now (tentatively, or on a past search's word) is not."""
        return self.trust.first()

    @property
    def early_signal(self) -> str:
        """What the search was told of the first epochs: "auto", "trust" or "doubt"."""
        return self.trust.early_signal

    def tell_early_signal(self, early_signal: str) -> None:
        """Rules 1 and 2 as told from now on (a what-if forecast tells it to a clone; see
        :meth:`~._trust.Trust.tell`, and ``HyperSchedParams.confirm`` for rule 1)."""
        if self.trust.tell(early_signal):
            self.breadth.moved()
        if early_signal != "auto":
            self.judging.confirm_peers = self.params.confirm(self.eta, early_signal)

    def early_signal_mode(self) -> str:
        """Rule 2's mode now: "trust" once the lowest rung judges, else "doubt"."""
        return self.trust.mode()

    def early_signal_state(self) -> str:
        """Rule 2's mode and why: "doubt: epoch 1 not yet shown to predict epoch 4 (…)"."""
        return self.trust.state()

    def depth(self) -> float | None:
        """Rule 3's ratio now (None until two trials have trained past the first judged rung)."""
        return self.breadth.ratio(self.first_judged())

    def regime(self) -> str:
        """``depth`` or ``breadth`` (rule 3), as last estimated."""
        return self.breadth.regime()

    def _test_can_act(self, ctx: PolicyContext) -> bool:
        """Rule 2: may a trial go untested now, for the test of the lowest rung? Only while
        the test could still act on what it finds: time for the test to arrive (at the pace
        of its pairs so far; before that, the untested trial's own epochs to the next rung),
        and then for a trial a failed test brings back to reach the next rung (a start-up
        and the epochs between the rungs, timed as rule 4 times them)."""
        if len(self.rungs) < 2:
            return False
        climb = self.admit.seconds(self.rungs[1].milestone - self.rungs[0].milestone)
        if climb is None:
            return True
        test = self.trust.next_test_in(ctx.now)
        return ctx.time_left >= (climb if test is None else test) + self.startup(ctx) + climb

    def startup(self, ctx: PolicyContext) -> float:
        """O: the ``startup_percentile`` of the start-ups observed so far."""
        return self.admit.startup(ctx)

    def admission(self, ctx: PolicyContext) -> tuple[bool, float, float]:
        """Rule 4: (open, epochs a trial started now would reach, epochs it needs)."""
        return self.admit.verdict(ctx, self._need())

    def _need(self) -> float:
        """Rule 4: the epochs a new trial must be able to reach, by rules 2 and 3."""
        m = self.rungs[self.first_judged()].milestone
        reach = self.eta if self.regime() == "depth" else self.params.breadth_reach
        return min(self.max_epochs, m * reach)

    def _open(self, ctx: PolicyContext) -> bool:
        return self.admit.is_open(ctx, self._need())

    def choose_trial_to_run(self, ctx: PolicyContext) -> Trial | None:
        if not self._open(ctx):  # rule 5: the leaders take the free workers, if they can
            if not ctx.paused or self._taker(None, ctx, ctx.running.values()):
                return None
            return self._most_promising(ctx)  # else a paused trial rather than an idle worker
        waiting = self._waiting
        for i in waiting.rungs() if self.params.promote else ():  # highest rung first
            best = waiting.best(i, ctx.paused) if i >= 0 else None
            if best is not None and best[1] >= self.rungs[i].cutoff():
                return ctx.paused[best[0]]
        owed = self.trust.owed(self.rungs[0], ctx.paused)  # a failed test: the held come back
        if owed is not None:
            return ctx.paused[owed]
        for trial in ctx.pending.values():
            return trial
        if not ctx.offers_left and ctx.paused:  # nothing new to try: the most promising paused
            return self._most_promising(ctx)
        return None

    def _most_promising(self, ctx: PolicyContext) -> Trial:
        """The paused trial to resume: the best at the highest rung it was paused on."""
        waiting = self._waiting
        for i in waiting.rungs():
            best = waiting.best(i, ctx.paused)
            if best is not None:
                return ctx.paused[best[0]]
        return next(iter(ctx.paused.values()))

    # ------------------------------------------------------------------ rule 5: exploitation

    def allocate(self, ctx: PolicyContext) -> Mapping[int, int] | None:
        if not ctx.running or self._open(ctx):
            return None
        order = sorted(ctx.running.values(), key=lambda t: (-t.best_score, t.trial_id))
        return self.reallocation.targets(order, ctx, self.startup(ctx))

    def _outclassed(self, trial: Trial, ctx: PolicyContext) -> bool:
        """Depth regime: outside the running top 1/η by best score, with a taker."""
        if len(ctx.running) < 2 or trial.trial_id not in ctx.running or self.regime() != "depth":
            return False
        if self._open(ctx):
            return False
        ranked = sorted(ctx.running.values(), key=lambda t: (-t.best_score, t.trial_id))
        leaders = ranked[: math.ceil(len(ranked) / self.eta)]
        return trial not in leaders and self._taker(trial, ctx, leaders)

    def _taker(self, trial: Trial | None, ctx: PolicyContext, among) -> bool:
        """Could one of ``among`` (not ``trial``) take a worker at once?"""
        startup, grows = self.startup(ctx), self.reallocation.could_grow
        return any(t is not trial and grows(t, ctx, startup) for t in among)

    # ------------------------------------------------------------------ the policy line

    def describe(self, ctx: PolicyContext) -> str:
        """What it does now and why, in the user's words: whether it trusts the first epoch
        and why, whom it keeps, the time left, and whether it explores, admits no new trials
        or gives the freed workers to the leaders: "doubting epoch 1: 58% agreement
        with epoch 4, 71% needed · keeping the top 8 of 40 after epoch 4 · 5 min left: no new trials (epoch 8
        out of reach), leaders get freed workers". Rule 4's numbers stay in the reasons."""
        head = f"{self.trust.short()} · {self._keeping()}"
        if math.isfinite(ctx.deadline) and ctx.time_left <= 0:
            return f"{head} · deadline reached"
        return f"{head} · {time_left(ctx)}: {self._phase(ctx)}"

    def _keeping(self) -> str:
        """Rule 1 at the first judged rung (the lowest, while it judges for now): the trials
        it keeps there so far."""
        lowest = self.trust.tentative_on() or self.trust.trusted[0]  # it judges, for now or not
        rung = self.rungs[0 if lowest else self.first_judged()]
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
                rest = ", resuming the best paused" if ctx.paused else ""
                return f"no new trials ({target} out of reach){rest}"
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
