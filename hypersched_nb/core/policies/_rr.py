"""Round-robin time slices: every configuration takes turns on the workers.

The second baseline Hermes was compared with (GPU time-sharing without priorities).
Symbols: R = ``max_epochs`` (the driver completes a trial there); the slice is
``slice_epochs`` epochs; r, η and the seed are accepted for a uniform constructor and
unused.

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
    >>> rr = RoundRobin(max_epochs=10)
    >>> trials = {i: Trial(i, {}) for i in range(10)}
    >>> trials[0].state, trials[0].results_since_start = TrialState.RUNNING, 1
    >>> ctx = PolicyContext.for_test(trials=trials, workers=1)
    >>> rr.on_trial_result(trials[0], Result(0, 1, 0.3, 5.0, 5.0, 1), ctx).name  # 9 wait
    'PAUSE'
    >>> rr.choose_trial_to_run(ctx).trial_id  # the next in the queue
    1
"""

from __future__ import annotations

from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.decisions import Decision
from hypersched_nb.core.events import Result
from hypersched_nb.core.policies._base import Policy, check_budget
from hypersched_nb.core.trial import Trial
from hypersched_nb.errors import ConfigError

__all__ = ["RoundRobin"]


class RoundRobin(Policy):
    name = "rr"

    def __init__(
        self,
        *,
        max_epochs: int = 100,
        min_epochs: int = 1,
        eta: float = 4,
        seed: int | None = None,
        slice_epochs: int = 1,
    ):
        check_budget(max_epochs, min_epochs, eta)
        if slice_epochs < 1:
            raise ConfigError(f"`slice_epochs` is {slice_epochs}, but must be >= 1")
        self.max_epochs = max_epochs
        self.slice_epochs = slice_epochs

    def on_trial_result(self, trial: Trial, result: Result, ctx: PolicyContext) -> Decision:
        if trial.results_since_start % self.slice_epochs:
            return Decision.CONTINUE
        if ctx.pending or ctx.paused or ctx.offers_left:
            self.why = f"slice of {self.slice_epochs} epoch(s) over; others wait"
            return Decision.PAUSE
        return Decision.CONTINUE

    def choose_trial_to_run(self, ctx: PolicyContext) -> Trial | None:
        for trial in ctx.pending.values():
            return trial
        if ctx.offers_left:
            return None  # the driver offers the next configuration
        for trial in ctx.paused.values():
            return trial
        return None

    def describe(self, ctx: PolicyContext) -> str:
        return f"rr: {len(ctx.running)} running, {len(ctx.paused)} paused in the queue"
