"""The dashboard's parameter view: which parameters mattered, and how the trials' values of
each went with their results, in Optuna's own figures (``plot_param_importances`` and
``plot_parallel_coordinate``) drawn from the search as an Optuna study (``exp.study``: one
snapshot, never a trial half written).

Threads and processes: :class:`ParamPanel` draws on a daemon thread of its own, at most once
every ``every`` seconds and only when the search changed (its snapshot's ``version``); the
dashboard's slider and buttons never call it. The figures are made in a process of its own
(one, spawned at the first drawing) from the study's trials: the importances fit a forest
(about a second on a hundred trials, in C calls that hold the interpreter lock for tens of
milliseconds) and the parallel coordinates build a trace per trial, neither of which then
competes with the slider for the kernel's interpreter; the panel's thread only writes the
figures that come back into its widgets, and the process runs at a lower priority than the
kernel, so that on a busy machine the slider gets the processor first. Where that process
cannot start, the figures are made on the panel's thread from then on. The panel's lock is
held only while its widgets are written.

Before there is enough to draw, it says so in one line: the importances need at least two
COMPLETE trials whose parameters differ (with none Optuna logs a warning and draws an empty
figure; with one, or with every completed trial alike, a figure that means nothing).
"""

from __future__ import annotations

import html
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor

from hypersched_nb.errors import ConfigError
from hypersched_nb.notebook._panel import panel_process, stop_drawing
from hypersched_nb.notebook._plotly_widget import figure_widget
from hypersched_nb.notebook.figures import loaded_before_threads

__all__ = ["NOT_STARTED", "ParamPanel", "not_enough"]

NOT_STARTED = "the parameter view is drawn on its own thread once the dashboard shows"
_SIZE = dict(height=320, width=460, margin=dict(l=50, r=10, t=40, b=40))


def not_enough(study) -> str | None:
    """Why ``study`` has too little to draw parameter importances from (one line), or None:
    they need two COMPLETE trials or more, and a parameter whose value differs among them."""
    from optuna.trial import TrialState

    done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if len(done) < 2:
        return (
            f"not enough to draw yet: {len(done)} trial{'' if len(done) == 1 else 's'} "
            "completed, the parameter view needs 2 with different parameters"
        )
    names = {name for t in done for name in t.params}
    if not any(len({repr(t.params.get(name)) for t in done}) > 1 for name in names):
        return f"not enough to draw yet: the {len(done)} completed trials share every parameter"
    return None


