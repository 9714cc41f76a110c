"""Offline datasets for the example trainables: nothing here downloads unless asked to.

* :func:`digits` — scikit-learn's ``load_digits`` (1,797 8×8 images, shipped inside
  scikit-learn), split into train and validation sets, stratified by class, by a fixed seed.
* :func:`mnist1d` — MNIST-1D (Greydanus, 2020) built by ``mnist1d.data.make_dataset`` from
  the templates in its code with its default arguments (4,000 train and 1,000 test series of
  length 40). Building takes a few seconds, so the arrays are cached in memory per process
  and, unless ``cache=False``, as an ``.npz`` under :func:`cache_dir`.
* :func:`cifar_standin` — random 3×32×32 tensors whose labels come from a fixed random linear
  teacher: the shape of CIFAR-10, learnable, and free of any file (for tests).
* :func:`cifar10` — real CIFAR-10 through torchvision; it downloads only with
  ``download=True`` and otherwise says in one line how to get it.

Every function returns a :class:`Split` of float32 / int64 tensors; ``x`` keeps a channel
axis (``N×1×8×8``, ``N×1×40``, ``N×3×32×32``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hypersched_nb.errors import ConfigError

__all__ = [
    "CIFAR_MEAN",
    "CIFAR_STD",
    "Split",
    "cache_dir",
    "cifar10",
    "cifar_standin",
    "digits",
    "mnist1d",
]

#: per-channel statistics of the CIFAR-10 training set (the usual normalisation)
CIFAR_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR_STD = (0.2470, 0.2435, 0.2616)

_MEMORY: dict[tuple, Split] = {}


@dataclass(frozen=True)
class Split:
    """Train and validation tensors of one dataset (``x`` float32 with a channel axis, ``y`` int64)."""

    x_train: object
    y_train: object
    x_val: object
    y_val: object
    classes: int = 10

    def train_set(self):
        from torch.utils.data import TensorDataset

        return TensorDataset(self.x_train, self.y_train)

    def val_set(self):
        from torch.utils.data import TensorDataset

        return TensorDataset(self.x_val, self.y_val)


def cache_dir() -> Path:
    """``$HYPERSCHED_CACHE``, else ``$XDG_CACHE_HOME/hypersched_nb``, else ``~/.cache/hypersched_nb``."""
    if os.environ.get("HYPERSCHED_CACHE"):
        return Path(os.environ["HYPERSCHED_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "hypersched_nb"


def digits(*, val_fraction: float = 0.2, seed: int = 0) -> Split:
    """scikit-learn's digits, pixels scaled to [0, 1], split stratified by ``seed``."""
    if not 0.0 < val_fraction < 1.0:
        raise ConfigError(f"`val_fraction` is {val_fraction}, but must be in (0, 1)")
    key = ("digits", val_fraction, seed)
    if key not in _MEMORY:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split

        bunch = load_digits()
        x = (bunch.images / 16.0).astype(np.float32)[:, None]  # N×1×8×8
        y = bunch.target.astype(np.int64)
        xt, xv, yt, yv = train_test_split(
            x, y, test_size=val_fraction, random_state=seed, stratify=y
        )
        _MEMORY[key] = _tensors(xt, yt, xv, yv)
    return _MEMORY[key]


def mnist1d(*, num_samples: int = 5000, cache: bool = True) -> Split:
    """MNIST-1D as ``make_dataset`` builds it offline from templates, with its default
    arguments (``num_samples`` aside: 80% train, 20% validation).

    The global ``random`` and ``numpy.random`` states, which ``make_dataset`` reseeds, are
    restored afterwards.
    """
    if num_samples < 10:
        raise ConfigError(f"`num_samples` is {num_samples}, but must be >= 10 (one per class)")
    key = ("mnist1d", num_samples)
    if key not in _MEMORY:
        path = cache_dir() / f"mnist1d-{num_samples}.npz"
        arrays = _read_npz(path) if cache else None
        if arrays is None:
            arrays = _build_mnist1d(num_samples)
            if cache:
                _write_npz(path, arrays)
        xt, yt, xv, yv = (arrays[k] for k in ("x", "y", "x_test", "y_test"))
        _MEMORY[key] = _tensors(
            xt[:, None].astype(np.float32), yt, xv[:, None].astype(np.float32), yv
        )
    return _MEMORY[key]


