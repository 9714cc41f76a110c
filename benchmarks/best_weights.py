"""Epoch-to-epoch time of a trial that sets a new best every epoch, its weights written in
the epoch loop (before) or in the background (now).

    python benchmarks/best_weights.py [--mb 1024] [--epochs 6] [--step 0.05]

The worker side alone, in this process (the Dask round trip is the same either way): a
``TinyRegression`` carrying ``--mb`` MiB of state (``state_mb``) trains ``--epochs`` cheap
epochs (``--step`` seconds of sleep each); its loss falls every epoch, so each is a new
best of the search and its weights are written apart. *Before*: the write in the epoch
loop, as ``keep_if_best`` did (``save_checkpoint``: torch.save, SHA-256, an atomic move).
*After*: ``keep_if_best`` now, which copies the state in memory and writes the copy on a
thread (a new best waits only for the write before it). The time is from one epoch's
start to the next's, first epoch left out; the background's last write is waited for at
the end and shown apart (the weights are on disk by then).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from types import SimpleNamespace


def run(mb: float, epochs: int, step: float, folder: str, *, background: bool) -> dict:
    from hypersched_nb.runtime import _best_writer
    from hypersched_nb.runtime._messages import BestBar, SaveSpec
    from hypersched_nb.runtime._worker_io import keep_if_best
    from hypersched_nb.runtime.checkpoint import best_url, save_checkpoint
    from hypersched_nb.testing.trainables import TinyRegression
    from hypersched_nb.train.trainable import TrainContext

    model = TinyRegression()
    config = {"lr": 0.05, "state_mb": mb, "sleep": step}
    model.setup(config, TrainContext(trial_id=0, seed=0))
    rep = SimpleNamespace(trial_id=0, epochs=0, trainable=model, config=config, metrics={})
    bar = BestBar("loss", -1.0, None)
    starts = []
    for _ in range(epochs):
        starts.append(time.perf_counter())
        metrics = model.step()
        rep.epochs += 1
        if background:
            keep_if_best(rep, metrics, SaveSpec(folder, 0.01, None, bar))
        else:
            save_checkpoint(model.state_dict(), best_url(folder, 0, rep.epochs), epoch=rep.epochs)
        bar = BestBar("loss", -1.0, -metrics["loss"])
    starts.append(time.perf_counter())
    _best_writer.wait_written(best_url(folder, 0, rep.epochs))
    tail = time.perf_counter() - starts[-1]
    gaps = [b - a for a, b in zip(starts[1:], starts[2:], strict=False)]
    return {"median": statistics.median(gaps), "max": max(gaps), "tail": tail}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mb", type=float, default=1024.0, help="state size in MiB")
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--step", type=float, default=0.05, help="seconds of each epoch's step()")
    args = p.parse_args()
    rows = {}
    for name, background in (("in the loop (before)", False), ("background (now)", True)):
        with tempfile.TemporaryDirectory() as folder:
            rows[name] = run(args.mb, args.epochs, args.step, folder, background=background)
    print(f"{args.mb:g} MiB state, a new best every epoch, step() {args.step:g} s")
    print(
        f"{'best weights written':<24}{'epoch-to-epoch median':>24}{'max':>10}{'last write after':>20}"
    )
    for name, r in rows.items():
        print(f"{name:<24}{r['median']:>22.3f} s{r['max']:>8.3f} s{r['tail']:>18.3f} s")


if __name__ == "__main__":
    main()
