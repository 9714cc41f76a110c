"""HyperSched's rule 2: which rungs judge, that is whether the first epochs are trusted.

First-epoch scores can rank trials badly or backwards (warm-up, initialisation, a slow
first epoch), so the default starts in *doubt*: the lowest ``probation`` rungs record values
but do not judge for good until their verdicts hold at the next rung. At ``pairs``·2^j
trials seen at both a rung and the next (8, 16, 32 …), the chance that a trial the rung
would keep (its top 1/η) beats, at the next rung, one it would pause (the Mann–Whitney AUC
of :func:`keep_agreement`) must exceed ``floor`` (chance, 0.5) by ``z`` standard errors
under chance, sqrt((n₁ + n₂ + 1) / (12·n₁·n₂)). The AUC looks only at the verdict, so a
noisy order among trials that both fail does not count. When the lowest rung passes, the
search switches to *trust*: epoch r judges from then on.

While in doubt, a trial whose first epoch past the lowest rung gains nothing on it (epoch 2
no better than epoch 1) pauses there (:meth:`Trust.stalled`): it is not learning, and the
epochs to the next rung that the test would spend on it are the search's dearest at a short
deadline. That asks no ranking of epoch 1, so it holds where epoch 1 misleads: of the
configurations of the ten traces measured (LCBench and ours) whose epoch 2 is no better
than their epoch 1, few finish in their trace's top 10 % (5 of 200 on lcbench-167181, 2 on
lcbench-167190, 2 of 98 on mnist1d-cosine, 1 of 25 on digits-mlp, none elsewhere), and a
paused trial still resumes once every configuration has been tried.

The user who knows their curves says so (``early_signal``):

- ``"auto"`` (the default): *trust, then verify*. While the lowest rung is in doubt it judges
  at once, tentatively (:meth:`Trust.tentative`), every trial but one in ``audit`` (η by
  default): that one trains on untested to the next rung, so that the test sees trials the
  verdicts would have paused. When the test passes, the rung judges for good; when it fails,
  the tentative verdicts stop and the trials they paused come back before any new one
  (:meth:`Trust.owed`: highest first-epoch value first, or lowest when the test found the
  order backwards). At a deadline of a few epochs a test arrives too late to act on, and
  waiting for it is what loses where epoch 1 tells; where it misleads, the audit brings the
  paused back. So no trial goes untested once the deadline is too near for the test to act
  (the policy says when: ``testable``): the test arriving (at the pace of its pairs so far,
  :meth:`Trust.next_test_in`) and then a trial it brings back reaching the next rung must
  fit in the time left.
- ``"doubt"``: no tentative verdicts: every trial trains to the next rung (unless it stalls)
  until the rung earns trust.
- ``"trust"``: no rung is on probation: epoch r judges from the first result, as in ASHA.

A past search of the same model (``prior``, a :class:`~._prior.PriorEvidence`) answers the
question before the first result, under ``"auto"`` only (its word is a
:class:`~._prior.PriorWord`): where its epoch 1's verdicts held at the end of its curves
(the same test, over its pairs), the lowest rung judges from the start
(``TrustState.PRIOR``) and this search's own test still runs at its milestones, on the
trials it kept: it passes (trust earned), or, where its agreement falls below the prior's
among the trials a trusting search keeps by ``z`` standard errors of the difference, this
search's evidence wins: the verdicts are withdrawn and the trials they paused come back, as
after a failed tentative test. Until that test passes, its verdicts are not final, and
rules 3 and 4 plan from the next rung (:meth:`Trust.first`), as they do while verdicts are
tentative: with epoch 1 final from the start, admission asked a new trial to reach only
epoch 2 and never left the leaders the workers to go deep, which cost a late-bloomer
trace, where depth wins, more than the prior gave. Where its epoch 1's verdicts were
reversed by the end, a tentative verdict would pause the trials that end best: the search
starts in doubt (``TrustState.DOUBT``), until its own test passes. Otherwise (neither held
nor reversed, or too few pairs to tell) the search tests epoch 1 as if there were no
prior. The policy line says what the prior told it.

:meth:`Trust.state` says which mode the search is in and why, in one line. Where the lowest
rung stands is one of :class:`~._trust_states.TrustState`, and one table there says how it
moves (a test passes or fails, a trial arrives too late for the test, the user tells).

Example:
    >>> keep_agreement([1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 3, 4, 5, 6, 7, 8], eta=4)
    (1.0, 2, 6)
    >>> round(needed_auc(2, 6, z=1.645, floor=0.5), 2)  # eight pairs: AUC 1 passes, 0.75 fails
    0.91
"""

