"""The one driver loop: policy <-> runtime, on any clock (Syne Tune's ``Tuner.run``).

The simulator and the Dask runtime implement the small :class:`Runtime` protocol; the
driver feeds the policy events and carries out its answers, and nothing here knows which
runtime it drives. The deadline is read on every turn of the loop, so a new one takes
effect at the next decision, whether it is set on ``Driver.deadline`` (the notebook's
slider) or comes from the runtime as a ``DeadlineChanged`` event.

Everything from outside the loop (the clock, the deadline and a stop asked for, the
runtime's events, the offers) is read through one :class:`~hypersched_nb.experiment._inputs.Inputs`
at two moments of a turn, its top and the end of its wait, and every decision of the turn
uses what was read then. So a search's inputs can be journaled as they happen, and fed
again to a fresh driver and policy to rebuild them exactly.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

from hypersched_nb.core.clock import Clock
from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.decisions import CONTINUE, Decision
from hypersched_nb.core.events import (
    Continue,
    DeadlineChanged,
    Event,
    Pause,
    Resize,
    Result,
    ScaleCluster,
    Start,
    Stop,
    TrialFailed,
    TrialHalted,
    WorkersChanged,
)
from hypersched_nb.core.policies import Policy
from hypersched_nb.core.scaling import NONE, ScalingCurve
from hypersched_nb.core.trial import Trial, TrialEnding, TrialState, transition
from hypersched_nb.experiment._inputs import Inputs
from hypersched_nb.experiment._outcome import Outcome, Runtime, granted

__all__ = ["Driver", "Outcome", "Runtime"]

_RUNNING, _PENDING, _PAUSED = TrialState.RUNNING, TrialState.PENDING, TrialState.PAUSED
_CONTINUE, _PAUSE = Decision.CONTINUE, Decision.PAUSE
_isfinite = math.isfinite


# PolicyContext is a named tuple made at every turn of the loop: built as the tuple it is,
# from all its fields in order, it skips the Python call of its generated constructor.
_tuple_new = tuple.__new__


class Driver:
    """Runs one search. ``offers`` yields configurations (None when there are no more);
    ``on_trial_over(trial, ending)`` hears of every trial whose run is over, and how (a
    string it returns is a reason to stop the search), ``on_trial_paused(trial)`` of every
    trial paused; ``inputs`` (default: ``clock``, ``runtime`` and ``offers`` read live,
    unrecorded) is where the loop reads what comes from outside it."""

    def __init__(
        self,
        policy: Policy,
        runtime: Runtime,
        clock: Clock,
        offers: Iterator[dict],
        *,
        deadline: float,
        max_epochs: int,
        mode: str = "max",
        scaling: ScalingCurve = NONE,
        target: float | None = None,
        journal: bool = False,
        on_trial_over: Callable[[Trial, TrialEnding], str | None] | None = None,
        on_trial_paused: Callable[[Trial], None] | None = None,
        max_workers: int | None = None,
        cost_budget: float | None = None,
        inputs: Inputs | None = None,
    ):
        self.policy, self.runtime, self.clock = policy, runtime, clock
        self._inputs = inputs or Inputs(clock, runtime, offers, record=None)
        self.deadline = self._deadline = float(deadline)  # asked for / in force this turn
        self.max_epochs, self.mode, self.scaling, self.target = max_epochs, mode, scaling, target
        self.offering = True  # configurations may still be offered: the source has not run out
        self._on_trial_over, self._on_trial_paused = on_trial_over, on_trial_paused
        self._sign = 1.0 if mode == "max" else -1.0
        self.trials: dict[int, Trial] = {}
        self.pending: dict[int, Trial] = {}
        self.running: dict[int, Trial] = {}
        self.paused: dict[int, Trial] = {}
        self.targets: dict[int, int] = {}  # running trial -> workers at its next epoch
        self.startups: list[float] = []
        self._now, self.capacity = self._inputs.start()
        # elastic clusters: the policy may ask for a size up to max_workers; billing integrates it
        self.max_workers = max(self.capacity, max_workers or self.capacity)
        self._asked = self.capacity  # the size last asked for; capacity is the size there
        self.cost_budget = cost_budget
        self._elastic = type(policy).elastic
        self._billed, self._billed_at = 0.0, self._now
        self._held = 0  # sum over running trials of max(workers, target): kept, not recounted
        base = Policy  # hooks left at the base's no-op are never called
        self._calls_retire = type(policy).retire is not base.retire
        self._calls_allocate = type(policy).allocate is not base.allocate
        self._calls_wakeup = type(policy).next_wakeup is not base.next_wakeup
        self._calls_result = type(policy).on_trial_result is not base.on_trial_result
        self.outcome = Outcome(journal=[] if journal else None)
        self._journal = journal
        self._stop_requested = self._stopping = None  # why a stop was asked / seen this turn
        self._continue: dict[int, Continue] = {}  # trial -> its Continue (a value: reused)
        self._ctx_now: PolicyContext | None = None  # the policy's context, reused (see _ctx)

    # ------------------------------------------------------------------ the loop

    def run(self) -> Outcome:
        advance, on_result, moment = self._inputs.advance, self._on_result, self._moment
        while True:
            now = moment()
            if self._stopping or now >= self._deadline:
                break
            self._schedule(now)
            if not self.running and not self._can_start_more():
                break
            wake = self._wakeup()
            until = self._deadline if wake is None else min(self._deadline, max(wake, now))
            events = advance(until)
            # read after the wait: a deadline moved closer meanwhile (the slider) may fall
            # before what it returns. Past the deadline in force an event is dropped, here
            # and nowhere else, so nothing reported after it ever counts.
            moment()
            deadline = self._deadline
            for event in events:
                if event.time > deadline:
                    continue
                if type(event) is Result:  # the hot path: one call fewer
                    on_result(event)
                else:
                    self._handle(event)
                    deadline = self._deadline  # a DeadlineChanged moves it for the rest
        self._finish()
        return self.outcome

    def context(self) -> PolicyContext:
        """The context the policy would be handed now (for observers, e.g. its describe())."""
        return self._ctx()

    def ties(self) -> dict[str, object]:
        """What ties this driver to its search rather than being its state: a detached
        copy (a forecast's) is given its own in their place."""
        return {
            "runtime": self.runtime, "clock": self.clock, "inputs": self._inputs,
            "over": self._on_trial_over, "paused": self._on_trial_paused,
            "journal": self.outcome.journal, "context": self._ctx_now,
        }  # fmt: skip

    def request_stop(self, reason: str = "stopped by the user") -> None:
        """Ask the loop to end at its next turn (from another thread); ``reason`` is what
        the trials still running are told."""
        self._stop_requested = self._stop_requested or reason

    def _moment(self) -> float:
        """Read the clock, the deadline and the stop request for what follows in the turn."""
        m = self._inputs.moment(self.deadline, self._stop_requested)
        self._now, self._stopping = m.now, m.stop
        if m.deadline != self._deadline:
            self.deadline = self._deadline = m.deadline
            self._changed()
        return m.now

    def _handle(self, event: Event) -> None:
        """Every event but a Result (which :meth:`run` hands to :meth:`_on_result`)."""
        if type(event) is TrialFailed:
            trial = self.trials[event.trial_id]
            if trial.state is not _RUNNING:
                return
            trial.error = event.error
            last_line = event.error.splitlines()[-1] if event.error else ""
            self._leave_running(trial, "TrialFailed", event.time, f"failed: {last_line}")
            self.policy.on_trial_error(trial, self._ctx())
            self._trial_over(trial, TrialEnding.FAILED)
        elif type(event) is WorkersChanged:
            self._bill(event.time)
            self.capacity = event.workers
            self._changed()
            for tid in event.lost:
                trial = self.trials[tid]
                if trial.state is _RUNNING:
                    self._leave_running(trial, "WorkerLost", event.time, "its worker was lost")
                    self._pause(trial)
            paused = f" ({', '.join(event.paused)} paused by Dask: memory)" if event.paused else ""
            self._log(event.time, None, "WorkersChanged", f"{event.workers} workers{paused}")
        elif type(event) is TrialHalted:
            trial = self.trials[event.trial_id]
            if trial.state is _RUNNING:
                self._leave_running(trial, "Halted", event.time, event.reason)
                self._pause(trial)
        elif type(event) is DeadlineChanged:
            self.deadline = self._deadline = max(event.deadline, event.time)  # past means now
            self._log(event.time, None, "DeadlineChanged", f"deadline moved to {self.deadline:g}")

    def _on_result(self, r: Result) -> None:
        tid, epoch, metric, now, seconds, workers, startup, done, _ = r  # hot path: unpack once
        trial = self.trials[tid]
        out = self.outcome
        out.worker_seconds_busy += (seconds + startup) * workers
        if startup > 0:
            self.startups.append(startup)
        score = self._sign * metric
        trial.epochs = epoch
        trial.metrics.append(metric)
        trial.scores.append(score)
        trial.train_seconds += seconds
        trial.results_since_start += 1
        if not _isfinite(metric):
            self._end(trial, Stop(tid), now, f"diverged: metric {metric}")
            self.policy.on_trial_remove(trial, self._ctx())
            self._trial_over(trial, TrialEnding.DIVERGED)
            return
        if score > trial.best_score:
            trial.best_score = score
            if out.best_trial is None or score > self._sign * out.best:
                out.best, out.best_trial = metric, tid
            target = self.target
            if target is not None and out.time_to_target is None and score >= self._sign * target:
                out.time_to_target = now
        if done or epoch >= self.max_epochs:
            self._end(trial, Stop(tid), now, f"completed {epoch} epochs", "Complete")
            self.policy.on_trial_complete(trial, self._ctx())
            self._trial_over(trial, TrialEnding.COMPLETED)
            return
        verdict = CONTINUE
        if self._calls_result:
            verdict = self.policy.on_trial_result(trial, r, self._ctx())
        decision = verdict.decision
        if decision is _CONTINUE:
            want = self.targets.get(tid, workers)
            if want == trial.workers or want <= 0:
                self.runtime.execute(self._continue[tid])
            else:
                self._resize(trial, want, now, verdict.reason)
        elif decision is _PAUSE:
            self._leave_running(trial, "Pause", now, verdict.reason or "paused")
            self._pause(trial)
            self.runtime.execute(Pause(tid))
        else:
            self._end(trial, Stop(tid), now, verdict.reason or "stopped")
            self._trial_over(trial, TrialEnding.STOPPED)

    def _resize(self, trial: Trial, want: int, now: float, reason: str) -> None:
        """Apply a target that changed by this epoch boundary: restart on ``want`` workers."""
        self._log(now, trial.trial_id, "Resize", reason or f"{trial.workers} -> {want} workers")
        self._held += want - max(trial.workers, want)
        self._changed()
        trial.workers = want
        trial.results_since_start = 0
        trial.last_start_at = now
        self.runtime.execute(Resize(trial.trial_id, want))

    # ------------------------------------------------------------------ scheduling

    def _schedule(self, now: float) -> None:
        """One turn's decisions (retire, start, allocate), stamped with the turn's time
        ``now``, which is before the deadline: a wall clock may tick on while they run."""
        policy = self.policy
        if self._elastic:
            self._scale_cluster(now)
        if self._calls_retire:
            self._retire(now)
        while self.capacity > self._held:  # a worker is free
            trial = policy.choose_trial_to_run(self._ctx())
            if trial is None:
                had_offers = self.offering  # if they just ran out, the policy may now choose
                if self.pending or not (self._offer() or had_offers):
                    break
                trial = policy.choose_trial_to_run(self._ctx())
                if trial is None:
                    break
            self._start(trial, now)
        if self._calls_allocate:
            targets = policy.allocate(self._ctx())
            if targets is not None:
                self._set_targets(targets)

    def _retire(self, now: float) -> None:
        for tid, reason in self.policy.retire(self._ctx()).items():
            trial = self.trials[tid]
            if trial.state in (_PENDING, _PAUSED):
                self.pending.pop(tid, None)
                self.paused.pop(tid, None)
                transition(trial, "Stop")
                trial.stopped_at, trial.reason = now, reason or "retired"
                self._log(trial.stopped_at, tid, "Stop", trial.reason)
                self._trial_over(trial, TrialEnding.RETIRED)

    def _set_targets(self, targets) -> None:
        self.targets = granted(targets, self.running, self.capacity)
        self._held = sum(max(t.workers, self.targets.get(i, 0)) for i, t in self.running.items())
        self._changed()

    def _scale_cluster(self, now: float) -> None:
        want = self.policy.cluster_size(self._ctx())
        if want is None:
            return
        want = min(self.max_workers, max(int(want), self._held))
        if want == self._asked and want >= self.capacity:
            return  # asked for already (a live cluster's workers may be on their way)
        self._bill(now)
        self._log(now, None, "ScaleCluster", f"{self.capacity} -> {want} workers")
        self.runtime.execute(ScaleCluster(want))
        # billed and handed out are the workers there, not those asked for
        self._asked, self.capacity = want, self._inputs.scaled(want)
        self._changed()

    def _bill(self, until: float) -> None:
        self._billed += self.capacity * max(0.0, until - self._billed_at)
        self._billed_at = max(self._billed_at, until)
        self._changed()

    def _free(self) -> int:
        return self.capacity - self._held

    def _offer(self) -> bool:
        if not self.offering:
            return False
        config = self._inputs.offer()
        if config is None:
            self.offering = False
            self._changed()
            return False
        tid = len(self.trials)
        trial = Trial(tid, config, added_at=self._now)
        self.trials[tid] = self.pending[tid] = trial
        self.policy.on_trial_add(trial, self._ctx())
        return True

    def _can_start_more(self) -> bool:
        """With nothing running: can anything still start? Not when an elastic policy has
        let every worker go and set no wake-up (nothing would change until the deadline);
        otherwise, without free workers, yes (lost workers may come back)."""
        if self._free() <= 0:
            released = self._elastic and self.capacity == 0
            return not released or self._wakeup() is not None
        return self.policy.choose_trial_to_run(self._ctx()) is not None

    def _wakeup(self) -> float | None:
        return self.policy.next_wakeup(self._ctx()) if self._calls_wakeup else None

    def _start(self, trial: Trial, now: float) -> None:
        restore = trial.state is _PAUSED
        self.pending.pop(trial.trial_id, None)
        self.paused.pop(trial.trial_id, None)
        transition(trial, "Start")
        self.running[trial.trial_id] = trial
        trial.workers, trial.results_since_start, trial.last_start_at = 1, 0, now
        self._held += 1
        self._changed()
        self._continue.setdefault(trial.trial_id, Continue(trial.trial_id))
        trial.starts += 1
        if trial.started_at is None:
            trial.started_at = now
            self.outcome.trials_started += 1
        self._log(now, trial.trial_id, "Start", "resumed" if restore else "admitted")
        self.runtime.execute(Start(trial.trial_id, trial.config, 1, restore))

    # ------------------------------------------------------------------ endings

    def _leave_running(self, trial: Trial, move: str, now: float, reason: str) -> None:
        del self.running[trial.trial_id]
        self._held -= max(trial.workers, self.targets.pop(trial.trial_id, 0))
        self._changed()
        transition(trial, move)
        trial.workers = 0
        trial.reason = reason
        self._log(now, trial.trial_id, move, reason)

    def _end(self, trial: Trial, stop: Stop, now: float, reason: str, move: str = "Stop") -> None:
        self._leave_running(trial, move, now, reason)
        trial.stopped_at = now
        self.runtime.execute(stop)

    def _pause(self, trial: Trial) -> None:
        self.paused[trial.trial_id] = trial
        if self._on_trial_paused is not None:
            self._on_trial_paused(trial)

    def _trial_over(self, trial: Trial, ending: TrialEnding) -> None:
        if self._on_trial_over is not None:
            why = self._on_trial_over(trial, ending)
            if isinstance(why, str):
                self.request_stop(why)

    def _finish(self) -> None:
        now = min(self.clock.now(), self._deadline)
        reason = self._stopping or "deadline reached"
        for trial in list(self.running.values()):
            self._end(trial, Stop(trial.trial_id), now, reason)
            self.policy.on_trial_remove(trial, self._ctx())
            self._trial_over(trial, TrialEnding.STOPPED)
        self.outcome.ended_at = now
        self._bill(now)
        self.outcome.worker_seconds_billed = self._billed
        if self._elastic and self.capacity > 0:  # the search is over: give the workers back
            over = self._stopping or now >= self._deadline
            why = reason if over else "nothing left to train"
            self._log(now, None, "ScaleCluster", f"{self.capacity} -> 0 workers: {why}")
            self.runtime.execute(ScaleCluster(0))
            self.capacity = self._inputs.scaled(0)

    def _ctx(self) -> PolicyContext:
        """The policy's view of this moment (the clock and deadline read last): the one
        built last while they stand where they stood and nothing else it holds by value
        has changed since (every change of workers held, cluster size, offers left or
        billing calls :meth:`_changed`); its mappings are live."""
        now = self._now
        ctx = self._ctx_now
        if ctx is not None and ctx.now == now and ctx.deadline == self._deadline:
            return ctx
        ctx = self._ctx_now = _tuple_new(
            PolicyContext,
            (  # see _tuple_new
                now,
                self._deadline,
                self.capacity,
                self.capacity - self._held,  # free
                self.trials,
                self.pending,
                self.running,
                self.paused,
                self.mode,
                self.scaling,
                self.startups,
                self.offering,
                self.max_workers,
                self.cost_budget,
                self._billed + self.capacity * (now - self._billed_at),
            ),
        )
        return ctx

    def _changed(self) -> None:
        """Workers held, cluster size, offers left or billing changed: the next :meth:`_ctx`
        builds a new context."""
        self._ctx_now = None

    def _log(self, now: float, tid: int | None, action: str, reason: str) -> None:
        entry = {"time": now, "trial": tid, "action": action, "reason": reason}
        if self._journal:
            self.outcome.journal.append(entry)
        self._inputs.decided(entry)
