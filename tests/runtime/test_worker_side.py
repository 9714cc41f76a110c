"""The worker side, called in this process: resident replicas, checkpoint rule, restore and
replay, failures returned with their traceback."""

import math

import pytest

from hypersched_nb.runtime import _worker
from hypersched_nb.testing.trainables import TinyRegression


@pytest.fixture(autouse=True)
def _clean_registry():
    yield
    for tid in list(_worker._RESIDENT):
        _worker.release(tid, _worker._RESIDENT[tid].token)


def _spec(tmp_path, *, tid=0, token=1, config=None, replay=0, overhead=math.inf, keep=None):
    return {
        "trial_id": tid, "token": token, "rank": 0, "world": 1, "factory": TinyRegression,
        "config": config or {"lr": 0.05}, "seed": 3, "replay": replay, "group_timeout": 30,
        "save": {"dir": str(tmp_path), "overhead": overhead, "keep": keep},
    }  # fmt: skip


def test_a_replica_stays_resident_between_epochs(tmp_path):
    first = _worker.start(_spec(tmp_path), None, None)
    second = _worker.step(0, 1, None)
    assert first["ok"] and second["ok"]
    assert (first["epoch"], second["epoch"]) == (1, 2)  # the same object trained on
    assert second["metrics"]["loss"] < first["metrics"]["loss"]
    assert _worker.resident() == {0: {"rank": 0, "world": 1, "token": 1, "epochs": 2}}


def test_checkpoints_follow_the_overhead_budget(tmp_path):
    every = _worker.start(_spec(tmp_path, overhead=math.inf), None, None)
    assert every["ckpt"]["epoch"] == 1  # the first epoch always writes (to measure the cost)
    spec = {"dir": str(tmp_path), "overhead": 0.0, "keep": None}
    assert _worker.step(0, 1, spec)["ckpt"] is None  # a zero budget writes no more
    spec["overhead"] = math.inf
    assert _worker.step(0, 1, spec)["ckpt"]["epoch"] == 3  # an unbounded one writes each epoch


def test_an_epoch_that_beats_the_best_so_far_writes_its_weights_apart(tmp_path):
    first = _worker.start(_spec(tmp_path, overhead=0.0), None, None)
    loss = first["metrics"]["loss"]
    spec = {"dir": str(tmp_path), "overhead": math.inf, "keep": None}
    # lower is better (sign -1): a loss below the best so far is a record
    spec["best"] = {"metric": "loss", "sign": -1.0, "above": -loss}
    record = _worker.step(0, 1, spec)
    assert record["best"]["epoch"] == 2 and record["best"]["url"].endswith(
        "best/trial-00000-epoch-000002.pt"
    )
    spec["best"]["above"] = -0.0  # a loss of 0 cannot be beaten: nothing written
    assert _worker.step(0, 1, spec)["best"] is None
    spec["best"] = {"metric": "missing", "sign": 1.0, "above": None}  # the client reports it
    assert _worker.step(0, 1, spec)["best"] is None
    spec["best"], spec["overhead"] = {"metric": "loss", "sign": -1.0, "above": 1e9}, 0.0
    assert _worker.step(0, 1, spec)["best"] is None  # a record, but over the write budget
    spec["best"]["above"] = None
    assert _worker.step(0, 1, spec)["best"]["epoch"] == 6  # unless none is kept yet
    assert len(list((tmp_path / "best").glob("*.pt"))) == 2


def test_restore_and_replay_give_the_weights_of_straight_training(tmp_path):
    straight = _worker.start(_spec(tmp_path, tid=1, overhead=0.0), None, None)
    for _ in range(3):
        straight = _worker.step(1, 1, None)
    # trial 0: checkpoint after epoch 2, then lose the replica and come back with 2 reported
    _worker.start(_spec(tmp_path), None, None)
    _worker.step(0, 1, None)
    saved = _worker.save(0, 1, {"dir": str(tmp_path), "overhead": 0.0, "keep": None}, True, False)
    assert saved["ok"] and saved["ckpt"]["epoch"] == 2 and not _worker.resident().get(0)
    back = _worker.start(_spec(tmp_path, token=2, replay=1), saved["ckpt"], None)
    # 2 restored + 1 trained again silently + 1 reported: the weights of 4 epochs straight
    assert back["epoch"] == straight["epoch"] == 4
    assert back["metrics"]["digest"] == straight["metrics"]["digest"]


def test_a_raising_trainable_comes_back_as_a_traceback_and_is_torn_down(tmp_path):
    _worker.start(_spec(tmp_path, config={"fail_at": 2}), None, None)
    out = _worker.step(0, 1, None)
    assert not out["ok"]
    assert "Traceback" in out["error"] and "RuntimeError: boom at epoch 2" in out["error"]
    assert _worker.resident() == {}  # the failed replica is gone


def test_a_failing_setup_is_reported_too(tmp_path):
    spec = _spec(tmp_path)
    spec["factory"] = lambda: None  # not a trainable: setup cannot be called
    out = _worker.start(spec, None, None)
    assert not out["ok"] and "AttributeError" in out["error"]


def test_a_task_of_an_old_placement_never_touches_the_new_one(tmp_path):
    _worker.start(_spec(tmp_path, token=5), None, None)
    assert not _worker.step(0, 4, None)["ok"]  # placement 4 is gone
    _worker.release(0, 4)
    assert 0 in _worker.resident()  # releasing placement 4 leaves placement 5 alone


def test_a_start_evicts_whatever_the_worker_held(tmp_path):
    _worker.start(_spec(tmp_path, tid=0), None, None)
    _worker.start(_spec(tmp_path, tid=1), None, None)
    assert set(_worker.resident()) == {1}  # one replica per worker
