"""A cost budget below one epoch of one worker: bad input that only the search itself shows.

A live search cannot know, before it starts, how long an epoch of the user's model takes,
so a ``cost_budget`` too small to pay for even one epoch of one worker (the bench command
refuses it before anything starts, from the trace) is told once the search is over: when
the budget is spent and no trial trained past its first epoch, because the epochs took
longer, each, than the whole budget, or because none ended before the budget was spent.
What was computed stays: the trials' results, their checkpoints and the journal.
"""

from __future__ import annotations

from collections.abc import Iterable

from hypersched_nb.core.trial import Trial
from hypersched_nb.errors import ConfigError

__all__ = ["below_one_epoch"]


def below_one_epoch(
    budget: float | None, trials: Iterable[Trial], billed: float
) -> ConfigError | None:
    """The one-line error for a search that spent ``budget`` worker-seconds (``billed``) on
    ``trials`` without any training past its first epoch, because one epoch of one worker
    costs more than the budget; None otherwise."""
    if budget is None or billed < budget:
        return None
    trained = [t for t in trials if t.epochs >= 1]
    if any(t.epochs > 1 for t in trained):
        return None
    head = f"`cost_budget` is {budget:g} worker-seconds"
    if not trained:
        return ConfigError(
            f"{head}, spent before any trial finished its first epoch: give more than one "
            "epoch of one worker, with its start"
        )
    first = min(trained, key=lambda t: t.trial_id)
    epoch = first.train_seconds / first.epochs  # one worker's seconds for one epoch
    if epoch <= budget:
        return None
    return ConfigError(
        f"{head}, less than one epoch of one worker (trial {first.trial_id}'s took "
        f"{epoch:.3g} s), so no trial can train past its first epoch: give at least {epoch:.3g}"
    )
