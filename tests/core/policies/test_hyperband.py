"""Synchronous HyperBand as Ray Tune's HyperBandScheduler: bracket sizes and halving.

Ray's band for (max_t 81, η 3) is (n, r) = (5, 81), (8, 27), (15, 9), (34, 3), (81, 1):
143 trials. Its suite's cases are ported with the milestones of the fixed Ray code
(ray#39157: r ← min(r·η, max_t)).
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.decisions import Decision
from hypersched_nb.core.events import Result
from hypersched_nb.core.policies import create
from hypersched_nb.core.policies._hyperband import HyperBand, bracket_plan
from hypersched_nb.core.scaling import ScalingCurve
from hypersched_nb.core.trial import Trial, TrialState
from hypersched_nb.errors import ConfigError
from hypersched_nb.experiment.driver import Driver
from hypersched_nb.sim.clock import VirtualClock
from hypersched_nb.sim.runtime import SimRuntime
from hypersched_nb.sim.trace import TRACE_KEY, Trace

CONTINUE, PAUSE, STOP = Decision.CONTINUE, Decision.PAUSE, Decision.STOP
RAY_BAND = [(5, 81), (8, 27), (15, 9), (34, 3), (81, 1)]


class Run:
    """Feeds a HyperBand as the driver would, keeping the trials' states up to date."""

    def __init__(self, policy: HyperBand, mode: str = "max", offers_left: bool = True):
        self.policy, self.mode, self.offers_left = policy, mode, offers_left
        self.trials: dict[int, Trial] = {}

    def ctx(self) -> PolicyContext:
        return PolicyContext.for_test(
            trials=self.trials, workers=1000, mode=self.mode, offers_left=self.offers_left
        )

    def add(self, count: int = 1) -> list[Trial]:
        new = []
        for _ in range(count):
            trial = self.trials[len(self.trials)] = Trial(len(self.trials), {})
            self.policy.on_trial_add(trial, self.ctx())
            new.append(trial)
        return new

    def result(self, trial: Trial, epoch: int, metric: float) -> Decision:
        trial.state, trial.epochs = TrialState.RUNNING, epoch
        decision = self.policy.on_trial_result(
            trial, Result(trial.trial_id, epoch, metric, 0, 1, 1), self.ctx()
        ).decision
        trial.state = {
            CONTINUE: TrialState.RUNNING,
            PAUSE: TrialState.PAUSED,
            STOP: TrialState.TERMINATED,
        }[decision]
        for tid in self.policy.retire(self.ctx()):
            self.trials[tid].state = TrialState.TERMINATED
        return decision

    def remove(self, trial: Trial, how: str = "error") -> None:
        trial.state = TrialState.ERRORED if how == "error" else TrialState.TERMINATED
        hook = {"error": self.policy.on_trial_error, "complete": self.policy.on_trial_complete}[how]
        hook(trial, self.ctx())
        for tid in self.policy.retire(self.ctx()):
            self.trials[tid].state = TrialState.TERMINATED

    def live(self, bracket_index: int, band: int = 0) -> list[int]:
        return list(self.policy._bands[band][bracket_index].live)


# ------------------------------------------------------------------ bracket sizes


def test_ray_band_for_max_t_81_eta_3():
    assert bracket_plan(81, 3) == RAY_BAND  # (n, r) per bracket, s = 0 … 4


def test_ray_band_for_max_t_1000_eta_10():
    assert bracket_plan(1000, 10) == [(4, 1000), (20, 100), (134, 10), (1000, 1)]  # 4 brackets


def test_trials_fill_brackets_in_order_then_open_a_new_band():
    run = Run(HyperBand(max_epochs=81, eta=3))
    run.add(sum(n for n, _ in RAY_BAND))  # 143 trials fill one band exactly
    assert run.policy.bracket_sizes(0) == RAY_BAND  # every bracket opened, in order
    assert [len(b.live) for b in run.policy._bands[0]] == [5, 8, 15, 34, 81]  # all full
    run.add(4)
    assert len(run.policy._bands) == 2  # the 144th trial opened a second band
    assert run.policy.bracket_sizes(1) == [(5, 81)]  # starting again at s = 0
    assert len(run.live(0, band=1)) == 4  # where the four new trials wait


