"""Rungs, as the rung-based policies (ASHA, HyperSched and the authors' HyperSched) share them.

Symbols: r = ``min_epochs``, R = ``max_epochs``, η = ``eta``. A rung sits at a milestone
r·η^i epochs; the value a trial records there is its first report at or past it, and the
rung's cutoff is the percentile (1 − 1/η) of the values recorded, so that the top 1/η of
them are at or above it.

Example:
    >>> milestones(52, 1, 4)  # the milestones a trial can reach, lowest first
    [1, 4, 16]
    >>> rung = Rung(4, eta=4)
    >>> for tid, value in enumerate([0.2, 0.8, 0.4, 0.6]):
    ...     _ = rung.record(tid, value)
    >>> round(rung.cutoff(), 4), rung.below(0), rung.below(1)
    (0.65, True, False)
"""

from __future__ import annotations

import bisect

from hypersched_nb.core.policies._sample import percentile

__all__ = ["Rung", "milestones"]


def milestones(max_epochs: float, min_epochs: float, eta: float) -> list[float]:
    """The milestones r·η^i a trial can reach (at most R), lowest first: (10, 1, 2) ->
    [1, 2, 4, 8]. Counted exactly: R = η^k itself is one (243 for r = 1, η = 3)."""
    out: list[float] = []
    while min_epochs * eta ** len(out) <= max_epochs * (1 + 1e-12):
        out.append(min_epochs * eta ** len(out))
    return out


class Rung:
    """One rung: the value each trial had when it first reached ``milestone``, also kept
    in order (NaN left out) so that its cutoff costs one insertion per new value.

    ``min_count``: the values the rung needs before it has a cutoff (ASHA: one; the
    authors' HyperSched: two).
    """

    __slots__ = ("_ordered", "_spread", "milestone", "min_count", "quantile", "recorded")

    def __init__(self, milestone: float, eta: float, min_count: int = 1):
        self.milestone = milestone
        self.quantile = (1 - 1 / eta) * 100
        self.min_count = min_count
        self.recorded: dict[int, float] = {}
        self._ordered: list[float] = []
        self._spread: tuple[int, float | None] = (-1, None)  # (values, spread() with them)

    def record(self, tid: int, value: float) -> float:
        """Keep ``value`` if ``tid`` has none here yet; return the value kept."""
        if tid not in self.recorded:
            self.recorded[tid] = value
            if value == value:  # not NaN
                bisect.insort(self._ordered, value)
        return self.recorded[tid]

    def cutoff(self) -> float | None:
        """Percentile (1 − 1/η) of the recorded values; None below ``min_count`` of them."""
        if len(self._ordered) < max(1, self.min_count):
            return None
        return percentile(self._ordered, self.quantile)

    def below(self, tid: int) -> bool:
        """Is the trial's value strictly below the cutoff?"""
        cut = self.cutoff()
        return cut is not None and self.recorded[tid] < cut

    def spread(self) -> float | None:
        """How much better the top 1/η is than the median, cutoff − median (None with under
        two values, or ``min_count``)."""
        n = len(self._ordered)
        if self._spread[0] != n:  # values only come: their number says whether it changed
            spread = None
            if n >= max(2, self.min_count):
                spread = self.cutoff() - percentile(self._ordered, 50)
            self._spread = (n, spread)
        return self._spread[1]

    def __contains__(self, tid: int) -> bool:
        return tid in self.recorded

    def __len__(self) -> int:
        return len(self.recorded)
