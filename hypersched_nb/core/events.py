"""Events into the driver and instructions out of it: plain frozen values (h11's ``_events``).

Inputs come from a runtime (the simulator or Dask) and describe what happened; instructions
go to a runtime and say what to do next. Neither carries behaviour: the driver decides, the
runtime carries out. Every value has a ``trial_id`` (or none, for cluster-wide events), so a
journal of them replays a search exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import NamedTuple

__all__ = [
    # inputs
    "Result",
    "TrialFailed",
    "WorkersChanged",
    "TrialHalted",
    "DeadlineChanged",
    # instructions
    "Start",
    "Continue",
    "Resize",
    "Pause",
    "Stop",
    "ScaleCluster",
    "Instruction",
    "Event",
]


class _Matchable:
    __slots__ = ()

    def match(self, **expected) -> bool:
        """True when every given field equals its expected value (handy in tests)."""
        return all(getattr(self, name) == value for name, value in expected.items())

    def as_dict(self) -> dict:
        out = {"type": type(self).__name__}
        out.update({f.name: getattr(self, f.name) for f in fields(self)})
        return out


# ----------------------------------------------------------------------------- inputs


class Result(NamedTuple):
    """A trial finished one epoch.

    ``metric`` is the raw value the trainable reported; ``seconds`` the wall time that epoch
    took on ``workers`` workers; ``startup`` the seconds spent starting, restoring or resizing
    before this epoch (0 when the trial just went on); ``done`` says the trial cannot train
    further (its trace ran out or its trainable said so).

    A named tuple rather than a frozen dataclass: one is made per simulated epoch, and a
    tuple is built 3.5x faster (0.8 us against 2.9 us here), which the simulator's speed
    target needs. It is just as immutable.
    """

    trial_id: int
    epoch: int
    metric: float
    time: float
    seconds: float
    workers: int
    startup: float = 0.0
    done: bool = False
    info: dict | None = None  # the other metrics the trainable reported (shown, not decided on)

    def match(self, **expected) -> bool:
        return all(getattr(self, name) == value for name, value in expected.items())

    def as_dict(self) -> dict:
        return {"type": "Result", **self._asdict()}


@dataclass(frozen=True, slots=True)
class TrialFailed(_Matchable):
    """The trial's own code raised, or its workers could not run it."""

    trial_id: int
    time: float
    error: str
    epoch: int = 0


@dataclass(frozen=True, slots=True)
class WorkersChanged(_Matchable):
    """The cluster now has ``workers`` workers. ``lost`` lists trials whose workers died:
    they go back to PAUSED and resume from their last checkpoint. ``paused`` names the
    workers Dask has paused (their memory past its pause threshold): they run nothing, and
    are given no new trial, until Dask resumes them."""

    time: float
    workers: int
    lost: tuple[int, ...] = ()
    paused: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TrialHalted(_Matchable):
    """The runtime took the trial off its workers by itself, for ``reason``: its epoch's
    checkpoint could not be written (a full disk), or it exhausted its worker's memory. It
    goes back to PAUSED and may resume from its last checkpoint."""

    trial_id: int
    time: float
    reason: str


@dataclass(frozen=True, slots=True)
class DeadlineChanged(_Matchable):
    time: float
    deadline: float


Event = Result | TrialFailed | WorkersChanged | TrialHalted | DeadlineChanged

# ----------------------------------------------------------------------- instructions


@dataclass(frozen=True, slots=True)
class Start(_Matchable):
    """Start (``restore=False``) or resume from its checkpoint (``restore=True``) on
    ``workers`` workers, then train one epoch."""

    trial_id: int
    config: dict
    workers: int
    restore: bool = False


@dataclass(frozen=True, slots=True)
class Continue(_Matchable):
    """Train one more epoch where the trial is."""

    trial_id: int


@dataclass(frozen=True, slots=True)
class Resize(_Matchable):
    """Checkpoint, restart on ``workers`` workers, restore, and train one more epoch."""

    trial_id: int
    workers: int


@dataclass(frozen=True, slots=True)
class Pause(_Matchable):
    """Checkpoint and give the workers back."""

    trial_id: int


@dataclass(frozen=True, slots=True)
class Stop(_Matchable):
    """Give the workers back; the trial is over (its checkpoint may be kept for the best)."""

    trial_id: int


@dataclass(frozen=True, slots=True)
class ScaleCluster(_Matchable):
    """Grow or shrink an elastic cluster to ``workers`` workers (never below those held)."""

    workers: int


Instruction = Start | Continue | Resize | Pause | Stop | ScaleCluster
