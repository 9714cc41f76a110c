"""A deadline-bound ResNet-18 search on the CUDA GPUs of this machine, within ``--minutes``
of wall-clock time, start-up included: how busy the GPUs were and what the search cost
against a plain training loop. It prints one JSON line on stdout (progress goes to stderr).

    python benchmarks/gpu_run.py --minutes 5          # on a GPU machine (docs/guide/gpu.md)
    python benchmarks/gpu_run.py --dry-run            # the same code on 1 CPU worker, < 1 min

Nothing is downloaded and no dataset need be given: the data are *digits-32*
(``hypersched_nb.train.digits32``), scikit-learn's 8×8 digits drawn again as 3×32×32 colour
images (rotated, scaled, sheared, shifted, coloured, noisy): 20,000 training images from the
1,437 training digits and 1,440 validation images from the 360 held-out ones, made on each
process in about a second. Why these: they carry a real signal (validation accuracy measures
unseen handwriting, and bad hyperparameters show), they have CIFAR-10's shape, so ResNet-18
runs as it would on CIFAR-10, and their number sets an epoch's length (1.2 s at batch size
256 to 3.2 s at 64 on an H200, training and validation), where the 1-D series of MNIST-1D
would leave a GPU idle and an uploaded file would spend the little room a lent machine takes.
``--data-root DIR`` trains on CIFAR-10 from ``DIR/cifar-10-batches-py`` instead.

What runs, in order, all inside ``--minutes``:

1. the *plain loop*: the same trainable (torchvision's ResNet-18 for 32×32 images, SGD, the
   same data) trained in this process on GPU 0, with no Dask, no scheduler, no checkpoints:
   one warm-up epoch, then two timed epochs for each batch size of the search space;
2. the search: ``hypersched_nb.Experiment`` over the trainable's space (lr, momentum, weight
   decay, batch size; TPE), policy ``--policy`` (HyperSched), on its normal path
   (``cluster=None``: one dask-cuda worker per GPU), with the deadline that leaves
   ``max(20 s, 8 %)`` of the budget for the end; NVML samples the GPUs meanwhile;
3. the figures, from the search's snapshot and its journal, as one JSON line.

A watchdog prints a JSON line with ``"status": "out of time"`` and exits 3 if the run has not
printed its figures 3 s before the budget ends (a cluster that would not start, say).

The JSON line's fields are explained in docs/guide/gpu.md. Without what a GPU run needs (a
CUDA GPU, dask-cuda, nvidia-ml-py, or any package the search imports) it exits 2 with one
line on stderr naming what is missing, before starting anything. ``--dry-run`` runs the
same code on 1 CPU worker process (``CUDA_VISIBLE_DEVICES=""``) within 54 s on 32
training images, with no GPU sampling: a check of this script's logic whose figures are CPU
figures (``"dry_run": true``).
"""

from __future__ import annotations

import time

STARTED = time.monotonic()  # the budget counts from here (the interpreter's start aside)

import argparse  # noqa: E402 - after the clock: the budget includes the imports
import importlib.util  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import traceback  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Mapping, Sequence  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import ClassVar  # noqa: E402

DRY_RUN = {"minutes": 0.9, "workers": 1, "max_epochs": 3, "train": 32, "val": 16}
GPU_RUN = {"minutes": 5.0, "max_epochs": 20, "train": 20_000, "val": 1_440}
BATCH_SIZES = (64, 128, 256)  # the trainable's space: the plain loop times each
WATCHDOG_EARLY_S = 3.0  # the watchdog speaks this long before the budget ends
MIN_SEARCH_S = 10.0
#: modules a run imports (package names for the missing line); dask-cuda and NVML: GPU only
NEEDED = {
    "torch": "torch", "torchvision": "torchvision", "sklearn": "scikit-learn",
    "optuna": "optuna", "dask": "dask", "distributed": "distributed",
}  # fmt: skip
NEEDED_GPU = {"dask_cuda": "dask-cuda", "pynvml": "nvidia-ml-py"}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--minutes", type=float, help="wall-clock budget of the whole run (default 5; dry 0.9)"
    )
    p.add_argument("--gpus", type=int, help="GPU workers (default: one per GPU torch sees)")
    p.add_argument("--max-epochs", type=int, help="epochs a trial may train (default 20; dry 3)")
    p.add_argument("--policy", default="hypersched", help="scheduling policy (default hypersched)")
    p.add_argument("--sampler", default="tpe", help="tpe, random or qmc (default tpe)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--train-images", type=int, help="digits-32 training images (default 20000)")
    p.add_argument("--val-images", type=int, help="digits-32 validation images (default 1440)")
    p.add_argument("--data-root", help="train on CIFAR-10 from DIR/cifar-10-batches-py instead")
    p.add_argument("--interval", type=float, default=0.5, help="seconds between GPU samples")
    p.add_argument("--checkpoint-dir", help="keep the search's checkpoints here (default: temp)")
    p.add_argument("--json", help="also write the figures to this file")
    p.add_argument(
        "--dry-run",
        "--cpu-smoke",
        action="store_true",
        help="the same code on 1 CPU worker, 54 s, 32 images, no GPU sampling",
    )
    return p


