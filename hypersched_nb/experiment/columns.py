"""The trials of a snapshot column by column, as numpy arrays: what the views sort, count and
tabulate. A redraw of a search of 10,000 trials reads a column or two, not 10,000 rows.

A live search keeps its columns as it goes (:class:`ColumnKeeper`, fed by
:class:`._rows.Rows`): only the trials whose rows were built again are written, and a
snapshot gets a frozen copy (a few arrays copied, nothing per trial). A snapshot made any
other way (by hand, reopened, replaced) gets columns read from its rows
(:meth:`TrialColumns.of`); either way they are the columns of that snapshot's very rows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["ColumnKeeper", "TrialColumns"]

# a row's fields kept as columns, with their type (times: NaN for none)
_KINDS: dict[str, type] = {
    "trial_id": np.int64, "state": object, "epochs": np.int64, "best": np.float64,
    "last": np.float64, "workers": np.int64, "peak_workers": np.int64,
    "started_at": np.float64, "stopped_at": np.float64, "reason": object, "over": bool,
    "points": np.int64,
}  # fmt: skip
_OVER = frozenset(("TERMINATED", "ERRORED"))  # states a trial never leaves


@dataclass(frozen=True, eq=False)
class TrialColumns:
    """One array per field of :class:`~.snapshot.TrialRow` (in the rows' order), ``over``,
    ``points`` and ``config``: one array per configuration key (NaN where a configuration lacks it).
    ``rows`` is the tuple of rows they were read from. Read-only."""

    rows: tuple
    trial_id: np.ndarray
    state: np.ndarray  # the state's name, as in the rows
    epochs: np.ndarray
    best: np.ndarray
    last: np.ndarray
    workers: np.ndarray
    peak_workers: np.ndarray
    started_at: np.ndarray
    stopped_at: np.ndarray
    reason: np.ndarray
    over: np.ndarray  # terminated or errored: its row will never change again
    points: np.ndarray  # the length of its curve (``len(row.metrics)``)
    config: Mapping[str, np.ndarray]

    def __len__(self) -> int:
        return len(self.trial_id)

    def position(self, trial_id: int) -> int | None:
        """Where the trial ``trial_id`` is in the rows (None: not there)."""
        found = np.flatnonzero(self.trial_id == trial_id)
        return int(found[0]) if len(found) else None

    @classmethod
    def of(cls, rows: Sequence) -> TrialColumns:
        """The columns of ``rows``, read one by one."""
        keeper = ColumnKeeper()
        for i, row in enumerate(rows):
            keeper.write(i, row)
        return keeper.frozen(tuple(rows))


class ColumnKeeper:
    """Columns written trial by trial at the trial's position; :meth:`frozen` copies them."""

    def __init__(self):
        self._size = 0  # positions written
        self._arrays = {name: np.empty(0, dtype=kind) for name, kind in _KINDS.items()}
        self._config: dict[str, np.ndarray] = {}

    def write(self, i: int, row) -> None:
        """Position ``i`` holds ``row`` now (a trial's configuration never changes: it is
        written the first time its position is)."""
        if i >= len(self._arrays["trial_id"]):
            self._grow(max(64, 2 * (i + 1)))
        a = self._arrays
        a["trial_id"][i], a["state"][i], a["epochs"][i] = row.trial_id, row.state, row.epochs
        a["best"][i], a["last"][i], a["reason"][i] = row.best, row.last, row.reason
        a["over"][i], a["points"][i] = row.state in _OVER, len(row.metrics)
        a["workers"][i], a["peak_workers"][i] = row.workers, row.peak_workers
        a["started_at"][i] = math.nan if row.started_at is None else row.started_at
        a["stopped_at"][i] = math.nan if row.stopped_at is None else row.stopped_at
        if i >= self._size:
            for key, value in row.config.items():
                column = self._config.get(key)
                if column is None:
                    column = self._config[key] = np.full(len(a["trial_id"]), math.nan, dtype=object)
                column[i] = value
            self._size = i + 1

    def _grow(self, size: int) -> None:
        def grown(old: np.ndarray) -> np.ndarray:
            text = old.dtype == object  # NaN where nothing is written yet (a missing key)
            new = np.full(size, math.nan, dtype=object) if text else np.zeros(size, old.dtype)
            new[: len(old)] = old
            return new

        self._arrays = {name: grown(old) for name, old in self._arrays.items()}
        self._config = {key: grown(old) for key, old in self._config.items()}

    def frozen(self, rows: tuple) -> TrialColumns:
        """Read-only copies of the first ``len(rows)`` positions, as the columns of ``rows``."""
        n = len(rows)

        def copy(array: np.ndarray) -> np.ndarray:
            out = array[:n].copy()
            out.flags.writeable = False
            return out

        arrays = {name: copy(array) for name, array in self._arrays.items()}
        config = {key: copy(column) for key, column in self._config.items()}
        return TrialColumns(rows=rows, config=config, **arrays)
