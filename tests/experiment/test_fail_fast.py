"""Fail fast: when the first trials of a search all fail with the same error, the search
stops and says why, instead of failing every trial it can start until its deadline."""

import pytest

from hypersched_nb import Experiment
from hypersched_nb.core.events import Result, Start, TrialFailed
from hypersched_nb.errors import ConfigError
from hypersched_nb.experiment._fail_fast import SearchFailed
from hypersched_nb.sim.clock import VirtualClock

NO_METRIC = "step() returned no 'nope' (it returned val_acc, train_loss)"


class Scripted:
    """Two workers; a trial started here ends one second later: it fails with its
    configuration's ``error``, or (with none) reports one epoch and is done."""

    def __init__(self, clock):
        self.clock, self.due = clock, []

    def workers(self):
        return 2

    def execute(self, ins):
        if type(ins) is Start:
            t, error = self.clock.now() + 1.0, ins.config["error"]
            self.due.append(
                TrialFailed(ins.trial_id, t, f"Traceback (most recent call last):\n  ...\n{error}")
                if error else Result(ins.trial_id, 1, 0.5, t, 1.0, 1, done=True)
            )  # fmt: skip

    def advance(self, until):
        ready = [e for e in self.due if e.time <= until]
        if not ready:
            self.clock.sleep_until(until)
            return []
        t = min(e.time for e in ready)
        self.due = [e for e in self.due if e.time != t]
        self.clock.sleep_until(t)
        return [e for e in ready if e.time == t]


def search(errors, **settings) -> Experiment:
    clock = VirtualClock()
    configs = [{"error": e} for e in errors]
    return Experiment._on(Scripted(clock), clock, configs, metric="acc", deadline=600,
                          max_epochs=1, policy="fifo", **settings)  # fmt: skip


def test_the_first_three_trials_failing_alike_stop_the_search_and_wait_raises_why():
    exp = search([NO_METRIC] * 60).start()
    with pytest.raises(SearchFailed) as info:
        exp.wait()
    assert str(info.value) == (
        "the first 3 trials all failed with the same error, so the search stopped "
        f"(fail_fast=3): {NO_METRIC}"
    )
    snap = exp.statistics()
    assert snap.status == "failed" and snap.error.startswith("SearchFailed: the first 3")
    assert len(snap.trials) < 60 and snap.time < 600  # not every trial, not to the deadline


def test_the_threshold_is_an_option_and_none_turns_the_rule_off():
    with pytest.raises(SearchFailed, match=r"first 5 trials .* \(fail_fast=5\)"):
        search([NO_METRIC] * 20, fail_fast=5).run()
    exp = search([NO_METRIC] * 20, fail_fast=None)
    exp.run()
    assert exp.statistics().status == "finished" and len(exp.statistics().trials) == 20


@pytest.mark.parametrize(
    "errors",
    [[NO_METRIC, "ValueError: bad lr", NO_METRIC, NO_METRIC],  # two different errors
     [None, NO_METRIC, NO_METRIC, NO_METRIC, NO_METRIC]],  # the first trial to end works
)  # fmt: skip
def test_failures_that_differ_or_follow_a_success_are_the_trials_own(errors):
    exp = search(errors)
    exp.run()
    assert exp.statistics().status == "finished" and len(exp.statistics().trials) == len(errors)


@pytest.mark.parametrize("value", [0, -1, 2.5, True, "3"])
def test_a_bad_threshold_is_refused_in_one_line(value):
    with pytest.raises(
        ConfigError, match=r"^`fail_fast` is .*, but must be a number of trials >= 1, or None$"
    ):
        search([NO_METRIC], fail_fast=value)


def test_a_status_moves_only_as_its_table_says_and_a_wrong_move_names_both():
    from hypersched_nb.errors import HyperschedError
    from hypersched_nb.experiment._session import TRANSITIONS, Session, Status

    assert TRANSITIONS[Status.FAILING] == {Status.FAILED}  # a search that knew it failed
    assert all(not TRANSITIONS[s] for s in (Status.FINISHED, Status.FAILED))  # over is over
    session = Session(runtime=object(), clock=None)
    session.opened("finished", started=None)
    assert session.status == "finished" and session.status is Status.FINISHED
    with pytest.raises(HyperschedError, match="a search that is finished cannot become running"):
        session.run(lambda: None)


@pytest.mark.parametrize(
    ("errors", "said"),
    [([NO_METRIC], "its only trial failed"),
     ([NO_METRIC, NO_METRIC], "all 2 of its trials failed with the same error")],
)  # fmt: skip
def test_a_search_whose_every_trial_failed_alike_before_the_threshold_failed(errors, said):
    exp = search(errors).start()  # fewer configurations than fail_fast: they run out first
    with pytest.raises(SearchFailed) as info:
        exp.wait()
    assert str(info.value).startswith(said)
    assert str(info.value).endswith(f", and no other ran (fail_fast=3): {NO_METRIC}")
    snap = exp.statistics()
    assert snap.status == "failed" and snap.status_text().startswith(f"failed: {said}")
    assert len(snap.trials) == len(errors)  # what ran is kept


def test_one_failure_beside_a_trial_that_worked_is_that_trials_own():
    exp = search([NO_METRIC, None])
    exp.run()
    assert exp.statistics().status == "finished"
