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

Times in a ``Result``: ``startup`` is the wall time from the Start or Resize to the
replicas being ready to train (queueing, checkpoints, process group, restore, replay);
``seconds`` is the epoch's training (and checkpoint) time on the workers after a start, or
the whole wall time of the epoch (dispatch included) after a Continue, so that
``seconds + startup`` is always the time the trial held its workers for that epoch.
Nothing here decides anything: the driver does.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable

from hypersched_nb.core.events import (
    Continue,
    Event,
    Instruction,
    Pause,
    Resize,
    Result,
    ScaleCluster,
    Start,
    Stop,
    TrialFailed,
    WorkersChanged,
)
from hypersched_nb.errors import ConfigError, warn
from hypersched_nb.runtime import _worker
from hypersched_nb.runtime._board import TaskBoard
from hypersched_nb.runtime._slots import Slot, Slots
from hypersched_nb.runtime.checkpoint import remove_checkpoint

__all__ = ["DaskRuntime"]

_IDLE, _QUEUED, _WAIT, _RUN, _READY = "idle", "queued", "wait", "run", "ready"


class _Live:
    """The runtime's record of one trial: where it is and what is in flight."""

    __slots__ = (
        "ckpt",
        "config",
        "deps",
        "futures",
        "kind",
        "outs",
        "phase",
        "rendezvous",
        "reported",
        "saving",
        "seq",
        "slots",
        "t_exec",
        "t_launch",
        "tid",
        "token",
        "want",
    )

    def __init__(self, tid: int, token: int):
        self.tid, self.token, self.config = tid, token, {}
        self.slots: list[Slot] = []
        self.phase = _IDLE
        self.kind = "start"  # the epoch in flight starts the replicas, or steps them
        self.futures: dict[int, object] = {}  # rank -> future of the epoch in flight
        self.outs: dict[int, dict] = {}  # rank -> what that epoch returned
        self.t_exec = self.t_launch = 0.0  # when the instruction came / the tasks went out
        self.reported = 0  # epochs reported to the driver
        self.ckpt: dict | None = None  # last durable checkpoint known here
        self.saving = None  # the pause checkpoint task in flight
        self.deps: dict[str, object] = {}  # key -> task to wait for before starting
        self.rendezvous: tuple[str, int] | None = None
        self.want = 1
        self.seq = 0  # numbers the epochs sent out, so a late answer is told from a new one

    @property
    def current(self) -> bool:
        return self.ckpt is not None and self.ckpt["epoch"] == self.reported


