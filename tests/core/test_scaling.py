"""s(k), the speed-up of one epoch on k workers: a measured curve, interpolated, never extrapolated.

Specified here: s(1) = 1 and s(0) = 0; linear interpolation between measured points; flat
past the last point (no speed-up that was not measured); parsing from a curve, a mapping, a
JSON object string (keys may be strings, as in JSON) or a named profile; one-line
ConfigErrors naming the bad value; equality by points.
"""

from __future__ import annotations

import pytest

from hypersched_nb.core.scaling import LINEAR, NONE, PROFILES, ScalingCurve
from hypersched_nb.errors import ConfigError

RESNET50 = ScalingCurve({2: 1.87, 4: 3.42, 8: 5.60})


def test_one_worker_is_the_unit_and_no_worker_does_nothing():
    assert RESNET50(1) == 1.0
    assert RESNET50(0) == 0.0


def test_measured_points_are_returned_exactly():
    assert [RESNET50(k) for k in (2, 4, 8)] == [1.87, 3.42, 5.60]


def test_between_points_it_interpolates_linearly():
    # halfway between 2 and 4 workers, halfway between their speed-ups
    assert RESNET50(3) == pytest.approx((1.87 + 3.42) / 2)
    # a quarter of the way from 4 to 8 workers
    assert RESNET50(5) == pytest.approx(3.42 + (5.60 - 3.42) / 4)


def test_past_the_last_point_it_stays_flat():
    assert RESNET50(16) == RESNET50(8) == 5.60
    # a curve without points never speeds up
    assert NONE(64) == 1.0


def test_the_linear_profile_is_linear_where_measured():
    assert [LINEAR(k) for k in (1, 2, 3, 8, 64)] == [1.0, 2.0, 3.0, 8.0, 64.0]


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_named_profiles_parse_to_their_points(name):
    curve = ScalingCurve.parse(name)
    # s(1) = 1 is always a point, plus the profile's own
    assert curve.as_dict() == {1: 1.0, **{int(k): float(v) for k, v in PROFILES[name].items()}}


def test_the_authors_resnet50_profile():
    assert ScalingCurve.parse("resnet50-v100") == RESNET50


def test_json_keys_may_be_strings():
    curve = ScalingCurve.parse('{"2": 1.5, "4": 2.5}')
    assert curve.as_dict() == {1: 1.0, 2: 1.5, 4: 2.5}
    # a mapping with string keys, as a sidecar's JSON gives, means the same
    assert ScalingCurve.parse({"2": 1.5, "4": 2.5}) == curve


def test_parse_passes_a_curve_through_and_none_means_no_speed_up():
    assert ScalingCurve.parse(RESNET50) is RESNET50
    assert ScalingCurve.parse(None) == NONE


def test_equal_points_mean_equal_curves():
    assert ScalingCurve({4: 3.42, 2: 1.87, 8: 5.6}) == RESNET50
    assert hash(ScalingCurve({2: 1.87, 4: 3.42, 8: 5.6})) == hash(RESNET50)
    assert ScalingCurve({2: 1.9}) != RESNET50
    assert repr(ScalingCurve({2: 1.5})) == "ScalingCurve({1: 1.0, 2: 1.5})"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("fast", "scaling 'fast' is neither a JSON object nor one of"),  # an unknown name
        ("[1, 2]", "scaling [1, 2] must map worker counts to speed-ups"),  # JSON, not an object
        ('{"0": 1.0}', "scaling point 0 workers is not allowed; workers must be >= 1"),
        ('{"2": 0}', "scaling s(2) is 0.0, but must be > 0"),
        ('{"2": -1.5}', "scaling s(2) is -1.5, but must be > 0"),
        ('{"2": NaN}', "scaling s(2) is nan, but must be > 0"),
        ('{"two": 1.8}', "scaling point 'two': 1.8 is not a worker count and a speed-up"),
        ('{"2": "fast"}', "scaling point '2': 'fast' is not a worker count and a speed-up"),
        ({2.5: 2.0}, "scaling point 2.5: 2.0 is not a worker count and a speed-up"),
    ],
)
def test_bad_specs_raise_one_line_config_errors(spec, message):
    with pytest.raises(ConfigError) as info:
        ScalingCurve.parse(spec)
    text = str(info.value)
    # the message starts with the rule broken and stays on one line
    assert text.startswith(message) and "\n" not in text
