"""Live execution on Dask: clusters, resident trials, DDP groups, checkpoints, failures.

``DaskRuntime`` carries out the driver's instructions on real workers (the simulator in
``hypersched_nb.sim`` is the other implementation of the same protocol), ``WallClock`` is
the clock it runs on, and ``start_cluster`` starts or attaches the cluster (a local one is kept
warm between searches until ``close_local_cluster``). Names load on
first use, so that importing the package (for ``TrainContext``) stays light.
"""

from __future__ import annotations

from hypersched_nb._lazy import lazy

__all__ = [
    "BestCheckpoint",
    "Checkpoint",
    "CheckpointError",
    "DaskRuntime",
    "TrainContext",
    "WallClock",
    "close_local_cluster",
    "load_checkpoint",
    "save_checkpoint",
    "start_cluster",
]

__getattr__, __dir__ = lazy(
    __name__,
    {
        "DaskRuntime": "hypersched_nb.runtime.dask_runtime",
        "WallClock": "hypersched_nb.runtime.clock",
        "start_cluster": "hypersched_nb.runtime.cluster",
        "close_local_cluster": "hypersched_nb.runtime.cluster",
        "TrainContext": "hypersched_nb.train.context",
        "save_checkpoint": "hypersched_nb.runtime.checkpoint",
        "load_checkpoint": "hypersched_nb.runtime.checkpoint",
        "CheckpointError": "hypersched_nb.runtime.checkpoint",
        "Checkpoint": "hypersched_nb.runtime.checkpoint",
        "BestCheckpoint": "hypersched_nb.runtime.checkpoint",
    },
)
