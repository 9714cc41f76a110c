"""Example trainables: a small CNN on digits, a perceptron on digits trained with AdamW and a
step schedule, a 1-D CNN on MNIST-1D (with a constant learning rate, or one scheduled over an
epoch budget), ResNet-18 on CIFAR-10.

All share :class:`ImageClassifier`, which follows the trainable contract with plain SGD
(learning rate, momentum, weight decay; a subclass may build another optimiser), a learning
rate that is a function of the epoch
(:meth:`~ImageClassifier.lr_factor`; constant unless a subclass schedules it) and
cross-entropy:

* the model goes through ``ctx.wrap_model`` and the training set through
  ``ctx.shard_loader``, so the same code runs on one worker or data-parallel on k; the
  batch size is per replica and the learning rate is ``config["lr"] * ctx.lr_scale()``;
* results are a function of (config, ``ctx.seed``, world size): the weights are initialised
  under ``torch.manual_seed`` of the seed, epoch ``e`` reads the data in the order of
  ``shard_loader(epoch_seed=e)`` and draws dropout / augmentation from a generator reseeded
  from (seed, e, rank) inside ``torch.random.fork_rng`` (the process's own RNG is left
  alone), so no RNG state needs saving: pausing after any epoch and resuming on another
  worker gives bitwise the weights of training straight through (on CPU; cuDNN may differ
  in the last bits);
* ``step()`` returns ``{"val_acc", "train_loss"}``; when the training loss or the
  validation logits are not finite both are NaN, so that the driver stops a diverged trial;
* ``state_dict()`` holds the model, the optimizer (momentum buffers) and the epoch counter,
  plain tensors and numbers that ``torch.load(weights_only=True)`` accepts.

Each class has ``space()``: Optuna distributions wide enough that some configurations
diverge (large lr with momentum) and some never learn (tiny lr, heavy weight decay).
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from typing import ClassVar

import torch
import torch.nn.functional as F
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from torch import nn

from hypersched_nb.errors import ConfigError
from hypersched_nb.train import data
from hypersched_nb.train.trainable import Trainable, TrainContext

__all__ = [
    "MNIST1DCNN",
    "CIFARResNet18",
    "DigitsCNN",
    "DigitsMLP",
    "ImageClassifier",
    "MNIST1DCosine",
]

_EVAL_BATCH = 1024


def _small_sgd_space() -> dict:
    """The optimiser's part of the small models' spaces: wide enough that some
    configurations diverge (lr near 10) and some never learn (lr near 1e-4)."""
    return {
        "lr": FloatDistribution(1e-4, 10.0, log=True),
        "momentum": FloatDistribution(0.0, 0.99),
        "weight_decay": FloatDistribution(1e-6, 1e-1, log=True),
        "batch_size": IntDistribution(32, 512, log=True),
    }


class ImageClassifier(Trainable):
    """Shared SGD training loop; subclasses give ``defaults``, ``build_model`` and ``load_data``."""

    #: configuration keys and their defaults (keys not listed are rejected)
    defaults: ClassVar[dict] = {"lr": 0.05, "momentum": 0.9, "weight_decay": 1e-4, "batch_size": 64}

    @classmethod
    def space(cls) -> dict:
        """The search space as Optuna distributions, ``{name: distribution}``."""
        raise NotImplementedError  # abstractmethod: every example defines it

    def build_model(self, config: dict, classes: int) -> nn.Module:
        raise NotImplementedError  # abstractmethod

    def load_data(self, config: dict) -> data.Split:
        raise NotImplementedError  # abstractmethod

    def build_optimizer(self, params) -> torch.optim.Optimizer:
        """The optimiser, at learning rate ``self.lr``: SGD with the configuration's momentum and
        weight decay by default."""
        return torch.optim.SGD(
            params,
            lr=self.lr,
            momentum=float(self.config["momentum"]),
            weight_decay=float(self.config["weight_decay"]),
        )

    def augment(self, x: torch.Tensor) -> torch.Tensor:
        """Training-time augmentation of one batch (none by default)."""
        return x

    def lr_factor(self, epoch: int) -> float:
        """The learning rate of epoch ``epoch`` (1, 2, …) as a multiple of ``config["lr"]``:
        1 throughout by default. A function of the epoch alone, so resuming needs no state."""
        return 1.0

    # -- the contract -------------------------------------------------------------------

    def setup(self, config: dict, ctx: TrainContext) -> None:
        self.config = self._check(config)
        self.ctx = ctx
        self.device = torch.device(ctx.device)
        self.epoch = 0
        split = self.load_data(self.config)
        self.train_set = split.train_set()
        self.x_val, self.y_val = _shard(split.x_val, ctx), _shard(split.y_val, ctx)
        with self._rng(0):
            self.net = self.build_model(self.config, split.classes).to(self.device)
        self.model = ctx.wrap_model(self.net)
        self.lr = float(self.config["lr"]) * ctx.lr_scale()
        self.optimizer = self.build_optimizer(self.net.parameters())

    def step(self) -> dict:
        self.epoch += 1
        self._set_lr(self.epoch)
        with self._rng(self.epoch):
            loss_sum, seen = self._train_epoch()
        correct, count, bad = self._evaluate()
        totals = torch.stack([loss_sum, seen, correct, count, bad]).to(self.device, torch.float64)
        if self.ctx.distributed:
            import torch.distributed as dist

            dist.all_reduce(totals)
        loss_sum, seen, correct, count, bad = totals.tolist()
        train_loss = loss_sum / max(seen, 1.0)
        if not math.isfinite(train_loss) or bad > 0:
            return {"val_acc": math.nan, "train_loss": math.nan}
        return {"val_acc": correct / max(count, 1.0), "train_loss": train_loss}

    def state_dict(self) -> dict:
        return {
            "model": self.net.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "epoch": self.epoch,
        }

    def load_state_dict(self, state: dict) -> None:
        self.net.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.epoch = int(state["epoch"])
        self._set_lr(self.epoch + 1)  # the saved lr was for the old world size

    def teardown(self) -> None:
        self.model = self.net = self.optimizer = self.train_set = None

    # -- helpers ------------------------------------------------------------------------

    def _set_lr(self, epoch: int) -> None:
        for group in self.optimizer.param_groups:
            group["lr"] = self.lr * self.lr_factor(epoch)

    def _train_epoch(self) -> tuple[torch.Tensor, torch.Tensor]:
        loader = self.ctx.shard_loader(
            self.train_set, int(self.config["batch_size"]), epoch_seed=self.epoch
        )
        self.model.train()
        loss_sum = torch.zeros((), dtype=torch.float64, device=self.device)
        seen = 0
        for xb, yb in loader:
            xb, yb = self.augment(xb.to(self.device)), yb.to(self.device)
            loss = F.cross_entropy(self.model(xb), yb)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            loss_sum += loss.detach().double() * len(yb)
            seen += len(yb)
        return loss_sum, torch.tensor(float(seen), dtype=torch.float64, device=self.device)

    @torch.no_grad()
    def _evaluate(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Correct predictions, count and non-finite outputs on this replica's validation shard."""
        self.net.eval()
        correct = torch.zeros((), dtype=torch.float64, device=self.device)
        bad = torch.zeros((), dtype=torch.float64, device=self.device)
        for i in range(0, len(self.y_val), _EVAL_BATCH):
            xb = self.x_val[i : i + _EVAL_BATCH].to(self.device)
            yb = self.y_val[i : i + _EVAL_BATCH].to(self.device)
            out = self.net(xb)
            bad += (~torch.isfinite(out)).any(1).sum()
            correct += (out.argmax(1) == yb).sum()
        count = torch.tensor(float(len(self.y_val)), dtype=torch.float64, device=self.device)
        return correct, count, bad

    @contextmanager
    def _rng(self, epoch: int):
        """A forked torch RNG seeded from (trial seed, epoch, rank): deterministic, no state to
        keep. Epoch 0 (initialisation) ignores the rank so that every replica starts alike."""
        rank = self.ctx.rank if epoch else 0
        devices = [self.device.index or 0] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(((int(self.ctx.seed) * 1_000_003 + epoch) * 1_009 + rank) % 2**63)
            yield

    def _check(self, config: dict) -> dict:
        unknown = sorted(set(config) - set(self.defaults))
        if unknown:
            known = ", ".join(self.defaults)
            name = type(self).__name__
            raise ConfigError(f"{name}: unknown config key(s) {', '.join(unknown)}; known: {known}")
        cfg = {**self.defaults, **config}
        budget = int(cfg.get("budget_epochs", 1 << 30))
        rules = {  # each checked where the class has the key
            "lr": (lambda v: v > 0, "> 0"),
            "momentum": (lambda v: 0 <= v < 1, "in [0, 1)"),
            "weight_decay": (lambda v: v >= 0, ">= 0"),
            "batch_size": (lambda v: int(v) >= 1, ">= 1"),
            "budget_epochs": (lambda v: int(v) >= 1, ">= 1"),
            "warmup_epochs": (lambda v: 0 <= int(v) < budget, ">= 0 and < budget_epochs"),
            "decay_epoch": (lambda v: int(v) >= 1, ">= 1"),
            "channels": (lambda v: int(v) >= 1, ">= 1"),
            "hidden": (lambda v: int(v) >= 1, ">= 1"),
            "dropout": (lambda v: 0 <= v < 1, "in [0, 1)"),
        }
        for name, (ok, rule) in rules.items():
            if name in cfg and not ok(cfg[name]):
                raise ConfigError(f"`{name}` is {cfg[name]}, but must be {rule}")
        return cfg


