"""The one driver loop, on the trace simulator: what every search can count on, whatever the policy.

Specified here: trials start on one worker and configurations are offered only when a worker
would otherwise idle; a trial completes at R or where its curve ends; a NaN or infinite
metric stops the trial as diverged and never counts as best; PAUSE gives the workers back and
a resume pays the start-up again; retired trials never run; allocation targets are applied at
the next epoch boundary (shrinks always, grows in the policy's order while workers last);
a failed trial is ERRORED and a lost worker pauses its trial; whoever watches the search
hears how each trial ended; a policy's reasons reach the journal with its decisions, and
the driver reads nothing of a policy but its answers; at the deadline everything stops and
the best is the best metric reported at or before it, also when the deadline moves during
the search; a seed reproduces a search exactly and offers the same configurations to every
policy; the oracle bounds every policy.
"""

from __future__ import annotations

import math

import pytest

from hypersched_nb.core.decisions import CONTINUE, Verdict
from hypersched_nb.core.events import (
    DeadlineChanged,
    Pause,
    Resize,
    Result,
    ScaleCluster,
    Start,
    TrialFailed,
    WorkersChanged,
)
from hypersched_nb.core.policies import Policy, names
from hypersched_nb.core.trial import TrialEnding, TrialState
from hypersched_nb.experiment.driver import Driver
from hypersched_nb.experiment.simulate import SimSettings, simulate
from hypersched_nb.sim.clock import VirtualClock
from hypersched_nb.sim.runtime import SimRuntime, offers
from hypersched_nb.sim.trace import TRACE_KEY
from hypersched_nb.testing.pytest_policies import (
    Violations,
    WatchedRuntime,
    synthetic_trace,
    trace_from_curves,
)


class Scripted(Policy):
    """First in first out (the base's choice), with scripted answers; records every hook."""

    name = "scripted"

    def __init__(self, decide=None, targets=None, retire=None):
        self.decide = decide or {}  # (trial, epoch) -> Verdict
        self.targets = targets  # ctx -> {trial: workers} or None
        self.to_retire = retire or set()
        self.calls: list[tuple] = []

    def on_trial_add(self, trial, ctx):
        self.calls.append(("add", trial.trial_id, ctx.now))

    def on_trial_result(self, trial, result, ctx):
        self.calls.append(("result", trial.trial_id, result.epoch))
        return self.decide.get((trial.trial_id, result.epoch), CONTINUE)

    def on_trial_complete(self, trial, ctx):
        self.calls.append(("complete", trial.trial_id))

    def on_trial_remove(self, trial, ctx):
        self.calls.append(("remove", trial.trial_id, ctx.now))

    def on_trial_error(self, trial, ctx):
        self.calls.append(("error", trial.trial_id))

    def retire(self, ctx):
        waiting = [tid for tid in self.to_retire if tid in ctx.pending or tid in ctx.paused]
        return dict.fromkeys(waiting, "scripted retirement")

    def allocate(self, ctx):
        return None if self.targets is None else self.targets(ctx)


def drive(
    policy,
    curves,
    *,
    workers=1,
    deadline=1e9,
    seconds=10.0,
    startup=0.0,
    mode="max",
    scaling=None,
    max_epochs=None,
    target=None,
    move_deadline=None,
    on_trial_over=None,
):
    trace = trace_from_curves(curves, seconds, mode=mode, scaling=scaling, startup=startup)
    R = max_epochs or trace.longest
    clock = VirtualClock()
    violations = Violations()
    runtime = WatchedRuntime(
        SimRuntime(trace, clock, workers, max_epochs=R), violations, move_deadline=move_deadline
    )
    driver = Driver(
        policy,
        runtime,
        clock,
        iter([trace.config(i) for i in trace.ids]),
        deadline=deadline,
        max_epochs=R,
        mode=mode,
        scaling=trace.scaling,
        target=target,
        journal=True,
        on_trial_over=on_trial_over,
    )
    runtime.driver = driver
    out = driver.run()
    # whatever the test, the simulator's invariants held throughout
    assert not violations, violations
    return driver, out, runtime


