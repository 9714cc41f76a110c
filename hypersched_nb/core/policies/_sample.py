"""The one running statistic the policies keep, and the percentile they all compute.

:func:`percentile` is numpy's default (linear) percentile of values already in order.
:class:`Sample` is a growing sample of durations (epoch seconds, start-ups): its size, mean
and largest value at once, and, when asked for at construction, one percentile, kept as
values arrive instead of sorting the sample on every read.

Example:
    >>> s = Sample(percentile=50)
    >>> for x in (4.0, 1.0, 3.0, 2.0):
    ...     s.add(x)
    >>> len(s), s.mean(), s.largest, s.percentile()
    (4, 2.5, 4.0, 2.5)
    >>> percentile([1.0, 2.0, 3.0, 4.0], 90)
    3.7
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

__all__ = ["Sample", "percentile"]


def percentile(ordered: Sequence[float], q: float) -> float:
    """Percentile ``q`` (0–100) of a non-empty ascending sequence, interpolated linearly
    between the two values around position q/100·(n − 1), as numpy's default method."""
    pos = q / 100 * (len(ordered) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


class Sample:
    """Durations observed so far: ``len``, :meth:`mean` and ``largest`` (0.0 while empty)
    in O(1); with ``percentile=q``, also :meth:`percentile`, that percentile of the sample.

    The percentile is kept with two heaps split where it falls: the lower one holds the
    values up to position ⌊q/100·(n − 1)⌋, so the two values it interpolates between are
    the heads. New values wait in a list until the percentile is next read, so a sample
    that is rarely read costs one append per value, and one read often costs nothing.
    """

    __slots__ = ("_hi", "_lo", "_new", "_value", "largest", "n", "q", "total")

    def __init__(self, *, percentile: float | None = None):
        self.n, self.total, self.largest = 0, 0.0, 0.0
        self.q = percentile
        self._lo: list[float] = []  # max-heap (negated): the values up to the position
        self._hi: list[float] = []  # min-heap: the values past it
        self._new: list[float] = []  # values not yet in the heaps
        self._value: float | None = None  # the percentile of the values in the heaps

    def __len__(self) -> int:
        return self.n

    def add(self, x: float) -> None:
        self.n += 1
        self.total += x
        if x > self.largest:
            self.largest = x
        if self.q is not None:
            self._new.append(x)

    def follow(self, values: Sequence[float]) -> Sample:
        """Add the values of a list that only grows (``ctx.startups``) not added yet."""
        if len(values) > self.n:
            for x in values[self.n :]:
                self.add(float(x))
        return self

    def mean(self, default: float = 0.0) -> float:
        return self.total / self.n if self.n else default

    def percentile(self) -> float | None:
        """The sample's percentile ``q`` (None while it is empty)."""
        if not self._new:
            return self._value
        lo, hi = self._lo, self._hi
        for x in self._new:
            if lo and x > -lo[0]:
                heapq.heappush(hi, x)
            else:
                heapq.heappush(lo, -x)
        self._new.clear()
        pos = self.q / 100 * (self.n - 1)
        keep = int(pos) + 1  # the lower heap holds positions 0 … ⌊pos⌋
        while len(lo) > keep:
            heapq.heappush(hi, -heapq.heappop(lo))
        while len(lo) < keep:
            heapq.heappush(lo, -heapq.heappop(hi))
        a = -lo[0]
        self._value = a if pos == keep - 1 else a + (hi[0] - a) * (pos - keep + 1)
        return self._value
