"""What watching a live search of thousands of trials costs the kernel: the dashboard's
snapshot and redraw, ``results()``, and this process's memory, measured while it runs.

    python benchmarks/live_scale.py [--trials 2000] [--deadline 600] [--policy asha]
        [--max-epochs 4] [--sleep 0.01] [--pause 0.1] [--gc-freeze] [--json OUT]

The search: ``Experiment`` of ``hypersched_nb.testing.trainables.TinyRegression`` (``sleep``
seconds slept per epoch: 10 ms by default) over a list of ``--trials`` configurations (the
learning rate varies), metric ``loss`` (min), policy ``asha`` with R = ``--max-epochs`` (so
most trials stop after epoch 1), on 2 local Dask workers (``cluster=2``), checkpoints in a
temporary folder. ``--deadline`` (seconds) only has to be long enough for every trial to end;
the search ends when the last one does.

While it runs, the main thread (the kernel's, in a notebook) goes round, ``--pause`` seconds
apart, timing with ``perf_counter``:

1. snapshot: ``exp.statistics()``, what the dashboard's thread reads every turn;
2. redraw: ``Dashboard.refresh(snap)`` of that snapshot, on one dashboard built before the
   search started (figures updated in place; its widgets talk to a stand-in for the
   kernel that encodes every message, as in ``benchmarks/dashboard_scale.py``);
3. turn: the two together, one turn of the dashboard's thread;
4. ``exp.results()``, the DataFrame of one row per trial.

Each timing is kept with the number of trials known then (``len(snap.trials)``); the table
gives p50 / p99 / max over the whole search and over its last quarter (timings taken once at
least three quarters of ``--trials`` were known). Timing stops when a snapshot says the
search is over (the cluster then closes). A thread samples this process's RSS
(psutil) every 0.2 s. The baseline is the RSS once the dashboard is built (pandas, plotly
and the widgets imported) and the cluster is up (``exp.start()`` has returned: in this
process, Dask's client; its scheduler and nannies run in a process of their own); the
growth over it is what the search and the watching cost the kernel, the figure the target
means. Peak RSS (absolute) is reported too.

Issue 31's targets (rows "31:", meant at 10,000 trials, the pause also at 2,000): the
longest full collection < 50 ms; snapshot p99 <= 20 ms and redraw p99 <= 60 ms in the last
quarter; ``results()`` p99 <= 50 ms; RSS growth <= 150 MB. The collections' pauses are
wall-clock (a loaded machine stretches them); the CPU time of the longest is printed beside.

Earlier targets (the issue's, at 2,000 trials of a 10 ms trainable on 2 workers): snapshot p99
<= 50 ms; ``results()`` p99 <= 200 ms; RSS growth over the baseline <= 200 MB. Redraw and
turn are reported beside them (``dashboard_scale.py``'s target for a redraw at 2,000 trials,
on a replayed search: p99 <= 100 ms), and so are Python's full garbage collections during the
search (count, longest pause): while one runs every thread waits, so each lands on whatever
call is being timed. ``--gc-freeze`` calls ``gc.freeze()`` once the cluster is up (the search
itself now freezes the kernel's heap at its start: see ``hypersched_nb.runtime._heap``). ``--json OUT`` writes every figure and every timing.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field

import comm
import numpy as np
import psutil
from dashboard_scale import EncodingComm

from hypersched_nb import Experiment
from hypersched_nb.notebook.dashboard import Dashboard
from hypersched_nb.testing.trainables import TinyRegression

SNAPSHOT_TARGET = 0.050  # seconds, p99
RESULTS_TARGET = 0.200  # seconds, p99
MEMORY_TARGET = 200.0  # MB of RSS growth over the baseline
REDRAW_REFERENCE = 0.100  # dashboard_scale.py's redraw target at 2,000 trials (not the issue's)
# issue 31's targets for the kernel once the scheduler runs elsewhere (at 10,000 trials)
PAUSE_TARGET = 0.050  # seconds: the longest full collection (at 2,000 trials too)
SNAPSHOT_LAST_TARGET = 0.020  # seconds, p99 in the last quarter
REDRAW_LAST_TARGET = 0.060  # seconds, p99 in the last quarter
RESULTS_31_TARGET = 0.050  # seconds, p99 over the whole search
MEMORY_31_TARGET = 150.0  # MB of RSS growth over the baseline
MB = 2**20


class MemorySampler:
    """This process's RSS every ``every`` seconds, on a thread of its own."""

    def __init__(self, every: float = 0.2):
        self.every, self.samples = every, []  # (seconds since start, bytes)
        self._process, self._stop = psutil.Process(os.getpid()), threading.Event()
        self._t0 = time.perf_counter()
        self._thread = threading.Thread(target=self._loop, name="rss-sampler", daemon=True)

    def elapsed(self) -> float:
        return time.perf_counter() - self._t0

    def rss(self) -> int:
        return self._process.memory_info().rss

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.samples.append((self.elapsed(), self.rss()))
            self._stop.wait(self.every)

    def start(self) -> MemorySampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


