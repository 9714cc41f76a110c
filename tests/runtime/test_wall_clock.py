"""The wall clock: monotonic seconds since it was made; sleep_until really waits."""

from hypersched_nb.core.clock import Clock
from hypersched_nb.runtime import WallClock


def test_wall_clock_is_a_clock_that_starts_near_zero_and_never_goes_back():
    clock = WallClock()
    a, b = clock.now(), clock.now()
    assert isinstance(clock, Clock)  # satisfies the core's protocol
    assert 0 <= a <= b  # monotonic, from its creation


def test_sleep_until_returns_once_the_time_is_reached():
    clock = WallClock()
    target = clock.now() + 0.05
    clock.sleep_until(target)
    assert clock.now() >= target
    clock.sleep_until(0.0)  # a time in the past returns at once (no error, unlike a virtual clock)
