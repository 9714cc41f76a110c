"""How much of ASHA's gap to the oracle any policy we have closes on the recorded traces.

    python benchmarks/recorded_ceiling.py [--seeds 10] [--processes 2]

Issue 2 asks ``hypersched`` to close half of ASHA's gap to the oracle, pooled over the
traces recorded into ``hypersched_nb/traces/``, at a quarter and half of one
configuration's full training time. This script asks whether anything does: every
registered policy, plus ``hypersched`` with ``probation=0`` (it trusts epoch 1 at once,
as ASHA does), on the settings of ``benchmarks/hypersched_targets.py`` (8 workers, the
sidecar's scaling and start-up, 100 configurations, r = 1, η = 4, seeds 0 … K−1).

Printed: the mean best per policy, trace and deadline, the oracle, and per deadline the
pooled share Σ(policy − asha) / Σ(oracle − asha) (1 = the oracle, 0 = ASHA).
"""

from __future__ import annotations

import argparse
import multiprocessing
from pathlib import Path

import numpy as np

from hypersched_nb.core.policies import REGISTRY
from hypersched_nb.experiment.simulate import SimSettings, simulate
from hypersched_nb.sim.trace import load_trace

OWN = Path(__file__).resolve().parent.parent / "hypersched_nb" / "traces"
FRACTIONS = (0.25, 0.5, 1.0, 2.0)
TRUSTING = "hypersched probation=0"


def _run(job: tuple) -> tuple:
    name, fraction, label, seed = job
    trace = load_trace(name)
    deadline = fraction * trace.median_full_time(trace.longest)
    policy, params = ("hypersched", {"probation": 0}) if label == TRUSTING else (label, {})
    settings = SimSettings(workers=8, configs=100, max_epochs=trace.longest, min_epochs=1, eta=4)
    row = simulate(trace, policy, deadline, seed, settings, policy_params=params)
    return name, fraction, label, row["best"], row["oracle"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--processes", type=int, default=2, help="at most 2 on a shared machine")
    args = parser.parse_args()
    names = sorted(p.stem for p in OWN.glob("*.csv"))
    labels = [*REGISTRY, TRUSTING]
    jobs = [
        (n, f, p, s) for n in names for f in FRACTIONS for p in labels for s in range(args.seeds)
    ]
    with multiprocessing.get_context("fork").Pool(max(1, min(args.processes, 2))) as pool:
        rows = pool.map(_run, jobs, chunksize=8)
    runs: dict[tuple, list[float]] = {}
    oracle: dict[tuple, list[float]] = {}
    for name, fraction, label, best, bound in rows:
        runs.setdefault((name, fraction, label), []).append(best)
        oracle.setdefault((name, fraction), []).append(bound)
    mean = {k: float(np.mean(v)) for k, v in runs.items()}
    bound = {k: float(np.mean(v)) for k, v in oracle.items()}

    print(f"\nmean best of {args.seeds} seeds at f x one configuration's full training time;")
    print("share = pooled share of asha's gap to the oracle closed (1: the oracle, 0: asha)")
    short = [n.split("-")[0][:8] for n in names]
    width = 9 * len(names) + 7  # a block: the traces' means and the share
    print(f"{'':>24}" + "".join(f" | {f'{f:g} x full':<{width}}" for f in FRACTIONS))
    print(
        f"{'policy':>24}"
        + (" | " + " ".join(f"{s:>8}" for s in short) + f" {'share':>6}") * len(FRACTIONS)
    )
    for label in [*labels, "oracle"]:
        line = f"{label:>24}"
        for f in FRACTIONS:
            value = {n: bound[n, f] if label == "oracle" else mean[n, f, label] for n in names}
            gap = sum(bound[n, f] - mean[n, f, "asha"] for n in names)
            gain = sum(value[n] - mean[n, f, "asha"] for n in names)
            share = f"{gain / gap:>+6.2f}" if gap > 0 else f"{'nan':>6}"
            line += " | " + " ".join(f"{value[n]:>8.4f}" for n in names) + f" {share}"
        print(line)


if __name__ == "__main__":
    main()
