"""How much of ASHA's gap to the oracle any policy we have closes on the recorded traces.

    python benchmarks/recorded_ceiling.py [--seeds 10] [--processes 2]

Issue 2 asks ``hypersched`` to close half of ASHA's gap to the oracle, pooled over the
traces recorded into ``hypersched_nb/traces/``, at a quarter and half of one
configuration's full training time. This script asks whether anything does: every
registered policy, plus ``hypersched`` with ``probation=0`` (it trusts epoch 1 at once,
as ASHA does), through ``benchmarks/hypersched_targets.py``'s runner and settings (8
workers, the sidecar's scaling and start-up, 100 configurations, r = 1, η = 4, seeds 0 …
K−1).

Printed: the mean best per policy, trace and deadline, the oracle, and per deadline the
pooled share Σ(policy − asha) / Σ(oracle − asha) (1 = the oracle, 0 = ASHA).
"""

from __future__ import annotations

import argparse
import multiprocessing

import numpy as np
from hypersched_targets import FRACTIONS, OWN, run_cell, trace

from hypersched_nb.core.policies import REGISTRY

TRUSTING = "hypersched probation=0"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--processes", type=int, default=2, help="at most 2 on a shared machine")
    args = parser.parse_args()
    names = sorted(p.stem for p in OWN.glob("*.csv"))
    labels = [*REGISTRY, TRUSTING]
    jobs, keys = [], []
    for name in names:
        t = trace(name)
        for f in FRACTIONS:
            deadline = f * t.median_full_time(t.longest)
            for label in labels:
                policy, params = (
                    ("hypersched", {"probation": 0}) if label == TRUSTING else (label, {})
                )
                for seed in range(args.seeds):
                    jobs.append((name, t.longest, deadline, seed, policy, params, "auto"))
                    keys.append((name, f, label))
    with multiprocessing.get_context("fork").Pool(max(1, min(args.processes, 2))) as pool:
        rows = pool.map(run_cell, jobs, chunksize=8)
    runs: dict[tuple, list[float]] = {}
    oracle: dict[tuple, list[float]] = {}
    for key, (*_, best, bound, _started) in zip(keys, rows, strict=True):
        runs.setdefault(key, []).append(best)
        oracle.setdefault(key[:2], []).append(bound)
    mean = {k: float(np.mean(v)) for k, v in runs.items()}
    bound = {k: float(np.mean(v)) for k, v in oracle.items()}

    print(f"\nmean best of {args.seeds} seeds at f x one configuration's full training time;")
    print("share = pooled share of asha's gap to the oracle closed (1: the oracle, 0: asha)")
    short = [n.removesuffix("-cnn") for n in names]  # digits, mnist1d, mnist1d-cosine
    col = max(8, *map(len, short))
    width = (col + 1) * len(names) + 7  # a block: the traces' means and the share
    print(f"{'':>24}" + "".join(f" | {f'{f:g} x full':<{width}}" for f in FRACTIONS))
    print(
        f"{'policy':>24}"
        + (" | " + " ".join(f"{s:>{col}}" for s in short) + f" {'share':>6}") * len(FRACTIONS)
    )
    for label in [*labels, "oracle"]:
        line = f"{label:>24}"
        for f in FRACTIONS:
            value = {n: bound[n, f] if label == "oracle" else mean[n, f, label] for n in names}
            gap = sum(bound[n, f] - mean[n, f, "asha"] for n in names)
            gain = sum(value[n] - mean[n, f, "asha"] for n in names)
            share = f"{gain / gap:>+6.2f}" if gap > 0 else f"{'nan':>6}"
            line += " | " + " ".join(f"{value[n]:>{col}.4f}" for n in names) + f" {share}"
        print(line)


if __name__ == "__main__":
    main()
