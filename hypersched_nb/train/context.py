"""Where one replica of a trial runs: built by the runtime, handed to ``Trainable.setup``.

Part of the trainable contract, so it sits in ``train``, below the runtime that builds it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["TrainContext", "trial_seed"]


def trial_seed(seed: int, trial_id: int) -> int:
    """``ctx.seed`` of trial ``trial_id`` of a search seeded ``seed``: the two, mixed."""
    import numpy as np

    return int(np.random.SeedSequence([seed, trial_id]).generate_state(1)[0])


@dataclass
class TrainContext:
    """Where a trial's replica runs. ``world_size`` is the number of workers of the trial."""

    rank: int = 0
    world_size: int = 1
    device: str = "cpu"
    trial_id: int = 0
    seed: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    def wrap_model(self, model):
        """Move ``model`` to this replica's device; wrap it in DDP when ``world_size > 1``."""
        model = model.to(self.device)
        if not self.distributed:
            return model
        from torch.nn.parallel import DistributedDataParallel

        return DistributedDataParallel(
            model, device_ids=None if self.device == "cpu" else [self.device]
        )

    @staticmethod
    def unwrap(model):
        """The plain module inside a :meth:`wrap_model` result, whose ``state_dict()`` loads
        the same on 1 or k workers (no ``module.`` prefixes)."""
        return getattr(model, "module", model)

    def shard_loader(
        self, dataset, batch_size: int, *, shuffle: bool = True, epoch_seed: int = 0, **kw
    ):
        """A DataLoader over this replica's shard of ``dataset`` (all of it on one worker).

        ``batch_size`` is per replica: the global batch grows with the world size, as in the
        HyperSched authors' trainer; scale the learning rate with :meth:`lr_scale`.
        """
        import torch
        from torch.utils.data import DataLoader, DistributedSampler

        if not self.distributed:
            g = torch.Generator().manual_seed(self.seed * 1_000_003 + epoch_seed)
            return DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, generator=g, **kw)
        sampler = DistributedSampler(
            dataset, num_replicas=self.world_size, rank=self.rank, shuffle=shuffle, seed=self.seed
        )
        sampler.set_epoch(epoch_seed)
        return DataLoader(dataset, batch_size=batch_size, sampler=sampler, **kw)

    def lr_scale(self) -> float:
        """√(batch growth): the learning-rate factor on ``world_size`` workers, for a
        configuration whose learning rate is for one worker."""
        return self.world_size**0.5
