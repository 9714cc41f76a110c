"""A resume continues the same search: killed with SIGKILL (its whole process group) while a
checkpoint is being written, around a resize and at a random moment, and resumed each
time, the search never offers a configuration twice, loses no epoch reported before a
kill, takes every unfinished trial on from its own checkpoint, and ends by its first
deadline. The third resume is a resume of a resume of a resume."""

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from hypersched_nb import Experiment

pytestmark = pytest.mark.cluster

DEADLINE = 100.0  # seconds from the first start
MAX_EPOCHS = 12
SCRIPT = f"""
import sys, time
import optuna
from hypersched_nb import Experiment
from hypersched_nb.testing.trainables import TinyRegression

if __name__ == "__main__":
    folder, action = sys.argv[1], sys.argv[2]
    if action == "start":
        space = {{"lr": optuna.distributions.FloatDistribution(1e-3, 0.5, log=True),
                  "sleep": 0.25, "state_mb": 24}}
        exp = Experiment(TinyRegression, space, metric="loss", mode="min", deadline={DEADLINE!r},
                         max_epochs={MAX_EPOCHS}, policy="hypersched", cluster=2, seed=0,
                         checkpoint_dir=folder)
        exp.start()
    else:
        exp = Experiment.resume(folder)
    exp.wait()
    print("ended", exp.statistics().status, time.time(), flush=True)
"""


def records(folder) -> list[dict]:
    journal = folder / "journal.jsonl"
    out = []
    for line in journal.read_text().splitlines() if journal.exists() else ():
        try:
            out.append(json.loads(line))
        except ValueError:  # a record being written
            pass
    return out


def since_last_resume(folder) -> list[dict]:
    rs = records(folder)
    last = max((i for i, r in enumerate(rs) if r.get("k") == "resumed"), default=-1)
    return rs[last + 1 :]


def resumed_count(folder) -> int:
    return sum(r.get("k") == "resumed" for r in records(folder))


def results_in(rs) -> int:
    return sum(e.get("type") == "Result" for r in rs for e in r.get("events", ()))


def writing_a_checkpoint(folder) -> bool:
    return any(folder.glob("trial-*/epoch-*.pt.tmp"))


def resizing(folder) -> bool:
    return any(r.get("action") == "Resize" for r in since_last_resume(folder))


def run(script, folder, action, kill_when=None, *, at_least: int = 0) -> str:
    """Run the search's script; with ``kill_when``, SIGKILL its process group once, this
    run having started or gone live again, ``kill_when(folder)`` holds and the journal
    holds ``at_least`` results since, or after 40 results whatever happens."""
    proc = subprocess.Popen([sys.executable, str(script), str(folder), action],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            start_new_session=True)  # fmt: skip
    try:
        if kill_when is None:
            return proc.communicate(timeout=DEADLINE + 150)[0]
        resumes = resumed_count(folder) + (action == "resume")
        while proc.poll() is None:
            if resumed_count(folder) < resumes:  # still replaying its journal
                time.sleep(0.01)
                continue
            done = results_in(since_last_resume(folder))
            if done >= at_least + 40 or (done >= at_least and kill_when(folder)):
                break
            time.sleep(0.01)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        return ""
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def checkpoints_on_disk(folder, opened) -> dict[int, int]:
    """Each unfinished trial's latest checkpoint on disk within the epochs it reported."""
    out = {}
    for row in opened.statistics().trials:
        if row.state in ("RUNNING", "PAUSED"):
            sidecars = (folder / f"trial-{row.trial_id:05d}").glob("epoch-*.pt.json")
            epochs = [json.loads(p.read_text())["epoch"] for p in sidecars]
            out[row.trial_id] = max([e for e in epochs if e <= row.epochs], default=0)
    return out


def resumed_from(folder) -> dict[int, int]:
    last = [r for r in records(folder) if r.get("k") == "resumed"][-1]
    return {int(tid): epoch for tid, epoch in last["from"].items()}


def configs_of(exp) -> list[tuple]:
    frame = exp.results()
    return [tuple(sorted(row.items())) for row in frame.filter(like="config_").to_dict("records")]


def test_a_resumed_search_is_the_same_search_at_every_kill(tmp_path):
    script, folder = tmp_path / "search.py", tmp_path / "run"
    script.write_text(SCRIPT)
    rng = random.Random(7)
    moments = [
        ("start", writing_a_checkpoint, 6),
        ("resume", resizing, 4),
        ("resume", lambda folder: True, rng.randint(3, 20)),  # a random moment
    ]
    reported: dict[int, list] = {}
    expected: dict[int, int] | None = None
    for action, kill_when, at_least in moments:
        run(script, folder, action, kill_when, at_least=at_least)
        if expected is not None:  # every unfinished trial went on from its own checkpoint
            assert resumed_from(folder) == expected
        opened = Experiment.open(folder)
        assert opened.statistics().status == "interrupted"
        configs = configs_of(opened)
        assert len(set(configs)) == len(configs)  # no configuration offered twice
        ids = [row.trial_id for row in opened.statistics().trials]
        assert ids == list(range(len(ids)))  # trial ids went on where they were
        now = {row.trial_id: list(row.metrics) for row in opened.statistics().trials}
        for tid, metrics in reported.items():  # nothing reported before a kill is lost
            assert now[tid][: len(metrics)] == metrics
        reported, expected = now, checkpoints_on_disk(folder, opened)
    out = run(script, folder, "resume")
    assert resumed_from(folder) == expected
    status, ended_at = out.split()[-2:]
    assert status == "finished"
    last = Experiment.open(folder)
    snap = last.statistics()
    assert snap.status == "finished" and snap.deadline == DEADLINE
    configs = configs_of(last)
    assert len(set(configs)) == len(configs) and len(configs) > len(reported)
    for tid, metrics in reported.items():
        assert [row.metrics for row in snap.trials][tid][: len(metrics)] == tuple(metrics)
    assert float(ended_at) - snap.started.timestamp() <= DEADLINE + 15  # its first deadline
