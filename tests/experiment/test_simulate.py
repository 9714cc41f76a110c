"""simulate(): one simulated search run to its end, returned as a typed, frozen value."""

import dataclasses
import json
import math

import pytest

from hypersched_nb.experiment.driver import Driver, Outcome
from hypersched_nb.experiment.simulate import SimSettings, Simulation, simulate

#: the keys of one run in the benchmark's JSON file, in order (docs/design.md)
CONTRACT = [
    "policy",
    "deadline",
    "seed",
    "best",
    "oracle",
    "trials_started",
    "time_to_target",
    "worker_seconds_busy",
    "worker_seconds_billed",
    "early_signal_at_end",
]
SETTINGS = SimSettings(workers=3, configs=10)


def test_a_simulation_is_its_record_outcome_and_driver(trace):
    sim = simulate(trace, "asha", 150, 4, SETTINGS, journal=True)
    assert isinstance(sim, Simulation)
    assert isinstance(sim.outcome, Outcome) and isinstance(sim.driver, Driver)
    assert sim.outcome.journal  # asked for
    # the record says what the outcome says
    assert sim.record.best == sim.outcome.best
    assert sim.record.trials_started == sim.outcome.trials_started
    # a value, not a bag of keys
    with pytest.raises(dataclasses.FrozenInstanceError):
        sim.record.best = 1.0  # type: ignore[misc]


def test_the_record_is_a_bench_json_row_with_exactly_the_contract_keys(trace):
    row = simulate(trace, "asha", 150, 4, SETTINGS).record.to_json()
    assert list(row) == CONTRACT
    assert (row["policy"], row["deadline"], row["seed"]) == ("asha", 150.0, 4)
    json.dumps(row, allow_nan=False)  # JSON as the benchmark writes it


def test_the_record_says_whether_hypersched_ended_trusting_the_first_epochs(trace):
    told = SimSettings(workers=3, configs=10, early_signal="trust")
    assert simulate(trace, "hypersched", 150, 4, told).record.early_signal_at_end == "trust"
    assert simulate(trace, "hypersched", 5, 4, SETTINGS).record.early_signal_at_end == "doubt"
    # a policy without rule 2 has nothing to say: null in the JSON
    assert simulate(trace, "asha", 150, 4, told).record.to_json()["early_signal_at_end"] is None


def test_early_signal_among_the_policy_params_overrides_the_settings(trace):
    told = simulate(trace, "hypersched", 150, 4, SETTINGS, policy_params={"early_signal": "trust"})
    assert told.driver.policy.early_signal == "trust" and told.record.early_signal_at_end == "trust"


def test_a_metric_never_reported_is_null_in_the_row(trace):
    # every epoch takes 10 s after a 2 s start-up: nothing is reported by 5 s
    record = simulate(trace, "asha", 5, 0, SETTINGS).record
    assert math.isnan(record.best) and record.to_json()["best"] is None


def test_the_same_seed_gives_the_same_record(trace):
    a, b = (simulate(trace, "asha", 150, 4, SETTINGS).record for _ in range(2))
    assert a.to_json() == b.to_json()
