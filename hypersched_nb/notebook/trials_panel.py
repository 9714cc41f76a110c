"""The dashboard's trials, one by one: a table sorted by the column chosen, and a trial chosen
from a list shown whole (its configuration, its curve, the workers it held over time and
every decision about it with its reason).

Plain ipywidgets (a ``Dropdown`` to sort by, a ``Dropdown`` of trials, HTML for the rest):
they need no front-end extension beyond the one the dashboard already uses. The table shows
the ``rows`` first trials in the order asked and the list the ``picks`` best (and the one
chosen), so a search of thousands of trials stays a small message; every trial is in
``exp.results()``. The panel draws only when the search changed (its ``version``) or the
user chose something.
"""

from __future__ import annotations

import html
import math
import threading

from hypersched_nb.experiment.snapshot import ExperimentSnapshot, TrialRow

__all__ = ["SORTS", "TrialsPanel"]

# what the table can be sorted by: (label, key of a row; the best first)
SORTS = ("best", "epochs", "workers now", "most workers", "started", "trial")


class TrialsPanel:
    """``TrialsPanel(snap)``; :meth:`show` brings it to a newer snapshot of the same search."""

    def __init__(self, snap: ExperimentSnapshot, *, rows: int = 15, picks: int = 100):
        import ipywidgets as w

        self.rows, self.picks, self.snap = rows, picks, snap
        self._lock = threading.RLock()  # the dashboard's thread and the user's choices
        self.sort = w.Dropdown(options=SORTS, value="best", description="sort by")
        self.pick = w.Dropdown(description="trial", options=[])
        self.table, self.detail = w.HTML(), w.HTML()
        self.sort.observe(lambda _: self._draw(), names="value")
        self.pick.observe(lambda _: self._draw_detail(), names="value")
        self.widget = w.VBox([w.HBox([self.sort, self.pick]), self.table, self.detail])
        self.show(snap)

    def show(self, snap: ExperimentSnapshot) -> None:
        with self._lock:
            self._show(snap)

    def _show(self, snap: ExperimentSnapshot) -> None:
        self.snap, chosen = snap, self.pick.value
        listed = sorted_rows(snap, "best", first=self.picks)
        if chosen is not None and all(r.trial_id != chosen for r in listed):
            listed += [r for r in (snap.row(chosen),) if r is not None]
        options = tuple((f"#{r.trial_id} {r.state.lower()}, best {_num(r.best)}", r.trial_id)
                        for r in listed)  # fmt: skip
        if options != tuple(self.pick.options):
            self.pick.options = options
            if chosen is not None and any(v == chosen for _, v in options):
                self.pick.value = chosen
        self._draw()

    def _draw(self) -> None:
        with self._lock:
            self._draw_table()

    def _draw_table(self) -> None:
        rows = sorted_rows(self.snap, self.sort.value, first=self.rows)
        head = "".join(
            f"<th>{h}</th>" for h in ("trial", "state", "epochs", "best", "workers", "most", "configuration")
        )  # fmt: skip
        body = "".join(
            f"<tr><td>#{r.trial_id}</td><td>{r.state.lower()}</td><td>{r.epochs}</td>"
            f"<td>{_num(r.best)}</td><td>{r.workers}</td><td>{r.peak_workers}</td>"
            f"<td>{html.escape(config_text(r.config))}</td></tr>"
            for r in rows
        )
        more = len(self.snap.trials) - len(rows)
        tail = f"<i>and {more} more</i>" if more > 0 else ""
        self.table.value = f"<table style='font-size:11px'><tr>{head}</tr>{body}</table>{tail}"
        self._draw_detail()

    def _draw_detail(self) -> None:
        with self._lock:
            chosen = self.pick.value
            row = None if chosen is None else self.snap.row(chosen)
            self.detail.value = "" if row is None else trial_html(self.snap, row)


def sorted_rows(snap: ExperimentSnapshot, by: str, *, first: int | None = None) -> list[TrialRow]:
    """The trials in the order of ``by`` (one of :data:`SORTS`), the best first (ties: the
    older trial); only the ``first`` of them if given. Sorted in numpy on the snapshot's
    columns: a redraw of 10,000 trials reads nothing trial by trial."""
    import numpy as np

    c = snap.columns
    if by == "best":
        sign = 1.0 if snap.mode == "max" else -1.0
        key = np.where(np.isfinite(c.best), -sign * c.best, np.inf)
    elif by == "started":
        key = np.where(np.isnan(c.started_at), np.inf, c.started_at)
    elif by == "trial":
        key = c.trial_id
    else:  # the most first
        attr = {"epochs": "epochs", "workers now": "workers", "most workers": "peak_workers"}[by]
        key = -getattr(c, attr)
    order = np.lexsort((c.trial_id, key))[:first]
    return [snap.trials[i] for i in order]


def trial_html(snap: ExperimentSnapshot, row: TrialRow) -> str:
    """One trial whole: configuration, curve, workers over time, decisions with reasons."""
    curve = ", ".join(f"{i}: {_num(m)}" for i, m in enumerate(row.metrics, 1)) or "no result yet"
    held = [a for a in snap.allocation if a.trial == row.trial_id]
    workers = ", ".join(f"{a.workers} from {a.time:.1f}s" for a in held) or "none"
    decisions = "".join(
        f"<tr><td>{e['time']:.1f}s</td><td>{html.escape(e['action'])}</td>"
        f"<td>{html.escape(str(e['reason']))}</td></tr>"
        for e in snap.events
        if e["trial"] == row.trial_id
    )
    return (
        f"<div style='font-size:11px'><b>trial {row.trial_id}</b> ({row.state.lower()}: "
        f"{html.escape(row.reason)})<br><b>configuration</b> {html.escape(config_text(row.config))}"
        f"<br><b>{html.escape(snap.metric)} by epoch</b> {curve}<br><b>workers</b> {workers}"
        f"<table>{decisions}</table></div>"
    )


def config_text(config) -> str:
    return ", ".join(f"{k}={_num(v)}" for k, v in config.items())


def _num(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}" if math.isfinite(v) else "-"
    return str(v)
