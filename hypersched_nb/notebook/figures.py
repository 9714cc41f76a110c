"""What the figures of a search draw: workers per trial against the deadline, and curves.

The plotly figures (:mod:`.drawings`: the live dashboard, the HTML report) and the static
picture of a saved notebook (:mod:`.static`) all draw what these builders compute, so what
a person watches and what they keep are the same picture. Trial ``i`` has the same colour in
every figure and its traces are named ``"trial <i>"``.

Both figures draw one by one the trials that matter (:func:`spotlight`: those holding
workers now, the best, and the ``most`` that held workers longest) and every other trial
together, in grey: one band of workers, one bundle of curves. A search of thousands of
trials stays a few dozen traces: readable, and a few hundred kilobytes.

A redraw costs what changed, not the history. The allocation records only grow, so an
:class:`AllocationHistory` reads each record once (the dashboard keeps one and feeds it every
snapshot) and keeps each trial's steps, the workers all trials hold together and each
trial's worker-seconds. The grey band's top is that total, whoever is drawn apart, so only
the few trials drawn one by one are stacked anew.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import KeysView
from dataclasses import dataclass
from itertools import chain

import numpy as np

from hypersched_nb.experiment.snapshot import Allocation, ExperimentSnapshot, TrialRow

__all__ = [
    "MOST",
    "OTHERS",
    "AllocationHistory",
    "Bundle",
    "CurveGroups",
    "Layer",
    "Steps",
    "allocation_layers",
    "bundle_curves",
    "colour",
    "compact",
    "curve_groups",
    "loaded_before_threads",
    "others_name",
    "spotlight",
]

_PALETTE = (
    "#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#EECA3B", "#B279A2", "#FF9DA6",
    "#9D755D", "#BAB0AC", "#1F77B4", "#D62728", "#2CA02C", "#9467BD", "#8C564B", "#17BECF",
)  # fmt: skip
_DEADLINE = "#C0392B"
OTHERS = "#C8C8C8"  # every trial not drawn alone
MOST = 24  # trials drawn one by one for having held workers longest


def loaded_before_threads() -> None:
    """Import what a widget's thread would otherwise find half-imported: pandas, which a
    forecast (a DataFrame) imports on one thread while plotly, drawing on another, asks
    ``sys.modules`` whether it is there and gets a module still being initialised. Called
    where a dashboard or its forecast panel is built, before any of their threads starts;
    plotly's widgets too, without the nbformat import they do not need (see
    :mod:`._plotly_import`)."""
    import pandas  # noqa: F401

    from hypersched_nb.notebook._plotly_import import import_plotly

    import_plotly()


def colour(trial_id: int) -> str:
    """The colour of a trial, the same in every figure."""
    return _PALETTE[trial_id % len(_PALETTE)]


def others_name(count: int) -> str:
    """The grey group's name: ``"1 other trial"``, ``"12 other trials"``."""
    return f"{count} other trial{'' if count == 1 else 's'}"


# ---------------------------------------------------------------------- the allocation history


@dataclass(frozen=True, slots=True, eq=False)
class Steps:
    """A step function: ``values[i]`` from ``times[i]`` until ``times[i + 1]``."""

    times: np.ndarray
    values: np.ndarray


class _Writing:
    """A step function being written, one change at a time (lists: appending is cheap)."""

    __slots__ = ("times", "values")

    def __init__(self, times: list[float], values: list[int]):
        self.times, self.values = times, values

    @property
    def last(self) -> int:
        return self.values[-1] if self.values else 0

    def set(self, t: float, value: int) -> None:
        """``value`` from ``t`` on (``t`` is never before the last time): a second change at
        the same time replaces the first, and a change that changes nothing adds no step."""
        if self.times and self.times[-1] == t:
            self.values[-1] = value
            if len(self.values) > 1 and self.values[-2] == value:  # the change was undone
                del self.times[-1], self.values[-1]
        elif not self.times or self.values[-1] != value:
            self.times.append(t)
            self.values.append(value)

    def at(self, grid: np.ndarray) -> np.ndarray:
        """The values at the (sorted) times of ``grid``; 0 before the first step."""
        index = np.searchsorted(self.times, grid, side="right") - 1
        values = np.asarray(self.values, dtype=np.int32)
        return np.where(index >= 0, values[index.clip(0)], 0)

    def until(self, end: float) -> Steps:
        """The steps so far, with a last point at ``end`` so that the last step is drawn."""
        times, values = self.times, self.values
        if end > times[-1]:
            times, values = [*times, end], [*values, values[-1]]
        return Steps(np.asarray(times, dtype=float), np.asarray(values, dtype=np.int32))


