"""Import plotly's widgets without paying for nbformat's JSON-schema checkers.

Measured (``benchmarks/notebook_latency.py``): most of the first ``exp.dashboard()`` went on
one import chain that a dashboard never uses. Importing ``plotly.graph_objects.FigureWidget``
imports ``plotly.io._renderers``, which imports ``nbformat`` at once (it needs it only to
render with ``fig.show()``); nbformat imports ``jsonschema``, whose format checkers import
``rfc3987_syntax`` where it is installed (jupyter_server's dependencies install it), and
that builds 38 lark grammars at import: 5-8 s of CPU on a busy machine.

:func:`import_plotly` imports plotly's renderers with their ``nbformat`` a stand-in that
imports the real nbformat the first time plotly reads from it (``fig.show()`` in a
notebook), so plotly behaves as before and the cost is paid only by those who use it. Where
nbformat is loaded already, or plotly's renderers are, it changes nothing.
"""

from __future__ import annotations

import importlib
import sys
import threading

__all__ = ["import_plotly"]

_lock = threading.Lock()


class _Deferred:
    """A module imported the first time one of its attributes is read."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str):
        return getattr(importlib.import_module(self._name), attr)

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"<{self._name}, imported when first used>"


def import_plotly() -> None:
    """Import plotly's graph objects and its renderers (nbformat deferred, see above)."""
    with _lock:
        if "plotly.io._renderers" not in sys.modules and "nbformat" not in sys.modules:
            from _plotly_utils import optional_imports

            real = optional_imports.get_module

            def get_module(name: str, *args, **kwargs):
                if name == "nbformat" and "nbformat" not in sys.modules:
                    return _Deferred(name)
                return real(name, *args, **kwargs)

            optional_imports.get_module = get_module
            try:
                import plotly.io._renderers  # noqa: F401
            finally:
                optional_imports.get_module = real
        import plotly.graph_objects as go

        go.FigureWidget  # noqa: B018 - plotly's lazy attribute: the import it stands for
