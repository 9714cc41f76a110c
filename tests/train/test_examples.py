"""The example trainables and their offline datasets, as the trainable contract specifies them."""

import io
import math
import socket

import optuna
import pytest
import torch

from hypersched_nb.errors import ConfigError
from hypersched_nb.train import data
from hypersched_nb.train.examples import (
    MNIST1DCNN,
    CIFARResNet18,
    DigitsCNN,
    DigitsMLP,
    MNIST1DCosine,
)
from hypersched_nb.train.trainable import TrainContext


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to resolve a name or open a connection fails the test; the loaders' memory
    cache starts empty so that they really load."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"network access attempted: {args!r}")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(data, "_MEMORY", {})


def trained(cls, config, epochs, seed=0):
    t = cls()
    t.setup(config, TrainContext(seed=seed))
    return t, [t.step() for _ in range(epochs)]


def roundtrip(state):
    """Through bytes, as a checkpoint travels: torch.save then torch.load(weights_only=True)."""
    buf = io.BytesIO()
    torch.save(state, buf)
    buf.seek(0)
    return torch.load(buf, weights_only=True)


# -- learning ---------------------------------------------------------------------------


def test_digits_cnn_learns_in_two_epochs():
    _, (r1, r2) = trained(DigitsCNN, {}, 2)
    assert r2["val_acc"] > 0.7  # far above the 0.1 of chance after two epochs
    assert r2["train_loss"] < r1["train_loss"]  # the training loss falls


def test_mnist1d_cnn_learns_in_two_epochs():
    _, (r1, r2) = trained(MNIST1DCNN, {"batch_size": 128, "lr": 0.2}, 2)
    assert r2["val_acc"] > 0.2  # above the 0.1 of chance
    assert r2["val_acc"] > r1["val_acc"]  # and still improving
    assert r2["train_loss"] < r1["train_loss"]


def test_a_diverged_trial_reports_nan_not_a_number_that_looks_fine():
    _, (r1,) = trained(MNIST1DCNN, {"lr": 5.0, "momentum": 0.9, "batch_size": 256}, 1)
    assert math.isnan(r1["val_acc"])  # the driver stops a NaN trial as diverged
    assert math.isnan(r1["train_loss"])


def test_step_reports_the_two_metrics():
    _, (r1,) = trained(DigitsCNN, {"batch_size": 256}, 1)
    assert set(r1) == {"val_acc", "train_loss"}
    assert 0.0 <= r1["val_acc"] <= 1.0


# -- determinism and state ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "config"),
    [
        (DigitsCNN, {"dropout": 0.3, "batch_size": 64}),  # dropout draws random numbers
        # paused in its warm-up, resumed where the schedule is at its peak
        (MNIST1DCosine, {"dropout": 0.3, "batch_size": 256, "warmup_epochs": 2}),
        # Adam's moments travel; paused before its step, resumed after it
        (DigitsMLP, {"dropout": 0.3, "batch_size": 128, "decay_epoch": 2}),
    ],
)
def test_pause_and_resume_elsewhere_equals_training_straight_through(cls, config):
    straight, results = trained(cls, config, 3)
    first, _ = trained(cls, config, 2)
    resumed = cls()  # a fresh instance, as on another worker
    resumed.setup(config, TrainContext(seed=0))
    resumed.load_state_dict(roundtrip(first.state_dict()))
    assert resumed.step() == results[-1]  # the third epoch's metrics are the same ...
    for name, value in straight.state_dict()["model"].items():
        assert torch.equal(resumed.state_dict()["model"][name], value)  # ... and so is every weight


def test_state_dict_holds_optimizer_state_and_epoch():
    t, _ = trained(DigitsCNN, {"batch_size": 256}, 2)
    state = roundtrip(t.state_dict())
    assert state["epoch"] == 2  # the epoch counter travels
    assert state["optimizer"]["state"]  # momentum buffers travel


def test_same_config_and_seed_give_the_same_curve_and_another_seed_another():
    _, a = trained(DigitsCNN, {"batch_size": 128}, 2, seed=1)
    _, b = trained(DigitsCNN, {"batch_size": 128}, 2, seed=1)
    _, c = trained(DigitsCNN, {"batch_size": 128}, 2, seed=2)
    assert a == b  # deterministic given config and seed
    assert a != c  # the seed sets initialisation and data order


