"""The worker side, called in this process: resident replicas, checkpoint rule, restore and
replay, failures returned with their traceback."""

import math
import time

import pytest

from hypersched_nb.runtime import _best_writer, _replicas, _worker, _worker_io
from hypersched_nb.runtime._messages import (
    BestBar,
    Epoch,
    Failed,
    Handover,
    SaveSpec,
    Sealed,
    StartSpec,
    placement_tokens,
    search_of,
)
from hypersched_nb.testing.trainables import TinyRegression


@pytest.fixture(autouse=True)
def _clean_registry():
    yield
    for tid in list(_replicas.RESIDENT):
        _worker.release(tid, _replicas.RESIDENT[tid].token)
    _replicas.HALTED.clear()  # as a fresh worker process: no halt, no search ended
    _replicas.ENDED.clear()


def _spec(tmp_path, *, tid=0, token=1, config=None, replay=0, overhead=math.inf, factory=None):
    return StartSpec(
        trial_id=tid, token=token, rank=0, world=1, factory=Sealed.of(factory or TinyRegression),
        config=config or {"lr": 0.05}, seed=3, replay=replay, group_timeout=30,
        save=SaveSpec(str(tmp_path), overhead),
    )  # fmt: skip


def test_a_replica_stays_resident_between_epochs(tmp_path):
    first = _worker.start(_spec(tmp_path), None, None)
    second = _worker.step(0, 1, None)
    assert type(first) is Epoch and type(second) is Epoch
    assert (first.epoch, second.epoch) == (1, 2)  # the same object trained on
    assert second.metrics["loss"] < first.metrics["loss"]
    assert _worker.resident() == {0: _worker.Resident(rank=0, world=1, token=1, epochs=2)}


def test_a_checkpoint_and_a_best_say_which_trial_configuration_and_metrics_they_hold(tmp_path):
    import json

    def about(written) -> dict:
        with open(f"{written.url}.json") as f:
            return json.load(f)["about"]

    first = _worker.start(_spec(tmp_path, tid=2, config={"lr": 0.07}), None, None)
    assert about(first.ckpt) == {"trial_id": 2, "config": {"lr": 0.07}, "metrics": first.metrics}
    best = _worker.step(2, 1, SaveSpec(str(tmp_path), 0.0, best=BestBar("loss", -1.0, None)))
    _best_writer.wait_written(best.best.url)  # written in the background
    assert about(best.best) == {"trial_id": 2, "config": {"lr": 0.07}, "metrics": best.metrics}


def test_checkpoints_follow_the_overhead_budget(tmp_path):
    every = _worker.start(_spec(tmp_path, overhead=math.inf), None, None)
    assert every.ckpt.epoch == 1  # the first epoch always writes (to measure the cost)
    assert _worker.step(0, 1, SaveSpec(str(tmp_path), 0.0)).ckpt is None  # zero: no more
    unbounded = SaveSpec(str(tmp_path), math.inf)
    assert _worker.step(0, 1, unbounded).ckpt.epoch == 3  # an unbounded one writes each epoch


def test_an_epoch_that_beats_the_best_so_far_writes_its_weights_apart(tmp_path):
    first = _worker.start(_spec(tmp_path, overhead=0.0), None, None)
    loss = first.metrics["loss"]

    def save(bar, overhead=math.inf):
        return SaveSpec(str(tmp_path), overhead, best=bar)

    # lower is better (sign -1): a loss below the best so far is a record
    record = _worker.step(0, 1, save(BestBar("loss", -1.0, -loss)))
    assert record.best.epoch == 2
    assert record.best.url.endswith("best/trial-00000-epoch-000002.pt")
    # a loss of 0 cannot be beaten: nothing written
    assert _worker.step(0, 1, save(BestBar("loss", -1.0, -0.0))).best is None
    # a metric step() does not report: nothing written (the client reports it)
    assert _worker.step(0, 1, save(BestBar("missing", 1.0, None))).best is None
    # a record when no checkpoint may be written (a zero budget): its weights still are
    record = _worker.step(0, 1, save(BestBar("loss", -1.0, -1e9), overhead=0.0))
    assert record.ckpt is None and record.best.epoch == 5
    _best_writer.wait_written(record.best.url)
    # and at once again at the next record: a best's weights are never skipped
    record = _worker.step(0, 1, save(BestBar("loss", -1.0, -1e9), overhead=0.0))
    assert record.best.epoch == 6
    _best_writer.wait_written(record.best.url)
    assert len(list((tmp_path / "best").glob("*.pt"))) == 3


