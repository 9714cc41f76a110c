"""The learning-curve predictor: Domhan et al.'s families recovered, honest uncertainty."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hypersched_nb.core.curves import FAMILIES, CurveCache, noise_level, predict
from hypersched_nb.core.trial import Trial
from hypersched_nb.errors import ConfigError

R = 50
X = np.arange(1, R + 1, dtype=float)

#: curves drawn from Domhan et al.'s families (their own parametrisations)
KNOWN = {
    "pow3": 0.85 - 0.6 * X**-0.8,
    "pow4": 0.9 - (0.3 * X + 1.0) ** -1.2,
    "weibull": 0.88 - (0.88 - 0.2) * np.exp(-((0.08 * X) ** 1.1)),
    "mmf": 0.9 - (0.9 - 0.1) / (1 + (0.15 * X) ** 1.3),
    "janoschek": 0.8 - (0.8 - 0.3) * np.exp(-0.2 * X**0.7),
    "ilog2": 0.95 - 0.5 / np.log(X + 1),
    "hill": 0.9 * X**1.5 / (6.0**1.5 + X**1.5),
    "exp4": 0.92 - np.exp(-0.3 * X**0.6 - 0.5),
}


def test_the_eleven_families_of_domhan_et_al():
    assert set(FAMILIES) == {
        "pow3",
        "pow4",
        "log_power",
        "weibull",
        "mmf",
        "janoschek",
        "ilog2",
        "hill",
        "vapor_pressure",
        "log_log_linear",
        "exp4",
    }


@pytest.mark.parametrize("family", sorted(KNOWN))
def test_a_curve_from_a_known_family_is_recovered_from_its_first_half(family):
    rng = np.random.default_rng(1)
    curve = KNOWN[family]
    seen = curve[:25] + rng.normal(0, 0.003, 25)
    pred = predict(X[:25], seen, R, bounds=(0, 1), rng=rng)
    # the final value is found to within 0.02 from half the curve with little noise
    assert abs(pred.mean - curve[-1]) < 0.02, (pred.mean, curve[-1])
    # and it lies inside the central 95 % of the predicted spread
    assert 0.025 < pred.prob_at_least(curve[-1]) < 0.975


def _pit(**options) -> np.ndarray:
    """P(prediction ≥ truth) for 150 noisy pow3 curves seen for 15 of 50 epochs."""
    rng = np.random.default_rng(7)
    pit = []
    for _ in range(150):
        c, a, alpha = rng.uniform(0.6, 0.95), rng.uniform(0.2, 0.6), rng.uniform(0.3, 1.5)
        truth = c - a * X**-alpha + rng.normal(0, 0.01, R)
        pred = predict(X[:15], truth[:15], R, bounds=(0, 1), rng=rng, **options)
        pit.append(pred.prob_at_least(truth[-1]))
    return np.array(pit)


def test_probabilities_are_calibrated_when_the_model_holds():
    pit = _pit(temper=1.0, drift=0.0)  # the untempered posterior: i.i.d. noise around a family
    # the truth is above the predicted median about half the time ...
    assert 0.4 < np.mean(pit > 0.5) < 0.6
    # ... and outside the central 80 % interval about 20 % of the time
    assert 0.1 < np.mean((pit < 0.1) | (pit > 0.9)) < 0.3


def test_the_default_widening_errs_on_the_wide_side_for_clean_curves():
    pit = _pit()  # temper 2 and drift 0.02: sized for real curves that wander
    # still centred ...
    assert 0.4 < np.mean(pit > 0.5) < 0.65
    # ... and never narrower than nominal: at most 20 % outside the central 80 %
    assert np.mean((pit < 0.1) | (pit > 0.9)) <= 0.2


@pytest.mark.parametrize("n", [1, 2])
def test_a_prefix_of_one_or_two_points_gives_a_wide_prediction(n):
    rng = np.random.default_rng(0)
    short = predict(X[:n], KNOWN["pow3"][:n], R, bounds=(0, 1), rng=rng)
    long = predict(X[:30], KNOWN["pow3"][:30], R, bounds=(0, 1), rng=rng)
    # much less is known from one or two points than from thirty
    assert short.std > 3 * long.std
    # yet every draw stays within the metric's bounds
    assert short.samples.min() >= 0 and short.samples.max() <= 1


def test_a_single_point_without_bounds_spreads_above_it():
    pred = predict([1], [2.0], 10, rng=np.random.default_rng(0))
    # curves rise: the draws start at the value seen and spread upwards
    assert pred.samples.min() >= 2.0 and pred.std > 0.1


def test_paths_keep_each_epochs_spread_but_move_as_curves_do():
    seen = KNOWN["pow3"][:10] + np.random.default_rng(1).normal(0, 0.005, 10)
    ahead = np.arange(11, R + 1)
    kw = {"bounds": (0, 1), "samples": 4000, "drift": 0.05}
    apart = predict(X[:10], seen, ahead, rng=np.random.default_rng(0), **kw).samples
    paths = predict(X[:10], seen, ahead, paths=True, rng=np.random.default_rng(0), **kw).samples
    # every epoch's distribution is the same, whether drawn apart or as paths ...
    assert np.allclose(paths.mean(axis=0), apart.mean(axis=0), atol=0.005)
    assert np.allclose(paths.std(axis=0), apart.std(axis=0), rtol=0.1)
    # ... but along a path the wander persists: one epoch to the next moves it little
    assert np.diff(paths, axis=1).std() < 0.5 * np.diff(apart, axis=1).std()


def test_curves_of_one_search_measure_the_noise_they_share():
    rng = np.random.default_rng(0)
    noisy = [KNOWN[f] + rng.normal(0, 0.01, R) for f in ("pow3", "mmf", "hill", "exp4")]
    assert noise_level(noisy, horizon=R, bounds=(0, 1)) == pytest.approx(0.01, rel=0.25)
    # curves too short to fit past their three parameters say nothing: the prior stands
    assert noise_level([c[:4] for c in noisy], horizon=R, bounds=(0, 1), prior=0.02) == 0.02
    # curves without noise cannot pull it to nothing (a predictor would see no noise at all)
    flat = [np.full(R, 0.1), np.full(R, 0.3)]
    assert 0 < noise_level(flat, horizon=R, bounds=(0, 1)) < 0.01
    # a loss in min mode, unbounded, in units of its largest value
    losses = [2.0 * (1 - c) for c in noisy]
    assert noise_level(losses, horizon=R, mode="min") == pytest.approx(0.01, rel=0.4)


def test_a_flat_curve_stays_flat():
    rng = np.random.default_rng(3)
    pred = predict(X[:20], 0.7 + rng.normal(0, 0.004, 20), R, bounds=(0, 1), rng=rng)
    # no rise is invented for a curve that has not moved
    assert abs(pred.mean - 0.7) < 0.02


def test_diverged_values_are_ignored_and_nothing_left_gives_nan():
    rng = np.random.default_rng(0)
    curve = KNOWN["pow3"][:10].copy()
    curve[-3:] = np.nan
    pred = predict(X[:10], curve, R, bounds=(0, 1), rng=rng)
    # the finite prefix still predicts a value in bounds
    assert 0 <= pred.mean <= 1
    gone = predict(X[:3], [np.nan, np.inf, np.nan], R, rng=rng)
    # with no finite value there is no prediction, and no chance of any target
    assert math.isnan(gone.mean) and gone.prob_reach(0.0) == 0.0


def test_a_loss_in_min_mode_is_extrapolated_downwards():
    rng = np.random.default_rng(2)
    loss = 0.2 + 2.0 * X**-0.8
    pred = predict(X[:10], loss[:10], [20, R], mode="min", bounds=(0, math.inf), rng=rng)
    # both horizons are close to the true loss
    assert np.all(np.abs(pred.mean - loss[[19, R - 1]]) < 0.03)
    # "better" means lower in min mode: reaching a loss well above the final one is sure
    assert pred.prob_better(0.5)[-1] > 0.95 and pred.prob_reach(0.5) > 0.95


def test_an_unbounded_metric_grows_no_faster_than_its_average_slope():
    x = X[:10]
    pred = predict(x, 10 + 3 * x, R, rng=np.random.default_rng(0))
    # a straight line is not extrapolated past itself (plus 3 × 1 % of the largest value)
    assert pred.samples.max() <= 10 + 3 * R + 0.03 * 40 + 1e-9


def test_first_passage_and_expected_epochs():
    rng = np.random.default_rng(0)
    curve = KNOWN["weibull"]
    pred = predict(X[:10], curve[:10], X[10:], bounds=(0, 1), rng=rng)
    level = curve[30]
    # reaching a level within the next few epochs is less likely than by the end
    assert pred.prob_reach(level, upto=5) < pred.prob_reach(level)
    # and the draws that reach it do so after the last epoch seen
    assert 10 < pred.expected_epochs_to(level) <= R
    # a level above the bound is never reached
    assert pred.prob_reach(1.5) == 0.0 and pred.expected_epochs_to(1.5) == math.inf


def test_same_generator_same_prediction():
    a = predict(X[:8], KNOWN["mmf"][:8], R, bounds=(0, 1), rng=np.random.default_rng(5))
    b = predict(X[:8], KNOWN["mmf"][:8], R, bounds=(0, 1), rng=np.random.default_rng(5))
    assert np.array_equal(a.samples, b.samples)


def test_fractional_epochs_are_accepted():
    x = np.linspace(1.0, 6.0, 11)
    pred = predict(
        x, 0.9 - 0.5 * x**-0.7, [10.5, 20.0], bounds=(0, 1), rng=np.random.default_rng(0)
    )
    # off the integer grid the families are evaluated directly and still fit
    assert np.all(np.abs(pred.mean - (0.9 - 0.5 * np.array([10.5, 20.0]) ** -0.7)) < 0.05)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"mode": "up"}, "`mode` is 'up'"),
        ({"samples": 1}, "`samples` is 1"),
        ({"temper": 0}, "`temper` is 0"),
    ],
)
def test_bad_options_are_refused_in_one_line(kwargs, message):
    with pytest.raises(ConfigError) as info:
        predict(X[:5], KNOWN["pow3"][:5], R, **kwargs)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_epochs_before_the_first_are_refused():
    with pytest.raises(ConfigError, match="`at` is"):
        predict(X[:5], KNOWN["pow3"][:5], 0)


def test_the_cache_fits_once_per_epoch_reached():
    cache = CurveCache(R, seed=0)
    trial = Trial(0, {})
    for e in range(1, 6):
        trial.epochs = e
        trial.metrics.append(float(KNOWN["pow3"][e - 1]))
        cache.observe(trial.metrics[-1])
    first = cache.predict(trial, "max")
    # asked again at the same epoch: the same fit, no new draws
    assert cache.predict(trial, "max") is first and cache.cached(0) is first
    # it predicts every epoch still ahead, up to the horizon
    assert first.at[0] == 6 and first.at[-1] == R
    trial.epochs = 6
    trial.metrics.append(float(KNOWN["pow3"][5]))
    # a new epoch means a new fit
    assert cache.predict(trial, "max") is not first
    cache.forget(0)
    assert cache.cached(0) is None


def test_the_cache_infers_bounds_from_the_metrics_seen():
    cache = CurveCache(R)
    cache.observe(0.4)
    # metrics in [0, 1] in max mode: an accuracy
    assert cache.bounds_for("max") == (0.0, 1.0)
    # non-negative metrics in min mode: a loss
    assert cache.bounds_for("min") == (0.0, math.inf)
    cache.observe(2.5)
    cache.observe(float("nan"))  # ignored
    # one value above 1: no longer an accuracy, still non-negative
    assert cache.bounds_for("max") is None and cache.bounds_for("min") == (0.0, math.inf)
    with pytest.raises(ConfigError, match="`bounds` is"):
        CurveCache(R, bounds="unit")
