"""The worker side of the Dask runtime: live trainables kept between epochs (resident trials).

Every function here runs as a task pinned to one worker. ``_RESIDENT``, a global of this
module in the worker process, holds the replica of the trial that holds the worker: its
trainable object, its :class:`TrainContext` and its checkpoint bookkeeping, so that nothing
travels between two epochs of a trial that stays put. A worker hosts at most one replica; a
replica belongs to one placement of a trial (its ``token``), so a late task of an old
placement never touches a newer one. No function raises because of the user's code: a
failure comes back as ``{"ok": False, "error": <the worker's traceback>}`` and the replica
is torn down. An epoch task also logs what it returns as an event on the runtime's topic
just before returning it, so that the client hears of it one hop sooner.

Checkpoint rule (rank 0 only): after an epoch, write one when the last write took at most
``overhead`` × the training seconds since it (the first epoch always writes, to measure).
Cheap states are thus written every epoch, and large ones often enough that writing never
costs more than ``overhead`` of the training time; a trial whose worker dies resumes from
the last one and trains again, silently, the epochs it had already reported. With the
default 2 %, a small model (a few KB, ~2 ms to write) is written after every epoch longer
than 0.1 s, and a 100 MiB state (~0.5 s) once per ~25 s of training: what a lost worker
costs to train again is bounded by write time / overhead. A copy kept in the worker's
memory would cost nothing, but dies with the worker it is meant to survive.

Best rule (rank 0 only): an epoch whose metric beats the best whose weights the client kept
when it sent the task also writes the weights apart
(:func:`~hypersched_nb.runtime.checkpoint.best_url`), under the same budget as checkpoints
(``overhead`` × the training seconds since the last such write), so that the search's best
model can be loaded after it. Small states are written at every new best; a large one may
skip a best that comes too soon after the last, and the best kept is then the one before.
"""

from __future__ import annotations

import math
import random
import sys
import time
import traceback
from collections.abc import Mapping

from hypersched_nb.runtime.checkpoint import (
    best_url,
    checkpoint_url,
    load_checkpoint,
    prune_checkpoints,
    save_checkpoint,
)
from hypersched_nb.train.context import TrainContext

__all__ = ["digest", "release", "resident", "save", "start", "step", "warm"]


class _Replica:
    __slots__ = (
        "ctx",
        "epochs",
        "group",
        "since_best",
        "since_write",
        "token",
        "trainable",
        "trial_id",
        "write_cost",
    )

    def __init__(
        self, trial_id: int, token: int, trainable, ctx: TrainContext, epochs: int, group: bool
    ):
        self.trial_id, self.token, self.trainable, self.ctx = trial_id, token, trainable, ctx
        self.epochs = epochs  # epochs this trial has trained, counting those before a restore
        self.since_write = 0.0  # training seconds since the last checkpoint
        self.since_best = 0.0  # training seconds since the weights of a best were last written
        self.write_cost: float | None = None  # seconds the last checkpoint took
        self.group = group  # joined a torch.distributed process group


_RESIDENT: dict[int, _Replica] = {}


# ----------------------------------------------------------------------------- tasks


def warm() -> None:
    """Import torch ahead of the first trial (seconds, once per worker process)."""
    import torch
    import torch.distributed
    import torch.nn.parallel  # noqa: F401


