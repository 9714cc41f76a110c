"""The journal's format: what each line must hold, read and checked.

Every record is one JSON object on one line, with its kind in ``"k"``
(:class:`~hypersched_nb.experiment._records.RecordKind`). The first line is the search's
(format, id, start time, settings); every line after it is checked against the fields its
kind needs (:data:`FIELDS`), so that a missing or damaged field is a :class:`JournalError`
naming its line, not a ``KeyError`` later.

**Older formats.** ``FORMAT`` changes whenever the first line gains or loses a field. A
reader opens every format up to its own: a header of an older format is upgraded, one
format at a time, by the steps of :data:`UPGRADES`, each of which adds the fields its
format introduced with the value that behaves as the older version did. A newer format is
refused in one line that says to upgrade hypersched_nb. The records after the header keep
their meaning across formats; a kind this version does not know is kept as it is.
"""

from __future__ import annotations

import json
import os
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
from hypersched_nb.experiment._records import INPUTS, RecordKind
from hypersched_nb.experiment.settings import RECORD_FIELDS

__all__ = [
    "FIELDS",
    "FORMAT",
    "NAME",
    "UPGRADES",
    "Journal",
    "JournalError",
    "event_from_record",
    "journal_url",
    "read_journal",
]

#: the journal format this version writes (and the newest it reads)
FORMAT = 4
NAME = "journal.jsonl"
_EVENTS = {
    cls.__name__: cls for cls in (Result, TrialFailed, WorkersChanged, TrialHalted, DeadlineChanged)
}


class JournalError(HyperschedError):
    """A journal that cannot be read or does not belong where it is used."""


def journal_url(path: str | os.PathLike) -> str:
    """The journal of a search, from its checkpoint folder or the journal file itself."""
    url = os.fspath(path)
    return url if url.endswith(".jsonl") else f"{url.rstrip('/')}/{NAME}"


def _upgrade_1(settings: dict) -> dict:
    """Format 1 -> 2: format 1's first line grew fields that its readers took with
    defaults; format 2 has them all."""
    defaults = {"space": None, "sampler": None, "configs": None, "cluster": None,
                "fail_fast": 3, "max_workers": None, "cost_budget": None, "early_signal": "auto"}  # fmt: skip
    return {**defaults, **settings}


def _upgrade_2(settings: dict) -> dict:
    """Format 2 -> 3: format 3 names the search's prior (a past search; None: none, as
    every search of format 2 had) and its ``step_timeout`` (format 2's searches had none
    of their own: the runtime's default, "auto")."""
    return {"prior": None, "step_timeout": "auto", **settings}


def _upgrade_3(settings: dict) -> dict:
    """Format 3 -> 4: format 4 keeps the configurations the search tried first (format 3's
    searches tried none: their sampler drew from the first)."""
    return {"points_to_evaluate": [], **settings}


#: ``UPGRADES[n]`` turns the settings of a format-``n`` header into format ``n + 1``'s
UPGRADES: dict[int, Callable[[dict], dict]] = {1: _upgrade_1, 2: _upgrade_2, 3: _upgrade_3}


# ---------------------------------------------------------------------------- reading


@dataclass(frozen=True, slots=True)
class Journal:
    """A journal as read: its first record (``header``, upgraded to this format), the rest
    in order, and whether a torn last line was dropped."""

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
        return last if last is not None and last["k"] == RecordKind.END else None

    def of(self, kind: RecordKind) -> list[Mapping]:
        """The records of ``kind``, in order."""
        return [r for r in self.records if r["k"] == kind]

    def inputs(self) -> list[Mapping]:
        """The driver's inputs, in order."""
        return [r for r in self.records if r["k"] in INPUTS]


def read_journal(path: str | os.PathLike) -> Journal:
    """Read the journal of the search at ``path`` (its checkpoint folder or the file). A
    torn last line (the search was killed while writing it) is dropped; anything else that
    is not a journal of a format this version reads, or not of one search, is a
    :class:`JournalError` naming the line."""
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
    header = _checked_header(header, first, url)
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


def _checked_header(header: Mapping, number: int, url: str) -> dict:
    """The first record, upgraded to this format: it must describe a search of a format
    this version reads."""
    if header.get("k") != RecordKind.SEARCH or not isinstance(header.get("format"), int):
        raise JournalError(f"{url} is not a hypersched_nb journal (its first line is not a search)")
    if header["format"] > FORMAT:
        raise JournalError(
            f"{url} has journal format {header['format']}, but this hypersched_nb reads "
            f"formats up to {FORMAT}: upgrade hypersched_nb to open it"
        )
    header = dict(header)
    settings = header.get("settings")
    if isinstance(settings, dict):
        for old in range(header["format"], FORMAT):
            settings = UPGRADES[old](settings)
        header["settings"] = settings
    lacking = _header_lacks(header)
    if lacking is not None:
        raise JournalError(
            f"line {number} of {url} describes a search without {lacking}: the journal is "
            "damaged or was not written by hypersched_nb"
        )
    return header


def _header_lacks(header: Mapping) -> str | None:
    """What a search's first record lacks that a reader needs; None."""
    settings = header.get("settings")
    if not isinstance(settings, dict):
        return "its settings"
    missing = [name for name in RECORD_FIELDS if name not in settings]
    if missing:
        return f"the settings {', '.join(missing)}"
    try:
        datetime.fromisoformat(header.get("started"))
    except (TypeError, ValueError):
        return "its start time (`started`, an ISO time)"
    return None


_NUMBER = ((int, float), "a number")
_WHOLE = ((int,), "a whole number")
_TEXT = ((str,), "a string")
_TRIAL = ((int, type(None)), "a trial id or null")
#: the fields each kind of record must have, with their JSON types; a kind not here (one a
#: later version may add) is kept as it is
FIELDS: dict[str, dict[str, tuple[tuple[type, ...], str]]] = {
    RecordKind.START: {"t": _NUMBER, "workers": _WHOLE},
    RecordKind.NOW: {"t": _NUMBER},
    RecordKind.EVENTS: {"events": ((list,), "a list")},
    RecordKind.OFFER: {"config": ((dict, type(None)), "an object or null")},
    RecordKind.SCALED: {"workers": _WHOLE},
    RecordKind.DECISION: {"time": _NUMBER, "trial": _TRIAL, "action": _TEXT, "reason": _TEXT},
    RecordKind.HOLD: {"t": _NUMBER, "trial": _WHOLE, "workers": _WHOLE},
    RecordKind.CAPACITY: {"t": _NUMBER, "workers": _WHOLE},
    RecordKind.USER: {"time": _NUMBER},
    RecordKind.RESUMED: {"t": _NUMBER, "from": ((dict,), "an object")},
    RecordKind.END: {"status": _TEXT},
}


def _check_record(record: Mapping, number: int, url: str, header: Mapping) -> None:
    """A record after the first: of the same search, with the fields its kind needs."""
    kind = record["k"]
    if kind == RecordKind.SEARCH:
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
    problem = _field_problem(record, FIELDS.get(kind, {}))
    if problem is None and kind == RecordKind.EVENTS:
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
        fields["paused"] = tuple(fields.get("paused", ()))
    return cls(**fields)
