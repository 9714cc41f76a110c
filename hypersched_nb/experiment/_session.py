"""The life of one search apart from what it searches: where it runs, its thread, its status.

An :class:`~hypersched_nb.experiment.experiment.Experiment` owns one :class:`Session`. A
live session starts the wall clock when the search starts, then starts (or attaches to) the
Dask cluster and puts a ``DaskRuntime`` on it; a session given a runtime and its clock (a
replayed trace, a test's fake) runs on those. :meth:`Session.run` runs the driver on a thread
of its own; when the driver returns or raises, the runtime is freed and a cluster the session
started is closed.

``status`` is a :class:`Status` and moves only as :data:`TRANSITIONS` says: created ->
running -> (stopping ->) finished, or running -> (failing ->) failed: "stopping" from the
user's stop (``stopped_at`` says when), "failing" from the moment the search knows it fails
(fail-fast) until its thread ends. A search read from its journal goes from created to
how it ended (finished, failed, or interrupted: cut short). A resumed search notes when it
went on (``resumed_at``). The user's thread and the driver's both change the status, so it
changes under one lock. The driver's thread holds ``gate`` while it decides (see
``_observed``), the end of the search included.
"""

from __future__ import annotations

import enum
import os
import threading
from dataclasses import dataclass
from datetime import datetime

from hypersched_nb.errors import HyperschedError
from hypersched_nb.experiment import _kernel_pump
from hypersched_nb.experiment._observed import Gate

__all__ = ["TRANSITIONS", "Launch", "Session", "Status"]


class Status(enum.StrEnum):
    """Where a search stands (a ``str``: ``status == "finished"`` holds)."""

    CREATED = "created"
    RUNNING = "running"
    STOPPING = "stopping"  # the user stopped it; its thread is ending
    FAILING = "failing"  # it knows it fails; its thread is ending
    FINISHED = "finished"
    FAILED = "failed"
    INTERRUPTED = "interrupted"  # read from a journal that a killed kernel cut short


_C, _R, _S, _F = Status.CREATED, Status.RUNNING, Status.STOPPING, Status.FAILING
_ENDED = (Status.FINISHED, Status.FAILED, Status.INTERRUPTED)

#: ``TRANSITIONS[status]``: the statuses it may move to.
TRANSITIONS: dict[Status, frozenset[Status]] = {
    _C: frozenset({_R, *_ENDED}),
    _R: frozenset({_S, _F, Status.FINISHED, Status.FAILED}),
    _S: frozenset({_F, Status.FINISHED, Status.FAILED}),
    _F: frozenset({Status.FAILED}),
    **{ended: frozenset() for ended in _ENDED},
}


@dataclass(frozen=True, slots=True)
class Launch:
    """What a live search starts its runtime with (the Experiment's own settings)."""

    trainable: type
    cluster: object  # a number of local workers, a scheduler address, a Client or None
    checkpoint_dir: str | None  # None only where the session was given its runtime
    metric: str
    mode: str
    seed: int
    max_epochs: int | None = None  # where the driver completes a trial: no batch goes past
    step_timeout: object = "auto"  # how long an epoch may run before its worker restarts


