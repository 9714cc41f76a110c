"""ExperimentSnapshot: the frozen picture every view reads."""

import dataclasses
import math
from datetime import datetime

import numpy as np
import pytest

from hypersched_nb.experiment.snapshot import Allocation, Best, ExperimentSnapshot, TrialRow


def row(tid, state, workers=0, metrics=(0.5,)):
    best = max(metrics) if metrics else math.nan
    return TrialRow(tid, {"lr": 0.1}, state, len(metrics), best, metrics[-1] if metrics else math.nan,
                    workers, max(workers, 1), 0.0, None, "", tuple(metrics))  # fmt: skip


def snap(**kw):
    base = dict(
        time=30.0, deadline=120.0, status="running", metric="val_acc", mode="max", policy="asha",
        describe="asha: rungs 1, 4, 16", workers=4,
        trials=(row(0, "RUNNING", 3), row(1, "RUNNING", 1), row(2, "PAUSED"), row(3, "TERMINATED"), row(4, "ERRORED")),
        allocation=(Allocation(0.0, 0, 1), Allocation(0.0, 1, 1), Allocation(10.0, 2, 1), Allocation(20.0, 2, 0), Allocation(20.0, 0, 3)),
        capacity=((0.0, 4),), best=Best(0, {"lr": 0.1}, 0.93, 7),
    )  # fmt: skip
    return ExperimentSnapshot(**(base | kw))


def test_counts_and_the_progress_line():
    s = snap()
    assert s.counts == {"PENDING": 0, "RUNNING": 2, "PAUSED": 1, "TERMINATED": 1, "ERRORED": 1}
    assert s.stopped == 2 and s.time_left == 90.0
    assert s.progress_line() == (
        "1m 30s left at 30s | running 2 paused 1 stopped 2 | workers #0:3 #1:1 | best val_acc 0.93 (#0, epoch 7)"
    )


def test_a_finished_search_says_done():
    s = snap(status="finished", trials=(row(0, "TERMINATED"),), best=None)
    assert s.done and s.progress_line().startswith("done |")
    assert s.progress_line().endswith("workers - | best val_acc -")


def test_the_summary_says_what_happened_and_the_policy_line_only_while_it_runs():
    text = str(snap())
    assert text.splitlines()[0] == "asha search, running · deadline at 120s, 4 workers"
    assert text.endswith("policy at 30s: asha: rungs 1, 4, 16")  # its words dated, as kept
    reached = str(snap(status="finished", time=120.0, describe="asha · deadline reached"))
    assert reached.endswith("\npolicy: asha · deadline reached")  # true whenever it is read
    failed = str(snap(status="failed", error="Traceback ...\nRuntimeError: boom"))
    assert failed.splitlines()[0] == (
        "asha search, failed: RuntimeError: boom · deadline at 120s, 4 workers"
    )
    assert "policy" not in failed and "left" not in failed


def test_the_workers_dask_paused_are_said_beside_the_clusters_size():
    assert snap().cluster_text() == "4 workers"
    paused = snap(paused_workers=("1", "3"))
    assert paused.cluster_text() == "4 workers, 2 paused by Dask (memory)"
    first = str(paused).splitlines()[0]
    assert first.endswith("deadline at 120s, 4 workers, 2 paused by Dask (memory)")


LIVE = datetime(2026, 3, 2, 14, 0, 0)


@pytest.mark.parametrize(
    "kw, words",
    [
        ({}, "running"),
        ({"status": "finished", "time": 120.0}, "finished"),
        ({"status": "stopping", "stopped_at": 125.0, "started": LIVE}, "stopped by you at 14:02"),
        ({"status": "finished", "stopped_at": 125.0, "started": LIVE}, "stopped by you at 14:02"),
        ({"status": "finished", "stopped_at": 50.0}, "stopped by you at 50s"),
        (
            {"status": "failing", "error": "SearchFailed: the first 3 trials all failed"},
            "failed: the first 3 trials all failed",
        ),
        (
            {"status": "finished", "time": 120.0, "resumed_at": 300.0, "started": LIVE},
            "interrupted, resumed at 14:05; finished",
        ),
    ],
)
def test_the_status_words_say_what_happened(kw, words):
    assert snap(**kw).status_text() == words


@pytest.mark.parametrize(
    "kw",
    [
        {"status": "stopping", "stopped_at": 30.0},
        {"status": "finished", "stopped_at": 30.0},
        {"status": "failing", "error": "SearchFailed: boom"},
        {"status": "finished"},  # ran out of trials at 30 s, before its deadline
    ],
)
def test_once_the_search_is_over_nothing_says_it_is_still_going(kw):
    s = snap(**kw)
    assert not s.going and not s.policy_holds
    assert "left" not in str(s) and s.left_text() == ""


