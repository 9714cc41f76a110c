"""Simulated searches: a policy replaying a trace on a virtual clock through the driver.

:func:`replayed` sets up what a simulated search runs on; :func:`simulate` runs one to its
end for the benchmark, and ``Experiment.replay`` runs one in the background as a live search
runs. A finished simulation is a :class:`Simulation`; its :class:`RunRecord` is one run of
the benchmark's JSON file, whose fields are that row's keys, in order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from hypersched_nb.core.policies import create
from hypersched_nb.core.scaling import ScalingCurve
from hypersched_nb.experiment.driver import Driver, Outcome
from hypersched_nb.sim.clock import VirtualClock
from hypersched_nb.sim.oracle import oracle_best
from hypersched_nb.sim.runtime import SimRuntime, offers
from hypersched_nb.sim.trace import Trace

__all__ = [
    "Replayed",
    "RunRecord",
    "SimSettings",
    "Simulation",
    "replay_of",
    "replayed",
    "simulate",
]


@dataclass(frozen=True)
class SimSettings:
    workers: int = 8
    configs: int = 100
    max_epochs: int | None = None  # default: the longest curve
    min_epochs: int = 1
    eta: float = 4
    scaling: ScalingCurve | None = None  # default: the trace's sidecar
    startup: float | None = None  # default: the trace's sidecar
    target: float | None = None
    cost_budget: float | None = None  # worker-seconds the search may bill (elastic policies)
    early_signal: str = "auto"  # what the first epochs say: "auto", "trust" or "doubt"


@dataclass(frozen=True, slots=True)
class Replayed:
    """What a simulated search runs on: the trace replayed on a virtual clock, and the
    configurations its seed offers, in order (the same for every policy)."""

    trace: Trace
    runtime: SimRuntime
    clock: VirtualClock
    offered: list[dict]
    workers: int
    max_epochs: int  # R
    scaling: ScalingCurve
    startup: float

    def oracle(self, deadline: float) -> float:
        """The best any schedule of these offers could reach by ``deadline``."""
        return oracle_best(
            self.trace, self.offered, workers=self.workers, deadline=deadline,
            max_epochs=self.max_epochs, scaling=self.scaling, startup=self.startup,
        )  # fmt: skip


def replay_of(trace, *, workers: int, configs: int, seed: int, max_epochs: int | None,
              min_epochs: int, eta: float, scaling, startup, target) -> tuple[Replayed, Trace]:  # fmt: skip
    """What ``Experiment.replay`` runs on: ``trace`` (a name, a path or a loaded trace)
    replayed with seed ``seed``'s offers; each setting checked in one line."""
    from hypersched_nb.core.policies import check_budget
    from hypersched_nb.experiment.settings import check
    from hypersched_nb.sim.trace import load_trace

    for name, value in (("workers", workers), ("configs", configs), ("seed", seed),
                        ("min_epochs", min_epochs), ("startup", startup)):  # fmt: skip
        check(name, value)
    if max_epochs is not None:  # None: the trace's longest curve
        check("max_epochs", max_epochs)
        check_budget(max_epochs, min_epochs)
    trace = trace if isinstance(trace, Trace) else load_trace(trace)
    settings = SimSettings(
        workers=workers, configs=configs, max_epochs=max_epochs, min_epochs=min_epochs,
        eta=eta, scaling=None if scaling is None else ScalingCurve.parse(scaling),
        startup=startup, target=target,
    )  # fmt: skip
    return replayed(trace, seed, settings), trace


def replayed(trace: Trace, seed: int, settings: SimSettings) -> Replayed:
    """Set up a simulated search of ``trace`` with seed ``seed``'s offers."""
    R = settings.max_epochs or trace.longest
    scaling = trace.scaling if settings.scaling is None else settings.scaling
    startup = trace.startup_seconds if settings.startup is None else settings.startup
    offered = offers(trace, settings.configs, seed)
    clock = VirtualClock()
    runtime = SimRuntime(
        trace, clock, settings.workers, scaling=scaling, startup=startup, max_epochs=R
    )
    return Replayed(trace, runtime, clock, offered, settings.workers, R, scaling, startup)


def prior_evidence(prior, *, trace: Trace, offered, max_epochs, min_epochs, eta):
    """What a policy replaying ``trace`` is told of ``prior`` (None: nothing)."""
    from hypersched_nb.experiment.prior import resolve_prior

    found = resolve_prior(prior, space=offered, metric=trace.metric_name, mode=trace.mode)
    if found is None:
        return None
    return found.evidence(min_epochs=min_epochs, eta=eta, max_epochs=max_epochs)


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One simulated search as a run of the benchmark's JSON file (see docs/design.md)."""

    policy: str
    deadline: float
    seed: int
    best: float  # NaN when nothing was reported
    oracle: float
    trials_started: int
    time_to_target: float | None
    worker_seconds_busy: float
    worker_seconds_billed: float  # ∫ cluster size dt (elastic policies size the cluster)
    early_signal_at_end: str | None = None  # "trust" or "doubt" (None: no such rule)

    @classmethod
    def of(
        cls, name: str, deadline: float, seed: int, out: Outcome, *, oracle: float, policy
    ) -> RunRecord:
        """The record of a search by ``policy`` (registered as ``name``) that ended in
        ``out``."""
        mode = getattr(policy, "early_signal_mode", None)  # hypersched's rule 2; others none
        return cls(
            name, float(deadline), seed, out.best, oracle, out.trials_started,
            out.time_to_target, out.worker_seconds_busy, out.worker_seconds_billed,
            mode() if mode is not None else None,
        )  # fmt: skip

    def to_json(self) -> dict:
        """The run as the JSON file has it: a metric never reported is null (JSON has no NaN)."""
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}


def _plain(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


@dataclass(frozen=True, slots=True)
class Simulation:
    """A finished simulated search: its benchmark record, the driver's outcome (with the
    journal, when asked for) and the driver itself (its trials and policy)."""

    record: RunRecord
    outcome: Outcome
    driver: Driver


def simulate(
    trace: Trace,
    policy: str,
    deadline: float,
    seed: int,
    settings: SimSettings = SimSettings(),
    *,
    journal: bool = False,
    policy_params: dict | None = None,
    prior=None,
) -> Simulation:
    """Run ``policy`` on ``trace`` until ``deadline`` (seconds of trace time); an
    ``early_signal`` among ``policy_params`` overrides the settings' one. ``prior``: a past
    search of the same model (anything ``Experiment``'s ``prior=`` takes), for a policy
    that reads one."""
    sim = replayed(trace, seed, settings)
    params = {"early_signal": settings.early_signal, **(policy_params or {})}
    pol = create(
        policy,
        max_epochs=sim.max_epochs,
        min_epochs=settings.min_epochs,
        eta=settings.eta,
        seed=seed,
        prior=prior_evidence(
            prior,
            trace=trace,
            offered=sim.offered,
            max_epochs=sim.max_epochs,
            min_epochs=settings.min_epochs,
            eta=settings.eta,
        ),  # fmt: skip
        **params,
    )
    driver = Driver(
        pol,
        sim.runtime,
        sim.clock,
        iter(sim.offered),
        deadline=deadline,
        max_epochs=sim.max_epochs,
        mode=trace.mode,
        scaling=sim.scaling,
        target=settings.target,
        journal=journal,
        cost_budget=settings.cost_budget,
    )
    out = driver.run()
    record = RunRecord.of(policy, deadline, seed, out, oracle=sim.oracle(deadline), policy=pol)
    return Simulation(record, out, driver)
