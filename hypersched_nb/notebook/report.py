"""A self-contained HTML report of one search: open it anywhere, no kernel, no network.

It holds the summary (policy, deadline, best configuration and metric), the workers each
trial held over time against the deadline, the learning curves, the trials table and the
journal of decisions. plotly.js is written into the file once, so it works offline.
"""

from __future__ import annotations

import html
import math
import os
from pathlib import Path

from hypersched_nb.experiment.snapshot import ExperimentSnapshot
from hypersched_nb.notebook.figures import allocation_figure, curves_figure

__all__ = ["write_report", "report_html"]

_STYLE = """
body{font-family:system-ui,sans-serif;margin:24px;color:#222}
table{border-collapse:collapse;font-size:12px}td,th{padding:2px 8px;border-bottom:1px solid #eee;text-align:left}
.num{text-align:right;font-variant-numeric:tabular-nums}h1{font-size:20px}h2{font-size:16px;margin-top:28px}
pre{background:#f6f6f6;padding:8px}
"""


def report_html(snap: ExperimentSnapshot, *, title: str = "hypersched_nb search") -> str:
    """The report as one HTML string."""
    import plotly.io as pio

    alloc = pio.to_html(allocation_figure(snap, height=380), full_html=False, include_plotlyjs=True)
    curves = pio.to_html(curves_figure(snap, height=380), full_html=False, include_plotlyjs=False)
    best = "no trial reported a result"
    if snap.best is not None:
        cfg = "\n".join(f"  {k} = {v!r}" for k, v in snap.best.config.items())
        best = (
            f"{snap.metric} = {snap.best.metric:.6g} (trial {snap.best.trial_id}, epoch {snap.best.epoch})\n"
            f"configuration:\n{cfg}"
        )
    when = "" if snap.started is None else f", started {snap.started:%Y-%m-%d %H:%M:%S}"
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{_STYLE}</style></head><body><h1>{html.escape(title)}</h1>"
        f"<p>{html.escape(snap.policy)} search, {html.escape(snap.status)}{html.escape(when)}; deadline "
        f"{html.escape(snap.deadline_text())} ({snap.deadline:.0f} s); {snap.workers} workers; "
        f"{len(snap.trials)} trials, {snap.stopped} stopped.</p>"
        f"<h2>Best</h2><pre>{html.escape(best)}</pre>"
        f"<h2>Workers per trial against the deadline</h2>{alloc}"
        f"<h2>Learning curves</h2>{curves}"
        f"<h2>Trials</h2>{_trials_table(snap)}"
        f"<h2>Decisions</h2>{_events_table(snap)}</body></html>"
    )


def write_report(
    snap: ExperimentSnapshot, path: str | os.PathLike, *, title: str = "hypersched_nb search"
) -> Path:
    """Write the report to ``path`` (folders made as needed) and return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(report_html(snap, title=title), encoding="utf-8")
    return path


def _num(v) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return ""
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _trials_table(snap: ExperimentSnapshot) -> str:
    keys = sorted({k for r in snap.trials for k in r.config})
    head = [
        "trial",
        "state",
        "epochs",
        "best",
        "last",
        "peak workers",
        "start",
        "stop",
        "reason",
        *keys,
    ]
    rows = []
    for r in snap.trials:
        cells = [
            r.trial_id,
            r.state,
            r.epochs,
            r.best,
            r.last,
            r.peak_workers,
            r.started_at,
            r.stopped_at,
        ]
        tds = "".join(f"<td class='num'>{_num(c)}</td>" for c in cells)
        tds += f"<td>{html.escape(r.reason)}</td>"
        tds += "".join(f"<td class='num'>{html.escape(_num(r.config.get(k)))}</td>" for k in keys)
        rows.append(f"<tr>{tds}</tr>")
    ths = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    return f"<table><tr>{ths}</tr>{''.join(rows)}</table>"


def _events_table(snap: ExperimentSnapshot) -> str:
    rows = "".join(
        f"<tr><td class='num'>{e['time']:.1f}</td><td class='num'>{'' if e['trial'] is None else e['trial']}</td>"
        f"<td>{html.escape(e['action'])}</td><td>{html.escape(str(e['reason']))}</td></tr>"
        for e in snap.events
    )
    return f"<table><tr><th>time (s)</th><th>trial</th><th>action</th><th>reason</th></tr>{rows}</table>"