def test_a_search_that_reached_its_deadline_keeps_its_policy_line():
    assert snap(status="finished", time=120.0).policy_holds


def test_the_deadline_reads_as_a_wall_time_on_a_live_search():
    live = snap(started=datetime(2026, 3, 2, 16, 0, 0))
    assert live.deadline_text() == "16:02:00"
    assert live.left_text() == "1m 30s left at 16:00:30"
    assert live.wall(60.0) == datetime(2026, 3, 2, 16, 1, 0)
    assert snap().deadline_text() == "at 120s"  # a virtual clock has no wall time
    assert snap().left_text() == "1m 30s left at 30s"


def test_what_is_read_later_is_dated_and_never_says_the_search_runs_now():
    live = snap(started=datetime(2026, 3, 2, 16, 0, 0))  # 30 s in, deadline at 120 s
    assert live.standing_text() == (
        "as it stood at 16:00:30: running, 1m 30s before its deadline 16:02:00"
    )
    assert live.progress_line().startswith("1m 30s left at 16:00:30 | ")
    assert str(live).splitlines()[1].startswith("1m 30s left at 16:00:30 | ")  # the picture's
    stopping = snap(status="stopping", stopped_at=30.0)
    assert stopping.standing_text() == "as it stood at 30s: stopped by you at 30s · deadline 120s"
    assert snap(status="finished", time=120.0).standing_text() == "finished · deadline 120s"


def test_allocation_series_is_a_common_step_grid():
    times, series = snap().allocation_series()
    assert times == [0.0, 10.0, 20.0, 30.0]  # every change, and now
    assert series == {0: [1, 1, 3, 3], 1: [1, 1, 1, 1], 2: [0, 1, 0, 0]}


def test_a_snapshot_never_changes():
    with pytest.raises(dataclasses.FrozenInstanceError):
        snap().deadline = 5.0


def test_the_frame_has_a_row_per_trial_and_a_column_per_configuration_key():
    odd = dataclasses.replace(row(5, "RUNNING"), config={"lr": 0.2, "wd": 1e-4})
    df = snap(trials=(row(0, "RUNNING", 3), odd)).frame()
    assert list(df.index) == [0, 5] and df.loc[5, "config_wd"] == 1e-4
    assert math.isnan(df.loc[0, "config_wd"])  # a key one configuration lacks: NaN there
    assert list(df.columns[:3]) == ["state", "epochs", "best"]
    assert snap(trials=()).frame().empty


COLUMNS = (
    "trial_id", "state", "epochs", "best", "last", "workers", "peak_workers", "started_at",
    "stopped_at", "reason", "over", "points",
)  # fmt: skip


def _same_numbers(a, b) -> bool:
    return np.array_equal(a, b, equal_nan=True)


def test_a_live_search_keeps_the_columns_its_rows_would_give():
    from hypersched_nb import Experiment
    from hypersched_nb.experiment.columns import TrialColumns
    from hypersched_nb.testing.traces import synthetic_trace

    trace = synthetic_trace(n=60, epochs=8)
    exp = Experiment.replay(trace, policy="hypersched", deadline=200, workers=4, configs=60)
    seen = []
    exp.start()
    while not exp.done:
        seen.append(exp.statistics())
    seen.append(exp.statistics())
    for s in seen[:: max(1, len(seen) // 10)] + seen[-1:]:
        kept, read = s.columns, TrialColumns.of(s.trials)
        for name in COLUMNS:
            same = np.array_equal if name in ("state", "reason") else _same_numbers
            assert same(getattr(kept, name), getattr(read, name)), name
        assert kept.config.keys() == read.config.keys()
        assert s.counts == snap(trials=s.trials).counts


def test_a_snapshot_given_other_trials_reads_its_columns_from_them():
    before = snap()
    after = dataclasses.replace(before, trials=before.trials[:2])
    assert len(after.columns) == 2 and after.columns.rows is after.trials
    assert after.counts["RUNNING"] == 2 and after.counts["PAUSED"] == 0  # counted anew
    assert dataclasses.replace(before, time=40.0).columns is before.columns  # the same rows


def test_the_frame_keeps_its_types():
    df = snap().frame()
    assert df["epochs"].dtype == np.int64 and df["best"].dtype == float
    assert df["started_at"].dtype == float  # NaN where a trial has not started
    assert df["state"].tolist() == ["RUNNING", "RUNNING", "PAUSED", "TERMINATED", "ERRORED"]
    assert df["config_lr"].dtype == float
