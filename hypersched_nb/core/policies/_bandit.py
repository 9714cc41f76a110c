"""Bandit: TuPAQ's action elimination, as HyperDrive compared against it.

Sparks, Talwalkar, Haas, Franklin, Jordan, Kraska, "Automating Model Search for Large
Scale Machine Learning" (SoCC 2015), as the "Bandit" baseline of Rasley et al.,
"HyperDrive" (Middleware 2017).

Symbols: boundary b = ``boundary`` epochs (default 10 % of R = ``max_epochs``, at least 1),
ε = ``epsilon`` (published 0.5). Rule: at each of a trial's boundaries (epochs b, 2b, … from
``min_epochs`` on) it goes on only if its best metric so far, widened by ε, beats the best
metric any trial has reported — in max mode best × (1 + ε) > global best; otherwise it
stops. Configurations start first in, first out and are never paused.

Min mode (a loss, lower is better): the same ratio read the other way, best / (1 + ε) <
global best, i.e. a trial goes on while its best loss is within a factor 1 + ε of the best
loss. Both forms assume a positive metric, as TuPAQ's accuracy and a loss are; the trial
holding the global best always goes on (so a zero or negative best never stops its owner).

Example:
    >>> from hypersched_nb.core.trial import Trial
    >>> from hypersched_nb.core.events import Result
    >>> from hypersched_nb.core.context import PolicyContext
    >>> bandit = Bandit(max_epochs=20, boundary=2)
    >>> trials = {i: Trial(i, {}) for i in range(10)}
    >>> for i, t in trials.items():
    ...     m = 0.05 + 0.1 * i
    ...     t.epochs, t.metrics, t.scores, t.best_score = 2, [m], [m], m
    >>> ctx = PolicyContext.for_test(trials=trials)
    >>> verdicts = [bandit.on_trial_result(t, Result(i, 2, t.metrics[-1], 2.0, 1.0, 1), ctx)
    ...             for i, t in trials.items()]
    >>> [v.decision.name[0] for v in verdicts]  # continue only where 1.5 × best > 0.95
    ['S', 'S', 'S', 'S', 'S', 'S', 'C', 'C', 'C', 'C']
"""

from __future__ import annotations

import math

from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.decisions import CONTINUE, Verdict
from hypersched_nb.core.events import Result
from hypersched_nb.core.policies._base import Policy, check_budget, evaluation_boundary
from hypersched_nb.core.policies._describe import every_epochs
from hypersched_nb.core.trial import Trial
from hypersched_nb.errors import ConfigError

__all__ = ["Bandit"]


def survives(trial_best: float, global_best: float, epsilon: float, mode: str) -> bool:
    """TuPAQ's elimination test on raw metrics (see the module docstring for min mode)."""
    if mode == "max":
        return trial_best * (1 + epsilon) > global_best
    return trial_best / (1 + epsilon) < global_best


class Bandit(Policy):
    name = "bandit"

    def __init__(
        self,
        *,
        max_epochs: int = 100,
        min_epochs: int = 1,
        boundary: int | None = None,
        boundary_fraction: float = 0.1,
        epsilon: float = 0.5,
    ):
        check_budget(max_epochs, min_epochs)
        boundary = evaluation_boundary(boundary, boundary_fraction, max_epochs)
        if not epsilon >= 0:
            raise ConfigError(f"`epsilon` is {epsilon}, but must be >= 0")
        self.max_epochs, self.min_epochs = max_epochs, min_epochs
        self.boundary, self.epsilon = boundary, epsilon
        self._eliminated = 0

    def on_trial_result(self, trial: Trial, result: Result, ctx: PolicyContext) -> Verdict:
        if result.epoch % self.boundary or result.epoch < self.min_epochs:
            return CONTINUE
        best_score = max((t.best_score for t in ctx.trials.values()), default=-math.inf)
        if trial.best_score >= best_score:
            return CONTINUE  # the leader
        sign = 1.0 if ctx.mode == "max" else -1.0
        mine, best = sign * trial.best_score, sign * best_score
        if survives(mine, best, self.epsilon, ctx.mode):
            return CONTINUE
        self._eliminated += 1
        bound = best / (1 + self.epsilon) if ctx.mode == "max" else best * (1 + self.epsilon)
        worse = "<=" if ctx.mode == "max" else ">="
        return Verdict.stop(
            f"eliminated: best {mine:.4g} {worse} {bound:.4g} "
            f"(global best {best:.4g}, ε={self.epsilon})"
        )

    def describe(self, ctx: PolicyContext) -> str:
        """The bar a trial must clear now: "every 2 epochs, stopping trials whose best is
        below 0.533 (the leader's 0.8 ÷ 1.5) · 7 stopped so far"."""
        best_score = max((t.best_score for t in ctx.trials.values()), default=-math.inf)
        stopped = f"{self._eliminated} stopped so far"
        if not math.isfinite(best_score):
            return (
                f"{every_epochs(self.boundary)}, stopping trials far behind the leader · {stopped}"
            )
        factor = 1 + self.epsilon
        if ctx.mode == "max":
            bar = f"below {best_score / factor:.3g} (the leader's {best_score:.3g} ÷ {factor:g})"
        else:
            bar = f"above {-best_score * factor:.3g} (the leader's {-best_score:.3g} × {factor:g})"
        return f"{every_epochs(self.boundary)}, stopping trials whose best is {bar} · {stopped}"
