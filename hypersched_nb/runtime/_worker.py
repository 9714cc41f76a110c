"""The worker side of the Dask runtime: live trainables kept between epochs (resident trials).

Every function here runs as a task pinned to one worker. ``_RESIDENT``, a global of this
module in the worker process, holds the replica of the trial that holds the worker: its
trainable object, its :class:`TrainContext` and its checkpoint bookkeeping, so that nothing
travels between two epochs of a trial that stays put. A worker hosts at most one replica; a
replica belongs to one placement of a trial (its ``token``), so a late task of an old
placement never touches a newer one. No function raises because of the user's code: a
failure comes back as a :class:`~hypersched_nb.runtime._messages.Failed` holding the
worker's traceback, and the replica is torn down. Two faults that are not the user's code
let the trial go on: a checkpoint refused on restore (tampered with, cut short, not safe to
load) gives way to the trial's newest earlier one that loads, or to none (the epochs it
held are trained again); and a checkpoint that a full disk kept from being written leaves
the epoch reported, with ``Epoch.unsaved`` saying why (the client then takes the trial off
its workers). An epoch task also logs what it returns
as an event on the runtime's topic just before returning it, so that the client hears of
it one hop sooner. What the tasks take and return is in :mod:`hypersched_nb.runtime._messages`.

Batches (:func:`steps`): a single-worker trial with short epochs trains several per task and
logs each epoch's event as it ends. The client ends a batch early with :func:`halt`, a flag
set out of band (``Client.run`` runs it in the worker's event loop, not behind the task),
read at every epoch boundary and forgotten with the replica. Pruning rule: a checkpoint is
deleted only by a later task of its trial, which keeps the one the client names in
``SaveSpec.keep``; so whichever epoch of a batch the client last heard of, its checkpoint is
still there to resume from.

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

Stores: every checkpoint records the store it went to (its worker's disk, named by
:func:`~hypersched_nb.runtime.checkpoint.store_id`). When that is not the kernel's,
:func:`fetch` hands its bytes to the client, which keeps a copy; a start on a worker whose
disk lacks the checkpoint is sent the bytes with its task, and writes them before it
restores. A host that goes away thus takes no checkpoint the client had heard of with it.

Best rule (rank 0 only): an epoch whose metric beats the best whose weights the client kept
when it sent the task also writes the weights apart
(:func:`~hypersched_nb.runtime.checkpoint.best_url`), always, whatever the checkpoint budget,
so that the model the search names best is the model it can load. This costs one write per
new best of the whole search, not per epoch: with a leader that improves at every epoch, a
100 MiB state (~0.4 s a write) costs 0.4 s an epoch until another trial overtakes it.
"""

from __future__ import annotations

import dataclasses
import errno
import math
import random
import sys
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass

from hypersched_nb.runtime._messages import (
    BestBar,
    Epoch,
    Failed,
    Handover,
    Rendezvous,
    Report,
    SaveSpec,
    StartSpec,
)
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
    write_files,
)
from hypersched_nb.train.context import TrainContext

__all__ = [
    "Resident",
    "checkpoint_and_release",
    "digest",
    "fetch",
    "hand_over",
    "pick_rendezvous_port",
    "release",
    "resident",
    "halt",
    "start",
    "step",
    "steps",
    "store",
    "warm",
]


@dataclass(frozen=True, slots=True)
class Resident:
    """The replica a worker holds: its rank and world size, placement and epochs trained."""

    rank: int
    world: int
    token: int
    epochs: int


class _Replica:
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


_RESIDENT: dict[int, _Replica] = {}
_STORES: dict[str, str] = {}  # checkpoint folder -> the store_id this worker sees there
_HALTED: set[tuple[int, int]] = set()  # (trial, placement) whose batch ends at the next boundary
_DISK_FULL = (errno.ENOSPC, errno.EDQUOT)  # a write that failed for want of space


# ----------------------------------------------------------------------------- tasks


def warm(directory: str) -> str | Failed:
    """Import torch ahead of the first trial (seconds, once per worker process); returns
    the store this worker writes checkpoints under ``directory`` to (see :func:`store`)."""
    import torch
    import torch.distributed
    import torch.nn.parallel  # noqa: F401

    try:
        return store(directory)
    except OSError as exc:
        return Failed(f"{type(exc).__name__}: {exc}")


