"""``python -m hypersched_nb bench``: replay a trace under several policies.

The command and its JSON are a contract, described in docs/design.md.

Every (policy, deadline, seed) is one simulated search; seed s offers the same configurations
in the same order to every policy. Bad input is refused before anything runs, with one line
and exit code 2; a run that fails later ends the command with exit code 1 after the runs
already done are printed and written to ``--json``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from hypersched_nb.bench.table import format_table
from hypersched_nb.core.policies import check_early_signal, create, names
from hypersched_nb.core.scaling import ScalingCurve
from hypersched_nb.errors import ConfigError, HyperschedError
from hypersched_nb.experiment.simulate import SimSettings, simulate
from hypersched_nb.sim.trace import Trace, load_trace

__all__ = ["build_parser", "main"]

PROG = "python -m hypersched_nb bench"


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line instead of usage + message
        raise _UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=PROG,
        description="Replay a learning-curve trace under several scheduling policies and "
        "report the best metric each reached by each deadline.",
        epilog=f"policies: {', '.join(names())}. Deadlines are in trace seconds; seeds are "
        "0 ... K-1 and seed s offers the same configurations to every policy.",
    )
    a = p.add_argument
    a("--trace", required=True, metavar="PATH_OR_NAME", help="trace CSV or shipped trace name")
    a("--workers", required=True, type=int, metavar="N", help="workers in the simulated cluster")
    a("--deadlines", required=True, metavar="D1,D2,...", help="deadlines in trace seconds")
    a("--policies", required=True, metavar="P1,P2,...", help="policy names (see below)")
    a("--seeds", required=True, type=int, metavar="K", help="run seeds 0 ... K-1")
    a("--configs", type=int, default=100, help="configurations offered per run (default 100)")
    a("--max-epochs", type=int, metavar="R", help="R (default: the trace's longest curve)")
    a("--min-epochs", type=int, default=1, metavar="r", help="r, the grace period (default 1)")
    a("--eta", type=float, default=4, help="reduction factor η (default 4)")
    a(
        "--scaling",
        metavar="NAME_OR_JSON",
        help="speed-up curve, e.g. resnet50-v100 or "
        '\'{"2": 1.9, "4": 3.4}\' (default: the trace sidecar\'s, else none)',
    )
    a(
        "--startup",
        type=float,
        metavar="SECONDS",
        help="cost of a start, resume or resize (default: the trace sidecar's, else 0)",
    )
    a("--target", type=float, metavar="T", help="also report the first time a trial reached T")
    a(
        "--cost-budget",
        type=float,
        metavar="WORKER_SECONDS",
        help="worker-seconds a search may bill; elastic policies (seer) plan within it "
        "(default: no limit)",
    )
    a(
        "--early-signal",
        default="auto",
        metavar="auto|trust|doubt",
        help="what the curves' first epochs say: trust them (as ASHA), doubt them until they "
        "predict later ones, or trust them for now while a few trials test them (default auto)",
    )
    a(
        "--prior",
        metavar="TRACE",
        help="a past search of the same model, as a trace (CSV or name): the policies that "
        "read one (hypersched) learn from its curves and timings (default: none)",
    )
    a("--json", type=Path, metavar="OUT.json", help="write every run to this JSON file")
    a("--jobs", type=int, default=1, choices=(1, 2), help="processes to run in (default 1)")
    return p


@dataclass(frozen=True)
class Plan:
    trace: Trace
    policies: list[str]
    deadlines: list[float]
    seeds: int
    settings: SimSettings
    prior: object = None  # a Prior (experiment.prior), or None

    def tasks(self) -> list[tuple[str, float, int]]:
        return [(p, d, s) for p in self.policies for d in self.deadlines for s in range(self.seeds)]


def _plan(args: argparse.Namespace) -> Plan:
    """Check every input before anything runs; raise a one-line HyperschedError."""
    deadlines = [_deadline(text) for text in args.deadlines.split(",")]
    policies = list(dict.fromkeys(p.strip() for p in args.policies.split(",") if p.strip()))
    if not policies:
        raise ConfigError("`--policies` names no policy")
    _check_numbers(args)
    check_early_signal(args.early_signal, "--early-signal")
    if args.json is not None and not args.json.parent.resolve().is_dir():
        raise ConfigError(f"`--json` folder {str(args.json.parent)!r} does not exist")
    trace = load_trace(args.trace)
    _check_budget(args.cost_budget, trace)
    settings = SimSettings(
        workers=args.workers, configs=args.configs, max_epochs=args.max_epochs,
        min_epochs=args.min_epochs, eta=args.eta, startup=args.startup, target=args.target,
        scaling=None if args.scaling is None else ScalingCurve.parse(args.scaling),
        cost_budget=args.cost_budget, early_signal=args.early_signal,
    )  # fmt: skip
    R = args.max_epochs or trace.longest
    for name in policies:  # a policy refuses its settings here, not after an hour of runs
        try:
            create(
                name, max_epochs=R, min_epochs=args.min_epochs, eta=args.eta, seed=0,
                early_signal=args.early_signal,
            )  # fmt: skip
        except ImportError as exc:
            raise ConfigError(
                f"policy {name!r} is registered but cannot be loaded ({exc})"
            ) from None
    prior = None
    if args.prior is not None:  # refused here in one line, as Experiment(prior=) refuses it
        from hypersched_nb.experiment.prior import resolve_prior

        space = [trace.config(i) for i in trace.ids]
        prior = resolve_prior(args.prior, space=space, metric=trace.metric_name, mode=trace.mode)
    return Plan(trace, policies, deadlines, args.seeds, settings, prior)


def _deadline(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"deadline {text.strip()!r} is not a number of seconds") from None
    if not (math.isfinite(value) and value > 0):
        raise ConfigError(f"deadline {text.strip()} must be a positive number of seconds")
    return value


def _check_numbers(args: argparse.Namespace) -> None:
    for name, value, low in (
        ("--workers", args.workers, 1),
        ("--seeds", args.seeds, 1),
        ("--configs", args.configs, 1),
    ):
        if value < low:
            raise ConfigError(f"`{name}` is {value}, but must be >= {low}")
    if args.max_epochs is not None and args.max_epochs < 1:
        raise ConfigError(f"`--max-epochs` is {args.max_epochs}, but must be >= 1")
    if args.startup is not None and not (math.isfinite(args.startup) and args.startup >= 0):
        raise ConfigError(f"`--startup` is {args.startup}, but must be >= 0 seconds")
    budget = args.cost_budget
    if budget is not None and not (math.isfinite(budget) and budget > 0):
        raise ConfigError(f"`--cost-budget` is {budget}, but must be > 0 worker-seconds")


def _check_budget(budget: float | None, trace: Trace) -> None:
    """A cost budget must pay for one epoch of one worker at least: the trace's cheapest
    first epoch (with less, no trial could report anything)."""
    if budget is None:
        return
    cheapest = min(float(s[0]) for s in trace.seconds.values())
    if budget < cheapest:
        raise ConfigError(
            f"`--cost-budget` is {budget:g} worker-seconds, less than one epoch of one worker "
            f"(the cheapest first epoch of {trace.name} takes {cheapest:.3g} s): no trial "
            "could report a result"
        )


# ------------------------------------------------------------------ running

_TRACE: Trace | None = None  # the trace of a worker process (set once by its initializer)


def _init_worker(trace: Trace) -> None:
    global _TRACE
    _TRACE = trace


def _run_one(
    task: tuple[str, float, int], settings: SimSettings, trace: Trace | None = None, prior=None
) -> dict:
    policy, deadline, seed = task
    told = {} if prior is None else {"prior": prior}
    return simulate(trace or _TRACE, policy, deadline, seed, settings, **told).record.to_json()


@dataclass(frozen=True)
class Failure:
    """The run that failed, and how."""

    task: tuple[str, float, int]  # policy, deadline, seed
    error: BaseException


def run_plan(plan: Plan, jobs: int = 1, progress=None) -> tuple[list[dict], Failure | None]:
    """Rows of the runs done, in task order, and the failure that stopped them (if any)."""
    tasks, rows = plan.tasks(), []
    if jobs == 1:
        try:
            for i, task in enumerate(tasks):
                rows.append(_run_one(task, plan.settings, plan.trace, plan.prior))
                if progress:
                    progress(i + 1, len(tasks))
        except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - reported, rows kept
            return rows, Failure(tasks[len(rows)], exc)
        return rows, None
    from concurrent.futures import ProcessPoolExecutor

    done: dict[int, dict] = {}
    with ProcessPoolExecutor(jobs, initializer=_init_worker, initargs=(plan.trace,)) as pool:
        futures = [pool.submit(_run_one, t, plan.settings, None, plan.prior) for t in tasks]
        for i, future in enumerate(futures):
            try:
                done[i] = future.result()
            except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - reported, rows kept
                for f in futures:
                    f.cancel()
                return [done[j] for j in sorted(done)], Failure(tasks[i], exc)
            if progress:
                progress(i + 1, len(tasks))
    return [done[i] for i in range(len(tasks))], None


def write_json(
    path: Path, trace: str, workers: int, rows: list[dict], prior: str | None = None
) -> None:
    """Write atomically: a reader never sees half a file. ``prior``: the label of the past
    search the runs were given (the file says so only then)."""
    doc = {"trace": trace, "workers": workers, "runs": rows}
    if prior is not None:
        doc = {"trace": trace, "prior": prior, "workers": workers, "runs": rows}
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1, allow_nan=False) + "\n")
    os.replace(tmp, path)


def _progress(done: int, total: int) -> None:
    print(f"\r{done}/{total} runs", end="" if done < total else "\n", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    except _UsageError as exc:
        print(f"{PROG}: {exc} (see --help)", file=sys.stderr)
        return 2
    try:
        plan = _plan(args)
    except HyperschedError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    rows, failure = run_plan(plan, args.jobs, _progress if sys.stderr.isatty() else None)
    if rows:
        print(format_table(rows, plan), flush=True)
    if args.json is not None:
        label = None if plan.prior is None else plan.prior.label
        write_json(args.json, args.trace, args.workers, rows, label)
    took = time.perf_counter() - started
    if failure is not None:
        (policy, deadline, seed), error = failure.task, failure.error
        why = f"{type(error).__name__}: {error}".splitlines()[0]
        saved = f"; {len(rows)} finished run(s) written to {args.json}" if args.json else ""
        print(
            f"{PROG}: run {policy} deadline {deadline:g} seed {seed} failed: {why}{saved}",
            file=sys.stderr,
        )
        return 130 if isinstance(error, KeyboardInterrupt) else 1
    print(f"{len(rows)} runs in {took:.1f} s", file=sys.stderr)
    return 0
