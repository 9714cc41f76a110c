"""The client side of pinned tasks: one queue for everything the Dask runtime waits on.

Tasks go out pinned to one worker each (``workers=[address]``, ``allow_other_workers=False``,
``pure=False``, plus ``resources={"GPU": 1}`` on GPU workers) and stay on the board until
their outcome is read. Three sources feed the queue, from the client's threads, so that the
runtime's ``advance`` blocks on it and never spins:

- ``("f", key)``: a task's future is done (its callback thread);
- ``("ev", msg)``: an epoch task's event on this board's topic, carrying what the task is
  about to return, one hop sooner than its result (``Worker.log_event`` then
  ``Client.subscribe_topic``; Dask's Pub/Sub is gone since 2025.4);
- ``("members", None)``: the scheduler logged ``add-worker`` or ``remove-worker``.
"""

from __future__ import annotations

import itertools
import queue
import traceback
import uuid

__all__ = ["TaskBoard"]


class TaskBoard:
    def __init__(self, client, fetch_timeout: float):
        self.client, self.fetch_timeout = client, fetch_timeout
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.tasks: dict[str, tuple[object, object, tuple]] = {}  # key -> (future, slot, tag)
        self.heard: set[str] = set()  # epoch tasks whose outcome came by event
        self.id = uuid.uuid4().hex[:12]  # in every key: boards sharing a client never collide
        self.topic = f"hypersched-{self.id}"
        self._count = itertools.count(1)
        self._on_all = self._cluster_event  # kept: unsubscribe only a handler that is ours
        client.subscribe_topic("all", self._on_all)
        client.subscribe_topic(self.topic, self._epoch_event)

    # ------------------------------------------------------------------ tasks

    def submit(self, fn, *args, slot, tag: tuple, name: str):
        key = f"{name}-{next(self._count)}-{self.id}"
        fut = self.client.submit(
            fn, *args, key=key, workers=[slot.addr], allow_other_workers=False, pure=False,
            resources={"GPU": 1} if slot.gpu else None,
        )  # fmt: skip
        self.tasks[key] = (fut, slot, tag)
        fut.add_done_callback(lambda f, key=key: self.queue.put(("f", key)))
        return fut

    def cancel(self, futures) -> None:
        futures = [f for f in futures if not f.done()]
        if futures:
            self.client.cancel(futures)

    def cancel_off(self, addresses) -> None:
        """Cancel the tasks pinned to workers not in ``addresses``: they would wait forever."""
        self.cancel(f for f, slot, _ in self.tasks.values() if slot.addr not in addresses)

    def fetch(self, fut) -> dict | None:
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
        """The scheduler's ``{address: info}`` of workers, or None if it cannot be reached."""
        try:
            return self.client.scheduler_info(n_workers=-1)["workers"]
        except Exception:  # noqa: BLE001 - an unreachable scheduler: the next poll tries again
            return None

    # ------------------------------------------------------------------ the queue

    def wait(self, timeout: float) -> tuple | None:
        try:
            return self.queue.get(timeout=max(0.0, timeout))
        except queue.Empty:
            return None

    def drain(self) -> list[tuple]:
        """Everything queued now, in order; membership news once, last."""
        items, members = [], False
        while True:
            try:
                item = self.queue.get_nowait()
            except queue.Empty:
                break
            if item[0] == "members":
                members = True
            else:
                items.append(item)
        return items + [("members", None)] if members else items

    def _cluster_event(self, event) -> None:  # the client's IO thread: hand over, nothing else
        msg = event[1] if isinstance(event, tuple) else event
        if isinstance(msg, dict) and msg.get("action") in ("add-worker", "remove-worker"):
            self.queue.put(("members", None))

    def _epoch_event(self, event) -> None:  # the client's IO thread
        msg = event[1] if isinstance(event, tuple) else event
        if isinstance(msg, dict):
            self.queue.put(("ev", msg))

    # ------------------------------------------------------------------ the end

    def close(self) -> None:
        """Stop listening; tasks that free workers or write checkpoints still run."""
        handlers = getattr(self.client, "_event_handlers", {})
        for topic, mine in (("all", self._on_all), (self.topic, None)):
            if mine is None or handlers.get(topic) is mine:
                try:
                    self.client.unsubscribe_topic(topic)
                except Exception:  # noqa: BLE001, S110 - a closed client has nothing to unsubscribe
                    pass
        from distributed import fire_and_forget

        live = [
            f for f, _, tag in self.tasks.values() if tag[0] in ("release", "save") and not f.done()
        ]
        if live:
            fire_and_forget(live)
        self.tasks.clear()
        self.heard.clear()
