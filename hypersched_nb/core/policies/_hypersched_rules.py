"""The pieces HyperSched's two policies share, as pure helpers named after the paper's steps.

Liaw et al., "HyperSched: Dynamic Resource Reallocation for Model Development on a
Deadline" (SoCC 2019). Symbols: r = grace (``min_epochs``), R = ``max_epochs``, η = ``eta``,
s(k) = the scaling curve, T_left = time left, O = start-up overhead.

- :func:`milestones` and :class:`Rung`: rung bookkeeping (value kept per rung = the trial's
  first report at or past it; cutoff = percentile (1 − 1/η) of the values recorded).
- :class:`PausedQueue`: paused trials by rung, best first (promotion without a full scan).
- :func:`admission_open`, :class:`StartupEstimate`, :class:`RunningMedian`: the paper's
  fair-allocation test and the O and median epoch time it needs, kept incrementally.
- :func:`split_uniform` / :func:`split_top_job`, :func:`grow_pays`, :func:`could_grow`,
  :func:`resize_targets`, :func:`reallocate`: sharing spare workers, the benefit test and
  the recharge period.
- Only ``hypersched``'s: :func:`keep_agreement`, :func:`trusted` and :class:`Probation` (do a
  rung's verdicts hold at the next rung?), :class:`GainWindow` (do leaders still gain more
  than choosing among more?), :func:`epochs_reachable` (how far a trial started now gets).
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Mapping, Sequence

import numpy as np

from hypersched_nb.errors import ConfigError

__all__ = [
    "SPLITS",
    "GainWindow",
    "PausedQueue",
    "Probation",
    "Rung",
    "RunningMedian",
    "StartupEstimate",
    "admission_open",
    "at_least",
    "could_grow",
    "epochs_reachable",
    "grow_pays",
    "keep_agreement",
    "milestones",
    "reallocate",
    "resize_targets",
    "split_top_job",
    "split_uniform",
    "startup_estimate",
    "trusted",
]


def milestones(max_epochs: float, min_epochs: float, eta: float) -> list[float]:
    """Rung milestones r·η^i that a trial can reach, lowest first: (52, 1, 4) -> [1, 4, 16]."""
    out, m = [], float(min_epochs)
    while m <= max_epochs * (1 + 1e-12):
        out.append(m)
        m *= eta
    return out


def _quantile(ordered: Sequence[float], q: float) -> float:
    """numpy's default (linear) percentile ``q`` (0–100) of an ascending sequence."""
    pos = q / 100 * (len(ordered) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


class Rung:
    """One rung: the value each trial had when it first reached ``milestone``, also kept
    in order so that its cutoff costs one insertion per new value."""

    __slots__ = ("_ordered", "_spread", "milestone", "min_count", "quantile", "recorded")

    def __init__(self, milestone: float, eta: float, min_count: int = 2):
        self.milestone = milestone
        self.quantile = (1 - 1 / eta) * 100
        self.min_count = min_count
        self.recorded: dict[int, float] = {}
        self._ordered: list[float] = []
        self._spread: tuple[int, float | None] = (-1, None)  # (values, spread() with them)

    def cutoff(self) -> float | None:
        """Percentile (1 − 1/η) of the recorded values; None below ``min_count`` values."""
        if len(self._ordered) < max(1, self.min_count):
            return None
        return _quantile(self._ordered, self.quantile)

    def spread(self) -> float | None:
        """How much better the top 1/η is than the median: cutoff − median."""
        n = len(self._ordered)
        if self._spread[0] != n:  # values only come: their number says whether it changed
            spread = None
            if n >= max(2, self.min_count):
                spread = _quantile(self._ordered, self.quantile) - _quantile(self._ordered, 50)
            self._spread = (n, spread)
        return self._spread[1]

    def record(self, tid: int, score: float) -> float:
        """Keep ``score`` if ``tid`` has no value here yet; return the value kept."""
        if tid not in self.recorded:
            self.recorded[tid] = score
            bisect.insort(self._ordered, score)
        return self.recorded[tid]

    def below(self, tid: int) -> bool:
        """Is the trial's kept value strictly below the cutoff?"""
        cut = self.cutoff()
        return cut is not None and self.recorded[tid] < cut


class RunningMedian:
    """Exact median of a growing sample in O(log n) per value (two heaps). Values are
    only collected as they come and go into the heaps when the median is next read, so
    a sample that is rarely read costs one append per value. ``largest`` is the largest
    value so far (None while empty)."""

    __slots__ = ("_hi", "_lo", "_new", "largest")

    def __init__(self) -> None:
        self._lo: list[float] = []  # max-heap (negated) of the lower half
        self._hi: list[float] = []  # min-heap of the upper half
        self._new: list[float] = []  # values not yet in the heaps
        self.largest: float | None = None

    def add(self, x: float) -> None:
        self._new.append(x)
        if self.largest is None or x > self.largest:
            self.largest = x

    def __len__(self) -> int:
        return len(self._lo) + len(self._hi) + len(self._new)

    def value(self) -> float | None:
        lo, hi = self._lo, self._hi
        for x in self._new:
            if lo and x > -lo[0]:
                heapq.heappush(hi, x)
            else:
                heapq.heappush(lo, -x)
            if len(lo) > len(hi) + 1:
                heapq.heappush(hi, -heapq.heappop(lo))
            elif len(hi) > len(lo):
                heapq.heappush(lo, -heapq.heappop(hi))
        self._new.clear()
        if not lo:
            return None
        if len(lo) > len(hi):
            return -lo[0]
        return (-lo[0] + hi[0]) / 2


def startup_estimate(startups: Sequence[float], percentile: float) -> float:
    """O: the ``percentile`` of observed start-up overheads (0 before any was observed)."""
    if not startups:
        return 0.0
    return float(np.percentile(np.asarray(startups, float), percentile))


class StartupEstimate:
    """:func:`startup_estimate` of ``ctx.startups`` (which only grows), kept sorted so each
    new start-up costs one insertion instead of a fresh percentile."""

    __slots__ = ("_sorted", "_value", "percentile")

    def __init__(self, percentile: float):
        if not 0 <= percentile <= 100:
            raise ConfigError(f"`startup_percentile` is {percentile}, but must be in [0, 100]")
        self.percentile, self._sorted, self._value = percentile, [], 0.0

    def __call__(self, startups: Sequence[float]) -> float:
        seen = self._sorted
        if len(startups) != len(seen):
            if len(startups) < len(seen):  # a different search: start again
                seen.clear()
            for x in startups[len(seen) :]:
                bisect.insort(seen, float(x))
            self._value = _quantile(seen, self.percentile) if seen else 0.0
        return self._value


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


def admission_open(
    time_left: float,
    longest: float,
    startup: float,
    eta: float,
    max_epochs: int,
    median_epoch: float | None,
) -> tuple[bool, float]:
    """May a trial start? T_left > min((longest − O)·η, R·median epoch): (open, bar)."""
    bar = (longest - startup) * eta
    if median_epoch is not None:
        bar = min(bar, max_epochs * median_epoch)
    return time_left > bar, bar


def split_uniform(order: Sequence[int], total: int, cap: int) -> dict[int, int]:
    """One worker each, then the spare round-robin best-first: 8 over 3 -> 3/3/2."""
    alloc = {tid: 1 for tid in order}
    spare = total - len(order)
    i = 0
    while spare > 0 and any(alloc[t] < cap for t in order):
        tid = order[i % len(order)]
        if alloc[tid] < cap:
            alloc[tid] += 1
            spare -= 1
        i += 1
    return alloc


def split_top_job(order: Sequence[int], total: int, cap: int) -> dict[int, int]:
    """One worker each, then every spare worker to the best trial (up to ``cap``)."""
    alloc = {tid: 1 for tid in order}
    if order:
        alloc[order[0]] = max(1, min(cap, 1 + total - len(order)))
    return alloc


SPLITS = {"uniform": split_uniform, "top_job": split_top_job}


def at_least(**checks: tuple[float | None, float]) -> None:
    """``at_least(eta=(eta, 2))``: a one-line error for a value below its bound (None passes)."""
    for name, (value, low) in checks.items():
        if value is not None and not value >= low:
            raise ConfigError(f"`{name}` is {value}, but must be >= {low}")


def check_split(split: str) -> None:
    if split not in SPLITS:
        raise ConfigError(f"`split` is {split!r}, but must be one of {', '.join(SPLITS)}")


def grow_pays(
    s_new: float, s_cur: float, time_left: float, startup: float, threshold: float
) -> bool:
    """The benefit test: s(new)·(T_left − O) / (T_left·s(cur)) > threshold."""
    if time_left <= 0 or s_cur <= 0:
        return False
    return s_new * (time_left - startup) / (time_left * s_cur) > threshold


def could_grow(
    trial, cap: int, scaling, time_left: float, startup: float, threshold: float, recharge: int
) -> bool:
    """Would one more worker be granted to this running trial now (recharged, and it pays)?"""
    return (
        trial.workers < cap
        and trial.results_since_start > recharge
        and grow_pays(
            scaling(trial.workers + 1), scaling(trial.workers), time_left, startup, threshold
        )
    )


def reallocate(
    order: Sequence, split: str, workers: int, cap: int | None, scaling, time_left: float,
    startup: float, threshold: float, recharge: int,
) -> dict[int, int]:
    """Targets for running trials ``order`` (best first): one worker each, the spare split
    by ``split``, then :func:`resize_targets`'s grow test; returned in ``order``."""
    ids = [t.trial_id for t in order]
    proposed = SPLITS[split](ids, workers, cap or workers)
    current = {t.trial_id: t.workers for t in order}
    since = {t.trial_id: t.results_since_start for t in order}
    return resize_targets(proposed, current, since, scaling, time_left, startup, threshold, recharge)


def resize_targets(
    proposed: Mapping[int, int],
    current: Mapping[int, int],
    since_start: Mapping[int, int],
    scaling,
    time_left: float,
    startup: float,
    threshold: float,
    recharge: int,
) -> dict[int, int]:
    """Targets in ``proposed``'s order: a shrink always, a grow only when it pays and the
    trial has reported more than ``recharge`` results since its last (re)start."""
    out = {}
    for tid, want in proposed.items():
        cur = current[tid]
        if want > cur and not (
            since_start[tid] > recharge
            and grow_pays(scaling(want), scaling(cur), time_left, startup, threshold)
        ):
            want = cur
        out[tid] = want
    return out


def keep_agreement(low: Sequence[float], high: Sequence[float], eta: float) -> tuple[float, int, int]:
    """How well a rung's verdicts hold at the next rung: the probability that a trial it
    would keep (top 1/η of ``low``) beats, at the next rung (``high``), one it would pause
    (ties count half). 0.5: no better than chance; below: inverted. Returns (AUC, kept, paused)."""
    low, high = np.asarray(low, float), np.asarray(high, float)
    if len(low) < 2:
        return 0.5, 0, len(low)
    keep = low >= np.percentile(low, (1 - 1 / eta) * 100)
    kept, paused = high[keep], high[~keep]
    if not len(kept) or not len(paused):
        return 0.5, len(kept), len(paused)
    wins = (kept[:, None] > paused[None, :]).mean() + 0.5 * (kept[:, None] == paused[None, :]).mean()
    return float(wins), len(kept), len(paused)


def trusted(auc: float, kept: int, paused: int, z: float, floor: float) -> bool:
    """Is ``auc`` above ``floor`` with confidence ``z``? Mann–Whitney's standard error
    under chance, sqrt((n₁ + n₂ + 1) / (12·n₁·n₂))."""
    if not kept or not paused:
        return False
    return auc - z * math.sqrt((kept + paused + 1) / (12 * kept * paused)) > floor


def epochs_reachable(time_left: float, startup: float, first_epoch: float, epoch: float) -> float:
    """Epochs a trial started now completes on one worker by the deadline (the first one
    costs ``first_epoch`` seconds, each later one ``epoch``)."""
    rest = time_left - startup - first_epoch
    if rest < 0:
        return 0.0
    return 1.0 + (rest / epoch if epoch > 0 else math.inf)


class Probation:
    """Which rungs judge (hypersched's rule 2): the lowest ``count`` rungs below the top are
    on probation until, at ``pairs``·2^j trials seen at both a rung and the next, the AUC of
    :func:`keep_agreement` exceeds ``floor`` by ``z`` standard errors."""

    __slots__ = ("_first", "agreement", "eta", "floor", "pairs", "seen", "trusted", "z")

    def __init__(self, rungs: int, count: int, pairs: int, z: float, floor: float, eta: float):
        first = min(count, rungs - 1)  # the top rung is never on probation
        self.trusted = [i >= first for i in range(rungs)]
        self._first = first  # trusted.index(True), kept: ``trusted`` changes only in pair()
        self.agreement: dict[int, tuple[float, int]] = {}  # rung -> (AUC, pairs) last tested
        self.seen = [0] * rungs  # trials recorded at rung i and then at rung i + 1
        self.pairs, self.z, self.floor, self.eta = pairs, z, floor, eta

    def first(self) -> int:
        """Index of the lowest trusted rung."""
        return self._first

    def pair(self, low: Rung, high: Rung, i: int) -> bool:
        """One more trial reached rung i + 1 after rung i; True when rung i became trusted."""
        self.seen[i] += 1
        times, rest = divmod(self.seen[i], self.pairs)
        if self.trusted[i] or rest or not times or times & (times - 1):  # not at n0·2^j
            return False
        both = [t for t in high.recorded if t in low.recorded]
        a = [low.recorded[t] for t in both]
        auc, kept, paused = keep_agreement(a, [high.recorded[t] for t in both], self.eta)
        self.agreement[i] = (auc, len(both))
        self.trusted[i] = trusted(auc, kept, paused, self.z, self.floor)
        self._first = self.trusted.index(True)
        return self.trusted[i]


class GainWindow:
    """The latest ``size`` trials a rung let through and their projected gains (rule 3),
    the gains also kept in order so that their median costs no sort."""

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
        return _quantile(values, 50) / spread
