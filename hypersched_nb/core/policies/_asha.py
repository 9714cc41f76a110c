"""Asynchronous successive halving, exactly as Ray Tune's ``AsyncHyperBandScheduler``.

Li et al., "A System for Massively Parallel Hyperparameter Tuning" (MLSys 2020).

Symbols: grace period r = ``min_epochs``, maximum R = ``max_epochs``, reduction factor
η = ``eta``, brackets s = 0 … ``brackets`` − 1. Bracket s has rungs at r·η^(k+s) for
k = K−1 … 0, K = ⌊log(R/r)/log η − s + 1⌋. Published defaults (Ray Tune): R = 100, r = 1,
η = 4, one bracket, ``stop_last_trials=True``.

Rule: when a result newly passes a rung (the first such rung from the top), the cutoff is the
(1 − 1/η) percentile of the values already recorded there (NaN ignored); the trial stops if
strictly below it; then its value is recorded. It never pauses.

Example:
    >>> from hypersched_nb.core.trial import Trial
    >>> from hypersched_nb.core.events import Result
    >>> from hypersched_nb.core.context import PolicyContext
    >>> asha = ASHA(max_epochs=10, min_epochs=1, eta=2)
    >>> ctx = PolicyContext.for_test()
    >>> trials = [Trial(i, {}) for i in range(10)]
    >>> for t in trials: asha.on_trial_add(t, ctx)
    >>> [asha.on_trial_result(t, Result(t.trial_id, 1, s, 0, 1, 1), ctx).decision.name
    ...  for t, s in zip(trials, [0.5, 0.9, 0.4, 0.95, 0.1, 0.7, 0.8, 0.2, 0.99, 0.3])]
    ['CONTINUE', 'CONTINUE', 'STOP', 'CONTINUE', 'STOP', 'CONTINUE', 'CONTINUE', 'STOP', 'CONTINUE', 'STOP']
"""

from __future__ import annotations

import numpy as np

from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.decisions import CONTINUE, Verdict
from hypersched_nb.core.events import Result
from hypersched_nb.core.policies._base import Policy, check_budget
from hypersched_nb.core.policies._describe import count, epoch_list, epoch_number, top_share
from hypersched_nb.core.policies._rungs import Rung, milestones
from hypersched_nb.core.trial import Trial
from hypersched_nb.errors import ConfigError

__all__ = ["ASHA", "rung_milestones"]


def rung_milestones(max_epochs: float, min_epochs: float, eta: float, s: int = 0) -> list[float]:
    """Milestones of bracket ``s`` (it starts s rungs up), highest first: (R=10, r=1, η=2)
    -> [8, 4, 2, 1]."""
    return milestones(max_epochs, min_epochs, eta)[s:][::-1]


class _Bracket:
    """Its rungs, highest first; each cutoff is the percentile (1 − 1/η) of the values
    recorded there (NaN ignored, as ``numpy.nanpercentile``)."""

    __slots__ = ("rungs", "stop_last_trials")

    def __init__(self, rungs_at: list[float], eta: float, stop_last_trials: bool):
        self.rungs = [Rung(m, eta) for m in rungs_at]
        self.stop_last_trials = stop_last_trials

    def on_result(self, tid: int, t: float, score: float) -> Verdict:
        for rung in self.rungs:
            milestone = rung.milestone
            if t >= milestone and tid in rung and not self.stop_last_trials:
                break  # already judged at the highest rung it passed
            if t < milestone or tid in rung:
                continue
            cutoff = rung.cutoff()
            rung.record(tid, score)
            if cutoff is not None and score < cutoff:
                return Verdict.stop(
                    f"stopped at rung {milestone:g}: {score:.4g} below cutoff {cutoff:.4g}"
                )
            return CONTINUE
        return CONTINUE


class ASHA(Policy):
    name = "asha"

    def __init__(
        self,
        *,
        max_epochs: int = 100,
        min_epochs: int = 1,
        eta: float = 4,
        brackets: int = 1,
        stop_last_trials: bool = True,
        seed: int | None = None,
    ):
        check_budget(max_epochs, min_epochs, eta)
        if brackets < 1:
            raise ConfigError(f"`brackets` is {brackets}, but must be >= 1")
        self.max_epochs, self.min_epochs, self.eta = max_epochs, min_epochs, eta
        self.brackets = brackets
        self.stop_last_trials = stop_last_trials
        self._rng = np.random.default_rng(seed)
        self._brackets = [
            _Bracket(rung_milestones(max_epochs, min_epochs, eta, s), eta, stop_last_trials)
            for s in range(brackets)
        ]
        self._of: dict[int, _Bracket] = {}

    def on_trial_add(self, trial: Trial, ctx: PolicyContext) -> None:
        if len(self._brackets) == 1:
            bracket = self._brackets[0]
        else:  # Ray Tune's softmax over the brackets' rung counts: more rungs, more trials
            sizes = np.array([len(b.rungs) for b in self._brackets], dtype=float)
            probs = np.exp(sizes - sizes.max())
            bracket = self._brackets[self._rng.choice(len(sizes), p=probs / probs.sum())]
        self._of[trial.trial_id] = bracket

    def on_trial_result(self, trial: Trial, result: Result, ctx: PolicyContext) -> Verdict:
        if result.epoch >= self.max_epochs and self.stop_last_trials:
            return Verdict.stop(f"reached max_epochs {self.max_epochs}")
        score = result.metric if ctx.mode == "max" else -result.metric
        return self._of[trial.trial_id].on_result(trial.trial_id, result.epoch, score)

    def on_trial_complete(self, trial: Trial, ctx: PolicyContext) -> None:
        """Record the final result where it first passes an unrecorded rung, as Ray Tune's
        ``on_trial_complete(result)`` does (a curve that ends on a milestone counts there)."""
        bracket = self._of.pop(trial.trial_id, None)
        if bracket is not None and trial.scores:
            bracket.on_result(trial.trial_id, trial.epochs, trial.scores[-1])

    def on_trial_remove(self, trial: Trial, ctx: PolicyContext) -> None:
        self._of.pop(trial.trial_id, None)

    def describe(self, ctx: PolicyContext) -> str:
        """Where it stops trials and how far the best got: "stopping trials below the top
        quarter at epochs 1, 4, 16 · 3 of 40 trials reached epoch 16"."""
        reached: dict[float, int] = {}  # milestone -> trials that reached it, every bracket
        for bracket in self._brackets:
            for rung in bracket.rungs:
                reached[rung.milestone] = reached.get(rung.milestone, 0) + len(rung)
        judged = sorted(m for m in reached if m < self.max_epochs) or sorted(reached)
        rule = f"stopping trials below the {top_share(self.eta)} at {epoch_list(judged)}"
        furthest = max((m for m, n in reached.items() if n), default=None)
        if furthest is None:
            return f"{rule} · no trial has reached epoch {epoch_number(judged[0])} yet"
        return (
            f"{rule} · {reached[furthest]} of {count(len(ctx.trials), 'trial')} "
            f"reached epoch {epoch_number(furthest)}"
        )
