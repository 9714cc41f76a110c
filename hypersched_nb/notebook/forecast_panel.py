"""The dashboard's forecast: the best expected against the deadline, and what more workers
would give.

:class:`ForecastPanel` shows a band (10th to 90th percentile, and the expected best) of the
best metric the search would reach by each deadline around the current one, with the current
deadline marked, and a small table: the best by that deadline on the cluster as it is and
with more workers ("+2 workers would give …"). It asks :meth:`Experiment.forecast
<hypersched_nb.experiment.experiment.Experiment.forecast>` (which the search remembers as its
last forecast, for the report) for a few deadlines (now plus the time left times 0.5, 1, 1.5
and 2) and cluster sizes (now, half as many more, twice as many), in a few runs: well under a
second on a CPU demo.

Threads and processes: the panel forecasts on a daemon thread of its own, every ``every``
seconds (and at once when the deadline moves beyond what the last forecast covers). That
thread reads the search (a millisecond under its gate) and has the runs simulated in a
process of its own (one, started at the first forecast, spawned: nothing of the kernel's
threads is copied), so the simulation neither competes with the widgets for the kernel's
interpreter lock nor fills the kernel's heap (a full garbage collection there stops every
thread, the widgets' too, for a tenth of a second). Where that process cannot load the
search (a policy defined in the notebook itself), the runs are simulated on the panel's
thread instead, from then on. The thread holds no lock of the dashboard's; what it found is
handed over in one attribute (:attr:`ForecastPanel.band`) and drawn under the panel's own
lock, held only while its widgets are written. Moving the slider
(:meth:`ForecastPanel.follow`) moves the marker and reads the band at the new deadline,
interpolated between the deadlines simulated: nothing is simulated on the kernel's thread,
and the slider never waits for the panel (if the panel is drawing, it draws the marker again
when done). Before the first result it says so: drawn from the prior alone (``prior=``), or
no prior yet.
"""

from __future__ import annotations

import html
import math
import threading
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime, timedelta

from hypersched_nb.errors import ConfigError, HyperschedError
from hypersched_nb.experiment.forecast import shares, spread
from hypersched_nb.experiment.snapshot import ExperimentSnapshot
from hypersched_nb.notebook import _front_end
from hypersched_nb.notebook._panel import panel_process, stop_drawing
from hypersched_nb.notebook._plotly_widget import figure_widget
from hypersched_nb.notebook.drawings import Drawing
from hypersched_nb.notebook.figures import loaded_before_threads
from hypersched_nb.notebook.forecast_band import Band, Point

__all__ = ["Band", "ForecastPanel", "Point", "band_drawing", "cluster_sizes", "reach"]

RUNS = 8  # simulations per (deadline, cluster size): the panel's forecast stays cheap
_REACH = (0.5, 1.0, 1.5, 2.0)  # the band's deadlines: now + the time left times these
_EARLY = 2.0  # before there is anything to forecast from, look again this often (seconds)
_LAST = 2.0  # with less time left than this, nothing is forecast (it would be past already)
_DEADLINE = "#C0392B"  # the allocation figure's deadline colour
_BAND = "rgba(31,119,180,0.2)"
NO_PRIOR = "no prior yet: the forecast appears after the first results"
NOT_STARTED = "the forecast appears once the search runs"


def reach(snap: ExperimentSnapshot) -> tuple[float, ...]:
    """The deadlines a panel forecasts for: now plus the time left times 0.5, 1, 1.5, 2
    (the current deadline among them)."""
    left = snap.deadline - snap.time
    return tuple(snap.time + left * f for f in _REACH)