def start(
    spec: dict, ckpt: dict | None, rendezvous: tuple[str, int] | None, topic: str | None = None
) -> dict:
    """Build the replica of rank ``spec["rank"]``, restore ``ckpt``, train again the epochs
    reported since it (``spec["replay"]``), then train one epoch; the outcome is also sent
    as an event on ``topic`` (a hop sooner than the task's result)."""
    t0 = time.perf_counter()
    _evict()
    tid, rank, world = spec["trial_id"], spec["rank"], spec["world"]
    rep = None
    try:
        import torch

        device = "cuda:0" if torch.cuda.is_available() else "cpu"
        if world > 1:
            _join_group(
                rendezvous,
                rank,
                world,
                "nccl" if device != "cpu" else "gloo",
                spec["group_timeout"],
            )
        ctx = TrainContext(
            rank=rank, world_size=world, device=device, trial_id=tid, seed=spec["seed"],
            base_world_size=spec.get("base_world_size", 1),
        )  # fmt: skip
        _seed_everything(spec["seed"])
        trainable = spec["factory"]()
        rep = _Replica(tid, spec["token"], trainable, ctx, 0, world > 1)
        _RESIDENT[tid] = rep
        trainable.setup(spec["config"], ctx)
        if ckpt is not None:
            trainable.load_state_dict(load_checkpoint(ckpt["url"], ckpt["sha256"]))
            rep.epochs = ckpt["epoch"]
        for _ in range(spec["replay"]):
            trainable.step()
            rep.epochs += 1
    except Exception:  # noqa: BLE001 - the user's code: its traceback goes back to the driver
        _teardown(tid, group=world > 1)
        return _report(topic, {"ok": False, "error": traceback.format_exc()})
    startup = time.perf_counter() - t0
    out = _epoch(rep, spec["save"])
    out["startup"] = startup
    return _report(topic, out)


def step(trial_id: int, token: int, save_spec: dict | None, topic: str | None = None) -> dict:
    """Train one more epoch of the resident replica (reported on ``topic`` too)."""
    rep = _RESIDENT.get(trial_id)
    if rep is None or rep.token != token:
        return _report(topic, {"ok": False, "error": _gone(trial_id, token)})
    return _report(topic, _epoch(rep, save_spec))


def save(trial_id: int, token: int, save_spec: dict | None, release: bool, port: bool) -> dict:
    """Checkpoint the replica now (``save_spec``), free the worker (``release``) and pick a
    free port for the next process group's rendezvous (``port``), in that order."""
    t0 = time.perf_counter()
    out: dict = {"ok": True, "ckpt": None, "rendezvous": None}
    if save_spec is not None:
        rep = _RESIDENT.get(trial_id)
        if rep is None or rep.token != token:
            out = {"ok": False, "ckpt": None, "rendezvous": None, "error": _gone(trial_id, token)}
        else:
            try:
                out["ckpt"], out["write"] = _write(rep, save_spec)
            except Exception:  # noqa: BLE001 - the user's state_dict(): its traceback goes back
                out = {
                    "ok": False,
                    "ckpt": None,
                    "rendezvous": None,
                    "error": traceback.format_exc(),
                }
    t1 = time.perf_counter()
    if release:
        _teardown(trial_id, token=token)
    t2 = time.perf_counter()
    if port:
        out["rendezvous"] = _free_port()
    out["seconds"] = {"save": t1 - t0, "teardown": t2 - t1, "port": time.perf_counter() - t2}
    return out


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


def resident() -> dict[int, dict]:
    """What this worker holds: trial -> rank, world size, placement and epochs."""
    return {
        tid: {"rank": r.ctx.rank, "world": r.ctx.world_size, "token": r.token, "epochs": r.epochs}
        for tid, r in _RESIDENT.items()
    }


# ----------------------------------------------------------------------------- helpers


def _gone(trial_id: int, token: int) -> str:
    return f"trial {trial_id} has no live replica on this worker (placement {token})"


def _report(topic: str | None, out: dict) -> dict:
    """Send ``out`` as an event on ``topic`` (best effort; the return value stays the truth)."""
    if topic is not None:
        try:
            from distributed import get_worker

            worker = get_worker()
            worker.log_event(topic, {"key": worker.get_current_task(), "out": out})
        except Exception:  # noqa: BLE001, S110 - off a worker, or not msgpack
            pass
    return out


