"""Hermes: run the G fastest-converging trials, suspend the rest at slice boundaries."""

from __future__ import annotations

import pytest

from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.decisions import Decision
from hypersched_nb.core.events import Result
from hypersched_nb.core.policies import create
from hypersched_nb.core.policies._hermes import Hermes, convergence_speed
from hypersched_nb.core.trial import Trial, TrialState
from hypersched_nb.errors import ConfigError
from hypersched_nb.experiment.simulate import SimSettings, simulate
from hypersched_nb.testing.pytest_policies import trace_from_curves

CONTINUE, PAUSE = Decision.CONTINUE, Decision.PAUSE


class Cluster:
    """Feeds a policy as the driver would, with trial records kept by hand."""

    def __init__(self, policy, workers: int, *, mode: str = "max", offers_left: bool = False):
        self.policy, self.workers, self.mode, self.offers_left = policy, workers, mode, offers_left
        self.trials: dict[int, Trial] = {}

    def add(self, state: TrialState = TrialState.PENDING) -> Trial:
        trial = self.trials[len(self.trials)] = Trial(len(self.trials), {})
        trial.state = state
        trial.workers = 1 if state is TrialState.RUNNING else 0
        return trial

    def ctx(self) -> PolicyContext:
        return PolicyContext.for_test(
            trials=self.trials, workers=self.workers, mode=self.mode, offers_left=self.offers_left
        )

    def start(self, trial: Trial) -> None:
        trial.state, trial.workers, trial.results_since_start = TrialState.RUNNING, 1, 0

    def report(self, trial: Trial, metric: float, seconds: float = 10.0) -> Decision:
        trial.epochs += 1
        trial.metrics.append(metric)
        trial.scores.append(metric if self.mode == "max" else -metric)
        trial.results_since_start += 1
        result = Result(trial.trial_id, trial.epochs, metric, 0.0, seconds, trial.workers)
        decision = self.policy.on_trial_result(trial, result, self.ctx()).decision
        if decision is PAUSE:
            trial.state, trial.workers = TrialState.PAUSED, 0
        return decision


def test_registered_under_its_name():
    assert type(create("hermes", max_epochs=5)) is Hermes  # the benchmark's name builds this class


def test_speed_is_normalised_improvement_per_gpu_second():
    # from 0.25 to 0.75 is +200 % of the first value; over 20 GPU-seconds: 0.1 per second
    assert convergence_speed(0.25, 0.75, 20.0, 1e-9) == pytest.approx(0.1)
    # a loss 2.0 -> 1.0 (scores -2 -> -1) halves it: +50 % over 20 s
    assert convergence_speed(-2.0, -1.0, 20.0, 1e-9) == pytest.approx(0.025)


def test_a_slower_running_trial_is_preempted_for_a_faster_paused_one():
    hermes = Hermes()
    c = Cluster(hermes, workers=2)
    a, b, slow_start = (
        c.add(TrialState.RUNNING),
        c.add(TrialState.PENDING),
        c.add(TrialState.RUNNING),
    )
    assert c.report(slow_start, 0.30) is CONTINUE  # its first report is only the baseline
    # ranked at 0.15/0.3/20 s = 0.025/s; a new trial (b) and an unranked one (a) rank above it
    assert c.report(slow_start, 0.45) is PAUSE
    assert hermes.speed(slow_start.trial_id) == pytest.approx(0.025)
    assert hermes.choose_trial_to_run(c.ctx()) is b  # the new trial gets its slice
    c.start(b)
    assert c.report(a, 0.2) is CONTINUE  # baseline
    assert c.report(a, 0.6) is CONTINUE  # 0.4/0.2/20 s = 0.1/s: the fastest of all
    assert c.report(b, 0.40) is CONTINUE  # baseline
    # b: 0.02/0.4/20 s = 0.0025/s; a (0.1/s) and the paused one (0.025/s) rank above: b yields
    assert c.report(b, 0.42) is PAUSE
    assert hermes.speed(b.trial_id) == pytest.approx(0.0025)
    assert hermes.choose_trial_to_run(c.ctx()) is slow_start  # the best-ranked paused trial
    assert c.report(a, 0.7) is CONTINUE  # still in the top 2


def test_nobody_is_paused_when_nobody_better_waits():
    c = Cluster(Hermes(), workers=2)
    a, b = c.add(TrialState.RUNNING), c.add(TrialState.RUNNING)
    for m in (0.2, 0.3, 0.35):
        assert c.report(a, m) is CONTINUE  # two trials on two workers: keep both busy
        assert c.report(b, m / 2) is CONTINUE


def test_new_trials_are_probed_first_in_min_mode_too():
    c = Cluster(Hermes(), workers=1, mode="min", offers_left=True)
    t = c.add(TrialState.RUNNING)
    assert c.report(t, 2.0) is CONTINUE  # baseline loss: never preempted before a slice
    assert c.report(t, 1.0) is PAUSE  # ranked, and configurations still to be offered wait
    assert c.policy.speed(t.trial_id) == pytest.approx(0.025)  # loss halved in 20 s: 50 %/20 s


def test_longer_slices_preempt_only_at_their_end():
    c = Cluster(Hermes(slice_epochs=2), workers=1, offers_left=True)
    t = c.add(TrialState.RUNNING)
    # baseline + one slice of 2 epochs before it is ranked
    assert [c.report(t, m) for m in (0.1, 0.2, 0.3)] == [CONTINUE, CONTINUE, PAUSE]
    c.start(t)
    assert [c.report(t, m) for m in (0.4, 0.5)] == [CONTINUE, PAUSE]  # resumed: a full slice again


def test_choose_serves_new_configurations_before_paused_ones():
    c = Cluster(Hermes(), workers=1, offers_left=True)
    paused = c.add(TrialState.RUNNING)
    c.report(paused, 0.1)
    c.report(paused, 0.5)
    assert c.policy.choose_trial_to_run(c.ctx()) is None  # ask the driver for a new configuration
    c.offers_left = False
    assert c.policy.choose_trial_to_run(c.ctx()) is paused  # none left: resume the best


@pytest.mark.parametrize("bad", [{"slice_epochs": 0}, {"norm_floor": 0.0}])
def test_refuses_bad_parameters(bad):
    with pytest.raises(ConfigError, match="but must be"):
        Hermes(**bad)


def test_simulated_fast_converger_finishes_first():
    fast = [0.1, 0.5, 0.7, 0.8, 0.85, 0.9]
    slow = [[0.1 + 0.02 * e for e in range(6)], [0.2 + 0.02 * e for e in range(6)]]
    trace = trace_from_curves([slow[0], fast, slow[1]], seconds=10.0)
    settings = SimSettings(workers=1, configs=3, target=0.9)
    hermes = simulate(trace, "hermes", 1_000, 0, settings, journal=True)
    rr = simulate(trace, "rr", 1_000, 0, settings)
    completed = [e["trial"] for e in hermes.outcome.journal if e["action"] == "Complete"]
    driver = hermes.driver
    assert driver.trials[completed[0]].config["index"] == 1  # the fast converger ends first
    # probes: 3 trials × 2 epochs, then the fast one's 4 remaining epochs, 10 s each
    assert hermes.record.time_to_target == pytest.approx(100.0)
    assert rr.record.time_to_target > hermes.record.time_to_target  # round-robin gets there later
