"""Round-robin time slices: every configuration takes turns on the workers.

The second baseline Hermes was compared with (GPU time-sharing without priorities).
Symbols: the slice is ``slice_epochs`` epochs; every trial trains to the search's R, where
the driver completes it, so the policy takes no budget and no seed.

Rule: a trial that has trained ``slice_epochs`` epochs since it last (re)started is paused
if anything waits (a pending or paused trial, or a configuration still to be offered);
otherwise it goes on. A free worker serves the queue in order: configurations count as
submitted together at the start, so new ones come first, then paused trials, the longest
waiting first (the order the driver paused them in).

Defaults: ``slice_epochs = 1``, the finest slice the driver can preempt at (an epoch
boundary) and the same slice as :class:`~hypersched_nb.core.policies._hermes.Hermes`, so
that the two differ only in whom they run next.

Example:
    >>> from hypersched_nb.core.trial import Trial, TrialState
    >>> from hypersched_nb.core.events import Result
    >>> from hypersched_nb.core.context import PolicyContext
    >>> rr = RoundRobin()
    >>> trials = {i: Trial(i, {}) for i in range(10)}
    >>> trials[0].state, trials[0].results_since_start = TrialState.RUNNING, 1
    >>> ctx = PolicyContext.for_test(trials=trials, workers=1)
    >>> rr.on_trial_result(trials[0], Result(0, 1, 0.3, 5.0, 5.0, 1), ctx)  # 9 wait
    Verdict(decision=Decision.PAUSE, reason='slice of 1 epoch(s) over; others wait')
    >>> rr.choose_trial_to_run(ctx).trial_id  # the next in the queue
    1
"""

from __future__ import annotations

from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.decisions import CONTINUE, Verdict
from hypersched_nb.core.events import Result
from hypersched_nb.core.policies._base import Policy
from hypersched_nb.core.policies._describe import epochs
from hypersched_nb.core.trial import Trial
from hypersched_nb.errors import ConfigError

__all__ = ["RoundRobin"]


class RoundRobin(Policy):
    name = "rr"

    def __init__(self, *, slice_epochs: int = 1):
        if slice_epochs < 1:
            raise ConfigError(f"`slice_epochs` is {slice_epochs}, but must be >= 1")
        self.slice_epochs = slice_epochs
        self._turn_over = Verdict.pause(f"slice of {slice_epochs} epoch(s) over; others wait")

    def on_trial_result(self, trial: Trial, result: Result, ctx: PolicyContext) -> Verdict:
        if trial.results_since_start % self.slice_epochs:
            return CONTINUE
        if ctx.pending or ctx.paused or ctx.offers_left:
            return self._turn_over
        return CONTINUE

    def choose_trial_to_run(self, ctx: PolicyContext) -> Trial | None:
        for trial in ctx.pending.values():
            return trial
        if ctx.offers_left:
            return None  # the driver offers the next configuration
        for trial in ctx.paused.values():
            return trial
        return None

    def describe(self, ctx: PolicyContext) -> str:
        waiting = len(ctx.pending) + len(ctx.paused)
        return (
            f"taking turns: each trial trains {epochs(self.slice_epochs)}, then the next in line "
            f"gets its worker · {len(ctx.running)} running, {waiting} waiting"
        )
