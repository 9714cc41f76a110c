"""The words the policies' one-line descriptions share, so that every policy line reads alike.

A policy's ``describe(ctx)`` is what the dashboard shows under its header and what
``%hypersched status`` prints after "policy:": what the policy is doing now and why, in the
user's terms. The header already names the policy and counts the trials, so the line does
not repeat them. Its rules:

- durations as a person says them ("12 min left"), never seconds with decimals;
- epochs as the user counts them ("after epoch 4"), never a milestone index, and never
  more than the search's ``max_epochs``;
- workers, not GPUs (the runtime may be CPUs);
- no internal vocabulary (rung, cutoff, regime, ε, p*): the developer's detail stays in
  the decisions' reasons, which the journal keeps;
- no ``inf`` or ``nan``: a quantity not known yet is left out, not printed.

Example:
    >>> duration(42.4), duration(725), duration(3900)
    ('42 s', '12 min', '1 h 05 min')
    >>> top_share(2), top_share(4), top_share(5), top_share(2.5)
    ('top half', 'top quarter', 'top 1 in 5', 'top 40%')
    >>> count(1, "trial"), count(3, "trial"), epochs(1), epochs(16)
    ('1 trial', '3 trials', '1 epoch', '16 epochs')
    >>> epoch_list([1, 4, 16, 64, 256]), trial_ids([9, 1, 6, 4], limit=3)
    ('epochs 1, 4, 16 … 256', '#9, #1, #6 …')
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from hypersched_nb.core.context import PolicyContext

__all__ = [
    "count",
    "duration",
    "epoch_list",
    "epoch_number",
    "epochs",
    "every_epochs",
    "first_in_first_out",
    "time_left",
    "top_share",
    "trial_ids",
]

_SHARES = {2: "half", 3: "third", 4: "quarter"}


def duration(seconds: float) -> str:
    """A duration as a person says it: seconds under a minute, minutes under an hour."""
    if math.isinf(seconds):
        return "unlimited"
    s = _nearest(max(0.0, seconds))
    if s < 60:
        return "under 1 s" if s == 0 < seconds else f"{s} s"
    minutes = _nearest(s / 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if minutes else f"{hours} h"


def _nearest(x: float) -> int:
    """``x`` rounded half up (``round`` rounds 2.5 down to the even 2)."""
    return math.floor(x + 0.5)


def time_left(ctx: PolicyContext) -> str:
    """``"12 min left"``, ``"no deadline"`` or ``"deadline reached"``."""
    if not math.isfinite(ctx.deadline):
        return "no deadline"
    if ctx.time_left <= 0:
        return "deadline reached"
    return f"{duration(ctx.time_left)} left"


def count(n: int, noun: str) -> str:
    """``count(1, "trial")`` -> ``"1 trial"``, ``count(3, "trial")`` -> ``"3 trials"``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def epoch_number(epoch: float) -> int:
    """The epoch a trial reports at or past a milestone that may be fractional (η = 2.5)."""
    return math.ceil(epoch - 1e-9)


def epochs(n: float) -> str:
    """``"1 epoch"``, ``"16 epochs"``."""
    return count(epoch_number(n), "epoch")


def every_epochs(n: int) -> str:
    """How often a check comes: ``"after every epoch"``, ``"every 2 epochs"``."""
    return "after every epoch" if n == 1 else f"every {epochs(n)}"


def epoch_list(milestones: Sequence[float], limit: int = 4) -> str:
    """``"epoch 4"``, ``"epochs 1, 4, 16"``; past ``limit`` the first ones and the last."""
    shown = [str(epoch_number(m)) for m in milestones]
    text = ", ".join(shown)
    if len(shown) > limit:
        text = ", ".join(shown[: limit - 1]) + " … " + shown[-1]
    return ("epoch " if len(shown) == 1 else "epochs ") + text


def top_share(eta: float) -> str:
    """The share of trials a halving by η keeps: ``"top half"``, ``"top 1 in 5"``."""
    if float(eta).is_integer():
        whole = int(eta)
        return f"top {_SHARES[whole]}" if whole in _SHARES else f"top 1 in {whole}"
    return f"top {100 / eta:.0f}%"


def trial_ids(ids: Iterable[int], limit: int = 3) -> str:
    """Trials as the dashboard names them: ``"#9, #1, #6"``, with ``…`` past ``limit``."""
    ids = list(ids)
    shown = ", ".join(f"#{tid}" for tid in ids[:limit])
    return shown + (" …" if len(ids) > limit else "")


def first_in_first_out(ctx: PolicyContext) -> str:
    """The line of a policy that trains every configuration to the end, in order offered."""
    waiting = len(ctx.pending) + len(ctx.paused)
    return (
        "no early stopping: each configuration trains to the end, in the order offered · "
        f"{len(ctx.running)} running, {waiting} waiting"
    )
