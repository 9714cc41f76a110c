"""What if: the best metric a search would reach by other deadlines, on other cluster sizes.

``Experiment.forecast`` answers "what do ten more minutes give?" and "what do four more
workers give?" by simulating the rest of the search many times on the trace simulator, with
the same driver loop and the same policy code as the search itself:

1. **Detach** (:func:`detach`, called under the search's gate, so between two of its turns):
   the driver, with its trials and its policy (all of the policy's state: rungs, queues,
   curve caches, random generator), is pickled once, less what ties it to the live search
   (its runtime, clock, offers, listener, journal and cached context: the pickle names them
   and each run fills them in). Each trial's curve, state, workers and pace are copied
   into :class:`TrialSeen` records. The live search is only read, never changed.
2. **Foresee** (:func:`foresee`): every trial that reported continues along paths of the
   curve predictor (:class:`~hypersched_nb.core.curves.CurveCache`, the policies' own, with
   its uncertainty; each path a persistent wander plus fresh noise at every epoch, the
   noise the search's own curves show, pooled by
   :func:`~hypersched_nb.core.curves.noise_level`): run r follows the r-th lowest path of
   every trial (:func:`_as_paths`). A trial seen for one epoch only, of which the predictor
   knows nothing but that point, follows instead the increments of its nearest neighbours
   at epoch 1 that went further (:func:`_like_neighbours`). A configuration not yet tried
   (and an offered one not yet started) gets the whole curve of a trial already seen,
   drawn uniformly (its observed epochs and one continuation), shifted up or down as a
   whole by a normal draw whose scale is the mean gap between the top five final values seen
   (:func:`top_spacing`): a plain bootstrap of the curves seen could never try a
   configuration better than all of them, which is where a search's best often comes
   from, and the gaps between the best values are the search's own measure of how far the
   next best may lie. Before any result, whole curves of a ``prior`` trace are drawn
   instead.
3. **Simulate** (:func:`forecast`): each run loads the pickled driver afresh, seats its
   trials on a :class:`~hypersched_nb.sim.resume.ResumedRuntime` as they stand (epochs done,
   workers held, the epoch in flight) on a virtual clock set to now, and runs the driver's
   own loop to the deadline asked with the workers asked. The policy thus continues from a
   clone of its own state; nothing is replayed from time 0 (the cheaper-to-write shortcut,
   a replay of the observed prefixes, would cost the past again in every run and could
   not rebuild a state that came from a live cluster's timings). Runs share their random
   numbers across (deadline, workers) pairs, so rows differ by what was asked, not by noise.
4. **Summarise**: per (deadline, workers), the mean final best, its 10th and 90th
   percentiles and the share of runs that beat the current best by ``margin``. A search
   with more time could always be run as one with less time and then extended, so each
   run's best is carried forward to longer deadlines: more time never forecasts worse. A
   search with more workers could always leave the extra ones idle, so each run's best is
   carried forward to larger clusters too (the runs share their random draws across
   cluster sizes): more workers never forecast worse.

**What if the policy were told otherwise?** ``early_signal="trust"`` (or ``"doubt"``) tells
the clone of a ``hypersched`` policy, in every run, to trust epoch 1 from now on (or to test
it first): two forecasts, one per answer, weigh "trust now" against "test first" on the
search's own evidence (``benchmarks/weigh_early_signal.py`` measures how often that picks
the answer that really does better).

Approximations, each visible in the calibration benchmark (``benchmarks/
forecast_calibration.py``): a trial's seconds per epoch on one worker are its mean training
seconds per epoch times the speed-up of the workers it holds now (one when it holds none);
a running trial's epoch in flight ends one start-up and as many epochs after its last
start as it has reported since, plus one; after the end of a search, trials the deadline
stopped stay stopped (the rest continues from the paused trials and new configurations).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import count, islice

import numpy as np

from hypersched_nb.core.curves import CurveCache, noise_level
from hypersched_nb.core.policies import check_early_signal
from hypersched_nb.core.trial import TrialState
from hypersched_nb.errors import ConfigError
from hypersched_nb.experiment._standing import (
    Standing,
    TrialSeen,
    attach,
    detach,
    fresh,
    offers_left,
)
from hypersched_nb.experiment.deadline import format_duration, resolve_deadline
from hypersched_nb.sim.clock import VirtualClock
from hypersched_nb.sim.resume import ResumedRuntime, Seat
from hypersched_nb.sim.trace import TRACE_KEY, Trace, load_trace

__all__ = [
    "Curve",
    "Forecast",
    "ForecastMade",
    "Futures",
    "Outlook",
    "Standing",
    "TrialSeen",
    "detach",
    "forecast",
    "forecast_line",
    "foresee",
    "fresh",
    "offers_left",
    "prior_trace",
    "top_spacing",
]

_SEATED = (TrialState.PENDING, TrialState.RUNNING, TrialState.PAUSED)


# ---------------------------------------------------------------------- records


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


@dataclass(frozen=True, slots=True)
class Outlook:
    """One row of a forecast: by ``deadline`` (seconds from the start) on ``workers``."""

    deadline: float
    workers: int
    expected: float  # mean best metric over the runs
    median: float  # the point forecast for absolute error: half the runs do better
    p10: float
    p90: float
    p_beat: float  # share of runs beating the current best by the margin (NaN: none yet)


@dataclass(frozen=True)
class Forecast:
    """What :func:`forecast` found: one :class:`Outlook` per (deadline, workers) asked."""

    outlooks: tuple[Outlook, ...]
    now: float
    best: float
    margin: float
    runs: int
    basis: str  # "search" or "prior"
    early_signal: str | None = None  # told to the policy's clones (None: as it stands)
    started: datetime | None = None  # the search's wall time at clock 0 (None: virtual)
    # every run's best, (workers asked, runs, deadlines asked): what a view compares with a
    # best newer than this forecast's
    finals: np.ndarray | None = field(default=None, compare=False, repr=False)

    @property
    def note(self) -> str:
        if self.basis == "prior":
            return "drawn from the prior alone: the search has no result yet"
        return f"drawn from the search at {self.now:.0f}s"

    def frame(self):
        """The outlooks as a pandas DataFrame; ``attrs`` keep now, best, margin, runs, note and
        early_signal."""
        import pandas as pd

        df = pd.DataFrame([_fields(o) for o in self.outlooks])
        df.attrs.update(
            now=self.now, best=self.best, margin=self.margin, runs=self.runs, note=self.note,
            early_signal=self.early_signal, started=self.started, finals=_nested(self.finals),
        )  # fmt: skip
        return df


@dataclass(frozen=True)
class ForecastMade:
    """A forecast as a search remembers it: what it said, when (wall time) and for which
    deadline the search then had (seconds on its clock)."""

    forecast: Forecast
    made: datetime
    deadline: float


def forecast_line(frame, row: int = 0) -> str:
    """Row ``row`` of a forecast's frame in one line (what ``%hypersched forecast`` prints)."""
    o, at = frame.iloc[row], frame.attrs
    when = format_duration(max(0.0, o.deadline - at["now"]))
    runs = at["runs"]
    beat = ""
    if not math.isnan(o.p_beat):
        beat = f", beats {at['best']:.4g} in {shares(o.p_beat, runs)}"
    told = at.get("early_signal")
    told = f" told early_signal={told!r}" if told else ""
    started = at.get("started")
    by = f"{o.deadline:.0f}s"
    if started is not None:  # a live search: its clock times, as every other line says them
        by = f"{started + timedelta(seconds=o.deadline):%H:%M:%S}"
    return (
        f"by {by} (in {when}) on {o.workers:.0f} workers{told}: best {o.expected:.4g} "
        f"({spread(o.p10, o.p90)}){beat}; {runs} runs, {at['note']}"
    )