def _settle(args) -> None:
    """Fill in the defaults that depend on --dry-run."""
    base = DRY_RUN if args.dry_run else GPU_RUN
    args.minutes = args.minutes if args.minutes is not None else base["minutes"]
    args.max_epochs = args.max_epochs or base["max_epochs"]
    args.train_images = args.train_images or base["train"]
    args.val_images = args.val_images or base["val"]
    args.budget_s = 60.0 * args.minutes


# ------------------------------------------------------------------ what must be there


def missing_for_run(gpu: bool) -> str | None:
    """One line saying what this machine lacks for the run (None: nothing)."""
    needed = {**NEEDED, **(NEEDED_GPU if gpu else {})}
    absent = [package for module, package in needed.items() if not _importable(module)]
    lacks = []
    if gpu and "torch" not in absent:
        import torch

        if not torch.cuda.is_available():
            lacks.append(
                f"no CUDA GPU (torch.cuda.is_available() is False; torch {torch.__version__})"
            )
    if absent:
        lacks.append(f"{', '.join(absent)} not installed")
    if not lacks:
        return None
    fix = 'pip install ".[cuda]"' if gpu else 'pip install ".[test]"'
    dry = ", or add --dry-run for a CPU run" if gpu else ""
    return (
        f"gpu_run.py: {'; '.join(lacks)}: run it where {fix} has been installed "
        f"(offline GPU machines: docs/guide/gpu.md){dry}"
    )


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def check_args(args) -> str | None:
    """One line on what is wrong with the options (None: nothing)."""
    for name, value, low in (
        ("--gpus", args.gpus, 1),
        ("--train-images", args.train_images, 1),
        ("--val-images", args.val_images, 1),
        ("--max-epochs", args.max_epochs, 1),
    ):
        if value is not None and value < low:
            return f"gpu_run.py: {name} is {value}, but must be >= {low}"
    for name, value in (("--interval", args.interval), ("--minutes", args.minutes)):
        if not (math.isfinite(value) and value > 0):
            return f"gpu_run.py: {name} is {value}, but must be > 0"
    if args.data_root is not None and not (Path(args.data_root) / "cifar-10-batches-py").is_dir():
        return (
            f"gpu_run.py: --data-root {args.data_root} holds no cifar-10-batches-py folder "
            "(nothing is downloaded here); leave it out to train on digits-32"
        )
    if args.dry_run:
        return None
    import torch

    have = torch.cuda.device_count()
    if args.gpus is not None and args.gpus > have:
        return f"gpu_run.py: --gpus is {args.gpus}, but torch sees {have} CUDA GPU(s)"
    return None


# ------------------------------------------------------------------ the trainable


def resnet18_trainable():
    """``CIFARResNet18`` that also trains on digits-32 (``dataset="digits32"``).

    Made in a function so that importing this script (as Dask's worker processes do) stays
    light; Dask pickles the class by value."""
    from hypersched_nb.train.examples import CIFARResNet18

    class ResNet18(CIFARResNet18):
        __doc__ = CIFARResNet18.__doc__
        defaults: ClassVar[dict] = {
            **CIFARResNet18.defaults, "train_images": 20_000, "val_images": 1_440,
        }  # fmt: skip

        def load_data(self, config: dict):
            if config["dataset"] != "digits32":
                return super().load_data(config)
            from hypersched_nb.train.digits32 import digits32

            return digits32(train=int(config["train_images"]), val=int(config["val_images"]))

    return ResNet18


def fixed_config(args) -> dict:
    """The data settings every trial and the plain loop share."""
    if args.data_root is not None:
        return {"dataset": "cifar10", "data_root": str(args.data_root), "download": False}
    return {"dataset": "digits32", "augment": False, "train_images": args.train_images,
            "val_images": args.val_images}  # fmt: skip


