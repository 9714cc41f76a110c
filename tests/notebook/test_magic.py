"""%hypersched, parsed and run through IPython's InteractiveShell."""

import re

import pytest
from IPython.core.error import UsageError

from hypersched_nb import Experiment


class Net:
    @classmethod
    def space(cls):
        return {"lr": [0.1, 0.01]}

    def setup(self, config, ctx): ...

    def step(self): ...


def test_start_an_experiment_then_status_and_stop(shell, replay, capsys):
    shell.user_ns["mine"] = replay
    shell.run_line_magic("hypersched", "start mine --no-dashboard")
    # one status line, however far the replay got meanwhile on a busy machine
    assert re.match(r"((\d+m )?\d+s left|done) \| running \d+", capsys.readouterr().out)
    replay.wait()
    shell.run_line_magic("hypersched", "status")
    assert capsys.readouterr().out.startswith("asha search, finished · deadline at 120s, 3 workers")
    shell.run_line_magic("hypersched", "stop")  # already over: prints the summary
    assert "finished" in capsys.readouterr().out
    with pytest.raises(UsageError, match="can no longer move"):
        shell.run_line_magic("hypersched", "deadline +10m")


def test_start_builds_an_experiment_from_options(shell, monkeypatch):
    started = []
    monkeypatch.setattr(Experiment, "start", lambda self: started.append(self) or self)
    shell.user_ns["Net"] = Net
    shell.run_line_magic(
        "hypersched",
        "start Net --deadline 90s --workers 2 --max-epochs 7 --eta 3 --policy asha --sampler random --name e2 --no-dashboard",
    )
    exp = shell.user_ns.pop("e2")
    assert started == [exp]
    assert exp.early_signal == "auto"  # the default
    assert (exp.max_epochs, exp.eta, exp.cluster, exp.deadline) == (7, 3, 2, 90.0)
    assert exp.policy.name == "asha" and "lr" in exp.source.distributions  # the trainable's space()


def test_start_passes_what_the_user_knows_of_the_first_epochs(shell, monkeypatch):
    monkeypatch.setattr(Experiment, "start", lambda self: self)
    shell.user_ns["Net"] = Net
    shell.run_line_magic("hypersched", "start Net --early-signal trust --no-dashboard")
    exp = shell.user_ns.pop("exp")
    assert exp.early_signal == "trust" and exp.policy.trust.mode() == "trust"


def test_start_shows_the_dashboard(shell, replay, capsys):
    shell.user_ns["mine"] = replay
    shell.run_line_magic("hypersched", "start mine")
    replay.wait()
    assert "asha search" in capsys.readouterr().out  # a plain shell prints the text fallback


def test_the_deadline_subcommand_moves_the_deadline(shell, replay, monkeypatch, capsys):
    monkeypatch.setattr(Experiment, "start", lambda self: self)  # created, never run
    shell.user_ns["mine"] = replay
    shell.run_line_magic("hypersched", "start mine --no-dashboard")
    shell.run_line_magic("hypersched", "deadline -30s")  # "-30s" is a value, not an option
    assert replay.deadline == 90.0
    assert capsys.readouterr().out.splitlines()[-1] == "deadline at 90s (1m 30s left at 0s)"


@pytest.mark.parametrize(
    "line, message",
    [("", "needs a subcommand"), ("launch", "unknown subcommand 'launch'"), ("status", "no search yet"),
     ("start Missing", "'Missing' is not defined"), ("start os:nothing", "cannot import 'os:nothing'"),
     ("start Net --deadline soon", "`deadline` is 'soon'"), ("start Net --policy nope", "`policy` is 'nope'"),
     ("start Net --workers 2 --address tcp://x:1", "not allowed with"), ("start Net --name 2x", "not a Python identifier"),
     ("deadline", "required: deadline"), ("status extra", "unrecognized arguments"),
     ("resume", "required: path"), ("resume /no/such/search", "no journal at /no/such/search/journal.jsonl")],
)  # fmt: skip
def test_mistakes_are_one_line_usage_errors(shell, line, message):
    shell.user_ns["Net"] = Net
    with pytest.raises(UsageError, match=message) as err:
        shell.run_line_magic("hypersched", line)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    "line, message",
    [("start Net --eta inf", "`eta` is inf, but must be a finite number > 1"),
     ("start Net --seed -1", "`seed` is -1, but must be an integer from 0 to 2**32 - 1"),
     ("start Net --address notanaddress", "`cluster` is 'notanaddress', which is not an address"),
     ("start Net --address tcp2://h:1", "unknown address scheme 'tcp2'"),
     ("start Net --name class", "--name 'class' is not a Python identifier"),
     ("start Net --early-signal maybe", "`--early-signal` is 'maybe', but must be one of 'auto', 'trust', 'doubt'"),
     ("resume runs/a --workers 2 --address tcp://x:1", "argument --address: not allowed with argument --workers")],
)  # fmt: skip
def test_bad_options_are_one_line_before_anything_starts(shell, monkeypatch, line, message):
    started, resumed = [], []
    monkeypatch.setattr(Experiment, "start", lambda self: started.append(self) or self)
    monkeypatch.setattr(Experiment, "resume", classmethod(lambda cls, *a, **kw: resumed.append(a)))
    shell.user_ns["Net"] = Net
    with pytest.raises(UsageError) as err:
        shell.run_line_magic("hypersched", line)
    assert message in str(err.value) and "\n" not in str(err.value)
    assert started == resumed == [] and "class" not in shell.user_ns


def test_resume_binds_the_resumed_search_and_follows_it(shell, replay, monkeypatch, capsys):
    asked = []
    monkeypatch.setattr(
        Experiment,
        "resume",
        classmethod(lambda cls, path, **kw: asked.append((path, kw)) or replay),
    )
    shell.run_line_magic("hypersched", "resume runs/a --deadline 30m --workers 3 --no-dashboard")
    assert asked == [("runs/a", {"cluster": 3, "deadline": "30m"})]
    assert shell.user_ns["exp"] is replay
    shell.run_line_magic("hypersched", "status")  # the subcommands act on it
    assert "asha search" in capsys.readouterr().out


@pytest.mark.parametrize(
    "line",
    ["--help", "start --help", "resume --help", "deadline -h", "status --help", "stop --help"],
)
def test_help_prints_and_raises_nothing(shell, line, capsys):
    shell.run_line_magic("hypersched", line)
    assert "%hypersched" in capsys.readouterr().out


def test_the_verbs_find_a_search_started_through_the_api(shell, replay, capsys):
    shell.user_ns["mine"] = replay
    replay.run()  # started in Python, never through the magic
    shell.run_line_magic("hypersched", "status")
    assert capsys.readouterr().out.startswith("asha search, finished · deadline at 120s")


def test_a_deadline_that_would_end_the_search_now_is_refused_unless_asked(shell):
    from hypersched_nb.testing.halt import halted_replay
    from tests.notebook.conftest import small_trace

    exp, halt = halted_replay(small_trace(), at=40, deadline=120, workers=3)
    shell.user_ns["mine"] = exp
    shell.run_line_magic("hypersched", "start mine --no-dashboard")
    assert halt.wait()
    with pytest.raises(UsageError, match=r"^deadline -10m would end the search now .*--end-now"):
        shell.run_line_magic("hypersched", "deadline -10m")
    assert exp.deadline == 120.0  # unchanged
    shell.run_line_magic("hypersched", "deadline -10m --end-now")
    assert exp.deadline == 40.0  # now: it ends
    halt.release()
    exp.wait()
