"""Live trials on a Dask cluster: the driver's Runtime protocol, carried out for real.

Every epoch of a trial on k workers is k tasks, one pinned to each of its workers
(``workers=[address]``, ``allow_other_workers=False``, ``pure=False``), running the
functions of :mod:`hypersched_nb.runtime._worker`; the trainable objects stay in a registry
of that module between epochs, so a trial that stays put moves no state. Moves go through
checkpoints (:mod:`hypersched_nb.runtime.checkpoint`):

- ``Start`` takes free slots (least recently freed first), builds the replicas, restores
  the last checkpoint when resuming, and trains one epoch;
- ``Continue`` trains one more epoch where the trial is;
- ``Resize`` checkpoints on rank 0 (unless the last epoch's checkpoint is current), tears
  the replicas down, forms a fresh ``torch.distributed`` group across exactly the new
  workers (rendezvous on a free port of rank 0's host) and trains one epoch;
- ``Pause`` checkpoints (unless current) and frees the workers; ``Stop`` frees them.

Short epochs: a single-worker trial trains a batch of epochs per task, as many of its last
epoch's ``step()`` seconds as ``batch_seconds`` holds (3 s by default; at most 64, never
past ``max_epochs``), since dispatching a task costs 10-14 ms, a tenth of a 0.1 s epoch and
1 % of a one-second one (two per task now). A longer batch delays no decision (see below). Every epoch of a batch is still reported to the
driver as a ``Result`` of its own, in order, exactly once (its event comes as it ends; the
driver decides on it while the batch trains on). A trial on k > 1 workers keeps one epoch
per task: its ranks would otherwise have to agree at every boundary through their process
group.

How late a decision can come: a Pause, Stop or Resize decided on epoch e's result of a
batch takes effect at the end of the epoch the worker trains when the halt arrives
(:func:`~hypersched_nb.runtime._worker.halt`, run out of band in the worker's event loop),
normally e + 1: at most one epoch plus a round trip (measured: a stop on a 0.1 s epoch's
result frees its worker 0.12 s later, see ``benchmarks/runtime_overhead.py``). That
epoch's result is dropped, and the replica's state is never checkpointed then, since it may
hold epochs not reported: the trial goes on from the last checkpoint it reported, training
again, silently, the epochs since (a Resize does so on its old worker before handing over,
so that each epoch is trained at the world size it was reported at). A decision on a
batch's last epoch, or on any epoch of a one-epoch task, takes effect at once, as before.

The weights of the search's best results are kept apart: an epoch whose metric beats the
best known when it was sent is written by its worker, and the last two such records stay
(:meth:`DaskRuntime.best_checkpoint`), so the best model can be loaded after the search.

Waiting is on one queue (:class:`~hypersched_nb.runtime._board.TaskBoard`) fed by the
futures' callbacks, by the event each epoch task logs with what it is about to return (one
hop sooner than fetching its result, which is read instead when no event came), and by the
scheduler's ``add-worker``/``remove-worker`` events, backed up by a poll every ``poll``
seconds; ``advance`` never spins. A worker that leaves takes its trial with it: the tasks
pinned to it are cancelled (they would otherwise wait for it forever) and the trial is
reported in ``WorkersChanged.lost``; it resumes from its last checkpoint and trains again,
silently, the epochs it had already reported, so every epoch is reported exactly once.

The parts: :class:`~hypersched_nb.runtime._placements.Placements` turns instructions into
those tasks and moves each trial through its phases (one table, in
:mod:`hypersched_nb.runtime._live`); this class turns what comes back into the driver's
events and follows the cluster's workers; :class:`~hypersched_nb.runtime._bests.BestWeights`
keeps the best weights; what the client and the workers send each other is in
:mod:`hypersched_nb.runtime._messages`.

Times in a ``Result``: ``startup`` is the wall time from the Start or Resize to the
replicas being ready to train (queueing, checkpoints, process group, restore, replay);
``seconds`` is the epoch's training (and checkpoint) time on the workers after a start, or
the whole wall time of the epoch (dispatch included) after a Continue, from the Continue or,
within a batch, from the previous report, so that ``seconds + startup`` is always the time
the trial held its workers for that epoch. ``task_timeout`` and the stuck-step warning
count from the previous report too: they bound one epoch, not a batch.
Nothing here decides anything: the driver does.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from hypersched_nb.core import events
from hypersched_nb.core.events import Event
from hypersched_nb.errors import ConfigError, warn
from hypersched_nb.runtime import _worker
from hypersched_nb.runtime._bests import BestWeights
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
from hypersched_nb.runtime._live import LiveTrial, Phase, move
from hypersched_nb.runtime._messages import Epoch, Failed, Report
from hypersched_nb.runtime._placements import Placements
from hypersched_nb.runtime._slots import Slot, Slots
from hypersched_nb.runtime.checkpoint import (
    BestCheckpoint,
    Checkpoint,
    store_id,
    written_bests,
    written_checkpoint,
)

__all__ = ["DaskRuntime"]

_IN_FLIGHT = (Phase.TRAINING, Phase.AHEAD)  # phases in which a task of the trial trains


class DaskRuntime:
    """Trains ``trainable`` (a class or any zero-argument factory of trainables) on the
    workers of ``client``; implements :class:`hypersched_nb.experiment.driver.Runtime`.

    ``metric`` names the entry of ``step()``'s dict reported to the policy (a ``"done"``
    entry that is true ends the trial) and ``mode`` ("max" or "min") which way is better;
    ``checkpoint_dir`` is a folder (made absolute here; a host without this kernel's disk
    has its own under that name, and its checkpoints travel through Dask: see
    :mod:`~hypersched_nb.runtime._placements`) or an fsspec URL that every worker reaches;
    ``seed`` and the trial id give each trial's ``ctx.seed``;
    ``task_timeout`` bounds one epoch, also within a batch (seconds; None: no bound); ``checkpoint_overhead`` is
    the share of training time that per-epoch checkpoints may cost (see ``_worker``);
    ``group_timeout`` bounds a ``torch.distributed`` rendezvous and collective; ``poll`` is
    the period of the scheduler poll that backs up its worker events; ``fetch_timeout``
    bounds reading a task's result (its worker may have died since it finished);
    ``batch_seconds`` is how much training a single-worker trial does per task, in whole
    epochs of its last measured length (at least one, at most 64); ``max_epochs``, where
    the driver completes every trial, is where no batch goes past (None: not known, and a
    completed trial's batch may train one epoch more before it halts).
    """

    def __init__(
        self,
        trainable: Callable[[], object],
        *,
        client,
        clock,
        metric: str,
        checkpoint_dir: str,
        mode: str = "max",
        seed: int = 0,
        task_timeout: float | None = None,
        checkpoint_overhead: float = 0.01,
        group_timeout: float = 120.0,
        poll: float = 5.0,
        fetch_timeout: float = 10.0,
        batch_seconds: float = 3.0,
        max_epochs: int | None = None,
    ):
        if not callable(trainable):
            raise ConfigError(
                f"`trainable` is {trainable!r}, but must be a Trainable class or factory"
            )
        for name, value in (
            ("task_timeout", task_timeout),
            ("group_timeout", group_timeout),
            ("poll", poll),
            ("batch_seconds", batch_seconds),
        ):
            if value is not None and not value > 0:
                raise ConfigError(f"`{name}` is {value}, but must be > 0")
        if mode not in ("max", "min"):
            raise ConfigError(f"`mode` is {mode!r}, but must be 'max' or 'min'")
        if max_epochs is not None and not max_epochs >= 1:
            raise ConfigError(f"`max_epochs` is {max_epochs}, but must be >= 1 (or None)")
        if not checkpoint_overhead >= 0:
            raise ConfigError(f"`checkpoint_overhead` is {checkpoint_overhead}, but must be >= 0")
        self._client, self.clock, self.metric = client, clock, metric
        self._task_timeout, self._poll = task_timeout, poll
        directory = os.fspath(checkpoint_dir)
        if "://" not in directory:  # workers may run elsewhere than this process's folder
            directory = os.path.abspath(directory)
        self._directory, self._home = directory, _home_store(directory)
        self._bests = BestWeights(metric, 1.0 if mode == "max" else -1.0)
        self._slots = Slots()
        self._board = TaskBoard(client, fetch_timeout)
        self._placements = Placements(
            self._board, self._slots, clock, factory=trainable, seed=seed,
            group_timeout=group_timeout, directory=directory, overhead=checkpoint_overhead,
            bests=self._bests, home=self._home, batch_seconds=batch_seconds,
            max_epochs=max_epochs,
        )  # fmt: skip
        self._trials = self._placements.trials
        self._events: list[Event] = []  # found while executing; handed out by the next advance
        self._retired: set[str] = set()  # addresses of workers being scaled away
        self._expect: int | None = None  # workers asked for by ScaleCluster, not yet there
        self._closed = False
        self._next_poll = 0.0
        self._sync_members()
        if not len(self._slots):
            client.wait_for_workers(1, timeout=60)
            self._sync_members()
        try:
            self._probe_stores()
        except ConfigError:
            self._board.close()
            raise

    # ------------------------------------------------------------------ Runtime protocol

    def workers(self) -> int:
        return len(self._slots)

    def execute(self, ins: events.Instruction) -> None:
        match ins:
            case events.Continue():
                self._placements.step(ins.trial_id)
                self._events += self._report_early(ins.trial_id)
            case events.Start():
                self._placements.start(ins)
            case events.Resize():
                if self._placements.resize(ins.trial_id, ins.workers):  # lost
                    now, workers = self.clock.now(), len(self._slots)
                    self._events.append(events.WorkersChanged(now, workers, (ins.trial_id,)))
            case events.Pause() | events.Stop():
                t = self._trials.get(ins.trial_id)
                if t is not None:
                    self._name_if_stuck(t)
                    self._placements.vacate(t, save=type(ins) is events.Pause)
                    self._placements.place_queued()
            case events.ScaleCluster():
                self._scale(ins.workers)
            case _:
                raise ConfigError(f"instruction {ins!r} is unknown to the Dask runtime")

    def advance(self, until: float) -> list[Event]:
        found, self._events = self._events, []
        while True:
            for item in self._board.drain():
                found += self._handle(item)
            now = self.clock.now()
            if not found and now >= self._next_poll:
                found += self._sync_members()
            if not found:
                found += self._check_timeouts(now)
            if found:
                return found
            if now >= until:
                return []
            item = self._board.wait(min(until, self._next_poll, self._next_timeout()) - now)
            if item is not None:
                found += self._handle(item)

    def close(self) -> None:
        """Free every worker (replicas torn down; checkpoints stay, and the two best
        records' weights: those of epochs never reported go). The client stays open."""
        if self._closed:
            return
        self._closed = True
        for t in self._trials.values():
            if t.slots:
                self._placements.vacate(t, save=False)
        self._bring_home()
        self._board.close()
        self._bests.prune(self._directory)

    def _bring_home(self) -> None:
        """Wait for the copies of checkpoints still on their way to this kernel (the last
        best's weights, say), up to ``fetch_timeout`` in all."""
        pending = [key for t in self._trials.values() for key in t.fetching]
        tasks = [task for task in map(self._board.finish, pending) if task is not None]
        end = time.monotonic() + self._board.fetch_timeout
        for task in tasks:
            try:
                task.future.result(timeout=max(0.0, end - time.monotonic()))
            except Exception:  # noqa: BLE001, S110 - not done in time, or failed: not copied
                pass
            self._placements.fetched(task, self._board.fetch(task.future))

    # ------------------------------------------------------------------ introspection

    def placement(self, trial_id: int) -> list[str]:
        """Names of the workers trial ``trial_id`` holds, rank 0 first."""
        t = self._trials.get(trial_id)
        return [s.name for s in t.slots] if t is not None else []

    def checkpoint(self, trial_id: int) -> Checkpoint | None:
        """The last durable checkpoint of trial ``trial_id``."""
        t = self._trials.get(trial_id)
        return None if t is None else t.ckpt

    # ------------------------------------------------------------------ a resumed search

    def adopt(self, trials: dict[int, int], *, running: tuple[int, ...]) -> dict[int, int]:
        """Take on the trials of a search resumed from its journal: ``trials`` maps each
        that may train again to the epochs it reported. Each resumes from its latest
        checkpoint on disk that holds no more than those (and trains the rest again
        silently); the best weights written so far are kept as the best. The next
        :meth:`advance` says how many workers there are now, and that ``running``, the
        trials that held workers when the search was cut short, lost theirs. Returns each
        trial's checkpoint epoch (0: none, trained again from the start)."""
        directory, adopted = self._directory, {}
        for tid, reported in trials.items():
            t = self._trials[tid] = LiveTrial(tid, 0)
            t.reported, t.ckpt = reported, written_checkpoint(directory, tid, at_most=reported)
            adopted[tid] = t.ckpt.epoch if t.ckpt else 0
        for best in sorted(written_bests(directory, self.metric), key=lambda b: b.epoch):
            self._bests.adopt(best)
        self._events.append(events.WorkersChanged(self.clock.now(), len(self._slots), running))
        return adopted

    def best_checkpoint(self, at_most: float | None = None) -> BestCheckpoint | None:
        """The weights of the best result so far; with ``at_most``, of the best whose metric
        is not better than that (the search's best by its deadline: an epoch may end just
        after it). None if there is none."""
        return self._bests.best(at_most)

    def trial_seed(self, trial_id: int) -> int:
        """``ctx.seed`` of trial ``trial_id``: the runtime's seed and the trial id, mixed."""
        return self._placements.trial_seed(trial_id)

    def replica_digests(self, trial_id: int) -> list[str]:
        """SHA-256 of each replica's state dict, rank order (between two epochs; blocks)."""
        t = self._trials[trial_id]
        futs = [
            self._client.submit(
                _worker.digest, trial_id, workers=[s.addr], allow_other_workers=False, pure=False
            )
            for s in t.slots
        ]
        return self._client.gather(futs)

    # ------------------------------------------------------------------ what comes back

    def _handle(self, item: QueueItem) -> list[Event]:
        match item:
            case Finished():
                return self._on_done(item.key)
            case Report():
                return self._on_report(item)
        return self._sync_members()  # MembersChanged

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
                    self._stored(task.slot, self._board.fetch(fut), raise_=False)
                case PrepTag() | SaveTag():
                    out = self._board.fetch(fut)
                    failed = self._placements.prepared(task, out)
                    return [] if failed is None else [self._fail(failed, out.error)]
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
            t.left = len(t.early)  # no epoch more comes from it
            if t.phase is Phase.TRAINING:
                found.append(self._fail(t, f"its batch ended before epoch {t.expected}"))
        return found

    def _on_epoch(self, tag: EpochTag, out: Epoch | Failed | None, fut) -> list[Event]:
        """One epoch's outcome, by event or from the task's result: reported if it is the
        next epoch, kept for later if the driver is still deciding on the one before
        (AHEAD), dropped if it was heard already."""
        if not self._current(tag):
            return []
        t = self._trials[tag.trial_id]
        if out is None:
            found = self._sync_members()
            if tag.token != t.token:
                return found  # its worker left: reported as lost
            return [*found, self._fail(t, self._board.describe(fut))]
        if (type(out) is Epoch and out.epoch != t.expected) or Failed in map(type, t.early):
            return []  # heard already: by its event, and now in the task's result
        t.t_launch = self.clock.now()  # the next epoch of a batch starts now: timed from here
        if t.phase is Phase.AHEAD:
            t.early.append(out)
            return []
        if type(out) is Failed:
            return [self._fail(t, out.error)]
        t.outs[tag.rank] = out
        if len(t.outs) < len(t.slots):
            return []
        return self._result(t)

    def _report_early(self, tid: int) -> list[Event]:
        """After a Continue: the next epoch of the trial's batch, if it was heard while the
        driver decided (handed out by the next advance, one per decision)."""
        t = self._trials.get(tid)
        if t is None or t.phase is not Phase.TRAINING or not t.early:
            return []
        out = t.early.pop(0)
        if type(out) is Failed:
            return [self._fail(t, out.error)]
        t.outs[0] = out
        return self._result(t)

    def _result(self, t: LiveTrial) -> list[Event]:
        """The Result of the epoch every replica returned; then, if its checkpoint could
        not be written, the trial leaves its workers (TrialHalted)."""
        first = t.outs[0]
        info = dict(first.metrics)
        if self.metric not in info:
            return [
                self._fail(
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
            return [self._fail(t, f"step()'s {self.metric!r} is {shown}, but must be a number")]
        if first.refused is not None:
            warn(f"trial {t.tid}: {first.refused}")
        done = bool(info.pop("done", False))
        if first.best is not None:
            self._placements.keep(t, first.best, t.slots[0], best=metric)
        now = self.clock.now()
        wall = now - t.t_exec
        step = max(o.step for o in t.outs.values())
        t.longest, t.step, work = max(t.longest, step), step, step + first.write
        seconds, startup = (work, max(0.0, wall - work)) if t.starting else (wall, 0.0)
        t.reported, t.t_exec, t.starting = first.epoch, now, False
        if first.ckpt is not None:
            self._placements.keep(t, first.ckpt, t.slots[0])
        t.left -= 1
        ahead = t.left > 0 and not done and first.unsaved is None
        move(t, "report_ahead" if ahead else "report")
        t.outs = {}
        if not ahead:
            t.futures, t.left = {}, 0
        result = events.Result(
            t.tid, t.reported, metric, now, seconds, len(t.slots), startup, done, info or None
        )
        if first.unsaved is None:
            return [result]
        self._placements.vacate(t, save=False)
        self._placements.place_queued()
        return [result, events.TrialHalted(t.tid, now, first.unsaved)]

    def _fail(self, t: LiveTrial, error: str) -> events.TrialFailed:
        epoch = t.reported
        self._placements.vacate(t, save=False)
        self._placements.place_queued()
        return events.TrialFailed(t.tid, self.clock.now(), error, epoch)

    def _check_timeouts(self, now: float) -> list[Event]:
        if self._task_timeout is None:
            return []
        late = [t for t in self._training() if now - t.t_launch > self._task_timeout]
        return [
            self._fail(
                t,
                f"an epoch ran past task_timeout={self._task_timeout:g}s "
                f"on {', '.join(self.placement(t.tid))}",
            )
            for t in late
        ]

    def _name_if_stuck(self, t: LiveTrial) -> None:
        """Warn, naming its workers, if the epoch of ``t`` still in flight looks stuck (see
        :func:`_stuck`): a trial stopped at the deadline in a ``step()`` that never returns
        keeps its worker busy."""
        running = self.clock.now() - t.t_launch
        if t.phase is Phase.TRAINING and _stuck(running, t.longest):
            warn(
                f"trial {t.tid} was stopped {running:.0f} s into its epoch {t.reported + 1} on "
                f"{', '.join(self.placement(t.tid))} (its epochs took at most {t.longest:.2g} "
                "s): its step() may be stuck, and keeps that worker busy until it returns"
            )

    def _next_timeout(self) -> float:
        if self._task_timeout is None:
            return float("inf")
        starts = [t.t_launch for t in self._training()]
        return min(starts, default=float("inf")) + self._task_timeout

    def _training(self) -> list[LiveTrial]:
        return [t for t in self._trials.values() if t.phase is Phase.TRAINING]

    # ------------------------------------------------------------------ membership

    def _sync_members(self) -> list[Event]:
        self._next_poll = self.clock.now() + self._poll
        everyone = self._board.workers()
        if everyone is None:  # the scheduler is unreachable for now: the next poll tries again
            return []
        self._retired &= set(everyone)
        planned = self._planned()
        workers = {
            a: w for a, w in everyone.items()
            if a not in self._retired and (planned is None or w.get("name") in planned)
        }  # fmt: skip
        gone, added = self._slots.sync(workers)
        for s in added:  # torch's import takes seconds: done before a trial waits for it
            self._board.submit(_worker.warm, self._directory, slot=s, tag=WarmTag(), name="hs-warm")
        if not gone and not added:
            return []
        held = {s.addr: (s.name, s.memory_limit, s.tenant) for s in gone if s.tenant is not None}
        lost = list(dict.fromkeys(tid for _, _, tid in held.values()))
        self._board.cancel_off(workers)
        for tid in lost:  # what is left of its workers is freed (no task goes to the gone)
            self._placements.vacate(self._trials[tid], save=False)
        if self._expect is not None and len(self._slots) >= self._expect:
            self._expect = None
        self._placements.place_queued()
        if self._expect is None:  # no workers on their way: what cannot be placed is lost
            lost += self._placements.drop_queued()
        now = self.clock.now()
        killed = self._killed_for_memory(held, now)
        lost = [tid for tid in lost if tid not in killed]
        return [events.WorkersChanged(now, len(self._slots), tuple(lost)), *killed.values()]

    def _killed_for_memory(self, held: dict[str, tuple], now: float) -> dict[int, Event]:
        """Of the trials in ``held`` (the address of a worker gone -> its name, memory
        limit and tenant), those whose worker its nanny restarted for exceeding its memory
        limit: halted the first time, failed the second (it would kill every worker in turn)."""
        out: dict[int, Event] = {}
        for addr, rss in self._board.memory_restarts(held).items() if held else ():
            name, limit, tid = held[addr]
            t = self._trials[tid]
            if tid in out:
                continue  # one of its other workers said so already
            t.memory_kills += 1
            why = f"its worker {name} held {_gib(rss)} of its {_gib(limit)} memory limit and was restarted"
            if t.memory_kills == 1:
                out[tid] = events.TrialHalted(tid, now, f"paused: {why}")
            else:
                out[tid] = events.TrialFailed(
                    tid, now, f"{why}, a second time: give each worker more memory "
                    "(LocalCluster's memory_limit=) or make the trial smaller", t.reported,
                )  # fmt: skip
        return out

    def _probe_stores(self) -> None:
        """Ask every worker which store its checkpoint folder is (see :meth:`_stored`)."""
        try:
            seen = self._client.run(_worker.store, self._directory, on_error="return")
        except Exception:  # noqa: BLE001 - unreachable now: each worker's warm-up says later
            return
        for s in self._slots.all():
            if s.addr in seen:
                self._stored(s, seen[s.addr], raise_=True)

    def _stored(self, slot: Slot, found, *, raise_: bool) -> None:
        """Note the store ``slot``'s worker ``found`` under the checkpoint folder. A URL
        (``://``) is meant to be one store for every host: a worker that finds another, or
        cannot reach it, is one line (raised before anything starts, or warned of)."""
        if isinstance(found, str):
            slot.store = found
        problem = _store_problem(self._directory, self._home, slot, found)
        if problem is not None and raise_:
            raise ConfigError(problem)
        if problem is not None:
            warn(problem)

    def _scale(self, workers: int) -> None:
        cluster = getattr(self._client, "cluster", None)
        now = self.clock.now()
        if cluster is None or not hasattr(cluster, "scale"):
            warn(
                "the cluster cannot be resized from here (attached by address): "
                "ScaleCluster ignored"
            )
            self._events.append(events.WorkersChanged(now, len(self._slots)))
            return
        if workers >= len(self._slots):
            self._expect = workers if workers > len(self._slots) else None
            cluster.scale(workers)  # fewer than asked before: those not there yet go first
            return
        self._expect = None
        going = self._slots.free()[::-1][: len(self._slots) - workers]
        self._retired.update(s.addr for s in going)
        self._slots.retire(going)  # never handed out again, even before the scheduler sees
        names = [s.raw_name for s in going] + self._on_their_way(cluster)
        self._client.loop.add_callback(cluster.scale_down, names)
        self._events.append(events.WorkersChanged(now, len(self._slots)))

    def _planned(self) -> set | None:
        """The names of the workers the cluster means to have (None: it does not say). A
        worker it is closing may still register with the scheduler (a scale-down races its
        start): it is never handed out."""
        cluster = getattr(self._client, "cluster", None)
        if not hasattr(cluster, "worker_spec"):
            return None
        for _ in range(3):  # the cluster's own thread may change its spec meanwhile
            try:
                return set(cluster.plan)
            except RuntimeError:
                continue
        return None

    def _on_their_way(self, cluster) -> list:
        """Workers the cluster is still starting, asked for by an earlier ScaleCluster: a
        smaller size cancels them (a ``LocalCluster`` keeps its target and would start
        them, to be billed until the next shrink)."""
        here = self._slots.raw_names()
        return [name for name in list(getattr(cluster, "worker_spec", {})) if name not in here]

    def __repr__(self) -> str:
        running = sum(t.phase not in (Phase.IDLE, Phase.QUEUED) for t in self._trials.values())
        return f"DaskRuntime(workers={len(self._slots)}, trials running={running})"


def _stuck(running: float, longest: float) -> bool:
    """Does an epoch in flight for ``running`` seconds, of a trial whose ``step()`` took at
    most ``longest`` so far, look stuck? When it has run 5 × that and 5 s at least (a trial
    with no epoch yet has no measure: never)."""
    return longest > 0 and running > max(5 * longest, 5.0)


def _home_store(directory: str) -> str:
    """The store_id of ``directory`` on this kernel's host: one line if it cannot be made."""
    try:
        return store_id(directory)
    except OSError as exc:
        raise ConfigError(
            f"checkpoint_dir {directory!r} cannot be written from this kernel "
            f"({type(exc).__name__}: {exc}): give a folder or URL it can write"
        ) from None


def _store_problem(directory: str, home: str, slot: Slot, found) -> str | None:
    """What is wrong with the store ``slot``'s worker ``found`` under ``directory``
    (a store_id, a Failed or an exception), given this kernel's ``home``; None if nothing."""
    import socket

    from distributed.comm import get_address_host

    there = f"worker {slot.name} (host {get_address_host(slot.addr)})"
    here = f"this kernel (host {socket.gethostname()})"
    if not isinstance(found, str):
        why = found.error if isinstance(found, Failed) else f"{type(found).__name__}: {found}"
        return (
            f"checkpoint_dir {directory!r} cannot be written from {there}, though {here} "
            f"writes it ({why}): give every worker a folder it can write"
        )
    if "://" in directory and found != home:
        return (
            f"checkpoint_dir {directory!r} is not one store for every host: {there} finds "
            f"other files there than {here}: give a URL every host reaches (a bucket, a "
            "shared mount), or a local folder, whose checkpoints then travel through Dask"
        )
    return None


def _gib(size: int) -> str:
    return f"{size / 2**30:.2f} GiB" if size else "unlimited"