def cluster_sizes(workers: int) -> tuple[int, ...]:
    """The cluster's size, half as many more (at least one), twice as many."""
    return tuple(dict.fromkeys((workers, workers + max(1, workers // 2), 2 * workers)))


def band_drawing(band: Band | None, *, deadline: float, metric: str, height: int = 250) -> Drawing:
    """The band against the deadline (x: seconds, or minutes past 10 minutes): 10-90 % and
    the expected best on the cluster as it is, the expected best on the other sizes dashed,
    the best so far dotted, and ``deadline`` marked."""
    unit, label = _unit(band)
    traces: list[dict] = []
    shapes = [_vline(deadline / unit)]
    if band is not None:
        x = [d / unit for d in band.deadlines]
        hidden = dict(type="scatter", mode="lines", line=dict(width=0), hoverinfo="skip")
        traces += [
            dict(hidden, x=x, y=band.p10[0], showlegend=False, name="10 %"),
            dict(hidden, x=x, y=band.p90[0], fill="tonexty", fillcolor=_BAND, name="10-90 %"),
            dict(type="scatter", mode="lines+markers", x=x, y=band.expected[0],
                 name=f"expected, {band.workers[0]} workers", line=dict(color="#1f77b4")),
        ]  # fmt: skip
        dashed = dict(type="scatter", mode="lines", line=dict(dash="dash", width=1))
        traces += [
            dict(dashed, x=x, y=band.expected[i], name=f"{w} workers")
            for i, w in enumerate(band.workers[1:], start=1)
        ]
        if math.isfinite(band.best):
            shapes.append(dict(type="line", xref="paper", x0=0, x1=1, y0=band.best,
                               y1=band.best, line=dict(color="#888", dash="dot", width=1)))  # fmt: skip
    layout = dict(
        height=height, width=460, margin=dict(l=50, r=10, t=30, b=40), shapes=shapes,
        title=dict(text="expected best against the deadline", font=dict(size=13)),
        xaxis=dict(title=dict(text=label)), yaxis=dict(title=dict(text=metric)),
        legend=dict(font=dict(size=10)), template="plotly_white", uirevision="keep",
    )  # fmt: skip
    return Drawing(tuple(traces), layout)


def _unit(band: Band | None) -> tuple[float, str]:
    if band is not None and band.deadlines[-1] >= 600:
        return 60.0, "deadline, minutes since start"
    return 1.0, "deadline, seconds since start"


def _vline(x: float) -> dict:
    return dict(
        type="line", xref="x", yref="paper", x0=x, x1=x, y0=0, y1=1,
        line=dict(color=_DEADLINE, dash="dash", width=2),
    )  # fmt: skip


class ForecastPanel:
    """The forecast beside a dashboard's deadline slider (``Dashboard(forecast_every=...)``
    makes one). ``every`` is its period in seconds; ``runs`` the simulations per deadline and
    cluster size; ``prior`` a trace of a similar model to forecast from before any result
    (None: the search's own ``prior``, if it has one);
    ``separate``: simulate in a process of its own (where it can load the search)."""

    def __init__(
        self, experiment, *, every: float = 30.0, runs: int = RUNS, prior=None,
        separate: bool = True,
    ):  # fmt: skip
        import ipywidgets as w

        loaded_before_threads()
        if isinstance(every, bool) or not (isinstance(every, (int, float)) and every > 0):
            raise ConfigError(f"`forecast_every` is {every!r}; give a period in seconds > 0")
        if prior is None:  # the search's own prior (``Experiment(prior=)``), where it has curves
            prior = getattr(getattr(experiment, "prior", None), "trace", None)
        self.experiment, self.every, self.runs, self.prior = experiment, every, runs, prior
        snap = experiment.statistics()
        self.metric, self.started, self.mode = snap.metric, snap.started, snap.mode
        self.deadline = snap.deadline  # where the marker stands
        self.best = _best(snap)  # the search's best as the dashboard last read it
        self.band: Band | None = None  # the last forecast: set by one assignment, read once
        if snap.forecast is not None:  # one made before the dashboard showed
            made = snap.forecast
            self.band = Band.of(made.forecast.frame(), made=made.made, mode=self.mode)
        # what it says in place of a forecast (or under it: a failure)
        self.said = "" if self.band is not None else _nothing_yet(snap, prior) or ""
        self._lock = threading.Lock()  # held only while the widgets are written
        self.ended = False  # the search no longer goes on (see over())
        self._wake, self._closed = threading.Event(), threading.Event()
        self._thread: threading.Thread | None = None
        self.separate = separate
        self._pool: ProcessPoolExecutor | None = None  # where the runs are simulated
        self.title, self.table = w.HTML(), w.HTML()
        drawing = band_drawing(self.band, deadline=self.deadline, metric=self.metric)
        self.figure = figure_widget(drawing.figure())
        # the chart and its table, shown once there is a forecast (the title says why not)
        self.plot = w.HBox([self.figure, self.table])
        self.widget = w.VBox([self.title, self.plot])
        self._draw()

    # ------------------------------------------------------------------ its thread

    def start(self) -> ForecastPanel:
        """Forecast every ``every`` seconds on a daemon thread until the search ends."""
        if self._thread is None and not self.experiment.statistics().done:
            self._thread = threading.Thread(
                target=self._loop, name="hypersched-forecast", daemon=True
            )
            self._thread.start()
        return self

    def close(self, *, wait: bool | float = False) -> None:
        """Stop forecasting; ``wait``: until a forecast under way has ended too (a number:
        for at most that many seconds)."""
        stop_drawing(self._closed, self._thread, self._end_pool, wait, wake=self._wake)

    def _loop(self) -> None:
        try:
            while not self._closed.is_set():
                pause = self._turn()
                if pause is None:
                    return
                self._wake.wait(pause)
                self._wake.clear()
        finally:
            self._end_pool()

    def _turn(self) -> float | None:
        """One refresh; the seconds until the next, or None once the search is over."""
        try:
            found = self.update()
        except Exception as exc:  # noqa: BLE001 - said in the panel, tried again next period
            if self.experiment.statistics().done:
                return None
            self.said = f"forecast failed: {type(exc).__name__}: {exc}"
            self._draw()
            return self.every
        if self.experiment.statistics().done:
            return None
        return self.every if found is not None else min(self.every, _EARLY)

    def update(self) -> Band | None:
        """Forecast now, on the calling thread (the panel's own, normally), and show it;
        None where there is nothing to forecast from yet (the panel says why)."""
        snap = self.experiment.statistics()
        self.started = snap.started
        if snap.done or self.ended:  # what was forecast last stays
            return None
        why = _nothing_yet(snap, self.prior)
        if why is not None:
            self.said = why
            self._draw()
            return None
        made = datetime.now()
        frame = self._forecast(reach(snap), cluster_sizes(snap.workers))
        if self.ended:  # over meanwhile: the panel says so, and is drawn no more
            return None
        self.band, self.said = Band.of(frame, made=made, mode=self.mode), ""
        self._draw()
        return self.band

    def _forecast(self, deadlines: tuple[float, ...], sizes: tuple[int, ...]):
        """The forecast's frame, simulated in the panel's process where it can be."""
        asked = dict(runs=self.runs, prior=self.prior)
        if self.separate:
            if self._pool is None:
                self._pool = panel_process()
            try:
                return self.experiment.forecast(deadlines, sizes, executor=self._pool, **asked)
            except HyperschedError:
                raise
            except Exception:  # noqa: BLE001 - it cannot load the search: here from now on
                self.separate = False
                self._end_pool()
        return self.experiment.forecast(deadlines, sizes, **asked)

    def _end_pool(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    # ------------------------------------------------------------------ the widgets

    def follow(self, deadline: float, best: float | None = None) -> None:
        """The deadline moved (the slider, or code), or the best did: mark the deadline and
        read the band there, its runs counted against the best now; a deadline beyond the
        band asks for a new forecast now. Cheap: nothing is simulated."""
        best = self.best if best is None else best
        if deadline == self.deadline and _same(best, self.best):
            return
        self.deadline, self.best = deadline, best
        band = self.band
        if band is not None and not band.covers(deadline):
            self._wake.set()
        self._draw(marker_only=True, blocking=False)

    def over(self, words: str) -> None:
        """The search is over, or stopped or failing (``words``: how): no new forecast, and
        the panel says the one it shows was made while the search ran."""
        if self.ended:
            return
        self.ended = True
        made = "" if self.band is None else ": this forecast was made while it ran"
        self.said = f"the search is over ({words}){made}"
        self.close()
        self._draw()

    def _draw(self, *, marker_only: bool = False, blocking: bool = True) -> None:
        """Bring the widgets to :attr:`band` and :attr:`deadline`. Not ``blocking`` (the
        slider's call): if the panel is drawing, that drawing shows the new deadline."""
        while True:
            if not self._lock.acquire(blocking=blocking):
                return  # the drawing under way reads the deadline again when done
            try:
                deadline = self.deadline
                self._write(self.band, deadline, marker_only)
            finally:
                self._lock.release()
            if self.deadline == deadline:
                return
            marker_only, blocking = True, True  # it moved while drawing

    def _write(self, band: Band | None, deadline: float, marker_only: bool) -> None:
        self.title.value = _title(band, deadline, self.said, self.started)
        self.plot.layout.display = None if band is not None else "none"
        self.table.value = _table(band, deadline, self.started, self.best)
        drawing = band_drawing(band, deadline=deadline, metric=self.metric)
        fig = self.figure
        with fig.editing, fig.batch_update():
            if not marker_only:
                fig.data = ()
                fig.add_traces(list(drawing.traces))
            fig.layout.shapes = drawing.layout["shapes"]
            fig.layout.xaxis.title.text = drawing.layout["xaxis"]["title"]["text"]


#: how the panel's last words begin once the search is over (true with or without a kernel)
_FINAL = ("the search is over", "the search ended")


def _nothing_yet(snap: ExperimentSnapshot, prior) -> str | None:
    """Why there is nothing to forecast (yet), or None."""
    if snap.done:
        return "the search ended before any forecast was made"
    if snap.status == "created" or snap.workers < 1:
        return NOT_STARTED
    if snap.best is None and prior is None:
        return NO_PRIOR
    if snap.deadline - snap.time < _LAST:
        return "the deadline is here: nothing left to forecast"
    return None


def _when(deadline: float, started: datetime | None) -> str:
    if started is None:
        return f"{deadline:.0f}s"
    return f"{started + timedelta(seconds=deadline):%H:%M:%S}"


def _title(band: Band | None, deadline: float, said: str, started) -> str:
    if band is None:
        words = html.escape(said or "forecasting…")
        if not said.startswith(_FINAL):  # a promise only a kernel keeps
            words = _front_end.now_or_then(words, "none made")
        return f"<b>forecast</b>: {words}"
    own = band.at(deadline)[0]
    text = (
        f"<b>forecast</b> by {_when(deadline, started)} on {own.workers} workers: best "
        f"<b>{own.expected:.4g}</b> ({spread(own.p10, own.p90)}) · {band.runs} runs, "
        f"{html.escape(band.note)}, made {band.made:%H:%M:%S}"
    )
    if not band.covers(deadline) and not said.startswith(_FINAL):
        reach_end = _when(band.deadlines[-1], started)
        text += _front_end.now_or_then(  # a promise only a kernel keeps
            f"<br><i>beyond this forecast (up to {reach_end}): a new one is on its way</i>"
        )
    if said:
        text += f"<br><i>{html.escape(said)}</i>"
    return text


def _workers(n: int) -> str:
    return "worker" if n == 1 else "workers"


def _table(band: Band | None, deadline: float, started, best: float) -> str:
    """By ``deadline``, per cluster size: "+N workers would give …", and in how many runs
    that beats ``best`` (the search's best now)."""
    if band is None:
        return ""
    best = best if math.isfinite(best) else band.best
    points = band.at(deadline, best)
    now = points[0].workers
    rows = []
    for p in points:
        more = p.workers - now
        who = f"{now} workers (now)" if more == 0 else f"+{more} {_workers(more)} would give"
        beat = "" if math.isnan(p.p_beat) else shares(p.p_beat, band.runs)
        rows.append(
            f"<tr><td>{who}</td><td><b>{p.expected:.4g}</b></td>"
            f"<td>{_range(p.p10, p.p90)}</td><td>{beat}</td></tr>"
        )
    head = (
        f"<tr><th>by {_when(deadline, started)}</th><th>expected</th><th>10-90 %</th>"
        f"<th>beats {best:.4g} (the best now) in</th></tr>"
    )
    return f"<table style='font-size:12px'>{head}{''.join(rows)}</table>"


def _range(p10: float, p90: float) -> str:
    return f"{p10:.4g}-{p90:.4g}" if p10 != p90 else f"{p10:.4g} (80% of runs or more)"


def _best(snap: ExperimentSnapshot) -> float:
    return math.nan if snap.best is None else float(snap.best.metric)


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))
