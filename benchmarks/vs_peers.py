"""Our search against what a user would run instead, live, on the same cores, one after another.

    python benchmarks/vs_peers.py [--trainables digits,mnist1d,cosine] [--fractions 0.25,0.5,1]
        [--seeds 10] [--workers 2] [--max-epochs 100] [--full-seconds S] [--systems ...]
        [--json PATH] [--dry-run]

Systems (``--systems``, all by default):

* ``hypersched``: ``Experiment(trainable, trainable.space(), policy="hypersched",
  cluster=W, deadline=D, max_epochs=E, seed=s)`` (our default, which tries the trainable's
  own defaults first; a checkpoint folder is given so that its journal holds every result
  with its time);
* ``asha``: the same with ``policy="asha"``;
* ``tpe-sha``: Optuna, ``TPESampler(seed=s, constant_liar=True)`` with
  ``SuccessiveHalvingPruner(min_resource=1, reduction_factor=4)``;
* ``tpe-hyperband``: the same sampler with ``HyperbandPruner(min_resource=1,
  max_resource=E, reduction_factor=4)``;
* ``ray-asha``: Ray Tune, ``Tuner`` with ``ASHAScheduler(max_t=E, grace_period=1,
  reduction_factor=4)``, TPE through ``OptunaSearch`` (seeded, ``constant_liar=True``) on
  the same Optuna space, ``reuse_actors=True``, ``max_concurrent_trials=W``,
  ``time_budget_s=D``, the same Trainable in a function trainable; ``ray.init`` once before
  the runs. Left out, said in one line, where ``ray[tune]`` is not installed (it is not a
  dependency of hypersched_nb, nor of CI);
* ``hypersched-ended``: our default with its sampler told of a trial only when the trial
  ends, not when it pauses (as before the sampler heard every trial's evidence as it
  arrived): that change's effect on its own;
* ``tpe-sha+defaults``: ``tpe-sha`` with the trainable's defaults enqueued first
  (``study.enqueue_trial``), as ours tries them first by default (``points_to_evaluate``):
  what a user who knows to do that would run, and so the part of our lead that is not the
  defaults'.

Optuna runs ``study.optimize(objective, n_jobs=W, timeout=D)`` in this process: the
objective builds the same Trainable class (configuration: the trainable's defaults under
the values drawn from its ``space()``; trial seed ``SeedSequence([s, trial number])``, as
our Dask runtime gives it), calls ``setup`` and then ``step`` per epoch, reports the metric
each epoch and is pruned when the pruner says so; it returns after a non-finite metric (a
diverged trial, as our driver stops one) and stops at the deadline. Torch runs one thread
per trial in both (our Dask workers are single-threaded processes).

Trainables: ``digits`` (:class:`DigitsCNN`), ``mnist1d`` (:class:`MNIST1DCNN`, constant
rate) and ``cosine`` (:class:`MNIST1DCosine`: warm-up and cosine annealing, whose first
epochs rank configurations less faithfully). Deadlines: each ``--fractions`` × the time to
train the trainable's default configuration for ``--max-epochs`` epochs on one worker
(measured once per trainable in this process at the start, unless ``--full-seconds``).

Scoring, the same for every system: the best metric reported at or before the deadline,
counted from the call that starts the search (start-up included). Ours: each result's time
on the search's clock (0 = ``start()``) plus the time from before ``Experiment(...)`` to
``start()``; Optuna: ``time.monotonic()`` at each report less the time before ``optimize``.
Values after the deadline never count. A run with no value by the deadline scores 0 (an
accuracy no search is below). Per system and cell: mean, median, 10th percentile (numpy's
linear interpolation), the paired win/tie/loss against ``hypersched`` (same seed; win:
the system's score is higher) and the median time from the call to the first value (start-up
and one epoch; how many runs had none by the deadline). For ``hypersched`` also the share of its trials whose
evidence its TPE sampler holds at the end (``exp.source.told / exp.source.offered``).

``--dry-run``: one seed of ``digits``, a deadline of ``--full-seconds`` (6 unless given),
3 epochs: the whole pipeline in seconds per system. Before a trainable's runs this process
sets it up once, so that the first Optuna study does not pay the imports and the data
loading that later ones (and a user's second study) do not; likewise our local cluster is
started once before the runs, each of its workers sets up each trainable once, and it stays
warm between them, as it does between a notebook's searches (each search still starts its
own client, driver and trials). Without that set-up, the first search of each trainable
paid about 3 s per worker to load it, and at these deadlines that closed its admission.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import shutil
import statistics
import sys
import tempfile
import time
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

METRIC, MODE = "val_acc", "max"
MISSING = 0.0  # the score of a run with no value by its deadline
SYSTEMS = (
    "hypersched", "asha", "tpe-sha", "tpe-hyperband", "tpe-sha+defaults", "ray-asha",
    "hypersched-ended",
)  # fmt: skip
DEFAULT = "hypersched"


# ---------------------------------------------------------------------------- scoring


def best_by(values, deadline: float, *, missing: float = MISSING) -> float:
    """The highest finite metric among ``values`` (``(seconds since the call, metric)``)
    reported at or before ``deadline``; ``missing`` when there is none."""
    kept = [m for t, m in values if t <= deadline and math.isfinite(m)]
    return max(kept) if kept else missing


def paired(ours: dict[int, float], theirs: dict[int, float]) -> tuple[int, int, int]:
    """(wins, ties, losses) of ``theirs`` against ``ours`` over the seeds both ran: a win is
    a higher score on the same seed."""
    seeds = sorted(set(ours) & set(theirs))
    wins = sum(1 for s in seeds if theirs[s] > ours[s])
    losses = sum(1 for s in seeds if theirs[s] < ours[s])
    return wins, len(seeds) - wins - losses, losses


def summary(scores: list[float]) -> dict[str, float]:
    """Mean, median and 10th percentile (linear interpolation) of a cell's scores."""
    return {
        "mean": statistics.fmean(scores),
        "median": statistics.median(scores),
        "p10": float(np.percentile(scores, 10)),
    }


