"""Bandit (TuPAQ action elimination): best × (1 + ε) must beat the global best."""

from __future__ import annotations

import pytest

from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.decisions import Decision, Verdict
from hypersched_nb.core.events import Result
from hypersched_nb.core.policies import create
from hypersched_nb.core.policies._bandit import Bandit, survives
from hypersched_nb.core.trial import Trial
from hypersched_nb.errors import ConfigError
from hypersched_nb.experiment.simulate import SimSettings, simulate
from hypersched_nb.testing.pytest_policies import trace_from_curves

CONTINUE, STOP = Decision.CONTINUE, Decision.STOP


def trial(tid: int, metrics, mode: str = "max") -> Trial:
    t = Trial(tid, {})
    t.metrics = list(metrics)
    t.scores = [m if mode == "max" else -m for m in metrics]
    t.epochs, t.best_score = len(metrics), max(t.scores)
    return t


def decide(bandit: Bandit, t: Trial, ctx: PolicyContext) -> Verdict:
    return bandit.on_trial_result(t, Result(t.trial_id, t.epochs, t.metrics[-1], 1.0, 1.0, 1), ctx)


def test_an_elimination_in_max_mode():
    bandit = Bandit(max_epochs=20, boundary=2)
    trials = {0: trial(0, [0.6, 0.8]), 1: trial(1, [0.4, 0.5]), 2: trial(2, [0.5, 0.55])}
    ctx = PolicyContext.for_test(trials=trials)
    # 0.5 × 1.5 = 0.75 does not beat the global best 0.8: eliminated
    verdict = decide(bandit, trials[1], ctx)
    assert verdict.decision is STOP and "eliminated" in verdict.reason
    # 0.55 × 1.5 = 0.825 > 0.8: it stays
    assert decide(bandit, trials[2], ctx).decision is CONTINUE
    # the leader always stays
    assert decide(bandit, trials[0], ctx).decision is CONTINUE


def test_an_elimination_in_min_mode():
    bandit = Bandit(max_epochs=20, boundary=2)
    trials = {
        0: trial(0, [0.3, 0.2], "min"),
        1: trial(1, [0.4, 0.33], "min"),
        2: trial(2, [0.5, 0.29], "min"),
    }
    ctx = PolicyContext.for_test(trials=trials, mode="min")
    # best loss 0.33 / 1.5 = 0.22 is not below the best loss 0.2: eliminated
    assert decide(bandit, trials[1], ctx).decision is STOP
    # 0.29 / 1.5 = 0.193 < 0.2: within a factor 1.5 of the best, it stays
    assert decide(bandit, trials[2], ctx).decision is CONTINUE
    # the leader stays
    assert decide(bandit, trials[0], ctx).decision is CONTINUE


def test_the_rule_itself():
    # max mode: x (1 + ε) > best
    assert survives(0.6, 0.8, 0.5, "max") and not survives(0.5, 0.8, 0.5, "max")
    # min mode: x / (1 + ε) < best
    assert survives(0.29, 0.2, 0.5, "min") and not survives(0.31, 0.2, 0.5, "min")
    # ε = 0: only a tie-breaker-free win survives
    assert not survives(0.8, 0.8, 0.0, "max")


def test_only_boundaries_are_judged():
    bandit = Bandit(max_epochs=20, boundary=2)
    trials = {0: trial(0, [0.9]), 1: trial(1, [0.1])}
    ctx = PolicyContext.for_test(trials=trials)
    # epoch 1 is no boundary: however far behind, it goes on
    assert decide(bandit, trials[1], ctx).decision is CONTINUE


def test_a_leader_at_zero_is_not_stopped():
    bandit = Bandit(max_epochs=20, boundary=1)
    trials = {0: trial(0, [0.0])}
    # 0 × 1.5 > 0 is false, but nobody is better
    assert decide(bandit, trials[0], PolicyContext.for_test(trials=trials)).decision is CONTINUE


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"epsilon": -0.1}, "`epsilon` is -0.1"),
        ({"boundary": 0}, "`boundary` is 0"),
        ({"min_epochs": 0}, "`min_epochs` is 0"),
    ],
)
def test_bad_parameters_are_refused_in_one_line(kwargs, message):
    with pytest.raises(ConfigError) as info:
        Bandit(**kwargs)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_bandit_end_to_end_on_a_small_trace():
    # two good curves among six poor ones; boundary every 2 of 10 epochs
    curves = [[0.1 * (1 + e) * (0.9 if i in (2, 5) else 0.3) for e in range(10)] for i in range(8)]
    trace = trace_from_curves(curves, seconds=5.0)
    row = simulate(
        trace, "bandit", 1000.0, 0, SimSettings(workers=2, configs=8, max_epochs=10), journal=True
    )
    journal = row.outcome.journal
    stopped = {
        e["trial"]
        for e in journal
        if e["action"] == "Stop" and e["reason"].startswith("eliminated")
    }
    # the best curve is found, and poor ones are eliminated on the way
    assert row.record.best == pytest.approx(0.9) and stopped
    # a bandit never pauses
    assert not any(e["action"] == "Pause" for e in journal)
    assert create("bandit").name == "bandit"
