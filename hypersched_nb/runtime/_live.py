"""The Dask runtime's record of one trial, and its phases: one table says every legal move.

A trial's phase says what the runtime is doing with it, finer than the driver's
``TrialState`` (a RUNNING trial is being placed, trains an epoch, waits between two, or
trains on in a batch while the driver decides on the epoch it reported)::

    IDLE --queue--> QUEUED --place--> PREPARING --launch--> TRAINING --report--> READY
    IDLE --place--> PREPARING      READY --continue--> TRAINING      READY --resize--> PREPARING
    TRAINING --report_ahead--> AHEAD --continue--> TRAINING          AHEAD --resize--> PREPARING
    every phase --vacate--> IDLE   (pause, stop, failure, lost worker)

A single-worker trial trains several epochs in one task (a batch) when its epochs are short:
each epoch but the batch's last is reported with ``report_ahead``, and the ``continue`` that
follows sends no task, since the batch trains on.
"""

from __future__ import annotations

import enum

from hypersched_nb.errors import InvalidTransition
from hypersched_nb.runtime._messages import Epoch, Failed, Rendezvous
from hypersched_nb.runtime._slots import Slot
from hypersched_nb.runtime.checkpoint import Checkpoint

__all__ = ["TRANSITIONS", "LiveTrial", "Phase", "batch_size", "move"]


class Phase(enum.Enum):
    IDLE = "idle"  # holds no worker: new, paused, stopped, failed or lost
    QUEUED = "queued"  # started while too few workers were free: waits for them
    PREPARING = "preparing"  # holds its workers; waits for checkpoints and a rendezvous port
    TRAINING = "training"  # an epoch is in flight on its workers
    READY = "ready"  # replicas resident between two epochs: Continue, Resize, Pause or Stop
    AHEAD = "ahead"  # reported mid-batch: the driver decides while the batch trains on

    def __repr__(self) -> str:
        return f"Phase.{self.name}"


_I, _Q, _P, _T, _R = Phase.IDLE, Phase.QUEUED, Phase.PREPARING, Phase.TRAINING, Phase.READY
_A = Phase.AHEAD

#: ``TRANSITIONS[phase][move] -> new phase``.
TRANSITIONS: dict[Phase, dict[str, Phase]] = {
    _I: {"queue": _Q, "place": _P, "vacate": _I},
    _Q: {"place": _P, "vacate": _I},
    _P: {"launch": _T, "vacate": _I},
    _T: {"report": _R, "report_ahead": _A, "vacate": _I},
    _R: {"continue": _T, "resize": _P, "vacate": _I},
    _A: {"continue": _T, "resize": _P, "vacate": _I},
}


def move(trial: LiveTrial, name: str) -> Phase:
    """Move ``trial`` by ``name`` or raise :class:`InvalidTransition`."""
    try:
        new = TRANSITIONS[trial.phase][name]
    except KeyError:
        raise InvalidTransition(
            f"trial {trial.tid}: can't {name} when phase={trial.phase.name}"
        ) from None
    trial.phase = new
    return new


def batch_size(step: float, *, seconds: float, most: int) -> int:
    """Epochs a single-worker trial trains in one task: as many of its last ``step``
    seconds as ``seconds`` holds, between 1 and ``most`` (1 with no measure yet)."""
    if not step > 0:
        return 1
    return max(1, min(most, int(seconds / step)))


class LiveTrial:
    """The runtime's record of one trial: where it is and what is in flight. Its phase
    changes only through :func:`move`."""

    __slots__ = (
        "batch",
        "ckpt",
        "config",
        "deps",
        "fetching",
        "early",
        "futures",
        "left",
        "longest",
        "memory_kills",
        "outs",
        "phase",
        "rendezvous",
        "reported",
        "saving",
        "seq",
        "slots",
        "starting",
        "step",
        "t_exec",
        "t_launch",
        "tid",
        "token",
        "want",
    )

    def __init__(self, tid: int, token: int):
        self.tid, self.token, self.config = tid, token, {}
        self.slots: list[Slot] = []
        self.phase = Phase.IDLE
        self.starting = True  # the epoch in flight builds the replicas (or steps them)
        self.futures: dict[int, object] = {}  # rank -> future of the epoch in flight
        self.outs: dict[int, Epoch] = {}  # rank -> what that epoch returned
        self.t_exec = self.t_launch = 0.0  # when the instruction came / the tasks went out
        self.reported = 0  # epochs reported to the driver
        self.longest = 0.0  # seconds of its longest step() so far
        self.ckpt: Checkpoint | None = None  # last durable checkpoint known here
        self.saving = None  # the pause checkpoint task in flight
        self.deps: dict[str, object] = {}  # key -> task to wait for before starting
        self.fetching: dict[str, object] = {}  # key -> task copying a checkpoint to the client
        self.rendezvous: Rendezvous | None = None
        self.want = 1
        self.memory_kills = 0  # workers restarted by their nanny while it ran, for memory
        self.seq = 0  # numbers the tasks sent out, so a late answer is told from a new one
        self.batch = 1  # epochs the task in flight trains at most
        self.left = 0  # of those, the epochs not yet reported
        self.early: list[Epoch | Failed] = []  # heard while AHEAD: reported one per continue
        self.step = 0.0  # seconds of the last reported epoch's step(): sizes the next batch

    @property
    def expected(self) -> int:
        """The epoch the next answer must hold: any other was heard already."""
        return self.reported + 1 + len(self.early)

    @property
    def batching(self) -> bool:
        """A batch is in flight (or its last epoch is not reported yet): halt it to stop."""
        return self.batch > 1 and self.phase in (Phase.TRAINING, Phase.AHEAD)

    @property
    def current(self) -> bool:
        """Its last checkpoint holds every epoch reported: no need to write another."""
        return self.ckpt is not None and self.ckpt.epoch == self.reported

    def note_ckpt(self, ckpt: Checkpoint) -> None:
        """A checkpoint was written: keep it if it is not older than the one known."""
        if self.ckpt is None or ckpt.epoch >= self.ckpt.epoch:
            self.ckpt = ckpt

    def __repr__(self) -> str:
        return f"LiveTrial({self.tid}, {self.phase.name}, slots={[s.name for s in self.slots]})"
