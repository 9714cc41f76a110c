"""A search outlives its kernel: killed with SIGKILL at three moments, it resumes from its
journal and checkpoints each time (the last time from a journal whose last record was torn),
keeps every epoch reported before each kill, and ends by the deadline it was first given."""

import json
import os
import random
import signal
import subprocess
import sys
import time
from datetime import datetime

import pytest

from hypersched_nb import Experiment

pytestmark = pytest.mark.cluster

DEADLINE = 100.0  # seconds from the first start
MAX_EPOCHS = 8
SCRIPT = f"""
import sys, time
from hypersched_nb import Experiment
from hypersched_nb.train.examples import DigitsCNN

if __name__ == "__main__":
    folder, action = sys.argv[1], sys.argv[2]
    if action == "start":
        exp = Experiment(DigitsCNN, DigitsCNN.space(), metric="val_acc", deadline={DEADLINE!r},
                         max_epochs={MAX_EPOCHS}, policy="asha", cluster=2, seed=0, checkpoint_dir=folder)
        exp.start()
    else:
        exp = Experiment.resume(folder)
    exp.wait()
    print("ended", exp.statistics().status, time.time(), flush=True)
"""


def results_in(folder) -> int:
    journal = folder / "journal.jsonl"
    return journal.read_text().count('"type":"Result"') if journal.exists() else 0


def resumable(folder) -> bool:
    """Whether a trial that has not reached its last epoch has a checkpoint on disk within
    the epochs its journal reports (a kill now resumes it from there, not from epoch 0)."""
    reported: dict[int, int] = {}
    stopped: set[int] = set()
    journal = folder / "journal.jsonl"
    for line in journal.read_text().splitlines() if journal.exists() else ():
        try:
            record = json.loads(line)
        except ValueError:  # a record being written
            continue
        if record.get("k") == "decision" and record.get("action") == "Stop":
            stopped.add(record["trial"])
        for e in record.get("events", ()):
            if e.get("type") == "Result":
                reported[e["trial_id"]] = max(reported.get(e["trial_id"], 0), e["epoch"])
    for tid, epochs in reported.items():
        if epochs < MAX_EPOCHS and tid not in stopped:
            written = (folder / f"trial-{tid:05d}").glob("epoch-*.pt")
            if any(int(p.stem.split("-")[1]) <= epochs for p in written):
                return True
    return False


def run(script, folder, action, *, kill_at_results: int | None) -> str:
    """Run the search's script; with ``kill_at_results``, SIGKILL it (and its cluster) once
    its journal holds that many results and a trial could resume from a checkpoint (or 16
    more: whether one can is a matter of timing)."""
    proc = subprocess.Popen([sys.executable, str(script), str(folder), action],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            start_new_session=True)  # fmt: skip
    try:
        if kill_at_results is None:
            return proc.communicate(timeout=DEADLINE + 120)[0]
        while proc.poll() is None:
            done = results_in(folder)
            if done >= kill_at_results + 16 or done >= kill_at_results and resumable(folder):
                break
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        return ""
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def checkpoints_to_resume_from(folder, opened) -> dict[int, int]:
    """Each unfinished trial's latest checkpoint on disk within the epochs it reported."""
    out = {}
    for row in opened.statistics().trials:
        if row.state in ("RUNNING", "PAUSED"):
            sidecars = (folder / f"trial-{row.trial_id:05d}").glob("epoch-*.pt.json")
            epochs = [json.loads(p.read_text())["epoch"] for p in sidecars]
            out[row.trial_id] = max([e for e in epochs if e <= row.epochs], default=0)
    return out


def resumed_from(folder) -> dict[int, int]:
    """What the last resume took each unfinished trial up from (its journal's record)."""
    last = [r for r in records(folder) if r.get("k") == "resumed"][-1]
    return {int(tid): epoch for tid, epoch in last["from"].items()}


