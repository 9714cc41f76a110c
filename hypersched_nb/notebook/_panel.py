"""What the dashboard's panels that draw on a thread of their own share: a process to draw
in, and how they stop."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor

__all__ = ["panel_process", "stop_drawing"]


def panel_process(*, nice: int = 0) -> ProcessPoolExecutor:
    """A panel's process: one, spawned (nothing of the kernel's threads or heap is copied),
    ``nice`` steps below the kernel's priority. It ignores SIGINT: a front end interrupts a
    kernel by signalling its whole process group (JupyterLab's ■, a shutdown), and the
    interrupt is the kernel's to act on (of it the panel's process would die, and the panel
    draw in the kernel's process from then on)."""
    return ProcessPoolExecutor(
        max_workers=1,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_deaf_to_interrupts,
        initargs=(nice,),
    )


def _deaf_to_interrupts(nice: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if nice:
        os.nice(nice)


def stop_drawing(
    closed: threading.Event, thread: threading.Thread | None, end_pool: Callable[[], None],
    wait: bool | float, wake: threading.Event | None = None,
) -> None:  # fmt: skip
    """Stop a panel's drawing: ``closed`` is set (then ``wake``, which its thread waits on);
    a panel whose thread never started frees
    its process pool now (a started thread frees it as it ends); ``wait``: until a drawing
    under way has ended (a number: at most that many seconds)."""
    closed.set()
    if wake is not None:
        wake.set()
    if thread is None:
        end_pool()
    elif wait is not False:
        thread.join(None if wait is True else float(wait))
