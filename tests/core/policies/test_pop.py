"""POP (HyperDrive): the slot threshold by hand, the three classes, suspend and resume."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.decisions import Decision, Verdict
from hypersched_nb.core.events import Result
from hypersched_nb.core.policies import create
from hypersched_nb.core.policies._pop import POP
from hypersched_nb.core.trial import Trial, TrialState
from hypersched_nb.errors import ConfigError
from hypersched_nb.experiment.simulate import SimSettings, simulate
from hypersched_nb.testing.pytest_policies import trace_from_curves

CONTINUE, PAUSE, STOP = Decision.CONTINUE, Decision.PAUSE, Decision.STOP


def trial(tid: int, metrics, state=TrialState.RUNNING, mode: str = "max") -> Trial:
    """A trial record as the driver would have left it after ``metrics``."""
    t = Trial(tid, {})
    t.state, t.workers, t.starts = state, int(state is TrialState.RUNNING), 1
    t.started_at = 0.0
    for m in metrics:
        t.epochs += 1
        t.metrics.append(m)
        t.scores.append(m if mode == "max" else -m)
    t.best_score = max(t.scores)
    return t


def report(pop: POP, t: Trial, ctx: PolicyContext, seconds: float = 10.0) -> Verdict:
    """Feed the trial's epochs to the policy; answer the last verdict."""
    for e, m in enumerate(t.metrics, start=1):
        verdict = pop.on_trial_result(t, Result(t.trial_id, e, m, 10.0 * e, seconds, 1), ctx)
    return verdict


# ---------------------------------------------------------------------- the threshold p*


def test_threshold_by_hand():
    # S = 8, p = 0.9, 0.8, 0.5, 0.3: min(S·p, N(p)) = min(7.2, 1), min(6.4, 2), min(4, 3),
    # min(2.4, 4) = 1, 2, 3, 2.4 -> p* = 0.5 with 3 dedicated slots
    assert POP.threshold([0.3, 0.9, 0.5, 0.8], slots=8) == (0.5, 3)
    # S = 2: 1, 1.6, 1, 0.6 -> p* = 0.8; 1.6 slots deserved -> 1 whole slot
    assert POP.threshold([0.9, 0.8, 0.5, 0.3], slots=2) == (0.8, 1)
    # k = 2 slots a trial, S = 8: min(S·p, 2·N) = 2, 4, 4, 2.4 -> the tie goes to the higher p*
    assert POP.threshold([0.9, 0.8, 0.5, 0.3], slots=8, per_trial=2) == (0.8, 2)
    # nothing judged yet: no threshold, no dedicated slot
    p_star, slots = POP.threshold([], slots=8)
    assert math.isnan(p_star) and slots == 0


# ---------------------------------------------------------------------- the three classes


def with_confidence(pop: POP, p: dict[int, float]) -> POP:
    """Replace the curve model's answer by fixed p values (expected 100 s to the target)."""
    pop._confidence = lambda t, ctx, target: (p[t.trial_id], 100.0)
    return pop


def test_promising_continue_opportunistic_yield_poor_stop():
    pop = POP(max_epochs=40, boundary=4, y_target=0.95, explore_share=1.0, seed=0)
    pop = with_confidence(pop, {0: 0.9, 1: 0.6, 2: 0.2, 3: 0.01})
    trials = {i: trial(i, [0.3, 0.4, 0.5, 0.55]) for i in range(4)}
    ctx = PolicyContext.for_test(trials=trials, workers=4, deadline=1e6)
    # with S = 4 and p = 0.9, 0.6, 0.2: min(S·p, N) = 1, 2, 0.8, so p* = 0.6 and two slots;
    # the third yields its slot to a new configuration (explore_share = 1: every turn goes
    # to one while any remain); p = 0.01 < 0.05 is Poor
    verdicts = [report(pop, trials[i], ctx) for i in range(4)]
    assert [v.decision for v in verdicts] == [CONTINUE, CONTINUE, PAUSE, STOP]
    assert pop._p_star == 0.6 and pop._dedicated == [0, 1]
    assert "poor" in verdicts[3].reason


def test_a_freed_slot_resumes_a_promising_trial_before_anything_new():
    pop = with_confidence(
        POP(max_epochs=40, boundary=4, y_target=0.95, seed=0), {0: 0.9, 1: 0.6, 2: 0.2}
    )
    trials = {i: trial(i, [0.3, 0.4, 0.5, 0.55]) for i in range(3)}
    ctx = PolicyContext.for_test(trials=trials, workers=4, deadline=1e6)
    for i in range(3):
        report(pop, trials[i], ctx)
    trials[1].state = trials[2].state = TrialState.PAUSED
    trials[3] = Trial(3, {})  # a new configuration, pending
    ctx = PolicyContext.for_test(trials=trials, workers=4, deadline=1e6)
    # the promising paused trial comes first, before the pending one and the opportunistic one
    assert pop.choose_trial_to_run(ctx) is trials[1]
    # asked twice, the same answer (Ray Tune's idempotence)
    assert pop.choose_trial_to_run(ctx) is trials[1]


