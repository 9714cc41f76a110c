"""The client side of pinned tasks: one queue for everything the Dask runtime waits on.

Tasks go out pinned to one worker each (``workers=[address]``, ``allow_other_workers=False``,
``pure=False``, plus ``resources={"GPU": 1}`` on GPU workers), each with a tag that says
what it is for, and stay on the board until their outcome is read. Three sources feed the
queue, from the client's threads, so that the runtime's ``advance`` blocks on it and never
spins:

- :class:`Finished`: a task's future is done (its callback thread);
- :class:`~hypersched_nb.runtime._messages.Report`: an epoch task's event on this board's
  topic, carrying what the task is about to return (for a batch, each epoch as it ends),
  one hop sooner than its result
  (``Worker.log_event`` then ``Client.subscribe_topic``; Dask's Pub/Sub is gone since
  2025.4);
- (not queued) a best's weights written in the background, also on that topic: handed at
  once to ``on_best``, since the user's thread may be waiting for them;
- :class:`MembersChanged`: the scheduler logged ``add-worker`` or ``remove-worker``.

Dask keeps one handler per topic and client; the scheduler's ``all`` topic is therefore
heard by one handler per client, shared by every board on it and unsubscribed with the last.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import queue
import threading
import time
import traceback
import uuid
import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from hypersched_nb.runtime._messages import Report
from hypersched_nb.runtime._slots import Slot
from hypersched_nb.runtime.checkpoint import Checkpoint

__all__ = [
    "EpochTag",
    "FetchTag",
    "Finished",
    "MembersChanged",
    "PrepTag",
    "ReleaseTag",
    "SaveTag",
    "ShipTag",
    "Task",
    "TaskBoard",
    "WarmTag",
]


# ----------------------------------------------------------------------------- task tags


@dataclass(frozen=True, slots=True)
class EpochTag:
    """Rank ``rank``'s part of task ``seq`` of placement ``token`` of a trial (a start, a
    step, or a batch of at most ``epochs`` epochs): a late answer of an older placement or
    task is told apart by these."""

    trial_id: int
    token: int
    rank: int
    seq: int
    epochs: int = 1
    outlives_board: ClassVar[bool] = False


@dataclass(frozen=True, slots=True)
class PrepTag:
    """A task the first epoch of placement ``token`` waits for: rank 0's hand-over before a
    resize, or the port of a new group's rendezvous."""

    trial_id: int
    token: int
    outlives_board: ClassVar[bool] = False


@dataclass(frozen=True, slots=True)
class FetchTag:
    """Bringing to the client a copy of ``ckpt``, written by a worker whose disk the client
    does not share; ``best`` is the metric it was written for when it holds a best's
    weights (None: the trial's checkpoint)."""

    trial_id: int
    ckpt: Checkpoint
    best: float | None = None
    outlives_board: ClassVar[bool] = False


@dataclass(frozen=True, slots=True)
class ShipTag:
    """Reading a checkpoint's files on a worker whose disk holds it, for the start of trial
    ``trial_id`` on another worker: Dask moves the result between the two (see
    :mod:`~hypersched_nb.runtime._transfers`); nothing here reads it."""

    trial_id: int
    outlives_board: ClassVar[bool] = False


@dataclass(frozen=True, slots=True)
class ReleaseTag:
    """Freeing a worker of a trial's replica."""

    trial_id: int
    outlives_board: ClassVar[bool] = True  # a worker is freed even after the search


@dataclass(frozen=True, slots=True)
class SaveTag(ReleaseTag):
    """A pause's checkpoint, written before its worker is freed (so, even after the
    search); the next start on that worker waits for it."""


@dataclass(frozen=True, slots=True)
class WarmTag:
    """Importing torch on a worker that just joined."""

    outlives_board: ClassVar[bool] = False


Tag = EpochTag | PrepTag | SaveTag | FetchTag | ShipTag | ReleaseTag | WarmTag


@dataclass(frozen=True, slots=True)
class Task:
    """A task on the board: its future, the slot it is pinned to, its tag, and how many of
    its epochs' outcomes already came by event (:class:`Report`): its result is read only
    if some may not have."""

    future: object
    slot: Slot
    tag: Tag
    heard: int = 0


# ----------------------------------------------------------------------------- queue items


@dataclass(frozen=True, slots=True)
class Finished:
    """The future of task ``key`` is done."""

    key: str


