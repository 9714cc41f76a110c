"""Paused trials by the rung that paused them, best first, as HyperSched's two policies keep them.

Promotion (resume a paused trial whose value has risen to its rung's cutoff) and resumption
(the most promising paused trial once nothing new is left) both want the best paused trial
of a rung: :class:`PausedQueue` keeps each rung's paused trials sorted by the value they were
paused with, so either looks at the head of a list instead of every paused trial.

Example:
    >>> q = PausedQueue()
    >>> q.add(7, 0, 0.4); q.add(8, 0, 0.6); q.add(9, 1, 0.5)
    >>> q.rungs(), q.best(0, paused={7: None, 8: None})
    ([1, 0], (8, 0.6))
    >>> q.discard(8); q.best(0, paused={7: None})
    (7, 0.4)
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping

__all__ = ["PausedQueue"]


class PausedQueue:
    """Paused trials by the rung that paused them, best kept value first, so promotion and
    resumption look at the head of a sorted list instead of every paused trial."""

    __slots__ = ("_by_rung", "_where")

    def __init__(self) -> None:
        self._by_rung: dict[int, list[tuple[float, int]]] = {}  # rung -> [(-value, tid)]
        self._where: dict[int, tuple[int, tuple[float, int]]] = {}

    def add(self, tid: int, rung: int, value: float) -> None:
        self.discard(tid)
        key = (-value, tid)
        bisect.insort(self._by_rung.setdefault(rung, []), key)
        self._where[tid] = (rung, key)

    def discard(self, tid: int) -> None:
        where = self._where.pop(tid, None)
        if where is not None:
            keys = self._by_rung[where[0]]
            del keys[bisect.bisect_left(keys, where[1])]

    def __len__(self) -> int:
        return len(self._where)

    def rungs(self) -> list[int]:
        """Rungs with someone waiting, highest index first."""
        return sorted((r for r, keys in self._by_rung.items() if keys), reverse=True)

    def best(self, rung: int, paused: Mapping) -> tuple[int, float] | None:
        """(trial, value) of the best trial paused at ``rung`` that is still paused."""
        for neg, tid in self._by_rung.get(rung, ()):
            if tid in paused:
                return tid, -neg
        return None
