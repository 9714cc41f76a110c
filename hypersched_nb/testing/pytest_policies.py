"""The contract every scheduling policy keeps, as a pytest base class subclassed once per policy.

Like Optuna's ``BasicSamplerTestCase`` and scikit-learn's ``parametrize_with_checks``: a
policy's test module writes ::

    class TestASHAContract(PolicyContract):
        policy = "asha"

and inherits these checks, each run on small synthetic traces (:func:`synthetic_trace`:
early plateaus, late bloomers, curves that diverge to NaN, curves that stop early) through
the real :class:`~hypersched_nb.experiment.driver.Driver` on a
:class:`~hypersched_nb.sim.runtime.SimRuntime`:

- **valid decisions** — ``on_trial_result`` answers a :class:`Verdict` (a decision and
  its reason); ``choose_trial_to_run`` a PENDING or PAUSED trial or None, the same one when
  asked twice in a row; ``retire`` pending or paused trials' ids, each with a reason;
  ``allocate`` None or whole worker
  counts >= 1 for running trials; ``next_wakeup`` None or a number; ``describe`` one line;
  and the search keeps moving (a wake-up in the past forever would spin the driver);
- **read-only trials** — hooks never write a trial record or the driver's collections;
- **no over-commit** — after every instruction the workers held fit in the cluster, and the
  runtime holds exactly what the driver believes;
- **nothing past the deadline** — no result later than ``ctx.deadline`` reaches the policy,
  the search ends by the deadline and its best is the best reported at or before it;
- **determinism** — the same seed gives the same JSON row and the same journal, and
  watching a policy (asking twice, describing after every result) changes nothing;
- **pickle round trip** — a copy pickled mid-search carries on exactly as the original;
- **no clock reads** — hooks run with ``time``'s clock functions trapped (:func:`no_clock_reads`);
- **deadline changes honoured** — when ``driver.deadline`` moves mid-search (shorter or
  longer), the policy sees the new ``ctx.deadline`` at once and nothing runs past it;
- **oracle bound** — no run beats :func:`~hypersched_nb.sim.oracle.oracle_best`.

A watched run records every violation by check instead of stopping at the first, so each
test reports its own check; a run that crashed reports the crash. The watchers live in
:mod:`hypersched_nb.testing.watch` and the traces in :mod:`hypersched_nb.testing.traces`;
both are re-exported here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass

import pytest

from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.policies import Policy, create
from hypersched_nb.errors import ConfigError
from hypersched_nb.experiment.driver import Driver, Outcome
from hypersched_nb.experiment.simulate import RunRecord, SimSettings, Simulation, simulate
from hypersched_nb.sim.clock import VirtualClock
from hypersched_nb.sim.oracle import oracle_best
from hypersched_nb.sim.runtime import SimRuntime, offers
from hypersched_nb.sim.trace import Trace
from hypersched_nb.testing.traces import FAMILIES, synthetic_trace, trace_from_curves
from hypersched_nb.testing.watch import (
    ClockRead,
    Violations,
    WatchedPolicy,
    WatchedRuntime,
    no_clock_reads,
    watch,
)

__all__ = [
    "FAMILIES",
    "SCENARIOS",
    "ClockRead",
    "PolicyContract",
    "Run",
    "Scenario",
    "Violations",
    "WatchedPolicy",
    "WatchedRuntime",
    "no_clock_reads",
    "row_json",
    "run_watched",
    "scenario_trace",
    "synthetic_trace",
    "trace_from_curves",
    "watch",
]


# ------------------------------------------------------------------------------ runs


@dataclass(frozen=True)
class Scenario:
    """One synthetic search: the trace (by mode), the deadline, the seed and the cluster."""

    id: str
    deadline: float
    seed: int = 0
    mode: str = "max"
    workers: int = 4
    configs: int = 20


SCENARIOS = (
    Scenario("tight", deadline=40.0, seed=0),  # a few epochs each: early stops matter
    Scenario("mid", deadline=120.0, seed=1),  # about half the work fits
    Scenario("ample", deadline=1000.0, seed=2),  # everything fits: the search ends by itself
    Scenario("min-mode", deadline=120.0, seed=3, mode="min"),  # a loss, lower is better
    Scenario("one-worker", deadline=120.0, seed=4, workers=1),  # nothing to reallocate
)

_TRACES: dict[str, Trace] = {}


def scenario_trace(mode: str) -> Trace:
    """The synthetic trace of a scenario's mode (made once)."""
    if mode not in _TRACES:
        _TRACES[mode] = synthetic_trace(mode=mode)
    return _TRACES[mode]


