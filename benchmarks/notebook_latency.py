"""How long the quick start's first dashboard and ``%hypersched start`` hold their cells, in a
real kernel (what a person waits for before the cell's output appears).

    .venv/bin/python benchmarks/notebook_latency.py            # median of 5 fresh kernels
    .venv/bin/python benchmarks/notebook_latency.py --reps 1

Each repetition starts two fresh kernels of this environment. In the first, the quick
start's cells: the imports, ``Experiment(...).start()`` (2 local workers), then
``exp.dashboard()``, timed from the request to the dashboard's display message (it
"appears") and to the cell's end. In the second, ``%hypersched start DigitsCNN --metric
val_acc --deadline 2m --workers 2`` from the request to the cell's end, then, once the
search has results, ``%hypersched forecast +5m``. Targets (issue 28): the dashboard within
3 s, ``start`` within 5 s, the forecast within 3 s.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from queue import Empty

from jupyter_client.manager import start_new_kernel

SETUP = "from hypersched_nb import Experiment\nfrom hypersched_nb.train.examples import DigitsCNN"
START = """import tempfile
exp = Experiment(DigitsCNN, DigitsCNN.space(), metric="val_acc", deadline="60s", max_epochs=20,
                 policy="hypersched", cluster=2, seed=0, checkpoint_dir=tempfile.mkdtemp())
exp.start();"""
MAGIC = "%hypersched start DigitsCNN --metric val_acc --deadline 2m --workers 2"
RESULTS = "import time\nwhile exp.best is None: time.sleep(0.2)"


def timed(kc, code: str, timeout: float = 300.0) -> tuple[float, float | None]:
    """Seconds until the cell's end, and until its first display (None: none)."""
    t0 = time.monotonic()
    msg_id = kc.execute(code)
    shown = None
    while True:
        try:
            msg = kc.get_iopub_msg(timeout=timeout)
        except Empty:
            raise TimeoutError(f"{code!r} gave nothing for {timeout:.0f} s") from None
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "error":
            raise RuntimeError(f"{code!r} raised {content['ename']}: {content['evalue']}")
        if kind in ("display_data", "execute_result") and shown is None:
            shown = time.monotonic() - t0
        if kind == "status" and content["execution_state"] == "idle":
            return time.monotonic() - t0, shown


def api_kernel() -> tuple[float, float, float]:
    """(start, dashboard shown, dashboard cell) in a fresh kernel."""
    km, kc = start_new_kernel(kernel_name="python3", cwd=tempfile.mkdtemp())
    try:
        timed(kc, SETUP)
        start, _ = timed(kc, START)
        cell, shown = timed(kc, "exp.dashboard()")
        timed(kc, "exp.stop()")
        return start, shown, cell
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def magic_kernel() -> tuple[float, float]:
    """(%hypersched start, %hypersched forecast +5m) in a fresh kernel."""
    km, kc = start_new_kernel(kernel_name="python3", cwd=tempfile.mkdtemp())
    try:
        timed(kc, "%load_ext hypersched_nb")
        start, _ = timed(kc, MAGIC)
        timed(kc, RESULTS)
        forecast, _ = timed(kc, "%hypersched forecast +5m")
        timed(kc, "%hypersched stop")
        return start, forecast
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=5)
    a = p.parse_args()
    rows = []
    for rep in range(a.reps):
        start, shown, cell = api_kernel()
        magic, forecast = magic_kernel()
        rows.append((start, shown, cell, magic, forecast))
        print(
            f"rep {rep + 1}: exp.start() {start:.2f} s · exp.dashboard() shown {shown:.2f} s, "
            f"cell {cell:.2f} s · %hypersched start {magic:.2f} s · forecast +5m {forecast:.2f} s",
            flush=True,
        )
    names = ("exp.start()", "exp.dashboard() shown", "exp.dashboard() cell",
             "%hypersched start", "%hypersched forecast +5m")  # fmt: skip
    for i, name in enumerate(names):
        print(f"median {name}: {statistics.median(r[i] for r in rows):.2f} s")


if __name__ == "__main__":
    main()
