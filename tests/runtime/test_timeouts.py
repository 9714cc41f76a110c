"""step_timeout: how long each trial's epoch in flight may run before its worker is restarted."""

import pytest

from hypersched_nb.errors import ConfigError
from hypersched_nb.runtime._live import LiveTrial, Phase
from hypersched_nb.runtime._timeouts import FACTOR, FLOOR, STARTUP, StepTimeouts, stuck
from hypersched_nb.runtime.checkpoint import Checkpoint


def training(tid=0, *, launched=0.0, starting=False, reported=0, ckpt_epoch=None):
    t = LiveTrial(tid, 1, reported=reported)
    if ckpt_epoch is not None:
        t.ckpt = Checkpoint(f"/x/{tid}-{ckpt_epoch}.pt", "0" * 64, 1, ckpt_epoch)
    t.phase, t.t_launch, t.starting = Phase.TRAINING, launched, starting
    return t


def measured(timeouts, t, *steps):
    for s in steps:
        t.step = s
        timeouts.measured(t)


def test_auto_bounds_an_epoch_by_a_multiple_of_the_trials_median_step_and_a_floor():
    timeouts, slow, fast = StepTimeouts("auto"), training(0), training(1)
    measured(timeouts, slow, 10.0, 30.0, 20.0, 900.0)  # one outlier does not move the median
    measured(timeouts, fast, 0.1, 0.1)
    assert timeouts.bound(slow) == FACTOR * 25.0
    assert timeouts.bound(fast) == FLOOR  # a short epoch is not restarted on a hiccup


def test_auto_sets_no_bound_before_a_trials_first_epoch_is_measured():
    timeouts = StepTimeouts("auto")
    assert timeouts.bound(training()) is None
    assert timeouts.late([training()], now=1e9) == []
    assert timeouts.next_timeout([training()]) == float("inf")


def test_a_start_gets_a_bound_for_each_epoch_it_trains_again_and_time_to_start():
    timeouts = StepTimeouts(5.0)
    resumed = training(starting=True, reported=4, ckpt_epoch=2)  # epochs 3, 4 again, then 5
    assert timeouts.bound(resumed) == 3 * 5.0 + STARTUP
    assert timeouts.bound(training()) == 5.0


def test_an_epoch_past_its_bound_is_late_and_the_first_bound_to_run_out_is_the_wake_up():
    timeouts = StepTimeouts(5.0)
    early, late = training(0, launched=10.0), training(1, launched=2.0)
    idle = training(2, launched=0.0)
    idle.phase = Phase.READY  # nothing in flight: never late
    assert timeouts.late([early, late, idle], now=8.0) == [(late, 5.0)]
    assert timeouts.next_timeout([early, late, idle]) == 7.0


def test_strikes_are_counted_per_trial():
    timeouts = StepTimeouts(None)
    assert [timeouts.strike(0), timeouts.strike(1), timeouts.strike(0)] == [1, 1, 2]
    assert timeouts.late([training()], now=1e9) == []  # None: no bound at all


@pytest.mark.parametrize("bad", [0, -1.0, "soon", True])
def test_a_step_timeout_that_is_no_number_of_seconds_is_one_line(bad):
    with pytest.raises(ConfigError, match=r"^`step_timeout` is .*, but must be a number"):
        StepTimeouts(bad)


def test_a_step_is_called_stuck_past_five_times_its_longest_epoch_a_start_past_its_rebuild_too():
    running = training(launched=0.0, reported=17)
    running.longest = 1.2
    assert stuck(running, now=5.0) is None  # 5 s at least
    assert stuck(running, now=11.0) == 11.0
    # resumed from epoch 15: it builds, restores and trains epochs 16 and 17 again first
    resumed = training(launched=0.0, starting=True, reported=17, ckpt_epoch=15)
    resumed.longest = 1.2
    assert stuck(resumed, now=11.0) is None  # a GPU run's resume took 11 s: not stuck
    assert stuck(resumed, now=3 * 6.0 + STARTUP + 1) == 3 * 6.0 + STARTUP + 1
    assert stuck(training(launched=0.0), now=1e9) is None  # no epoch measured yet
