"""SEER's plan: how long and how costly its remaining rounds are at k workers per trial.

Pure functions of :class:`~hypersched_nb.core.policies._seer.SEER` (its docstring states the
model): a round is (n trials, Σ one-worker seconds dⱼ, longest dⱼ, epochs m each); a trial
on k workers trains its first epoch on one (it is resized at that epoch's end), so its time
is c' + dⱼ·f(k), f(k) = 1/m + (1 − 1/m)/s(k), with c' = c, or 2c when k > 1; the round takes
c' + max dⱼ·f(k) when its n trials fit ⌊W/k⌋ at once, else Graham's list-scheduling bound;
it bills k·(n·c' + Σdⱼ·f(k)) worker-seconds.

Example:
    >>> from hypersched_nb.core.scaling import ScalingCurve
    >>> curve = ScalingCurve({2: 2.0, 4: 3.0, 8: 4.0})
    >>> # one round of 2 trials of 10 epochs, 100 s, on 8 workers, 60 s left: 2 workers each
    >>> # take 10 + 90/2 = 55 s; 3 would save 9 s more at 56 extra worker-seconds
    >>> plan_rounds(
    ...     [(2, 200.0, 100.0, 10)], time_left=60.0, workers=8, scaling=curve, startup=0.0)[0]
    [2]
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from hypersched_nb.core.scaling import ScalingCurve

__all__ = [
    "Round",
    "plan_rounds",
    "round_cost",
    "round_epochs",
    "round_time",
    "stretch",
]

Round = tuple[int, float, float, int]  # (trials, Σ one-worker s, longest one-worker s, epochs each)


def round_epochs(max_epochs: int, min_epochs: int, eta: float) -> list[int]:
    """eᵢ for i = 0 … R: (E=52, r=1, η=4) -> [4, 13, 52]."""
    halvings = 0  # R = ⌊log_η(E/r)⌋, counted exactly
    while min_epochs * eta ** (halvings + 1) <= max_epochs:
        halvings += 1
    return [
        max(min_epochs, min(max_epochs, math.ceil(max_epochs * eta ** (i - halvings))))
        for i in range(halvings + 1)
    ]


def stretch(k: int, epochs: int, scaling: ScalingCurve) -> float:
    """f(k): a trial's time on k workers over its time on one (its first epoch runs on one)."""
    if k == 1 or epochs < 1:
        return 1.0
    return 1 / epochs + (1 - 1 / epochs) / scaling(k)


def round_time(rnd: Round, k: int, workers: int, scaling: ScalingCurve, startup: float) -> float:
    n, total, longest, epochs = rnd
    if n == 0:
        return 0.0
    c, f = startup * (2 if k > 1 else 1), stretch(k, epochs, scaling)
    lanes = max(1, workers // k)
    if n <= lanes:  # all at once
        return c + longest * f
    return (n * c + total * f) / lanes + (1 - 1 / lanes) * (c + longest * f)  # Graham's bound


def round_cost(rnd: Round, k: int, scaling: ScalingCurve, startup: float) -> float:
    n, total, _, epochs = rnd
    c = startup * (2 if k > 1 else 1)
    return k * (n * c + total * stretch(k, epochs, scaling)) if n else 0.0


def plan_rounds(
    rounds: Sequence[Round],
    *,
    time_left: float,
    workers: int,
    scaling: ScalingCurve,
    startup: float,
    budget: float = math.inf,
) -> tuple[list[int], float, float]:
    """kᵢ per round, and the plan's total time and cost: start at kᵢ = 1, then add workers
    where they save the most time per extra worker-second, until the rounds fit
    ``time_left`` or no addition that keeps the rounds' cost within ``budget``
    worker-seconds saves time."""
    ks = range(1, workers + 1)
    time = [[round_time(r, k, workers, scaling, startup) for k in ks] for r in rounds]  # [i][k − 1]
    cost = [[round_cost(r, k, scaling, startup) for k in ks] for r in rounds]
    pick = [1] * len(rounds)
    while sum(time[i][k - 1] for i, k in enumerate(pick)) > time_left:
        best, spent = None, sum(cost[i][k - 1] for i, k in enumerate(pick))
        for i, now in enumerate(pick):
            t_now, c_now = time[i][now - 1], cost[i][now - 1]
            for k in range(now + 1, workers + 1):
                saved, extra = t_now - time[i][k - 1], cost[i][k - 1] - c_now
                if saved > 0 and spent + extra <= budget:
                    rate = saved / extra if extra > 0 else math.inf
                    if best is None or rate > best[0]:
                        best = (rate, i, k)
        if best is None:
            break
        pick[best[1]] = best[2]
    total_time = sum(time[i][k - 1] for i, k in enumerate(pick))
    total_cost = sum(cost[i][k - 1] for i, k in enumerate(pick))
    return pick, total_time, total_cost
