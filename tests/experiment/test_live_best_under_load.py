"""The best model is always there: on a machine whose every core is busy with other work, and
for a model whose weights are slow to write, the weights `load_best()` gives are those of the
result `best` names, epoch and metric alike."""

import os
import subprocess
import sys
import time

import pytest

from hypersched_nb import Experiment
from hypersched_nb.train.examples import DigitsCNN

pytestmark = pytest.mark.cluster


@pytest.fixture
def busy_cores():
    """One process spinning on each core for the length of the test."""
    spinners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"])
        for _ in range(os.cpu_count() or 2)
    ]
    yield
    for p in spinners:
        p.kill()
        p.wait()


class SlowToSave(DigitsCNN):
    """DigitsCNN, as if its weights were a large model's: 0.3 s to take (a checkpoint budget
    of 2 % would allow one write per 15 s of training)."""

    def state_dict(self):
        time.sleep(0.3)
        return super().state_dict()


def test_on_a_loaded_machine_load_best_gives_the_weights_of_best(tmp_path, busy_cores):
    exp = Experiment(SlowToSave, SlowToSave.space(), metric="val_acc", deadline="45s", max_epochs=4,
                     policy="asha", cluster=2, seed=1, checkpoint_dir=str(tmp_path))  # fmt: skip
    exp.run()
    best = exp.best
    assert best is not None, "no epoch ended in 45 s, even under load"
    kept = exp.best_checkpoint()
    assert (kept.trial_id, kept.epoch, kept.metric) == (best.trial_id, best.epoch, best.metric)
    model = exp.load_best()
    correct, count, _ = model._evaluate()
    assert model.epoch == best.epoch and float(correct / count) == best.metric