def test_max_t_1_makes_one_bracket_per_band():
    run = Run(HyperBand(max_epochs=1, eta=3))
    run.add(2)
    assert [len(band) for band in run.policy._bands] == [1, 1]  # Ray: testConfigSameEtaSmall


def test_brackets_too_small_are_skipped_and_choosing_still_works():
    assert bracket_plan(20, 3) == [(4, 20), (6, 6), (12, 2), None]  # ⌊20/27⌋ = 0: skipped
    assert bracket_plan(52, 4, min_epochs=4) == [(4, 52), (8, 13), None, None]  # r below 4
    run = Run(HyperBand(max_epochs=20, eta=3))
    run.add(100)
    assert any(b is None for band in run.policy._bands for b in band)  # skipped brackets kept
    assert run.policy.choose_trial_to_run(run.ctx()) is not None  # Ray: testFilterNoneBracket


def test_registry_builds_hyperband_with_published_defaults():
    hb = create("hyperband")
    assert (hb.max_epochs, hb.eta, hb.stop_last_trials) == (81, 3, True)  # Ray's defaults


def test_bad_parameters_raise_one_line_config_errors():
    with pytest.raises(ConfigError, match="`eta` is 1, but must be > 1"):
        HyperBand(eta=1)


# ------------------------------------------------------------------ halving


def test_successive_halving_in_the_largest_bracket():
    run = Run(HyperBand(max_epochs=81, eta=3))
    run.add(143)
    bracket = run.policy._bands[0][4]  # (81, 1)
    epoch, sizes = 1, [81]
    for _ in range(4):
        live = [run.trials[t] for t in bracket.live]
        decisions = [run.result(t, epoch, i) for i, t in enumerate(live)]
        assert set(decisions[:-1]) == {PAUSE}  # all wait for the last one
        assert decisions[-1] is CONTINUE  # the best arrives last and goes on at once
        sizes.append(len(bracket.live))
        epoch *= 3
    assert sizes == [81, 27, 9, 3, 1]  # ⌈n/η⌉ kept at each halving


def test_halving_stops_the_worst_when_it_reports_last():
    run = Run(HyperBand(max_epochs=81, eta=3))
    run.add(5 + 8)
    trials = [run.trials[t] for t in run.live(1)]  # the (8, 27) bracket
    decisions = [run.result(t, 27, i) for i, t in reversed(list(enumerate(trials)))]
    assert decisions[:-1] == [PAUSE] * 7  # waiting for the band to report
    assert decisions[-1] is STOP  # the last has the lowest reward: stopped
    assert len(run.live(1)) == 3  # ⌈8/3⌉ go on to 81


def test_last_milestone_of_the_top_bracket_stops_everyone():
    run = Run(HyperBand(max_epochs=81, eta=3))
    trials = run.add(5)  # the (5, 81) bracket
    decisions = [run.result(t, 81, i) for i, t in enumerate(trials)]
    assert decisions == [PAUSE] * 4 + [STOP]  # no halving left: the bracket is finished
    assert all(t.state is TrialState.TERMINATED for t in trials)  # paused ones retired too


