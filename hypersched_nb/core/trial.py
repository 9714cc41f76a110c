"""Trial records and their lifecycle: one table says every legal move (h11's transitions)."""

from __future__ import annotations

import enum
import math

from hypersched_nb.errors import InvalidTransition

__all__ = ["TrialState", "TrialEnding", "Trial", "TRANSITIONS", "transition", "lifecycle_mermaid"]


class TrialState(enum.Enum):
    PENDING = "PENDING"  # offered, never started
    RUNNING = "RUNNING"  # holds workers and trains
    PAUSED = "PAUSED"  # checkpointed, holds nothing, may resume
    TERMINATED = "TERMINATED"  # stopped or finished; never trains again
    ERRORED = "ERRORED"  # its code raised or its metric diverged

    def __repr__(self) -> str:
        return f"TrialState.{self.name}"


class TrialEnding(enum.Enum):
    """How a trial's run ended, as the driver tells whoever watches the search."""

    COMPLETED = "COMPLETED"  # reached max_epochs, or its trainable said it cannot go further
    STOPPED = "STOPPED"  # stopped early: by the policy, or because the search ended
    RETIRED = "RETIRED"  # the policy will never start or resume it
    DIVERGED = "DIVERGED"  # it reported a non-finite metric
    FAILED = "FAILED"  # its code raised

    def __repr__(self) -> str:
        return f"TrialEnding.{self.name}"


_P, _R, _Z, _T, _E = (
    TrialState.PENDING,
    TrialState.RUNNING,
    TrialState.PAUSED,
    TrialState.TERMINATED,
    TrialState.ERRORED,
)

#: ``TRANSITIONS[state][move] -> new state``; moves are instruction or event names.
TRANSITIONS: dict[TrialState, dict[str, TrialState]] = {
    _P: {"Start": _R, "Stop": _T},
    _R: {
        "Result": _R,
        "Continue": _R,
        "Resize": _R,
        "Pause": _Z,
        "Stop": _T,
        "Complete": _T,
        "TrialFailed": _E,
        "WorkerLost": _Z,
        "Halted": _Z,
    },
    _Z: {"Start": _R, "Stop": _T},
    _T: {},
    _E: {},
}


def transition(trial: Trial, move: str) -> TrialState:
    """Move ``trial`` by ``move`` or raise :class:`InvalidTransition`."""
    try:
        new = TRANSITIONS[trial.state][move]
    except KeyError:
        raise InvalidTransition(
            f"trial {trial.trial_id}: can't apply {move} when state={trial.state.name}"
        ) from None
    trial.state = new
    return new


def lifecycle_mermaid() -> str:
    """The lifecycle diagram, generated from :data:`TRANSITIONS` for the docs."""
    lines = ["stateDiagram-v2", "    [*] --> PENDING"]
    for state, moves in TRANSITIONS.items():
        targets: dict[TrialState, list[str]] = {}
        for move, new in moves.items():
            if new is not state:
                targets.setdefault(new, []).append(move)
        for new, names in targets.items():
            lines.append(f"    {state.name} --> {new.name}: {', '.join(names)}")
    lines += ["    TERMINATED --> [*]", "    ERRORED --> [*]"]
    return "\n".join(lines)


class Trial:
    """What the driver knows of one trial. Policies read it; only the driver writes it.

    ``score`` values are the metric turned so that higher is better (``-metric`` in min
    mode); ``metrics`` keeps the raw values in epoch order.
    """

    __slots__ = (
        "trial_id",
        "config",
        "state",
        "workers",
        "epochs",
        "metrics",
        "scores",
        "best_score",
        "train_seconds",
        "results_since_start",
        "added_at",
        "started_at",
        "last_start_at",
        "stopped_at",
        "starts",
        "error",
        "reason",
    )

    def __init__(self, trial_id: int, config: dict, added_at: float = 0.0):
        self.trial_id = trial_id
        self.config = config
        self.state = TrialState.PENDING
        self.workers = 0
        self.epochs = 0
        self.metrics: list[float] = []
        self.scores: list[float] = []
        self.best_score = -math.inf
        self.train_seconds = 0.0  # wall seconds spent training epochs (no start-up)
        self.results_since_start = 0
        self.added_at = added_at
        self.started_at: float | None = None
        self.last_start_at: float | None = None
        self.stopped_at: float | None = None
        self.starts = 0
        self.error: str | None = None
        self.reason = ""

    @property
    def last_score(self) -> float:
        return self.scores[-1] if self.scores else -math.inf

    @property
    def is_live(self) -> bool:
        """Not over yet: pending, running or paused."""
        return self.state in (_P, _R, _Z)

    def __repr__(self) -> str:
        return (
            f"Trial({self.trial_id}, {self.state.name}, epochs={self.epochs}, "
            f"workers={self.workers}, best={self.best_score:.4g})"
        )