def results_of(runtime, tid):
    return [r for r in runtime.results if r.trial_id == tid]


# ------------------------------------------------------------------------------ starting


def test_trials_start_on_one_worker_and_configs_are_offered_when_a_worker_would_idle():
    policy = Scripted()
    _driver, out, rt = drive(policy, [[0.1, 0.2, 0.3]] * 4, workers=2)
    adds = [call[1:] for call in policy.calls if call[0] == "add"]
    # two configurations at t = 0 for two workers; the next two when the first two complete
    assert adds == [(0, 0.0), (1, 0.0), (2, 30.0), (3, 30.0)]
    # every start is on one worker
    assert all(i.workers == 1 for i in rt.instructions if type(i) is Start)
    assert out.trials_started == 4 and out.ended_at == 60.0


# ------------------------------------------------------------------------------ endings


def test_a_trial_whose_curve_ends_early_completes():
    policy = Scripted()
    driver, out, _rt = drive(policy, [[0.1, 0.2], [0.3, 0.4, 0.5, 0.6]], workers=2)
    short = driver.trials[0]
    # it completes after its two epochs: TERMINATED, told to the policy as complete
    assert short.state is TrialState.TERMINATED and short.reason == "completed 2 epochs"
    assert ("complete", 0) in policy.calls
    # the completing epoch is not asked about: there is nothing left to decide
    assert [c for c in policy.calls if c[:2] == ("result", 0)] == [("result", 0, 1)]
    # the long one completes at R = 4
    assert driver.trials[1].reason == "completed 4 epochs" and out.best == 0.6


def test_a_trial_completes_at_max_epochs_even_if_its_curve_goes_on():
    driver, out, rt = drive(Scripted(), [[0.1, 0.2, 0.3, 0.9]], max_epochs=3)
    assert driver.trials[0].reason == "completed 3 epochs"
    # the fourth epoch never trains, so its 0.9 never counts
    assert len(rt.results) == 3 and out.best == 0.3


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_non_finite_metric_stops_the_trial_as_diverged(bad):
    policy = Scripted()
    driver, out, rt = drive(policy, [[0.5, bad, 0.9, 0.95]])
    trial = driver.trials[0]
    # the trial is over, says why, and the policy hears it was removed
    assert not trial.is_live and trial.reason == f"diverged: metric {bad}"
    assert ("remove", 0, 20.0) in policy.calls
    # it never trains again, and its bad value is never the best
    assert len(rt.results) == 2 and out.best == 0.5


def test_stop_ends_a_trial_and_frees_its_worker_for_the_next():
    policy = Scripted(decide={(0, 1): Verdict.stop("scripted stop")})
    driver, _out, _rt = drive(policy, [[0.1, 0.2], [0.3, 0.4]])
    assert driver.trials[0].state is TrialState.TERMINATED and driver.trials[0].epochs == 1
    # trial 1 is offered and started the moment trial 0 stops
    assert driver.trials[1].started_at == 10.0


# ------------------------------------------------------------------------------ pause, retire, allocate


def test_a_paused_trial_gives_its_worker_back_and_resumes_from_its_checkpoint():
    # trial 0 pauses after epoch 1; FIFO resumes paused trials first when a worker frees
    policy = Scripted(decide={(0, 1): Verdict.pause("scripted pause")})
    driver, out, rt = drive(policy, [[0.1, 0.2, 0.3], [0.4, 0.5]], startup=2.0)
    pauses = [i for i in rt.instructions if type(i) is Pause]
    assert pauses == [Pause(0)]
    resume = [i for i in rt.instructions if type(i) is Start and i.trial_id == 0][1]
    # the resume restores the checkpoint and pays the start-up again
    assert resume.restore is True
    after = results_of(rt, 0)[1]
    assert after.match(epoch=2, startup=2.0)
    # started twice, counted once
    assert driver.trials[0].starts == 2 and out.trials_started == 2


