"""exp.study: a search as an Optuna study, here on replays of a trace (fast, deterministic)."""

import math
import threading
from collections import Counter
from pathlib import Path

import numpy as np
import optuna
import plotly.graph_objects as go
import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import TrialState

from hypersched_nb import Experiment
from hypersched_nb.core.scaling import ScalingCurve
from hypersched_nb.experiment._study_space import inferred
from hypersched_nb.experiment.study import OPTUNA_STATE, VIRTUAL_ORIGIN
from hypersched_nb.sim.clock import VirtualClock
from hypersched_nb.sim.runtime import SimRuntime
from hypersched_nb.sim.trace import Trace

SHARED = Path(__file__).resolve().parents[3] / "shared" / "traces"
PLOTS = (
    optuna.visualization.plot_param_importances,
    optuna.visualization.plot_parallel_coordinate,
    optuna.visualization.plot_intermediate_values,
    optuna.visualization.plot_slice,
    optuna.visualization.plot_contour,
)


def replay(trace, **kw):
    kw.setdefault("policy", "asha")
    kw.setdefault("deadline", 150)
    kw.setdefault("workers", 3)
    kw.setdefault("configs", 10)
    return Experiment.replay(trace, **kw)


def expected_states(exp) -> Counter:
    """The Optuna states the results say the trials are in."""
    completed = {e["trial"] for e in exp.events if e["action"] == "Complete"}
    diverged = {e["trial"] for e in exp.events if e["reason"].startswith("diverged")}
    return Counter(
        "FAIL" if tid in diverged else "COMPLETE" if tid in completed else OPTUNA_STATE[state]
        for tid, state in exp.results()["state"].items()
    )


def assert_is_the_search(study, exp) -> None:
    """Every trial there, in its state, with its parameters and its curve."""
    results = exp.statistics().trials
    assert len(study.trials) == len(exp.results())  # one Optuna trial per trial
    assert Counter(t.state.name for t in study.trials) == expected_states(exp)
    for t, row in zip(study.trials, results, strict=True):
        assert t.number == row.trial_id == t.user_attrs["hypersched_trial"]  # same numbers
        assert all(row.config[name] == value for name, value in t.params.items())
        curve = {k: m for k, m in enumerate(row.metrics, 1) if math.isfinite(m)}
        assert t.intermediate_values == curve  # per epoch (a NaN left out)
        assert t.user_attrs["state"] == row.state and t.user_attrs["reason"] == row.reason


def assert_the_five_plots_draw(study) -> None:
    for plot in PLOTS:
        assert isinstance(plot(study), go.Figure), plot.__name__  # each draws, unchanged


def test_a_replayed_search_is_an_optuna_study_of_every_trial(trace):
    exp = replay(trace, seed=4)
    exp.run()
    study = exp.study
    assert isinstance(study, optuna.Study)
    assert study.direction is optuna.study.StudyDirection.MAXIMIZE  # mode "max"
    assert_is_the_search(study, exp)
    assert_the_five_plots_draw(study)


def test_completed_trials_are_valued_at_their_best_epoch_and_stopped_ones_at_their_last(trace):
    exp = replay(trace, seed=4)
    exp.run()
    rows = {r.trial_id: r for r in exp.statistics().trials}
    states = Counter()
    for t in exp.study.trials:
        row = rows[t.number]
        states[t.state] += 1
        if t.state is TrialState.COMPLETE:
            assert row.reason.startswith("completed")  # it trained to max_epochs
            assert t.value == row.best == max(row.metrics)
        elif t.state is TrialState.PRUNED:
            assert row.state == "TERMINATED" and not row.reason.startswith("completed")
            assert t.value == row.metrics[-1]  # as Optuna's own tell(state=PRUNED)
    assert states[TrialState.COMPLETE] and states[TrialState.PRUNED]  # both are here


def test_the_best_cut_short_by_the_deadline_is_pruned_and_best_value_is_the_best_completed(trace):
    exp = replay(trace, seed=4)
    exp.run()
    study = exp.study
    best = study.trials[exp.best.trial_id]
    # the search's best trained until the deadline stopped it: not to the end
    assert best.state is TrialState.PRUNED and best.user_attrs["reason"] == "deadline reached"
    assert max(best.intermediate_values.values()) == exp.best.metric  # its curve holds it
    complete = [t.value for t in study.trials if t.state is TrialState.COMPLETE]
    assert study.best_value == max(complete) < exp.best.metric


def test_a_paused_trial_is_pruned_with_the_policy_s_reason_and_one_never_started_waits(trace):
    exp = replay(trace, policy="hypersched", seed=0, configs=12)
    exp.run()
    paused = [r for r in exp.statistics().trials if r.state == "PAUSED"]
    assert paused  # hypersched paused some, and the deadline came before they resumed
    study = exp.study
    pending = [r.trial_id for r in exp.statistics().trials if r.state == "PENDING"]
    assert pending  # and offered one it never started
    assert [t.number for t in study.trials if t.state is TrialState.WAITING] == pending
    for row in paused:
        t = study.trials[row.trial_id]
        assert t.state is TrialState.PRUNED and t.user_attrs["state"] == "PAUSED"
        assert t.user_attrs["reason"] == row.reason != ""  # why it was paused
        assert t.value == row.metrics[-1] and t.datetime_complete >= t.datetime_start
    assert_is_the_search(study, exp)