from __future__ import annotations

import math
from collections.abc import Container, Sequence

from hypersched_nb.core.policies._base import check_early_signal
from hypersched_nb.core.policies._describe import epoch_number
from hypersched_nb.core.policies._prior import PriorEvidence, PriorWord
from hypersched_nb.core.policies._rungs import Rung
from hypersched_nb.core.policies._sample import percentile
from hypersched_nb.core.policies._trust_states import TrustState, account, initial, move, short
from hypersched_nb.errors import ConfigError

__all__ = ["Trust", "keep_agreement", "needed_auc", "trusted"]

#: what the policy line adds to the prior's agreement, by its word
_SAID_OF = {
    PriorWord.TOO_FEW: ", too few to tell",
    PriorWord.REVERSED: ", its order reversed by then",
}


def keep_agreement(
    low: Sequence[float], high: Sequence[float], eta: float
) -> tuple[float, int, int]:
    """How well a rung's verdicts hold at the next rung: the probability that a trial it
    would keep (top 1/η of ``low``) beats, at the next rung (``high``), one it would pause
    (ties count half). 0.5: no better than chance; below: inverted. Returns (AUC, kept, paused)."""
    if len(low) < 2:
        return 0.5, 0, len(low)
    cutoff = percentile(sorted(low), (1 - 1 / eta) * 100)
    kept = [h for a, h in zip(low, high, strict=True) if a >= cutoff]
    paused = [h for a, h in zip(low, high, strict=True) if not a >= cutoff]
    if not kept or not paused:
        return 0.5, len(kept), len(paused)
    n = len(kept) * len(paused)
    wins = sum(k > p for k in kept for p in paused)
    ties = sum(k == p for k in kept for p in paused)
    return wins / n + 0.5 * (ties / n), len(kept), len(paused)


def needed_auc(kept: int, paused: int, z: float, floor: float) -> float:
    """The AUC that is above ``floor`` by ``z`` standard errors under chance."""
    return floor + z * math.sqrt((kept + paused + 1) / (12 * kept * paused))


def trusted(auc: float, kept: int, paused: int, z: float, floor: float) -> bool:
    """Is ``auc`` above ``floor`` with confidence ``z``?"""
    if not kept or not paused:
        return False
    return auc - z * math.sqrt((kept + paused + 1) / (12 * kept * paused)) > floor


