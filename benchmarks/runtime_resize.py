"""Resize latency of the Dask runtime: 1 -> 2 workers and back.

    python benchmarks/runtime_resize.py [--epoch-seconds 1.0] [--state-mb 10] [--repeats 5]

On a local cluster of two single-threaded workers, one trial (``TinyRegression`` carrying a
``--state-mb`` MiB state, each epoch a ``--epoch-seconds`` busy loop on every replica)
alternates between one worker and two: each ``Resize`` checkpoints on rank 0 (unless the
last epoch's checkpoint is current), tears the replicas down, forms a fresh gloo process
group across exactly the new workers (rendezvous on a free port of rank 0's host), restores
on every rank and trains one epoch. Latency = that epoch's ``Result.startup`` (everything
from ``execute(Resize)`` to the replicas being ready to train); its share of an epoch =
latency / the epoch's training seconds. One plain epoch follows each resize.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epoch-seconds", type=float, default=1.0)
    p.add_argument("--state-mb", type=float, default=10.0)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()

    from hypersched_nb.core.events import Continue, Resize, Result, Start, Stop, TrialFailed
    from hypersched_nb.runtime import DaskRuntime, WallClock, start_cluster
    from hypersched_nb.testing.trainables import TinyRegression

    client, close = start_cluster(2)
    clock = WallClock()
    grow, shrink, epoch = [], [], []
    with tempfile.TemporaryDirectory() as ckpt:
        runtime = DaskRuntime(
            TinyRegression, client=client, clock=clock, metric="loss", checkpoint_dir=ckpt
        )

        def run(ins) -> Result:
            runtime.execute(ins)
            while True:
                for e in runtime.advance(clock.now() + 600):
                    if type(e) is TrialFailed:
                        raise RuntimeError(e.error)
                    if type(e) is Result:
                        return e

        try:
            run(Start(99, {"rows": 64}, 2))  # warm-up: torch imported and a group formed on both
            runtime.execute(Stop(99))
            config = {"rows": 64, "state_mb": args.state_mb, "work": args.epoch_seconds}
            run(Start(0, config, 1))
            run(Continue(0))
            for _ in range(args.repeats):
                r = run(Resize(0, 2))
                assert r.workers == 2 and r.info["replica_gap"] == 0.0
                grow.append(r.startup)
                epoch.append(run(Continue(0)).seconds)
                r = run(Resize(0, 1))
                shrink.append(r.startup)
                epoch.append(run(Continue(0)).seconds)
            runtime.execute(Stop(0))
        finally:
            runtime.close()
            close()

    ep = statistics.median(epoch)
    print(
        f"\nResize latency, {args.repeats} times each way, {args.state_mb:g} MiB state, "
        f"epochs of {ep:.2f} s"
    )
    print(f"{'resize':>7} {'median s':>9} {'max s':>7} {'share of an epoch':>18}")
    for name, xs in (("1 -> 2", grow), ("2 -> 1", shrink)):
        print(
            f"{name:>7} {statistics.median(xs):9.3f} {max(xs):7.3f} "
            f"{statistics.median(xs) / ep:18.1%}"
        )


if __name__ == "__main__":
    main()
