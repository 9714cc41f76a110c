"""Record learning-curve traces by really training the example trainables.

The format is the project's trace contract (docs/design.md): a long-form CSV, one row per
trial and epoch, and a JSON sidecar.

For each trace, ``--configs`` configurations are drawn from the example's Optuna space by a
seeded ``RandomSampler`` (floats rounded to 6 significant digits, and trained with exactly
those values), and each is trained in a plain loop -- ``step()`` after ``step()``, every
epoch timed with ``time.perf_counter`` -- for ``--epochs`` epochs on one process with one
torch thread, ``--procs`` trials at a time. A trial whose metric turns NaN (diverged) stops
there: its last row carries the NaN.

The sidecar gives the metric, mode, how and where it was recorded, a scaling curve measured
by timing the default configuration on 1 and on 2 data-parallel gloo processes (same
per-replica batch, so the 2-process epoch does half the steps on each), and
``startup_seconds``: the median time to construct the trainable and run its first
``setup`` in a fresh process whose libraries are imported (dataset read from the disk
cache); see :func:`measure_startup`.

    .venv/bin/python scripts/record_traces.py            # the four traces: 25-50 min on 2 cores
    .venv/bin/python scripts/record_traces.py --summary  # figures of the traces in --out
    .venv/bin/python scripts/record_traces.py --only digits-cnn --configs 8 --epochs 3 --out /tmp/t
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import multiprocessing as mp
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

EXAMPLES = {
    "digits-cnn": "DigitsCNN",
    "digits-mlp": "DigitsMLP",
    "mnist1d-cnn": "MNIST1DCNN",
    "mnist1d-cosine": "MNIST1DCosine",
}
DEFAULT_OUT = Path(__file__).resolve().parent.parent / "hypersched_nb" / "traces"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--only",
        choices=sorted(EXAMPLES),
        action="append",
        help="record only this trace (repeatable)",
    )
    ap.add_argument("--configs", type=int, default=100)
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument(
        "--procs", type=int, default=2, help="trials trained at a time, one process each"
    )
    ap.add_argument("--seed", type=int, default=0, help="seeds the sampler and the trials")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument(
        "--scaling-epochs", type=int, default=6, help="epochs timed per scaling run (first dropped)"
    )
    ap.add_argument(
        "--startup-runs", type=int, default=3, help="fresh processes timed for startup_seconds"
    )
    ap.add_argument(
        "--summary", action="store_true", help="only print the figures of traces already in --out"
    )
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.only or sorted(EXAMPLES):
        if not args.summary:
            record(name, args)
        print(json.dumps(summarize(args.out / f"{name}.csv")))
    return 0


def record(name: str, args) -> None:
    cls_name = EXAMPLES[name]
    _warm_data(cls_name)
    configs = sample_configs(cls_name, args.configs, args.seed)
    jobs = [
        (cls_name, tid, cfg, args.epochs, args.seed * 1_000_000 + tid)
        for tid, cfg in enumerate(configs)
    ]
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    rows = []
    with mp.get_context("spawn").Pool(args.procs, initializer=_one_thread) as pool:
        for n, trial_rows in enumerate(pool.imap_unordered(train_trial, jobs), 1):
            rows.extend(trial_rows)
            last = trial_rows[-1]
            print(
                f"[{name}] {n}/{len(jobs)} trial {last['trial']}: {last['epoch']} epochs, "
                f"metric {last['metric']:.3f}, {sum(r['seconds'] for r in trial_rows):.1f} s",
                file=sys.stderr,
            )
    wall = time.perf_counter() - t0
    load_after = os.getloadavg()
    df = pd.DataFrame(rows).sort_values(["trial", "epoch"], kind="stable")
    csv = args.out / f"{name}.csv"
    df.to_csv(csv, index=False, float_format="%.6g", na_rep="nan")
    scaling = measure_scaling(cls_name, args.scaling_epochs, args.seed)
    startup = measure_startup(cls_name, args.startup_runs, args.seed)
    sidecar = {
        "metric": "val_acc",
        "mode": "max",
        "scaling": {"1": 1.0, "2": scaling["speedup"]},
        "startup_seconds": round(startup["first_setup_median"], 4),
        "source": (
            f"recorded by scripts/record_traces.py: hypersched_nb.train.examples.{cls_name}, "
            f"{args.configs} configurations drawn by optuna RandomSampler(seed={args.seed}) from "
            f"{cls_name}.space(), each trained for up to {args.epochs} epochs in a plain step() loop, "
            f"one process per trial with torch.set_num_threads(1), {args.procs} trials at a time; "
            f"'seconds' is time.perf_counter around each step() (training epoch + validation), "
            f"'cpu_seconds' the process CPU time of the same step (an extra column: wall time on a "
            f"shared machine includes waiting for a core, CPU time does not); "
            f"trials stop at their first NaN metric (diverged), which is their last row; scaling "
            f"times the default configuration on 1 vs 2 data-parallel gloo processes with the same "
            f"per-replica batch; startup_seconds is the median of construct + first setup() in fresh processes with "
            f"their libraries imported (see startup_detail); the machine was shared with other jobs "
            f"(load averages in load_average), which the seconds include"
        ),
        "machine": _machine(),
        "date": datetime.date.today().isoformat(),
        "torch": _torch_version(),
        "configs": args.configs,
        "epochs": args.epochs,
        "seed": args.seed,
        "recording_wall_seconds": round(wall, 1),
        "load_average": {
            "before": [round(x, 2) for x in load_before],
            "after": [round(x, 2) for x in load_after],
        },
        "space": {k: repr(v) for k, v in _space(cls_name).items()},
        "scaling_detail": scaling,
        "startup_detail": startup,
    }
    csv.with_suffix(".json").write_text(json.dumps(sidecar, indent=1) + "\n")
    print(
        f"[{name}] wrote {csv} ({csv.stat().st_size / 1e3:.0f} kB) in {wall:.0f} s; "
        f"scaling {sidecar['scaling']}, startup {sidecar['startup_seconds']} s",
        file=sys.stderr,
    )


def summarize(path: Path, never_learned_below: float = 0.2) -> dict:
    """Figures of a recorded trace: epoch times, diverged (NaN) and never-learned shares, and
    the rank correlation of early metrics with the final one over the trials that ran every
    epoch (what early stopping rests on)."""
    import numpy as np
    from scipy.stats import spearmanr

    from hypersched_nb.sim.trace import load_trace

    trace = load_trace(path)
    curves = [trace.metrics[t] for t in trace.ids]
    secs = np.concatenate([trace.seconds[t] for t in trace.ids])
    diverged = [c for c in curves if np.isnan(c).any()]
    finite = [c for c in curves if not np.isnan(c).any()]
    never = [c for c in finite if c.max() < never_learned_below]
    full = [c for c in finite if len(c) == trace.longest]
    final = np.array([c[-1] for c in full])
    out = {
        "trace": trace.name,
        "configs": len(curves),
        "epochs": trace.longest,
        "epoch_seconds_median": round(float(np.median(secs)), 4),
        "epoch_seconds_p10_p90": [round(float(x), 4) for x in np.percentile(secs, [10, 90])],
        "diverged": round(len(diverged) / len(curves), 3),
        f"never_learned(best<{never_learned_below})": round(len(never) / len(curves), 3),
        "best_final": round(float(final.max()), 4),
        "median_final": round(float(np.median(final)), 4),
        "median_full_time_s": round(trace.median_full_time(), 2),
    }
    cpu = pd.read_csv(path).get("cpu_seconds")
    if cpu is not None:
        out["epoch_cpu_seconds_median"] = round(float(cpu.median()), 4)
    for e in (e for e in (1, 2, 4, 8) if e < trace.longest):  # an epoch before the last
        rho = spearmanr([c[e - 1] for c in full], final).statistic
        out[f"spearman(epoch{e}, final)"] = round(float(rho), 3)
    learners = [c for c in full if c.max() >= never_learned_below]
    rho = spearmanr([c[0] for c in learners], [c[-1] for c in learners]).statistic
    out["spearman(epoch1, final) among learners"] = round(float(rho), 3)
    return out


def sample_configs(cls_name: str, n: int, seed: int) -> list[dict]:
    """``n`` configurations from the example's space, by optuna's RandomSampler(seed)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed))
    space = _space(cls_name)
    out = []
    for _ in range(n):
        params = study.ask(space).params
        out.append({k: float(f"{v:.6g}") if isinstance(v, float) else v for k, v in params.items()})
    return out


