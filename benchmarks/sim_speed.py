"""Simulator speed and decision cost, measured side by side in one run.

    python benchmarks/sim_speed.py [--policies hypersched,asha,random] [--configs 1000] [--epochs 100]
                                   [--repeat 3]

1. Replay: a synthetic trace of ``--configs`` configurations x ``--epochs`` epochs (curves
   of several shapes, 8 workers, the ResNet-50 scaling profile, a deadline no policy reaches)
   replayed ``--repeat`` times under each policy; prints simulated trial-epochs per second
   of the fastest replay (timeit's rule: on a shared machine the slower ones measure the
   neighbours) and the wall times of the fastest and the median replay. Target: >= 100,000
   trial-epochs/s, 1,000 x 100 in <= 1 s.
2. Decision cost: 10,000 configurations offered; every policy hook is timed (perf_counter,
   outside the simulated clock) and the 99th percentile per result is printed. Target:
   <= 1 ms.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from hypersched_nb.core.policies import create
from hypersched_nb.core.scaling import ScalingCurve
from hypersched_nb.experiment.driver import Driver
from hypersched_nb.sim.clock import VirtualClock
from hypersched_nb.sim.runtime import SimRuntime, offers
from hypersched_nb.sim.trace import Trace

HOOKS = (
    "on_trial_add",
    "on_trial_result",
    "on_trial_complete",
    "on_trial_remove",
    "choose_trial_to_run",
    "retire",
    "allocate",
    "next_wakeup",
)


def synthetic_trace(configs: int, epochs: int, seed: int = 0) -> Trace:
    """Saturating curves with random ceilings and speeds, a few late bloomers, 10-60 s epochs."""
    rng = np.random.default_rng(seed)
    x = np.arange(1, epochs + 1)
    metrics, seconds = {}, {}
    for i in range(configs):
        ceiling, speed = rng.uniform(0.1, 0.95), rng.uniform(1, epochs / 2)
        curve = ceiling * (1 - np.exp(-x / speed)) + rng.normal(0, 0.005, epochs)
        metrics[i] = np.clip(curve, 0, 1)
        seconds[i] = np.full(epochs, rng.uniform(10, 60))
    return Trace(
        "synthetic",
        tuple(range(configs)),
        metrics,
        seconds,
        {i: {} for i in range(configs)},
        scaling=ScalingCurve({2: 1.87, 4: 3.42, 8: 5.6}),
        startup_seconds=20.0,
    )


def timed(policy):
    """The same policy with every hook timed (a subclass, so the driver treats it alike).

    ``costs[i]`` is the time spent in all hooks from result i to result i + 1: the whole
    cost of the decisions one result triggers (verdict, admissions, allocation).
    """
    costs: list[float] = [0.0]
    base = type(policy)

    def wrap(name):
        inner = getattr(base, name)
        new_result = name == "on_trial_result"

        def hook(self, *args):
            if new_result:
                costs.append(0.0)
            t0 = time.perf_counter()
            try:
                return inner(self, *args)
            finally:
                costs[-1] += time.perf_counter() - t0

        return hook

    policy.__class__ = type(f"Timed{base.__name__}", (base,), {h: wrap(h) for h in HOOKS})
    return policy, costs


def run(trace: Trace, policy_name: str, configs: int, epochs: int, *, timing: bool):
    policy = create(policy_name, max_epochs=epochs, min_epochs=1, eta=4, seed=0)
    costs = None
    if timing:
        policy, costs = timed(policy)
    clock = VirtualClock()
    runtime = SimRuntime(trace, clock, 8, max_epochs=epochs)
    driver = Driver(
        policy,
        runtime,
        clock,
        iter(offers(trace, configs, 0)),
        deadline=1e12,
        max_epochs=epochs,
        scaling=trace.scaling,
    )
    t0 = time.perf_counter()
    driver.run()
    wall = time.perf_counter() - t0
    results = sum(t.epochs for t in driver.trials.values())
    return wall, results, costs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policies", default="hypersched,hypersched-paper,asha,random")
    ap.add_argument("--configs", type=int, default=1000)
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--decision-trials", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3, help="replays per policy (the fastest counts)")
    args = ap.parse_args()
    names = args.policies.split(",")

    trace = synthetic_trace(args.configs, args.epochs)
    repeat = max(1, args.repeat)
    print(
        f"1. replay of {args.configs} configurations x {args.epochs} epochs, 8 workers, "
        f"fastest of {repeat} replays"
    )
    print(
        f"{'policy':18} {'trial-epochs':>12} {'wall s':>8} {'median s':>8} {'epochs/s':>10} "
        f"{'vs 100k/s':>9}"
    )
    for name in names:
        run(trace, name, min(args.configs, 50), args.epochs, timing=False)  # warm caches
        walls = []
        for _ in range(repeat):
            wall, results, _ = run(trace, name, args.configs, args.epochs, timing=False)
            walls.append(wall)
        best, median = min(walls), float(np.median(walls))
        rate = results / best
        print(
            f"{name:18} {results:12,d} {best:8.3f} {median:8.3f} {rate:10,.0f} {rate / 1e5:9.2f}x"
        )

    big = synthetic_trace(args.decision_trials, 30, seed=1)
    print(f"\n2. decision cost per result, {args.decision_trials:,} trials offered, 8 workers")
    print(
        f"{'policy':18} {'results':>8} {'p50 us':>8} {'p99 us':>8} {'max us':>9} {'p99 vs 1 ms':>11}"
    )
    for name in names:
        _, results, costs = run(big, name, args.decision_trials, 30, timing=True)
        per_result = np.array(costs) * 1e6
        p50, p99, mx = np.percentile(per_result, [50, 99]).tolist() + [per_result.max()]
        print(f"{name:18} {results:8,d} {p50:8.1f} {p99:8.1f} {mx:9.1f} {p99 / 1000:11.3f}")


if __name__ == "__main__":
    main()
