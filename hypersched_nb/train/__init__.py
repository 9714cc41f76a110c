"""The torch side: the trainable contract, example trainables and offline datasets.

The examples and datasets import torch, so they load on first use: importing
``hypersched_nb.train`` (or ``Trainable`` from it) stays light.
"""

from __future__ import annotations

import importlib

from hypersched_nb.train.trainable import Trainable, TrainContext

__all__ = ["MNIST1DCNN", "CIFARResNet18", "DigitsCNN", "TrainContext", "Trainable", "data"]

_LAZY = {
    "DigitsCNN": "hypersched_nb.train.examples",
    "MNIST1DCNN": "hypersched_nb.train.examples",
    "CIFARResNet18": "hypersched_nb.train.examples",
    "data": "hypersched_nb.train.data",
}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'hypersched_nb.train' has no attribute {name!r}")
    module = importlib.import_module(_LAZY[name])
    value = module if name == "data" else getattr(module, name)
    globals()[name] = value
    return value
