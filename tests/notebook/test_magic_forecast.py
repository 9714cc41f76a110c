"""%hypersched forecast: one line on what a deadline or a cluster size would give."""

import re

import pytest
from IPython.core.error import UsageError

from hypersched_nb.testing.halt import halted_replay
from tests.notebook.conftest import small_trace


@pytest.fixture
def halted(shell):
    """A search started by the magic, held still at 60 s of its 120 s."""
    exp, halt = halted_replay(small_trace(), at=60, deadline=120, workers=3)
    shell.user_ns["mine"] = exp
    shell.run_line_magic("hypersched", "start mine --no-dashboard")
    assert halt.wait()
    yield exp
    halt.release()
    exp.wait()


@pytest.mark.parametrize(
    "line, start",
    [("forecast +10m", "by 720s (11m 00s from 60s) on 3 workers: best "),
     ("forecast --workers 8", "by 120s (1m 00s from 60s) on 8 workers: best "),
     ("forecast 90 --workers 1 --runs 4 --margin 0.01", "by 90s (30s from 60s) on 1 workers: best ")],
)  # fmt: skip
def test_forecast_prints_one_line(shell, halted, capsys, line, start):
    capsys.readouterr()
    shell.run_line_magic("hypersched", line)
    out = capsys.readouterr().out
    assert out.startswith(start) and out.count("\n") == 1
    assert "10-90%: " in out and " runs; " in out and "drawn from the search at 60s" in out
    assert re.search(r"beats [\d.]+ in \d+ of \d+ runs", out)  # a count, never "100 %"


@pytest.mark.parametrize(
    "line, message",
    [("forecast -1m", "already past"), ("forecast --workers 0", "`workers` holds 0"),
     ("forecast --runs 0", "`runs` is 0"), ("forecast --workers many", "invalid int value"),
     ("forecast --early-signal trust", "the search's policy 'asha' has no such option")],
)  # fmt: skip
def test_forecast_mistakes_are_one_line_usage_errors(shell, halted, line, message):
    with pytest.raises(UsageError, match=message) as err:
        shell.run_line_magic("hypersched", line)
    assert "\n" not in str(err.value)