def test_restore_and_replay_give_the_weights_of_straight_training(tmp_path):
    straight = _worker.start(_spec(tmp_path, tid=1, overhead=0.0), None, None)
    for _ in range(3):
        straight = _worker.step(1, 1, None)
    # trial 0: checkpoint after epoch 2, then lose the replica and come back with 2 reported
    _worker.start(_spec(tmp_path), None, None)
    _worker.step(0, 1, None)
    saved = _worker.checkpoint_and_release(0, 1, SaveSpec(str(tmp_path), 0.0))
    assert type(saved) is Handover and saved.ckpt.epoch == 2 and not _worker.resident().get(0)
    back = _worker.start(_spec(tmp_path, token=2, replay=1), saved.ckpt, None)
    # 2 restored + 1 trained again silently + 1 reported: the weights of 4 epochs straight
    assert back.epoch == straight.epoch == 4
    assert back.metrics["digest"] == straight.metrics["digest"]


def test_a_resize_hand_over_checkpoints_only_when_asked_and_frees_the_worker(tmp_path):
    _worker.start(_spec(tmp_path, overhead=0.0), None, None)
    current = _worker.hand_over(0, 1, None, rendezvous=False)
    assert current == Handover()  # the last checkpoint is current: nothing written
    assert _worker.resident() == {}  # and the replica is gone either way
    _worker.start(_spec(tmp_path, token=2, overhead=0.0), None, None)
    _worker.step(0, 2, None)
    stale = _worker.hand_over(0, 2, SaveSpec(str(tmp_path), 0.0), rendezvous=False)
    assert stale.ckpt.epoch == 2 and stale.rendezvous is None


def test_a_checkpoint_of_a_placement_that_is_gone_fails(tmp_path):
    out = _worker.checkpoint_and_release(0, 9, SaveSpec(str(tmp_path), 0.0))
    assert type(out) is Failed and "no live replica" in out.error


def test_a_raising_trainable_comes_back_as_a_traceback_and_is_torn_down(tmp_path):
    _worker.start(_spec(tmp_path, config={"fail_at": 2}), None, None)
    out = _worker.step(0, 1, None)
    assert type(out) is Failed
    assert "Traceback" in out.error and "RuntimeError: boom at epoch 2" in out.error
    assert _worker.resident() == {}  # the failed replica is gone


def test_a_failing_setup_is_reported_too(tmp_path):
    # not a trainable: setup cannot be called
    out = _worker.start(_spec(tmp_path, factory=lambda: None), None, None)
    assert type(out) is Failed and "AttributeError" in out.error


def test_a_task_of_an_old_placement_never_touches_the_new_one(tmp_path):
    _worker.start(_spec(tmp_path, token=5), None, None)
    assert type(_worker.step(0, 4, None)) is Failed  # placement 4 is gone
    _worker.release(0, 4)
    assert 0 in _worker.resident()  # releasing placement 4 leaves placement 5 alone


def test_a_start_evicts_whatever_the_worker_held(tmp_path):
    _worker.start(_spec(tmp_path, tid=0), None, None)
    _worker.start(_spec(tmp_path, tid=1), None, None)
    assert set(_worker.resident()) == {1}  # one replica per worker


# ----------------------------------------------------------------------------- faults


