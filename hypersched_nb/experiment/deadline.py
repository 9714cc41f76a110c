"""Deadlines as people write them: "20m", "90s", "1h30m", "17:00", "+10m".

Three forms, all turned into seconds on the search's clock (0 = the search started):

- a **budget** measured from the start: ``"20m"``, ``"90s"``, ``"1h30m"``, ``"1.5h"``, a
  number of seconds (``1200``) or a :class:`datetime.timedelta`;
- a **wall-clock time**: ``"17:00"`` or ``"17:00:30"`` today, ``"tomorrow 9:00"``, or a
  :class:`datetime.datetime`; a time already past is refused, saying when it passed (it
  never silently means tomorrow);
- a **shift** of the current deadline: ``"+10m"`` gives ten more minutes, ``"-5m"`` takes
  five away (before a search starts, ``"+10m"`` is the same as ``"10m"``).

Example:
    >>> from datetime import datetime
    >>> parse_duration("1h30m")
    5400.0
    >>> start = datetime(2026, 1, 1, 16, 0)
    >>> resolve_deadline("17:00", elapsed=60.0, current=1200.0, started=start)
    3600.0
    >>> resolve_deadline("+10m", elapsed=60.0, current=1200.0, started=start)
    1800.0
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime, time, timedelta

from hypersched_nb.errors import ConfigError

__all__ = [
    "DeadlineSpec",
    "parse_deadline",
    "parse_duration",
    "resolve_deadline",
    "format_duration",
]

_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*([hms])", re.IGNORECASE)
_DURATION = re.compile(r"\s*(?:(\d+(?:\.\d*)?|\.\d+)\s*[hms]\s*)+", re.IGNORECASE)
_CLOCK = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2}))?")
_UNIT = {"h": 3600.0, "m": 60.0, "s": 1.0}
_FORMS = "a duration like '20m', '90s' or '1h30m', a time like '17:00', or a shift like '+10m'"
_TOMORROW = "tomorrow "


@dataclass(frozen=True, slots=True)
class DeadlineSpec:
    """A parsed deadline: ``kind`` is "budget", "at" or "shift"."""

    kind: str
    seconds: float = 0.0  # the budget or the shift
    at: datetime | time | None = None  # the wall-clock target
    tomorrow: bool = False  # a time of day, tomorrow's

    def __str__(self) -> str:
        if self.kind == "budget":
            return format_duration(self.seconds)
        if self.kind == "shift":
            return ("+" if self.seconds >= 0 else "-") + format_duration(abs(self.seconds))
        return (_TOMORROW if self.tomorrow else "") + self.at.isoformat(timespec="seconds")


def parse_duration(text: str, name: str = "deadline") -> float:
    """Seconds in ``"1h30m"``, ``"90s"``, ``"20m"``, ``"1.5h"`` or a plain number of seconds."""
    s = text.strip()
    try:
        value = float(s)
    except ValueError:
        if not _DURATION.fullmatch(s):
            raise ConfigError(f"`{name}` is {text!r}, but must be {_FORMS}") from None
        value = sum(float(n) * _UNIT[u.lower()] for n, u in _PART.findall(s))
    if not math.isfinite(value):
        raise ConfigError(f"`{name}` is {text!r}, but must be finite")
    return value


def parse_deadline(spec, name: str = "deadline") -> DeadlineSpec:
    """Check the syntax of a deadline and say which form it is (no clock needed)."""
    if isinstance(spec, DeadlineSpec):
        return spec
    if isinstance(spec, datetime):
        at = spec.astimezone().replace(tzinfo=None) if spec.tzinfo else spec
        return DeadlineSpec("at", at=at)
    if isinstance(spec, timedelta):
        return _budget(spec.total_seconds(), spec, name)
    if isinstance(spec, bool) or not isinstance(spec, (str, int, float)):
        raise ConfigError(f"`{name}` is {spec!r}, but must be {_FORMS}")
    if not isinstance(spec, str):
        if not math.isfinite(spec):
            raise ConfigError(f"`{name}` is {spec!r}, but must be finite")
        return _budget(float(spec), spec, name)
    s = spec.strip()
    tomorrow = s.lower().startswith(_TOMORROW)
    if tomorrow:
        s = s[len(_TOMORROW) :].strip()
        if not _CLOCK.fullmatch(s):
            raise ConfigError(
                f"`{name}` is {spec!r}, but 'tomorrow' must be followed by a time like 9:00"
            )
    if s[:1] in "+-" and s[1:].strip():
        sign = 1.0 if s[0] == "+" else -1.0
        return DeadlineSpec("shift", seconds=sign * parse_duration(s[1:], name))
    m = _CLOCK.fullmatch(s)
    if m:
        h, mi, se = int(m[1]), int(m[2]), int(m[3] or 0)
        if h > 23 or mi > 59 or se > 59:
            raise ConfigError(f"`{name}` is {spec!r}, but {s} is not a time of day")
        return DeadlineSpec("at", at=time(h, mi, se), tomorrow=tomorrow)
    return _budget(parse_duration(s, name), spec, name)


def _budget(seconds: float, spec, name: str) -> DeadlineSpec:
    if not seconds > 0:
        raise ConfigError(f"`{name}` is {spec!r}, but a budget must be > 0 seconds")
    return DeadlineSpec("budget", seconds=float(seconds))


def resolve_deadline(
    spec,
    *,
    elapsed: float,
    current: float | None,
    started: datetime | None,
    name: str = "deadline",
) -> float:
    """The deadline in seconds since the start of a search.

    ``elapsed`` is the search clock now, ``current`` the deadline in force (None before the
    start) and ``started`` the wall time at which the search clock read 0 (None for a
    virtual clock, where wall-clock times mean nothing).
    """
    d = parse_deadline(spec, name)
    if d.kind == "budget":
        return d.seconds
    if d.kind == "shift":
        return (elapsed if current is None else current) + d.seconds
    if started is None:
        raise ConfigError(
            f"`{name}` is {str(d)!r}, a wall-clock time, but this search runs on a virtual "
            "clock; give a duration like '20m'"
        )
    now = started + timedelta(seconds=elapsed)
    if isinstance(d.at, datetime):
        target = d.at
    else:
        target = datetime.combine(now.date() + timedelta(days=d.tomorrow), d.at)
    if target <= now:
        later = f"'tomorrow {d.at:%H:%M}'" if not isinstance(d.at, datetime) else "a later time"
        raise ConfigError(
            f"`{name}` is {str(d)!r}, which passed {format_duration((now - target).total_seconds())} "
            f"ago; give a time still to come ({later}), or a budget such as '30m'"
        )
    return (target - started).total_seconds()


def format_duration(seconds: float) -> str:
    """``3725`` → ``"1h 02m"``, ``185`` → ``"3m 05s"``, ``42.3`` → ``"42s"``."""
    if not math.isfinite(seconds):
        return "∞"
    s = round(max(0.0, seconds))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    if h:
        return f"{h}h {m:02d}m"
    if m:
        return f"{m}m {sec:02d}s"
    return f"{sec}s"
