"""Every registered policy keeps the policy contract (hypersched_nb.testing.pytest_policies).

One ``PolicyContract`` subclass per name in ``hypersched_nb.core.policies.names()``, built
here so that a newly registered policy is checked without editing this file.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from hypersched_nb.core.policies import create, names
from hypersched_nb.errors import ConfigError
from hypersched_nb.testing.pytest_policies import PolicyContract

#: a policy's own keywords for the contract's small traces, if its defaults do not fit
PARAMS: dict[str, dict] = {}


def _class_name(name: str) -> str:
    return "Test" + "".join(part.capitalize() for part in name.split("-")) + "Contract"


for _name in names():
    _cls = type(
        _class_name(_name), (PolicyContract,), {"policy": _name, "params": PARAMS.get(_name, {})}
    )
    globals()[_cls.__name__] = _cls
del _name, _cls


def test_every_registered_policy_has_a_contract_class():
    # one collected class per registry name, so none escapes the contract
    assert sorted(
        c.policy
        for c in globals().values()
        if isinstance(c, type) and issubclass(c, PolicyContract) and c is not PolicyContract
    ) == sorted(names())


def test_create_gives_each_policy_only_the_budget_it_takes():
    budget = {"max_epochs": 12, "min_epochs": 2, "eta": 3, "seed": 1}
    # a policy without rungs, randomness or a use for R takes none of it
    assert repr(create("fifo", **budget)) == "FIFO()"
    # one with rungs takes R, r and η; ASHA's bracket sampling takes the seed too
    asha = create("asha", **budget)
    assert (asha.max_epochs, asha.min_epochs, asha.eta) == (12, 2, 3)
    hb = create("hyperband", **budget)  # no seed: its brackets are filled in order
    assert (hb.max_epochs, hb.min_epochs, hb.eta) == (12, 2, 3)
    # a policy's own settings go with the budget
    assert create("rr", **budget, slice_epochs=3).slice_epochs == 3


def test_create_refuses_a_setting_the_policy_does_not_have_in_one_line():
    with pytest.raises(ConfigError) as info:
        create("rr", max_epochs=12, boundary=2)
    assert str(info.value) == "policy 'rr' has no setting `boundary` (its settings: slice_epochs)"


_ROWS = """
import json, sys
from hypersched_nb.testing.pytest_policies import SCENARIOS, scenario_trace
from hypersched_nb.experiment.simulate import SimSettings, simulate
s = SCENARIOS[1]
out = {}
for name in sys.argv[1:]:
    sim = simulate(scenario_trace(s.mode), name, s.deadline, s.seed,
                   SimSettings(workers=s.workers, configs=s.configs, max_epochs=16, eta=2), journal=True)
    out[name] = [sim.record.best, sim.record.trials_started, sim.record.worker_seconds_busy,
                 sim.outcome.journal]
print(json.dumps(out))
"""


def test_same_seed_same_rows_in_fresh_interpreters_with_other_hash_seeds():
    env = {"PATH": "/usr/bin:/bin"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _ROWS, *names()],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(env, PYTHONHASHSEED=seed),
        )
        for seed in ("1", "2")
    ]
    outputs = [proc.communicate(timeout=120) for proc in procs]
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err[-2000:]
    # no policy's decisions depend on string hashing or on the process
    assert json.loads(outputs[0][0]) == json.loads(outputs[1][0])
