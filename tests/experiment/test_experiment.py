"""Experiment: the user's object, run here on the simulator (fast and deterministic)."""

import math
import os
import threading

import pytest
from optuna.distributions import CategoricalDistribution
from optuna.trial import TrialState as OptunaState

from hypersched_nb import Experiment
from hypersched_nb.core.policies._asha import ASHA
from hypersched_nb.errors import ConfigError, HyperschedError
from hypersched_nb.experiment.simulate import SimSettings, simulate
from hypersched_nb.experiment.space import REPEAT
from hypersched_nb.sim.clock import VirtualClock
from hypersched_nb.sim.runtime import SimRuntime


class Held:
    """Wraps a runtime; every ``advance`` waits until the test lets it go (``step``/``release``)."""

    def __init__(self, inner):
        self.inner = inner
        self._permits = threading.Semaphore(0)
        self._cv = threading.Condition()
        self.calls = 0

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

    def step(self, n: int = 1) -> None:
        """Let ``n`` advances through and return once the driver waits in the next one."""
        with self._cv:
            target = self.calls + n
        self._permits.release(n)
        with self._cv:
            if not self._cv.wait_for(lambda: self.calls >= target, timeout=30):
                raise TimeoutError("the driver never came back to advance()")

    def release(self) -> None:
        self._permits.release(1_000_000)


def replay(trace, **kw):
    kw.setdefault("policy", "asha")
    kw.setdefault("deadline", 150)
    kw.setdefault("workers", 3)
    kw.setdefault("configs", 10)
    return Experiment.replay(trace, **kw)


def held(trace, deadline=150.0, workers=3, **kw):
    """An experiment whose every runtime wait the test lets through."""
    clock = VirtualClock()
    runtime = Held(SimRuntime(trace, clock, workers))
    configs = [trace.config(i) for i in trace.ids]
    exp = Experiment._on(runtime, clock, configs, metric="acc", deadline=deadline,
                         max_epochs=trace.longest, policy="asha", **kw)  # fmt: skip
    return exp, runtime


def test_a_replay_finds_what_the_benchmark_finds(trace):
    exp = replay(trace, seed=4)
    exp.run()
    run = simulate(trace, "asha", 150, 4, SimSettings(workers=3, configs=10)).record
    # the same offers, policy and driver: the same best and the same number of trials
    assert exp.best.metric == run.best
    assert len(exp.results()) >= run.trials_started
    assert (exp.results()["started_at"].notna()).sum() == run.trials_started


def test_a_replay_has_no_weights_and_load_best_says_what_it_needs(trace):
    exp = replay(trace, seed=4)
    exp.run()
    assert exp.best is not None and exp.best_checkpoint() is None  # curves, not models
    with pytest.raises(HyperschedError, match="needs a live search"):
        exp.load_best()


def test_the_same_seed_gives_the_same_search(trace):
    a, b = replay(trace, seed=1), replay(trace, seed=1)
    a.run(), b.run()
    assert a.results().equals(b.results())
    assert a.events == b.events


def test_results_have_one_row_per_trial_and_agree_with_best(trace):
    exp = replay(trace)
    best = exp.run()
    df = exp.results()
    assert list(df.columns[:9]) == [
        "state",
        "epochs",
        "best",
        "last",
        "workers",
        "peak_workers",
        "started_at",
        "stopped_at",
        "reason",
    ]
    assert {"config_lr", "config_width"} <= set(df.columns)
    assert df.loc[best.trial_id, "best"] == best.metric  # the best row is the best result
    assert df["best"].max() == best.metric
    assert (
        trace.metrics[best.config["trace_trial"]][best.epoch - 1] == best.metric
    )  # and it was reported
    assert set(df["state"]) <= {"TERMINATED", "PENDING", "PAUSED"}  # nothing runs after the end


def test_every_decision_is_journaled_with_a_reason(trace):
    exp = replay(trace)
    exp.run()
    actions = {e["action"] for e in exp.events}
    assert {"Start", "Stop"} <= actions
    assert all(e["reason"] for e in exp.events)
    assert [e["time"] for e in exp.events] == sorted(e["time"] for e in exp.events)


def test_allocation_history_never_overcommits_and_ends_at_zero(trace):
    exp = replay(trace, workers=3, policy="random")
    exp.run()
    snap = exp.statistics()
    times, series = snap.allocation_series()
    for i in range(len(times)):
        assert sum(s[i] for s in series.values()) <= 3  # never more workers than the cluster has
    assert all(s[-1] == 0 for s in series.values())  # the deadline stopped everything
    assert max(r.peak_workers for r in snap.trials) >= 1


