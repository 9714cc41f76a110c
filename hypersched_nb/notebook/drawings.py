"""The plotly figures of a search, as plain dicts (:class:`Drawing`): the live dashboard's
figure widgets are sent only what differs between two of them, and the HTML report and
``show()`` draw them whole. Which trials they draw alone and which in the grey band is
:mod:`.figures`' choice, as for the static picture.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

import numpy as np

from hypersched_nb.experiment.snapshot import ExperimentSnapshot, TrialRow
from hypersched_nb.notebook._curve_bundle import CurveBundler
from hypersched_nb.notebook.figures import (
    _DEADLINE,
    MOST,
    OTHERS,
    AllocationHistory,
    Bundle,
    allocation_layers,
    bundle_curves,
    colour,
    compact,
    curve_groups,
    others_name,
)

__all__ = [
    "Drawing",
    "allocation_drawing",
    "allocation_figure",
    "allocation_layout",
    "config_hover",
    "curves_drawing",
    "curves_figure",
]


@dataclass(frozen=True, slots=True)
class Drawing:
    """What a plotly figure shows, as plotly's plain dicts: the dashboard compares two of
    them to send only what changed."""

    traces: tuple[dict, ...]
    layout: dict

    def figure(self):
        import plotly.graph_objects as go

        return go.Figure(data=list(self.traces), layout=self.layout)


def _x_scale(snap: ExperimentSnapshot) -> tuple[float, str]:
    """Seconds or minutes, whichever reads better at this deadline."""
    return (60.0, "minutes since start") if snap.deadline >= 600 else (1.0, "seconds since start")


def _translucent(hex_colour: str, alpha: float = 0.6) -> str:
    r, g, b = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def allocation_drawing(
    snap: ExperimentSnapshot,
    *,
    history: AllocationHistory | None = None,
    most: int = MOST,
    height: int = 320,
) -> Drawing:
    """Workers held by each trial over time (stacked steps), the cluster's size, the deadline
    (red) and, while the search runs, now (grey). ``history``: the dashboard's own, read on
    from where it was (default: a new one); ``most``: see :func:`spotlight`."""
    history = (AllocationHistory() if history is None else history).read(snap)
    unit, _ = _x_scale(snap)
    traces = [_cluster_trace(snap, unit)] if snap.capacity else []
    for i, layer in enumerate(allocation_layers(history, snap, most)):
        row = None if layer.trial is None else snap.row(layer.trial)
        named = layer.name + config_hover(None if row is None else row.config)
        traces.append(
            dict(
                type="scatter", name=layer.name, x=layer.x / unit, y=compact(layer.top),
                customdata=compact(layer.own),
                mode="lines", line=dict(width=0.5, shape="hv", color=layer.colour),
                fill="tozeroy" if i == 0 else "tonexty", fillcolor=_translucent(layer.colour),
                hovertemplate=f"{named}: %{{customdata}} workers<extra></extra>",
            )
        )  # fmt: skip
    return Drawing(tuple(traces), allocation_layout(snap, height=height))


def _cluster_trace(snap: ExperimentSnapshot, unit: float) -> dict:
    """The cluster's size as a dotted step line, drawn over the bands."""
    x = [t / unit for t, _ in snap.capacity] + [min(snap.time, snap.deadline) / unit]
    y = [w for _, w in snap.capacity] + [snap.capacity[-1][1]]
    return dict(
        type="scatter", name="cluster", x=x, y=y, mode="lines", zorder=1, hoverinfo="skip",
        line=dict(color="#555", dash="dot", shape="hv", width=1),
    )  # fmt: skip


def allocation_layout(snap: ExperimentSnapshot, *, height: int = 320) -> dict:
    """The allocation figure's frame: axes, the deadline and now (all that moves when only
    time passes)."""
    unit, label = _x_scale(snap)
    top = max([w for _, w in snap.capacity] + [snap.workers, 1])
    end = max(snap.deadline, snap.time) * 1.04 / unit
    shapes = [_vline(snap.deadline / unit, _DEADLINE, "dash")]
    if not snap.done:
        shapes.append(_vline(snap.time / unit, "#888", "dot"))
    deadline = dict(
        x=snap.deadline / unit, y=top + 0.35, text="deadline", showarrow=False,
        font=dict(color=_DEADLINE),
    )  # fmt: skip
    return dict(
        height=height, margin=dict(l=50, r=10, t=30, b=40), shapes=shapes, annotations=[deadline],
        title=dict(text="workers per trial", font=dict(size=14)), legend=dict(font=dict(size=10)),
        xaxis=dict(title=dict(text=label), range=[0, end]),
        yaxis=dict(title=dict(text="workers"), range=[0, top + 0.6], dtick=1),
        template="plotly_white", uirevision="keep",
    )  # fmt: skip