class AllocationHistory:
    """Who held how many workers when, read from a search's snapshots one record at a time.

    :meth:`read` reads only the records not read before: a later snapshot of the same search
    shares its earlier records (the same objects), and anything else starts the history
    anew. Times never go back: a record older than the one before it counts from that time.
    """

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self.records = 0  # how many of the search's records have been read
        self._last: Allocation | None = None
        self._steps: dict[int, _Writing] = {}  # trials that held workers
        self._total = _Writing([0.0], [0])  # workers held by all trials together
        self._held: dict[int, float] = {}  # worker-seconds, up to the trial's last change
        self.holding: set[int] = set()  # trials that hold workers now
        # the trials that held workers longest, as last ranked: (end, how many, their ids)
        self._longest: tuple[float, int, list[int]] | None = None
        self._touched: set[int] = set()  # trials whose workers changed since

    def read(self, snap: ExperimentSnapshot) -> AllocationHistory:
        """Bring the history up to ``snap``; returns itself."""
        records = snap.allocation
        if not self._continued_by(records):
            self._reset()
        for record in records[self.records :]:
            self._add(record)
        self.records = len(records)
        self._last = records[-1] if records else None
        return self

    def _continued_by(self, records: tuple[Allocation, ...]) -> bool:
        n = self.records
        return n <= len(records) and (n == 0 or records[n - 1] is self._last)

    def _add(self, a: Allocation) -> None:
        steps = self._steps.get(a.trial)
        if steps is None:
            if a.workers == 0:
                return  # never held a worker: nothing to draw
            steps = self._steps[a.trial] = _Writing([], [])
        t = max(a.time, self._total.times[-1])
        before = steps.last
        if steps.times:
            self._held[a.trial] = self._held.get(a.trial, 0.0) + before * (t - steps.times[-1])
        steps.set(t, a.workers)
        self._touched.add(a.trial)
        self._total.set(t, self._total.last - before + a.workers)
        if a.workers:
            self.holding.add(a.trial)
        else:
            self.holding.discard(a.trial)

    @property
    def trials(self) -> KeysView[int]:
        """The trials that ever held a worker."""
        return self._steps.keys()

    def changes(self, trial: int) -> list[float]:
        """The times at which ``trial``'s workers changed."""
        return self._steps[trial].times

    def workers_at(self, trial: int, grid: np.ndarray) -> np.ndarray:
        """The workers ``trial`` held at each of the (sorted) times of ``grid``."""
        return self._steps[trial].at(grid)

    def end(self, snap: ExperimentSnapshot) -> float:
        """Where the picture ends: now (or the deadline, if earlier), or the last change."""
        return max(min(snap.time, snap.deadline), self._total.times[-1])

    def total(self, end: float) -> Steps:
        """The workers held by all trials together, up to ``end``."""
        return self._total.until(end)

    def longest(self, most: int, now: float) -> list[int]:
        """The ``most`` trials that held workers longest until ``now`` (ties: the older).
        A trial's worker-seconds never shrink while ``now`` goes on, so only the last ones
        ranked, the trials whose workers changed since and those holding some can rank now:
        a redraw of 10,000 trials looks at a few dozen."""
        last = self._longest
        pool = self._steps.keys()
        if last is not None and last[1] == most and now >= last[0]:
            pool = {*last[2], *self._touched, *self.holding}
        top = heapq.nsmallest(most, pool, key=lambda t: (-self.worker_seconds(t, now), t))
        self._longest, self._touched = (now, most, top), set()
        return top

    def worker_seconds(self, trial: int, now: float) -> float:
        """Workers × seconds that ``trial`` has held until ``now``."""
        steps = self._steps[trial]
        return self._held.get(trial, 0.0) + steps.last * (now - steps.times[-1])


def spotlight(
    history: AllocationHistory, snap: ExperimentSnapshot, most: int = MOST
) -> frozenset[int]:
    """The trials drawn one by one: those holding workers now, the best, and the ``most``
    that held workers longest (ties: the older trial). The rest are drawn together."""
    longest = history.longest(most, history.end(snap))
    best = () if snap.best is None else (snap.best.trial_id,)
    return frozenset((*longest, *history.holding, *best))


