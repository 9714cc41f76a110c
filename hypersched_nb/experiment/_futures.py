"""What each configuration's curve may do, drawn: the futures a forecast simulates on.

:func:`foresee` draws, for every trial a search has seen, ``runs`` whole futures of its
curve (:class:`Curve`): a trial seen for some epochs continues as the curve predictor
(:class:`~hypersched_nb.core.curves.CurveCache`) says, one seen for a single epoch as its
nearest neighbours at epoch 1 went on, and a configuration not tried yet is drawn from the
curves seen (or a ``prior`` trace's). :func:`top_spacing` says how far apart the best
finals lie. :mod:`hypersched_nb.experiment.forecast` simulates the rest of the search on
these draws.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from hypersched_nb.core.curves import CurveCache, noise_level
from hypersched_nb.errors import ConfigError
from hypersched_nb.experiment._standing import Standing, TrialSeen
from hypersched_nb.sim.trace import Trace, load_trace

__all__ = ["Curve", "Futures", "foresee", "prior_trace", "top_spacing"]


@dataclass(frozen=True, slots=True)
class Curve:
    """Whole futures of one configuration: ``metrics[i]`` is draw i at every epoch,
    ``seconds`` each epoch's on one worker."""

    metrics: np.ndarray  # (draws, epochs)
    seconds: np.ndarray  # (epochs,)

    def draw(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        return self.metrics[i % len(self.metrics)], self.seconds


@dataclass(frozen=True, slots=True)
class Futures:
    """The curves the runs follow: ``own`` for trials that reported (run r takes draw r),
    ``pool`` for configurations not yet tried (each takes a random curve of it, shifted by
    a normal draw of scale ``spread`` and kept within ``bounds``)."""

    own: Mapping[int, Curve]
    pool: tuple[Curve, ...]
    basis: str  # "search": drawn from the curves seen; "prior": from a prior trace alone
    spread: float = 0.0
    bounds: tuple[float, float] = (-math.inf, math.inf)

    def draw_new(self, rng: np.random.Generator, r: int) -> tuple[np.ndarray, np.ndarray]:
        """A configuration not yet tried, in run ``r``: a curve of the pool, drawn
        uniformly, on that run's path, shifted as a whole."""
        metrics, seconds = self.pool[int(rng.integers(len(self.pool)))].draw(r)
        if self.spread > 0:
            metrics = np.clip(metrics + rng.normal(0.0, self.spread), *self.bounds)
        return metrics, seconds


def prior_trace(prior, *, metric: str, mode: str) -> Trace | None:
    """The ``prior`` argument as a trace, checked against the search's metric and mode."""
    if prior is None:
        return None
    trace = prior if isinstance(prior, Trace) else load_trace(prior)
    if trace.metric_name != metric:
        raise ConfigError(
            f"`prior` trace {trace.name!r} records {trace.metric_name!r}, but the search "
            f"optimises {metric!r}; give a trace of the same metric"
        )
    if trace.mode != mode:
        raise ConfigError(
            f"`prior` trace {trace.name!r} is in mode {trace.mode!r}, but the search is in "
            f"mode {mode!r}; give a trace of the same mode"
        )
    return trace


# ---------------------------------------------------------------------- 2. foresee


def foresee(standing: Standing, *, runs: int, seed: int, prior: Trace | None = None) -> Futures:
    """The curves ``runs`` runs follow: the trials seen, continued by the curve predictor;
    before any result, the ``prior`` trace's curves."""
    if not standing.reported:
        if prior is None:
            raise ConfigError(
                "the search has no result yet and no prior: pass prior=<trace name or Trace> "
                "of a similar model, or ask again after the first result"
            )
        return Futures({}, _prior_curves(prior, standing.max_epochs), "prior")
    cache = _predictor(standing, runs=runs, seed=seed)
    seen = [t for t in standing.trials if t.metrics]
    predicted = {t.trial_id: _continued(t, cache, standing.mode, standing.max_epochs) for t in seen}
    bounds = cache.bounds_for(standing.mode) or (-math.inf, math.inf)
    rng, donors = np.random.default_rng(seed), _Donors.of(seen)
    own = {
        t.trial_id: _like_neighbours(t, predicted, donors, rng, bounds)
        if len(t.metrics) == 1
        else predicted[t.trial_id]
        for t in seen
    }
    pool = tuple(own.values())
    finals = [float(np.median(curve.metrics[:, -1])) for curve in pool]
    return Futures(own, pool, "search", top_spacing(finals, standing.mode), _bounds(pool))


def _predictor(standing: Standing, *, runs: int, seed: int) -> CurveCache:
    """The policies' curve predictor, drawing ``runs`` paths, its prior noise the noise
    the search's curves share (the predictor's own prior until some are long enough)."""
    cache = CurveCache(standing.max_epochs, samples=max(runs, 2), seed=seed, paths=True)
    curves = [t.metrics for t in standing.trials]
    for metric in (m for curve in curves for m in curve):
        cache.observe(metric)
    bounds = cache.bounds_for(standing.mode)
    cache.options["noise_prior"] = noise_level(
        curves, horizon=standing.max_epochs, mode=standing.mode, bounds=bounds
    )
    return cache


#: how many trials nearest at epoch 1 a trial seen for one epoch may be continued like
NEIGHBOURS = 5


def top_spacing(finals: Sequence[float], mode: str, top: int = 5) -> float:
    """The mean gap between the ``top`` best of ``finals`` (NaN left out; 0 with fewer than
    three): the scale of how far a configuration not yet tried may pass the best seen.

    >>> top_spacing([0.2, 0.9, 0.5, 0.8, 0.85, 0.1, float("nan")], "max", top=3)
    0.05
    """
    ranked = sorted((f for f in finals if math.isfinite(f)), reverse=mode == "max")[:top]
    if len(ranked) < 3:
        return 0.0
    return round(abs(ranked[0] - ranked[-1]) / (len(ranked) - 1), 12)


def _bounds(pool: Sequence[Curve]) -> tuple[float, float]:
    """[0, 1] while every value seen lies in it (an accuracy), [0, ∞) while none is
    negative (a loss), else no bound."""
    values = np.concatenate([c.metrics[np.isfinite(c.metrics)] for c in pool])
    if values.size and values.min() >= 0:
        return (0.0, 1.0) if values.max() <= 1 else (0.0, math.inf)
    return (-math.inf, math.inf)


class _Asked:
    """What the curve cache reads of a trial."""

    __slots__ = ("epochs", "metrics", "trial_id")

    def __init__(self, trial: TrialSeen):
        self.trial_id, self.metrics, self.epochs = trial.trial_id, trial.metrics, len(trial.metrics)


def _continued(trial: TrialSeen, cache: CurveCache, mode: str, max_epochs: int) -> Curve:
    """The trial's observed epochs followed by each predicted continuation to R."""
    seen = np.asarray(trial.metrics, dtype=float)
    seconds = np.full(max(max_epochs, seen.size), trial.seconds)
    if seen.size >= max_epochs or not math.isfinite(seen[-1]):  # over: nothing follows
        return Curve(seen[None, :], seconds[: seen.size])
    future = _as_paths(cache.predict(_Asked(trial), mode).samples)
    metrics = np.concatenate([np.broadcast_to(seen, (len(future), seen.size)), future], axis=1)
    return Curve(metrics, seconds)


@dataclass(frozen=True, slots=True)
class _Donors:
    """The trials seen for more than one epoch, by their epoch-1 value (ascending)."""

    values: np.ndarray
    ids: tuple[int, ...]

    @classmethod
    def of(cls, seen: Sequence[TrialSeen]) -> _Donors:
        went_on = [t for t in seen if len(t.metrics) > 1 and math.isfinite(t.metrics[0])]
        went_on.sort(key=lambda t: (t.metrics[0], t.trial_id))
        return cls(np.array([t.metrics[0] for t in went_on]), tuple(t.trial_id for t in went_on))

    def nearest(self, value: float, near: int) -> tuple[int, ...]:
        """The ``near`` trials whose epoch-1 value is nearest ``value`` (ties: lower id)."""
        at = int(np.searchsorted(self.values, value))
        window = range(max(0, at - near), min(len(self.ids), at + near))
        ranked = sorted(window, key=lambda i: (abs(self.values[i] - value), self.ids[i]))
        return tuple(self.ids[i] for i in ranked[:near])


def _like_neighbours(
    trial: TrialSeen,
    predicted: Mapping[int, Curve],
    donors: _Donors,
    rng: np.random.Generator,
    bounds: tuple[float, float],
    near: int = NEIGHBOURS,
) -> Curve:
    """A trial seen for one epoch, continued as the ``near`` trials nearest to it at epoch 1
    that went further did: in each run, the increments from epoch 1 of one of them (drawn
    uniformly), on that run's path of theirs, added to this trial's epoch 1; as it stands
    when no trial went further.

    From one point the curve predictor knows nothing of the trial's shape (its draws are
    uniform up to the bound), and a search that judges epoch 1 tentatively leaves many
    trials there, held until its test speaks; their neighbours' curves, the trials left
    untested among them, are the search's own evidence of where such a start leads."""
    value, mine = trial.metrics[0], predicted[trial.trial_id]
    nearest = donors.nearest(value, near) if math.isfinite(value) else ()
    if not nearest:
        return mine
    ahead = []
    for r, fallback in enumerate(mine.metrics):
        theirs = predicted[nearest[int(rng.integers(len(nearest)))]].metrics
        path = theirs[r % len(theirs)]
        width = min(path.size, fallback.size)  # past their end: the predictor's path
        ahead.append(np.concatenate([value + path[1:width] - path[0], fallback[width:]]))
    ahead = _as_paths(np.clip(np.array(ahead), *bounds))
    return Curve(np.concatenate([np.full((len(ahead), 1), value), ahead], axis=1), mine.seconds)


def _as_paths(draws: np.ndarray) -> np.ndarray:
    """The predictor's paths (each one curve: a persistent wander plus fresh noise at every
    epoch), ranked by their mean over the epochs to come: run r follows the r-th of every
    trial, so the runs range from every trial doing worse than predicted to every trial
    doing better, while within a run each curve still zigzags as real ones do.

    Measured (``benchmarks/forecast_calibration.py``): paths shuffled per trial (each run
    lucky on some trials, unlucky on others) made the best of a run climb on the luckiest
    trial (error 0.64 × naive, 3.23 on lcbench-168910); each epoch's draws ranked on their
    own (no zigzag at all) made the best so far the forecast's 10th percentile in 79 % of
    the cases at ½ of the deadline, where it stays the best in only 11 % (coverage 92 %)."""
    return draws[np.argsort(draws.mean(axis=1), kind="stable")]


def _prior_curves(prior: Trace, max_epochs: int) -> tuple[Curve, ...]:
    return tuple(
        Curve(prior.metrics[i][None, :max_epochs], prior.seconds[i][:max_epochs]) for i in prior.ids
    )


# ---------------------------------------------------------------------- 3. simulate
