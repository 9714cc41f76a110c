"""Rule 2's states, and its moves: one table says every legal move (see :mod:`._trust`).

Rule 2 stands in one of these states on the lowest rung; its higher rungs on probation (when
``probation`` is 2 or more) keep a plain trusted flag each, as no line reports them::

    TENTATIVE --arrive_late--> LATE --arrive--> TENTATIVE   (a trial's first value there)
    TENTATIVE, LATE --fail--> WITHDRAWN --pass--> EARNED_AFTER_WITHDRAWAL
    TENTATIVE, LATE, DOUBT --pass--> EARNED                 DOUBT --fail--> DOUBT
    every state --trust--> TOLD (TOLD_AFTER_WITHDRAWAL once withdrawn; ONLY stays ONLY)
    every state --doubt--> DOUBT (WITHDRAWN once withdrawn; ONLY stays ONLY)
    TENTATIVE --prior_trust--> PRIOR, --prior_doubt--> DOUBT (a past search's word, at the start)
    PRIOR --pass--> EARNED       PRIOR --fail--> WITHDRAWN (this search's own test disagreed)

A search starts in ONLY (one rung), TOLD (``early_signal="trust"``), UNDOUBTED (no rung on
probation), TENTATIVE (``"auto"``) or DOUBT (``"doubt"``): :func:`initial`. What the policy
line says of rule 2 (:func:`account`, :func:`short`) is read from the state, filled in with
the evidence its tests gathered.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from hypersched_nb.errors import InvalidTransition

__all__ = ["TRANSITIONS", "TrustState", "account", "initial", "move", "short"]


class TrustState(enum.Enum):
    """Where rule 2 stands on the lowest rung: whether it judges, and why."""

    ONLY = "only"  # the only rung: it judges, and there is no later epoch to test it against
    TOLD = "told"  # early_signal="trust": every rung judges from the first result
    UNDOUBTED = "undoubted"  # no rung on probation: it judges from the start
    TENTATIVE = "tentative"  # "auto", in doubt: it judges for now, 1 trial in `audit` untested
    LATE = "late"  # tentative, too near the deadline for the test to act: none untested
    DOUBT = "doubt"  # it judges no one until its verdicts hold at the next rung
    WITHDRAWN = "withdrawn"  # a test failed while tentative: in doubt, the paused owed back
    EARNED = "earned"  # its verdicts held at the next rung: it judges for good
    EARNED_AFTER_WITHDRAWAL = "earned after withdrawal"  # held at a later test, after a failed one
    TOLD_AFTER_WITHDRAWAL = "told after withdrawal"  # told to trust after a failed test
    PRIOR = "prior"  # a past search's epoch 1 agreed: it judges, checked by this search's test

    def __repr__(self) -> str:
        return f"TrustState.{self.name}"

    @property
    def judges(self) -> bool:
        """Does the lowest rung judge for good (rule 2's mode is "trust")?"""
        return self in _JUDGING

    @property
    def final(self) -> bool:
        """Are the lowest rung's verdicts final: it judges, and no test of this search can
        take them back (a past search's word can be, as tentative verdicts can)?"""
        return self in _JUDGING and self is not _PRIOR

    @property
    def tentative(self) -> bool:
        """Does the lowest rung judge for now, until its test?"""
        return self in (_TENTATIVE, _LATE)


_S = TrustState
_ONLY, _TOLD, _UNDOUBTED, _TENTATIVE, _LATE = _S.ONLY, _S.TOLD, _S.UNDOUBTED, _S.TENTATIVE, _S.LATE
_DOUBT, _WITHDRAWN, _EARNED = _S.DOUBT, _S.WITHDRAWN, _S.EARNED
_EARNED_W, _TOLD_W = _S.EARNED_AFTER_WITHDRAWAL, _S.TOLD_AFTER_WITHDRAWAL
_PRIOR = _S.PRIOR
_JUDGING = frozenset({_ONLY, _TOLD, _UNDOUBTED, _EARNED, _EARNED_W, _TOLD_W, _PRIOR})

#: ``TRANSITIONS[state][move] -> new state``. The moves: a trial's first value at the lowest
#: rung while it judges tentatively (``arrive``: the test can still act; ``arrive_late``: too
#: near the deadline), the lowest rung's test (``pass``; ``fail``: its verdicts did not hold,
#: with trials both kept and paused to compare), the user's word (``trust``, ``doubt``) and
#: a past search's, at the start (``prior_trust``; ``prior_doubt``: its order was reversed).
#: the moves of both states that judge epoch 1 tentatively (TENTATIVE and LATE differ only
#: in whether the test could still act: see ``Trust.state``)
_JUDGING_TENTATIVELY = {
    "arrive": _TENTATIVE,
    "arrive_late": _LATE,
    "pass": _EARNED,
    "fail": _WITHDRAWN,
    "trust": _TOLD,
    "doubt": _DOUBT,
}
TRANSITIONS: dict[TrustState, dict[str, TrustState]] = {
    _ONLY: {"trust": _ONLY, "doubt": _ONLY},
    _TOLD: {"trust": _TOLD, "doubt": _DOUBT},
    _UNDOUBTED: {"trust": _TOLD, "doubt": _DOUBT},
    _TENTATIVE: {**_JUDGING_TENTATIVELY, "prior_trust": _PRIOR, "prior_doubt": _DOUBT},
    _LATE: _JUDGING_TENTATIVELY,
    _PRIOR: {"pass": _EARNED, "fail": _WITHDRAWN, "trust": _TOLD, "doubt": _DOUBT},
    _DOUBT: {"pass": _EARNED, "fail": _DOUBT, "trust": _TOLD, "doubt": _DOUBT},
    _WITHDRAWN: {"pass": _EARNED_W, "fail": _WITHDRAWN, "trust": _TOLD_W, "doubt": _WITHDRAWN},
    _EARNED: {"trust": _TOLD, "doubt": _DOUBT},
    _EARNED_W: {"trust": _TOLD_W, "doubt": _WITHDRAWN},
    _TOLD_W: {"trust": _TOLD_W, "doubt": _WITHDRAWN},
}


def initial(*, rungs: int, early_signal: str, probation: int) -> TrustState:
    """The state a search starts in, over ``rungs`` rungs with the lowest ``probation`` of
    them (never the top one) on probation."""
    if rungs == 1:
        return _ONLY
    if early_signal == "trust":
        return _TOLD
    if probation == 0:
        return _UNDOUBTED
    return _TENTATIVE if early_signal == "auto" else _DOUBT


def move(state: TrustState, name: str) -> TrustState:
    """The state ``name`` leads to from ``state``, or :class:`InvalidTransition`."""
    try:
        return TRANSITIONS[state][name]
    except KeyError:
        raise InvalidTransition(f"rule 2: can't {name} when state={state.name}") from None


_TESTING = "({seen} of {pairs} pairs)"
_ACCOUNT: dict[TrustState, str] = {
    _ONLY: "trust: {low} is the only epoch judged",
    _TOLD: "trust: {low} judges from the start (early_signal='trust')",
    _UNDOUBTED: "trust: {low} judges from the start (no epoch on probation)",
    _TENTATIVE: "doubt: {low} judges tentatively, 1 trial in {audit} untested, until its "
    "verdicts hold at {high} " + _TESTING,
    _LATE: "doubt: {low} judges tentatively, too near the deadline to test it against {high} "
    + _TESTING,
    _DOUBT: "doubt: {evidence}",
    _WITHDRAWN: "doubt: {evidence}; tentative verdicts withdrawn",
    _EARNED: "trust: {evidence}",
    _EARNED_W: "trust: {evidence}; tentative verdicts withdrawn",
    _TOLD_W: "trust: {low} judges from the start (early_signal='trust')",
    _PRIOR: "trust: {low} judges from the start, as the past search showed, until this "
    "search's own pairs disagree " + _TESTING,
}
_SHORT: dict[TrustState, str] = {
    _ONLY: "trusting {low}",
    _TOLD: "trusting {low}, as told",
    _UNDOUBTED: "trusting {low}",
    _TENTATIVE: "trusting {low} for now, testing it at {high}",
    _LATE: "trusting {low}, too late to test it at {high}",
    _DOUBT: "{agreement}",
    _WITHDRAWN: "{agreement}",
    _EARNED: "{agreement}",
    _EARNED_W: "{agreement}",
    _TOLD_W: "trusting {low}, as told",
    _PRIOR: "trusting {low}, testing it at {high}",
}


def account(state: TrustState, words: Mapping[str, object]) -> str:
    """The mode and why, in one line, for ``state`` (``Trust.state``): ``words`` fill it in
    (``low`` and ``high``, the epochs; ``audit``; ``seen`` and ``pairs``; ``evidence``, what
    the last test found)."""
    return _ACCOUNT[state].format_map(words)


def short(state: TrustState, words: Mapping[str, object]) -> str:
    """:func:`account` for the policy line (``Trust.short``); ``agreement`` among ``words``
    is the last test's agreement in the user's words."""
    return _SHORT[state].format_map(words)
