"""hypersched_nb: deadline-aware hyperparameter search (HyperSched and its neighbours) from Jupyter.

``from hypersched_nb import Experiment, Trainable`` is the whole user surface; in a
notebook, ``%load_ext hypersched_nb`` adds the ``%hypersched`` magic. Names are imported
on first use, so ``import hypersched_nb.core`` pulls in neither torch nor Dask.
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["Experiment", "Trainable", "TrainContext", "load_ipython_extension"]

_LAZY = {
    "Experiment": "hypersched_nb.experiment.experiment",
    "Trainable": "hypersched_nb.train.trainable",
    "TrainContext": "hypersched_nb.train.context",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hypersched_nb' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + list(_LAZY))


def load_ipython_extension(ipython) -> None:
    """``%load_ext hypersched_nb``: register the ``%hypersched`` magic."""
    from hypersched_nb.notebook.magic import HyperschedMagics

    ipython.register_magics(HyperschedMagics(ipython))
