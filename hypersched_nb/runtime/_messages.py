"""What the client and the workers of the Dask runtime say to each other.

The client sends a :class:`StartSpec` (with a :class:`SaveSpec` for rank 0, and the
trainable :class:`Sealed`) to build a replica; the tasks of
:mod:`hypersched_nb.runtime._worker` answer with an :class:`Epoch`, a :class:`Handover` or
a :class:`Failed`. Everything here is a plain frozen dataclass in an
importable module, so that it pickles to a worker and back. An epoch's outcome also travels
in a :class:`Report`, as the payload of a ``Worker.log_event``, which must be msgpack-able:
:meth:`Report.to_event` and :meth:`Report.from_event` are the one place it becomes a plain
dict and a record again.
"""

from __future__ import annotations

import dataclasses
import itertools
import pickle
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from hypersched_nb.runtime.checkpoint import Checkpoint

__all__ = [
    "BestBar",
    "Epoch",
    "Failed",
    "Handover",
    "Rendezvous",
    "SaveSpec",
    "Report",
    "Sealed",
    "StartSpec",
    "placement_tokens",
    "search_of",
]

_COUNT_BITS = 20  # a placement token: its search's number above, its own count below


def placement_tokens(search: int) -> Iterator[int]:
    """The tokens of search ``search``'s placements, in order: unique to it on a cluster
    that other searches share (a late task of theirs never touches its trials), and each
    naming it (:func:`search_of`)."""
    return itertools.count((search << _COUNT_BITS) + 1)


def search_of(token: int) -> int:
    """The search whose placement ``token`` is."""
    return token >> _COUNT_BITS


@dataclass(frozen=True, slots=True)
class Sealed:
    """An object pickled once in the kernel, with cloudpickle as Dask pickles a task's
    arguments, that travels as bytes. Dask's scheduler unpickles every task it is sent, and
    so imports whatever the objects in its arguments need: a trainable sent as itself made
    it import the trainable's module, and torch with it (measured on a kernel's first search:
    1.2 s during which it scheduled nothing, and 475 MB more). Sealed, it is bytes to the
    scheduler; the worker that builds a replica opens it.
    """

    name: str  # what it is, said without opening it
    data: bytes = field(repr=False)

    @classmethod
    def of(cls, obj: object) -> Sealed:
        """``obj`` sealed; what cannot be pickled raises as it would on submitting a task."""
        import cloudpickle

        data = cloudpickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        return cls(getattr(obj, "__qualname__", type(obj).__name__), data)

    def open(self) -> object:
        """The object, unpickled here (a class of the notebook's is rebuilt by value)."""
        return pickle.loads(self.data)  # our own kernel's object, as a Dask task's are


@dataclass(frozen=True, slots=True)
class Rendezvous:
    """Where rank 0 of a new ``torch.distributed`` group listens."""

    host: str
    port: int


@dataclass(frozen=True, slots=True)
class BestBar:
    """What an epoch's ``metric`` must beat for its weights to be kept apart: ``sign`` × the
    metric above ``above`` (``sign`` is +1 when larger is better; ``above`` None: none kept
    yet, so any finite metric does)."""

    metric: str
    sign: float
    above: float | None


@dataclass(frozen=True, slots=True)
class SaveSpec:
    """How rank 0 writes checkpoints: under ``dir``, within ``overhead`` × the training time,
    keeping ``keep`` (the last checkpoint the client knows of) besides the newest; a best's
    weights, written in the background, are said on ``topic`` once written."""

    dir: str
    overhead: float
    keep: str | None = None
    best: BestBar | None = None
    topic: str | None = None


@dataclass(frozen=True, slots=True)
class StartSpec:
    """One replica to build: rank ``rank`` of ``world`` for placement ``token`` of trial
    ``trial_id``, from ``factory.open()()`` set up with ``config``; ``replay`` epochs are trained
    again silently after the restore; ``save`` is None except on rank 0."""

    trial_id: int
    token: int
    rank: int
    world: int
    factory: Sealed  # a Callable[[], object] (a trainable class, or a factory of one)
    config: Mapping
    seed: int
    replay: int
    save: SaveSpec | None
    group_timeout: float


@dataclass(frozen=True, slots=True)
class Epoch:
    """One trained epoch of one replica. ``metrics`` is rank 0's (None on the other ranks);
    ``step`` the seconds ``step()`` took and ``write`` those spent writing; ``ckpt`` and
    ``best`` the checkpoint and the best weights written after it, if any. ``unsaved`` says
    why they could not be written (a full disk: the trial must leave its workers, since
    its last checkpoint falls behind); ``refused`` why the checkpoint the replica was to
    restore was refused, and what it restored instead."""

    epoch: int
    metrics: dict | None
    step: float
    write: float = 0.0
    ckpt: Checkpoint | None = None
    best: Checkpoint | None = None
    unsaved: str | None = None
    refused: str | None = None


@dataclass(frozen=True, slots=True)
class Handover:
    """What a task between two placements did: the checkpoint it wrote, and the port it
    picked for the next group's rendezvous."""

    ckpt: Checkpoint | None = None
    rendezvous: Rendezvous | None = None


@dataclass(frozen=True, slots=True)
class Failed:
    """A task's failure: the worker's traceback, or why the task could not run."""

    error: str


@dataclass(frozen=True, slots=True)
class Report:
    """An epoch task's outcome, sent as an event just before the task returns it: task
    ``key`` has this ``outcome``."""

    key: str
    outcome: Epoch | Failed

    def to_event(self) -> dict:
        """A ``Worker.log_event`` payload: plain values only (msgpack-able)."""
        if type(self.outcome) is Failed:
            return {"key": self.key, "error": self.outcome.error}
        return {"key": self.key, "epoch": dataclasses.asdict(self.outcome)}

    @classmethod
    def from_event(cls, payload: Mapping) -> Report:
        """The report a :meth:`to_event` payload carries."""
        if "error" in payload:
            return cls(payload["key"], Failed(payload["error"]))
        plain = dict(payload["epoch"])
        for name in ("ckpt", "best"):
            if plain[name] is not None:
                plain[name] = Checkpoint(**plain[name])
        return cls(payload["key"], Epoch(**plain))
