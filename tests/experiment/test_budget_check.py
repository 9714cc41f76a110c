"""A cost budget below one epoch of one worker, told once the search that spent it is over."""

from hypersched_nb.core.trial import Trial
from hypersched_nb.errors import ConfigError
from hypersched_nb.experiment._budget_check import below_one_epoch


def trained(tid: int, epochs: int, seconds: float) -> Trial:
    t = Trial(tid, {})
    t.epochs, t.train_seconds = epochs, seconds
    return t


def test_a_budget_below_the_first_trials_epoch_is_one_line_saying_what_to_give():
    error = below_one_epoch(5.0, [trained(3, 1, 12.0), trained(4, 0, 0.0)], billed=14.0)
    assert isinstance(error, ConfigError)
    assert str(error) == (
        "`cost_budget` is 5 worker-seconds, less than one epoch of one worker (trial 3's took "
        "12 s), so no trial can train past its first epoch: give at least 12"
    )


def test_a_budget_spent_before_any_epoch_ended_says_so():
    error = below_one_epoch(0.5, [trained(0, 0, 0.0)], billed=0.6)
    assert str(error) == (
        "`cost_budget` is 0.5 worker-seconds, spent before any trial finished its first "
        "epoch: give more than one epoch of one worker, with its start"
    )


def test_a_budget_that_paid_for_an_epoch_or_was_not_spent_says_nothing():
    assert below_one_epoch(60.0, [trained(0, 4, 40.0)], billed=61.0) is None  # trained on
    assert below_one_epoch(1.5, [trained(0, 1, 1.0)], billed=1.6) is None  # one epoch fits
    assert below_one_epoch(5.0, [trained(0, 1, 12.0)], billed=4.0) is None  # not spent
    assert below_one_epoch(None, [trained(0, 1, 1e9)], billed=1e9) is None  # no budget
