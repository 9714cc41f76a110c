"""A clock that jumps (trio's ``MockClock``): simulated time never includes compute time."""

from __future__ import annotations

from hypersched_nb.errors import InvalidTransition

__all__ = ["VirtualClock"]


class VirtualClock:
    __slots__ = ("_now",)

    def __init__(self, start: float = 0.0):
        self._now = float(start)

    def now(self) -> float:
        return self._now

    def sleep_until(self, t: float) -> None:
        if t < self._now:
            raise InvalidTransition(f"virtual clock: can't go back from {self._now} to {t}")
        self._now = t

    def __repr__(self) -> str:
        return f"VirtualClock(now={self._now})"
