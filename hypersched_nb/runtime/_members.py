"""The Dask runtime's workers: who is in the cluster, scaling it, and workers lost for memory.

The scheduler's ``add-worker``/``remove-worker`` events (and a poll every ``poll`` seconds,
should one be missed) say when to look again. A worker that leaves takes its trial with it:
the tasks pinned to it are cancelled and the trial is reported in ``WorkersChanged.lost``,
unless its nanny restarted it for exceeding its memory limit: that trial is halted the first
time and failed the second (it would kill every worker in turn). A cluster resized from
here (``ScaleCluster``) gives up its free workers, most recently freed first (those reading
a checkpoint for another's start last), and never hands out those on their way out. A start
whose checkpoint was being read on a worker that left is paused, with that reason, and
resumes as a paused trial does (Dask would wait for ever to read it there again).
"""

from __future__ import annotations

import threading

from hypersched_nb.core import events
from hypersched_nb.core.events import Event
from hypersched_nb.errors import warn
from hypersched_nb.runtime import _worker
from hypersched_nb.runtime._board import TaskBoard, WarmTag
from hypersched_nb.runtime._placements import Placements
from hypersched_nb.runtime._slots import Slot, Slots

__all__ = ["Members"]

_RESTART_TIMEOUT = 30.0  # seconds a nanny has to replace its worker's process


