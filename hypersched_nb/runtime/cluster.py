"""Where a live search runs: an embedded local cluster, or an existing Dask scheduler.

With CUDA GPUs, one worker process per device (``dask_cuda.LocalCUDACluster`` rotates
``CUDA_VISIBLE_DEVICES`` so that device 0 is each worker's own GPU, and every worker
advertises the resource ``GPU: 1``); without, single-threaded worker processes on the
loopback interface. A worker is one slot: it holds one trial's replica at a time.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
import time
from collections.abc import Callable

from hypersched_nb.errors import ConfigError, warn

__all__ = ["default_workers", "start_cluster"]


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
    then leaves the cluster running), or start a local cluster of ``workers`` slots."""
    if client is not None and address is not None:
        raise ConfigError("`client` and `address` are both given, but only one may be")
    if workers is not None and workers < 1:
        raise ConfigError(f"`workers` is {workers}, but must be >= 1")
    if threads_per_worker < 1:
        raise ConfigError(f"`threads_per_worker` is {threads_per_worker}, but must be >= 1")
    if client is not None:
        return client, lambda: None
    from distributed import Client

    from hypersched_nb.runtime._quiet import QuietCancellations, closing_quietly

    if address is not None:
        _reachable(address)
        attached = Client(address, timeout=CONNECT_TIMEOUT)
        return attached, attached.close
    check_script_guard()  # before any worker process: they import the user's script again
    cluster = _local_cluster(workers, threads_per_worker)
    try:
        local = Client(cluster)
        local.register_plugin(QuietCancellations())  # its workers write to our stderr
    except BaseException:
        cluster.close()
        raise

    def close() -> None:
        with closing_quietly():  # what a close does on purpose is not news
            try:
                local.close()
            finally:
                cluster.close()

    return local, close


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


def _local_cluster(workers: int | None, threads: int):
    from distributed import LocalCluster

    common = {
        "threads_per_worker": threads,
        "dashboard_address": "127.0.0.1:0",  # loopback, a free port: never clash with another
        # each worker's nanny hands this to its worker process: no statistical profiler
        # interrupting the training thread every 10 ms (Dask's dashboard "Profile" page)
        "config": {WORKER_PROFILE: False},
    }
    gpus = _cuda_devices()
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
        warn(
            f"{gpus} CUDA GPU(s) found, but dask-cuda is not installed "
            "(pip install 'hypersched_nb[cuda]'): training on CPU worker processes"
        )
        common["env"] = {"CUDA_VISIBLE_DEVICES": ""}
    return LocalCluster(
        n_workers=workers or default_workers(), processes=True, host="127.0.0.1", **common
    )


def _cuda_devices() -> int:
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) == "":
        return 0
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        return 0
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


# ---------------------------------------------------------------------- the script guard

GUARD = 'if __name__ == "__main__":'


def check_script_guard() -> None:
    """Refuse, in one line, to start local worker processes from a script that starts its
    search when it is imported.

    Dask starts its worker processes with multiprocessing's "spawn" (or "forkserver"):
    each imports the main script again, as ``__mp_main__``, before it runs. A search
    started at the script's top level, outside ``if __name__ == "__main__":``, would start
    again in every worker, and each would fail with a screenful of "Nanny failed to start"
    tracebacks. A notebook, ``python -c``, ``python -m package`` and a script whose search
    starts under the guard (or in a function called from there) pass.

    The line is the first thing on stderr: written there before the :class:`ConfigError`
    is raised, whose traceback (through the search's own frames) then follows it; a worker
    process importing the script exits with the line alone."""
    where = _unguarded_start()
    if where is None:
        return
    path, line, name = where
    message = (
        f"{path}:{line} starts a search when the file is imported, and Dask's worker "
        f"processes import it again: put it under  {GUARD}"
    )
    if name == "__mp_main__":  # a worker process importing the script (the check was skipped)
        raise SystemExit(message)  # one line, no traceback
    sys.stderr.write(message + "\n")  # first, above whatever the traceback prints after it
    sys.stderr.flush()
    raise ConfigError(message)


def _unguarded_start(main=None) -> tuple[str, int, str] | None:
    """``(script, line, module name)`` where the top-level code of the main script runs now,
    outside ``if __name__ == "__main__":``, when worker processes would import it again;
    None otherwise (or where its source cannot be read). The script is ``main``, else
    ``__main__``, or ``__mp_main__`` in a process that is importing it as a worker."""
    found = _module_frame([main] if main is not None else _mains())
    if found is None:  # not at import time: called from a function, a thread, a notebook
        return None
    module, frame = found
    path = _imported_again(module)
    if path is None or _start_method() == "fork":
        return None
    try:
        with open(path, "rb") as f:
            guarded = under_main_guard(f.read(), frame.f_lineno)
    except (OSError, SyntaxError, ValueError):  # not Python source: nothing to say
        return None
    if guarded:
        return None
    shown = os.path.relpath(path)
    return (path if shown.startswith("..") else shown), frame.f_lineno, module.__name__


def _mains() -> list:
    """``__main__``, and ``__mp_main__`` (spawn runs the script in a module of that name)."""
    return [m for m in (sys.modules.get("__main__"), sys.modules.get("__mp_main__")) if m]


def _module_frame(modules: list):
    """``(module, frame)``: the innermost frame on this thread's stack that runs the
    top-level code of one of ``modules``; None if there is none."""
    spaces = {id(m.__dict__): m for m in modules}
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "<module>" and id(frame.f_globals) in spaces:
            return spaces[id(frame.f_globals)], frame
        frame = frame.f_back
    return None


def _imported_again(main) -> str | None:
    """The file a spawned process imports as its ``__mp_main__``, as multiprocessing's
    ``spawn.get_preparation_data`` and ``_fixup_main_*`` decide: None for a ``__main__``
    without a file (a notebook, ``python -c``), for a package's ``__main__`` (``python -m
    package``, which spawn never imports again) and for IPython's."""
    name = getattr(getattr(main, "__spec__", None), "name", None)
    if name is not None and (name == "__main__" or name.endswith(".__main__")):
        return None
    path = getattr(main, "__file__", None)
    if not isinstance(path, str) or os.path.splitext(os.path.basename(path))[0] == "ipython":
        return None
    return path


def _start_method() -> str:
    import dask

    return dask.config.get("distributed.worker.multiprocessing-method", "spawn")


def under_main_guard(source: str | bytes, line: int) -> bool:
    """Whether ``line`` of the Python ``source`` lies in the body of an
    ``if __name__ == "__main__":`` (or ``"__main__" == __name__``, or in the ``else`` of
    ``if __name__ != "__main__":``), at any depth."""
    for node in ast.walk(ast.parse(source)):
        body = _main_branch(node) if isinstance(node, ast.If) else None
        if body and body[0].lineno <= line <= body[-1].end_lineno:
            return True
    return False


def _main_branch(node: ast.If) -> list[ast.stmt] | None:
    """The statements of ``node`` that run only in the main script, if it tests
    ``__name__`` against ``"__main__"``."""
    test = node.test
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    sides = {_guard_side(test.left), _guard_side(test.comparators[0])}
    if sides != {"name", "main"}:
        return None
    if isinstance(test.ops[0], ast.Eq):
        return node.body
    return node.orelse if isinstance(test.ops[0], ast.NotEq) else None


def _guard_side(expr: ast.expr) -> str | None:
    if isinstance(expr, ast.Name) and expr.id == "__name__":
        return "name"
    if isinstance(expr, ast.Constant) and expr.value == "__main__":
        return "main"
    return None
