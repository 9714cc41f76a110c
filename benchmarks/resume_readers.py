"""Readers stay unblocked while a resumed search replays its journal.

    python benchmarks/resume_readers.py [--records 200000] [--workers 8]

Writes the journal of a long search (a simulated random search, every configuration trained to the end, of the shipped ``digits-cnn``
trace on ``--workers`` workers, cut short after ``--records`` records, with
``TinyRegression`` as its trainable), then resumes it on a one-worker local cluster and,
while the driver is fed the journal again, calls ``statistics()`` from this thread every
10 ms. Prints one JSON line: how long the replay took, how many reads it served, and their
p50, p99 and maximum in milliseconds. Target: p99 at most 100 ms (before the replay let
readers in between its turns, a read waited for the whole replay).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from hypersched_nb.core.policies import create
from hypersched_nb.experiment._inputs import Inputs
from hypersched_nb.experiment.driver import Driver
from hypersched_nb.experiment.journal import JournalWriter
from hypersched_nb.experiment.settings import Settings
from hypersched_nb.experiment.simulate import SimSettings, replayed
from hypersched_nb.sim.trace import load_trace
from hypersched_nb.testing.trainables import TinyRegression


def write_journal(folder: Path, *, cut: int, workers: int) -> int:
    """The journal of a simulated search cut short after ``cut`` records; its records."""
    from datetime import datetime

    trace = load_trace("digits-cnn")
    sim = replayed(trace, 0, SimSettings(workers=workers, configs=len(trace.ids)))
    offered = [dict(c, copy=i) for i in range(50) for c in sim.offered]  # 5,000 trials
    deadline = trace.median_full_time() * len(offered)  # long: the cut comes first
    settings = Settings(trainable=TinyRegression, space=offered, metric="val_acc",
                        deadline=float(deadline), max_epochs=sim.max_epochs, policy="random",
                        checkpoint_dir=str(folder), cluster=1)  # fmt: skip
    writer = JournalWriter.begin(
        str(folder / "journal.jsonl"), started=datetime.now(),
        settings=settings.to_record(deadline=float(deadline), space_record=offered),
    )  # fmt: skip
    records = []

    def record(entry):
        if len(records) >= cut:
            raise StopIteration  # the kernel died here
        records.append(entry)
        writer.write(entry)

    policy = create("random", max_epochs=sim.max_epochs, min_epochs=1, eta=4, seed=0)
    inputs = Inputs(sim.clock, sim.runtime, iter(offered), record=record)
    driver = Driver(policy, sim.runtime, sim.clock, iter(offered), deadline=deadline,
                    max_epochs=sim.max_epochs, journal=True, inputs=inputs)  # fmt: skip
    try:
        driver.run()
    except StopIteration:
        pass
    writer.close()
    return len(records)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--workers", type=int, default=8)
    args = parser.parse_args()
    from hypersched_nb import Experiment

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "search"
        n = write_journal(folder, cut=args.records, workers=args.workers)
        exp = Experiment.resume(folder, deadline="3s")
        tape = exp._search.observed.clock  # the journal's tape: replaying until it runs out
        reads, began = [], time.perf_counter()
        while tape.replaying and not exp.done:
            t0 = time.perf_counter()
            exp.statistics()
            reads.append(time.perf_counter() - t0)
            time.sleep(0.01)  # a busy view: a read every 10 ms
        replay_s = time.perf_counter() - began
        exp.wait()
    ms = np.array(reads) * 1000
    print(json.dumps({
        "records": n, "replay_s": round(replay_s, 2), "reads": len(reads),
        "p50_ms": round(float(np.percentile(ms, 50)), 2) if len(ms) else None,
        "p99_ms": round(float(np.percentile(ms, 99)), 2) if len(ms) else None,
        "max_ms": round(float(ms.max()), 2) if len(ms) else None,
    }))  # fmt: skip


if __name__ == "__main__":
    main()