@dataclass
class Run:
    """A finished watched run and everything the checks need."""

    scenario: Scenario
    outcome: Outcome | None
    driver: Driver
    policy: WatchedPolicy
    runtime: WatchedRuntime
    violations: Violations
    oracle: float
    crash: BaseException | None = None
    record: RunRecord | None = None  # its benchmark record, once it finished


def run_watched(
    name: str,
    scenario: Scenario,
    *,
    params: Mapping | None = None,
    max_epochs: int = 16,
    min_epochs: int = 1,
    eta: float = 2,
    swap_at: int | None = None,
    move_deadline: tuple[float, float] | None = None,
) -> Run:
    """Run policy ``name`` on ``scenario`` as :func:`simulate` does, with watchers. A crash
    is kept in ``Run.crash``, not raised."""
    trace = scenario_trace(scenario.mode)
    violations = Violations()
    offered = offers(trace, scenario.configs, scenario.seed)
    clock = VirtualClock()
    sim = SimRuntime(trace, clock, scenario.workers, max_epochs=max_epochs)
    try:
        with no_clock_reads(f"{name}.__init__"):
            inner = create(
                name,
                max_epochs=max_epochs,
                min_epochs=min_epochs,
                eta=eta,
                seed=scenario.seed,
                **(params or {}),
            )
    except ClockRead as exc:
        violations.add("clock", str(exc))
        raise
    policy = watch(inner, violations, swap_at=swap_at)
    runtime = WatchedRuntime(sim, violations, move_deadline=move_deadline)
    driver = Driver(
        policy,
        runtime,
        clock,
        iter(offered),
        deadline=scenario.deadline,
        max_epochs=max_epochs,
        mode=trace.mode,
        scaling=trace.scaling,
        journal=True,
    )
    runtime.driver = driver
    oracle = oracle_best(
        trace,
        offered,
        workers=scenario.workers,
        deadline=scenario.deadline,
        max_epochs=max_epochs,
        scaling=trace.scaling,
        startup=trace.startup_seconds,
    )
    run = Run(scenario, None, driver, policy, runtime, violations, oracle)
    try:
        run.outcome = driver.run()
    except Exception as exc:  # noqa: BLE001 - kept for the checks to report
        run.crash = exc
        return run
    run.record = RunRecord.of(
        name, scenario.deadline, scenario.seed, run.outcome, oracle=oracle, policy=inner
    )
    return run


def row_json(record: RunRecord) -> str:
    """A benchmark record as the JSON text of its row."""
    return json.dumps(record.to_json(), sort_keys=True)


_RUNS: dict[tuple, Run] = {}


# ------------------------------------------------------------------------------ the contract


