"""Live widgets for a running search: workers per trial against the deadline, learning
curves, the policy's own line, recent decisions, a deadline slider and a stop button, and
under the slider a forecast of the best by the deadline (:mod:`.forecast_panel`, on a
thread and a period of its own: it never holds the dashboard's lock while it simulates);
below the trials, a collapsible parameter view (:mod:`.param_panel`: Optuna's importances
and parallel coordinates, likewise on a thread of its own, redrawn every 30 s at most).

The dashboard only observes: a background thread reads :meth:`Experiment.statistics`
every ``interval`` seconds and pushes trait updates (the figures only when the snapshot's
``version`` moved), so the kernel stays free for the slider while the search runs; a
refresh that fails says why in the header, and the next one goes on. The one thing it
writes is what a person asks for: a new deadline, or a stop.

What a saved notebook keeps: the display carries a PNG picture of the search
(:mod:`.static`) beside the widget view, which a front end without the widgets' state (an
untrusted notebook, GitHub, a kernel gone) shows instead; when the search ends, the display
is updated to the final picture alone, so the widget view goes and the picture stays. Each
update waits for the front end to have shown the widget view, and the widgets close a while
after the last (:mod:`._front_end`: what the front end has made of them).

A redraw costs what changed, not the search's size: the dashboard keeps one
:class:`AllocationHistory` that reads each new allocation record once, and it sends a figure
only the trace properties that differ from what it shows (one batched message).
"""

from __future__ import annotations

import html
import math
import threading
import time

import numpy as np

from hypersched_nb.experiment._kernel_pump import cell_holds_controls
from hypersched_nb.experiment.deadline import format_duration
from hypersched_nb.experiment.snapshot import ExperimentSnapshot
from hypersched_nb.notebook import _front_end
from hypersched_nb.notebook._curve_bundle import CurveBundler
from hypersched_nb.notebook._plotly_widget import figure_widget
from hypersched_nb.notebook.drawings import (
    Drawing,
    allocation_drawing,
    allocation_layout,
    curves_drawing,
)
from hypersched_nb.notebook.figures import AllocationHistory, loaded_before_threads
from hypersched_nb.notebook.forecast_panel import ForecastPanel
from hypersched_nb.notebook.param_panel import ParamPanel
from hypersched_nb.notebook.static import PNG, picture_bundle
from hypersched_nb.notebook.trials_panel import TrialsPanel

__all__ = ["Dashboard"]

_EVENTS_SHOWN = 8
_HELD = (
    "<br><i>a cell is running: the slider and the stop button act when it ends "
    "(<code>exp.wait()</code> keeps them live)</i>"
)
_FAILED = "<!-- refresh failed -->"  # where the header's note of a failed refresh begins
_FIGURE_WIDTH = 560  # px: two side by side on a wide page, one above the other on a narrow one


