"""The Dask runtime's workers as :class:`Members` follows them: a worker its nanny is
killing for its memory, found by a step_timeout before the worker has left; a worker that
leaves while it reads a checkpoint for another worker's start."""

from types import SimpleNamespace

from hypersched_nb.core.events import TrialFailed, TrialHalted
from hypersched_nb.runtime._live import LiveTrial, Phase
from hypersched_nb.runtime._members import Members
from hypersched_nb.runtime._slots import Slots

GIB = 2**30


class Board:
    """Just enough of the task board: the memory restarts the scheduler has heard of, and
    the workers it has now."""

    def __init__(self, restarts, workers=None):
        self.restarts, self.everyone = restarts, workers

    def memory_restarts(self, addresses, *, within=1.0):
        return {a: rss for a, rss in self.restarts.items() if a in addresses}

    def workers(self):
        return self.everyone

    def cancel_off(self, workers):
        pass

    def submit(self, fn, *args, slot, tag, name):
        return SimpleNamespace(key=f"{name} on {slot.name}")


class Placements:
    """Just enough of the placements: the trials, vacated as the runtime does."""

    def __init__(self, *trials):
        self.trials = {t.tid: t for t in trials}

    def vacate(self, t, *, save):
        t.vacate(token=t.token + 1)

    def place_queued(self):
        pass

    def drop_queued(self):
        return []


def members_with(trial: LiveTrial, restarts: dict[str, int]):
    slots = Slots()
    slots.sync({"tcp://w:1": {"name": 0, "memory_limit": 3 * GIB}, "tcp://w:2": {"name": 1}})
    trial.slots = slots.take(trial.tid, 1)
    trial.phase = Phase.TRAINING
    placements = SimpleNamespace(trials={trial.tid: trial})
    clock = SimpleNamespace(now=lambda: 0.0)
    members = Members(
        None, clock, Board(restarts), slots, placements, poll=5.0, directory="/x"
    )  # fmt: skip
    return members, slots


def test_a_trial_whose_worker_is_being_killed_for_memory_is_named_for_that_not_its_timeout():
    t = LiveTrial(0, 1, reported=1)
    members, slots = members_with(t, {"tcp://w:1": int(2.85 * GIB)})
    halted = members.dying_for_memory(t, 70.0)
    assert type(halted) is TrialHalted and halted.reason == (
        "paused: its worker 0 held 2.85 GiB of its 3.00 GiB memory limit and was restarted"
    )
    assert [s.name for s in slots.all()] == ["1"]  # never handed out again: it is restarting
    again = LiveTrial(0, 2, reported=1)
    again.memory_kills = 1
    members, _ = members_with(again, {"tcp://w:1": int(2.85 * GIB)})
    failed = members.dying_for_memory(again, 140.0)
    assert type(failed) is TrialFailed and "a second time" in failed.error


def test_a_trial_whose_workers_were_not_killed_for_memory_is_left_to_its_timeout():
    t = LiveTrial(0, 1, reported=1)
    members, slots = members_with(t, {"tcp://w:9": GIB})  # another worker's, long ago
    assert members.dying_for_memory(t, 70.0) is None
    assert len(slots) == 2 and t.slots[0].tenant == 0


WORKERS = {"tcp://w:1": {"name": 0}, "tcp://w:2": {"name": 1}, "tcp://w:3": {"name": 2}}


def starting_on(slots: Slots, tid: int, *, reading_on: str) -> LiveTrial:
    """A trial placed on a free worker whose start waits for its checkpoint, read on
    the worker at ``reading_on``."""
    t = LiveTrial(tid, 1, reported=3)
    t.place(slots.take(tid, 1))
    t.launch(lambda rank, slot, seq: object(), SimpleNamespace(now=lambda: 0.0),
             sources=frozenset({reading_on}))  # fmt: skip
    return t


def test_a_start_whose_checkpoint_was_read_on_a_worker_that_left_is_paused_with_that_reason():
    slots = Slots()
    slots.sync(WORKERS)
    slots.take(9, 1)  # worker 0 is busy: the trial starts on worker 1, its read on worker 2
    t = starting_on(slots, 0, reading_on="tcp://w:3")
    board = Board({}, {a: w for a, w in WORKERS.items() if a != "tcp://w:3"})
    clock = SimpleNamespace(now=lambda: 12.0)
    members = Members(None, clock, board, slots, Placements(t), poll=5.0, directory="/x")
    changed, halted = members.sync()
    assert changed.workers == 2 and changed.lost == ()  # its own worker is still there
    assert halted == TrialHalted(
        0, 12.0, "paused: worker 2, which read its checkpoint for its start, left first"
    )
    assert t.phase is Phase.IDLE and t.slots == []


