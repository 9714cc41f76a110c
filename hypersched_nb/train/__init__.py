"""The torch side: the trainable contract, example trainables and offline datasets.

The examples and datasets import torch, so they load on first use: importing
``hypersched_nb.train`` (or ``Trainable`` from it) stays light.
"""

from __future__ import annotations

from hypersched_nb._lazy import lazy
from hypersched_nb.train.trainable import Trainable, TrainContext

__all__ = [
    "MNIST1DCNN",
    "MNIST1DCosine",
    "CIFARResNet18",
    "DigitsCNN",
    "DigitsMLP",
    "TrainContext",
    "Trainable",
    "data",
]

__getattr__, __dir__ = lazy(
    __name__,
    {
        "DigitsCNN": "hypersched_nb.train.examples",
        "DigitsMLP": "hypersched_nb.train.examples",
        "MNIST1DCNN": "hypersched_nb.train.examples",
        "MNIST1DCosine": "hypersched_nb.train.examples",
        "CIFARResNet18": "hypersched_nb.train.examples",
    },
    submodules=["data"],
)
