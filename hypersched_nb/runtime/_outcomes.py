"""What comes back from the Dask runtime's tasks, turned into the driver's events.

An epoch's outcome comes by the event its task logs (one hop sooner) or, when none came,
in the task's result; it is reported if it is the next epoch of the task in flight, kept
while the driver still decides on the one before (a batch trains ahead), and dropped if it
was heard already or belongs to a placement that was stopped, lost or replaced. A task
that other tasks wait for (a hand-over, a port, a pause's checkpoint, a copy of a
checkpoint) goes back to :class:`~hypersched_nb.runtime._placements.Placements`; a new
worker's warm-up says which checkpoint store it sees (:mod:`~hypersched_nb.runtime._stores`).

Times in a ``Result``: ``startup`` is the wall time from the Start or Resize to the
replicas being ready to train (queueing, checkpoints, process group, restore, replay);
``seconds`` is the epoch's training (and checkpoint) time on the workers after a start, or
the whole wall time of the epoch (dispatch included) after a Continue, from the Continue or,
within a batch, from the previous report, so that ``seconds + startup`` is always the time
the trial held its workers for that epoch. ``step_timeout`` and the stuck-step warning
count from the previous report too: they bound one epoch, not a batch.
"""

from __future__ import annotations

from hypersched_nb.core import events
from hypersched_nb.core.events import Event
from hypersched_nb.errors import warn
from hypersched_nb.runtime._board import (
    EpochTag,
    FetchTag,
    Finished,
    PrepTag,
    QueueItem,
    SaveTag,
    TaskBoard,
    WarmTag,
)
from hypersched_nb.runtime._live import LiveTrial, Phase
from hypersched_nb.runtime._members import Members
from hypersched_nb.runtime._messages import Epoch, Failed, Report
from hypersched_nb.runtime._placements import Placements
from hypersched_nb.runtime._stores import note_store

__all__ = ["Outcomes"]

_IN_FLIGHT = (Phase.TRAINING, Phase.AHEAD)  # phases in which a task of the trial trains


