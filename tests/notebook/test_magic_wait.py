"""%hypersched wait, a refused start that changes nothing, and the shipped examples by name."""

import pytest
from IPython.core.error import UsageError

from hypersched_nb import Experiment


def test_wait_blocks_until_the_search_is_over_then_prints_the_summary(shell, replay, capsys):
    shell.user_ns["mine"] = replay
    shell.run_line_magic("hypersched", "start mine --no-dashboard")
    capsys.readouterr()
    shell.run_line_magic("hypersched", "wait")
    assert replay.done
    assert capsys.readouterr().out.startswith("asha search, finished · ")


def test_a_start_refused_while_a_search_runs_changes_nothing_in_the_notebook(
    shell, replay, monkeypatch
):
    monkeypatch.setattr(Experiment, "start", lambda self: self)  # started, never over
    shell.user_ns["exp"] = replay
    shell.run_line_magic("hypersched", "start exp --no-dashboard")
    names = dict(shell.user_ns)
    with pytest.raises(UsageError, match="still running; %hypersched stop it first"):
        shell.run_line_magic("hypersched", "start DigitsCNN --no-dashboard")
    assert shell.user_ns == names  # `exp` still the running search
    shell.run_line_magic("hypersched", "start exp --no-dashboard")  # following it is fine


def test_start_finds_a_shipped_example_without_an_import(shell, monkeypatch):
    started = []
    monkeypatch.setattr(Experiment, "start", lambda self: started.append(self) or self)
    shell.run_line_magic("hypersched", "start DigitsCNN --deadline 90s --no-dashboard")
    exp = shell.user_ns.pop("exp")
    assert started == [exp] and exp.trainable.__name__ == "DigitsCNN"
    with pytest.raises(UsageError, match="'DigitsNet' is not defined in the notebook, nor a"):
        shell.run_line_magic("hypersched", "start DigitsNet")
