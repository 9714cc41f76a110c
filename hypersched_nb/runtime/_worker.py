"""The worker side of the Dask runtime: the tasks that start, train, checkpoint and free a trial.

Every function here runs as a task pinned to one worker, on the replica that worker holds
between epochs (:mod:`hypersched_nb.runtime._replicas`), so that nothing travels between two
epochs of a trial that stays put. No function raises because of the user's code: a failure
comes back as a :class:`~hypersched_nb.runtime._messages.Failed` holding the worker's
traceback, and the replica is torn down. Two faults that are not the user's code let the
trial go on: a checkpoint refused on restore gives way to an earlier one, or to none; and a
checkpoint that a full disk kept from being written leaves the epoch reported, with
``Epoch.unsaved`` saying why (the client then takes the trial off its workers). When rank 0
writes checkpoints and the best weights is :mod:`hypersched_nb.runtime._worker_io`; a
group's rendezvous, :mod:`hypersched_nb.runtime._rendezvous`. An epoch task also logs what it
returns as an event on the runtime's topic just before returning it, so that the client
hears of it one hop sooner. What the tasks take and return is in
:mod:`hypersched_nb.runtime._messages`.

Batches (:func:`steps`): a single-worker trial with short epochs trains several per task and
logs each epoch's event as it ends. The client ends a batch early with :func:`halt`, a flag
set out of band (``Client.run`` runs it in the worker's event loop, not behind the task),
read at every epoch boundary and forgotten with the replica.
"""

from __future__ import annotations

import dataclasses
import time
import traceback
from collections.abc import Mapping

from hypersched_nb.runtime._best_writer import drain
from hypersched_nb.runtime._messages import (
    Epoch,
    Failed,
    Handover,
    Rendezvous,
    Report,
    SaveSpec,
    StartSpec,
)
from hypersched_nb.runtime._rendezvous import free_port
from hypersched_nb.runtime._replicas import (
    HALTED,
    RESIDENT,
    WRITES,
    Replica,
    Resident,
    build,
    dropped,
    end,
    evict,
    gone,
    halted,
    teardown,
)
from hypersched_nb.runtime._worker_io import (
    DISK_FULL,
    checkpoint_now,
    due,
    fetch,
    keep_if_best,
    raised,
    store,
)
from hypersched_nb.runtime.checkpoint import Checkpoint, write_files

__all__ = [
    "Resident",
    "checkpoint_and_release",
    "digest",
    "fetch",
    "halt",
    "hand_over",
    "pick_rendezvous_port",
    "quiesce",
    "release",
    "resident",
    "rewind",
    "start",
    "step",
    "steps",
    "store",
    "warm",
]


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


def start(
    spec: StartSpec,
    ckpt: Checkpoint | None,
    rendezvous: Rendezvous | None,
    topic: str | None = None,
    files: Mapping[str, bytes] | Failed | None = None,
    after: object = None,
) -> Epoch | Failed:
    """Build the replica of rank ``spec.rank``, restore ``ckpt`` (after writing ``files``,
    its bytes, when this worker's disk lacks it: read on a worker whose disk has it, and
    moved here by Dask), train again the epochs reported since it (``spec.replay``), then
    train one epoch; the outcome is also sent as an event on ``topic`` (a hop sooner than
    the task's result). ``after`` is not used: its futures, reads of the checkpoint for the
    other ranks, make this task start after them (a read on this worker would otherwise
    wait behind a rank that waits for the others at its rendezvous). A start whose
    placement was halted before it began, or whose search is over, writes nothing (it
    still builds and trains, so that the other ranks of its group are not left waiting)."""
    evict()
    try:
        _write(files, spec)
        rep = build(spec, ckpt, rendezvous)
    except Exception:  # noqa: BLE001 - the user's code: its traceback goes back to the driver
        teardown(spec.trial_id, group=spec.world > 1)
        return _report(topic, Failed(traceback.format_exc()))
    return _report(topic, _epoch(rep, spec.save))


def rewind(
    spec: StartSpec,
    ckpt: Checkpoint | None,
    files: Mapping[str, bytes] | Failed | None = None,
    *,
    rendezvous: bool,
) -> Handover | Failed:
    """Rank 0's side of a resize decided while its batch trained ahead of the epochs
    reported (a single worker): build the replica again from ``ckpt`` (its ``files`` written
    first, as for :func:`start`), train again the ``spec.replay`` epochs since it (on one
    worker, as they were reported), checkpoint it and free the worker; then pick the port of
    the new group's rendezvous (``rendezvous``)."""
    evict()
    try:
        _write(files, spec)
        build(spec, ckpt, None)
    except Exception:  # noqa: BLE001 - the user's code: its traceback goes back to the driver
        out = Failed(traceback.format_exc())
    else:
        out = _checkpoint(spec.trial_id, spec.token, spec.save)
    teardown(spec.trial_id)
    if rendezvous and type(out) is Handover:
        out = Handover(out.ckpt, free_port())
    return out


def step(
    trial_id: int, token: int, save: SaveSpec | None, topic: str | None = None
) -> Epoch | Failed:
    """Train one more epoch of the resident replica (reported on ``topic`` too)."""
    rep = RESIDENT.get(trial_id)
    if rep is None or rep.token != token:
        return _report(topic, Failed(gone(trial_id, token)))
    return _report(topic, _epoch(rep, save))


