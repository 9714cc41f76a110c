"""SEER: sequential halving with parallelism and breadth planned for a deadline and a budget."""

from __future__ import annotations

import math

import pytest

from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.decisions import Decision
from hypersched_nb.core.events import Result
from hypersched_nb.core.policies import create
from hypersched_nb.core.policies._seer import SEER
from hypersched_nb.core.policies._seer_plan import (
    plan_rounds,
    round_cost,
    round_epochs,
    round_time,
    stretch,
)
from hypersched_nb.core.scaling import ScalingCurve
from hypersched_nb.core.trial import Trial, TrialState
from hypersched_nb.errors import ConfigError
from hypersched_nb.experiment.simulate import SimSettings, simulate
from hypersched_nb.testing.pytest_policies import trace_from_curves

CONTINUE, PAUSE, STOP = Decision.CONTINUE, Decision.PAUSE, Decision.STOP
CURVE = ScalingCurve({2: 1.8, 4: 3.0})


def test_registered_under_its_name():
    assert type(create("seer", max_epochs=5)) is SEER  # the benchmark's name builds this class


def test_rounds_train_to_E_times_eta_to_the_round_minus_R():
    assert round_epochs(52, 1, 4) == [4, 13, 52]  # R = 2: ⌈52/16⌉, ⌈52/4⌉, 52
    assert round_epochs(16, 1, 2) == [1, 2, 4, 8, 16]
    assert round_epochs(8, 2, 2) == [2, 4, 8]  # never below r


def test_round_time_and_cost_by_hand():
    rnd = (4, 400.0, 100.0, 1)  # four one-epoch trials of 100 s (400 s in all)
    assert round_time(rnd, 1, 4, CURVE, 0.0) == pytest.approx(100.0)  # all four at once
    # two workers each: two at a time, and a one-epoch trial runs on one worker anyway
    # (f = 1): Graham's bound 400/2 + (1 − 1/2)·100 = 250 s
    assert stretch(2, 1, CURVE) == 1.0
    assert round_time(rnd, 2, 4, CURVE, 0.0) == pytest.approx(250.0)
    # ten epochs on 4 workers: the first on one, nine at s(4) = 3: f = 0.1 + 0.9/3 = 0.4
    assert stretch(4, 10, CURVE) == pytest.approx(0.4)
    assert round_cost((1, 300.0, 300.0, 10), 4, CURVE, 5.0) == pytest.approx(
        4 * (10.0 + 120.0)
    )  # 2 start-ups


def choose_parallelism(rounds, **plan) -> list[int]:
    return plan_rounds(rounds, **plan)[0]


def test_parallelism_choice_by_hand():
    # round 0: four 1-epoch trials of 100 s; round 1: one 10-epoch trial of 300 s; 4 workers
    rounds = [(4, 400.0, 100.0, 1), (1, 300.0, 300.0, 10)]
    plan = {"workers": 4, "scaling": CURVE, "startup": 0.0}
    assert choose_parallelism(rounds, time_left=400.0, **plan) == [1, 1]  # 100 + 300 s fits
    # 300 s left: more workers for round 0 save nothing (one-epoch trials queue); for round 1,
    # k = 2: f = 0.1 + 0.9/1.8 = 0.6 -> 180 s, saves 120 s for 2·180 − 300 = 60 worker-s (2.0/s);
    # k = 3 (s = 2.4): 142.5 s, saves 157.5 s for 127.5 (1.24/s); k = 4: 120 s, saves 180 s for
    # 180 (1.0/s). Two workers are the cheapest saving, and 100 + 180 = 280 s fits.
    assert choose_parallelism(rounds, time_left=300.0, **plan) == [1, 2]
    # 240 s left: 280 s is too long; from k = 2, k = 3 saves 37.5 s for 67.5 (0.56/s), k = 4
    # saves 60 s for 120 (0.5/s): k = 3 (242.5 s), still too long, then k = 4 (220 s)
    assert choose_parallelism(rounds, time_left=240.0, **plan) == [1, 4]
    # no amount of workers gets below 220 s: the plan stops at the fastest it can do
    assert choose_parallelism(rounds, time_left=100.0, **plan) == [1, 4]
    # a budget caps it: 1·400 + 2·180 = 760 worker-seconds fit 800, k = 3 (827.5) would not
    assert choose_parallelism(rounds, time_left=240.0, budget=800.0, **plan) == [1, 2]


class Cluster:
    """Feeds SEER as the driver would, with trial records kept by hand (10 s epochs)."""

    def __init__(self, policy, workers: int):
        self.policy, self.workers, self.trials = policy, workers, {}

    def ctx(self, **kw) -> PolicyContext:
        return PolicyContext.for_test(
            trials=self.trials, workers=self.workers, offers_left=False, **kw
        )

    def offer(self) -> Trial:
        trial = self.trials[len(self.trials)] = Trial(len(self.trials), {})
        self.policy.on_trial_add(trial, self.ctx())
        return trial

    def start(self, trial: Trial) -> None:
        trial.state, trial.workers, trial.results_since_start = TrialState.RUNNING, 1, 0

    def report(self, trial: Trial, metric: float) -> Decision:
        trial.epochs += 1
        trial.metrics.append(metric)
        trial.scores.append(metric)
        decision = self.policy.on_trial_result(
            trial,
            Result(trial.trial_id, trial.epochs, metric, 0.0, 10.0, trial.workers),
            self.ctx(),
        ).decision
        if decision is not CONTINUE:
            trial.state = TrialState.PAUSED if decision is PAUSE else TrialState.TERMINATED
            trial.workers = 0
        return decision