def test_training_leaves_the_process_rng_alone():
    torch.manual_seed(123)
    before = torch.get_rng_state()
    trained(DigitsCNN, {"batch_size": 256, "dropout": 0.5}, 1)
    assert torch.equal(torch.get_rng_state(), before)  # other trials on the worker are unaffected


def test_resuming_at_another_world_size_keeps_that_world_sizes_learning_rate():
    t, _ = trained(DigitsCNN, {"lr": 0.04, "batch_size": 256}, 1)
    state = t.state_dict()
    for group in state["optimizer"]["param_groups"]:
        group["lr"] = 0.04 * 4**0.5  # as saved on 4 workers, where lr_scale() = sqrt(4)
    alone = DigitsCNN()
    alone.setup({"lr": 0.04, "batch_size": 256}, TrainContext(world_size=1))
    alone.load_state_dict(state)
    # on one worker lr_scale() = 1: the saved optimizer's lr does not overwrite it
    assert alone.optimizer.param_groups[0]["lr"] == pytest.approx(0.04)


def test_a_scheduled_learning_rate_warms_up_then_anneals_to_zero_at_the_budget():
    t = MNIST1DCosine()
    t.setup({"lr": 0.3, "warmup_epochs": 2, "budget_epochs": 6}, TrainContext())
    factors = [t.lr_factor(e) for e in range(1, 9)]
    assert factors[:3] == pytest.approx([1 / 3, 2 / 3, 1.0])  # warm-up, then the peak
    assert factors[2:6] == sorted(factors[2:6], reverse=True)  # cosine annealing ...
    assert 0 < factors[5] < 0.2  # ... whose last epoch in the budget is small but not 0
    assert factors[6:] == [0.0, 0.0]  # past the budget nothing moves
    t.step()
    assert t.optimizer.param_groups[0]["lr"] == pytest.approx(0.1)  # epoch 1 trained at lr / 3


def test_the_perceptron_trains_with_adamw_and_cuts_its_learning_rate_after_decay_epoch():
    t, results = trained(DigitsMLP, {"lr": 0.003, "decay_epoch": 2, "batch_size": 64}, 3)
    assert isinstance(t.optimizer, torch.optim.AdamW)
    assert [t.lr_factor(e) for e in (1, 2, 3, 30)] == [1.0, 1.0, 0.1, 0.1]
    assert t.optimizer.param_groups[0]["lr"] == pytest.approx(0.0003)  # epoch 3: after the cut
    assert results[-1]["val_acc"] > 0.8  # it learns
    assert set(roundtrip(t.state_dict())["optimizer"]["state"][0]) >= {"exp_avg", "exp_avg_sq"}


def test_a_constant_learning_rate_is_the_default_schedule():
    t, _ = trained(DigitsCNN, {"lr": 0.04, "batch_size": 512}, 2)
    assert [t.lr_factor(e) for e in (1, 2, 30, 300)] == [1.0] * 4
    assert t.optimizer.param_groups[0]["lr"] == pytest.approx(0.04)


# -- configuration and search spaces -------------------------------------------------------


@pytest.mark.parametrize("cls", [DigitsCNN, DigitsMLP, MNIST1DCNN, MNIST1DCosine, CIFARResNet18])
def test_space_is_optuna_distributions_over_config_keys(cls):
    space = cls.space()
    assert all(isinstance(d, optuna.distributions.BaseDistribution) for d in space.values())
    assert set(space) <= set(cls.defaults)  # every searched name is a config key


@pytest.mark.parametrize("cls", [DigitsCNN, MNIST1DCNN, MNIST1DCosine])
def test_space_reaches_both_diverging_and_stalling_learning_rates(cls):
    lr = cls.space()["lr"]
    assert lr.low <= 1e-4  # tiny: never learns in 30 epochs
    assert lr.high >= 5.0  # huge: diverges or collapses


def test_unknown_config_key_is_a_one_line_error():
    with pytest.raises(ConfigError, match="unknown config key.*lrate"):
        DigitsCNN().setup({"lrate": 0.1}, TrainContext())


