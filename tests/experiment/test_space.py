"""Configurations come from an Optuna sampler by ask-and-tell; results go back when a trial ends."""

import itertools
import math

import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import TrialState as OptunaState

from hypersched_nb.core.trial import Trial, TrialState
from hypersched_nb.errors import ConfigError
from hypersched_nb.experiment.space import ListSource, OptunaSource, config_source

SPACE = {
    "lr": FloatDistribution(1e-4, 1.0, log=True),
    "width": IntDistribution(8, 64),
    "act": ["relu", "tanh"],  # a list is a categorical choice
    "epochs_per_step": 1,  # a plain value is fixed
}


def finished(tid, metrics, state=TrialState.TERMINATED):
    t = Trial(tid, {})
    t.metrics = list(metrics)
    t.state = state
    t.epochs = len(metrics)
    return t


@pytest.mark.parametrize("sampler", ["tpe", "random", "qmc"])
def test_configs_lie_in_the_space_and_a_seed_repeats_them(sampler):
    a = OptunaSource(SPACE, sampler=sampler, seed=3)
    b = OptunaSource(SPACE, sampler=sampler, seed=3)
    got = [next(a) for _ in range(5)]
    assert got == [next(b) for _ in range(5)]  # same seed, same configurations
    for c in got:
        assert 1e-4 <= c["lr"] <= 1.0 and 8 <= c["width"] <= 64
        assert c["act"] in ("relu", "tanh") and c["epochs_per_step"] == 1


def test_max_configs_ends_the_offers():
    src = OptunaSource(SPACE, sampler="random", max_configs=2)
    assert next(src, None) is not None and next(src, None) is not None
    assert next(src, None) is None  # the driver reads None as "no more"
    assert src.offered == 2


def test_a_completed_trial_is_told_its_best_metric():
    src = OptunaSource(SPACE, sampler="random", mode="max")
    next(src)
    src.tell(finished(0, [0.5, 0.8, 0.7]), complete=True)
    (t,) = src.study.trials
    assert t.state is OptunaState.COMPLETE and t.value == 0.8
    assert t.intermediate_values == {1: 0.5, 2: 0.8, 3: 0.7}


def test_min_mode_tells_the_smallest_metric():
    src = OptunaSource(SPACE, sampler="random", mode="min")
    next(src)
    src.tell(finished(0, [0.5, 0.2, 0.3]), complete=True)
    assert src.study.trials[0].value == 0.2


def test_a_trial_stopped_early_is_pruned_with_its_curve():
    src = OptunaSource(SPACE, sampler="tpe")
    next(src)
    src.tell(finished(0, [0.3, 0.4]), complete=False)
    (t,) = src.study.trials
    # TPE ranks pruned trials by their intermediate values, as under Optuna's pruners
    assert t.state is OptunaState.PRUNED and t.intermediate_values == {1: 0.3, 2: 0.4}


@pytest.mark.parametrize(
    "trial",
    [finished(0, []), finished(0, [0.3, math.nan]), finished(0, [0.3], TrialState.ERRORED)],
    ids=["never-trained", "diverged", "raised"],
)
def test_trials_with_nothing_to_learn_from_fail(trial):
    src = OptunaSource(SPACE, sampler="random")
    next(src)
    src.tell(trial, complete=False)
    assert src.study.trials[0].state is OptunaState.FAIL  # samplers skip failed trials


def test_trials_the_source_never_offered_are_ignored():
    src = OptunaSource(SPACE, sampler="random")
    src.tell(finished(5, [0.1]), complete=True)
    assert src.study.trials == []


def test_a_list_is_offered_in_order():
    src = config_source([{"a": 1}, {"a": 2}])
    assert isinstance(src, ListSource)
    assert [next(src), next(src), next(src, None)] == [{"a": 1}, {"a": 2}, None]


def test_max_configs_cuts_a_list():
    assert list(config_source([{"a": i} for i in range(5)], max_configs=2)) == [{"a": 0}, {"a": 1}]


@pytest.mark.parametrize(
    "space, name",
    [({"lr": (0.1, 1.0)}, "space['lr']"), ({"lr": []}, "space['lr']"), ({}, "space"), (42, "space"),
     ({3: CategoricalDistribution([1])}, "space")],
)  # fmt: skip
def test_bad_spaces_name_the_entry(space, name):
    with pytest.raises(ConfigError, match=f"^`{name.split('[')[0]}"):
        config_source(space)


def test_bad_sampler_and_bad_list_item():
    with pytest.raises(ConfigError, match="^`sampler` is 'cma'"):
        OptunaSource(SPACE, sampler="cma")
    with pytest.raises(ConfigError, match="^`space` item 0"):
        next(config_source([3]))


def test_an_empty_list_of_configurations_is_refused_before_anything_starts():
    from hypersched_nb.errors import ConfigError
    from hypersched_nb.experiment.space import config_source

    with pytest.raises(
        ConfigError, match=r"^`space` is \[\], but a list of configurations needs at least one$"
    ):
        config_source([])


GRID = {
    "lr": [0.1, 0.01],
    "width": IntDistribution(16, 64, step=16),
    "wd": FloatDistribution(0, 1e-3, step=5e-4),
}


def key(config):
    return tuple(sorted(config.items()))


@pytest.mark.parametrize("sampler", ["tpe", "random", "qmc"])
def test_a_finite_space_offers_each_configuration_once_then_no_more(sampler):
    offered = list(itertools.islice(OptunaSource(GRID, sampler=sampler, seed=0), 100))
    assert len(offered) == 2 * 4 * 3  # every configuration of the grid
    assert len({key(c) for c in offered}) == len(offered)  # none twice


def test_no_configuration_is_offered_twice_while_trials_are_told():
    src = OptunaSource({"act": ["relu", "tanh", "gelu"], "w": [1, 2]}, sampler="tpe", seed=1)
    seen = []
    # TPE, told every trial, redraws what it repeats
    for tid, config in enumerate(itertools.islice(src, 20)):
        seen.append(key(config))
        src.tell(finished(tid, [0.5 + 0.1 * config["w"]]), complete=True)
    assert sorted(seen) == sorted(set(seen)) and len(seen) == 6


def test_a_resumed_finite_search_goes_on_with_the_configurations_it_had_not_offered():
    first = list(OptunaSource(GRID, seed=0))
    again = OptunaSource(GRID, seed=0)
    for config in first[:7]:  # offered before the kernel died
        again.replayed(config)
    assert list(again) == first[7:]  # the same draws, in the same order, then no more