@dataclass(frozen=True)
class Run:
    """One search: its cell, its score, and every timed value it reported."""

    trainable: str
    fraction: float
    deadline: float
    system: str
    seed: int
    score: float
    values: list = field(default_factory=list)  # (seconds since the call, metric)
    trials: int = 0
    wall: float = 0.0  # from the call to the search's end
    told: int | None = None  # ours: trials the sampler has heard from
    offered: int | None = None


# ---------------------------------------------------------------------------- trainables


def trainables() -> dict:
    from hypersched_nb.train.examples import MNIST1DCNN, DigitsCNN, MNIST1DCosine

    return {"digits": DigitsCNN, "mnist1d": MNIST1DCNN, "cosine": MNIST1DCosine}


def trial_seed(seed: int, number: int) -> int:
    """The seed our Dask runtime gives trial ``number`` of a search seeded ``seed``."""
    return int(np.random.SeedSequence([seed, number]).generate_state(1)[0])


def full_seconds(cls, max_epochs: int) -> float:
    """Seconds to set up and train ``cls``'s default configuration for ``max_epochs`` epochs
    in this process on one thread (0 epochs: this process warmed, imports and data loaded,
    so that the first Optuna study does not pay what later ones do not)."""
    import torch

    from hypersched_nb.train.trainable import TrainContext

    torch.set_num_threads(1)
    t0 = time.monotonic()
    model = cls()
    model.setup({}, TrainContext(trial_id=0, seed=trial_seed(0, 0)))
    for _ in range(max_epochs):
        model.step()
    return time.monotonic() - t0


# ---------------------------------------------------------------------------- ours


@contextlib.contextmanager
def told_when_over_only(on: bool):
    """While ``on``: our search's sampler hears of a trial only when it ends, not when it
    pauses (as before it heard every trial's evidence as it arrived): the sampler change's
    effect on its own (system ``hypersched-ended``)."""
    from hypersched_nb.experiment._search import Heard

    paused = Heard.paused
    if on:
        Heard.paused = lambda self, trial: None
    try:
        yield
    finally:
        Heard.paused = paused


def run_ours(
    cls, policy: str, *, deadline: float, workers: int, max_epochs: int, seed: int,
    ended_only: bool = False,
):  # fmt: skip
    """One live search of ours; returns (timed best-so-far values, trials, wall, told,
    offered)."""
    from hypersched_nb.experiment.compare import best_so_far
    from hypersched_nb.experiment.experiment import Experiment
    from hypersched_nb.experiment.journal import read_journal

    with told_when_over_only(ended_only), search_folder() as folder:
        t0 = time.monotonic()
        exp = Experiment(
            cls, cls.space(), metric=METRIC, mode=MODE, policy=policy, cluster=workers,
            deadline=float(deadline), max_epochs=max_epochs, seed=seed, checkpoint_dir=folder,
        )  # fmt: skip
        offset = time.monotonic() - t0
        exp.start()  # the search's clock starts here, the cluster's start-up included
        exp.wait()
        wall = time.monotonic() - t0
        curve = best_so_far(read_journal(folder))
        trials = sum(1 for t in exp.statistics().trials if t.starts)
    values = [(t + offset, m) for t, m in curve]
    return values, trials, wall, exp.source.told, exp.source.offered


