"""Feeding a journal back: a fresh driver and policy, fed a search's inputs in the order
they were read, come to the state the search was in, and can go on from there.

Three parts, each built once in its final form (see :mod:`hypersched_nb.experiment.
_assembly`):

- :class:`Tape`: the journal's inputs, read in order, with the replayed time and cluster
  size; it goes live when they run out (the writer unmuted, ``on_live`` told), or raises
  :class:`EndOfJournal` where there is nothing live to go on with;
- :class:`AfterReplay`: the runtime behind the tape. While it replays, the driver's
  instructions are dropped (they were carried out before the kernel died) and its waits
  return the journal's events; after, both reach the live runtime;
- :class:`Replay`: the driver's :class:`~hypersched_nb.experiment._inputs.Inputs`, read
  from the tape while it replays, live after. Its waits go through the runtime it is given
  (the observed one), so observers get in between replayed turns as between live ones.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from hypersched_nb.core.events import WorkersChanged
from hypersched_nb.experiment._inputs import Inputs, Moment
from hypersched_nb.experiment._records import RecordKind
from hypersched_nb.experiment.journal._format import Journal, JournalError, event_from_record
from hypersched_nb.runtime.checkpoint import BestCheckpoint, written_bests
from hypersched_nb.train.context import trial_seed

__all__ = ["AfterReplay", "Dry", "EndOfJournal", "Replay", "Tape"]

_START, _NOW, _EVENTS = RecordKind.START, RecordKind.NOW, RecordKind.EVENTS
_OFFER, _SCALED = RecordKind.OFFER, RecordKind.SCALED


class EndOfJournal(Exception):
    """The journal's inputs ran out and there is nothing live to go on with."""


class Tape:
    """A journal's inputs, read in order. ``clock`` is the live clock to read once they run
    out (None: there is nothing live, and running out raises :class:`EndOfJournal`);
    ``writer`` (muted until then) is unmuted there, and ``on_live`` told. As a clock it
    reads the replayed time, then ``clock``'s."""

    def __init__(
        self,
        journal: Journal,
        *,
        clock=None,
        writer=None,
        on_live: Callable[[], None] | None = None,
    ):
        self._queue = journal.inputs()[::-1]  # popped from the end
        self._clock, self._writer, self._on_live = clock, writer, on_live
        first = self._queue[-1] if self._queue and self._queue[-1]["k"] == _START else None
        self.time = first["t"] if first else 0.0
        self.workers = first["workers"] if first else 0  # the cluster's size at self.time
        self.replaying = True

    def now(self) -> float:
        return self.time if self.replaying else self._clock.now()

    def peek(self) -> str | None:
        """The kind of the next input (None once there is none)."""
        return self._queue[-1]["k"] if self.replaying and self._queue else None

    def take(self, kind: str) -> Mapping | None:
        """The next input, which must be of ``kind``; None once live."""
        if self.replaying and not self._queue:
            self.go_live()
        if not self.replaying:
            return None
        record = self._queue.pop()
        if record["k"] != kind:
            raise JournalError(
                f"the journal's search went another way: it read {record['k']!r} where this "
                f"one reads {kind!r} (a different policy, settings or version?)"
            )
        if "t" in record:
            self.time = record["t"]
        return record

    def events(self) -> list:
        """The events of the next wait (none where the wait returned none: only waits that
        returned events are kept)."""
        if self.peek() != _EVENTS:
            return []
        events = [event_from_record(e) for e in self._queue.pop()["events"]]
        for e in events:
            if type(e) is WorkersChanged:
                self.workers = e.workers
        return events

    def go_live(self) -> None:
        if self._clock is None:
            raise EndOfJournal
        self.replaying = False
        if self._writer is not None:
            self._writer.muted = False
        if self._on_live is not None:
            self._on_live()


