"""The replicas a worker holds between epochs: one live trainable per worker (resident trials).

``RESIDENT``, a global of this module in the worker process, holds the replica of the trial
that holds the worker: its trainable object, its :class:`TrainContext` and its checkpoint
bookkeeping, so that nothing travels between two epochs of a trial that stays put. A worker
hosts at most one replica; a replica belongs to one placement of a trial (its ``token``), so
a late task of an old placement never touches a newer one. ``HALTED`` holds the placements
whose batch ends at its next epoch boundary, and ``ENDED`` the searches that are over; a
placement halted, or of a search that is over (:func:`halted`), writes nothing more into
the search's folder from any task, one yet to begin included. Every write into it is made
under ``WRITES``, having asked :func:`halted` under it, so that a halt or an end waits for
the write in progress and no write begins after it. A halt is forgotten with its replica,
or with its search.
"""

from __future__ import annotations

import random
import sys
import threading
from dataclasses import dataclass

from hypersched_nb.runtime._messages import Rendezvous, StartSpec, search_of
from hypersched_nb.runtime._rendezvous import join_group, leave_group
from hypersched_nb.runtime._worker_io import restore
from hypersched_nb.runtime.checkpoint import Checkpoint
from hypersched_nb.train.context import TrainContext

__all__ = [
    "ENDED",
    "HALTED",
    "RESIDENT",
    "WRITES",
    "Replica",
    "Resident",
    "build",
    "dropped",
    "end",
    "evict",
    "gone",
    "halted",
    "teardown",
]


@dataclass(frozen=True, slots=True)
class Resident:
    """The replica a worker holds: its rank and world size, placement and epochs trained."""

    rank: int
    world: int
    token: int
    epochs: int


class Replica:
    """One live replica of a trial on this worker, and its checkpoint bookkeeping."""

    __slots__ = (
        "config",
        "ctx",
        "epochs",
        "group",
        "metrics",
        "refused",
        "since_write",
        "token",
        "trainable",
        "trial_id",
        "write_cost",
    )

    def __init__(self, spec: StartSpec, trainable, ctx: TrainContext, epochs: int, group: bool):
        self.trial_id, self.token, self.trainable, self.ctx = (
            spec.trial_id,
            spec.token,
            trainable,
            ctx,
        )
        self.config = spec.config
        self.metrics: dict = {}  # of the last epoch, as plain values (rank 0)
        self.epochs = epochs  # epochs this trial has trained, counting those before a restore
        self.since_write = 0.0  # training seconds since the last checkpoint
        self.write_cost: float | None = None  # seconds the last checkpoint took
        self.group = group  # joined a torch.distributed process group
        self.refused: str | None = None  # why the checkpoint to restore was refused, once


RESIDENT: dict[int, Replica] = {}
HALTED: set[tuple[int, int]] = set()  # (trial, placement) whose batch ends at the next boundary
ENDED: set[int] = set()  # the searches over (see _worker.quiesce), by number
# held while a task writes into the search's folder (a checkpoint, a best's weights, the
# files of a checkpoint from another disk): a placement halted, or a search ended, under it
# writes nothing more (the client drops what such a task returns, so its files would be
# orphans, or appear in a folder its search has left), and one halted meanwhile waits
# for the write in progress
WRITES = threading.Lock()


def halted(trial_id: int, token: int) -> bool:
    """Whether placement ``token`` of trial ``trial_id`` is to end at its next epoch
    boundary and write nothing more: halted, or its search is over. Asked under ``WRITES``
    by a task about to write."""
    return (trial_id, token) in HALTED or search_of(token) in ENDED


def build(spec: StartSpec, ckpt: Checkpoint | None, rendezvous: Rendezvous | None) -> Replica:
    """The replica ``spec`` describes, resident, restored from ``ckpt`` and with the epochs
    reported since trained again."""
    import torch

    device = "cuda:0" if torch.cuda.is_available() else "cpu"
    if spec.world > 1:
        backend = "nccl" if device != "cpu" else "gloo"
        join_group(rendezvous, spec.rank, spec.world, backend, spec.group_timeout)
    ctx = TrainContext(
        rank=spec.rank, world_size=spec.world, device=device, trial_id=spec.trial_id,
        seed=spec.seed,
    )  # fmt: skip
    _seed_everything(spec.seed)
    trainable = spec.factory.open()()
    rep = Replica(spec, trainable, ctx, 0, spec.world > 1)
    RESIDENT[spec.trial_id] = rep
    trainable.setup(spec.config, ctx)
    rep.epochs, rep.refused = restore(trainable, ckpt)
    for _ in range(spec.replay + (ckpt.epoch if ckpt else 0) - rep.epochs):
        trainable.step()
        rep.epochs += 1
    return rep


def gone(trial_id: int, token: int) -> str:
    """Why a task of placement ``token`` finds no replica to work on."""
    return f"trial {trial_id} has no live replica on this worker (placement {token})"


def dropped(trial_id: int, token: int) -> str:
    """Why a task of placement ``token`` writes nothing."""
    return f"trial {trial_id}'s placement {token} was halted, or its search is over: not written"


def evict() -> None:
    """Tear down every replica here (a start makes room for its own). A halt that came
    after its replica was gone is kept: it may be for a start still to come."""
    for tid in list(RESIDENT):
        teardown(tid)


def end(search: int) -> None:
    """Search ``search`` is over: none of its placements writes from now on (a write in
    progress ends; take ``WRITES`` to wait for it), and their halts are forgotten."""
    ENDED.add(search)
    for h in HALTED.copy():  # a copy: a halt may come meanwhile, on the event loop
        if search_of(h[1]) == search:
            HALTED.discard(h)


def teardown(trial_id: int, *, token: int | None = None, group: bool = False) -> None:
    """Tear down the replica of ``trial_id`` (only that of placement ``token``, if given)
    and leave its process group (or the one joined, with ``group``)."""
    rep = RESIDENT.get(trial_id)
    if rep is not None and token is not None and rep.token != token:
        return
    if rep is not None:
        del RESIDENT[trial_id]
        HALTED.discard((trial_id, rep.token))
        group = group or rep.group
        teardown = getattr(rep.trainable, "teardown", None)
        if teardown is not None:
            try:
                teardown()
            except Exception:  # noqa: BLE001, S110 - a failing teardown must not hold the worker
                pass
    if group:
        leave_group()
    torch = sys.modules.get("torch")
    if (
        rep is not None
        and torch is not None
        and torch.cuda.is_available()
        and torch.cuda.is_initialized()
    ):
        del rep  # on CPU reference counting frees its tensors; a full gc.collect() costs ~0.5 s
        import gc

        gc.collect()  # cycles holding GPU memory would keep it from the next trial
        torch.cuda.empty_cache()


def _seed_everything(seed: int) -> None:
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
