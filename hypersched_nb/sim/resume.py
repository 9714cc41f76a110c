"""A simulated runtime that starts in the middle of a search (what a forecast continues).

:class:`ResumedRuntime` is a :class:`~hypersched_nb.sim.runtime.SimRuntime` that takes over
trials which have already trained: each :class:`Seat` gives a trial's whole curve (the epochs
it reported, then a future for the ones to come), the epochs it has done and, for a trial
that holds workers now, how long its epoch in flight still takes. Trials it does not seat
are started from the trace, as :class:`SimRuntime` starts them.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from hypersched_nb.sim.clock import VirtualClock
from hypersched_nb.sim.runtime import SimRuntime, _Replay, _Running
from hypersched_nb.sim.trace import Trace

__all__ = ["ResumedRuntime", "Seat"]


@dataclass(frozen=True, slots=True)
class Seat:
    """One trial taken over: ``metrics`` and ``seconds`` (on one worker) for every epoch,
    the first ``epochs`` of them done; a running trial holds ``workers`` (> 0) and its
    next epoch ends ``remaining`` seconds from now."""

    trial_id: int
    metrics: np.ndarray
    seconds: np.ndarray
    epochs: int
    workers: int = 0
    remaining: float = 0.0


class ResumedRuntime(SimRuntime):
    """A :class:`SimRuntime` whose clock stands where the search stands and whose trials
    have already trained (``seats``). Running seats may hold more workers than ``workers``
    (a forecast for a smaller cluster): nothing new starts until enough of them let go."""

    def __init__(
        self, trace: Trace, clock: VirtualClock, workers: int, seats: Iterable[Seat], **options
    ):
        super().__init__(trace, clock, workers, **options)
        for seat in seats:
            self._take(seat)

    def _take(self, seat: Seat) -> None:
        replay = _Replay(seat.metrics.tolist(), seat.seconds.tolist())
        replay.progress = seat.epochs
        self._replays[seat.trial_id] = replay
        if seat.workers <= 0:
            return
        run = self._running[seat.trial_id] = _Running(
            replay, seat.workers, self.scaling(seat.workers)
        )
        self._held += seat.workers
        secs = replay.seconds[replay.progress] / run.speed
        self._seq += 1
        end = self.clock.now() + max(0.0, seat.remaining)
        heapq.heappush(self._heap, (end, self._seq, seat.trial_id, run, secs, 0.0))
