"""Where a live search runs: an embedded local cluster, or an existing Dask scheduler.

With CUDA GPUs, one worker process per device (``dask_cuda.LocalCUDACluster`` rotates
``CUDA_VISIBLE_DEVICES`` so that device 0 is each worker's own GPU, and every worker
advertises the resource ``GPU: 1``); without, single-threaded worker processes on the
loopback interface. A worker is one slot: it holds one trial's replica at a time.
"""

from __future__ import annotations

import importlib.util
import os
import threading
import time
from collections.abc import Callable

from hypersched_nb.errors import ConfigError, warn

__all__ = ["close_local_cluster", "default_workers", "start_cluster"]


def default_workers() -> int:
    """CPU slots of the default local cluster: min(cores, 4)."""
    return max(1, min(os.cpu_count() or 1, 4))


def start_cluster(
    workers: int | None = None,
    *,
    address: str | None = None,
    client=None,
    threads_per_worker: int = 1,
) -> tuple[object, Callable[[], None]]:
    """``(client, close)``: attach to ``client`` or the scheduler at ``address`` (``close``
    then leaves the cluster running), or start a local cluster of ``workers`` slots (run by a
    process of its own, and kept warm by ``close`` for the next search of its size: see
    :mod:`hypersched_nb.runtime._warm`). Until ``close``, the kernel's garbage collections
    leave out what was alive before (:mod:`hypersched_nb.runtime._heap`)."""
    if client is not None and address is not None:
        raise ConfigError("`client` and `address` are both given, but only one may be")
    if workers is not None and workers < 1:
        raise ConfigError(f"`workers` is {workers}, but must be >= 1")
    if threads_per_worker < 1:
        raise ConfigError(f"`threads_per_worker` is {threads_per_worker}, but must be >= 1")
    from hypersched_nb.runtime import _heap

    if client is not None:
        out, close = client, lambda: None
    elif address is not None:
        from distributed import Client

        _reachable(address)
        out = Client(address, timeout=CONNECT_TIMEOUT)
        close = out.close
    else:
        from hypersched_nb.runtime._warm import local_client

        out, close = local_client(workers, threads_per_worker)
    _heap.hold()  # the kernel's heap as it is now: out of its collections until the close

    def closing() -> None:
        try:
            close()
        finally:
            _heap.release()

    return out, _once(closing)


def _once(call: Callable[[], None]) -> Callable[[], None]:
    """``call``, run at its first call only (a close may be called again)."""
    done = threading.Lock()

    def once() -> None:
        if done.acquire(blocking=False):
            call()

    return once


def close_local_cluster() -> None:
    """Close the local cluster kept warm since the last search ended (a later search
    starts a fresh one: its worker processes import the trainable's module again)."""
    from hypersched_nb.runtime._warm import close_idle

    close_idle()


CONNECT_TIMEOUT = 10.0  # seconds to reach a scheduler before saying it does not answer


def check_address(address, name: str = "address") -> tuple[str, int] | None:
    """``(host, port)`` of the scheduler address ``address`` (None for a transport other
    than tcp and tls), or a one-line error naming ``name`` where it is not one. Reads the
    text only: nothing is connected to."""
    from distributed.comm import parse_address, parse_host_port
    from distributed.comm.registry import get_backend

    example = "write it as 'tcp://host:8786'"
    if not isinstance(address, str) or not address.strip():
        raise ConfigError(f"`{name}` is {address!r}, but must be a scheduler address; {example}")
    try:
        scheme, location = parse_address(address)
        get_backend(scheme)  # a transport distributed knows
        host, port = parse_host_port(location) if scheme in ("tcp", "tls") else (None, None)
    except ValueError as exc:
        raise ConfigError(
            f"`{name}` is {address!r}, which is not an address ({exc}); {example}"
        ) from None
    return None if host is None else (host, port)


