"""The pieces HyperSched's two policies share, as pure helpers named after the paper's steps.

Liaw et al., "HyperSched: Dynamic Resource Reallocation for Model Development on a
Deadline" (SoCC 2019). Symbols: r = grace (``min_epochs``), R = ``max_epochs``, η = ``eta``,
s(k) = the scaling curve, T_left = time left, O = start-up overhead.

- :class:`PausedQueue`: paused trials by rung, best first (promotion without a full scan).
- :func:`admission_open`, :func:`startup_sample`, :func:`startup_overhead`: the paper's
  fair-allocation test and the O it needs, kept incrementally (the rungs themselves, and
  the median epoch time, are :mod:`._rungs`' and :mod:`._sample`'s).
- :func:`split_uniform` / :func:`split_top_job`, :func:`grow_pays`, :class:`Reallocation`:
  sharing spare workers, the benefit test and the recharge period.
- Only ``hypersched``'s: :func:`keep_agreement`, :func:`trusted` and :class:`Probation` (do a
  rung's verdicts hold at the next rung?), :class:`GainWindow` (do leaders still gain more
  than choosing among more?), :func:`epochs_reachable` (how far a trial started now gets).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.policies._rungs import Rung
from hypersched_nb.core.policies._sample import Sample, percentile
from hypersched_nb.errors import ConfigError

__all__ = [
    "SPLITS",
    "GainWindow",
    "PausedQueue",
    "Probation",
    "Reallocation",
    "admission_open",
    "at_least",
    "epochs_reachable",
    "grow_pays",
    "keep_agreement",
    "split_top_job",
    "split_uniform",
    "startup_overhead",
    "startup_sample",
    "trusted",
]


def startup_sample(percentile: float) -> Sample:
    """The start-ups' sample whose ``percentile`` is O (checked: a percentile is in [0, 100])."""
    if not 0 <= percentile <= 100:
        raise ConfigError(f"`startup_percentile` is {percentile}, but must be in [0, 100]")
    return Sample(percentile=percentile)


def startup_overhead(sample: Sample, startups: Sequence[float]) -> float:
    """O: the sample's percentile of the start-ups observed so far (0 before any)."""
    return sample.follow(startups).percentile() or 0.0


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


@dataclass(frozen=True, slots=True)
class Reallocation:
    """The paper's reallocation: each running trial holds one worker and the spare ones are
    split by ``split``; a trial grows only when the benefit test passes ``grow_threshold``
    and it has reported more than ``recharge`` results since its last (re)start; a shrink
    always goes ahead; no trial holds more than ``max_workers_per_trial`` (None: any)."""

    split: str = "uniform"
    grow_threshold: float = 1.1
    recharge: int = 5
    max_workers_per_trial: int | None = None

    def __post_init__(self) -> None:
        check_split(self.split)
        if not self.grow_threshold > 0:
            raise ConfigError(f"`grow_threshold` is {self.grow_threshold}, but must be > 0")
        at_least(recharge=(self.recharge, 0), max_workers_per_trial=(self.max_workers_per_trial, 1))

    def targets(self, order: Sequence, ctx: PolicyContext, startup: float) -> dict[int, int]:
        """Targets for the running trials ``order`` (best first), in that order."""
        proposed = SPLITS[self.split]([t.trial_id for t in order], ctx.workers, self._cap(ctx))
        out = {}
        for trial in order:
            want, cur = proposed[trial.trial_id], trial.workers
            if want > cur and not self._pays(trial, want, ctx, startup):
                want = cur
            out[trial.trial_id] = want
        return out

    def could_grow(self, trial, ctx: PolicyContext, startup: float) -> bool:
        """Would one more worker be granted to this running trial now?"""
        return trial.workers < self._cap(ctx) and self._pays(trial, trial.workers + 1, ctx, startup)

    def _pays(self, trial, want: int, ctx: PolicyContext, startup: float) -> bool:
        """Recharged, and the benefit test passes for ``want`` workers."""
        scaling = ctx.scaling
        return trial.results_since_start > self.recharge and grow_pays(
            scaling(want), scaling(trial.workers), ctx.time_left, startup, self.grow_threshold
        )

    def _cap(self, ctx: PolicyContext) -> int:
        return self.max_workers_per_trial or ctx.workers


def keep_agreement(
    low: Sequence[float], high: Sequence[float], eta: float
) -> tuple[float, int, int]:
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
    wins = (kept[:, None] > paused[None, :]).mean() + 0.5 * (
        kept[:, None] == paused[None, :]
    ).mean()
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
        return percentile(values, 50) / spread
