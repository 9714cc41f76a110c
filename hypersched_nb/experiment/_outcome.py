"""What the driver drives and what it reports: the :class:`Runtime` protocol the simulator
and the Dask runtime implement, the :class:`Outcome` of a search, and how the workers a
policy asks for are granted (:func:`granted`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from hypersched_nb.core.events import Event, Instruction

__all__ = ["Outcome", "Runtime", "granted"]


class Runtime(Protocol):
    """Where trials really (or virtually) train."""

    def workers(self) -> int:
        """Workers in the cluster now."""

    def execute(self, instruction: Instruction) -> None:
        """Carry out one instruction (never blocks on training)."""

    def advance(self, until: float) -> list[Event]:
        """Events that happen no later than ``until``: returns as soon as there are some
        (the clock then reads their time) or when the clock reaches ``until``."""


@dataclass
class Outcome:
    """What a finished search reports (the benchmark's JSON row comes from it)."""

    best: float = math.nan  # best raw metric reported before the deadline
    best_trial: int | None = None
    trials_started: int = 0
    worker_seconds_busy: float = 0.0
    time_to_target: float | None = None
    ended_at: float = 0.0
    worker_seconds_billed: float = 0.0  # ∫ cluster size dt from the start to ended_at
    journal: list[dict] | None = field(default_factory=list)  # None: not kept


def granted(targets: Mapping[int, int], running: Mapping, capacity: int) -> dict[int, int]:
    """The workers each running trial gets at its next epoch, of the ``targets`` a policy
    asked for: every shrink is kept (to one worker at least); grows are granted in the
    policy's order while the workers not held by running trials last."""
    out: dict[int, int] = {}
    spare = capacity - sum(t.workers for t in running.values())
    for tid, want in targets.items():
        trial = running.get(tid)
        if trial is not None and want < trial.workers:
            out[tid] = max(1, want)
    for tid, want in targets.items():
        trial = running.get(tid)
        if trial is not None and want > trial.workers and spare > 0:
            grant = min(want, trial.workers + spare)
            spare -= grant - trial.workers
            out[tid] = grant
    return out
