"""The Dask runtime's workers as :class:`Members` follows them: a worker its nanny is
killing for its memory, found by a step_timeout before the worker has left."""

from types import SimpleNamespace

from hypersched_nb.core.events import TrialFailed, TrialHalted
from hypersched_nb.runtime._live import LiveTrial, Phase
from hypersched_nb.runtime._members import Members
from hypersched_nb.runtime._slots import Slots

GIB = 2**30


class Board:
    """Just enough of the task board: the memory restarts the scheduler has heard of."""

    def __init__(self, restarts):
        self.restarts = restarts

    def memory_restarts(self, addresses, *, within=1.0):
        return {a: rss for a, rss in self.restarts.items() if a in addresses}


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
