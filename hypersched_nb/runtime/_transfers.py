"""How a checkpoint written on one host reaches another, and this kernel, when they share no disk.

Each checkpoint records its store (the disk it went to,
:func:`~hypersched_nb.runtime.checkpoint.store_id`); a worker's slot records the store its
checkpoint folder is. A checkpoint is noted as the trial's own the moment its epoch is
reported (or its pause's or hand-over's task returns): it is on its writer's disk, which a
live worker of that store reads.

Worker to worker, through Dask's own data transfer: a start on a worker whose store lacks
the checkpoint gets, as an argument, the future of a task on a live worker of the
checkpoint's store that reads its files (:func:`~hypersched_nb.runtime._worker.fetch`);
Dask's scheduler moves that result from worker to worker (``gather_dep``), so the bytes
never pass through this kernel's process, nor its link. Chosen over a fetch the workers make
of each other (which needs a server on every worker and its own security) and over a store
every host reaches (which this setup does not have; with one, every checkpoint is already
where every worker reads it and nothing here travels): Dask's transfer is already
authenticated, encrypted when the cluster is, and retried by the scheduler. One such task
serves every rank of a group start on other stores. The reading task holds its worker's
thread for the time of a disk read, between two of that worker's tasks.

This kernel's own copies, in the background, never waited for by a start, a resize or a
move: each best's weights (what :meth:`~hypersched_nb.runtime.DaskRuntime.best_checkpoint`
and ``load_best()`` read here), and the trial's newest checkpoint, at most one copy in flight
per trial (a newer one written meanwhile is copied next, the ones between are skipped). The
second is what a trial resumes from when no live worker has the disk of its newest
checkpoint any more (its host was lost): the newest copy here that holds no more epochs than
it reported, or none. With the checkpoint budget (``checkpoint_overhead``), a large state is
written, and so copied, seldom: one GB-sized copy per several minutes of training, off the
hot path.

Files stay private: the bytes are written where they were, under the folders
:func:`~hypersched_nb.runtime.checkpoint.write_files` makes (owner only).

:class:`Traffic` counts what passed through this kernel, for tests and for ``statistics``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from hypersched_nb.runtime import _worker
from hypersched_nb.runtime._bests import BestWeights
from hypersched_nb.runtime._board import FetchTag, ShipTag, Task, TaskBoard
from hypersched_nb.runtime._live import LiveTrial
from hypersched_nb.runtime._slots import Slot, Slots
from hypersched_nb.runtime.checkpoint import (
    Checkpoint,
    CheckpointError,
    prune_checkpoints,
    read_files,
    write_files,
)

__all__ = ["Traffic", "Transfers"]


@dataclass(frozen=True, slots=True)
class Traffic:
    """Checkpoint bytes through this kernel: ``sent`` it read and sent to a worker for a
    start (only when no live worker had the checkpoint's disk: a lost host), ``copied`` it
    copied home in the background (bests and trials' newest checkpoints); ``shipped`` is how
    many checkpoints went from worker to worker without it."""

    sent: int = 0
    copied: int = 0
    shipped: int = 0


class Transfers:
    """The checkpoint traffic of one runtime's trials, on ``board`` among ``slots``;
    ``directory`` is the checkpoint folder, ``home`` its store on this kernel's disk."""

    def __init__(
        self, board: TaskBoard, slots: Slots, *, directory: str, home: str, bests: BestWeights
    ):
        self._board, self._slots, self._dir, self._home = board, slots, directory, home
        self._bests = bests
        self.traffic = Traffic()
        self._homes: dict[int, Checkpoint] = {}  # trial -> its newest checkpoint copied home
        self._next: dict[int, tuple[Checkpoint, Slot]] = {}  # trial -> newest not copied yet

    # ------------------------------------------------------------------ a start's source

    def source(self, t: LiveTrial) -> Checkpoint | None:
        """What a start of ``t`` restores from: its newest checkpoint if a live worker's
        disk, or this kernel's, holds it; else the newest copy here that holds no more epochs
        than it reported (its host was lost), or None."""
        ckpt = t.ckpt
        if ckpt is None or self._holder(ckpt) is not None or self._at_home(t.tid, ckpt):
            return ckpt
        copy = self._homes.get(t.tid)
        return copy if copy is not None and copy.epoch <= t.reported else None

    def files_for(self, tid: int, ckpt: Checkpoint | None, slot: Slot, shipped: dict, *, near=()):
        """The files of ``ckpt`` for a start on ``slot``, when its disk lacks them: the
        future of a read on a worker that has them (one of ``near`` first, then a free one;
        one read per launch, kept in ``shipped``), or this kernel's copy sent ahead
        (counted); None when none is needed, or none can be had (the worker then restores
        an earlier one, or none, and says so)."""
        if ckpt is None or (ckpt.store is not None and ckpt.store == slot.store):
            return None
        if ckpt.url in shipped:
            return shipped[ckpt.url][0]
        holder = self._holder(ckpt, near)
        if holder is not None:
            fut = self._board.submit(
                _worker.fetch, ckpt.url, slot=holder, tag=ShipTag(tid), name=f"hs-ship-{tid}"
            )  # fmt: skip
            shipped[ckpt.url] = (fut, holder.addr)
            self._count(shipped=1)
            return fut
        if not self._at_home(tid, ckpt):
            return None
        try:
            files = read_files(ckpt.url)
            fut = self._board.client.scatter(
                [files], workers=[slot.addr], hash=False, timeout=self._board.fetch_timeout
            )[0]
        except (CheckpointError, OSError, TimeoutError):
            return None
        self._count(sent=sum(map(len, files.values())))
        shipped[ckpt.url] = (fut, None)
        return fut

    @staticmethod
    def reads(shipped: dict) -> list:
        """The reads on workers among ``shipped`` (not this kernel's copies, which would
        then be moved to every rank): what the ranks on the checkpoint's own disk follow."""
        return [fut for fut, holder in shipped.values() if holder is not None]

    @staticmethod
    def sources(shipped: dict) -> frozenset[str]:
        """The addresses of the workers reading checkpoints among ``shipped``: a start
        that needs them is stranded if one leaves before its read was moved."""
        return frozenset(holder for _, holder in shipped.values() if holder is not None)

    # ------------------------------------------------------------------ copies home

    def copy_home(self, t: LiveTrial, ckpt: Checkpoint, slot: Slot, best: float | None) -> None:
        """Copy ``ckpt``, written by ``slot``'s worker, to this kernel in the background: a
        best's weights at once, a trial's checkpoint once no other copy of it is in flight."""
        if best is None and t.fetching:
            self._next[t.tid] = (ckpt, slot)
            return
        fut = self._board.submit(
            _worker.fetch, ckpt.url, slot=slot, tag=FetchTag(t.tid, ckpt, best),
            name=f"hs-fetch-{t.tid}",
        )  # fmt: skip
        t.fetching_home(fut)

    def copied(self, t: LiveTrial, task: Task, out) -> None:
        """A copy's bytes came (``out``; a Failed or None: they did not): written here and
        noted, a best's offered as the best; then the trial's next copy goes out."""
        tag = task.tag
        t.fetched(task.future)
        if isinstance(out, dict) and _written(out):
            self._count(copied=sum(map(len, out.values())))
            if tag.best is not None:
                self._bests.offer(t.tid, tag.ckpt, tag.best)
            elif tag.ckpt.epoch <= t.reported:
                self._keep_home(t, tag.ckpt)
        pending = self._next.pop(t.tid, None) if not t.fetching else None
        if pending is not None and self._slots.alive(pending[1]):
            self.copy_home(t, *pending, None)

    # ------------------------------------------------------------------ helpers

    def _keep_home(self, t: LiveTrial, ckpt: Checkpoint) -> None:
        old = self._homes.get(t.tid)
        if old is not None and old.epoch > ckpt.epoch:
            return
        self._homes[t.tid] = ckpt
        keep = {ckpt.url}
        if t.ckpt is not None and t.ckpt.store == self._home:
            keep.add(t.ckpt.url)  # written here by a worker of this kernel's disk
        prune_checkpoints(self._dir, t.tid, keep)

    def _at_home(self, tid: int, ckpt: Checkpoint) -> bool:
        if ckpt.store is not None and ckpt.store == self._home:
            return True
        copy = self._homes.get(tid)
        return copy is not None and copy.url == ckpt.url and copy.sha256 == ckpt.sha256

    def _holder(self, ckpt: Checkpoint, near=()) -> Slot | None:
        """A live worker whose disk holds ``ckpt`` (None: none): one of ``near`` first,
        then a free one, then any."""
        if ckpt.store is None:
            return None
        live = [s for s in self._slots.all() if s.store == ckpt.store]
        mine = [s for s in near if s in live]
        return next(iter(mine + [s for s in live if s.tenant is None] + live), None)

    def _count(self, *, sent: int = 0, copied: int = 0, shipped: int = 0) -> None:
        now = self.traffic
        self.traffic = dataclasses.replace(
            now, sent=now.sent + sent, copied=now.copied + copied, shipped=now.shipped + shipped
        )


def _written(files: dict) -> bool:
    """Write ``files`` on this kernel's disk; False if they could not be (a full disk)."""
    try:
        write_files(files)
    except OSError:
        return False
    return True
