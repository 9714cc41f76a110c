"""A self-contained HTML report of one search: open it anywhere, no kernel, no network.

It holds the summary (policy, deadline, best configuration and metric), the last forecast
asked of the search (``exp.forecast``, the magic or the dashboard: when it was made, for
which deadline, every row) beside what really happened, the workers each trial held over
time against the deadline, the learning curves, the trials table and the journal of
decisions. The figures group trials as the dashboard does.

It stays small at any size: what is large travels gzipped and base64-encoded in the file
(plotly.js, 4.8 MB, as 1.9 MB; the two tables, a tenth of their size) and the browser
unpacks it with its own ``DecompressionStream`` (every major browser since 2023), then
draws the figures from their JSON. A search of 2,000 trials is a report of about 2.3 MB.
Without JavaScript the summary and the best configuration still read; the page says why
the rest does not.
"""

from __future__ import annotations

import base64
import functools
import gzip
import html
import math
import os
from pathlib import Path

from hypersched_nb.experiment.snapshot import ExperimentSnapshot
from hypersched_nb.notebook.drawings import allocation_drawing, curves_drawing
from hypersched_nb.notebook.figures import AllocationHistory

__all__ = ["packed_plotly_js", "report_html", "unpack", "write_report"]

_STYLE = """
body{font-family:system-ui,sans-serif;margin:24px;color:#222}
table{border-collapse:collapse;font-size:12px}td,th{padding:2px 8px;border-bottom:1px solid #eee;text-align:left}
td{text-align:right;font-variant-numeric:tabular-nums}.trials td:nth-child(9),.events td:nth-child(n+3){text-align:left}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}pre{background:#f6f6f6;padding:8px}
.plot{min-height:380px}.unpacked{color:#888}.side{display:flex;gap:32px;align-items:flex-start}
tr.real td{background:#fdf2e9}
"""

# Unpacks the tables, then plotly.js, runs it and draws every figure from its JSON; where it
# cannot, says so in place of what it could not show.
_LOADER = """
const unpack = async (script) => {
  const bytes = Uint8Array.from(atob(script.textContent), (c) => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return await new Response(stream).text();
};
(async () => {
  for (const packed of document.querySelectorAll("script.packed-html")) {
    const place = document.getElementById(packed.dataset.target);
    place.innerHTML = await unpack(packed);
    place.classList.remove("unpacked");
  }
  const plotly = document.createElement("script");
  plotly.textContent = await unpack(document.getElementById("plotly-js"));
  document.head.appendChild(plotly);
  for (const spec of document.querySelectorAll("script.figure")) {
    const place = document.getElementById(spec.dataset.target);
    const fig = JSON.parse(spec.textContent);
    place.textContent = "";
    place.classList.remove("unpacked");
    Plotly.newPlot(place, fig.data, fig.layout, {responsive: true, displaylogo: false});
  }
})().catch((err) => {
  for (const place of document.querySelectorAll(".unpacked")) {
    place.textContent = "This browser could not unpack this part of the report (" + err + ").";
  }
});
"""
_WAITING = "unpacking… (this part needs JavaScript and a browser from 2023 or later)"


def report_html(snap: ExperimentSnapshot, *, title: str = "hypersched_nb search") -> str:
    """The report as one HTML string."""
    history = AllocationHistory().read(snap)
    alloc = allocation_drawing(snap, history=history, height=380).figure()
    curves = curves_drawing(snap, history=history, height=380).figure()
    best = "no trial reported a result"
    if snap.best is not None:
        cfg = "\n".join(f"  {k} = {v!r}" for k, v in snap.best.config.items())
        best = (
            f"{snap.metric} = {snap.best.metric:.6g} (trial {snap.best.trial_id}, epoch {snap.best.epoch})\n"
            f"configuration:\n{cfg}"
        )
    when = "" if snap.started is None else f", started {snap.started:%Y-%m-%d %H:%M:%S}"
    if snap.prior is not None:
        when += f", with {snap.prior} as its prior"
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{_STYLE}</style></head><body><h1>{html.escape(title)}</h1>"
        f"<p>{html.escape(snap.policy)} search, {html.escape(snap.standing_text())} "
        f"({snap.deadline:.0f} s){html.escape(when)}; {snap.workers} workers; "
        f"{len(snap.trials)} trials, {snap.stopped} stopped.</p>"
        f"<h2>Best</h2><pre>{html.escape(best)}</pre>{_forecast_html(snap)}"
        f"<h2>Workers per trial against the deadline</h2>{_figure('allocation', alloc)}"
        f"<h2>Learning curves</h2>{_figure('curves', curves)}"
        f"<h2>Trials</h2>{_packed_html('trials', _trials_table(snap))}"
        f"<h2>Decisions</h2>{_packed_html('decisions', _events_table(snap))}"
        f'<script id="plotly-js" type="application/gzip">{packed_plotly_js()}</script>'
        f"<script>{_LOADER}</script></body></html>"
    )


