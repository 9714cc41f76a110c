"""A live trial's phases in the Dask runtime: one table (TRANSITIONS) says every legal move,
and nothing else moves.

Specified here: the exact set of legal moves, where each leads, the one-line message of an
illegal move ("trial 7: can't continue when phase=TRAINING"), that an illegal move leaves
the trial where it was, and what a new trial's record holds.
"""

from __future__ import annotations

import pytest

from hypersched_nb.errors import InvalidTransition
from hypersched_nb.runtime._live import TRANSITIONS, LiveTrial, Phase, move
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
