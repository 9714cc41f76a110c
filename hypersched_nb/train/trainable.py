"""The torch trainable contract: code written once that runs on one worker or on k.

A trainable trains one epoch per ``step()`` and can stop and resume between epochs through
``state_dict()`` / ``load_state_dict()`` (torch's convention). ``setup`` receives the
configuration and a :class:`TrainContext` that says where it runs (rank, world size,
device) and wraps the model and data loader for data parallelism, so that the same code
runs on 1 or k workers.
"""

from __future__ import annotations

from hypersched_nb.train.context import TrainContext

__all__ = ["Trainable", "TrainContext"]


class Trainable:
    """Subclass and fill in the four methods (the example of docs/guide/trainable.md)."""

    def setup(self, config: dict, ctx: TrainContext) -> None:
        raise NotImplementedError  # abstractmethod: every trainable defines it

    def step(self) -> dict:
        """Train one epoch and return metrics, e.g. ``{"val_acc": 0.91}``."""
        raise NotImplementedError  # abstractmethod

    def state_dict(self) -> dict:
        raise NotImplementedError  # abstractmethod

    def load_state_dict(self, state: dict) -> None:
        raise NotImplementedError  # abstractmethod

    def teardown(self) -> None:
        """Free resources (optional)."""