@contextlib.contextmanager
def search_folder():
    """A temporary folder for one search, removed after it. Nothing is written into it once
    ``wait()`` has returned (the runtime's close quiesces the workers); a file that was is
    named, with its age, rather than left to a bare "Directory not empty"."""
    folder = tempfile.mkdtemp(prefix="vs-peers-")
    try:
        yield folder
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    try:
        shutil.rmtree(folder)
    except OSError as exc:
        root = Path(folder)
        late = [f"{p.relative_to(root)} ({_age(p)})" for p in root.rglob("*")]
        raise RuntimeError(f"written into the search's folder after it ended: {late}") from exc


def _age(path: Path) -> str:
    try:
        return f"{time.time() - path.stat().st_mtime:.2f} s old"
    except FileNotFoundError:
        return "gone since"


# ---------------------------------------------------------------------------- Optuna


def suggest(trial, space: dict) -> dict:
    """A configuration of ``space`` drawn through ``trial``'s public suggest API."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    config = {}
    for name, d in space.items():
        if isinstance(d, FloatDistribution):
            config[name] = trial.suggest_float(name, d.low, d.high, log=d.log, step=d.step)
        elif isinstance(d, IntDistribution):
            config[name] = trial.suggest_int(name, d.low, d.high, log=d.log, step=d.step)
        elif isinstance(d, CategoricalDistribution):
            config[name] = trial.suggest_categorical(name, d.choices)
        elif isinstance(d, list):
            config[name] = trial.suggest_categorical(name, d)
        else:
            config[name] = d
    return config


def objective_of(cls, *, seed: int, max_epochs: int, deadline: float, t0: float, values: list):
    """The Optuna objective: trains ``cls`` in-process, reports each epoch, prunes, appends
    ``(seconds since t0, metric)`` to ``values`` for each epoch ended by the deadline."""
    import optuna

    from hypersched_nb.train.trainable import TrainContext

    def objective(trial) -> float:
        model = cls()
        model.setup(suggest(trial, cls.space()), TrainContext(trial_id=trial.number, seed=trial_seed(seed, trial.number)))  # fmt: skip
        last = math.nan
        for epoch in range(1, max_epochs + 1):
            if time.monotonic() - t0 >= deadline:
                break  # the deadline: stop the trial
            last = float(model.step()[METRIC])
            at = time.monotonic() - t0
            if at <= deadline:
                values.append((at, last))
            if not math.isfinite(last):
                return last  # diverged: our driver stops such a trial too
            trial.report(last, epoch)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return last

    return objective


def run_optuna(
    cls, pruner: str, *, deadline: float, workers: int, max_epochs: int, seed: int,
    defaults: bool = False,
):  # fmt: skip
    """One Optuna study (``defaults``: the trainable's defaults enqueued first, resolved as
    ours are); returns (timed values, trials, wall)."""
    import optuna
    import torch

    from hypersched_nb.experiment.first_points import first_points

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    torch.set_num_threads(1)  # one thread per trial, as a single-threaded Dask worker
    if pruner == "sha":
        chosen = optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=4)
    else:
        chosen = optuna.pruners.HyperbandPruner(
            min_resource=1, max_resource=max_epochs, reduction_factor=4
        )
    values: list = []
    t0 = time.monotonic()
    study = optuna.create_study(
        direction="maximize",
        sampler=optuna.samplers.TPESampler(seed=seed, constant_liar=True),
        pruner=chosen,
    )
    for point in first_points("defaults", trainable=cls, space=cls.space()) if defaults else ():
        study.enqueue_trial(point)
    objective = objective_of(cls, seed=seed, max_epochs=max_epochs, deadline=deadline, t0=t0, values=values)  # fmt: skip
    study.optimize(objective, n_jobs=workers, timeout=deadline, catch=(Exception,))
    wall = time.monotonic() - t0
    return sorted(values), len(study.trials), wall


# ---------------------------------------------------------------------------- Ray Tune


def ray_installed() -> bool:
    import importlib.util

    return (
        importlib.util.find_spec("ray") is not None
        and importlib.util.find_spec("ray.tune") is not None
    )


def start_ray(workers: int) -> None:
    """``ray.init`` once before the runs, as our cluster is started once (Ray's trial actors
    still start in each run, as each of our searches starts its trials)."""
    import os

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "1")
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    import ray

    ray.init(
        num_cpus=workers, include_dashboard=False, log_to_driver=False, logging_level="ERROR",
        object_store_memory=256 * 2**20,
    )  # fmt: skip


def ray_trainable(cls, seed: int, max_epochs: int):
    """A Ray function trainable that trains ``cls`` as a Dask worker of ours does: one torch
    thread, a trial seed from its trial id, ``(wall time, metric)`` reported per epoch."""

    def train(config: dict) -> None:
        import torch
        from ray import tune

        from hypersched_nb.train.trainable import TrainContext

        torch.set_num_threads(1)
        number = zlib.crc32(tune.get_context().get_trial_id().encode())  # its id is a hash
        model = cls()
        model.setup(config, TrainContext(trial_id=number, seed=trial_seed(seed, number)))
        for _ in range(max_epochs):
            out = model.step()
            tune.report({METRIC: float(out[METRIC]), "wall": time.time()})
            if not math.isfinite(out[METRIC]):
                return  # diverged: our driver stops such a trial too

    return train


def run_ray(cls, *, deadline: float, workers: int, max_epochs: int, seed: int):
    """One Ray Tune search: ``ASHAScheduler(max_t=E, grace_period=1, reduction_factor=4)``,
    TPE through ``OptunaSearch`` on the same Optuna space, ``reuse_actors=True``,
    ``time_budget_s`` = the deadline; returns (timed values, trials, wall)."""
    import optuna
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler
    from ray.tune.search.optuna import OptunaSearch

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    values: list = []
    t0_wall, t0 = time.time(), time.monotonic()

    class Collect(tune.Callback):
        def on_trial_result(self, iteration, trials, trial, result, **info):
            values.append((result["wall"] - t0_wall, result[METRIC]))

    with tempfile.TemporaryDirectory(prefix="vs-peers-ray-") as storage:
        search = OptunaSearch(
            space=cls.space(), metric=METRIC, mode=MODE,
            sampler=optuna.samplers.TPESampler(seed=seed, constant_liar=True),
        )  # fmt: skip
        tuner = tune.Tuner(
            tune.with_resources(ray_trainable(cls, seed, max_epochs), {"cpu": 1}),
            tune_config=tune.TuneConfig(
                metric=METRIC, mode=MODE, search_alg=search, num_samples=-1,
                scheduler=ASHAScheduler(
                    time_attr="training_iteration", max_t=max_epochs, grace_period=1,
                    reduction_factor=4,
                ),
                max_concurrent_trials=workers, time_budget_s=deadline, reuse_actors=True,
            ),
            run_config=tune.RunConfig(
                storage_path=storage, verbose=0, callbacks=[Collect()],
                checkpoint_config=tune.CheckpointConfig(checkpoint_at_end=False),
            ),
        )  # fmt: skip
        trials = len(tuner.fit())
    return sorted(values), trials, time.monotonic() - t0


# ---------------------------------------------------------------------------- the runs


def run_one(name: str, cls, system: str, fraction: float, deadline: float, seed: int, args) -> Run:
    kw = dict(deadline=deadline, workers=args.workers, max_epochs=args.max_epochs, seed=seed)
    told = offered = None
    if system in ("hypersched", "asha", "hypersched-ended"):
        policy = system.removesuffix("-ended")
        ours = run_ours(cls, policy, ended_only=system.endswith("-ended"), **kw)
        values, trials, wall, told, offered = ours
    elif system == "ray-asha":
        values, trials, wall = run_ray(cls, **kw)
    else:
        pruner, _, first = system.removeprefix("tpe-").partition("+")
        values, trials, wall = run_optuna(cls, pruner, defaults=first == "defaults", **kw)
    score = best_by(values, deadline)
    return Run(name, fraction, deadline, system, seed, score, values, trials, wall, told, offered)


def table(runs: list[Run]) -> str:
    """The markdown table: per cell and system, mean / median / p10 and W/T/L vs ours."""
    lines = [
        "| trainable | deadline | system | mean | median | p10 | W/T/L vs hypersched | "
        "first value s | told/offered |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    cells = sorted({(r.trainable, r.fraction, r.deadline) for r in runs}, key=lambda c: c[:2])
    for name, fraction, deadline in cells:
        cell = [r for r in runs if (r.trainable, r.fraction) == (name, fraction)]
        ours = {r.seed: r.score for r in cell if r.system == DEFAULT}
        for system in [s for s in SYSTEMS if any(r.system == s for r in cell)]:
            mine = [r for r in cell if r.system == system]
            s = summary([r.score for r in mine])
            wtl = "—"
            if system != DEFAULT and ours:
                wtl = "/".join(map(str, paired(ours, {r.seed: r.score for r in mine})))
            share = "—"
            if system.startswith(DEFAULT):
                told, offered = sum(r.told or 0 for r in mine), sum(r.offered or 0 for r in mine)
                share = f"{told}/{offered} ({told / offered:.0%})" if offered else "—"
            lines.append(
                f"| {name} | {fraction:g}× ({deadline:.1f} s) | {system} | {s['mean']:.4f} | "
                f"{s['median']:.4f} | {s['p10']:.4f} | {wtl} | {first_value(mine)} | {share} |"
            )
    return "\n".join(lines)


def first_value(runs: list[Run]) -> str:
    """The median time from the call to a run's first finite value by its deadline (runs
    with none left out), and how many runs had none."""
    firsts = [min((t for t, m in r.values if math.isfinite(m)), default=math.inf) for r in runs]
    seen = [t for t, r in zip(firsts, runs, strict=True) if t <= r.deadline]
    text = f"{statistics.median(seen):.1f}" if seen else "—"
    return text if len(seen) == len(runs) else f"{text} ({len(runs) - len(seen)} none)"


def parse(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--trainables", default="digits,mnist1d,cosine")
    p.add_argument("--fractions", default="0.25,0.5,1")
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--max-epochs", type=int, default=100)
    p.add_argument("--full-seconds", type=float, default=None)
    p.add_argument("--systems", default=",".join(SYSTEMS))
    p.add_argument("--json", default=None)
    p.add_argument("--dry-run", action="store_true")
    args = p.parse_args(argv)
    if args.dry_run:
        args.trainables, args.seeds, args.max_epochs = "digits", 1, 3
        args.fractions = "1"
        args.full_seconds = args.full_seconds or 6.0
    args.trainables = args.trainables.split(",")
    args.fractions = [float(f) for f in args.fractions.split(",")]
    args.systems = args.systems.split(",")
    known = trainables()
    for bad, names, allowed in (("trainable", args.trainables, known), ("system", args.systems, SYSTEMS)):  # fmt: skip
        for n in names:
            if n not in allowed:
                p.error(f"unknown {bad} {n!r}; choose from {', '.join(allowed)}")
    return args


def warm_cluster(workers: int, classes) -> None:
    """Start the local cluster our searches run on and keep it warm, as a notebook's earlier
    search would have: each worker sets up each trainable once (imports and data loaded), as
    this process does for Optuna's side (:func:`full_seconds` with 0 epochs)."""
    from hypersched_nb.runtime.cluster import start_cluster

    client, close = start_cluster(workers)
    for cls in classes:
        client.run(full_seconds, cls, 0)
    close()  # the search's close: the cluster stays warm for the next of its size


