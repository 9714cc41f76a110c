"""A live trial's phases in the Dask runtime: one table (TRANSITIONS) says every legal move,
and nothing else moves.

Specified here: the exact set of legal moves, where each leads, the one-line message of an
illegal move ("trial 7: can't continue when phase=TRAINING"), that an illegal move leaves
the trial where it was, what a new trial's record holds, how many epochs a batch holds, and
what each move does to the record (the methods of LiveTrial named for the moves).
"""

from __future__ import annotations

import pytest

from hypersched_nb.errors import ConfigError, InvalidTransition
from hypersched_nb.runtime import DaskRuntime
from hypersched_nb.runtime._live import TRANSITIONS, LiveTrial, Phase, batch_size, move
from hypersched_nb.runtime._messages import Epoch, Failed
from hypersched_nb.runtime._slots import Slot
from hypersched_nb.runtime.checkpoint import Checkpoint

IDLE, QUEUED, PREPARING, TRAINING, READY, AHEAD = (
    Phase.IDLE,
    Phase.QUEUED,
    Phase.PREPARING,
    Phase.TRAINING,
    Phase.READY,
    Phase.AHEAD,
)

#: every legal move, written out: (from, move) -> to
LEGAL = {
    (IDLE, "queue"): QUEUED,  # started while too few workers are free
    (IDLE, "place"): PREPARING,  # started on free workers: wait for checkpoints and a port
    (IDLE, "vacate"): IDLE,  # paused or stopped while holding nothing
    (QUEUED, "place"): PREPARING,  # workers came free
    (QUEUED, "vacate"): IDLE,  # stopped, or no workers are on their way: reported lost
    (PREPARING, "launch"): TRAINING,  # all it waited for is done: build, train an epoch
    (PREPARING, "vacate"): IDLE,  # stopped, failed, or a worker left
    (TRAINING, "report"): READY,  # every rank answered: a Result; its task is over
    (TRAINING, "report_ahead"): AHEAD,  # an epoch of a batch that trains on: a Result
    (TRAINING, "vacate"): IDLE,  # failed, timed out, or a worker left
    (READY, "continue"): TRAINING,  # one more epoch where it is
    (READY, "resize"): PREPARING,  # hand over to another set of workers
    (READY, "vacate"): IDLE,  # paused (checkpointed first) or stopped
    (AHEAD, "continue"): TRAINING,  # its batch trains on: no task sent
    (AHEAD, "resize"): PREPARING,  # the batch halted, handed over with the known checkpoint
    (AHEAD, "vacate"): IDLE,  # the batch halted; paused from the known checkpoint, or stopped
}
MOVES = sorted({m for _, m in LEGAL})


def trial_in(phase: Phase, tid: int = 7) -> LiveTrial:
    trial = LiveTrial(tid, token=1)
    trial.phase = phase
    return trial


def test_the_table_holds_exactly_the_legal_moves():
    table = {(p, m): new for p, moves in TRANSITIONS.items() for m, new in moves.items()}
    assert table == LEGAL  # no move is missing and none is added
    assert set(TRANSITIONS) == set(Phase)  # every phase has a row


@pytest.mark.parametrize(
    ("phase", "name"), sorted(LEGAL, key=str), ids=lambda x: getattr(x, "name", x)
)
def test_a_legal_move_lands_where_the_table_says(phase, name):
    trial = trial_in(phase)
    assert move(trial, name) is LEGAL[phase, name]
    assert trial.phase is LEGAL[phase, name]


@pytest.mark.parametrize("phase", list(Phase), ids=lambda p: p.name)
def test_every_other_move_is_refused_with_a_one_line_message(phase):
    for name in MOVES:
        if (phase, name) in LEGAL:
            continue
        trial = trial_in(phase)
        with pytest.raises(InvalidTransition) as info:
            move(trial, name)
        # the message names the trial, the move and the phase, on one line
        assert str(info.value) == f"trial 7: can't {name} when phase={phase.name}"
        assert trial.phase is phase  # an illegal move leaves the trial where it was


def test_a_new_trial_holds_nothing_and_knows_no_checkpoint():
    trial = LiveTrial(3, token=5)
    assert trial.phase is Phase.IDLE and trial.slots == [] and trial.futures == {}
    assert trial.ckpt is None and trial.reported == 0 and not trial.current


