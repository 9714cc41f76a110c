"""Random search, first in first out: every offered configuration trains to R.

The baseline that wins when curves level off early and breadth matters more than depth.
The configurations come from the search's sampler and every trial trains to the search's
R, where the driver completes it, so the policy takes no budget, no seed and no setting.

Example:
    >>> from hypersched_nb.core.trial import Trial
    >>> from hypersched_nb.core.context import PolicyContext
    >>> a, b = Trial(0, {}), Trial(1, {})
    >>> RandomFIFO().choose_trial_to_run(PolicyContext.for_test(trials={0: a, 1: b})) is a
    True
"""

from __future__ import annotations

from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.policies._base import Policy
from hypersched_nb.core.policies._describe import first_in_first_out

__all__ = ["RandomFIFO"]


class RandomFIFO(Policy):
    name = "random"

    def describe(self, ctx: PolicyContext) -> str:
        return first_in_first_out(ctx)
