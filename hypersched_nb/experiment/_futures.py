"""What each configuration's curve may do, drawn: the futures a forecast simulates on.

:func:`foresee` draws, for every trial a search has seen, ``runs`` whole futures of its
curve (:class:`Curve`): a trial seen for some epochs continues as the curve predictor
(:class:`~hypersched_nb.core.curves.CurveCache`) says, one seen for a single epoch as its
nearest neighbours at epoch 1 went on, and a configuration not tried yet is drawn from the
curves seen (or a ``prior`` trace's). :func:`top_spacing` says how far apart the best
finals lie. :mod:`hypersched_nb.experiment.forecast` simulates the rest of the search on
these draws.

**A prior** (a past search of the same model, as a trace: only its curves and timings are
read, never its name or family) speaks before the first result alone, and after it beside
the search's own curves (:func:`_with_prior`), in two places, each by a weight
:func:`prior_weight` = δn / (δn + m): n curves of the prior, each counting δ = 0.5 of one of
the search's, against m, what the search has seen of its own.

- A configuration not yet tried takes a whole curve of the prior (as it was, unshifted)
  with that weight, m the sum over the trials seen of the share of the horizon each was
  seen for; else a curve of the search's own, as without a prior.
- A trial seen for e epochs continues, in that weight's share of the runs, as one of its 10
  nearest curves of the prior (by their values over its last 3 epochs) went on from epoch
  e, added to its own epoch e; m counts the other trials seen past e, each by the share of
  the epochs from e to the horizon it was seen for: the search's own evidence of what
  follows epoch e. The runs are then ranked as paths again (:func:`_as_paths`).

Measured (``benchmarks/forecast_calibration.py --prior-split``: each trace split in two
halves by configuration, the search run on one, the other its prior; forecasts at ½ of the
deadline, 10 traces, 20 seeds): without the prior the 10-90 % band covers the real best in
79 % of the cases, the error is 0.58 × the naive forecast's; with it, 76 % and 0.41. On the
9 traces before ``digits-mlp`` (80 %, 0.56 and 78 %, 0.40) the variants were measured. The
shapes carry most of it: the prior's curves alone for new configurations gave 81 % and
0.49 (10 seeds), its shapes alone 71 % and 0.47, both 69 % and 0.43 with 5 neighbours
(narrower: 10 give 78 % and 0.44, 15 give 76 % and 0.46); the curve predictor carries a
rising curve on where the past search's curves flattened (``lcbench-126026``: 3.29 →
0.88). δ matters little while the prior holds many curves (0.25, 0.5, 1: 70 %, 69 %,
70 % and 0.43 each); the prior's curves shifted as the search's own are (by
:func:`top_spacing`) gave 69 % and 0.45, so they are drawn as they were. Without a prior
nothing here runs, and the forecast's numbers for a seed are those it gave before.

The weight counts curves; it does not test that the prior is of the same model. A prior of
another model misleads (``--prior-from-next``, each trace given the past half of another
trace: 58 % and 0.69, against 78 % and 0.53 without it; 10 seeds). Two measures of
agreement that scaled n down (the search's curves' distance to their nearest curves of the
prior, against the prior's own spacing; a back-test of the prior's continuations on the
search's longer curves) left that at 62-63 % and 0.67-0.68, so neither is kept.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

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
    a normal draw of scale ``spread`` and kept within ``bounds``); with a prior, such a
    configuration takes instead, with probability ``prior_weight``, a whole curve of the
    prior (``prior_pool``), unshifted."""

    own: Mapping[int, Curve]
    pool: tuple[Curve, ...]
    basis: str  # "search", "search and prior", or "prior" (a prior trace alone)
    spread: float = 0.0
    bounds: tuple[float, float] = (-math.inf, math.inf)
    prior_pool: tuple[Curve, ...] = ()
    prior_weight: float = 0.0

    def draw_new(self, rng: np.random.Generator, r: int) -> tuple[np.ndarray, np.ndarray]:
        """A configuration not yet tried, in run ``r``: a curve of the pool, drawn
        uniformly, on that run's path, shifted as a whole (or one of the prior's)."""
        if self.prior_pool and rng.random() < self.prior_weight:
            return self.prior_pool[int(rng.integers(len(self.prior_pool)))].draw(r)
        metrics, seconds = self.pool[int(rng.integers(len(self.pool)))].draw(r)
        if self.spread > 0:
            metrics = np.clip(metrics + rng.normal(0.0, self.spread), *self.bounds)
        return metrics, seconds


def prior_trace(prior, *, metric: str, mode: str) -> Trace | None:
    """The ``prior`` argument as a trace, checked against the search's metric and mode: a
    :class:`Trace`, a trace's name or path, or a past search (anything whose ``.trace`` is
    one: a past search's ``Prior``)."""
    if prior is None:
        return None
    prior = getattr(prior, "trace", prior)
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
    before any result, the ``prior`` trace's curves; after, the prior's curves weighed
    against the search's own (:func:`_with_prior`)."""
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
    futures = Futures(own, pool, "search", top_spacing(finals, standing.mode), _bounds(pool))
    if prior is None:
        return futures
    curves = _prior_curves(prior, standing.max_epochs)
    return _with_prior(futures, seen, curves, seed=seed, bounds=bounds, horizon=standing.max_epochs)


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


# ---------------------------------------------------------------------- the prior


