"""Trace replay on a virtual clock: the simulator's side of the driver's Runtime protocol.

An epoch on k workers takes the trace's seconds / s(k); every start, resume and resize
first costs ``startup`` seconds. The cluster may be elastic: :class:`ScaleCluster` sets its
size within ``max_workers``, and the runtime bills ∫ cluster size dt in worker-seconds.
Workers are never over-committed (an instruction that
would is a bug in the driver, so it raises). Nothing happens after the time the driver
asks to advance to, so nothing runs past the deadline.
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


def offers(trace: Trace, configs: int, seed: int) -> list[dict]:
    """The configurations seed ``seed`` offers, in order (the same for every policy)."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(np.array(trace.ids))[: min(configs, len(trace.ids))]
    return [trace.config(int(t)) for t in order]


class _Running:
    __slots__ = ("curve", "workers", "token")

    def __init__(self, curve: int, workers: int, token: int):
        self.curve, self.workers, self.token = curve, workers, token


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
        self._billed, self._billed_at = 0.0, clock.now()
        self.scaling = trace.scaling if scaling is None else scaling
        self.startup = trace.startup_seconds if startup is None else float(startup)
        self.max_epochs = max_epochs or trace.longest
        self._progress: dict[int, int] = {}  # trial -> epochs trained (kept while paused)
        self._curve: dict[int, int] = {}  # trial -> trace curve id
        self._running: dict[int, _Running] = {}
        self._held = 0
        self._heap: list[tuple[float, int, int, int, float]] = []  # (time, seq, trial, token, startup)
        self._seq = 0
        # Python lists index ~10x faster than numpy arrays element by element
        self._metrics = {c: m.tolist() for c, m in trace.metrics.items()}
        self._seconds = {c: x.tolist() for c, x in trace.seconds.items()}

    # --------------------------------------------------------------- Runtime protocol

    def workers(self) -> int:
        return self._workers

    def execute(self, ins: Instruction) -> None:
        kind = type(ins)
        if kind is ScaleCluster:
            return self._scale(ins.workers)
        tid = ins.trial_id
        if kind is Continue:  # the common case first
            self._schedule(tid, 0.0)
        elif kind is Start:
            self._curve.setdefault(tid, int(ins.config[TRACE_KEY]))
            if not ins.restore:
                self._progress[tid] = 0
            self._hold(tid, ins.workers)
            self._schedule(tid, self.startup)
        elif kind is Resize:
            self._release(tid)
            self._hold(tid, ins.workers)
            self._schedule(tid, self.startup)
        elif kind is Pause or kind is Stop:
            self._release(tid)
        else:  # pragma: no cover - the Instruction union is closed
            raise InvalidTransition(f"trial {tid}: unknown instruction {ins!r}")

    def advance(self, until: float) -> list[Result]:
        heap, running = self._heap, self._running
        out: list[Result] = []
        t = None
        while heap:
            top = heap[0]
            if t is None:
                if top[0] > until:
                    break
            elif top[0] != t:
                break
            heapq.heappop(heap)
            run = running.get(top[2])
            if run is None or run.token != top[3]:
                continue  # the epoch of a trial since paused, stopped or resized
            t = top[0]
            out.append(self._finish_epoch(top[2], run, t, top[4]))
        self.clock.sleep_until(t if t is not None else max(until, self.clock.now()))
        return out

    # --------------------------------------------------------------- internals

    def _hold(self, tid: int, workers: int) -> None:
        if self._held + workers > self._workers:
            raise InvalidTransition(
                f"trial {tid}: can't hold {workers} workers, {self._workers - self._held} free"
            )
        self._held += workers
        self._seq += 1
        self._running[tid] = _Running(self._curve[tid], workers, self._seq)

    def _release(self, tid: int) -> None:
        run = self._running.pop(tid, None)
        if run is not None:
            self._held -= run.workers

    def _schedule(self, tid: int, startup: float) -> None:
        run = self._running[tid]
        secs = self._seconds[run.curve][self._progress[tid]] / self.scaling(run.workers)
        self._seq += 1
        heapq.heappush(self._heap, (self.clock.now() + startup + secs, self._seq, tid, run.token, startup))

    def _finish_epoch(self, tid: int, run: _Running, t: float, startup: float) -> Result:
        epoch = self._progress[tid]
        metrics = self._metrics[run.curve]
        secs = self._seconds[run.curve][epoch] / self.scaling(run.workers)
        self._progress[tid] = epoch + 1
        return Result(tid, epoch + 1, metrics[epoch], t, secs, run.workers, startup, epoch + 1 >= len(metrics))

    def _scale(self, workers: int) -> None:
        if not self._held <= workers <= self.max_workers:
            raise InvalidTransition(
                f"cluster: can't scale to {workers} workers; {self._held} held, at most {self.max_workers}"
            )
        self._billed = self.worker_seconds_billed(self.clock.now())
        self._billed_at = self.clock.now()
        self._workers = workers

    def worker_seconds_billed(self, until: float | None = None) -> float:
        """∫ cluster size dt from the start to ``until`` (default: now), in worker-seconds."""
        until = self.clock.now() if until is None else until
        return self._billed + self._workers * max(0.0, until - self._billed_at)

    def held(self) -> int:
        """Workers held by running trials now (for invariant checks)."""
        return self._held

    def iter_running(self) -> Iterator[tuple[int, int]]:
        return ((tid, r.workers) for tid, r in self._running.items())
