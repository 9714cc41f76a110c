"""The notebook layer: the ``%hypersched`` magic, live dashboard, static pictures, HTML report.

Everything here observes :class:`~hypersched_nb.experiment.snapshot.ExperimentSnapshot`
values; nothing here decides anything.
"""

from __future__ import annotations

__all__ = ["Dashboard", "show", "write_report"]


def __getattr__(name: str):
    import importlib

    where = {"Dashboard": "dashboard", "show": "static", "write_report": "report"}.get(name)
    if where is None:
        raise AttributeError(f"module 'hypersched_nb.notebook' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"hypersched_nb.notebook.{where}"), name)
    globals()[name] = value
    return value
