"""Where the Dask runtime's trials run: instructions turned into tasks pinned to slots.

:class:`Placements` keeps every trial's :class:`~hypersched_nb.runtime._live.LiveTrial`,
hands out the cluster's slots (a trial started while too few are free waits in a queue),
and sends the tasks of :mod:`hypersched_nb.runtime._worker` that start, step, resize,
checkpoint and free a trial's replicas. It hears nothing back itself: the runtime tells it
when a task a start waits for is done (:meth:`Placements.prepared`), and of every checkpoint
a worker wrote (:meth:`Placements.keep`).

Checkpoints and disks: a checkpoint is the trial's own as soon as its epoch is reported (or
its pause's or hand-over's task returned); a start on a worker whose disk lacks it gets its
bytes from a worker that has them, through Dask, and this kernel keeps copies in the
background only (see :mod:`~hypersched_nb.runtime._transfers`).

A single-worker trial whose epochs are short trains a batch of them per task
(:func:`~hypersched_nb.runtime._live.batch_size` of its last step's seconds); a trial on
k > 1 workers trains one epoch per task, since its ranks would otherwise have to agree at
every boundary through their process group. A batch that must end early (pause, stop,
resize, failure, lost worker) is halted out of band and ends at its next epoch boundary;
the replica's state is then never checkpointed, since it may hold epochs not reported: the
trial goes on from the last checkpoint it knows of and trains the rest again, silently.
"""

from __future__ import annotations

from collections.abc import Iterable

from hypersched_nb.core.events import Start
from hypersched_nb.runtime import _worker
from hypersched_nb.runtime._bests import BestWeights
from hypersched_nb.runtime._board import (
    EpochTag,
    PrepTag,
    ReleaseTag,
    SaveTag,
    Task,
    TaskBoard,
)
from hypersched_nb.runtime._live import LiveTrial, Phase, Phases, batch_size
from hypersched_nb.runtime._messages import (
    Failed,
    Handover,
    SaveSpec,
    Sealed,
    StartSpec,
    placement_tokens,
)
from hypersched_nb.runtime._slots import Slot, Slots
from hypersched_nb.runtime._transfers import Transfers
from hypersched_nb.runtime.checkpoint import Checkpoint
from hypersched_nb.train.context import trial_seed

__all__ = ["Placements"]


