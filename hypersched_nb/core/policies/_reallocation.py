"""Reallocation, the HyperSched paper's: spare workers to running trials, when it pays.

Liaw et al., "HyperSched: Dynamic Resource Reallocation for Model Development on a
Deadline" (SoCC 2019). Symbols: s(k) = the scaling curve (``ctx.scaling``), T_left = time
left, O = start-up overhead (a percentile of the start-ups observed, 0 before any).

Each running trial holds one worker; the spare ones are split best-first, round-robin
(``uniform``: 8 over 3 -> 3/3/2) or all to the best (``top_job``). A trial grows only when
the benefit test s(new)·(T_left − O) / (T_left·s(cur)) exceeds ``grow_threshold`` and it
has reported more than ``recharge`` results since its last (re)start; a shrink always goes
ahead. Both ``hypersched`` and ``hypersched-paper`` use :class:`Reallocation` as it is; they
differ in when they reallocate (admission) and in whom they sort first.

Example:
    >>> split_uniform([3, 1, 2], total=8, cap=8)
    {3: 3, 1: 3, 2: 2}
    >>> grow_pays(2.0, 1.0, time_left=100.0, startup=10.0, threshold=1.1)  # 1.8 > 1.1
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.policies._base import at_least
from hypersched_nb.core.policies._sample import Sample
from hypersched_nb.errors import ConfigError

__all__ = [
    "SPLITS",
    "Reallocation",
    "grow_pays",
    "split_top_job",
    "split_uniform",
    "startup_overhead",
    "startup_sample",
]


def startup_sample(percentile: float) -> Sample:
    """The start-ups' sample whose ``percentile`` is O (checked: a percentile is in [0, 100])."""
    if not 0 <= percentile <= 100:
        raise ConfigError(f"`startup_percentile` is {percentile}, but must be in [0, 100]")
    return Sample(percentile=percentile)


def startup_overhead(sample: Sample, startups: Sequence[float]) -> float:
    """O: the sample's percentile of the start-ups observed so far (0 before any)."""
    return sample.follow(startups).percentile() or 0.0


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