def test_bad_config_value_is_a_one_line_error():
    with pytest.raises(ConfigError, match="`momentum` is 1.5, but must be in"):
        DigitsCNN().setup({"momentum": 1.5}, TrainContext())


def test_a_key_another_example_checks_is_unknown_here():
    with pytest.raises(ConfigError, match="unknown config key.*momentum"):
        DigitsMLP().setup({"momentum": 0.9}, TrainContext())  # AdamW has none
    with pytest.raises(ConfigError, match="`decay_epoch` is 0, but must be >= 1"):
        DigitsMLP().setup({"decay_epoch": 0}, TrainContext())


def test_a_warm_up_as_long_as_the_budget_is_a_one_line_error():
    with pytest.raises(ConfigError, match="`warmup_epochs` is 30, but must be >= 0 and < budget"):
        MNIST1DCosine().setup({"warmup_epochs": 30, "budget_epochs": 30}, TrainContext())


# -- offline data -----------------------------------------------------------------------


def test_digits_split_is_stratified_and_fixed_by_seed(no_network):
    split = data.digits(seed=0)
    assert len(split.y_train) + len(split.y_val) == 1797  # every image, once
    counts = torch.bincount(split.y_val, minlength=10)
    assert counts.min() >= 35 and counts.max() <= 37  # 20% of each class (174 to 183 per class)
    assert torch.equal(data.digits(seed=0).y_val, split.y_val)  # same seed, same split
    assert tuple(split.x_train.shape[1:]) == (1, 8, 8)


def test_mnist1d_is_built_from_templates_without_network(no_network, monkeypatch, tmp_path):
    import numpy as np

    monkeypatch.setenv("HYPERSCHED_CACHE", str(tmp_path))
    np.random.seed(7)
    expected_next = np.random.random()
    np.random.seed(7)
    split = data.mnist1d(num_samples=500)  # builds from templates and writes the disk cache
    assert np.random.random() == expected_next  # make_dataset's reseeding is undone
    assert (len(split.y_train), len(split.y_val)) == (400, 100)  # make_dataset's 80/20 split
    assert tuple(split.x_train.shape[1:]) == (1, 40)  # its final_seq_length
    assert (tmp_path / "mnist1d-500.npz").exists()
    monkeypatch.setattr(data, "_MEMORY", {})
    again = data.mnist1d(num_samples=500)  # read back from the disk cache
    assert torch.equal(again.x_val, split.x_val)


def test_cifar10_without_download_says_how_to_get_it(no_network, tmp_path):
    with pytest.raises(ConfigError, match="download=True") as info:
        data.cifar10(root=tmp_path)
    assert "\n" not in str(info.value)  # one line


def test_cifar_standin_has_cifar_shapes_and_teacher_labels(no_network):
    split = data.cifar_standin(train=64, val=32)
    assert tuple(split.x_train.shape) == (64, 3, 32, 32)
    assert split.y_train.dtype == torch.int64 and int(split.y_train.max()) < 10
    assert len(torch.unique(split.y_train)) > 5  # the teacher uses many classes


def test_a_standin_cifar_batch_goes_through_resnet18(no_network):
    config = {"dataset": "standin", "standin_train": 16, "standin_val": 8, "batch_size": 8}
    t, (r1,) = trained(CIFARResNet18, config, 1)
    assert math.isfinite(r1["train_loss"]) and 0.0 <= r1["val_acc"] <= 1.0
    with torch.no_grad():
        t.net.eval()
        assert tuple(t.net(torch.zeros(2, 3, 32, 32)).shape) == (2, 10)  # 32×32 in, 10 logits out


def test_cifar_augmentation_keeps_shape_and_content_of_each_image():
    from hypersched_nb.train.examples import _flip_crop

    x = torch.arange(2 * 3 * 32 * 32, dtype=torch.float32).reshape(2, 3, 32, 32) + 1
    y = _flip_crop(x)
    assert y.shape == x.shape
    for i in range(2):  # every nonzero pixel of the output comes from the same image
        assert set(y[i][y[i] != 0].tolist()) <= set(x[i].flatten().tolist())
