"""Every registered policy keeps the policy contract (hypersched_nb.testing.policy_suite).

One ``PolicyContract`` subclass per name in ``hypersched_nb.core.policies.names()``, built
here so that a newly registered policy is checked without editing this file. A policy whose
module does not exist yet is skipped with "module not written yet"; as soon as the module
exists its contract runs (a module that exists but fails to import is an error, not a skip).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from hypersched_nb.core.policies import names
from hypersched_nb.testing.policy_suite import PolicyContract, written_policies

#: a policy's own keywords for the contract's small traces, if its defaults do not fit
PARAMS: dict[str, dict] = {}


def _class_name(name: str) -> str:
    return "Test" + "".join(part.capitalize() for part in name.split("-")) + "Contract"


for _name in names():
    _cls = type(
        _class_name(_name), (PolicyContract,), {"policy": _name, "params": PARAMS.get(_name, {})}
    )
    if _name not in written_policies():
        _cls = pytest.mark.skip(reason="module not written yet")(_cls)
    globals()[_cls.__name__] = _cls
del _name, _cls


def test_every_registered_policy_has_a_contract_class():
    # one collected class per registry name, so none escapes the contract
    assert sorted(
        c.policy
        for c in globals().values()
        if isinstance(c, type) and issubclass(c, PolicyContract) and c is not PolicyContract
    ) == sorted(names())


_ROWS = """
import json, sys
from hypersched_nb.testing.policy_suite import SCENARIOS, scenario_trace
from hypersched_nb.experiment.simulate import SimSettings, simulate
s = SCENARIOS[1]
out = {}
for name in sys.argv[1:]:
    row = simulate(scenario_trace(s.mode), name, s.deadline, s.seed,
                   SimSettings(workers=s.workers, configs=s.configs, max_epochs=16, eta=2), journal=True)
    out[name] = [row["best"], row["trials_started"], row["worker_seconds_busy"], row["_outcome"].journal]
print(json.dumps(out))
"""


def test_same_seed_same_rows_in_fresh_interpreters_with_other_hash_seeds():
    env = {"PATH": "/usr/bin:/bin"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _ROWS, *written_policies()],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(env, PYTHONHASHSEED=seed),
        )
        for seed in ("1", "2")
    ]
    outputs = [proc.communicate(timeout=120) for proc in procs]
    for proc, (_, err) in zip(procs, outputs):
        assert proc.returncode == 0, err[-2000:]
    # no policy's decisions depend on string hashing or on the process
    assert json.loads(outputs[0][0]) == json.loads(outputs[1][0])