class Dashboard:
    """``Dashboard(exp)`` (or ``exp.dashboard()``) as the last line of a cell shows it.

    ``interval`` is the refresh period in seconds; ``slider_max`` the slider's end in
    seconds since the start (default: three times the deadline, at least five minutes);
    ``forecast_every`` the forecast's period in seconds (None: no forecast panel), and
    ``forecast_prior`` a trace to forecast from before the first result; ``params_every``
    the parameter view's shortest period in seconds (None: no parameter view).
    """

    def __init__(
        self,
        experiment,
        *,
        interval: float = 1.0,
        slider_max: float | None = None,
        forecast_every: float | None = 30.0,
        forecast_prior=None,
        params_every: float | None = 30.0,
    ):
        import ipywidgets as w

        loaded_before_threads()
        self.experiment = experiment
        self.interval = interval
        snap = experiment.statistics()
        self._version = -1
        self._handle = None
        self._pictured = False  # the display carries a picture
        self._said_end = False  # the widgets have shown how the search ended
        self._drawing: threading.Thread | None = None  # the first picture, drawn beside
        self._wake = threading.Event()  # set when the search's status changes
        if hasattr(experiment, "on_status"):  # a search (a view of a snapshot has none)
            experiment.on_status(self._wake.set)
        self._thread: threading.Thread | None = None
        self._closed = threading.Event()
        self._setting = False  # True while the code itself moves the slider
        # the refresh thread and the widgets' callbacks (on the kernel's thread) take turns
        self._lock = threading.RLock()
        self.header = w.HTML()
        self.policy_line = w.HTML()
        end = slider_max or max(3 * snap.deadline, 300.0)
        self.slider = w.FloatSlider(
            value=snap.deadline / 60, min=_step(end), max=end / 60, step=_step(end), description="deadline",
            readout=False, continuous_update=False, layout=w.Layout(width="360px"),
        )  # fmt: skip
        self.slider_label = w.Label()
        self.stop_button = w.Button(
            description="stop", icon="stop", button_style="warning", layout=w.Layout(width="90px")
        )
        self._history = AllocationHistory()  # read on at every redraw, never again from 0
        self._allocation = _LiveFigure(allocation_drawing(snap, history=self._history))
        self._bundler = CurveBundler()  # the grey curves of trials over, bundled once
        self._curves = _LiveFigure(
            curves_drawing(snap, history=self._history, bundler=self._bundler)
        )
        self.allocation, self.curves = self._allocation.widget, self._curves.widget
        # the figures' views come last in the front end: shown, the whole view is
        self._views = _front_end.ViewsShown([self.allocation, self.curves])
        self._displayed_at = 0.0  # time.monotonic() of the display
        self.events = w.HTML()
        self.trials = TrialsPanel(snap)  # sortable, and one trial whole
        trials = w.Accordion([self.trials.widget], titles=("trials",), selected_index=None)
        self.forecast: ForecastPanel | None = None
        if forecast_every is not None:
            self.forecast = ForecastPanel(experiment, every=forecast_every, prior=forecast_prior)
        self.params: ParamPanel | None = None  # importances, parallel coordinates
        sections = [trials]
        if params_every is not None:
            self.params = ParamPanel(experiment, every=params_every)
            sections.append(
                w.Accordion([self.params.widget], titles=("parameters",), selected_index=None)
            )
        self.slider.observe(self._on_slider, names="value")
        self.stop_button.on_click(self._on_stop)
        controls = w.HBox([self.slider, self.slider_label, self.stop_button])
        for now in (self.policy_line, controls):  # of no use, or untrue, without the kernel
            now.add_class(_front_end.NOW)
        self.widget = w.VBox(
            [
                self.header,
                self.policy_line,
                controls,
                *([self.forecast.widget] if self.forecast is not None else []),
                w.HBox([self.allocation, self.curves], layout=w.Layout(flex_flow="row wrap")),
                self.events,
                *sections,
            ]
        )
        self.refresh(snap)

    # ------------------------------------------------------------------ display

    def _bundle(self, snap: ExperimentSnapshot, *, picture: bool = True) -> dict:
        """What is displayed: while the search runs, the widget view with the picture as
        its fallback (``picture``); once it is over, the picture alone."""
        if snap.done:
            return picture_bundle(snap)
        view = self.widget._repr_mimebundle_()
        view = dict(view[0] if isinstance(view, tuple) else view)
        if not picture:
            return {**view, "text/plain": str(snap)}
        data = picture_bundle(snap)
        return {**view, PNG: data[PNG], "text/plain": data["text/plain"]}

    def _ipython_display_(self) -> None:
        """Show the widgets at once; the picture they carry as a fallback (matplotlib's
        import and a drawing: a second or two) is added on a thread of its own once there is
        a result to show."""
        from IPython.display import display

        snap = self.experiment.statistics()
        self._handle = display(self._bundle(snap, picture=False), raw=True, display_id=True)
        self._displayed_at = time.monotonic()
        self._pictured = snap.done
        self.start()

    def _picture(self, snap: ExperimentSnapshot) -> None:
        """The display's fallback picture: the final one once the search is over (the widget
        view goes, the picture stays), else, once, the first beside the widget view."""
        if self._handle is None or (self._pictured and not snap.done):
            return
        if snap.done:  # no drawing of a panel left under way
            for panel in (self.forecast, self.params):
                if panel is not None:
                    panel.close(wait=60.0)
        bundle = self._bundle(snap)
        # a view replaced while the front end builds it is lost half-made
        self._views.wait(timeout=self._displayed_at + _front_end.GRACE - time.monotonic())
        self._handle.update(bundle, raw=True)
        self._pictured = True
        if snap.done:  # the front end lets go of the widgets no view shows any more
            _front_end.close_later(self.widget, _front_end.GRACE)

    def _first_picture(self, snap: ExperimentSnapshot) -> None:
        if self._drawing is None and not self._pictured and self._handle is not None:
            self._drawing = threading.Thread(
                target=self._picture, args=(snap,), name="hypersched-picture", daemon=True
            )
            self._drawing.start()

    def start(self) -> Dashboard:
        """Begin refreshing on a background thread (showing the dashboard does it)."""
        if self._thread is None and not self.experiment.statistics().done:
            self._thread = threading.Thread(
                target=self._loop, name="hypersched-dashboard", daemon=True
            )
            self._thread.start()
            if self.forecast is not None:
                self.forecast.start()
            if self.params is not None:
                self.params.start()
        return self

    def close(self) -> None:
        """Stop refreshing (the search goes on)."""
        self._closed.set()
        self._wake.set()
        if self.forecast is not None:
            self.forecast.close()

    def _loop(self) -> None:
        while True:  # every interval, and at once when the status changes (stop, failure, end)
            self._wake.wait(self.interval)
            self._wake.clear()
            if self._closed.is_set():
                return
            try:
                snap = self.refresh(self.experiment.statistics())
                if snap.done and not self._said_end:  # the header's last words shown for a
                    self._said_end = True  # period, then the picture in place of the widgets
                    continue
                if not snap.done:  # the first fallback picture, once there is a result to
                    if snap.best is not None:  # show, drawn beside: the header goes on
                        self._first_picture(snap)  # saying what happens meanwhile
                    continue
                if self._drawing is not None:
                    self._drawing.join()  # the final picture comes last
                self._picture(snap)
            except Exception as exc:  # noqa: BLE001 - a thread has nowhere else to say it
                why = f"{html.escape(type(exc).__name__)}: {html.escape(str(exc))}"
                note = _front_end.now_or_then(f"<br>dashboard refresh failed (trying again): {why}")
                self.header.value = f"{self.header.value.split(_FAILED)[0]}{_FAILED}{note}"
                continue  # tried again at the next interval: one failure ends nothing
            if snap.done:
                break

    # ------------------------------------------------------------------ updates

    def refresh(self, snap: ExperimentSnapshot | None = None) -> ExperimentSnapshot:
        """Bring every widget up to ``snap`` (default: a new snapshot); returns it."""
        with self._lock:
            return self._refresh(snap or self.experiment.statistics())

    def _refresh(self, snap: ExperimentSnapshot) -> ExperimentSnapshot:
        if not snap.going:  # stopped, failing or over: the controls go off before it says so
            self.slider.disabled = self.stop_button.disabled = True
        held = not snap.done and cell_holds_controls()
        self.header.value = _header(snap) + (_front_end.now_or_then(_HELD) if held else "")
        # the policy's line speaks of time left: it goes once the search is over
        self.policy_line.value = f"<i>{html.escape(snap.describe)}</i>" if snap.policy_holds else ""
        self._sync_slider(snap)
        if self.forecast is not None:  # the marker, and the band read there: nothing simulated
            best = math.nan if snap.best is None else snap.best.metric
            self.forecast.follow(snap.deadline, best)
            if not snap.going and snap.status != "created":
                self.forecast.over(snap.status_text())
        if snap.version != self._version:
            self._allocation.show(allocation_drawing(snap, history=self._history))
            self._curves.show(curves_drawing(snap, history=self._history, bundler=self._bundler))
            self.events.value = _events_html(snap)
            self.trials.show(snap)
            self._version = snap.version
        elif not snap.done:  # only time moved: the "now" line and the axis
            shown = self._allocation.shown
            self._allocation.show(Drawing(shown.traces, allocation_layout(snap)))
        return snap

    def _sync_slider(self, snap: ExperimentSnapshot) -> None:
        self._setting = True
        try:
            if snap.deadline / 60 > self.slider.max:
                self.slider.max = snap.deadline / 60 * 1.5
            if abs(self.slider.value - snap.deadline / 60) > 1e-9:
                self.slider.value = snap.deadline / 60
        finally:
            self._setting = False
        left = f" (in {format_duration(snap.time_left)})" if snap.going else ""
        self.slider_label.value = snap.deadline_text() + left  # a live control's words

    def _on_slider(self, change) -> None:
        with self._lock:
            if self._setting or self.experiment.statistics().done:
                return
            self.experiment.deadline = change["new"] * 60
            self.refresh()

    def _on_stop(self, _button) -> None:
        self.stop_button.disabled = True
        self.experiment.stop(wait=False)
        self.refresh()  # "stopped by you at …" now, not at the next period