def test_a_sampler_learns_from_every_trial(trace):
    clock = VirtualClock()
    runtime = SimRuntime(trace, clock, 3)
    space = {"trace_trial": CategoricalDistribution(list(trace.ids))}
    exp = Experiment._on(runtime, clock, space, metric="acc", deadline=200, max_epochs=trace.longest,
                         policy="asha", sampler="tpe", seed=0)  # fmt: skip
    exp.run()
    study = exp.source.study
    df = exp.results()
    offers = [t for t in study.trials if not t.user_attrs.get(REPEAT)]  # not a redrawn repeat
    assert [t.params for t in offers] == [{"trace_trial": c} for c in df["config_trace_trial"]]
    assert all(t.state is not OptunaState.RUNNING for t in offers)  # every offer was told
    complete = [t for t in offers if t.state is OptunaState.COMPLETE]
    epochs = dict(zip(df["config_trace_trial"], df["epochs"], strict=True))  # one trial each
    assert complete and all(epochs[t.params["trace_trial"]] == trace.longest for t in complete)


def test_an_offer_never_started_is_told_failed_when_the_search_ends(trace):
    # admission closes with one configuration offered and waiting (deadline 100 s, 3 workers)
    clock = VirtualClock()
    space = {"trace_trial": CategoricalDistribution(list(trace.ids))}
    exp = Experiment._on(SimRuntime(trace, clock, 3), clock, space, metric="acc", deadline=100,
                         max_epochs=trace.longest, policy="hypersched", sampler="tpe", seed=0)  # fmt: skip
    exp.run()
    states = dict(zip(exp.results()["config_trace_trial"], exp.results()["state"], strict=True))
    never = {c for c, s in states.items() if s == "PENDING"}
    offers = [t for t in exp.source.study.trials if not t.user_attrs.get(REPEAT)]
    failed = {t.params["trace_trial"] for t in offers if t.state is OptunaState.FAIL}
    assert never and failed == never  # no evidence of them: a sampler ignores a failed trial
    assert all(t.state is not OptunaState.RUNNING for t in offers)
    assert exp.source.told == exp.source.offered


def test_a_deadline_moved_closer_ends_the_search_there(trace):
    exp, runtime = held(trace, deadline=150.0)
    exp.start()
    runtime.step(4)
    now = exp.statistics().time
    exp.deadline = "-100s"  # 150 s -> 50 s, while the driver waits
    runtime.release()
    exp.wait()
    assert exp.deadline == 50.0 and now < 50.0
    snap = exp.statistics()
    assert snap.time == 50.0  # it ended at the new deadline
    assert all(e["time"] <= 50.0 for e in exp.events)  # nothing after it counts
    moved = [e for e in exp.events if e["action"] == "DeadlineChanged"]
    assert len(moved) == 1 and "by the user" in moved[0]["reason"]


def test_a_deadline_moved_later_lets_the_search_go_on(trace):
    exp, runtime = held(trace, deadline=30.0)
    exp.start()
    runtime.step(2)
    exp.deadline = "+60s"
    runtime.release()
    exp.wait()
    assert exp.statistics().time == 90.0


def test_stop_ends_gracefully_and_keeps_the_best(trace):
    exp, runtime = held(trace, deadline=150.0)
    exp.start()
    runtime.step(6)
    best = exp.best
    exp.stop(wait=False)
    runtime.release()
    exp.wait()
    assert exp.statistics().status == "finished"
    assert any(e["reason"] == "stopped by the user" for e in exp.events)
    assert exp.best is not None and (best is None or exp.best.metric >= best.metric)
    with pytest.raises(HyperschedError, match="no longer move"):
        exp.deadline = "+1m"


def test_snapshots_taken_during_a_search_are_consistent(trace):
    exp = replay(trace, policy="random", workers=3, deadline=400)
    seen = []

    def watch():
        while not exp.done:
            seen.append(exp.statistics())

    exp.start()
    watcher = threading.Thread(target=watch)
    watcher.start()
    exp.wait()
    watcher.join()
    for snap in seen:
        assert sum(r.workers for r in snap.running) <= 3  # a reader never sees a half-made turn
        assert snap.counts["RUNNING"] == len(snap.running)


def test_a_search_that_raises_reports_it(trace):
    class Broken:
        def workers(self):
            return 2

        def execute(self, ins):
            pass

        def advance(self, until):
            raise RuntimeError("the cluster went away")

    exp = Experiment._on(Broken(), VirtualClock(), [{"a": 1}], metric="acc", deadline=10,
                         max_epochs=3, policy="asha")  # fmt: skip
    exp.start()
    with pytest.raises(RuntimeError, match="went away"):
        exp.wait()
    snap = exp.statistics()
    assert snap.status == "failed" and "went away" in snap.error


