"""How well the learning-curve model predicts the final metric, and how fast.

    python benchmarks/curve_prediction.py [--traces NAME,...] [--every 1] [--samples 200]

For every curve of every trace, the first 10 / 25 / 50 % of its epochs are shown to
:func:`hypersched_nb.core.curves.predict` (``horizon`` = the curve's length, bounds inferred
as the policies do: (0, 1) for a max-mode metric in [0, 1], (0, inf) for a non-negative
min-mode one). Printed per trace and prefix: the mean absolute error of the predicted mean
at the last epoch beside two baselines — the last value seen and the best so far — and the
share of final values inside the predicted central 80 % interval (nominal 0.80); then the
median and 90th-percentile milliseconds per prediction (target: median <= 10 ms).

Traces: the six shared LCBench traces (found by name as ``load_trace`` finds them: in
$HYPERSCHED_TRACES, ``hypersched_nb/traces/`` or ``../shared/traces``) and every trace
recorded into ``hypersched_nb/traces/``; names that cannot be found are skipped with a note.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

from hypersched_nb.core.curves import predict
from hypersched_nb.errors import TraceFormatError
from hypersched_nb.sim.trace import Trace, load_trace

SHARED = (
    "lcbench-126026",
    "lcbench-167152",
    "lcbench-167181",
    "lcbench-167190",
    "lcbench-168910",
    "lcbench-189909",
)
PREFIXES = (0.10, 0.25, 0.50)
OWN = Path(__file__).resolve().parent.parent / "hypersched_nb" / "traces"


def bounds_of(trace: Trace) -> tuple[float, float] | None:
    values = np.concatenate([m[np.isfinite(m)] for m in trace.metrics.values()])
    if trace.mode == "max":
        return (0.0, 1.0) if values.min() >= 0 and values.max() <= 1 else None
    return (0.0, math.inf) if values.min() >= 0 else None


def evaluate(trace: Trace, every: int, samples: int, rng, times: list[float]) -> list[dict]:
    sign = 1.0 if trace.mode == "max" else -1.0
    bounds = bounds_of(trace)
    rows = []
    for frac in PREFIXES:
        err, last, best, inside, n = [], [], [], [], 0
        for tid in trace.ids[::every]:
            curve = trace.metrics[tid]
            finite = curve[np.isfinite(curve)]
            length = len(finite)
            seen = max(1, round(frac * length))
            if length < 2 or seen >= length:
                continue
            final = finite[-1]
            t0 = time.perf_counter()
            pred = predict(
                np.arange(1, seen + 1),
                finite[:seen],
                length,
                mode=trace.mode,
                bounds=bounds,
                samples=samples,
                horizon=length,
                rng=rng,
            )
            times.append(time.perf_counter() - t0)
            lo, hi = np.quantile(pred.samples[:, 0], [0.1, 0.9])
            err.append(abs(pred.mean - final))
            last.append(abs(finite[seen - 1] - final))
            best.append(abs(sign * np.max(sign * finite[:seen]) - final))
            inside.append(lo <= final <= hi)
            n += 1
        if n:
            rows.append(
                {
                    "trace": trace.name,
                    "prefix": frac,
                    "curves": n,
                    "model": np.mean(err),
                    "last": np.mean(last),
                    "best": np.mean(best),
                    "cover80": np.mean(inside),
                }
            )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--traces", default=None, help="comma-separated names or paths (default: shared + own)"
    )
    parser.add_argument("--every", type=int, default=1, help="use every k-th curve of each trace")
    parser.add_argument("--samples", type=int, default=200, help="draws per prediction")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    names = (
        args.traces.split(",")
        if args.traces
        else [*SHARED, *sorted(str(p) for p in OWN.glob("*.csv"))]
    )
    rng = np.random.default_rng(args.seed)
    rows, times = [], []
    for name in names:
        try:
            trace = load_trace(name)
        except TraceFormatError as exc:
            print(f"skipped {name}: {exc}")
            continue
        rows += evaluate(trace, args.every, args.samples, rng, times)
    if not rows:
        print("no trace found")
        return
    print(
        f"{'trace':28s} {'prefix':>6s} {'curves':>6s} {'MAE model':>10s} {'last value':>10s} "
        f"{'best so far':>11s} {'model/last':>10s} {'80% cover':>9s}"
    )
    for r in rows:
        print(
            f"{r['trace']:28s} {r['prefix']:6.0%} {r['curves']:6d} {r['model']:10.4f} {r['last']:10.4f} "
            f"{r['best']:11.4f} {r['model'] / r['last']:10.2f} {r['cover80']:9.2f}"
        )
    for frac in PREFIXES:
        sel = [r for r in rows if r["prefix"] == frac]
        w = np.array([r["curves"] for r in sel], dtype=float)
        avg = {
            k: float(np.average([r[k] for r in sel], weights=w))
            for k in ("model", "last", "best", "cover80")
        }
        print(
            f"{'all traces':28s} {frac:6.0%} {int(w.sum()):6d} {avg['model']:10.4f} {avg['last']:10.4f} "
            f"{avg['best']:11.4f} {avg['model'] / avg['last']:10.2f} {avg['cover80']:9.2f}"
        )
    ms = np.array(times) * 1e3
    print(
        f"\n{len(ms)} predictions: median {np.median(ms):.2f} ms, 90th percentile "
        f"{np.percentile(ms, 90):.2f} ms per prediction (target: median <= 10 ms)"
    )


if __name__ == "__main__":
    main()
