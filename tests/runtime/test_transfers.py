"""How a checkpoint reaches a worker whose disk lacks it, and this kernel: from a live worker
of its disk through Dask, never through this kernel unless that disk is gone; copies here
in the background, one in flight per trial."""

from types import SimpleNamespace

from hypersched_nb.runtime import _worker
from hypersched_nb.runtime._bests import BestWeights
from hypersched_nb.runtime._board import FetchTag, ShipTag, Task
from hypersched_nb.runtime._live import LiveTrial
from hypersched_nb.runtime._slots import Slots
from hypersched_nb.runtime._transfers import Traffic, Transfers
from hypersched_nb.runtime.checkpoint import Checkpoint, save_checkpoint


class Board:
    """Just enough of the task board: records what is submitted and scattered."""

    fetch_timeout = 1.0

    def __init__(self):
        self.sent, self.scattered = [], []
        self.client = SimpleNamespace(scatter=self._scatter)

    def submit(self, fn, *args, slot, tag, name):
        fut = SimpleNamespace(key=f"{name}-{len(self.sent)}")
        self.sent.append((fn, args, slot.name, tag, fut))
        return fut

    def _scatter(self, data, *, workers, hash, timeout):
        self.scattered.append((data, workers))
        return [SimpleNamespace(key="scattered")]


def cluster(tmp_path, **stores):
    """Slots named for the hosts, each on the disk (store) given; this kernel's is "home"."""
    slots = Slots()
    slots.sync({f"tcp://{n}:1": {"name": n} for n in stores})
    for name, store in stores.items():
        slots.get(name).store = store
    board = Board()
    bests = BestWeights("loss", -1.0)
    return board, slots, Transfers(board, slots, directory=str(tmp_path), home="home", bests=bests)


def ckpt(epoch: int, store: str, url: str | None = None) -> Checkpoint:
    return Checkpoint(url or f"/x/trial-00007/epoch-{epoch:06d}.pt", "sha", 10, epoch, store)


def trial(reported: int, known: Checkpoint | None) -> LiveTrial:
    return LiveTrial(7, token=1, reported=reported, ckpt=known)


def test_a_start_on_another_disk_gets_the_files_read_on_a_worker_of_the_checkpoints_disk(tmp_path):
    board, slots, moves = cluster(tmp_path, a="disk-a", b="disk-b", c="disk-c")
    newest, shipped = ckpt(4, "disk-a"), {}
    got = moves.files_for(7, newest, slots.get("b"), shipped)
    again = moves.files_for(7, newest, slots.get("c"), shipped)  # another rank: one read
    ((fn, args, where, tag, fut),) = board.sent
    assert (fn, args, where, tag) == (_worker.fetch, (newest.url,), "a", ShipTag(7))
    assert got is fut and again is fut and board.scattered == []
    assert moves.traffic == Traffic(sent=0, copied=0, shipped=1)


def test_a_start_on_the_checkpoints_own_disk_gets_nothing(tmp_path):
    board, slots, moves = cluster(tmp_path, a="disk-a")
    assert moves.files_for(7, ckpt(4, "disk-a"), slots.get("a"), {}) is None
    assert moves.files_for(7, None, slots.get("a"), {}) is None
    assert board.sent == [] and moves.traffic == Traffic()


def test_a_trial_whose_checkpoints_disk_is_gone_resumes_from_the_newest_copy_here(tmp_path):
    board, slots, moves = cluster(tmp_path, a="disk-a", b="disk-b")
    url = f"{tmp_path}/trial-00007/epoch-000003.pt"
    written = save_checkpoint({"w": 1}, url, epoch=3, store="disk-a")
    t = trial(3, written)
    moves.copy_home(t, written, slots.get("a"), None)
    ((_, _, _, tag, fut),) = board.sent
    files = _worker.fetch(url)
    moves.copied(t, Task(fut, slots.get("a"), tag), files)  # the copy home came back
    t.note_ckpt(ckpt(4, "disk-a"))
    t.reported = 4
    assert moves.source(t) is t.ckpt  # host a is there: its newest
    slots.sync({"tcp://b:1": {"name": "b"}})  # host a is gone
    assert moves.source(t) == written  # the newest copy here
    got = moves.files_for(7, written, slots.get("b"), {})
    assert got.key == "scattered" and board.scattered[0][1] == ["tcp://b:1"]
    assert moves.traffic.sent == sum(map(len, files.values())) > 0


def test_with_no_copy_here_a_trial_whose_disk_is_gone_starts_over(tmp_path):
    _, slots, moves = cluster(tmp_path, a="disk-a")
    t = trial(4, ckpt(4, "disk-gone"))
    assert moves.source(t) is None


def test_one_copy_home_per_trial_in_flight_the_newest_next(tmp_path):
    board, slots, moves = cluster(tmp_path, a="disk-a")
    t, a = trial(6, None), slots.get("a")
    for epoch in (4, 5, 6):
        moves.copy_home(t, ckpt(epoch, "disk-a"), a, None)
    moves.copy_home(t, ckpt(6, "disk-a", url="/x/best/7-6.pt"), a, 0.5)  # a best: at once
    assert [tag.ckpt.epoch for *_, tag, _ in board.sent] == [4, 6]
    assert [tag.best for *_, tag, _ in board.sent] == [None, 0.5]
    for *_, tag, fut in list(board.sent):
        moves.copied(t, Task(fut, a, tag), None)  # not copied (the disk was full, say)
    assert [(tag.ckpt.epoch, tag.best) for *_, tag, _ in board.sent[2:]] == [(6, None)]
    assert all(type(tag) is FetchTag for *_, tag, _ in board.sent)


def test_a_group_reads_the_checkpoint_on_its_own_worker_first_and_every_rank_follows_it(
    tmp_path,
):
    board, slots, moves = cluster(tmp_path, a="disk-a", b="disk-b", c="disk-a")
    group, newest, shipped = [slots.get("c"), slots.get("b")], ckpt(4, "disk-a"), {}
    slots.get("c").tenant = 7  # taken by this trial; a is free, but c is one of its own
    files = [moves.files_for(7, newest, s, shipped, near=group) for s in group]
    ((_, _, where, _, fut),) = board.sent
    assert where == "c" and files == [None, fut]
    assert moves.reads(shipped) == [fut]  # rank 0, on c, starts after the read on c
