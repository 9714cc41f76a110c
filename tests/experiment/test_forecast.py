"""Experiment.forecast: the best a search would reach by other deadlines, on other clusters."""

import dataclasses
import re

import numpy as np
import pytest

from hypersched_nb import Experiment
from hypersched_nb.errors import ConfigError
from hypersched_nb.sim.trace import load_trace
from hypersched_nb.testing.halt import halted_replay
from tests.experiment.conftest import tiny_trace

COLUMNS = ["deadline", "workers", "expected", "median", "p10", "p90", "p_beat"]


def replay(**kw):
    settings = {"policy": "asha", "deadline": 240, "workers": 2, "configs": 12, "seed": 0}
    return Experiment.replay(tiny_trace(), **(settings | kw))


@pytest.fixture
def finished():
    exp = replay(deadline=120)
    exp.run()
    return exp


@pytest.fixture
def halted():
    """A search held still at 80 s of its 240 s, released (and over) after the test."""
    exp, halt = halted_replay(tiny_trace(), at=80, deadline=240, workers=2)
    exp.start()
    assert halt.wait()
    yield exp
    halt.release()
    exp.wait()


def test_one_row_per_deadline_and_workers_in_the_order_asked(halted):
    frame = halted.forecast(["+1m", 400], [1, 3], runs=4)
    assert list(frame.columns) == COLUMNS
    assert list(zip(frame.deadline, frame.workers, strict=True)) == [
        (300.0, 1), (300.0, 3), (400.0, 1), (400.0, 3)
    ]  # fmt: skip
    best = halted.best.metric
    assert frame.attrs["now"] == 80.0 and frame.attrs["runs"] == 4 and frame.attrs["best"] == best
    assert (frame.p10 <= frame["median"]).all() and (frame["median"] <= frame.p90).all()
    assert (frame.p10 >= best).all()  # the best so far is kept
    assert frame.p_beat.between(0, 1).all()


def test_it_works_after_the_end_from_where_the_search_stopped(finished):
    frame = finished.forecast(["+1m"], runs=3)
    assert frame.attrs["now"] == 120.0 and frame.deadline[0] == 180.0
    assert frame.p10[0] >= finished.best.metric


def test_more_time_never_forecasts_worse(halted):
    frame = halted.forecast([100, 140, 200, 300, 600], [1, 2, 4], runs=8)
    for _, rows in frame.groupby("workers"):
        for column in ("expected", "p10", "p90", "p_beat"):
            assert np.all(np.diff(rows[column].to_numpy()) >= 0), column


def test_more_workers_never_forecast_worse_run_by_run(halted):
    frame = halted.forecast(["+1m", "+2m"], [1, 2, 4, 8], runs=6)
    finals = np.array(frame.attrs["finals"], dtype=float)  # (workers, runs, deadlines)
    assert finals.shape == (4, 6, 2)
    assert (np.diff(finals, axis=0) >= 0).all()  # the same run with more workers: no worse
    for _, rows in frame.groupby("deadline"):
        assert rows.sort_values("workers")["expected"].is_monotonic_increasing


def test_the_magic_line_counts_runs_and_says_clock_times():
    from datetime import datetime, timedelta

    from hypersched_nb.experiment.forecast import forecast_line

    exp = replay()
    exp.start()
    exp.wait()
    frame = exp.forecast(["+1m"], runs=8)
    started = frame.attrs["started"] = datetime(2026, 3, 2, 14, 0, 0)  # as a live search has it
    line = forecast_line(frame)
    made = started + timedelta(seconds=frame.attrs["now"])  # dated: the line is kept
    assert line.startswith(
        f"by {started + _seconds(frame):%H:%M:%S} (1m 00s from {made:%H:%M:%S}) "
    )
    assert "%" not in line.split("runs;")[0].split(")")[-1]  # a count of runs, not a share
    assert re.search(r"beats [\d.]+ in \d of 8 runs", line)