def _nested(finals: np.ndarray | None):
    """Every run's best as nested tuples, None for no best: values a frame's ``attrs``
    compare by (as an array's would not)."""
    if finals is None:
        return None
    return (
        tuple(map(_nested, finals))
        if finals.ndim
        else (None if np.isnan(finals) else float(finals))
    )


def shares(p: float, runs: int) -> str:
    """A share of the runs as a count ("8 of 8 runs"): a handful of runs never reads as a
    certainty ("100 %")."""
    return f"{round(p * runs)} of {runs} runs"


def spread(p10: float, p90: float) -> str:
    """The 10-90 % range, or, where most runs agree on one value, that they do (a band of
    no width is not a certainty either)."""
    if p10 == p90:
        return f"at least 80% of runs: {p10:.4g}"
    return f"10-90%: {p10:.4g}-{p90:.4g}"


def _fields(o: Outlook) -> dict:
    return {name: getattr(o, name) for name in Outlook.__slots__}


# ---------------------------------------------------------------------- 1. detach (in _standing)


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


def forecast(
    standing: Standing,
    *,
    deadlines: Sequence | None = None,
    workers: Sequence[int] | None = None,
    runs: int = 32,
    margin: float = 0.0,
    seed: int = 0,
    prior: Trace | None = None,
    started: datetime | None = None,
    early_signal: str | None = None,
) -> Forecast:
    """Simulate the rest of the search ``runs`` times per (deadline, workers) pair.

    ``deadlines`` take the forms of ``Experiment.deadline`` ("+10m" moves the current one;
    None: the current one); ``workers`` are cluster sizes (None: the cluster's now);
    ``started`` is the wall time of the search's start (for "17:00"); ``early_signal``, if
    given, is told to the policy's clone in every run (None: the policy as it stands)."""
    asked_deadlines = _deadlines(standing, deadlines, started)
    asked_workers = _workers(standing, workers)
    _check_runs(runs, margin)
    _check_early_signal(standing, early_signal)
    futures = foresee(standing, runs=runs, seed=seed, prior=prior)
    finals = np.array(
        [
            [
                [_run(standing, futures, d, w, seed, r, early_signal) for d in asked_deadlines]
                for r in range(runs)
            ]
            for w in asked_workers
        ]
    )  # (workers, runs, deadlines)
    finals = _carried_forward(finals, asked_deadlines, standing.mode)
    ordered = np.moveaxis(finals, 0, -1)  # (runs, deadlines, workers): carried to more workers
    finals = np.moveaxis(_carried_forward(ordered, asked_workers, standing.mode), -1, 0)
    outlooks = tuple(
        _outlook(finals[j, :, i], d, w, standing, margin)
        for i, d in enumerate(asked_deadlines)
        for j, w in enumerate(asked_workers)
    )
    return Forecast(
        outlooks, standing.now, standing.best, margin, runs, futures.basis, early_signal,
        started, finals,
    )  # fmt: skip


