"""The grey bundle of the live curves figure, kept from one redraw to the next.

A trial that is over (terminated or errored) never reports again, so its curve is bundled
once, when it is first seen over, onto the end of the sealed part; a redraw bundles only
the trials still going and blanks, in a copy of the sealed part, the curves of those drawn
alone now. In a search of 10,000 trials, most of them over, a redraw then bundles a few
hundred curves instead of every one. The points are those of
:func:`~.figures.bundle_curves` of the same trials, in another order: what is drawn is the
same.
"""

from __future__ import annotations

import math

import numpy as np

from hypersched_nb.experiment.snapshot import ExperimentSnapshot, TrialRow
from hypersched_nb.notebook.figures import Bundle, bundle_curves

__all__ = ["CurveBundler"]


class CurveBundler:
    """``CurveBundler().bundle(snap, alone)``: the curves of every trial of ``snap`` that
    reported, except those in ``alone``, as one :class:`~.figures.Bundle`."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._spans: dict[int, tuple[int, int]] = {}  # trial sealed -> where its points are
        self._parts: list[Bundle] = []  # the sealed points, in the order they were sealed
        self._points = 0
        self._mask = np.zeros(0, dtype=bool)  # the positions sealed
        self._ends: list[tuple[int, TrialRow]] = []  # the first and the last row sealed, where

    def bundle(self, snap: ExperimentSnapshot, alone: frozenset[int]) -> Bundle:
        rows, c = snap.trials, snap.columns
        if not self._continued_by(rows):
            self._reset()
        if len(self._mask) < len(rows):
            self._mask = np.concatenate([self._mask, np.zeros(len(rows) - len(self._mask), bool)])
        self._seal(np.flatnonzero(c.over & ~self._mask[: len(rows)]).tolist(), rows)
        sealed = self._joined()
        blanked = [self._spans[t] for t in alone if t in self._spans]
        if blanked:
            sealed = Bundle(sealed.epoch, sealed.metric.copy(), sealed.trial)
            for start, stop in blanked:
                sealed.metric[start:stop] = math.nan
        drawn_alone = np.isin(c.trial_id, np.fromiter(alone, dtype=np.int64, count=len(alone)))
        going = np.flatnonzero(~c.over & (c.points > 0) & ~drawn_alone).tolist()
        if not going:
            return sealed
        fresh = bundle_curves(tuple(map(rows.__getitem__, going)))
        return Bundle(
            np.concatenate([sealed.epoch, fresh.epoch]),
            np.concatenate([sealed.metric, fresh.metric]),
            np.concatenate([sealed.trial, fresh.trial]),
        )

    def _continued_by(self, rows: tuple[TrialRow, ...]) -> bool:
        """``rows`` are a later snapshot's of the same search: the first and the last row
        sealed are still where they were (a search hands out a trial's row unchanged once
        it is over; a search resumed, or another one, hands out rows of its own)."""
        return all(i < len(rows) and rows[i] is row for i, row in self._ends)

    def _seal(self, positions: list[int], rows: tuple[TrialRow, ...]) -> None:
        """The trials at ``positions``, over since the last redraw, join the sealed part."""
        if not positions:
            return
        for i in positions:
            size = len(rows[i].metrics) + 1 if rows[i].metrics else 0
            self._spans[rows[i].trial_id] = (self._points, self._points + size)
            self._points += size
        self._mask[positions] = True
        self._ends = [self._ends[0] if self._ends else (positions[0], rows[positions[0]]),
                      (positions[-1], rows[positions[-1]])]  # fmt: skip
        reported = tuple(rows[i] for i in positions if rows[i].metrics)
        if reported:
            self._parts.append(bundle_curves(reported))

    def _joined(self) -> Bundle:
        """The sealed points as one bundle (its parts joined once, then kept so)."""
        if not self._parts:
            return Bundle(np.zeros(0, np.int8), np.zeros(0, np.float32), np.zeros(0, np.int8))
        if len(self._parts) > 1:
            parts = self._parts
            self._parts = [Bundle(
                np.concatenate([p.epoch for p in parts]), np.concatenate([p.metric for p in parts]),
                np.concatenate([p.trial for p in parts]),
            )]  # fmt: skip
        return self._parts[0]