class AfterReplay:
    """The runtime behind a :class:`Tape`: while it replays, instructions are dropped and
    a wait returns the journal's events; after, everything is ``runtime``'s."""

    def __init__(self, runtime, tape: Tape):
        self.runtime, self.tape = runtime, tape

    def execute(self, instruction) -> None:
        if not self.tape.replaying:
            self.runtime.execute(instruction)

    def advance(self, until: float) -> list:
        if self.tape.replaying:
            return self.tape.events()
        return self.runtime.advance(until)

    def workers(self) -> int:
        return self.tape.workers if self.tape.replaying else self.runtime.workers()

    def __getattr__(self, name: str):
        return getattr(self.runtime, name)


class Replay(Inputs):
    """The driver's inputs from a :class:`Tape`, then from ``live`` (the inputs of the
    search going on). ``runtime`` is where the driver's waits go (the observed
    :class:`AfterReplay`); ``on_offer`` hears each configuration replayed (the source of
    the offers, which asks it again)."""

    def __init__(
        self,
        tape: Tape,
        *,
        runtime,
        live: Inputs | None = None,
        on_offer: Callable[[dict], None] | None = None,
    ):
        super().__init__(tape, runtime, iter(()), record=None)
        self.tape, self._live, self._on_offer = tape, live, on_offer

    def start(self) -> tuple[float, int]:
        record = self.tape.take(_START)
        if record is None:
            return self._live.start()
        self.tape.workers = record["workers"]
        return record["t"], record["workers"]

    def moment(self, deadline: float, stop: str | None) -> Moment:
        record = self.tape.take(_NOW)
        if record is None:
            return self._live.moment(deadline, stop)
        self._deadline = record.get("deadline", self._deadline if self._deadline else deadline)
        self._stop = self._stop or record.get("stop")
        return Moment(record["t"], self._deadline, self._stop)

    def advance(self, until: float) -> list:
        if self.tape.replaying:
            return self.runtime.advance(until)  # the tape's events, through the observers
        return self._live.advance(until)

    def scaled(self, asked: int) -> int:
        if self.tape.replaying and self.tape.peek() is None:
            self.tape.go_live()
        if not self.tape.replaying:
            return self._live.scaled(asked)
        if self.tape.peek() == _SCALED:
            self.tape.workers = self.tape.take(_SCALED)["workers"]
        else:
            self.tape.workers = asked  # not recorded: the cluster had the size asked at once
        return self.tape.workers

    def offer(self) -> dict | None:
        record = self.tape.take(_OFFER)
        if record is None:
            return self._live.offer()
        if record["config"] is not None and self._on_offer is not None:
            self._on_offer(record["config"])
        return record["config"]

    def decided(self, entry: dict) -> None:
        if self._live is not None:
            self._live.decided(entry)  # dropped by the muted writer while replaying


class Dry:
    """The runtime of a search read from its journal: nothing trains. It has the cluster's
    size, and finds the best weights the search's workers wrote under ``checkpoint_dir``
    (each one's sidecar names its trial, epoch and metrics)."""

    def __init__(self, workers: int, *, checkpoint_dir: str, metric: str, mode: str, seed: int):
        self._workers, self.checkpoint_dir = workers, checkpoint_dir
        self.metric, self.sign, self.seed = metric, 1.0 if mode == "max" else -1.0, seed

    def workers(self) -> int:
        return self._workers

    def execute(self, instruction) -> None:
        """Nothing runs."""

    def advance(self, until: float) -> list:
        return []

    def trial_seed(self, trial_id: int) -> int:
        return trial_seed(self.seed, trial_id)

    def best_checkpoint(self, at_most: float | None = None) -> BestCheckpoint | None:
        """The best weights written whose metric is not better than ``at_most``."""
        sign = self.sign
        found = [
            b for b in written_bests(self.checkpoint_dir, self.metric)
            if at_most is None or sign * b.metric <= sign * at_most
        ]  # fmt: skip
        return max(found, key=lambda b: (sign * b.metric, b.epoch), default=None)
