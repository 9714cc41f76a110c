"""Which local cluster a search starts: one dask-cuda worker per GPU when CUDA devices are
present, CPU worker processes otherwise. The GPU branch is specified here on a CPU machine
with recording stand-ins for ``LocalCUDACluster`` and ``LocalCluster`` (nothing starts)."""

import importlib.machinery
import sys
import types

import dask
import distributed
import pytest

from hypersched_nb.errors import ConfigError
from hypersched_nb.runtime import cluster


@pytest.fixture
def made(monkeypatch):
    """The clusters built during a test, as [(class name, keyword arguments)]."""
    built = []

    def recorder(kind):
        return lambda **kwargs: built.append((kind, kwargs))

    def local_cuda_cluster(**kwargs):
        if "config" in kwargs:  # as dask-cuda does: it passes LocalCluster a config of its own
            raise TypeError("LocalCluster.__init__() got multiple values for argument 'config'")
        profile = dask.config.get(cluster.WORKER_PROFILE)  # what its nannies copy as made
        built.append(("LocalCUDACluster", {**kwargs, "profile in the global config": profile}))

    fake = types.ModuleType("dask_cuda")
    fake.__spec__ = importlib.machinery.ModuleSpec("dask_cuda", None)
    fake.LocalCUDACluster = local_cuda_cluster
    monkeypatch.setitem(sys.modules, "dask_cuda", fake)
    monkeypatch.setattr(distributed, "LocalCluster", recorder("LocalCluster"))
    return lambda: built


def gpus(monkeypatch, n: int) -> None:
    monkeypatch.setattr(cluster, "_cuda_devices", lambda: n)


def test_one_dask_cuda_worker_per_gpu(monkeypatch, made):
    gpus(monkeypatch, 2)
    cluster._local_cluster(None, 1)
    ((kind, kwargs),) = made()
    assert kind == "LocalCUDACluster"
    assert kwargs["n_workers"] == 2  # one worker process per device
    assert kwargs["resources"] == {"GPU": 1}  # every worker advertises its own GPU
    assert kwargs["host"] == "127.0.0.1" and kwargs["threads_per_worker"] == 1
    assert kwargs["dashboard_address"] == "127.0.0.1:0"  # its dashboard too, on a free port
    assert kwargs["profile in the global config"] is False  # no profiler in its workers
    assert dask.config.get(cluster.WORKER_PROFILE) is not False  # only while it is made


def test_asking_for_fewer_workers_than_gpus_uses_that_many(monkeypatch, made):
    gpus(monkeypatch, 4)
    cluster._local_cluster(3, 1)
    assert made()[0][1]["n_workers"] == 3


def test_never_more_gpu_workers_than_devices(monkeypatch, made):
    gpus(monkeypatch, 2)
    cluster._local_cluster(8, 1)
    assert made()[0][1]["n_workers"] == 2  # two workers on one device would share its memory


def test_without_gpus_cpu_worker_processes_on_loopback(monkeypatch, made):
    gpus(monkeypatch, 0)
    cluster._local_cluster(3, 1)
    ((kind, kwargs),) = made()
    assert kind == "LocalCluster"
    assert kwargs["n_workers"] == 3 and kwargs["processes"] is True
    assert kwargs["host"] == "127.0.0.1" and kwargs["dashboard_address"] == "127.0.0.1:0"
    assert kwargs["preload"] == [cluster.PRELOAD]  # torch imported as each worker starts


def test_gpus_without_dask_cuda_warn_and_hide_the_devices(monkeypatch, made):
    gpus(monkeypatch, 2)
    monkeypatch.setitem(sys.modules, "dask_cuda", None)  # find_spec -> ValueError or None
    monkeypatch.setattr(cluster.importlib.util, "find_spec", lambda name: None)
    with pytest.warns(UserWarning, match=r"dask-cuda is not installed \(pip install") as seen:
        cluster._local_cluster(2, 1)
    assert seen[0].filename == __file__  # the warning points at the caller, not at us
    ((kind, kwargs),) = made()
    assert kind == "LocalCluster"
    assert kwargs["env"] == {"CUDA_VISIBLE_DEVICES": ""}  # CPU workers never touch the GPUs


def test_an_empty_cuda_visible_devices_means_no_gpu(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert cluster._cuda_devices() == 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"workers": 0}, "`workers` is 0, but must be >= 1"),
        ({"threads_per_worker": 0}, "`threads_per_worker` is 0, but must be >= 1"),
        ({"address": "tcp://127.0.0.1:1", "client": object()}, "only one may be"),
    ],
)
def test_bad_cluster_arguments_are_one_line_errors(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        cluster.start_cluster(**kwargs)


def a_closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens (bound, then freed)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_address_where_no_scheduler_listens_is_one_line_after_the_connect_timeout(monkeypatch):
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT", 0.5)  # 10 s for users
    address = f"tcp://127.0.0.1:{a_closed_port()}"
    with pytest.raises(ConfigError) as info:
        cluster.start_cluster(address=address)
    assert str(info.value) == (
        f"no Dask scheduler answers at {address} (Connection refused) after 0.5 s: check that "
        "one runs there and that this machine can reach it"
    )


@pytest.mark.parametrize(
    "address, message",
    [("tcp://127.0.0.1:notaport", "`address` is 'tcp://127.0.0.1:notaport', which is not an address (invalid literal"),
     ("localhost::1", "`address` is 'localhost::1', which is not an address (invalid address"),
     ("", "`address` is '', but must be a scheduler address; write it as 'tcp://host:8786'"),
     ("tcp2://127.0.0.1:1", "`address` is 'tcp2://127.0.0.1:1', which is not an address (unknown address scheme 'tcp2'")],
)  # fmt: skip
def test_a_malformed_address_is_one_line_saying_how_to_write_one(address, message):
    with pytest.raises(ConfigError) as info:
        cluster.start_cluster(address=address)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


@pytest.mark.parametrize(
    "address, found",
    [("tcp://127.0.0.1:8786", ("127.0.0.1", 8786)), ("sched:8786", ("sched", 8786)),
     ("inproc://10.0.0.1/1/2", None)],
)  # fmt: skip
def test_an_address_is_read_without_connecting(address, found):
    assert cluster.check_address(address, "cluster") == found
    with pytest.raises(ConfigError, match="^`cluster` is 'sched', which is not an address"):
        cluster.check_address("sched", "cluster")  # the parameter the user gave is named


@pytest.mark.cluster
def test_local_workers_run_no_statistical_profiler_and_keep_the_kernels_dask_config():
    import dask

    with dask.config.set({"distributed.worker.memory.target": 0.55}):
        client, close = cluster.start_cluster(1)
    try:
        seen = client.run(
            lambda dask_worker: (
                sorted(dask_worker.periodic_callbacks),
                dask.config.get("distributed.worker.memory.target"),
            )
        )
    finally:
        close()
    ((callbacks, target),) = seen.values()
    assert "profile" not in callbacks and "heartbeat" in callbacks  # no 10 ms stack sampling
    assert target == 0.55  # what the kernel set still reaches the worker