class Outcomes:
    """Reads what the tasks on ``board`` return for the trials of ``placements``;
    ``metric`` names the entry of ``step()``'s dict that a Result carries; ``directory``
    and ``home`` are the checkpoint folder and its store on the client's disk."""

    def __init__(
        self, clock, board: TaskBoard, placements: Placements, members: Members, *,
        metric: str, directory: str, home: str,
    ):  # fmt: skip
        self._clock, self._board, self._placements, self._members = (
            clock,
            board,
            placements,
            members,
        )
        self._trials = placements.trials
        self.metric, self._dir, self._home = metric, directory, home

    def handle(self, item: QueueItem) -> list[Event]:
        """What one item of the board's queue means for the driver: its events."""
        match item:
            case Finished():
                return self._on_done(item.key)
            case Report():
                return self._on_report(item)
        return self._members.sync()  # MembersChanged

    def _on_done(self, key: str) -> list[Event]:
        task = self._board.finish(key)
        if task is None:
            return []
        fut = task.future
        try:
            match task.tag:
                case EpochTag() as tag if task.heard < tag.epochs and self._current(tag):
                    return self._on_task(tag, self._board.fetch(fut), fut)
                case FetchTag():
                    self._placements.fetched(task, self._board.fetch(fut))
                case WarmTag():
                    found = self._board.fetch(fut)
                    if found is not None:  # None: its worker left first, its successor warms
                        note_store(task.slot, found, self._dir, self._home, raise_=False)
                    self._placements.warmed(fut)
                case PrepTag() | SaveTag():
                    out = self._board.fetch(fut)
                    failed = self._placements.prepared(task, out)
                    return [] if failed is None else [self.fail(failed, out.error)]
            return []
        finally:
            fut.release()  # read: the scheduler may forget it (and never recompute it elsewhere)

    def _on_report(self, report: Report) -> list[Event]:
        """An epoch task's event: what it is about to return, a hop sooner than its future."""
        task = self._board.hear(report)
        if task is None:
            return []
        return self._on_epoch(task.tag, report.outcome, task.future)

    def _current(self, tag: EpochTag) -> bool:
        """Is ``tag`` the task in flight of its trial (not one of a placement that was
        stopped, lost or replaced, nor an older task)?"""
        t = self._trials[tag.trial_id]
        return tag.token == t.token and tag.seq == t.seq and t.phase in _IN_FLIGHT

    def _on_task(self, tag: EpochTag, out, fut) -> list[Event]:
        """An epoch task's result, some of whose epochs no event brought: those epochs
        (a batch's tuple, or one outcome). A batch that returned is over: if it ended
        before the epoch its trial waits for, the trial fails rather than wait for ever."""
        found = []
        for one in out if type(out) is tuple else (out,):
            found += self._on_epoch(tag, one, fut)
        t = self._trials[tag.trial_id]
        if type(out) is tuple and self._current(tag):
            t.batch_over()
            if t.phase is Phase.TRAINING:
                found.append(self.fail(t, f"its batch ended before epoch {t.expected}"))
        return found

    def _on_epoch(self, tag: EpochTag, out: Epoch | Failed | None, fut) -> list[Event]:
        """One epoch's outcome, by event or from the task's result: reported if it is the
        next epoch, kept for later if the driver is still deciding on the one before
        (AHEAD), dropped if it was heard already."""
        if not self._current(tag):
            return []
        t = self._trials[tag.trial_id]
        if out is None:
            found = self._members.sync()
            if tag.token != t.token:
                return found  # its worker left: reported as lost
            return [*found, self.fail(t, self._board.describe(fut))]
        if (type(out) is Epoch and out.epoch != t.expected) or Failed in map(type, t.early):
            return []  # heard already: by its event, and now in the task's result
        got = t.hear(tag.rank, out, now=self._clock.now())
        if got is None:  # kept for the next Continue, or other ranks are still training
            return []
        if type(got) is Failed:
            return [self.fail(t, got.error)]
        return self._result(t)

    def report_early(self, tid: int) -> list[Event]:
        """After a Continue: the next epoch of the trial's batch, if it was heard while the
        driver decided (handed out by the next advance, one per decision)."""
        t = self._trials.get(tid)
        out = None if t is None else t.recall()
        if out is None:
            return []
        if type(out) is Failed:
            return [self.fail(t, out.error)]
        return self._result(t)

    def _result(self, t: LiveTrial) -> list[Event]:
        """The Result of the epoch every replica returned; then, if its checkpoint could
        not be written, the trial leaves its workers (TrialHalted)."""
        first = t.outs[0]
        info = dict(first.metrics)
        if self.metric not in info:
            return [
                self.fail(
                    t,
                    f"step() returned no {self.metric!r} "
                    f"(it returned {', '.join(info) or 'nothing'})",
                )
            ]
        value = info.pop(self.metric)
        try:
            metric = float(value)
        except (TypeError, ValueError):
            shown = repr(value) if len(repr(value)) <= 40 else type(value).__name__
            return [self.fail(t, f"step()'s {self.metric!r} is {shown}, but must be a number")]
        if first.refused is not None:
            warn(f"trial {t.tid}: {first.refused}")
        done = bool(info.pop("done", False))
        if first.best is not None:
            self._placements.keep(t, first.best, t.slots[0], best=metric)
        now = self._clock.now()
        wall = now - t.t_exec
        step = max(o.step for o in t.outs.values())
        work = step + first.write
        seconds, startup = (work, max(0.0, wall - work)) if t.starting else (wall, 0.0)
        t.report(first.epoch, step=step, now=now, last=done or first.unsaved is not None)
        if first.ckpt is not None:  # noted once the epoch it holds is reported
            self._placements.keep(t, first.ckpt, t.slots[0])
        result = events.Result(
            t.tid, t.reported, metric, now, seconds, len(t.slots), startup, done, info or None
        )
        if first.unsaved is None:
            return [result]
        self._placements.vacate(t, save=False)
        self._placements.place_queued()
        return [result, events.TrialHalted(t.tid, now, first.unsaved)]

    def fail(self, t: LiveTrial, error: str) -> events.TrialFailed:
        """Trial ``t`` failed with ``error``: it leaves its workers, and a queued trial may take them."""
        epoch = t.reported
        self._placements.vacate(t, save=False)
        self._placements.place_queued()
        return events.TrialFailed(t.tid, self._clock.now(), error, epoch)
