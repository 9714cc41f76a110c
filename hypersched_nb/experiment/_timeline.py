"""Every decision and every act of the user, oldest first, kept in order as they come.

A snapshot hands out the search's events oldest first: the driver's decisions (its journal)
and the user's acts (deadline moves), two lists that only grow. Sorting them whole at every
snapshot costs the search's length each second; :class:`Timeline` sorts only what came since
the last read and appends it, and sorts the whole again only when something new is older
than what it holds (a user's act dated before the last decision), so the order is always
that of one stable sort by time of the journal followed by the user's acts.
"""

from __future__ import annotations

__all__ = ["Timeline"]


class Timeline:
    """The events of two growing lists, in the order of a stable sort by ``"time"`` of
    their concatenation (the decisions first at equal times)."""

    def __init__(self):
        self._reset(None)

    def _reset(self, journal: list | None) -> None:
        self._journal = journal  # the journal read last (another: read anew)
        self._seen = (0, 0)  # how many decisions and user acts are in order already
        self._keys: list[tuple] = []  # (time, 0 for a decision or 1 for an act, index)
        self._events: list[dict] = []

    def read(self, journal: list[dict], acts: list[dict]) -> list[dict]:
        """The events of ``journal`` and ``acts``, oldest first (the list kept: not to change)."""
        if journal is not self._journal or self._seen[0] > len(journal):
            self._reset(journal)
        decisions, users = self._seen
        new = [((e["time"], 0, i), e) for i, e in enumerate(journal[decisions:], decisions)]
        new += [((e["time"], 1, i), e) for i, e in enumerate(acts[users:], users)]
        self._seen = (len(journal), len(acts))
        if not new:
            return self._events
        new.sort(key=lambda pair: pair[0])
        if self._keys and new[0][0] < self._keys[-1]:  # older than the last held: all again
            new = [*zip(self._keys, self._events, strict=True), *new]  # both in order: merged
            new.sort(key=lambda pair: pair[0])
            self._keys, self._events = [], []
        self._keys.extend(k for k, _ in new)
        self._events.extend(e for _, e in new)
        return self._events