def test_only_a_newer_checkpoint_replaces_the_one_known():
    trial = LiveTrial(3, token=5)
    older, newer = Checkpoint("a", "0", 1, epoch=2), Checkpoint("b", "1", 1, epoch=4)
    trial.note_ckpt(newer)
    trial.note_ckpt(older)  # a pause's checkpoint that finished after a later epoch's
    assert trial.ckpt is newer
    trial.reported = 4
    assert trial.current  # it holds every epoch reported: nothing to write before a move


@pytest.mark.parametrize(
    ("step", "epochs"),
    [
        (1.0, 1),  # one-second epochs: one per task, as without batches
        (0.999, 1),  # not two whole epochs in a second
        (0.1, 10),  # 0.1 s: ten per one-second batch
        (0.3, 3),
        (0.001, 64),  # a thousand would fit: capped
        (5.0, 1),  # longer than a batch: still one
        (0.0, 1),  # no measure yet (or a step too short to time): one
    ],
)
def test_a_batch_holds_the_whole_steps_that_fit_its_seconds_between_1_and_the_cap(step, epochs):
    assert batch_size(step, seconds=1.0, most=64) == epochs


def test_the_next_epoch_expected_skips_those_heard_while_the_driver_decides():
    trial = LiveTrial(3, token=5)
    trial.reported = 4
    assert trial.expected == 5
    trial.early.append(object())  # epoch 5 heard while AHEAD, not reported yet
    assert trial.expected == 6


def test_a_batch_seconds_that_is_not_positive_is_refused_in_one_line():
    with pytest.raises(ConfigError) as info:
        DaskRuntime(object, client=None, clock=None, metric="loss", checkpoint_dir=".",
                    batch_seconds=0)  # fmt: skip
    assert str(info.value) == "`batch_seconds` is 0, but must be > 0"


# ---------------------------------------------------------------------- each move's effects


class Task:
    """A stand-in for a Dask future: its key is all a live trial keeps of it."""

    def __init__(self, key: str):
        self.key = key


class Clock:
    def __init__(self, now: float = 10.0):
        self.t = now

    def now(self) -> float:
        return self.t


def slots(*names: str) -> list[Slot]:
    return [Slot(n, n, f"tcp://h:{i}", gpu=False) for i, n in enumerate(names)]


def sender(log: list):
    """``send`` for launch/proceed: records (rank, slot name, seq), returns a task."""

    def send(rank, slot, seq):
        log.append((rank, slot.name, seq))
        return Task(f"{slot.name}-{seq}")

    return send


def training_trial(n_slots: int = 1, epochs: int = 1) -> LiveTrial:
    trial = LiveTrial(7, token=1)
    trial.start({"lr": 0.1}, n_slots, token=2, now=1.0, restore=False)
    trial.place(slots(*"abcd"[:n_slots]))
    trial.launch(sender([]), Clock(2.0))
    if epochs > 1:  # a batch: reported once, then continued with a task of `epochs` epochs
        trial.report(1, step=0.1, now=3.0, last=False)
        trial.proceed(sender([]), Clock(3.0), epochs=epochs)
    return trial


def test_a_start_says_what_trains_and_starts_over_unless_restored():
    trial = LiveTrial(7, token=1, reported=4, ckpt=Checkpoint("a", "0", 1, epoch=4))
    trial.start({"lr": 0.1}, 2, token=9, now=5.0, restore=True)
    assert (trial.config, trial.want, trial.token, trial.t_exec) == ({"lr": 0.1}, 2, 9, 5.0)
    assert trial.reported == 4 and trial.ckpt is not None  # resumes where it was
    trial.start({"lr": 0.2}, 1, token=10, now=6.0, restore=False)
    assert trial.reported == 0 and trial.ckpt is None


def test_a_start_on_a_trial_that_holds_workers_is_refused():
    trial = training_trial()
    with pytest.raises(InvalidTransition, match="trial 7: can't start when phase=TRAINING"):
        trial.start({}, 1, token=9, now=5.0, restore=False)
    assert trial.token == 2  # untouched


