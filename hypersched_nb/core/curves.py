"""Learning-curve prediction: Domhan et al.'s parametric families as one weighted ensemble.

Domhan, Springenberg, Hutter, "Speeding up Automatic Hyperparameter Optimization of Deep
Neural Networks by Extrapolation of Learning Curves" (IJCAI 2015). Used by POP and EarlyTerm.

Every family is written as ``y = c + g·φ(x; θ)`` with ``g ≥ 0`` and ``φ`` increasing in the
epoch ``x``, so every fitted curve rises or stays flat (Domhan's monotone prior) and the
ensemble fits accuracies, negated losses and unbounded metrics alike (shifting or scaling the
metric moves ``c`` and ``g`` only). The eleven families and their ``φ``:

=============== ========================================= ===========================
family          Domhan's form                             φ(x; θ), θ on a grid
=============== ========================================= ===========================
pow3            c − a·x^−α                                −x^−α
pow4            c − (a·x + b)^−α                          −(x + s)^−α
log_power       a / (1 + (x / e^b)^c)                     1 / (1 + (x / τ)^−γ)
weibull         α − (α − β)·exp(−(κx)^δ)                  −exp(−(κx)^δ)
mmf             α − (α − β) / (1 + (κx)^δ)                −1 / (1 + (κx)^δ)
janoschek       a − (a − β)·exp(−k·x^δ)                   −exp(−k·x^δ)
ilog2           c − a / ln(x + 1)                         −1 / ln(x + 1)
hill            θ·x^η / (κ^η + x^η)                       x^η / (κ^η + x^η)
vapor_pressure  exp(a + b/x + c·ln x)                     x^c·exp(b/x), b ≤ 0, c ≥ 0
log_log_linear  ln(a·ln x + b)                            ln(ln x + q)
exp4            c − exp(−a·x^α + b)                       −exp(−a·x^α)
=============== ========================================= ===========================

Fit (least squares by variable projection): for every point of a fixed grid over the
nonlinear parameters θ (time scales from 0.2 epochs to 3 horizons, log-spaced), the linear
pair (c, g) has a closed-form least-squares solution (g clamped at 0); a family's fit is its
best grid point. Families are weighted BIC-like, exp(−RSS_min/2σ̃² − k/2·ln n), k the
parameter count of the offset form (``FAMILIES``). σ² is the best fit's residual variance
shrunk towards ``noise_prior`` (2 pseudo-observations); σ̃² = σ²·``temper``·(1 + ρ)/(1 − ρ),
ρ ≥ 0 the lag-1 autocorrelation of the best fit's residuals (a drifting curve carries fewer
independent points than it has).

Uncertainty, a light posterior on the grid in place of MCMC: grid points are drawn with
weight (family weight) × exp(−ΔRSS/2σ̃²), (c, g) from their Gaussian least-squares posterior
with variance σ̃², and each predicted epoch gets noise N(0, σ² + drift²·(epochs ahead)/T).
Known ``bounds`` clip the draws, and grid points whose fit leaves the upper bound by the
horizon are excluded (Domhan's "f(R) ≤ 1" prior).

Deviations from Domhan et al.: the grid posterior replaces their MCMC sampler, and the grid
replaces ``scipy.optimize.least_squares`` (one call per family measured 0.5–3.6 ms here, so
eleven miss the 10 ms budget; the grid fits all eleven in one vectorised pass, about 1 ms,
and doubling its density changes the prediction error on the LCBench traces by under
0.001). The offset-free families (log-power, Hill, vapor pressure, log-log linear) gain the
offset c. Weibull, Janoschek and exp4 span the same shapes (as MMF, Hill and log-power do
once offset); they stay separate members, as in the paper. ``temper`` and ``drift`` (1 and
0 in a plain posterior) widen the spread for real curves, which wander around any family:
the defaults were chosen so that 80 % intervals cover about 80 % of final values on the
shared LCBench traces; on curves that do follow one family with i.i.d. noise they err wide.
With a single observation nothing can be fitted: the draws are uniform between that value
and the upper bound (or that value plus a ``prior_spread`` half-normal without a bound).

The grid, the fit and the draws are :mod:`hypersched_nb.core._curve_grid`'s; this module
holds what the policies and the forecast call: :func:`predict`, :func:`noise_level`, and
:class:`CurveCache`, one fit per trial and epoch.

Example:
    >>> import numpy as np
    >>> x = np.arange(1, 21)
    >>> y = 0.9 - 0.5 * x ** -0.7
    >>> p = predict(x, y, 100, bounds=(0, 1), rng=np.random.default_rng(0))
    >>> round(float(p.mean), 2), float(p.prob_at_least(0.95)) < 0.05
    (0.88, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hypersched_nb.core import _curve_grid as grid
from hypersched_nb.core._curve_grid import FAMILIES
from hypersched_nb.errors import ConfigError

__all__ = ["FAMILIES", "CurveCache", "Prediction", "noise_level", "predict"]


@dataclass(frozen=True)
class Prediction:
    """Sampled futures of one learning curve: ``samples[i, j]`` is draw i at epoch ``at[j]``.

    Values are in the metric's own units; ``mode`` says which way is better.
    """

    at: np.ndarray
    samples: np.ndarray
    mode: str = "max"
    scalar: bool = False

    def _out(self, values: np.ndarray):
        return float(values[0]) if self.scalar else values

    @property
    def mean(self):
        return self._out(self.samples.mean(axis=0))

    @property
    def std(self):
        return self._out(self.samples.std(axis=0))

    def prob_at_least(self, a: float):
        """P(y(at) ≥ a) at each epoch of ``at``."""
        return self._out((self.samples >= a).mean(axis=0))

    def prob_better(self, a: float):
        """P(y(at) is at least as good as ``a``): ≥ in max mode, ≤ in min mode."""
        hit = self.samples >= a if self.mode == "max" else self.samples <= a
        return self._out(hit.mean(axis=0))

    def prob_reach(self, a: float, upto: int | None = None) -> float:
        """P(the curve is at least as good as ``a`` at some epoch of ``at[:upto]``): the
        first-passage probabilities summed over those epochs."""
        s = self.samples[:, :upto]
        hit = s >= a if self.mode == "max" else s <= a
        return float(hit.any(axis=1).mean()) if hit.shape[1] else 0.0

    def expected_epochs_to(self, a: float, upto: int | None = None) -> float:
        """Mean epoch (of ``at``) at which draws that reach ``a`` first reach it (inf if none)."""
        s = self.samples[:, :upto]
        hit = s >= a if self.mode == "max" else s <= a
        reached = hit.any(axis=1)
        if not reached.any():
            return math.inf
        return float(self.at[hit[reached].argmax(axis=1)].mean())


def predict(
    epochs: np.ndarray,
    values: np.ndarray,
    at: np.ndarray | int,
    *,
    mode: str = "max",
    bounds: tuple[float, float] | None = None,
    samples: int = 200,
    horizon: int | None = None,
    noise_prior: float = 0.01,
    temper: float = 2.0,
    drift: float = 0.02,
    prior_spread: float = 0.5,
    resolution: int = 20,
    paths: bool = False,
    rng: np.random.Generator | None = None,
) -> Prediction:
    """Predict the metric at epochs ``at`` (≥ 1) from ``values`` observed at ``epochs``.

    - ``bounds``: the metric's possible range, e.g. ``(0, 1)`` for accuracy (None: none;
      then the fitted growth is capped by the average slope so far, as for a concave curve).
    - ``samples``: draws from ``rng``; ``horizon``: scale of the grids (default: the
      largest epoch involved; pass the trial budget R so successive calls share one grid).
    - ``noise_prior``: prior observation noise, as a fraction of the bounded range (or of
      the largest |value| without bounds).
    - ``temper``: likelihood temperature of the grid posterior (> 1 widens it; Domhan's
      learning curves are not i.i.d. noise around one family).
    - ``drift``: sd, in the same relative units, of the wander of a curve away from any fit
      over a whole horizon; it grows as √(epochs ahead / horizon).
    - ``prior_spread``: relative spread of the single-observation prediction without bounds.
    - ``resolution``: grid points per time-scale axis.
    - ``paths``: make each draw one curve through the epochs ``at``: its wander a random
      walk (whose spread grows as above) and its noise drawn afresh at every epoch. Each
      epoch's distribution is the same; only how the epochs of one draw go together
      changes (default: every epoch of a draw gets noise of its own).

    The defaults (``temper`` 2, ``drift`` 0.02) make 80 % intervals cover about 80 % of
    final values on the shared LCBench traces (see ``benchmarks/curve_prediction.py``).
    Non-finite values are ignored; with none left the draws are NaN.
    """
    if mode not in ("max", "min"):
        raise ConfigError(f"`mode` is {mode!r}, but must be 'max' or 'min'")
    for name, value in (("samples", samples), ("resolution", resolution)):
        if value < 2:
            raise ConfigError(f"`{name}` is {value}, but must be >= 2")
    if not temper > 0:
        raise ConfigError(f"`temper` is {temper}, but must be > 0")
    rng = np.random.default_rng() if rng is None else rng
    scalar = np.ndim(at) == 0
    at = np.atleast_1d(np.asarray(at, dtype=float))
    if at.size == 0 or not at.min() >= 1:
        raise ConfigError(f"`at` is {at.tolist()}, but must hold epochs >= 1")
    x = np.asarray(epochs, dtype=float)
    sign = 1.0 if mode == "max" else -1.0
    s = sign * np.asarray(values, dtype=float)
    if x.shape != s.shape:
        raise ConfigError(
            f"`epochs` has shape {x.shape} and `values` {s.shape}, but they must match"
        )
    ok = np.isfinite(s) & np.isfinite(x) & (x >= 1)
    x, s = x[ok], s[ok]
    lo, hi = -math.inf, math.inf
    if bounds is not None:
        lo, hi = sorted((sign * bounds[0], sign * bounds[1]))
    if x.size == 0:
        return Prediction(at, np.full((samples, at.size), math.nan), mode, scalar)
    scale = grid.scale(s, lo, hi)
    if np.ptp(x) == 0:
        draws = grid.single_point(float(s[-1]), hi, prior_spread * scale, (samples, at.size), rng)
    else:
        T = math.ceil(max(x.max(), at.max(), horizon or 0))
        hi = grid.ceiling(x, s, T, hi, 3 * noise_prior * scale)
        fit = grid.fit(x, s, T, hi, (noise_prior * scale) ** 2, temper, resolution)
        draws = grid.draw(fit, x, at, T, samples, drift * scale, resolution, rng, paths)
    return Prediction(at, sign * np.clip(draws, lo, hi), mode, scalar)


def noise_level(
    curves,
    *,
    horizon: int,
    mode: str = "max",
    bounds=None,
    prior: float = 0.01,
    least: int = 5,
    resolution: int = 20,
) -> float:
    """The observation noise that ``curves`` (values at epochs 1, 2, …) share, in the units
    of :func:`predict`'s ``noise_prior``: every curve with at least ``least`` finite values
    (two degrees of freedom past the fit's three) is fitted as :func:`predict` fits it, and
    the residuals of the best fits are pooled and shrunk towards ``prior`` as
    :func:`predict` shrinks one curve's (two pseudo-observations):
    √((Σ RSS + 2·prior²) / (Σ (n − 3) + 2)). ``prior`` when no curve is that long.

    A few points of one curve say little about its noise, so :func:`predict` leans on
    ``noise_prior``; the curves of one search share their noise, and together they
    measure it.

    >>> rng = np.random.default_rng(0)
    >>> x = np.arange(1, 21)
    >>> shapes = np.linspace(0.3, 1.5, 10)
    >>> curves = [0.9 - 0.5 * x**-a + rng.normal(0, 0.004, x.size) for a in shapes]
    >>> round(noise_level(curves, horizon=20, bounds=(0, 1)), 3)
    0.004
    """
    sign = 1.0 if mode == "max" else -1.0
    lo, hi = (-math.inf, math.inf) if bounds is None else sorted(sign * b for b in bounds)
    rss = dof = 0.0
    for values in curves:
        s = sign * np.asarray(values, dtype=float)
        x = np.arange(1.0, s.size + 1)[np.isfinite(s)]
        s = s[np.isfinite(s)]
        if s.size < max(least, 4):
            continue
        scale = grid.scale(s, lo, hi)
        T = math.ceil(max(x.max(), horizon))
        top = grid.ceiling(x, s, T, hi, 0.0)
        fit = grid.fit(x, s / scale, T, top / scale, 0.0, 1.0, resolution)
        if math.isfinite(fit.rss):
            rss, dof = rss + fit.rss, dof + s.size - 3
    return math.sqrt((rss + 2.0 * prior**2) / (dof + 2.0))


class CurveCache:
    """Predictions for policies that judge trials at boundaries: one fit per trial and epoch
    reached, kept until the trial reports again (POP re-reads a paused trial's prediction
    many times; the fit is the cost).

    ``bounds="auto"``: ``(0, 1)`` in max mode while every metric seen lies in [0, 1] (an
    accuracy), ``(0, inf)`` in min mode while every metric seen is ≥ 0 (a loss), else none.
    Draws come from one generator seeded with ``seed``, so a policy fed the same events
    predicts the same. Other keywords go to :func:`predict`.
    """

    def __init__(
        self, horizon: int, *, bounds="auto", samples: int = 200, seed: int | None = None, **options
    ):
        if not (
            bounds is None or bounds == "auto" or (isinstance(bounds, tuple) and len(bounds) == 2)
        ):
            raise ConfigError(
                f"`bounds` is {bounds!r}, but must be 'auto', None or a (low, high) pair"
            )
        self.horizon, self.bounds, self.samples, self.options = (
            int(horizon),
            bounds,
            samples,
            options,
        )
        self._rng = np.random.default_rng(seed)
        self._cache: dict[int, tuple[int, Prediction]] = {}
        self._unit, self._nonneg = True, True

    def observe(self, metric: float) -> None:
        """Note a reported metric (for the automatic bounds)."""
        if math.isfinite(metric):
            self._unit = self._unit and 0.0 <= metric <= 1.0
            self._nonneg = self._nonneg and metric >= 0.0

    def bounds_for(self, mode: str) -> tuple[float, float] | None:
        if self.bounds != "auto":
            return self.bounds
        if mode == "max":
            return (0.0, 1.0) if self._unit else None
        return (0.0, math.inf) if self._nonneg else None

    def predict(self, trial, mode: str) -> Prediction:
        """The trial's curve at epochs ``trial.epochs + 1 … horizon`` (at the horizon only
        once it is there)."""
        hit = self._cache.get(trial.trial_id)
        if hit is not None and hit[0] == trial.epochs:
            return hit[1]
        e = trial.epochs
        at = np.arange(e + 1, self.horizon + 1) if e < self.horizon else np.array([e])
        pred = predict(
            np.arange(1, len(trial.metrics) + 1),
            np.asarray(trial.metrics, dtype=float),
            at,
            mode=mode,
            bounds=self.bounds_for(mode),
            samples=self.samples,
            horizon=max(self.horizon, e),
            rng=self._rng,
            **self.options,
        )
        self._cache[trial.trial_id] = (e, pred)
        return pred

    def cached(self, trial_id: int) -> Prediction | None:
        hit = self._cache.get(trial_id)
        return None if hit is None else hit[1]

    def forget(self, trial_id: int) -> None:
        self._cache.pop(trial_id, None)
