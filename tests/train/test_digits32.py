"""Digits-32: scikit-learn's digits drawn again as CIFAR-shaped colour images, as many as asked,
the same in every process."""

import pytest
import torch

from hypersched_nb.errors import ConfigError
from hypersched_nb.train import data
from hypersched_nb.train import digits32 as module
from hypersched_nb.train.digits32 import digits32


def test_it_makes_as_many_cifar_shaped_images_as_asked():
    split = digits32(train=100, val=40, seed=3)
    assert split.x_train.shape == (100, 3, 32, 32) and split.x_val.shape == (40, 3, 32, 32)
    assert split.x_train.dtype == torch.float32 and split.y_train.dtype == torch.int64
    assert split.classes == 10
    assert torch.isfinite(split.x_train).all() and torch.isfinite(split.x_val).all()
    assert abs(float(split.x_train.mean())) < 1.0  # normalised, not raw [0, 1] pixels


def test_the_same_call_gives_the_same_tensors_and_another_seed_others():
    a = digits32(train=64, val=20, seed=1)
    module._MEMORY.clear()  # made afresh, as another process would
    b = digits32(train=64, val=20, seed=1)
    assert a is not b
    assert torch.equal(a.x_train, b.x_train) and torch.equal(a.y_train, b.y_train)
    assert torch.equal(a.x_val, b.x_val) and torch.equal(a.y_val, b.y_val)
    assert digits32(train=64, val=20, seed=1) is b  # kept in the process
    assert not torch.equal(digits32(train=64, val=20, seed=2).x_train, a.x_train)


def test_validation_images_draw_every_held_out_digit_in_turn():
    held_out = data.digits(seed=0).y_val
    split = digits32(train=16, val=2 * len(held_out) + 5, seed=0)
    assert torch.equal(split.y_val[: len(held_out)], held_out)  # unseen handwriting only
    assert torch.equal(split.y_val[len(held_out) : 2 * len(held_out)], held_out)
    assert not torch.equal(split.x_val[0], split.x_val[len(held_out)])  # drawn anew each turn


@pytest.mark.parametrize("name", ["train", "val"])
def test_a_count_below_one_is_one_line(name):
    with pytest.raises(ConfigError, match=rf"`{name}` is 0, but must be >= 1"):
        digits32(**{name: 0})
