"""SLAQ: workers go, one at a time, where the normalised predicted loss drop grows most."""

from __future__ import annotations

import math

import pytest

from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.decisions import Decision
from hypersched_nb.core.events import Result
from hypersched_nb.core.policies import create
from hypersched_nb.core.policies._slaq import SLAQ, predicted_gain
from hypersched_nb.core.scaling import LINEAR
from hypersched_nb.core.trial import Trial, TrialState
from hypersched_nb.errors import ConfigError
from hypersched_nb.experiment.simulate import SimSettings, simulate
from hypersched_nb.testing.pytest_policies import trace_from_curves

CONTINUE, PAUSE = Decision.CONTINUE, Decision.PAUSE


class Cluster:
    """Feeds a policy as the driver would, with trial records kept by hand (10 s epochs)."""

    def __init__(self, policy, workers: int, *, mode: str = "max", offers_left: bool = False):
        self.policy, self.workers, self.mode, self.offers_left = policy, workers, mode, offers_left
        self.trials: dict[int, Trial] = {}
        self.now = 0.0  # every report comes 10 s later: each starts a new scheduling epoch

    def add(self, state: TrialState) -> Trial:
        trial = self.trials[len(self.trials)] = Trial(len(self.trials), {})
        trial.state, trial.workers = state, 1
        return trial

    def ctx(self) -> PolicyContext:
        return PolicyContext.for_test(
            now=self.now,
            trials=self.trials,
            workers=self.workers,
            mode=self.mode,
            offers_left=self.offers_left,
            scaling=LINEAR,
        )

    def report(self, trial: Trial, metric: float, *, startup: float = 0.0) -> Decision:
        trial.epochs += 1
        trial.metrics.append(metric)
        trial.scores.append(metric if self.mode == "max" else -metric)
        trial.results_since_start += 1
        self.now += 10.0
        result = Result(
            trial.trial_id, trial.epochs, metric, self.now, 10.0, trial.workers, startup
        )
        return self.policy.on_trial_result(trial, result, self.ctx()).decision

    def history(self, trial: Trial, losses, **kw) -> Decision:
        """Report losses as accuracies (max mode) or as they are (min mode)."""
        for loss in losses:
            decision = self.report(trial, 1 - loss if self.mode == "max" else loss, **kw)
            kw = {}
        return decision


def test_registered_under_its_name():
    assert type(create("slaq", max_epochs=5)) is SLAQ  # the benchmark's name builds this class


def test_gain_is_a_geometric_extrapolation_over_the_largest_past_drop():
    # loss 1.0 -> 0.5: one more epoch halves it again, a drop of 0.25 against a best of 0.5
    assert predicted_gain(0.5, 1.0, 0.5, 1.0, 1e-9) == pytest.approx(0.5)
    assert predicted_gain(0.5, 1.0, 0.5, 2.0, 1e-9) == pytest.approx(0.75)  # 0.5·(1 − 0.5²)/0.5
    assert predicted_gain(0.6, 0.5, 0.1, 1.0, 1e-9) == pytest.approx(
        -1.2
    )  # a rising loss: 0.6·(1 − 1.2)/0.1
    assert math.isfinite(
        predicted_gain(1.0, 1e-12, 0.1, 1e4, 1e-9)
    )  # an exploding loss ranks last, not NaN


def test_allocation_computed_by_hand():
    # a: losses 0.8, 0.4, 0.2 -> gain(k) = 0.2·(1 − 0.5^k)/0.4: marginals 0.25, 0.125, 0.0625
    # b: losses 0.5, 0.4, 0.38 -> gain(k) = 0.38·(1 − 0.95^k)/0.1: marginals 0.19, 0.1805, 0.1715
    # three workers, one at a time: a (0.25), b (0.19), b (0.1805 > 0.125)
    c = Cluster(SLAQ(slice_seconds=10.0), workers=3)
    a, b = c.add(TrialState.RUNNING), c.add(TrialState.RUNNING)
    c.history(a, [0.8, 0.4, 0.2])
    c.history(b, [0.5, 0.4, 0.38])
    assert c.policy.plan(c.ctx()) == {b.trial_id: 2, a.trial_id: 1}
    assert c.policy.allocate(c.ctx()) == {b.trial_id: 2, a.trial_id: 1}  # the driver resizes to it


