"""Deadlines as people write them: budgets, wall-clock times and shifts, or one-line errors."""

from datetime import datetime, timedelta

import pytest

from hypersched_nb.errors import ConfigError
from hypersched_nb.experiment.deadline import (
    format_duration,
    parse_deadline,
    parse_duration,
    resolve_deadline,
)

START = datetime(2026, 3, 2, 16, 0, 0)  # the search clock reads 0 at 16:00:00


@pytest.mark.parametrize(
    "text, seconds",
    [("20m", 1200.0), ("90s", 90.0), ("1h30m", 5400.0), ("1.5h", 5400.0), ("45", 45.0),
     (" 2m 30s ", 150.0), ("1H", 3600.0), (".5m", 30.0)],
)  # fmt: skip
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("spec", ["20m", 1200, 1200.0, timedelta(minutes=20)])
def test_a_budget_counts_from_the_start_whenever_it_is_set(spec):
    # the same 20 minutes, before the start or 5 minutes in
    assert resolve_deadline(spec, elapsed=0.0, current=None, started=START) == 1200.0
    assert resolve_deadline(spec, elapsed=300.0, current=900.0, started=START) == 1200.0


def test_a_wall_clock_time_is_today_s_or_tomorrow_s_when_it_says_so():
    # 17:00 one minute after a 16:00 start is an hour after the start
    assert resolve_deadline("17:00", elapsed=60.0, current=None, started=START) == 3600.0
    assert resolve_deadline("17:00:30", elapsed=60.0, current=None, started=START) == 3630.0
    # 09:00 tomorrow morning: 17 hours after the start
    assert (
        resolve_deadline("tomorrow 9:00", elapsed=60.0, current=None, started=START) == 17 * 3600.0
    )


@pytest.mark.parametrize(
    "spec, message",
    [("15:59", "`deadline` is '15:59:00', which passed 2m 00s ago; give a time still to come ('tomorrow 15:59'), or a budget such as '30m'"),
     ("09:00", "`deadline` is '09:00:00', which passed 7h 01m ago; give a time still to come ('tomorrow 09:00'), or a budget such as '30m'"),
     (START - timedelta(days=1), "`deadline` is '2026-03-01T16:00:00', which passed 24h 01m ago; give a time still to come (a later time), or a budget such as '30m'")],
)  # fmt: skip
def test_a_time_already_past_is_refused_saying_when_it_passed(spec, message):
    # a minute after the start: a time a minute earlier, or this morning, never means tomorrow
    with pytest.raises(ConfigError) as info:
        resolve_deadline(spec, elapsed=60.0, current=None, started=START)
    assert str(info.value) == message


def test_tomorrow_must_be_followed_by_a_time():
    with pytest.raises(ConfigError, match="'tomorrow' must be followed by a time like 9:00"):
        parse_deadline("tomorrow morning")


def test_a_datetime_is_taken_as_it_is():
    assert (
        resolve_deadline(START + timedelta(minutes=45), elapsed=0.0, current=None, started=START)
        == 2700.0
    )


def test_a_shift_moves_the_deadline_in_force():
    assert resolve_deadline("+10m", elapsed=60.0, current=1200.0, started=START) == 1800.0
    assert resolve_deadline("-5m", elapsed=60.0, current=1200.0, started=START) == 900.0
    # before the start there is no deadline to move: "+10m" is ten minutes from now
    assert resolve_deadline("+10m", elapsed=0.0, current=None, started=START) == 600.0


def test_a_wall_clock_time_needs_a_wall_clock():
    with pytest.raises(ConfigError, match="virtual clock"):
        resolve_deadline("17:00", elapsed=0.0, current=None, started=None)
    # durations and shifts work on a virtual clock
    assert resolve_deadline("+90s", elapsed=10.0, current=100.0, started=None) == 190.0


@pytest.mark.parametrize(
    "bad",
    ["20x", "", "abc", "25:00", "12:61", "-", "0m", 0, -5, float("nan"), True, None, [1], "1h-5m"],
)
def test_bad_deadlines_are_one_line_config_errors_naming_the_parameter(bad):
    with pytest.raises(ConfigError) as err:
        parse_deadline(bad)
    message = str(err.value)
    assert message.startswith("`deadline` is") and "\n" not in message


def test_kinds_are_reported():
    assert parse_deadline("20m").kind == "budget"
    assert parse_deadline("17:00").kind == "at"
    assert parse_deadline("+1m").kind == "shift" and parse_deadline("-1m").seconds == -60.0
    assert str(parse_deadline("+1h30m")) == "+1h 30m"


@pytest.mark.parametrize(
    "seconds, text",
    [(42.3, "42s"), (185, "3m 05s"), (3725, "1h 02m"), (-3, "0s"), (float("inf"), "∞")],
)
def test_durations_print_compactly(seconds, text):
    assert format_duration(seconds) == text


def test_an_experiment_given_a_time_already_past_says_so_before_anything_starts():
    from hypersched_nb import Experiment

    class Net:
        def setup(self, config, ctx): ...

        def step(self): ...

    a_minute_ago = datetime.now() - timedelta(minutes=1)
    with pytest.raises(ConfigError, match=r"which passed 1m 00s ago; give a time still to come"):
        Experiment(Net, {"lr": [0.1]}, deadline=a_minute_ago)
