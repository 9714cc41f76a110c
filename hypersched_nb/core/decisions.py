"""What a policy answers when a trial reports a result: a decision and the reason for it.

The decisions are Ray Tune's TrialScheduler verdicts; the reason travels with the decision
into the driver's journal. The plain verdict is the module constant :data:`CONTINUE`, so
the answer a policy gives most often costs nothing to make:

>>> CONTINUE.decision, CONTINUE.reason
(Decision.CONTINUE, '')
>>> Verdict.pause("rung 4: 0.31 below cutoff 0.42")
Verdict(decision=Decision.PAUSE, reason='rung 4: 0.31 below cutoff 0.42')
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["CONTINUE", "Decision", "Verdict"]


class Decision(enum.Enum):
    CONTINUE = "CONTINUE"  # train the next epoch
    PAUSE = "PAUSE"  # checkpoint and give the workers back; may be resumed later
    STOP = "STOP"  # never train this trial again

    def __repr__(self) -> str:
        return f"Decision.{self.name}"


@dataclass(frozen=True, slots=True)
class Verdict:
    """A decision and its reason (empty: the driver journals its own default)."""

    decision: Decision
    reason: str = ""

    @classmethod
    def go(cls, reason: str) -> Verdict:
        """Continue, with a reason (journaled if the trial is resized at this epoch)."""
        return cls(Decision.CONTINUE, reason)

    @classmethod
    def pause(cls, reason: str) -> Verdict:
        return cls(Decision.PAUSE, reason)

    @classmethod
    def stop(cls, reason: str) -> Verdict:
        return cls(Decision.STOP, reason)


#: the plain verdict: train the next epoch, nothing to say
CONTINUE = Verdict(Decision.CONTINUE)