def store(directory: str) -> str:
    """The :func:`~hypersched_nb.runtime.checkpoint.store_id` of ``directory`` on this
    worker's host (asked once per folder and process)."""
    found = _STORES.get(directory)
    if found is None:
        found = _STORES[directory] = store_id(directory)
    return found


def fetch(url: str) -> dict[str, bytes] | Failed:
    """The bytes of the checkpoint at ``url`` on this worker's disk and of its sidecar."""
    try:
        return read_files(url)
    except OSError as exc:
        return Failed(f"{type(exc).__name__}: {exc}")


def start(
    spec: StartSpec,
    ckpt: Checkpoint | None,
    rendezvous: Rendezvous | None,
    topic: str | None = None,
    files: Mapping[str, bytes] | None = None,
) -> Epoch | Failed:
    """Build the replica of rank ``spec.rank``, restore ``ckpt`` (after writing ``files``,
    its bytes, when this worker's disk lacks it), train again the epochs reported since it
    (``spec.replay``), then train one epoch; the outcome is also sent as an event on
    ``topic`` (a hop sooner than the task's result)."""
    _evict()
    try:
        if files:
            write_files(files)
        rep = _build(spec, ckpt, rendezvous)
    except Exception:  # noqa: BLE001 - the user's code: its traceback goes back to the driver
        _teardown(spec.trial_id, group=spec.world > 1)
        return _report(topic, Failed(traceback.format_exc()))
    return _report(topic, _epoch(rep, spec.save))


def rewind(spec: StartSpec, ckpt: Checkpoint | None, *, rendezvous: bool) -> Handover | Failed:
    """Rank 0's side of a resize decided while its batch trained ahead of the epochs
    reported (a single worker): build the replica again from ``ckpt``, train again the
    ``spec.replay`` epochs since it (on one worker, as they were reported), checkpoint it and
    free the worker; then pick the port of the new group's rendezvous (``rendezvous``)."""
    _evict()
    try:
        out = Handover(ckpt=_write(_build(spec, ckpt, None), spec.save))
    except Exception:  # noqa: BLE001 - the user's code: its traceback goes back to the driver
        out = Failed(traceback.format_exc())
    _teardown(spec.trial_id)
    if rendezvous and type(out) is Handover:
        out = Handover(out.ckpt, _free_port())
    return out


def step(
    trial_id: int, token: int, save: SaveSpec | None, topic: str | None = None
) -> Epoch | Failed:
    """Train one more epoch of the resident replica (reported on ``topic`` too)."""
    rep = _RESIDENT.get(trial_id)
    if rep is None or rep.token != token:
        return _report(topic, Failed(_gone(trial_id, token)))
    return _report(topic, _epoch(rep, save))


def steps(
    trial_id: int, token: int, save: SaveSpec, n: int, topic: str | None = None
) -> tuple[Epoch | Failed, ...]:
    """Train up to ``n`` more epochs of the resident replica back to back (a single-worker
    trial's batch), each reported on ``topic`` as it ends. Ends early after a failure, an
    epoch whose checkpoint could not be written, an epoch whose metrics say ``done``, or
    at the first boundary after :func:`halt`. Returns every epoch trained, in order (the
    client reads it when events were lost)."""
    rep = _RESIDENT.get(trial_id)
    if rep is None or rep.token != token:
        return (_report(topic, Failed(_gone(trial_id, token))),)
    trained: list[Epoch | Failed] = []
    written: set[str] = set()  # this batch's checkpoints: the client may resume from any
    for _ in range(n):
        if (trial_id, token) in _HALTED:
            break
        out = _report(topic, _epoch(rep, save, written))
        trained.append(out)
        if type(out) is Failed or out.unsaved is not None or (out.metrics or {}).get("done"):
            break
        if out.best is not None:  # the next epoch of the batch must beat this one
            save = dataclasses.replace(save, best=_raised(save.best, out.metrics))
    return tuple(trained)


def halt(trial_id: int, token: int) -> None:
    """End the batch of placement ``token`` at its next epoch boundary. Run out of band
    (``Client.run``, in the worker's event loop), so that it lands while the batch trains."""
    _HALTED.add((trial_id, token))


def checkpoint_and_release(trial_id: int, token: int, save: SaveSpec) -> Handover | Failed:
    """Checkpoint the replica of placement ``token`` now, then free the worker (a pause)."""
    out = _checkpoint(trial_id, token, save)
    _teardown(trial_id, token=token)
    return out


