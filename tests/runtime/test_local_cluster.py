"""A local cluster runs outside the kernel: its scheduler and nannies in a host process of
their own, which ends with the kernel (even a killed one); a search's cluster stays warm for
the next search of the same size in the same kernel."""

import gc
import os
import signal
import subprocess
import sys
import textwrap
import time

import dask
import psutil
import pytest

from hypersched_nb.runtime import _heap, cluster

pytestmark = pytest.mark.cluster


def family(pid: int) -> list[psutil.Process]:
    """The process ``pid`` and its descendants."""
    root = psutil.Process(pid)
    return [root, *root.children(recursive=True)]


def running(processes: list[psutil.Process]) -> list[psutil.Process]:
    out = []
    for p in processes:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.NoSuchProcess:
            pass
    return out


def gone_within(processes: list[psutil.Process], seconds: float) -> list[psutil.Process]:
    """Those of ``processes`` still running after up to ``seconds`` (none, once all end)."""
    end = time.monotonic() + seconds
    while running(processes) and time.monotonic() < end:
        time.sleep(0.2)
    return running(processes)


def test_the_scheduler_and_the_nannies_run_in_a_process_other_than_the_kernels(monkeypatch):
    monkeypatch.setattr(_heap, "_HELD", [0])  # no other search holds the kernel's heap
    gc.unfreeze()
    cluster.close_local_cluster()
    client, close = cluster.start_cluster(2)
    try:
        assert gc.get_freeze_count() > 0  # the kernel's heap, out of its collections
        scheduler = client.run_on_scheduler(os.getpid)
        parents = set(client.run(os.getppid).values())  # each worker's nanny
        host = client.cluster.pid
    finally:
        close()
        cluster.close_local_cluster()
    assert gc.get_freeze_count() == 0
    assert scheduler != os.getpid() and scheduler == host
    assert parents == {host}  # the nannies too: the kernel holds only the client
    assert not hasattr(client.cluster, "scheduler")  # no scheduler object in this process


def test_nothing_is_left_running_once_the_cluster_is_closed():
    cluster.close_local_cluster()
    client, close = cluster.start_cluster(2)
    # the host and its two workers (not a helper process one of them runs for a moment)
    processes = [psutil.Process(p) for p in (client.cluster.pid, *client.run(os.getpid).values())]
    assert len(processes) == 3
    close()  # the search's close: the cluster stays warm
    assert len(running(processes)) == len(processes)
    cluster.close_local_cluster()
    assert gone_within(processes, 30.0) == []
    assert not client.cluster.alive


def test_a_second_search_of_the_same_size_reuses_the_cluster_and_another_size_does_not():
    cluster.close_local_cluster()
    client, close = cluster.start_cluster(1)
    first = client.cluster
    processes = family(first.pid)
    close()
    again, close_again = cluster.start_cluster(1)
    try:
        assert again is not client  # a client of its own
        assert again.cluster is first  # the same host, scheduler and workers
        assert len(again.scheduler_info()["workers"]) == 1
    finally:
        close_again()
    other, close_other = cluster.start_cluster(2)  # another size: a cluster of its own
    close_other()  # kept warm instead of the first, which closes
    try:
        assert other.cluster is not first
        assert not first.alive and gone_within(processes, 30.0) == []  # one idle at most
        with dask.config.set({"distributed.worker.memory.target": 0.5}):
            changed, close_changed = cluster.start_cluster(2)  # another configuration
        close_changed()
        assert changed.cluster is not other.cluster
    finally:
        cluster.close_local_cluster()


KILLED = """\
import time
from hypersched_nb.runtime.cluster import start_cluster

client, close = start_cluster(2)
client.run(lambda: 0)  # the workers are up
print(client.cluster.pid, flush=True)
time.sleep(600)
"""


def test_a_killed_kernel_leaves_no_cluster_process_behind(tmp_path):
    script = tmp_path / "kernel.py"
    script.write_text(KILLED)
    kernel = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        host = int(kernel.stdout.readline())
        processes = family(host)
        assert len(processes) >= 3
    finally:
        kernel.send_signal(signal.SIGKILL)
        kernel.wait()
        kernel.stdout.close()
    assert gone_within(processes, 60.0) == []