def test_a_resize_whose_rewind_waits_for_a_read_on_a_worker_that_left_is_paused_too():
    slots = Slots()
    slots.sync(WORKERS)
    t = starting_on(slots, 0, reading_on="tcp://w:3")
    t.report(4, step=0.1, now=1.0, last=False)
    t.resize(t.slots, token=2, now=2.0)  # ran ahead: rebuilt from a checkpoint read on w:3
    t.wait_for(SimpleNamespace(key="hs-resize-0"), sources=frozenset({"tcp://w:3"}))
    board = Board({}, {a: w for a, w in WORKERS.items() if a != "tcp://w:3"})
    clock = SimpleNamespace(now=lambda: 12.0)
    members = Members(None, clock, board, slots, Placements(t), poll=5.0, directory="/x")
    _, halted = members.sync()
    assert halted.reason == "paused: worker 2, which read its checkpoint for its start, left first"
    assert t.phase is Phase.IDLE


def test_a_start_that_has_reported_an_epoch_no_longer_needs_the_worker_that_read_for_it():
    slots = Slots()
    slots.sync(WORKERS)
    t = starting_on(slots, 0, reading_on="tcp://w:3")
    t.report(4, step=0.1, now=1.0, last=False)
    board = Board({}, {a: w for a, w in WORKERS.items() if a != "tcp://w:3"})
    clock = SimpleNamespace(now=lambda: 12.0)
    members = Members(None, clock, board, slots, Placements(t), poll=5.0, directory="/x")
    assert [type(e).__name__ for e in members.sync()] == ["WorkersChanged"]
    assert t.phase is Phase.READY


def test_a_smaller_cluster_keeps_the_free_worker_that_reads_for_a_start():
    slots = Slots()
    slots.sync(WORKERS)
    busy = slots.take(9, 1)[0]
    t = starting_on(slots, 0, reading_on="tcp://w:2")  # on worker 1: worker 2 stays free
    slots.give_back([busy])  # worker 0, freed last, would go first
    scaled = []
    cluster = SimpleNamespace(
        scale=None, scale_down=scaled.extend, worker_spec={}
    )  # fmt: skip
    client = SimpleNamespace(cluster=cluster, loop=SimpleNamespace(add_callback=lambda f, a: f(a)))
    clock = SimpleNamespace(now=lambda: 0.0)
    members = Members(client, clock, Board({}), slots, Placements(t), poll=5.0, directory="/x")
    members.scale(2)
    assert scaled == [0]  # worker 0 went, not worker 2, though it was freed before
    assert {s.name for s in slots.all()} == {"1", "2"}


def test_a_start_on_a_worker_that_just_joined_waits_for_its_warm_up_which_says_its_disk():
    """Until its warm-up says which store its checkpoint folder is, a new worker would be
    sent the checkpoint's files read on another worker (the one a shrink may retire)."""
    slots = Slots()
    slots.sync({"tcp://w:1": {"name": 0}})
    board = Board({}, WORKERS)
    clock = SimpleNamespace(now=lambda: 3.0)
    members = Members(None, clock, board, slots, Placements(), poll=5.0, directory="/x")
    members.sync()
    t = LiveTrial(0, 1, reported=2)
    t.place([slots.get("2")])
    assert set(t.deps) == {"hs-warm on 2"}
    slots.over(t.deps["hs-warm on 2"])
    assert slots.get("2").awaits is None


def test_workers_named_outside_the_spec_are_used_and_one_the_spec_dropped_is_not():
    """An ``SSHCluster`` names its workers by their addresses, not by its spec's keys; a
    ``LocalCluster`` shrinking while a worker starts may see that worker register anyway."""
    cluster = SimpleNamespace(worker_spec={0: {}, 1: {}, 2: {}}, plan={0, 1, 2})
    client = SimpleNamespace(cluster=cluster)
    board = Board({}, {"tcp://h:1": {"name": "tcp://h:1"}, "tcp://w:1": {"name": 0}})
    slots, clock = Slots(), SimpleNamespace(now=lambda: 0.0)
    members = Members(client, clock, board, slots, Placements(), poll=5.0, directory="/x")
    members.sync()
    cluster.worker_spec, cluster.plan = {0: {}, 1: {}}, {0, 1}  # worker 2 let go, still starting
    board.everyone = {**board.everyone, "tcp://w:3": {"name": 2}}  # then it registers
    members.sync()
    assert {s.name for s in slots.all()} == {"tcp://h:1", "0"}


def test_a_cluster_in_its_own_process_is_asked_its_spec_and_plan_once_per_look():
    """The local cluster runs in its own process: each question is a round trip, and the
    two names it answers together are read in one."""
    asked = []

    class Hosted:
        def spec_and_plan(self):
            asked.append("names")
            return spec, plan

    spec, plan = {0, 1, 2}, {0, 1, 2}
    client = SimpleNamespace(cluster=Hosted())
    board = Board({}, {"tcp://w:1": {"name": 0}, "tcp://w:3": {"name": 2}})
    slots, clock = Slots(), SimpleNamespace(now=lambda: 0.0)
    members = Members(client, clock, board, slots, Placements(), poll=5.0, directory="/x")
    members.sync()
    assert asked == ["names"]
    spec, plan = {0, 1}, {0, 1}  # worker 2 let go
    members.sync()
    assert asked == ["names", "names"] and {s.name for s in slots.all()} == {"0"}
