"""What a policy answers when a trial reports a result (Ray Tune's TrialScheduler verdicts)."""

from __future__ import annotations

import enum

__all__ = ["Decision"]


class Decision(enum.Enum):
    CONTINUE = "CONTINUE"  # train the next epoch
    PAUSE = "PAUSE"  # checkpoint and give the workers back; may be resumed later
    STOP = "STOP"  # never train this trial again

    def __repr__(self) -> str:
        return f"Decision.{self.name}"