def _seconds(frame):
    from datetime import timedelta

    return timedelta(seconds=float(frame.deadline.iloc[0]))


def test_the_forecast_leaves_the_live_search_as_it_was():
    def run(look: bool):
        exp, halt = halted_replay(tiny_trace(), at=80, deadline=240, workers=2)
        exp.start()
        assert halt.wait()
        before = exp.statistics()
        if look:
            exp.forecast(["+1m", "+5m"], [1, 4], runs=6)
            assert exp.statistics() == before
        halt.release()
        exp.wait()
        return exp.statistics()

    looked, unlooked = run(True), run(False)
    assert looked.events == unlooked.events  # every later decision is the same
    assert looked.best == unlooked.best


def test_a_prior_forecast_says_how_little_is_known():
    digits = load_trace("digits-cnn")  # shipped with the package
    settings = {"policy": "asha", "deadline": 30, "workers": 2}
    before = Experiment.replay(digits, **settings).forecast(runs=16, prior=digits)
    assert before.attrs["note"].startswith("drawn from the prior alone")
    assert np.isnan(before.p_beat[0])  # nothing to beat yet
    exp, halt = halted_replay(digits, at=15, **settings)
    exp.start()
    assert halt.wait()
    during = exp.forecast(runs=16)
    halt.release()
    exp.wait()
    assert (before.p90 - before.p10)[0] > (during.p90 - during.p10)[0]


def test_defaults_are_the_current_deadline_and_cluster(halted):
    frame = halted.forecast(runs=2)
    assert (frame.deadline[0], frame.workers[0]) == (240.0, 2)


@pytest.mark.parametrize(
    "call, message",
    [
        (dict(deadlines=["-3m"]), r"`deadlines` holds '-3m' \(60s\), already past"),
        (dict(deadlines=[50]), "already past"),
        (dict(workers=[2, 0]), "`workers` holds 0, but each must be a whole number >= 1"),
        (dict(workers=[1.5]), "`workers` holds 1.5"),
        (dict(runs=0), "`runs` is 0, but must be a whole number >= 1"),
        (dict(margin=-0.1), "`margin` is -0.1"),
        (dict(deadlines=["soon"]), "`deadline` is 'soon'"),
        (dict(deadlines=[]), "`deadlines` is empty"),
    ],
)
def test_bad_input_is_one_line_saying_what_to_change(halted, call, message):
    with pytest.raises(ConfigError, match=message) as err:
        halted.forecast(**call)
    assert "\n" not in str(err.value)


def test_a_prior_of_another_metric_or_mode_is_refused():
    other_metric = dataclasses.replace(tiny_trace(), metric_name="loss")
    other_mode = dataclasses.replace(tiny_trace(), mode="min")
    with pytest.raises(ConfigError, match="records 'loss', but the search optimises 'acc'"):
        replay().forecast([100], prior=other_metric)
    with pytest.raises(ConfigError, match="is in mode 'min', but the search is in mode 'max'"):
        replay().forecast([100], prior=other_mode)


def test_before_any_result_without_a_prior_it_asks_for_one():
    with pytest.raises(ConfigError, match="no result yet and no prior: pass prior="):
        replay().forecast([100])


def test_the_search_remembers_its_last_forecast(halted):
    assert halted.last_forecast is None and halted.statistics().forecast is None
    halted.forecast(["+1m"], runs=2)
    frame = halted.forecast([300, 400], [1, 3], runs=3)
    last = halted.last_forecast
    assert last.deadline == 240.0 and last.forecast.runs == 3  # the latest one, for 240 s
    assert [(o.deadline, o.workers) for o in last.forecast.outlooks] == list(
        zip(frame.deadline, frame.workers, strict=True)
    )
    assert halted.statistics().forecast is last  # what the views and the report read