def test_paused_trials_below_the_cut_are_retired_and_the_rest_resumed():
    run = Run(HyperBand(max_epochs=4, eta=2))  # (3, 4), (3, 2), (4, 1)
    trials = run.add(10)[6:]  # the (4, 1) bracket
    decisions = [run.result(t, 1, m) for t, m in zip(trials, [0.1, 0.9, 0.5, 0.3], strict=True)]
    assert decisions == [PAUSE, PAUSE, PAUSE, STOP]  # 0.3 is in the bottom half
    assert trials[0].state is TrialState.TERMINATED  # 0.1: retired while paused
    for t in run.trials.values():  # the other brackets' pending trials start first ...
        if t.state is TrialState.PENDING:
            t.state = TrialState.RUNNING
    chosen = run.policy.choose_trial_to_run(run.ctx())
    assert chosen is trials[1]  # ... then the promoted paused trials, in bracket order
    assert run.policy.choose_trial_to_run(run.ctx()) is chosen  # idempotent
    chosen.state = TrialState.RUNNING
    assert run.policy.choose_trial_to_run(run.ctx()) is trials[2]  # 0.5 is promoted too


def test_a_trial_paused_below_its_milestone_is_resumed():
    run = Run(HyperBand(max_epochs=81, eta=3))
    trials = run.add(5 + 8 + 15)
    lost = trials[-1]  # in the (15, 9) bracket
    assert run.result(lost, 5, 0.3) is CONTINUE  # below milestone 9
    lost.state = TrialState.PAUSED  # its worker was lost: the driver paused it
    for t in trials[:-1]:
        t.state = TrialState.RUNNING
    assert run.policy.choose_trial_to_run(run.ctx()) is lost  # it goes on like any pending


def test_min_mode_keeps_the_lowest_losses():
    run = Run(HyperBand(max_epochs=4, eta=2), mode="min")
    trials = run.add(10)[6:]
    decisions = [
        run.result(t, 1, loss) for t, loss in zip(trials, [0.1, 0.9, 0.5, 0.3], strict=True)
    ]
    assert decisions == [PAUSE, PAUSE, PAUSE, CONTINUE]  # loss 0.3 is in the top half
    assert trials[1].state is TrialState.TERMINATED  # loss 0.9 retired
    assert trials[2].state is TrialState.TERMINATED  # loss 0.5 retired


# ------------------------------------------------------------------ trials that leave early


@pytest.mark.parametrize("how", ["error", "complete"])
def test_a_trial_leaving_before_the_milestone_does_not_block_its_peers(how):
    run = Run(HyperBand(max_epochs=81, eta=3), offers_left=False)  # Ray: all trials added
    run.add(5 + 3)
    t1, t2, t3 = (run.trials[t] for t in run.live(1))  # three trials in the (8, 27) bracket
    run.remove(t3, how)
    assert run.result(t1, 27, 10) is PAUSE  # waits for t2 only
    assert run.result(t2, 27, 10) is CONTINUE  # ⌈8/3⌉ = 3 kept: both go on


@pytest.mark.parametrize("how", ["error", "complete"])
def test_halving_happens_when_the_last_trial_leaves(how):
    run = Run(HyperBand(max_epochs=81, eta=3))
    run.add(5 + 8)
    trials = [run.trials[t] for t in run.live(1)]
    for t in trials[:-1]:
        assert run.result(t, 27, 10) is PAUSE  # all but one wait
    run.remove(trials[-1], how)
    assert len(run.live(1)) == 3  # the leaver triggered the halving: ⌈8/3⌉ left


def test_a_bracket_takes_n_trials_in_all():
    run = Run(HyperBand(max_epochs=81, eta=3))
    first = run.add(5)  # the (5, 81) bracket is full
    run.remove(first[0], "complete")  # a finished trial leaves no room (Ray would refill)
    late = run.add()[0]
    assert late.trial_id in run.live(1)  # the next trial opens the (8, 27) bracket


def test_removing_a_pending_trial_forgets_it():
    run = Run(HyperBand(max_epochs=81, eta=3))
    a, b, *_ = run.add(4)
    run.result(a, 1, 5)
    run.remove(b, "error")
    assert b.trial_id not in run.live(0)  # Ray: testRemove
    fifth, sixth = run.add(2)
    assert fifth.trial_id in run.live(0)  # the fifth trial completes the (5, 81) bracket
    assert sixth.trial_id in run.live(1)  # the sixth opens the next one


