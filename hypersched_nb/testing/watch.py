"""Watchers for the policy contract: a policy and a runtime wrapped so that every answer and
every instruction is checked, plus the clock trap (any clock read in a policy hook fails).

A watcher records violations by check (``Violations``) instead of stopping at the first, so
each contract test can report its own check.
"""

from __future__ import annotations

import contextlib
import io
import math
import numbers
import pickle
import threading
import time
from collections.abc import Iterator, Mapping

from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.decisions import Verdict
from hypersched_nb.core.events import Result
from hypersched_nb.core.policies import Policy
from hypersched_nb.core.trial import Trial
from hypersched_nb.experiment.driver import Driver
from hypersched_nb.sim.runtime import SimRuntime

__all__ = [
    "CHECKS",
    "ClockRead",
    "Violations",
    "WatchedPolicy",
    "WatchedRuntime",
    "no_clock_reads",
    "watch",
]


class ClockRead(AssertionError):
    """A policy read a clock: the core must take time only from ``ctx.now``."""


_CLOCK_FUNCS = (
    "time",
    "time_ns",
    "monotonic",
    "monotonic_ns",
    "perf_counter",
    "perf_counter_ns",
    "process_time",
    "process_time_ns",
    "thread_time",
    "thread_time_ns",
    "sleep",
)


@contextlib.contextmanager
def no_clock_reads(who: str = "policy") -> Iterator[None]:
    """Within the block, every clock function of :mod:`time` raises :class:`ClockRead` in
    this thread (a clock that fails when read; other threads, such as a background search
    of another test, read their clocks as usual; ``datetime`` imports in core are refused
    by an AST test)."""
    saved = {name: getattr(time, name) for name in _CLOCK_FUNCS}
    owner = threading.get_ident()

    def trap(name: str):
        original = saved[name]

        def read(*args, **kwargs):
            if threading.get_ident() != owner:
                return original(*args, **kwargs)
            raise ClockRead(f"{who} called time.{name}(); the core must use ctx.now")

        return read

    for name in saved:
        setattr(time, name, trap(name))
    try:
        yield
    finally:
        for name, func in saved.items():
            setattr(time, name, func)


# ------------------------------------------------------------------------------ watchers

CHECKS = ("decisions", "read-only", "commit", "deadline", "clock", "pickle")


class Violations(dict):
    """Contract violations by check name, the first few of each."""

    def add(self, check: str, message: str) -> None:
        found = self.setdefault(check, [])
        if len(found) < 5:  # the first few say enough
            found.append(message)


def _snapshot(ctx: PolicyContext) -> tuple:
    trials = tuple(
        (
            t.trial_id,
            t.state,
            t.workers,
            t.epochs,
            tuple(t.metrics),
            tuple(t.scores),
            t.best_score,
            t.train_seconds,
            t.results_since_start,
            t.added_at,
            t.started_at,
            t.last_start_at,
            t.stopped_at,
            t.starts,
            t.error,
            t.reason,
            tuple(t.config.items()),
        )
        for t in ctx.trials.values()
    )
    return trials, tuple(ctx.pending), tuple(ctx.running), tuple(ctx.paused), tuple(ctx.startups)


class _TrialPickler(pickle.Pickler):
    """Pickles a policy with its references to driver-owned trials kept as ids, as a
    checkpoint of a whole search would (the records belong to the driver)."""

    def persistent_id(self, obj):
        return ("trial", obj.trial_id) if type(obj) is Trial else None


class _TrialUnpickler(pickle.Unpickler):
    def __init__(self, data: bytes, trials: Mapping[int, Trial]):
        super().__init__(io.BytesIO(data))
        self._trials = trials

    def persistent_load(self, pid):
        return self._trials[pid[1]]


def _copy_policy(policy: Policy, trials: Mapping[int, Trial]) -> Policy:
    buf = io.BytesIO()
    _TrialPickler(buf, pickle.HIGHEST_PROTOCOL).dump(policy)
    return _TrialUnpickler(buf.getvalue(), trials).load()


