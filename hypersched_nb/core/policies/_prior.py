"""What a past search of the same model tells a new one, as the default policy reads it.

A past search (its curves and timings) answers what the default otherwise spends its first
wave finding out: whether epoch r ranks like epoch η·r, and how long an epoch and a start-up
take. :class:`PriorEvidence` is that answer in a few numbers, computed from the past
search's curves where the search is assembled (``hypersched_nb.experiment.prior``); the
policy reads only these numbers, never where they came from (a label is kept for the
policy line).

The agreement is the AUC of :func:`~._trust.keep_agreement` over the past search's
configurations that reached both epochs (``kept`` and ``paused`` of them on either side of
the top 1/η at epoch r), so its uncertainty is that of the search's own test: trusted when
the AUC exceeds the floor by ``z`` standard errors. A past search also shows what a new
one cannot see at its start: whether epoch r's verdicts still hold at the end of training
(``final``, the last epoch enough of its curves reached). Epochs that agree with epoch η·r
and then lose their order later (a late rank change) are what trusting epoch r from the
start would get most wrong, and the end is what a search is judged by, so the prior says to
trust epoch r where its verdicts held at the end (:meth:`PriorEvidence.verdict`), whether or
not epoch η·r, on the way, ordered the configurations as the end did. Where they were
reversed by the end (the AUC with ``final`` below one half by ``z`` standard errors: the
configurations epoch r would keep ended worse than those it would pause), judging by epoch
r even for now pauses the configurations that end best, so the prior says to doubt it from
the start.
``survivor_auc`` is the same agreement among only the configurations the rung would keep
(its top 1/η): the one a search that trusts epoch r can measure of itself, since only those
train on, and so the one its own evidence is checked against (:meth:`PriorEvidence.disagrees`).

Example:
    >>> e = PriorEvidence(label="search 'runs/a'", low=1, high=4, auc=0.91, kept=25, paused=75,
    ...                   final=30, final_auc=0.85, final_kept=25, final_paused=75)
    >>> e.verdict(z=1.645, floor=0.5), e.agreement()
    (PriorWord.TRUST, 'epoch 1 agreed with epoch 4 in 91% of pairs, with epoch 30 in 85%')
    >>> dataclasses.replace(e, final_auc=0.3).verdict(z=1.645, floor=0.5)
    PriorWord.REVERSED
    >>> PriorEvidence.from_record(e.to_record()) == e
    True
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass

from hypersched_nb.core.policies._describe import epoch_number

__all__ = ["PriorEvidence", "PriorWord", "standard_error"]

#: a prior of fewer pairs that neither trusts nor reverses epoch r is too small to tell (a
#: sample this large would have shown a useful agreement)
DECISIVE_PAIRS = 32


class PriorWord(enum.Enum):
    """What a past search says of epoch r, as rule 2 reads it (:meth:`PriorEvidence.verdict`)."""

    TRUST = "trust"  # its verdicts held at the end of its curves: judge from the start
    REVERSED = "reversed"  # its verdicts were reversed by the end: doubt it from the start
    UNSURE = "unsure"  # neither, over enough pairs: test it, as without a prior
    TOO_FEW = "too few"  # too few pairs to tell: test it, as without a prior

    def __repr__(self) -> str:
        return f"PriorWord.{self.name}"


def standard_error(kept: int, paused: int) -> float:
    """The AUC's standard error under chance, sqrt((n₁ + n₂ + 1) / (12·n₁·n₂))."""
    if not kept or not paused:
        return math.inf
    return math.sqrt((kept + paused + 1) / (12 * kept * paused))


@dataclass(frozen=True, slots=True)
class PriorEvidence:
    """A past search's answer, for rules 2 and 4 (see the module docstring). ``low`` and
    ``high`` are the epochs compared (the search's two lowest rungs); ``first_seconds`` and
    ``epoch_seconds`` the median one-worker seconds of a first and of a later epoch;
    ``startup_seconds`` a start-up's (None: not known)."""

    label: str
    low: float
    high: float
    auc: float = 0.5
    kept: int = 0
    paused: int = 0
    survivor_auc: float | None = None
    survivor_kept: int = 0
    survivor_paused: int = 0
    final: float | None = None  # the last epoch enough past curves reached (None: none)
    final_auc: float = 0.5
    final_kept: int = 0
    final_paused: int = 0
    first_seconds: float | None = None
    epoch_seconds: float | None = None
    startup_seconds: float | None = None

    @property
    def pairs(self) -> int:
        return self.kept + self.paused

    def verdict(self, *, z: float, floor: float) -> PriorWord:
        """Epoch r's agreement with ``final``: :attr:`~PriorWord.TRUST` above ``floor`` by
        ``z`` standard errors, :attr:`~PriorWord.REVERSED` below one half by as many; else
        :attr:`~PriorWord.UNSURE` over :data:`DECISIVE_PAIRS` pairs or more,
        :attr:`~PriorWord.TOO_FEW` under."""
        kept, paused = self.final_kept, self.final_paused
        error = standard_error(kept, paused)
        if self.final_auc - z * error > floor:
            return PriorWord.TRUST
        if self.final_auc + z * error < 0.5:
            return PriorWord.REVERSED
        return (
            PriorWord.UNSURE
            if kept + paused >= DECISIVE_PAIRS and kept and paused
            else PriorWord.TOO_FEW
        )

    def disagrees(self, auc: float, kept: int, paused: int, *, z: float) -> bool:
        """Does a search's own test (``auc`` over ``kept`` and ``paused`` among the trials it
        kept) fall below this prior's agreement among its survivors by ``z`` standard errors
        of the difference? Then the search's own evidence wins."""
        if self.survivor_auc is None or not kept or not paused:
            return False
        own = standard_error(kept, paused)
        past = standard_error(self.survivor_kept, self.survivor_paused)
        past = 0.0 if math.isinf(past) else past
        return auc < self.survivor_auc - z * math.hypot(own, past)

    def agreement(self) -> str:
        """ "epoch 1 agreed with epoch 4 in 91% of pairs, with epoch 30 in 85%" (the AUCs,
        in the user's words)."""
        low, high = epoch_number(self.low), epoch_number(self.high)
        if not self.pairs:
            return f"no configuration reached both epoch {low} and epoch {high}"
        said = f"epoch {low} agreed with epoch {high} in {self.auc:.0%} of pairs"
        if self.final is None or self.final == self.high:
            return said
        return f"{said}, with epoch {epoch_number(self.final)} in {self.final_auc:.0%}"

    def to_record(self) -> dict:
        """As a journal's first line holds it (plain JSON values)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_record(cls, record: Mapping) -> PriorEvidence:
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in record.items() if k in known})
