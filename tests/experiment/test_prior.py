"""A past search given to a new one (``prior=``): read from a trace, an Experiment or a
search's folder, refused in one line where it cannot apply, read by the default policy,
shown in its line and report, and kept in the journal so that a reopened search knows it."""

import dataclasses
import json

import numpy as np
import pytest

from hypersched_nb import Experiment
from hypersched_nb.core.scaling import ScalingCurve
from hypersched_nb.errors import ConfigError
from hypersched_nb.experiment.prior import Prior, newest_search, resolve_prior
from hypersched_nb.experiment.settings import Settings
from hypersched_nb.experiment.simulate import SimSettings, simulate
from hypersched_nb.sim.trace import Trace, load_trace, split_halves
from tests.experiment.test_journal import write_journal

DIGITS = load_trace("digits-cnn")
PAST, NEW = split_halves(DIGITS, seed=0)
SETTINGS = SimSettings(workers=8, configs=100, max_epochs=30)


def space_of(trace: Trace) -> list[dict]:
    return [trace.config(i) for i in trace.ids]


def late_changing(n: int = 60, epochs: int = 16, seed: int = 1) -> Trace:
    """Curves whose epoch 1 predicts epoch 4 but not the end: those that start best level
    off at once, the others climb past them later."""
    rng = np.random.default_rng(seed)
    metrics, seconds, params = {}, {}, {}
    for i in range(n):
        start, late = rng.uniform(0.2, 0.5), rng.uniform(0.0, 1.0)
        e = np.arange(1, epochs + 1)
        metrics[i] = (
            start + 0.01 * np.minimum(e, 4) + late * (1 - start) * (e > 4) * (e - 4) / epochs
        )
        seconds[i] = np.full(epochs, 10.0)
        params[i] = {"lr": float(rng.uniform(0.001, 0.1))}
    return Trace("late", tuple(range(n)), metrics, seconds, params, metric_name="val_acc",
                 scaling=ScalingCurve(), startup_seconds=1.0)  # fmt: skip


def test_a_prior_of_another_mode_is_refused_in_one_line():
    minimising = dataclasses.replace(PAST, mode="min")
    with pytest.raises(ConfigError, match="minimises val_acc, but this one maximises val_acc"):
        Experiment.replay(NEW, deadline=100, prior=minimising)


def test_a_prior_of_another_metric_is_refused_in_one_line():
    loss = dataclasses.replace(PAST, metric_name="val_loss")
    with pytest.raises(ConfigError, match="give a past search of the same metric and mode"):
        resolve_prior(loss, space=space_of(NEW), metric="val_acc", mode="max")


def test_a_prior_whose_space_shares_no_parameter_is_refused_in_one_line():
    with pytest.raises(ConfigError, match="shares no parameter with this search's"):
        resolve_prior(PAST, space={"width": [1, 2]}, metric="val_acc", mode="max")


def test_a_prior_sharing_part_of_the_space_is_used_for_what_it_shares_and_the_line_says_so():
    prior = resolve_prior(PAST, space={"lr": [0.1], "depth": [2]}, metric="val_acc", mode="max")
    assert prior.shared == ("lr",) and "momentum" in prior.unshared
    assert all(set(c) == {"lr"} for c in prior.trace.params.values())
    exp = Experiment.replay(NEW, deadline=100, prior=prior)
    assert exp.policy.trust.short().startswith(
        "from trace 'digits-cnn[past 0]' (sharing lr; not batch_size, channels, dropout, "
        "momentum, weight_decay): epoch 1 agreed with epoch 4 in "
    )


def test_the_policy_line_says_what_the_prior_told_it_before_the_first_result():
    exp = Experiment.replay(NEW, deadline=100, prior=PAST)
    line = exp.policy.trust.short()
    assert line.startswith("from trace 'digits-cnn[past 0]': epoch 1 agreed with epoch 4 in ")
    assert line.endswith("; trusting epoch 1, testing it at epoch 4")
    assert exp.policy.trust.mode() == "trust"


def test_a_prior_whose_epoch_1_loses_its_order_later_is_not_trusted_from_the_start():
    past, new = split_halves(late_changing(), seed=0)
    evidence = resolve_prior(past, space=space_of(new), metric="val_acc", mode="max").evidence(
        min_epochs=1, eta=4, max_epochs=16
    )
    assert evidence.auc > 0.8 and evidence.final_auc < 0.7  # agrees at epoch 4, not at 16
    exp = Experiment.replay(new, deadline=100, prior=past)
    assert exp.policy.trust.short().startswith("from trace 'late[past 0]': epoch 1 agreed")
    assert exp.policy.trust.short().endswith("trusting epoch 1 for now, testing it at epoch 4")


def reversing(n: int = 80, epochs: int = 16, seed: int = 2) -> Trace:
    """Curves whose order at the end is the reverse of epoch 1's: those that start best
    level off at once, those that start worst climb past them (slow starters)."""
    rng = np.random.default_rng(seed)
    metrics, seconds, params = {}, {}, {}
    for i in range(n):
        start = rng.uniform(0.1, 0.3)
        e = np.arange(1, epochs + 1)
        metrics[i] = (
            start + (0.3 - start) * 3 * (1 - np.exp(-(e - 1) / 4)) + rng.normal(0, 0.003, epochs)
        )
        seconds[i] = np.full(epochs, 10.0)
        params[i] = {"lr": float(rng.uniform(0.001, 0.1))}
    return Trace("slow-starters", tuple(range(n)), metrics, seconds, params,
                 metric_name="val_acc", scaling=ScalingCurve(), startup_seconds=1.0)  # fmt: skip