class FullCollections:
    """The pauses of Python's full (generation 2) garbage collections in this process, from
    any thread: while one runs, every thread waits, so it lands on whatever call is timed."""

    def __init__(self):
        self.pauses: list[float] = []
        self.cpu: list[float] = []  # the collecting thread's CPU time: what load cannot inflate
        self._began: tuple[float, float] | None = None

    def __call__(self, phase: str, info: dict) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._began = (time.perf_counter(), time.thread_time())
        elif self._began is not None:
            self.pauses.append(time.perf_counter() - self._began[0])
            self.cpu.append(time.thread_time() - self._began[1])
            self._began = None

    def summary(self) -> dict:
        ms = [p * 1e3 for p in self.pauses]
        return {
            "count": len(ms), "max_ms": max(ms, default=0.0), "total_ms": sum(ms),
            "max_cpu_ms": max(self.cpu, default=0.0) * 1e3,
        }  # fmt: skip


@dataclass
class Timings:
    """Every timing of one measure: seconds, and the trials known when it was taken."""

    seconds: list[float] = field(default_factory=list)
    trials: list[int] = field(default_factory=list)

    def add(self, seconds: float, trials: int) -> None:
        self.seconds.append(seconds)
        self.trials.append(trials)

    def summary(self, least: int = 0) -> dict:
        """p50 / p99 / max (ms) of the timings taken with at least ``least`` trials known."""
        kept = np.array([s for s, n in zip(self.seconds, self.trials, strict=True) if n >= least])
        if not len(kept):
            return {"count": 0, "p50_ms": None, "p99_ms": None, "max_ms": None}
        ms = kept * 1e3
        return {
            "count": len(kept),
            "p50_ms": float(np.percentile(ms, 50)),
            "p99_ms": float(np.percentile(ms, 99)),
            "max_ms": float(ms.max()),
        }


def configurations(n: int, sleep: float) -> list[dict]:
    """``n`` configurations of TinyRegression, each epoch ``sleep`` seconds (plus its SGD)."""
    return [{"lr": 0.005 + 0.095 * i / max(1, n - 1), "sleep": sleep} for i in range(n)]


def experiment(args, folder: str) -> Experiment:
    return Experiment(
        TinyRegression, configurations(args.trials, args.sleep), metric="loss", mode="min",
        deadline=args.deadline, max_epochs=args.max_epochs, policy=args.policy, cluster=2,
        checkpoint_dir=folder, sampler="random", seed=0,
    )  # fmt: skip


def timed(call):
    start = time.perf_counter()
    out = call()
    return time.perf_counter() - start, out


class ThreadCPU:
    """CPU seconds of each of this process's threads, read now and then while they live
    (the search's own threads end with it), summed by the thread's name."""

    def __init__(self):
        self.seen: dict[int, tuple[str, float]] = {}  # thread id -> its name, CPU seconds

    def read(self) -> None:
        import psutil

        names = {t.native_id: t.name for t in threading.enumerate()}
        for t in psutil.Process().threads():
            name = names.get(t.id) or self.seen.get(t.id, ("other", 0.0))[0]
            self.seen[t.id] = (name, t.user_time + t.system_time)

    def since(self, before: dict[int, tuple[str, float]]) -> dict[str, float]:
        out: dict[str, float] = {}
        for tid, (name, cpu) in self.seen.items():
            out[name] = out.get(name, 0.0) + cpu - before.get(tid, (name, 0.0))[1]
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def watch(exp: Experiment, dash: Dashboard, pause: float, threads: ThreadCPU) -> dict[str, Timings]:
    """Time snapshot, redraw and ``results()`` over and over until the search is over (and
    read the threads' CPU every 20 turns)."""
    measures = {name: Timings() for name in ("snapshot", "redraw", "redraw CPU", "turn", "results")}
    while True:
        took, snap = timed(exp.statistics)
        if snap.done:  # the search is over (the cluster is closing)
            break
        cpu = time.thread_time()
        drew, _ = timed(lambda snap=snap: dash.refresh(snap))
        n = len(snap.trials)
        measures["snapshot"].add(took, n)
        measures["redraw"].add(drew, n)
        measures["redraw CPU"].add(time.thread_time() - cpu, n)
        measures["turn"].add(took + drew, n)
        took, frame = timed(exp.results)
        measures["results"].add(took, len(frame))
        if len(measures["results"].seconds) % 20 == 0:
            threads.read()
        time.sleep(pause)
    return measures


