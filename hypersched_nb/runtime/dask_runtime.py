"""Live trials on a Dask cluster: the driver's Runtime protocol, carried out for real.

Every epoch of a trial on k workers is k tasks, one pinned to each of its workers
(``workers=[address]``, ``allow_other_workers=False``, ``pure=False``), running the
functions of :mod:`hypersched_nb.runtime._worker`; the trainable objects stay in a registry
on each worker between epochs (:mod:`hypersched_nb.runtime._replicas`), so a trial that
stays put moves no state. Moves go through
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
those tasks; each trial moves through its phases, and their effects, in one place
(:class:`~hypersched_nb.runtime._live.LiveTrial`); this class turns what comes back into the
driver's events; :class:`~hypersched_nb.runtime._members.Members` follows the cluster's
workers, :mod:`~hypersched_nb.runtime._stores` their checkpoint stores,
:mod:`~hypersched_nb.runtime._transfers` how checkpoints go between them, and
:mod:`~hypersched_nb.runtime._timeouts` how long an epoch may run;
:class:`~hypersched_nb.runtime._bests.BestWeights` keeps the best weights; what the client
and the workers send each other is in :mod:`hypersched_nb.runtime._messages`.

What comes back is turned into the driver's events by
:class:`~hypersched_nb.runtime._outcomes.Outcomes` (which also says what the times in a
``Result`` are). Nothing here decides anything: the driver does.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable

from hypersched_nb.core import events
from hypersched_nb.core.events import Event
from hypersched_nb.errors import ConfigError, warn
from hypersched_nb.runtime import _timeouts, _worker
from hypersched_nb.runtime._bests import BestWeights
from hypersched_nb.runtime._board import TaskBoard
from hypersched_nb.runtime._live import LiveTrial, Phase
from hypersched_nb.runtime._members import Members
from hypersched_nb.runtime._messages import Sealed
from hypersched_nb.runtime._outcomes import Outcomes
from hypersched_nb.runtime._placements import Placements
from hypersched_nb.runtime._slots import Slots
from hypersched_nb.runtime._stores import home_store, probe_stores
from hypersched_nb.runtime._transfers import Traffic
from hypersched_nb.runtime.checkpoint import (
    BestCheckpoint,
    Checkpoint,
    written_bests,
    written_checkpoint,
)

__all__ = ["DaskRuntime"]


class DaskRuntime:
    """Trains ``trainable`` (a class or any zero-argument factory of trainables) on the
    workers of ``client``; implements :class:`hypersched_nb.experiment.driver.Runtime`.

    ``metric`` names the entry of ``step()``'s dict reported to the policy (a ``"done"``
    entry that is true ends the trial) and ``mode`` ("max" or "min") which way is better;
    ``checkpoint_dir`` is a folder (made absolute here; a host without this kernel's disk
    has its own under that name, and its checkpoints travel from worker to worker through
    Dask: see :mod:`~hypersched_nb.runtime._transfers`) or an fsspec URL that every worker reaches;
    ``seed`` and the trial id give each trial's ``ctx.seed``;
    ``step_timeout`` bounds one epoch, also within a batch: seconds, ``"auto"`` (a multiple
    of the trial's median epoch) or None; an epoch past it has its workers restarted and
    its trial resumes from its checkpoint, failed the second time (see
    :mod:`~hypersched_nb.runtime._timeouts`); ``checkpoint_overhead`` is
    the share of training time that per-epoch checkpoints may cost (see ``_worker_io``);
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
        step_timeout: float | str | None = "auto",
        task_timeout: None = None,
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
        sealed = seal(trainable)  # refused now, if it cannot travel, before any task
        if task_timeout is not None:
            raise ConfigError(
                f"`task_timeout` ({task_timeout}) is gone: give step_timeout={task_timeout} "
                "(an epoch past it restarts its worker and the trial resumes from its checkpoint)"
            )
        for name, value in (
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
        self._timeouts, self._poll = _timeouts.StepTimeouts(step_timeout), poll
        directory = os.fspath(checkpoint_dir)
        if "://" not in directory:  # workers may run elsewhere than this process's folder
            directory = os.path.abspath(directory)
        self._directory, self._home = directory, home_store(directory)
        self._bests = BestWeights(metric, 1.0 if mode == "max" else -1.0)
        self._slots = Slots()
        self._board = TaskBoard(client, fetch_timeout)
        self._board.on_best = self._bests.written
        self._placements = Placements(
            self._board, self._slots, clock, factory=sealed, seed=seed,
            group_timeout=group_timeout, directory=directory, overhead=checkpoint_overhead,
            bests=self._bests, home=self._home, batch_seconds=batch_seconds,
            max_epochs=max_epochs,
        )  # fmt: skip
        self._trials = self._placements.trials
        self._members = Members(
            client, clock, self._board, self._slots, self._placements, poll=poll,
            directory=directory,
        )  # fmt: skip
        self._outcomes = Outcomes(
            clock, self._board, self._placements, self._members, metric=metric,
            directory=directory, home=self._home,
        )  # fmt: skip
        self._events: list[Event] = []  # found while executing; handed out by the next advance
        self._closed = False
        self._members.sync()
        if not len(self._slots):
            client.wait_for_workers(1, timeout=60)
            self._members.sync()
        try:
            probe_stores(client, self._slots, directory, self._home)
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
                self._events += self._outcomes.report_early(ins.trial_id)
            case events.Start():
                self._placements.start(ins)
            case events.Resize():
                if self._placements.resize(ins.trial_id, ins.workers):  # lost
                    now, workers = self.clock.now(), len(self._slots)
                    self._events.append(
                        events.WorkersChanged(now, workers, (ins.trial_id,), self._slots.paused())
                    )
            case events.Pause() | events.Stop():
                t = self._trials.get(ins.trial_id)
                if t is not None:
                    self._name_if_stuck(t)
                    self._placements.vacate(t, save=type(ins) is events.Pause)
                    self._placements.place_queued()
            case events.ScaleCluster():
                self._events += self._members.scale(ins.workers)
            case _:
                raise ConfigError(f"instruction {ins!r} is unknown to the Dask runtime")

    def advance(self, until: float) -> list[Event]:
        found, self._events = self._events, []
        while True:
            for item in self._board.drain():
                found += self._outcomes.handle(item)
            now = self.clock.now()
            if not found and now >= self._members.next_poll:
                found += self._members.sync()
            if not found:
                found += self._check_timeouts(now)
            if found:
                self._measure(found)
                return found
            if now >= until:
                return []
            wake = self._timeouts.next_timeout(self._placements.phases(Phase.TRAINING))
            item = self._board.wait(min(until, self._members.next_poll, wake) - now)
            if item is not None:
                found += self._outcomes.handle(item)

    def close(self) -> None:
        """Free every worker (replicas torn down; checkpoints stay, and the two best
        records' weights: those of epochs never reported go). The client stays open, and the
        workers being restarted are back."""
        if self._closed:
            return
        self._closed = True
        for t in self._trials.values():
            if t.slots:
                self._placements.vacate(t, save=False)
        self._quiesce()
        self._bring_home()
        self._board.close()
        self._members.settle()
        self._bests.prune(self._directory)

    def _quiesce(self) -> None:
        """Once the search is over nothing more is written into its folder: the epochs still
        training write no checkpoint when they end, nor does a task of the search that has
        yet to begin (a start, a pause), and the writes in progress (the best weights'
        included) end first, up to ``fetch_timeout`` (the workers' event loops never wait
        meanwhile: see :func:`~hypersched_nb.runtime._worker.quiesce`)."""
        addresses = [s.addr for s in self._slots.all() if self._slots.alive(s)]
        if addresses:
            self._board.run_within(
                _worker.quiesce, self._placements.search, self._board.fetch_timeout,
                addresses=addresses, timeout=self._board.fetch_timeout + 2.0,
            )  # fmt: skip

    def _bring_home(self) -> None:
        """Wait for the copies of checkpoints still on their way to this kernel (the last
        best's weights, a trial's newest checkpoint, and those queued behind them), up to
        ``fetch_timeout`` in all."""
        end = time.monotonic() + self._board.fetch_timeout
        while time.monotonic() < end:
            pending = [key for t in self._trials.values() for key in t.fetching]
            tasks = [task for task in map(self._board.finish, pending) if task is not None]
            if not tasks:
                return
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

    def checkpoint_traffic(self) -> Traffic:
        """The checkpoint bytes that passed through this kernel so far: sent for a start
        (only after a lost host), copied here in the background; and how many checkpoints
        went from worker to worker without it (see :mod:`~hypersched_nb.runtime._transfers`)."""
        return self._placements.transfers.traffic

    def restored_from(self, trial_id: int) -> Checkpoint | None:
        """The checkpoint the last start or resize of trial ``trial_id`` to reach its
        workers restored from (None: none, or not launched yet). A start waits for the
        checkpoints still being written or copied when it came (a pause's, say), so this
        is known only once it launched, and may be newer than :meth:`checkpoint` was then."""
        t = self._trials.get(trial_id)
        return None if t is None else t.restored

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
            ckpt = written_checkpoint(directory, tid, at_most=reported)
            if ckpt is not None:  # found on this kernel's disk, wherever it was written
                ckpt = dataclasses.replace(ckpt, store=self._home)
            self._placements.add(LiveTrial(tid, 0, reported=reported, ckpt=ckpt))
            adopted[tid] = ckpt.epoch if ckpt else 0
        for best in sorted(written_bests(directory, self.metric), key=lambda b: b.epoch):
            self._bests.adopt(best)
        self._events.append(
            events.WorkersChanged(self.clock.now(), len(self._slots), running, self._slots.paused())
        )
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

    def _measure(self, found: list[Event]) -> None:
        """Each trial's step() times, for its ``step_timeout``."""
        for e in found:
            if type(e) is events.Result:
                t = self._trials.get(e.trial_id)
                if t is not None:
                    self._timeouts.measured(t)

    def _check_timeouts(self, now: float) -> list[Event]:
        """The trials whose epoch ran past ``step_timeout``: their workers are restarted
        (a step() stuck in them cannot be stopped otherwise), and each trial is halted, to
        resume from its last checkpoint, or failed if it happened before. A trial whose
        worker its nanny is killing for its memory is named for that instead."""
        found: list[Event] = []
        for t, bound in self._timeouts.late(self._placements.phases(Phase.TRAINING), now):
            killed = self._members.dying_for_memory(t, now)
            if killed is not None:  # its nanny is restarting it already: named for that
                self._placements.vacate(t, save=False)
                found.append(killed)
                continue
            names, slots = ", ".join(self.placement(t.tid)), list(t.slots)
            why = (
                f"its epoch {t.expected} ran past {self._timeouts.describe(bound)} on {names}, "
                "whose process was restarted"
            )
            self._members.restart(slots)
            self._placements.vacate(t, save=False)
            if self._timeouts.strike(t.tid) == 1:
                found.append(events.TrialHalted(t.tid, now, f"paused: {why}"))
            else:
                found.append(events.TrialFailed(
                    t.tid, now, f"{why}, a second time: its step() hangs or needs a longer "
                    "step_timeout", t.reported,
                ))  # fmt: skip
        if found:
            self._placements.place_queued()
            found.insert(
                0, events.WorkersChanged(now, len(self._slots), paused=self._slots.paused())
            )
        return found

    def _name_if_stuck(self, t: LiveTrial) -> None:
        """Warn, naming its workers, if the epoch of ``t`` still in flight looks stuck (see
        :func:`~hypersched_nb.runtime._timeouts.stuck`): a trial stopped at the deadline in a
        ``step()`` that never returns keeps its worker busy."""
        running = _timeouts.stuck(t, self.clock.now())
        if running is not None:
            warn(
                f"trial {t.tid} was stopped {running:.0f} s into its epoch {t.reported + 1} on "
                f"{', '.join(self.placement(t.tid))} (its epochs took at most {t.longest:.2g} "
                "s): its step() may be stuck, and keeps that worker busy until it returns"
            )

    def __repr__(self) -> str:
        running = sum(t.phase not in (Phase.IDLE, Phase.QUEUED) for t in self._trials.values())
        return f"DaskRuntime(workers={len(self._slots)}, trials running={running})"


def seal(trainable: Callable[[], object]) -> Sealed:
    """``trainable`` as the workers get it (:class:`~._messages.Sealed`: bytes to the
    scheduler); one that cannot be pickled is refused here, before any worker is used."""
    try:
        return Sealed.of(trainable)
    except Exception as exc:  # pickle raises many types for what it cannot take
        raise ConfigError(
            f"`trainable` {trainable!r} cannot be sent to the workers ({type(exc).__name__}: "
            f"{exc}): define it at the top level of a module or of the notebook, holding no "
            "open file, lock or client"
        ) from exc