UNGUARDED = textwrap.dedent(
    """\
    from hypersched_nb import Experiment
    from hypersched_nb.testing.trainables import TinyRegression

    exp = Experiment(TinyRegression, {"lr": [0.1, 0.01]}, metric="loss", mode="min",
                     deadline="60s", max_epochs=2, policy="asha", cluster=1,
                     checkpoint_dir="runs")
    print("best", exp.run() is not None)
    """
)


def test_a_script_may_start_a_search_at_its_top_level(tmp_path):
    # the worker processes are the host's children, which never import the script again
    script = tmp_path / "search.py"
    script.write_text(UNGUARDED)
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "best True"
    assert "Traceback" not in done.stderr and "Nanny" not in done.stderr


def test_each_worker_imports_torch_as_it_starts_before_any_task():
    cluster.close_local_cluster()
    client, close = cluster.start_cluster(1)
    try:
        end = time.monotonic() + 120.0
        while time.monotonic() < end:  # client.run runs in the worker's loop, not as a task
            seen = client.run(lambda: {m: m in sys.modules for m in ("torch", "torch._dynamo")})
            if all(all(v.values()) for v in seen.values()):
                break
            time.sleep(0.5)
        assert all(all(v.values()) for v in seen.values()), seen
        assert client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks)) == 0
    finally:
        close()
        cluster.close_local_cluster()


TWO_SEARCHES = """\
from hypersched_nb import Experiment
from hypersched_nb.runtime import _warm
from hypersched_nb.testing.trainables import TinyRegression

for i in range(2):
    exp = Experiment(TinyRegression, [{"lr": 0.1}], metric="loss", mode="min", deadline=240.0,
                     max_epochs=1, policy="asha", cluster=2, checkpoint_dir=f"runs-{i}")
    exp.run()
    print(exp.best is not None, *[hosted.pid for _, hosted in _warm._IDLE], flush=True)
"""


def test_a_second_search_in_a_fresh_kernel_takes_the_first_ones_cluster(tmp_path):
    # in a new interpreter: distributed is first imported while the first cluster starts
    script = tmp_path / "two.py"
    script.write_text(TWO_SEARCHES)
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=480
    )
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.strip().splitlines()[-2:]
    assert first.startswith("True ") and first == second  # one host pid, kept idle after both


@pytest.mark.parametrize(
    ("kernel", "worker"),
    [(None, None), ("65536", None), ("1048576", "1048576")],
    ids=["unset", "left-by-a-nanny-in-the-kernel", "the-users-own"],
)
def test_the_workers_keep_mallocs_own_threshold_not_dasks_trim_setting(monkeypatch, kernel, worker):
    # Dask's 64 KiB trim threshold makes each training step map and unmap its tensors
    # afresh (benchmarks/worker_speed.py); a worker allocates as the user's own Python
    # does, unless the user set a threshold of their own
    if kernel is None:
        monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    else:
        monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", kernel)
    cluster.close_local_cluster()
    client, close = cluster.start_cluster(2)
    try:
        # a lambda, run there (os.environ.get itself would carry this process's environ)
        seen = client.run(lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_"))
        threads = client.run(lambda: os.environ.get("OMP_NUM_THREADS"))
    finally:
        close()
        cluster.close_local_cluster()
    assert set(seen.values()) == {worker}
    assert set(threads.values()) == {"1"}  # Dask's other settings stand: one thread each


def test_the_scheduler_imports_neither_the_trainable_nor_torch(tmp_path):
    # Dask's scheduler unpickles every task it is sent: a trainable sent as itself had it
    # import the trainable's module and torch (1.2 s of no scheduling on a first search)
    from hypersched_nb import Experiment
    from hypersched_nb.testing.trainables import TinyRegression

    cluster.close_local_cluster()
    try:
        exp = Experiment(
            TinyRegression, {"lr": [0.05, 0.1]}, metric="loss", mode="min", policy="asha",
            cluster=1, deadline=60.0, max_epochs=2, checkpoint_dir=str(tmp_path),
        )  # fmt: skip
        best = exp.run()
        assert best is not None  # trained, on the workers
        client, close = cluster.start_cluster(1)  # the search's cluster, kept warm
        try:
            imported = client.run_on_scheduler(lambda: sorted(sys.modules))
        finally:
            close()
    finally:
        cluster.close_local_cluster()
    assert "torch" not in imported and "hypersched_nb.testing.trainables" not in imported
