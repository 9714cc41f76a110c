"""`asha` through hypersched_nb's driver against an independent ASHA simulation.

    python benchmarks/asha_vs_independent.py [--traces ../shared/traces] [--seeds 10]
        [--workers 8] [--configs 100] [--deadlines 900,1800,3600,7200] [--eta 4]

The independent side shares no code with the package: it reads the trace CSV itself and runs
a plain event loop in the manner of Syne Tune's simulator (a heap of epoch-end times, one
entry per busy worker; a free worker takes the next offered configuration) with Ray Tune's
rung rule written out again (rungs r·η^k; on the first newly passed rung, stop when the
score is strictly below the (1 − 1/η) percentile of the values recorded there, NaN ignored;
a finished trial's last result is recorded as Ray's ``on_trial_complete`` does). Both sides
use no start-up cost, 1 worker per trial, R = the longest curve, r = 1, and the same offered
configurations per seed (seed s: ``numpy.random.default_rng(s).permutation(ids)[:configs]``,
the benchmark's draw, checked against the package below).

Prints, per trace and deadline, the mean best-by-deadline of both over the seeds and their
difference. Target: |difference| <= 0.01 everywhere.
"""

from __future__ import annotations

import argparse
import heapq
import math
from pathlib import Path

import numpy as np
import pandas as pd

TARGET = 0.01


# ------------------------------------------------------------------ the independent side


def read_curves(csv: Path) -> tuple[list[int], dict[int, np.ndarray], dict[int, np.ndarray], str]:
    """(ids, metrics per id, seconds per id, mode) straight from the CSV and its sidecar."""
    df = pd.read_csv(csv).sort_values(["trial", "epoch"])
    metrics = {int(t): g["metric"].to_numpy(float) for t, g in df.groupby("trial")}
    seconds = {int(t): g["seconds"].to_numpy(float) for t, g in df.groupby("trial")}
    sidecar = csv.with_suffix(".json")
    mode = pd.read_json(sidecar, typ="series").get("mode", "max") if sidecar.exists() else "max"
    return sorted(metrics), metrics, seconds, mode


def offered(ids: list[int], configs: int, seed: int) -> list[int]:
    return [int(i) for i in np.random.default_rng(seed).permutation(np.array(ids))[:configs]]


def rung_levels(R: int, r: int, eta: float) -> list[float]:
    """Highest first, as Ray's bracket 0: (R=10, r=1, η=2) -> [8, 4, 2, 1]."""
    k = int(math.log(R / r) / math.log(eta) + 1)
    return [r * eta**i for i in range(k - 1, -1, -1)]


def rung_stops(levels, seen, q: float, config: int, epoch: int, score: float) -> bool:
    """Ray's rung rule: records ``score`` at the first rung ``config`` reaches and has not
    been judged at; True means stop."""
    for level, rung in zip(levels, seen, strict=True):
        if epoch < level or config in rung:
            continue
        peers = [v for v in rung.values() if not math.isnan(v)]
        cutoff = np.percentile(peers, q) if peers else None
        rung[config] = score
        return cutoff is not None and score < cutoff
    return False


def asha_event_loop(order, metrics, seconds, *, workers, R, r, eta, sign, horizon):
    """Every result (time, metric) of one ASHA search in time order, up to ``horizon``, and
    the times at which configurations started."""
    levels = rung_levels(R, r, eta)
    seen: list[dict[int, float]] = [{} for _ in levels]  # rung -> {trial: score}
    q = 100 * (1 - 1 / eta)
    events: list[tuple[float, int, int, int]] = []  # (epoch end, sequence, config, epoch)
    queue = iter(order)
    results: list[tuple[float, float]] = []
    starts: list[float] = []
    seq = 0

    def launch(now: float, config: int | None, epoch: int) -> None:
        nonlocal seq
        if config is None:
            config = next(queue, None)
            if config is None:
                return  # no configuration left: the worker stays idle
            starts.append(now)
        seq += 1
        heapq.heappush(events, (now + seconds[config][epoch - 1], seq, config, epoch))

    for _ in range(workers):
        launch(0.0, None, 1)
    while events:
        now, _, config, epoch = heapq.heappop(events)
        if now > horizon:
            break
        metric = metrics[config][epoch - 1]
        results.append((now, metric))
        last = epoch >= R or epoch >= len(metrics[config])
        if not math.isfinite(metric):
            launch(now, None, 1)  # diverged: stopped
        elif last:  # recorded on completion, as Ray does
            rung_stops(levels, seen, q, config, epoch, sign * metric)
            launch(now, None, 1)
        elif rung_stops(levels, seen, q, config, epoch, sign * metric):
            launch(now, None, 1)  # stopped at a rung
        else:
            launch(now, config, epoch + 1)
    return results, starts


