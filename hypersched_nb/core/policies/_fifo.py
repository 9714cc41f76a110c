"""First in, first out: each configuration, in the order offered, trains to the end.

The first baseline Hermes was compared with (a cluster scheduler's default queue: a job
holds its GPU until it finishes). Symbols: R = ``max_epochs`` (the driver completes a trial
there); r, η and the seed are accepted for a uniform constructor and unused. There are no
published defaults to follow: the rule has no constant.

Rule: never pause, never stop; a free worker resumes a paused trial first (one only pauses
when its worker was lost, so it is older than any waiting one), else starts the oldest
offered configuration, else asks for a new one.

Example:
    >>> from hypersched_nb.core.trial import Trial
    >>> from hypersched_nb.core.events import Result
    >>> from hypersched_nb.core.context import PolicyContext
    >>> fifo = FIFO(max_epochs=10)
    >>> trials = {i: Trial(i, {}) for i in range(10)}
    >>> ctx = PolicyContext.for_test(trials=trials, workers=2)
    >>> fifo.choose_trial_to_run(ctx).trial_id  # the first offered
    0
    >>> fifo.on_trial_result(trials[0], Result(0, 1, 0.1, 1.0, 1.0, 1), ctx).name
    'CONTINUE'
"""

from __future__ import annotations

from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.decisions import Decision
from hypersched_nb.core.events import Result
from hypersched_nb.core.policies._base import Policy, check_budget
from hypersched_nb.core.trial import Trial

__all__ = ["FIFO"]


class FIFO(Policy):
    name = "fifo"

    def __init__(
        self,
        *,
        max_epochs: int = 100,
        min_epochs: int = 1,
        eta: float = 4,
        seed: int | None = None,
    ):
        check_budget(max_epochs, min_epochs, eta)
        self.max_epochs = max_epochs

    def on_trial_result(self, trial: Trial, result: Result, ctx: PolicyContext) -> Decision:
        return Decision.CONTINUE

    def choose_trial_to_run(self, ctx: PolicyContext) -> Trial | None:
        for trial in ctx.paused.values():
            return trial
        for trial in ctx.pending.values():
            return trial
        return None

    def describe(self, ctx: PolicyContext) -> str:
        return f"fifo: {len(ctx.running)} running to the end, {len(ctx.pending)} waiting"