def memory(sampler: MemorySampler, before: int, baseline: int, since: float) -> dict:
    during = [rss for t, rss in sampler.samples if t >= since] or [baseline]
    return {
        "dashboard_built_mb": before / MB,
        "baseline_mb": baseline / MB,
        "peak_mb": max(during) / MB,
        "growth_mb": (max(during) - baseline) / MB,
        "end_mb": during[-1] / MB,
        "samples": len(during),
    }


def run(args) -> dict:
    comm.create_comm = EncodingComm
    sampler, collections = MemorySampler().start(), FullCollections()
    with tempfile.TemporaryDirectory() as folder:
        exp = experiment(args, folder)
        exp.results()  # pandas imported, as in a kernel that has used it
        dash = Dashboard(exp)  # shown before the search starts
        before = sampler.rss()
        t0 = time.perf_counter()
        exp.start()
        started = time.perf_counter() - t0
        baseline, since = sampler.rss(), sampler.elapsed()
        tracked = len(gc.get_objects())  # what a full collection walks
        frozen = gc.get_freeze_count()  # what it leaves out (the search froze it at its start)
        if args.gc_freeze:
            gc.freeze()  # what is alive now is never scanned again by a collection
        gc.callbacks.append(collections)
        threads = ThreadCPU()
        threads.read()
        cpu_before = dict(threads.seen)
        measures = watch(exp, dash, args.pause, threads)
        gc.callbacks.remove(collections)
        wall = time.perf_counter() - t0
        threads.read()
        tracked_end = len(gc.get_objects())
        exp.wait()
        final = exp.statistics()
    sampler.stop()
    return {
        "settings": vars(args),
        "trials_known": len(final.trials),
        "trials_done": final.stopped,
        "status": final.status,
        "search_s": final.time,
        "wall_s": wall,
        "start_s": started,
        "memory": memory(sampler, before, baseline, since),
        "full_collections": {
            **collections.summary(),
            "objects_at_start": tracked,
            "objects_at_end": tracked_end,
            "objects_frozen": frozen,
        },  # fmt: skip
        "thread_cpu_s": threads.since(cpu_before),
        "whole": {k: v.summary() for k, v in measures.items()},
        "last_quarter": {k: v.summary(least=int(0.75 * args.trials)) for k, v in measures.items()},
        "timings": {k: asdict(v) for k, v in measures.items()},
    }


def verdict(value: float | None, target: float) -> str:
    return "MISS" if value is None or value > target else "PASS"


def table(out: dict) -> list[dict]:
    """One row per target (the timings over the whole search, then its last quarter): what
    was measured and whether it meets it."""
    whole, last, mem = out["whole"], out["last_quarter"], out["memory"]
    gcs = out["full_collections"]
    rows = [
        ("snapshot p99, whole search", whole["snapshot"]["p99_ms"], SNAPSHOT_TARGET * 1e3, "ms"),
        ("snapshot p99, last quarter", last["snapshot"]["p99_ms"], SNAPSHOT_TARGET * 1e3, "ms"),
        ("results() p99, whole search", whole["results"]["p99_ms"], RESULTS_TARGET * 1e3, "ms"),
        ("results() p99, last quarter", last["results"]["p99_ms"], RESULTS_TARGET * 1e3, "ms"),
        ("RSS growth over baseline", mem["growth_mb"], MEMORY_TARGET, "MB"),
        ("31: longest full collection", gcs["max_ms"], PAUSE_TARGET * 1e3, "ms"),
        ("31: snapshot p99, last quarter", last["snapshot"]["p99_ms"], SNAPSHOT_LAST_TARGET * 1e3, "ms"),
        ("31: redraw p99, last quarter", last["redraw"]["p99_ms"], REDRAW_LAST_TARGET * 1e3, "ms"),
        ("31: results() p99, whole search", whole["results"]["p99_ms"], RESULTS_31_TARGET * 1e3, "ms"),
        ("31: RSS growth over baseline", mem["growth_mb"], MEMORY_31_TARGET, "MB"),
    ]  # fmt: skip
    return [
        {"target": name, "measured": value, "limit": limit, "unit": unit,
         "verdict": verdict(value, limit)}
        for name, value, limit, unit in rows
    ]  # fmt: skip