def train_trial(job) -> list[dict]:
    """Train one configuration in a plain loop; one row per epoch, stopping at a NaN metric."""
    cls_name, tid, config, epochs, seed = job
    from hypersched_nb.train import examples
    from hypersched_nb.train.trainable import TrainContext

    trainable = getattr(examples, cls_name)()
    trainable.setup(dict(config), TrainContext(seed=seed, trial_id=tid))
    params = {f"param_{k}": v for k, v in config.items()}
    rows = []
    for epoch in range(1, epochs + 1):
        t0, c0 = time.perf_counter(), time.process_time()
        metrics = trainable.step()
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        metric = metrics["val_acc"]
        rows.append({
            "trial": tid, "epoch": epoch, "metric": round(metric, 5), "seconds": round(seconds, 4),
            "cpu_seconds": round(cpu, 4), **params,
        })  # fmt: skip
        if not math.isfinite(metric):
            break
    trainable.teardown()
    return rows


def measure_scaling(
    cls_name: str, epochs: int, seed: int, repeats: int = 3, tries: int = 3, timeout: float = 900
) -> dict:
    """Median epoch seconds of the default configuration on 1 and on 2 gloo processes.

    Two processes are spawned once; each round rank 0 first trains alone (world size 1, the
    other process waiting at a barrier) and then both train data-parallel (world size 2).
    The first epoch of each run is dropped. A run whose timings never came back (gloo has
    aborted at start or teardown: "terminate called without an active exception") is tried
    again on a fresh port, ``tries`` times in all; timings that did come back are kept even
    when a process then exits badly, since rank 0 sends them only after every round.
    """
    load = os.getloadavg()[0]
    failures = []
    for _ in range(tries):
        timings, exitcodes = _scaling_run(cls_name, epochs, seed, repeats, timeout)
        if timings is not None:
            break
        failures.append(exitcodes)
    else:
        raise RuntimeError(
            f"scaling run of {cls_name} on 2 gloo processes failed {tries} times (exit codes "
            f"{failures}); the trace's CSV is written, rerun this script to write its sidecar"
        )
    one, two = timings
    t1, t2 = statistics.median(one), statistics.median(two)
    return {
        "epoch_seconds_1": round(t1, 4),
        "epoch_seconds_2": round(t2, 4),
        "speedup": round(t1 / t2, 3),
        "load_average_1min": [round(load, 2), round(os.getloadavg()[0], 2)],
        "how": f"default config, {repeats} rounds x {epochs - 1} timed epochs per world size, "
        "gloo on loopback, one torch thread per process, same per-replica batch",
        "failed_tries": failures,
    }