@pytest.mark.parametrize("startup, expected", [(0.0, {0: 2}), (5.0, {0: 1, 1: 1})])
def test_a_change_of_allocation_pays_a_start_up_inside_the_slice(startup, expected):
    # a runs (losses 0.5, 0.25); c is paused (losses 1.0, 0.5, 0.45); 10 s slices, 10 s epochs.
    # No start-up: a's 2nd worker buys 2 epochs, +0.25, more than c's first (0.9·(1 − 0.9) = 0.09).
    # A 5 s start-up: a's 2nd worker buys (10 − 5)·2/10 = 1 epoch, +0; c's first buys 0.5 epoch,
    # 0.9·(1 − 0.9^0.5) = 0.046 > 0, so the worker goes to c.
    c = Cluster(SLAQ(slice_seconds=10.0), workers=2)
    a, paused = c.add(TrialState.RUNNING), c.add(TrialState.RUNNING)
    c.history(paused, [1.0, 0.5, 0.45], startup=startup)
    paused.state, paused.workers = TrialState.PAUSED, 0
    c.history(a, [0.5, 0.25])  # SLAQ re-plans at a's epoch
    assert c.policy.plan(c.ctx()) == expected


def test_a_trial_planned_no_worker_yields_to_one_that_is():
    c = Cluster(SLAQ(slice_seconds=10.0), workers=1)
    good, bad = c.add(TrialState.RUNNING), c.add(TrialState.RUNNING)
    c.history(good, [0.8, 0.4])
    good.state, good.workers = TrialState.PAUSED, 0
    assert c.history(bad, [0.5, 0.55]) is PAUSE  # its loss rose: the worker goes to `good`
    bad.state, bad.workers = TrialState.PAUSED, 0
    assert c.policy.choose_trial_to_run(c.ctx()) is good  # and the driver resumes it


def test_new_trials_get_their_two_epochs_first():
    c = Cluster(SLAQ(), workers=1, offers_left=True)
    t = c.add(TrialState.RUNNING)
    assert c.report(t, 0.3) is CONTINUE  # one report: cannot be extrapolated, keeps its worker
    assert c.report(t, 0.5) is PAUSE  # two: ranked, and new configurations still wait
    t.state, t.workers = TrialState.PAUSED, 0
    assert c.policy.plan(c.ctx()) == {}  # while configurations are offered they take every worker
    assert c.policy.choose_trial_to_run(c.ctx()) is None  # so the driver offers the next one
    new = c.add(TrialState.PENDING)
    assert c.policy.choose_trial_to_run(c.ctx()) is new  # and it starts before any ranked trial


def test_min_mode_takes_the_metric_as_the_loss():
    plans = []
    for mode in ("max", "min"):
        c = Cluster(SLAQ(slice_seconds=10.0), workers=3, mode=mode)
        a, b = c.add(TrialState.RUNNING), c.add(TrialState.RUNNING)
        c.history(a, [0.8, 0.4, 0.2])
        c.history(b, [0.5, 0.4, 0.38])
        plans.append(c.policy.plan(c.ctx()))
    assert (
        plans[0] == plans[1]
    )  # 1 − accuracy in max mode is the same loss as the metric in min mode


@pytest.mark.parametrize(
    "bad", [{"slice_seconds": 0.0}, {"norm_floor": -1.0}, {"max_workers_per_trial": 0}]
)
def test_refuses_bad_parameters(bad):
    with pytest.raises(ConfigError, match="but must be"):
        SLAQ(**bad)


def test_simulated_spare_workers_go_to_the_ranked_trials():
    curves = [
        [0.1, 0.3, 0.5, 0.6, 0.7, 0.75, 0.78, 0.8],
        [0.2, 0.25, 0.3, 0.33, 0.36, 0.38, 0.4, 0.41],
    ]
    trace = trace_from_curves(curves, seconds=10.0, scaling={2: 1.9, 4: 3.6})
    row = simulate(trace, "slaq", 1_000, 0, SimSettings(workers=4, configs=2), journal=True)
    journal = row.outcome.journal
    assert any(e["action"] == "Resize" for e in journal)  # 4 workers, 2 trials: it grows them
    assert row.record.best == 0.8  # both curves run to their end well before the deadline
