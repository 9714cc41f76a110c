"""The policy interface: Ray Tune's verbs, a frozen context with every call, no clock."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.decisions import Decision
from hypersched_nb.core.events import Result
from hypersched_nb.core.trial import Trial
from hypersched_nb.errors import ConfigError

__all__ = ["Policy", "check_budget", "evaluation_boundary"]


def check_budget(max_epochs: int, min_epochs: int, eta: float) -> None:
    """The checks every successive-halving policy shares, as one-line errors."""
    if min_epochs < 1:
        raise ConfigError(f"`min_epochs` is {min_epochs}, but must be >= 1")
    if max_epochs < min_epochs:
        raise ConfigError(f"`max_epochs` is {max_epochs}, but must be >= min_epochs ({min_epochs})")
    if not eta > 1:
        raise ConfigError(f"`eta` is {eta}, but must be > 1")


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
    gets its randomness from the ``rng`` it is given. ``why`` holds a short reason for the
    last decision, which the driver copies into its journal.

    The driver calls, in order of a trial's life:

    - ``on_trial_add(trial, ctx)`` when a configuration is offered (state PENDING);
    - ``choose_trial_to_run(ctx)`` whenever a worker is free: a PENDING or PAUSED trial to
      start on one worker, or None (must be idempotent, as in Ray Tune);
    - ``on_trial_result(trial, result, ctx) -> Decision`` after every epoch;
    - ``on_trial_complete`` when it reached ``max_epochs`` or cannot train further,
      ``on_trial_error`` when its code raised, ``on_trial_remove`` when it was stopped
      from outside (deadline, user, divergence);
    - ``retire(ctx)``: PENDING or PAUSED trials the policy will never run again;
    - ``allocate(ctx)``: target workers per RUNNING trial (None: one each, no resizing);
      the driver applies a change at the trial's next epoch boundary and never promises
      more workers than are free;
    - ``next_wakeup(ctx)``: a time at which to be asked again even if nothing happens;
    - ``cluster_size(ctx)``: elastic clusters only: the workers the cluster should have now
      (None: leave it as it is); the driver never shrinks it below the workers held nor
      grows it past ``ctx.max_workers``.
    """

    #: the registry name (``"asha"``) — set by each subclass
    name: str = "policy"

    why: str = ""

    def on_trial_add(self, trial: Trial, ctx: PolicyContext) -> None:
        pass

    def on_trial_result(self, trial: Trial, result: Result, ctx: PolicyContext) -> Decision:
        return Decision.CONTINUE

    def on_trial_complete(self, trial: Trial, ctx: PolicyContext) -> None:
        pass

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

    def retire(self, ctx: PolicyContext) -> Iterable[int]:
        return ()

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
        params = ", ".join(
            f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_") and k != "why"
        )
        return f"{type(self).__name__}({params})"
