"""The rungs the rung-based policies share: where the milestones fall, what a rung keeps
and where its cutoff lies (the percentile (1 − 1/η) of the values kept, as numpy computes it).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from hypersched_nb.core.policies._rungs import Rung, milestones


def test_milestones_are_r_times_eta_to_the_i_up_to_R():
    assert milestones(52, 1, 4) == [1, 4, 16]  # the benchmark's setting
    assert milestones(100, 1, 4) == [1, 4, 16, 64]  # Ray Tune's and the authors' defaults
    assert milestones(200, 2, 4) == [2, 8, 32, 128]
    assert milestones(100, 2.5, 3) == [2.5, 7.5, 22.5, 67.5]  # a fractional grace period
    # R that is a power of η is a milestone itself, however the logarithms round
    assert milestones(243, 1, 3)[-1] == 243 and milestones(1000, 1, 10)[-1] == 1000
    assert milestones(3, 4, 2) == []  # r past R: no rung


def test_a_rung_keeps_the_first_value_each_trial_reports_there():
    rung = Rung(4, eta=4)
    assert rung.record(0, 0.5) == 0.5
    assert rung.record(0, 0.9) == 0.5  # a later report never replaces it
    assert 0 in rung and 1 not in rung and len(rung) == 1


def test_the_cutoff_is_numpys_percentile_of_the_kept_values():
    rng = np.random.default_rng(0)
    rung = Rung(1, eta=4, min_count=2)
    assert rung.cutoff() is None and rung.spread() is None
    values = rng.normal(size=50)
    for tid, value in enumerate(values):
        rung.record(tid, value)
        if tid == 0:
            assert rung.cutoff() is None  # one value, two needed
    assert rung.cutoff() == pytest.approx(np.percentile(values, 75))
    assert rung.spread() == pytest.approx(np.percentile(values, 75) - np.median(values))
    # strictly below the cutoff: the values under the top quarter
    assert sum(rung.below(t) for t in range(50)) == sum(v < rung.cutoff() for v in values)


def test_nan_is_kept_for_its_trial_but_has_no_place_in_the_order():
    rung = Rung(1, eta=2)
    rung.record(0, math.nan)
    assert 0 in rung and rung.cutoff() is None
    rung.record(1, 0.4)
    rung.record(2, 0.8)
    assert rung.cutoff() == pytest.approx(np.nanpercentile([math.nan, 0.4, 0.8], 50))