def test_a_search_starts_once(trace):
    exp = replay(trace)
    exp.run()
    with pytest.raises(HyperschedError, match="build a new Experiment"):
        exp.start()


def test_waiting_or_stopping_before_the_start_is_an_error(trace):
    exp = replay(trace)
    with pytest.raises(HyperschedError, match="not started"):
        exp.wait()
    with pytest.raises(HyperschedError, match="not started"):
        exp.stop()
    assert exp.statistics().status == "created" and exp.best is None and exp.events == []


def test_the_deadline_before_the_start(trace):
    exp = replay(trace, deadline=150)
    assert exp.deadline == 150.0
    exp.deadline = "+30s"  # before the start a shift moves the deadline set so far
    assert exp.deadline == 180.0
    exp.deadline = "1m"
    exp.run()
    assert exp.statistics().deadline == 60.0


def test_a_wall_clock_deadline_on_a_virtual_clock_is_refused(trace):
    exp = replay(trace, deadline="17:00")
    with pytest.raises(ConfigError, match="virtual clock"):
        exp.start()


class Net:
    def setup(self, config, ctx): ...
    def step(self): ...


@pytest.mark.parametrize(
    "kw, name",
    [(dict(trainable=Net()), "trainable"), (dict(metric=""), "metric"), (dict(mode="up"), "mode"),
     (dict(deadline="soon"), "deadline"), (dict(max_epochs=0), "max_epochs"), (dict(eta=1), "eta"),
     (dict(min_epochs=2.5), "min_epochs"), (dict(policy="best"), "policy"), (dict(cluster=0), "cluster"),
     (dict(cluster=True), "cluster"), (dict(sampler="cma"), "sampler"), (dict(space={"lr": (1, 2)}), "space"),
     (dict(poll=0), "poll"), (dict(scaling="fast"), "scaling"), (dict(configs=0), "configs")],
)  # fmt: skip
def test_bad_input_is_a_one_line_config_error_naming_the_parameter(kw, name):
    args = (
        dict(trainable=Net, space={"lr": [0.1, 0.01]}, deadline="1m", max_epochs=5, policy="asha")
        | kw
    )
    with pytest.raises(ConfigError) as err:
        Experiment(**args)
    assert name in str(err.value) and "\n" not in str(err.value)


MUST = {
    "eta": "but must be a finite number > 1",
    "seed": "but must be an integer from 0 to 2**32 - 1",
    "configs": "but must be a number of configurations >= 1, or None",
    "target": "but must be a finite number (the metric to reach), or None",
    "poll": "but must be a finite number of seconds > 0",
    "checkpoint_dir": "but must be a folder path or an fsspec URL, or None",
}


