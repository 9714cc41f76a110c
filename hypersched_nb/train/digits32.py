"""Digits-32: scikit-learn's 8×8 digits drawn again as 3×32×32 colour images, as many as asked.

A dataset with CIFAR-10's shape and a real signal, made in about a second from what the
installed packages carry (``sklearn.datasets.load_digits``), with no file and no network:
what a GPU machine lent for a few minutes, with nothing to download from and little to
upload, can train ResNet-18 on. Each image is one digit of :func:`data.digits`' split,
upscaled to 24×24 on a 32×32 canvas, then randomly rotated (±20°), scaled (0.8-1.15),
sheared and shifted (±3 px), painted in a random foreground colour on a random background,
with Gaussian noise; pixels are normalised to about zero mean and unit spread.

The training images come from the 1,437 training digits, the validation images from the 360
held-out ones (each drawn ``val // 360`` times or more, in turn), so validation accuracy
measures generalisation to unseen handwriting. Everything is a function of the arguments:
the same call gives the same tensors in every process, and a process keeps the result.
"""

from __future__ import annotations

import math

from hypersched_nb.errors import ConfigError
from hypersched_nb.train import data

__all__ = ["digits32"]

_MEMORY: dict[tuple, data.Split] = {}


def digits32(*, train: int = 20_000, val: int = 1_440, seed: int = 0) -> data.Split:
    """``train`` and ``val`` images drawn from the training and held-out digits (seeded)."""
    for name, value in (("train", train), ("val", val)):
        if value < 1:
            raise ConfigError(f"`{name}` is {value}, but must be >= 1")
    key = (train, val, seed)
    if key not in _MEMORY:
        import torch

        digits = data.digits(seed=seed)
        g = torch.Generator().manual_seed(seed)
        pick = torch.randint(len(digits.y_train), (train,), generator=g)
        turn = torch.arange(val) % len(digits.y_val)  # every held-out digit, in turn
        _MEMORY[key] = data.Split(
            _draw(digits.x_train[pick], g),
            digits.y_train[pick].clone(),
            _draw(digits.x_val[turn], g),
            digits.y_val[turn].clone(),
        )
    return _MEMORY[key]


def _draw(small, g, *, chunk: int = 4_096):
    """``N×1×8×8`` digits in [0, 1] as ``N×3×32×32`` float32 images (see the module)."""
    import torch

    return torch.cat([_draw_chunk(small[i : i + chunk], g) for i in range(0, len(small), chunk)])


def _draw_chunk(small, g):
    import torch
    import torch.nn.functional as F

    n = len(small)

    def uniform(lo: float, hi: float, *shape: int):
        return lo + (hi - lo) * torch.rand(n, *shape, generator=g)

    canvas = F.pad(F.interpolate(small, size=24, mode="bilinear", align_corners=False), (4,) * 4)
    angle = uniform(-math.pi / 9, math.pi / 9)
    scale = uniform(0.8, 1.15)
    shear = uniform(-0.2, 0.2)
    shift = uniform(-3 / 16, 3 / 16, 2)  # ±3 px in grid_sample's [-1, 1] coordinates
    cos, sin = torch.cos(angle) / scale, torch.sin(angle) / scale
    theta = torch.stack(
        [torch.stack([cos, -sin + shear, shift[:, 0]], 1), torch.stack([sin, cos, shift[:, 1]], 1)],
        1,
    )
    grid = F.affine_grid(theta, [n, 1, 32, 32], align_corners=False)
    ink = F.grid_sample(canvas, grid, align_corners=False).clamp(0, 1)  # N×1×32×32
    fg, bg = uniform(0.6, 1.0, 3, 1, 1), uniform(0.0, 0.35, 3, 1, 1)
    image = bg + (fg - bg) * ink + 0.08 * torch.randn(n, 3, 32, 32, generator=g)
    return ((image - 0.45) / 0.3).float().contiguous()