class Members:
    """Follows the workers of ``client``'s cluster into ``slots``; the trials of
    ``placements`` that lose one are vacated. ``directory`` is warmed on each new worker."""

    def __init__(
        self, client, clock, board: TaskBoard, slots: Slots, placements: Placements, *,
        poll: float, directory: str,
    ):  # fmt: skip
        self._client, self._clock, self._board, self._slots = client, clock, board, slots
        self._placements, self._poll, self._directory = placements, poll, directory
        self._retired: set[str] = set()  # addresses of workers being scaled away
        self._expect: int | None = None  # workers asked for by ScaleCluster, not yet there
        self._paused: tuple[str, ...] = ()  # the workers Dask has paused, as last said
        self._restarts: list[threading.Thread] = []  # workers' processes being replaced
        self._specified: set = set()  # every worker name the cluster's spec has held
        self.next_poll = 0.0

    def sync(self) -> list[Event]:
        """Match the scheduler's workers: the WorkersChanged (and trials halted or failed
        for memory) if they changed, else nothing."""
        self.next_poll = self._clock.now() + self._poll
        everyone = self._board.workers()
        if everyone is None:  # the scheduler is unreachable for now: the next poll tries again
            return []
        self._retired &= set(everyone)
        dropped = self._dropped()
        workers = {
            a: w for a, w in everyone.items()
            if a not in self._retired and w.get("name") not in dropped
        }  # fmt: skip
        gone, added = self._slots.sync(workers)
        for s in added:  # torch's import takes seconds: done before a trial waits for it
            fut = self._board.submit(
                _worker.warm, self._directory, slot=s, tag=WarmTag(), name="hs-warm"
            )  # fmt: skip
            self._slots.warming(s, fut)
        paused, was = self._slots.paused(), self._paused
        self._paused = paused
        if not gone and not added:
            if paused == was:
                return []
            self._placements.place_queued()  # a worker resumed may take a queued trial
            return [events.WorkersChanged(self._clock.now(), len(self._slots), paused=paused)]
        held = {s.addr: (s.name, s.memory_limit, s.tenant) for s in gone if s.tenant is not None}
        lost = list(dict.fromkeys(tid for _, _, tid in held.values()))
        self._board.cancel_off(workers)
        trials = self._placements.trials
        for tid in lost:  # what is left of its workers is freed (no task goes to the gone)
            self._placements.vacate(trials[tid], save=False)
        stranded = self._stranded({s.addr: s.name for s in gone})
        if self._expect is not None and len(self._slots) >= self._expect:
            self._expect = None
        self._placements.place_queued()
        if self._expect is None:  # no workers on their way: what cannot be placed is lost
            lost += self._placements.drop_queued()
        now = self._clock.now()
        killed = self._killed_for_memory(held, now)
        lost = [tid for tid in lost if tid not in killed]
        changed = events.WorkersChanged(now, len(self._slots), tuple(lost), paused)
        return [changed, *killed.values(), *stranded]

    def _stranded(self, gone: dict[str, str]) -> list[Event]:
        """The trials whose start waited for a checkpoint read on a worker of ``gone``
        (address -> name), which left before the read was moved: taken off their workers
        (Dask would wait for ever to compute that read again), halted with that reason."""
        out = []
        for t in self._placements.trials.values():
            if t.stranded_by(set(gone)):
                name = gone[next(iter(t.sources & set(gone)))]
                self._placements.vacate(t, save=False)
                why = f"worker {name}, which read its checkpoint for its start, left first"
                out.append(events.TrialHalted(t.tid, self._clock.now(), f"paused: {why}"))
        return out

    def scale(self, workers: int) -> list[Event]:
        """Ask the cluster for ``workers`` workers: fewer go at once (free ones, most
        recently freed first); more are said by :meth:`sync` when they come."""
        cluster = getattr(self._client, "cluster", None)
        now = self._clock.now()
        if cluster is None or not hasattr(cluster, "scale"):
            warn(
                "the cluster cannot be resized from here (attached by address): "
                "ScaleCluster ignored"
            )
            return [events.WorkersChanged(now, len(self._slots), paused=self._slots.paused())]
        if workers >= len(self._slots):
            self._expect = workers if workers > len(self._slots) else None
            cluster.scale(workers)  # fewer than asked before: those not there yet go first
            self._planned()  # the names just asked for, known before any of them registers
            return []
        self._expect = None
        reading = {a for t in self._placements.trials.values() for a in t.sources}
        free = sorted(self._slots.free()[::-1], key=lambda s: s.addr in reading)
        going = free[: len(self._slots) - workers]  # never one a start waits on, if it can
        self._retired.update(s.addr for s in going)
        self._slots.retire(going)  # never handed out again, even before the scheduler sees
        names = [s.raw_name for s in going] + self._on_their_way(cluster)
        self._client.loop.add_callback(cluster.scale_down, names)
        return [events.WorkersChanged(now, len(self._slots), paused=self._slots.paused())]

    def restart(self, slots: list[Slot]) -> None:
        """Replace the worker processes of ``slots`` (a ``step()`` stuck in them cannot be
        stopped otherwise): they are never handed out again, and each comes back, under
        its name and a new address, as a new slot (:meth:`sync`). Does not wait."""
        addrs = [s.addr for s in slots if self._slots.alive(s)]
        self._retired.update(addrs)
        self._slots.retire([s for s in slots if self._slots.alive(s)])
        if addrs:  # on a thread: the scheduler answers once the new processes joined
            thread = threading.Thread(
                target=_restart, args=(self._client, addrs), name="hypersched-restart", daemon=True
            )  # fmt: skip
            thread.start()
            self._restarts.append(thread)

    def settle(self) -> None:
        """Wait for the workers being restarted to be back (each restart is bounded): once
        the search has ended, its cluster is whole again."""
        for thread in self._restarts:
            thread.join(_RESTART_TIMEOUT + 5.0)
        self._restarts = []

    def dying_for_memory(self, t, now: float) -> Event | None:
        """If the nanny of a worker of trial ``t`` is killing it for its memory (its epoch
        ran past step_timeout meanwhile: a loaded machine can take seconds to end the
        process), the trial's TrialHalted or TrialFailed for that, its workers never handed
        out again (the nanny brings them back, as new slots); else None."""
        held = {s.addr: (s.name, s.memory_limit, t.tid) for s in t.slots if self._slots.alive(s)}
        killed = self._killed_for_memory(held, now, within=0.0)
        if not killed:
            return None
        self._retired.update(held)
        self._slots.retire([s for s in t.slots if self._slots.alive(s)])
        return killed[t.tid]

    def _killed_for_memory(
        self, held: dict[str, tuple], now: float, *, within: float = 1.0
    ) -> dict[int, Event]:
        """Of the trials in ``held`` (the address of a worker gone -> its name, memory
        limit and tenant), those whose worker its nanny restarted for exceeding its memory
        limit (its notice awaited up to ``within`` seconds): halted the first time, failed
        the second (it would kill every worker in turn)."""
        out: dict[int, Event] = {}
        restarts = self._board.memory_restarts(held, within=within) if held else {}
        for addr, rss in restarts.items():
            name, limit, tid = held[addr]
            if tid in out:
                continue  # one of its other workers said so already
            t = self._placements.trials[tid]
            why = f"its worker {name} held {_gib(rss)} of its {_gib(limit)} memory limit and was restarted"
            if t.killed_for_memory() == 1:
                out[tid] = events.TrialHalted(tid, now, f"paused: {why}")
            else:
                out[tid] = events.TrialFailed(
                    tid, now, f"{why}, a second time: give each worker more memory "
                    "(LocalCluster's memory_limit=) or make the trial smaller", t.reported,
                )  # fmt: skip
        return out

    def _dropped(self) -> set:
        """The names of workers the cluster's spec held and no longer plans to have: one
        it is closing may still register with the scheduler (a scale-down races its
        start), and is never handed out. A worker whose name was never in the spec (an
        ``SSHCluster``'s are their addresses) is not the spec's to drop."""
        planned = self._planned()
        return set() if planned is None else self._specified - planned

    def _planned(self) -> set | None:
        """The names of the workers the cluster plans to have, every name its spec holds
        now kept in ``_specified`` (None: a cluster without a spec, or one whose own thread
        kept changing it while read)."""
        cluster = getattr(self._client, "cluster", None)
        read = _spec_and_plan(cluster)
        if read is None:
            return None
        spec, planned = read
        self._specified |= planned | spec
        return planned

    def _on_their_way(self, cluster) -> list:
        """Workers the cluster is still starting, asked for by an earlier ScaleCluster: a
        smaller size cancels them (a ``LocalCluster`` keeps its target and would start
        them, to be billed until the next shrink)."""
        here = self._slots.raw_names()
        return [name for name in list(getattr(cluster, "worker_spec", {})) if name not in here]


def _spec_and_plan(cluster) -> tuple[set, set] | None:
    """(the names in ``cluster``'s worker spec, those it plans to have); one request to a
    cluster in its own process, two reads of a ``SpecCluster`` here (tried again if its
    thread changes them meanwhile); None for a cluster without them."""
    if hasattr(cluster, "spec_and_plan"):
        return cluster.spec_and_plan()
    if not (hasattr(cluster, "worker_spec") and hasattr(cluster, "plan")):
        return None
    for _ in range(3):
        try:
            return set(cluster.worker_spec), set(cluster.plan)
        except RuntimeError:  # changed size during iteration
            continue
    return None


def _restart(client, addrs: list[str]) -> None:
    try:
        client.restart_workers(addrs, timeout=_RESTART_TIMEOUT, raise_for_error=False)
    except Exception as exc:  # noqa: BLE001 - no nanny, or the scheduler gone: said, not raised
        warn(f"the workers at {', '.join(addrs)} could not be restarted ({exc})")


def _gib(size: int) -> str:
    return f"{size / 2**30:.2f} GiB" if size else "unlimited"
