"""Round-robin: every configuration takes turns of ``slice_epochs`` epochs."""

from __future__ import annotations

import pytest

from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.decisions import Decision
from hypersched_nb.core.events import Result
from hypersched_nb.core.policies import create
from hypersched_nb.core.policies._rr import RoundRobin
from hypersched_nb.core.trial import Trial, TrialState
from hypersched_nb.errors import ConfigError
from hypersched_nb.experiment.simulate import SimSettings, simulate
from hypersched_nb.testing.pytest_policies import trace_from_curves


def trials(*states: TrialState) -> dict[int, Trial]:
    out = {}
    for i, state in enumerate(states):
        out[i] = Trial(i, {})
        out[i].state = state
    return out


def result(rr: RoundRobin, trial: Trial, since_start: int, ctx: PolicyContext) -> Decision:
    trial.results_since_start = since_start
    verdict = rr.on_trial_result(trial, Result(trial.trial_id, since_start, 0.5, 1.0, 1.0, 1), ctx)
    return verdict.decision


def test_registered_under_its_name():
    assert type(create("rr", max_epochs=5)) is RoundRobin  # the benchmark's name builds this class


def test_pauses_at_the_end_of_its_slice_only_when_others_wait():
    rr = RoundRobin(slice_epochs=2)
    ts = trials(TrialState.RUNNING, TrialState.PAUSED)
    waiting = PolicyContext.for_test(trials=ts, offers_left=False)
    assert result(rr, ts[0], 1, waiting) is Decision.CONTINUE  # mid-slice
    assert result(rr, ts[0], 2, waiting) is Decision.PAUSE  # slice over, trial 1 waits
    ts[1].state = TrialState.TERMINATED
    alone = PolicyContext.for_test(trials=ts, offers_left=False)
    assert result(rr, ts[0], 2, alone) is Decision.CONTINUE  # nobody waits: keep the worker busy
    offers = PolicyContext.for_test(trials=ts, offers_left=True)
    assert result(rr, ts[0], 4, offers) is Decision.PAUSE  # configurations still to offer wait too


def test_queue_serves_new_configurations_then_the_longest_paused():
    rr = RoundRobin()
    ts = trials(TrialState.PAUSED, TrialState.PAUSED, TrialState.PENDING)
    assert (
        rr.choose_trial_to_run(PolicyContext.for_test(trials=ts)) is ts[2]
    )  # offered configs first
    ts[2].state = TrialState.RUNNING
    assert (
        rr.choose_trial_to_run(PolicyContext.for_test(trials=ts, offers_left=True)) is None
    )  # ask for an offer
    assert (
        rr.choose_trial_to_run(PolicyContext.for_test(trials=ts, offers_left=False)) is ts[0]
    )  # paused first


def test_slice_must_be_an_epoch_or_more():
    with pytest.raises(ConfigError, match="`slice_epochs` is 0, but must be >= 1"):
        RoundRobin(slice_epochs=0)


def test_simulated_trials_take_turns():
    trace = trace_from_curves([[0.1, 0.2, 0.3]] * 3, seconds=10.0)
    row = simulate(trace, "rr", 1_000, 0, SimSettings(workers=1, configs=3), journal=True)
    starts = [e["trial"] for e in row.outcome.journal if e["action"] == "Start"]
    assert starts == [0, 1, 2, 0, 1, 2, 0, 1, 2]  # one epoch each, in turn, three rounds
    assert row.record.trials_started == 3  # resumptions are not new trials
    # nine epochs of 10 s and nothing else, since this trace has no start-up cost
    assert row.outcome.ended_at == pytest.approx(90.0)