def hand_over(
    trial_id: int, token: int, save: SaveSpec | None, *, rendezvous: bool
) -> Handover | Failed:
    """Rank 0's side of a resize: checkpoint the replica of placement ``token`` (unless
    ``save`` is None: the last checkpoint is current), free the worker, and pick the port of
    the new group's rendezvous when there is one (``rendezvous``), in that order."""
    out = Handover() if save is None else _checkpoint(trial_id, token, save)
    _teardown(trial_id, token=token)
    if rendezvous and type(out) is Handover:
        out = Handover(out.ckpt, _free_port())
    return out


def pick_rendezvous_port() -> Handover:
    """Pick the port of a new group's rendezvous on this worker, rank 0's."""
    return Handover(rendezvous=_free_port())


def release(trial_id: int, token: int) -> None:
    """Tear down the replica of placement ``token`` if this worker still holds it."""
    _teardown(trial_id, token=token)


def digest(trial_id: int) -> str:
    """SHA-256 of the resident replica's state dict (to check that replicas agree)."""
    import hashlib

    import torch

    h = hashlib.sha256()

    def feed(obj, prefix: str) -> None:
        if isinstance(obj, Mapping):
            for k in sorted(obj, key=str):
                feed(obj[k], f"{prefix}/{k}")
        elif isinstance(obj, (list, tuple)):
            for i, v in enumerate(obj):
                feed(v, f"{prefix}/{i}")
        elif isinstance(obj, torch.Tensor):
            h.update(prefix.encode())
            h.update(obj.detach().cpu().contiguous().numpy().tobytes())
        else:
            h.update(f"{prefix}={obj!r}".encode())

    feed(_RESIDENT[trial_id].trainable.state_dict(), "")
    return h.hexdigest()


def resident() -> dict[int, Resident]:
    """What this worker holds: trial -> its replica's rank, world size, placement, epochs."""
    return {
        tid: Resident(r.ctx.rank, r.ctx.world_size, r.token, r.epochs)
        for tid, r in _RESIDENT.items()
    }


# ----------------------------------------------------------------------------- helpers


def _build(spec: StartSpec, ckpt: Checkpoint | None, rendezvous: Rendezvous | None) -> _Replica:
    """The replica ``spec`` describes, resident, restored from ``ckpt`` and with the epochs
    reported since trained again."""
    import torch

    device = "cuda:0" if torch.cuda.is_available() else "cpu"
    if spec.world > 1:
        backend = "nccl" if device != "cpu" else "gloo"
        _join_group(rendezvous, spec.rank, spec.world, backend, spec.group_timeout)
    ctx = TrainContext(
        rank=spec.rank, world_size=spec.world, device=device, trial_id=spec.trial_id,
        seed=spec.seed,
    )  # fmt: skip
    _seed_everything(spec.seed)
    trainable = spec.factory()
    rep = _Replica(spec, trainable, ctx, 0, spec.world > 1)
    _RESIDENT[spec.trial_id] = rep
    trainable.setup(spec.config, ctx)
    rep.epochs, rep.refused = _restore(trainable, ckpt)
    for _ in range(spec.replay + (ckpt.epoch if ckpt else 0) - rep.epochs):
        trainable.step()
        rep.epochs += 1
    return rep


def _gone(trial_id: int, token: int) -> str:
    return f"trial {trial_id} has no live replica on this worker (placement {token})"


def _report(topic: str | None, out: Epoch | Failed) -> Epoch | Failed:
    """Send ``out`` as an event on ``topic`` (best effort; the return value stays the truth)."""
    if topic is not None:
        try:
            from distributed import get_worker

            worker = get_worker()
            worker.log_event(topic, Report(worker.get_current_task(), out).to_event())
        except Exception:  # noqa: BLE001, S110 - off a worker, or not msgpack
            pass
    return out


def _epoch(rep: _Replica, save: SaveSpec | None, written: set[str] | None = None) -> Epoch | Failed:
    try:
        t0 = time.perf_counter()
        metrics = rep.trainable.step()
        secs = time.perf_counter() - t0
        if not isinstance(metrics, Mapping):
            raise TypeError(
                f"step() returned {type(metrics).__name__}, but must return a dict of metrics"
            )
        rep.epochs += 1
        rep.since_write += secs
        if rep.ctx.rank == 0:
            rep.metrics = _plain(metrics)
        ckpt = best = unsaved = None
        t1 = time.perf_counter()
        if rep.ctx.rank == 0 and save is not None:
            try:
                if _due(rep, save.overhead):
                    ckpt = _write(rep, save, written)
                best = _keep_if_best(rep, metrics, save)
            except OSError as exc:
                if exc.errno not in _DISK_FULL:
                    raise
                unsaved = f"paused: epoch {rep.epochs}'s checkpoint could not be written ({exc})"
        write = time.perf_counter() - t1
    except Exception:  # noqa: BLE001 - the user's step(): its traceback goes back to the driver
        _teardown(rep.trial_id, group=rep.group)
        return Failed(traceback.format_exc())
    refused, rep.refused = rep.refused, None
    metrics = rep.metrics if rep.ctx.rank == 0 else None
    return Epoch(rep.epochs, metrics, secs, write, ckpt, best, unsaved, refused)


