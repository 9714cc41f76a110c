"""The worker side of the best weights: written on a thread, off the epoch loop.

A new best of the whole search has its weights written apart (see
:mod:`hypersched_nb.runtime._worker_io`); written in the epoch loop, a 100 MiB state held
the next epoch back about 0.4 s, a 1 GB one seconds. Here the epoch only copies the state
in memory (:func:`snapshot`, a memcpy: tens of ms a GB) and a thread of the worker writes
the copy while training goes on. One write is in flight at a time, and one more may wait
for it: a new best that comes meanwhile takes the waiting one's place (its weights are
beaten, and are never written: said to the client as superseded), so an epoch never waits
for a write and the copies never pile up (a worker holds its trainable, the copy being
written, its bytes, and one copy waiting at most).

What the client hears: the epoch's ``Epoch.best`` is the checkpoint being written, with no
checksum yet (``sha256 == ""``, :func:`pending`); once written, the thread logs its record
(or why it failed) as an event on the runtime's topic (:func:`written_event`), which the
client's :class:`~hypersched_nb.runtime._bests.BestWeights` waits for before it names those
weights. A task that reads the file on the worker (:func:`~hypersched_nb.runtime._worker_io.
fetch`) waits for its write too (:func:`wait_written`).
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass

from hypersched_nb.runtime.checkpoint import Checkpoint, save_checkpoint

__all__ = ["drain", "pending", "snapshot", "wait_written", "write_in_background", "written_event"]

_LOCK = threading.Lock()
_IN_FLIGHT: dict[str, threading.Event] = {}  # url -> set once its write is over (or dropped)
_WAITING: list[_Job] = []  # the next write: one at most (a newer best supersedes it)
_WRITER: list[threading.Thread] = []  # the thread writing, while there is one


@dataclass(slots=True)
class _Job:
    state: object
    url: str
    epoch: int
    about: dict
    store: str | None
    topic: str | None
    worker: object


def pending(ckpt) -> bool:
    """Is ``ckpt`` a best's checkpoint still being written (no checksum yet)?"""
    return not ckpt.sha256


def snapshot(state):
    """A copy of a state dict that training can no longer change: tensors cloned (on their
    device), containers rebuilt, anything else deep-copied."""
    import torch

    if isinstance(state, torch.Tensor):
        return state.detach().clone()
    if isinstance(state, Mapping):
        return type(state)((k, snapshot(v)) for k, v in state.items())
    if isinstance(state, (list, tuple)):
        return type(state)(snapshot(v) for v in state)
    return copy.deepcopy(state)


def write_in_background(
    state: dict, url: str, *, epoch: int, about: Mapping, store: str | None, topic: str | None
) -> Checkpoint:
    """Write a :func:`snapshot` of ``state`` to ``url`` on the writer thread and log its
    record on ``topic``; returns the checkpoint being written (:func:`pending`)."""
    job = _Job(snapshot(state), url, epoch, copy.deepcopy(dict(about)), store, topic, _worker())
    with _LOCK:
        for old in _WAITING:
            _say(old, written_event(old.url, None, f"superseded by epoch {epoch}'s"))
            _IN_FLIGHT.pop(old.url).set()
        _WAITING[:] = [job]
        _IN_FLIGHT[url] = threading.Event()
        if not _WRITER:
            _WRITER.append(threading.Thread(target=_write, name="hypersched-best", daemon=True))
            _WRITER[0].start()
    return Checkpoint(url, "", 0, epoch, store)


def written_event(url: str, info: Checkpoint | None, error: str | None) -> dict:
    """The event that says a best's weights are written (``info``) or are not (``error``)."""
    if info is None:
        return {"best_written": url, "error": error}
    return {
        "best_written": url, "sha256": info.sha256, "bytes": info.bytes, "epoch": info.epoch,
        "store": info.store, "error": None,
    }  # fmt: skip


def wait_written(url: str, timeout: float | None = None) -> None:
    """Return once the background write of ``url``, if any, is over (or dropped)."""
    with _LOCK:
        done = _IN_FLIGHT.get(url)
    if done is not None:
        done.wait(timeout)


def drain(timeout: float) -> bool:
    """Return once no write is in flight or waiting, or after ``timeout`` s; True if none is."""
    end = time.monotonic() + timeout
    while True:
        with _LOCK:
            events = list(_IN_FLIGHT.values())
        if not events:
            return True
        for done in events:
            if not done.wait(max(0.0, end - time.monotonic())):
                return False


def _write() -> None:
    """The writer thread: the waiting write, until there is none."""
    while True:
        with _LOCK:
            if not _WAITING:
                _WRITER.clear()
                return
            job = _WAITING.pop()
        try:
            info = save_checkpoint(job.state, job.url, epoch=job.epoch, about=job.about,
                                   store=job.store)  # fmt: skip
            event = written_event(job.url, info, None)
        except Exception as exc:  # noqa: BLE001 - said to the client, which names no weights
            event = written_event(job.url, None, f"{type(exc).__name__}: {exc}")
        job.state = None  # the copy goes before the next is written
        with _LOCK:
            done = _IN_FLIGHT.pop(job.url, None)
        if done is not None:
            done.set()
        _say(job, event)


def _say(job: _Job, event: dict) -> None:
    """Log ``event`` on the job's topic, from any thread (the worker's loop sends it)."""
    if job.worker is None or job.topic is None:
        return
    try:
        job.worker.loop.add_callback(job.worker.log_event, job.topic, event)
    except Exception:  # noqa: BLE001, S110 - the worker is closing: the client times out
        pass


def _worker():
    try:
        from distributed import get_worker

        return get_worker()
    except Exception:  # noqa: BLE001 - off a worker (a test calling directly): no event
        return None
