"""The same small ASHA search through hypersched_nb and through Ray Tune.

    python benchmarks/ray_tune_asha.py [--configs 60] [--deadline 90] [--max-epochs 27]
                                       [--min-epochs 1] [--eta 3] [--workers 2] [--seeds 0,1]
                                       [--ray-variants default,reuse]

Needs ``ray[tune]``, which is not a dependency of hypersched_nb (nor of CI): install it in a
separate environment next to the package (see "Ray Tune ASHA" in benchmarks/RESULTS.md). Without
it the script says so on one line and exits with status 2.

For each seed, ``--configs`` configurations of the shipped ``DigitsCNN`` example are drawn
once from ``DigitsCNN.space()`` (Optuna's RandomSampler with that seed) and the identical
list is searched, one after the other on this machine, by:

* **hypersched_nb**: ``Experiment(DigitsCNN, configs, policy="asha", cluster=<workers>)`` on
  the default embedded Dask ``LocalCluster`` (one single-threaded worker process per slot);
* **Ray Tune**: ``Tuner`` with ``ASHAScheduler(grace_period=r, max_t=R, reduction_factor=η)``
  (one bracket, ``stop_last_trials=True``: the rule ``core/policies/_asha.py`` copies),
  ``ray.init(num_cpus=<workers>)`` on this machine, each trial 1 CPU, at most ``<workers>``
  trials at once, trials in the list's order (a grid over the list's index), the same
  Trainable wrapped in a function trainable (``setup`` then ``step`` + ``tune.report`` per
  epoch; it returns after a non-finite metric, as hypersched_nb's driver stops a diverged
  trial). Variants: ``default`` (Ray's defaults: a fresh actor process per trial) and
  ``reuse`` (``reuse_actors=True``: trials reuse the actor processes).

Both run every trial with the same seed (``SeedSequence([seed, index])``, hypersched_nb's
per-trial seed), one torch thread and the same RNG seeding, so a configuration's learning
curve is the same in both (checked: the "same curves" column counts the trials both trained
whose shared epochs agree exactly). They differ only in how they schedule and what they cost.

The deadline counts for both from the moment before the cluster starts (``Experiment.start()``
/ ``ray.init``): hypersched_nb's driver stops everything at it; Ray gets
``time_budget_s`` = the deadline less its own start-up, and only results reported (by the
worker's wall clock) before the deadline count. "best" is the best metric reported by then,
"trials" the trials started by then, "epochs" the epochs reported by then, "wall" the
end-to-end time from before the cluster started to after it was shut down, "1st result s"
the time from that moment to the first epoch reported (hypersched_nb: seen by a snapshot
every 50 ms), "r-epoch trial s" the median time, as the framework's driver sees it, from
starting a trial to ending it for the trials that ASHA stopped after their first r epochs
(what one more configuration costs: start-up, r epochs and the stop).
No network, no checkpoint upload: Ray writes its experiment state under a temporary folder,
its auto loggers (CSV/JSON/TensorBoard) and usage statistics are off.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import statistics
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field

METRIC, MODE = "val_acc", "max"


@dataclass
class Row:
    framework: str
    seed: int
    best: float
    trials: int
    epochs: int
    wall: float
    first_result: float
    short_trial: float  # median seconds, start to stop, of the trials stopped after r epochs
    curves: dict = field(default_factory=dict)  # config index -> metrics by epoch (by the deadline)


def sample_configs(n: int, seed: int) -> list[dict]:
    """``n`` configurations of ``DigitsCNN.space()`` drawn by Optuna's RandomSampler(seed)."""
    from hypersched_nb.experiment.space import OptunaSource
    from hypersched_nb.train.examples import DigitsCNN

    return list(OptunaSource(DigitsCNN.space(), sampler="random", seed=seed, max_configs=n))


def trial_seed(seed: int, index: int) -> int:
    """The seed hypersched_nb's DaskRuntime gives trial ``index`` (``ctx.seed``)."""
    import numpy as np

    return int(np.random.SeedSequence([seed, index]).generate_state(1)[0])


# ---------------------------------------------------------------------------- hypersched_nb


def run_hypersched(configs: list[dict], args, seed: int) -> Row:
    from hypersched_nb.experiment.experiment import Experiment
    from hypersched_nb.train.examples import DigitsCNN

    with tempfile.TemporaryDirectory(prefix="hs-asha-") as ckpt:
        t0 = time.perf_counter()
        exp = Experiment(
            DigitsCNN, configs, metric=METRIC, mode=MODE, deadline=float(args.deadline),
            max_epochs=args.max_epochs, min_epochs=args.min_epochs, eta=args.eta,
            policy="asha", cluster=args.workers, seed=seed, checkpoint_dir=ckpt,
        )  # fmt: skip
        exp.start()  # the deadline counts from here, cluster start included
        first = math.nan
        while not exp.wait(0.05):  # a snapshot every 50 ms until the first epoch is reported
            if any(t.metrics for t in exp.statistics().trials):
                first = time.perf_counter() - t0
                break
        exp.wait()
        wall = time.perf_counter() - t0
        snap = exp.statistics()
    short = [
        t.stopped_at - t.started_at
        for t in snap.trials
        if len(t.metrics) == args.min_epochs and t.stopped_at is not None and t.starts == 1
    ]
    return Row(
        "hypersched_nb asha", seed,
        best=snap.best.metric if snap.best is not None else math.nan,
        trials=sum(1 for t in snap.trials if t.starts),
        epochs=sum(len(t.metrics) for t in snap.trials),
        wall=wall, first_result=first, short_trial=_median(short),
        curves={t.trial_id: list(t.metrics) for t in snap.trials if t.metrics},
    )  # fmt: skip


