"""The clock a driver is given (trio's ``Clock``): the core never reads time itself."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["Clock"]


@runtime_checkable
class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the search started."""

    def sleep_until(self, t: float) -> None:
        """Return once ``now() >= t`` (a virtual clock jumps; a wall clock sleeps)."""