def _figure(name: str, fig) -> str:
    """A place for a figure and its JSON, drawn there once plotly.js runs (plotly's JSON
    writes ``/`` as ``\\u002f``: no ``</script>`` in it can end the script early)."""
    import plotly.io as pio

    return (
        f'<div id="{name}" class="plot unpacked">{_WAITING}</div>'
        f'<script type="application/json" class="figure" data-target="{name}">'
        f"{pio.to_json(fig, validate=False)}</script>"
    )


def _packed_html(name: str, markup: str) -> str:
    """A place for ``markup`` and the markup itself, packed; unpacked there by the browser."""
    return (
        f'<div id="{name}" class="unpacked">{_WAITING}</div>'
        f'<script type="application/gzip" class="packed-html" data-target="{name}">'
        f"{_pack(markup.encode('utf-8'))}</script>"
    )


def _pack(data: bytes) -> str:
    """gzip, then base64: text that holds no ``<`` and that a browser can unpack."""
    return base64.b64encode(gzip.compress(data, compresslevel=9, mtime=0)).decode("ascii")


def unpack(packed: str) -> str:
    """What :func:`_pack` packed, as text (for tests, and for reading a report in Python)."""
    return gzip.decompress(base64.b64decode(packed)).decode("utf-8")


@functools.cache
def packed_plotly_js() -> str:
    """The plotly.js that plotly ships, packed (once per process: it takes 0.2 s)."""
    from plotly.offline import get_plotlyjs

    return _pack(get_plotlyjs().encode("utf-8"))


def write_report(
    snap: ExperimentSnapshot, path: str | os.PathLike, *, title: str = "hypersched_nb search"
) -> Path:
    """Write the report to ``path`` (folders made as needed) and return the path. Readable
    by its owner only (0600), as the run's journal and checkpoints are: it names every
    configuration tried."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = report_html(snap, title=title).encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # a file that was there keeps its mode otherwise
    with os.fdopen(fd, "wb") as f:
        f.write(text)
    return path


def _num(v) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return ""
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _trials_table(snap: ExperimentSnapshot) -> str:
    keys = sorted({k for r in snap.trials for k in r.config})
    head = ["trial", "state", "epochs", "best", "last", "peak workers", "start", "stop", "reason"]
    rows = []
    for r in snap.trials:
        cells = [
            r.trial_id, r.state, r.epochs, r.best, r.last, r.peak_workers, r.started_at,
            r.stopped_at,
        ]  # fmt: skip
        tds = "".join(f"<td>{_num(c)}" for c in cells) + f"<td>{html.escape(r.reason)}"
        tds += "".join(f"<td>{html.escape(_num(r.config.get(k)))}" for k in keys)
        rows.append(f"<tr>{tds}")
    ths = "".join(f"<th>{html.escape(h)}" for h in head + keys)
    return f"<table class='trials'><tr>{ths}{''.join(rows)}</table>"


def _events_table(snap: ExperimentSnapshot) -> str:
    rows = "".join(
        f"<tr><td>{e['time']:.1f}<td>{'' if e['trial'] is None else e['trial']}"
        f"<td>{html.escape(e['action'])}<td>{html.escape(str(e['reason']))}"
        for e in snap.events
    )
    return f"<table class='events'><tr><th>time (s)<th>trial<th>action<th>reason{rows}</table>"


def _forecast_html(snap: ExperimentSnapshot) -> str:
    """The last forecast (every row; the one for the deadline and cluster the search ended
    with highlighted) beside what really happened; nothing where none was made."""
    if snap.forecast is None:
        return ""
    made, f = snap.forecast, snap.forecast.forecast
    real = snap.best.metric if snap.best is not None else math.nan
    rows = []
    for o in f.outlooks:
        mine = math.isclose(o.deadline, snap.deadline) and o.workers == snap.workers
        cells = [o.deadline, o.workers, o.expected, o.p10, o.p90, o.p_beat]
        tds = "".join(f"<td>{_num(float(c))}" for c in cells)
        if mine and math.isfinite(real):
            tds += f"<td>{'yes' if o.p10 <= real <= o.p90 else 'no'}"
        rows.append(f"<tr class='real'>{tds}" if mine else f"<tr>{tds}")
    head = "".join(
        f"<th>{h}" for h in
        ("deadline (s)", "workers", "expected", "p10", "p90", "P(beats)", "real in 10-90 %")
    )  # fmt: skip
    about = (
        f"made {made.made:%Y-%m-%d %H:%M:%S}, the search at {f.now:.0f} s with deadline "
        f"{made.deadline:.0f} s and best {_num(f.best) or '-'}; {f.runs} runs, {f.note}"
    )
    so = "what really happened" if snap.done else f"so far ({snap.status_text()})"
    happened = (
        f"best {snap.metric} {_num(real) or '-'} by {snap.time:.0f} s; deadline "
        f"{snap.deadline:.0f} s; {snap.workers} workers"
    )
    return (
        f"<h2>Last forecast, beside {html.escape(so)}</h2><div class='side'>"
        f"<div><p>{html.escape(about)}</p><table class='forecast'><tr>{head}{''.join(rows)}"
        f"</table></div><div><p><b>{html.escape(so)}</b>: {html.escape(happened)}</p></div></div>"
    )
