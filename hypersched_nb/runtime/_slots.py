"""Worker slots, kept by worker *name*: a restarted worker gets a new address, so a slot is
the pair (name, address) and a new address means the old slot died and a new one joined."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

__all__ = ["Slot", "Slots"]


class Slot:
    __slots__ = (
        "addr", "awaits", "freed", "gpu", "memory_limit", "name", "paused", "raw_name", "store",
        "tenant",
    )  # fmt: skip

    def __init__(self, name: str, raw_name, addr: str, gpu: bool, memory_limit: int = 0):
        self.name, self.raw_name, self.addr, self.gpu = name, raw_name, addr, gpu
        self.memory_limit = memory_limit  # bytes its nanny lets it hold (0: no limit)
        self.tenant: int | None = None  # the trial holding it
        self.freed = 0  # when it was last given back (a counter): least recently freed first
        # the task the next start there waits for: its last tenant's pause checkpoint, or its
        # warm-up, which says its store (unknown, a start would be sent its checkpoint's files)
        self.awaits = None
        self.store: str | None = None  # the store_id of its checkpoint folder (None: unknown)
        self.paused = False  # Dask paused it (memory): it runs nothing, and gets no new trial

    def __repr__(self) -> str:
        return f"Slot({self.name!r}, {self.addr}, tenant={self.tenant})"


class Slots:
    """The cluster's workers as slots: which trial holds which, which are free."""

    def __init__(self):
        self._by_name: dict[str, Slot] = {}
        self._tick = 0

    def __len__(self) -> int:
        return len(self._by_name)

    def get(self, name: str) -> Slot | None:
        return self._by_name.get(name)

    def sync(self, workers: Mapping[str, Mapping]) -> tuple[list[Slot], list[Slot]]:
        """Match the scheduler's ``{address: info}``; returns (slots gone, slots added)."""
        seen = {}
        for addr, info in workers.items():
            raw = info.get("name", addr)
            gpu = bool(info.get("resources", {}).get("GPU"))
            seen[str(raw)] = (raw, addr, gpu, int(info.get("memory_limit") or 0))
        gone = [
            s for name, s in self._by_name.items() if name not in seen or seen[name][1] != s.addr
        ]
        for s in gone:
            del self._by_name[s.name]
        added = []
        for name, (raw, addr, gpu, memory) in seen.items():
            if name not in self._by_name:
                self._by_name[name] = slot = Slot(name, raw, addr, gpu, memory)
                added.append(slot)
        for slot in self._by_name.values():
            slot.paused = workers[slot.addr].get("status") == "paused"
        return gone, added

    def paused(self) -> tuple[str, ...]:
        """The names of the workers Dask has paused, sorted."""
        return tuple(sorted(s.name for s in self._by_name.values() if s.paused))

    def all(self) -> list[Slot]:
        return list(self._by_name.values())

    def raw_names(self) -> set:
        """The names the cluster gave the workers here (its spec's keys)."""
        return {s.raw_name for s in self._by_name.values()}

    def free(self) -> list[Slot]:
        """Free slots, least recently given back first (so a resumed trial moves on); a
        worker Dask has paused is not free."""
        return sorted(
            (s for s in self._by_name.values() if s.tenant is None and not s.paused),
            key=lambda s: s.freed,
        )

    def take(self, tid: int, count: int, keep: Iterable[Slot] = ()) -> list[Slot] | None:
        """``count`` slots for trial ``tid``: those in ``keep`` first (in order), then free
        ones; None (and nothing taken) when there are too few."""
        mine = [s for s in keep if self._by_name.get(s.name) is s][:count]
        extra = self.free()[: count - len(mine)]
        if len(mine) + len(extra) < count:
            return None
        for s in extra:
            s.tenant = tid
        return mine + extra

    def give_back(self, slots: Iterable[Slot]) -> None:
        for s in slots:
            self._tick += 1
            s.tenant, s.freed = None, self._tick

    def alive(self, slot: Slot) -> bool:
        return self._by_name.get(slot.name) is slot

    def retire(self, slots: Iterable[Slot]) -> None:
        """Forget ``slots`` now: workers on their way out are never handed out again."""
        for s in slots:
            del self._by_name[s.name]

    def saving(self, slot: Slot, fut) -> None:
        """``slot``'s last tenant is writing its checkpoint in ``fut``: the next start there
        waits for it."""
        slot.awaits = fut

    def warming(self, slot: Slot, fut) -> None:
        """``slot``'s new worker is warmed up in ``fut``, which says its store: the first
        start there waits for it (it would wait behind it on the worker anyway)."""
        slot.awaits = fut

    def over(self, fut) -> None:
        """Task ``fut`` (a checkpoint, a warm-up) is over: no start waits for it any more."""
        for s in self._by_name.values():
            if s.awaits is fut:
                s.awaits = None
