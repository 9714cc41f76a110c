"""A journal of each format, committed (``data/format-<N>``, made by
``scripts/make_journal_fixture.py``): every later version must open it, resume it and
report the same from it. A new format adds its own fixture beside it and keeps this one."""

import json
import shutil
from pathlib import Path

import pytest

from hypersched_nb import Experiment
from hypersched_nb.experiment.journal import FORMAT, read_journal

FIXTURES = sorted((Path(__file__).parent / "data").glob("format-*"))


def rows_of(exp) -> list[dict]:
    return [
        {
            "trial": r.trial_id,
            "state": r.state,
            "config": dict(r.config),
            "metrics": list(r.metrics),
        }
        for r in exp.statistics().trials
    ]


def test_there_is_a_fixture_of_the_format_this_version_writes():
    assert f"format-{FORMAT}" in [f.name for f in FIXTURES]


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda f: f.name)
def test_a_committed_journal_opens_and_reports_what_it_did(fixture, tmp_path):
    folder = shutil.copytree(fixture, tmp_path / "moved")  # a search folder moved elsewhere
    opened = Experiment.open(folder)
    assert opened.statistics().status == "interrupted"
    assert rows_of(opened) == json.loads((fixture / "expected.json").read_text())
    assert opened.best is not None and opened.load_best() is not None  # its weights, moved too


@pytest.mark.cluster
@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda f: f.name)
def test_a_committed_journal_resumes_as_the_same_search(fixture, tmp_path):
    folder = shutil.copytree(fixture, tmp_path / "moved")
    before = json.loads((fixture / "expected.json").read_text())
    exp = Experiment.resume(folder, deadline="15s", cluster=2)  # a budget from now
    exp.wait()
    after = rows_of(Experiment.open(folder))
    configs = [tuple(sorted(r["config"].items())) for r in after]
    assert len(set(configs)) == len(configs)  # nothing offered twice
    assert [r["trial"] for r in after] == list(range(len(after)))  # trial ids went on
    for old, new in zip(before, after, strict=False):  # nothing reported before is lost
        assert (
            new["config"] == old["config"]
            and new["metrics"][: len(old["metrics"])] == old["metrics"]
        )
    resumed = [r for r in read_journal(folder).records if r["k"] == "resumed"]
    assert len(resumed) == 1 and len(after) > len(before)
    # each unfinished trial went on from its own checkpoint, not from epoch 0
    unfinished = [r for r in before if r["state"] in ("RUNNING", "PAUSED")]
    assert {int(t) for t in resumed[0]["from"]} == {r["trial"] for r in unfinished}
    went_on = {int(t): epoch for t, epoch in resumed[0]["from"].items()}
    assert all(went_on[r["trial"]] >= 1 for r in unfinished if r["metrics"])  # none had none