def _scaling_run(cls_name, epochs, seed, repeats, timeout):
    """One try: (rank 0's timings or None, the processes' exit codes)."""
    port = _free_port()
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    procs = [
        ctx.Process(target=_scaling_rank, args=(cls_name, r, port, epochs, seed, repeats, queue))
        for r in range(2)
    ]
    for p in procs:
        p.start()
    deadline = time.monotonic() + timeout
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
    for p in procs:
        if p.is_alive():  # hung in a collective: end it, and try again
            p.kill()
            p.join()
    timings = None if queue.empty() else queue.get()
    return timings, [p.exitcode for p in procs]


def _scaling_rank(cls_name, rank, port, epochs, seed, repeats, queue) -> None:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    from hypersched_nb.train import examples
    from hypersched_nb.train.trainable import TrainContext

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    one, two = [], []
    for _ in range(repeats):
        if rank == 0:
            one.extend(
                _timed_epochs(getattr(examples, cls_name)(), TrainContext(seed=seed), epochs)[1:]
            )
        dist.barrier()
        ctx = TrainContext(rank=rank, world_size=2, seed=seed)
        two.extend(
            _timed_epochs(getattr(examples, cls_name)(), ctx, epochs, barrier=dist.barrier)[1:]
        )
    if rank == 0:
        queue.put((one, two))
    dist.destroy_process_group()


