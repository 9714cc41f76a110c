"""The wall clock a live search runs on (trio's ``Clock``; the simulator's jumps instead)."""

from __future__ import annotations

import time

__all__ = ["WallClock"]


class WallClock:
    """Monotonic seconds since the clock was made; ``sleep_until`` really sleeps."""

    __slots__ = ("_t0",)

    def __init__(self):
        self._t0 = time.monotonic()

    def now(self) -> float:
        return time.monotonic() - self._t0

    def sleep_until(self, t: float) -> None:
        wait = t - self.now()
        if wait > 0:
            time.sleep(wait)

    def __repr__(self) -> str:
        return f"WallClock(now={self.now():.3f})"
