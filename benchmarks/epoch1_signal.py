"""What epoch 1 says about the final metric, per trace: why no rule that acts on epoch 1
alone can serve every trace family (``hypersched``'s rule 2 waits for evidence instead).

    python benchmarks/epoch1_signal.py [--traces NAME,...] [--top 0.1]

For every trace (the six shared LCBench traces when ``../shared/traces`` is there, and
every trace recorded into ``hypersched_nb/traces/``), over all its configurations:

- the Spearman rank correlation of the epoch-1 metric with the final one (the best over
  the curve; a diverged curve's NaN counts as the worst value), and of epoch η·r = 4's;
- where the best ``--top`` share of final configurations rank at epoch 1 (percentiles,
  100 = best at epoch 1), and how many of them ASHA's first rung would keep (the top 1/η =
  25 % at epoch 1, η = 4, judged against all configurations).

A family whose best finals sit at the top of epoch 1 wants pruning at epoch 1 from the
start; one whose best finals sit at the bottom is hurt by it. Telling the two apart takes
the epochs that the deadline may not have.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from scipy.stats import rankdata, spearmanr

from hypersched_nb.errors import TraceFormatError
from hypersched_nb.sim.trace import Trace, load_trace

SHARED = tuple(f"lcbench-{t}" for t in (126026, 167152, 167181, 167190, 168910, 189909))
OWN = Path(__file__).resolve().parent.parent / "hypersched_nb" / "traces"
ETA = 4


def scores(trace: Trace, epoch: int | None) -> np.ndarray:
    """Per configuration: the metric at ``epoch`` (None: the best of the curve), larger is
    better, NaN (diverged, or the curve ended before ``epoch``) as the worst."""
    sign = 1.0 if trace.mode == "max" else -1.0
    out = []
    for t in trace.ids:
        curve = sign * np.asarray(trace.metrics[t], dtype=float)
        if epoch is None:
            value = np.nanmax(curve) if np.isfinite(curve).any() else np.nan
        else:
            value = curve[epoch - 1] if len(curve) >= epoch else np.nan
        out.append(value)
    values = np.array(out)
    return np.where(np.isfinite(values), values, -np.inf)


def row(trace: Trace, top: float) -> str:
    first, fourth, final = scores(trace, 1), scores(trace, ETA), scores(trace, None)
    pct = 100 * (rankdata(first) - 0.5) / len(first)
    best = np.argsort(-final, kind="stable")[: max(1, round(top * len(final)))]
    kept = int(np.sum(pct[best] >= 100 * (1 - 1 / ETA)))
    p10, p50, p90 = np.percentile(pct[best], [10, 50, 90])
    return (
        f"| {trace.name} | {spearmanr(first, final).statistic:+.2f} | "
        f"{spearmanr(fourth, final).statistic:+.2f} | {p10:.0f} / {p50:.0f} / {p90:.0f} | "
        f"{kept} of {len(best)} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", default=None, help="comma-separated names or paths")
    parser.add_argument("--top", type=float, default=0.1, help="share of best finals to place")
    args = parser.parse_args()
    names = (
        args.traces.split(",")
        if args.traces
        else [*SHARED, *sorted(p.stem for p in OWN.glob("*.csv"))]
    )
    print(
        f"| trace | ρ(epoch 1, final) | ρ(epoch {ETA}, final) | best {args.top:.0%} of finals: "
        f"epoch-1 percentile p10 / p50 / p90 | kept by ASHA's epoch-1 cut |"
    )
    print("|---|---|---|---|---|")
    for name in names:
        try:
            trace = load_trace(name)
        except TraceFormatError:
            print(f"note: {name} not found (the shared ones need ../shared/traces): skipped")
            continue
        print(row(trace, args.top))


if __name__ == "__main__":
    main()
