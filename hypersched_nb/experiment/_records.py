"""The kinds of record a search's journal holds (see :mod:`hypersched_nb.experiment.journal`)."""

from __future__ import annotations

import enum

__all__ = ["INPUTS", "RecordKind"]


class RecordKind(enum.StrEnum):
    """A journal record's ``"k"``. A ``StrEnum``: written as its plain name, and equal to
    the string a reader parses."""

    SEARCH = "search"  # the first line: the format, an id, when it started, its settings
    START = "start"  # input: the clock and the cluster when the driver was made
    NOW = "now"  # input: a moment (with the deadline when it moved, a stop once asked)
    EVENTS = "events"  # input: what a wait returned
    OFFER = "offer"  # input: a configuration offered (null: the offers ran out)
    SCALED = "scaled"  # input: the cluster's size after a change asked for, where not that size
    DECISION = "decision"  # a decision of the driver, with its reason
    HOLD = "hold"  # a trial's workers changed
    CAPACITY = "capacity"  # the cluster's size changed
    USER = "user"  # something the user did (the deadline moved)
    RESUMED = "resumed"  # the search went live again after its kernel died
    END = "end"  # the last line of a search that ended: how


#: the driver's inputs: fed again, in order, they rebuild the search
INPUTS = frozenset(
    {RecordKind.START, RecordKind.NOW, RecordKind.EVENTS, RecordKind.OFFER, RecordKind.SCALED}
)
