"""Secure defaults of a live search: everything it listens on is on loopback, and what it
writes to disk only its owner can read."""

import stat
import time

import psutil
import pytest

from hypersched_nb import Experiment

pytestmark = pytest.mark.cluster

LOOPBACK = {"127.0.0.1", "::1"}


def listening(process: psutil.Process) -> set[tuple[str, int]]:
    """Every (address, port) this process and its descendants listen on."""
    out = set()
    for p in [process, *process.children(recursive=True)]:
        try:
            out |= {
                (c.laddr.ip, c.laddr.port)
                for c in p.net_connections(kind="inet")
                if c.status == psutil.CONN_LISTEN
            }
        except psutil.NoSuchProcess:  # a process that ended meanwhile listens on nothing
            pass
    return out


def test_a_live_search_listens_on_loopback_only_and_writes_private_files(tmp_path):
    from hypersched_nb.train.examples import DigitsCNN

    runs = tmp_path / "runs"
    exp = Experiment(DigitsCNN, DigitsCNN.space(), metric="val_acc", deadline="40s", max_epochs=4,
                     policy="asha", cluster=2, seed=0, checkpoint_dir=str(runs / "search"))  # fmt: skip
    exp.start()
    try:
        while exp.best is None and exp.statistics().status == "running":
            time.sleep(0.2)  # until a trial has trained: the cluster is up, workers listen
        sockets = listening(psutil.Process())
    finally:
        exp.stop()
        exp.wait()
    assert exp.best is not None, "no epoch ended in 40 s"
    assert sockets, "found no listening socket: the check would pass vacuously"
    assert {(ip, port) for ip, port in sockets if ip not in LOOPBACK} == set()
    for path in [runs, *runs.rglob("*")]:
        expected = 0o700 if path.is_dir() else 0o600
        assert stat.S_IMODE(path.stat().st_mode) == expected, path