@pytest.mark.parametrize(
    "kw, message",
    [(dict(eta=math.inf), f"`eta` is inf, {MUST['eta']}"), (dict(eta="4"), f"`eta` is '4', {MUST['eta']}"),
     (dict(seed=-1), f"`seed` is -1, {MUST['seed']}"), (dict(seed=2**32), f"`seed` is 4294967296, {MUST['seed']}"),
     (dict(configs=2.5), f"`configs` is 2.5, {MUST['configs']}"), (dict(configs="10"), f"`configs` is '10', {MUST['configs']}"),
     (dict(configs=True), f"`configs` is True, {MUST['configs']}"), (dict(target="0.9"), f"`target` is '0.9', {MUST['target']}"),
     (dict(target=math.nan), f"`target` is nan, {MUST['target']}"), (dict(target=True), f"`target` is True, {MUST['target']}"),
     (dict(poll=math.inf), f"`poll` is inf, {MUST['poll']}"), (dict(poll=True), f"`poll` is True, {MUST['poll']}"),
     (dict(checkpoint_dir=3), f"`checkpoint_dir` is 3, {MUST['checkpoint_dir']}"),
     (dict(checkpoint_dir=""), f"`checkpoint_dir` is '', {MUST['checkpoint_dir']}"),
     (dict(cluster=""), "`cluster` is '', but must be a scheduler address; write it as 'tcp://host:8786'"),
     (dict(cluster="2"), "`cluster` is '2', a string, but a number of workers must be an int (2)"),
     (dict(cluster="notaddress"), "`cluster` is 'notaddress', which is not an address (missing port"),
     (dict(cluster="tcp2://h:1"), "`cluster` is 'tcp2://h:1', which is not an address (unknown address scheme"),
     (dict(space=[3]), "`space[0]` is 3, but each configuration of a list must be a dict"),
     (dict(space=[{"lr": 1}, "x"]), "`space[1]` is 'x', but each configuration of a list must be a dict"),
     (dict(deadline="-5m"), "`deadline` is '-5m', which is before the search starts; give a budget such as '20m'"),
     (dict(policy_params={"brackets": "2"}), "`policy_params` is {'brackets': '2'}, but policy 'asha' cannot take it ('<' not supported"),
     (dict(max_workers=0, policy="seer"), "`max_workers` is 0, but must be a number of workers >= 1, or None"),
     (dict(cost_budget=0, policy="seer"), "`cost_budget` is 0, but must be a finite number of worker-seconds > 0, or None"),
     (dict(cost_budget=math.inf, policy="seer"), "`cost_budget` is inf, but must be a finite number of worker-seconds > 0"),
     (dict(step_timeout=0), "`step_timeout` is 0, but must be a number of seconds > 0, 'auto'"),
     (dict(step_timeout="soon"), "`step_timeout` is 'soon', but must be a number of seconds > 0"),
     (dict(max_workers=4), "`max_workers` is 4, but policy ASHA does not size the cluster: use policy='seer', or leave it out"),
     (dict(cost_budget=60.0), "`cost_budget` is 60.0, but policy ASHA does not size the cluster: use policy='seer'"),
     (dict(max_workers=2, cluster=3, policy="seer"), "`max_workers` is 2, below the 3 workers `cluster` starts with: give max_workers >= 3"),
     (dict(early_signal="maybe"), "`early_signal` is 'maybe', but must be one of 'auto', 'trust', 'doubt'"),
     (dict(early_signal=None), "`early_signal` is None, but must be one of 'auto', 'trust', 'doubt'"),
     (dict(early_signal="trust", policy=ASHA()), "`early_signal` is 'trust' with a ready-made policy; pass it to its constructor")],
)  # fmt: skip
def test_each_bad_value_is_one_line_saying_what_it_must_be(kw, message):
    args = dict(trainable=Net, space={"lr": [0.1]}, deadline="1m", max_epochs=5, policy="asha") | kw
    with pytest.raises(ConfigError) as err:
        Experiment(**args)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_a_cluster_address_is_read_when_built_and_connected_to_only_at_the_start():
    exp = Experiment(Net, {"lr": [0.1]}, deadline="1m", policy="asha", cluster="tcp://127.0.0.1:1")
    assert exp.cluster == "tcp://127.0.0.1:1"  # nothing listens there: start() says so
    with pytest.raises(
        ConfigError, match="`cluster` is 'tcp://127.0.0.1', which is not an address"
    ):
        Experiment(Net, {"lr": [0.1]}, deadline="1m", policy="asha", cluster="tcp://127.0.0.1")


@pytest.mark.parametrize(
    "kw, message",
    [(dict(workers=0), "`workers` is 0, but must be a number of workers >= 1"),
     (dict(workers="3"), "`workers` is '3', but must be a number of workers >= 1"),
     (dict(configs=2.5), f"`configs` is 2.5, {MUST['configs']}"), (dict(seed=-1), f"`seed` is -1, {MUST['seed']}"),
     (dict(startup=-1), "`startup` is -1, but must be a number of seconds >= 0, or None"),
     (dict(max_epochs=0), "`max_epochs` is 0, but must be >= min_epochs (1)"),
     (dict(early_signal="sure"), "`early_signal` is 'sure', but must be one of 'auto', 'trust', 'doubt'")],
)  # fmt: skip
def test_a_replays_bad_values_are_one_line_too(trace, kw, message):
    with pytest.raises(ConfigError) as err:
        replay(trace, **kw)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_early_signal_says_whether_the_first_epochs_judge_and_is_journaled(tmp_path):
    args = dict(trainable=Net, space={"lr": [0.1]}, deadline="1m", max_epochs=20)
    args["checkpoint_dir"] = tmp_path
    default = Experiment(**args)
    assert default.early_signal == "auto" and default.policy.trust.mode() == "doubt"
    trusting = Experiment(**args, early_signal="trust")
    assert trusting.policy.trust.mode() == "trust"  # epoch 1 judges from the first result
    record = trusting._settings.to_record(deadline=60.0, space_record=None)
    assert record["early_signal"] == "trust"  # open() and resume() read it
    asha = Experiment(**args, policy="asha", early_signal="doubt")
    assert isinstance(asha.policy, ASHA)  # a policy that never judges by first epochs ignores it