def plain_loop(args, until: float) -> dict[int, float | None]:
    """Seconds of one epoch of the trainable's own ``step()`` per batch size, trained here
    on GPU 0 (a CPU thread in the dry run) with nothing around it: after one warm-up epoch,
    the median of two timed epochs (one in the dry run). Batch sizes of at least the
    training set's size train the same epoch (one batch), timed once. A batch size not
    reached by ``until`` (monotonic seconds) is None."""
    import torch

    from hypersched_nb.train.context import TrainContext

    device = "cpu" if args.dry_run else "cuda:0"
    if args.dry_run:
        torch.set_num_threads(1)  # as each single-threaded worker process
    cls, timed, seen = resnet18_trainable(), 1 if args.dry_run else 2, {}
    for batch in BATCH_SIZES:
        same = min(batch, args.train_images)  # the batch the loader really makes
        if same in seen or time.monotonic() >= until:
            continue
        trainable = cls()
        trainable.setup({**fixed_config(args), "batch_size": batch}, TrainContext(device=device))
        seconds = []
        for _ in range(timed + (1 if not seen or not args.dry_run else 0)):
            t0 = time.perf_counter()
            trainable.step()  # ends with .tolist(): the device has finished the epoch
            seconds.append(time.perf_counter() - t0)
        seen[same] = statistics.median(seconds[-timed:])
        trainable.teardown()
    if not args.dry_run:
        torch.cuda.empty_cache()  # leave the GPU to the worker
    return {batch: seen.get(min(batch, args.train_images)) for batch in BATCH_SIZES}


# ------------------------------------------------------------------ the search


def build_experiment(args, deadline_s: float, checkpoint_dir: str):
    """The search, on the normal path (``cluster=None``: a worker per GPU); nothing starts
    until its ``start()``."""
    from hypersched_nb import Experiment
    from hypersched_nb.train.examples import CIFARResNet18

    cluster = DRY_RUN["workers"] if args.dry_run else args.gpus  # None: every GPU
    return Experiment(
        resnet18_trainable(), {**CIFARResNet18.space(), **fixed_config(args)},
        metric="val_acc", mode="max", deadline=f"{deadline_s:.1f}s",
        max_epochs=args.max_epochs, policy=args.policy, cluster=cluster,
        sampler=args.sampler, seed=args.seed, checkpoint_dir=checkpoint_dir,
    )  # fmt: skip


def run_search(exp, sampler, every: float):
    """Run the search while ``sampler`` samples, with a progress line on stderr every
    ``every`` seconds; return ``(final snapshot, wall seconds, whether Ctrl-C stopped it)``."""
    interrupted = False
    t0 = time.perf_counter()
    sampler.start()
    try:
        exp.start()
        last = time.monotonic()
        while not exp.wait(0.5):
            if time.monotonic() - last >= every:
                _say(f"  {exp.statistics().progress_line()}")
                last = time.monotonic()
    except KeyboardInterrupt:
        interrupted = True
        _say("  stopping (Ctrl-C) ...")
        if exp.statistics().status != "created":
            exp.stop()
    finally:
        sampler.stop()
    return exp.statistics(), time.perf_counter() - t0, interrupted


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


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


# ------------------------------------------------------------------ the search's own times


def journal_results(checkpoint_dir: str) -> list[Mapping]:
    """Every ``Result`` the search's driver took in, from its journal, in order."""
    from hypersched_nb.experiment.journal import read_journal

    return [
        event
        for record in read_journal(checkpoint_dir).inputs()
        if record["k"] == "events"
        for event in record["events"]
        if event.get("type") == "Result"
    ]


def startup_times(results: Sequence[Mapping]) -> dict[str, list[float]]:
    """The runtime's own ``startup`` seconds before an epoch, by what preceded it: ``start``
    (a trial's first epoch: its worker builds the trainable), ``resize`` (a trial's worker
    count changed since its last epoch: checkpoint, a new process group, restore on every
    rank) and ``resume`` (same count, after a pause: the checkpoint read, checked and loaded
    on a worker, which is a migration when it is another one)."""
    out: dict[str, list[float]] = {"start": [], "resize": [], "resume": []}
    workers: dict[int, int] = {}
    for r in results:
        tid, startup = r["trial_id"], float(r["startup"])
        before = workers.get(tid)
        workers[tid] = r["workers"]
        if before is None:
            out["start"].append(startup)
        elif before != r["workers"]:
            out["resize"].append(startup)
        elif startup > 0:
            out["resume"].append(startup)
    return out


