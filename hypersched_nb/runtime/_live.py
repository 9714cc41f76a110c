"""The Dask runtime's record of one trial, and its phases: one table says every legal move.

A trial's phase says what the runtime is doing with it, finer than the driver's
``TrialState`` (a RUNNING trial is being placed, trains an epoch, waits between two, or
trains on in a batch while the driver decides on the epoch it reported)::

    IDLE --queue--> QUEUED --place--> PREPARING --launch--> TRAINING --report--> READY
    IDLE --place--> PREPARING      READY --continue--> TRAINING      READY --resize--> PREPARING
    TRAINING --report_ahead--> AHEAD --continue--> TRAINING          AHEAD --resize--> PREPARING
    every phase --vacate--> IDLE   (pause, stop, failure, lost worker)

Each move is a method of :class:`LiveTrial` that checks the table, then applies the move's
effects on the record (what it holds, what is in flight, what was reported): nothing else
changes a live trial's fields.

A single-worker trial trains several epochs in one task (a batch) when its epochs are short:
each epoch but the batch's last is reported with ``report_ahead``, and the ``continue`` that
follows sends no task, since the batch trains on.
"""

from __future__ import annotations

import enum
from collections.abc import Callable

from hypersched_nb.errors import InvalidTransition
from hypersched_nb.runtime._messages import Epoch, Failed, Rendezvous
from hypersched_nb.runtime._slots import Slot
from hypersched_nb.runtime.checkpoint import Checkpoint

__all__ = ["TRANSITIONS", "LiveTrial", "Phase", "Phases", "batch_size", "move"]


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
    """Move ``trial`` by ``name`` or raise :class:`InvalidTransition`; the phase alone
    changes (the methods of :class:`LiveTrial` named for the moves apply their effects)."""
    old = trial.phase
    try:
        new = TRANSITIONS[old][name]
    except KeyError:
        raise _refused(trial, name) from None
    trial.phase = new
    if trial.phases is not None and new is not old:
        trial.phases.moved(trial, old)
    return new


class Phases:
    """The trials of one runtime by phase, kept as they move (:func:`move` is the one place
    a phase changes): the loop that looks at the epochs in flight, or a start that waits
    for a checkpoint, reads those trials, not every trial the search has had."""

    __slots__ = ("_by",)

    def __init__(self) -> None:
        self._by: dict[Phase, dict[int, LiveTrial]] = {p: {} for p in Phase}

    def join(self, t: LiveTrial, *, replacing: LiveTrial | None = None) -> None:
        """Keep ``t`` (in place of ``replacing``, an earlier one of the same trial)."""
        if replacing is not None:
            self._by[replacing.phase].pop(replacing.tid, None)
            replacing.phases = None
        t.phases = self
        self._by[t.phase][t.tid] = t

    def moved(self, t: LiveTrial, old: Phase) -> None:
        del self._by[old][t.tid]
        self._by[t.phase][t.tid] = t

    def __call__(self, phase: Phase) -> list[LiveTrial]:
        """The trials in ``phase`` now."""
        return list(self._by[phase].values())


def _refused(trial: LiveTrial, name: str) -> InvalidTransition:
    return InvalidTransition(f"trial {trial.tid}: can't {name} when phase={trial.phase.name}")


#: ``send(rank, slot, seq)``: submit rank ``rank``'s part of task ``seq`` to ``slot``; its future
Send = Callable[[int, Slot, int], object]


def batch_size(step: float, *, seconds: float, most: int) -> int:
    """Epochs a single-worker trial trains in one task: as many of its last ``step``
    seconds as ``seconds`` holds, between 1 and ``most`` (1 with no measure yet)."""
    if not step > 0:
        return 1
    return max(1, min(most, int(seconds / step)))


