"""The journal of a search: what it was asked to do and everything it took in and
decided, one JSON record per line, appended and flushed as the search runs.

A live search writes ``journal.jsonl`` beside its checkpoints. Its first line says what
the search is (:attr:`RecordKind.SEARCH`: the format, an id, when it started, its
settings); then come, in the order they happened, the driver's inputs (the records of
:mod:`hypersched_nb.experiment._inputs`: moments, events, offers), its decisions
(:attr:`RecordKind.DECISION`: time, trial, action, reason) and who held how many workers
when (:attr:`RecordKind.HOLD`, :attr:`RecordKind.CAPACITY`); the last line of a search that
ended says how (:attr:`RecordKind.END`). It is JSON, not pickle: opening a journal from
elsewhere runs no code.

Three modules: the format and its checks (``_format``: what each record holds, how an
older format is read), the writer (``_writer``) and the replay (``_replay``). The search is
deterministic given its inputs, so a fresh driver and policy fed the journal's inputs come
to the state the search was in, and can go on from there.
"""

from hypersched_nb.experiment._records import INPUTS, RecordKind
from hypersched_nb.experiment.journal._format import (
    FIELDS,
    FORMAT,
    NAME,
    UPGRADES,
    Journal,
    JournalError,
    event_from_record,
    journal_url,
    read_journal,
)
from hypersched_nb.experiment.journal._replay import AfterReplay, Dry, EndOfJournal, Replay, Tape
from hypersched_nb.experiment.journal._writer import JournalWriter, check_unused

__all__ = [
    "AfterReplay",
    "Dry",
    "EndOfJournal",
    "FIELDS",
    "FORMAT",
    "INPUTS",
    "NAME",
    "UPGRADES",
    "Journal",
    "JournalError",
    "JournalWriter",
    "RecordKind",
    "Replay",
    "Tape",
    "check_unused",
    "event_from_record",
    "journal_url",
    "read_journal",
]
