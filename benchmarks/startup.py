"""Where the seconds before a live search's first result go, and what a second search in the
same process pays.

    python benchmarks/startup.py [--trainable digits] [--workers 2] [--runs 3] [--searches 2]
        [--json OUT]

Each run is a fresh Python process (``--runs`` of them; the table gives their median) that
does what a notebook does: ``Experiment(cls, cls.space(), policy="hypersched",
cluster=W, deadline=300, max_epochs=4, seed=s)``, ``start()``, then waits until ``exp.best``
is set (the first epoch of any trial has ended and come back), then ``stop()``; and again
``--searches`` times in that process, as a user's second search in the same kernel.
Phases, from before ``Experiment(...)``:

* ``build``: ``Experiment(...)`` returns (the trainable's module and the search parts);
* ``cluster``: ``start_cluster`` (the local cluster up, the client connected);
* ``start``: the rest of ``start()`` (the runtime, the journal, the driver's thread);
* ``first``: from ``start()`` returning to the first result: the first ask, the task
  reaching a worker, the worker importing the trainable (torch) and loading its data,
  ``setup`` and one epoch, and the result coming back;
* ``total``: time to the first result (the four together).

Beside them, what a fresh worker process pays before its first epoch, measured in a process
of its own (``python -c``): importing ``distributed``, importing the trainable's module
(torch), loading its data, ``setup`` and one ``step``.
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

TRAINABLES = {
    "digits": "DigitsCNN",
    "mnist1d": "MNIST1DCNN",
}


def one_process(args) -> list[dict]:
    """The searches of one process: their phases, in seconds."""
    from hypersched_nb import Experiment
    from hypersched_nb.runtime import cluster
    from hypersched_nb.train import examples

    cls = getattr(examples, TRAINABLES[args.trainable])
    started = cluster.start_cluster
    took: dict[str, float] = {}

    def timed_start(*a, **k):
        t = time.perf_counter()
        out = started(*a, **k)
        took["cluster"] = time.perf_counter() - t
        return out

    cluster.start_cluster = timed_start
    out = []
    for search in range(args.searches):
        with tempfile.TemporaryDirectory(prefix="startup-") as folder:
            took.clear()
            t0 = time.perf_counter()
            exp = Experiment(
                cls, cls.space(), metric="val_acc", mode="max", policy="hypersched",
                cluster=args.workers, deadline=300.0, max_epochs=4, seed=search,
                checkpoint_dir=os.path.join(folder, "run"),
            )  # fmt: skip
            t1 = time.perf_counter()
            exp.start()
            t2 = time.perf_counter()
            while exp.best is None and not exp.done:
                time.sleep(0.005)
            t3 = time.perf_counter()
            exp.stop()
            cluster_s = took.get("cluster", 0.0)
            out.append({
                "build": t1 - t0, "cluster": cluster_s, "start": t2 - t1 - cluster_s,
                "first": t3 - t2, "total": t3 - t0, "got": exp.best is not None,
            })  # fmt: skip
    return out


WORKER_PHASES = ("import distributed", "import trainable (torch)", "load data", "setup", "epoch")


def worker_side(args) -> dict:
    """What a fresh process pays to import distributed and the trainable, build it, load
    its data, set it up and train one epoch."""
    code = f"""
import json, time, warnings
warnings.simplefilter("ignore")
t = [time.perf_counter()]
import distributed
t.append(time.perf_counter())
from hypersched_nb.train import examples
from hypersched_nb.train.context import TrainContext
cls = examples.{TRAINABLES[args.trainable]}
t.append(time.perf_counter())
model = cls()
data = model.load_data(dict(cls.defaults))
t.append(time.perf_counter())
torch_threads = __import__("torch").set_num_threads(1)
model.setup(dict(cls.defaults), TrainContext())
t.append(time.perf_counter())
model.step()
t.append(time.perf_counter())
print(json.dumps([b - a for a, b in zip(t, t[1:])]))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    parts = json.loads(done.stdout.strip().splitlines()[-1])
    return dict(zip(WORKER_PHASES, parts, strict=True))


PHASES = ("build", "cluster", "start", "first", "total")


def report(runs: list[list[dict]], worker: list[dict]) -> None:
    searches = len(runs[0])
    for i in range(searches):
        rows = [r[i] for r in runs]
        label = "first search" if i == 0 else f"search {i + 1} in the same process"
        cells = "  ".join(f"{p} {statistics.median(r[p] for r in rows):5.2f} s" for p in PHASES)
        print(f"{label:<34} (median of {len(rows)}): {cells}")
    cells = "  ".join(f"{k} {statistics.median(w[k] for w in worker):5.2f} s" for k in worker[0])
    print(f"a fresh process (median of {len(worker)}): {cells}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trainable", default="digits", choices=sorted(TRAINABLES))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3, help="fresh processes")
    parser.add_argument("--searches", type=int, default=2, help="searches per process")
    parser.add_argument("--json", help="write every figure here")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:  # one fresh process: print its searches as JSON
        print("STARTUP " + json.dumps(one_process(args)))
        return
    runs, worker = [], []
    for _ in range(args.runs):
        argv = [sys.executable, __file__, "--one", "--trainable", args.trainable,
                "--workers", str(args.workers), "--searches", str(args.searches)]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, text=True, check=True)
        line = [x for x in done.stdout.splitlines() if x.startswith("STARTUP ")][-1]
        runs.append(json.loads(line[len("STARTUP ") :]))
        worker.append(worker_side(args))
    report(runs, worker)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"settings": vars(args), "runs": runs, "worker": worker}, f, indent=1)


if __name__ == "__main__":
    main()
