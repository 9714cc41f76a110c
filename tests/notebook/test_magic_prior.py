"""``%hypersched start --prior``: a past search for the new one, or the newest of its
trainable in the runs folder (``--prior last``)."""

import json

import pytest
from IPython.core.error import UsageError

from hypersched_nb import Experiment
from hypersched_nb.experiment.settings import import_path
from tests.experiment.test_journal import write_journal


class Net:
    @classmethod
    def space(cls):
        return {"lr": [0.1, 0.01]}

    def setup(self, config, ctx): ...

    def step(self): ...


def a_search_of(trainable, folder):
    """A finished search's folder whose journal names ``trainable``."""
    folder.mkdir(parents=True)
    lines = write_journal(folder / "journal.jsonl", "hypersched")
    header = json.loads(lines[0])
    header["settings"]["trainable"] = import_path(trainable)
    (folder / "journal.jsonl").write_bytes(
        json.dumps(header).encode() + b"\n" + b"".join(lines[1:])
    )


def test_start_with_prior_last_takes_the_newest_search_of_the_same_trainable(
    shell, monkeypatch, tmp_path
):
    monkeypatch.setattr(Experiment, "start", lambda self: self)
    monkeypatch.chdir(tmp_path)
    a_search_of(Net, tmp_path / "hypersched-runs" / "yesterday")
    shell.user_ns["Net"] = Net
    shell.run_line_magic("hypersched", "start Net --prior last --no-dashboard")
    exp = shell.user_ns.pop("exp")
    assert exp.prior.label == "search 'hypersched-runs/yesterday'" and exp.prior.shared == ("lr",)
    assert exp.policy.trust.short().startswith("from search 'hypersched-runs/yesterday'")


def test_start_with_prior_last_and_no_past_search_says_so_in_one_line(shell, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    shell.user_ns["Net"] = Net
    with pytest.raises(UsageError, match="--prior last: no search of Net in 'hypersched-runs' yet"):
        shell.run_line_magic("hypersched", "start Net --prior last --no-dashboard")