class LiveTrial:
    """The runtime's record of one trial: where it is and what is in flight. Its fields
    change only through its methods, each a move of :data:`TRANSITIONS` (or a fact heard
    about the trial in a phase, such as a checkpoint on its way), checked before it applies."""

    __slots__ = (
        "batch",
        "ckpt",
        "config",
        "deps",
        "phases",
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
        "restored",
        "saving",
        "seq",
        "slots",
        "sources",
        "starting",
        "step",
        "t_exec",
        "t_launch",
        "tid",
        "token",
        "want",
    )

    def __init__(self, tid: int, token: int, *, reported: int = 0, ckpt: Checkpoint | None = None):
        self.tid, self.token, self.config = tid, token, {}
        self.slots: list[Slot] = []
        self.phase = Phase.IDLE
        self.phases: Phases | None = None  # the index of its runtime's trials by phase
        self.starting = True  # the epoch in flight builds the replicas (or steps them)
        self.futures: dict[int, object] = {}  # rank -> future of the epoch in flight
        self.outs: dict[int, Epoch] = {}  # rank -> what that epoch returned
        self.t_exec = self.t_launch = 0.0  # when the instruction came / the tasks went out
        self.reported = reported  # epochs reported to the driver
        self.longest = 0.0  # seconds of its longest step() so far
        self.ckpt = ckpt  # last durable checkpoint known here
        self.restored: Checkpoint | None = None  # what its last launch restored from
        self.saving = None  # the pause checkpoint task in flight
        self.deps: dict[str, object] = {}  # key -> task to wait for before starting
        self.sources: frozenset[str] = frozenset()  # workers whose reads its start awaits
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

    def stranded_by(self, gone: set[str]) -> bool:
        """Its start, or the rewind a resize waits for, needs a checkpoint read on one of
        the workers at ``gone``, which left before it was read: it would wait for ever."""
        waiting = self.phase is Phase.PREPARING or (self.starting and self.phase is Phase.TRAINING)
        return waiting and not self.sources.isdisjoint(gone)

    @property
    def current(self) -> bool:
        """Its last checkpoint holds every epoch reported: no need to write another."""
        return self.ckpt is not None and self.ckpt.epoch == self.reported

    # ------------------------------------------------------------------ the moves

    def start(self, config: dict, workers: int, *, token: int, now: float, restore: bool):
        """A Start instruction, on a trial that holds nothing (IDLE): what it trains and on
        how many workers, under placement ``token``; without ``restore`` it starts over."""
        if self.phase is not Phase.IDLE:
            raise _refused(self, "start")
        self.config, self.want, self.t_exec = config, workers, now
        if not restore:
            self.reported, self.ckpt = 0, None
        self.token = token

    def queue(self) -> None:
        """IDLE -> QUEUED: too few workers are free; it waits for them."""
        move(self, "queue")

    def place(self, slots: list[Slot]) -> None:
        """IDLE or QUEUED -> PREPARING on ``slots``: its start waits for a pause's
        checkpoint still being written (its own, or their last tenant's), never for a copy
        of one on its way to the client."""
        move(self, "place")
        self._hold(slots)

    def resize(self, slots: list[Slot], *, token: int, now: float) -> None:
        """READY or AHEAD -> PREPARING on ``slots`` (its own first), under placement
        ``token``: the batch in flight, if any, is forgotten (halted by the caller)."""
        move(self, "resize")
        self._forget_flight()
        self.token, self.t_exec = token, now
        self._hold(slots)

    def launch(self, send: Send, clock, *, sources: frozenset[str] = frozenset()) -> None:
        """PREPARING -> TRAINING: every rank's start task goes out (``send``); its first
        epoch builds the replicas, timed from the Start or Resize (``t_exec``), from the
        newest checkpoint known now (:attr:`restored`), not when it was placed: those on
        their way then (a pause's, a copy) were what it waited for. ``sources`` are the
        addresses of the workers that read its checkpoint for it: until its first epoch
        is reported, it needs them (:attr:`stranded_by`)."""
        move(self, "launch")
        self.restored, self.sources = self.ckpt, sources
        self._sent(send, starting=True, epochs=1)
        self.t_launch = clock.now()

    def proceed(self, send: Send, clock, *, epochs: int) -> None:
        """READY or AHEAD -> TRAINING (the move ``continue``): the next epoch of the batch
        in flight (nothing sent), or a new task of ``epochs`` epochs on every rank."""
        ahead = self.phase is Phase.AHEAD
        move(self, "continue")
        if ahead and self.left > 0:
            return  # its batch trains on
        self._sent(send, starting=False, epochs=epochs)
        self.t_exec = self.t_launch = clock.now()

    def report(self, epoch: int, *, step: float, now: float, last: bool) -> bool:
        """TRAINING -> READY, or AHEAD when its batch trains on after this epoch (unless
        it is the ``last``: done, or its checkpoint could not be written): epoch ``epoch``
        is reported, its ``step()`` took ``step`` seconds. True if AHEAD."""
        ahead = self.left > 1 and not last
        move(self, "report_ahead" if ahead else "report")
        self.longest, self.step = max(self.longest, step), step
        self.reported, self.t_exec, self.starting = epoch, now, False
        self.sources = frozenset()
        self.outs, self.left = {}, self.left - 1
        if not ahead:
            self.futures, self.left = {}, 0
        return ahead

    def vacate(self, *, token: int, saving=None) -> list[Slot]:
        """Every phase -> IDLE: it holds no worker and nothing is in flight (the caller
        halted and cancelled it), under a new placement ``token``; ``saving`` is the pause
        checkpoint task now written for it, if any. Returns the slots it held."""
        move(self, "vacate")
        slots = self.slots
        self._forget_flight()
        self.token, self.deps, self.slots, self.sources = token, {}, [], frozenset()
        if saving is not None:
            self.saving = saving
        return slots

    # ------------------------------------------------------------------ what is heard

    def hear(self, rank: int, out: Epoch | Failed, *, now: float) -> Epoch | Failed | None:
        """Rank ``rank``'s outcome of the epoch expected (the batch's next epoch is timed
        from ``now``). Kept for later while AHEAD (None); else what to act on: a Failed, or
        the epoch once every rank returned it (None until then)."""
        self.t_launch = now
        if self.phase is Phase.AHEAD:
            self.early.append(out)
            return None
        if type(out) is Failed:
            return out
        self.outs[rank] = out
        return out if len(self.outs) >= len(self.slots) else None

    def recall(self) -> Epoch | Failed | None:
        """After a continue: the next epoch of its batch, heard while the driver decided,
        now to be reported as if heard again (None: none was heard)."""
        if self.phase is not Phase.TRAINING or not self.early:
            return None
        out = self.early.pop(0)
        if type(out) is not Failed:
            self.outs[0] = out
        return out

    def batch_over(self) -> None:
        """Its batch's task returned: no epoch comes from it beyond those heard early."""
        self.left = len(self.early)

    def killed_for_memory(self) -> int:
        """A worker of it was restarted by its nanny for memory: how many times so far."""
        self.memory_kills += 1
        return self.memory_kills

    def wait_for(self, task, *, sources: frozenset[str] = frozenset()) -> None:
        """Its start (PREPARING) waits for ``task`` (a hand-over, a port, a rewind) too;
        ``sources``: the workers reading a checkpoint for that task."""
        if self.phase is not Phase.PREPARING:
            raise _refused(self, "wait")
        self.deps[task.key] = task
        self.sources |= sources

    def unblocked(self, task) -> bool:
        """``task`` is done: True if its start (PREPARING) waited for it and for nothing else."""
        if self.phase is not Phase.PREPARING or self.deps.pop(task.key, None) is None:
            return False
        return not self.deps

    def fetching_home(self, task) -> None:
        """``task`` copies one of its checkpoints to the client, in the background: no
        start waits for it (the checkpoint reaches a worker from its writer's disk)."""
        self.fetching[task.key] = task

    def fetched(self, task) -> None:
        """``task``, copying a checkpoint to the client, is over (done or not)."""
        self.fetching.pop(task.key, None)

    def saved(self, task) -> None:
        """``task``, a checkpoint, is over: if it was its pause's, none is being written."""
        if self.saving is task:
            self.saving = None

    def meet_at(self, rendezvous: Rendezvous) -> None:
        """Its group's rendezvous (rank 0's host and a free port there) is known."""
        self.rendezvous = rendezvous

    def note_ckpt(self, ckpt: Checkpoint) -> None:
        """A checkpoint was written: keep it if it is not older than the one known."""
        if self.ckpt is None or ckpt.epoch >= self.ckpt.epoch:
            self.ckpt = ckpt

    def fall_back(self, ckpt: Checkpoint | None) -> None:
        """Its last checkpoint is out of reach (no live worker has its disk: its host was
        lost): it restores from ``ckpt``, an older one, or from none, instead."""
        if ckpt is not None and self.ckpt is not None and ckpt.epoch > self.ckpt.epoch:
            raise _refused(self, "fall forward")
        self.ckpt = ckpt

    # ------------------------------------------------------------------ helpers

    def _hold(self, slots: list[Slot]) -> None:
        self.slots, self.rendezvous, self.sources = slots, None, frozenset()
        waits = [self.saving, *(s.awaits for s in slots)]
        self.deps = {task.key: task for task in waits if task is not None}

    def _sent(self, send: Send, *, starting: bool, epochs: int) -> None:
        self.seq += 1
        self.futures = {rank: send(rank, slot, self.seq) for rank, slot in enumerate(self.slots)}
        self.outs, self.starting, self.batch, self.left = {}, starting, epochs, epochs

    def _forget_flight(self) -> None:
        self.futures, self.outs, self.early, self.left = {}, {}, [], 0

    def __repr__(self) -> str:
        return f"LiveTrial({self.tid}, {self.phase.name}, slots={[s.name for s in self.slots]})"