# ---------------------------------------------------------------------------- Ray Tune

_RESULTS: list[tuple[float, int, int, float]] = []  # (wall, index, epoch, metric), driver side
_STARTS: dict[int, float] = {}  # config index -> wall time Tune started it
_ENDS: dict[int, float] = {}  # config index -> wall time Tune saw it end


def _ray_trainable(configs: list[dict], seed: int, max_epochs: int):
    """A Ray function trainable that trains ``configs[index]`` like a hypersched_nb worker."""

    def train(cfg: dict) -> None:
        import random

        import numpy as np
        import torch
        from ray import tune

        from hypersched_nb.train.examples import DigitsCNN
        from hypersched_nb.train.trainable import TrainContext

        index = int(cfg["index"])
        s = trial_seed(seed, index)
        torch.set_num_threads(1)  # as in a Dask worker (OMP_NUM_THREADS=1)
        random.seed(s)
        np.random.seed(s % 2**32)
        torch.manual_seed(s)
        model = DigitsCNN()
        model.setup(configs[index], TrainContext(trial_id=index, seed=s))
        for _ in range(max_epochs):
            out = model.step()
            tune.report({**out, "wall": time.time()})
            if not math.isfinite(out[METRIC]):
                return  # diverged: hypersched_nb's driver stops such a trial too

    return train


def run_ray(configs: list[dict], args, seed: int, reuse: bool) -> Row:
    import ray
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler

    class Collect(tune.Callback):
        def on_trial_start(self, iteration, trials, trial, **info):
            _STARTS[int(trial.config["index"])] = time.time()

        def on_trial_complete(self, iteration, trials, trial, **info):
            _ENDS[int(trial.config["index"])] = time.time()

        def on_trial_result(self, iteration, trials, trial, result, **info):
            _RESULTS.append(
                (result["wall"], int(trial.config["index"]), int(result["training_iteration"]), float(result[METRIC]))
            )  # fmt: skip

    _RESULTS.clear()
    _STARTS.clear()
    _ENDS.clear()
    with tempfile.TemporaryDirectory(prefix="ray-asha-") as storage:
        t0_wall, t0 = time.time(), time.perf_counter()
        ray.init(
            num_cpus=args.workers, include_dashboard=False, log_to_driver=False,
            logging_level="ERROR", object_store_memory=256 * 2**20,
        )  # fmt: skip
        try:
            scheduler = ASHAScheduler(
                time_attr="training_iteration", max_t=args.max_epochs,
                grace_period=args.min_epochs, reduction_factor=args.eta,
                brackets=1, stop_last_trials=True,
            )  # fmt: skip
            trainable = tune.with_resources(
                _ray_trainable(configs, seed, args.max_epochs), {"cpu": 1}
            )
            budget = max(1.0, args.deadline - (time.perf_counter() - t0))
            tuner = tune.Tuner(
                trainable,
                param_space={"index": tune.grid_search(list(range(len(configs))))},
                tune_config=tune.TuneConfig(
                    metric=METRIC,
                    mode=MODE,
                    scheduler=scheduler,
                    num_samples=1,
                    max_concurrent_trials=args.workers,
                    time_budget_s=budget,
                    reuse_actors=reuse,
                ),
                run_config=tune.RunConfig(
                    name="asha",
                    storage_path=storage,
                    verbose=0,
                    callbacks=[Collect()],
                    checkpoint_config=tune.CheckpointConfig(checkpoint_at_end=False),
                ),
            )
            tuner.fit()
        finally:
            ray.shutdown()
        wall = time.perf_counter() - t0
    end = t0_wall + args.deadline
    counted = [r for r in _RESULTS if r[0] <= end]
    curves: dict[int, list[float]] = {}
    for _, index, _epoch, metric in sorted(counted, key=lambda r: (r[1], r[2])):
        curves.setdefault(index, []).append(metric)
    finite = [m for *_, m in counted if math.isfinite(m)]
    short = [
        _ENDS[i] - _STARTS[i]
        for i, c in curves.items()
        if len(c) == args.min_epochs and i in _ENDS and i in _STARTS and _ENDS[i] <= end
    ]
    return Row(
        "Ray Tune ASHA" + (" (reuse_actors)" if reuse else ""), seed,
        best=max(finite) if finite else math.nan,
        trials=sum(1 for t in _STARTS.values() if t <= end), epochs=len(counted), wall=wall,
        first_result=min(r[0] for r in counted) - t0_wall if counted else math.nan,
        short_trial=_median(short), curves=curves,
    )  # fmt: skip


# ---------------------------------------------------------------------------- report