def test_a_diverged_trial_fails():
    epochs, ids = 6, tuple(range(4))
    e = np.arange(1, epochs + 1)
    metrics = {i: 0.5 * (1 - np.exp(-e / 2.0)) + 0.01 * i for i in ids}
    metrics[2] = metrics[2].copy()
    metrics[2][1] = math.nan  # trial with trace id 2 diverges at epoch 2
    trace = Trace("nan", ids, metrics, {i: np.full(epochs, 10.0) for i in ids},
                  {i: {"lr": 0.1 * (i + 1)} for i in ids}, metric_name="acc", mode="max",
                  scaling=ScalingCurve({}), startup_seconds=0.0)  # fmt: skip
    exp = Experiment.replay(trace, policy="fifo", deadline=500, workers=2, configs=4)
    exp.run()
    study = exp.study
    failed = [t for t in study.trials if t.state is TrialState.FAIL]
    # the one that diverged: stopped there, and failed as its sampler was told
    assert [t.user_attrs["reason"] for t in failed] == ["diverged: metric nan"]
    assert failed[0].value is None and list(failed[0].intermediate_values) == [1]  # NaN left out
    assert_is_the_search(study, exp)


def test_a_replay_s_trials_run_on_trace_time_from_the_virtual_origin(trace):
    exp = replay(trace, seed=4)
    exp.run()
    rows = {r.trial_id: r for r in exp.statistics().trials}
    for t in exp.study.trials:
        row = rows[t.number]
        if row.started_at is not None:
            assert (t.datetime_start - VIRTUAL_ORIGIN).total_seconds() == row.started_at
        if row.stopped_at is not None:
            assert (t.datetime_complete - VIRTUAL_ORIGIN).total_seconds() == row.stopped_at


def test_a_replay_s_parameters_are_read_off_its_configurations(trace):
    exp = replay(trace, seed=4)
    exp.run()
    dists = exp.study.trials[0].distributions
    # the tiny trace's lr spans 1e-4 .. 1e-1 (log), width 16 .. 48; the trace's own ids too
    assert dists["lr"] == FloatDistribution(1e-4, 0.1, log=True)
    assert dists["width"] == IntDistribution(16, 48)
    assert set(dists) == {"lr", "width", "trace_trial"}


def test_a_space_read_off_configurations_keeps_shared_settings_fixed():
    space = inferred([
        {"lr": 0.001, "act": "relu", "layers": [1, 2], "seed": 3},
        {"lr": 0.5, "act": "tanh", "layers": [4], "seed": 3},
        {"lr": 0.01, "act": "relu", "seed": 3},
    ])  # fmt: skip
    assert space.fixed == {"seed": 3}  # the same in every configuration
    assert space.distributions["lr"] == FloatDistribution(0.001, 0.5, log=True)
    assert space.distributions["act"] == CategoricalDistribution(["relu", "tanh"])
    # a value that is not a plain scalar becomes its JSON text
    assert space.distributions["layers"] == CategoricalDistribution(["[1, 2]", "[4]"])


class Held:
    """Wraps a runtime; every ``advance`` waits until the test lets it go."""

    def __init__(self, inner):
        self.inner, self.calls = inner, 0
        self._permits, self._cv = threading.Semaphore(0), threading.Condition()

    def workers(self):
        return self.inner.workers()

    def execute(self, ins):
        self.inner.execute(ins)

    def advance(self, until):
        with self._cv:
            self.calls += 1
            self._cv.notify_all()
        self._permits.acquire()
        return self.inner.advance(until)

    def step(self, n: int) -> None:
        """Let ``n`` advances through; return once the driver waits in the next one."""
        with self._cv:
            target = self.calls + n
        self._permits.release(n)
        with self._cv:
            assert self._cv.wait_for(lambda: self.calls >= target, timeout=30)

    def release(self) -> None:
        self._permits.release(1_000_000)


def test_a_running_search_s_study_is_one_moment_with_its_running_trials(trace):
    clock = VirtualClock()
    runtime = Held(SimRuntime(trace, clock, 3))
    configs = [trace.config(i) for i in trace.ids]
    exp = Experiment._on(runtime, clock, configs, metric="acc", deadline=150.0,
                         max_epochs=trace.longest, policy="asha")  # fmt: skip
    exp.start()
    try:
        runtime.step(12)  # the driver waits: the search stands still mid-run
        study = exp.study
        states = Counter(t.state for t in study.trials)
        assert states[TrialState.RUNNING] == 3  # one per worker
        assert_is_the_search(study, exp)
        assert_the_five_plots_draw(study)
        running = [t for t in study.trials if t.state is TrialState.RUNNING]
        assert all(t.datetime_complete is None and t.value is None for t in running)
    finally:
        runtime.release()
        exp.wait()
    assert Counter(t.state.name for t in exp.study.trials)[TrialState.RUNNING.name] == 0


@pytest.mark.skipif(not SHARED.is_dir(), reason="needs ../shared/traces (not in a fresh clone)")
def test_a_replay_of_an_lcbench_trace_is_a_study_every_plot_draws():
    exp = Experiment.replay(SHARED / "lcbench-167181.csv", policy="hypersched", deadline=20000,
                            workers=4, configs=40, seed=0)  # fmt: skip
    exp.run()
    study = exp.study
    assert_is_the_search(study, exp)
    assert sum(t.state is TrialState.COMPLETE for t in study.trials) >= 2  # importances need them
    assert_the_five_plots_draw(study)
    dists = study.trials[0].distributions
    assert dists["learning_rate"].log and not dists["momentum"].log  # spread read off the trace
