"""The running statistic the policies keep: size, mean, largest and one percentile of a
growing sample, equal to what numpy computes from all of it at every step."""

from __future__ import annotations

import numpy as np
import pytest

from hypersched_nb.core.policies._sample import Sample, percentile


def test_percentile_interpolates_linearly_as_numpy_does():
    values = sorted(np.random.default_rng(1).uniform(0, 60, size=37))
    for q in (0, 10, 50, 75, 90, 100, 100 * (1 - 1 / 3)):
        assert percentile(values, q) == pytest.approx(np.percentile(values, q))
    assert percentile([7.0], 90) == 7.0


@pytest.mark.parametrize("q", [50, 90, 75, 0, 100])
def test_a_sample_keeps_its_percentile_as_values_arrive(q):
    sample, seen = Sample(percentile=q), []
    assert sample.percentile() is None  # nothing yet
    for x in np.random.default_rng(q).uniform(1, 60, size=200):
        sample.add(x)
        seen.append(x)
        if len(seen) % 7 == 0:  # read now and then: the values in between wait, then count
            assert sample.percentile() == pytest.approx(np.percentile(seen, q))
    assert sample.percentile() == pytest.approx(np.percentile(seen, q))


def test_size_mean_and_largest_need_no_percentile():
    sample = Sample()
    assert (len(sample), sample.mean(), sample.mean(default=9.0), sample.largest) == (
        0, 0.0, 9.0, 0.0,
    )  # fmt: skip
    for x in (3.0, 12.0, 6.0):
        sample.add(x)
    assert (len(sample), sample.mean(), sample.largest) == (3, 7.0, 12.0)


def test_a_sample_follows_a_list_that_only_grows():
    seen, sample = [], Sample(percentile=90)
    for x in (20.0, 3.0, 50.0):
        seen.append(x)
        assert sample.follow(seen).percentile() == pytest.approx(np.percentile(seen, 90))
    assert len(sample.follow(seen)) == 3  # nothing counted twice
