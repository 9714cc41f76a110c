"""Worker slots are kept by name: a restarted worker (same name, new address) is a new slot."""

from hypersched_nb.runtime._slots import Slots


def _workers(**names_to_addr):
    return {addr: {"name": name, "resources": {}} for name, addr in names_to_addr.items()}


def test_sync_reports_joins_and_leaves():
    slots = Slots()
    gone, added = slots.sync(_workers(a="tcp://h:1", b="tcp://h:2"))
    assert not gone and [s.name for s in added] == ["a", "b"]
    gone, added = slots.sync(_workers(a="tcp://h:1"))
    assert [s.name for s in gone] == ["b"] and not added  # b left
    assert len(slots) == 1


def test_a_restarted_worker_is_a_new_slot():
    slots = Slots()
    slots.sync(_workers(a="tcp://h:1"))
    (first,) = slots.take(7, 1)
    gone, added = slots.sync(_workers(a="tcp://h:9"))
    # same name, new address: the old slot (and the trial on it) is gone, a free one joined
    assert gone == [first] and added[0].addr == "tcp://h:9" and added[0].tenant is None


def test_take_prefers_the_least_recently_freed_slots_and_never_shares():
    slots = Slots()
    slots.sync(_workers(a="tcp://h:1", b="tcp://h:2", c="tcp://h:3"))
    (a,) = slots.take(0, 1)
    assert a.name == "a"  # ties go in join order
    slots.give_back([a])
    (nxt,) = slots.take(1, 1)
    assert nxt.name == "b"  # a was freed last, so a resumed trial moves on
    assert slots.take(2, 3) is None  # two free slots cannot serve three workers
    assert [s.name for s in slots.free()] == ["c", "a"]  # and nothing was taken by the refusal


def test_a_retired_slot_is_never_handed_out_again():
    slots = Slots()
    slots.sync(_workers(a="tcp://h:1", b="tcp://h:2"))
    a = slots.get("a")
    slots.retire([a])
    assert len(slots) == 1 and not slots.alive(a) and slots.get("a") is None
    assert slots.take(0, 2) is None and slots.take(0, 1)[0].name == "b"


def test_a_start_on_a_slot_waits_for_its_last_tenants_checkpoint():
    slots = Slots()
    slots.sync(_workers(a="tcp://h:1"))
    a, checkpoint = slots.get("a"), object()
    slots.saving(a, checkpoint)
    assert a.awaits is checkpoint  # what the next start there waits for
    slots.over(checkpoint)
    assert a.awaits is None


def test_take_keeps_a_trials_own_slots_first():
    slots = Slots()
    slots.sync(_workers(a="tcp://h:1", b="tcp://h:2", c="tcp://h:3"))
    own = slots.take(0, 2)
    grown = slots.take(0, 3, keep=own)
    assert grown[:2] == own and grown[2].name == "c"  # rank 0 stays where it was
    assert {s.tenant for s in grown} == {0}
    assert slots.take(0, 1, keep=grown) == grown[:1]  # a shrink keeps the first ranks
