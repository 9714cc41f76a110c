"""The default with a past search as its prior, measured where a user would have one.

    python benchmarks/prior_split.py [--seeds 10] [--processes 2] [--traces NAME,...]
        [--markdown] [--late]

Each trace is split into two halves of its configurations (``split_halves`` under the
run's seed): the first half is yesterday's search (the prior), the second the new one,
which every policy searches with the same offers. Printed per cell, as
``benchmarks/hypersched_targets.py`` prints (its cells, deadlines and settings: 8 workers,
the sidecar's scaling and start-up, 100 offered configurations, r = 1, η = 4, seeds
0 … K−1): ``hypersched`` with the prior, without it, the best of asha / hyperband /
random, the oracle, and the margin of the prior over that best (target: >= −0.005 in every
cell) with the standard error of its per-seed differences (``± se``: each seed searches the
same offers under every policy); per family and deadline the pooled share of ASHA's gap to
the oracle that each closes (target with the prior: >= 0.5 at 900 and 1800 s on LCBench).

Traces: the shared LCBench ones, read in place from ``../shared/traces`` beside the
checkout (skipped with a note where absent), and every trace shipped in
``hypersched_nb/traces``; with ``--late`` also ``hypersched_targets.py``'s synthetic
late-bloomer trace (the paper's regime: a step decay at 60 % of R), printed but not a
target.
"""

from __future__ import annotations

import argparse
import multiprocessing

import numpy as np
from hypersched_targets import BASELINES, FRACTIONS, LCBENCH_DEADLINES, families, trace

from hypersched_nb.experiment.simulate import SimSettings, simulate
from hypersched_nb.sim.trace import split_halves

WITH, WITHOUT = "hypersched +prior", "hypersched"
POLICIES = (WITH, WITHOUT, *BASELINES)
_HALVES: dict[tuple[str, int], tuple] = {}


def halves(name: str, seed: int):
    if (name, seed) not in _HALVES:
        _HALVES[name, seed] = split_halves(trace(name), seed=seed)
    return _HALVES[name, seed]


def run_cell(job: tuple) -> tuple:
    name, max_epochs, deadline, seed, policy = job
    past, new = halves(name, seed)
    settings = SimSettings(workers=8, configs=100, max_epochs=max_epochs, min_epochs=1, eta=4)
    prior = past if policy == WITH else None
    run = simulate(new, policy.split()[0], deadline, seed, settings, prior=prior).record
    return name, deadline, policy, seed, run.best, run.oracle


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--processes", type=int, default=2, help="at most 2 on a shared machine")
    parser.add_argument("--traces", default="", help="only these (comma-separated names)")
    parser.add_argument("--markdown", action="store_true", help="end with a table of margins")
    parser.add_argument("--late", action="store_true", help="add the synthetic late trace")
    args = parser.parse_args()
    only = {t for t in args.traces.split(",") if t}
    fams = {
        f: [m for m in members if not only or m[0] in only]
        for f, members in families(late=args.late).items()
    }
    fams = {f: m for f, m in fams.items() if m}
    jobs = [
        (name, R, d, seed, p)
        for members in fams.values()
        for name, R, deadlines in members
        for d in deadlines
        for p in POLICIES
        for seed in range(args.seeds)
    ]
    with multiprocessing.get_context("fork").Pool(max(1, min(args.processes, 2))) as pool:
        rows = pool.map(run_cell, jobs, chunksize=4)
    runs: dict[tuple, dict[int, tuple[float, float]]] = {}
    for name, deadline, policy, seed, best, oracle in rows:
        runs.setdefault((name, deadline, policy), {})[seed] = (best, oracle)
    mean = {k: float(np.mean([r[0] for r in v.values()])) for k, v in runs.items()}
    oracle = {(k[0], k[1]): float(np.mean([r[1] for r in v.values()])) for k, v in runs.items()}
    print(f"\nmean best of {args.seeds} seeds on the new half; the prior is the other half")
    misses, table = [], []
    for family, members in fams.items():
        print(f"\n## {family}")
        print(f"{'trace':>16} {'deadline':>9} {'+prior':>8} {'none':>8} {'best bl':>8} "
              f"{'oracle':>7} {'margin':>7} {'± se':>6} {'none m.':>7}")  # fmt: skip
        for name, _, deadlines in members:
            for k, d in enumerate(deadlines):
                baseline = max(BASELINES, key=lambda p, d=d, name=name: mean[name, d, p])
                best = mean[name, d, baseline]
                with_, without = mean[name, d, WITH], mean[name, d, WITHOUT]
                margin = with_ - best
                se = paired_error(runs[name, d, WITH], runs[name, d, baseline])
                target = not family.startswith("synthetic")
                flag = "" if margin >= -0.005 else "  MISS" if target else "  below"
                if flag and target:
                    misses.append(f"{name} at {d:.4g}: {margin:+.4f}")
                label = _label(family, k)
                table.append((name, label, with_ - best, se, without - best))
                print(f"{name:>16} {label:>9} {with_:>8.4f} {without:>8.4f} {best:>8.4f} "
                      f"{oracle[name, d]:>7.4f} {margin:>+7.4f} {se:>6.4f} "
                      f"{without - best:>+7.4f}{flag}")  # fmt: skip
        print(f"\n{family}: share of asha's gap to the oracle closed, pooled (+prior / none)")
        for k in range(len(members[0][2])):
            gaps = sum(oracle[n, ds[k]] - mean[n, ds[k], "asha"] for n, _, ds in members)
            shares = [
                sum(mean[n, ds[k], p] - mean[n, ds[k], "asha"] for n, _, ds in members) / gaps
                if gaps > 0
                else float("nan")
                for p in (WITH, WITHOUT)
            ]
            print(f"  {_label(family, k):>10}: {shares[0]:.2f} / {shares[1]:.2f}")
    print(f"\ncells below the best baseline - 0.005 with the prior: {len(misses)}")
    for miss in misses:
        print(f"  {miss}")
    if args.markdown:
        print("\n| trace | deadline | +prior − best | ± se | none − best |\n|---|---|---|---|---|")
        for name, label, a, se, b in table:
            print(f"| {name} | {label} | {a:+.4f} | {se:.4f} | {b:+.4f} |")


def paired_error(ours: dict, theirs: dict) -> float:
    """The standard error of the mean of the per-seed differences (each seed searches the
    same offers under both policies), so a margin reads against its noise."""
    diffs = [ours[s][0] - theirs[s][0] for s in ours]
    return float(np.std(diffs, ddof=1) / np.sqrt(len(diffs))) if len(diffs) > 1 else float("nan")


def _label(family: str, k: int) -> str:
    return f"{LCBENCH_DEADLINES[k]:g} s" if family.startswith("LCBench") else f"{FRACTIONS[k]:g}x"


if __name__ == "__main__":
    main()
