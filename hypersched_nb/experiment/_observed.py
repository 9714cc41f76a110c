"""How the driver's runtime looks from an Experiment: a gate for observers, and a record.

The driver thread holds a :class:`Gate` while it decides and lets go of it only while it
waits for the runtime; observers (snapshots, the dashboard) read inside it, and a reader
that asks goes before the driver's next turn, so a fast simulated search cannot starve a
dashboard. :class:`Observed` wraps the real runtime: it records which trial held how many
workers when (for the allocation plot) and waits in slices on a wall clock (so that a moved
deadline or a stop is seen within one slice). Results that a deadline moved closer has made
late are the driver's to drop.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

from hypersched_nb.core.events import (
    Pause,
    Resize,
    ScaleCluster,
    Start,
    Stop,
    TrialFailed,
    TrialHalted,
    WorkersChanged,
)
from hypersched_nb.experiment._records import RecordKind
from hypersched_nb.experiment.snapshot import Allocation

__all__ = ["Gate", "Observed"]


class Gate:
    """Held by the driver except while it waits; readers queued first go before its next turn."""

    def __init__(self):
        self._cv = threading.Condition()
        self._driver_in = False
        self._queued = 0

    def enter(self) -> None:
        with self._cv:
            while self._queued:
                self._cv.wait()
            self._driver_in = True

    def leave(self) -> None:
        with self._cv:
            self._driver_in = False
            self._cv.notify_all()

    @contextmanager
    def reading(self):
        with self._cv:
            self._queued += 1
            try:
                while self._driver_in:
                    self._cv.wait()
                yield
            finally:
                self._queued -= 1
                self._cv.notify_all()


class Observed:
    """The runtime as the driver sees it: records who holds how many workers, when, and
    lets observers in while the real runtime waits."""

    def __init__(self, inner, clock, gate: Gate, poll: float | None, *, record=None):
        self.inner, self.clock, self.gate, self.poll = inner, clock, gate, poll
        self.record = record  # a journal's, hearing each change of who holds what
        self.allocation: list[Allocation] = []
        self.capacity: list[tuple[float, int]] = []
        self.paused_workers: tuple[str, ...] = ()  # those Dask has paused, as last said
        self._sized(clock.now(), inner.workers())
        self.holding: dict[int, int] = {}
        self.peak: dict[int, int] = {}
        self.version = 0

    def workers(self) -> int:
        return self.inner.workers()

    def execute(self, ins) -> None:
        kind = type(ins)
        if kind is Start or kind is Resize:
            self._hold(self.clock.now(), ins.trial_id, ins.workers)
        elif kind is Pause or kind is Stop:
            self._hold(self.clock.now(), ins.trial_id, 0)
        self.version += 1
        self.inner.execute(ins)
        if kind is ScaleCluster:  # the workers there: a live cluster's new ones come later
            self._sized(self.clock.now(), self.inner.workers())

    def advance(self, until: float):
        self.gate.leave()
        try:
            if self.poll is not None:
                until = min(until, self.clock.now() + self.poll)
            events = self.inner.advance(until)
        finally:
            self.gate.enter()
        self.note(events)
        return events

    def note(self, events) -> None:
        """What ``events`` change: workers freed by failures and lost, the cluster's size
        and the workers Dask has paused."""
        for e in events:
            kind = type(e)
            if kind is TrialFailed or kind is TrialHalted:
                self._hold(e.time, e.trial_id, 0)
            elif kind is WorkersChanged:
                self._sized(e.time, e.workers)
                self.paused_workers = e.paused
                for tid in e.lost:
                    self._hold(e.time, tid, 0)
        if events:
            self.version += 1

    def _sized(self, t: float, workers: int) -> None:
        self.capacity.append((t, workers))
        if self.record is not None:
            self.record({"k": RecordKind.CAPACITY, "t": t, "workers": workers})

    def _hold(self, t: float, tid: int, workers: int) -> None:
        if self.holding.get(tid, 0) == workers:
            return
        self.holding[tid] = workers
        self.peak[tid] = max(self.peak.get(tid, 0), workers)
        self.allocation.append(Allocation(t, tid, workers))
        if self.record is not None:
            self.record({"k": RecordKind.HOLD, "t": t, "trial": tid, "workers": workers})
