"""The notebook layer: the ``%hypersched`` magic, live dashboard, static pictures, HTML report.

Everything here observes :class:`~hypersched_nb.experiment.snapshot.ExperimentSnapshot`
values; nothing here decides anything.
"""

from __future__ import annotations

from hypersched_nb._lazy import lazy

__all__ = ["Dashboard", "Experiment", "show", "write_report"]

__getattr__, __dir__ = lazy(
    __name__,
    {
        "Dashboard": "hypersched_nb.notebook.dashboard",
        "Experiment": "hypersched_nb.notebook.experiment",
        "show": "hypersched_nb.notebook.static",
        "write_report": "hypersched_nb.notebook.report",
    },
)