class Placements:
    """The trials of one runtime on ``slots``, their tasks on ``board``. ``factory`` (the
    trainable, sealed), ``seed`` and ``group_timeout`` build the replicas; ``directory``,
    ``overhead`` and ``bests`` say how rank 0 writes checkpoints and the best weights;
    ``home`` is the store_id of ``directory`` on the client's own disk; ``batch_seconds`` and
    ``max_batch`` how many epochs a single-worker trial trains per task, never past
    ``max_epochs`` (where the driver completes a trial; None: not known)."""

    def __init__(
        self,
        board: TaskBoard,
        slots: Slots,
        clock,
        *,
        factory: Sealed,
        seed: int,
        group_timeout: float,
        directory: str,
        overhead: float,
        bests: BestWeights,
        home: str,
        batch_seconds: float = 3.0,
        max_batch: int = 64,
        max_epochs: int | None = None,
    ):
        self._board, self._slots, self._clock = board, slots, clock
        self._batch_seconds, self._max_batch = batch_seconds, max_batch
        self._max_epochs = max_epochs
        self._factory, self._seed, self._group_timeout = factory, seed, group_timeout
        self._dir, self._overhead, self._bests = directory, overhead, bests
        self._home = home
        self.transfers = Transfers(board, slots, directory=directory, home=home, bests=bests)
        self.trials: dict[int, LiveTrial] = {}
        self.phases = Phases()  # the same trials by phase
        self._queued: list[int] = []  # trials started while too few slots were free
        self.search = int(board.id, 16)  # this search's number, in its placements' tokens
        self._count = placement_tokens(self.search)

    def trial_seed(self, trial_id: int) -> int:
        """``ctx.seed`` of trial ``trial_id``: the runtime's seed and the trial id, mixed."""
        return trial_seed(self._seed, trial_id)

    # ------------------------------------------------------------------ instructions

    def start(self, ins: Start) -> None:
        t = self.trials.get(ins.trial_id)
        if t is None:
            t = self.add(LiveTrial(ins.trial_id, next(self._count)))
        elif t.phase is not Phase.IDLE:
            self.vacate(t, save=False)
        now = self._clock.now()
        t.start(ins.config, ins.workers, token=next(self._count), now=now, restore=ins.restore)
        slots = self._slots.take(t.tid, ins.workers)
        if slots is None:
            t.queue()
            self._queued.append(t.tid)
            return
        self._place(t, slots)

    def step(self, tid: int) -> None:
        """Train one more epoch where the trial is: the next of its batch in flight (no
        task to send), or a new task of one epoch, or of a batch on a single worker."""
        t = self.trials.get(tid)
        if t is None or t.phase not in (Phase.READY, Phase.AHEAD):
            return  # lost meanwhile: the WorkersChanged that says so is already on its way
        n = 1
        if len(t.slots) == 1:
            n = batch_size(t.step, seconds=self._batch_seconds, most=self._max_batch)
            if self._max_epochs is not None:
                n = max(1, min(n, self._max_epochs - t.reported))

        def send(rank: int, slot: Slot, seq: int):
            save = self._save_spec(t) if rank == 0 else None
            tag = EpochTag(tid, t.token, rank, seq, n)
            if n > 1:
                return self._board.submit(
                    _worker.steps, tid, t.token, save, n, self._board.topic,
                    slot=slot, tag=tag, name=f"hs-epochs-{tid}",
                )  # fmt: skip
            return self._board.submit(
                _worker.step, tid, t.token, save, self._board.topic,
                slot=slot, tag=tag, name=f"hs-epoch-{tid}",
            )  # fmt: skip

        t.proceed(send, self._clock, epochs=n)

    def resize(self, tid: int, workers: int) -> bool:
        """Move the trial to ``workers`` slots, its own first. True if it was lost instead:
        one of its workers left unseen, so it is checkpointed and holds nothing."""
        t = self.trials.get(tid)
        if t is None or t.phase not in (Phase.READY, Phase.AHEAD):
            return False
        old, old_token = t.slots, t.token
        new = self._slots.take(tid, workers, keep=old)
        if new is None:
            self.vacate(t, save=True)
            return True
        ahead = self._halt(t)
        self._slots.give_back(s for s in old if s not in new)
        t.resize(new, token=next(self._count), now=self._clock.now())
        group = workers > 1
        if ahead and not t.current:  # its replica ran past the epochs reported: rebuild them
            self._settle(t)
            shipped: dict = {}
            files = self.transfers.files_for(tid, t.ckpt, old[0], shipped)
            t.wait_for(self._board.submit(
                _worker.rewind, self._spec(t, 0, 1), t.ckpt, files, rendezvous=group,
                slot=old[0], tag=PrepTag(tid, t.token), name=f"hs-resize-{tid}",
            ), sources=self.transfers.sources(shipped))  # fmt: skip
        elif not t.current or group:
            save = None if t.current else self._save_spec(t)
            t.wait_for(self._board.submit(
                _worker.hand_over, tid, old_token, save, rendezvous=group,
                slot=old[0], tag=PrepTag(tid, t.token), name=f"hs-resize-{tid}",
            ))  # fmt: skip
        else:
            self._release(tid, old_token, old[:1])
        self._release(tid, old_token, old[1:])
        if not t.deps:
            self._launch(t)
        return False

    def vacate(self, t: LiveTrial, *, save: bool) -> None:
        """Free the trial's workers: checkpoint first (``save``) unless the last is current."""
        if t.phase is Phase.QUEUED:
            self._queued.remove(t.tid)
        slots, old, ready = t.slots, t.token, t.phase is Phase.READY
        self._halt(t)
        saving = None  # a READY trial has nothing in flight: halting it above sent nothing
        if slots and save and ready and not t.current and self._slots.alive(slots[0]):
            saving = self._board.submit(
                _worker.checkpoint_and_release, t.tid, old, self._save_spec(t),
                slot=slots[0], tag=SaveTag(t.tid), name=f"hs-pause-{t.tid}",
            )  # fmt: skip
        t.vacate(token=next(self._count), saving=saving)
        if not slots:
            return
        rest = slots
        if saving is not None:
            self._slots.saving(slots[0], saving)
            rest = slots[1:]
        self._release(t.tid, old, rest)
        self._slots.give_back(slots)

    # ------------------------------------------------------------------ the queue

    def place_queued(self) -> None:
        """Place the queued trials that the free slots can hold, first come first served."""
        for tid in list(self._queued):
            t = self.trials[tid]
            slots = self._slots.take(tid, t.want)
            if slots is not None:
                self._queued.remove(tid)
                self._place(t, slots)

    def drop_queued(self) -> list[int]:
        """Give up on the queued trials (no workers are on their way); their ids."""
        dropped = list(self._queued)
        for tid in dropped:
            self.vacate(self.trials[tid], save=False)
        return dropped

    # ------------------------------------------------------------------ starting

    def prepared(self, task: Task, out: Handover | Failed | None) -> LiveTrial | None:
        """A hand-over, a port or a pause's checkpoint is done (``out``: what it returned,
        None if it did not finish): note the checkpoint, and launch the trials that were
        waiting for it. Returns the trial whose hand-over failed, if that is what it was."""
        t, fut = self.trials[task.tag.trial_id], task.future
        if type(out) is Handover and out.ckpt is not None:
            self.keep(t, out.ckpt, task.slot)
        t.saved(fut)
        self._slots.over(fut)
        if type(task.tag) is PrepTag and task.tag.token == t.token and fut.key in t.deps:
            if type(out) is Failed:
                return t
            if out is not None and out.rendezvous is not None:
                t.meet_at(out.rendezvous)
        self._unblock(fut)
        return None

    def warmed(self, fut) -> None:
        """A new worker's warm-up is over (its store is known, or never will be): the
        start placed there meanwhile goes out."""
        self._slots.over(fut)
        self._unblock(fut)

    # ------------------------------------------------------------------ checkpoints

    def keep(self, t: LiveTrial, ckpt: Checkpoint, slot: Slot, *, best: float | None = None):
        """Note ``ckpt``, written for trial ``t`` by ``slot``'s worker (``best``: the metric
        whose weights it holds; None: the trial's own checkpoint). The trial's own is noted
        at once (its writer's disk holds it); a best is offered once this kernel can read
        it. Either is copied here in the background unless written here."""
        here = ckpt.store is not None and ckpt.store == self._home
        if best is None and ckpt.epoch <= t.reported:  # not of a run since started over
            t.note_ckpt(ckpt)
        if not here:
            self.transfers.copy_home(t, ckpt, slot, best)
        elif best is not None:
            self._bests.offer(t.tid, ckpt, best)

    def fetched(self, task: Task, out: dict | Failed | None) -> None:
        """A copy of a checkpoint came from its worker (``out``; a Failed or None: it did
        not, and this kernel goes on with the copies it had): written here, then noted."""
        self.transfers.copied(self.trials[task.tag.trial_id], task, out)

    def _settle(self, t: LiveTrial) -> None:
        """Restore from the newest checkpoint within reach (see ``Transfers.source``)."""
        source = self.transfers.source(t)
        if source is not t.ckpt:
            t.fall_back(source)

    def add(self, t: LiveTrial) -> LiveTrial:
        """Keep ``t``, in place of any earlier record of its trial; returns it."""
        self.phases.join(t, replacing=self.trials.get(t.tid))
        self.trials[t.tid] = t
        return t

    def _unblock(self, fut) -> None:
        """Launch the trials that waited for ``fut`` alone."""
        for w in self.phases(Phase.PREPARING):
            if not w.unblocked(fut):
                continue
            if len(w.slots) > 1 and w.rendezvous is None:  # no rendezvous came: ask again
                self._ask_port(w)
            else:
                self._launch(w)

    def _place(self, t: LiveTrial, slots: list[Slot]) -> None:
        """Hold ``slots``; start once the checkpoints the start needs and, for a group, the
        port of its rendezvous on rank 0's host are ready."""
        t.place(slots)
        if len(slots) > 1:
            self._ask_port(t)
        if not t.deps:
            self._launch(t)

    def _ask_port(self, t: LiveTrial) -> None:
        t.wait_for(self._board.submit(
            _worker.pick_rendezvous_port, slot=t.slots[0], tag=PrepTag(t.tid, t.token),
            name="hs-port",
        ))  # fmt: skip

    def _halt(self, t: LiveTrial) -> bool:
        """End the batch in flight at its next epoch boundary and cancel its tasks (the
        move that follows forgets them): its epochs not reported yet are dropped, to be
        trained again. True if there was one."""
        batching = t.batching
        if t.phase in (Phase.TRAINING, Phase.AHEAD) and self._slots.alive(t.slots[0]):
            # its epoch in flight is dropped: it writes no checkpoint when it ends
            self._board.run_soon(_worker.halt, t.tid, t.token, slot=t.slots[0])
        self._board.cancel(t.futures.values())
        return batching

    def _launch(self, t: LiveTrial) -> None:
        self._settle(t)
        shipped: dict = {}  # one read of the checkpoint serves every rank on another disk
        files = [self.transfers.files_for(t.tid, t.ckpt, s, shipped, near=t.slots) for s in t.slots]
        # the ranks on the checkpoint's own disk start after its read too: a worker of the
        # group that reads it for the others must do so before its rank waits for theirs
        after = self.transfers.reads(shipped)

        def send(rank: int, slot: Slot, seq: int):
            return self._board.submit(
                _worker.start, self._spec(t, rank, len(t.slots)), t.ckpt, t.rendezvous,
                self._board.topic, files[rank], None if files[rank] else after,
                slot=slot, tag=EpochTag(t.tid, t.token, rank, seq), name=f"hs-start-{t.tid}",
            )  # fmt: skip

        t.launch(send, self._clock, sources=self.transfers.sources(shipped))

    # ------------------------------------------------------------------ helpers

    def _release(self, tid: int, token: int, slots: Iterable[Slot]) -> None:
        for s in slots:
            if self._slots.alive(s):
                self._board.submit(
                    _worker.release, tid, token, slot=s, tag=ReleaseTag(tid),
                    name=f"hs-release-{tid}",
                )  # fmt: skip

    def _spec(self, t: LiveTrial, rank: int, world: int) -> StartSpec:
        """What rank ``rank`` of ``world`` builds: the trial from its last checkpoint, with
        the epochs reported since trained again."""
        replay = t.reported - (t.ckpt.epoch if t.ckpt else 0)
        save = self._save_spec(t) if rank == 0 else None
        return StartSpec(
            t.tid, t.token, rank, world, self._factory, t.config, self.trial_seed(t.tid),
            replay, save, self._group_timeout,
        )  # fmt: skip

    def _save_spec(self, t: LiveTrial) -> SaveSpec:
        keep = t.ckpt.url if t.ckpt else None
        return SaveSpec(self._dir, self._overhead, keep, self._bests.bar(), self._board.topic)