def test_the_runs_can_be_simulated_elsewhere_with_the_same_answer(halted):
    from concurrent.futures import ThreadPoolExecutor

    here = halted.forecast(["+1m"], [2, 4], runs=3)
    with ThreadPoolExecutor(1) as pool:
        there = halted.forecast(["+1m"], [2, 4], runs=3, executor=pool)
    assert there.equals(here) and there.attrs == here.attrs
    assert halted.last_forecast.forecast.frame().equals(there)  # remembered the same way


# -- what if the policy were told otherwise --------------------------------------------


@pytest.fixture
def doubting():
    """A hypersched search on a shipped trace, held still while it still doubts epoch 1."""
    digits = load_trace("digits-cnn")
    exp, halt = halted_replay(digits, at=2, deadline=15, workers=4, policy="hypersched")
    exp.start()
    assert halt.wait()
    yield exp
    halt.release()
    exp.wait()


def test_telling_the_clones_to_trust_epoch_1_leaves_the_live_policy_alone(doubting, monkeypatch):
    from hypersched_nb.core.policies._hypersched import HyperSched

    told = []
    tell = HyperSched.tell_early_signal
    monkeypatch.setattr(
        HyperSched, "tell_early_signal", lambda self, word: told.append(word) or tell(self, word)
    )
    live = doubting.statistics().describe
    assert live.startswith("trusting epoch 1 for now, testing it at epoch 4")  # in doubt
    frame = doubting.forecast([10, 15], runs=3, early_signal="trust")
    assert told == ["trust"] * 6  # every run of every deadline, and only the clones
    assert frame.attrs["early_signal"] == "trust"
    assert doubting.statistics().describe.startswith("trusting epoch 1 for now")
    untold = doubting.forecast([10, 15], runs=3)
    assert untold.attrs["early_signal"] is None and len(told) == 6


def test_the_magic_line_says_what_the_clones_were_told(doubting):
    from hypersched_nb.experiment.forecast import forecast_line

    line = forecast_line(doubting.forecast(runs=2, early_signal="doubt"))
    assert "on 4 workers told early_signal='doubt': best" in line


@pytest.mark.parametrize(
    "policy, word, message",
    [
        ("hypersched", "sometimes", "`early_signal` is 'sometimes', but must be one of 'auto'"),
        ("asha", "trust", "the search's policy 'asha' has no such option"),
    ],
)
def test_an_early_signal_the_policy_cannot_hear_is_one_line(policy, word, message):
    exp, halt = halted_replay(tiny_trace(), at=80, deadline=240, workers=2, policy=policy)
    exp.start()
    assert halt.wait()
    try:
        with pytest.raises(ConfigError, match=message) as err:
            exp.forecast(runs=2, early_signal=word)
        assert "\n" not in str(err.value)
    finally:
        halt.release()
        exp.wait()


# -- configurations not yet tried ------------------------------------------------------


def test_an_untried_configuration_may_pass_every_curve_seen_by_the_gaps_at_the_top():
    from hypersched_nb.experiment.forecast import Curve, Futures, top_spacing

    seen = [Curve(np.array([[0.3, final]]), np.ones(2)) for final in (0.6, 0.7, 0.8, 0.2)]
    spread = top_spacing([0.6, 0.7, 0.8, 0.2], "max")
    assert spread == pytest.approx(0.2)  # (0.8 - 0.2) over the three gaps of the top four

    def finals(futures):
        rng = np.random.default_rng(0)
        return np.array([futures.draw_new(rng, 0)[0][-1] for _ in range(400)])

    plain = finals(Futures({}, tuple(seen), "search"))
    assert plain.max() == 0.8  # a bootstrap never passes the best it has seen
    shifted = finals(Futures({}, tuple(seen), "search", spread, bounds=(0.0, 1.0)))
    assert (shifted > 0.8).mean() > 0.05  # … a search's next best often does
    assert shifted.min() >= 0.0 and shifted.max() <= 1.0  # an accuracy stays one


# -- trials that reported ----------------------------------------------------------------


