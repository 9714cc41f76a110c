"""Searches side by side: a table of what each found, when, and at what cost; the best so
far of each against time; and the searches a runs folder holds.

A search is a checkpoint folder (its journal is read, as :meth:`Experiment.open` reads it)
or an Experiment (live, finished, opened or replayed). What each row says comes from one
snapshot of the search; when it found its best comes from its journal, which holds every
result with its time. A replay of a trace keeps no journal, so its ``found_at`` is NaN
and it draws no line.

Example (two searches of a runs folder)::

    >>> import hypersched_nb as hs                                     # doctest: +SKIP
    >>> runs = hs.searches("hypersched-runs")                          # doctest: +SKIP
    >>> hs.compare(runs.path[:2])                                      # doctest: +SKIP
    >>> hs.compare_plot(runs.path[:2])                                 # doctest: +SKIP
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hypersched_nb.experiment.journal import Journal, JournalError, journal_url, read_journal
from hypersched_nb.experiment.snapshot import ExperimentSnapshot

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Compared", "best_so_far", "capacity_of", "compare", "compare_plot", "searches"]

COLUMNS = (
    "policy", "status", "deadline", "workers", "trials", "completed", "best", "found_at",
    "worker_seconds", "cluster_seconds",
)  # fmt: skip
LISTED = ("path", "started", "trainable", "policy", "status", "best", "trials")


@dataclass(frozen=True)
class Compared:
    """One search as compared: its label, a snapshot, its best so far against time
    (``(time, best)`` at every improvement; None: the search keeps no journal) and its
    cluster's size over time (the journal's where it has one, else the snapshot's)."""

    label: str
    snapshot: ExperimentSnapshot
    curve: tuple[tuple[float, float], ...] | None
    capacity: tuple[tuple[float, int], ...]  # (time, workers in the cluster), in time order

    @classmethod
    def of(cls, search, index: int = 0) -> Compared:
        """``search``: a checkpoint folder (or its journal), or an Experiment."""
        if isinstance(search, (str, os.PathLike)):
            from hypersched_nb.experiment.experiment import Experiment

            search = Experiment.open(search)
        snap = search.statistics()
        folder = search.checkpoint_dir
        curve, capacity = None, snap.capacity
        if folder is not None:
            try:
                journal = read_journal(folder)
            except JournalError:  # a live search that has not written its journal yet
                journal = None
            if journal is not None:
                curve = best_so_far(journal, until=snap.time)
                capacity = capacity_of(journal, until=snap.time) or capacity
        label = _label(folder) if folder is not None else f"{snap.policy} replay {index}"
        return cls(label, snap, curve, capacity)

    def row(self) -> dict:
        snap, best = self.snapshot, self.snapshot.best
        metric = best.metric if best is not None else math.nan
        found = math.nan
        if self.curve and best is not None:
            sign = 1 if snap.mode == "max" else -1
            found = next((t for t, v in self.curve if sign * v >= sign * metric), math.nan)
        return {
            "search": self.label, "policy": snap.policy, "status": snap.status,
            "deadline": snap.deadline,
            "workers": max([snap.workers, *(n for _, n in self.capacity)]),
            "trials": len(snap.trials),
            "completed": len({e["trial"] for e in snap.events if e["action"] == "Complete"}),
            "best": metric, "found_at": found,
            "worker_seconds": _held_seconds(snap),
            "cluster_seconds": _cluster_seconds(self.capacity, snap.time),
        }  # fmt: skip


def compare(searches: Iterable) -> pd.DataFrame:
    """One row per search (index: its folder's name): its policy and status, deadline
    (seconds), the most workers its cluster had, trials offered and completed, the best
    metric, when it was found (seconds since the start; NaN where the search keeps no
    journal), the worker-seconds its trials held and the worker-seconds of its cluster."""
    import pandas as pd

    rows = [c.row() for c in _compared(searches)]
    return pd.DataFrame(rows, columns=["search", *COLUMNS]).set_index("search")


