"""A live trial's phases in the Dask runtime: one table (TRANSITIONS) says every legal move,
and nothing else moves.

Specified here: the exact set of legal moves, where each leads, the one-line message of an
illegal move ("trial 7: can't continue when phase=TRAINING"), that an illegal move leaves
the trial where it was, what a new trial's record holds, and how many epochs a batch holds.
"""

from __future__ import annotations

import pytest

from hypersched_nb.errors import ConfigError, InvalidTransition
from hypersched_nb.runtime import DaskRuntime
from hypersched_nb.runtime._live import TRANSITIONS, LiveTrial, Phase, batch_size, move
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