# ---------------------------------------------------------------------- what the figures draw


@dataclass(frozen=True, slots=True, eq=False)
class Layer:
    """One band of the stacked workers: from the band below up to ``top``, a step function
    (``top[i]`` workers from ``x[i]`` seconds until ``x[i + 1]``; the last point is the
    picture's end). ``own`` is this band's share at each point."""

    name: str
    colour: str
    x: np.ndarray
    top: np.ndarray
    own: np.ndarray
    trials: int = 1  # how many trials it draws
    trial: int | None = None  # the trial it draws alone


def allocation_layers(
    history: AllocationHistory, snap: ExperimentSnapshot, most: int = MOST
) -> tuple[Layer, ...]:
    """The stacked bands, bottom first: the trials in the :func:`spotlight` by id, then the
    rest as one grey band whose top is the total, from ``history`` read up to ``snap``."""
    end = history.end(snap)
    drawn = sorted(history.trials & spotlight(history, snap, most))
    times = chain.from_iterable(history.changes(t) for t in drawn)
    grid = np.unique(np.fromiter(chain((0.0, end), times), dtype=float))
    below = np.zeros(len(grid), dtype=np.int32)
    layers = []
    for trial in drawn:
        own = history.workers_at(trial, grid)
        below = below + own
        layers.append(Layer(f"trial {trial}", colour(trial), grid, below, own, trial=trial))
    rest = len(history.trials) - len(drawn)
    if rest:
        total = history.total(end)
        stacked = below[np.searchsorted(grid, total.times, side="right") - 1]
        own = total.values - stacked
        layers.append(Layer(others_name(rest), OTHERS, total.times, total.values, own, rest))
    return tuple(layers)


@dataclass(frozen=True, slots=True)
class CurveGroups:
    """The learning curves as the figures draw them: ``leaders`` one by one (the trials in
    the :func:`spotlight`), ``rest`` as one grey bundle; ``best`` is the best trial's id."""

    leaders: tuple[TrialRow, ...]
    rest: tuple[TrialRow, ...]
    best: int | None


def curve_groups(
    history: AllocationHistory, snap: ExperimentSnapshot, most: int = MOST
) -> CurveGroups:
    """Split the trials that reported a metric as :func:`allocation_layers` does (read from
    the snapshot's columns: nothing trial by trial)."""
    shown = spotlight(history, snap, most)
    c = snap.columns
    reported = c.points > 0
    alone = reported & np.isin(c.trial_id, np.fromiter(shown, dtype=np.int64, count=len(shown)))
    pick = snap.trials.__getitem__
    return CurveGroups(
        leaders=tuple(map(pick, np.flatnonzero(alone).tolist())),
        rest=tuple(map(pick, np.flatnonzero(reported & ~alone).tolist())),
        best=None if snap.best is None else snap.best.trial_id,
    )


@dataclass(frozen=True, slots=True, eq=False)
class Bundle:
    """Many curves as one polyline, each ended by a point whose metric is NaN (a gap, at
    its last epoch again so the axis does not grow); ``trial`` names each point. Compact
    types: the report carries thousands of these points."""

    epoch: np.ndarray
    metric: np.ndarray
    trial: np.ndarray


def bundle_curves(rows: tuple[TrialRow, ...]) -> Bundle:
    """The curves of ``rows`` end to end, a NaN point after each (one pass, vectorised)."""
    runs = np.fromiter((len(r.metrics) + 1 for r in rows), dtype=np.int64, count=len(rows))
    metric = np.fromiter(
        chain.from_iterable((*r.metrics, math.nan) for r in rows),
        dtype=np.float32,
        count=runs.sum(),
    )
    metric[~np.isfinite(metric)] = math.nan
    ends = np.cumsum(runs)
    epoch = np.arange(len(metric)) - np.repeat(ends - runs, runs) + 1
    epoch[ends - 1] -= 1
    trial = np.repeat(np.fromiter((r.trial_id for r in rows), dtype=np.int64), runs)
    return Bundle(compact(epoch), metric, compact(trial))


def compact(counts: np.ndarray) -> np.ndarray:
    """Non-negative whole numbers in the smallest type that holds them (what plotly writes)."""
    top = int(counts.max(initial=0))
    for kind in (np.int8, np.int16, np.int32):
        if top <= np.iinfo(kind).max:
            return counts.astype(kind)
    return counts
