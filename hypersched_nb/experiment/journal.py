"""The journal of a live search: what it was asked to do and everything it took in and
decided, one JSON record per line, appended and flushed as the search runs.

A live search writes ``journal.jsonl`` beside its checkpoints. Its first line says what
the search is (``"k": "search"``: the format, an id, when it started, its settings); then
come, in the order they happened, the driver's inputs (the records of
:mod:`hypersched_nb.experiment._inputs`: moments, events, offers), its decisions
(``"k": "decision"``: time, trial, action, reason) and who held how many workers when
(``"k": "hold"``, ``"k": "capacity"``); the last line of a search that ended says how
(``"k": "end"``). It is JSON, not pickle: opening a journal from elsewhere runs no code.

Every record is one ``write`` of one line, flushed at once, so a ``kill -9`` at any moment
leaves the lines written before it whole; at most the last is torn, and a reader drops it
(:func:`read_journal`). The search is deterministic given its inputs, so a fresh driver and
policy fed the journal's inputs (:class:`Replay`) come to the state the search was in, and
can go on from there.
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime

from hypersched_nb.core.events import (
    DeadlineChanged,
    Result,
    TrialFailed,
    TrialHalted,
    WorkersChanged,
)
from hypersched_nb.errors import HyperschedError
from hypersched_nb.experiment._inputs import Inputs, Moment
from hypersched_nb.runtime.checkpoint import BestCheckpoint, private_folders, written_bests
from hypersched_nb.train.context import trial_seed

__all__ = [
    "AfterReplay",
    "FORMAT",
    "Journal",
    "JournalError",
    "JournalWriter",
    "Dry",
    "EndOfJournal",
    "Replay",
    "check_unused",
    "event_from_record",
    "journal_url",
    "read_journal",
]

FORMAT = 1  # the journal format this version writes and reads
NAME = "journal.jsonl"
_INPUTS = frozenset({"start", "now", "events", "offer", "scaled"})
_EVENTS = {
    cls.__name__: cls for cls in (Result, TrialFailed, WorkersChanged, TrialHalted, DeadlineChanged)
}


class JournalError(HyperschedError):
    """A journal that cannot be read or does not belong where it is used."""


def journal_url(path: str | os.PathLike) -> str:
    """The journal of a search, from its checkpoint folder or the journal file itself."""
    url = os.fspath(path)
    return url if url.endswith(".jsonl") else f"{url.rstrip('/')}/{NAME}"


def check_unused(folder: str | os.PathLike) -> None:
    """Refuse to start a new search in ``folder`` if a search's journal is there already:
    both would write to one journal, and the new one's checkpoints would overwrite the
    old's (trial ids start at 0 in each)."""
    import fsspec

    url = journal_url(folder)
    fs, path = fsspec.core.url_to_fs(url)
    if fs.exists(path):
        raise JournalError(
            f"checkpoint_dir {os.fspath(folder)!r} holds another search's journal already: "
            f"go on with it with Experiment.resume({os.fspath(folder)!r}), or give this "
            "search a checkpoint_dir of its own"
        )


# ---------------------------------------------------------------------------- writing


class JournalWriter:
    """Appends records to the journal at ``url`` (made if missing; on a local disk, a file
    only its owner can read), each as one line, flushed. While ``muted`` (a resumed search
    fed its own journal again) nothing is written."""

    def __init__(self, url: str):
        import fsspec
        from fsspec.implementations.local import LocalFileSystem

        fs, path = fsspec.core.url_to_fs(url)
        self.url = url
        self.muted = False
        self._lock = threading.Lock()
        if isinstance(fs, LocalFileSystem):
            private_folders(os.path.dirname(path))
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            self._file = os.fdopen(fd, "ab", buffering=0)
        else:
            fs.makedirs(path.rpartition("/")[0], exist_ok=True)
            self._file = fs.open(path, "ab")

    @classmethod
    def begin(cls, url: str, *, started: datetime, settings: Mapping) -> JournalWriter:
        """A new journal whose first line describes the search."""
        writer = cls(url)
        writer.write(
            {"k": "search", "format": FORMAT, "id": uuid.uuid4().hex,
             "started": started.isoformat(), "settings": dict(settings)}
        )  # fmt: skip
        return writer

    @classmethod
    def after(cls, journal: Journal) -> JournalWriter:
        """A writer that goes on with ``journal`` (a search resumed): if its last line was
        torn (the search was killed while writing it), what there is of it is cut off
        first, so that the next record begins a line of its own."""
        if journal.torn:
            _cut_after_last_line(journal.url)
        return cls(journal.url)

    def write(self, record: Mapping) -> None:
        if self.muted:
            return
        line = json.dumps(record, default=_plain, separators=(",", ":")) + "\n"
        with self._lock:
            self._file.write(line.encode("utf-8"))
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()


