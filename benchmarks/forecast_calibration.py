"""Is the forecast calibrated, and fast enough? (issue 12's targets)

    python benchmarks/forecast_calibration.py [--traces digits-cnn,mnist1d-cnn,lcbench-126026,...]
                                              [--seeds 10] [--runs 32] [--policy hypersched]
                                              [--workers 8] [--jobs 2] [--prior-split]

On each trace (digits-cnn, digits-mlp, mnist1d-cnn, mnist1d-cosine and the LCBench traces of
``../shared/traces``; an absent one is skipped with a note), for seeds 0-9, a simulated search with deadline D (the
trace's median time to train one configuration fully on one worker) on ``--workers``
workers is stopped at D/4 and at D/2; there the forecast of the best by D is made for the
same workers and for twice as many, and compared with what really happened:

- the search run on to D (same workers), and the same search given twice the workers from
  the forecast's moment on (the same up to there: a seed's search is deterministic).
- Calibration: the 10-90 % interval covers the real best in 70-90 % of the runs, pooled;
  the mean absolute error of the point forecast (the expected best) is at most half that
  of the naive forecast "the best so far stays the best".
- Speed: a forecast of 4 deadlines x 3 worker counts x 32 runs from D/2 of the first trace,
  fastest of 3 (target <= 2 s on the 2-core machine), and its ratio to the simulator's own
  speed: the time of one forecast run over that of one whole simulated search to D.

``--prior-split`` (issue 30): each trace is split by ``split_halves(trace, seed=s)`` into a
past half (the prior) and a new half; the search runs on the new half's configurations,
and at D/2 the forecast of the best by D (same workers) is made twice, without and with
``prior=`` the past half, and scored as above, side by side, per trace and pooled.
``--prior-from-next`` gives it instead the past half of another trace of its group (the
next one listed): a prior of another model, to see what a wrong prior costs.
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import hypersched_nb
from hypersched_nb.core.events import ScaleCluster, WorkersChanged
from hypersched_nb.core.policies import create
from hypersched_nb.experiment.driver import Driver
from hypersched_nb.experiment.forecast import Outlook, detach, forecast, offers_left
from hypersched_nb.experiment.simulate import SimSettings, simulate
from hypersched_nb.sim.clock import VirtualClock
from hypersched_nb.sim.runtime import SimRuntime, offers
from hypersched_nb.sim.trace import Trace, find_trace, load_trace, split_halves

DEFAULT_TRACES = ("digits-cnn", "digits-mlp", "mnist1d-cnn", "mnist1d-cosine") + tuple(
    f"lcbench-{task}" for task in (126026, 167152, 167181, 167190, 168910, 189909)
)
FRACTIONS = (0.25, 0.5)
#: where the traces shipped with the package lie (the rest: $HYPERSCHED_TRACES, ../shared)
SHIPPED = Path(hypersched_nb.__file__).resolve().parent / "traces"


class PausedAt:
    """The simulator, halted once at time ``at``: ``on_pause(driver)`` runs there, between
    two of the driver's turns; then the cluster becomes ``workers_after`` workers (if set)."""

    def __init__(self, inner: SimRuntime, at: float, on_pause=None, workers_after=None):
        self.inner, self.at, self.on_pause, self.workers_after = inner, at, on_pause, workers_after
        self.driver: Driver | None = None

    def workers(self) -> int:
        return self.inner.workers()

    def execute(self, instruction) -> None:
        self.inner.execute(instruction)

    def advance(self, until: float):
        if self.at is None or until < self.at:
            return self.inner.advance(until)
        events = self.inner.advance(self.at)
        if events:
            return events
        self.at = None  # the clock stands at the pause, and nothing happened before it
        if self.on_pause is not None:
            self.on_pause(self.driver)
        if self.workers_after is None:
            return []
        self.inner.execute(ScaleCluster(self.workers_after))
        return [WorkersChanged(self.inner.clock.now(), self.workers_after)]


@dataclass(frozen=True, slots=True)
class Case:
    trace: str
    seed: int
    fraction: float
    workers: int
    runs: int
    policy: str
    prior_split: bool = False
    prior_from: str = ""  # the trace whose past half is the prior ("": this one's)


@dataclass(frozen=True, slots=True)
class Checked:
    """One case: the forecasts for the same and for twice the workers, the best at the
    moment of the forecast, and the real bests by the deadline."""

    case: Case
    same: Outlook
    double: Outlook
    best_then: float
    real_same: float
    real_double: float


def deadline_of(trace: Trace) -> float:
    return trace.median_full_time()


