"""A local cluster whose scheduler and nannies run in a process of their own, not the kernel's.

Dask's scheduler, run in the notebook's process, holds hundreds of thousands of Python
objects for a search of thousands of trials: every full garbage collection of the kernel
walks them (hundreds of milliseconds, while every thread waits), and its event loop shares
the kernel's GIL with the dashboard. :class:`HostedCluster` starts one child process, the
*host* (``python -c``, so that the worker processes it spawns never import the user's script
again), which runs a ``LocalCluster`` as :func:`~hypersched_nb.runtime.cluster._local_cluster`
makes it (loopback only, worker processes without a profiler, one per GPU where there are
some); the kernel keeps only a ``Client`` to it.

The two talk over the host's stdin and stdout, one JSON line per message: the kernel sends
its ``sys.path``, its Dask configuration and the cluster's size; the host answers with the
scheduler's address, then with the answer to each request (``scale``, ``scale_down``,
``names``), so that an elastic policy still resizes the cluster. The host's stdin is the
kernel's lifeline: when it closes (the kernel closes the cluster, exits, or is killed, even
by SIGKILL), the host closes the cluster and exits; its worker processes, if the host
itself is killed, exit on their own (Dask's nanny keeps a pipe to each). The host runs in a
session of its own, so that a Ctrl-C meant for the kernel does not tear it down under a
search that is stopping gracefully.
"""

from __future__ import annotations

import base64
import json
import os
import pickle
import subprocess
import sys
import threading
import warnings

from hypersched_nb.errors import HyperschedError

__all__ = ["HostedCluster"]

CLOSE_TIMEOUT = 30.0  # seconds the host has to close its cluster before it is killed


class HostedCluster:
    """The kernel's handle on a local cluster run by a host process: what ``Client`` and the
    runtime ask of a cluster (its address, resizing it, the names it means to have)."""

    def __init__(self, workers: int | None, threads: int, gpus: int):
        import dask

        spec = {"workers": workers, "threads": threads, "gpus": gpus,
                "config": dask.config.config, "path": list(sys.path), "cwd": os.getcwd()}  # fmt: skip
        boot = f"import sys; sys.path[:0] = {list(sys.path)!r}; from {__name__} import main; main()"
        self._lock = threading.Lock()
        self._process = subprocess.Popen(
            [sys.executable, "-c", boot],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True,
        )  # fmt: skip
        self.closed = False
        try:
            self._process.stdin.write(base64.b64encode(pickle.dumps(spec)).decode() + "\n")
            self._process.stdin.flush()
            import distributed  # noqa: F401 - the client's, imported while the host starts

            first = self._answer()
        except BaseException:
            self.close()
            raise
        self.scheduler_address: str = first["address"]
        self.dashboard_link: str = first["dashboard"]

    @property
    def pid(self) -> int:
        """The host process's id."""
        return self._process.pid

    @property
    def alive(self) -> bool:
        """Whether its host process still runs and it was not closed."""
        return not self.closed and self._process.poll() is None

    @property
    def status(self):
        """As a Dask cluster says it (the client's heartbeat reads it)."""
        from distributed.core import Status

        return Status.closed if self.closed else Status.running

    def _answer(self) -> dict:
        line = self._process.stdout.readline()
        if not line:
            code = self._process.wait()
            raise HyperschedError(
                f"the local cluster's process ended (exit status {code}) before it answered; "
                "its error is above"
            )
        out = json.loads(line)
        if "error" in out:
            raise HyperschedError(f"the local cluster did not start: {out['error']}")
        return out

    def _ask(self, **request) -> dict:
        with self._lock:
            if self.closed:
                raise HyperschedError("the local cluster is closed")
            self._process.stdin.write(json.dumps(request) + "\n")
            self._process.stdin.flush()
            return self._answer()

    # ------------------------------------------------------------------ resizing

    def scale(self, n: int) -> None:
        """Ask for ``n`` workers in all."""
        self._ask(op="scale", n=int(n))

    def scale_down(self, names) -> None:
        """Close the workers named ``names`` (and forget those still starting)."""
        self._ask(op="scale_down", names=list(names))

    @property
    def worker_spec(self) -> dict:
        """The names of the workers the cluster has or is starting (as keys)."""
        return dict.fromkeys(self._ask(op="names")["spec"])

    @property
    def plan(self) -> set:
        """The names of the workers the cluster means to have."""
        return set(self._ask(op="names")["plan"])

    def spec_and_plan(self) -> tuple[set, set]:
        """(:attr:`worker_spec`'s names, :attr:`plan`) in one request."""
        names = self._ask(op="names")
        return set(names["spec"]), set(names["plan"])

    # ------------------------------------------------------------------ closing

    def close(self) -> None:
        """Close the cluster and wait for its process to end (killed past ``CLOSE_TIMEOUT``)."""
        with self._lock:
            self.closed = True
            try:
                self._process.stdin.close()  # the host's lifeline: it closes its cluster
            except OSError:
                pass
            try:
                self._process.wait(CLOSE_TIMEOUT)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._process.stdout.close()


# ---------------------------------------------------------------------- the host process


def main() -> None:
    """The host: start the cluster, say its address, answer requests until stdin closes,
    then close the cluster."""
    spec = pickle.loads(base64.b64decode(sys.stdin.readline()))
    try:
        cluster = _start(spec)
    except BaseException as exc:  # noqa: BLE001 - said to the kernel, in one line
        _say({"error": f"{type(exc).__name__}: {exc}".splitlines()[0]})
        raise SystemExit(1) from None
    _say({"address": cluster.scheduler_address, "dashboard": cluster.dashboard_link})
    try:
        for line in sys.stdin:  # until the kernel closes it, or dies
            _say(_serve(cluster, json.loads(line)))
    finally:
        from hypersched_nb.runtime._quiet import closing_quietly

        with closing_quietly():  # what a close does on purpose is not news
            cluster.close()


def _start(spec: dict):
    import dask

    from hypersched_nb.runtime.cluster import _local_cluster

    os.chdir(spec["cwd"])
    dask.config.update(dask.config.config, spec["config"], priority="new")
    _patient_nannies(dask)
    with warnings.catch_warnings():  # the kernel said what there was to say
        warnings.simplefilter("ignore")
        return _local_cluster(spec["workers"], spec["threads"], gpus=spec["gpus"])


#: seconds this host's cluster waits for a nanny to bring back a worker it restarted (a
#: memory kill, a step_timeout) before closing that nanny for good. Dask's 15 s ran out on
#: a loaded machine (a fresh worker took 17-67 s), and a one-worker cluster then had none.
#: Read at each worker's removal, so set for the host's life: it runs this cluster alone.
LOST_WORKER_TIMEOUT = 300.0


def _patient_nannies(dask) -> None:
    from dask.utils import parse_timedelta

    key = "distributed.deploy.lost-worker-timeout"
    if parse_timedelta(dask.config.get(key, "15s"), "s") < LOST_WORKER_TIMEOUT:
        dask.config.set({key: f"{LOST_WORKER_TIMEOUT:g}s"})


def _serve(cluster, request: dict) -> dict:
    op = request["op"]
    if op == "scale":
        cluster.scale(request["n"])
    elif op == "scale_down":
        cluster.loop.add_callback(cluster.scale_down, request["names"])
    elif op == "names":
        for _ in range(5):  # the cluster's own thread may change its spec meanwhile
            try:
                return {"spec": list(cluster.worker_spec), "plan": list(cluster.plan)}
            except RuntimeError:
                continue
        return {"spec": [], "plan": []}
    return {}


def _say(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()
