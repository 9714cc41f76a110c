"""How fast a worker of our local cluster trains, against this process and Dask's default.

    python benchmarks/worker_speed.py [--epochs 20] [--trainables digits,mnist1d,cosine]

For each example trainable, the seconds of one epoch (``step()``, the default
configuration, one thread, after one epoch of warm-up), measured side by side in one run:

* ``this process``: here, as Optuna's ``study.optimize`` steps it;
* ``our worker``: a task on one worker of ``start_cluster(2)`` (the other idle);
* ``dask's env``: the same on a ``LocalCluster`` whose nannies keep Dask's default
  ``distributed.nanny.pre-spawn-environ``, where ``MALLOC_TRIM_THRESHOLD_=65536`` makes
  glibc map and unmap a step's large tensors afresh.

Printed: each median over ``--repeats`` runs, and the ratios to ``this process``; then each
worker's resident memory once a run has ended and its model is freed (the largest over the
runs), which Dask's memory monitor counts against the worker's limit: what leaving glibc's
own threshold costs in memory held, against Dask's setting, which gives freed memory back at
once. The machine is shared and noisy: read the ratios of one run, not its seconds.
"""

from __future__ import annotations

import argparse
import statistics
import time


def per_epoch(cls, epochs: int) -> float:
    """Seconds of one epoch of ``cls``'s default configuration, on one thread."""
    import torch

    from hypersched_nb.train.trainable import TrainContext

    torch.set_num_threads(1)
    model = cls()
    model.setup({}, TrainContext(trial_id=0, seed=0))
    model.step()  # warm-up: the first epoch allocates what the later ones reuse
    t0 = time.perf_counter()
    for _ in range(epochs):
        model.step()
    return (time.perf_counter() - t0) / epochs


def resident() -> int:
    """This process's resident bytes."""
    import psutil

    return psutil.Process().memory_info().rss


def on_one_worker(client, cls, epochs: int) -> tuple[float, int]:
    """Seconds per epoch on the client's first worker, and its resident bytes after the run."""
    worker = sorted(client.scheduler_info()["workers"])[0]
    seconds = client.submit(per_epoch, cls, epochs, workers=[worker], pure=False).result()
    return seconds, client.run(resident, workers=[worker])[worker]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--trainables", default="digits,mnist1d,cosine")
    args = parser.parse_args()
    from distributed import Client, LocalCluster

    from hypersched_nb.runtime.cluster import close_local_cluster, start_cluster
    from hypersched_nb.train.examples import MNIST1DCNN, DigitsCNN, MNIST1DCosine

    classes = {"digits": DigitsCNN, "mnist1d": MNIST1DCNN, "cosine": MNIST1DCosine}
    ours, close = start_cluster(2)
    dask_default = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                host="127.0.0.1", dashboard_address=None)  # fmt: skip
    theirs = Client(dask_default)
    print(f"seconds per epoch, median of {args.repeats} runs of {args.epochs} epochs")
    print(f"{'trainable':>10} {'this process':>13} {'our worker':>11} {'dask env':>9} "
          f"{'ours/here':>10} {'dask/here':>10}")  # fmt: skip
    held: dict[str, tuple[int, int]] = {}  # trainable -> the workers' resident bytes after
    try:
        for name in args.trainables.split(","):
            cls = classes[name]
            runs = {"here": [], "ours": [], "dask": []}
            rss = {"ours": [], "dask": []}
            for _ in range(args.repeats):  # interleaved, so that a burst of load hits all
                runs["here"].append(per_epoch(cls, args.epochs))
                for key, client in (("ours", ours), ("dask", theirs)):
                    seconds, after = on_one_worker(client, cls, args.epochs)
                    runs[key].append(seconds)
                    rss[key].append(after)
            here, mine, dasks = (statistics.median(runs[k]) for k in ("here", "ours", "dask"))
            held[name] = (max(rss["ours"]), max(rss["dask"]))
            print(f"{name:>10} {here:>13.4f} {mine:>11.4f} {dasks:>9.4f} "
                  f"{mine / here:>10.2f} {dasks / here:>10.2f}")  # fmt: skip
        print()
        print("a worker's resident memory after its runs (MB; the largest after any run)")
        print(f"{'trainable':>10} {'our worker':>11} {'dask env':>9} {'ours/dask':>10}")
        for name, (mine, dasks) in held.items():
            print(f"{name:>10} {mine / 2**20:>11.0f} {dasks / 2**20:>9.0f} {mine / dasks:>10.2f}")
    finally:
        theirs.close()
        dask_default.close()
        close()
        close_local_cluster()


if __name__ == "__main__":
    main()
