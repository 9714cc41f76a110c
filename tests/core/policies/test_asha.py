"""ASHA as Ray Tune's AsyncHyperBandScheduler: its published test cases, ported.

Results are (t, reward) as in Ray's suite; ``basic_setup`` is Ray's ``basicSetup``: t1
reports (i, 100·i) for i = 0..9 and t2 reports (i, 450) for i = 0..4, all CONTINUE.
"""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.decisions import Decision
from hypersched_nb.core.events import Result
from hypersched_nb.core.policies import create
from hypersched_nb.core.policies._asha import ASHA, rung_milestones
from hypersched_nb.core.trial import Trial
from hypersched_nb.errors import ConfigError

CONTINUE, STOP = Decision.CONTINUE, Decision.STOP
MAX, MIN = PolicyContext.for_test(mode="max"), PolicyContext.for_test(mode="min")


def ray_asha(*, max_t=100, grace_period=1, reduction_factor=4, brackets=1, stop_last_trials=True):
    """An ASHA built with Ray Tune's argument names (and its defaults)."""
    return ASHA(
        max_epochs=max_t,
        min_epochs=grace_period,
        eta=reduction_factor,
        brackets=brackets,
        stop_last_trials=stop_last_trials,
        seed=0,
    )


class Run:
    """Feeds one policy as the driver would: trials by name, results as (t, reward)."""

    def __init__(self, policy, ctx=MAX):
        self.policy, self.ctx, self.trials = policy, ctx, {}

    def add(self, name: str) -> Trial:
        trial = self.trials[name] = Trial(len(self.trials), {})
        self.policy.on_trial_add(trial, self.ctx)
        return trial

    def result(self, name: str, t: float, reward: float) -> Decision:
        trial = self.trials[name]
        trial.epochs = t
        trial.scores.append(reward if self.ctx.mode == "max" else -reward)
        return self.policy.on_trial_result(
            trial, Result(trial.trial_id, t, reward, 0.0, 1.0, 1), self.ctx
        ).decision

    def complete(self, name: str, t: float, reward: float) -> None:
        trial = self.trials[name]
        trial.epochs = t
        trial.scores.append(reward if self.ctx.mode == "max" else -reward)
        self.policy.on_trial_complete(trial, self.ctx)


def basic_setup(policy, ctx=MAX, sign=1) -> Run:
    run = Run(policy, ctx)
    run.add("t1")
    run.add("t2")
    for i in range(10):
        assert run.result("t1", i, sign * i * 100) is CONTINUE  # t1 climbs to 900
    for i in range(5):
        assert run.result("t2", i, sign * 450) is CONTINUE  # t2 holds 450
    return run


# ------------------------------------------------------------------ rungs


def test_rung_milestones_are_r_eta_powers_highest_first():
    assert rung_milestones(10, 1, 2) == [8, 4, 2, 1]  # Ray: (max_t 10, grace 1, η 2)
    assert rung_milestones(100, 1, 4) == [64, 16, 4, 1]  # Ray's defaults
    assert rung_milestones(100, 2.5, 3) == [67.5, 22.5, 7.5, 2.5]  # grace 2.5, η 3
    assert rung_milestones(100, 1, 4, s=1) == [64, 16, 4]  # bracket 1 starts one rung up


def test_policy_registry_builds_asha_with_published_defaults():
    asha = create("asha")
    assert (asha.max_epochs, asha.min_epochs, asha.eta) == (100, 1, 4)  # Ray's defaults
    assert asha.stop_last_trials is True  # Ray's default


@pytest.mark.parametrize(
    "params, message",
    [
        ({"eta": 1}, "`eta` is 1, but must be > 1"),
        ({"min_epochs": 0}, "`min_epochs` is 0"),
        ({"max_epochs": 2, "min_epochs": 3}, "`max_epochs` is 2"),
        ({"brackets": 0}, "`brackets` is 0"),
    ],
)
def test_bad_parameters_raise_one_line_config_errors(params, message):
    with pytest.raises(ConfigError, match=message) as info:
        ASHA(**params)
    assert "\n" not in str(info.value)  # one line


# ------------------------------------------------------------------ Ray's cases


def test_on_complete_then_result_past_max_t_stops():
    run = basic_setup(ray_asha(max_t=10))
    run.add("t3")
    run.complete("t3", 10, 1000)
    assert run.result("t2", 101, 0) is STOP  # t >= max_t always stops


def test_grace_period_delays_the_first_judgement():
    run = basic_setup(ray_asha(grace_period=2.5, reduction_factor=3))
    run.complete("t1", 10, 1000)
    run.complete("t2", 10, 1000)
    run.add("t3")
    assert run.result("t3", 1, 10) is CONTINUE  # below the grace period
    assert run.result("t3", 2, 10) is CONTINUE  # still below 2.5
    assert run.result("t3", 3, 10) is STOP  # rung 2.5 holds {300, 450}: cutoff 400


def test_every_trial_stops_at_max_t_whatever_its_bracket():
    run = Run(ray_asha(max_t=10, brackets=10))
    for i in range(10):
        run.add(f"t{i}")
    for i in range(10):
        assert run.result(f"t{i}", 10, -2) is STOP  # t = max_t


def test_cutoff_is_the_one_minus_one_over_eta_percentile_of_peers():
    run = basic_setup(ray_asha(max_t=10, reduction_factor=2))
    run.complete("t1", 10, 1000)
    run.complete("t2", 10, 1000)
    run.add("t3")
    assert run.result("t3", 1, 260) is STOP  # rung 1 holds {100, 450}: median 275
    assert run.result("t3", 2, 260) is STOP  # rung 2 holds {200, 450}: median 325