def test_a_round_keeps_its_top_n0_over_eta_and_retires_the_rest():
    seer = SEER(max_epochs=4, min_epochs=1, eta=2, max_configs=4)  # rounds to 1, 2, 4 epochs
    c = Cluster(seer, workers=8)
    trials = [c.offer() for _ in range(4)]
    for t in trials:
        c.start(t)
    assert [c.report(t, m) for t, m in zip(trials[:3], [0.1, 0.9, 0.5], strict=True)] == [
        PAUSE
    ] * 3  # round 0 done for them
    assert c.report(trials[3], 0.3) is STOP  # the last one ends the round, third of four: out
    assert seer.round == 1
    assert list(seer.retire(c.ctx())) == [0]  # the worst, paused, never runs again
    assert seer.choose_trial_to_run(c.ctx()) is trials[1]  # the best survivor resumes first
    # two survivors on one worker each: the cluster shrinks to what the round needs
    assert seer.cluster_size(c.ctx()) == 2


def test_a_trial_that_would_miss_the_deadline_gets_more_workers():
    seer = SEER(max_epochs=8, min_epochs=2, eta=2, max_configs=2)  # rounds to 2, 4, 8 epochs
    c = Cluster(seer, workers=4)
    a, b = c.offer(), c.offer()
    c.start(a), c.start(b)
    assert [c.report(a, 0.1), c.report(b, 0.5)] == [CONTINUE, CONTINUE]  # round 0: 2 epochs
    assert [c.report(a, 0.2), c.report(b, 0.6)] == [PAUSE, CONTINUE]  # b survives, goes on
    assert list(seer.retire(c.ctx())) == [a.trial_id]
    assert [c.report(b, 0.7), c.report(b, 0.8)] == [
        CONTINUE,
        CONTINUE,
    ]  # round 1 (alone) into round 2
    # epoch 5 of 8, 21 s left: 3 epochs of 10 s on one worker (30 s) miss the deadline.
    # k workers: the next epoch still runs on one (10 s), then a resize; s(k) = k up to 4:
    # k = 2 takes 10 + 20/2 = 20 s for 2·20 − 30 = 10 extra worker-s (1 s saved per worker-s);
    # k = 3: 16.7 s for 20 (0.67/s); k = 4: 15 s for 30 (0.5/s). Two workers, and it fits.
    ctx = c.ctx(deadline=21.0, scaling=ScalingCurve({4: 4.0}))
    b.epochs += 1
    b.scores.append(0.85), b.metrics.append(0.85)
    assert seer.on_trial_result(b, Result(1, 5, 0.85, 0.0, 10.0, 1), ctx).decision is CONTINUE
    assert seer.allocate(ctx) == {b.trial_id: 2}  # the driver resizes it at this boundary
    assert seer.cluster_size(ctx) == 2  # and the cluster holds just that


def test_refuses_bad_parameters():
    with pytest.raises(ConfigError, match="`max_configs` is 0, but must be >= 1"):
        SEER(max_configs=0)


def uniform_trace(n: int = 16, epochs: int = 8) -> object:
    """n configurations of `epochs` 10 s epochs; configuration i levels off at (i + 1)/n."""
    curves = [[(i + 1) / n * (1 - 0.5 ** (e + 1)) for e in range(epochs)] for i in range(n)]
    return trace_from_curves(curves, seconds=10.0, scaling={2: 1.8, 4: 3.0}, startup=2.0)


@pytest.mark.parametrize("budget", [100.0, 200.0, 300.0, 400.0])
def test_simulated_search_stays_within_its_cost_budget(budget):
    settings = SimSettings(workers=4, configs=16, eta=2, cost_budget=budget)
    row = simulate(uniform_trace(), "seer", 10_000, 0, settings, policy_params={"max_configs": 16})
    assert row.record.worker_seconds_billed <= budget  # never billed past the budget
    assert row.record.trials_started >= 1  # and it did search


def test_simulated_search_tests_fewer_configurations_on_a_smaller_budget():
    started = []
    for budget in (200.0, 400.0, None):  # the whole search bills about 460 worker-seconds
        settings = SimSettings(workers=4, configs=16, eta=2, cost_budget=budget)
        row = simulate(
            uniform_trace(), "seer", 10_000, 0, settings, policy_params={"max_configs": 16}
        )
        started.append(row.record.trials_started)
    assert started[0] < started[1] <= started[2] == 16  # a tighter budget, fewer configurations


def test_simulated_cluster_shrinks_to_what_the_rounds_need():
    row = simulate(
        uniform_trace(),
        "seer",
        10_000,
        0,
        SimSettings(workers=4, configs=16, eta=2),
        policy_params={"max_configs": 16},
    )
    out = row.outcome
    # a fixed cluster of 4 would bill 4 × the time the search ran; SEER releases idle workers
    done_at = max(t.stopped_at for t in row.driver.trials.values() if t.stopped_at is not None)
    assert row.record.worker_seconds_billed < 4 * done_at
    assert row.record.best == pytest.approx(
        max(uniform_trace().final_metrics())
    )  # the best survives to the end
    assert not math.isnan(out.best)
