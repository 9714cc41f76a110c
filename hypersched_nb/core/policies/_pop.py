"""POP: Promising, Opportunistic and Poor trials from predicted learning curves (HyperDrive).

Rasley, He, Yan, Ruwase, Fonseca, "HyperDrive: Exploring Hyperparameters with POP
Scheduling", Middleware 2017.

Symbols: boundary b = ``boundary`` epochs (default 10 % of R, at least 1; the paper uses
5–10 %), R = ``max_epochs``, target y_target = ``y_target``, S = the workers ``ctx.workers``,
k = ``slots_per_trial``. At each of a trial's boundaries (epochs b, 2b, … from
``min_epochs`` on) the curve model (:mod:`hypersched_nb.core.curves`) gives it

- p = P(its metric reaches y_target at some epoch it can still train before the deadline):
  the first-passage probabilities summed over those epochs, the horizon being the time left
  (less one start-up if it is paused) over its median observed epoch time, capped at R;
- the expected remaining time to the target (shown by ``describe``, breaks ties).

Rules, in order: a trial below the kill threshold stops (a non-learner); a trial with
p < ``p_stop`` (0.05) that has not reached the target stops (Poor). Then the threshold
p* = argmax over the live trials' p of min(S·p, k·N(p)), N(p) = #{trials with p_i ≥ p}
(slots deserved against slots desired); the ⌊min(S·p*, k·N(p*)) / k⌋ trials of highest p
hold dedicated slots (Promising) and go on. Every other trial (Opportunistic) shares the
remaining slots round-robin in turns of b epochs: a free slot resumes a paused promising
trial first; otherwise the turn goes to a new configuration while at most ``explore_share``
of the turns so far (new starts, resumes, and turns a trial kept its slot for) went to new
ones, else to the opportunistic trial that has waited longest. At its
boundary an opportunistic trial joins the back of that queue and is paused only if the
turn goes to someone else (a pause that resumes the same trial would only cost a start-up).

Targets: ``y_target=None`` is the dynamic option — the target is the best metric any trial
has reported so far, so it rises each time it is reached. ``kill_threshold``: a metric value
(HyperDrive: 15 % for 10-class accuracy, chance plus a margin), ``"relative"`` (chance
estimated as the worst first-epoch metric seen, plus ``kill_margin`` of the way from it to
the best seen: 0.05 gives about 0.14 when chance is 0.1 and the best 0.9), or None (off,
the default: chance is unknown in general).

Deviations: the paper's predictor is Domhan et al.'s MCMC ensemble; ours is its grid-
posterior version (same eleven families). The paper leaves how new configurations enter the
opportunistic rotation open; ``explore_share`` states ours. A trial that has reached the
target is never stopped by the p rule (with the dynamic target, the leader).

Example:
    >>> from hypersched_nb.core.trial import Trial, TrialState
    >>> from hypersched_nb.core.events import Result
    >>> from hypersched_nb.core.context import PolicyContext
    >>> pop = POP(max_epochs=20, boundary=4, explore_share=1.0, seed=0)  # dynamic target
    >>> trials = {i: Trial(i, {}) for i in range(10)}
    >>> for i, t in trials.items():  # curves levelling off at 0.3, 0.37, ... 0.93
    ...     t.state, t.workers, t.starts = TrialState.RUNNING, 1, 1
    ...     t.metrics = [(0.3 + 0.07 * i) * (1 - 0.5 ** e) for e in range(1, 5)]
    ...     t.epochs, t.scores, t.best_score = 4, t.metrics, max(t.metrics)
    >>> ctx = PolicyContext.for_test(trials=trials, workers=4, deadline=1000.0)
    >>> verdicts = [pop.on_trial_result(t, Result(i, 4, t.metrics[-1], 40.0, 10.0, 1), ctx)
    ...             for i, t in trials.items()]
    >>> [v.decision.name[0] for v in verdicts]  # Poor stop, Opportunistic yield, Promising go on
    ['S', 'S', 'S', 'S', 'P', 'C', 'C', 'C', 'C', 'C']
    >>> pop.threshold([0.9, 0.8, 0.5, 0.3], slots=8)  # p* and the dedicated slots
    (0.5, 3)
"""

from __future__ import annotations

import math
import statistics

import numpy as np

from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.curves import CurveCache
from hypersched_nb.core.decisions import CONTINUE, Verdict
from hypersched_nb.core.events import Result
from hypersched_nb.core.policies._base import Policy, check_budget, evaluation_boundary
from hypersched_nb.core.policies._describe import every_epochs, time_left
from hypersched_nb.core.trial import Trial
from hypersched_nb.errors import ConfigError

__all__ = ["POP"]

_NEW = "new configuration"


