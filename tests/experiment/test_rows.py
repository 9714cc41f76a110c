"""A snapshot's rows: the same row object while its trial has not changed, a new one as
soon as anything a row shows has."""

import math

from hypersched_nb.core.trial import Trial, TrialState
from hypersched_nb.experiment._rows import Rows, row


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
    first = rows.of([t], {0: 1})
    assert rows.of([t], {0: 1})[0] is first[0]


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
    before = rows.of([t], {0: 1})[0]
    for change in changes:
        change()
        now = rows.of([t], {0: 1})[0]
        assert now is not before and now == row(t, 1)
        before = now
    assert rows.of([t], {0: 2})[0].peak_workers == 2  # the peak is part of the row too


def test_a_result_replaced_after_a_restart_is_seen():
    rows, t = Rows(), _trial()
    _report(t, 0.5)
    _report(t, 0.3)
    rows.of([t], {})
    t.metrics[-1], t.scores[-1] = 0.35, -0.35  # the same epoch, trained again
    t.best_score = -0.35
    assert rows.of([t], {})[0].last == 0.35 and rows.of([t], {})[0].best == 0.35


def test_rows_follow_the_trials_order_and_a_new_trial():
    rows = Rows()
    a, b = _trial(0), _trial(1)
    assert [r.trial_id for r in rows.of([a], {})] == [0]
    assert [r.trial_id for r in rows.of([a, b], {})] == [0, 1]
    assert math.isnan(rows.of([a, b], {})[1].best)
