"""A static picture of a snapshot, as a PNG: what a saved notebook keeps.

Live widgets need a kernel, and their saved state is missing or stale once it is gone; an
SVG is not drawn from an untrusted notebook (one from git, or a colleague) by JupyterLab,
and VS Code and GitHub differ in what HTML they draw. A PNG every front end draws, trusted
or not, so the picture is one, made with matplotlib (no pyplot: no global state, no GUI
backend): the summary lines, then the workers per trial against the deadline and the
learning curves. It draws what the live figures draw (:mod:`hypersched_nb.notebook.figures`):
the same trials one by one in the same colours, every other trial in one grey band and one
grey bundle of curves, so a search of thousands of trials is a picture of tens of kilobytes.
"""

from __future__ import annotations

import base64
import io
import math

import numpy as np

from hypersched_nb.experiment.snapshot import ExperimentSnapshot
from hypersched_nb.notebook.figures import (
    OTHERS,
    AllocationHistory,
    allocation_layers,
    bundle_curves,
    colour,
    curve_groups,
    others_name,
)

__all__ = ["picture", "picture_figure", "picture_bundle", "summary", "bundles", "show"]

PNG = "image/png"
_DEADLINE = "#C0392B"
_WIDTH, _CHART_HEIGHT, _LINE = 11.2, 2.6, 0.19  # inches; one summary line
_DPI = 100


def summary(snap: ExperimentSnapshot) -> list[str]:
    """The lines above the charts: the snapshot's own summary (its time left dated: a saved
    picture outlives its moment), then the best configuration."""
    lines = str(snap).splitlines()
    if snap.best is not None:
        cfg = ", ".join(f"{k}={_short(v)}" for k, v in snap.best.config.items())
        lines.append(f"best config: {cfg}")
    return lines


def picture_figure(snap: ExperimentSnapshot, *, charts: str = "both"):
    """The matplotlib ``Figure`` of the picture (``charts``: "both", "allocation" or
    "curves"); its artists carry the names the live figures give their traces as labels."""
    from matplotlib.figure import Figure

    lines = summary(snap) if charts == "both" else []
    top = _LINE * (len(lines) + 0.6) if lines else 0.0
    wide = charts == "both"
    fig = Figure(figsize=(_WIDTH if wide else _WIDTH / 2, _CHART_HEIGHT + top), dpi=_DPI)
    height = fig.get_figheight()
    for i, line in enumerate(lines):
        y = 1 - (_LINE * (i + 0.9)) / height
        fig.text(0.01, y, line, family="monospace", fontsize=8.5, va="baseline")
    chart_top = 1 - (top + 0.32) / height
    kinds = ("allocation", "curves") if wide else (charts,)
    grid = fig.add_gridspec(
        1, len(kinds), left=0.06 if wide else 0.12, right=0.99, bottom=0.6 / height,
        top=chart_top, wspace=0.18,
    )  # fmt: skip
    history = AllocationHistory().read(snap)
    for k, kind in enumerate(kinds):
        ax = fig.add_subplot(grid[0, k])
        (_allocation if kind == "allocation" else _curves)(ax, snap, history)
    return fig