def _vline(x: float, color: str, dash: str) -> dict:
    return dict(
        type="line", xref="x", yref="paper", x0=x, x1=x, y0=0, y1=1,
        line=dict(color=color, dash=dash, width=2),
    )  # fmt: skip


def allocation_figure(snap: ExperimentSnapshot, *, height: int = 320, most: int = MOST):
    """:func:`allocation_drawing` as a plotly ``Figure``."""
    return allocation_drawing(snap, most=most, height=height).figure()


def curves_drawing(
    snap: ExperimentSnapshot,
    *,
    history: AllocationHistory | None = None,
    bundler: CurveBundler | None = None,
    most: int = MOST,
    height: int = 320,
) -> Drawing:
    """The metric after every epoch: the trials in the :func:`spotlight` in their colours
    (the best bold, those that are over faded) over one grey bundle of every other trial
    (kept from the last drawing by ``bundler``, when given: a live figure's)."""
    history = (AllocationHistory() if history is None else history).read(snap)
    groups = curve_groups(history, snap, most)
    bundle = None
    if groups.rest:
        alone = frozenset(r.trial_id for r in groups.leaders)
        bundle = bundle_curves(groups.rest) if bundler is None else bundler.bundle(snap, alone)
    traces = [_bundle_trace(bundle, len(groups.rest))] if bundle is not None else []
    traces += [_curve_trace(row, row.trial_id == groups.best) for row in groups.leaders]
    better = "higher" if snap.mode == "max" else "lower"
    layout = dict(
        height=height, margin=dict(l=50, r=10, t=30, b=40), template="plotly_white", uirevision="keep",
        title=dict(text=f"{snap.metric} per epoch ({better} is better)", font=dict(size=14)),
        xaxis=dict(title=dict(text="epoch")), yaxis=dict(title=dict(text=snap.metric)),
        showlegend=False,
    )  # fmt: skip
    return Drawing(tuple(traces), layout)


def _curve_trace(row: TrialRow, best: bool) -> dict:
    y = np.array([m if math.isfinite(m) else math.nan for m in row.metrics], dtype=float)
    live = row.state in ("RUNNING", "PAUSED", "PENDING")
    return dict(
        type="scattergl", name=f"trial {row.trial_id}", x=compact(np.arange(1, len(y) + 1)), y=y,
        mode="lines+markers" if len(y) < 30 else "lines",
        line=dict(color=colour(row.trial_id), width=3.5 if best else 1.5),
        marker=dict(size=4), opacity=1.0 if live or best else 0.45,
        hovertemplate=f"trial {row.trial_id} ({row.state.lower()}){config_hover(row.config)}"
                      "<br>epoch %{x}: %{y:.4g}<extra></extra>",
    )  # fmt: skip


def config_hover(config) -> str:
    """A trial's configuration as a hover's second line (nothing for none)."""
    if not config:
        return ""
    text = ", ".join(
        f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in config.items()
    )
    return "<br>" + html.escape(text)


def _bundle_trace(b: Bundle, trials: int) -> dict:
    """The grey bundle of ``trials`` curves, under the curves drawn alone (all WebGL:
    thousands of short curves stay cheap to draw, and WebGL draws over SVG, so the leaders
    must be WebGL too)."""
    return dict(
        type="scattergl", name=others_name(trials), x=b.epoch, y=b.metric, customdata=b.trial,
        mode="lines+markers", line=dict(color=OTHERS, width=1), marker=dict(size=3, color=OTHERS),
        opacity=0.6,
        hovertemplate="trial %{customdata} epoch %{x}: %{y:.4g}<extra></extra>",
    )  # fmt: skip


def curves_figure(snap: ExperimentSnapshot, *, height: int = 320, most: int = MOST):
    """:func:`curves_drawing` as a plotly ``Figure``."""
    return curves_drawing(snap, most=most, height=height).figure()
