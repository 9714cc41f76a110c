"""Several hosts on this machine: a Dask scheduler in this network namespace and one worker
per "host", each in a network namespace of its own.

Each host's namespace is joined to a bridge here by a veth pair, on a /24 of 10.213.0.0/16
that no other address shares: traffic stays between this namespace and those. Each worker
also runs in a mount namespace of its own, with a private tmpfs over the search's
checkpoint folder: every host, and this kernel, sees a different disk under the same path,
so the code cannot reach another host's files by path. Cutting a host's link
(:meth:`Hosts.cut`) takes its veth down.

:func:`ssh_hosts` makes the same hosts with an SSH server on each instead of a worker, for
``distributed.SSHCluster`` to start the scheduler and the workers on.

Needs root and ``ip``, ``unshare`` and ``mount`` (and ``asyncssh`` for the SSH hosts); the
tests skip, saying which is missing, where they are not there. Everything made is removed after the test, and any leftover of an
earlier run with the same names before it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest


def _missing() -> str | None:
    """Why the hosts cannot be made here (None: they can)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "several hosts need root, to make network namespaces"
    for tool in ("ip", "unshare", "mount"):
        if shutil.which(tool) is None:
            return f"several hosts need `{tool}`, which is not on PATH"
    return None


def _ip(*args: str, check: bool = True) -> None:
    subprocess.run(["ip", *args], check=check, capture_output=True, text=True)


@dataclass
class Hosts:
    """The scheduler's address, each host's worker name and address, and the checkpoint
    folder every host (and this kernel) has a disk of its own under."""

    scheduler: str
    names: list[str]
    addresses: list[str]
    folder: Path
    _links: list[str]

    def cut(self, host: int) -> None:
        """Take host ``host``'s link down: its worker can no longer be reached."""
        _ip("link", "set", self._links[host], "down")


def _start_hosts(count: int, tag: str, subnet: int):
    bridge, base = f"hsb{tag}", f"10.213.{subnet}"
    links = [f"hsv{tag}{i}" for i in range(count)]
    spaces = [f"hs-{tag}-{i}" for i in range(count)]
    _clean(bridge, links, spaces)
    _ip("link", "add", bridge, "type", "bridge")
    _ip("addr", "add", f"{base}.1/24", "dev", bridge)
    _ip("link", "set", bridge, "up")
    for i, (link, space) in enumerate(zip(links, spaces, strict=True)):
        _ip("netns", "add", space)
        _ip("link", "add", link, "type", "veth", "peer", "name", "hs0", "netns", space)
        _ip("link", "set", link, "master", bridge, "up")
        _ip("-n", space, "addr", "add", f"{base}.{10 + i}/24", "dev", "hs0")
        _ip("-n", space, "link", "set", "hs0", "up")
        _ip("-n", space, "link", "set", "lo", "up")
    return bridge, base, links, spaces


def _clean(bridge: str, links: list[str], spaces: list[str]) -> None:
    for space in spaces:
        _ip("netns", "del", space, check=False)
    for link in [*links, bridge]:
        _ip("link", "del", link, check=False)


