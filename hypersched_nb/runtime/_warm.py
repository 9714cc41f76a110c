"""The local cluster a search starts, kept warm for the next search of the same size.

A local cluster costs seconds to start: its host process imports Dask, each worker process
imports the trainable (torch) and loads its data on its first trial. A second search in
the same kernel need not pay that again: when a search ends, the cluster it started stays
up, idle, and the next search that asks for the same size (same ``cluster=``, threads per
worker, GPUs and Dask configuration) takes it, with a client of its own (as Dask's default client is reused
when the same cluster is asked for). One idle cluster at most is kept: a search that ends
while another cluster is idle closes the older one. :func:`close_idle` closes it; so does
the interpreter's exit, and, if the kernel is killed, the host process itself (see
:mod:`hypersched_nb.runtime._host`). A cluster whose size a search changed (an elastic
policy) or whose host has ended is closed, not kept.

Reused workers keep what their processes imported: a trainable's module edited on disk
between two searches is not imported again (a class defined in the notebook travels by
value and is always the latest). :func:`close_idle` before the search starts a fresh one.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import threading

from hypersched_nb.runtime._host import HostedCluster

__all__ = ["close_idle", "local_client"]

_LOCK = threading.Lock()
_IDLE: list[tuple[tuple, HostedCluster]] = []  # (size, cluster): at most one


def local_client(workers: int | None, threads: int):
    """``(client, close)`` on a local cluster of ``workers`` slots: the idle one of that
    size, else a new one; ``close`` closes the client and keeps the cluster warm."""
    from hypersched_nb.runtime.cluster import CONNECT_TIMEOUT, _cuda_devices, no_dask_cuda

    gpus = _cuda_devices()
    no_dask_cuda(gpus)  # said here, in the kernel; the host keeps quiet
    size = (workers, threads, gpus)
    hosted = _take(size)
    fresh = hosted is None
    if fresh:
        hosted = HostedCluster(workers, threads, gpus)  # distributed imported meanwhile
    from distributed import Client

    size += (_config(),)  # once distributed is imported: its defaults are in it
    from distributed.utils import silence_logging_cmgr

    from hypersched_nb.runtime._quiet import QuietCancellations, closing_quietly

    quiet = contextlib.ExitStack()  # the client's INFO records, as a LocalCluster here kept them
    quiet.enter_context(silence_logging_cmgr(logging.WARN))
    try:
        client = Client(hosted.scheduler_address, timeout=CONNECT_TIMEOUT)
        client.cluster = hosted  # what an elastic policy resizes
        if fresh:
            client.register_plugin(QuietCancellations())  # its workers write to our stderr
        planned = len(hosted.plan)
    except BaseException:
        quiet.close()
        hosted.close()
        raise

    def close() -> None:
        try:
            with closing_quietly():
                client.close()
        finally:
            quiet.close()
            _give_back(size, hosted, planned)

    return client, close


def _config() -> bytes:
    """The kernel's Dask configuration (with distributed's defaults: it is imported), as
    its host was given it: a change (say, a memory limit) calls for a new cluster."""
    import pickle

    import dask

    try:
        return pickle.dumps(dask.config.config)
    except Exception:  # noqa: BLE001 - cannot be compared: never reused
        return os.urandom(16)


def close_idle() -> None:
    """Close the cluster kept warm between searches, if there is one."""
    with _LOCK:
        idle = [hosted for _, hosted in _IDLE]
        _IDLE.clear()
    for hosted in idle:
        hosted.close()


def _take(size: tuple) -> HostedCluster | None:
    """The idle cluster of ``size`` (workers, threads, GPUs), if its configuration is the
    kernel's now."""
    with _LOCK:
        if not _IDLE:
            return None
        kept, hosted = _IDLE[0]
        if kept != (*size, _config()) or not hosted.alive:
            return None  # left idle: a later search of its size may still take it
        _IDLE.clear()
        return hosted


def _give_back(size: tuple, hosted: HostedCluster, planned: int) -> None:
    """Keep ``hosted`` warm if it is whole and the size it was taken at, else close it."""
    try:
        keep = hosted.alive and len(hosted.plan) == planned
    except Exception:  # noqa: BLE001 - a host that cannot answer is not kept
        keep = False
    if not keep:
        hosted.close()
        return
    with _LOCK:
        older = [h for _, h in _IDLE]
        _IDLE[:] = [(size, hosted)]
    for h in older:
        h.close()


@atexit.register
def _at_exit() -> None:  # pragma: no cover - runs as the interpreter ends
    close_idle()