class DaskRuntime:
    """Trains ``trainable`` (a class or any zero-argument factory of trainables) on the
    workers of ``client``; implements :class:`hypersched_nb.experiment.driver.Runtime`.

    ``metric`` names the entry of ``step()``'s dict reported to the policy (a ``"done"``
    entry that is true ends the trial) and ``mode`` ("max" or "min") which way is better;
    ``checkpoint_dir`` is a folder (made absolute here) or an fsspec URL that every worker
    can reach; ``seed`` and the trial id give each trial's ``ctx.seed``;
    ``task_timeout`` bounds one epoch (seconds; None: no bound); ``checkpoint_overhead`` is
    the share of training time that per-epoch checkpoints may cost (see ``_worker``);
    ``group_timeout`` bounds a ``torch.distributed`` rendezvous and collective; ``poll`` is
    the period of the scheduler poll that backs up its worker events; ``fetch_timeout``
    bounds reading a task's result (its worker may have died since it finished).
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
        checkpoint_overhead: float = 0.02,
        group_timeout: float = 120.0,
        poll: float = 5.0,
        fetch_timeout: float = 10.0,
    ):
        if not callable(trainable):
            raise ConfigError(
                f"`trainable` is {trainable!r}, but must be a Trainable class or factory"
            )
        for name, value in (
            ("task_timeout", task_timeout),
            ("group_timeout", group_timeout),
            ("poll", poll),
        ):
            if value is not None and not value > 0:
                raise ConfigError(f"`{name}` is {value}, but must be > 0")
        if mode not in ("max", "min"):
            raise ConfigError(f"`mode` is {mode!r}, but must be 'max' or 'min'")
        if not checkpoint_overhead >= 0:
            raise ConfigError(f"`checkpoint_overhead` is {checkpoint_overhead}, but must be >= 0")
        self._factory, self._client, self.clock, self.metric = trainable, client, clock, metric
        self._dir = os.fspath(checkpoint_dir)
        if "://" not in self._dir:  # workers may run elsewhere than this process's folder
            self._dir = os.path.abspath(self._dir)
        self._seed, self._task_timeout, self._overhead = seed, task_timeout, checkpoint_overhead
        self._group_timeout, self._poll = group_timeout, poll
        self._sign = 1.0 if mode == "max" else -1.0
        self._bests: list[dict] = []  # the last records' weights, oldest first (at most 2)
        self._slots = Slots()
        self._trials: dict[int, _Live] = {}
        self._events: list[Event] = []  # found while executing; handed out by the next advance
        self._queued: list[int] = []  # trials started while too few slots were there
        self._retired: set[str] = set()  # addresses of workers being scaled away
        self._expect: int | None = None  # workers asked for by ScaleCluster, not yet there
        self._count = itertools.count(1)
        self._closed = False
        self._next_poll = 0.0
        self._board = TaskBoard(client, fetch_timeout)
        self._sync_members()
        if not len(self._slots):
            client.wait_for_workers(1, timeout=60)
            self._sync_members()

    # ------------------------------------------------------------------ Runtime protocol

    def workers(self) -> int:
        return len(self._slots)

    def execute(self, ins: Instruction) -> None:
        kind = type(ins)
        if kind is Continue:
            self._continue(ins.trial_id)
        elif kind is Start:
            self._start(ins)
        elif kind is Resize:
            self._resize(ins.trial_id, ins.workers)
        elif kind is Pause or kind is Stop:
            t = self._trials.get(ins.trial_id)
            if t is not None:
                self._vacate(t, save=kind is Pause)
                self._place_queued()
        elif kind is ScaleCluster:
            self._scale(ins.workers)
        else:
            raise ConfigError(f"instruction {ins!r} is unknown to the Dask runtime")

    def advance(self, until: float) -> list[Event]:
        events, self._events = self._events, []
        while True:
            for item in self._board.drain():
                events += self._handle(item)
            now = self.clock.now()
            if not events and now >= self._next_poll:
                events += self._sync_members()
            if not events:
                events += self._check_timeouts(now)
            if events:
                return events
            if now >= until:
                return []
            item = self._board.wait(min(until, self._next_poll, self._next_timeout()) - now)
            if item is not None:
                events += self._handle(item)

    def close(self) -> None:
        """Free every worker (replicas torn down; checkpoints stay). The client stays open."""
        if self._closed:
            return
        self._closed = True
        for t in self._trials.values():
            if t.slots:
                self._vacate(t, save=False)
        self._board.close()

    # ------------------------------------------------------------------ introspection

    def placement(self, trial_id: int) -> list[str]:
        """Names of the workers trial ``trial_id`` holds, rank 0 first."""
        t = self._trials.get(trial_id)
        return [s.name for s in t.slots] if t is not None else []

    def checkpoint(self, trial_id: int) -> dict | None:
        """The last durable checkpoint of trial ``trial_id`` (``url``, ``sha256``, ``epoch``)."""
        t = self._trials.get(trial_id)
        return None if t is None else t.ckpt

    def best_checkpoint(self, at_most: float | None = None) -> dict | None:
        """The best weights kept (``url``, ``sha256``, ``epoch``, ``trial_id``, ``metric``):
        of the best result so far, or of the one before it if its write would have broken
        the checkpoint budget; with ``at_most``, the best whose metric is not better than
        that (the search's best by its deadline: an epoch may end just after it). None if
        there is none."""
        for info in reversed(self._bests):
            if at_most is None or self._sign * info["metric"] <= self._sign * at_most:
                return dict(info)
        return None

    def trial_seed(self, trial_id: int) -> int:
        """``ctx.seed`` of trial ``trial_id``: the runtime's seed and the trial id, mixed."""
        import numpy as np

        return int(np.random.SeedSequence([self._seed, trial_id]).generate_state(1)[0])

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

    # ------------------------------------------------------------------ instructions

    def _start(self, ins: Start) -> None:
        t = self._trials.get(ins.trial_id)
        if t is None:
            t = self._trials[ins.trial_id] = _Live(ins.trial_id, next(self._count))
        elif t.slots or t.phase == _QUEUED:
            self._vacate(t, save=False)
        t.config, t.want, t.t_exec = ins.config, ins.workers, self.clock.now()
        if not ins.restore:
            t.reported, t.ckpt = 0, None
        t.token = next(self._count)
        slots = self._slots.take(t.tid, ins.workers)
        if slots is None:
            t.phase = _QUEUED
            self._queued.append(t.tid)
            return
        self._place(t, slots)

    def _place(
        self, t: _Live, slots: list[Slot], deps: dict | None = None, port: bool = True
    ) -> None:
        """Hold ``slots``; start once ``deps``, the checkpoints the start needs and (for a
        group, with ``port``) the rendezvous on rank 0's host are done."""
        t.slots, t.rendezvous, t.phase = slots, None, _WAIT
        t.deps = dict(deps or {})
        for fut in [t.saving] + [s.save for s in slots]:
            if fut is not None:
                t.deps[fut.key] = fut
        if len(slots) > 1 and port:
            tag, args = ("prep", t.tid, t.token), (t.tid, t.token, None, False, True)
            fut = self._board.submit(_worker.save, *args, slot=slots[0], tag=tag, name="hs-port")
            t.deps[fut.key] = fut
        if not t.deps:
            self._launch(t)

    def _launch(self, t: _Live) -> None:
        t.seq += 1
        ck = t.ckpt
        replay = t.reported - (ck["epoch"] if ck else 0)
        world = len(t.slots)
        for rank, slot in enumerate(t.slots):
            spec = {
                "trial_id": t.tid, "token": t.token, "rank": rank, "world": world,
                "factory": self._factory, "config": t.config, "seed": self.trial_seed(t.tid),
                "replay": replay, "save": self._save_spec(t) if rank == 0 else None,
                "group_timeout": self._group_timeout,
            }  # fmt: skip
            tag = ("epoch", t.tid, t.token, rank, t.seq)
            args = (spec, ck, t.rendezvous, self._board.topic)
            t.futures[rank] = self._board.submit(
                _worker.start, *args, slot=slot, tag=tag, name=f"hs-start-{t.tid}"
            )
        t.outs, t.kind, t.phase, t.t_launch = {}, "start", _RUN, self.clock.now()

    def _continue(self, tid: int) -> None:
        t = self._trials.get(tid)
        if t is None or t.phase != _READY:
            return  # lost meanwhile: the WorkersChanged that says so is already on its way
        t.seq += 1
        for rank, slot in enumerate(t.slots):
            save = self._save_spec(t) if rank == 0 else None
            tag = ("epoch", tid, t.token, rank, t.seq)
            args = (tid, t.token, save, self._board.topic)
            t.futures[rank] = self._board.submit(
                _worker.step, *args, slot=slot, tag=tag, name=f"hs-epoch-{tid}"
            )
        t.outs, t.kind, t.phase = {}, "step", _RUN
        t.t_exec = t.t_launch = self.clock.now()

    def _resize(self, tid: int, workers: int) -> None:
        t = self._trials.get(tid)
        if t is None or t.phase != _READY:
            return
        old, old_token = t.slots, t.token
        new = self._slots.take(tid, workers, keep=old)
        if new is None:  # a worker left unseen: checkpoint, and report the trial lost
            self._vacate(t, save=True)
            self._events.append(WorkersChanged(self.clock.now(), len(self._slots), (tid,)))
            return
        t.token, t.t_exec = next(self._count), self.clock.now()
        self._slots.give_back(s for s in old if s not in new)
        deps = {}
        save = None if t.current else self._save_spec(t)
        if save is not None or workers > 1:
            tag = ("prep", tid, t.token)
            args = (tid, old_token, save, True, workers > 1)
            prep = self._board.submit(
                _worker.save, *args, slot=old[0], tag=tag, name=f"hs-resize-{tid}"
            )
            deps[prep.key] = prep
        else:
            self._release(tid, old_token, old[:1])
        self._release(tid, old_token, old[1:])
        self._place(t, new, deps, port=False)

    def _vacate(self, t: _Live, *, save: bool) -> None:
        """Free the trial's workers: checkpoint first (``save``) unless the last is current."""
        if t.phase == _QUEUED:
            self._queued.remove(t.tid)
        slots, old, ready = t.slots, t.token, t.phase == _READY
        t.token = next(self._count)
        self._board.cancel(t.futures.values())
        t.futures, t.outs, t.deps, t.slots, t.phase = {}, {}, {}, [], _IDLE
        if not slots:
            return
        rest = slots
        if save and ready and not t.current and self._slots.alive(slots[0]):
            t.saving = slots[0].save = self._board.submit(
                _worker.save, t.tid, old, self._save_spec(t), True, False,
                slot=slots[0], tag=("save", t.tid, None), name=f"hs-pause-{t.tid}",
            )  # fmt: skip
            rest = slots[1:]
        self._release(t.tid, old, rest)
        self._slots.give_back(slots)

    def _scale(self, workers: int) -> None:
        cluster = getattr(self._client, "cluster", None)
        now = self.clock.now()
        if cluster is None or not hasattr(cluster, "scale"):
            warn(
                "the cluster cannot be resized from here (attached by address): "
                "ScaleCluster ignored"
            )
            self._events.append(WorkersChanged(now, len(self._slots)))
            return
        if workers >= len(self._slots):
            self._expect = workers
            cluster.scale(workers)
            return
        going = self._slots.free()[::-1][: len(self._slots) - workers]
        for s in going:  # never handed out again, even before the scheduler sees them go
            self._retired.add(s.addr)
            del self._slots.by_name[s.name]
        self._client.loop.add_callback(cluster.scale_down, [s.raw_name for s in going])
        self._events.append(WorkersChanged(now, len(self._slots)))

    # ------------------------------------------------------------------ events

    def _handle(self, item: tuple) -> list[Event]:
        kind = item[0]
        if kind == "f":
            return self._on_done(item[1])
        if kind == "ev":
            return self._on_report(item[1])
        return self._sync_members()

    def _on_done(self, key: str) -> list[Event]:
        entry = self._board.tasks.pop(key, None)
        if entry is None:
            return []
        fut, _slot, tag = entry
        kind = tag[0]
        try:
            if kind == "epoch":
                if key in self._board.heard:  # its event brought the same outcome already
                    self._board.heard.discard(key)
                    return []
                return self._on_epoch(tag, self._board.fetch(fut), fut)
            if kind == "prep" or kind == "save":
                return self._on_prep(self._trials[tag[1]], fut, tag)
            return []
        finally:
            fut.release()  # read: the scheduler may forget it (and never recompute it elsewhere)

    def _on_prep(self, t: _Live, fut, tag: tuple) -> list[Event]:
        out = self._board.fetch(fut)
        if out is not None and out.get("ckpt"):
            self._note_ckpt(t, out["ckpt"])
        if t.saving is fut:
            t.saving = None
        for s in self._slots.by_name.values():
            if s.save is fut:
                s.save = None
        events: list[Event] = []
        for w in [w for w in self._trials.values() if w.phase == _WAIT and fut.key in w.deps]:
            del w.deps[fut.key]
            if tag[0] == "prep" and w is t and tag[2] == t.token:
                if out is not None and not out.get("ok"):
                    events.append(
                        self._fail(t, out.get("error", "checkpoint before resize failed"))
                    )
                    continue
                if out is not None and out.get("rendezvous"):
                    t.rendezvous = tuple(out["rendezvous"])
            if not w.deps:
                if len(w.slots) > 1 and w.rendezvous is None:  # no rendezvous came: ask again
                    self._place(w, w.slots)
                else:
                    self._launch(w)
        return events

    def _on_report(self, msg: dict) -> list[Event]:
        """An epoch task's event: what it is about to return, a hop sooner than its future."""
        entry = self._board.tasks.get(msg.get("key"))
        if entry is None or entry[2][0] != "epoch":
            return []
        self._board.heard.add(msg["key"])
        return self._on_epoch(entry[2], msg["out"], entry[0])

    def _on_epoch(self, tag: tuple, out: dict | None, fut) -> list[Event]:
        _, tid, token, rank, seq = tag
        t = self._trials[tid]
        if token != t.token or seq != t.seq or t.phase != _RUN:
            return []  # an epoch of a placement that was stopped, lost or replaced
        if out is None:
            events = self._sync_members()
            if token != t.token:
                return events  # its worker left: reported as lost
            return events + [self._fail(t, self._board.describe(fut))]
        if not out["ok"]:
            return [self._fail(t, out["error"])]
        t.outs[rank] = out
        if len(t.outs) < len(t.slots):
            return []
        return [self._result(t)]

    def _result(self, t: _Live) -> Event:
        first = t.outs[0]
        info = dict(first["metrics"])
        if self.metric not in info:
            return self._fail(
                t,
                f"step() returned no {self.metric!r} (it returned {', '.join(info) or 'nothing'})",
            )
        try:
            metric = float(info.pop(self.metric))
        except (TypeError, ValueError):
            return self._fail(t, f"step()'s {self.metric!r} is not a number")
        done = bool(info.pop("done", False))
        if first["best"] is not None:
            self._note_best(t.tid, first["best"], metric)
        now = self.clock.now()
        wall = now - t.t_exec
        work = max(o["step"] for o in t.outs.values()) + first["write"]
        seconds, startup = (work, max(0.0, wall - work)) if t.kind == "start" else (wall, 0.0)
        t.reported = first["epoch"]
        if first["ckpt"] is not None:
            self._note_ckpt(t, first["ckpt"])
        t.futures, t.outs, t.phase = {}, {}, _READY
        return Result(
            t.tid, t.reported, metric, now, seconds, len(t.slots), startup, done, info or None
        )

    def _fail(self, t: _Live, error: str) -> TrialFailed:
        epoch = t.reported
        self._vacate(t, save=False)
        self._place_queued()
        return TrialFailed(t.tid, self.clock.now(), error, epoch)

    def _check_timeouts(self, now: float) -> list[Event]:
        if self._task_timeout is None:
            return []
        late = [
            t
            for t in self._trials.values()
            if t.phase == _RUN and now - t.t_launch > self._task_timeout
        ]
        return [
            self._fail(
                t,
                f"an epoch ran past task_timeout={self._task_timeout:g}s "
                f"on {', '.join(self.placement(t.tid))}",
            )
            for t in late
        ]

    def _next_timeout(self) -> float:
        if self._task_timeout is None:
            return float("inf")
        starts = [t.t_launch for t in self._trials.values() if t.phase == _RUN]
        return min(starts, default=float("inf")) + self._task_timeout

    # ------------------------------------------------------------------ membership

    def _sync_members(self) -> list[Event]:
        self._next_poll = self.clock.now() + self._poll
        everyone = self._board.workers()
        if everyone is None:  # the scheduler is unreachable for now: the next poll tries again
            return []
        self._retired &= set(everyone)
        workers = {a: w for a, w in everyone.items() if a not in self._retired}
        gone, added = self._slots.sync(workers)
        for s in added:  # torch's import takes seconds: done before a trial waits for it
            self._board.submit(_worker.warm, slot=s, tag=("warm", None), name="hs-warm")
        if not gone and not added:
            return []
        lost = list(dict.fromkeys(s.tenant for s in gone if s.tenant is not None))
        self._board.cancel_off(workers)
        for tid in lost:
            t = self._trials[tid]
            t.slots = [s for s in t.slots if self._slots.alive(s)]
            self._vacate(t, save=False)
        if self._expect is not None and len(self._slots) >= self._expect:
            self._expect = None
        self._place_queued()
        if self._expect is None:  # no workers on their way: what cannot be placed is lost
            for tid in self._queued:
                self._trials[tid].phase = _IDLE
            lost += self._queued
            self._queued = []
        return [WorkersChanged(self.clock.now(), len(self._slots), tuple(lost))]

    def _place_queued(self) -> None:
        for tid in list(self._queued):
            t = self._trials[tid]
            slots = self._slots.take(tid, t.want)
            if slots is not None:
                self._queued.remove(tid)
                self._place(t, slots)

    # ------------------------------------------------------------------ helpers

    def _release(self, tid: int, token: int, slots) -> None:
        for s in slots:
            if self._slots.alive(s):
                self._board.submit(
                    _worker.release,
                    tid,
                    token,
                    slot=s,
                    tag=("release", tid),
                    name=f"hs-release-{tid}",
                )

    def _note_ckpt(self, t: _Live, info: dict) -> None:
        if t.ckpt is None or info["epoch"] >= t.ckpt["epoch"]:
            t.ckpt = info

    def _save_spec(self, t: _Live) -> dict:
        above = self._sign * self._bests[-1]["metric"] if self._bests else None
        return {
            "dir": self._dir,
            "overhead": self._overhead,
            "keep": t.ckpt["url"] if t.ckpt else None,
            "best": {"metric": self.metric, "sign": self._sign, "above": above},
        }

    def _note_best(self, tid: int, info: dict, metric: float) -> None:
        """Keep a record's weights; drop them if another trial's beat them meanwhile."""
        if self._bests and self._sign * metric <= self._sign * self._bests[-1]["metric"]:
            remove_checkpoint(info["url"])
            return
        self._bests.append({**info, "trial_id": tid, "metric": metric})
        if len(self._bests) > 2:  # two: the last may come after the deadline, unread
            remove_checkpoint(self._bests.pop(0)["url"])

    def __repr__(self) -> str:
        running = sum(t.phase in (_RUN, _READY, _WAIT) for t in self._trials.values())
        return f"DaskRuntime(workers={len(self._slots)}, trials running={running})"