def _step(end: float) -> float:
    """A slider step of about 1/200 of its range, in round minutes."""
    for step in (0.05, 0.1, 0.25, 0.5, 1, 5, 10, 30):
        if end / 60 / step <= 200:
            return step
    return 60.0


def _header(snap: ExperimentSnapshot) -> str:
    """The policy, what happened (:meth:`ExperimentSnapshot.status_text`: the words the
    magic and the report use), the time left while it runs, the workers (and those Dask
    has paused), the trials and the best. While the search is not over, a page that loses
    the kernel says instead that this is the search as it stood then
    (:func:`._front_end.now_or_then`)."""
    c = snap.counts
    status = html.escape(snap.status_text())
    if not snap.done:
        left = f" · <b>{format_duration(snap.time_left)}</b> left" if snap.going else ""
        then = html.escape(f"not connected to its kernel · {snap.standing_text()}")
        status = _front_end.now_or_then(status + left, then)
    return (
        f"<b>{html.escape(snap.policy)}</b> {status} · "
        f"{html.escape(snap.cluster_text())} · running {c.get('RUNNING', 0)}, "
        f"paused {c.get('PAUSED', 0)}, stopped {snap.stopped} · {html.escape(snap.best_text())}"
    )


def _events_html(snap: ExperimentSnapshot) -> str:
    rows = []
    for e in snap.events[-_EVENTS_SHOWN:][::-1]:
        trial = "" if e["trial"] is None else f"#{e['trial']}"
        rows.append(
            f"<tr><td>{e['time']:.1f}s</td><td>{trial}</td><td>{html.escape(e['action'])}</td>"
            f"<td>{html.escape(str(e['reason']))}</td></tr>"
        )
    return "<table style='font-size:11px'>" + "".join(rows) + "</table>" if rows else ""


