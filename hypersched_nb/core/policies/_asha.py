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
    >>> [asha.on_trial_result(t, Result(t.trial_id, 1, s, 0, 1, 1), ctx).name
    ...  for t, s in zip(trials, [0.5, 0.9, 0.4, 0.95, 0.1, 0.7, 0.8, 0.2, 0.99, 0.3])]
    ['CONTINUE', 'CONTINUE', 'STOP', 'CONTINUE', 'STOP', 'CONTINUE', 'CONTINUE', 'STOP', 'CONTINUE', 'STOP']
"""

from __future__ import annotations

import bisect
import math

import numpy as np

from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.decisions import Decision
from hypersched_nb.core.events import Result
from hypersched_nb.core.policies._base import Policy, check_budget
from hypersched_nb.core.trial import Trial
from hypersched_nb.errors import ConfigError

__all__ = ["ASHA", "Rung", "rung_milestones"]


def rung_milestones(max_epochs: float, min_epochs: float, eta: float, s: int = 0) -> list[float]:
    """Milestones of bracket ``s``, highest first: (R=10, r=1, η=2) -> [8, 4, 2, 1]."""
    count = int(math.log(max_epochs / min_epochs) / math.log(eta) - s + 1)
    return [min_epochs * eta ** (k + s) for k in reversed(range(count))]


class Rung:
    """Values recorded at one milestone, kept sorted so a percentile costs O(1).

    ``percentile`` equals ``numpy.nanpercentile(values, q)`` (linear interpolation, NaN
    ignored) without sorting 10,000 values on every result.
    """

    __slots__ = ("milestone", "recorded", "_sorted")

    def __init__(self, milestone: float):
        self.milestone = milestone
        self.recorded: dict[int, float] = {}
        self._sorted: list[float] = []

    def add(self, tid: int, value: float) -> None:
        self.recorded[tid] = value
        if value == value:  # not NaN
            bisect.insort(self._sorted, value)

    def percentile(self, q: float) -> float | None:
        values = self._sorted
        if not values:
            return None
        pos = (len(values) - 1) * q / 100.0
        lo = int(pos)
        hi = min(lo + 1, len(values) - 1)
        return values[lo] + (values[hi] - values[lo]) * (pos - lo)

    def __contains__(self, tid: int) -> bool:
        return tid in self.recorded

    def __len__(self) -> int:
        return len(self.recorded)


class _Bracket:
    __slots__ = ("rungs", "eta", "stop_last_trials")

    def __init__(self, milestones: list[float], eta: float, stop_last_trials: bool):
        self.rungs = [Rung(m) for m in milestones]
        self.eta = eta
        self.stop_last_trials = stop_last_trials

    def on_result(self, tid: int, t: float, score: float) -> tuple[Decision, str]:
        for rung in self.rungs:
            milestone = rung.milestone
            if t >= milestone and tid in rung and not self.stop_last_trials:
                break  # already judged at the highest rung it passed
            if t < milestone or tid in rung:
                continue
            cutoff = rung.percentile((1 - 1 / self.eta) * 100)
            rung.add(tid, score)
            if cutoff is not None and score < cutoff:
                return Decision.STOP, f"stopped at rung {milestone:g}: {score:.4g} below cutoff {cutoff:.4g}"
            return Decision.CONTINUE, ""
        return Decision.CONTINUE, ""


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

    def on_trial_result(self, trial: Trial, result: Result, ctx: PolicyContext) -> Decision:
        if result.epoch >= self.max_epochs and self.stop_last_trials:
            self.why = f"reached max_epochs {self.max_epochs}"
            return Decision.STOP
        score = result.metric if ctx.mode == "max" else -result.metric
        decision, self.why = self._of[trial.trial_id].on_result(trial.trial_id, result.epoch, score)
        return decision

    def on_trial_complete(self, trial: Trial, ctx: PolicyContext) -> None:
        """Record the final result where it first passes an unrecorded rung, as Ray Tune's
        ``on_trial_complete(result)`` does (a curve that ends on a milestone counts there)."""
        bracket = self._of.pop(trial.trial_id, None)
        if bracket is not None and trial.scores:
            bracket.on_result(trial.trial_id, trial.epochs, trial.scores[-1])

    def on_trial_remove(self, trial: Trial, ctx: PolicyContext) -> None:
        self._of.pop(trial.trial_id, None)

    def describe(self, ctx: PolicyContext) -> str:
        rungs = self._brackets[0].rungs
        return "asha: " + ", ".join(f"rung {r.milestone:g}: {len(r)}" for r in reversed(rungs))