class WatchedPolicy(Policy):
    """Delegates every hook to ``inner`` (under :func:`no_clock_reads`) and records, by
    check, every answer that breaks the policy contract. ``log`` keeps each answer, so two
    runs can be compared decision by decision. With ``swap_at=n``, the inner policy is
    replaced by a pickled copy of itself just before its ``n``-th result."""

    def __init__(self, inner: Policy, violations: Violations, *, swap_at: int | None = None):
        self.inner = inner
        self.name = inner.name
        self.violations = violations
        self.swap_at = swap_at
        self.swapped = False
        self.results = 0
        self.log: list[tuple] = []
        self.deadlines: list[float] = []  # every distinct ctx.deadline seen, in order

    def _call(self, hook: str, ctx: PolicyContext, *args):
        v = self.violations
        if not self.deadlines or self.deadlines[-1] != ctx.deadline:
            self.deadlines.append(ctx.deadline)
        if ctx.now > ctx.deadline:
            v.add("deadline", f"{hook} called at now={ctx.now} past deadline {ctx.deadline}")
        before = _snapshot(ctx)
        try:
            with no_clock_reads(f"{self.name}.{hook}"):
                answer = getattr(self.inner, hook)(*args, ctx)
        except ClockRead as exc:
            v.add("clock", str(exc))
            raise
        if _snapshot(ctx) != before:
            v.add("read-only", f"{hook} changed a trial record or the driver's collections")
        return answer

    # ---------------------------------------------------------------- trial hooks

    def on_trial_add(self, trial: Trial, ctx: PolicyContext) -> None:
        self._call("on_trial_add", ctx, trial)

    def on_trial_result(self, trial: Trial, result: Result, ctx: PolicyContext) -> Verdict:
        self.results += 1
        if self.swap_at is not None and not self.swapped and self.results >= self.swap_at:
            self._swap(ctx)
        if result.time > ctx.deadline:
            self.violations.add(
                "deadline",
                f"result at {result.time} reached the policy past deadline {ctx.deadline}",
            )
        verdict = self._call("on_trial_result", ctx, trial, result)
        if type(verdict) is not Verdict or not isinstance(verdict.reason, str):
            self.violations.add("decisions", f"on_trial_result returned {verdict!r}, not a Verdict")
        else:
            self.log.append(
                ("result", trial.trial_id, result.epoch, verdict.decision, verdict.reason)
            )
        line = self._call("describe", ctx)
        if not isinstance(line, str) or "\n" in line:
            self.violations.add("decisions", f"describe returned {line!r}, not one line")
        self.log.append(("describe", line))
        return verdict

    def on_trial_complete(self, trial: Trial, ctx: PolicyContext) -> None:
        self.log.append(("complete", trial.trial_id))
        self._call("on_trial_complete", ctx, trial)

    def on_trial_remove(self, trial: Trial, ctx: PolicyContext) -> None:
        self.log.append(("remove", trial.trial_id))
        self._call("on_trial_remove", ctx, trial)

    def on_trial_error(self, trial: Trial, ctx: PolicyContext) -> None:
        self.log.append(("error", trial.trial_id))
        self._call("on_trial_error", ctx, trial)

    # ---------------------------------------------------------------- scheduling hooks

    def choose_trial_to_run(self, ctx: PolicyContext) -> Trial | None:
        first = self._call("choose_trial_to_run", ctx)
        again = self._call("choose_trial_to_run", ctx)
        if again is not first:
            self.violations.add(
                "decisions",
                f"choose_trial_to_run is not idempotent: {_tid(first)} then {_tid(again)}",
            )
        if first is not None and not (
            ctx.pending.get(first.trial_id) is first or ctx.paused.get(first.trial_id) is first
        ):
            self.violations.add(
                "decisions",
                f"choose_trial_to_run returned {first!r}; it must be a PENDING or PAUSED trial",
            )
        self.log.append(("choose", _tid(first)))
        return first

    def retire(self, ctx: PolicyContext) -> Mapping[int, str]:
        answer = self._call("retire", ctx)
        if not isinstance(answer, Mapping):
            self.violations.add("decisions", f"retire returned {answer!r}, not a mapping")
            answer = {}
        for tid, reason in answer.items():
            if tid not in ctx.pending and tid not in ctx.paused:
                state = ctx.trials[tid].state.name if tid in ctx.trials else "unknown"
                self.violations.add("decisions", f"retire named trial {tid} in state {state}")
            if not isinstance(reason, str):
                self.violations.add("decisions", f"retire gave trial {tid} the reason {reason!r}")
        self.log.append(("retire", tuple(answer.items())))
        return answer

    def allocate(self, ctx: PolicyContext):
        targets = self._call("allocate", ctx)
        if targets is not None:
            if not isinstance(targets, Mapping):
                self.violations.add(
                    "decisions", f"allocate returned {targets!r}, not a mapping or None"
                )
                targets = None
            else:
                for tid, want in targets.items():
                    if tid not in ctx.running:
                        self.violations.add(
                            "decisions", f"allocate targeted trial {tid}, which is not running"
                        )
                    if isinstance(want, bool) or not isinstance(want, numbers.Integral) or want < 1:
                        self.violations.add(
                            "decisions", f"allocate asked {want!r} workers for trial {tid}"
                        )
        self.log.append(("allocate", None if targets is None else tuple(targets.items())))
        return targets

    def next_wakeup(self, ctx: PolicyContext) -> float | None:
        wake = self._call("next_wakeup", ctx)
        if wake is not None and (not isinstance(wake, numbers.Real) or math.isnan(wake)):
            self.violations.add("decisions", f"next_wakeup returned {wake!r}, not a time or None")
            wake = None
        self.log.append(("wakeup", wake))
        return wake

    def cluster_size(self, ctx: PolicyContext) -> int | None:
        size = self._call("cluster_size", ctx)
        if size is not None and (
            isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 0
        ):
            self.violations.add(
                "decisions", f"cluster_size returned {size!r}, not a worker count or None"
            )
            size = None
        self.log.append(("cluster", size))
        return size

    def describe(self, ctx: PolicyContext) -> str:
        return self._call("describe", ctx)

    # ---------------------------------------------------------------- pickling

    def _swap(self, ctx: PolicyContext) -> None:
        self.swapped = True
        try:
            plain = pickle.loads(pickle.dumps(self.inner))
        except Exception as exc:  # noqa: BLE001 - whatever pickle raises is the finding
            self.violations.add("pickle", f"pickle.dumps/loads failed: {type(exc).__name__}: {exc}")
            return
        if type(plain) is not type(self.inner):
            self.violations.add("pickle", f"unpickled a {type(plain).__name__}")
        self.inner = _copy_policy(self.inner, ctx.trials)


