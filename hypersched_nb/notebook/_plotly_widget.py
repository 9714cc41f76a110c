"""plotly's ``FigureWidget``, with its 5 MB script sent to the front end once per kernel.

Since plotly 6 a ``FigureWidget`` is an anywidget whose state carries plotly.js and the
widget's code, about 5 MB, as its ``_esm`` string; the front end receives that string with
every figure and evaluates it for each one (plotly/plotly.py#5143). Measured in JupyterLab
and headless Chromium on this project's 2-core machines, each figure added about 1.2 s
before a view appeared (one ipywidgets slider: 0.01 s), so a dashboard with its forecast and
parameter panels took 4-6 s to show, and sent some 25 MB, each time.

Here the script travels once, as the state of one hidden :class:`_PlotlyCode` widget per
kernel, and each figure's ``_esm`` is a few lines (:data:`_LOADER`) that ask the front end's
widget manager for that widget, evaluate its code the first time the page needs it, and hand
each figure plotly's own ``initialize`` and ``render`` (anywidget holds a model's messages
until its ``initialize`` is done, so none is lost meanwhile). The widget manager is what
anywidget gives a module as ``model.widget_manager`` (0.9 to 0.11 at least; it says it may
narrow it: ``tests/notebook/test_plotly_widget.py`` reads the installed front end for it).

One more change: plotly sends a figure's changes as messages and keeps the state it gives a
new view at the figure's first (``_widget_data``, ``_widget_layout``), so a page reloaded
while a search ran drew each figure as it was first shown, then failed to apply the later
changes to traces it lacked ("indices must be valid indices for gd.data"). Here the state a
front end asks for is the figure as it stands. Everything else is plotly's ``FigureWidget``
unchanged: its traits, its messages, its Python API.
"""

from __future__ import annotations

import copy
import threading

__all__ = ["figure_widget"]

# The figure's front-end module: plotly's default export (a factory of {initialize, render}
# per model) loaded from the kernel's code widget, evaluated once per page and widget.
_LOADER = """\
const loaded = (globalThis.__hyperschedPlotly ??= new Map());

function plotly(model) {
  const id = String(model.get("_plotly")).replace(/^IPY_MODEL_/, "");
  if (!loaded.has(id)) {
    loaded.set(id, model.widget_manager.get_model(id).then(async (code) => {
      const url = URL.createObjectURL(new Blob([code.get("code")], { type: "text/javascript" }));
      try {
        return await import(/* webpackIgnore: true */ url);
      } finally {
        URL.revokeObjectURL(url);
      }
    }));
  }
  return loaded.get(id);
}

export default () => {
  let figure, ready;
  return {
    initialize(ctx) {
      ready = plotly(ctx.model).then((module) => {
        figure = module.default();
        return figure.initialize(ctx);
      });
      return ready;
    },
    async render(ctx) {
      await ready;
      return figure.render(ctx);
    },
  };
};
"""


class _Made:
    """What this kernel has made: the two classes (defined on first use: plotly's import is
    slow) and the one code widget."""

    lock = threading.Lock()
    figure_class: type | None = None
    code_class: type | None = None
    code = None  # this kernel's code widget


def figure_widget(figure=None, **kwargs):
    """A plotly ``FigureWidget`` of ``figure`` (a ``go.Figure``, a dict, or None) whose
    script the front end receives once per kernel (see the module's docstring)."""
    with _Made.lock:
        if _Made.figure_class is None:
            _Made.figure_class, _Made.code_class = _define()
    return _Made.figure_class(figure, **kwargs)


def _code_widget():
    """This kernel's code widget, made again if something closed it."""
    with _Made.lock:
        if _Made.code is None or _Made.code.comm is None:
            _Made.code = _Made.code_class()
        return _Made.code


def _define() -> tuple[type, type]:
    import anywidget
    import traitlets
    from ipywidgets import widget_serialization

    from hypersched_nb.notebook._plotly_import import import_plotly

    import_plotly()  # without the nbformat import a figure widget never uses
    import plotly.graph_objects as go

    class _PlotlyCode(anywidget.AnyWidget):
        """plotly's widget script, for the figures' loaders to evaluate; never shown."""

        _esm = "export default {};"
        code = traitlets.Unicode(str(go.FigureWidget._esm)).tag(sync=True)

    class SharedFigureWidget(go.FigureWidget):
        """plotly's ``FigureWidget``, its script read from this kernel's code widget, and its
        state, when a front end asks for it, the figure as it stands. Whoever changes it
        from a thread of its own holds :attr:`editing` meanwhile."""

        _esm = _LOADER
        _plotly = traitlets.Instance(_PlotlyCode).tag(sync=True, **widget_serialization)

        def __init__(self, *args, **kwargs):
            self._editing = threading.RLock()
            super().__init__(*args, **kwargs)

        @property
        def editing(self) -> threading.RLock:
            return self._editing

        @traitlets.default("_plotly")
        def _code(self):
            return _code_widget()

        def get_state(self, key=None, drop_defaults=False):
            with self._editing:
                state = super().get_state(key, drop_defaults)
                if getattr(self, "_layout_obj", None) is not None:  # made: as it stands now
                    for name, now in (("_widget_data", self._data),
                                      ("_widget_layout", self._layout_obj._props)):  # fmt: skip
                        if name in state:
                            to_json = self.trait_metadata(name, "to_json")
                            state[name] = to_json(copy.deepcopy(now), self)
            return state

    return SharedFigureWidget, _PlotlyCode
