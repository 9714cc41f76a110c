"""hypersched_nb: deadline-aware hyperparameter search (HyperSched and its neighbours) from Jupyter.

``from hypersched_nb import Experiment, Trainable`` is the whole user surface
(``compare``, ``compare_plot`` and ``searches`` set searches side by side); in a
notebook, ``%load_ext hypersched_nb`` adds the ``%hypersched`` magic. Names are imported
on first use, so ``import hypersched_nb.core`` pulls in neither torch nor Dask.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hypersched_nb._lazy import lazy

if TYPE_CHECKING:  # what the lazy table below names, for type checkers and the API reference
    from hypersched_nb.experiment.compare import compare, compare_plot, searches
    from hypersched_nb.notebook.experiment import Experiment
    from hypersched_nb.train.context import TrainContext
    from hypersched_nb.train.trainable import Trainable

__version__ = "0.1.0"
__all__ = [
    "Experiment", "Trainable", "TrainContext", "compare", "compare_plot", "searches",
    "load_ipython_extension",
]  # fmt: skip

# the public Experiment is the notebook layer's: the search of hypersched_nb.experiment
# with its dashboard
__getattr__, __dir__ = lazy(
    __name__,
    {
        "Experiment": "hypersched_nb.notebook.experiment",
        "Trainable": "hypersched_nb.train.trainable",
        "TrainContext": "hypersched_nb.train.context",
        "compare": "hypersched_nb.experiment.compare",
        "compare_plot": "hypersched_nb.experiment.compare",
        "searches": "hypersched_nb.experiment.compare",
    },
)


def load_ipython_extension(ipython) -> None:
    """``%load_ext hypersched_nb``: register the ``%hypersched`` magic."""
    from hypersched_nb.notebook.magic import HyperschedMagics

    ipython.register_magics(HyperschedMagics(ipython))
