"""HyperSched exactly as its authors implemented it: termination, promotion, admission,
reallocation (the rules of ``_hypersched_paper``'s module docstring, from the authors' code)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.decisions import Decision
from hypersched_nb.core.events import Result
from hypersched_nb.core.policies import create
from hypersched_nb.core.policies._hypersched_paper import HyperSchedPaper
from hypersched_nb.core.policies._paused import PausedQueue
from hypersched_nb.core.policies._reallocation import (
    grow_pays,
    split_top_job,
    split_uniform,
    startup_overhead,
    startup_sample,
)
from hypersched_nb.core.policies._rungs import milestones
from hypersched_nb.core.scaling import LINEAR, ScalingCurve
from hypersched_nb.core.trial import Trial, TrialState
from hypersched_nb.errors import ConfigError
from hypersched_nb.experiment.simulate import SimSettings, simulate
from hypersched_nb.sim.trace import TRACE_KEY, Trace

CONTINUE, PAUSE, STOP = Decision.CONTINUE, Decision.PAUSE, Decision.STOP
CTX = PolicyContext.for_test(workers=8)


def trial(tid, state=TrialState.RUNNING, *, workers=1, scores=(), since=0, epochs=0):
    t = Trial(tid, {})
    t.state, t.workers, t.results_since_start, t.epochs = state, workers, since, epochs
    t.scores = list(scores)
    t.best_score = max(scores, default=-math.inf)
    return t


def report(policy, t, epoch, metric, ctx=CTX, seconds=1.0, workers=1):
    return policy.on_trial_result(t, Result(t.trial_id, epoch, metric, 0.0, seconds, workers), ctx)


# ------------------------------------------------------------------ termination


def test_milestones_are_r_times_eta_to_the_i_up_to_R():
    assert milestones(52, 1, 4) == [1, 4, 16]  # the benchmark's setting
    assert milestones(100, 1, 4) == [1, 4, 16, 64]  # the authors' defaults
    assert milestones(200, 2, 4) == [2, 8, 32, 128]  # their CIFAR runs
    policy = HyperSchedPaper(max_epochs=52, min_epochs=1, eta=4)
    assert [r.milestone for r in policy.rungs] == [16, 4, 1]  # checked highest first


def test_the_module_example_a_value_rechecked_below_the_median_pauses():
    policy = HyperSchedPaper(max_epochs=10, min_epochs=1, eta=2)
    a, b = trial(0), trial(1)
    assert report(policy, a, 1, 0.5).decision is CONTINUE  # nothing recorded before it
    assert report(policy, b, 1, 0.9).decision is CONTINUE  # one value recorded: no cutoff yet
    verdict = report(policy, a, 2, 0.6)
    assert verdict.decision is PAUSE  # rung 1 re-checked: 0.5 < median(0.5, 0.9)
    assert "rung 1" in verdict.reason and "re-checked" in verdict.reason


def test_a_cutoff_needs_two_recorded_values_and_excludes_the_newcomer():
    policy = HyperSchedPaper(max_epochs=10, min_epochs=1, eta=2)
    assert report(policy, trial(0), 1, 0.9).decision is CONTINUE
    assert report(policy, trial(1), 1, 0.1).decision is CONTINUE  # one peer: no cutoff
    assert report(policy, trial(2), 1, 0.45).decision is PAUSE  # median(0.9, 0.1) = 0.5
    assert report(policy, trial(3), 1, 0.5).decision is CONTINUE  # median(0.9, 0.1, 0.45) = 0.45


def test_the_value_kept_at_a_rung_is_the_first_report_at_or_past_it():
    policy = HyperSchedPaper(max_epochs=10, min_epochs=1, eta=2)
    a, b = trial(0), trial(1)
    report(policy, a, 1, 0.2)
    report(policy, b, 1, 0.9)
    # a's later, better reports never replace its rung-1 value of 0.2
    assert report(policy, a, 2, 0.95).decision is PAUSE
    assert policy.rungs[-1].recorded[0] == 0.2
    # a trial whose first report is at epoch 3 records it at rungs 1 and 2 alike
    c = trial(2)
    report(policy, c, 3, 0.7)
    assert policy.rungs[-1].recorded[2] == policy.rungs[-2].recorded[2] == 0.7


def test_every_passed_rung_is_rechecked_on_every_result():
    policy = HyperSchedPaper(max_epochs=16, min_epochs=1, eta=2)
    a = trial(0)
    assert report(policy, a, 1, 0.5).decision is CONTINUE
    assert report(policy, a, 2, 0.6).decision is CONTINUE  # alone at rungs 1 and 2
    for tid, value in enumerate([0.8, 0.9, 0.95], start=1):
        report(policy, trial(tid), 1, value)  # newcomers raise the rung-1 cutoff
    assert report(policy, a, 3, 0.99).decision is PAUSE  # judged again at rung 1 on a later epoch


def test_stop_instead_of_pause_when_pausing_is_off():
    policy = HyperSchedPaper(max_epochs=10, min_epochs=1, eta=2, pause=False)
    a, b = trial(0), trial(1)
    report(policy, a, 1, 0.5)
    report(policy, b, 1, 0.9)
    assert report(policy, a, 2, 0.6).decision is STOP


def test_min_mode_turns_the_metric_around():
    policy = HyperSchedPaper(max_epochs=10, min_epochs=1, eta=2)
    ctx = PolicyContext.for_test(mode="min")
    report(policy, trial(0), 1, 0.1, ctx)  # a low loss
    report(policy, trial(1), 1, 0.9, ctx)
    assert report(policy, trial(2), 1, 0.8, ctx).decision is PAUSE  # -0.8 < median(-0.1, -0.9)


def test_the_startup_overhead_is_numpys_percentile_of_a_growing_list():
    sample, seen = startup_sample(90), []
    assert startup_overhead(sample, seen) == 0.0  # nothing observed yet
    for x in [20.0, 3.0, 50.0, 7.0, 11.0]:
        seen.append(x)
        assert startup_overhead(sample, seen) == pytest.approx(np.percentile(seen, 90))


def test_paused_queue_serves_the_best_still_paused_trial_of_a_rung():
    queue = PausedQueue()
    queue.add(1, 0, 0.5)
    queue.add(2, 0, 0.9)
    queue.add(3, 1, 0.1)
    assert queue.rungs() == [1, 0]  # highest rung index first
    assert queue.best(0, {1: None, 2: None}) == (2, 0.9)
    assert queue.best(0, {1: None}) == (1, 0.5)  # trial 2 is no longer paused
    queue.discard(2)
    assert len(queue) == 2 and queue.best(0, {1: None, 2: None}) == (1, 0.5)


# ------------------------------------------------------------------ promotion


def test_a_paused_trial_is_promoted_when_it_enters_the_top_of_its_rung():
    policy = HyperSchedPaper(max_epochs=10, min_epochs=1, eta=2)
    a, b, c, d = trial(0), trial(1), trial(2), trial(3)
    report(policy, a, 1, 0.5)
    report(policy, b, 1, 0.9)
    assert report(policy, a, 2, 0.6).decision is PAUSE
    a.state = TrialState.PAUSED
    pending = trial(9, TrialState.PENDING)
    ctx = PolicyContext.for_test(workers=4, trials={0: a, 1: b, 9: pending})
    assert policy.choose_trial_to_run(ctx) is pending  # 0.5 is still below the median 0.7
    report(policy, c, 1, 0.1)
    report(policy, d, 1, 0.2)  # rung 1 now 0.5, 0.9, 0.1, 0.2: median 0.35
    assert policy.choose_trial_to_run(ctx) is a  # promoted ahead of the pending trial
    assert policy.choose_trial_to_run(ctx) is a  # idempotent
    report(policy, a, 3, 0.7)  # once it runs again it is no longer waiting
    a.state = TrialState.RUNNING
    assert policy.choose_trial_to_run(ctx) is pending


def test_a_non_promotable_paused_trial_resumes_only_when_no_configuration_is_left():
    policy = HyperSchedPaper(max_epochs=10, min_epochs=1, eta=2)
    a, b = trial(0), trial(1)
    report(policy, a, 1, 0.5)
    report(policy, b, 1, 0.9)
    report(policy, a, 2, 0.6)
    a.state = TrialState.PAUSED
    trials = {0: a, 1: b}
    assert policy.choose_trial_to_run(PolicyContext.for_test(trials=trials)) is None
    last = PolicyContext.for_test(trials=trials, offers_left=False)
    assert policy.choose_trial_to_run(last) is a  # Ray's FIFO fallback


# ------------------------------------------------------------------ admission


def admission_policy():
    """A policy that has seen one trial train 100 s in 4 one-worker epochs of 25 s."""
    policy = HyperSchedPaper(max_epochs=100, min_epochs=1, eta=4)
    t = trial(0)
    for epoch in range(1, 5):
        report(policy, t, epoch, 0.5, seconds=25.0)
    return policy


def test_admission_bar_is_eta_times_the_longest_training_less_the_startup():
    policy = admission_policy()
    kw = {"startups": [10.0 * i for i in range(11)]}  # 0, 10, ..., 100: 90th percentile 90
    bar = (100 - 90) * 4  # 40, below R x median epoch = 2500
    assert policy.admission(PolicyContext.for_test(now=0, deadline=bar + 1, **kw)) == (True, bar)
    assert policy.admission(PolicyContext.for_test(now=0, deadline=bar, **kw))[0] is False


def test_admission_bar_is_at_most_R_times_the_median_one_worker_epoch():
    policy = HyperSchedPaper(max_epochs=10, min_epochs=1, eta=4)
    t = trial(0)
    for epoch in range(1, 9):
        report(policy, t, epoch, 0.5, seconds=30.0)  # longest 240 s: (240 - 0) x 4 = 960
    report(policy, t, 9, 0.5, seconds=5.0, workers=2)  # not a one-worker epoch
    ok, bar = policy.admission_bar(PolicyContext.for_test(now=0, deadline=301))
    assert (ok, bar) == (True, 300)  # R x median = 10 x 30


def test_closed_admission_purges_pending_and_paused_trials_for_good():
    policy = admission_policy()
    pending, paused = trial(1, TrialState.PENDING), trial(2, TrialState.PAUSED)
    trials = {1: pending, 2: paused}
    assert list(policy.retire(PolicyContext.for_test(deadline=1000, trials=trials))) == []
    closing = PolicyContext.for_test(now=900, deadline=1000, trials=trials)
    assert policy.choose_trial_to_run(closing) is None  # 100 s left < 400 s
    assert sorted(policy.retire(closing)) == [1, 2]  # pending and paused are terminated
    later = PolicyContext.for_test(now=900, deadline=10_000, trials=trials)
    assert policy.choose_trial_to_run(later) is None  # a one-way switch
    assert "too late for a new trial to catch the leader" in policy.describe(later)


# ------------------------------------------------------------------ reallocation


@pytest.mark.parametrize(
    "trials, expected",
    [(3, [3, 3, 2]), (5, [2, 2, 2, 1, 1]), (8, [1] * 8), (1, [8])],
)
def test_uniform_split_goes_round_robin_best_first(trials, expected):
    assert list(split_uniform(list(range(trials)), 8, 8).values()) == expected


def test_uniform_split_respects_a_per_trial_cap():
    assert list(split_uniform([0, 1], 8, 3).values()) == [3, 3]  # two workers stay spare


def test_top_job_split_gives_every_spare_worker_to_the_best():
    assert list(split_top_job([0, 1, 2], 8, 8).values()) == [6, 1, 1]


def allocation_ctx(*trials, time_left=1000.0, scaling=LINEAR, workers=8):
    return PolicyContext.for_test(
        now=0, deadline=time_left, workers=workers, trials={t.trial_id: t for t in trials},
        scaling=scaling,
    )  # fmt: skip


def test_allocate_splits_eight_workers_over_three_trials_by_last_score():
    policy = HyperSchedPaper(max_epochs=100)
    low = trial(0, scores=[0.9, 0.2], since=6)  # best earlier, last 0.2
    best = trial(1, scores=[0.8], since=6)
    mid = trial(2, scores=[0.5], since=6)
    targets = policy.allocate(allocation_ctx(low, best, mid))
    assert targets == {1: 3, 2: 3, 0: 2}  # ordered by last score: best, mid, low
    assert list(targets) == [1, 2, 0]  # the driver grants grows in this order


def test_allocate_top_job_option():
    policy = HyperSchedPaper(max_epochs=100, split="top_job")
    ts = [trial(i, scores=[i / 10], since=6) for i in range(3)]
    assert policy.allocate(allocation_ctx(*ts)) == {2: 6, 1: 1, 0: 1}


@pytest.mark.parametrize(
    "s_new, s_cur, time_left, startup, grows",
    [
        (1.87, 1.0, 1000, 20, True),  # 1.87 x 980 / 1000 = 1.83
        (1.87, 1.0, 50, 20, True),  # 1.87 x 30 / 50 = 1.12
        (1.87, 1.0, 40, 20, False),  # 1.87 x 20 / 40 = 0.94: the restart costs too much
        (5.6, 5.6, 1000, 0, False),  # flat scaling: nothing to gain
        (1.1, 1.0, 1000, 0, False),  # exactly 1.1 is not above 1.1
        (1.2, 1.0, 0, 0, False),  # no time left
    ],
)
def test_grow_benefit_truth_table(s_new, s_cur, time_left, startup, grows):
    assert grow_pays(s_new, s_cur, time_left, startup, 1.1) is grows


def test_a_trial_grows_only_after_six_results_since_its_last_start():
    policy = HyperSchedPaper(max_epochs=100)
    fresh = trial(0, scores=[0.9], since=5)
    assert policy.allocate(allocation_ctx(fresh)) == {0: 1}  # recharge period of 5 not over
    recharged = trial(0, scores=[0.9], since=6)
    assert policy.allocate(allocation_ctx(recharged)) == {0: 8}


def test_a_grow_that_does_not_pay_is_not_proposed():
    policy = HyperSchedPaper(max_epochs=100)
    t = trial(0, scores=[0.9], since=6)
    flat = ScalingCurve({2: 1.05, 8: 1.05})
    assert policy.allocate(allocation_ctx(t, scaling=flat)) == {0: 1}


def test_shrinking_always_goes_ahead():
    policy = HyperSchedPaper(max_epochs=100)
    big = trial(0, scores=[0.9], workers=6, since=0)  # just restarted, deadline near
    others = [trial(1, scores=[0.5]), trial(2, scores=[0.4])]
    targets = policy.allocate(allocation_ctx(big, *others, time_left=1.0))
    assert targets[0] == 3  # 8 over 3 -> 3: shrinks without recharge or benefit test


# ------------------------------------------------------------------ configuration


@pytest.mark.parametrize(
    "params, message",
    [
        ({"eta": 1}, "`eta` is 1, but must be > 1"),
        ({"split": "random"}, "`split` is 'random'"),
        ({"recharge": -1}, "`recharge` is -1, but must be >= 0"),
        ({"startup_percentile": 101}, "`startup_percentile` is 101"),
        ({"grow_threshold": 0}, "`grow_threshold` is 0"),
    ],
)
def test_bad_parameters_are_one_line_errors(params, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        HyperSchedPaper(**params)


def test_registered_under_its_name():
    assert isinstance(create("hypersched-paper", max_epochs=10), HyperSchedPaper)


# ------------------------------------------------------------------ end to end


def small_trace(n=24, epochs=12, seed=3):
    rng = np.random.default_rng(seed)
    metrics, seconds = {}, {}
    for c in range(n):
        top, rate = rng.uniform(0.5, 0.95), rng.uniform(0.1, 1.0)
        metrics[c] = top * (1 - np.exp(-rate * np.arange(1, epochs + 1))) + rng.normal(
            0, 0.01, epochs
        )
        seconds[c] = np.full(epochs, rng.uniform(8, 12))
    return Trace(
        name="small", ids=tuple(range(n)), metrics=metrics, seconds=seconds,
        params={c: {"c": c} for c in range(n)}, scaling=ScalingCurve({2: 1.9, 4: 3.5}),
        startup_seconds=2.0,
    )  # fmt: skip


SETTINGS = SimSettings(workers=4, configs=16, max_epochs=12, min_epochs=1, eta=2)


def test_end_to_end_respects_the_deadline_and_is_deterministic():
    trace = small_trace()
    rows = [simulate(trace, "hypersched-paper", 120.0, 1, SETTINGS, journal=True) for _ in range(2)]
    journal = rows[0].outcome.journal
    assert max(entry["time"] for entry in journal) <= 120.0  # nothing past the deadline
    assert rows[0].record.best <= rows[0].record.oracle  # the oracle bounds it
    assert journal == rows[1].outcome.journal  # same seed, same search
    assert rows[0].record == rows[1].record
    started = {entry["trial"] for entry in journal if entry["action"] == "Start"}
    assert all(TRACE_KEY in rows[0].driver.trials[t].config for t in started)
