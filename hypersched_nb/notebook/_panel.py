"""What the dashboard's panels that draw on a thread of their own share."""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["stop_drawing"]


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
