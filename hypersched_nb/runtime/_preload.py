"""A worker preload: the imports every trial's first task needs, started as the worker starts.

A local worker process's first trial imports torch (every replica does), and its first
optimizer imports ``torch._dynamo`` (``torch.optim`` does at its first construction):
seconds of CPU before the first epoch, paid after the search has started and its first
configuration has been sent. Dask runs :func:`dask_setup` in each worker process as it
starts (``preload=``); it starts those imports on a thread of its own and returns, so that
they overlap the rest of the cluster's start, the client's connection and the search's first
ask. A task that needs a module still being imported waits for it (Python's import lock), and
imports nothing twice.
"""

from __future__ import annotations

import importlib
import threading

MODULES = ("torch", "torch._dynamo", "hypersched_nb.runtime._worker")


def _import_all() -> None:
    for name in MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001, S110 - only a head start: the task says what fails
            pass


def dask_setup(worker) -> None:
    """Start the imports on a daemon thread (the worker does not wait for them)."""
    threading.Thread(target=_import_all, name="hypersched-preload", daemon=True).start()