@dataclass(frozen=True, slots=True)
class MembersChanged:
    """A worker joined or left the cluster."""


QueueItem = Finished | Report | MembersChanged


# ----------------------------------------------------------------------------- the board


class TaskBoard:
    def __init__(self, client, fetch_timeout: float):
        self.client, self.fetch_timeout = client, fetch_timeout
        self._queue: queue.SimpleQueue[QueueItem] = queue.SimpleQueue()
        self._tasks: dict[str, Task] = {}
        self.id = uuid.uuid4().hex[:12]  # in every key: boards sharing a client never collide
        self.topic = f"hypersched-{self.id}"
        self._count = itertools.count(1)
        self.on_best = None  # hears, on the IO thread, that a best's weights were written
        _MembershipNews.join(client, self._queue)
        client.subscribe_topic(self.topic, self._epoch_event)

    # ------------------------------------------------------------------ tasks

    def submit(self, fn, *args, slot: Slot, tag: Tag, name: str, **kwargs):
        """Run ``fn(*args, **kwargs)`` on ``slot``'s worker, tagged with ``tag``."""
        key = f"{name}-{next(self._count)}-{self.id}"
        fut = self.client.submit(
            fn, *args, **kwargs, key=key, workers=[slot.addr], allow_other_workers=False,
            pure=False, resources={"GPU": 1} if slot.gpu else None,
        )  # fmt: skip
        self._tasks[key] = Task(fut, slot, tag)
        fut.add_done_callback(lambda f, key=key: self._queue.put(Finished(key)))
        return fut

    def finish(self, key: str) -> Task | None:
        """Take task ``key`` off the board (None if it is not on it)."""
        return self._tasks.pop(key, None)

    def hear(self, report: Report) -> Task | None:
        """The epoch task ``report`` is about, with one more of its epochs heard (once all
        are, its result need not be read); None if it is no longer on the board."""
        task = self._tasks.get(report.key)
        if task is None or type(task.tag) is not EpochTag:
            return None
        self._tasks[report.key] = dataclasses.replace(task, heard=task.heard + 1)
        return task

    def run_soon(self, fn, *args, slot: Slot) -> None:
        """Run ``fn(*args)`` on ``slot``'s worker out of band: in its event loop, not behind
        the task it is running (``Client.run``), and without waiting for it here (best
        effort: a worker gone meanwhile is ignored)."""
        client = self.client

        async def run() -> None:
            try:
                await client.run(fn, *args, workers=[slot.addr], on_error="ignore",
                                 asynchronous=True)  # fmt: skip
            except Exception:  # noqa: BLE001, S110 - a worker gone meanwhile needs no halt
                pass

        client.loop.add_callback(run)

    def run_within(self, fn, *args, addresses: list[str], timeout: float) -> None:
        """Run ``fn(*args)`` on the workers at ``addresses`` out of band (``Client.run``)
        and wait for them up to ``timeout`` s; a worker gone or slow meanwhile is not
        waited for longer (best effort, like :meth:`run_soon`)."""
        client, done = self.client, threading.Event()

        async def run() -> None:
            try:
                await asyncio.wait_for(
                    client.run(fn, *args, workers=addresses, on_error="ignore", asynchronous=True),
                    timeout,
                )
            except Exception:  # noqa: BLE001, S110 - gone or slow: nothing more to wait for
                pass
            finally:
                done.set()

        client.loop.add_callback(run)
        done.wait(timeout + 1.0)

    def cancel(self, futures) -> None:
        futures = [f for f in futures if not f.done()]
        if futures:
            self.client.cancel(futures)

    def cancel_off(self, addresses) -> None:
        """Cancel the tasks pinned to workers not in ``addresses``: they would wait forever."""
        self.cancel(t.future for t in self._tasks.values() if t.slot.addr not in addresses)

    def fetch(self, fut):
        """A finished task's return value, or None (failed, cancelled, or its worker gone)."""
        if fut.status != "finished":
            return None
        try:
            return fut.result(timeout=self.fetch_timeout)
        except Exception:  # noqa: BLE001 - failed, cancelled or its worker gone: all mean no result
            return None

    def describe(self, fut) -> str:
        """Why a task did not finish, with the traceback when there is one."""
        if fut.status == "cancelled":
            return "its task was cancelled by the cluster"
        try:
            exc = fut.exception(timeout=self.fetch_timeout)
            tb = fut.traceback(timeout=self.fetch_timeout)
            return "".join(traceback.format_exception(type(exc), exc, tb))
        except Exception as exc:  # noqa: BLE001 - whatever the task raised is the message
            return f"its task failed and its error could not be fetched ({exc!r})"

    def workers(self) -> dict | None:
        """The scheduler's ``{address: info}`` of workers, or None if it cannot be reached.

        Asked of the scheduler itself: ``Client.scheduler_info()`` returns the client's
        cache, which its own refresh every 2 s overwrites with an identity of no workers,
        and keeps when a query fails; read at the wrong moment (more likely on a loaded
        machine) it said every worker had left, and their trials were reported lost."""
        client = self.client
        try:
            return client.sync(client.scheduler.identity, n_workers=-1)["workers"]
        except Exception:  # noqa: BLE001 - an unreachable scheduler: the next poll tries again
            return None

    def memory_restarts(self, addresses: Iterable[str], *, within: float = 1.0) -> dict[str, int]:
        """Of the workers at ``addresses``, just lost, those their nanny restarted for
        holding more than their memory limit allows, with the bytes each held then. The
        nanny sends its event as it kills the worker, so it may reach the scheduler a little
        after the worker left: it is waited for up to ``within`` seconds."""
        wanted, end = set(addresses), time.monotonic() + within
        while True:
            try:
                found = self.client.get_events("worker-restart-memory")
            except Exception:  # noqa: BLE001 - an unreachable scheduler: reported as plainly lost
                return {}
            out = {m["worker"]: int(m["rss"]) for _, m in found if m.get("worker") in wanted}
            if out or time.monotonic() >= end:
                return out
            time.sleep(0.1)

    # ------------------------------------------------------------------ the queue

    def wait(self, timeout: float) -> QueueItem | None:
        try:
            return self._queue.get(timeout=max(0.0, timeout))
        except queue.Empty:
            return None

    def drain(self) -> list[QueueItem]:
        """Everything queued now, in order; membership news once, last."""
        items, members = [], False
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if type(item) is MembersChanged:
                members = True
            else:
                items.append(item)
        return [*items, MembersChanged()] if members else items

    def _epoch_event(self, event) -> None:  # the client's IO thread
        payload = event[1] if isinstance(event, tuple) else event
        if isinstance(payload, dict) and "best_written" in payload:
            if self.on_best is not None:  # waited for by whoever names the best weights
                self.on_best(payload)
        elif isinstance(payload, dict):
            self._queue.put(Report.from_event(payload))

    # ------------------------------------------------------------------ the end

    def close(self) -> None:
        """Stop listening; tasks that free workers or write checkpoints still run."""
        _MembershipNews.leave(self.client, self._queue)
        try:
            self.client.unsubscribe_topic(self.topic)
        except Exception:  # noqa: BLE001, S110 - a closed client has nothing to unsubscribe
            pass
        from distributed import fire_and_forget

        live = [
            t.future for t in self._tasks.values() if t.tag.outlives_board and not t.future.done()
        ]
        if live:
            fire_and_forget(live)
        self._tasks.clear()


