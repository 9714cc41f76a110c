"""A live search's journal: written beside its checkpoints as it runs, it opens into the
same search (results, decisions, best, and the best weights) with nothing running."""

import stat

import pandas as pd
import pytest

from hypersched_nb import Experiment

pytestmark = pytest.mark.cluster


def test_a_finished_search_opens_from_its_journal_as_it_was(tmp_path):
    from hypersched_nb.train.examples import DigitsCNN

    exp = Experiment(DigitsCNN, DigitsCNN.space(), metric="val_acc", deadline="25s", max_epochs=4,
                     policy="asha", cluster=2, seed=0, checkpoint_dir=str(tmp_path))  # fmt: skip
    exp.run()
    journal = tmp_path / "journal.jsonl"
    assert stat.S_IMODE(journal.stat().st_mode) == 0o600  # only its owner reads it

    back = Experiment.open(tmp_path)
    assert back.statistics().status == "finished"
    pd.testing.assert_frame_equal(back.results(), exp.results())
    assert back.events == exp.events and back.best == exp.best
    assert back.best_checkpoint() == exp.best_checkpoint()
    if exp.best is not None:  # a loaded machine may finish no epoch in 25 s
        model = back.load_best()
        assert model.epoch == exp.best.epoch