def _median(values) -> float:
    values = list(values)
    return statistics.median(values) if values else math.nan


def same_curves(a: Row, b: Row) -> tuple[int, int]:
    """(trials both trained whose shared epochs agree exactly, trials both trained)."""
    both = sorted(set(a.curves) & set(b.curves))
    same = 0
    for i in both:
        n = min(len(a.curves[i]), len(b.curves[i]))
        x, y = a.curves[i][:n], b.curves[i][:n]
        same += all(p == q or (math.isnan(p) and math.isnan(q)) for p, q in zip(x, y, strict=True))
    return same, len(both)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--configs", type=int, default=60, help="configurations per search")
    p.add_argument("--deadline", type=float, default=90.0, help="seconds, cluster start included")
    p.add_argument("--max-epochs", type=int, default=27, help="R (Ray: max_t)")
    p.add_argument("--min-epochs", type=int, default=1, help="r (Ray: grace_period)")
    p.add_argument("--eta", type=float, default=3, help="η (Ray: reduction_factor)")
    p.add_argument("--workers", type=int, default=2, help="worker processes / Ray CPUs")
    p.add_argument("--seeds", default="0,1")
    p.add_argument("--ray-variants", default="default,reuse", help="default, reuse or both")
    args = p.parse_args()

    if importlib.util.find_spec("ray") is None or importlib.util.find_spec("ray.tune") is None:
        print(
            "ray_tune_asha: Ray Tune is not installed here (pip install 'ray[tune]' in a separate "
            "environment, see benchmarks/RESULTS.md); nothing to compare",
            file=sys.stderr,
        )
        return 2
    variants = [v.strip() for v in args.ray_variants.split(",") if v.strip()]
    if not variants or set(variants) - {"default", "reuse"}:
        p.error(f"--ray-variants is {args.ray_variants!r}, but must list 'default' and/or 'reuse'")

    # no network, no telemetry, quiet workers; Ray's auto CSV/JSON/TensorBoard loggers off
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "1")
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "error")
    warnings.filterwarnings("ignore")

    rows: list[Row] = []
    for seed in [int(s) for s in args.seeds.split(",")]:
        configs = sample_configs(args.configs, seed)
        hs = run_hypersched(configs, args, seed)
        rows.append(hs)
        print(_line(hs, hs), flush=True)
        for v in variants:
            ray_row = run_ray(configs, args, seed, reuse=v == "reuse")
            rows.append(ray_row)
            print(_line(ray_row, hs), flush=True)

    print(
        f"\nSame ASHA search (DigitsCNN on digits, {args.configs} configurations, r={args.min_epochs}, "
        f"R={args.max_epochs}, eta={args.eta:g}, {args.workers} CPU workers, deadline {args.deadline:g} s "
        "counted from cluster start)"
    )
    print(_header())
    for row in rows:
        hs = next(r for r in rows if r.seed == row.seed and r.framework.startswith("hypersched"))
        print(_line(row, hs))
    frameworks = list(dict.fromkeys(r.framework for r in rows))
    if len({r.seed for r in rows}) > 1:
        print("\nMedians over seeds (ratios: framework / hypersched_nb of the same seed)")
        print(_header())
        for fw in frameworks:
            mine = [r for r in rows if r.framework == fw]
            pairs = [
                (r, next(h for h in rows if h.seed == r.seed and h.framework == frameworks[0]))
                for r in mine
            ]
            med = Row(
                fw, -1, statistics.median(r.best for r in mine),
                round(statistics.median(r.trials for r in mine)),
                round(statistics.median(r.epochs for r in mine)),
                statistics.median(r.wall for r in mine),
                statistics.median(r.first_result for r in mine),
                statistics.median(r.short_trial for r in mine),
            )  # fmt: skip
            ratios = (
                statistics.median(r.epochs / h.epochs for r, h in pairs),
                statistics.median(r.wall / h.wall for r, h in pairs),
            )
            print(_line(med, None, ratios=ratios))
    return 0


def _header() -> str:
    return (
        f"{'framework':<30} {'seed':>4} {'best ' + METRIC:>12} {'trials':>7} {'epochs':>7} "
        f"{'1st result s':>12} {'r-epoch trial s':>15} {'wall s':>7} {'epochs ratio':>13} {'wall ratio':>11} {'same curves':>12}"
    )


def _line(row: Row, hs: Row | None, ratios: tuple[float, float] | None = None) -> str:
    if ratios is None and hs is not None:
        ratios = (row.epochs / hs.epochs if hs.epochs else math.nan, row.wall / hs.wall)
    same = ""
    if hs is not None and row is not hs:
        s, n = same_curves(row, hs)
        same = f"{s}/{n}"
    seed = "med" if row.seed < 0 else str(row.seed)
    return (
        f"{row.framework:<30} {seed:>4} {row.best:12.4f} {row.trials:7d} {row.epochs:7d} "
        f"{row.first_result:12.1f} {row.short_trial:15.2f} {row.wall:7.1f} {ratios[0]:13.2f} {ratios[1]:11.2f} {same:>12}"
    )


if __name__ == "__main__":
    sys.exit(main())