def search(trace: Trace, case: Case, *, workers_after=None, on_pause=None) -> float:
    """A simulated search to the deadline, halted at ``fraction`` of it: its best."""
    deadline = deadline_of(trace)
    clock = VirtualClock()
    inner = SimRuntime(trace, clock, case.workers, max_workers=2 * case.workers)
    runtime = PausedAt(inner, case.fraction * deadline, on_pause, workers_after)
    policy = create(case.policy, max_epochs=trace.longest, seed=case.seed)
    stream = iter(offers(trace, SimSettings().configs, case.seed))
    driver = Driver(
        policy, runtime, clock, stream, deadline=deadline, max_epochs=trace.longest,
        mode=trace.mode, scaling=trace.scaling,
    )  # fmt: skip
    runtime.driver = driver
    return driver.run().best


def check(case: Case) -> Checked | Split:
    if case.prior_split:
        return check_split(case)
    trace = load_trace(case.trace)
    seen = {}

    def look(driver: Driver) -> None:
        now = driver.clock.now()
        standing = detach(driver, now=now, offers_left=offers_left(driver._inputs.offers))
        seen["forecast"] = forecast(
            standing, workers=[case.workers, 2 * case.workers], runs=case.runs, seed=case.seed
        )
        seen["best"] = driver.outcome.best

    real_same = search(trace, case, on_pause=look)
    real_double = search(trace, case, workers_after=2 * case.workers)
    same, double = seen["forecast"].outlooks
    return Checked(case, same, double, seen["best"], real_same, real_double)


@dataclass(frozen=True, slots=True)
class Split:
    """One case of ``--prior-split``: the forecasts without and with the past half as the
    prior, the best at the moment of the forecast, and the real best by the deadline (the
    same for both: ``real_plain`` and ``real_prior``, as :func:`summary` reads them)."""

    case: Case
    plain: Outlook
    prior: Outlook
    best_then: float
    real_plain: float
    real_prior: float


def check_split(case: Case) -> Split:
    past, new = split_halves(load_trace(case.trace), seed=case.seed)
    if case.prior_from:  # a prior of another model: the past half of another trace
        past = split_halves(load_trace(case.prior_from), seed=case.seed)[0]
    seen = {}

    def look(driver: Driver) -> None:
        standing = detach(
            driver, now=driver.clock.now(), offers_left=offers_left(driver._inputs.offers)
        )
        for key, prior in (("plain", None), ("prior", past)):
            asked = forecast(
                standing, workers=[case.workers], runs=case.runs, seed=case.seed, prior=prior
            )
            seen[key] = asked.outlooks[0]
        seen["best"] = driver.outcome.best

    real = search(new, case, on_pause=look)
    return Split(case, seen["plain"], seen["prior"], seen["best"], real, real)


def summary(
    rows: list[Checked], pick: str, point: str = "expected"
) -> tuple[float, float, float, float, int]:
    """(coverage, forecast MAE, naive MAE, ratio, n) for the same (``pick`` = "same") or
    the doubled workers."""
    outlooks = [getattr(r, pick) for r in rows]
    real = np.array([getattr(r, f"real_{pick}") for r in rows])
    ok = np.isfinite(real) & np.array([np.isfinite(o.expected) for o in outlooks])
    real = real[ok]
    outlooks = [o for o, keep in zip(outlooks, ok, strict=True) if keep]
    then = np.array([r.best_then for r in rows])[ok]
    low = np.array([o.p10 for o in outlooks])
    high = np.array([o.p90 for o in outlooks])
    point = np.array([getattr(o, point) for o in outlooks])
    coverage = float(np.mean((low <= real) & (real <= high)))
    mae = float(np.mean(np.abs(point - real)))
    naive = float(np.nanmean(np.abs(np.where(np.isfinite(then), then, point) - real)))
    return coverage, mae, naive, mae / naive if naive > 0 else float("nan"), int(ok.sum())