def test_retired_trials_never_run():
    # the policy never chooses trial 1 and retires it at its next turn
    policy = Scripted(retire={1})
    policy.choose_trial_to_run = lambda ctx: next(
        (t for t in ctx.pending.values() if t.trial_id != 1), None
    )
    driver, out, rt = drive(policy, [[0.1, 0.2], [0.9, 0.9], [0.3, 0.4]], workers=2)
    retired = driver.trials[1]
    assert retired.state is TrialState.TERMINATED and retired.started_at is None
    # once it is gone, the idle worker gets the next configuration
    assert driver.trials[2].started_at == 10.0
    # no instruction ever names it
    assert all(getattr(i, "trial_id", None) != 1 for i in rt.instructions)
    # its 0.9 was never reported, so it is not the best
    assert out.best == 0.4


def test_allocation_grows_in_the_policys_order_while_workers_last_at_the_next_boundary():
    # two trials on four workers; the policy asks 3 for trial 1 first, then 3 for trial 0
    def targets(ctx):
        return {1: 3, 0: 3} if len(ctx.running) == 2 else None

    policy = Scripted(targets=targets)
    policy.choose_trial_to_run = lambda ctx: (
        next(iter(ctx.pending.values()), None) if len(ctx.trials) <= 2 else None
    )
    _driver, _out, rt = drive(
        policy, [[0.1] * 4, [0.2] * 4], workers=4, scaling={2: 2.0, 4: 4.0}, startup=1.0
    )
    resizes = [i for i in rt.instructions if type(i) is Resize]
    # trial 1 gets the two spare workers; none are left for trial 0
    assert resizes == [Resize(1, 3)]
    first, second = results_of(rt, 1)[:2]
    # applied at trial 1's next epoch boundary, which costs the start-up
    assert first.match(workers=1, startup=1.0) and second.match(workers=3, startup=1.0)
    assert second.time == pytest.approx(first.time + 1.0 + 10.0 / 3.0)
    assert {r.workers for r in results_of(rt, 0)} == {1}


def test_allocation_shrinks_always():
    def targets(ctx):
        running = dict(ctx.running)
        if (
            0 in running
            and running[0].workers == 1
            and not running[0].starts > 1
            and running[0].epochs < 2
        ):
            return {0: 4}
        return {0: 2} if 0 in running else None

    _driver, _out, rt = drive(Scripted(targets=targets), [[0.1] * 6], workers=4, scaling={4: 3.0})
    # grown to 4 at the first boundary, then shrunk to 2 at the next one
    assert [i.workers for i in rt.instructions if type(i) is Resize][:2] == [4, 2]


# ------------------------------------------------------------------------------ failures


class FakeRuntime:
    """Returns scripted event batches in order (each when its time comes)."""

    def __init__(self, clock, workers, batches):
        self.clock, self._workers, self.batches, self.instructions = (
            clock,
            workers,
            list(batches),
            [],
        )

    def workers(self):
        return self._workers

    def execute(self, instruction):
        self.instructions.append(instruction)

    def advance(self, until):
        if self.batches and self.batches[0][0].time <= until:
            batch = self.batches.pop(0)
            self.clock.sleep_until(batch[0].time)
            return batch
        self.clock.sleep_until(max(until, self.clock.now()))
        return []


def fake_drive(policy, batches, workers=1, configs=2, max_workers=None):
    clock = VirtualClock()
    rt = FakeRuntime(clock, workers, batches)
    driver = Driver(
        policy,
        rt,
        clock,
        iter([{TRACE_KEY: i} for i in range(configs)]),
        deadline=100.0,
        max_epochs=10,
        journal=True,
        max_workers=max_workers,
    )
    return driver, driver.run(), rt


