"""The ``Experiment`` users import: the search of :mod:`hypersched_nb.experiment` with its
live view.

``from hypersched_nb import Experiment`` gives this class. The search itself lives a layer
below and knows nothing of widgets; this layer adds :meth:`Experiment.dashboard`.
"""

from __future__ import annotations

from hypersched_nb.experiment import experiment as _search
from hypersched_nb.notebook.dashboard import Dashboard

__all__ = ["Experiment"]


class Experiment(_search.Experiment):
    __doc__ = _search.Experiment.__doc__

    def dashboard(self, **options):
        """The live widgets (:class:`~hypersched_nb.notebook.dashboard.Dashboard`): the
        workers each trial holds against the deadline, the learning curves, a deadline
        slider and a stop button. ``options`` go to the dashboard."""
        return Dashboard(self, **options)
