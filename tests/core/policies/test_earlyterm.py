"""EarlyTerm (Domhan et al.): stop when P(y(R) beats the best seen) < δ."""

from __future__ import annotations

import numpy as np
import pytest

from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.decisions import Decision, Verdict
from hypersched_nb.core.events import Result
from hypersched_nb.core.policies import create
from hypersched_nb.core.policies._earlyterm import EarlyTerm
from hypersched_nb.core.trial import Trial
from hypersched_nb.errors import ConfigError
from hypersched_nb.experiment.simulate import SimSettings, simulate
from hypersched_nb.testing.pytest_policies import trace_from_curves

CONTINUE, STOP = Decision.CONTINUE, Decision.STOP
X = np.arange(1, 9)


def trial(tid: int, metrics, mode: str = "max") -> Trial:
    t = Trial(tid, {})
    t.metrics = [float(m) for m in metrics]
    t.scores = [m if mode == "max" else -m for m in t.metrics]
    t.epochs, t.best_score = len(metrics), max(t.scores)
    return t


def decide(et: EarlyTerm, t: Trial, ctx: PolicyContext) -> Verdict:
    """Feed the trial's epochs to the policy; answer the last verdict."""
    for e, m in enumerate(t.metrics, start=1):
        verdict = et.on_trial_result(t, Result(t.trial_id, e, m, float(e), 1.0, 1), ctx)
    return verdict


def test_a_levelled_off_trial_far_below_the_best_stops():
    et = EarlyTerm(max_epochs=40, boundary=8, seed=0)
    trials = {0: trial(0, 0.9 - 0.3 * X**-1.0), 1: trial(1, 0.4 - 0.2 * X**-1.5)}
    ctx = PolicyContext.for_test(trials=trials)
    # levelling off near 0.4 while another reached 0.86: no chance of beating it by R = 40
    verdict = decide(et, trials[1], ctx)
    assert verdict.decision is STOP and "unlikely to beat the best" in verdict.reason


def test_a_trial_on_course_to_beat_the_best_goes_on():
    et = EarlyTerm(max_epochs=40, boundary=8, seed=0)
    trials = {0: trial(0, 0.6 - 0.1 * X**-1.0), 1: trial(1, 0.95 - 0.6 * X**-0.6)}
    ctx = PolicyContext.for_test(trials=trials)
    # at 0.66 and rising steeply against a best of 0.59
    assert decide(et, trials[1], ctx).decision is CONTINUE


def test_the_leader_is_compared_with_the_others_only():
    et = EarlyTerm(max_epochs=40, boundary=8, seed=0)
    trials = {0: trial(0, [0.8] * 8), 1: trial(1, 0.5 - 0.1 * X**-1.0)}
    ctx = PolicyContext.for_test(trials=trials)
    # flat at 0.8: it cannot beat its own best, but it need not
    assert decide(et, trials[0], ctx).decision is CONTINUE


def test_alone_there_is_nothing_to_beat():
    et = EarlyTerm(max_epochs=40, boundary=8, seed=0)
    trials = {0: trial(0, [0.1] * 8)}
    assert decide(et, trials[0], PolicyContext.for_test(trials=trials)).decision is CONTINUE


def test_a_stop_in_min_mode():
    et = EarlyTerm(max_epochs=40, boundary=8, seed=0)
    trials = {0: trial(0, 0.1 + 0.5 * X**-1.0, "min"), 1: trial(1, 0.9 + 0.3 * X**-1.5, "min")}
    ctx = PolicyContext.for_test(trials=trials, mode="min")
    # a loss levelling off at 0.9 will not get below 0.16
    assert decide(et, trials[1], ctx).decision is STOP
    # while the leader goes on
    assert decide(et, trials[0], ctx).decision is CONTINUE


def test_only_boundaries_are_judged():
    et = EarlyTerm(max_epochs=40, boundary=8, seed=0)
    trials = {0: trial(0, [0.9] * 7), 1: trial(1, [0.1] * 7)}
    # epoch 7 is before the first boundary
    assert decide(et, trials[1], PolicyContext.for_test(trials=trials)).decision is CONTINUE


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"delta": 1.5}, "`delta` is 1.5"),
        ({"boundary": 0}, "`boundary` is 0"),
        ({"bounds": "unit"}, "`bounds` is 'unit'"),
    ],
)
def test_bad_parameters_are_refused_in_one_line(kwargs, message):
    with pytest.raises(ConfigError) as info:
        EarlyTerm(**kwargs)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_earlyterm_end_to_end_on_a_small_trace():
    x = np.arange(1, 21)
    tops = [0.5, 0.9, 0.45, 0.4, 0.55, 0.85, 0.35, 0.5]
    curves = [top * (1 - np.exp(-x / 3)) for top in tops]
    trace = trace_from_curves(curves, seconds=5.0, startup=1.0)
    settings = SimSettings(workers=2, configs=8, max_epochs=20)
    row = simulate(trace, "earlyterm", 2000.0, 0, settings, journal=True)
    journal = row.outcome.journal
    stopped = [e for e in journal if e["action"] == "Stop" and e["reason"].startswith("unlikely")]
    # the best curve trains to its end, and hopeless ones are cut short
    assert row.record.best == pytest.approx(max(c[-1] for c in curves)) and stopped
    # which saves worker time against training all eight to the end
    full = simulate(trace, "random", 2000.0, 0, settings)
    assert row.record.worker_seconds_busy < full.record.worker_seconds_busy
    assert create("earlyterm").name == "earlyterm"