def _checkpoints_of_epochs_1_and_2(tmp_path):
    """Trial 0 trained two epochs, checkpointing after each; its replica is then gone."""
    first = _worker.start(_spec(tmp_path, overhead=math.inf), None, None)
    second = _worker.step(0, 1, SaveSpec(str(tmp_path), math.inf, keep=first.ckpt.url))
    _worker.release(0, 1)
    return first.ckpt, second.ckpt


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda data: data[: len(data) // 2], id="truncated"),
        pytest.param(lambda data: data[:-1] + bytes([data[-1] ^ 1]), id="one-bit-flipped"),
    ],
)
def test_a_damaged_checkpoint_is_refused_and_the_trial_goes_back_to_its_previous_one(
    tmp_path, damage
):
    older, newer = _checkpoints_of_epochs_1_and_2(tmp_path)
    with open(newer.url, "rb") as f:
        data = f.read()
    with open(newer.url, "wb") as f:
        f.write(damage(data))
    straight = _worker.start(_spec(tmp_path, tid=1), None, None)
    for _ in range(2):
        straight = _worker.step(1, 1, None)

    back = _worker.start(_spec(tmp_path, token=2), newer, None)

    # epoch 1 restored, epoch 2 trained again silently, epoch 3 reported: no epoch lost
    assert type(back) is Epoch and back.epoch == 3
    assert back.metrics["digest"] == straight.metrics["digest"]
    assert (
        "epoch-000002.pt has SHA-256" in back.refused
        and "restored that of epoch 1 instead" in back.refused
    )
    assert "\n" not in back.refused
    assert _worker.step(0, 2, None).refused is None  # said once


def test_a_trial_whose_every_checkpoint_is_refused_trains_again_from_the_start(tmp_path):
    older, newer = _checkpoints_of_epochs_1_and_2(tmp_path)
    for ckpt in (older, newer):
        with open(ckpt.url, "ab") as f:
            f.write(b"tampered")

    back = _worker.start(_spec(tmp_path, token=2), newer, None)

    assert type(back) is Epoch and back.epoch == 3
    assert back.refused.endswith("restored none: trained from the start")


def test_a_full_disk_keeps_the_epoch_and_says_its_checkpoint_was_not_written(tmp_path, monkeypatch):
    import errno

    _worker.start(_spec(tmp_path), None, None)

    def disk_full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_worker_io, "save_checkpoint", disk_full)
    out = _worker.step(0, 1, SaveSpec(str(tmp_path), math.inf, best=BestBar("loss", -1.0, None)))

    assert type(out) is Epoch and out.epoch == 2 and "loss" in out.metrics
    assert out.ckpt is None and out.best is None
    assert out.unsaved == (
        "paused: epoch 2's checkpoint could not be written ([Errno 28] No space left on device)"
    )


def test_another_write_error_fails_the_trial_with_its_traceback(tmp_path, monkeypatch):
    import errno

    _worker.start(_spec(tmp_path), None, None)

    def denied(*args, **kwargs):
        raise OSError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(_worker_io, "save_checkpoint", denied)
    out = _worker.step(0, 1, SaveSpec(str(tmp_path), math.inf))
    assert type(out) is Failed and "PermissionError: [Errno 13] Permission denied" in out.error


# ----------------------------------------------------------------------------- a search's end


def _files(tmp_path) -> list[str]:
    """The checkpoints and best weights under ``tmp_path``, and their sidecars."""
    return sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.pt*"))


def _ended_search(tmp_path):
    """A search (number 7) whose worker was told it is over: the spec of a placement of it."""
    token = next(placement_tokens(7))
    assert _worker._quiesce(search_of(token), time.monotonic() + 10) is True  # none in progress
    return _spec(tmp_path, token=token)


def test_once_a_search_is_over_a_start_of_it_still_to_come_writes_nothing(tmp_path):
    # the start was on its way (queued on the worker, or unpickling) when the search ended
    spec = _ended_search(tmp_path)
    out = _worker.start(spec, None, None)
    assert type(out) is Epoch and out.epoch == 1 and out.ckpt is None  # trained, not written
    assert _files(tmp_path) == []
    # another search's placements are not its: the same worker writes theirs
    assert _worker.start(_spec(tmp_path, tid=1), None, None).ckpt.epoch == 1