def picture(snap: ExperimentSnapshot, *, charts: str = "both") -> bytes:
    """The picture as PNG bytes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = picture_figure(snap, charts=charts)
    out = io.BytesIO()
    FigureCanvasAgg(fig).print_png(out)
    return out.getvalue()


def picture_bundle(snap: ExperimentSnapshot) -> dict:
    """A display bundle of the picture alone: a PNG (base64, as Jupyter carries it) and the
    summary as text for a terminal."""
    return {
        PNG: base64.b64encode(picture(snap)).decode("ascii"),
        "text/plain": "\n".join(summary(snap)),
    }


def bundles(snap: ExperimentSnapshot) -> list[dict]:
    """Two display bundles (workers per trial, learning curves), each an interactive plotly
    figure for front ends that render it and a PNG for those that do not (an untrusted
    notebook, GitHub, nbviewer)."""
    import json

    from hypersched_nb.notebook._plotly_import import import_plotly

    import_plotly()
    import plotly.io as pio

    from hypersched_nb.notebook.drawings import allocation_figure, curves_figure

    out = []
    for fig, charts, text in (
        (allocation_figure(snap), "allocation", "workers per trial"),
        (curves_figure(snap), "curves", f"{snap.metric} per epoch"),
    ):
        out.append(
            {
                "application/vnd.plotly.v1+json": json.loads(pio.to_json(fig)),
                PNG: base64.b64encode(picture(snap, charts=charts)).decode("ascii"),
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


def _allocation(ax, snap: ExperimentSnapshot, history: AllocationHistory) -> None:
    """The live figure's stacked bands (one per trial drawn alone, one grey band for the
    rest, named in a corner), the deadline in red."""
    unit, name = (60.0, "minutes") if snap.deadline >= 600 else (1.0, "seconds")
    layers = allocation_layers(history, snap)
    below = None
    for layer in layers:  # on the times of this band and the one below, as steps
        x = layer.x if below is None else np.union1d(layer.x, below[0])
        top = _steps_at((layer.x, layer.top), x)
        low = np.zeros(len(x)) if below is None else _steps_at(below, x)
        ax.fill_between(x / unit, low, top, step="post", color=layer.colour, lw=0,
                        label=layer.name)  # fmt: skip
        below = (x, top)
    if layers and layers[-1].trials > 1:  # named above the chart, clear of its bands
        ax.set_title(f"grey: {layers[-1].name}", loc="right", fontsize=8, color="#888")
    ax.axvline(snap.deadline / unit, color=_DEADLINE, lw=1.6, ls="--", label="deadline")
    top = max([w for _, w in snap.capacity] + [snap.workers, 1])
    ax.set_xlim(0, max(snap.deadline, snap.time, 1e-9) * 1.04 / unit)
    ax.set_ylim(0, top * 1.05)
    ax.yaxis.get_major_locator().set_params(integer=True)
    _frame(ax, "workers per trial", f"{name} since start", "workers")


def _steps_at(steps: tuple[np.ndarray, np.ndarray], x: np.ndarray) -> np.ndarray:
    """A step function ``(xs, values)`` (each value holds until the next x) read at ``x``."""
    xs, values = steps
    return values[np.clip(np.searchsorted(xs, x, side="right") - 1, 0, len(values) - 1)]


def _curves(ax, snap: ExperimentSnapshot, history: AllocationHistory) -> None:
    """One line per trial drawn alone (the best bold) over one grey line for the rest."""
    groups = curve_groups(history, snap)
    if groups.rest:
        b = bundle_curves(groups.rest)
        ax.plot(b.epoch, b.metric, color=OTHERS, lw=0.8, alpha=0.7,
                label=others_name(len(groups.rest)))  # fmt: skip
    for r in groups.leaders:
        best = r.trial_id == groups.best
        epochs = np.arange(1, len(r.metrics) + 1)
        metrics = np.array([m if math.isfinite(m) else np.nan for m in r.metrics], dtype=float)
        ax.plot(epochs, metrics, color=colour(r.trial_id), lw=2.6 if best else 1.0,
                alpha=1 if best else 0.7, marker="o" if len(epochs) == 1 else None, ms=2.5,
                label=f"trial {r.trial_id}", zorder=3 if best else 2)  # fmt: skip
    ax.xaxis.get_major_locator().set_params(integer=True)
    _frame(ax, f"{snap.metric} per epoch", "epoch", snap.metric)


def _frame(ax, title: str, x_label: str, y_label: str) -> None:
    ax.set_title(title, fontsize=10, loc="left")
    ax.set_xlabel(x_label, fontsize=8.5)
    ax.set_ylabel(y_label, fontsize=8.5)
    ax.tick_params(labelsize=8)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