def test_a_trial_whose_code_raised_is_errored_and_the_policy_told():
    policy = Scripted()
    batches = [
        [Result(0, 1, 0.5, 5.0, 5.0, 1)],
        [TrialFailed(0, 7.0, "Traceback ...\nValueError: boom", 2)],
    ]
    driver, _out, _rt = fake_drive(policy, batches)
    trial = driver.trials[0]
    assert trial.state is TrialState.ERRORED and trial.reason == "failed: ValueError: boom"
    assert ("error", 0) in policy.calls
    # its worker goes to the next configuration at once
    assert driver.trials[1].started_at == 7.0


def test_a_lost_worker_pauses_its_trial_which_then_resumes():
    policy = Scripted()
    _driver, out, rt = fake_drive(policy, [[WorkersChanged(4.0, 1, lost=(0,))]])
    starts = [i for i in rt.instructions if type(i) is Start]
    # paused by the loss, then resumed from its checkpoint by the FIFO choice
    assert starts[:2] == [Start(0, {TRACE_KEY: 0}, 1), Start(0, {TRACE_KEY: 0}, 1, restore=True)]
    assert any(e["action"] == "WorkerLost" and e["trial"] == 0 for e in out.journal)


# ------------------------------------------------------------------------------ what the driver tells and reads


def test_whoever_watches_hears_how_every_trial_ended():
    heard = {}
    policy = Scripted(decide={(1, 1): Verdict.stop("scripted stop")}, retire={3})
    policy.choose_trial_to_run = lambda ctx: next(
        (t for t in ctx.pending.values() if t.trial_id != 3), None
    )
    curves = [[0.1, 0.2], [0.3, 0.4], [0.5, math.nan], [0.6, 0.7], [0.1, 0.2, 0.3, 0.4]]
    drive(
        policy, curves, workers=2, deadline=35.0,
        on_trial_over=lambda trial, ending: heard.setdefault(trial.trial_id, ending),
    )  # fmt: skip
    assert heard == {
        0: TrialEnding.COMPLETED,  # its curve ended
        1: TrialEnding.STOPPED,  # by the policy
        2: TrialEnding.DIVERGED,  # NaN at its second epoch
        3: TrialEnding.RETIRED,  # never chosen, then retired
        4: TrialEnding.STOPPED,  # cut by the deadline at 35 s
    }
    # and a trial whose code raised
    failed, clock = {}, VirtualClock()
    batches = [[TrialFailed(0, 7.0, "Traceback ...\nValueError: boom", 1)]]
    Driver(
        Scripted(), FakeRuntime(clock, 1, batches), clock, iter([{TRACE_KEY: 0}]),
        deadline=100.0, max_epochs=10, on_trial_over=lambda t, e: failed.setdefault(t.trial_id, e),
    ).run()  # fmt: skip
    assert failed == {0: TrialEnding.FAILED}


#: every name the driver may look up on a policy: its hooks (and nothing it keeps)
HOOKS = {
    "on_trial_add", "on_trial_result", "on_trial_complete", "on_trial_remove", "on_trial_error",
    "choose_trial_to_run", "retire", "allocate", "next_wakeup", "cluster_size",
}  # fmt: skip
LOOKED_UP: list[str] = []


class Sealed(Policy):
    """Keeps nothing on itself, refuses every write and records every name looked up on it.
    Trial 0 pauses after one epoch, trial 1 stops after one, trial 2 is retired unstarted."""

    name = "sealed"

    def __getattribute__(self, name):
        LOOKED_UP.append(name)
        return super().__getattribute__(name)

    def __setattr__(self, name, value):
        raise AttributeError(f"something set policy.{name}")

    def on_trial_result(self, trial, result, ctx):
        if trial.trial_id == 0 and result.epoch == 1:
            return Verdict.pause("sealed: one epoch each")
        if trial.trial_id == 1:
            return Verdict.stop("sealed: seen enough")
        return CONTINUE

    def choose_trial_to_run(self, ctx):
        waiting = (*ctx.paused.values(), *ctx.pending.values())
        return next((t for t in waiting if t.trial_id != 2), None)

    def retire(self, ctx):
        return {2: "sealed: no room"} if 2 in ctx.pending else {}