def cifar_standin(*, train: int = 512, val: int = 256, classes: int = 10, seed: int = 0) -> Split:
    """CIFAR-10-shaped random images labelled by a fixed random linear teacher (for tests)."""
    for name, value in (("train", train), ("val", val), ("classes", classes)):
        if value < 1:
            raise ConfigError(f"`{name}` is {value}, but must be >= 1")
    key = ("standin", train, val, classes, seed)
    if key not in _MEMORY:
        rng = np.random.default_rng(seed)
        x = rng.standard_normal((train + val, 3, 32, 32), dtype=np.float32)
        teacher = rng.standard_normal((3 * 32 * 32, classes), dtype=np.float32)
        y = (x.reshape(len(x), -1) @ teacher).argmax(1).astype(np.int64)
        _MEMORY[key] = _tensors(x[:train], y[:train], x[train:], y[train:], classes=classes)
    return _MEMORY[key]


def cifar10(*, root: str | os.PathLike | None = None, download: bool = False) -> Split:
    """CIFAR-10 (50,000 train, 10,000 test) through torchvision, normalised per channel.

    Looks in ``root`` (default ``cache_dir()/cifar10``); downloads only when ``download=True``.
    """
    root = Path(root) if root is not None else cache_dir() / "cifar10"
    key = ("cifar10", str(root))
    if key in _MEMORY:
        return _MEMORY[key]
    if not download and not (root / "cifar-10-batches-py").is_dir():
        raise ConfigError(
            f"CIFAR-10 is not in {root}: pass download=True (needs a network) or place torchvision's "
            f"'cifar-10-batches-py' folder there"
        )
    from torchvision.datasets import CIFAR10

    parts = [CIFAR10(str(root), train=t, download=download) for t in (True, False)]
    mean = np.array(CIFAR_MEAN, np.float32)[None, :, None, None]
    std = np.array(CIFAR_STD, np.float32)[None, :, None, None]
    xs = [((p.data.transpose(0, 3, 1, 2).astype(np.float32) / 255.0) - mean) / std for p in parts]
    ys = [np.asarray(p.targets, np.int64) for p in parts]
    _MEMORY[key] = _tensors(xs[0], ys[0], xs[1], ys[1])
    return _MEMORY[key]


def _tensors(xt, yt, xv, yv, *, classes: int = 10) -> Split:
    import torch

    return Split(
        torch.from_numpy(np.ascontiguousarray(xt)),
        torch.from_numpy(np.ascontiguousarray(yt, dtype=np.int64)),
        torch.from_numpy(np.ascontiguousarray(xv)),
        torch.from_numpy(np.ascontiguousarray(yv, dtype=np.int64)),
        classes,
    )


def _build_mnist1d(num_samples: int) -> dict:
    import random

    from mnist1d.data import get_dataset_args, make_dataset

    args = get_dataset_args()
    args.num_samples = num_samples
    py_state, np_state = random.getstate(), np.random.get_state()
    try:
        data = make_dataset(args)
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)
    return {k: np.asarray(data[k]) for k in ("x", "y", "x_test", "y_test")}


def _read_npz(path: Path) -> dict | None:
    try:
        with np.load(path, allow_pickle=False) as f:
            return {k: f[k] for k in ("x", "y", "x_test", "y_test")}
    except (OSError, KeyError, ValueError):
        return None  # absent or unreadable: rebuild


def _write_npz(path: Path, arrays: dict) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only home only loses the disk cache; the memory cache still holds