def test_once_a_search_is_over_its_pauses_and_hand_overs_write_nothing(tmp_path):
    spec = _ended_search(tmp_path)
    _worker.start(spec, None, None)
    paused = _worker.checkpoint_and_release(0, spec.token, spec.save)
    assert type(paused) is Failed and "its search is over: not written" in paused.error
    assert _files(tmp_path) == [] and _worker.resident() == {}  # the worker freed all the same


def test_once_a_search_is_over_the_files_sent_for_its_start_are_not_written(tmp_path):
    ckpt = _worker.start(_spec(tmp_path / "there"), None, None).ckpt  # another host's disk
    sent = _worker_io.fetch(ckpt.url)
    here = tmp_path / "here"
    moved = {url.replace(str(tmp_path / "there"), str(here)): data for url, data in sent.items()}
    _worker.start(_ended_search(here), None, None, files=moved)
    assert not here.exists()


def test_a_start_halted_before_it_began_writes_nothing(tmp_path):
    _worker.halt(0, 1)  # out of band, ahead of its start on this worker
    _worker.start(_spec(tmp_path, tid=1), None, None)  # a start of another placement evicts
    out = _worker.start(_spec(tmp_path), None, None)
    assert (
        type(out) is Epoch
        and out.ckpt is None
        and _files(tmp_path)
        == [
            "trial-00001/epoch-000001.pt",
            "trial-00001/epoch-000001.pt.json",
        ]
    )
    _worker.release(0, 1)
    assert _replicas.HALTED == set()  # forgotten with its replica


def test_a_searchs_end_forgets_its_halts(tmp_path):
    ours, theirs = next(placement_tokens(8)), next(placement_tokens(9))
    _worker.halt(0, ours)
    _worker.halt(0, theirs)  # both came after their replicas were gone
    _replicas.end(search_of(ours))
    assert _replicas.HALTED == {(0, theirs)}  # its end halts the search's placements now


# ----------------------------------------------------------------------------- batches


class HaltsItself(TinyRegression):
    """Halts its own batch (as the client would, out of band) during epoch ``halt_at``."""

    def step(self) -> dict:
        if self.epoch + 1 == self.config["halt_at"]:
            _worker.halt(self.ctx.trial_id, 1)
        return super().step()


def test_a_batch_trains_its_epochs_back_to_back_like_single_steps(tmp_path):
    _worker.start(_spec(tmp_path, tid=1), None, None)
    straight = [_worker.step(1, 1, None) for _ in range(4)]
    _worker.start(_spec(tmp_path), None, None)
    batch = _worker.steps(0, 1, SaveSpec(str(tmp_path), 0.0), 4)
    assert [e.epoch for e in batch] == [2, 3, 4, 5]  # every epoch, in order
    # the weights of the same epochs trained one task at a time
    assert [e.metrics["digest"] for e in batch] == [e.metrics["digest"] for e in straight]
    assert _worker.resident()[0].epochs == 5  # and the replica stays, for the next batch


def test_a_batch_ends_at_the_boundary_after_a_halt_and_the_halt_goes_with_the_replica(tmp_path):
    _worker.start(_spec(tmp_path, factory=HaltsItself, config={"halt_at": 3}), None, None)
    batch = _worker.steps(0, 1, None, 10)
    assert [e.epoch for e in batch] == [2, 3]  # epoch 3, in flight when halted, ends the batch
    assert _worker.steps(0, 1, None, 10) == ()  # halted placement: no epoch more
    _worker.release(0, 1)
    assert _replicas.HALTED == set()  # forgotten with the replica it was for


def test_a_batch_ends_at_an_epoch_that_says_done(tmp_path):
    _worker.start(_spec(tmp_path, config={"returns": {"loss": 1.0, "done": True}}), None, None)
    (only,) = _worker.steps(0, 1, None, 10)
    assert only.epoch == 2 and only.metrics["done"] is True