def test_reasons_travel_with_decisions_and_the_driver_reads_only_the_hooks():
    LOOKED_UP.clear()
    curves = [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]]
    _driver, out, _rt = drive(Sealed(), curves, workers=2, deadline=100.0)
    # the driver wrote nothing on the policy (a write would have raised) and read only hooks
    assert set(LOOKED_UP) <= HOOKS
    # every reason the policy gave is in the journal, next to its decision
    said = {(e["trial"], e["action"], e["reason"]) for e in out.journal}
    assert {
        (0, "Pause", "sealed: one epoch each"),
        (1, "Stop", "sealed: seen enough"),
        (2, "Stop", "sealed: no room"),
    } <= said


class LateSlider(FakeRuntime):
    """Moves the driver's deadline to ``to`` while it waits, as the notebook's slider would."""

    def __init__(self, clock, workers, batches, to):
        super().__init__(clock, workers, batches)
        self.to, self.driver = to, None

    def advance(self, until):
        events = super().advance(until)
        self.driver.deadline = self.to
        return events


def test_a_result_past_a_deadline_moved_during_the_wait_never_counts():
    clock = VirtualClock()
    rt = LateSlider(clock, 1, [[Result(0, 1, 0.9, 60.0, 60.0, 1)]], to=50.0)
    policy = Scripted()
    driver = Driver(policy, rt, clock, iter([{TRACE_KEY: 0}]), deadline=100.0, max_epochs=10)
    rt.driver = driver
    out = driver.run()
    # the epoch ended at 60, past the deadline of 50 set while the runtime waited
    assert math.isnan(out.best) and ("result", 0, 1) not in policy.calls


# ------------------------------------------------------------------------------ the deadline


class ReleasesEveryWorker(Scripted):
    """Elastic: gives every worker back once nothing runs; optionally wakes up at ``wake``."""

    elastic = True

    def __init__(self, wake=None, **kw):
        super().__init__(**kw)
        self.wake = wake

    def cluster_size(self, ctx):
        return 0 if ctx.trials and not ctx.running else None

    def next_wakeup(self, ctx):
        return self.wake if self.wake is not None and ctx.now < self.wake else None


def test_an_elastic_policy_that_lets_every_worker_go_ends_the_search_then():
    policy = ReleasesEveryWorker(decide={(0, 1): Verdict.stop("scripted stop")})
    _driver, out, _rt = drive(policy, [[0.1, 0.2, 0.3]], deadline=1000.0)
    # stopped after its first epoch at t = 10: the cluster goes to 0 and the search ends
    assert out.ended_at == 10.0 and out.best == 0.1
    assert any(e["action"] == "ScaleCluster" and e["time"] == 10.0 for e in out.journal)


def test_only_a_policy_that_declares_itself_elastic_sizes_the_cluster():
    class Undeclared(ReleasesEveryWorker):
        elastic = False  # its cluster_size is never asked

    policy = Undeclared(decide={(0, 1): Verdict.stop("scripted stop")})
    _driver, out, _rt = drive(policy, [[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]], deadline=1000.0)
    assert not any(e["action"] == "ScaleCluster" for e in out.journal)
    assert out.ended_at == 40.0  # the second trial ran on the worker the first gave back


class WantsThree(Scripted):
    """Elastic: asks for 3 workers at every turn."""

    elastic = True

    def cluster_size(self, ctx):
        return 3


