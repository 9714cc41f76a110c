"""The policy interface: Ray Tune's verbs, a frozen context with every call, no clock."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.decisions import CONTINUE, Verdict
from hypersched_nb.core.events import Result
from hypersched_nb.core.trial import Trial
from hypersched_nb.errors import ConfigError

__all__ = [
    "EARLY_SIGNALS",
    "Policy",
    "at_least",
    "check_budget",
    "check_early_signal",
    "evaluation_boundary",
]

#: what the user knows of their curves' first epochs: ``auto`` (trust them for now, and let
#: the search find out), ``trust`` (a first-epoch verdict holds later) or ``doubt`` (show it
#: first)
EARLY_SIGNALS = ("auto", "trust", "doubt")


def check_budget(max_epochs: float, min_epochs: float, eta: float | None = None) -> None:
    """The budget's rules (R >= r >= 1, η > 1 where there is an η), as one-line errors."""
    if min_epochs < 1:
        raise ConfigError(f"`min_epochs` is {min_epochs}, but must be >= 1")
    if max_epochs < min_epochs:
        raise ConfigError(f"`max_epochs` is {max_epochs}, but must be >= min_epochs ({min_epochs})")
    if eta is not None and not eta > 1:
        raise ConfigError(f"`eta` is {eta}, but must be > 1")


def check_early_signal(value: object, name: str = "early_signal") -> str:
    """``early_signal`` is one of :data:`EARLY_SIGNALS`, else a one-line error naming them."""
    if not isinstance(value, str) or value not in EARLY_SIGNALS:
        raise ConfigError(
            f"`{name}` is {value!r}, but must be one of {', '.join(map(repr, EARLY_SIGNALS))}"
        )
    return value


def at_least(**checks: tuple[float | None, float]) -> None:
    """``at_least(eta=(eta, 2))``: a one-line error for a value below its bound (None passes)."""
    for name, (value, low) in checks.items():
        if value is not None and not value >= low:
            raise ConfigError(f"`{name}` is {value}, but must be >= {low}")


def evaluation_boundary(boundary: int | None, fraction: float, max_epochs: int) -> int:
    """Epochs between evaluations (HyperDrive's b): ``boundary``, else ``fraction`` of R."""
    if boundary is None:
        boundary = max(1, round(fraction * max_epochs))
    if boundary < 1:
        raise ConfigError(f"`boundary` is {boundary}, but must be >= 1")
    return boundary


class Policy:
    """Base class of every scheduling policy; every hook has a harmless default.

    A policy decides; the driver carries out. It never reads a clock, never keeps the
    deadline (``ctx.deadline`` holds the current one), never writes a :class:`Trial` and
    gets its randomness from the seed it is given. Every decision carries its reason (a
    :class:`~hypersched_nb.core.decisions.Verdict`, or a trial id -> reason mapping from
    ``retire``), which the driver copies into its journal; the driver reads no other state
    of a policy than the hooks' answers and the class's ``elastic`` declaration.

    The driver calls, in order of a trial's life:

    - ``on_trial_add(trial, ctx)`` when a configuration is offered (state PENDING);
    - ``choose_trial_to_run(ctx)`` whenever a worker is free: a PENDING or PAUSED trial to
      start on one worker, or None (must be idempotent, as in Ray Tune);
    - ``on_trial_result(trial, result, ctx) -> Verdict`` after every epoch;
    - ``on_trial_complete`` when it reached ``max_epochs`` or cannot train further,
      ``on_trial_error`` when its code raised, ``on_trial_remove`` when it was stopped
      from outside (deadline, user, divergence); the first two default to the third;
    - ``retire(ctx) -> {trial id: reason}``: PENDING or PAUSED trials the policy will
      never run again;
    - ``allocate(ctx)``: target workers per RUNNING trial (None: one each, no resizing);
      the driver applies a change at the trial's next epoch boundary and never promises
      more workers than are free;
    - ``next_wakeup(ctx)``: a time at which to be asked again even if nothing happens;
    - ``cluster_size(ctx)``: called only when the class declares ``elastic = True``: the
      workers the cluster should have now (None: leave it as it is); the driver never
      shrinks it below the workers held nor grows it past ``ctx.max_workers``.
    """

    #: the registry name (``"asha"``) — set by each subclass
    name: str = "policy"

    #: does it size the cluster (``cluster_size``)? Only then does the driver ask it.
    elastic: ClassVar[bool] = False

    #: a frozen dataclass of the policy's own settings, each field a keyword its constructor
    #: takes (through ``**settings``); None: the constructor's signature lists them
    params_class: ClassVar[type | None] = None

    def on_trial_add(self, trial: Trial, ctx: PolicyContext) -> None:
        pass

    def on_trial_result(self, trial: Trial, result: Result, ctx: PolicyContext) -> Verdict:
        return CONTINUE

    def on_trial_complete(self, trial: Trial, ctx: PolicyContext) -> None:
        self.on_trial_remove(trial, ctx)

    def on_trial_remove(self, trial: Trial, ctx: PolicyContext) -> None:
        pass

    def on_trial_error(self, trial: Trial, ctx: PolicyContext) -> None:
        self.on_trial_remove(trial, ctx)

    def choose_trial_to_run(self, ctx: PolicyContext) -> Trial | None:
        """First paused trial, else first pending one (Ray Tune's FIFO default)."""
        for trial in ctx.paused.values():
            return trial
        for trial in ctx.pending.values():
            return trial
        return None

    def retire(self, ctx: PolicyContext) -> Mapping[int, str]:
        return {}

    def allocate(self, ctx: PolicyContext) -> Mapping[int, int] | None:
        return None

    def next_wakeup(self, ctx: PolicyContext) -> float | None:
        return None

    def cluster_size(self, ctx: PolicyContext) -> int | None:
        return None

    def describe(self, ctx: PolicyContext) -> str:
        """One line on what the policy believes now (shown live by the dashboard)."""
        return self.name

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({params})"