def main(argv=None) -> int:
    args = parse(argv)
    runs: list[Run] = []
    if "ray-asha" in args.systems and not ray_installed():
        print("ray-asha left out: ray[tune] is not installed here (pip install 'ray[tune]')", flush=True)  # fmt: skip
        args.systems = [s for s in args.systems if s != "ray-asha"]
    if "ray-asha" in args.systems:
        start_ray(args.workers)
    if {"hypersched", "asha", "hypersched-ended"} & set(args.systems):
        warm_cluster(args.workers, [trainables()[name] for name in args.trainables])
    for name in args.trainables:
        cls = trainables()[name]
        full_seconds(cls, 0)  # warm this process
        full = args.full_seconds or full_seconds(cls, args.max_epochs)
        print(f"{name}: default configuration, {args.max_epochs} epochs on one worker: {full:.1f} s", flush=True)  # fmt: skip
        for fraction in args.fractions:
            for seed in range(args.seeds):
                for system in args.systems:
                    run = run_one(name, cls, system, fraction, fraction * full, seed, args)
                    runs.append(run)
                    print(f"  {name} {fraction:g}× seed {seed} {system}: {run.score:.4f} ({run.trials} trials, {run.wall:.1f} s)", flush=True)  # fmt: skip
    print()
    print(table(runs))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "runs": [asdict(r) for r in runs]}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