class Trust:
    """Which of ``rungs`` judge: all but the lowest ``probation`` ones (never the top rung),
    each of those until it passes the test of the module docstring at ``pairs``·2^j pairs.
    ``early_signal`` is the user's word (``"trust"`` comes with ``probation=0``: see
    ``HyperSchedParams.probation_rungs``). Where the lowest rung stands is :attr:`current`, a
    :class:`~._trust_states.TrustState` that changes only by the moves of its table."""

    __slots__ = ("_above", "_first_pair", "_held", "_needed", "agreement", "current")
    __slots__ += ("_arrived", "audit", "early_signal", "eta", "floor", "milestones", "pairs")
    __slots__ += ("pause_stalled", "prior", "probation", "seen", "z")

    def __init__(
        self,
        rungs: Sequence[Rung],
        *,
        probation: int,
        pairs: int,
        z: float,
        floor: float,
        eta: float,
        early_signal: str = "auto",
        pause_stalled: bool = True,
        audit: int | None = None,
        prior: PriorEvidence | None = None,
    ):
        first = min(probation, len(rungs) - 1)  # the top rung is never on probation
        if early_signal == "trust" and first:
            raise ConfigError(
                f"`probation` is {probation}, but must be 0 with early_signal='trust'"
            )
        self.probation = first
        self.current = initial(rungs=len(rungs), early_signal=early_signal, probation=first)
        self._above = [i >= first for i in range(1, len(rungs))]  # rungs 1 …: trusted?
        self.milestones = [rung.milestone for rung in rungs]
        self.early_signal = early_signal
        self.agreement: dict[int, tuple[float, int]] = {}  # rung -> (AUC, pairs) last tested
        self._needed: dict[int, float] = {}  # rung -> the AUC its last test needed
        self.seen = [0] * len(rungs)  # trials recorded at rung i and then at rung i + 1
        self.pairs, self.z, self.floor, self.eta = pairs, z, floor, eta
        self.pause_stalled = pause_stalled
        self.audit = audit or math.ceil(eta)  # "auto": one trial in this many goes untested
        self._arrived = 0  # trials that reached the lowest rung while it was judged tentatively
        self._held: set[int] = set()  # trials paused by a tentative verdict, not yet back
        self._first_pair: tuple[float, int] | None = None  # (time, pairs) at the lowest rung
        self.prior = prior if prior is not None and self._matches(prior) else None
        if self.prior is not None and self.current is TrustState.TENTATIVE:
            word = self.prior.verdict(z=z, floor=floor)
            if word is PriorWord.TRUST:
                self._move("prior_trust")
            elif word is PriorWord.REVERSED:
                self._move("prior_doubt")

    def _matches(self, prior: PriorEvidence) -> bool:
        """Does ``prior`` compare this search's two lowest rungs?"""
        m = self.milestones
        return len(m) > 1 and math.isclose(prior.low, m[0]) and math.isclose(prior.high, m[1])

    @property
    def trusted(self) -> list[bool]:
        """Which rungs judge, lowest first: the lowest as its state says, the others as
        their tests found (the top rung always)."""
        return [self.current.judges, *self._above]

    def _move(self, name: str) -> None:
        self.current = move(self.current, name)

    def first(self) -> int:
        """Index of the lowest rung whose verdicts are final, the one rules 3 and 4 read:
        the lowest trusted rung, or the next while the lowest judges on a past search's
        word, which this search's own test can still take back (as with tentative ones)."""
        return [self.current.final, *self._above].index(True)

    def mode(self) -> str:
        """``"trust"`` once the lowest rung judges, else ``"doubt"``."""
        return "trust" if self.current.judges else "doubt"

    def pair(self, low: Rung, high: Rung, i: int, now: float = 0.0) -> bool:
        """One more trial reached rung i + 1 after rung i at time ``now``; True when rung i
        became trusted, its verdicts final (:meth:`first` moved)."""
        self.seen[i] += 1
        if i == 0 and self._first_pair is None:
            self._first_pair = (now, self.seen[0])
        times, rest = divmod(self.seen[i], self.pairs)
        checked = i == 0 and self.current is TrustState.PRIOR  # judging, on the prior's word
        if (self.trusted[i] and not checked) or rest or not times or times & (times - 1):
            return False  # not at n0·2^j
        both = [t for t in high.recorded if t in low.recorded]
        a = [low.recorded[t] for t in both]
        auc, kept, paused = keep_agreement(a, [high.recorded[t] for t in both], self.eta)
        self.agreement[i] = (auc, len(both))
        if kept and paused:
            self._needed[i] = needed_auc(kept, paused, self.z, self.floor)
        held = trusted(auc, kept, paused, self.z, self.floor)
        if checked:
            return self._check_prior(held, auc, kept, paused)
        if i:
            self._above[i - 1] = held
        elif held or kept and paused:  # an even test (no trial kept, or none paused): no move
            self._move("pass" if held else "fail")
        return held

    def _check_prior(self, held: bool, auc: float, kept: int, paused: int) -> bool:
        """This search's own test of the lowest rung, judging on the prior's word: held
        (trust earned), or disagreeing with the prior (withdrawn: its verdicts' trials owed
        back), or neither (the prior's word stands). True when its verdicts became final
        (:meth:`first` moved)."""
        if held:
            self._move("pass")
            return True
        if self.prior is not None and self.prior.disagrees(auc, kept, paused, z=self.z):
            self._move("fail")
        return False

    def holds(self, i: int) -> bool:
        """Is a pause at rung ``i`` now a verdict that a failed test would take back (the
        lowest rung, judging on a past search's word)?"""
        return i == 0 and self.current is TrustState.PRIOR

    def next_test_in(self, now: float) -> float | None:
        """Seconds from ``now`` to the lowest rung's next test, at the pace its pairs have
        come since the first (None: no pace yet, fewer than two pairs)."""
        if self._first_pair is None or self.seen[0] <= self._first_pair[1]:
            return None
        since, first = self._first_pair
        due = self.pairs
        while due <= self.seen[0]:
            due *= 2
        return (due - self.seen[0]) * (now - since) / (self.seen[0] - first)

    def tentative_on(self) -> bool:
        """Does the lowest rung judge tentatively now ("auto", in doubt, no test failed)?"""
        return self.current.tentative

    def tentative(
        self,
        low: Rung,
        tid: int,
        value: float,
        cutoff: float | None,
        sign: float = 1.0,
        *,
        testable: bool = True,
    ) -> str | None:
        """Why trial ``tid``, which just recorded ``value`` at the ``low`` rung, pauses there
        at once, tentatively; None when the rung does not judge tentatively, the trial is
        the one in ``audit`` that trains on untested (only while the test is ``testable``:
        the deadline leaves it time to act), or it is at or above ``cutoff``, the rung's
        cutoff before its value (None: too few values). Call once per trial, at its first
        value there; a trial it pauses is :meth:`hold`'s to keep."""
        if not self.current.tentative or tid not in low:
            return None
        self._arrived += 1
        self._move("arrive" if testable else "arrive_late")
        untested = testable and self._arrived % self.audit == 0
        if untested or cutoff is None or not value < cutoff:
            return None
        high = epoch_number(self.milestones[1])
        return (
            f"rung {low.milestone:g}: {sign * value:.4g} below cutoff {sign * cutoff:.4g}, for "
            f"now (epoch {epoch_number(low.milestone)} not yet tested against epoch {high})"
        )

    def hold(self, tid: int) -> None:
        """Trial ``tid`` paused on a tentative verdict: owed a resumption if the test fails."""
        self._held.add(tid)

    def release(self, tid: int) -> None:
        """Trial ``tid`` runs again (or left the search): no longer owed."""
        self._held.discard(tid)

    def owed(self, low: Rung, paused: Container[int]) -> int | None:
        """After a failed test, the next of the trials its tentative verdicts paused to bring
        back: the highest value at the ``low`` rung first, or the lowest when the test found
        its order backwards (AUC below one half); None before a failed test, or when none is
        left paused. Asking again gives the same answer until that trial runs
        (:meth:`release`)."""
        if self.current is not TrustState.WITHDRAWN:
            return None
        backwards = self.agreement.get(0, (0.5, 0))[0] < 0.5
        waiting = [t for t in self._held if t in paused]
        if not waiting:
            return None
        return (min if backwards else max)(waiting, key=lambda t: (low.recorded[t], -t))

    def stalled(
        self, low: Rung, tid: int, epoch: float, value: float, sign: float = 1.0
    ) -> str | None:
        """Why trial ``tid`` pauses at ``epoch``, its first past the ``low`` rung, with
        ``value`` (higher is better) no better than the value it recorded there, while that
        rung is in doubt; None when it gained, or the rung judges anyway. The reason shows
        the values times ``sign`` (−1 for a metric to minimise: its own units)."""
        if not self.pause_stalled or self.current.judges or tid not in low:
            return None
        if epoch != low.milestone + 1 or not value <= low.recorded[tid]:
            return None
        e = epoch_number(low.milestone)
        return (
            f"stalled: epoch {epoch_number(epoch)} ({sign * value:.4g}) no better than epoch "
            f"{e} ({sign * low.recorded[tid]:.4g}) while epoch {e} is in doubt"
        )

    def tell(self, early_signal: str) -> bool:
        """The user's word from now on, as a what-if forecast asks it of a clone: ``"trust"``
        makes every rung judge; ``"doubt"`` puts the lowest rungs (``probation`` of them, at
        least one) back on probation, to earn trust at their next test; ``"auto"`` keeps
        things as they stand. True when the first judging rung moved."""
        check_early_signal(early_signal)
        if early_signal == "auto":
            return False
        before = self.first()
        doubted = 0 if early_signal == "trust" else min(max(self.probation, 1), len(self.seen) - 1)
        self._above = [i >= doubted for i in range(1, len(self.milestones))]
        self._move(early_signal)
        self.early_signal = early_signal
        return self.first() != before

    def state(self) -> str:
        """The mode and why, in one line: "doubt: epoch 1 judges tentatively, 1 trial in 4
        untested, until its verdicts hold at epoch 4 (3 of 8 pairs)", "doubt: epoch 1 not yet
        shown to predict epoch 4 (AUC 0.58 < 0.71 over 8 pairs); tentative verdicts
        withdrawn", "trust: epoch 1's verdicts held at epoch 4 (…)"."""
        return account(self.current, self._words())

    def short(self) -> str:
        """:meth:`state` for the policy line, in the user's words: "doubting epoch 1: 58%
        agreement with epoch 4, 71% needed" (the share of pairs, a trial epoch 1 keeps
        against one it pauses, that epoch 4 orders the same way: the AUC), "trusting epoch
        1: 100% agreement with epoch 4", "trusting epoch 1, as told", "trusting epoch 1 for
        now, testing it at epoch 4" (tentative verdicts), "trusting epoch 1, too late to test
        it at epoch 4" (too near the deadline)."""
        said = short(self.current, self._words())
        told = self.early_signal != "auto" or self.probation == 0
        if self.prior is None or told or 0 in self.agreement:
            return said
        return f"{self._from_prior()}; {said}"

    def _from_prior(self) -> str:
        """What the prior told this search, as the policy line opens while it stands:
        "from search 'runs/a': epoch 1 agreed with epoch 4 in 91% of pairs" (", too few to
        tell" where its pairs are too few to decide, ", its order reversed by then" where
        epoch 1's order was reversed by the end of its curves)."""
        prior = self.prior
        word = prior.verdict(z=self.z, floor=self.floor)
        return f"from {prior.label}: {prior.agreement()}" + _SAID_OF.get(word, "")

    def _words(self) -> dict[str, object]:
        """What fills in :meth:`state` and :meth:`short` (see :func:`~._trust_states.account`)."""
        low = f"epoch {epoch_number(self.milestones[0])}"
        if len(self.milestones) == 1:
            return {"low": low}
        high = f"epoch {epoch_number(self.milestones[1])}"
        return {
            "low": low, "high": high, "audit": self.audit, "seen": self.seen[0],
            "pairs": self.pairs, "evidence": self._evidence(low, high),
            "agreement": self._agreement(low, high),
        }  # fmt: skip

    def _agreement(self, low: str, high: str) -> str:
        """The lowest rung's last test in the user's words: "doubting epoch 1: 58% agreement
        with epoch 4, 71% needed"."""
        verb = "trusting" if self.current.judges else "doubting"
        if 0 not in self.agreement:
            return f"{verb} {low} until it predicts {high}"
        agreed = f"{verb} {low}: {self.agreement[0][0]:.0%} agreement with {high}"
        needed = self._needed.get(0)
        return agreed if self.current.judges or needed is None else f"{agreed}, {needed:.0%} needed"

    def _bar(self) -> str:
        """The AUC the lowest rung's last test needed, as " > 0.71" (held) or " < 0.71"."""
        needed = self._needed.get(0)
        return "" if needed is None else f" {'>' if self.current.judges else '<'} {needed:.2f}"

    def _evidence(self, low: str, high: str) -> str:
        """What the lowest rung's last test found (or how far it is from its first)."""
        if 0 not in self.agreement:
            return f"{low} not yet shown to predict {high} ({self.seen[0]} of {self.pairs} pairs)"
        auc, n = self.agreement[0]
        if self.current.judges:
            return f"{low}'s verdicts held at {high} (AUC {auc:.2f}{self._bar()} over {n} pairs)"
        return f"{low} not yet shown to predict {high} (AUC {auc:.2f}{self._bar()} over {n} pairs)"