def test_a_batch_ends_at_a_failing_epoch_and_returns_those_before_it(tmp_path):
    _worker.start(_spec(tmp_path, config={"fail_at": 4}), None, None)
    *trained, failed = _worker.steps(0, 1, None, 10)
    assert [e.epoch for e in trained] == [2, 3] and type(failed) is Failed
    assert "RuntimeError: boom at epoch 4" in failed.error and _worker.resident() == {}


def test_a_batch_keeps_every_checkpoint_it_wrote_and_the_next_prunes_them(tmp_path):
    first = _worker.start(_spec(tmp_path, overhead=math.inf), None, None)
    batch = _worker.steps(0, 1, SaveSpec(str(tmp_path), math.inf, keep=first.ckpt.url), 3)

    def on_disk():
        return sorted(p.name for p in (tmp_path / "trial-00000").glob("*.pt"))

    # the client may resume from any epoch of the batch it has heard: none is deleted
    assert on_disk() == [f"epoch-{e:06d}.pt" for e in (1, 2, 3, 4)]
    # the next task keeps the one the client knows of (the batch's last) and its own
    _worker.steps(0, 1, SaveSpec(str(tmp_path), math.inf, keep=batch[-1].ckpt.url), 1)
    assert on_disk() == ["epoch-000004.pt", "epoch-000005.pt"]


def test_a_batch_writes_the_best_weights_only_of_epochs_that_beat_the_batch_so_far(tmp_path):
    _worker.start(_spec(tmp_path, overhead=0.0, config={"lr": 0.0}), None, None)  # never learns
    batch = _worker.steps(0, 1, SaveSpec(str(tmp_path), 0.0, best=BestBar("loss", -1.0, None)), 3)
    # the first epoch clears an empty bar; the next two merely equal it
    assert [e.best is not None for e in batch] == [True, False, False]


def test_a_rewind_checkpoints_the_epochs_reported_when_the_replica_ran_ahead(tmp_path):
    _worker.start(_spec(tmp_path, tid=1), None, None)
    straight = [_worker.step(1, 1, None) for _ in range(3)][-1]  # epoch 4, trained straight
    first = _worker.start(_spec(tmp_path, overhead=math.inf), None, None)
    _worker.steps(0, 1, SaveSpec(str(tmp_path), 0.0, keep=first.ckpt.url), 5)  # ran to 6
    # 3 epochs reported, the checkpoint of epoch 1 known: rebuild, train 2 and 3 again
    out = _worker.rewind(_spec(tmp_path, token=2, replay=2), first.ckpt, rendezvous=False)
    assert type(out) is Handover and out.ckpt.epoch == 3 and _worker.resident() == {}
    back = _worker.start(_spec(tmp_path, token=3), out.ckpt, None)
    assert back.epoch == 4 and back.metrics["digest"] == straight.metrics["digest"]


def test_a_start_spec_opens_where_the_trainables_module_cannot_be_imported(tmp_path):
    # as on Dask's scheduler, which unpickles every task but must not import torch for it
    import pickle
    import subprocess
    import sys

    sent = pickle.dumps(_spec(tmp_path))
    probe = (
        "import pickle, sys\n"
        "sys.modules['torch'] = None  # importing torch raises ImportError here\n"
        "sys.modules['hypersched_nb.testing.trainables'] = None\n"
        "spec = pickle.loads(sys.stdin.buffer.read())\n"
        "print(spec.trial_id, len(spec.factory.data) > 0)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], input=sent, capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().split() == ["0", "True"]
    assert _spec(tmp_path).factory.open() is TinyRegression  # a worker opens it


def test_a_trainable_that_cannot_travel_is_refused_in_one_line_before_any_task():
    import threading

    from hypersched_nb.errors import ConfigError
    from hypersched_nb.runtime.dask_runtime import seal

    lock = threading.Lock()
    with pytest.raises(ConfigError, match=r"cannot be sent to the workers \(TypeError: .*lock"):
        seal(lambda: (lock, TinyRegression())[1])
