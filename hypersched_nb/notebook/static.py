"""A static picture of a snapshot in plain HTML and SVG: what a saved notebook keeps.

Live widgets need a kernel and their saved state goes stale; a saved notebook shown on
GitHub, nbviewer or a front end without the widget manager falls back to this: a summary,
the workers per trial against the deadline and the learning curves, small and with no
JavaScript. It draws what the live figures draw (:mod:`hypersched_nb.notebook.figures`):
the same trials one by one in the same colours, every other trial in one grey band and one
grey bundle of curves. Paths are drawn at half a pixel, so that a search of thousands of
trials stays a picture of tens of kilobytes.
"""

from __future__ import annotations

import html
import math

import numpy as np

from hypersched_nb.experiment.snapshot import ExperimentSnapshot, TrialRow
from hypersched_nb.notebook.figures import (
    OTHERS,
    AllocationHistory,
    allocation_layers,
    bundle_curves,
    colour,
    curve_groups,
    others_name,
)

__all__ = ["static_html", "allocation_svg", "curves_svg", "show", "bundles"]

_W, _H, _PAD = 560, 170, 34


def static_html(snap: ExperimentSnapshot) -> str:
    """Summary lines, then the two charts side by side (wrapping on narrow screens)."""
    lines = [html.escape(line) for line in str(snap).splitlines()]
    if snap.best is not None:
        cfg = ", ".join(f"{k}={_short(v)}" for k, v in snap.best.config.items())
        lines.append(html.escape(f"best config: {cfg}"))
    return (
        '<div class="hypersched-static" style="font-family:monospace;font-size:12px">'
        + "<br>".join(lines)
        + '<div style="display:flex;flex-wrap:wrap;gap:8px">'
        + allocation_svg(snap)
        + curves_svg(snap)
        + "</div></div>"
    )


def bundles(snap: ExperimentSnapshot) -> list[dict]:
    """Two display bundles (workers per trial, learning curves), each an interactive plotly
    figure for front ends that render it and an SVG for those that do not (GitHub, nbviewer)."""
    import json

    import plotly.io as pio

    from hypersched_nb.notebook.figures import allocation_figure, curves_figure

    out = []
    for fig, svg, text in (
        (allocation_figure(snap), allocation_svg(snap), "workers per trial"),
        (curves_figure(snap), curves_svg(snap), f"{snap.metric} per epoch"),
    ):
        out.append(
            {
                "application/vnd.plotly.v1+json": json.loads(pio.to_json(fig)),
                "text/html": svg,
                "text/plain": f"<{text}>",
            }
        )
    return out


def show(what) -> None:
    """Show an experiment (or a snapshot) as its summary and two figures, in a notebook."""
    from IPython.display import display

    snap = what if isinstance(what, ExperimentSnapshot) else what.statistics()
    print(snap)
    for bundle in bundles(snap):
        display(bundle, raw=True)


def _short(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _frame(title: str, body: list[str], x_label: str, y_label: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H + 2 * _PAD}" '
        f'viewBox="0 0 {_W} {_H + 2 * _PAD}" style="background:#fff">'
        f'<text x="{_PAD}" y="16" font-size="13">{html.escape(title)}</text>'
        f'<rect x="{_PAD}" y="{_PAD}" width="{_W - 2 * _PAD}" height="{_H}" fill="none" stroke="#ccc"/>'
        + "".join(body)
        + f'<text x="{_W / 2}" y="{_H + 2 * _PAD - 6}" font-size="11" text-anchor="middle">{html.escape(x_label)}</text>'
        + f'<text x="10" y="{_PAD + _H / 2}" font-size="11" transform="rotate(-90 10 {_PAD + _H / 2})" '
        f'text-anchor="middle">{html.escape(y_label)}</text></svg>'
    )


def allocation_svg(snap: ExperimentSnapshot) -> str:
    """The live figure's stacked bands as filled paths (one per trial drawn alone, one grey
    band for the rest, named in a corner); the deadline in red."""
    layers = allocation_layers(AllocationHistory().read(snap), snap)
    span = max(snap.deadline, snap.time, 1e-9) * 1.04
    top = max([w for _, w in snap.capacity] + [snap.workers, 1])
    sx, sy = (_W - 2 * _PAD) / span, _H / top
    body = []
    end = layers[0].x[-1] if layers else 0.0
    below = _steps_xy(np.array([0.0, end]), np.zeros(2), sx, sy)
    for layer in layers:
        edge = _steps_xy(layer.x, layer.top, sx, sy)
        outline = np.concatenate([edge, below[::-1]])
        body.append(
            f'<path d="M{_points(outline)}Z" fill="{layer.colour}">'
            f"<title>{html.escape(layer.name)}</title></path>"
        )
        below = edge
    if layers and layers[-1].trials > 1:
        body.append(
            f'<text x="{_W - _PAD}" y="16" font-size="11" fill="#888" '
            f'text-anchor="end">grey: {html.escape(layers[-1].name)}</text>'
        )
    xd = _PAD + snap.deadline * sx
    body.append(
        f'<line x1="{xd:.1f}" x2="{xd:.1f}" y1="{_PAD}" y2="{_PAD + _H}" stroke="#C0392B" stroke-width="2" stroke-dasharray="5,3"/>'
    )
    body.append(
        f'<text x="{xd - 3:.1f}" y="{_PAD - 4}" font-size="11" fill="#C0392B" text-anchor="end">deadline</text>'
    )
    for k in range(top + 1):
        body.append(
            f'<text x="{_PAD - 4}" y="{_PAD + _H - k * sy + 4:.1f}" font-size="10" text-anchor="end">{k}</text>'
        )
    unit, name = (60.0, "minutes") if snap.deadline >= 600 else (1.0, "seconds")
    body += _x_ticks([snap.deadline * q / 4 for q in range(5)], sx, lambda t: f"{t / unit:.3g}")
    return _frame("workers per trial", body, f"{name} since start", "workers")