class _LiveFigure:
    """A plotly FigureWidget and the drawing it shows, so that it is sent only what differs."""

    def __init__(self, drawing: Drawing):
        self.widget = figure_widget(drawing.figure())
        # a width of its own, as the forecast's: a view made from a saved notebook's widget
        # state is drawn before its row is laid out, and plotly, sizing itself to a box of no
        # width yet, drew it a few pixels wide
        self.widget.layout.width = _FIGURE_WIDTH
        self.shown = drawing

    def show(self, new: Drawing) -> None:
        with self.widget.editing:  # a front end asking for its state gets before or after
            _update(self.widget, self.shown, new)
        self.shown = new


def _update(live, shown: Drawing, new: Drawing) -> None:
    """Bring a FigureWidget from ``shown`` to ``new``. Traces that keep their kind (type and
    set of properties) change in place, in one plotly update message of only what changed:
    ``plotly_update``, which ``batch_update`` ends in, given our own dicts (valid already:
    plotly's property-by-property validation would cost more than the rest of a redraw).
    From the first trace that changes kind on, the traces are replaced."""
    kept = _same_kinds(shown.traces, new.traces)
    if kept < len(live.data):
        live.data = live.data[:kept]
    changes = [_changed(a, b) for a, b in zip(shown.traces[:kept], new.traces, strict=False)]
    moved = [i for i, change in enumerate(changes) if change]
    keys = sorted({key for i in moved for key in changes[i]})
    restyle = {key: [new.traces[i].get(key) for i in moved] for key in keys}
    relayout = _changed(shown.layout, new.layout)
    if restyle or relayout:
        live.plotly_update(restyle_data=restyle, relayout_data=relayout, trace_indexes=moved)
    if kept < len(new.traces):
        live.add_traces(list(new.traces[kept:]))


def _same_kinds(before: tuple[dict, ...], after: tuple[dict, ...]) -> int:
    """How many leading traces keep their type and their set of properties."""
    for i, (a, b) in enumerate(zip(before, after, strict=False)):
        if a.keys() != b.keys() or a["type"] != b["type"]:
            return i
    return min(len(before), len(after))


def _changed(before: dict, after: dict) -> dict:
    """The entries of ``after`` that differ from ``before`` (arrays compared by value)."""
    return {k: v for k, v in after.items() if k not in before or not _equal(before[k], v)}


def _equal(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
    return a == b