def test_everything_after_the_space_is_a_keyword():
    # Experiment(trainable, space, metric, ...) would bind a metric to the wrong place silently
    with pytest.raises(TypeError):
        Experiment(Net, {"lr": [0.1]}, "val_acc")
    # and there is no catch-all: a misspelt setting is refused, not handed to the policy
    with pytest.raises(TypeError, match="bogus"):
        Experiment(Net, {"lr": [0.1]}, deadline="1m", policy="asha", bogus=3)


def test_a_named_policy_takes_its_own_settings_from_policy_params():
    exp = Experiment(Net, {"lr": [0.1]}, deadline="1m", max_epochs=16, eta=2, policy="asha",
                     policy_params={"brackets": 2})  # fmt: skip
    assert exp.policy.name == "asha" and exp.policy.brackets == 2
    with pytest.raises(ConfigError, match="asha") as err:
        Experiment(Net, {"lr": [0.1]}, deadline="1m", policy="asha", policy_params={"bogus": 3})
    assert "\n" not in str(err.value)


def test_a_ready_made_policy_takes_no_policy_params():
    from hypersched_nb.core.policies import create

    ready = create("asha", max_epochs=16, min_epochs=1, eta=3, seed=0)
    exp = Experiment(Net, {"lr": [0.1]}, deadline="1m", max_epochs=16, policy=ready)
    assert exp.policy is ready  # used as it is
    with pytest.raises(ConfigError, match="policy_params") as err:
        Experiment(Net, {"lr": [0.1]}, deadline="1m", policy=ready, policy_params={"eta": 2})
    assert "\n" not in str(err.value)


def test_the_space_defaults_to_the_trainables_own():
    class WithSpace(Net):
        @classmethod
        def space(cls):
            return {"lr": [0.1, 0.01]}

    exp = Experiment(WithSpace, deadline="1m", max_epochs=5, policy="asha")
    assert "lr" in exp.source.distributions
    with pytest.raises(ConfigError, match="space"):
        Experiment(Net, deadline="1m", max_epochs=5, policy="asha")


def test_the_runtime_wait_is_sliced_on_a_wall_clock():
    from hypersched_nb.experiment._observed import Gate, Observed

    class Inner:
        untils: list = []  # noqa: RUF012 - shared on purpose: both instances record here

        def workers(self):
            return 1

        def advance(self, until):
            self.untils.append(until)
            return []

    gate = Gate()
    gate.enter()
    obs = Observed(Inner(), VirtualClock(10.0), gate, poll=0.25)
    obs.advance(100.0)
    # a moved deadline or a stop is seen within one slice
    assert Inner.untils == [10.25]


def test_a_deadline_moved_into_the_past_ends_the_search_now(trace):
    exp, runtime = held(trace, deadline=150.0)
    exp.start()
    runtime.step(5)
    now = exp.statistics().time
    exp.deadline = "-1h"
    runtime.release()
    exp.wait()
    assert exp.deadline == now  # not before: what was reported until now still counts
    assert exp.statistics().time == now


def test_a_new_search_in_a_folder_holding_a_journal_is_refused_before_anything_starts(tmp_path):
    from hypersched_nb.testing.trainables import TinyRegression

    journal = tmp_path / "journal.jsonl"
    journal.write_text('{"k":"search","format":1}\n')
    exp = Experiment(TinyRegression, [{"lr": 0.1}], metric="loss", mode="min", deadline="1m",
                     cluster=1, checkpoint_dir=str(tmp_path))  # fmt: skip
    with pytest.raises(HyperschedError) as refused:
        exp.start()
    assert str(refused.value) == (
        f"checkpoint_dir {str(tmp_path)!r} holds another search's journal already: go on "
        f"with it with Experiment.resume({str(tmp_path)!r}), or give this search a "
        "checkpoint_dir of its own"
    )
    assert journal.read_text() == '{"k":"search","format":1}\n'  # untouched
    assert repr(exp).startswith("<Experiment hypersched created:")  # nothing started


def test_in_a_notebook_an_api_error_shows_the_users_call_and_its_one_line():
    from hypersched_nb.train.examples import DigitsCNN

    with pytest.raises(ConfigError) as info:
        Experiment(DigitsCNN, policy="hyperbnd")  # the user's call
    shown = info.value._render_traceback_()  # what IPython prints for it
    assert shown[-1].startswith("ConfigError: `policy` is 'hyperbnd', but must be one of")
    assert not any("hypersched_nb" + os.sep in line for line in shown[:-1])
    assert any("the user's call" in line for line in shown)
