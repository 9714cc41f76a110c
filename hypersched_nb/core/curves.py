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

Example:
    >>> import numpy as np
    >>> x = np.arange(1, 21)
    >>> y = 0.9 - 0.5 * x ** -0.7
    >>> p = predict(x, y, 100, bounds=(0, 1), rng=np.random.default_rng(0))
    >>> round(float(p.mean), 2), float(p.prob_at_least(0.95)) < 0.05
    (0.88, True)
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from hypersched_nb.errors import ConfigError

__all__ = ["FAMILIES", "CurveCache", "Prediction", "noise_level", "predict"]

#: family name -> parameter count in the offset form above (c, g and the grid's θ), used
#: by the BIC-like weight
FAMILIES: dict[str, int] = {
    "pow3": 3,
    "pow4": 4,
    "log_power": 4,
    "weibull": 4,
    "mmf": 4,
    "janoschek": 4,
    "ilog2": 2,
    "hill": 4,
    "vapor_pressure": 4,
    "log_log_linear": 3,
    "exp4": 4,
}


def _mesh(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    u, v = np.meshgrid(a, b, indexing="ij")
    return u.ravel()[:, None], v.ravel()[:, None]


def _basis(name: str, x: np.ndarray, horizon: float, res: int) -> np.ndarray:
    """φ of family ``name`` at epochs ``x`` for every grid point: shape (grid, len(x)).

    Time scales run from 0.2 epochs to a few horizons; ``res`` points per time axis, 0.7·res
    per shape axis, 2·res for one-dimensional grids.
    """
    T = float(horizon)
    r2 = max(2, round(0.7 * res))
    taus = np.geomspace(0.2, 3 * T, res)
    shapes = np.geomspace(0.25, 6.0, r2)
    if name == "pow3":
        return -(x ** -np.geomspace(0.02, 4.0, 2 * res)[:, None])
    if name == "pow4":
        s, alpha = _mesh(
            np.concatenate(([0.0], np.geomspace(0.1, T, r2 - 1))), np.geomspace(0.05, 4.0, r2)
        )
        return -((x + s) ** -alpha)
    if name in ("log_power", "hill"):  # the same shapes, two parametrisations
        tau, gam = _mesh(taus, shapes if name == "hill" else np.geomspace(0.2, 8.0, r2))
        return 1.0 / (1.0 + (x / tau) ** -gam)
    if name == "weibull":
        tau, delta = _mesh(taus, shapes)
        return -np.exp(-((x / tau) ** delta))
    if name == "mmf":
        tau, delta = _mesh(taus, shapes)
        return -1.0 / (1.0 + (x / tau) ** delta)
    if name in ("janoschek", "exp4"):
        low = 0.5 / T**2 if name == "exp4" else 0.2 / T
        k, delta = _mesh(np.geomspace(low, 5.0, r2), shapes)
        return -np.exp(-k * x**delta)
    if name == "ilog2":
        return -1.0 / np.log(x + 1.0)[None, :]
    if name == "vapor_pressure":
        b, c = _mesh(
            -np.concatenate(([0.0], np.geomspace(0.05, 2 * T, r2 - 1))), np.linspace(0.0, 1.5, r2)
        )
        return x**c * np.exp(b / x)
    if name == "log_log_linear":
        return np.log(np.log(x) + np.geomspace(0.02, 2 * T, 2 * res)[:, None])
    raise ConfigError(f"curve family {name!r} is unknown; choose from {', '.join(FAMILIES)}")


@functools.lru_cache(maxsize=4)
def _table(horizon: int, res: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """φ of every grid point of every family at epochs 1..horizon, stacked; the family of
    each row; the first row of each family; each family's parameter count."""
    x = np.arange(1, horizon + 1, dtype=float)
    blocks = [_basis(name, x, horizon, res) for name in FAMILIES]
    table = np.ascontiguousarray(np.concatenate(blocks))
    table.setflags(write=False)
    family = np.repeat(np.arange(len(blocks)), [len(b) for b in blocks])
    starts = np.cumsum([0] + [len(b) for b in blocks[:-1]])
    return table, family, starts, np.array(list(FAMILIES.values()), dtype=float)


def _phi(x: np.ndarray, T: int, res: int) -> np.ndarray:
    xi = x.astype(int)
    if np.array_equal(xi, x):
        return _table(T, res)[0][:, xi - 1]
    return np.concatenate([_basis(name, x, T, res) for name in FAMILIES])


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
    scale = _scale(s, lo, hi)
    if np.ptp(x) == 0:
        draws = _single_point(float(s[-1]), hi, prior_spread * scale, (samples, at.size), rng)
    else:
        T = math.ceil(max(x.max(), at.max(), horizon or 0))
        hi = _ceiling(x, s, T, hi, 3 * noise_prior * scale)
        fit = _fit(x, s, T, hi, (noise_prior * scale) ** 2, temper, resolution)
        draws = _draw(fit, x, at, T, samples, drift * scale, resolution, rng, paths)
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
        scale = _scale(s, lo, hi)
        T = math.ceil(max(x.max(), horizon))
        top = _ceiling(x, s, T, hi, 0.0)
        fit = _fit(x, s / scale, T, top / scale, 0.0, 1.0, resolution)
        if math.isfinite(fit.rss):
            rss, dof = rss + fit.rss, dof + s.size - 3
    return math.sqrt((rss + 2.0 * prior**2) / (dof + 2.0))


def _scale(s: np.ndarray, lo: float, hi: float) -> float:
    """The unit of ``noise_prior`` and ``drift``: the bounded range, else the largest |value|."""
    if math.isfinite(lo) and math.isfinite(hi):
        return hi - lo
    return max(float(np.abs(s).max()), 1e-12)


def _ceiling(x: np.ndarray, s: np.ndarray, T: int, hi: float, margin: float) -> float:
    """The upper bound ``hi``; without one, concave growth: no faster than the average slope
    so far, to the horizon ``T``, plus ``margin``."""
    if math.isfinite(hi):
        return hi
    slope = float(np.ptp(s) / np.ptp(x))
    return float(s.max()) + slope * max(T - float(x.max()), 0.0) + margin


def _single_point(s1: float, hi: float, spread: float, shape, rng) -> np.ndarray:
    """One observation: uniform up to the bound, or a half-normal above it without one."""
    if math.isfinite(hi) and hi > s1:
        column = rng.uniform(s1, hi, (shape[0], 1))
    else:
        column = s1 + np.abs(rng.normal(0, spread, (shape[0], 1)))
    return np.broadcast_to(column, shape).copy()


@dataclass(frozen=True, slots=True)
class _Fit:
    c: np.ndarray  # per grid point: offset
    g: np.ndarray  # per grid point: gain (≥ 0)
    spp: np.ndarray  # per grid point: Σ(φ − mean φ)², the gain's precision / σ²
    pm: np.ndarray  # per grid point: mean φ over the observed epochs
    prob: np.ndarray  # per grid point: posterior mass (family weight × within-family)
    level: float  # mean observed value
    sigma2: float  # observation noise variance
    rss: float  # the best fit's residual sum of squares (inf: nothing fits inside the bounds)
    post2: float  # variance used for the parameter posterior (tempered, decorrelated)


def _fit(x, s, T, hi, noise2, temper, res) -> _Fit:
    """Least squares of (c, g) at every grid point, family weights and the grid posterior."""
    _, family, starts, k = _table(T, res)
    n = x.size
    phi = _phi(x, T, res)  # (grid, n)
    pm = phi.mean(axis=1)
    pc = phi - pm[:, None]
    sm = float(s.mean())
    sc = s - sm
    spp = np.einsum("ij,ij->i", pc, pc)
    sps = pc @ sc
    g = np.maximum(np.where(spp > 1e-15, sps / np.maximum(spp, 1e-15), 0.0), 0.0)
    rss = np.maximum(sc @ sc - g * sps, 0.0)
    c = sm - g * pm
    # Domhan's prior: the fitted curve stays within the upper bound at the horizon
    inside = c + g * _phi(np.array([float(T)]), T, res)[:, 0] <= hi + 1e-9 * abs(hi)
    rss = np.where(inside, rss, np.inf)
    if not inside.any():
        return _Fit(
            c, g, spp, pm, np.zeros_like(rss), sm, float(sc @ sc) / n + noise2, math.inf, 0.0
        )
    # noise: the best fit's residual variance, shrunk towards the prior (2 pseudo-points)
    best = int(np.argmin(rss))
    sigma2 = (float(rss[best]) + 2.0 * noise2) / (max(n - 3, 0) + 2.0)
    post2 = sigma2 * temper * _correlation_factor(s - c[best] - g[best] * phi[best])
    # family weight exp(−RSS_min/2σ² − k/2·ln n) (BIC-like) times the grid posterior
    fam_min = np.minimum.reduceat(rss, starts)
    ok = np.isfinite(fam_min)
    fam_min = np.where(ok, fam_min, 0.0)
    logw_fam = np.where(ok, -fam_min / (2 * post2) - 0.5 * k * math.log(n), -np.inf)
    fam_w = np.exp(logw_fam - logw_fam.max())
    within = np.exp(-(rss - fam_min[family]) / (2 * post2))  # 0 outside the bounds
    prob = within / np.add.reduceat(within, starts).clip(1e-300)[family] * fam_w[family]
    return _Fit(c, g, spp, pm, prob / prob.sum(), sm, sigma2, float(rss[best]), post2)


def _draw(fit: _Fit, x, at, T, samples, drift, res, rng, paths=False) -> np.ndarray:
    """Sample grid points, then (c, g) from their Gaussian posterior, then noise."""
    if paths:
        noise = _wander(fit.sigma2, drift, float(x.max()), at, T, (samples, at.size), rng)
    else:
        sd = np.sqrt(fit.sigma2 + drift**2 * np.maximum(at - x.max(), 0.0) / T)
        noise = rng.normal(0, 1, (samples, at.size)) * sd
    if fit.post2 == 0.0:  # nothing fits inside the bounds: flat at the mean
        return fit.level + noise
    pick = rng.choice(fit.prob.size, size=samples, p=fit.prob)
    z = rng.normal(0, 1, (2, samples))
    g = np.maximum(fit.g[pick] + z[0] * np.sqrt(fit.post2 / np.maximum(fit.spp[pick], 1e-12)), 0.0)
    c = fit.level + z[1] * math.sqrt(fit.post2 / x.size) - g * fit.pm[pick]
    return c[:, None] + g[:, None] * _phi(at, T, res)[pick] + noise


def _wander(sigma2, drift, last, at, T, shape, rng) -> np.ndarray:
    """Noise along each draw's path: a random walk of variance drift²·(epochs ahead)/T plus
    noise of variance σ² drawn afresh at each epoch (at each epoch, the variance the
    independent draws have)."""
    order = np.argsort(at, kind="stable")
    steps = np.diff(np.maximum(at[order] - last, 0.0), prepend=0.0)
    walk = np.cumsum(rng.normal(0, 1, shape) * (drift * np.sqrt(steps / T)), axis=1)
    out = np.empty(shape)
    out[:, order] = walk + rng.normal(0, 1, shape) * math.sqrt(sigma2)
    return out


def _correlation_factor(r: np.ndarray) -> float:
    """(1 + ρ) / (1 − ρ) for the lag-1 autocorrelation ρ ≥ 0 of the residuals ``r``:
    drifting residuals carry fewer independent points than there are."""
    denom = float(r @ r)
    if r.size < 4 or denom <= 0:
        return 1.0
    rho = min(max(float(r[1:] @ r[:-1]) / denom, 0.0), 0.9)
    return (1 + rho) / (1 - rho)


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