def _cut_after_last_line(url: str) -> None:
    """Drop what follows the last newline of the file at ``url``."""
    import fsspec
    from fsspec.implementations.local import LocalFileSystem

    fs, path = fsspec.core.url_to_fs(url)
    data = fs.cat_file(path)
    whole = data[: data.rfind(b"\n") + 1]
    if isinstance(fs, LocalFileSystem):  # in place
        os.truncate(path, len(whole))
    else:
        fs.pipe_file(path, whole)


def _plain(value):
    """A value JSON cannot write as it is: a NumPy scalar as its number, a tuple's items,
    anything else as its repr."""
    item = getattr(value, "item", None)
    if item is not None:
        try:
            return item()
        except (ValueError, RuntimeError):
            pass
    return repr(value)


# ---------------------------------------------------------------------------- reading


@dataclass(frozen=True, slots=True)
class Journal:
    """A journal as read: its first record (``header``), the rest in order, and whether a
    torn last line was dropped."""

    url: str
    header: Mapping
    records: tuple[Mapping, ...]
    torn: bool = False

    @property
    def settings(self) -> Mapping:
        return self.header["settings"]

    @property
    def started(self) -> datetime:
        return datetime.fromisoformat(self.header["started"])

    @property
    def ended(self) -> Mapping | None:
        """The ``end`` record of a search that ended, None for one that was cut short."""
        last = self.records[-1] if self.records else None
        return last if last is not None and last["k"] == "end" else None

    def inputs(self) -> list[Mapping]:
        """The driver's inputs, in order."""
        return [r for r in self.records if r["k"] in _INPUTS]