def _run(
    standing: Standing, futures: Futures, deadline: float, workers: int, seed: int, r: int,
    early_signal: str | None = None,
):  # fmt: skip
    """One simulated rest of the search: its best metric by ``deadline``."""
    rng = np.random.default_rng((seed, r))
    clock = VirtualClock(standing.now)
    trace = Trace("forecast", (), {}, {}, {}, mode=standing.mode)
    seats = [_seat(t, futures, standing, r, rng) for t in standing.trials if t.state in _SEATED]
    runtime = ResumedRuntime(
        trace, clock, workers, seats, scaling=standing.scaling, startup=standing.startup,
        max_epochs=standing.max_epochs, max_workers=max(workers, standing.workers),
    )  # fmt: skip
    offers = _new_offers(futures, trace, rng, r, standing.offers_left)
    driver = attach(standing, runtime=runtime, clock=clock, offers=offers)
    driver.deadline, driver.capacity = deadline, workers
    driver.max_workers = max(driver.max_workers, workers)
    if early_signal is not None:
        driver.policy.tell_early_signal(early_signal)
    return driver.run().best


def _seat(trial: TrialSeen, futures: Futures, standing: Standing, r: int, rng) -> Seat:
    """A trial of the search on the resumed runtime: its own future, or a new one."""
    own = futures.own.get(trial.trial_id)
    metrics, seconds = own.draw(r) if own is not None else futures.draw_new(rng, r)
    epochs = len(trial.metrics)
    if trial.state is not TrialState.RUNNING or epochs >= len(metrics):
        return Seat(trial.trial_id, metrics, seconds, min(epochs, len(metrics)))
    return Seat(
        trial.trial_id, metrics, seconds, epochs, trial.workers,
        _in_flight_end(trial, seconds[epochs], standing) - standing.now,
    )  # fmt: skip


