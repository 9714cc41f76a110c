"""The grid fit and the draws of the curve model that :mod:`hypersched_nb.core.curves`
describes: every family's φ on a fixed grid over its nonlinear parameters (:func:`table`),
the closed-form least squares of (c, g) at every grid point with the family weights and the
grid posterior (:func:`fit`), and sampled futures from that posterior (:func:`draw`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from hypersched_nb.errors import ConfigError

__all__ = [
    "FAMILIES", "Fit", "basis", "ceiling", "correlation_factor", "draw", "fit", "phi_at",
    "scale", "single_point", "table", "wander",
]  # fmt: skip

#: family name -> parameter count in the offset form ``y = c + g·φ(x; θ)`` (c, g and the
#: grid's θ), used by the BIC-like weight
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


def basis(name: str, x: np.ndarray, horizon: float, res: int) -> np.ndarray:
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
def table(horizon: int, res: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """φ of every grid point of every family at epochs 1..horizon, stacked; the family of
    each row; the first row of each family; each family's parameter count."""
    x = np.arange(1, horizon + 1, dtype=float)
    blocks = [basis(name, x, horizon, res) for name in FAMILIES]
    table = np.ascontiguousarray(np.concatenate(blocks))
    table.setflags(write=False)
    family = np.repeat(np.arange(len(blocks)), [len(b) for b in blocks])
    starts = np.cumsum([0] + [len(b) for b in blocks[:-1]])
    return table, family, starts, np.array(list(FAMILIES.values()), dtype=float)


def phi_at(x: np.ndarray, T: int, res: int) -> np.ndarray:
    """φ of every grid point at epochs ``x``: read from :func:`table` at whole epochs."""
    xi = x.astype(int)
    if np.array_equal(xi, x):
        return table(T, res)[0][:, xi - 1]
    return np.concatenate([basis(name, x, T, res) for name in FAMILIES])


def scale(s: np.ndarray, lo: float, hi: float) -> float:
    """The unit of ``noise_prior`` and ``drift``: the bounded range, else the largest |value|."""
    if math.isfinite(lo) and math.isfinite(hi):
        return hi - lo
    return max(float(np.abs(s).max()), 1e-12)


def ceiling(x: np.ndarray, s: np.ndarray, T: int, hi: float, margin: float) -> float:
    """The upper bound ``hi``; without one, concave growth: no faster than the average slope
    so far, to the horizon ``T``, plus ``margin``."""
    if math.isfinite(hi):
        return hi
    slope = float(np.ptp(s) / np.ptp(x))
    return float(s.max()) + slope * max(T - float(x.max()), 0.0) + margin


def single_point(s1: float, hi: float, spread: float, shape, rng) -> np.ndarray:
    """One observation: uniform up to the bound, or a half-normal above it without one."""
    if math.isfinite(hi) and hi > s1:
        column = rng.uniform(s1, hi, (shape[0], 1))
    else:
        column = s1 + np.abs(rng.normal(0, spread, (shape[0], 1)))
    return np.broadcast_to(column, shape).copy()


@dataclass(frozen=True, slots=True)
class Fit:
    """One curve's fit at every grid point, and the grid posterior :func:`draw` samples."""

    c: np.ndarray  # per grid point: offset
    g: np.ndarray  # per grid point: gain (≥ 0)
    spp: np.ndarray  # per grid point: Σ(φ − mean φ)², the gain's precision / σ²
    pm: np.ndarray  # per grid point: mean φ over the observed epochs
    prob: np.ndarray  # per grid point: posterior mass (family weight × within-family)
    level: float  # mean observed value
    sigma2: float  # observation noise variance
    rss: float  # the best fit's residual sum of squares (inf: nothing fits inside the bounds)
    post2: float  # variance used for the parameter posterior (tempered, decorrelated)