def test_a_placed_trial_waits_for_pause_checkpoints_but_never_for_copies_home():
    trial, (a, b) = LiveTrial(7, token=1), slots("a", "b")
    b.awaits = Task("b's last tenant's pause")
    trial.fetching_home(Task("copy home"))  # in the background: nothing waits for it
    trial.place([a, b])
    assert trial.phase is PREPARING and trial.slots == [a, b] and trial.rendezvous is None
    assert set(trial.deps) == {"b's last tenant's pause"}
    trial.fetching_home(Task("another copy home"))
    assert set(trial.deps) == {"b's last tenant's pause"}
    trial.wait_for(Task("port"))
    assert not trial.unblocked(Task("port"))  # still waits for the pause
    assert not trial.unblocked(Task("unrelated"))
    assert trial.unblocked(Task("b's last tenant's pause"))  # the last it waited for


def test_a_start_restores_from_the_newest_checkpoint_known_at_launch_not_at_placing():
    """Paused after epoch 4 while the pause's checkpoint was being written: placed knowing
    only epoch 3's, it launches once the pause's is in, from epoch 4's."""
    ckpt = {e: Checkpoint(f"epoch-{e}", "0", 1, epoch=e) for e in (3, 4)}
    trial = LiveTrial(7, token=1, reported=4, ckpt=ckpt[3])
    pause = Task("pause's checkpoint")
    trial.vacate(token=2, saving=pause)
    trial.start({}, 1, token=3, now=5.0, restore=True)
    trial.place(slots("c"))
    assert set(trial.deps) == {pause.key} and trial.ckpt is ckpt[3]
    trial.saved(pause)
    trial.note_ckpt(ckpt[4])  # the pause's, noted as its task returned
    assert trial.unblocked(pause)
    trial.launch(sender([]), Clock(6.0))
    assert trial.restored is ckpt[4]


def test_a_trial_falls_back_only_to_an_older_checkpoint():
    ckpt = {e: Checkpoint(f"epoch-{e}", "0", 1, epoch=e) for e in (3, 4)}
    trial = LiveTrial(7, token=1, reported=4, ckpt=ckpt[3])
    with pytest.raises(InvalidTransition, match="trial 7: can't fall forward"):
        trial.fall_back(ckpt[4])
    trial.fall_back(None)  # out of reach, and no copy: trained again from the start
    assert trial.ckpt is None


def test_a_launch_sends_every_rank_its_start_and_numbers_the_task():
    trial, log = LiveTrial(7, token=1), []
    trial.place(slots("a", "b"))
    trial.launch(sender(log), Clock(4.0))
    assert log == [(0, "a", 1), (1, "b", 1)]
    assert trial.phase is TRAINING and trial.starting and (trial.batch, trial.left) == (1, 1)
    assert set(trial.futures) == {0, 1} and trial.t_launch == 4.0


@pytest.mark.parametrize(
    ("move_name", "call"),
    [
        ("launch", lambda t: t.launch(sender([]), Clock())),
        ("continue", lambda t: t.proceed(sender([]), Clock(), epochs=1)),
        ("report", lambda t: t.report(1, step=0.1, now=1.0, last=True)),
        ("resize", lambda t: t.resize(slots("z"), token=9, now=1.0)),
    ],
)
def test_a_move_method_refuses_an_illegal_move_and_changes_nothing(move_name, call):
    trial = LiveTrial(7, token=1)  # IDLE: none of these is legal
    before = {name: getattr(trial, name) for name in LiveTrial.__slots__}
    with pytest.raises(InvalidTransition) as info:
        call(trial)
    assert str(info.value) == f"trial 7: can't {move_name} when phase=IDLE"
    assert {name: getattr(trial, name) for name in LiveTrial.__slots__} == before


def test_a_report_of_a_batch_goes_ahead_until_its_last_epoch():
    trial = training_trial(epochs=3)
    assert trial.left == 3 and trial.t_exec == 3.0
    epoch = trial.hear(0, Epoch(2, {"loss": 1.0}, 0.1), now=3.1)
    assert epoch is not None
    assert trial.report(2, step=0.1, now=3.1, last=False) is True
    assert trial.phase is AHEAD and trial.left == 2 and trial.futures  # the batch trains on
    trial.proceed(sender(sent := []), Clock(3.2), epochs=5)
    assert sent == [] and trial.phase is TRAINING  # no task: the batch goes on
    trial.hear(0, Epoch(3, {"loss": 0.9}, 0.1), now=3.3)
    assert trial.report(3, step=0.2, now=3.3, last=True) is False  # done: its last
    assert trial.phase is READY and trial.left == 0 and trial.futures == {}
    assert (trial.reported, trial.step, trial.longest) == (3, 0.2, 0.2)


