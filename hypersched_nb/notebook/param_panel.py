"""The dashboard's parameter view: which parameters mattered, and how the trials' values of
each went with their results, in Optuna's own figures (``plot_param_importances`` and
``plot_parallel_coordinate``) drawn from the search as an Optuna study (``exp.study``: one
snapshot, never a trial half written).

Threads and processes: :class:`ParamPanel` draws on a daemon thread of its own, at most once
every ``every`` seconds and only when the search changed (its snapshot's ``version``); the
dashboard's slider and buttons never call it. The importances fit a forest (about a second on
a hundred trials, in C calls that hold the interpreter lock for tens of milliseconds), so
they are computed in a process of its own (one, spawned at the first drawing) from the
study's trials, and Optuna draws its figure from the numbers that come back; where that
process cannot start, on the panel's thread from then on. The panel's lock is held only while
its widgets are written.

Before there is enough to draw, it says so in one line: the importances need at least two
COMPLETE trials whose parameters differ (with none Optuna logs a warning and draws an empty
figure; with one, or with every completed trial alike, a figure that means nothing).
"""

from __future__ import annotations

import html
import multiprocessing
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor

from hypersched_nb.errors import ConfigError
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
        import optuna.visualization  # noqa: F401 - imported here, not half-way on the thread
        import plotly.graph_objects as go

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
        self.importances = go.FigureWidget(layout=_SIZE)
        self.parallel = go.FigureWidget(layout=_SIZE)
        self.widget = w.VBox(
            [self.said, w.HBox([self.importances, self.parallel], layout=w.Layout(flex_flow="row wrap"))]
        )  # fmt: skip

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
        self._closed.set()
        thread = self._thread
        if thread is None:
            self._end_pool()
        elif wait is not False:
            thread.join(None if wait is True else float(wait))

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
                self.importances.data, self.parallel.data = (), ()
            return False
        figures = _figures(study, self._importances(study))
        with self._lock:
            for widget, figure in zip((self.importances, self.parallel), figures, strict=True):
                with widget.batch_update():
                    widget.data = ()
                    widget.add_traces(list(figure.data))
                    widget.layout = figure.layout
                    widget.update_layout(**_SIZE)
            self.said.value = (
                f"<b>parameters</b> of {_completed(study)} completed trials, drawn at "
                f"{time.strftime('%H:%M:%S')} (every {self.every:g} s at most)"
            )
        return True

    def _importances(self, study) -> dict[str, float]:
        """The parameters' importances in ``study``, computed in the panel's process where
        it can start."""
        trials, direction = study.get_trials(deepcopy=False), study.direction.name.lower()
        if self.separate:
            try:
                if self._pool is None:
                    spawn = multiprocessing.get_context("spawn")
                    self._pool = ProcessPoolExecutor(max_workers=1, mp_context=spawn)
                return self._pool.submit(importances, trials, direction).result()
            except (OSError, RuntimeError):  # no process to be had: here from now on
                self.separate = False
                self._end_pool()
        return importances(trials, direction)

    def _end_pool(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def _say(self, words: str) -> None:
        with self._lock:
            self.said.value = f"<i>{html.escape(words)}</i>"


def importances(trials, direction: str = "minimize") -> dict[str, float]:
    """Optuna's importances (fANOVA, seeded: the same search gives the same bars) of the
    parameters of ``trials`` (FrozenTrials, so they can be sent to another process) in a
    study of ``direction``."""
    import optuna
    from optuna.importance import FanovaImportanceEvaluator, get_param_importances

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction=direction)
    study.add_trials(trials)
    return get_param_importances(study, evaluator=FanovaImportanceEvaluator(seed=0))


def _figures(study, known: dict[str, float]):
    """Optuna's two figures of ``study``: the importances ``known`` (see
    :func:`importances`) and parallel coordinates."""
    from optuna.visualization import plot_parallel_coordinate, plot_param_importances

    evaluator = _known(known)
    return plot_param_importances(study, evaluator=evaluator), plot_parallel_coordinate(study)


def _completed(study) -> int:
    from optuna.trial import TrialState

    return len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))


def _known(known: dict[str, float]):
    """An importance evaluator that gives the importances ``known``, already computed
    (Optuna's figure asks its evaluator for them)."""
    from optuna.importance import BaseImportanceEvaluator

    class Known(BaseImportanceEvaluator):
        def evaluate(self, study, params=None, *, target=None) -> dict[str, float]:
            names = known if params is None else params
            return {name: known[name] for name in names if name in known}

    return Known()