def report(out: dict) -> None:
    mem = out["memory"]
    print(
        f"{out['trials_done']} of {out['trials_known']} trials over ({out['status']}) in "
        f"{out['search_s']:.1f} s of search ({out['wall_s']:.1f} s wall, cluster start "
        f"{out['start_s']:.1f} s): {out['trials_done'] / max(out['search_s'], 1e-9):.0f} trials/s"
    )
    for part, least in (("whole", 0), ("last_quarter", int(0.75 * out["settings"]["trials"]))):
        print(f"  {part.replace('_', ' ')} (trials known >= {least}):")
        for name, s in out[part].items():
            if s["count"]:
                print(
                    f"    {name:<10} n={s['count']:>4}  p50 {s['p50_ms']:7.1f} ms  "
                    f"p99 {s['p99_ms']:7.1f} ms  max {s['max_ms']:7.1f} ms"
                )
    print(
        f"  RSS: dashboard built {mem['dashboard_built_mb']:.0f} MB, baseline (+ cluster up) "
        f"{mem['baseline_mb']:.0f} MB, peak {mem['peak_mb']:.0f} MB, "
        f"growth {mem['growth_mb']:.0f} MB, at the end {mem['end_mb']:.0f} MB"
    )
    threads = ", ".join(f"{k} {v:.1f}" for k, v in list(out["thread_cpu_s"].items())[:5])
    print(f"  CPU of this process's threads while it was watched (seconds): {threads}")
    gcs = out["full_collections"]
    print(
        f"  full garbage collections during the search: {gcs['count']}, longest "
        f"{gcs['max_ms']:.0f} ms ({gcs['max_cpu_ms']:.0f} ms of CPU), {gcs['total_ms']:.0f} ms "
        "in all, over "
        f"{gcs['objects_at_start']:,} objects tracked at the start, {gcs['objects_at_end']:,} "
        f"at the end, {gcs['objects_frozen']:,} frozen at the start"
        + (" (gc.freeze() after the baseline)" if out["settings"]["gc_freeze"] else "")
    )
    print(f"\n  {'target':<34} {'measured':>10} {'limit':>8}  verdict")
    for row in out["targets"]:
        value = "-" if row["measured"] is None else f"{row['measured']:.1f}"
        print(
            f"  {row['target']:<34} {value:>7} {row['unit']} {row['limit']:>5.0f} {row['unit']}"
            f"  {row['verdict']}"
        )
    turn = out["whole"]["turn"]["p99_ms"]
    print(f"  (a whole dashboard turn, snapshot + redraw: p99 {turn:.1f} ms; "
          f"dashboard_scale.py's redraw target {REDRAW_REFERENCE * 1e3:.0f} ms)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000, help="configurations searched")
    parser.add_argument("--deadline", type=float, default=600.0, help="seconds")
    parser.add_argument("--policy", default="asha")
    parser.add_argument("--max-epochs", type=int, default=4, help="R of the policy")
    parser.add_argument("--sleep", type=float, default=0.01, help="seconds slept per epoch")
    parser.add_argument("--pause", type=float, default=0.1, help="seconds between rounds")
    parser.add_argument(
        "--gc-freeze",
        action="store_true",
        help="gc.freeze() once the cluster is up (not a target run: shows the cost of full "
        "collections over what the kernel imported)",
    )
    parser.add_argument("--json", help="write the figures and every timing here")
    args = parser.parse_args()
    out = run(args)
    out["targets"] = table(out)
    report(out)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
