"""The trials as rows of a snapshot, each built again only when its trial changed.

A snapshot of a search holds one frozen :class:`TrialRow` per trial, and the dashboard asks
for one every second. Building every row each time would cost the search's size in new
objects, and in a kernel of a few hundred thousand objects those are what sets off Python's
full garbage collections (while one runs, every thread waits: it lands on the snapshot that
set it off). Most trials of a long search are over and never change again, so a row is kept
with the trial's :func:`mark` (what a row shows, read without building anything that lives)
and handed out again while the mark is the same; the row of a trial already seen over
(terminated or errored, states it never leaves) is handed out without even a mark. The
same rows are kept as columns too (:mod:`.columns`), written only where a row was built.
"""

from __future__ import annotations

import math

from hypersched_nb.core.trial import Trial, TrialState
from hypersched_nb.experiment.columns import ColumnKeeper, TrialColumns
from hypersched_nb.experiment.snapshot import TrialRow

__all__ = ["Rows", "row"]

_OVER = frozenset((TrialState.TERMINATED, TrialState.ERRORED))  # no move leaves them


def row(t: Trial, peak: int) -> TrialRow:
    """The trial ``t`` as it stands, having held at most ``peak`` workers at once."""
    best = (
        t.metrics[t.scores.index(t.best_score)]
        if t.scores and math.isfinite(t.best_score)
        else math.nan
    )
    return TrialRow(
        trial_id=t.trial_id, config=dict(t.config), state=t.state.name, epochs=t.epochs, best=best,
        last=t.metrics[-1] if t.metrics else math.nan, workers=t.workers, peak_workers=peak,
        started_at=t.started_at, stopped_at=t.stopped_at, reason=t.reason, metrics=tuple(t.metrics),
        starts=t.starts, error=t.error,
    )  # fmt: skip


def mark(t: Trial, peak: int) -> tuple:
    """Everything a row of ``t`` shows, or that changes with it (a result replaced by a
    restart from an earlier checkpoint changes its last value or the best)."""
    last = t.metrics[-1] if t.metrics else None
    return (t.state, t.epochs, len(t.metrics), last, t.best_score, t.workers, peak,
            t.started_at, t.stopped_at, t.reason, t.starts, t.error)  # fmt: skip


class Rows:
    """Rows of the trials, each kept while its trial's :func:`mark` stays the same, and their
    columns. The trials come in the same order every time, new ones last (the driver's
    table only grows); a trial seen over is not looked at again, so a snapshot of a long
    search reads the trials still going and the new ones, not every trial."""

    def __init__(self):
        self._rows: list[TrialRow] = []  # by position
        self._marks: list[tuple | None] = []  # the mark each row was built from
        self._ids: list[int] = []  # the trial at each position
        self._open: list[int] = []  # the positions of the trials not over, in order
        self._columns = ColumnKeeper()

    def of(self, trials, peak: dict[int, int]) -> tuple[tuple[TrialRow, ...], TrialColumns]:
        """The rows of ``trials`` (having held at most ``peak`` workers each) and their
        columns."""
        trials, known = list(trials), len(self._rows)
        if len(trials) < known or (known and trials[known - 1].trial_id != self._ids[-1]):
            self.__init__()  # not the table seen so far: anew
            known = 0
        for t in trials[known:]:
            self._rows.append(None)
            self._marks.append(None)
            self._ids.append(t.trial_id)
        going = [*self._open, *range(known, len(trials))]
        self._open = [i for i in going if self._read(i, trials[i], peak)]
        rows = tuple(self._rows)
        return rows, self._columns.frozen(rows)

    def _read(self, i: int, t: Trial, peak: dict[int, int]) -> bool:
        """Bring position ``i`` up to ``t``; True while ``t`` is not over."""
        held = peak.get(t.trial_id, 0)
        now = mark(t, held)
        if now != self._marks[i]:
            self._marks[i], self._rows[i] = now, row(t, held)
            self._columns.write(i, self._rows[i])
        return t.state not in _OVER