class PolicyContract:
    """Subclass once per policy: set ``policy`` (its registry name) and, if it needs them,
    ``params`` (its own keywords besides ``max_epochs``, ``min_epochs``, ``eta``, ``seed``)."""

    policy: str = ""
    params: Mapping = {}
    max_epochs, min_epochs, eta = 16, 1, 2

    # ---------------------------------------------------------------- helpers

    def make(self, **overrides) -> Policy:
        kw = {
            "max_epochs": self.max_epochs,
            "min_epochs": self.min_epochs,
            "eta": self.eta,
            "seed": 0,
        }
        kw.update(self.params)
        kw.update(overrides)
        return create(self.policy, **kw)

    def watched(self, scenario: Scenario, **kw) -> Run:
        """A watched run; plain runs are made once per scenario and shared by the checks."""
        args = {
            "params": self.params,
            "max_epochs": self.max_epochs,
            "min_epochs": self.min_epochs,
            "eta": self.eta,
        }
        if kw:
            return run_watched(self.policy, scenario, **args, **kw)
        key = (self.policy, repr(sorted(self.params.items())), scenario)
        if key not in _RUNS:
            _RUNS[key] = run_watched(self.policy, scenario, **args)
        return _RUNS[key]

    def simulate(self, scenario: Scenario, *, fresh: bool = False) -> Simulation:
        """simulate()'s run with its journal; made once per scenario unless ``fresh``."""
        key = ("simulate", self.policy, repr(sorted(self.params.items())), scenario)
        if fresh or key not in _RUNS:
            _RUNS[key] = self._simulate(scenario)
        return _RUNS[key]

    def _simulate(self, scenario: Scenario) -> Simulation:
        settings = SimSettings(
            workers=scenario.workers,
            configs=scenario.configs,
            max_epochs=self.max_epochs,
            min_epochs=self.min_epochs,
            eta=self.eta,
        )
        return simulate(
            scenario_trace(scenario.mode),
            self.policy,
            scenario.deadline,
            scenario.seed,
            settings,
            journal=True,
            policy_params=dict(self.params),
        )

    @staticmethod
    def expect_finished(run: Run) -> None:
        """Fail with the crash if the run did not finish."""
        if run.crash is not None:
            found = {k: v[0] for k, v in run.violations.items()}
            pytest.fail(
                f"{run.scenario.id}: the run crashed ({type(run.crash).__name__}: {run.crash}); violations: {found}",
                pytrace=False,
            )

    @classmethod
    def expect_clean(cls, run: Run, check: str) -> None:
        """Fail with the check's violations, or with the crash if the run did not finish."""
        found = run.violations.get(check)
        if found:
            pytest.fail(f"[{check}] {run.scenario.id}: " + "; ".join(found), pytrace=False)
        cls.expect_finished(run)

    # ---------------------------------------------------------------- construction

    def test_registry_name_and_common_keywords(self):
        policy = self.make(max_epochs=8, min_epochs=2, eta=3, seed=7)
        # the registry name and the class agree, so journals and tables name it right
        assert policy.name == self.policy
        # keyword-only: a positional argument is refused
        with pytest.raises(TypeError):
            type(policy)(8)
        # describe() is one line of text even before any trial exists
        line = policy.describe(PolicyContext.for_test(workers=4))
        assert isinstance(line, str) and "\n" not in line

    def test_rejects_eta_of_one_with_a_one_line_error(self):
        with pytest.raises(ConfigError) as info:
            self.make(eta=1)
        # the shared budget rule, named with its value, on one line
        assert "`eta` is 1" in str(info.value) and "\n" not in str(info.value)

    # ---------------------------------------------------------------- checks on every scenario

    @pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.id)
    def test_decisions_are_valid(self, scenario):
        run = self.watched(scenario)
        self.expect_clean(run, "decisions")
        # the search really asked the policy something
        assert any(entry[0] == "result" for entry in run.policy.log) or not run.runtime.results

    @pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.id)
    def test_hooks_never_write_trials(self, scenario):
        self.expect_clean(self.watched(scenario), "read-only")

    @pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.id)
    def test_workers_never_over_committed(self, scenario):
        run = self.watched(scenario)
        self.expect_clean(run, "commit")
        # at the end no trial holds a worker
        assert dict(run.runtime.inner.iter_running()) == {}

    @pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.id)
    def test_nothing_runs_past_the_deadline(self, scenario):
        run = self.watched(scenario)
        self.expect_clean(run, "deadline")
        out, deadline = run.outcome, scenario.deadline
        # the search ends by the deadline, with every trial over or waiting
        assert out.ended_at <= deadline
        assert not run.driver.running
        assert all(
            t.stopped_at is None or t.stopped_at <= deadline for t in run.driver.trials.values()
        )
        # no event the runtime produced is later than the deadline
        assert all(r.time <= deadline for r in run.runtime.results)
        # the best is the best finite metric reported at or before the deadline
        sign = 1.0 if scenario.mode == "max" else -1.0
        finite = [r.metric for r in run.runtime.results if math.isfinite(r.metric)]
        expected = sign * max(sign * m for m in finite) if finite else math.nan
        assert out.best == expected or (math.isnan(out.best) and math.isnan(expected))

    @pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.id)
    def test_never_reads_a_clock(self, scenario):
        self.expect_clean(self.watched(scenario), "clock")

    @pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.id)
    def test_oracle_bounds_the_best(self, scenario):
        run = self.watched(scenario)
        self.expect_finished(run)
        best, oracle = run.outcome.best, run.oracle
        # a run that reported anything is bounded by the oracle (lower is better in min mode)
        if not math.isnan(best):
            assert best <= oracle if scenario.mode == "max" else best >= oracle, (best, oracle)

    # ---------------------------------------------------------------- determinism and pickling

    @pytest.mark.parametrize("scenario", SCENARIOS[1:4:2], ids=lambda s: s.id)
    def test_same_seed_same_row_and_journal(self, scenario):
        first, second = self.simulate(scenario), self.simulate(scenario, fresh=True)
        # the JSON row is byte for byte the same
        assert row_json(first.record) == row_json(second.record)
        # and so is every journaled decision with its reason
        assert first.outcome.journal == second.outcome.journal
        # the oracle bounds simulate()'s row too
        best, oracle = first.record.best, first.record.oracle
        if not math.isnan(best):
            assert best <= oracle if scenario.mode == "max" else best >= oracle

    @pytest.mark.parametrize("scenario", SCENARIOS[1:4:2], ids=lambda s: s.id)
    def test_watching_changes_nothing(self, scenario):
        run, sim = self.watched(scenario), self.simulate(scenario)
        self.expect_finished(run)
        # choose_trial_to_run asked twice and describe() after every result leave no trace
        assert run.outcome.journal == sim.outcome.journal
        assert row_json(run.record) == row_json(sim.record)

    def test_pickle_round_trip_mid_search(self):
        scenario = SCENARIOS[1]
        original = self.watched(scenario)
        copied = self.watched(scenario, swap_at=12)
        self.expect_clean(copied, "pickle")
        self.expect_clean(copied, "decisions")
        # the swap really happened mid-search
        assert copied.policy.swapped and copied.policy.results > 12
        # the unpickled copy answered exactly as the original did, hook by hook
        assert copied.policy.log == original.policy.log
        assert copied.outcome.journal == original.outcome.journal

    # ---------------------------------------------------------------- a moving deadline

    @pytest.mark.parametrize(
        "deadline, move",
        [(200.0, (50.0, 20.0)), (60.0, (10.0, 90.0))],
        ids=["shortened", "extended"],
    )
    def test_deadline_change_is_honoured(self, deadline, move):
        scenario = Scenario("moving", deadline=deadline, seed=5)
        run = self.watched(scenario, move_deadline=move)
        self.expect_clean(run, "deadline")
        self.expect_clean(run, "decisions")
        # the search was still going when the deadline moved
        assert run.runtime.moved is not None
        _, old, new = run.runtime.moved
        # the policy saw the old deadline, then the new one from the next call on
        assert run.policy.deadlines == [old, new]
        # nothing ran past the new deadline
        assert run.outcome.ended_at <= new
        assert all(r.time <= new for r in run.runtime.results)
        assert all(entry["time"] <= new for entry in run.outcome.journal)