# ------------------------------------------------------------------ state


def test_pickle_round_trip_decides_the_same():
    def play(policy_after):
        run = Run(HyperBand(max_epochs=4, eta=2))
        trials = run.add(20)  # two bands of (3, 4), (3, 2), (4, 1)
        rng = np.random.default_rng(0)
        decisions = []
        for i, t in enumerate(trials):
            if i == 10:
                run.policy = policy_after(run.policy)
            decisions.append(run.result(t, run.policy._of[t.trial_id].r, float(rng.random())))
        return decisions

    same = play(lambda p: p)
    assert {PAUSE, STOP} <= set(same)  # the play halves brackets
    assert play(lambda p: pickle.loads(pickle.dumps(p))) == same  # restored: same decisions


# ------------------------------------------------------------------ trials arriving one by one


def test_an_unfilled_bracket_waits_for_its_trials_to_arrive():
    run = Run(HyperBand(max_epochs=4, eta=2))  # the (4, 1) bracket holds trials 6 … 9
    run.add(9)
    a, b, c = (run.trials[t] for t in run.live(2))
    assert [run.result(t, 1, m) for t, m in zip((a, b, c), (0.2, 0.9, 0.5), strict=True)] == [
        PAUSE
    ] * 3
    assert len(run.live(2)) == 3  # no halving while the bracket can still fill
    d = run.add()[0]
    assert run.result(d, 1, 0.1) is STOP  # full and all at the milestone: the worst stops
    assert a.state is TrialState.TERMINATED  # 0.2 was in the bottom half too


def test_a_bracket_that_can_no_longer_fill_halves_when_offers_run_out():
    run = Run(HyperBand(max_epochs=4, eta=2))
    run.add(9)
    for t in run.trials.values():
        t.state = TrialState.RUNNING  # the other brackets are busy
    a, b, c = (run.trials[t] for t in run.live(2))
    assert [run.result(t, 1, m) for t, m in zip((a, b, c), (0.2, 0.9, 0.5), strict=True)] == [
        PAUSE
    ] * 3
    run.offers_left = False  # the driver's offers ran out
    assert run.policy.choose_trial_to_run(run.ctx()) is b  # halved: the best resumes first
    assert run.policy.next_wakeup(run.ctx()) == 0.0  # come back now: there is work to start
    assert list(run.policy.retire(run.ctx())) == [a.trial_id]  # ⌈4/2⌉ = 2 kept of 3


# ------------------------------------------------------------------ through the driver


def _flat_trace(n: int, epochs: int) -> Trace:
    """Trial i scores i/100 at every epoch of 10 s: higher ids are better."""
    ids = tuple(range(n))
    return Trace(
        name="flat",
        ids=ids,
        metrics={i: np.full(epochs, i / 100) for i in ids},
        seconds={i: np.full(epochs, 10.0) for i in ids},
        params={i: {} for i in ids},
        scaling=ScalingCurve(),
    )


def test_driver_trains_each_bracket_to_its_milestones():
    trace = _flat_trace(10, 4)
    clock = VirtualClock()
    runtime = SimRuntime(trace, clock, 2, startup=0.0, max_epochs=4)
    offers = iter([{TRACE_KEY: i} for i in range(10)])  # offered in id order
    driver = Driver(
        HyperBand(max_epochs=4, eta=2), runtime, clock, offers, deadline=1e9, max_epochs=4
    )
    driver.run()
    epochs = [driver.trials[i].epochs for i in range(10)]
    # (3, 4): all to 4 · (3, 2): top 2 of 3 to 4 · (4, 1): top 2 of 4 to 2, top 1 of those to 4
    assert epochs == [4, 4, 4, 2, 4, 4, 1, 1, 2, 4]
    assert all(not t.is_live for t in driver.trials.values())  # nobody left waiting
