"""One simulated search: a policy replaying a trace on a virtual clock through the driver."""

from __future__ import annotations

from dataclasses import dataclass

from hypersched_nb.core.policies import create
from hypersched_nb.core.scaling import ScalingCurve
from hypersched_nb.experiment.driver import Driver, Outcome
from hypersched_nb.sim.clock import VirtualClock
from hypersched_nb.sim.oracle import oracle_best
from hypersched_nb.sim.runtime import SimRuntime, offers
from hypersched_nb.sim.trace import Trace

__all__ = ["SimSettings", "simulate"]


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


def simulate(
    trace: Trace,
    policy: str,
    deadline: float,
    seed: int,
    settings: SimSettings = SimSettings(),
    *,
    journal: bool = False,
    policy_params: dict | None = None,
) -> dict:
    """Run ``policy`` on ``trace`` and return the benchmark JSON's row (plus the outcome)."""
    R = settings.max_epochs or trace.longest
    scaling = trace.scaling if settings.scaling is None else settings.scaling
    startup = trace.startup_seconds if settings.startup is None else settings.startup
    offered = offers(trace, settings.configs, seed)
    clock = VirtualClock()
    runtime = SimRuntime(trace, clock, settings.workers, scaling=scaling, startup=startup, max_epochs=R)
    pol = create(
        policy,
        max_epochs=R,
        min_epochs=settings.min_epochs,
        eta=settings.eta,
        seed=seed,
        **(policy_params or {}),
    )
    driver = Driver(
        pol,
        runtime,
        clock,
        iter(offered),
        deadline=deadline,
        max_epochs=R,
        mode=trace.mode,
        scaling=scaling,
        target=settings.target,
        journal=journal,
        cost_budget=settings.cost_budget,
    )
    out: Outcome = driver.run()
    return {
        "policy": policy,
        "deadline": float(deadline),
        "seed": seed,
        "best": out.best,
        "oracle": oracle_best(
            trace, offered, workers=settings.workers, deadline=deadline, max_epochs=R,
            scaling=scaling, startup=startup,
        ),
        "trials_started": out.trials_started,
        "time_to_target": out.time_to_target,
        "worker_seconds_busy": out.worker_seconds_busy,
        "worker_seconds_billed": out.worker_seconds_billed,
        "_outcome": out,
        "_driver": driver,
    }
