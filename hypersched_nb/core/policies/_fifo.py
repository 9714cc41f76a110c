"""First in, first out: each configuration, in the order offered, trains to the end.

The first baseline Hermes was compared with (a cluster scheduler's default queue: a job
holds its GPU until it finishes): every trial trains to the search's R, where the driver
completes it, so the policy takes no budget, no seed and no setting (the rule has no
constant).

Rule: never pause, never stop; a free worker resumes a paused trial first (one only pauses
when its worker was lost, so it is older than any waiting one), else starts the oldest
offered configuration, else asks for a new one.

Example:
    >>> from hypersched_nb.core.trial import Trial
    >>> from hypersched_nb.core.events import Result
    >>> from hypersched_nb.core.context import PolicyContext
    >>> fifo = FIFO()
    >>> trials = {i: Trial(i, {}) for i in range(10)}
    >>> ctx = PolicyContext.for_test(trials=trials, workers=2)
    >>> fifo.choose_trial_to_run(ctx).trial_id  # the first offered
    0
    >>> fifo.on_trial_result(trials[0], Result(0, 1, 0.1, 1.0, 1.0, 1), ctx).decision
    Decision.CONTINUE
"""

from __future__ import annotations

from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.policies._base import Policy
from hypersched_nb.core.policies._describe import first_in_first_out

__all__ = ["FIFO"]


class FIFO(Policy):
    name = "fifo"

    def describe(self, ctx: PolicyContext) -> str:
        return first_in_first_out(ctx)