class DigitsCNN(ImageClassifier):
    """Two 3×3 conv layers (``channels``, 2·``channels``) with max-pooling, dropout and a linear
    head, on scikit-learn's 8×8 digits (1,437 train / 360 validation images, split by
    ``split_seed``). An epoch (training and validation) takes 0.06-0.2 s of one CPU thread
    (10th-90th percentile over the ``digits-cnn`` trace's configurations)."""

    defaults: ClassVar[dict] = {
        "lr": 0.05, "momentum": 0.9, "weight_decay": 1e-4, "batch_size": 32,
        "channels": 16, "dropout": 0.1, "split_seed": 0,
    }  # fmt: skip

    @classmethod
    def space(cls) -> dict:
        return {
            **_small_sgd_space(),
            "channels": IntDistribution(4, 32, log=True),
            "dropout": FloatDistribution(0.0, 0.6),
        }

    def load_data(self, config: dict) -> data.Split:
        return data.digits(seed=int(config["split_seed"]))

    def build_model(self, config: dict, classes: int) -> nn.Module:
        c = int(config["channels"])
        return nn.Sequential(
            nn.Conv2d(1, c, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),  # c×4×4
            nn.Conv2d(c, 2 * c, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),  # 2c×2×2
            nn.Flatten(), nn.Dropout(float(config["dropout"])), nn.Linear(8 * c, classes),
        )  # fmt: skip


