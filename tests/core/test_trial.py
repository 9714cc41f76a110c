"""The trial lifecycle: one table (TRANSITIONS) says every legal move, and nothing else moves.

Specified here: the exact set of legal moves, where each leads, the one-line message of an
illegal move ("trial 7: can't apply Resize when state=PAUSED"), that an illegal move leaves
the trial where it was, that the docs diagram is generated from the table, and a new
trial's record.
"""

from __future__ import annotations

import math

import pytest

from hypersched_nb.core.trial import TRANSITIONS, Trial, TrialState, lifecycle_mermaid, transition
from hypersched_nb.errors import HyperschedError, InvalidTransition

P, R, Z, T, E = (
    TrialState.PENDING,
    TrialState.RUNNING,
    TrialState.PAUSED,
    TrialState.TERMINATED,
    TrialState.ERRORED,
)

#: every legal move, written out: (from, move) -> to
LEGAL = {
    (P, "Start"): R,  # admitted
    (P, "Stop"): T,  # retired before it ever ran
    (R, "Result"): R,  # an epoch finished
    (R, "Continue"): R,  # train one more epoch
    (R, "Resize"): R,  # restart on another worker count
    (R, "Pause"): Z,  # checkpoint and give the workers back
    (R, "Stop"): T,  # stopped by the policy, the deadline or the user
    (R, "Complete"): T,  # reached max_epochs or the end of its curve
    (R, "TrialFailed"): E,  # its code raised
    (R, "WorkerLost"): Z,  # its worker died: resume from the checkpoint
    (R, "Halted"): Z,  # the runtime took it off its workers (a full disk, memory): resume
    (Z, "Start"): R,  # resumed from its checkpoint
    (Z, "Stop"): T,  # retired while paused
}
MOVES = sorted({move for _, move in LEGAL} | {"Launch", "Restore"})


def trial_in(state: TrialState, trial_id: int = 7) -> Trial:
    trial = Trial(trial_id, {"lr": 0.1})
    trial.state = state
    return trial


def test_the_table_holds_exactly_the_legal_moves():
    table = {(s, m): new for s, moves in TRANSITIONS.items() for m, new in moves.items()}
    # no move is missing and none is added
    assert table == LEGAL
    # every state has a row, terminal ones an empty row
    assert set(TRANSITIONS) == set(TrialState)
    assert TRANSITIONS[T] == {} and TRANSITIONS[E] == {}


@pytest.mark.parametrize(
    ("state", "move"), sorted(LEGAL, key=str), ids=lambda x: getattr(x, "name", x)
)
def test_a_legal_move_lands_where_the_table_says(state, move):
    trial = trial_in(state)
    # transition() returns the new state and records it on the trial
    assert transition(trial, move) is LEGAL[state, move]
    assert trial.state is LEGAL[state, move]


@pytest.mark.parametrize("state", list(TrialState), ids=lambda s: s.name)
def test_every_other_move_is_refused_with_a_one_line_message(state):
    for move in MOVES:
        if (state, move) in LEGAL:
            continue
        trial = trial_in(state)
        with pytest.raises(InvalidTransition) as info:
            transition(trial, move)
        # the message names the trial, the move and the state, on one line
        assert str(info.value) == f"trial 7: can't apply {move} when state={state.name}"
        # an illegal move leaves the trial where it was
        assert trial.state is state


def test_the_message_of_the_style_guide():
    with pytest.raises(InvalidTransition, match=r"^trial 7: can't apply Resize when state=PAUSED$"):
        transition(trial_in(Z), "Resize")
    # InvalidTransition is one of the project's own errors
    assert issubclass(InvalidTransition, HyperschedError)


def test_a_terminal_trial_never_moves_again():
    for state in (T, E):
        for move in MOVES:
            with pytest.raises(InvalidTransition):
                transition(trial_in(state), move)


def test_the_diagram_has_one_edge_per_state_change_of_the_table():
    lines = lifecycle_mermaid().splitlines()
    assert lines[0] == "stateDiagram-v2"
    # the search starts with a pending trial and ends in either terminal state
    assert "    [*] --> PENDING" in lines
    assert "    TERMINATED --> [*]" in lines and "    ERRORED --> [*]" in lines
    edges = {}
    for line in lines:
        if ": " in line:
            ends, moves = line.strip().split(": ")
            edges[tuple(ends.split(" --> "))] = set(moves.split(", "))
    expected = {}
    for (state, move), new in LEGAL.items():
        if new is not state:  # self-loops (Result, Continue, Resize) are not drawn
            expected.setdefault((state.name, new.name), set()).add(move)
    assert edges == expected


def test_the_diagram_is_generated_from_the_table(monkeypatch):
    # a move added to the table appears in the diagram without touching the generator
    monkeypatch.setitem(TRANSITIONS, Z, {**TRANSITIONS[Z], "TrialFailed": E})
    assert "    PAUSED --> ERRORED: TrialFailed" in lifecycle_mermaid().splitlines()


def test_a_new_trial_is_pending_and_has_no_history():
    trial = Trial(3, {"lr": 0.01}, added_at=12.5)
    assert trial.state is P and trial.is_live
    # no workers, no epochs, no scores: its best and last scores are -inf
    assert (trial.workers, trial.epochs, trial.metrics, trial.scores) == (0, 0, [], [])
    assert trial.best_score == -math.inf and trial.last_score == -math.inf
    assert trial.added_at == 12.5 and trial.started_at is None and trial.starts == 0


@pytest.mark.parametrize("state", list(TrialState), ids=lambda s: s.name)
def test_live_means_pending_running_or_paused(state):
    assert trial_in(state).is_live == (state in (P, R, Z))
