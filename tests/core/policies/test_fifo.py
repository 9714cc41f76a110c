"""FIFO: each configuration, in the order offered, trains to the end."""

from __future__ import annotations

import pytest

from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.decisions import Decision
from hypersched_nb.core.events import Result
from hypersched_nb.core.policies import create
from hypersched_nb.core.policies._fifo import FIFO
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


def test_registered_under_its_name():
    assert type(create("fifo", max_epochs=5)) is FIFO  # the benchmark's name builds this class


def test_never_pauses_even_when_many_wait():
    fifo = FIFO()
    ts = trials(TrialState.RUNNING, *[TrialState.PENDING] * 5)
    ctx = PolicyContext.for_test(trials=ts, workers=1)
    for epoch in range(1, 10):
        ts[0].results_since_start = epoch
        # a running trial holds its worker to the end
        assert (
            fifo.on_trial_result(ts[0], Result(0, epoch, 0.5, epoch, 1.0, 1), ctx).decision
            is Decision.CONTINUE
        )


def test_serves_the_oldest_offer_and_resumes_a_lost_trial_first():
    fifo = FIFO()
    ts = trials(TrialState.TERMINATED, TrialState.PENDING, TrialState.PENDING)
    assert fifo.choose_trial_to_run(PolicyContext.for_test(trials=ts)) is ts[1]  # first offered
    ts[2].state = TrialState.PAUSED  # its worker was lost
    assert (
        fifo.choose_trial_to_run(PolicyContext.for_test(trials=ts)) is ts[2]
    )  # older than any offer
    ts[1].state = ts[2].state = TrialState.TERMINATED
    assert (
        fifo.choose_trial_to_run(PolicyContext.for_test(trials=ts)) is None
    )  # nothing waits: ask for an offer


def test_takes_no_budget_but_a_search_with_a_bad_one_is_refused():
    # every trial trains to the search's R: nothing to set
    with pytest.raises(TypeError):
        FIFO(max_epochs=10)
    # built by name for a search, the search's budget is still checked
    with pytest.raises(ConfigError, match="`eta` is 1, but must be > 1"):
        create("fifo", max_epochs=10, eta=1)


def test_simulated_trials_run_one_after_another_to_the_end():
    trace = trace_from_curves([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6], [0.2, 0.3, 0.9]], seconds=10.0)
    row = simulate(trace, "fifo", 1_000, 0, SimSettings(workers=1, configs=3), journal=True)
    actions = [(e["action"], e["trial"]) for e in row.outcome.journal]
    # one worker: start, complete, start the next, ... in the order offered
    assert actions == [
        ("Start", 0),
        ("Complete", 0),
        ("Start", 1),
        ("Complete", 1),
        ("Start", 2),
        ("Complete", 2),
    ]
    assert row.record.best == 0.9  # every configuration reached its last epoch
    assert row.record.worker_seconds_busy == pytest.approx(
        90.0
    )  # 3 × 3 epochs of 10 s, no start-up
