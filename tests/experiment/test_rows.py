"""A snapshot's rows: the same row object while its trial has not changed, a new one as
soon as anything a row shows has."""

import math

from hypersched_nb.core.trial import Trial, TrialState
from hypersched_nb.experiment._rows import Rows, row


def _rows(rows: Rows, trials, peak) -> tuple:
    """The rows ``rows`` hands out for ``trials`` (without their columns)."""
    return rows.of(trials, peak)[0]


def _trial(tid: int = 0) -> Trial:
    t = Trial(tid, {"lr": 0.1})
    t.state, t.workers, t.started_at = TrialState.RUNNING, 1, 0.0
    return t


def _report(t: Trial, metric: float) -> None:
    t.metrics.append(metric)
    t.scores.append(-metric)
    t.best_score = max(t.best_score, -metric)
    t.epochs += 1


def test_an_unchanged_trial_keeps_its_row():
    rows, t = Rows(), _trial()
    _report(t, 0.5)
    first = _rows(rows, [t], {0: 1})
    assert _rows(rows, [t], {0: 1})[0] is first[0]


def test_each_change_a_row_shows_builds_a_new_row():
    rows, t = Rows(), _trial()
    changes = [
        lambda: _report(t, 0.4),
        lambda: setattr(t, "state", TrialState.PAUSED),
        lambda: setattr(t, "workers", 0),
        lambda: setattr(t, "reason", "paused at rung 1"),
        lambda: setattr(t, "stopped_at", 3.0),
        lambda: setattr(t, "starts", 2),
        lambda: setattr(t, "error", "ValueError: nan"),
    ]
    before = _rows(rows, [t], {0: 1})[0]
    for change in changes:
        change()
        now = _rows(rows, [t], {0: 1})[0]
        assert now is not before and now == row(t, 1)
        before = now
    assert _rows(rows, [t], {0: 2})[0].peak_workers == 2  # the peak is part of the row too


def test_a_result_replaced_after_a_restart_is_seen():
    rows, t = Rows(), _trial()
    _report(t, 0.5)
    _report(t, 0.3)
    _rows(rows, [t], {})
    t.metrics[-1], t.scores[-1] = 0.35, -0.35  # the same epoch, trained again
    t.best_score = -0.35
    assert _rows(rows, [t], {})[0].last == 0.35 and _rows(rows, [t], {})[0].best == 0.35


def test_rows_follow_the_trials_order_and_a_new_trial():
    rows = Rows()
    a, b = _trial(0), _trial(1)
    assert [r.trial_id for r in _rows(rows, [a], {})] == [0]
    assert [r.trial_id for r in _rows(rows, [a, b], {})] == [0, 1]
    assert math.isnan(_rows(rows, [a, b], {})[1].best)


def test_the_columns_are_those_of_the_rows_handed_out_written_only_where_a_row_was_built():
    rows, trials = Rows(), [_trial(i) for i in range(3)]
    trials[2].config = {"lr": 0.2, "wd": 1e-4}
    _report(trials[0], 0.5)
    first, columns = rows.of(trials, {0: 2})
    assert columns.rows is first and list(columns.trial_id) == [0, 1, 2]
    assert columns.best[0] == 0.5 and math.isnan(columns.best[1])
    assert list(columns.peak_workers) == [2, 0, 0]
    assert math.isnan(columns.config["wd"][0]) and columns.config["wd"][2] == 1e-4
    trials[1].state, trials[1].reason = TrialState.TERMINATED, "stopped at rung 1"
    later, columns = rows.of([*trials, _trial(3)], {0: 2})
    assert list(columns.state) == ["RUNNING", "TERMINATED", "RUNNING", "RUNNING"]
    assert list(columns.over) == [False, True, False, False]
    assert columns.reason[1] == "stopped at rung 1" and len(columns) == 4
    assert not columns.best.flags.writeable  # a snapshot's columns never change


def test_columns_kept_over_many_changes_are_the_columns_read_from_the_rows():
    import random

    import numpy as np

    from hypersched_nb.experiment.columns import TrialColumns

    rng, rows, trials, peak = random.Random(0), Rows(), [], {}
    for step in range(60):
        if rng.random() < 0.3 or not trials:  # a new trial, sometimes with a key of its own
            trials.append(_trial(len(trials)))
            if rng.random() < 0.3:
                trials[-1].config = {"lr": 0.1, f"k{step % 3}": step}
        t = rng.choice(trials)
        change = rng.randrange(3)
        if t.state in (TrialState.TERMINATED, TrialState.ERRORED):
            pass  # a trial over never changes again
        elif change == 0:
            _report(t, rng.random())
        elif change == 1:
            t.state = rng.choice(list(TrialState))
        else:
            peak[t.trial_id] = rng.randint(1, 4)
        handed, kept = rows.of(trials, peak)
        read = TrialColumns.of(handed)
        for name in ("trial_id", "epochs", "best", "last", "workers", "peak_workers", "points"):
            assert np.array_equal(getattr(kept, name), getattr(read, name), equal_nan=True)
        assert list(kept.state) == list(read.state) and list(kept.over) == list(read.over)
        assert list(kept.config) == list(read.config)  # the keys, in the order first seen
        for key, values in kept.config.items():
            assert str(values.tolist()) == str(read.config[key].tolist())  # NaN where missing