class Session:
    """Where one search runs and the thread it runs on. ``poll`` (live searches only) is the
    longest the driver waits for the runtime at a time."""

    def __init__(self, runtime=None, clock=None, *, poll: float | None = None):
        self.runtime, self.clock = runtime, clock
        self.live = runtime is None
        self.poll = poll if self.live else None
        self.status = Status.CREATED
        self.error: BaseException | None = None
        self.started: datetime | None = None  # when a live search started, on the wall clock
        self.stopped_at: float | None = None  # clock time of the user's stop
        self.resumed_at: float | None = None  # clock time a resumed search went on at
        self.gate = Gate()
        self._heard: list = []  # called whenever the status changes (see on_status)
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._close_cluster = None

    # ------------------------------------------------------------------ starting

    def open(self, *, started: datetime | None = None):
        """The clock the search runs on; a live search's starts now, or at ``started`` (a
        resumed search's first start)."""
        if self.status is not Status.CREATED:
            raise HyperschedError(
                f"this experiment is {self.status}; build a new Experiment to search again"
            )
        if self.live:
            from hypersched_nb.runtime import WallClock

            now = datetime.now()
            self.started = started or now
            self.clock = WallClock(since=(now - self.started).total_seconds())
            if started is not None:  # its kernel died: it goes on from here
                self.resumed_at = self.clock.now()
        return self.clock

    def run_folder(self) -> str:
        """A fresh checkpoint folder for a live search (git ignores ``hypersched-runs``)."""
        return os.path.join("hypersched-runs", f"{self.started:%Y%m%d-%H%M%S}-{os.getpid()}")

    def connect(self, launch: Launch):
        """The runtime: a live search's cluster is started (or attached to) here."""
        if not self.live:
            return self.runtime
        from hypersched_nb.runtime import DaskRuntime, start_cluster

        c = launch.cluster
        if c is None or isinstance(c, int):
            client, self._close_cluster = start_cluster(c)
        elif isinstance(c, str):
            client, self._close_cluster = start_cluster(address=c)
        else:
            client, self._close_cluster = start_cluster(client=c)
        try:
            self.runtime = DaskRuntime(
                launch.trainable, client=client, clock=self.clock, metric=launch.metric,
                mode=launch.mode, checkpoint_dir=launch.checkpoint_dir, seed=launch.seed,
                max_epochs=launch.max_epochs, step_timeout=launch.step_timeout,
            )  # fmt: skip
        except BaseException:
            self.close()
            raise
        return self.runtime

    def run(self, search, *, on_end=None) -> None:
        """Run ``search()`` (the driver loop) on a thread of its own and return at once;
        ``on_end(status)`` hears how it ended, before the cluster closes."""
        self._move(Status.RUNNING)
        self._said()
        self._thread = threading.Thread(
            target=self._main, args=(search, on_end), name="hypersched-driver", daemon=True
        )
        self._thread.start()

    def _main(self, search, on_end) -> None:
        self.gate.enter()
        try:
            search()
            with self._lock:  # a search that knew it failed ends failed
                self._move(Status.FINISHED if self.error is None else Status.FAILED)
        except BaseException as exc:  # noqa: BLE001 - kept, and raised again by wait()
            with self._lock:
                self.error = exc
                self._move(Status.FAILED)
        finally:
            if on_end is not None:
                on_end(self.status)
            self.gate.leave()
            self._said()
            self.close()
            self._done.set()

    def opened(
        self, status: str | Status, started: datetime, *, resumed_at: float | None = None
    ) -> None:
        """This session is a search read from its journal: over, as ``status`` says
        ("finished", "failed", or "interrupted" for one cut short), and nothing runs."""
        self._move(Status(status))
        self.started, self.resumed_at = started, resumed_at
        self._done.set()

    # ------------------------------------------------------------------ ending

    def close(self) -> None:
        """Free the workers and close a cluster this session started."""
        for closer in (getattr(self.runtime, "close", None), self._close_cluster):
            if closer is not None:
                try:
                    closer()
                except Exception:  # noqa: BLE001, S110 - a failing shutdown must not hide the result
                    pass

    def stop(self, request) -> None:
        """Call ``request`` (the driver's stop) if the search is still running."""
        with self._lock:
            if self.status is Status.RUNNING:
                self._move(Status.STOPPING)
                self.stopped_at = self.clock.now()
                request()
        self._said()

    def failing(self, error: BaseException) -> None:
        """The search fails with ``error`` (raised when its thread ends): said at once."""
        with self._lock:
            if self.status in (Status.RUNNING, Status.STOPPING):
                self.error = error
                self._move(Status.FAILING)
        self._said()

    def _move(self, to: Status) -> None:
        """The one place the status changes: as :data:`TRANSITIONS` allows, or an error
        that names both."""
        if to not in TRANSITIONS[self.status]:
            raise HyperschedError(f"a search that is {self.status} cannot become {to}")
        self.status = to

    def on_status(self, callback) -> None:
        """Call ``callback()`` whenever the status changes, from the thread that changed it
        (a view redraws at once, not at its next period)."""
        self._heard.append(callback)

    def _said(self) -> None:
        for callback in list(self._heard):
            callback()

    def wait(self, timeout: float | None = None) -> bool:
        if self._thread is None and not self._done.is_set():
            raise HyperschedError("the search has not started; call start() first")
        over = _kernel_pump.wait(self._done, timeout)  # the dashboard's controls stay live
        if over and self.error is not None:
            raise self.error
        return over

    @property
    def done(self) -> bool:
        return self._done.is_set()
