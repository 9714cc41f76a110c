"""Trace replay on a virtual clock: the simulator's side of the driver's Runtime protocol.

An epoch on k workers takes the trace's seconds / s(k); every start, resume and resize
first costs ``startup`` seconds. The cluster may be elastic: :class:`ScaleCluster` sets its
size within ``max_workers`` (the driver, which decides the size, bills ∫ size dt). Workers
are never over-committed (an instruction that would is a bug in the driver, so it raises).
Nothing happens after the time the driver asks to advance to, so nothing runs past the
deadline.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator

import numpy as np

from hypersched_nb.core.events import (
    Continue,
    Instruction,
    Pause,
    Resize,
    Result,
    ScaleCluster,
    Start,
    Stop,
)
from hypersched_nb.core.scaling import ScalingCurve
from hypersched_nb.errors import InvalidTransition
from hypersched_nb.sim.clock import VirtualClock
from hypersched_nb.sim.trace import TRACE_KEY, Trace

__all__ = ["SimRuntime", "offers"]

# A Result is made per simulated epoch: built as the named tuple it is, from all its fields
# in order (``info`` last), it skips the Python call of its generated constructor.
_tuple_new = tuple.__new__


def offers(trace: Trace, configs: int, seed: int) -> list[dict]:
    """The configurations seed ``seed`` offers, in order (the same for every policy)."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(np.array(trace.ids))[: min(configs, len(trace.ids))]
    return [trace.config(int(t)) for t in order]


class _Replay:
    """One trial's curve (as Python lists: they index ~10x faster than numpy arrays one
    element at a time) and how many epochs it has trained, kept while it is paused."""

    __slots__ = ("metrics", "progress", "seconds")

    def __init__(self, metrics: list[float], seconds: list[float]):
        self.metrics, self.seconds, self.progress = metrics, seconds, 0


class _Running:
    """A running trial's hold on ``workers`` workers; ``speed`` = s(workers).

    A new one is made at every start, resume and resize, and the epoch in flight carries
    the one it was scheduled under: an epoch whose hold is no longer the trial's current
    one (since paused, stopped or resized) is dropped when its time comes.
    """

    __slots__ = ("replay", "speed", "workers")

    def __init__(self, replay: _Replay, workers: int, speed: float):
        self.replay, self.workers, self.speed = replay, workers, speed


class SimRuntime:
    def __init__(
        self,
        trace: Trace,
        clock: VirtualClock,
        workers: int,
        *,
        scaling: ScalingCurve | None = None,
        startup: float | None = None,
        max_epochs: int | None = None,
        max_workers: int | None = None,
    ):
        self.trace, self.clock, self._workers = trace, clock, workers
        self.max_workers = max(workers, max_workers or workers)
        self.scaling = trace.scaling if scaling is None else scaling
        self.startup = trace.startup_seconds if startup is None else float(startup)
        self.max_epochs = max_epochs or trace.longest
        self._replays: dict[int, _Replay] = {}  # trial -> its curve and progress
        self._running: dict[int, _Running] = {}
        self._held = 0
        # epochs in flight: (end time, seq, trial, hold, seconds, start-up); seq orders ties
        self._heap: list[tuple[float, int, int, _Running, float, float]] = []
        self._seq = 0

    # --------------------------------------------------------------- Runtime protocol

    def workers(self) -> int:
        return self._workers

    def execute(self, ins: Instruction) -> None:
        kind = type(ins)
        if kind is Continue:  # the common case first
            return self._schedule(ins.trial_id, self._running[ins.trial_id], 0.0)
        if kind is ScaleCluster:
            return self._scale(ins.workers)
        tid = ins.trial_id
        if kind is Start:
            replay = self._replays.get(tid)
            if replay is None:
                curve = int(ins.config[TRACE_KEY])
                replay = self._replays[tid] = _Replay(
                    self.trace.metrics[curve].tolist(), self.trace.seconds[curve].tolist()
                )
            if not ins.restore:
                replay.progress = 0
            self._schedule(tid, self._hold(tid, replay, ins.workers), self.startup)
        elif kind is Resize:
            self._release(tid)
            self._schedule(tid, self._hold(tid, self._replays[tid], ins.workers), self.startup)
        elif kind is Pause or kind is Stop:
            self._release(tid)
        else:  # pragma: no cover - the Instruction union is closed
            raise InvalidTransition(f"trial {tid}: unknown instruction {ins!r}")

    def advance(self, until: float) -> list[Result]:
        heap, running = self._heap, self._running
        out: list[Result] = []
        t = None  # the time of this batch, once its first live epoch is found
        while heap:
            end = heap[0][0]
            if end > until if t is None else end != t:
                break
            end, _, tid, run, secs, startup = heapq.heappop(heap)
            if running.get(tid) is not run:
                continue  # the epoch of a trial since paused, stopped or resized
            t = end
            replay = run.replay
            epoch = replay.progress + 1
            replay.progress = epoch
            metrics, workers = replay.metrics, run.workers
            done = epoch >= len(metrics)
            fields = (tid, epoch, metrics[epoch - 1], t, secs, workers, startup, done, None)
            out.append(_tuple_new(Result, fields))
        self.clock.sleep_until(t if t is not None else max(until, self.clock.now()))
        return out

    # --------------------------------------------------------------- internals

    def _hold(self, tid: int, replay: _Replay, workers: int) -> _Running:
        if self._held + workers > self._workers:
            raise InvalidTransition(
                f"trial {tid}: can't hold {workers} workers, {self._workers - self._held} free"
            )
        self._held += workers
        run = self._running[tid] = _Running(replay, workers, self.scaling(workers))
        return run

    def _release(self, tid: int) -> None:
        run = self._running.pop(tid, None)
        if run is not None:
            self._held -= run.workers

    def _schedule(self, tid: int, run: _Running, startup: float) -> None:
        """Put the trial's next epoch in flight: it ends after ``startup`` + its seconds / s(k)."""
        secs = run.replay.seconds[run.replay.progress] / run.speed
        self._seq += 1
        heapq.heappush(
            self._heap, (self.clock.now() + startup + secs, self._seq, tid, run, secs, startup)
        )

    def _scale(self, workers: int) -> None:
        if not self._held <= workers <= self.max_workers:
            raise InvalidTransition(
                f"cluster: can't scale to {workers} workers; {self._held} held, at most {self.max_workers}"
            )
        self._workers = workers

    def held(self) -> int:
        """Workers held by running trials now (for invariant checks)."""
        return self._held

    def iter_running(self) -> Iterator[tuple[int, int]]:
        return ((tid, r.workers) for tid, r in self._running.items())