def _steps_xy(x: np.ndarray, top: np.ndarray, sx: float, sy: float) -> np.ndarray:
    """The outline of a step function (horizontal, then vertical) in pixels, at half a
    pixel: of a run of points along one line, only its ends are kept."""
    px = np.repeat(np.round((_PAD + x * sx) * 2) / 2, 2)[1:]
    py = np.repeat(np.round((_PAD + _H - top * sy) * 10) / 10, 2)[:-1]
    xy = np.column_stack([px, py])
    xy = xy[np.r_[True, (np.diff(xy, axis=0) != 0).any(axis=1)]]  # no point twice
    if len(xy) < 3:
        return xy
    inner = [(xy[:-2, k] == xy[1:-1, k]) & (xy[1:-1, k] == xy[2:, k]) for k in (0, 1)]
    return xy[np.r_[True, ~(inner[0] | inner[1]), True]]


def _points(xy: np.ndarray) -> str:
    return " ".join(f"{x:g},{y:g}" for x, y in xy)


def _x_ticks(values, scale: float, label) -> list[str]:
    return [
        f'<text x="{_PAD + v * scale:.1f}" y="{_PAD + _H + 14}" font-size="10" text-anchor="middle">{label(v)}</text>'
        for v in values
    ]


def curves_svg(snap: ExperimentSnapshot) -> str:
    """One polyline per trial drawn alone (the best bold), metric against epoch, over one
    grey path for every other trial, as the live figure draws them."""
    groups = curve_groups(AllocationHistory().read(snap), snap)
    values = [m for r in groups.leaders + groups.rest for m in r.metrics if math.isfinite(m)]
    body = []
    if values:
        lo, hi = min(values), max(values)
        hi = hi if hi > lo else lo + 1.0
        longest = max(len(r.metrics) for r in groups.leaders + groups.rest)
        sx = (_W - 2 * _PAD) / max(longest - 1, 1)
        if groups.rest:
            body.append(_bundle_path(groups.rest, lo, hi, sx))
        for r in groups.leaders:
            body.append(_curve(r, r.trial_id == groups.best, lo, hi, sx))
        body.append(
            f'<text x="{_PAD - 4}" y="{_PAD + 8}" font-size="10" text-anchor="end">{hi:.3g}</text>'
        )
        body.append(
            f'<text x="{_PAD - 4}" y="{_PAD + _H}" font-size="10" text-anchor="end">{lo:.3g}</text>'
        )
        step = max(1, round((longest - 1) / 5))
        body += _x_ticks([e - 1 for e in range(1, longest + 1, step)], sx, lambda e: str(e + 1))
    return _frame(f"{snap.metric} per epoch", body, "epoch", snap.metric)


def _curve(r: TrialRow, best: bool, lo: float, hi: float, sx: float) -> str:
    xy = [
        (_PAD + i * sx, _PAD + _H - (m - lo) / (hi - lo) * _H)
        for i, m in enumerate(r.metrics)
        if math.isfinite(m)
    ]
    width, c = (3 if best else 1.2), colour(r.trial_id)
    title = f"<title>trial {r.trial_id}</title>"
    if len(xy) == 1:  # stopped after one epoch: a dot
        return f'<circle cx="{xy[0][0]:.1f}" cy="{xy[0][1]:.1f}" r="2" fill="{c}" opacity="0.6">{title}</circle>'
    pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)
    return (
        f'<polyline points="{pts}" fill="none" stroke="{c}" stroke-width="{width}" '
        f'opacity="{1 if best else 0.6}">{title}</polyline>'
    )


def _bundle_path(rows: tuple[TrialRow, ...], lo: float, hi: float, sx: float) -> str:
    """Every other trial's curve in one grey path, at half a pixel; a curve drawn before at
    that resolution is drawn once (round caps make a one-epoch curve a dot)."""
    b = bundle_curves(rows)
    px = np.round((_PAD + (b.epoch - 1) * sx) * 2) / 2
    py = np.round((_PAD + _H - (b.metric - lo) / (hi - lo) * _H) * 2) / 2
    curves, current = {}, []
    for x, y in zip(px.tolist(), py.tolist(), strict=True):
        if math.isnan(y):  # the end of one trial's curve
            if current:
                curves["M" + "L".join(current)] = None
            current = []
        else:
            current.append(f"{x:g},{y:g}")
    d = "".join(c if "L" in c else c + "h0" for c in curves)
    return (
        f'<path d="{d}" fill="none" stroke="{OTHERS}" stroke-width="1" stroke-linecap="round" '
        f'opacity="0.7"><title>{html.escape(others_name(len(rows)))}</title></path>'
    )