def _times(xs: Sequence[float]) -> dict:
    if not xs:
        return {"count": 0, "median_s": None, "max_s": None}
    return {"count": len(xs), "median_s": statistics.median(xs), "max_s": max(xs)}


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


def overhead(
    results: Sequence[Mapping],
    batch_of: Mapping[int, int],
    plain: Mapping[int, float | None],
    worker_seconds: float,
) -> dict:
    """The search against the plain loop, over the epochs whose batch size the plain loop
    timed: ``overhead_ratio`` = the search's worker-seconds (every worker, from ``start()``
    to the end, the cluster's start included) / the plain loop's seconds for the epochs the
    search trained; ``epoch_ratio`` = the median over epochs of (the epoch's seconds + its
    startup) / the plain loop's epoch at its batch size (the cost inside an epoch alone)."""
    plain_total, ratios = 0.0, []
    for r in results:
        base = plain.get(batch_of.get(r["trial_id"]))
        if base:
            plain_total += base * r["workers"]
            ratios.append((float(r["seconds"]) + float(r["startup"])) / base)
    compared = len(ratios) == len(results)
    return {
        "overhead_ratio": worker_seconds / plain_total if plain_total and compared else None,
        "epoch_ratio": statistics.median(ratios) if ratios else None,
        "plain_s_for_these_epochs": plain_total,
    }


# ------------------------------------------------------------------ the JSON line


def figures(args, run: Mapping) -> dict:
    """The one JSON line (see docs/guide/gpu.md)."""
    snap, results, plain = run["snap"], run["results"], run["plain"]
    batch_of = {row.trial_id: int(row.config.get("batch_size", 0)) for row in snap.trials}
    worker_s = available_worker_seconds(snap.capacity, snap.time)
    util = None if args.dry_run else utilisation_summary(run["samples"])["overall"]
    starts = startup_times(results)
    best = snap.best
    return {
        "status": "stopped by Ctrl-C" if run["interrupted"] else snap.status,
        "dry_run": args.dry_run,
        "device": run["device"],
        "workers": snap.workers,
        "minutes": args.minutes,
        "wall_s": time.monotonic() - STARTED,
        "search_s": snap.time,
        "cluster_start_s": snap.capacity[0][0] if snap.capacity else None,
        "gpu_busy_pct": None if util is None else util["busy_pct"],
        "gpu_active_share": None if util is None else util["active_share"],
        "gpu_samples": None if util is None else util["samples"],
        **overhead(results, batch_of, plain, worker_s),
        "worker_s": worker_s,
        "plain_epoch_s": {str(b): s for b, s in plain.items()},
        "trials": sum(1 for r in snap.trials if r.started_at is not None),
        "epochs": len(results),
        "best_val_acc": None if best is None else best.metric,
        "best_trial": None if best is None else best.trial_id,
        "best_epoch": None if best is None else best.epoch,
        "best_config": None if best is None else _searched(best.config),
        "start_s": _times(starts["start"]),
        "resize_s": _times(starts["resize"]),
        "resume_s": _times(starts["resume"]),
        "policy": args.policy,
        "max_epochs": args.max_epochs,
        "data": run["data"],
        "error": snap.error,
    }


def _searched(config: Mapping) -> dict:
    return {k: config[k] for k in ("lr", "momentum", "weight_decay", "batch_size") if k in config}


def _plain(value):
    """JSON-ready: NaN and infinities as None, floats to 4 significant digits."""
    if isinstance(value, float):
        return float(f"{value:.4g}") if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def emit(fig: Mapping, json_path: str | None = None) -> None:
    """The JSON line on stdout (and, indented, in ``json_path``)."""
    fig = _plain(fig)
    print(json.dumps(fig, allow_nan=False), flush=True)
    if json_path:
        Path(json_path).write_text(json.dumps(fig, indent=2, allow_nan=False) + "\n")


