"""The best weights written in the background: the epoch goes on while a thread writes a
copy, and the client names only weights that are written, always those of the best it
reports."""

import threading
import time

import pytest
import torch

from hypersched_nb.runtime import _best_writer
from hypersched_nb.runtime._best_writer import pending, wait_written, write_in_background
from hypersched_nb.runtime._bests import BestWeights
from hypersched_nb.runtime.checkpoint import best_url, load_checkpoint


def _write(tmp_path, state, epoch):
    url = best_url(str(tmp_path), 0, epoch)
    return write_in_background(state, url, epoch=epoch, about={}, store=None, topic=None)


def _event(ckpt_url, sha="ab" * 32, error=None):
    return _best_writer.written_event(ckpt_url, None, error) if error else {
        "best_written": ckpt_url, "sha256": sha, "bytes": 1, "epoch": 1, "store": None,
        "error": None,
    }  # fmt: skip


def test_the_weights_written_are_those_of_the_best_epoch_though_training_went_on(tmp_path):
    weights = torch.arange(1000, dtype=torch.float32)
    state = {"w": weights, "epoch": 3}
    written = _write(tmp_path, state, 3)
    assert pending(written)  # returned before the write: no checksum yet
    weights += 1.0  # the next epoch trains on, in place
    state["epoch"] = 4
    wait_written(written.url)
    got = load_checkpoint(written.url)
    assert got["epoch"] == 3 and torch.equal(got["w"], torch.arange(1000, dtype=torch.float32))


def test_a_best_that_waits_for_the_write_in_flight_is_superseded_by_a_newer_one(
    tmp_path, monkeypatch
):
    gate, save = threading.Event(), _best_writer.save_checkpoint

    def slow_save(state, url, **kw):  # the first write holds the writer until the gate opens
        gate.wait(30)
        return save(state, url, **kw)

    monkeypatch.setattr(_best_writer, "save_checkpoint", slow_save)
    first = _write(tmp_path, {"w": torch.zeros(3)}, 1)
    time.sleep(0.2)  # the writer has taken the first
    second = _write(tmp_path, {"w": torch.ones(3)}, 2)
    third = _write(tmp_path, {"w": torch.full((3,), 2.0)}, 3)  # the second is beaten: dropped
    gate.set()
    for c in (first, second, third):
        wait_written(c.url)
    names = sorted(p.name for p in (tmp_path / "best").glob("*.pt"))
    assert names == ["trial-00000-epoch-000001.pt", "trial-00000-epoch-000003.pt"]


def test_the_best_named_waits_for_its_weights_and_then_has_their_checksum(tmp_path):
    bests = BestWeights("loss", -1.0)
    url = best_url(str(tmp_path), 0, 1)
    bests.offer(0, _write_pending(url, 1), 0.5)
    threading.Timer(0.3, bests.written, args=(_event(url),)).start()
    best = bests.best()  # waits for the write in flight
    assert (best.url, best.sha256, best.metric) == (url, "ab" * 32, 0.5)


def test_weights_said_written_before_their_epoch_is_reported_are_not_waited_for(tmp_path):
    bests = BestWeights("loss", -1.0, wait=0.01)
    url = best_url(str(tmp_path), 0, 1)
    bests.written(_event(url))  # the writer was quicker than the epoch's report
    bests.offer(0, _write_pending(url, 1), 0.5)
    assert bests.best().sha256 == "ab" * 32


def test_weights_superseded_before_written_give_way_to_the_newer_best_quietly(tmp_path):
    bests = BestWeights("loss", -1.0, wait=5.0)
    old, new = best_url(str(tmp_path), 0, 1), best_url(str(tmp_path), 0, 2)
    bests.offer(0, _write_pending(old, 1), 0.5)
    bests.offer(0, _write_pending(new, 2), 0.4)
    bests.written(_event(old, error="superseded by epoch 2's"))
    bests.written(_event(new))
    assert bests.best().url == new
    assert bests.best(at_most=0.5) is None  # epoch 1's weights were never written


def test_weights_that_never_come_are_said_and_the_best_before_is_named(tmp_path):
    bests = BestWeights("loss", -1.0, wait=0.2)
    done, lost = best_url(str(tmp_path), 0, 1), best_url(str(tmp_path), 1, 1)
    bests.offer(0, _write_pending(done, 1), 0.5)
    bests.written(_event(done))
    bests.offer(1, _write_pending(lost, 1), 0.4)  # its worker died before writing it
    with pytest.warns(UserWarning, match=r"trial 1's epoch 1 were not written within 0.2 s"):
        assert bests.best().url == done


def _write_pending(url, epoch):
    from hypersched_nb.runtime.checkpoint import Checkpoint

    return Checkpoint(url, "", 0, epoch)
