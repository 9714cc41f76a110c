"""EarlyTerm: stop a trial that is unlikely to beat the best, from its extrapolated curve.

Domhan, Springenberg, Hutter, "Speeding up Automatic Hyperparameter Optimization of Deep
Neural Networks by Extrapolation of Learning Curves" (IJCAI 2015), as the "EarlyTerm"
baseline of Rasley et al., "HyperDrive" (Middleware 2017).

Symbols: boundary b = ``boundary`` epochs (default 10 % of R = ``max_epochs``, at least 1),
δ = ``delta`` (published 0.05), y_best = the best metric any *other* trial has reported.
Rule: at each of a trial's boundaries (epochs b, 2b, … from ``min_epochs`` on), the curve
model (:mod:`hypersched_nb.core.curves`) predicts its metric at R; the trial stops when
P(y(R) at least as good as y_best) < δ, and goes on otherwise. Configurations start first
in, first out and are never paused.

Deviations: Domhan et al. fit their ensemble by MCMC; ours is its grid-posterior version
(the same eleven families). Their y_best is the best *final* value of the finished runs of a
sequential search; in a parallel search we compare with the best value any other trial has
reported (a trial is never compared with itself, so the leader is never stopped).

Example:
    >>> from hypersched_nb.core.trial import Trial
    >>> from hypersched_nb.core.events import Result
    >>> from hypersched_nb.core.context import PolicyContext
    >>> et = EarlyTerm(max_epochs=20, boundary=5, seed=0)
    >>> trials = {i: Trial(i, {}) for i in range(10)}
    >>> for i, t in trials.items():  # curves levelling off at 0.3, 0.35, ... 0.75
    ...     t.metrics = [(0.3 + 0.05 * i) * (1 - 0.5 ** e) for e in range(1, 6)]
    ...     t.epochs, t.scores, t.best_score = 5, t.metrics, max(t.metrics)
    >>> ctx = PolicyContext.for_test(trials=trials)
    >>> verdicts = [et.on_trial_result(t, Result(i, 5, t.metrics[-1], 5.0, 1.0, 1), ctx)
    ...             for i, t in trials.items()]
    >>> [v.decision.name[0] for v in verdicts]
    ['S', 'S', 'S', 'S', 'S', 'C', 'C', 'C', 'C', 'C']
"""

from __future__ import annotations

import math

from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.curves import CurveCache
from hypersched_nb.core.decisions import CONTINUE, Verdict
from hypersched_nb.core.events import Result
from hypersched_nb.core.policies._base import Policy, check_budget, evaluation_boundary
from hypersched_nb.core.policies._describe import every_epochs
from hypersched_nb.core.trial import Trial
from hypersched_nb.errors import ConfigError

__all__ = ["EarlyTerm"]


class EarlyTerm(Policy):
    name = "earlyterm"

    def __init__(
        self,
        *,
        max_epochs: int = 100,
        min_epochs: int = 1,
        seed: int | None = None,
        boundary: int | None = None,
        boundary_fraction: float = 0.1,
        delta: float = 0.05,
        samples: int = 200,
        bounds: tuple[float, float] | str | None = "auto",
    ):
        check_budget(max_epochs, min_epochs)
        boundary = evaluation_boundary(boundary, boundary_fraction, max_epochs)
        if not 0.0 <= delta <= 1.0:
            raise ConfigError(f"`delta` is {delta}, but must be in [0, 1]")
        self.max_epochs, self.min_epochs = max_epochs, min_epochs
        self.boundary, self.delta = boundary, delta
        self._curves = CurveCache(max_epochs, bounds=bounds, samples=samples, seed=seed)
        self._stopped = 0

    def on_trial_result(self, trial: Trial, result: Result, ctx: PolicyContext) -> Verdict:
        self._curves.observe(result.metric)
        if result.epoch % self.boundary or result.epoch < self.min_epochs:
            return CONTINUE
        others = (t.best_score for t in ctx.trials.values() if t.trial_id != trial.trial_id)
        best_score = max(others, default=-math.inf)
        if not math.isfinite(best_score):
            return CONTINUE  # nothing to compare with yet
        y_best = best_score if ctx.mode == "max" else -best_score
        pred = self._curves.predict(trial, ctx.mode)
        p = float(pred.prob_better(y_best)[-1])
        if p >= self.delta:
            return CONTINUE
        self._stopped += 1
        self._curves.forget(trial.trial_id)
        return Verdict.stop(
            f"unlikely to beat the best: P(y({self.max_epochs}) beats {y_best:.4g}) = {p:.3f}"
            f" < δ={self.delta}"
        )

    def on_trial_remove(self, trial: Trial, ctx: PolicyContext) -> None:
        self._curves.forget(trial.trial_id)

    def describe(self, ctx: PolicyContext) -> str:
        return (
            f"{every_epochs(self.boundary)}, stopping trials predicted to have under a "
            f"{self.delta * 100:g}% chance to beat the best by epoch {self.max_epochs} · "
            f"{self._stopped} stopped so far"
        )