def steps(
    trial_id: int, token: int, save: SaveSpec, n: int, topic: str | None = None
) -> tuple[Epoch | Failed, ...]:
    """Train up to ``n`` more epochs of the resident replica back to back (a single-worker
    trial's batch), each reported on ``topic`` as it ends. Ends early after a failure, an
    epoch whose checkpoint could not be written, an epoch whose metrics say ``done``, or
    at the first boundary after :func:`halt`. Returns every epoch trained, in order (the
    client reads it when events were lost)."""
    rep = RESIDENT.get(trial_id)
    if rep is None or rep.token != token:
        return (_report(topic, Failed(gone(trial_id, token))),)
    trained: list[Epoch | Failed] = []
    written: set[str] = set()  # this batch's checkpoints: the client may resume from any
    for _ in range(n):
        if halted(trial_id, token):
            break
        out = _report(topic, _epoch(rep, save, written))
        trained.append(out)
        if type(out) is Failed or out.unsaved is not None or (out.metrics or {}).get("done"):
            break
        if out.best is not None:  # the next epoch of the batch must beat this one
            save = dataclasses.replace(save, best=raised(save.best, out.metrics))
    return tuple(trained)


def halt(trial_id: int, token: int) -> None:
    """End the batch of placement ``token`` at its next epoch boundary. Run out of band
    (``Client.run``, in the worker's event loop), so that it lands while the batch trains."""
    HALTED.add((trial_id, token))


async def quiesce(search: int, timeout: float) -> bool:
    """Search ``search`` is over: no task of its placements writes into its folder from
    now on (a batch ends at its next boundary, an epoch that ends is dropped, a start or
    a pause still to come writes nothing), and this returns once no write of theirs or of
    the best weights is in progress, or after ``timeout`` s (True if none is). Run out of
    band, like :func:`halt`; the waiting is done on a thread, so that the worker's event
    loop (which a write's events go through) never waits."""
    import asyncio

    return await asyncio.get_running_loop().run_in_executor(
        None, _quiesce, search, time.monotonic() + timeout
    )


def _quiesce(search: int, until: float) -> bool:
    end(search)
    if not WRITES.acquire(timeout=max(0.0, until - time.monotonic())):  # a write in progress
        return False
    WRITES.release()
    return drain(max(0.0, until - time.monotonic()))


def checkpoint_and_release(trial_id: int, token: int, save: SaveSpec) -> Handover | Failed:
    """Checkpoint the replica of placement ``token`` now, then free the worker (a pause)."""
    out = _checkpoint(trial_id, token, save)
    teardown(trial_id, token=token)
    return out


def hand_over(
    trial_id: int, token: int, save: SaveSpec | None, *, rendezvous: bool
) -> Handover | Failed:
    """Rank 0's side of a resize: checkpoint the replica of placement ``token`` (unless
    ``save`` is None: the last checkpoint is current), free the worker, and pick the port of
    the new group's rendezvous when there is one (``rendezvous``), in that order."""
    out = Handover() if save is None else _checkpoint(trial_id, token, save)
    teardown(trial_id, token=token)
    if rendezvous and type(out) is Handover:
        out = Handover(out.ckpt, free_port())
    return out


def pick_rendezvous_port() -> Handover:
    """Pick the port of a new group's rendezvous on this worker, rank 0's."""
    return Handover(rendezvous=free_port())


def release(trial_id: int, token: int) -> None:
    """Tear down the replica of placement ``token`` if this worker still holds it."""
    teardown(trial_id, token=token)


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

    feed(RESIDENT[trial_id].trainable.state_dict(), "")
    return h.hexdigest()


def resident() -> dict[int, Resident]:
    """What this worker holds: trial -> its replica's rank, world size, placement, epochs."""
    return {
        tid: Resident(r.ctx.rank, r.ctx.world_size, r.token, r.epochs)
        for tid, r in RESIDENT.items()
    }


# ----------------------------------------------------------------------------- helpers


def _write(files: Mapping[str, bytes] | Failed | None, spec: StartSpec) -> None:
    """Write a checkpoint's files sent from another disk for ``spec``'s start (a Failed: they
    could not be read there; the restore then falls back to an earlier checkpoint, and says
    so)."""
    if isinstance(files, Mapping) and files:
        with WRITES:
            if not halted(spec.trial_id, spec.token):
                write_files(files)


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


def _epoch(rep: Replica, save: SaveSpec | None, written: set[str] | None = None) -> Epoch | Failed:
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
        with WRITES:  # an epoch of a placement halted meanwhile is dropped: it writes nothing
            if rep.ctx.rank == 0 and save is not None and not halted(rep.trial_id, rep.token):
                try:
                    if due(rep, save.overhead):
                        ckpt = checkpoint_now(rep, save, written)
                    best = keep_if_best(rep, metrics, save)
                except OSError as exc:
                    if exc.errno not in DISK_FULL:
                        raise
                    unsaved = (
                        f"paused: epoch {rep.epochs}'s checkpoint could not be written ({exc})"
                    )
        write = time.perf_counter() - t1
    except Exception:  # noqa: BLE001 - the user's step(): its traceback goes back to the driver
        teardown(rep.trial_id, group=rep.group)
        return Failed(traceback.format_exc())
    refused, rep.refused = rep.refused, None
    metrics = rep.metrics if rep.ctx.rank == 0 else None
    return Epoch(rep.epochs, metrics, secs, write, ckpt, best, unsaved, refused)


def _checkpoint(trial_id: int, token: int, save: SaveSpec) -> Handover | Failed:
    """Checkpoint the replica of placement ``token`` now, whatever the budget."""
    rep = RESIDENT.get(trial_id)
    if rep is None or rep.token != token:
        return Failed(gone(trial_id, token))
    with WRITES:
        if halted(trial_id, token):
            return Failed(dropped(trial_id, token))
        try:
            return Handover(ckpt=checkpoint_now(rep, save))
        except Exception:  # noqa: BLE001 - the user's state_dict(): its traceback goes back
            return Failed(traceback.format_exc())


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
