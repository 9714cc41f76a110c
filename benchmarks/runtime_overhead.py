"""Orchestration overhead of the Dask runtime, side by side with a plain training loop.

    python benchmarks/runtime_overhead.py [--epoch-seconds 1.0,0.1] [--seconds 10] [--repeats 5]
                                          [--epochs N] [--work duration|fixed] [--worker-profile]

The same trainable (``hypersched_nb.testing.trainables.TinyRegression`` plus a stand-in
for an epoch's compute) trains ``--seconds`` of epochs of each length, side by side in one
run (10 epochs of 1 s, 100 of 0.1 s: the trial's start weighs the same on both; ``--epochs``
fixes the count instead), (1) in a plain Python loop in a fresh
process with one torch thread, like a worker (timed inside it, from setup to the last
epoch; not in this process, whose scheduler and client threads would slow a loop down),
and (2) through hypersched_nb: the real driver
(policy ``random``, one configuration) on a ``DaskRuntime`` over a one-worker local
cluster, from ``driver.run()`` to its return, so that it counts the trial's start on the
worker, the pinned tasks (one per epoch, or one per batch of short epochs, every epoch
still reported to the policy), the per-epoch checkpoint rule and the stop. The two
alternate ``--repeats`` times (after one warm-up search); the ratio of the medians is the result, and the ratio of the
best runs (the overhead with the least interference from other processes) is shown too.

``--work duration`` (default) makes the stand-in a busy loop of exactly the epoch length,
so that the ratio measures orchestration alone even on a shared, loaded machine;
``--work fixed`` makes it a fixed number of operations calibrated here (closer to real
training, noisier where other processes compete for the cores).

The same search also runs with its journal on (each input and decision written and
flushed, as a live Experiment does; column "journal on", its ratio to the plain loop).

Targets: ratio <= 1.01 with one-second epochs and <= 1.03 with 0.1 s epochs (journal off;
the journal-on ratios are shown beside them). Last, the halt: a trial of each length is
stopped on its third result, mid-batch, and another trial started on its worker at once;
the seconds until that one could start (its ``startup``) say how late a stop takes effect.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

TARGETS = {1.0: 1.01, 0.1: 1.03}  # epoch seconds -> the most the ratio may be


def plain_loop(config: dict, epochs: int) -> float:
    """Seconds the plain loop takes in a fresh process (one torch thread, no Dask)."""
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    out = subprocess.run(
        [sys.executable, __file__, "--plain", json.dumps(config), "--epochs", str(epochs)],
        env=env, check=True, capture_output=True, text=True,
    )  # fmt: skip
    return float(out.stdout.strip().splitlines()[-1])


def _plain(config: dict, epochs: int) -> None:
    import torch

    from hypersched_nb.testing.trainables import TinyRegression
    from hypersched_nb.train.context import TrainContext

    torch.set_num_threads(1)
    TinyRegression().setup({"lr": 0.05}, TrainContext())  # first calls into torch warm up
    t0 = time.perf_counter()
    trainable = TinyRegression()
    trainable.setup(config, TrainContext(seed=0))
    for _ in range(epochs):
        trainable.step()
    print(time.perf_counter() - t0)


def through_hypersched(
    client, config: dict, epochs: int, *, journal: bool = False, batch_seconds: float = 3.0
) -> tuple[float, int]:
    """Seconds the search takes from ``driver.run()`` to its return; with ``journal``, its
    inputs and decisions are written to a journal as a live Experiment writes them."""
    from hypersched_nb.core.policies import create
    from hypersched_nb.experiment._inputs import Inputs
    from hypersched_nb.experiment.driver import Driver
    from hypersched_nb.experiment.journal import JournalWriter
    from hypersched_nb.runtime import DaskRuntime, WallClock
    from hypersched_nb.testing.trainables import TinyRegression

    clock = WallClock()
    with tempfile.TemporaryDirectory() as ckpt:
        runtime = DaskRuntime(
            TinyRegression, client=client, clock=clock, metric="loss", checkpoint_dir=ckpt,
            max_epochs=epochs,  # as an Experiment does: no batch trains past the last epoch
            batch_seconds=batch_seconds,
        )  # fmt: skip
        offers = iter([config])
        writer = JournalWriter(f"{ckpt}/journal.jsonl") if journal else None
        inputs = Inputs(clock, runtime, offers, record=writer.write if writer else None)
        driver = Driver(create("random", max_epochs=epochs), runtime, clock, offers,
                        deadline=10 * epochs * 60.0, max_epochs=epochs, mode="min",
                        inputs=inputs)  # fmt: skip
        t0 = time.perf_counter()
        driver.run()
        took = time.perf_counter() - t0
        runtime.close()
        if writer is not None:
            writer.close()
        return took, driver.trials[0].epochs


def halt_seconds(client, config: dict) -> float:
    """Stop a trial on its third result (mid-batch when its epochs are short) and start
    another on its only worker at once: the seconds until that one starts training."""
    from hypersched_nb.core.events import Continue, Result, Start, Stop
    from hypersched_nb.runtime import DaskRuntime, WallClock
    from hypersched_nb.testing.trainables import TinyRegression

    clock = WallClock()
    with tempfile.TemporaryDirectory() as ckpt:
        runtime = DaskRuntime(
            TinyRegression, client=client, clock=clock, metric="loss", checkpoint_dir=ckpt
        )
        try:
            runtime.execute(Start(0, config, 1))
            end = clock.now() + 120.0
            while clock.now() < end:
                for e in runtime.advance(end):
                    if type(e) is not Result:
                        continue
                    if e.trial_id == 1:
                        runtime.execute(Stop(1))
                        return e.startup
                    if e.epoch < 3:
                        runtime.execute(Continue(0))
                    else:
                        runtime.execute(Stop(0))
                        runtime.execute(Start(1, {"lr": 0.05}, 1))
            raise RuntimeError("no result within 120 s")
        finally:
            runtime.close()


def _profiled_cluster():
    """One local worker as ``start_cluster(1)`` starts it, but with Dask's statistical
    profiler on (its default): ``(client, close)``."""
    from distributed import Client, LocalCluster

    cluster = LocalCluster(
        n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
    )  # fmt: skip
    client = Client(cluster)

    def close() -> None:
        client.close()
        cluster.close()

    return client, close


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epoch-seconds", default="1.0,0.1")
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--epochs", type=int, default=None)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--work", choices=("duration", "fixed"), default="duration")
    p.add_argument("--batch-seconds", type=float, default=3.0)  # DaskRuntime's default
    p.add_argument(
        "--worker-profile",
        action="store_true",
        help="start the worker with Dask's statistical profiler on, as Dask does by default "
        "(hypersched_nb's local clusters turn it off): what it costs, measured the same way",
    )
    p.add_argument("--plain", help=argparse.SUPPRESS)  # internal: run the plain loop here
    args = p.parse_args()
    if args.plain is not None:
        return _plain(json.loads(args.plain), args.epochs)

    from hypersched_nb.runtime import start_cluster
    from hypersched_nb.testing.trainables import spin

    client, close = _profiled_cluster() if args.worker_profile else start_cluster(1)
    try:
        through_hypersched(client, {"lr": 0.05}, 1)  # warm-up: torch imported on the worker
        rows, halts = [], []
        for secs in [float(s) for s in args.epoch_seconds.split(",")]:
            epochs = args.epochs or max(1, round(args.seconds / secs))
            if args.work == "duration":
                config = {"lr": 0.05, "work": secs}
            else:
                t0 = time.perf_counter()
                spin(200)
                config = {
                    "lr": 0.05,
                    "spin": max(1, round(200 * secs / (time.perf_counter() - t0))),
                }
            plain, dask, journaled = [], [], []
            for _ in range(args.repeats):
                plain.append(plain_loop(config, epochs))
                for journal, times in ((False, dask), (True, journaled)):
                    took, trained = through_hypersched(
                        client, config, epochs, journal=journal, batch_seconds=args.batch_seconds
                    )
                    assert trained == epochs, f"trained {trained} of {epochs} epochs"
                    times.append(took)
            a, b = statistics.median(plain), statistics.median(dask)
            j = statistics.median(journaled)
            best = min(dask) / min(plain)
            rows.append((secs, epochs, a, b, b / a, (b - a) / epochs * 1e3, best, j / a))
            halts.append((secs, statistics.median(halt_seconds(client, config) for _ in range(3))))
    finally:
        close()

    profiler = "on" if args.worker_profile else "off"
    print(
        f"\nOrchestration overhead: median of {args.repeats}, work={args.work}, worker profiler {profiler}"
    )
    print(
        f"{'epoch s':>8} {'epochs':>7} {'plain loop s':>13} {'hypersched s':>13} {'ratio':>7} "
        f"{'overhead ms/epoch':>18} {'best/best':>10} {'journal on':>11}"
    )
    for secs, epochs, a, b, ratio, per, best, journaled in rows:
        print(
            f"{secs:8.2f} {epochs:7d} {a:13.3f} {b:13.3f} {ratio:7.3f} {per:18.1f} {best:10.3f} "
            f"{journaled:11.3f}"
        )
    for secs, _, _, _, ratio, _, _, _ in rows:
        target = TARGETS.get(secs)
        if target is not None:
            print(
                f"target: ratio <= {target} with {secs:g} s epochs -> {ratio:.3f} "
                f"({'met' if ratio <= target else 'NOT met'})"
            )
    for secs, wait in halts:
        print(
            f"halt: {secs:g} s epochs, stopped on a result mid-batch: its worker took the "
            f"next trial {wait:.3f} s later (median of 3)"
        )


if __name__ == "__main__":
    main()