def _in_flight_end(trial: TrialSeen, epoch_seconds: float, standing: Standing) -> float:
    """When a running trial's next epoch ends: a start-up, then one epoch per result since
    its last start, then this one."""
    per_epoch = epoch_seconds / standing.scaling(max(1, trial.workers))
    start = standing.now if trial.last_start_at is None else trial.last_start_at
    return start + standing.startup + (trial.results_since_start + 1) * per_epoch


def _new_offers(futures: Futures, trace: Trace, rng, r: int, left: int | None) -> Iterator[dict]:
    """Configurations not yet tried: each a curve drawn from the pool, written into the
    run's trace as it is offered."""
    for i in islice(count(), left):
        trace.metrics[i], trace.seconds[i] = futures.draw_new(rng, r)
        yield {TRACE_KEY: i}


# ---------------------------------------------------------------------- 4. summarise


def _carried_forward(finals: np.ndarray, deadlines: Sequence[float], mode: str) -> np.ndarray:
    """Each run's best, at least as good at a longer deadline as at a shorter one."""
    order = np.argsort(deadlines, kind="stable")
    sign = 1.0 if mode == "max" else -1.0
    scores = np.where(np.isnan(finals), -np.inf, sign * finals)[..., order]
    carried = np.maximum.accumulate(scores, axis=-1)
    out = np.empty_like(finals)
    out[..., order] = np.where(np.isinf(carried), np.nan, sign * carried)
    return out


def _outlook(values: np.ndarray, deadline: float, workers: int, standing: Standing, margin):
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return Outlook(deadline, workers, *[math.nan] * 5)
    p10, median, p90 = np.percentile(finite, [10, 50, 90])
    beat = math.nan
    if math.isfinite(standing.best):
        sign = 1.0 if standing.mode == "max" else -1.0
        beat = float(np.mean(sign * (values - standing.best) > margin))
    return Outlook(
        deadline, workers, float(finite.mean()), float(median), float(p10), float(p90), beat
    )


# ---------------------------------------------------------------------- the question


def _deadlines(standing: Standing, deadlines, started) -> tuple[float, ...]:
    specs = [standing.deadline] if deadlines is None else _listed(deadlines, "deadlines")
    out = []
    for spec in specs:
        at = resolve_deadline(
            spec, elapsed=standing.now, current=standing.deadline, started=started or datetime.now()
        )
        if not at > standing.now:
            raise ConfigError(
                f"`deadlines` holds {spec!r} ({at:.0f}s), already past: the search stands at "
                f"{standing.now:.0f}s; give a later one, such as '+10m'"
            )
        out.append(at)
    return tuple(out)


def _workers(standing: Standing, workers) -> tuple[int, ...]:
    if workers is None and standing.workers < 1:
        raise ConfigError(
            "`workers` is needed: the cluster's size is not known before the search starts"
        )
    sizes = [standing.workers] if workers is None else _listed(workers, "workers")
    for k in sizes:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ConfigError(f"`workers` holds {k!r}, but each must be a whole number >= 1")
    return tuple(int(k) for k in sizes)


def _check_early_signal(standing: Standing, early_signal) -> None:
    if early_signal is None:
        return
    check_early_signal(early_signal)
    if standing.early_signal is None:
        raise ConfigError(
            f"`early_signal` is {early_signal!r}, but the search's policy {standing.policy!r} "
            "has no such option; ask it of a search whose policy is 'hypersched'"
        )


def _check_runs(runs, margin) -> None:
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise ConfigError(f"`runs` is {runs!r}, but must be a whole number >= 1")
    if not isinstance(margin, (int, float)) or not margin >= 0:
        raise ConfigError(f"`margin` is {margin!r}, but must be a number >= 0")


def _listed(values, name: str) -> list:
    values = list(values) if isinstance(values, (list, tuple, np.ndarray)) else [values]
    if not values:
        raise ConfigError(f"`{name}` is empty; give at least one")
    return list(values)
