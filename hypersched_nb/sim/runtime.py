"""Trace replay on a virtual clock: the simulator's side of the driver's Runtime protocol.

An epoch on k workers takes the trace's seconds / s(k); every start, resume and resize
first costs ``startup`` seconds. Workers are never over-committed (an instruction that
would is a bug in the driver, so it raises). Nothing happens after the time the driver
asks to advance to, so nothing runs past the deadline.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator

import numpy as np

from hypersched_nb.core.events import Continue, Instruction, Pause, Resize, Result, Start, Stop
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
    ):
        self.trace, self.clock, self._workers = trace, clock, workers
        self.scaling = trace.scaling if scaling is None else scaling
        self.startup = trace.startup_seconds if startup is None else float(startup)
        self.max_epochs = max_epochs or trace.longest
        self._progress: dict[int, int] = {}  # trial -> epochs trained (kept while paused)
        self._curve: dict[int, int] = {}  # trial -> trace curve id
        self._running: dict[int, _Running] = {}
        self._held = 0
        self._heap: list[tuple[float, int, int, int, float]] = []  # (time, seq, trial, token, startup)
        self._seq = 0

    # --------------------------------------------------------------- Runtime protocol

    def workers(self) -> int:
        return self._workers

    def execute(self, ins: Instruction) -> None:
        kind = type(ins)
        tid = ins.trial_id
        if kind is Continue:
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
        while heap and (heap[0][3] != getattr(running.get(heap[0][2]), "token", -1)):
            heapq.heappop(heap)  # a paused, stopped or resized trial's stale epoch
        if not heap or heap[0][0] > until:
            self.clock.sleep_until(max(until, self.clock.now()))
            return []
        t = heap[0][0]
        self.clock.sleep_until(t)
        out = []
        while heap and heap[0][0] == t:
            _, _, tid, token, startup = heapq.heappop(heap)
            run = running.get(tid)
            if run is None or run.token != token:
                continue
            out.append(self._finish_epoch(tid, run, t, startup))
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
        epoch = self._progress[tid]
        secs = self.trace.seconds[run.curve][epoch] / self.scaling(run.workers)
        self._seq += 1
        heapq.heappush(self._heap, (self.clock.now() + startup + secs, self._seq, tid, run.token, startup))

    def _finish_epoch(self, tid: int, run: _Running, t: float, startup: float) -> Result:
        epoch = self._progress[tid]
        metrics = self.trace.metrics[run.curve]
        secs = self.trace.seconds[run.curve][epoch] / self.scaling(run.workers)
        self._progress[tid] = epoch + 1
        return Result(
            tid,
            epoch + 1,
            float(metrics[epoch]),
            t,
            secs,
            run.workers,
            startup,
            epoch + 1 >= len(metrics),
        )

    def held(self) -> int:
        """Workers held by running trials now (for invariant checks)."""
        return self._held

    def iter_running(self) -> Iterator[tuple[int, int]]:
        return ((tid, r.workers) for tid, r in self._running.items())