def _epoch(rep: _Replica, save_spec: dict | None) -> dict:
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
        rep.since_best += secs
        ckpt, best, write = None, None, 0.0
        if rep.ctx.rank == 0 and save_spec is not None:
            if _due(rep, save_spec["overhead"]):
                ckpt, write = _write(rep, save_spec)
            best, extra = _keep_if_best(rep, metrics, save_spec)
            write += extra
    except Exception:  # noqa: BLE001 - the user's step(): its traceback goes back to the driver
        _teardown(rep.trial_id, group=rep.group)
        return {"ok": False, "error": traceback.format_exc()}
    return {
        "ok": True,
        "epoch": rep.epochs,
        "metrics": _plain(metrics) if rep.ctx.rank == 0 else None,
        "step": secs,
        "write": write,
        "ckpt": ckpt,
        "best": best,
    }


def _due(rep: _Replica, overhead: float, since: float | None = None) -> bool:
    """May a write be made, at ``overhead`` × the training seconds ``since`` the last one of
    its kind (default: checkpoints)?"""
    since = rep.since_write if since is None else since
    return rep.write_cost is None or rep.write_cost <= overhead * since


def _write(rep: _Replica, save_spec: dict) -> tuple[dict, float]:
    t0 = time.perf_counter()
    url = checkpoint_url(save_spec["dir"], rep.trial_id, rep.epochs)
    info = save_checkpoint(rep.trainable.state_dict(), url, epoch=rep.epochs)
    keep = {url} if save_spec.get("keep") is None else {url, save_spec["keep"]}
    prune_checkpoints(save_spec["dir"], rep.trial_id, keep)
    rep.write_cost, rep.since_write = time.perf_counter() - t0, 0.0
    return info, rep.write_cost


def _keep_if_best(rep: _Replica, metrics: Mapping, save_spec: dict):
    """Write the weights if this epoch's metric beats the best whose weights the search
    kept, ``save_spec["best"]`` = {"metric", "sign" (+1: larger is better), "above" (sign ×
    that best, or None)}, and the checkpoint budget allows it. Returns (checkpoint
    information or None, seconds spent)."""
    spec = save_spec.get("best")
    if spec is None:
        return None, 0.0
    first = spec["above"] is None  # none kept yet: always written, so that there is one
    if not first and not _due(rep, save_spec["overhead"], rep.since_best):
        return None, 0.0
    try:
        score = spec["sign"] * float(metrics[spec["metric"]])
    except (KeyError, TypeError, ValueError):
        return None, 0.0  # reported as the trial's failure by the client
    if not math.isfinite(score) or (not first and score <= spec["above"]):
        return None, 0.0
    t0 = time.perf_counter()
    url = best_url(save_spec["dir"], rep.trial_id, rep.epochs)
    info = save_checkpoint(rep.trainable.state_dict(), url, epoch=rep.epochs)
    rep.write_cost, rep.since_best = time.perf_counter() - t0, 0.0
    return info, rep.write_cost


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


def _join_group(rendezvous, rank: int, world: int, backend: str, timeout: float) -> None:
    from datetime import timedelta

    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()
    host, port = rendezvous
    host = f"[{host}]" if ":" in host else host
    dist.init_process_group(
        backend, init_method=f"tcp://{host}:{port}", rank=rank, world_size=world,
        timeout=timedelta(seconds=timeout),
    )  # fmt: skip


def _free_port() -> tuple[str, int]:
    """A port free now on this worker's host: where rank 0 of the next group will listen."""
    import socket

    from distributed import get_worker
    from distributed.comm import get_address_host

    host = get_address_host(get_worker().address)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return host, s.getsockname()[1]


def _evict() -> None:
    for tid in list(_RESIDENT):
        _teardown(tid)


def _teardown(trial_id: int, *, token: int | None = None, group: bool = False) -> None:
    rep = _RESIDENT.get(trial_id)
    if rep is not None and token is not None and rep.token != token:
        return
    if rep is not None:
        del _RESIDENT[trial_id]
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