def _timed_epochs(trainable, ctx, epochs: int, barrier=None) -> list[float]:
    trainable.setup({}, ctx)
    times = []
    for _ in range(epochs):
        if barrier is not None:
            barrier()
        t0 = time.perf_counter()
        trainable.step()  # ends with an all_reduce on 2 processes: rank 0 waits for both
        times.append(time.perf_counter() - t0)
    trainable.teardown()
    return times


def measure_startup(cls_name: str, runs: int, seed: int) -> dict:
    """Seconds from nothing to a trainable ready to train, in fresh processes.

    ``first`` (the sidecar's ``startup_seconds``): construct + first ``setup`` in a process
    whose libraries are imported (torch, the optimizer's lazy ``torch._dynamo`` import, the
    dataset's library), as on a worker process that stays up between trials; the dataset is
    read from the disk cache into memory and the model built. ``restart``: a second trainable
    in that process (dataset in memory) set up and loaded from the first one's state dict.
    ``cold_process``: the whole fresh interpreter, imports included, up to the first setup.
    """
    lib = {"digits": "sklearn.datasets", "mnist1d": "mnist1d.data"}[_dataset(cls_name)]
    code = (
        "import time; t00 = time.perf_counter()\n"
        "import json, importlib, torch; torch.set_num_threads(1)\n"
        "from hypersched_nb.train import examples\n"
        "from hypersched_nb.train.trainable import TrainContext\n"
        f"importlib.import_module({lib!r})\n"
        "torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)  # its lazy imports\n"
        f"cls = examples.{cls_name}\n"
        f"t0 = time.perf_counter(); a = cls(); a.setup({{}}, TrainContext(seed={seed})); t1 = time.perf_counter()\n"
        f"b = cls(); b.setup({{}}, TrainContext(seed={seed})); b.load_state_dict(a.state_dict()); t2 = time.perf_counter()\n"
        "print(json.dumps([t1 - t0, t2 - t1, t1 - t00]))\n"
    )
    first, restart, cold = [], [], []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        a, b, c = json.loads(out.stdout.strip().splitlines()[-1])
        first.append(a)
        restart.append(b)
        cold.append(c)
    return {
        "first_setup_median": round(statistics.median(first), 4),
        "first_setup_runs": [round(x, 4) for x in first],
        "restart_median": round(statistics.median(restart), 4),
        "cold_process_median": round(statistics.median(cold), 4),
        "note": "startup_seconds = first: construct + first setup() on a process with its libraries "
        "imported (dataset read from the disk cache, model built); restart: a second "
        "trainable set up in the same process and loaded from a state dict; cold_process: "
        "a fresh interpreter up to the end of its first setup, imports included (paid once "
        "per worker process)",
    }


def _warm_data(cls_name: str) -> None:
    """Build the dataset once here so that worker processes read it from the disk cache."""
    from hypersched_nb.train import data

    getattr(data, _dataset(cls_name))()


def _dataset(cls_name: str) -> str:
    """The name of the example's dataset loader in ``hypersched_nb.train.data``."""
    from hypersched_nb.train import examples

    return "mnist1d" if issubclass(getattr(examples, cls_name), examples.MNIST1DCNN) else "digits"


def _space(cls_name: str) -> dict:
    from hypersched_nb.train import examples

    return getattr(examples, cls_name).space()


def _one_thread() -> None:
    import torch

    torch.set_num_threads(1)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{cpu}, {os.cpu_count()} cores visible, {platform.system()} {platform.release()}, Python {platform.python_version()}"


def _torch_version() -> str:
    import torch

    return torch.__version__


if __name__ == "__main__":
    sys.exit(main())
