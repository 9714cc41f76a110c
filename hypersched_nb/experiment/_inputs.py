"""Everything the driver takes in from outside its loop, read at fixed points of each turn.

A search is deterministic given its inputs: the clock read at the top of each turn and
after each wait, the deadline and the stop request as they stood then, the events each
wait returned, the configurations offered and the cluster's size at the start and after
each change asked for. The driver
reads them only through an :class:`Inputs`, so that a live search can hand each to a
journal as it happens (``record``), and a resumed search can be fed the journal's, in the
same order, before it goes on live (:class:`~hypersched_nb.experiment.journal.Replay`).

Records (plain dicts, JSON-ready; their kinds are :class:`~hypersched_nb.experiment._records.RecordKind`'s):

- ``{"k": "start", "t": 0.0, "workers": 4}``: the clock and the cluster when the driver is made;
- ``{"k": "now", "t": 12.5}``, with ``"deadline"`` when it moved and ``"stop"`` (its reason)
  once a stop is asked for: a moment, read at the top of a turn and after each wait;
- ``{"k": "events", "events": [...]}``: what a wait returned (each event's ``as_dict()``);
- ``{"k": "offer", "config": {...}}`` or ``{"k": "offer", "config": null}``: a
  configuration offered, or the offers running out;
- ``{"k": "scaled", "workers": 2}``: the cluster's size once it was asked to change, where
  that is not the size asked for (a live cluster's new workers arrive later).

The driver's decisions go to the same ``record`` (``{"k": "decision", ...}``): not inputs,
but what a reader of the journal wants next to them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from hypersched_nb.experiment._records import RecordKind

__all__ = ["Inputs", "Moment"]


@dataclass(frozen=True, slots=True)
class Moment:
    """The clock, the deadline and why a stop was asked for (None: it was not), read
    together."""

    now: float
    deadline: float
    stop: str | None


class Inputs:
    """The live inputs: ``clock``, ``runtime``'s waits and ``offers``; each one read is
    also handed to ``record`` (a journal), when there is one."""

    def __init__(
        self, clock, runtime, offers: Iterator[dict], *, record: Callable[[dict], None] | None
    ):
        self.clock, self.runtime, self.offers, self.record = clock, runtime, offers, record
        self._deadline: float | None = None  # as last recorded
        self._stop: str | None = None

    def start(self) -> tuple[float, int]:
        """The clock and the cluster's size when the driver is made."""
        now, workers = self.clock.now(), self.runtime.workers()
        if self.record is not None:
            self.record({"k": RecordKind.START, "t": now, "workers": workers})
        return now, workers

    def moment(self, deadline: float, stop: str | None) -> Moment:
        """Now, with the deadline and the stop request as they stand (set from outside)."""
        now = self.clock.now()
        if self.record is not None:
            entry: dict = {"k": RecordKind.NOW, "t": now}
            if deadline != self._deadline:
                entry["deadline"] = self._deadline = deadline
            if stop and not self._stop:
                entry["stop"] = self._stop = stop
            self.record(entry)
        return Moment(now, deadline, stop)

    def advance(self, until: float) -> list:
        """The runtime's events up to ``until`` (see ``Runtime.advance``)."""
        events = self.runtime.advance(until)
        if self.record is not None and events:
            self.record({"k": RecordKind.EVENTS, "events": [e.as_dict() for e in events]})
        return events

    def scaled(self, asked: int) -> int:
        """The cluster's size once it was asked to have ``asked`` workers: a simulated
        cluster's at once; a live one retires workers at once, and its new ones are counted
        as they arrive (the runtime's ``WorkersChanged``)."""
        workers = self.runtime.workers()
        if self.record is not None and workers != asked:
            self.record({"k": RecordKind.SCALED, "workers": workers})
        return workers

    def offer(self) -> dict | None:
        """The next configuration to offer, None once there are no more."""
        config = next(self.offers, None)
        if self.record is not None:
            self.record({"k": RecordKind.OFFER, "config": config})
        return config

    def decided(self, entry: dict) -> None:
        """A decision the driver logged (time, trial, action, reason), journaled with the
        inputs that led to it."""
        if self.record is not None:
            self.record({"k": RecordKind.DECISION, **entry})
