"""What a dashboard redraw and the HTML report cost as a search grows, measured side by side
in one run.

    python benchmarks/dashboard_scale.py [--trials 2000,10000] [--frames 60]

Each size is a search of ``N`` configurations of a synthetic trace
(``hypersched_nb.testing.traces.synthetic_trace``: four curve families, 16 epochs of 1-4 s)
replayed by ``Experiment.replay`` under the default policy (``hypersched``) on 8 workers, with
a deadline of 3 s per configuration so that every one of them starts. No GPU, no download.

1. Redraw. The replay runs once unwatched (which gives its final snapshot and its length),
   then again while snapshots are taken (``exp.statistics()``) about ``--frames`` times along
   the way. A dashboard that drew the search before it started is then brought up to each
   snapshot in turn, as its thread does when the search changed, and each ``refresh`` is
   timed (``perf_counter``). Its widgets talk to a stand-in for the kernel that encodes every
   message as the kernel does (JSON, binary buffers apart), so that work is counted too.
   Prints the median and the 99th percentile, and the kilobytes sent per redraw.
   Targets: p99 <= 100 ms at 2,000 trials, <= 250 ms at 10,000.
2. Snapshot: ``exp.statistics()`` of the finished search, the other half of each turn of
   the dashboard's thread (the median of 5; not the dashboard's work, so no target here).
3. Fresh draw: a new dashboard on the final snapshot (what every redraw cost before the
   figures were updated in place).
4. Report: ``write_report`` of the final snapshot: its size and the time it takes (plotly.js
   packed once per process beforehand). Target: <= 3 MB at 2,000 trials.

The ratios are measured / target: at most 1.0 meets the target.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import comm
import numpy as np
from comm.base_comm import BaseComm
from jupyter_client.jsonutil import json_default

from hypersched_nb import Experiment
from hypersched_nb.notebook.dashboard import Dashboard
from hypersched_nb.notebook.report import packed_plotly_js, write_report
from hypersched_nb.testing.traces import synthetic_trace

REDRAW_TARGET = {2000: 0.100, 10000: 0.250}  # seconds, at the 99th percentile
REPORT_TARGET = {2000: 3.0}  # MB


class EncodingComm(BaseComm):
    """A widget's channel to the front end that encodes what it sends, as the kernel would,
    and counts the bytes."""

    sent = 0

    def publish_msg(self, msg_type, data=None, metadata=None, buffers=None, **keys):
        text = json.dumps(data, default=json_default, ensure_ascii=False, allow_nan=False)
        EncodingComm.sent += len(text) + sum(memoryview(b).nbytes for b in buffers or ())


@dataclass(frozen=True, slots=True)
class Scale:
    """One size's measurements."""

    trials: int
    records: int  # allocation records at the end
    frames: int
    redraw_p50: float
    redraw_p99: float
    sent_kb: float  # median per redraw
    snapshot: float
    fresh: float
    report_mb: float
    report_s: float


def replay(n: int) -> Experiment:
    trace = synthetic_trace(n=n, epochs=16, seed=0)
    return Experiment.replay(
        trace, policy="hypersched", deadline=3.0 * n, workers=8, configs=n, seed=0
    )


def frames(n: int, count: int, took: float, records: int) -> list:
    """Snapshots of the replay along the way, about ``count`` of them: read while it runs,
    a pause between reads (so that the replay moves on), kept every ``records / count``."""
    exp = replay(n)
    every, pause = max(1, records // count), took / (6 * count)
    kept = []
    exp.start()
    while not exp.done:
        snap = exp.statistics()
        if not kept or len(snap.allocation) - len(kept[-1].allocation) >= every:
            kept.append(snap)
        time.sleep(pause)
    kept.append(exp.statistics())
    return kept


class Recorded:
    """What a dashboard watches, standing in for an experiment: a snapshot set by hand."""

    def __init__(self, snap):
        self.snap = snap

    def statistics(self):
        return self.snap


def timed(call) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def measure(n: int, count: int, folder: Path) -> Scale:
    exp = replay(n)
    start = time.perf_counter()
    exp.run()
    took = time.perf_counter() - start
    final = exp.statistics()
    snapshot = statistics.median(timed(exp.statistics) for _ in range(5))
    snaps = frames(n, count, took, len(final.allocation))

    watched = Recorded(replay(n).statistics())  # the search before it starts
    dash = Dashboard(watched)
    times, sent = [], []
    for snap in snaps:
        watched.snap, before = snap, EncodingComm.sent
        start = time.perf_counter()
        dash.refresh(snap)
        times.append(time.perf_counter() - start)
        sent.append((EncodingComm.sent - before) / 1e3)

    fresh = timed(lambda: Dashboard(Recorded(final)))

    start = time.perf_counter()
    path = write_report(final, folder / f"report-{n}.html")
    report_s = time.perf_counter() - start
    return Scale(
        n, len(final.allocation), len(snaps), statistics.median(times),
        float(np.percentile(times, 99)), statistics.median(sent), snapshot, fresh,
        path.stat().st_size / 1e6, report_s,
    )  # fmt: skip


def ratio(value: float, target: float | None) -> str:
    return "" if target is None else f" ({value / target:.2f} x target)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", default="2000,10000", help="search sizes, comma-separated")
    parser.add_argument("--frames", type=int, default=60, help="redraws timed per size")
    args = parser.parse_args()
    comm.create_comm = EncodingComm
    packed_plotly_js()  # once per process, not part of a report's time
    with tempfile.TemporaryDirectory() as folder:
        rows = [measure(int(n), args.frames, Path(folder)) for n in args.trials.split(",")]
    for s in rows:
        print(
            f"{s.trials:>6} trials, {s.records:>6} allocation records, {s.frames} redraws\n"
            f"    redraw  p50 {s.redraw_p50 * 1e3:7.1f} ms  p99 {s.redraw_p99 * 1e3:7.1f} ms"
            f"{ratio(s.redraw_p99, REDRAW_TARGET.get(s.trials))}, {s.sent_kb:.0f} kB sent (median)\n"
            f"    snapshot {s.snapshot * 1e3:7.1f} ms (exp.statistics())\n"
            f"    fresh draw {s.fresh * 1e3:7.1f} ms\n"
            f"    report  {s.report_mb:5.2f} MB{ratio(s.report_mb, REPORT_TARGET.get(s.trials))} "
            f"in {s.report_s:.2f} s"
        )


if __name__ == "__main__":
    main()
