"""Plotly figures drawn from a snapshot: workers per trial against the deadline, and curves.

Both the live dashboard (as ``FigureWidget``) and the HTML report use these builders, so
what a person watches and what they keep are the same picture. Trial ``i`` has the same
colour in every figure and its traces are named ``"trial <i>"``. The allocation figure draws
the ``most`` trials that held workers longest (and every running one, and the best) one by
one, and the rest as one grey band: a search of hundreds of short trials stays a picture of
a few hundred kilobytes, not megabytes.
"""

from __future__ import annotations

import math
from itertools import pairwise

from hypersched_nb.experiment.snapshot import ExperimentSnapshot

__all__ = ["allocation_figure", "curves_figure", "colour"]

_PALETTE = (
    "#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#EECA3B", "#B279A2", "#FF9DA6",
    "#9D755D", "#BAB0AC", "#1F77B4", "#D62728", "#2CA02C", "#9467BD", "#8C564B", "#17BECF",
)  # fmt: skip
_DEADLINE = "#C0392B"
_OTHERS = "#C8C8C8"


def colour(trial_id: int) -> str:
    """The colour of a trial, the same in every figure."""
    return _PALETTE[trial_id % len(_PALETTE)]


def _x_scale(snap: ExperimentSnapshot) -> tuple[float, str]:
    """Seconds or minutes, whichever reads better at this deadline."""
    return (60.0, "minutes since start") if snap.deadline >= 600 else (1.0, "seconds since start")


def allocation_figure(
    snap: ExperimentSnapshot, *, height: int = 320, traces: bool = True, most: int = 24
):
    """Workers held by each trial over time (stacked steps), the cluster's size, the
    deadline (red) and, while the search runs, now (grey). ``traces=False``: the frame only;
    ``most``: trials drawn one by one, the rest as one band (see the module's docstring)."""
    import plotly.graph_objects as go

    unit, label = _x_scale(snap)
    times, series = snap.allocation_series() if traces else ([], {})
    xs = [t / unit for t in times]
    series, others = _grouped(snap, times, series, most)
    fig = go.Figure()
    for tid in sorted(series):
        ys = series[tid]
        fig.add_trace(
            go.Scatter(
                x=xs, y=ys, name=f"trial {tid}", mode="lines",
                line=dict(width=0.5, shape="hv", color=colour(tid)), stackgroup="workers",
                hovertemplate=f"trial {tid}: %{{y}} workers<extra></extra>",
            )
        )  # fmt: skip
    if others is not None:
        count, ys = others
        fig.add_trace(
            go.Scatter(
                x=xs, y=ys, name=f"{count} other trials", mode="lines",
                line=dict(width=0.5, shape="hv", color=_OTHERS), stackgroup="workers",
                hovertemplate=f"{count} other trials: %{{y}} workers<extra></extra>",
            )
        )  # fmt: skip
    if traces and snap.capacity:
        cx = [t / unit for t, _ in snap.capacity] + [min(snap.time, snap.deadline) / unit]
        cy = [w for _, w in snap.capacity] + [snap.capacity[-1][1]]
        fig.add_trace(
            go.Scatter(
                x=cx, y=cy, name="cluster", mode="lines",
                line=dict(color="#555", dash="dot", shape="hv", width=1), hoverinfo="skip",
            )
        )  # fmt: skip
    top = max([w for _, w in snap.capacity] + [snap.workers, 1])
    end = max(snap.deadline, snap.time) * 1.04 / unit
    shapes = [_vline(snap.deadline / unit, _DEADLINE, "dash")]
    notes = [
        dict(
            x=snap.deadline / unit,
            y=top + 0.35,
            text="deadline",
            showarrow=False,
            font=dict(color=_DEADLINE),
        )
    ]
    if not snap.done:
        shapes.append(_vline(snap.time / unit, "#888", "dot"))
    fig.update_layout(
        height=height, margin=dict(l=50, r=10, t=30, b=40), shapes=shapes, annotations=notes,
        title=dict(text="workers per trial", font=dict(size=14)), legend=dict(font=dict(size=10)),
        xaxis=dict(title=label, range=[0, end]), yaxis=dict(title="workers", range=[0, top + 0.6], dtick=1),
        template="plotly_white", uirevision="keep",
    )  # fmt: skip
    return fig


def _grouped(snap: ExperimentSnapshot, times: list[float], series: dict, most: int):
    """(the trials drawn one by one, (count, summed workers) of the rest or None)."""
    if len(series) <= most:
        return series, None
    spans = [b - a for a, b in pairwise(times)]  # nothing is held after the last time
    held = {tid: sum(w * d for w, d in zip(ys, spans, strict=False)) for tid, ys in series.items()}
    keep = set(sorted(held, key=lambda t: (-held[t], t))[:most])
    keep |= {r.trial_id for r in snap.trials if r.state == "RUNNING" and r.trial_id in series}
    if snap.best is not None and snap.best.trial_id in series:
        keep.add(snap.best.trial_id)
    rest = [ys for tid, ys in series.items() if tid not in keep]
    if not rest:
        return series, None
    summed = [sum(column) for column in zip(*rest, strict=True)]
    return {tid: series[tid] for tid in keep}, (len(rest), summed)


def _vline(x: float, color: str, dash: str) -> dict:
    return dict(
        type="line",
        xref="x",
        yref="paper",
        x0=x,
        x1=x,
        y0=0,
        y1=1,
        line=dict(color=color, dash=dash, width=2),
    )


def curves_figure(snap: ExperimentSnapshot, *, height: int = 320):
    """The metric after every epoch of every trial; the best trial bold, trials that are
    over faded."""
    import plotly.graph_objects as go

    best = snap.best.trial_id if snap.best is not None else None
    fig = go.Figure()
    for row in snap.trials:
        ys = [m if math.isfinite(m) else None for m in row.metrics]
        if not ys:
            continue
        live = row.state in ("RUNNING", "PAUSED", "PENDING")
        fig.add_trace(
            go.Scatter(
                x=list(range(1, len(ys) + 1)), y=ys, name=f"trial {row.trial_id}",
                mode="lines+markers" if len(ys) < 30 else "lines",
                line=dict(color=colour(row.trial_id), width=3.5 if row.trial_id == best else 1.5),
                marker=dict(size=4), opacity=1.0 if live or row.trial_id == best else 0.45,
                hovertemplate=f"trial {row.trial_id} ({row.state.lower()}) epoch %{{x}}: %{{y:.4g}}<extra></extra>",
            )
        )  # fmt: skip
    fig.update_layout(
        height=height, margin=dict(l=50, r=10, t=30, b=40), template="plotly_white", uirevision="keep",
        title=dict(text=f"{snap.metric} per epoch ({'higher' if snap.mode == 'max' else 'lower'} is better)", font=dict(size=14)),
        xaxis=dict(title="epoch"), yaxis=dict(title=snap.metric), showlegend=False,
    )  # fmt: skip
    return fig