def fit(x, s, T, hi, noise2, temper, res) -> Fit:
    """Least squares of (c, g) at every grid point, family weights and the grid posterior."""
    _, family, starts, k = table(T, res)
    n = x.size
    phi = phi_at(x, T, res)  # (grid, n)
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
    inside = c + g * phi_at(np.array([float(T)]), T, res)[:, 0] <= hi + 1e-9 * abs(hi)
    rss = np.where(inside, rss, np.inf)
    if not inside.any():
        return Fit(
            c, g, spp, pm, np.zeros_like(rss), sm, float(sc @ sc) / n + noise2, math.inf, 0.0
        )
    # noise: the best fit's residual variance, shrunk towards the prior (2 pseudo-points)
    best = int(np.argmin(rss))
    sigma2 = (float(rss[best]) + 2.0 * noise2) / (max(n - 3, 0) + 2.0)
    post2 = sigma2 * temper * correlation_factor(s - c[best] - g[best] * phi[best])
    # family weight exp(−RSS_min/2σ² − k/2·ln n) (BIC-like) times the grid posterior
    fam_min = np.minimum.reduceat(rss, starts)
    ok = np.isfinite(fam_min)
    fam_min = np.where(ok, fam_min, 0.0)
    logw_fam = np.where(ok, -fam_min / (2 * post2) - 0.5 * k * math.log(n), -np.inf)
    fam_w = np.exp(logw_fam - logw_fam.max())
    within = np.exp(-(rss - fam_min[family]) / (2 * post2))  # 0 outside the bounds
    prob = within / np.add.reduceat(within, starts).clip(1e-300)[family] * fam_w[family]
    return Fit(c, g, spp, pm, prob / prob.sum(), sm, sigma2, float(rss[best]), post2)


def draw(fit: Fit, x, at, T, samples, drift, res, rng, paths=False) -> np.ndarray:
    """Sample grid points, then (c, g) from their Gaussian posterior, then noise."""
    if paths:
        noise = wander(fit.sigma2, drift, float(x.max()), at, T, (samples, at.size), rng)
    else:
        sd = np.sqrt(fit.sigma2 + drift**2 * np.maximum(at - x.max(), 0.0) / T)
        noise = rng.normal(0, 1, (samples, at.size)) * sd
    if fit.post2 == 0.0:  # nothing fits inside the bounds: flat at the mean
        return fit.level + noise
    pick = rng.choice(fit.prob.size, size=samples, p=fit.prob)
    z = rng.normal(0, 1, (2, samples))
    g = np.maximum(fit.g[pick] + z[0] * np.sqrt(fit.post2 / np.maximum(fit.spp[pick], 1e-12)), 0.0)
    c = fit.level + z[1] * math.sqrt(fit.post2 / x.size) - g * fit.pm[pick]
    return c[:, None] + g[:, None] * phi_at(at, T, res)[pick] + noise


def wander(sigma2, drift, last, at, T, shape, rng) -> np.ndarray:
    """Noise along each draw's path: a random walk of variance drift²·(epochs ahead)/T plus
    noise of variance σ² drawn afresh at each epoch (at each epoch, the variance the
    independent draws have)."""
    order = np.argsort(at, kind="stable")
    steps = np.diff(np.maximum(at[order] - last, 0.0), prepend=0.0)
    walk = np.cumsum(rng.normal(0, 1, shape) * (drift * np.sqrt(steps / T)), axis=1)
    out = np.empty(shape)
    out[:, order] = walk + rng.normal(0, 1, shape) * math.sqrt(sigma2)
    return out


def correlation_factor(r: np.ndarray) -> float:
    """(1 + ρ) / (1 − ρ) for the lag-1 autocorrelation ρ ≥ 0 of the residuals ``r``:
    drifting residuals carry fewer independent points than there are."""
    denom = float(r @ r)
    if r.size < 4 or denom <= 0:
        return 1.0
    rho = min(max(float(r[1:] @ r[:-1]) / denom, 0.0), 0.9)
    return (1 + rho) / (1 - rho)
