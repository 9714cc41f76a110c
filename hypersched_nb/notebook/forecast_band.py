"""One forecast as the dashboard's panel reads it: per cluster size, the best expected by
each deadline, and every run's best, so that "how many runs beat the best" is counted
against the best when it shows, not the best when the forecast was made (a forecast made
30 s ago compared with a best since beaten would promise what is already done)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

import numpy as np

__all__ = ["Band", "Point"]


@dataclass(frozen=True, slots=True)
class Point:
    """The forecast by one deadline on one cluster size."""

    workers: int
    expected: float
    p10: float
    p90: float
    p_beat: float  # share of the runs beating the best (NaN before any result)


@dataclass(frozen=True)
class Band:
    """One forecast as the panel draws it: per cluster size (row), the best by each deadline
    (column, in seconds on the search's clock, ascending). Where the search had a best, the
    first column is now, where the best so far is the best. ``finals`` (cluster sizes, runs,
    deadlines) holds every run's best, where the forecast kept them."""

    deadlines: tuple[float, ...]
    workers: tuple[int, ...]  # the cluster's size first
    expected: np.ndarray  # (workers, deadlines)
    p10: np.ndarray
    p90: np.ndarray
    p_beat: np.ndarray
    now: float
    best: float
    runs: int
    note: str  # what it is drawn from (Forecast.note)
    made: datetime
    finals: np.ndarray | None = None
    mode: str = "max"

    @classmethod
    def of(cls, frame, *, made: datetime, mode: str = "max") -> Band:
        """The band of a forecast's frame (``Experiment.forecast``'s DataFrame)."""
        at = frame.attrs
        workers = tuple(dict.fromkeys(int(w) for w in frame.workers))
        asked = list(dict.fromkeys(float(d) for d in frame.deadline))  # the finals' order
        deadlines = sorted(asked)
        wide = frame.pivot(index="workers", columns="deadline")
        grids = {
            col: wide[col].loc[list(workers), deadlines].to_numpy(dtype=float)
            for col in ("expected", "p10", "p90", "p_beat")
        }
        finals = at.get("finals")
        if finals is not None:
            finals = np.asarray(finals, dtype=float)[..., [asked.index(d) for d in deadlines]]
        best = float(at["best"])
        if math.isfinite(best) and at["now"] < deadlines[0]:  # by now: the best so far
            deadlines.insert(0, float(at["now"]))
            for col, grid in grids.items():
                first = 0.0 if col == "p_beat" else best
                grids[col] = np.hstack([np.full((len(workers), 1), first), grid])
            if finals is not None:
                finals = np.concatenate([np.full(finals.shape[:2] + (1,), best), finals], -1)
        return cls(
            tuple(deadlines), workers, grids["expected"], grids["p10"], grids["p90"],
            grids["p_beat"], float(at["now"]), best, int(at["runs"]), str(at["note"]), made,
            finals, mode,
        )  # fmt: skip

    def covers(self, deadline: float) -> bool:
        return self.deadlines[0] <= deadline <= self.deadlines[-1]

    def beating(self, best: float | None) -> np.ndarray:
        """The share of runs whose best beats ``best`` (the search's best now), per cluster
        size and deadline; the forecast's own shares where it kept no runs or ``best`` is
        not a number."""
        if self.finals is None or best is None or not math.isfinite(best):
            return self.p_beat
        sign = 1.0 if self.mode == "max" else -1.0
        with np.errstate(invalid="ignore"):
            return np.mean(sign * (self.finals - best) > 0, axis=1)

    def at(self, deadline: float, best: float | None = None) -> tuple[Point, ...]:
        """The forecast by ``deadline`` on each cluster size, interpolated linearly between
        the deadlines simulated (held at the ends); its shares against ``best`` (default:
        the best when it was made)."""
        xs = np.asarray(self.deadlines)

        def read(grid: np.ndarray, i: int) -> float:
            return float(np.interp(deadline, xs, grid[i]))

        grids = (self.expected, self.p10, self.p90, self.beating(best))
        return tuple(
            Point(w, *(read(grid, i) for grid in grids)) for i, w in enumerate(self.workers)
        )