def test_a_search_killed_three_times_resumes_each_time_and_ends_by_its_deadline(tmp_path):
    script, folder = tmp_path / "search.py", tmp_path / "run"
    script.write_text(SCRIPT)
    reported: dict[int, tuple] = {}  # trial -> its metrics, as known before the last kill
    expected: dict[int, int] | None = None  # trial -> the checkpoint to resume it from
    from_checkpoints = 0  # resumes expected from a checkpoint (not from epoch 0)
    for action in ("start", "resume", "resume"):
        run(script, folder, action, kill_at_results=results_in(folder) + 8)
        if expected is not None:  # no trial with a checkpoint trained again from epoch 0
            assert resumed_from(folder) == expected
        opened = Experiment.open(folder)
        assert opened.statistics().status == "interrupted"
        now = {row.trial_id: row.metrics for row in opened.statistics().trials}
        for tid, metrics in reported.items():  # nothing reported before a kill is lost
            assert now[tid][: len(metrics)] == metrics
        reported, expected = now, checkpoints_to_resume_from(folder, opened)
        from_checkpoints += sum(epoch > 0 for epoch in expected.values())
    assert from_checkpoints > 0  # the check of what resumes from where checks something
    journal = folder / "journal.jsonl"  # and the last kill tore the journal's last record
    whole = journal.read_bytes()
    journal.write_bytes(whole[: len(whole) - len(whole.splitlines(keepends=True)[-1]) // 2])
    opened = Experiment.open(folder)
    reported = {row.trial_id: row.metrics for row in opened.statistics().trials}
    expected = checkpoints_to_resume_from(folder, opened)
    out = run(script, folder, "resume", kill_at_results=None)
    assert resumed_from(folder) == expected
    status, ended = out.split()[-2:]
    last = Experiment.open(folder)
    assert status == "finished" and last.statistics().status == "finished"
    started = last.statistics().started
    assert float(ended) - started.timestamp() <= DEADLINE + 15  # its first deadline held
    final = {row.trial_id: row.metrics for row in last.statistics().trials}
    for tid, metrics in reported.items():
        assert final[tid][: len(metrics)] == metrics
    assert isinstance(started, datetime) and len(final) > len(reported) - 1


# ------------------------------------------------------------------ the same search, exactly
# Killed while a checkpoint is being written, around a resize and at a random moment, and
# resumed each time (a resume of a resume of a resume): the search never offers a
# configuration twice, its trial ids go on, it loses no epoch reported before a kill, takes
# every unfinished trial on from its own checkpoint, and ends by its first deadline.

EXACT_SCRIPT = f"""
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
                         max_epochs=12, policy="hypersched", cluster=2, seed=0,
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


def results_among(rs) -> int:
    return sum(e.get("type") == "Result" for r in rs for e in r.get("events", ()))


def writing_a_checkpoint(folder) -> bool:
    return any(folder.glob("trial-*/epoch-*.pt.tmp"))


def resizing(folder) -> bool:
    return any(r.get("action") == "Resize" for r in since_last_resume(folder))


def run_until(script, folder, action, kill_when=None, *, at_least: int = 0) -> str:
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
            done = results_among(since_last_resume(folder))
            if done >= at_least + 40 or (done >= at_least and kill_when(folder)):
                break
            time.sleep(0.01)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        return ""
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def configs_of(exp) -> list[tuple]:
    frame = exp.results()
    return [tuple(sorted(row.items())) for row in frame.filter(like="config_").to_dict("records")]


def test_a_resumed_search_is_the_same_search_at_every_kill(tmp_path):
    script, folder = tmp_path / "search.py", tmp_path / "run"
    script.write_text(EXACT_SCRIPT)
    rng = random.Random(7)
    moments = [
        ("start", writing_a_checkpoint, 6),
        ("resume", resizing, 4),
        ("resume", lambda folder: True, rng.randint(3, 20)),  # a random moment
    ]
    reported: dict[int, list] = {}
    expected: dict[int, int] | None = None
    for action, kill_when, at_least in moments:
        run_until(script, folder, action, kill_when, at_least=at_least)
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
        reported, expected = now, checkpoints_to_resume_from(folder, opened)
    out = run_until(script, folder, "resume")
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
