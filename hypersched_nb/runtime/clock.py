"""The wall clock a live search runs on (trio's ``Clock``; the simulator's jumps instead)."""

from __future__ import annotations

import time

__all__ = ["WallClock"]


class WallClock:
    """Monotonic seconds since the clock was made, plus ``since`` (a resumed search's
    clock reads the seconds since the search first started); ``sleep_until`` really sleeps."""

    __slots__ = ("_t0",)

    def __init__(self, since: float = 0.0):
        self._t0 = time.monotonic() - since

    def now(self) -> float:
        return time.monotonic() - self._t0

    def sleep_until(self, t: float) -> None:
        wait = t - self.now()
        if wait > 0:
            time.sleep(wait)

    def __repr__(self) -> str:
        return f"WallClock(now={self.now():.3f})"
