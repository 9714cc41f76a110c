"""The worker side's checkpoints: when rank 0 writes one, the best weights, and restoring.

Checkpoint rule (rank 0 only): after an epoch, write one when the last write took at most
``overhead`` × the training seconds since it (the first epoch always writes, to measure).
Cheap states are thus written every epoch, and large ones often enough that writing never
costs more than ``overhead`` of the training time; a trial whose worker dies resumes from
the last one and trains again, silently, the epochs it had already reported. With the
default 1 %, a small model (a few KB, ~1 ms to write) is written after every epoch longer
than 0.1 s (every other one of 0.1 s), and a 100 MiB state (~0.5 s) once per ~50 s of
training: what a lost worker costs to train again is bounded by write time / overhead. (At
2 %, every 0.1 s epoch was written, and the checkpoints alone cost more than a third of
the 3 % a search of short epochs may add to its training.) A copy kept in the worker's
memory would cost nothing, but dies with the worker it is meant to survive.

Pruning rule: a checkpoint is deleted only by a later task of its trial, which keeps the one
the client names in ``SaveSpec.keep``; so whichever epoch of a batch the client last heard
of, its checkpoint is still there to resume from.

Stores: every checkpoint records the store it went to (its worker's disk, named by
:func:`~hypersched_nb.runtime.checkpoint.store_id`). A start on a worker whose disk lacks
it is sent the bytes :func:`fetch` read on a worker whose disk has it, moved between the two
by Dask, and writes them before it restores; the client keeps copies in the background (see
:mod:`~hypersched_nb.runtime._transfers`).

Best rule (rank 0 only): an epoch whose metric beats the best whose weights the client kept
when it sent the task also writes the weights apart
(:func:`~hypersched_nb.runtime.checkpoint.best_url`), always, whatever the checkpoint budget,
so that the model the search names best is the model it can load. This costs one write per
new best of the whole search, not per epoch, and the write happens on a thread of the worker
from a copy in memory (:mod:`~hypersched_nb.runtime._best_writer`): written in the epoch
loop, a 100 MiB state held each epoch of a leader that improves every epoch 0.4 s back.

Restoring: a checkpoint refused on restore (tampered with, cut short, not safe to load)
gives way to the trial's newest earlier one that loads, or to none (the epochs it held are
trained again).
"""

from __future__ import annotations

import dataclasses
import errno
import math
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from hypersched_nb.runtime._best_writer import wait_written, write_in_background
from hypersched_nb.runtime._messages import BestBar, Failed, SaveSpec
from hypersched_nb.runtime.checkpoint import (
    Checkpoint,
    CheckpointError,
    best_url,
    checkpoint_url,
    earlier_checkpoint,
    load_checkpoint,
    prune_checkpoints,
    read_files,
    save_checkpoint,
    store_id,
)

if TYPE_CHECKING:
    from hypersched_nb.runtime._replicas import Replica

__all__ = [
    "DISK_FULL",
    "due",
    "fetch",
    "keep_if_best",
    "raised",
    "restore",
    "store",
    "checkpoint_now",
]

_STORES: dict[str, str] = {}  # checkpoint folder -> the store_id this worker sees there
DISK_FULL = (errno.ENOSPC, errno.EDQUOT)  # a write that failed for want of space


def store(directory: str) -> str:
    """The :func:`~hypersched_nb.runtime.checkpoint.store_id` of ``directory`` on this
    worker's host (asked once per folder and process)."""
    found = _STORES.get(directory)
    if found is None:
        found = _STORES[directory] = store_id(directory)
    return found


def fetch(url: str) -> dict[str, bytes] | Failed:
    """The bytes of the checkpoint at ``url`` on this worker's disk and of its sidecar
    (once written, for a best's weights written in the background)."""
    wait_written(url)
    try:
        return read_files(url)
    except OSError as exc:
        return Failed(f"{type(exc).__name__}: {exc}")


def restore(trainable, ckpt: Checkpoint | None) -> tuple[int, str | None]:
    """Load ``ckpt`` into ``trainable`` or, if it is refused (tampered with, cut short, not
    safe to load), the trial's newest earlier checkpoint that loads. Returns the epochs the
    loaded one holds (0: none loaded, the trial trains again from the start) and, if
    ``ckpt`` was refused, why and what was restored instead."""
    refused = None
    while ckpt is not None:
        try:
            state = load_checkpoint(ckpt.url, ckpt.sha256)
        except CheckpointError as exc:
            refused = refused or str(exc)
            ckpt = earlier_checkpoint(ckpt)
            continue
        trainable.load_state_dict(state)
        break
    epochs = ckpt.epoch if ckpt is not None else 0
    if refused is not None:
        instead = f"that of epoch {epochs} instead" if epochs else "none: trained from the start"
        refused = f"{refused}; restored {instead}"
    return epochs, refused


def due(rep: Replica, overhead: float) -> bool:
    """May a checkpoint be written, at ``overhead`` × the training seconds since the last?"""
    return rep.write_cost is None or rep.write_cost <= overhead * rep.since_write


def checkpoint_now(rep: Replica, save: SaveSpec, written: set[str] | None = None) -> Checkpoint:
    """Checkpoint the replica now, noting it in ``written`` (the batch's so far); the task's
    first write deletes the trial's others but ``save.keep``, and a later write of the same
    batch none (each is one the client may still resume from)."""
    t0 = time.perf_counter()
    url = checkpoint_url(save.dir, rep.trial_id, rep.epochs)
    info = save_checkpoint(
        rep.trainable.state_dict(), url, epoch=rep.epochs, about=_about(rep), store=store(save.dir)
    )
    if not written:
        prune_checkpoints(save.dir, rep.trial_id, {url} if save.keep is None else {url, save.keep})
    if written is not None:
        written.add(url)
    rep.write_cost, rep.since_write = time.perf_counter() - t0, 0.0
    return info


def keep_if_best(rep: Replica, metrics: Mapping, save: SaveSpec) -> Checkpoint | None:
    """Write the weights apart, in the background (:mod:`~hypersched_nb.runtime.
    _best_writer`), if this epoch's metric clears ``save.best``; what is being written."""
    bar = save.best
    if bar is None:
        return None
    first = bar.above is None  # none kept yet: any finite metric is the best so far
    try:
        score = bar.sign * float(metrics[bar.metric])
    except (KeyError, TypeError, ValueError):
        return None  # reported as the trial's failure by the client
    if not math.isfinite(score) or (not first and score <= bar.above):
        return None
    url = best_url(save.dir, rep.trial_id, rep.epochs)
    return write_in_background(
        rep.trainable.state_dict(), url, epoch=rep.epochs, about=_about(rep),
        store=store(save.dir), topic=save.topic,
    )  # fmt: skip


def raised(bar: BestBar | None, metrics: Mapping) -> BestBar | None:
    """``bar`` raised to the metric of an epoch whose weights were just kept."""
    if bar is None:
        return None
    return dataclasses.replace(bar, above=bar.sign * float(metrics[bar.metric]))


def _about(rep: Replica) -> dict:
    """What a checkpoint's sidecar says its weights are of."""
    return {"trial_id": rep.trial_id, "config": rep.config, "metrics": rep.metrics}
