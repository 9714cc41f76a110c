"""The trainable example of docs/guide/trainable.md (once the README's), kept here verbatim so
that it stays true (tests/test_docs.py checks the page shows this very code)."""

import io

import torch
from torch import nn
from torch.utils.data import TensorDataset

from hypersched_nb import Trainable, TrainContext


def load_my_data():
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    x, y = torch.tensor(x, dtype=torch.float32) / 16, torch.tensor(y)
    return TensorDataset(x[:1400], y[:1400]), (x[1400:], y[1400:])


# --- README example starts -------------------------------------------------------------
class MyNet(Trainable):
    def setup(self, config, ctx):  # was: the top of your script
        self.ctx, self.epoch, self.batch = ctx, 0, config["batch_size"]  # batch per worker
        self.train_set, self.val = load_my_data()
        self.net = nn.Sequential(
            nn.Linear(64, config["width"]), nn.ReLU(), nn.Linear(config["width"], 10)
        )
        self.model = ctx.wrap_model(self.net)  # DDP when the trial holds k > 1 workers
        self.lr = config["lr"] * ctx.lr_scale()  # k workers = k x the global batch: scale the lr
        self.opt = torch.optim.SGD(self.net.parameters(), lr=self.lr, momentum=0.9)

    def step(self):  # was: the body of `for epoch in range(E):`
        self.epoch += 1
        for x, y in self.ctx.shard_loader(self.train_set, self.batch, epoch_seed=self.epoch):
            self.opt.zero_grad()
            nn.functional.cross_entropy(self.model(x), y).backward()
            self.opt.step()
        with torch.no_grad():
            acc = (self.net(self.val[0]).argmax(1) == self.val[1]).float().mean().item()
        return {"val_acc": acc}

    def state_dict(self):
        return {"net": self.net.state_dict(), "opt": self.opt.state_dict(), "epoch": self.epoch}

    def load_state_dict(self, state):  # after a pause, a move or a resize
        self.net.load_state_dict(state["net"]), self.opt.load_state_dict(state["opt"])
        self.epoch = state["epoch"]
        for group in self.opt.param_groups:
            group["lr"] = self.lr  # the saved lr was for the old number of workers


# --- README example ends ---------------------------------------------------------------


CONFIG = {"lr": 0.1, "width": 32, "batch_size": 32}


def checkpoint(net):
    """A state dict through bytes, as the runtime's checkpoints go (weights only)."""
    buf = io.BytesIO()
    torch.save(net.state_dict(), buf)
    buf.seek(0)
    return torch.load(buf, weights_only=True)


def test_the_example_learns_on_one_worker():
    net = MyNet()
    net.setup(CONFIG, TrainContext(seed=0))
    accs = [net.step()["val_acc"] for _ in range(3)]
    assert accs[-1] > 0.8  # digits are easy: three epochs suffice


def test_a_restored_copy_continues_exactly_where_the_original_is():
    a = MyNet()
    a.setup(CONFIG, TrainContext(seed=0))
    a.step()
    b = MyNet()
    b.setup(CONFIG, TrainContext(seed=0))
    b.load_state_dict(checkpoint(a))
    # same weights, same optimizer state, same epoch: the same next epoch
    assert a.step() == b.step()


def test_a_resized_trial_gets_the_learning_rate_of_its_new_size():
    a = MyNet()
    a.setup(CONFIG, TrainContext(seed=0))
    a.step()
    state = checkpoint(a)
    for group in state["opt"]["param_groups"]:
        group["lr"] = CONFIG["lr"] * 2  # as saved on 4 workers: sqrt(4) x the lr (lr_scale())
    # resumed on 1 worker, a quarter of that global batch: the lr of one worker again
    alone = MyNet()
    alone.setup(CONFIG, TrainContext(world_size=1))
    alone.load_state_dict(state)
    assert alone.opt.param_groups[0]["lr"] == CONFIG["lr"]
