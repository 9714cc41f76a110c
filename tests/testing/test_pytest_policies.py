"""The policy contract can fail: each of its checks catches a policy (or runtime) built to break it.

Specified here, one deliberately broken policy per check: an answer that is not a Verdict,
a choice that changes when asked twice or names a running trial, a retire or allocate that
names the wrong trials or gives no reason, a wake-up that never lets time pass, a describe() of two lines, a
hook that writes a trial, a clock read, a policy that cannot be pickled or forgets its state
when pickled; and, for the watchers themselves, a result that reaches the policy after the
deadline and a runtime that holds what the driver does not believe.
"""

from __future__ import annotations

import math
import threading
import time
from types import SimpleNamespace

import pytest

from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.decisions import CONTINUE, Verdict
from hypersched_nb.core.events import Result, Start
from hypersched_nb.core.policies import REGISTRY, create
from hypersched_nb.core.policies._random import RandomFIFO
from hypersched_nb.core.trial import Trial, TrialState
from hypersched_nb.sim.clock import VirtualClock
from hypersched_nb.sim.runtime import SimRuntime
from hypersched_nb.sim.trace import TRACE_KEY
from hypersched_nb.testing.pytest_policies import (
    SCENARIOS,
    ClockRead,
    PolicyContract,
    Violations,
    WatchedRuntime,
    no_clock_reads,
    synthetic_trace,
    watch,
)

MID = SCENARIOS[1]


class Stringly(RandomFIFO):
    name = "stringly"

    def on_trial_result(self, trial, result, ctx):
        return "CONTINUE"


class Fickle(RandomFIFO):
    name = "fickle"
    _calls = 0

    def choose_trial_to_run(self, ctx):
        self._calls += 1
        return super().choose_trial_to_run(ctx) if self._calls % 2 else None


class PicksRunning(RandomFIFO):
    name = "picks-running"

    def choose_trial_to_run(self, ctx):
        return next(iter(ctx.running.values()), None) or super().choose_trial_to_run(ctx)


class RetiresRunning(RandomFIFO):
    name = "retires-running"

    def retire(self, ctx):
        return dict.fromkeys(ctx.running, "retired while running")


class Mute(RandomFIFO):
    name = "mute"

    def retire(self, ctx):
        return dict.fromkeys(ctx.paused, None)

    def on_trial_result(self, trial, result, ctx):
        return Verdict.pause("a turn each") if result.epoch == 1 else CONTINUE


class AsksZero(RandomFIFO):
    name = "asks-zero"

    def allocate(self, ctx):
        return {tid: 0 for tid in ctx.running}


class Spinner(RandomFIFO):
    name = "spinner"

    def next_wakeup(self, ctx):
        return ctx.now  # "ask me again now", forever


class Chatty(RandomFIFO):
    name = "chatty"

    def describe(self, ctx):
        return "line one\nline two"


class Scribbler(RandomFIFO):
    name = "scribbler"

    def on_trial_result(self, trial, result, ctx):
        trial.reason = "mine"
        return CONTINUE


class ClockReader(RandomFIFO):
    name = "clock-reader"

    def on_trial_result(self, trial, result, ctx):
        time.monotonic()
        return CONTINUE


class Unpicklable(RandomFIFO):
    name = "unpicklable"

    def __init__(self):
        self.key = lambda trial: trial.trial_id


class Forgetful(RandomFIFO):
    """Stops every fifth result it sees, but does not pickle its count."""

    name = "forgetful"

    def __init__(self):
        self.seen = 0

    def on_trial_result(self, trial, result, ctx):
        self.seen += 1
        return Verdict.stop("every fifth") if self.seen % 5 == 0 else CONTINUE

    def __getstate__(self):
        return {k: v for k, v in vars(self).items() if k != "seen"} | {"seen": 0}


@pytest.fixture
def register(monkeypatch):
    def add(cls):
        monkeypatch.setitem(REGISTRY, cls.name, f"{__name__}:{cls.__name__}")
        return type(f"Test{cls.__name__}", (PolicyContract,), {"policy": cls.name})()

    return add