def _checkpoint(trial_id: int, token: int, save: SaveSpec) -> Handover | Failed:
    """Checkpoint the replica of placement ``token`` now, whatever the budget."""
    rep = _RESIDENT.get(trial_id)
    if rep is None or rep.token != token:
        return Failed(_gone(trial_id, token))
    try:
        return Handover(ckpt=_write(rep, save))
    except Exception:  # noqa: BLE001 - the user's state_dict(): its traceback goes back
        return Failed(traceback.format_exc())


def _restore(trainable, ckpt: Checkpoint | None) -> tuple[int, str | None]:
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


def _due(rep: _Replica, overhead: float) -> bool:
    """May a checkpoint be written, at ``overhead`` × the training seconds since the last?"""
    return rep.write_cost is None or rep.write_cost <= overhead * rep.since_write


def _write(rep: _Replica, save: SaveSpec, written: set[str] | None = None) -> Checkpoint:
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


def _keep_if_best(rep: _Replica, metrics: Mapping, save: SaveSpec) -> Checkpoint | None:
    """Write the weights apart if this epoch's metric clears ``save.best``; what was
    written, if anything."""
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
    return save_checkpoint(
        rep.trainable.state_dict(), url, epoch=rep.epochs, about=_about(rep), store=store(save.dir)
    )


def _raised(bar: BestBar | None, metrics: Mapping) -> BestBar | None:
    """``bar`` raised to the metric of an epoch whose weights were just kept."""
    if bar is None:
        return None
    return dataclasses.replace(bar, above=bar.sign * float(metrics[bar.metric]))


def _about(rep: _Replica) -> dict:
    """What a checkpoint's sidecar says its weights are of."""
    return {"trial_id": rep.trial_id, "config": rep.config, "metrics": rep.metrics}


def _plain(metrics: Mapping) -> dict:
    """Metrics as plain Python values (a 0-d tensor or NumPy scalar becomes a float)."""
    out = {}
    for k, v in metrics.items():
        if not isinstance(v, (bool, int, float, str)) and v is not None and hasattr(v, "item"):
            try:
                v = v.item()
            except (ValueError, RuntimeError):
                pass
        out[str(k)] = v
    return out


def _seed_everything(seed: int) -> None:
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def _join_group(
    rendezvous: Rendezvous, rank: int, world: int, backend: str, timeout: float
) -> None:
    from datetime import timedelta

    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()
    host = f"[{rendezvous.host}]" if ":" in rendezvous.host else rendezvous.host
    dist.init_process_group(
        backend, init_method=f"tcp://{host}:{rendezvous.port}", rank=rank, world_size=world,
        timeout=timedelta(seconds=timeout),
    )  # fmt: skip


def _free_port() -> Rendezvous:
    """A port free now on this worker's host: where rank 0 of the next group will listen."""
    import socket

    from distributed import get_worker
    from distributed.comm import get_address_host

    host = get_address_host(get_worker().address)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return Rendezvous(host, s.getsockname()[1])


def _evict() -> None:
    for tid in list(_RESIDENT):
        _teardown(tid)
    _HALTED.clear()  # halts that came after their batch ended: no task of theirs is left


def _teardown(trial_id: int, *, token: int | None = None, group: bool = False) -> None:
    rep = _RESIDENT.get(trial_id)
    if rep is not None and token is not None and rep.token != token:
        return
    if rep is not None:
        del _RESIDENT[trial_id]
        _HALTED.discard((trial_id, rep.token))
        group = group or rep.group
        teardown = getattr(rep.trainable, "teardown", None)
        if teardown is not None:
            try:
                teardown()
            except Exception:  # noqa: BLE001, S110 - a failing teardown must not hold the worker
                pass
    if group:
        import torch.distributed as dist

        if dist.is_initialized():
            dist.destroy_process_group()
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