def test_the_curves_continue_with_the_noise_the_search_shows():
    from types import SimpleNamespace

    from hypersched_nb.core.trial import TrialState
    from hypersched_nb.experiment.forecast import TrialSeen, foresee

    rng, epochs = np.random.default_rng(0), np.arange(1, 9)

    def futures(noise):
        curves = [
            0.8 - 0.4 * epochs ** -(0.5 + 0.1 * i) + rng.normal(0, noise, 8) for i in range(8)
        ]
        trials = tuple(
            TrialSeen(i, TrialState.PAUSED, tuple(c), 10.0, 0, None, 0)
            for i, c in enumerate(curves)
        )
        search = SimpleNamespace(reported=True, trials=trials, max_epochs=30, mode="max")
        return foresee(search, runs=64, seed=0)

    def zigzag(f):  # the epoch-to-epoch moves of the predicted epochs, within each path
        return float(np.median([np.diff(c.metrics[:, 8:], axis=1).std() for c in f.own.values()]))

    smooth, noisy = zigzag(futures(0.0)), zigzag(futures(0.01))
    # noise of sd 0.01 at every epoch moves a path by about √2 × 0.01 from one to the next ...
    assert noisy == pytest.approx(np.sqrt(2) * 0.01, rel=0.3)
    # ... and curves without noise continue with only the slow wander
    assert smooth < noisy / 2
    # run r follows the r-th lowest path of every trial
    for curve in futures(0.01).own.values():
        assert (np.diff(curve.metrics[:, 8:].mean(axis=1)) >= 0).all()


def test_a_trial_seen_for_one_epoch_continues_as_its_nearest_neighbours_did():
    from types import SimpleNamespace

    from hypersched_nb.core.trial import TrialState
    from hypersched_nb.experiment.forecast import TrialSeen, foresee

    rng, epochs = np.random.default_rng(0), np.arange(1, 9)
    never = [0.10 + rng.normal(0, 0.003, 8) for _ in range(5)]  # at chance, and staying there
    learners = [0.90 - 0.40 / epochs + rng.normal(0, 0.003, 8) for _ in range(5)]
    curves = never + learners + [[0.105], [0.51]]  # two held at epoch 1, one by each kind
    trials = tuple(
        TrialSeen(i, TrialState.PAUSED, tuple(c), 10.0, 0, None, 0) for i, c in enumerate(curves)
    )
    search = SimpleNamespace(reported=True, trials=trials, max_epochs=8, mode="max")
    own = foresee(search, runs=32, seed=0).own
    at_chance, learning = own[10].metrics, own[11].metrics
    assert (at_chance[:, 0] == 0.105).all() and (learning[:, 0] == 0.51).all()  # epoch 1 kept
    # from one point the predictor alone draws up to the bound; the neighbours say more
    assert np.abs(at_chance[:, -1] - 0.105).max() < 0.03  # stays at chance, as its five did
    assert np.median(learning[:, -1]) == pytest.approx(0.51 + 0.35, abs=0.03)  # climbs as they
    assert (np.diff(learning[:, 1:].mean(axis=1)) >= 0).all()  # run r: the r-th lowest path


# -- a prior: a past search of the same model --------------------------------------------


def test_without_a_prior_the_forecast_is_the_one_it_was_before_priors_came(halted):
    frame = halted.forecast(["+1m", "+3m"], [2, 4], runs=8, seed=5)
    assert (
        frame[["expected", "p10", "p90"]].to_numpy().round(6).tolist()
        == [[0.817161, 0.739654, 0.900829]] * 4
    )  # the numbers of the forecast before it read a prior after the first results
    assert frame.attrs["note"] == "drawn from the search at 80s"