class ParamPanel:
    """Parameter importance and parallel coordinates of ``experiment`` (anything with
    ``statistics()`` and ``study``), redrawn every ``every`` seconds at most (``clock``:
    the seconds it counts them by) on its own thread (:meth:`start`)."""

    def __init__(
        self, experiment, *, every: float = 30.0, clock: Callable[[], float] = time.monotonic,
        separate: bool = True,
    ):  # fmt: skip
        import ipywidgets as w

        loaded_before_threads()
        if isinstance(every, bool) or not (isinstance(every, (int, float)) and every > 0):
            raise ConfigError(f"`params_every` is {every!r}; give a period in seconds > 0")
        self.experiment, self.every, self.clock = experiment, every, clock
        self.drawn_at: float | None = None  # when it last drew (by ``clock``)
        self.draws = 0  # how many times it has drawn
        self._version = None  # the snapshot version last drawn
        self._lock = threading.Lock()  # held only while the widgets are written
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None
        self.separate = separate  # the importances computed in a process of their own
        self._pool: ProcessPoolExecutor | None = None
        self.said = w.HTML(f"<i>{html.escape(NOT_STARTED)}</i>")
        # the figures are made at their first drawing: until then the front end holds no
        # plotly models (two empty ones slowed a loaded page's every update)
        self.importances = self.parallel = None
        self.widget = w.VBox([self.said])

    # ------------------------------------------------------------------ its thread

    def start(self) -> ParamPanel:
        """Draw on a daemon thread, every ``every`` seconds at most, until the search ends."""
        if self._thread is None and not self._closed.is_set():
            self._thread = threading.Thread(
                target=self._loop, name="hypersched-params", daemon=True
            )
            self._thread.start()
        return self

    def close(self, *, wait: bool | float = False) -> None:
        """Stop drawing; ``wait``: until a drawing under way has ended (a number: at most
        that many seconds)."""
        stop_drawing(self._closed, self._thread, self._end_pool, wait)

    def _loop(self) -> None:
        try:
            self._turns()
        finally:
            self._end_pool()

    def _turns(self) -> None:
        while not self._closed.is_set():
            try:
                pause = self.tick()
            except Exception as exc:  # noqa: BLE001 - said in the panel, tried again next period
                self._say(f"parameter view failed (trying again): {type(exc).__name__}: {exc}")
                self.drawn_at, pause = self.clock(), self.every
            if pause is None:
                return
            self._closed.wait(pause)

    def tick(self) -> float | None:
        """Draw if ``every`` seconds have passed since the last drawing (and the search
        changed); the seconds until it may draw again, or None once the search is over and
        drawn."""
        now = self.clock()
        if self.drawn_at is not None and now - self.drawn_at < self.every:
            return self.every - (now - self.drawn_at)
        snap = self.experiment.statistics()
        if snap.version != self._version:
            self.update()
            self._version = snap.version
        self.drawn_at = now
        return None if snap.done else self.every

    # ------------------------------------------------------------------ the drawing

    def update(self) -> bool:
        """Draw now, on the calling thread (the panel's own, normally): both figures, or the
        line saying why not yet. True where the figures were drawn."""
        study = self.experiment.study
        why = not_enough(study)
        self.draws += 1
        if why is not None:
            self._say(why)
            with self._lock:
                if self.importances is not None:
                    for widget in (self.importances, self.parallel):
                        with widget.editing:
                            widget.data = ()
            return False
        drawn = self._figures(study)
        with self._lock:
            if self.importances is None:
                self._make_figures()
            for widget, figure in zip((self.importances, self.parallel), drawn, strict=True):
                with widget.editing, widget.batch_update():
                    widget.data = ()
                    widget.add_traces(figure["data"])
                    widget.layout = figure["layout"]
                    widget.update_layout(**_SIZE)
            self.said.value = (
                f"<b>parameters</b> of {_completed(study)} completed trials, drawn at "
                f"{time.strftime('%H:%M:%S')} (every {self.every:g} s at most)"
            )
        return True

    def _make_figures(self) -> None:
        import ipywidgets as w

        self.importances = figure_widget(layout=_SIZE)
        self.parallel = figure_widget(layout=_SIZE)
        box = w.HBox([self.importances, self.parallel], layout=w.Layout(flex_flow="row wrap"))
        self.widget.children = (self.said, box)

    def _figures(self, study) -> tuple[dict, dict]:
        """The two figures of ``study`` (see :func:`figures`), made in the panel's process
        where it can start."""
        trials, direction = study.get_trials(deepcopy=False), study.direction.name.lower()
        if self.separate:
            try:
                if self._pool is None:  # at a lower priority than the kernel
                    self._pool = panel_process(nice=10)
                return self._pool.submit(figures, trials, direction).result()
            except (OSError, RuntimeError):  # no process to be had: here from now on
                self.separate = False
                self._end_pool()
        return figures(trials, direction)

    def _end_pool(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def _say(self, words: str) -> None:
        with self._lock:
            self.said.value = f"<i>{html.escape(words)}</i>"


def figures(trials, direction: str = "minimize") -> tuple[dict, dict]:
    """Optuna's two figures, as plotly dicts, of a study of ``direction`` holding ``trials``
    (FrozenTrials, so that they can be sent to another process): the parameters'
    importances (fANOVA, seeded: the same search draws the same bars) and parallel
    coordinates."""
    import optuna
    from optuna.importance import FanovaImportanceEvaluator
    from optuna.visualization import plot_parallel_coordinate, plot_param_importances

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction=direction)
    study.add_trials(trials)
    bars = plot_param_importances(study, evaluator=FanovaImportanceEvaluator(seed=0))
    return bars.to_plotly_json(), plot_parallel_coordinate(study).to_plotly_json()


def _completed(study) -> int:
    from optuna.trial import TrialState

    return len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))
