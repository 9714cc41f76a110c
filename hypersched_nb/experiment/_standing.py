"""A search as it stands, detached from it: step 1 of :mod:`hypersched_nb.experiment.forecast`.

:func:`detach` pickles the driver with its trials and its policy (all of the policy's state),
less what ties it to the live search, which the pickle names instead of copying; each
:func:`attach` loads a fresh copy tied to a simulated runtime, clock and offers. The trials
are also copied into :class:`TrialSeen` records, for the futures.
"""

from __future__ import annotations

import io
import math
import operator
import pickle
from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from hypersched_nb.core.scaling import ScalingCurve
from hypersched_nb.core.trial import TrialState
from hypersched_nb.experiment._inputs import Inputs
from hypersched_nb.experiment.driver import Driver
from hypersched_nb.sim.clock import VirtualClock

__all__ = ["Standing", "TrialSeen", "attach", "detach", "fresh", "offers_left"]


@dataclass(frozen=True, slots=True)
class TrialSeen:
    """One trial as the search stands: its raw metrics per epoch, its mean training seconds
    per epoch on one worker (NaN before a result), the workers it holds, and when it last
    started (with how many results since) to place its epoch in flight."""

    trial_id: int
    state: TrialState
    metrics: tuple[float, ...]
    seconds: float
    workers: int
    last_start_at: float | None
    results_since_start: int


@dataclass(frozen=True, slots=True)
class Standing:
    """A search as it stands, detached from it: what every run starts from."""

    now: float
    deadline: float
    workers: int
    best: float  # raw metric; NaN before any result
    mode: str
    max_epochs: int
    scaling: ScalingCurve
    startup: float  # seconds per start, resume or resize
    trials: tuple[TrialSeen, ...]
    offers_left: int | None  # configurations not yet offered; None: no bound
    driver: bytes  # the driver and its policy, pickled without what ties them to the search
    policy: str = ""  # the policy's name
    early_signal: str | None = None  # what its policy was told of the first epochs (None:
    # a policy without that option)

    @property
    def reported(self) -> bool:
        return any(t.metrics for t in self.trials)


class _Detaching(pickle.Pickler):
    """Pickles a driver but names, instead of copying, what ties it to its search."""

    def __init__(self, file, ties: dict[int, str]):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._ties = ties

    def persistent_id(self, obj):
        return self._ties.get(id(obj))


class _Attaching(pickle.Unpickler):
    """Loads a detached driver with a run's own runtime, clock and offers."""

    def __init__(self, file, ties: Mapping[str, object]):
        super().__init__(file)
        self._ties = ties

    def persistent_load(self, pid):
        return self._ties[pid]


def detach(driver: Driver, *, now: float, offers_left: int | None) -> Standing:
    """The search ``driver`` runs, as it stands at ``now``: call it between two of the
    driver's turns (under the search's gate); the driver is read, never written."""
    ties = {id(obj): name for name, obj in driver.ties().items() if obj is not None}
    buffer = io.BytesIO()
    _Detaching(buffer, ties).dump(driver)
    scaling = driver.scaling
    trials = tuple(_seen(t, scaling) for t in driver.trials.values())
    startup = float(np.median(driver.startups)) if driver.startups else 0.0
    return Standing(
        now=float(now), deadline=float(driver.deadline), workers=int(driver.capacity),
        best=float(driver.outcome.best), mode=driver.mode, max_epochs=int(driver.max_epochs),
        scaling=scaling, startup=startup, trials=trials,
        offers_left=offers_left if driver.offering else 0, driver=buffer.getvalue(),
        policy=str(getattr(driver.policy, "name", type(driver.policy).__name__)),
        early_signal=getattr(driver.policy, "early_signal", None),
    )  # fmt: skip


def _seen(trial, scaling: ScalingCurve) -> TrialSeen:
    pace = math.nan
    if trial.epochs:
        pace = trial.train_seconds / trial.epochs * scaling(max(1, trial.workers))
    return TrialSeen(
        trial.trial_id, trial.state, tuple(trial.metrics), pace, trial.workers,
        trial.last_start_at, trial.results_since_start,
    )  # fmt: skip


class _Idle:
    """The runtime of a search not started yet: a cluster of ``size`` workers."""

    def __init__(self, size: int):
        self.size = size

    def workers(self) -> int:
        return self.size


def fresh(
    policy,
    *,
    deadline: float,
    workers: int,
    max_epochs: int,
    mode: str,
    scaling: ScalingCurve,
    startup: float,
    offers_left: int | None,
) -> Standing:
    """A search that has not started, to end at ``deadline``: a copy of ``policy`` before
    its first decision, on ``workers`` workers whose starts take ``startup`` seconds, with ``offers_left``
    configurations to offer."""
    clone = pickle.loads(pickle.dumps(policy))
    driver = Driver(
        clone, _Idle(workers), VirtualClock(), iter(()), deadline=deadline,
        max_epochs=max_epochs, mode=mode, scaling=scaling,
    )  # fmt: skip
    return replace(detach(driver, now=0.0, offers_left=offers_left), startup=startup)


def offers_left(source) -> int | None:
    """How many configurations ``source`` can still offer (None: no bound known)."""
    bound = getattr(source, "max_configs", -1)
    if bound is None:
        return None
    if bound >= 0:
        return max(0, bound - source.offered)
    n = operator.length_hint(source, -1)  # a ListSource's list
    return None if n < 0 else n


def attach(standing: Standing, *, runtime, clock, offers) -> Driver:
    """A fresh copy of the detached driver, tied to a run's own runtime, clock and offers
    (with no listener, an empty journal and no cached context)."""
    inputs = Inputs(clock, runtime, offers, record=None)
    ties = {"runtime": runtime, "clock": clock, "inputs": inputs, "over": None, "paused": None}
    ties |= {"journal": [], "context": None}
    return _Attaching(io.BytesIO(standing.driver), ties).load()