class DigitsMLP(ImageClassifier):
    """A two-hidden-layer perceptron (``hidden`` units each, dropout) on the 8×8 digits of
    :class:`DigitsCNN`, trained as many models are: AdamW (decoupled weight decay) and a step
    schedule, the learning rate cut tenfold after epoch ``decay_epoch``. The cut lifts each
    curve late, at an epoch of its own, and Adam's scale-free steps make a large learning
    rate wander rather than diverge (none of the ``digits-mlp`` trace's 100 configurations
    diverged); there epoch 1 ranks the learners' final values at Spearman 0.83, against 0.40
    for ``digits-cnn`` under SGD."""

    defaults: ClassVar[dict] = {
        "lr": 1e-3, "weight_decay": 1e-2, "batch_size": 32, "hidden": 128, "dropout": 0.1,
        "decay_epoch": 20, "split_seed": 0,
    }  # fmt: skip

    @classmethod
    def space(cls) -> dict:
        return {
            "lr": FloatDistribution(1e-5, 1.0, log=True),
            "weight_decay": FloatDistribution(1e-6, 0.3, log=True),
            "batch_size": IntDistribution(16, 512, log=True),
            "hidden": IntDistribution(16, 512, log=True),
            "dropout": FloatDistribution(0.0, 0.6),
            "decay_epoch": IntDistribution(3, 30),
        }

    def load_data(self, config: dict) -> data.Split:
        return data.digits(seed=int(config["split_seed"]))

    def build_model(self, config: dict, classes: int) -> nn.Module:
        h, p = int(config["hidden"]), float(config["dropout"])
        return nn.Sequential(
            nn.Flatten(), nn.Linear(64, h), nn.ReLU(), nn.Dropout(p),
            nn.Linear(h, h), nn.ReLU(), nn.Dropout(p), nn.Linear(h, classes),
        )  # fmt: skip

    def build_optimizer(self, params) -> torch.optim.Optimizer:
        return torch.optim.AdamW(
            params, lr=self.lr, weight_decay=float(self.config["weight_decay"])
        )

    def lr_factor(self, epoch: int) -> float:
        return 0.1 if epoch > int(self.config["decay_epoch"]) else 1.0


class MNIST1DCNN(ImageClassifier):
    """The 1-D CNN of the MNIST-1D paper (three strided convolutions, kernel 5/3/3, and a
    linear head) with dropout, on MNIST-1D (4,000 train / 1,000 test series of length 40). An
    epoch takes 0.13-0.5 s of one CPU thread (10th-90th percentile, ``mnist1d-cnn`` trace)."""

    defaults: ClassVar[dict] = {
        "lr": 0.05, "momentum": 0.9, "weight_decay": 1e-4, "batch_size": 64,
        "channels": 32, "dropout": 0.0,
    }  # fmt: skip

    @classmethod
    def space(cls) -> dict:
        return {
            **_small_sgd_space(),
            "channels": IntDistribution(8, 48, log=True),
            "dropout": FloatDistribution(0.0, 0.5),
        }

    def load_data(self, config: dict) -> data.Split:
        return data.mnist1d()

    def build_model(self, config: dict, classes: int) -> nn.Module:
        c = int(config["channels"])
        return nn.Sequential(
            nn.Conv1d(1, c, 5, stride=2, padding=1), nn.ReLU(),  # c×19
            nn.Conv1d(c, c, 3, stride=2, padding=1), nn.ReLU(),  # c×10
            nn.Conv1d(c, c, 3, stride=2, padding=1), nn.ReLU(),  # c×5
            nn.Flatten(), nn.Dropout(float(config["dropout"])), nn.Linear(5 * c, classes),
        )  # fmt: skip