def test_a_prior_whose_epoch_1_order_was_reversed_by_the_end_starts_the_search_in_doubt():
    past, new = split_halves(reversing(), seed=0)
    evidence = resolve_prior(past, space=space_of(new), metric="val_acc", mode="max").evidence(
        min_epochs=1, eta=4, max_epochs=16
    )
    assert evidence.final_auc < 0.2  # epoch 1's keepers ended worst
    exp = Experiment.replay(new, deadline=400, prior=past)
    line = exp.policy.trust.short()
    assert line.startswith("from trace 'slow-starters[past 0]': epoch 1 agreed with epoch 4 in ")
    assert line.endswith(", its order reversed by then; doubting epoch 1 until it predicts epoch 4")
    told = simulate(new, "hypersched", 400.0, 0, SETTINGS, journal=True, prior=past)
    reasons = [row["reason"] for row in told.outcome.journal]
    assert not any("for now" in r for r in reasons)  # no tentative verdict at epoch 1
    without = simulate(new, "hypersched", 400.0, 0, SETTINGS, journal=True)
    assert any("for now" in row["reason"] for row in without.outcome.journal)


def test_simulate_with_a_prior_changes_the_decisions_and_without_one_does_not():
    without = simulate(NEW, "hypersched", 60.0, 0, SETTINGS, journal=True).outcome.journal
    again = simulate(NEW, "hypersched", 60.0, 0, SETTINGS, journal=True, prior=None)
    told = simulate(NEW, "hypersched", 60.0, 0, SETTINGS, journal=True, prior=PAST)
    assert again.outcome.journal == without
    assert told.outcome.journal != without
    assert told.record.early_signal_at_end == "trust"


def test_early_signal_still_overrides_the_prior():
    exp = Experiment.replay(NEW, deadline=100, prior=PAST, early_signal="doubt")
    assert exp.policy.trust.mode() == "doubt"
    assert exp.policy.trust.short() == "doubting epoch 1 until it predicts epoch 4"


def test_the_prior_times_admission_before_the_first_result():
    exp = Experiment.replay(NEW, deadline=100, prior=PAST)
    admit = exp.policy.admit
    assert len(admit.first) == 0 and admit.seconds(3) == pytest.approx(
        3 * float(np.median([x for s in PAST.seconds.values() for x in s[1:]]))
    )


def test_the_search_forecasts_from_its_prior_before_the_first_result():
    exp = Experiment.replay(NEW, deadline=60, prior=PAST)
    frame = exp.forecast(runs=2)
    assert len(frame) == 1 and frame["expected"].iloc[0] > 0


def test_the_journal_header_keeps_the_prior_and_the_settings_read_it_back():
    s = Settings(trainable=None, space=space_of(NEW), deadline=60, max_epochs=30, live=False,
                 prior=PAST, checkpoint_dir="memory://x")  # fmt: skip
    record = json.loads(json.dumps(s.to_record(deadline=60.0, space_record=None)))
    assert record["prior"]["label"] == "trace 'digits-cnn[past 0]'"
    back = Settings.from_record(record, live=False, space=iter(()))
    assert isinstance(back.prior, Prior) and back.prior.trace is None
    assert back.prior_evidence() == s.prior_evidence()  # what the policy was told
    bare = Settings(trainable=None, space={}, live=False, checkpoint_dir="memory://x")
    assert bare.to_record(deadline=60.0, space_record=None)["prior"] is None  # none said so


def test_a_past_search_folder_is_a_prior_and_the_newest_of_its_trainable_is_found(tmp_path):
    folder = tmp_path / "runs" / "a"
    folder.mkdir(parents=True)
    write_journal(folder / "journal.jsonl", "hypersched")
    prior = resolve_prior(folder, space={"lr": [0.1]}, metric="val_acc", mode="max")
    assert prior.label == f"search {str(folder)!r}" and prior.shared == ("lr",)
    assert prior.trace is not None and len(prior.trace.ids) > 0
    assert newest_search(tmp_path / "runs", trainable=None) == folder
    assert newest_search(tmp_path / "runs", trainable="some.module:Other") is None


def test_a_finished_experiment_is_a_prior():
    past = Experiment.replay(PAST, deadline=60, configs=20)
    past.run()
    prior = resolve_prior(past, space=space_of(NEW), metric="val_acc", mode="max")
    assert prior.label == "the search given" and len(prior.trace.ids) == len(past.results())


def test_the_report_names_the_prior():
    from hypersched_nb.notebook.report import report_html

    exp = Experiment.replay(NEW, deadline=30, prior=PAST, configs=10)
    exp.run()
    assert exp.statistics().prior == "trace 'digits-cnn[past 0]'"
    assert "with trace &#x27;digits-cnn[past 0]&#x27; as its prior" in report_html(exp.statistics())


def test_a_reopened_search_knows_the_prior_its_journal_header_kept(tmp_path):
    lines = write_journal(tmp_path / "journal.jsonl")
    header = json.loads(lines[0])
    prior = resolve_prior(PAST, space=space_of(NEW), metric="val_acc", mode="max")
    told = prior.evidence(min_epochs=1, eta=4, max_epochs=DIGITS.longest)
    header["settings"]["prior"] = prior.to_record(told)
    (tmp_path / "journal.jsonl").write_bytes(
        json.dumps(header).encode() + b"\n" + b"".join(lines[1:])
    )
    exp = Experiment.open(tmp_path)
    assert exp.prior.label == "trace 'digits-cnn[past 0]'" and exp.prior.learnt == told
    assert exp.statistics().prior == "trace 'digits-cnn[past 0]'"
