"""The snapshot a driver hands a policy with every call (aioquic's ``now``, made a value)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from hypersched_nb.core.scaling import NONE, ScalingCurve
from hypersched_nb.core.trial import Trial

__all__ = ["PolicyContext"]


class PolicyContext(NamedTuple):
    """Everything a policy may know about the world at one decision.

    An immutable named tuple (not a frozen dataclass): the driver builds one per moment
    (several hooks called at the same time with nothing changed between them share it) and
    a tuple is built several times faster, which the simulator's speed target needs. Being
    a value, a context can be kept and compared; never rely on its identity. Use
    ``ctx._replace(deadline=...)`` to derive a changed copy in tests.

    ``deadline`` is read from the driver for every call, so a deadline moved while a search
    runs is seen at the next decision. ``trials`` maps every trial id to its record;
    ``pending``, ``running`` and ``paused`` are the live subsets in the order trials entered
    them. The mappings are the driver's own: read them, never write them.
    """

    now: float
    deadline: float
    workers: int  # workers in the cluster now
    free: int  # workers neither held nor promised to a trial
    trials: Mapping[int, Trial]
    pending: Mapping[int, Trial]
    running: Mapping[int, Trial]
    paused: Mapping[int, Trial]
    mode: str = "max"
    scaling: ScalingCurve = NONE
    startups: Sequence[float] = ()  # observed start-up overheads (seconds), oldest first
    offers_left: bool = True  # can the driver still offer new configurations?
    max_workers: int | None = None  # elastic clusters: the most workers (None: ``workers``)
    cost_budget: float | None = None  # worker-seconds the search may bill (None: no limit)
    billed: float = 0.0  # worker-seconds billed so far (∫ cluster size dt)

    @property
    def time_left(self) -> float:
        return max(0.0, self.deadline - self.now)

    @property
    def budget_left(self) -> float:
        """Worker-seconds left to bill (infinite without a cost budget)."""
        if self.cost_budget is None:
            return float("inf")
        return max(0.0, self.cost_budget - self.billed)

    @staticmethod
    def for_test(
        *,
        now: float = 0.0,
        deadline: float = float("inf"),
        workers: int = 1,
        trials: Mapping[int, Trial] | None = None,
        **kw,
    ) -> PolicyContext:
        """A context built from a plain trial mapping (used by tests and doctests)."""
        from hypersched_nb.core.trial import TrialState

        trials = dict(trials or {})
        by = {s: {i: t for i, t in trials.items() if t.state is s} for s in TrialState}
        held = sum(t.workers for t in by[TrialState.RUNNING].values())
        kw.setdefault("free", max(0, workers - held))
        return PolicyContext(
            now=now,
            deadline=deadline,
            workers=workers,
            trials=trials,
            pending=by[TrialState.PENDING],
            running=by[TrialState.RUNNING],
            paused=by[TrialState.PAUSED],
            **kw,
        )
