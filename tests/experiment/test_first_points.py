"""The configurations a search tries first (``points_to_evaluate``): the trainable's own
defaults unless told otherwise, checked against the space, kept in the journal."""

from typing import ClassVar

import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

from hypersched_nb import Experiment
from hypersched_nb.errors import ConfigError
from hypersched_nb.experiment.first_points import first_points, inside
from hypersched_nb.experiment.settings import Settings
from hypersched_nb.experiment.space import OptunaSource
from hypersched_nb.testing.trainables import TinyRegression
from hypersched_nb.train.examples import DigitsCNN

SPACE = {
    "lr": FloatDistribution(1e-4, 1.0, log=True),
    "batch_size": CategoricalDistribution([32, 128]),
    "width": IntDistribution(8, 64, step=8),
    "epochs_per_step": 1,  # fixed
}


class WithDefaults:
    defaults: ClassVar[dict] = {"lr": 0.05, "batch_size": 64, "width": 16, "other": "kept out"}


def offers(points, n=3, seed=0) -> list[dict]:
    source = OptunaSource(SPACE, seed=seed, points=points)
    return [next(source) for _ in range(n)]


def test_a_search_of_an_example_tries_its_defaults_first():
    exp = Experiment(DigitsCNN, metric="val_acc", deadline="1m", cluster=1)
    first = next(exp.source)
    sampled = DigitsCNN.space()
    assert first == {name: DigitsCNN.defaults[name] for name in sampled}
    assert next(exp.source) != first  # then the sampler's own draws


def test_the_defaults_are_taken_where_they_lie_in_the_space_and_the_sampler_draws_the_rest():
    (point,) = first_points("defaults", trainable=WithDefaults, space=SPACE)
    assert point == {"lr": 0.05, "width": 16}  # 64 is not a choice; "other" is not sampled
    first = offers([point], n=1)[0]
    assert first["lr"] == 0.05 and first["width"] == 16 and first["batch_size"] in (32, 128)


def test_without_defaults_or_told_none_the_sampler_draws_from_the_first():
    drawn = offers(())
    assert first_points("defaults", trainable=TinyRegression, space=SPACE) == ()
    assert first_points([], trainable=WithDefaults, space=SPACE) == ()
    assert first_points(None, trainable=WithDefaults, space=SPACE) == ()
    assert offers(()) == drawn  # seeded: the same draws


def test_points_are_tried_in_order_then_the_sampler_goes_on_as_seeded():
    points = [
        {"lr": 0.3, "batch_size": 32, "width": 64},
        {"lr": 0.001, "batch_size": 128, "width": 8},
    ]
    tried = offers(first_points(points, trainable=None, space=SPACE), n=4)
    assert tried[:2] == [{**p, "epochs_per_step": 1} for p in points]
    assert tried[2:] == offers((), n=2)  # the sampler's random draws were not spent on them


@pytest.mark.parametrize(
    ("points", "message"),
    [
        ("fast", r"is 'fast', but must be 'defaults' \(the trainable's\), a list of dicts"),
        ({"lr": 0.1}, r"is \{'lr': 0.1\}, but must be 'defaults'"),
        ([0.1], r"`points_to_evaluate\[0\]` is 0.1, but must be a dict"),
        ([{"momentum": 0.9}], r"names 'momentum', which the space does not sample \(it samples lr, batch_size, width\)"),
        ([{"lr": 3.0}], r"`points_to_evaluate\[0\]\['lr'\]` is 3.0, outside its distribution .*: change it or widen the space"),
        ([{"width": 12}], r"\['width'\]` is 12, outside"),  # off its step
        ([{"batch_size": 64}], r"\['batch_size'\]` is 64, outside"),
    ],
)  # fmt: skip
def test_a_point_the_space_cannot_hold_is_refused_in_one_line(points, message):
    with pytest.raises(ConfigError, match=message) as info:
        Experiment(TinyRegression, SPACE, metric="loss", mode="min", points_to_evaluate=points)
    assert "\n" not in str(info.value)


def test_points_with_a_list_of_configurations_are_refused_a_list_is_tried_in_its_order():
    with pytest.raises(ConfigError, match="put these first in the list"):
        Experiment(TinyRegression, [{"lr": 0.1}], metric="loss", points_to_evaluate=[{"lr": 0.2}])
    exp = Experiment(DigitsCNN, [{"lr": 0.1}], metric="val_acc")  # its defaults: not offered
    assert exp._settings.points_to_evaluate == ()


def test_the_journal_keeps_the_points_resolved_so_a_resume_asks_the_same():
    settings = Settings(trainable=DigitsCNN, space=DigitsCNN.space(), checkpoint_dir="runs/a")
    record = settings.to_record(deadline=60.0, space_record=None)
    assert record["points_to_evaluate"] == [{n: DigitsCNN.defaults[n] for n in DigitsCNN.space()}]
    again = Settings.from_record(record, trainable=DigitsCNN, space=DigitsCNN.space(), live=True)
    assert again.points_to_evaluate == settings.points_to_evaluate
    told_none = Settings.from_record(
        {**record, "points_to_evaluate": []},
        trainable=DigitsCNN,
        space=DigitsCNN.space(),
        live=True,
    )  # a search that tried none first (or of an older format) is resumed trying none
    assert told_none.points_to_evaluate == ()


@pytest.mark.parametrize(
    ("distribution", "yes", "no"),
    [
        (FloatDistribution(0.1, 1.0), [0.1, 0.5, 1], [0.0, 1.5, float("nan"), "0.5", True]),
        (FloatDistribution(0.0, 1.0, step=0.25), [0.0, 0.75], [0.3]),
        (IntDistribution(1, 9, step=2), [1, 3, 9], [2, 3.5, 11]),
        (CategoricalDistribution(["a", None, 2]), ["a", None, 2], ["b", 3]),
    ],
)
def test_inside_says_whether_a_value_lies_in_a_distribution(distribution, yes, no):
    assert all(inside(distribution, v) for v in yes)
    assert not any(inside(distribution, v) for v in no)


def test_a_resumed_source_asked_again_with_the_same_points_goes_on_exactly():
    points = first_points([{"lr": 0.3}, {"width": 24}], trainable=None, space=SPACE)
    first = OptunaSource(SPACE, seed=3, points=points)
    offered = [next(first) for _ in range(4)]
    again = OptunaSource(SPACE, seed=3, points=points)  # rebuilt from the journal's header
    for config in offered:  # the journal's offers, asked again
        again.replayed(config)
    assert [t.state.name for t in again.study.trials] == ["RUNNING"] * 4  # none redrawn
    assert next(again) == next(first)  # and it goes on as the first would have