def test_a_prior_changes_the_forecast_after_the_first_results_too(halted):
    plain = halted.forecast(["+1m"], runs=16, seed=1)
    told = halted.forecast(["+1m"], runs=16, seed=1, prior=tiny_trace())
    assert told.attrs["note"] == "drawn from the search at 80s and the prior"
    assert not np.allclose(plain[["p10", "median", "p90"]], told[["p10", "median", "p90"]])
    assert (told.p10 >= halted.best.metric).all()  # the best so far is still kept


def _searched(curves, max_epochs=12):
    from types import SimpleNamespace

    from hypersched_nb.core.trial import TrialState
    from hypersched_nb.experiment.forecast import TrialSeen

    trials = tuple(
        TrialSeen(i, TrialState.PAUSED, tuple(c), 10.0, 0, None, 0) for i, c in enumerate(curves)
    )
    return SimpleNamespace(reported=True, trials=trials, max_epochs=max_epochs, mode="max")


def _prior_of(curves):
    from hypersched_nb.sim.trace import Trace

    ids = tuple(range(len(curves)))
    return Trace(
        "past", ids, {i: np.asarray(c, dtype=float) for i, c in zip(ids, curves, strict=True)},
        {i: np.ones(len(c)) for i, c in zip(ids, curves, strict=True)}, {i: {} for i in ids},
    )  # fmt: skip


def test_the_weight_of_the_prior_falls_as_the_search_sees_more_of_its_own_curves():
    from hypersched_nb.experiment.forecast import foresee

    rng, epochs = np.random.default_rng(0), np.arange(1, 13)
    prior = _prior_of([0.8 - 0.4 / epochs + rng.normal(0, 0.003, 12) for _ in range(20)])
    own = [0.7 - 0.4 / epochs + rng.normal(0, 0.003, 12) for _ in range(40)]

    def weight(curves):
        return foresee(_searched(curves), runs=8, seed=0, prior=prior).prior_weight

    few_short = weight([c[:2] for c in own[:4]])
    many_short = weight([c[:2] for c in own])
    many_long = weight([c[:8] for c in own])
    assert 1.0 > few_short > many_short > many_long > 0.0
    assert foresee(_searched(own[:4]), runs=8, seed=0).prior_weight == 0.0  # no prior: none


def test_curves_continue_as_the_nearest_curves_of_the_prior_went_on():
    from hypersched_nb.experiment.forecast import foresee

    rng, epochs = np.random.default_rng(0), np.arange(1, 13)
    # the past search's curves rise to epoch 4, then stay: a plateau the predictor, from
    # four rising points, cannot know of
    plateau = [np.minimum(0.2 + 0.1 * epochs, 0.6) + rng.normal(0, 0.002, 12) for _ in range(30)]
    rising = [0.3, 0.4, 0.5, 0.6]
    searched = _searched([rising])
    alone = foresee(searched, runs=32, seed=0).own[0].metrics[:, -1]
    told = foresee(searched, runs=32, seed=0, prior=_prior_of(plateau)).own[0].metrics[:, -1]
    assert np.median(alone) > 0.7  # the predictor carries the rise on
    assert np.median(told) == pytest.approx(0.6, abs=0.02)  # the prior says it stops


def test_untried_configurations_are_drawn_from_the_prior_by_its_weight():
    from hypersched_nb.experiment.forecast import foresee

    epochs = np.arange(1, 13)
    prior = _prior_of([np.full(12, 0.9) for _ in range(10)])  # a past search's curves: 0.9
    futures = foresee(_searched([0.5 - 0.1 / epochs]), runs=4, seed=0, prior=prior)
    rng = np.random.default_rng(0)
    finals = np.array([futures.draw_new(rng, 0)[0][-1] for _ in range(400)])
    assert (finals == 0.9).mean() == pytest.approx(futures.prior_weight, abs=0.06)


def test_a_prior_given_as_a_past_search_is_read_for_its_curves():
    from types import SimpleNamespace

    from hypersched_nb.experiment.forecast import prior_trace

    trace = tiny_trace()
    assert prior_trace(SimpleNamespace(trace=trace), metric="acc", mode="max") is trace