@pytest.mark.parametrize(
    ("cls", "complaint"),
    [
        (Stringly, "on_trial_result returned 'CONTINUE', not a Verdict"),
        (Fickle, "choose_trial_to_run is not idempotent"),
        (PicksRunning, "it must be a PENDING or PAUSED trial"),
        (RetiresRunning, "in state RUNNING"),
        (Mute, "the reason None"),
        (AsksZero, "allocate asked 0 workers for trial"),
        (Spinner, "the search is stuck"),
        (Chatty, "not one line"),
    ],
)
def test_invalid_decisions_are_caught(register, cls, complaint):
    contract = register(cls)
    with pytest.raises(pytest.fail.Exception, match=r"^\[decisions\]") as info:
        contract.test_decisions_are_valid(MID)
    # the failure names what was wrong
    assert complaint in str(info.value)


def test_a_hook_that_writes_a_trial_is_caught(register):
    with pytest.raises(
        pytest.fail.Exception, match=r"^\[read-only\] mid: on_trial_result changed a trial record"
    ):
        register(Scribbler).test_hooks_never_write_trials(MID)


def test_a_clock_read_is_caught(register):
    with pytest.raises(
        pytest.fail.Exception,
        match=r"^\[clock\] mid: clock-reader.on_trial_result called time.monotonic\(\)",
    ):
        register(ClockReader).test_never_reads_a_clock(MID)
    # the trap is lifted after the run
    assert isinstance(time.monotonic(), float)


def test_a_policy_that_cannot_be_pickled_is_caught(register):
    with pytest.raises(pytest.fail.Exception, match=r"^\[pickle\] mid: pickle.dumps/loads failed"):
        register(Unpicklable).test_pickle_round_trip_mid_search()


def test_a_policy_that_forgets_its_state_when_pickled_is_caught(register):
    # the copy decides differently from the original on the same continuation
    with pytest.raises(AssertionError):
        register(Forgetful).test_pickle_round_trip_mid_search()


def test_the_same_policies_done_right_pass(register):
    contract = register(RandomFIFO)
    contract.policy = "random"
    # the control: the checks above fail for the breakage, not for the harness
    contract.test_decisions_are_valid(MID)
    contract.test_pickle_round_trip_mid_search()


def test_a_result_reaching_the_policy_after_the_deadline_is_caught():
    # the driver drops such a result, so the watcher is handed one directly
    violations = Violations()
    policy = watch(create("random"), violations)
    trial = Trial(0, {})
    trial.state = TrialState.RUNNING
    ctx = PolicyContext.for_test(trials={0: trial}, deadline=25.0)
    policy.on_trial_result(trial, Result(0, 1, 0.5, 30.0, 30.0, 1), ctx)
    assert violations["deadline"] == ["result at 30.0 reached the policy past deadline 25.0"]


def test_a_runtime_holding_what_the_driver_does_not_believe_is_caught():
    trace = synthetic_trace()
    violations = Violations()
    runtime = WatchedRuntime(SimRuntime(trace, VirtualClock(), 2), violations)
    runtime.driver = SimpleNamespace(running={}, capacity=2, deadline=math.inf)
    runtime.execute(Start(0, {TRACE_KEY: 0}, 2))
    assert violations["commit"] == [
        "after Start(trial_id=0, config={'trace_trial': 0}, workers=2, restore=False): runtime holds {0: 2}, driver believes {}"
    ]


def test_the_clock_trap_is_for_the_policys_thread_only():
    seen = []
    with no_clock_reads("policy"):
        # another thread (a background search of another test) reads its clock as usual
        worker = threading.Thread(target=lambda: seen.append(time.monotonic()))
        worker.start()
        worker.join()
        with pytest.raises(
            ClockRead, match=r"^policy called time.perf_counter\(\); the core must use ctx.now$"
        ):
            time.perf_counter()
    assert len(seen) == 1 and isinstance(seen[0], float)