def test_workers_asked_for_are_billed_and_handed_out_once_the_cluster_reports_them():
    # a live cluster: ScaleCluster(3) at t = 0, the two new workers arrive at t = 12
    batches = [
        [Result(0, 1, 0.5, 5.0, 5.0, 1)],
        [WorkersChanged(12.0, 3)],
        [Result(0, 2, 0.6, 15.0, 10.0, 1, done=True)],
    ]
    driver, out, rt = fake_drive(WantsThree(), batches, configs=3, max_workers=3)
    starts = [(i.trial_id, driver.trials[i.trial_id].started_at) for i in rt.instructions
              if type(i) is Start]  # fmt: skip
    assert starts == [(0, 0.0), (1, 12.0), (2, 12.0)]  # none onto a worker not there yet
    asked = [i for i in rt.instructions if type(i) is ScaleCluster]
    assert asked == [ScaleCluster(3), ScaleCluster(0)]  # once, then all back at the end
    assert out.worker_seconds_billed == pytest.approx(1 * 12.0 + 3 * (out.ended_at - 12.0))


def test_a_worker_the_cluster_adds_unasked_is_given_back():
    batches = [[WorkersChanged(12.0, 3)], [Result(0, 1, 0.6, 15.0, 15.0, 1, done=True)]]
    _driver, out, rt = fake_drive(WantsThree(), batches, configs=1)  # max_workers: the 1 there
    asked = [i for i in rt.instructions if type(i) is ScaleCluster]
    assert asked == [ScaleCluster(1), ScaleCluster(0)]  # the last at the end of the search
    assert {
        "time": 12.0,
        "trial": None,
        "action": "ScaleCluster",
        "reason": "3 -> 1 workers",
    } in out.journal


def test_with_a_wake_up_set_a_search_without_workers_waits_for_it():
    policy = ReleasesEveryWorker(wake=500.0, decide={(0, 1): Verdict.stop("scripted stop")})
    _driver, out, _rt = drive(policy, [[0.1, 0.2, 0.3]], deadline=1000.0)
    # it might have asked for workers again when it woke up; it did not, so the search ends
    assert out.ended_at == 500.0


def test_a_runtime_can_move_the_deadline_later_and_what_comes_before_the_new_one_counts():
    policy = Scripted()
    # the fake drive's deadline is 100: moved to 150 at t = 5, a result at 120 counts
    batches = [[DeadlineChanged(5.0, 150.0)], [Result(0, 1, 0.7, 120.0, 120.0, 1)]]
    driver, out, _rt = fake_drive(policy, batches)
    assert driver.deadline == 150.0 and out.best == 0.7 and out.ended_at == 150.0
    assert any(e["action"] == "DeadlineChanged" and e["time"] == 5.0 for e in out.journal)


def test_a_runtime_can_move_the_deadline_earlier_and_what_comes_after_it_is_ignored():
    policy = Scripted()
    batches = [[DeadlineChanged(5.0, 50.0)], [Result(0, 1, 0.9, 60.0, 60.0, 1)]]
    _driver, out, _rt = fake_drive(policy, batches)
    # the search ends at the new deadline; the late result never reaches the policy
    assert out.ended_at == 50.0 and math.isnan(out.best)
    assert ("result", 0, 1) not in policy.calls


def test_a_deadline_moved_into_the_past_ends_the_search_at_once():
    _driver, out, _rt = fake_drive(Scripted(), [[DeadlineChanged(5.0, 1.0)]])
    assert out.ended_at == 5.0


def test_at_the_deadline_everything_stops_and_the_best_is_the_best_reported_by_then():
    policy = Scripted()
    # epochs end at 10, 20, 30: the one ending exactly at the deadline counts
    driver, out, rt = drive(policy, [[0.1, 0.2, 0.9], [0.3, 0.25, 0.95]], workers=2, deadline=20.0)
    assert out.best == 0.3 and out.best_trial == 1 and out.ended_at == 20.0
    for trial in driver.trials.values():
        # every running trial is stopped at the deadline and the policy told
        assert (
            trial.state is TrialState.TERMINATED
            and trial.stopped_at == 20.0
            and trial.reason == "deadline reached"
        )
        assert ("remove", trial.trial_id, 20.0) in policy.calls
    # nothing happened after it
    assert max(r.time for r in rt.results) == 20.0