def _reachable(address) -> None:
    """Check that ``address`` is a scheduler address and that something listens there, in
    one line each, before a ``Client`` is made (a failed one retries for 30 s, then leaves
    a traceback on stderr as it is collected)."""
    import socket

    where = check_address(address)
    if where is None:
        return  # another transport (inproc, ucx): the Client says what goes wrong
    host, port = where
    give_up = time.monotonic() + CONNECT_TIMEOUT
    while True:  # a scheduler just started may not listen yet: retry until the timeout
        try:
            socket.create_connection((host.strip("[]"), port), timeout=CONNECT_TIMEOUT).close()
            return
        except OSError as exc:
            if time.monotonic() >= give_up:
                raise ConfigError(
                    f"no Dask scheduler answers at {address} ({exc.strerror or exc}) after "
                    f"{CONNECT_TIMEOUT:g} s: check that one runs there and that this machine "
                    "can reach it"
                ) from None
            time.sleep(0.2)


WORKER_PROFILE = "distributed.worker.profile.enabled"
#: the environment each nanny gives its worker process: Dask sets glibc's
#: MALLOC_TRIM_THRESHOLD_ to 64 KiB there (freed memory back to the system at once), which
#: also fixes malloc's mmap threshold, so every large tensor of a training step is mapped
#: and unmapped afresh: an epoch of the example CNNs took 1.4-1.7 times as long as in the
#: kernel (`benchmarks/worker_speed.py`). None unsets it: glibc's own adaptive threshold, as
#: in the user's Python (a value of their own still applies).
TRIM = "MALLOC_TRIM_THRESHOLD_"
NANNY_ENVIRON = f"distributed.nanny.pre-spawn-environ.{TRIM}"
PRELOAD = "hypersched_nb.runtime._preload"


def _local_cluster(workers: int | None, threads: int, *, gpus: int | None = None):
    """The ``LocalCluster`` (or ``LocalCUDACluster``) of ``workers`` slots, in this process:
    the host process of :mod:`hypersched_nb.runtime._host` makes it (``gpus``: the CUDA
    devices its kernel counted; counted here when None)."""
    import dask

    # a nanny made in the kernel before (a LocalCluster of the user's) left Dask's value in
    # the environment this process inherited; a value of the user's own stays
    if os.environ.get(TRIM) == str(dask.config.get(NANNY_ENVIRON, None)):
        del os.environ[TRIM]
    with dask.config.set({NANNY_ENVIRON: None}):  # the nannies read it as they are made
        return _new_cluster(workers, threads, gpus=gpus)


def _new_cluster(workers: int | None, threads: int, *, gpus: int | None):
    """:func:`_local_cluster`'s cluster, made under the Dask configuration it sets."""
    from distributed import LocalCluster

    common = {
        "threads_per_worker": threads,
        "dashboard_address": "127.0.0.1:0",  # loopback, a free port: never clash with another
        # each worker's nanny hands this to its worker process: no statistical profiler
        # interrupting the training thread every 10 ms (Dask's dashboard "Profile" page)
        "config": {WORKER_PROFILE: False},
        # torch (and what its first optimizer imports) on a thread, as each worker starts
        "preload": [PRELOAD],
    }
    gpus = _cuda_devices() if gpus is None else gpus
    if gpus:
        if importlib.util.find_spec("dask_cuda") is not None:
            import dask
            from dask_cuda import LocalCUDACluster

            n = gpus if workers is None else min(workers, gpus)
            # LocalCUDACluster passes a `config` of its own to LocalCluster (a second one is a
            # TypeError); its nannies, made before it returns, copy the global config instead
            with dask.config.set(common.pop("config")):
                return LocalCUDACluster(
                    n_workers=n, resources={"GPU": 1}, host="127.0.0.1", **common
                )
        no_dask_cuda(gpus)
        common["env"] = {"CUDA_VISIBLE_DEVICES": ""}
    return LocalCluster(
        n_workers=workers or default_workers(), processes=True, host="127.0.0.1", **common
    )


def no_dask_cuda(gpus: int) -> bool:
    """Warn, and say True, where there are ``gpus`` CUDA devices but no dask-cuda."""
    if not gpus or importlib.util.find_spec("dask_cuda") is not None:
        return False
    warn(
        f"{gpus} CUDA GPU(s) found, but dask-cuda is not installed "
        "(pip install 'hypersched_nb[cuda]'): training on CPU worker processes"
    )
    return True


def _cuda_devices() -> int:
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) == "":
        return 0
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        return 0
    return torch.cuda.device_count() if torch.cuda.is_available() else 0