def test_a_free_slot_alternates_between_paused_and_new_trials():
    pop = with_confidence(
        POP(max_epochs=40, boundary=4, y_target=0.95, explore_share=0.5, seed=0), {0: 0.9, 1: 0.2}
    )
    trials = {0: trial(0, [0.5] * 4), 1: trial(1, [0.3] * 4, state=TrialState.PAUSED)}
    trials[2] = Trial(2, {})
    ctx = PolicyContext.for_test(trials=trials, workers=2, deadline=1e6)
    report(pop, trials[0], ctx)
    pop._p[1] = 0.2  # judged at an earlier boundary
    # two trials started and no other turn yet: 2 of 2 turns were new, more than half
    assert pop.choose_trial_to_run(ctx) is trials[1]
    trials[1].starts = 3  # it has since been resumed twice: 2 of 4 turns new, a new one's turn
    assert pop.choose_trial_to_run(ctx) is trials[2]


def test_an_opportunistic_trial_alone_in_the_queue_keeps_its_turns_then_yields():
    pop = with_confidence(
        POP(max_epochs=40, boundary=4, y_target=0.95, explore_share=0.5, seed=0), {0: 0.9, 1: 0.2}
    )
    trials = {0: trial(0, [0.5] * 4), 1: trial(1, [0.3] * 12)}
    ctx = PolicyContext.for_test(trials=trials, workers=2, deadline=1e6)
    report(pop, trials[0], ctx)  # S = 2: p = 0.9 holds the one dedicated slot
    t, decisions = trials[1], []
    for e in range(1, 13):
        verdict = pop.on_trial_result(t, Result(1, e, t.metrics[e - 1], 10.0 * e, 10.0, 1), ctx)
        if e % 4 == 0:
            decisions.append(verdict.decision)
    # turns so far: 2 new starts; it keeps turns 3 and 4, then 2 of 4 is half: a new one's turn
    assert decisions == [CONTINUE, CONTINUE, PAUSE]


def test_an_opportunistic_trial_goes_on_when_nobody_waits():
    pop = with_confidence(POP(max_epochs=40, boundary=4, y_target=0.95, seed=0), {0: 0.9, 1: 0.2})
    trials = {i: trial(i, [0.3, 0.4, 0.5, 0.55]) for i in range(2)}
    ctx = PolicyContext.for_test(trials=trials, workers=1, deadline=1e6, offers_left=False)
    # one worker: p* = 0.9 holds the only slot, but nothing else waits for trial 1's
    assert [report(pop, trials[i], ctx).decision for i in range(2)] == [CONTINUE, CONTINUE]


def test_a_trial_that_reached_the_target_is_not_stopped_as_poor():
    pop = with_confidence(POP(max_epochs=40, boundary=4, y_target=0.5, seed=0), {0: 0.0})
    trials = {0: trial(0, [0.3, 0.4, 0.5, 0.55])}
    ctx = PolicyContext.for_test(trials=trials, workers=1, deadline=1e6, offers_left=False)
    # p = 0 of reaching 0.5 again, but it is there already
    assert report(pop, trials[0], ctx).decision is CONTINUE


# ---------------------------------------------------------------------- targets and kills


def test_the_dynamic_target_is_the_best_metric_seen():
    pop = POP(max_epochs=40)
    trials = {0: trial(0, [0.3, 0.6]), 1: trial(1, [0.7, 0.65])}
    # y_target=None: the best any trial reported
    assert pop._target_of(PolicyContext.for_test(trials=trials)) == 0.7
    losses = {0: trial(0, [0.9, 0.4], mode="min"), 1: trial(1, [0.5, 0.6], mode="min")}
    # in min mode, the lowest loss
    assert pop._target_of(PolicyContext.for_test(trials=losses, mode="min")) == 0.4


def test_a_kill_threshold_stops_a_non_learner():
    pop = with_confidence(POP(max_epochs=40, boundary=4, kill_threshold=0.15, seed=0), {0: 0.5})
    trials = {0: trial(0, [0.1, 0.12, 0.11, 0.12])}
    ctx = PolicyContext.for_test(trials=trials, workers=1, deadline=1e6)
    # HyperDrive's 15 % for 10-class accuracy: never above chance plus a margin
    verdict = report(pop, trials[0], ctx)
    assert verdict.decision is STOP and "non-learner" in verdict.reason