def _wait_for_port(host: str, port: int, *, seconds: float) -> None:
    """Return once ``host:port`` accepts a connection (the scheduler is up); the caller's
    own connection then fails, saying so, if it never does within ``seconds``."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            socket.create_connection((host, port), timeout=1.0).close()
            return
        except OSError:
            time.sleep(0.1)


@pytest.fixture
def hosts(tmp_path, request):
    """Three hosts (``@pytest.mark.parametrize("hosts", [n], indirect=True)`` for n). The
    scheduler drops a worker it has not heard from in 60 s: on a loaded machine a worker's
    event loop stalls for over 10 s while it imports torch, and must not be taken for lost."""
    missing = _missing()
    if missing is not None:
        pytest.skip(missing)
    with running_hosts(getattr(request, "param", 3), tmp_path, ttl="60s") as made:
        yield made


@pytest.fixture
def hosts_lost_soon(tmp_path):
    """Three hosts whose scheduler drops a worker it has not heard from in 30 s: a host
    whose link is cut is found lost within a search's deadline (and a worker whose event
    loop stalls while it imports torch on a loaded machine, 10-25 s, is not)."""
    missing = _missing()
    if missing is not None:
        pytest.skip(missing)
    with running_hosts(3, tmp_path, ttl="30s") as made:
        yield made


@contextlib.contextmanager
def running_hosts(count: int, tmp_path: Path, *, ttl: str = "60s"):
    """``count`` hosts and a scheduler, their logs and checkpoint folder under ``tmp_path``;
    the scheduler drops a worker it has not heard from in ``ttl``."""
    tag, subnet = f"{os.getpid() % 100000}", 10 + os.getpid() % 240
    folder = tmp_path / "search"
    folder.mkdir()
    dask = str(Path(sys.executable).with_name("dask"))
    bridge, base, links, spaces = _start_hosts(count, tag, subnet)
    scheduler = f"tcp://{base}.1:8786"
    env = dict(
        os.environ, OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="hs0",
        DASK_DISTRIBUTED__SCHEDULER__WORKER_TTL=ttl,
    )  # fmt: skip
    logs = tmp_path / "logs"
    logs.mkdir()
    procs = []

    def spawn(cmd: list[str], name: str) -> None:
        out = open(logs / f"{name}.log", "wb")
        procs.append((subprocess.Popen(cmd, env=env, stdout=out, stderr=out), out))

    try:
        spawn([dask, "scheduler", "--host", f"{base}.1", "--port", "8786", "--no-dashboard"],
              "scheduler")  # fmt: skip
        _wait_for_port(f"{base}.1", 8786, seconds=120)  # a loaded machine starts it slowly
        names = [f"host-{i}" for i in range(count)]
        for i, space in enumerate(spaces):
            worker = (
                f"mount -t tmpfs -o size=256m,mode=0700 hs {folder} && exec {dask} worker "
                f"{scheduler} --host {base}.{10 + i} --nthreads 1 --no-nanny --no-dashboard "
                f"--name {names[i]}"
            )
            spawn(["ip", "netns", "exec", space, "unshare", "--mount", "--propagation",
                   "private", "sh", "-c", worker], names[i])  # fmt: skip
        yield Hosts(scheduler, names, [f"{base}.{10 + i}" for i in range(count)], folder, links)
    finally:
        for proc, _ in reversed(procs):  # the workers, then the scheduler
            proc.terminate()
        end = time.monotonic() + 5  # then killed: a worker importing torch ignores SIGTERM
        for proc, out in reversed(procs):
            try:
                proc.wait(timeout=max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            out.close()
        _clean(bridge, links, spaces)


@dataclass
class SSHHosts:
    """Hosts with an SSH server each (port 22) and the options to log in to them; each
    host has a disk of its own under ``folder``."""

    addresses: list[str]
    folder: Path
    connect_options: dict


@pytest.fixture
def ssh_hosts(tmp_path):
    """Three hosts that run what SSH asks of them (``tests/hosts/ssh_server.py``)."""
    missing = _missing()
    if missing is None and importlib.util.find_spec("asyncssh") is None:
        missing = "SSH hosts need asyncssh (pip install asyncssh)"
    if missing is not None:
        pytest.skip(missing)
    import asyncssh

    tag, subnet = f"s{os.getpid() % 10000}", 10 + (os.getpid() + 120) % 240
    folder, keys, logs = tmp_path / "search", tmp_path / "keys", tmp_path / "logs"
    for made in (folder, keys, logs):
        made.mkdir(mode=0o700)
    host_key, client_key = (asyncssh.generate_private_key("ssh-ed25519") for _ in range(2))
    host_key.write_private_key(keys / "host")
    client_key.write_private_key(keys / "client")
    client_key.write_public_key(keys / "authorized")
    server = Path(__file__).with_name("ssh_server.py")
    bridge, base, links, spaces = _start_hosts(3, tag, subnet)
    addresses = [f"{base}.{10 + i}" for i in range(len(spaces))]
    procs = []
    try:
        for address, space in zip(addresses, spaces, strict=True):
            serve = (
                f"mount -t tmpfs -o size=256m,mode=0700 hs {folder} && exec {sys.executable} "
                f"{server} {address} 22 {keys / 'host'} {keys / 'authorized'}"
            )
            out = open(logs / f"{address}.log", "wb")
            cmd = ["ip", "netns", "exec", space, "unshare", "--mount", "--propagation", "private",
                   "sh", "-c", serve]  # fmt: skip
            env = dict(os.environ, OMP_NUM_THREADS="1")
            procs.append((subprocess.Popen(cmd, stdout=out, stderr=out, env=env), out))
        for address in addresses:
            _wait_for_port(address, 22, seconds=60)
        options = {"known_hosts": None, "client_keys": [str(keys / "client")], "username": "root"}
        yield SSHHosts(addresses, folder, options)
    finally:
        for proc, out in procs:
            proc.kill()
            proc.wait()
            out.close()
        for space in spaces:  # what the servers started: a scheduler, workers
            pids = subprocess.run(["ip", "netns", "pids", space], capture_output=True, text=True)
            for pid in pids.stdout.split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)
        _clean(bridge, links, spaces)