def compare_plot(searches: Iterable, *, height: int = 360):
    """A plotly figure of each search's best so far against time (seconds since its
    start), one line per search, each drawn on to the search's last moment."""
    import plotly.graph_objects as go

    compared = _compared(searches)
    fig = go.Figure()
    for c in compared:
        if not c.curve:
            continue
        xs = [t for t, _ in c.curve] + [max(c.snapshot.time, c.curve[-1][0])]
        ys = [v for _, v in c.curve] + [c.curve[-1][1]]
        fig.add_scatter(x=xs, y=ys, name=c.label, mode="lines", line_shape="hv")
    metric = compared[0].snapshot.metric if compared else "metric"
    fig.update_layout(
        height=height, title=f"best {metric} so far", xaxis_title="seconds since the start",
        yaxis_title=metric, legend_title="search",
    )  # fmt: skip
    return fig


def searches(folder="hypersched-runs") -> pd.DataFrame:
    """The searches of a runs folder (each a subfolder holding ``journal.jsonl``), newest
    first: path, when it started, its trainable, policy, status ("unfinished": running, or
    its kernel died), best metric and trials offered."""
    import pandas as pd

    rows = []
    root = os.fspath(folder)
    for name in sorted(os.listdir(root)) if os.path.isdir(root) else ():
        path = os.path.join(root, name)
        if not os.path.isfile(journal_url(path)):
            continue
        try:
            journal = read_journal(path)
        except JournalError:  # not a search this version reads: not listed
            continue
        rows.append(_listed(path, journal))
    frame = pd.DataFrame(rows, columns=list(LISTED))
    return frame.sort_values("started", ascending=False, ignore_index=True)


def best_so_far(journal: Journal, *, until: float = math.inf) -> tuple[tuple[float, float], ...]:
    """``(time, best)`` at every result of the search in ``journal`` that improved on the
    best so far, up to ``until`` (results past the deadline in force, which the search
    dropped, are left out)."""
    sign = 1 if journal.settings["mode"] == "max" else -1
    deadline = journal.settings["deadline"]
    out: list[tuple[float, float]] = []
    for record in journal.records:
        if record["k"] == "now" and "deadline" in record:
            deadline = record["deadline"]
        if record["k"] != "events":
            continue
        for e in record["events"]:
            if e["type"] != "Result" or e["time"] > min(deadline, until):
                continue
            metric = e["metric"]
            if _finite(metric) and (not out or sign * metric > sign * out[-1][1]):
                out.append((e["time"], metric))
    return tuple(out)


def capacity_of(journal: Journal, *, until: float = math.inf) -> tuple[tuple[float, int], ...]:
    """The cluster's size over time as the search in ``journal`` recorded it: ``(time,
    workers)`` at every change, up to ``until``."""
    return tuple(
        (r["t"], r["workers"]) for r in journal.records if r["k"] == "capacity" and r["t"] <= until
    )


# ---------------------------------------------------------------------------- helpers


def _compared(searches: Iterable) -> list[Compared]:
    if isinstance(searches, (str, os.PathLike)) or hasattr(searches, "statistics"):
        searches = [searches]  # one search alone
    return [Compared.of(s, i) for i, s in enumerate(searches)]


def _listed(path: str, journal: Journal) -> dict:
    s: Mapping = journal.settings
    curve = best_so_far(journal)
    return {
        "path": path, "started": journal.started, "trainable": s.get("trainable"),
        "policy": s.get("policy"),
        "status": journal.ended["status"] if journal.ended is not None else "unfinished",
        "best": curve[-1][1] if curve else math.nan,
        "trials": sum(1 for r in journal.records if r["k"] == "offer" and r["config"] is not None),
    }  # fmt: skip


def _label(folder) -> str:
    return os.path.basename(os.fspath(folder).rstrip("/")) or os.fspath(folder)


def _held_seconds(snap: ExperimentSnapshot) -> float:
    """Worker-seconds held by trials, from the start to the snapshot's time."""
    times, series = snap.allocation_series()
    widths = [b - a for a, b in zip(times, times[1:], strict=False)]
    return float(sum(w * n for row in series.values() for w, n in zip(widths, row, strict=False)))


def _cluster_seconds(capacity, end: float) -> float:
    """Worker-seconds of a cluster whose size over time is ``capacity``, up to ``end``."""
    ends = [t for t, _ in capacity[1:]] + [end]
    return float(
        sum(n * max(0.0, min(b, end) - a) for (a, n), b in zip(capacity, ends, strict=True))
    )


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)