def test_epochs_heard_while_the_driver_decides_are_recalled_one_per_continue():
    trial = training_trial(epochs=3)
    trial.hear(0, Epoch(2, {"loss": 1.0}, 0.1), now=3.1)
    trial.report(2, step=0.1, now=3.1, last=False)
    later = Epoch(3, {"loss": 0.9}, 0.1)
    assert trial.hear(0, later, now=3.2) is None  # AHEAD: kept for the next Continue
    assert trial.early == [later] and trial.expected == 4
    assert trial.recall() is None  # not before that Continue
    trial.proceed(sender([]), Clock(3.3), epochs=1)
    assert trial.recall() is later and trial.outs == {0: later} and trial.early == []


def test_a_trial_on_two_workers_is_heard_once_every_rank_answered():
    trial = training_trial(n_slots=2)
    assert trial.hear(1, Epoch(1, None, 0.1), now=3.0) is None
    assert trial.hear(0, first := Epoch(1, {"loss": 1.0}, 0.1), now=3.0) is first
    failed = Failed("boom")
    assert trial.hear(0, failed, now=3.0) is failed  # a failure is acted on at once


def test_a_vacated_trial_forgets_what_was_in_flight_and_gives_its_slots_back():
    trial = training_trial(n_slots=2, epochs=1)
    held = trial.slots
    pause = Task("pause")
    assert trial.vacate(token=9, saving=pause) == held
    assert trial.phase is IDLE and trial.slots == [] and trial.token == 9
    assert (trial.futures, trial.outs, trial.deps, trial.early, trial.left) == ({}, {}, {}, [], 0)
    assert trial.saving is pause
    trial.vacate(token=10)  # a stop while that pause's checkpoint is still being written
    assert trial.saving is pause
    trial.saved(Task("another"))
    assert trial.saving is pause
    trial.saved(pause)
    assert trial.saving is None


def test_a_resize_holds_the_new_slots_under_a_new_placement():
    trial = training_trial(epochs=3)
    trial.hear(0, Epoch(2, {"loss": 1.0}, 0.1), now=3.1)
    trial.report(2, step=0.1, now=3.1, last=False)  # AHEAD: its batch is halted by the caller
    new = slots("a", "b")
    trial.resize(new, token=9, now=4.0)
    assert trial.phase is PREPARING and trial.slots == new and trial.token == 9
    assert (trial.futures, trial.early, trial.left, trial.t_exec) == ({}, [], 0, 4.0)


def test_a_second_memory_kill_is_counted():
    trial = LiveTrial(7, token=1)
    assert trial.killed_for_memory() == 1 and trial.killed_for_memory() == 2


def test_the_trials_by_phase_follow_every_legal_move():
    """The index the runtime's loop reads (the epochs in flight, the starts waiting for a
    checkpoint) holds each trial under the phase it is in, after any walk of legal moves,
    and forgets a record replaced by a newer one of the same trial."""
    import random

    from hypersched_nb.runtime._live import Phases

    rng, phases = random.Random(0), Phases()
    trials = [LiveTrial(tid, 1) for tid in range(6)]
    for t in trials:
        phases.join(t)
    for _ in range(300):
        t = rng.choice(trials)
        move(t, rng.choice(sorted(TRANSITIONS[t.phase])))
        for phase in Phase:
            assert {u.tid for u in phases(phase)} == {u.tid for u in trials if u.phase is phase}
    newer = LiveTrial(trials[0].tid, 2)
    phases.join(newer, replacing=trials[0])
    move(trials[0], next(iter(TRANSITIONS[trials[0].phase])))  # the old record moves alone
    assert sum(u is newer for u in phases(IDLE)) == 1
    assert all(u is not trials[0] for phase in Phase for u in phases(phase))