#: how much one whole curve of the prior counts against one whole curve the search saw
PRIOR_DISCOUNT = 0.5
#: how many curves of the prior nearest a trial's last epochs it may continue like
PRIOR_NEIGHBOURS = 10


def prior_weight(prior_curves: int, own: float, discount: float = PRIOR_DISCOUNT) -> float:
    """The share of the prior where it and the search's own curves both speak: each of
    the ``prior_curves`` counts ``discount``, the search's curves ``own`` (each by the share
    of it observed).

    >>> prior_weight(50, 0.0), prior_weight(50, 25.0), prior_weight(0, 3.0)
    (1.0, 0.5, 0.0)
    """
    weighed = discount * prior_curves
    return weighed / (weighed + own) if weighed + own > 0 else 0.0


def _with_prior(
    futures: Futures, seen: Sequence[TrialSeen], prior: Sequence[Curve], *, seed: int,
    bounds: tuple[float, float], horizon: int,
) -> Futures:  # fmt: skip
    """``futures`` with the prior's curves weighed in: a configuration not yet tried takes
    a whole curve of the prior with the weight the search's observed epochs leave it, and a
    trial seen for e epochs continues, in that weight's share of the runs, as its nearest
    curves of the prior went on from epoch e; the weight falls as the search's own curves
    that went past e accumulate."""
    rng = np.random.default_rng((seed, 1))  # a stream apart from the search's own draws
    table = _Table.of(prior)
    lengths = np.array([len(t.metrics) for t in seen])
    own = {}
    for t in seen:
        e = len(t.metrics)
        if e >= horizon:
            own[t.trial_id] = futures.own[t.trial_id]
            continue
        past_e = np.clip((lengths - e) / (horizon - e), 0.0, 1.0).sum()  # the others' shapes
        weight = prior_weight(len(prior), float(past_e))
        own[t.trial_id] = _like_prior(t, futures.own[t.trial_id], table, weight, rng, bounds)
    observed = float(np.minimum(lengths / horizon, 1.0).sum())
    return replace(
        futures, own=own, basis="search and prior", prior_pool=tuple(prior),
        prior_weight=prior_weight(len(prior), observed),
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Table:
    """The prior's curves as one array, NaN past each one's end (``ended`` says where)."""

    metrics: np.ndarray  # (curves, epochs)
    ended: np.ndarray  # (curves, epochs): past the curve's end

    @classmethod
    def of(cls, curves: Sequence[Curve]) -> _Table:
        width = max(c.metrics.shape[1] for c in curves)
        metrics = np.full((len(curves), width), math.nan)
        ended = np.ones((len(curves), width), dtype=bool)
        for i, c in enumerate(curves):
            metrics[i, : c.metrics.shape[1]] = c.metrics[0]
            ended[i, : c.metrics.shape[1]] = False
        return cls(metrics, ended)

    def nearest(self, seen: np.ndarray, near: int, last: int = 3) -> np.ndarray:
        """The ``near`` curves nearest ``seen`` over its ``last`` epochs (mean absolute
        difference), of those that go past them with a finite value at their end."""
        e = seen.size
        if e >= self.metrics.shape[1]:
            return np.array([], dtype=int)
        window = slice(max(0, e - last), e)
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a window of NaN: no distance
            gaps = np.nanmean(np.abs(self.metrics[:, window] - seen[window]), axis=1)
        gaps[~np.isfinite(gaps) | ~np.isfinite(self.metrics[:, e - 1])] = math.inf
        ranked = np.argsort(gaps, kind="stable")[:near]
        return ranked[np.isfinite(gaps[ranked])]


def _like_prior(
    trial: TrialSeen, mine: Curve, table: _Table, weight: float, rng: np.random.Generator,
    bounds: tuple[float, float], near: int = PRIOR_NEIGHBOURS,
) -> Curve:  # fmt: skip
    """A trial seen for e epochs: in a ``weight`` share of the runs, the increments from
    epoch e of one of its ``near`` nearest curves of the prior (drawn uniformly), added to
    its epoch e (past that curve's end: the path it had); the runs re-ranked as paths."""
    seen = np.asarray(trial.metrics, dtype=float)
    e, width = seen.size, mine.metrics.shape[1]
    nearest = table.nearest(seen, near) if math.isfinite(seen[-1]) else ()
    if weight <= 0 or len(nearest) == 0 or len(mine.metrics) < 2 or e >= width:
        return mine
    runs = len(mine.metrics)
    taken = rng.random(runs) < weight
    donor = nearest[rng.integers(len(nearest), size=runs)]
    span = min(width, table.metrics.shape[1])
    theirs = mine.metrics[:, e:].copy()
    steps = table.metrics[donor, e:span] - table.metrics[donor, e - 1 : e]
    moved = np.where(table.ended[donor, e:span], theirs[:, : span - e], seen[-1] + steps)
    theirs[taken, : span - e] = np.clip(moved[taken], *bounds)
    ahead = _as_paths(theirs)
    return Curve(np.concatenate([np.broadcast_to(seen, (runs, e)), ahead], axis=1), mine.seconds)


def _prior_curves(prior: Trace, max_epochs: int) -> tuple[Curve, ...]:
    return tuple(
        Curve(prior.metrics[i][None, :max_epochs], prior.seconds[i][:max_epochs]) for i in prior.ids
    )


# ---------------------------------------------------------------------- 3. simulate