class POP(Policy):
    name = "pop"

    def __init__(
        self,
        *,
        max_epochs: int = 100,
        min_epochs: int = 1,
        seed: int | None = None,
        boundary: int | None = None,
        boundary_fraction: float = 0.1,
        y_target: float | None = None,
        kill_threshold: float | str | None = None,
        kill_margin: float = 0.05,
        p_stop: float = 0.05,
        slots_per_trial: int = 1,
        explore_share: float = 0.5,
        samples: int = 200,
        bounds: tuple[float, float] | str | None = "auto",
    ):
        check_budget(max_epochs, min_epochs)
        boundary = evaluation_boundary(boundary, boundary_fraction, max_epochs)
        if isinstance(kill_threshold, str) and kill_threshold != "relative":
            raise ConfigError(
                f"`kill_threshold` is {kill_threshold!r}, but must be a number, 'relative' or None"
            )
        for key, value in (
            ("p_stop", p_stop),
            ("explore_share", explore_share),
            ("kill_margin", kill_margin),
        ):
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"`{key}` is {value}, but must be in [0, 1]")
        if slots_per_trial < 1:
            raise ConfigError(f"`slots_per_trial` is {slots_per_trial}, but must be >= 1")
        self.max_epochs, self.min_epochs, self.boundary = max_epochs, min_epochs, boundary
        self.y_target, self.kill_threshold, self.kill_margin = y_target, kill_threshold, kill_margin
        self.p_stop, self.slots_per_trial, self.explore_share = (
            p_stop,
            slots_per_trial,
            explore_share,
        )
        self._curves = CurveCache(max_epochs, bounds=bounds, samples=samples, seed=seed)
        self._secs: dict[int, list[float]] = {}  # observed epoch seconds per trial
        self._p: dict[int, float] = {}
        self._eta_s: dict[int, float] = {}  # expected seconds to the target
        self._dedicated: list[int] = []  # promising trials holding slots, best first
        self._kept = 0  # slices an opportunistic trial kept its slot for (a round-robin turn)
        self._p_star = math.nan
        self._target = math.nan

    # ------------------------------------------------------------------ the paper's steps

    @staticmethod
    def threshold(ps, slots: int, per_trial: int = 1) -> tuple[float, int]:
        """p* maximising min(S·p, k·N(p)) over the candidates ``ps``, and the dedicated
        slots ⌊that maximum / k⌋ (ties: the higher p*). ``([], S)`` gives ``(nan, 0)``."""
        p = np.sort(np.asarray(ps, dtype=float))[::-1]
        if p.size == 0:
            return math.nan, 0
        value = np.minimum(slots * p, per_trial * np.arange(1, p.size + 1))
        j = int(np.argmax(value))
        return float(p[j]), math.floor(value[j] / per_trial + 1e-9)

    def _target_of(self, ctx: PolicyContext) -> float:
        if self.y_target is not None:
            return float(self.y_target)
        best = max((t.best_score for t in ctx.trials.values()), default=-math.inf)
        return best if ctx.mode == "max" else -best

    def _horizon(self, trial: Trial, ctx: PolicyContext) -> int:
        """Epochs the trial can still train before the deadline (at most R − epochs)."""
        secs = self._secs.get(trial.trial_id)
        left = self.max_epochs - trial.epochs
        if not secs or left <= 0:
            return max(left, 0)
        avail = ctx.time_left
        if trial.trial_id not in ctx.running and ctx.startups:
            avail -= statistics.median(ctx.startups)
        per_epoch = max(statistics.median(secs), 1e-9)
        return int(min(left, max(avail, 0.0) // per_epoch))

    def _confidence(self, trial: Trial, ctx: PolicyContext, target: float) -> tuple[float, float]:
        """(p, expected seconds to the target) from the trial's latest prediction."""
        pred = self._curves.cached(trial.trial_id)
        h = self._horizon(trial, ctx)
        if pred is None or h <= 0:
            return 0.0, math.inf
        p = pred.prob_reach(target, upto=h)
        ahead = pred.expected_epochs_to(target, upto=h) - trial.epochs
        return p, ahead * statistics.median(self._secs[trial.trial_id])

    def _non_learner(self, trial: Trial, ctx: PolicyContext) -> str:
        kill = self.kill_threshold
        if kill is None:
            return ""
        sign = 1.0 if ctx.mode == "max" else -1.0
        if kill == "relative":
            firsts = [
                t.scores[0] for t in ctx.trials.values() if t.scores and math.isfinite(t.scores[0])
            ]
            if len(firsts) < 2:
                return ""
            chance = min(firsts)
            best = max(t.best_score for t in ctx.trials.values())
            line = chance + self.kill_margin * (best - chance)
        else:
            line = sign * float(kill)
        if trial.best_score < line:
            return f"non-learner: best {sign * trial.best_score:.4g} worse than kill threshold {sign * line:.4g}"
        return ""

    def _classify(self, ctx: PolicyContext, target: float) -> None:
        """Refresh every live trial's p against the current target and horizon, then p*."""
        live = [t for t in (*ctx.running.values(), *ctx.paused.values()) if t.trial_id in self._p]
        for t in live:
            self._p[t.trial_id], self._eta_s[t.trial_id] = self._confidence(t, ctx, target)
        ps = [self._p[t.trial_id] for t in live]
        self._p_star, slots = self.threshold(ps, ctx.workers, self.slots_per_trial)
        ranked = sorted(
            live, key=lambda t: (-self._p[t.trial_id], self._eta_s[t.trial_id], t.trial_id)
        )
        self._dedicated = [t.trial_id for t in ranked[:slots] if self._p[t.trial_id] > 0]

    def _pick(self, ctx: PolicyContext, yielding: Trial | None = None):
        """Who a free slot goes to: a trial, ``_NEW`` (a new configuration) or None.
        With ``yielding`` (a running trial at its boundary) the answer is what a slot freed
        by pausing it would go to, so that it pauses only to let another trial run."""
        dedicated = set(self._dedicated)
        for tid in self._dedicated:
            if tid in ctx.paused:
                return ctx.paused[tid]
        waiting = [t for t in ctx.paused.values() if t.trial_id not in dedicated]
        if yielding is not None:
            waiting.append(yielding)  # it would wait last
        if (ctx.pending or ctx.offers_left) and (not waiting or self._new_turn(ctx)):
            return next(iter(ctx.pending.values()), _NEW)
        return waiting[0] if waiting else None

    def _new_turn(self, ctx: PolicyContext) -> bool:
        """Is it a new configuration's turn? Turns are slices of b epochs outside the
        dedicated slots: new starts against resumes and slices an opportunistic trial kept."""
        started = sum(1 for t in ctx.trials.values() if t.starts)
        old = self._kept + sum(t.starts - 1 for t in ctx.trials.values() if t.starts > 1)
        return started <= self.explore_share * (started + old)

    # ------------------------------------------------------------------ hooks

    def on_trial_result(self, trial: Trial, result: Result, ctx: PolicyContext) -> Verdict:
        tid = trial.trial_id
        self._curves.observe(result.metric)
        self._secs.setdefault(tid, []).append(result.seconds * result.workers)
        if result.epoch % self.boundary or result.epoch < self.min_epochs:
            return CONTINUE
        target = self._target = self._target_of(ctx)
        self._curves.predict(trial, ctx.mode)
        self._p[tid], self._eta_s[tid] = p, _ = self._confidence(trial, ctx, target)
        kill = self._non_learner(trial, ctx)
        reached = trial.best_score >= (target if ctx.mode == "max" else -target)
        if kill or (p < self.p_stop and not reached):
            self._forget(tid)
            return Verdict.stop(
                kill or f"poor: p={p:.3f} < {self.p_stop} of reaching {target:.4g} by the deadline"
            )
        self._classify(ctx, target)
        if tid in self._dedicated:
            return Verdict.go(f"promising: p={self._p[tid]:.3f} >= p*={self._p_star:.3f}")
        nxt = self._pick(ctx, yielding=trial)
        if nxt is None or nxt is trial:
            self._kept += nxt is trial  # its own turn again
            return CONTINUE
        return Verdict.pause(
            f"opportunistic: p={self._p[tid]:.3f} < p*={self._p_star:.3f}; yields its slot"
        )

    def choose_trial_to_run(self, ctx: PolicyContext) -> Trial | None:
        pick = self._pick(ctx)
        return None if pick is _NEW else pick

    def on_trial_remove(self, trial: Trial, ctx: PolicyContext) -> None:
        self._forget(trial.trial_id)

    def _forget(self, tid: int) -> None:
        self._curves.forget(tid)
        self._p.pop(tid, None)
        self._eta_s.pop(tid, None)
        self._secs.pop(tid, None)
        if tid in self._dedicated:
            self._dedicated.remove(tid)

    def describe(self, ctx: PolicyContext) -> str:
        """Who holds a worker and why: "2 trials most likely to reach 0.8 (the best so far)
        keep their workers, the others take turns · 3 min left"."""
        if not math.isfinite(self._target):
            return f"predicting each trial's learning curve {every_epochs(self.boundary)}"
        target = f"{self._target:.4g}" + (" (the best so far)" if self.y_target is None else "")
        promising = len(self._dedicated)
        if not promising:
            held = f"no trial likely to reach {target}: all take turns"
        elif promising == 1:
            held = f"1 trial most likely to reach {target} keeps its worker, the others take turns"
        else:
            held = (
                f"{promising} trials most likely to reach {target} keep their workers, "
                "the others take turns"
            )
        return f"{held} · {time_left(ctx)}"
