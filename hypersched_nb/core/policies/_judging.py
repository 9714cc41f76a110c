"""HyperSched's rule 1: judge each rung once, and pause the trials below its cutoff.

As in ASHA, a result that newly passes a judging milestone r·η^i is compared with the
(1 − 1/η) percentile of the values recorded there before it (at least ``min_peers`` of them:
one, as in ASHA; the paper needs two) and the trial is paused below it. The paper re-checks
every passed rung on every result, which pauses good trials late on their oldest, noisiest
values; here a pass is final, except one made with at most ``confirm_peers`` (η − 1; none
when told to trust, as in ASHA) peers, which is checked once more when the rung has more
values. Which rungs judge is rule 2's (:mod:`._trust`); whether a trial below a cutoff
pauses now is the policy's (only while exploring, or when a leader can take its worker).

Example (η = 4; rung 4 judges with one peer, and a lone pass is confirmed later):
    >>> from hypersched_nb.core.policies._rungs import Rung
    >>> judging = Judging([Rung(4, eta=4)], confirm_peers=3)
    >>> judging.reach(0, 4, 0.6, trusted=[True])  # alone: nothing to compare with
    (None, (0, None))
    >>> judging.passed(0, 0)  # a provisional pass
    >>> for tid, value in enumerate([0.7, 0.8, 0.9, 0.95], start=1):
    ...     _ = judging.reach(tid, 4, value, trusted=[True])
    >>> judging.below(0, None, 0.65)  # confirmed once: 0.6 is below the five values' cutoff
    (0, 0.6, 0.9)
"""

from __future__ import annotations

from collections.abc import Sequence

from hypersched_nb.core.policies._rungs import Rung

__all__ = ["Judging"]


class Judging:
    """The rungs, the values each trial recorded there, and its passes still to confirm."""

    __slots__ = ("_passed", "_provisional", "confirm_peers", "rungs")

    def __init__(self, rungs: Sequence[Rung], confirm_peers: int):
        self.rungs, self.confirm_peers = list(rungs), confirm_peers
        self._passed: dict[int, int] = {}  # trial -> how many rungs (the lowest) hold its value
        self._provisional: dict[int, set[int]] = {}  # trial -> rungs it passed with few peers

    def reach(
        self, tid: int, epoch: int, score: float, trusted: Sequence[bool]
    ) -> tuple[int | None, tuple[int, float | None] | None]:
        """Record ``score`` at every rung the trial reaches with this result. Returns
        (paired, judge): ``paired`` the rung below the first one newly reached, where the
        trial has a value (one more pair for rule 2), and ``judge`` (rung index, cutoff
        before this value) of the highest newly reached rung that judges."""
        rungs, passed = self.rungs, self._passed.get(tid, 0)  # rungs[:passed] have its value
        paired = judge = None
        i = passed
        while i < len(rungs) and epoch >= rungs[i].milestone:
            cutoff = rungs[i].cutoff()
            rungs[i].record(tid, score)
            if i == passed > 0:
                paired = i - 1
            if trusted[i]:
                judge = (i, cutoff)
            i += 1
        if i > passed:
            self._passed[tid] = i
        return paired, judge

    def below(
        self, tid: int, judge: tuple[int, float | None] | None, score: float
    ) -> tuple[int, float, float] | None:
        """(rung index, value, cutoff) of the rung whose cutoff the trial is below, if any:
        a provisional pass confirmed now that its rung has more values, else ``judge``'s."""
        provisional = self._provisional.get(tid)
        for i in sorted(provisional) if provisional else ():
            rung = self.rungs[i]
            if len(rung.recorded) > self.confirm_peers + 1:
                provisional.discard(i)
                if rung.below(tid):
                    return i, rung.recorded[tid], rung.cutoff()
        if judge is not None and judge[1] is not None and score < judge[1]:
            return judge[0], score, judge[1]
        return None

    def has_provisional(self, tid: int) -> bool:
        return tid in self._provisional

    def passed(self, tid: int, i: int) -> None:
        """The trial passed rung ``i``: provisionally, with ``confirm_peers`` peers or fewer."""
        if len(self.rungs[i].recorded) <= self.confirm_peers:
            self._provisional.setdefault(tid, set()).add(i)

    def forget(self, tid: int) -> None:
        """The trial left the search: no pass of its is confirmed any more."""
        self._provisional.pop(tid, None)