def read_journal(path: str | os.PathLike) -> Journal:
    """Read the journal of the search at ``path`` (its checkpoint folder or the file). A
    torn last line (the search was killed while writing it) is dropped; anything else that
    is not a journal of this format, or not of one search, is a :class:`JournalError`
    naming the line."""
    import fsspec

    url = journal_url(path)
    try:
        with fsspec.open(url, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise JournalError(
            f"no journal at {url}: give the folder of a search's checkpoints"
        ) from None
    lines = data.split(b"\n")
    torn = lines[-1] != b""  # every whole record ends with a newline
    numbered = [
        (i + 1, _parse(line, i + 1, url)) for i, line in enumerate(lines[:-1]) if line.strip()
    ]
    if not numbered:
        raise JournalError(f"{url} holds no whole record: the search was killed as it began")
    (first, header), rest = numbered[0], numbered[1:]
    _check_header(header, first, url)
    for number, record in rest:
        _check_record(record, number, url, header)
    return Journal(url, header, tuple(record for _, record in rest), torn)


def _parse(line: bytes, number: int, url: str) -> dict:
    try:
        record = json.loads(line)
    except ValueError:
        raise JournalError(f"line {number} of {url} is not JSON: the journal is damaged") from None
    if not isinstance(record, dict) or "k" not in record:
        raise JournalError(f"line {number} of {url} is not a journal record")
    return record


#: the settings every reader of a journal takes from its first line
_SETTINGS = ("trainable", "metric", "mode", "deadline", "max_epochs", "min_epochs", "eta",
             "policy", "policy_params", "seed", "checkpoint_dir", "scaling", "target")  # fmt: skip
_NUMBER = ((int, float), "a number")
_WHOLE = ((int,), "a whole number")
#: the fields a reader takes from each kind of record, with their JSON types; records of
#: other kinds (``decision``, ``hold``, ``capacity``, ``resumed``, and kinds a later
#: version may add) are kept as they are
_FIELDS: dict[str, dict[str, tuple[tuple[type, ...], str]]] = {
    "start": {"t": _NUMBER, "workers": _WHOLE},
    "now": {"t": _NUMBER},
    "events": {"events": ((list,), "a list")},
    "offer": {"config": ((dict, type(None)), "an object or null")},
    "user": {"time": _NUMBER},
    "end": {"status": ((str,), "a string")},
}


def _check_header(header: Mapping, number: int, url: str) -> None:
    """The first record describes a search of a format this version reads."""
    if header.get("k") != "search" or not isinstance(header.get("format"), int):
        raise JournalError(f"{url} is not a hypersched_nb journal (its first line is not a search)")
    if header["format"] > FORMAT:
        raise JournalError(
            f"{url} has journal format {header['format']}, but this hypersched_nb reads "
            f"format {FORMAT}: upgrade hypersched_nb to open it"
        )
    lacking = _header_lacks(header)
    if lacking is not None:
        raise JournalError(
            f"line {number} of {url} describes a search without {lacking}: the journal is "
            "damaged or was not written by hypersched_nb"
        )


def _header_lacks(header: Mapping) -> str | None:
    """What a search's first record lacks that a reader needs; None."""
    settings = header.get("settings")
    if not isinstance(settings, dict):
        return "its settings"
    missing = [name for name in _SETTINGS if name not in settings]
    if missing:
        return f"the settings {', '.join(missing)}"
    try:
        datetime.fromisoformat(header.get("started"))
    except (TypeError, ValueError):
        return "its start time (`started`, an ISO time)"
    return None


def _check_record(record: Mapping, number: int, url: str, header: Mapping) -> None:
    """A record after the first: of the same search, with the fields its kind needs."""
    kind = record["k"]
    if kind == "search":
        raise JournalError(
            f"line {number} of {url} begins another search (id {record.get('id')!r}) after "
            f"search {header.get('id')!r}: two searches wrote to one journal (the same "
            f"checkpoint_dir?); split the file before line {number}, and give each search "
            "its own checkpoint_dir"
        )
    if not isinstance(kind, str):
        raise JournalError(
            f"line {number} of {url} has `k` {json.dumps(kind)}, but a record's `k` is the "
            "name of its kind: the journal is damaged"
        )
    problem = _field_problem(record, _FIELDS.get(kind, {}))
    if problem is None and kind == "events":
        problem = next(filter(None, map(_event_problem, record["events"])), None)
    if problem is not None:
        raise JournalError(
            f"line {number} of {url} ({kind!r} record) {problem}: the journal is damaged "
            "or was written by another version of hypersched_nb"
        )


def _field_problem(record: Mapping, fields: Mapping) -> str | None:
    """What keeps ``record`` from having ``fields`` (name: (types, in words)); None."""
    for name, (types, words) in fields.items():
        if name not in record:
            return f"has no `{name}`"
        value = record[name]
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            return f"has `{name}` {json.dumps(value)}, but it must be {words}"
    return None


def _event_problem(event) -> str | None:
    """What keeps ``event`` (as its ``as_dict()`` wrote it) from being read again; None."""
    kind = event.get("type") if isinstance(event, dict) else None
    if not (isinstance(kind, str) and kind in _EVENTS):
        return f"has an event of no type this version knows ({json.dumps(event)[:60]})"
    try:
        event_from_record(event)
    except (TypeError, ValueError):
        return f"has a {kind} event without the fields it needs ({json.dumps(event)[:60]})"
    return None


def event_from_record(record: Mapping):
    """An event as :meth:`as_dict` wrote it."""
    fields = dict(record)
    cls = _EVENTS[fields.pop("type")]
    if cls is WorkersChanged:
        fields["lost"] = tuple(fields.get("lost", ()))
    return cls(**fields)


# ---------------------------------------------------------------------------- replaying


class EndOfJournal(Exception):
    """The journal's inputs ran out and there is nothing live to go on with."""


class Replay(Inputs):
    """The inputs of a journal, fed to a fresh driver in the order they were read; then,
    once they run out, ``live`` (or, without one, :class:`EndOfJournal`). While it replays,
    the journal's writer (``writer``) is muted and the driver's instructions go nowhere
    (``dry``); ``on_live`` hears the moment it goes live (a resumed search gives its
    trials back their workers there); ``noted`` hears the events it replays (whoever
    watches the runtime) and ``on_offer`` each configuration (the source of the offers,
    which asks them again). As a clock it reads the replayed time."""

    def __init__(
        self,
        journal: Journal,
        *,
        live: Inputs | None = None,
        writer: JournalWriter | None = None,
        on_live: Callable[[], None] | None = None,
        noted: Callable[[list], None] | None = None,
        on_offer: Callable[[dict], None] | None = None,
    ):
        super().__init__(None, None, iter(()), record=None)
        self._queue = journal.inputs()[::-1]  # popped from the end
        self._live, self._writer, self._on_live, self.noted = live, writer, on_live, noted
        self._on_offer = on_offer
        self.time = 0.0
        self.workers = 0  # the cluster's size at the replayed time
        self.replaying = True
        if writer is not None:
            writer.muted = True

    # as the driver's inputs

    def start(self) -> tuple[float, int]:
        record = self._next("start")
        if record is None:
            return self._live.start()
        self.time, self.workers = record["t"], record["workers"]
        return record["t"], record["workers"]

    def moment(self, deadline: float, stop: str | None) -> Moment:
        record = self._next("now")
        if record is None:
            return self._live.moment(deadline, stop)
        self.time = record["t"]
        self._deadline = record.get("deadline", self._deadline if self._deadline else deadline)
        self._stop = self._stop or record.get("stop")
        return Moment(record["t"], self._deadline, self._stop)

    def advance(self, until: float) -> list:
        if self.replaying and self._queue and self._queue[-1]["k"] == "events":
            events = [event_from_record(e) for e in self._queue.pop()["events"]]
            for e in events:
                if type(e) is WorkersChanged:
                    self.workers = e.workers
            if self.noted is not None:
                self.noted(events)
            return events
        if self.replaying:
            return []  # the wait returned nothing (only waits that return events are kept)
        return self._live.advance(until)

    def scaled(self, asked: int) -> int:
        if self.replaying and not self._queue:
            self._go_live()
        if not self.replaying:
            return self._live.scaled(asked)
        if self._queue[-1]["k"] == "scaled":
            self.workers = self._queue.pop()["workers"]
        else:
            self.workers = asked  # not recorded: the cluster had the size asked for at once
        return self.workers

    def offer(self) -> dict | None:
        record = self._next("offer")
        if record is None:
            return self._live.offer()
        if record["config"] is not None and self._on_offer is not None:
            self._on_offer(record["config"])
        return record["config"]

    def decided(self, entry: dict) -> None:
        if self._live is not None:
            self._live.decided(entry)  # dropped by the muted writer while replaying

    # as a clock, for whoever watches the replay

    def now(self) -> float:
        return self.time if self.replaying else self._live.clock.now()

    # ------------------------------------------------------------------

    def _next(self, kind: str) -> Mapping | None:
        """The next input, which must be of ``kind``; None once live."""
        if self.replaying and not self._queue:
            self._go_live()
        if not self.replaying:
            return None
        record = self._queue.pop()
        if record["k"] != kind:
            raise JournalError(
                f"the journal's search went another way: it read {record['k']!r} where this "
                f"one reads {kind!r} (a different policy, settings or version?)"
            )
        return record

    def _go_live(self) -> None:
        if self._live is None:
            raise EndOfJournal
        self.replaying = False
        if self._writer is not None:
            self._writer.muted = False
        if self._on_live is not None:
            self._on_live()


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


class AfterReplay:
    """A live runtime behind a :class:`Replay`: the instructions the driver gives while it
    is fed its journal are dropped (they were carried out before the kernel died), those
    after reach ``runtime``; everything else is ``runtime``'s."""

    def __init__(self, runtime, replay: Replay):
        self.runtime, self.replay = runtime, replay

    def execute(self, instruction) -> None:
        if not self.replay.replaying:
            self.runtime.execute(instruction)

    def workers(self) -> int:
        return self.replay.workers if self.replay.replaying else self.runtime.workers()

    def __getattr__(self, name: str):
        return getattr(self.runtime, name)