class MNIST1DCosine(MNIST1DCNN):
    """:class:`MNIST1DCNN` with its learning rate tied to an epoch budget, as long trainings
    are usually run: a linear warm-up over ``warmup_epochs`` (epoch ``e`` at ``e / (w + 1)``
    of ``lr``), then cosine annealing that reaches 0 at the end of ``budget_epochs``; epochs
    past the budget train at learning rate 0. A large learning rate that anneals can end
    best, and a long warm-up starts slowly, so epoch 1 ranks configurations less faithfully
    than under a constant rate (the ``mnist1d-cosine`` trace records how much less)."""

    defaults: ClassVar[dict] = {
        **MNIST1DCNN.defaults, "lr": 0.2, "warmup_epochs": 2, "budget_epochs": 30,
    }  # fmt: skip

    @classmethod
    def space(cls) -> dict:
        return {**super().space(), "warmup_epochs": IntDistribution(0, 8)}

    def lr_factor(self, epoch: int) -> float:
        warmup, budget = int(self.config["warmup_epochs"]), int(self.config["budget_epochs"])
        if epoch <= warmup:
            return epoch / (warmup + 1)
        if epoch > budget:
            return 0.0
        done = (epoch - 1 - warmup) / (budget - warmup)
        return 0.5 * (1.0 + math.cos(math.pi * done))


class CIFARResNet18(ImageClassifier):
    """torchvision's ResNet-18 adapted to 32×32 inputs (3×3 stride-1 stem, no max-pool), with
    random crops (padding 4) and flips.

    ``dataset="cifar10"`` reads CIFAR-10 from ``data_root`` (default: the user cache) and
    downloads it only with ``download=True``; ``dataset="standin"`` trains on
    :func:`data.cifar_standin` (``standin_train`` / ``standin_val`` images) with no file at all.
    """

    defaults: ClassVar[dict] = {
        "lr": 0.1, "momentum": 0.9, "weight_decay": 5e-4, "batch_size": 128,
        "dataset": "cifar10", "data_root": None, "download": False,
        "standin_train": 512, "standin_val": 256, "augment": True,
    }  # fmt: skip

    @classmethod
    def space(cls) -> dict:
        return {
            "lr": FloatDistribution(1e-3, 10.0, log=True),
            "momentum": FloatDistribution(0.5, 0.99),
            "weight_decay": FloatDistribution(1e-6, 1e-2, log=True),
            "batch_size": CategoricalDistribution([64, 128, 256]),
        }

    def load_data(self, config: dict) -> data.Split:
        if config["dataset"] == "standin":
            return data.cifar_standin(
                train=int(config["standin_train"]), val=int(config["standin_val"])
            )
        if config["dataset"] == "cifar10":
            return data.cifar10(root=config["data_root"], download=bool(config["download"]))
        raise ConfigError(f"`dataset` is {config['dataset']!r}, but must be 'cifar10' or 'standin'")

    def build_model(self, config: dict, classes: int) -> nn.Module:
        from torchvision.models import resnet18

        net = resnet18(num_classes=classes)
        net.conv1 = nn.Conv2d(3, 64, 3, stride=1, padding=1, bias=False)
        net.maxpool = nn.Identity()
        return net

    def augment(self, x: torch.Tensor) -> torch.Tensor:
        return _flip_crop(x) if self.config["augment"] else x


def _flip_crop(x: torch.Tensor, pad: int = 4) -> torch.Tensor:
    """Per-image random horizontal flip and random crop from a zero-padded copy, vectorised."""
    b, c, h, w = x.shape
    dev = x.device
    flip = torch.rand(b, device=dev) < 0.5
    x = torch.where(flip[:, None, None, None], x.flip(3), x)
    padded = F.pad(x, (pad, pad, pad, pad))
    rows = torch.randint(0, 2 * pad + 1, (b, 1), device=dev) + torch.arange(h, device=dev)
    cols = torch.randint(0, 2 * pad + 1, (b, 1), device=dev) + torch.arange(w, device=dev)
    bi = torch.arange(b, device=dev)[:, None, None, None]
    ci = torch.arange(c, device=dev)[None, :, None, None]
    return padded[bi, ci, rows[:, None, :, None], cols[:, None, None, :]]


def _shard(t: torch.Tensor, ctx: TrainContext) -> torch.Tensor:
    """This replica's share of the validation set (all of it on one worker)."""
    return t[ctx.rank :: ctx.world_size] if ctx.world_size > 1 else t
