"""Tiny trainables for the runtime's tests and benchmarks (importable by Dask workers).

:class:`TinyRegression` is a linear model fitted by SGD with momentum to a fixed synthetic
set: an epoch takes milliseconds, results depend only on (config, seed, world size), and
its knobs make it sleep, burn CPU, carry a large state or raise, so that one class serves
every runtime test. ``step()`` reports:

- ``loss``: mean squared error on the whole set after the epoch;
- ``digest``: SHA-256 of the weights and momentum (equal digests, equal states);
- ``replica_gap``: on k workers, the largest difference between any replica's parameters
  and rank 0's (0.0 when data parallelism keeps them identical).
"""

from __future__ import annotations

import hashlib
import os
import threading
import time

import torch
from torch import nn
from torch.utils.data import TensorDataset

from hypersched_nb.train.trainable import Trainable, TrainContext

__all__ = ["TinyRegression", "busy", "spin"]


def busy(seconds: float) -> None:
    """Keep one CPU core busy for ``seconds`` (a stand-in for a training epoch's compute)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        spin(1)


def spin(thousands: int) -> float:
    """A fixed amount of work: ``thousands`` × 1,000 multiply-adds in Python."""
    x = 1.0
    for _ in range(int(thousands) * 1000):
        x = x * 1.0000001 + 1e-9
    return x


class TinyRegression(Trainable):
    """Configuration (all optional): ``lr`` (0.05), ``batch_size`` (32, per replica),
    ``rows`` (512), ``features`` (8), ``seed`` (overrides ``ctx.seed``, so that two trials
    can share one), ``sleep`` / ``work`` (seconds slept / computed per epoch), ``spin``
    (a fixed amount of work per epoch, see :func:`spin`), ``state_mb``
    (extra state of that many MiB, carried through checkpoints), ``fail_at`` (the epoch
    whose ``step()`` raises), ``hang_at`` (the epoch whose ``step()`` never returns; with
    ``hang_once``, a file path, only while that file does not exist: it is made first),
    ``hog_at`` / ``hog_mb`` (the epoch whose ``step()`` fills that many MiB of memory and
    holds them for a minute: a worker with less is restarted by its nanny), ``returns``
    (what every ``step()`` returns instead of its metrics, right or wrong)."""

    def setup(self, config: dict, ctx: TrainContext) -> None:
        self.config, self.ctx = config, ctx
        if "seed" in config:
            ctx.seed = int(config["seed"])
        rows, features = int(config.get("rows", 512)), int(config.get("features", 8))
        g = torch.Generator().manual_seed(12345)
        x = torch.randn(rows, features, generator=g)
        w = torch.randn(features, 1, generator=g)
        self.x, self.y = x, x @ w + 0.1 * torch.randn(rows, 1, generator=g)
        torch.manual_seed(ctx.seed)
        self.net = nn.Linear(features, 1)
        self.model = ctx.wrap_model(self.net)
        self.opt = torch.optim.SGD(
            self.net.parameters(), lr=float(config.get("lr", 0.05)) * ctx.lr_scale(), momentum=0.9
        )
        self.epoch = 0
        mb = float(config.get("state_mb", 0))
        self.ballast = torch.zeros(int(mb * 2**20) // 4, dtype=torch.float32)

    def step(self) -> dict:
        cfg = self.config
        if cfg.get("fail_at") is not None and self.epoch + 1 == int(cfg["fail_at"]):
            raise RuntimeError(f"boom at epoch {self.epoch + 1}")
        if cfg.get("hang_at") is not None and self.epoch + 1 == int(cfg["hang_at"]):
            once = cfg.get("hang_once")
            if once is None or not os.path.exists(once):
                if once is not None:
                    open(once, "w").close()  # a marker: the next attempt goes on
                threading.Event().wait()
        if cfg.get("hog_at") is not None and self.epoch + 1 == int(cfg["hog_at"]):
            hog = torch.ones(int(float(cfg["hog_mb"]) * 2**20), dtype=torch.uint8)  # touched
            time.sleep(60)
            del hog
        loader = self.ctx.shard_loader(
            TensorDataset(self.x, self.y), int(cfg.get("batch_size", 32)), epoch_seed=self.epoch
        )
        for xb, yb in loader:
            self.opt.zero_grad()
            nn.functional.mse_loss(self.model(xb), yb).backward()
            self.opt.step()
        if cfg.get("sleep"):
            time.sleep(float(cfg["sleep"]))
        if cfg.get("work"):
            busy(float(cfg["work"]))
        if cfg.get("spin"):
            spin(int(cfg["spin"]))
        self.epoch += 1
        if "returns" in cfg:
            return cfg["returns"]
        with torch.no_grad():
            loss = nn.functional.mse_loss(self.net(self.x), self.y).item()
        return {"loss": loss, "digest": self._digest(), "replica_gap": self._replica_gap()}

    def state_dict(self) -> dict:
        return {
            "model": self.net.state_dict(),
            "opt": self.opt.state_dict(),
            "epoch": self.epoch,
            "ballast": self.ballast,
        }

    def load_state_dict(self, state: dict) -> None:
        self.net.load_state_dict(state["model"])
        self.opt.load_state_dict(state["opt"])
        self.epoch = int(state["epoch"])
        self.ballast = state["ballast"]

    def _digest(self) -> str:
        h = hashlib.sha256()
        for p in self.net.parameters():
            h.update(p.detach().numpy().tobytes())
            buf = self.opt.state.get(p, {}).get("momentum_buffer")
            if buf is not None:
                h.update(buf.numpy().tobytes())
        return h.hexdigest()

    def _replica_gap(self) -> float:
        if not self.ctx.distributed:
            return 0.0
        import torch.distributed as dist

        flat = torch.cat([p.detach().reshape(-1) for p in self.net.parameters()])
        gathered = [torch.empty_like(flat) for _ in range(self.ctx.world_size)]
        dist.all_gather(gathered, flat)
        return max(float((g - gathered[0]).abs().max()) for g in gathered)