def test_an_epoch_ending_just_after_the_deadline_does_not_count():
    _driver, out, _rt = drive(Scripted(), [[0.1, 0.2, 0.9]], deadline=29.999)
    assert out.best == 0.2 and out.ended_at == 29.999


def test_in_min_mode_the_best_is_the_lowest_metric():
    _driver, out, _rt = drive(Scripted(), [[0.9, 0.5, 0.7], [0.8, 0.6]], workers=2, mode="min")
    assert out.best == 0.5 and out.best_trial == 0


def test_worker_seconds_and_time_to_target():
    _driver, out, rt = drive(
        Scripted(), [[0.1, 0.5, 0.8], [0.2, 0.6]], workers=2, startup=1.0, target=0.55
    )
    # every epoch's seconds plus start-ups, times the workers that ran it
    assert out.worker_seconds_busy == pytest.approx(
        sum((r.seconds + r.startup) * r.workers for r in rt.results)
    )
    assert out.worker_seconds_busy == pytest.approx(5 * 10.0 + 2 * 1.0)
    # trial 1 reaches 0.6 >= 0.55 at 1 + 10 + 10 = 21 s, before trial 0's 0.8 at 31 s
    assert out.time_to_target == 21.0


@pytest.mark.parametrize(
    ("move", "new"), [((15.0, 5.0), 25.0), ((15.0, 30.0), 50.0)], ids=["shortened", "extended"]
)
def test_a_deadline_moved_during_the_search_is_the_one_that_counts(move, new):
    curves = [[0.1 * (e + 1) for e in range(10)]]
    # the deadline moves at the first event at or after t = 15 (the epoch ending at 20)
    _driver, out, rt = drive(Scripted(), curves, deadline=40.0, move_deadline=move)
    assert rt.moved == (20.0, 40.0, new)
    # the search ends at the new deadline, with the best reported by then
    assert out.ended_at == new and max(r.time for r in rt.results) <= new
    assert out.best == pytest.approx(0.1 * int(new // 10))


# ------------------------------------------------------------------------------ seeds, offers, the oracle

TRACE = synthetic_trace()
SETTINGS = SimSettings(workers=4, configs=20, max_epochs=16, eta=2)


def test_a_seed_reproduces_a_search_exactly():
    a, b = (simulate(TRACE, "asha", 120.0, 7, SETTINGS, journal=True) for _ in range(2))
    # the same JSON row and the same journal, decision for decision
    assert a.record.to_json() == b.record.to_json() and a.outcome.journal == b.outcome.journal
    # and another seed is another search
    assert (
        simulate(TRACE, "asha", 120.0, 8, SETTINGS, journal=True).outcome.journal
        != a.outcome.journal
    )


def test_a_seed_offers_the_same_configurations_to_every_policy():
    expected = offers(TRACE, SETTINGS.configs, 3)
    for name in names():
        driver = simulate(TRACE, name, 60.0, 3, SETTINGS).driver
        seen = [driver.trials[i].config for i in sorted(driver.trials)]
        # each policy sees a prefix of one and the same seeded order
        assert seen == expected[: len(seen)], name


@pytest.mark.parametrize("mode", ["max", "min"])
def test_the_oracle_bounds_every_policy(mode):
    trace = synthetic_trace(mode=mode, seed=11)
    for name in names():
        for deadline, seed in ((30.0, 0), (200.0, 1)):
            row = simulate(trace, name, deadline, seed, SETTINGS)
            if math.isnan(row.record.best):
                continue  # nothing reported by the deadline
            # no policy beats one configuration given every worker from t = 0
            best, oracle = row.record.best, row.record.oracle
            assert (best <= oracle) if mode == "max" else (best >= oracle), (name, deadline)


def test_the_registry_names_every_policy_of_the_benchmark():
    assert set(names()) >= {
        "hypersched",
        "hypersched-paper",
        "asha",
        "hyperband",
        "random",
        "pop",
        "bandit",
        "earlyterm",
        "hermes",
        "fifo",
        "rr",
        "slaq",
        "seer",
    }
