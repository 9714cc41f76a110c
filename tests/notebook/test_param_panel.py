"""The dashboard's parameter view: Optuna's importances and parallel coordinates of the
search, on a thread of its own, redrawn no more often than its period, and a plain line
where there is not enough to draw yet."""

import dataclasses

import pytest
from optuna.trial import TrialState

from hypersched_nb import Experiment
from hypersched_nb.errors import ConfigError
from hypersched_nb.notebook.dashboard import Dashboard
from hypersched_nb.notebook.param_panel import NOT_STARTED, ParamPanel


@pytest.fixture(scope="module")
def digits():
    """A finished replayed search of the digits-cnn trace on four workers."""
    exp = Experiment.replay("digits-cnn", deadline=300, workers=4)
    exp.run()
    return exp


class Clock:
    """A clock the test moves by hand."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Versions:
    """The search ``exp``, as the panel sees it, whose snapshot's version moves at every
    read (a search that keeps changing); counts the studies the panel asks for."""

    def __init__(self, exp):
        self.exp, self.reads, self.studies = exp, 0, 0

    def statistics(self):
        self.reads += 1
        snap = self.exp.statistics()
        return dataclasses.replace(snap, version=self.reads, status="running")

    @property
    def study(self):
        self.studies += 1
        return self.exp.study


def test_a_finished_search_is_drawn_as_importances_and_parallel_coordinates(digits):
    panel = ParamPanel(digits)
    assert NOT_STARTED in panel.said.value  # nothing drawn on the kernel's thread
    assert panel.update() is True
    bars = panel.importances.data
    assert len(bars) == 1 and bars[0].type == "bar"  # one bar per parameter
    assert set(bars[0].y) <= set(digits.study.trials[0].params)
    complete = digits.study.get_trials(states=(TrialState.COMPLETE,))
    assert len(complete) >= 2
    lines = [t for t in panel.parallel.data if t.type == "scatter" and t.mode == "lines"]
    assert len(lines) == len(complete)  # Optuna's parallel coordinates: a line per trial
    assert "completed trials" in panel.said.value
    panel.close()  # its process goes too


def test_a_search_with_no_completed_trial_says_there_is_not_enough_to_draw(replay):
    panel = ParamPanel(replay)  # created, not run: no trial has completed
    assert panel.update() is False
    assert "not enough to draw yet: 0 trials completed" in panel.said.value
    assert panel.importances is None and panel.parallel is None  # no figure made yet
    assert panel.widget.children == (panel.said,)


def test_completed_trials_that_share_every_parameter_are_not_enough(digits):
    import optuna

    study = optuna.create_study()
    done = digits.study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    for value in (0.5, 0.7):
        study.add_trial(
            optuna.trial.create_trial(
                state=optuna.trial.TrialState.COMPLETE, value=value,
                params=done[0].params, distributions=done[0].distributions,
            )
        )  # fmt: skip

    class Same:
        def statistics(self):
            return digits.statistics()

        @property
        def study(self):
            return study

    panel = ParamPanel(Same())
    assert panel.update() is False
    assert "the 2 completed trials share every parameter" in panel.said.value


def test_it_redraws_no_more_often_than_its_period(digits):
    clock, search = Clock(), Versions(digits)
    panel = ParamPanel(search, every=30.0, clock=clock, separate=False)
    waits = []
    for _ in range(7):  # a tick every 10 s for a minute, the search changing all along
        waits.append(panel.tick())
        clock.now += 10.0
    assert panel.draws == 3  # at 0, 30 and 60 s
    assert search.studies == 3
    assert waits == [30.0, 20.0, 10.0, 30.0, 20.0, 10.0, 30.0]  # what its thread waits


def test_it_does_not_redraw_a_search_that_did_not_change(digits):
    clock = Clock()
    panel = ParamPanel(digits, every=30.0, clock=clock, separate=False)
    assert panel.tick() is None  # drawn, and the search is over: its thread ends
    clock.now += 60.0
    panel.tick()
    assert panel.draws == 1


def test_the_period_must_be_a_positive_number_of_seconds(digits):
    for every in (0, -1, True, "30"):
        with pytest.raises(ConfigError, match="params_every"):
            ParamPanel(digits, every=every)


def test_the_dashboard_shows_the_parameter_view_collapsed_below_the_trials(replay):
    dash = Dashboard(replay, forecast_every=None)
    section = dash.widget.children[-1]
    assert section.titles == ("parameters",) and section.selected_index is None
    assert section.children == (dash.params.widget,)
    assert dash.params.every == 30.0
    assert Dashboard(replay, forecast_every=None, params_every=None).params is None