def test_nan_rewards_are_ignored_by_the_percentile():
    run = Run(ray_asha(max_t=10, reduction_factor=2))
    run.add("t1")
    run.add("t2")
    for i in range(10):
        assert run.result("t1", i, 450) is CONTINUE  # t1 holds 450
    for i in range(10):
        assert run.result("t2", i, math.nan) is CONTINUE  # NaN is never below a cutoff
    run.complete("t1", 10, 450)
    run.complete("t2", 10, math.nan)
    run.add("t3")
    assert run.result("t3", 1, 260) is STOP  # rung 1 holds {450, NaN}: cutoff 450
    assert run.result("t3", 2, 260) is STOP  # rung 2 likewise


def test_save_and_restore_by_pickle_keeps_the_rungs():
    run = Run(ray_asha(max_t=10, reduction_factor=2))
    for i in range(10):
        run.add(f"t{i}")
    for i in range(5):
        assert run.result(f"t{i}", 1, 10) is not STOP  # five equal rewards: none below
    assert run.result("t5", 1, 5) is STOP  # worse than the median 10
    run.policy = pickle.loads(pickle.dumps(run.policy))
    assert run.result("t6", 1, 4) is STOP  # the restored rung still holds the 10s
    run.add("new")
    assert run.result("new", 1, 2) is STOP  # and judges newly added trials


def test_without_stop_last_trials_the_top_trial_trains_past_max_t():
    run = Run(ray_asha(max_t=3, reduction_factor=2, stop_last_trials=False))
    for name in ("t0", "t1", "t2", "t3"):
        run.add(name)
    assert run.result("t0", 2, 10) is CONTINUE  # first at rung 2
    assert run.result("t1", 2, 8) is STOP  # below 10
    assert run.result("t2", 2, 6) is STOP  # below the median of {10, 8}
    assert run.result("t3", 2, 4) is STOP  # below the median of {10, 8, 6}
    assert run.result("t0", 4, 10) is CONTINUE  # past max_t = 3, judged once already
    assert run.result("t0", 8, 10) is CONTINUE  # still goes on
    assert run.result("t0", 14, 1) is CONTINUE  # even when it later falls below a cutoff


@pytest.mark.parametrize("mode, sign", [("max", 1), ("min", -1)])
def test_min_mode_mirrors_max_mode(mode, sign):
    ctx = PolicyContext.for_test(mode=mode)
    run = basic_setup(ray_asha(), ctx, sign)  # Ray's alternate-metric cases
    run.complete("t1", 10, sign * 1000)
    assert run.result("t2", 5, sign * 450) is CONTINUE  # no new rung passed
    assert run.result("t2", 6, 0) is CONTINUE  # still between rungs 4 and 16


def test_min_mode_stops_the_higher_loss():
    run = Run(ray_asha(max_t=10, reduction_factor=2), MIN)
    for name in ("a", "b", "c"):
        run.add(name)
    assert run.result("a", 1, 0.2) is CONTINUE  # first at rung 1
    assert run.result("b", 1, 0.9) is STOP  # loss 0.9 is worse than 0.2
    assert run.result("c", 1, 0.1) is CONTINUE  # loss 0.1 is better than the median


# ------------------------------------------------------------------ beyond the ported cases


def test_only_the_first_newly_passed_rung_is_judged():
    run = Run(ray_asha(max_t=10, reduction_factor=2))
    run.add("a")
    run.add("b")
    assert run.result("a", 1, 0.9) is CONTINUE  # rung 1: first
    assert run.result("a", 2, 0.9) is CONTINUE  # rung 2: first
    assert run.result("b", 2, 0.5) is STOP  # jumps to 2: judged at rung 2 only (cutoff 0.9)
    asha = run.policy
    assert 1 not in asha._brackets[0].rungs[-1]  # b was never recorded at rung 1


def test_a_curve_that_ends_on_a_milestone_is_recorded_there():
    run = Run(ray_asha(max_t=10, reduction_factor=2))
    run.add("short")
    run.add("b")
    for t in (1, 2, 3):
        assert run.result("short", t, 0.9) is CONTINUE  # rungs 1 and 2 recorded
    run.complete("short", 4, 0.9)  # its trace ends at epoch 4: Ray records it at rung 4
    for t in (1, 2, 3):
        assert run.result("b", t, 0.95) is CONTINUE  # above 0.9 at rungs 1 and 2
    assert run.result("b", 4, 0.5) is STOP  # rung 4 holds the completed trial's 0.9


def test_brackets_are_drawn_by_softmax_of_their_rung_counts():
    asha = ASHA(max_epochs=64, min_epochs=1, eta=4, brackets=3, seed=7)
    counts = [len(b.rungs) for b in asha._brackets]
    assert counts == [4, 3, 2]  # bracket s drops the s lowest rungs
    trials = [Trial(i, {}) for i in range(4000)]
    for t in trials:
        asha.on_trial_add(t, MAX)
    share = np.bincount([asha._brackets.index(asha._of[t.trial_id]) for t in trials]) / len(trials)
    want = np.exp(np.array(counts) - 4.0)
    assert np.allclose(share, want / want.sum(), atol=0.03)  # Ray: p ∝ e^(rungs − max rungs)


def test_same_seed_same_brackets():
    def draw(seed):
        asha = ASHA(max_epochs=64, eta=4, brackets=3, seed=seed)
        for i in range(50):
            asha.on_trial_add(Trial(i, {}), MAX)
        return [asha._brackets.index(asha._of[i]) for i in range(50)]

    assert draw(3) == draw(3)  # the injected generator makes it reproducible
