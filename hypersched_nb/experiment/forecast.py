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
   instead; after, a prior's curves are weighed against the search's own, for untried
   configurations and for the shapes of the trials' continuations
   (:mod:`~hypersched_nb.experiment._futures`).
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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import count, islice

import numpy as np

from hypersched_nb.core.policies import check_early_signal
from hypersched_nb.core.trial import TrialState
from hypersched_nb.errors import ConfigError
from hypersched_nb.experiment._futures import Curve, Futures, foresee, prior_trace, top_spacing
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
from hypersched_nb.sim.trace import TRACE_KEY, Trace

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
    basis: str  # "search", "search and prior", or "prior"
    early_signal: str | None = None  # told to the policy's clones (None: as it stands)
    started: datetime | None = None  # the search's wall time at clock 0 (None: virtual)
    # every run's best, (workers asked, runs, deadlines asked): what a view compares with a
    # best newer than this forecast's
    finals: np.ndarray | None = field(default=None, compare=False, repr=False)

    @property
    def note(self) -> str:
        if self.basis == "prior":
            return "drawn from the prior alone: the search has no result yet"
        if self.basis == "search and prior":
            return f"drawn from the search at {self.now:.0f}s and the prior"
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

    def clock(t: float) -> str:  # a live search's clock times, as every other line says them
        return f"{t:.0f}s" if started is None else f"{started + timedelta(seconds=t):%H:%M:%S}"

    return (  # dated: a notebook keeps the line, and "in 11m" would read as true tomorrow
        f"by {clock(o.deadline)} ({when} from {clock(at['now'])}) on {o.workers:.0f} "
        f"workers{told}: best {o.expected:.4g} "
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