def best_by(results, deadline: float, sign: float) -> float:
    reached = [sign * m for t, m in results if t <= deadline and math.isfinite(m)]
    return sign * max(reached) if reached else math.nan


# ------------------------------------------------------------------ the comparison


def compare(csv: Path, args) -> list[tuple[float, float, float, float, float, int]]:
    """Per deadline: the mean best of the package and of the independent loop, their mean
    trials started, and in how many seeds the two bests are identical."""
    from hypersched_nb.experiment.simulate import SimSettings, simulate
    from hypersched_nb.sim.runtime import offers
    from hypersched_nb.sim.trace import TRACE_KEY, load_trace

    ids, metrics, seconds, mode = read_curves(csv)
    sign = 1.0 if mode == "max" else -1.0
    R = max(len(m) for m in metrics.values())
    trace = load_trace(csv)
    settings = SimSettings(workers=args.workers, configs=args.configs, startup=0.0, eta=args.eta)
    ours = {d: [] for d in args.deadlines}
    theirs = {d: [] for d in args.deadlines}
    started = {d: ([], []) for d in args.deadlines}
    for seed in range(args.seeds):
        order = offered(ids, args.configs, seed)
        assert order == [c[TRACE_KEY] for c in offers(trace, args.configs, seed)], "offers differ"
        results, starts = asha_event_loop(
            order,
            metrics,
            seconds,
            workers=args.workers,
            R=R,
            r=1,
            eta=args.eta,
            sign=sign,
            horizon=max(args.deadlines),
        )
        for d in args.deadlines:
            run = simulate(trace, "asha", d, seed, settings).record
            ours[d].append(run.best)
            theirs[d].append(best_by(results, d, sign))
            started[d][0].append(run.trials_started)
            started[d][1].append(sum(t < d for t in starts))  # the driver starts nothing at D
    return [
        (
            d,
            np.mean(ours[d]),
            np.mean(theirs[d]),
            *map(np.mean, started[d]),
            sum(a == b for a, b in zip(ours[d], theirs[d], strict=True)),
        )
        for d in args.deadlines
    ]


def main() -> int:
    here = Path(__file__).resolve().parent
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--traces", type=Path, default=here.parent.parent / "shared" / "traces")
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--configs", type=int, default=100)
    p.add_argument("--eta", type=float, default=4)
    p.add_argument("--deadlines", default="900,1800,3600,7200")
    args = p.parse_args()
    args.deadlines = [float(d) for d in args.deadlines.split(",")]
    csvs = sorted(args.traces.glob("lcbench-*.csv"))
    if not csvs:
        print(f"no lcbench-*.csv in {args.traces} (the shared traces are not in a fresh clone)")
        return 1
    print(
        f"ASHA, {args.workers} workers, {args.configs} configs, r=1 eta={args.eta:g}, "
        f"no start-up cost, {args.seeds} seeds: mean best by the deadline"
    )
    print(
        f"{'trace':16} {'deadline':>8} {'package':>9} {'independent':>11} {'difference':>10}"
        f" {'same best':>9} {'started (package/independent)':>30}"
    )
    worst = 0.0
    for csv in csvs:
        for d, ours, theirs, s_ours, s_theirs, same in compare(csv, args):
            worst = max(worst, abs(ours - theirs))
            print(
                f"{csv.stem:16} {d:8g} {ours:9.4f} {theirs:11.4f} {ours - theirs:+10.4f}"
                f" {same:>5}/{args.seeds:<3} {s_ours:18.1f} / {s_theirs:.1f}"
            )
    verdict = "meets" if worst <= TARGET else "MISSES"
    print(f"largest |difference| {worst:.4f}: {verdict} the target of {TARGET}")
    return 0 if worst <= TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
