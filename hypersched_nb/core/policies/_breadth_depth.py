"""HyperSched's rule 3: breadth or depth, measured from the search's own curves.

depth = the median gain of the trials that passed the first judging rung m, projected over
the (η − 1)·m epochs to the next rung, over that rung's spread (cutoff − median). Above
``depth_threshold``, training the leaders on gains more than choosing among more
configurations: the *depth* regime (admission asks a new trial to reach the next rung, and
exploitation focuses on the running top 1/η); else *breadth*. It is re-estimated every 8
results and whenever a trial passes that rung or the judging rung moves (rule 2), at fixed
points, so that watching the policy changes nothing.

Example (rung 4 of η = 4: values 0.1 … 0.8, spread 0.625 − 0.45 = 0.175; two leaders
gain 0.1 in 4 epochs, 0.3 projected to rung 16):
    >>> from hypersched_nb.core.policies._rungs import Rung
    >>> rung = Rung(4, eta=4)
    >>> for tid in range(8):
    ...     _ = rung.record(tid, 0.1 * (tid + 1))
    >>> bd = BreadthOrDepth([rung], threshold=1.0, window=64, eta=4)
    >>> for tid in (6, 7):
    ...     bd.passed(tid, 0)
    ...     bd.note(tid, 0, 8, rung.recorded[tid] + 0.1)
    >>> round(bd.ratio(0), 3), bd.regime()
    (1.714, 'breadth')
    >>> bd.update(results=8, first=0); bd.regime()
    'depth'
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from hypersched_nb.core.policies._rungs import Rung
from hypersched_nb.core.policies._sample import percentile

__all__ = ["BreadthOrDepth", "GainWindow"]


class GainWindow:
    """The latest ``size`` trials a rung let through and their projected gains, the gains
    also kept in order so that their median costs no sort."""

    __slots__ = ("_ordered", "gains", "size")

    def __init__(self, size: int):
        self.size, self.gains = size, {}
        self._ordered: list[float] = []  # the gains that are not None, ascending

    def add(self, tid: int) -> None:
        self._set(tid, None)  # no gain until it trains past the rung
        if len(self.gains) > self.size:
            oldest = next(iter(self.gains))
            self._set(oldest, None)
            del self.gains[oldest]

    def note(self, tid: int, rung: Rung, epoch: int, score: float, eta: float) -> None:
        """Its gain per epoch since ``rung``, projected over the (η − 1)·m epochs to the next."""
        m = rung.milestone
        if tid in self.gains and epoch > m:
            self._set(tid, (score - rung.recorded[tid]) / (epoch - m) * (eta - 1) * m)

    def _set(self, tid: int, gain: float | None) -> None:
        old = self.gains.get(tid)
        if old is not None:
            i = bisect.bisect_left(self._ordered, old)
            if i < len(self._ordered) and self._ordered[i] == old:
                del self._ordered[i]
            else:  # a NaN gain, which has no place in the order
                self._ordered.remove(old)
        if gain is not None:
            bisect.insort(self._ordered, gain)
        self.gains[tid] = gain

    def ratio(self, spread: float | None) -> float | None:
        """Median projected gain over ``spread`` (None with under two gains or no spread)."""
        values = self._ordered
        if len(values) < 2 or not spread or spread <= 0:
            return None
        return percentile(values, 50) / spread


class BreadthOrDepth:
    """One :class:`GainWindow` per rung, and the regime as last estimated."""

    __slots__ = ("_depth", "_gains", "_stale", "eta", "rungs", "threshold")

    def __init__(self, rungs: Sequence[Rung], *, threshold: float, window: int, eta: float):
        self.rungs, self.threshold, self.eta = list(rungs), threshold, eta
        self._gains = [GainWindow(window) for _ in self.rungs]
        self._depth: float | None = None  # the ratio as last estimated
        self._stale = False  # re-estimate it at the next update rather than the next 8th result

    def note(self, tid: int, i: int, epoch: int, score: float) -> None:
        """A result of a trial that passed rung ``i``: its gain since."""
        self._gains[i].note(tid, self.rungs[i], epoch, score, self.eta)

    def passed(self, tid: int, i: int) -> None:
        """The trial passed rung ``i``: its gains count from now."""
        self._gains[i].add(tid)
        self._stale = True

    def moved(self) -> None:
        """The first judging rung moved (rule 2): re-estimate at the next update."""
        self._stale = True

    def update(self, results: int, first: int) -> None:
        """At the fixed points (every 8th result, or after a change): re-estimate."""
        if self._stale or results % 8 == 0:
            self._depth, self._stale = self.ratio(first), False

    def ratio(self, first: int) -> float | None:
        """The ratio now, at the first judging rung ``first`` (None until two trials have
        trained past it)."""
        return self._gains[first].ratio(self.rungs[first].spread())

    def regime(self) -> str:
        """``depth`` or ``breadth``, as last estimated."""
        d = self._depth
        return "depth" if d is not None and d > self.threshold else "breadth"