class Watchdog:
    """At ``at`` (monotonic seconds), print a JSON line saying the run is out of time, with
    the phase it was in, and end the process with status 3; ``cancel()`` once the figures
    are out."""

    def __init__(self, at: float, args) -> None:
        self.phase = "starting"
        self._args = args
        self._lock = threading.Lock()
        self._done = False
        self._timer = threading.Timer(max(0.0, at - time.monotonic()), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def cancel(self) -> None:
        with self._lock:
            self._done = True
        self._timer.cancel()

    def _fire(self) -> None:
        with self._lock:
            if self._done:
                return
            self._done = True
            emit({"status": "out of time", "phase": self.phase, "dry_run": self._args.dry_run,
                  "minutes": self._args.minutes, "wall_s": time.monotonic() - STARTED})  # fmt: skip
            os._exit(3)


# ------------------------------------------------------------------ main


def _prepare(args) -> int | None:
    """Check what a run needs, in one line on stderr: an exit status where it cannot run."""
    problem = missing_for_run(gpu=not args.dry_run) or check_args(args)
    if problem is not None:
        print(problem, file=sys.stderr)
        return 2
    if args.dry_run:
        os.environ["CUDA_VISIBLE_DEVICES"] = ""  # CPU workers, even on a GPU host
    return None


def _device(args) -> str:
    if args.dry_run:
        return "cpu (dry run)"
    import torch

    return torch.cuda.get_device_name(0)


def _search_budget(args) -> float:
    """Seconds the search may take from now: what is left, less the end's reserve."""
    reserve = max(20.0, 0.08 * args.budget_s) if not args.dry_run else 8.0
    return STARTED + args.budget_s - time.monotonic() - reserve


class Refused(Exception):
    """What is wrong, in one line for stderr, before the search starts (exit status 2)."""


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    _settle(args)
    status = _prepare(args)
    if status is not None:
        return status
    watchdog = Watchdog(STARTED + args.budget_s - WATCHDOG_EARLY_S, args)
    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "error")  # here and in the workers
    warnings.filterwarnings("ignore", message=r"Port \d+ is already in use")
    try:
        fig = run(args, watchdog)
    except Refused as exc:
        watchdog.cancel()
        print(f"gpu_run.py: {exc}", file=sys.stderr)
        return 2
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - said in the JSON line
        watchdog.cancel()
        traceback.print_exc()
        fig = {"status": "failed", "phase": watchdog.phase, "error": f"{type(exc).__name__}: "
               f"{exc}", "dry_run": args.dry_run, "minutes": args.minutes,
               "wall_s": time.monotonic() - STARTED}  # fmt: skip
    watchdog.cancel()
    emit(fig, args.json)
    return 0 if fig.get("best_val_acc") is not None else 1


def run(args, watchdog: Watchdog) -> dict:
    """The plain loop, the search and the figures (see the module's docstring)."""
    from hypersched_nb.errors import HyperschedError

    folder = args.checkpoint_dir or tempfile.mkdtemp(prefix="gpu_run-")
    try:
        try:  # a bad --policy or --sampler says so now, not after the plain loop
            build_experiment(args, 60.0, folder)
        except HyperschedError as exc:
            raise Refused(str(exc)) from None
        watchdog.phase = "plain loop"
        plain = plain_loop(args, until=STARTED + 0.25 * args.budget_s)
        _say(f"plain loop, seconds per epoch by batch size: {plain}")
        deadline_s = _search_budget(args)
        if deadline_s < MIN_SEARCH_S:
            raise Refused(
                f"--minutes {args.minutes:g} leaves {deadline_s:.0f} s for the search, but it "
                f"needs >= {MIN_SEARCH_S:g} s: give more minutes"
            )
        exp = build_experiment(args, deadline_s, folder)
        gpus = args.gpus or (0 if args.dry_run else _cuda_count())
        sampler = NoSampler() if args.dry_run else NvmlSampler(gpus, args.interval)
        _say(f"search: {args.policy}, deadline {deadline_s:.0f} s, {_data(args)}")
        watchdog.phase = "search"
        snap, _, interrupted = run_search(exp, sampler, 5.0 if args.dry_run else 20.0)
        watchdog.phase = "figures"
        results = journal_results(folder)
    finally:
        if args.checkpoint_dir is None:
            shutil.rmtree(folder, ignore_errors=True)
    return figures(args, {"snap": snap, "results": results, "plain": plain,
                          "samples": sampler.samples, "interrupted": interrupted,
                          "device": _device(args), "data": _data(args)})  # fmt: skip


def _cuda_count() -> int:
    import torch

    return torch.cuda.device_count()


def _data(args) -> str:
    if args.data_root:
        return f"CIFAR-10 from {args.data_root}"
    return f"digits-32, {args.train_images} train / {args.val_images} validation images"


if __name__ == "__main__":
    sys.exit(main())
