"""A real deadline-bound ResNet-18 search on CUDA GPUs: how busy the GPUs were, and what the
search's orchestration cost.

    python benchmarks/gpu_run.py [--deadline 10m] [--gpus N] [--max-epochs 30]
                                 [--policy hypersched] [--data-root DIR] [--json out.json]
    python benchmarks/gpu_run.py --dry-run          # the same code on 2 CPU workers, ~20 s

What runs: ``hypersched_nb.Experiment`` of ``CIFARResNet18`` (torchvision's ResNet-18 for
32x32 images, SGD) over its own space (lr, momentum, weight decay, batch size searched by
TPE; the data settings fixed), under ``--policy`` (default ``hypersched``), until
``--deadline``, on a local ``LocalCUDACluster`` of one Dask worker per GPU (what
``start_cluster`` makes when torch sees CUDA GPUs and dask-cuda is installed; trials on
several GPUs train data-parallel over NCCL). The data are synthetic CIFAR-shaped images
(``data.cifar_standin``, CIFAR-10's size by default; nothing is downloaded), or CIFAR-10
read from ``--data-root`` (torchvision's ``cifar-10-batches-py`` folder must be there).

What is measured:

* GPU utilisation, sampled with NVML (nvidia-ml-py) every ``--interval`` seconds on a
  background thread from just before the search starts to its end (the cluster's start
  included): per GPU and over all of them, *busy %* (the mean of NVML's ``utilization.gpu``,
  the share of the last sample period in which a kernel ran) and *active share* (the share
  of samples with ``utilization.gpu`` > 0), and the peak memory used;
* worker-seconds, from the search's journal and its final ``exp.statistics()``:
  *available* = ∫ workers dt over the search's wall time (workers × wall time on a cluster
  that keeps its size; the wall time runs from ``exp.start()``, the cluster's start
  included, to the end); *held* = Σ over epochs of the seconds a trial held its workers for
  that epoch × its workers (the driver's ``Outcome.worker_seconds_busy``: step, checkpoint,
  dispatch, start and restore); *in step()* = Σ over epochs of ``step()``'s own seconds ×
  the trial's workers (each replica steps in lockstep; the trainable here times its
  ``step()`` and reports it as the extra metric ``step_s``). An epoch cut off by the
  deadline reports nothing, so it counts in neither;
* **overhead ratio = available worker-seconds / worker-seconds in step()**: 1.0 when every
  worker-second of the search went into training; what is above 1 is the cluster's start,
  scheduling, checkpoints, restarts and idle workers (its inverse, the *step share*, is
  printed too);
* the best metric (``val_acc``), trials started and epochs trained.

Targets on a GPU host, 10-minute deadline, CIFAR-sized data: overall busy % >= 80 and an
overhead ratio <= 1.25 (not yet measured).

Without a CUDA GPU, dask-cuda or nvidia-ml-py it exits with status 2 and one line saying
what is missing (``pip install ".[cuda]"`` brings dask-cuda and nvidia-ml-py) before
starting anything. ``--dry-run`` runs the same search on 2 CPU worker processes
(``CUDA_VISIBLE_DEVICES=""``) with a 20 s deadline, tiny stand-in data and no GPU sampling:
a check of this script's logic; its figures are CPU figures and are labelled so.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import shutil
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

DRY_RUN = {"deadline": "20s", "workers": 2, "max_epochs": 3, "train": 32, "val": 16}
GPU_RUN = {"deadline": "10m", "max_epochs": 30, "train": 50_000, "val": 10_000}
TARGET_BUSY_PCT = 80.0
TARGET_OVERHEAD = 1.25


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--deadline", help="search budget, e.g. 10m (default 10m; dry run 20s)")
    p.add_argument("--gpus", type=int, help="GPU workers (default: every GPU torch sees)")
    p.add_argument("--max-epochs", type=int, help="epochs a trial may train (default 30; dry 3)")
    p.add_argument("--policy", default="hypersched", help="scheduling policy (default hypersched)")
    p.add_argument("--sampler", default="tpe", help="tpe, random or qmc (default tpe)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--data-root",
        help="offline CIFAR-10 here (its cifar-10-batches-py) instead of stand-in data",
    )
    p.add_argument("--standin-train", type=int, help="stand-in training images (default 50000)")
    p.add_argument("--standin-val", type=int, help="stand-in validation images (default 10000)")
    p.add_argument("--interval", type=float, default=0.5, help="seconds between GPU samples")
    p.add_argument("--checkpoint-dir", help="keep the search's checkpoints here (default: temp)")
    p.add_argument("--json", help="write the figures to this file")
    p.add_argument(
        "--dry-run",
        "--cpu-smoke",
        action="store_true",
        help="the same code on 2 CPU workers, 20 s, tiny data, no GPU sampling",
    )
    return p


def _settle(args) -> None:
    """Fill in the defaults that depend on --dry-run."""
    base = DRY_RUN if args.dry_run else GPU_RUN
    args.deadline = args.deadline or base["deadline"]
    args.max_epochs = args.max_epochs or base["max_epochs"]
    args.standin_train = args.standin_train or base["train"]
    args.standin_val = args.standin_val or base["val"]


# ------------------------------------------------------------------ what must be there


def missing_for_gpu() -> str | None:
    """One line saying what this machine lacks for a GPU run (None: nothing)."""
    import torch

    lacks = []
    if not torch.cuda.is_available():
        lacks.append(f"no CUDA GPU (torch.cuda.is_available() is False; torch {torch.__version__})")
    packages = [
        package
        for module, package in (("dask_cuda", "dask-cuda"), ("pynvml", "nvidia-ml-py"))
        if importlib.util.find_spec(module) is None
    ]
    if packages:
        lacks.append(f"{' and '.join(packages)} not installed")
    if not lacks:
        return None
    return (
        f"gpu_run.py: {'; '.join(lacks)}: run it on a CUDA host with "
        f'pip install ".[cuda]" (dask-cuda, nvidia-ml-py), or add --dry-run for a CPU smoke run'
    )


def check_args(args) -> str | None:
    """One line on what is wrong with the options (None: nothing)."""
    if args.gpus is not None and args.gpus < 1:
        return f"gpu_run.py: --gpus is {args.gpus}, but must be >= 1"
    if not (math.isfinite(args.interval) and args.interval > 0):
        return f"gpu_run.py: --interval is {args.interval}, but must be > 0 seconds"
    if args.data_root is not None and not (Path(args.data_root) / "cifar-10-batches-py").is_dir():
        return (
            f"gpu_run.py: --data-root {args.data_root} holds no cifar-10-batches-py folder "
            "(nothing is downloaded here); leave it out to train on stand-in data"
        )
    if args.dry_run:
        return None
    import torch

    have = torch.cuda.device_count()
    if args.gpus is not None and args.gpus > have:
        return f"gpu_run.py: --gpus is {args.gpus}, but torch sees {have} CUDA GPU(s)"
    return None


# ------------------------------------------------------------------ the search


def timed_trainable():
    """``CIFARResNet18`` whose ``step()`` also reports its own seconds as ``step_s``.

    Made in a function so that importing this script (as Dask's worker processes do) stays
    light; Dask pickles the class by value."""
    from hypersched_nb.train.examples import CIFARResNet18

    class TimedResNet18(CIFARResNet18):
        __doc__ = CIFARResNet18.__doc__

        def step(self) -> dict:
            t0 = time.perf_counter()
            out = super().step()  # ends with .tolist(): the device has finished the epoch
            return {**out, "step_s": time.perf_counter() - t0}

    return TimedResNet18


def search_space(args) -> dict:
    """``CIFARResNet18.space()`` searched, the data settings fixed."""
    from hypersched_nb.train.examples import CIFARResNet18

    if args.data_root is not None:
        fixed = {"dataset": "cifar10", "data_root": str(args.data_root), "download": False}
    else:
        fixed = {"dataset": "standin", "standin_train": args.standin_train,
                 "standin_val": args.standin_val}  # fmt: skip
    return {**CIFARResNet18.space(), **fixed}


def build_experiment(args, checkpoint_dir: str):
    """The search: nothing starts until its ``start()``."""
    from hypersched_nb import Experiment

    return Experiment(
        timed_trainable(), search_space(args), metric="val_acc", mode="max",
        deadline=args.deadline, max_epochs=args.max_epochs, policy=args.policy,
        cluster=args.workers, sampler=args.sampler, seed=args.seed,
        checkpoint_dir=checkpoint_dir,
    )  # fmt: skip


def run_search(exp, sampler, every: float):
    """Run the search while ``sampler`` samples, with a progress line every ``every``
    seconds; return ``(final snapshot, wall seconds, whether Ctrl-C stopped it)``."""
    interrupted = False
    t0 = time.perf_counter()
    sampler.start()
    try:
        exp.start()
        last = time.monotonic()
        while not exp.wait(0.5):
            if time.monotonic() - last >= every:
                print(f"  {exp.statistics().progress_line()}", flush=True)
                last = time.monotonic()
    except KeyboardInterrupt:
        interrupted = True
        print("  stopping (Ctrl-C) ...", flush=True)
        if exp.statistics().status != "created":
            exp.stop()
    finally:
        sampler.stop()
    return exp.statistics(), time.perf_counter() - t0, interrupted


# ------------------------------------------------------------------ GPU sampling


class NoSampler:
    """The dry run's stand-in for :class:`NvmlSampler`: samples nothing."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.samples: dict[str, list] = {}

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass


class NvmlSampler:
    """Every ``interval`` seconds on a thread of its own, for each GPU of the cluster:
    ``(seconds since start, utilization.gpu %, memory used in bytes)`` in ``samples[gpu]``
    (None where NVML cannot say, e.g. on a MIG slice)."""

    def __init__(self, gpus: int, interval: float = 0.5):
        import pynvml

        self.nvml, self.interval = pynvml, interval
        pynvml.nvmlInit()
        self.handles = _nvml_handles(pynvml, gpus)
        self.names = {gpu: _text(pynvml.nvmlDeviceGetName(h)) for gpu, h in self.handles.items()}
        self.samples: dict[str, list] = {gpu: [] for gpu in self.handles}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gpu-sampler", daemon=True)
        self._t0 = 0.0

    def start(self) -> None:
        self._t0 = time.perf_counter()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.nvml.nvmlShutdown()

    def _run(self) -> None:
        while True:
            self.sample()
            if self._stop.wait(self.interval):
                return

    def sample(self) -> None:
        now = time.perf_counter() - self._t0
        for gpu, handle in self.handles.items():
            util = memory = None
            try:
                util = float(self.nvml.nvmlDeviceGetUtilizationRates(handle).gpu)
            except self.nvml.NVMLError:
                pass  # not supported here (MIG): the sample counts as unread
            try:
                memory = float(self.nvml.nvmlDeviceGetMemoryInfo(handle).used)
            except self.nvml.NVMLError:
                pass  # as above
            self.samples[gpu].append((now, util, memory))


def _nvml_handles(pynvml, gpus: int) -> dict:
    """NVML handles of the cluster's GPUs: torch's devices 0..gpus-1 (LocalCUDACluster gives
    worker i the i-th visible device), found by UUID, since NVML numbers every GPU in PCI
    order whatever ``CUDA_VISIBLE_DEVICES`` says; by index where the UUID is not found."""
    import torch

    handles = {}
    for i in range(gpus):
        uuid = str(torch.cuda.get_device_properties(i).uuid)
        handle = None
        for name in (f"GPU-{uuid}", f"MIG-{uuid}", uuid):
            try:
                handle = pynvml.nvmlDeviceGetHandleByUUID(name)
                break
            except pynvml.NVMLError:
                continue
        handles[str(i)] = handle if handle is not None else pynvml.nvmlDeviceGetHandleByIndex(i)
    return handles


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def utilisation_summary(samples: Mapping[str, Sequence[tuple]]) -> dict:
    """Per GPU and over all GPUs, from ``{gpu: [(time, utilization.gpu %, memory used bytes),
    ...]}`` (None: a reading NVML could not make, left out): ``samples`` taken, ``busy_pct``
    (mean utilisation of the readings), ``active_share`` (share of readings > 0) and, per
    GPU, ``peak_mem_gib``. A figure without a reading is None."""

    def figures(utils: list[float]) -> dict:
        return {
            "busy_pct": sum(utils) / len(utils) if utils else None,
            "active_share": sum(u > 0 for u in utils) / len(utils) if utils else None,
        }

    per_gpu, every = {}, []
    for gpu, rows in samples.items():
        utils = [float(u) for _, u, _ in rows if u is not None]
        memory = [float(m) for _, _, m in rows if m is not None]
        every += utils
        per_gpu[gpu] = {
            "samples": len(rows),
            "readings": len(utils),
            **figures(utils),
            "peak_mem_gib": max(memory) / 2**30 if memory else None,
        }
    overall = {"gpus": len(per_gpu), "samples": sum(len(r) for r in samples.values())}
    return {"per_gpu": per_gpu, "overall": {**overall, "readings": len(every), **figures(every)}}


# ------------------------------------------------------------------ worker-seconds


def epoch_seconds(results: Sequence[Mapping]) -> dict:
    """From the search's ``Result`` records: ``epochs`` reported, ``held`` worker-seconds
    (``(seconds + startup) × workers``) and ``in_step`` worker-seconds (``step_s × workers``;
    ``untimed``: results without a ``step_s``)."""
    held = in_step = 0.0
    untimed = 0
    for r in results:
        held += (r["seconds"] + r["startup"]) * r["workers"]
        step = (r.get("info") or {}).get("step_s")
        if step is None:
            untimed += 1
        else:
            in_step += float(step) * r["workers"]
    return {"epochs": len(results), "held": held, "in_step": in_step, "untimed": untimed}


def journal_results(checkpoint_dir: str) -> list[Mapping]:
    """Every ``Result`` the search's driver took in, from its journal."""
    from hypersched_nb.experiment.journal import read_journal

    return [
        event
        for record in read_journal(checkpoint_dir).inputs()
        if record["k"] == "events"
        for event in record["events"]
        if event.get("type") == "Result"
    ]


def available_worker_seconds(capacity: Sequence[tuple[float, int]], end: float) -> float:
    """∫ workers dt over [0, ``end``] from ``(time, workers)`` changes; the first size counts
    from 0 (the cluster's start is part of the search's wall time)."""
    if not capacity:
        return 0.0
    total, (at, workers) = 0.0, (0.0, capacity[0][1])
    for t, n in capacity[1:]:
        total += workers * max(0.0, min(t, end) - at)
        at, workers = max(at, min(t, end)), n
    return total + workers * max(0.0, end - at)


def overhead(snap, results: Sequence[Mapping]) -> dict:
    """The worker-second figures and the overhead ratio (see the module's docstring)."""
    seconds = epoch_seconds(results)
    available = available_worker_seconds(snap.capacity, snap.time)
    in_step = seconds["in_step"]
    return {
        "wall_s": snap.time,
        "workers": snap.workers,
        "cluster_start_s": snap.capacity[0][0] if snap.capacity else None,
        "available_worker_s": available,
        "held_worker_s": seconds["held"],
        "step_worker_s": in_step,
        "held_share": seconds["held"] / available if available else None,
        "step_share": in_step / available if available else None,
        "overhead_ratio": available / in_step if in_step else None,
        "epochs_reported": seconds["epochs"],
        "epochs_untimed": seconds["untimed"],
    }


# ------------------------------------------------------------------ report


def search_figures(snap, wall: float, interrupted: bool) -> dict:
    best = snap.best
    return {
        "status": "stopped by Ctrl-C" if interrupted else snap.status,
        "error": snap.error,
        "wall_s_measured": wall,
        "trials_started": sum(1 for r in snap.trials if r.started_at is not None),
        "epochs_trained": sum(r.epochs for r in snap.trials),
        "best": None
        if best is None
        else {
            "metric": best.metric,
            "trial": best.trial_id,
            "epoch": best.epoch,
            "config": dict(best.config),
        },  # fmt: skip
    }


def _fmt(value, spec: str = ".1f", none: str = "n/a") -> str:
    return none if value is None else format(value, spec)


def print_report(fig: dict) -> None:
    run, s, o, u = fig["run"], fig["search"], fig["overhead"], fig["utilisation"]
    print(f"\n{run['label']}")
    best = s["best"]
    where = "none before the deadline"
    if best is not None:
        where = f"{best['metric']:.4f} (trial {best['trial']}, epoch {best['epoch']})"
    print(
        f"search: {s['status']}, {o['wall_s']:.1f} s (cluster start "
        f"{_fmt(o['cluster_start_s'])} s); trials started {s['trials_started']}, epochs trained "
        f"{s['epochs_trained']}; best val_acc {where}"
    )
    if u is None:
        print("GPU utilisation: not sampled (CPU dry run: no GPU, no NVML)")
    else:
        print(f"{'GPU':<5}{'name':<28}{'samples':>8}{'busy %':>8}{'active':>8}{'peak GiB':>10}")
        for gpu, g in u["per_gpu"].items():
            name = fig["gpu_names"].get(gpu, "")[:27]
            print(
                f"{gpu:<5}{name:<28}{g['samples']:>8}{_fmt(g['busy_pct']):>8}"
                f"{_fmt(g['active_share'], '.2f'):>8}{_fmt(g['peak_mem_gib'], '.2f'):>10}"
            )
        a = u["overall"]
        print(
            f"{'all':<33}{a['samples']:>8}{_fmt(a['busy_pct']):>8}"
            f"{_fmt(a['active_share'], '.2f'):>8}"
        )
    kind = "CPU worker" if run["dry_run"] else "GPU worker"
    print(
        f"{kind}-seconds: available {o['available_worker_s']:.1f} ({o['workers']} workers over "
        f"{o['wall_s']:.1f} s), held by trials {o['held_worker_s']:.1f} "
        f"({_fmt(_pct(o['held_share']))} %), in step() {o['step_worker_s']:.1f} "
        f"({_fmt(_pct(o['step_share']))} %)"
    )
    print(f"overhead ratio (available / in step()): {_fmt(o['overhead_ratio'], '.3f')}")
    if not run["dry_run"]:
        _print_targets(u["overall"]["busy_pct"], o["overhead_ratio"])


def _pct(share: float | None) -> float | None:
    return None if share is None else 100 * share


def _print_targets(busy: float | None, ratio: float | None) -> None:
    for what, value, ok in (
        (f"overall busy % >= {TARGET_BUSY_PCT:g}", busy, (busy or 0.0) >= TARGET_BUSY_PCT),
        (
            f"overhead ratio <= {TARGET_OVERHEAD:g}",
            ratio,
            ratio is not None and ratio <= TARGET_OVERHEAD,
        ),
    ):
        print(f"target: {what} -> {_fmt(value, '.3g')} ({'met' if ok else 'NOT met'})")


def _label(args) -> str:
    data = (
        f"CIFAR-10 from {args.data_root}"
        if args.data_root
        else f"stand-in data {args.standin_train}/{args.standin_val} images"
    )
    where = (
        f"{args.workers} CPU workers (DRY RUN: CPU figures, not GPU figures)"
        if args.dry_run
        else f"{args.workers} GPU workers (LocalCUDACluster)"
    )
    return (
        f"ResNet-18 search, {args.policy}, deadline {args.deadline}, max {args.max_epochs} "
        f"epochs, {where}, {data}"
    )


def _plain(value):
    """JSON-ready: NaN and infinities as None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


# ------------------------------------------------------------------ main


def _prepare(args) -> int | None:
    """Check what a run needs, in one line on stderr: an exit status where it cannot run."""
    problem = (None if args.dry_run else missing_for_gpu()) or check_args(args)
    if problem is not None:
        print(problem, file=sys.stderr)
        return 2
    if args.dry_run:
        os.environ["CUDA_VISIBLE_DEVICES"] = ""  # CPU workers, even on a GPU host
        args.workers = DRY_RUN["workers"]
    else:
        import torch

        args.workers = args.gpus or torch.cuda.device_count()
    return None


def main() -> int:
    args = _parser().parse_args()
    _settle(args)
    status = _prepare(args)
    if status is not None:
        return status
    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "error")  # here and in the workers
    warnings.filterwarnings("ignore", message=r"Port \d+ is already in use")
    from hypersched_nb.errors import HyperschedError

    folder = args.checkpoint_dir or tempfile.mkdtemp(prefix="gpu_run-")
    try:
        try:
            exp = build_experiment(args, folder)
        except HyperschedError as exc:  # a bad --policy, --deadline, ...: one line
            print(f"gpu_run.py: {exc}", file=sys.stderr)
            return 2
        sampler = NoSampler() if args.dry_run else NvmlSampler(args.workers, args.interval)
        print(_label(args), flush=True)
        try:
            snap, wall, interrupted = run_search(exp, sampler, 5.0 if args.dry_run else 30.0)
        except HyperschedError as exc:  # the search failed (fail-fast): one line
            print(f"gpu_run.py: the search failed: {exc}", file=sys.stderr)
            return 1
        results = journal_results(folder)
    finally:
        if args.checkpoint_dir is None:
            shutil.rmtree(folder, ignore_errors=True)
    fig = {
        "run": {"label": _label(args), "dry_run": args.dry_run, "policy": args.policy,
                "deadline": args.deadline, "workers": args.workers,
                "max_epochs": args.max_epochs, "data_root": args.data_root,
                "standin": [args.standin_train, args.standin_val]},
        "gpu_names": dict(sampler.names),
        "search": search_figures(snap, wall, interrupted),
        "overhead": overhead(snap, results),
        "utilisation": None if args.dry_run else utilisation_summary(sampler.samples),
    }  # fmt: skip
    print_report(fig)
    if args.json:
        Path(args.json).write_text(json.dumps(_plain(fig), indent=2, allow_nan=False) + "\n")
        print(f"figures: {args.json}")
    return 0 if fig["search"]["best"] is not None else 1


if __name__ == "__main__":
    sys.exit(main())
