"""Random search, first in first out: every offered configuration trains to R.

The baseline that wins when curves level off early and breadth matters more than depth.
Symbols: R = ``max_epochs`` (the driver completes a trial there); r and η are accepted for
a uniform constructor and unused.

Example:
    >>> from hypersched_nb.core.trial import Trial
    >>> from hypersched_nb.core.context import PolicyContext
    >>> a, b = Trial(0, {}), Trial(1, {})
    >>> RandomFIFO().choose_trial_to_run(PolicyContext.for_test(trials={0: a, 1: b})) is a
    True
"""

from __future__ import annotations

from hypersched_nb.core.policies._base import Policy, check_budget

__all__ = ["RandomFIFO"]


class RandomFIFO(Policy):
    name = "random"

    def __init__(self, *, max_epochs: int = 100, min_epochs: int = 1, eta: float = 4, seed: int | None = None):
        check_budget(max_epochs, min_epochs, eta)
        self.max_epochs = max_epochs