#: hooks a driver may skip when a policy leaves them at the base's no-op
_OPTIONAL_HOOKS = ("retire", "allocate", "next_wakeup")
_WATCHER_CLASSES: dict[type, type] = {}


def watch(inner: Policy, violations: Violations, *, swap_at: int | None = None) -> WatchedPolicy:
    """A :class:`WatchedPolicy` around ``inner`` that leaves at the base's no-op exactly the
    optional hooks ``inner`` leaves there, and is elastic exactly when ``inner`` is, so the
    driver calls what it would call unwatched."""
    kind = type(inner)
    if kind not in _WATCHER_CLASSES:
        keep = {
            h: getattr(Policy, h) for h in _OPTIONAL_HOOKS if getattr(kind, h) is getattr(Policy, h)
        }
        keep["elastic"] = kind.elastic
        _WATCHER_CLASSES[kind] = type(f"Watched{kind.__name__}", (WatchedPolicy,), keep)
    return _WATCHER_CLASSES[kind](inner, violations, swap_at=swap_at)


def _tid(trial: Trial | None):
    return None if trial is None else trial.trial_id


class WatchedRuntime:
    """Wraps a :class:`SimRuntime`: checks after every instruction that workers are not
    over-committed and that the runtime holds what the driver believes; checks that no event
    comes later than asked or past the deadline; records every result; optionally moves the
    driver's deadline (``move_deadline=(at, by)``: when the clock first stands at or after
    ``at``, with or without events, the deadline becomes that time + ``by``)."""

    #: advance() calls in a row without time passing before the search counts as stuck
    SPIN_LIMIT = 1_000

    def __init__(
        self,
        inner: SimRuntime,
        violations: Violations,
        *,
        move_deadline: tuple[float, float] | None = None,
    ):
        self.inner = inner
        self.violations = violations
        self.driver: Driver | None = None
        self.results: list[Result] = []
        self.instructions: list = []
        self.move_deadline = move_deadline
        self.moved: tuple[float, float, float] | None = None  # (at, old, new)
        self._still = 0

    def workers(self) -> int:
        return self.inner.workers()

    def execute(self, instruction) -> None:
        self.inner.execute(instruction)
        self.instructions.append(instruction)
        held = dict(self.inner.iter_running())
        if sum(held.values()) > self.inner.workers():
            self.violations.add(
                "commit",
                f"after {instruction!r}: {sum(held.values())} workers held of {self.inner.workers()}",
            )
        driver = self.driver
        believed = {tid: t.workers for tid, t in driver.running.items()}
        if sum(believed.values()) > driver.capacity:
            self.violations.add(
                "commit",
                f"after {instruction!r}: the driver has {believed} on {driver.capacity} workers",
            )
        if believed != held:
            self.violations.add(
                "commit", f"after {instruction!r}: runtime holds {held}, driver believes {believed}"
            )

    def advance(self, until: float):
        driver = self.driver
        if until > driver.deadline:
            self.violations.add(
                "deadline", f"asked to advance to {until}, past deadline {driver.deadline}"
            )
        before = self.inner.clock.now()
        events = self.inner.advance(until)
        for event in events:
            if event.time > until:
                self.violations.add("deadline", f"{event!r} comes after until={until}")
            if type(event) is Result:
                self.results.append(event)
        if events or self.inner.clock.now() != before:
            self._still = 0
        else:
            self._still += 1
            if self._still >= self.SPIN_LIMIT:
                self.violations.add(
                    "decisions",
                    f"the search is stuck at t={before}: next_wakeup keeps returning the past",
                )
                raise AssertionError(f"the search is stuck at t={before}")
        now = self.inner.clock.now()
        if self.move_deadline is not None and self.moved is None and now >= self.move_deadline[0]:
            old, driver.deadline = driver.deadline, now + self.move_deadline[1]
            self.moved = (now, old, driver.deadline)
        return events
