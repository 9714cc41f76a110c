"""The targets of ``hypersched``: best-by-deadline against asha, hyperband and random.

    python benchmarks/hypersched_targets.py [--seeds 10] [--processes 2] [--late]
        [--policies hypersched,hypersched-paper,asha,hyperband,random] [--params JSON]
        [--early-signal auto|trust|doubt] [--markdown]

Settings: 8 workers, the trace's sidecar scaling and start-up cost, 100
offered configurations, r = 1, η = 4, seeds 0 … K−1.

- The six shared LCBench traces (``../shared/traces``), R = 52, deadlines 900 / 1800 /
  3600 / 7200 trace seconds.
- The traces recorded into ``hypersched_nb/traces/`` (digits-cnn, mnist1d-cnn, …), R = the
  longest curve, deadlines ¼, ½, 1 and 2 × the median time to train one configuration fully
  on one worker (``Trace.median_full_time``).
- With ``--late``: a synthetic trace of the paper's regime, not a target — a step decay of
  the learning rate at 60 % of R lets the configurations that looked worst early finish
  best (late rank changes), 90 s epochs; built here from a fixed seed.

Printed per trace: the mean best of every policy at every deadline, the oracle, and the
margin of ``hypersched`` over the best of asha / hyperband / random (target: >= −0.005 in
every cell); then per family and deadline the pooled share of ASHA's gap to the oracle that
``hypersched`` closes, Σ(hypersched − asha) / Σ(oracle − asha) (target: >= 0.5 at the two
shortest deadlines). Traces that cannot be found are skipped with a note. ``--early-signal``
is ``hypersched``'s option (default ``"auto"``); ``--markdown`` ends with the margins as one
table, a row per trace and a column per deadline, and a summary line per family.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
from pathlib import Path

import numpy as np

from hypersched_nb.core.policies import REGISTRY
from hypersched_nb.core.scaling import ScalingCurve
from hypersched_nb.errors import TraceFormatError
from hypersched_nb.experiment.simulate import SimSettings, simulate
from hypersched_nb.sim.trace import Trace, load_trace

SHARED = tuple(f"lcbench-{t}" for t in (126026, 167152, 167181, 167190, 168910, 189909))
LCBENCH_DEADLINES = (900.0, 1800.0, 3600.0, 7200.0)
FRACTIONS = (0.25, 0.5, 1.0, 2.0)
OWN = Path(__file__).resolve().parent.parent / "hypersched_nb" / "traces"
BASELINES = ("asha", "hyperband", "random")
TARGET_POLICY = "hypersched"

_TRACES: dict[str, Trace] = {}


def late_bloomer_trace(configs: int = 200, epochs: int = 52, seed: int = 7) -> Trace:
    """The paper's regime in miniature: before a step decay at 60 % of R, low learning rates
    look best; after it, high ones (up to ~0.1) finish best. Some diverge, some never learn."""
    rng = np.random.default_rng(seed)
    metrics, seconds, params = {}, {}, {}
    step = int(0.6 * epochs)
    e = np.arange(1, epochs + 1)
    for c in range(configs):
        x = rng.uniform(-3.5, -0.5)  # log10 learning rate
        pre = max(0.15, 0.72 - 0.06 * (x + 2.5) ** 2 + 0.03 * rng.normal())
        post = max(0.15, 0.83 - 0.08 * (x + 1.2) ** 2 + 0.01 * rng.normal())
        tau = 2 + 6 / (1 + 30 * 10**x)
        m = pre * (1 - np.exp(-e / tau)) + 0.1
        m = m + (e > step) * (post - pre) * (1 - np.exp(-(e - step) / 2.0))
        m = m + rng.normal(0, 0.005 + 0.02 * min(1.0, 5 * 10**x) * (e <= step))
        if rng.random() < 0.08:  # never learns
            m = 0.1 + rng.normal(0, 0.005, epochs)
        length = epochs
        if x > np.log10(0.25) and rng.random() < 0.5:  # diverges
            length = int(rng.integers(3, 20))
            m[length - 1] = np.nan
        metrics[c] = np.clip(m[:length], 0, 1)
        seconds[c] = rng.normal(90, 5) * (1 + 0.02 * rng.normal(size=length))
        params[c] = {"lr": float(10**x)}
    return Trace(
        name="synthetic-late",
        ids=tuple(range(configs)),
        metrics=metrics,
        seconds=seconds,
        params=params,
        scaling=ScalingCurve({2: 1.87, 4: 3.42, 8: 5.6}),
        startup_seconds=20.0,
    )


def trace(name: str) -> Trace:
    if name not in _TRACES:
        _TRACES[name] = late_bloomer_trace() if name == "synthetic-late" else load_trace(name)
    return _TRACES[name]


def run_cell(job: tuple) -> tuple:
    name, max_epochs, deadline, seed, policy, params, early_signal = job
    settings = SimSettings(
        workers=8, configs=100, max_epochs=max_epochs, min_epochs=1, eta=4,
        early_signal=early_signal,
    )  # fmt: skip
    run = simulate(trace(name), policy, deadline, seed, settings, policy_params=params).record
    return name, deadline, policy, run.best, run.oracle, run.trials_started


def families(late: bool) -> dict[str, list[tuple[str, int, tuple[float, ...]]]]:
    """Family -> [(trace name, R, deadlines)] for the traces that can be found."""
    out: dict[str, list] = {"LCBench (shared)": [], "recorded (hypersched_nb/traces)": []}
    for name in SHARED:
        try:
            trace(name)
        except TraceFormatError:
            print(f"note: {name} not found (needs ../shared/traces): skipped")
            continue
        out["LCBench (shared)"].append((name, 52, LCBENCH_DEADLINES))
    for path in sorted(OWN.glob("*.csv")):
        t = trace(path.stem)
        out["recorded (hypersched_nb/traces)"].append(
            (path.stem, t.longest, tuple(f * t.median_full_time(t.longest) for f in FRACTIONS))
        )
    if late:
        t = trace("synthetic-late")
        deadlines = tuple(f * t.median_full_time(t.longest) for f in FRACTIONS)
        out["synthetic late rank changes (not a target)"] = [
            ("synthetic-late", t.longest, deadlines)
        ]
    return {k: v for k, v in out.items() if v}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--processes", type=int, default=2, help="at most 2 on a shared machine")
    parser.add_argument(
        "--policies", default=",".join((TARGET_POLICY, "hypersched-paper", *BASELINES))
    )
    parser.add_argument("--params", default="{}", help="JSON keywords for hypersched")
    parser.add_argument("--late", action="store_true", help="add the synthetic late-bloomer trace")
    parser.add_argument("--early-signal", default="auto", choices=("auto", "trust", "doubt"))
    parser.add_argument("--markdown", action="store_true", help="end with a table of margins")
    args = parser.parse_args()
    policies = [p for p in args.policies.split(",") if p in REGISTRY]
    params = json.loads(args.params)
    fams = families(args.late)
    jobs = [
        (name, R, d, seed, p, params if p == TARGET_POLICY else {}, args.early_signal)
        for members in fams.values()
        for name, R, deadlines in members
        for d in deadlines
        for p in policies
        for seed in range(args.seeds)
    ]
    with multiprocessing.get_context("fork").Pool(max(1, min(args.processes, 2))) as pool:
        rows = pool.map(run_cell, jobs, chunksize=4)
    runs: dict[tuple, list] = {}
    for name, deadline, policy, best, oracle, started in rows:
        runs.setdefault((name, deadline, policy), []).append((best, oracle, started))
    mean = {k: np.mean([r[0] for r in v]) for k, v in runs.items()}
    oracle = {(k[0], k[1]): np.mean([r[1] for r in v]) for k, v in runs.items()}
    started = {k: np.mean([r[2] for r in v]) for k, v in runs.items()}
    baselines = [p for p in BASELINES if p in policies]
    print(f"\nmean best of {args.seeds} seeds (trials started); 8 workers, 100 configs, r=1, eta=4")
    if params or args.early_signal != "auto":
        print(f"hypersched parameters: {params}, early_signal={args.early_signal!r}")
    misses = []
    margins: dict[str, list[float]] = {}  # trace -> margin at each of its deadlines
    for family, members in fams.items():
        print(f"\n## {family}")
        for name, R, deadlines in members:
            print(f"\n{name} (R={R})")
            print(
                f"{'deadline':>9} "
                + " ".join(f"{p:>17}" for p in policies)
                + f" {'oracle':>7} {'margin':>7}"
            )
            for d in deadlines:
                cells = " ".join(
                    f"{mean[name, d, p]:>10.4f} ({started[name, d, p]:>3.0f})" for p in policies
                )
                margin = mean[name, d, TARGET_POLICY] - max(mean[name, d, p] for p in baselines)
                margins.setdefault(name, []).append(margin)
                flag = "" if margin >= -0.005 else "  MISS"
                if flag and "not a target" not in family:
                    misses.append(f"{name} at {d:.4g}: {margin:+.4f}")
                print(f"{d:>9.4g} {cells} {oracle[name, d]:>7.4f} {margin:>+7.4f}{flag}")
        if "asha" in policies:
            print(
                f"\n{family}: share of asha's gap to the oracle closed by {TARGET_POLICY}, pooled"
            )
            for k in range(len(members[0][2])):
                gains = sum(
                    mean[n, ds[k], TARGET_POLICY] - mean[n, ds[k], "asha"] for n, _, ds in members
                )
                gaps = sum(oracle[n, ds[k]] - mean[n, ds[k], "asha"] for n, _, ds in members)
                label = (
                    f"{LCBENCH_DEADLINES[k]:g} s"
                    if family.startswith("LCBench")
                    else f"{FRACTIONS[k]:g} x full"
                )
                ratio = gains / gaps if gaps > 0 else float("nan")
                print(f"  {label:>10}: {gains:+.4f} / {gaps:.4f} = {ratio:.2f}")
    print(f"\ncells below max({', '.join(baselines)}) - 0.005: {len(misses)}")
    for line in misses:
        print(f"  {line}")
    if args.markdown:
        print_markdown(fams, margins)


def print_markdown(fams: dict, margins: dict[str, list[float]]) -> None:
    """The margins as a markdown table (bold: below −0.005) and a line per family."""
    print("\n| trace | deadlines | margin at each |\n|---|---|---|")
    for members in fams.values():
        for name, _, deadlines in members:
            cells = " ".join(f"**{m:+.3f}**" if m < -0.005 else f"{m:+.3f}" for m in margins[name])
            when = " / ".join(f"{d:.4g}" for d in deadlines)
            print(f"| {name} | {when} s | {cells} |")
    for family, members in fams.items():
        cells = [m for name, _, _ in members for m in margins[name]]
        held = sum(m >= -0.005 for m in cells)
        print(f"\n{family}: {held} of {len(cells)} cells >= -0.005, worst {min(cells):+.3f}")


if __name__ == "__main__":
    main()