class _MembershipNews:
    """The one handler of a client's ``all`` topic: hands ``add-worker`` and
    ``remove-worker`` to the queue of every board on that client."""

    _by_client: ClassVar[weakref.WeakKeyDictionary] = weakref.WeakKeyDictionary()
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self):
        self.queues: tuple[queue.SimpleQueue, ...] = ()  # replaced, never changed: read unlocked

    @classmethod
    def join(cls, client, q: queue.SimpleQueue) -> None:
        with cls._lock:
            news = cls._by_client.get(client)
            if news is None:
                news = cls._by_client[client] = cls()
                client.subscribe_topic("all", news._on_event)
            news.queues = (*news.queues, q)

    @classmethod
    def leave(cls, client, q: queue.SimpleQueue) -> None:
        with cls._lock:
            news = cls._by_client.get(client)
            if news is None:
                return
            news.queues = tuple(x for x in news.queues if x is not q)
            if news.queues:
                return
            del cls._by_client[client]
            try:
                client.unsubscribe_topic("all")
            except Exception:  # noqa: BLE001, S110 - a closed client has nothing to unsubscribe
                pass

    def _on_event(self, event) -> None:  # the client's IO thread: hand over, nothing else
        msg = event[1] if isinstance(event, tuple) else event
        if isinstance(msg, dict) and msg.get("action") in ("add-worker", "remove-worker"):
            for q in self.queues:
                q.put(MembersChanged())