def speed(trace_name: str, workers: int, policy: str, repeat: int = 3) -> tuple[float, float]:
    """(seconds of the fastest 4 x 3 x 32 forecast from D/2, time of one forecast run over
    one whole simulated search)."""
    trace = load_trace(trace_name)
    deadline = deadline_of(trace)
    case = Case(trace_name, 0, 0.5, workers, 32, policy)
    times = []

    def look(driver: Driver) -> None:
        standing = detach(
            driver, now=driver.clock.now(), offers_left=offers_left(driver._inputs.offers)
        )
        for _ in range(repeat):
            t0 = time.perf_counter()
            forecast(
                standing, deadlines=[d * deadline for d in (0.75, 1.0, 1.5, 2.0)],
                workers=[workers // 2, workers, 2 * workers], runs=32,
            )  # fmt: skip
            times.append(time.perf_counter() - t0)

    search(trace, case, on_pause=look)
    settings = SimSettings(workers=workers)
    sims = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        simulate(trace, policy, deadline, 0, settings)
        sims.append(time.perf_counter() - t0)
    best = min(times)
    return best, (best / (4 * 3 * 32)) / min(sims)


def available(names: list[str]) -> list[str]:
    found = []
    for name in names:
        try:
            find_trace(name)
        except Exception:  # noqa: BLE001 - any lookup failure means: skip it
            print(f"note: trace {name} is absent; skipped")
            continue
        found.append(name)
    return found


def run_cases(doc: str, work, *, policy: str | None = None):
    """Parse the command line (``--policy`` unless ``policy`` is fixed), run ``work`` on
    every (trace, seed, fraction) case on at most 2 processes; (args, traces, results)."""
    p = argparse.ArgumentParser(description=doc.split("\n")[0])
    p.add_argument("--traces", default=",".join(DEFAULT_TRACES))
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--runs", type=int, default=32)
    if policy is None:
        p.add_argument("--policy", default="hypersched")
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    if policy is None:
        p.add_argument("--prior-split", action="store_true", help="score the forecast with a prior")
        p.add_argument(
            "--prior-from-next", action="store_true",
            help="with --prior-split: the prior from the next trace of its group (a wrong prior)",
        )  # fmt: skip
    args = p.parse_args()
    args.policy = policy or args.policy
    split = getattr(args, "prior_split", False)
    traces = available(args.traces.split(","))
    other = next_in_group(traces) if getattr(args, "prior_from_next", False) else {}
    cases = [
        Case(t, s, f, args.workers, args.runs, args.policy, split, other.get(t, ""))
        for t in traces
        for s in range(args.seeds)
        for f in ((0.5,) if split else FRACTIONS)
    ]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=max(1, min(args.jobs, 2))) as pool:
        rows = list(pool.map(work, cases))
    print(f"{len(cases)} cases on {len(traces)} traces in {time.perf_counter() - t0:.0f} s\n")
    return args, traces, rows


def main() -> None:
    args, traces, rows = run_cases(__doc__, check)
    if args.prior_split:
        split_table(traces, rows)
        return
    print("trace              workers  coverage (70-90%)  MAE / naive MAE (<= 0.5): mean, median")
    for name in [*traces, "pooled"]:
        mine = [r for r in rows if name in ("pooled", r.case.trace)]
        for pick, k in (("same", args.workers), ("double", 2 * args.workers)):
            cov, mae, naive, ratio, n = summary(mine, pick)
            median_ratio = summary(mine, pick, "median")[3]
            print(
                f"{name:18s} {k:4d}     {cov:6.0%} of {n:<3d}      "
                f"{ratio:5.2f} ({mae:.4f} / {naive:.4f}), {median_ratio:5.2f}"
            )
    for f in FRACTIONS:
        mine = [r for r in rows if r.case.fraction == f]
        cov, _, _, ratio, n = summary(mine, "same")
        print(
            f"at {f:.2f} of the deadline, same workers: coverage {cov:.0%}, MAE ratio {ratio:.2f}"
        )
    seconds, ratio = speed(traces[-1], args.workers, args.policy)
    print(
        f"\nspeed on {traces[-1]}: 4 deadlines x 3 worker counts x 32 runs in {seconds:.2f} s "
        f"(target <= 2 s); one forecast run costs {ratio:.2f} x one whole simulated search"
    )


def next_in_group(traces: list[str]) -> dict[str, str]:
    """Each trace's neighbour in its group (shipped or not), in turn: its prior's source."""
    groups = [
        [t for t in traces if (find_trace(t).parent == SHIPPED) == shipped]
        for shipped in (True, False)
    ]
    return {a: b for group in groups for a, b in zip(group, group[1:] + group[:1], strict=True)}


def split_table(traces: list[str], rows: list[Split]) -> None:
    """Coverage and error ratio without and with the prior, per trace and pooled."""
    print("at 0.5 of the deadline, same workers      without prior       with the past half")
    print("trace              cases   coverage  MAE / naive     coverage  MAE / naive")
    shipped = {t for t in traces if find_trace(t).parent == SHIPPED}
    groups = {"shipped": shipped, "shared": set(traces) - shipped, "pooled": set(traces)}
    for name in [*traces, *groups]:
        mine = [r for r in rows if r.case.trace in groups.get(name, {name})]
        if not mine:
            continue
        plain, prior = summary(mine, "plain"), summary(mine, "prior")
        print(
            f"{name:18s} {plain[4]:4d}     {plain[0]:6.0%}    {plain[3]:5.2f}          "
            f"{prior[0]:6.0%}    {prior[3]:5.2f} ({prior[1]:.4f} / {prior[2]:.4f})"
        )


if __name__ == "__main__":
    main()