def test_the_relative_kill_threshold_starts_from_the_worst_first_epoch():
    pop = with_confidence(
        POP(max_epochs=40, boundary=4, kill_threshold="relative", kill_margin=0.05, seed=0),
        {0: 0.5, 1: 0.5, 2: 0.5},
    )
    trials = {
        0: trial(0, [0.1, 0.3, 0.6, 0.9]),
        1: trial(1, [0.1, 0.12, 0.13, 0.13]),
        2: trial(2, [0.2, 0.2, 0.2, 0.15]),
    }
    ctx = PolicyContext.for_test(trials=trials, workers=3, deadline=1e6)
    # chance 0.1 (worst first epoch), best 0.9: the line is 0.1 + 0.05 × 0.8 = 0.14
    assert report(pop, trials[1], ctx).decision is STOP
    # best 0.2 > 0.14: a learner, however slow
    assert report(pop, trials[2], ctx).decision is not STOP


def test_no_time_left_for_an_epoch_means_no_chance():
    pop = POP(max_epochs=40, boundary=4, y_target=0.9, seed=0)
    trials = {0: trial(0, [0.3, 0.5, 0.6, 0.65])}
    ctx = PolicyContext.for_test(trials=trials, workers=1, now=40.0, deadline=45.0)
    # epochs take 10 s and 5 s are left: the horizon is empty, p = 0 < 0.05
    verdict = report(pop, trials[0], ctx, seconds=10.0)
    assert verdict.decision is STOP and "p=0.000" in verdict.reason


def test_with_the_curve_model_a_hopeless_trial_stops_and_a_rising_one_goes_on():
    pop = POP(max_epochs=40, boundary=8, y_target=0.85, seed=0)
    x = np.arange(1, 9)
    flat = trial(0, list(0.3 + 0.01 * np.sin(x)))
    rising = trial(1, list(0.92 - 0.6 * x**-0.9))
    ctx = PolicyContext.for_test(
        trials={0: flat, 1: rising}, workers=2, deadline=1e6, offers_left=False
    )
    # 0.3 and level cannot reach 0.85 in 32 epochs; 0.84 and rising will
    assert report(pop, flat, ctx).decision is STOP
    assert report(pop, rising, ctx).decision is CONTINUE and pop._p[1] > 0.5


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"boundary": 0}, "`boundary` is 0"),
        ({"p_stop": 1.5}, "`p_stop` is 1.5"),
        ({"explore_share": -0.1}, "`explore_share` is -0.1"),
        ({"slots_per_trial": 0}, "`slots_per_trial` is 0"),
        ({"kill_threshold": "chance"}, "`kill_threshold` is 'chance'"),
        ({"min_epochs": 0}, "`min_epochs` is 0"),
    ],
)
def test_bad_parameters_are_refused_in_one_line(kwargs, message):
    with pytest.raises(ConfigError) as info:
        POP(**kwargs)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_the_default_boundary_is_a_tenth_of_the_budget():
    # 10 % of R, at least one epoch
    assert POP(max_epochs=52).boundary == 5 and POP(max_epochs=4).boundary == 1


# ---------------------------------------------------------------------- end to end


def small_trace():
    """Twelve 20-epoch curves: three that end high, nine that level off low."""
    x = np.arange(1, 21)
    rng = np.random.default_rng(0)
    curves = []
    for i in range(12):
        top = 0.9 - 0.02 * (i // 4) if i % 4 == 3 else rng.uniform(0.3, 0.6)
        curves.append(np.clip(top * (1 - np.exp(-x / 4)) + rng.normal(0, 0.005, 20), 0, 1))
    return trace_from_curves(curves, seconds=10.0, startup=2.0)


def test_pop_end_to_end_on_a_small_trace():
    trace = small_trace()
    settings = SimSettings(workers=2, configs=12, max_epochs=20, target=0.8)
    row = simulate(trace, "pop", 1500.0, 0, settings, journal=True)
    journal = row.outcome.journal
    # low curves are stopped as poor, and some trials yield their slot for a while
    assert any(r.startswith("poor") for r in journal_reasons(journal, "Stop"))
    assert any(r.startswith("opportunistic") for r in journal_reasons(journal, "Pause"))
    # a curve that ends above 0.8 is found before the deadline
    assert row.record.best >= 0.8 and row.record.time_to_target is not None
    # and sooner than training every configuration to the end, in order
    fifo = simulate(trace, "random", 1500.0, 0, settings)
    assert row.record.time_to_target < fifo.record.time_to_target


def journal_reasons(journal, action):
    return [e["reason"] for e in journal if e["action"] == action]


def test_pop_is_registered_and_deterministic():
    trace = small_trace()
    settings = SimSettings(workers=2, configs=12, max_epochs=20)
    a = simulate(trace, "pop", 300.0, 1, settings, journal=True)
    b = simulate(trace, "pop", 300.0, 1, settings, journal=True)
    # the registry builds it by name, and the same seed replays the same search
    assert create("pop", max_epochs=20).name == "pop"
    assert a.outcome.journal == b.outcome.journal
