"""Live searches on a 2-worker local Dask cluster as Optuna studies (finished, opened from
their journals, and mid-run), exported for optuna-dashboard, and compared side by side."""

import time
from collections import Counter

import optuna
import plotly.graph_objects as go
import pytest
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState

import hypersched_nb
from hypersched_nb import Experiment
from hypersched_nb.__main__ import main as cli
from hypersched_nb.experiment.study import OPTUNA_STATE
from hypersched_nb.testing.trainables import TinyRegression

pytestmark = pytest.mark.cluster

LR = FloatDistribution(0.002, 0.05, log=True)
PLOTS = (
    optuna.visualization.plot_param_importances,
    optuna.visualization.plot_parallel_coordinate,
    optuna.visualization.plot_intermediate_values,
    optuna.visualization.plot_slice,
    optuna.visualization.plot_contour,
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A runs folder of two finished searches: ``a`` samples lr from a distribution
    (ASHA), ``b`` is a list of configurations one of which raises (HyperSched)."""
    root = tmp_path_factory.mktemp("hypersched-runs")
    a = Experiment(TinyRegression, {"lr": LR, "batch_size": [16, 64], "sleep": 0.2},
                   metric="loss", mode="min", deadline="150s", max_epochs=6, eta=2,
                   policy="asha", configs=8, cluster=2, sampler="random", seed=1,
                   checkpoint_dir=str(root / "a"))  # fmt: skip
    a.run()
    configs = [{"lr": 0.003 * (i + 1), "sleep": 0.2} for i in range(5)]
    configs[2]["fail_at"] = 2
    b = Experiment(TinyRegression, configs, metric="loss", mode="min", deadline="150s",
                   max_epochs=6, eta=2, policy="hypersched", cluster=2, seed=0,
                   checkpoint_dir=str(root / "b"))  # fmt: skip
    b.run()
    return root, a, b


def states_of(exp) -> Counter:
    """The Optuna states the results say the trials are in."""
    completed = {e["trial"] for e in exp.events if e["action"] == "Complete"}
    return Counter(
        "COMPLETE" if tid in completed else OPTUNA_STATE[state]
        for tid, state in exp.results()["state"].items()
    )


def assert_the_five_plots_draw(study) -> None:
    for plot in PLOTS:
        assert isinstance(plot(study), go.Figure), plot.__name__  # each draws, unchanged


def test_a_finished_live_search_is_a_study_with_the_distributions_it_sampled(runs):
    _, a, _ = runs
    study = a.study
    assert a.statistics().status == "finished"
    assert len(study.trials) == len(a.results()) == 8
    assert Counter(t.state.name for t in study.trials) == states_of(a)
    for t, row in zip(study.trials, a.statistics().trials, strict=True):
        assert t.distributions["lr"] == LR  # as the search sampled it
        assert t.params == {k: row.config[k] for k in ("lr", "batch_size")}
        assert t.intermediate_values == dict(enumerate(row.metrics, 1))
    assert study.user_attrs["fixed"] == {"sleep": 0.2}  # a setting, not a parameter
    assert study.direction is optuna.study.StudyDirection.MINIMIZE
    assert_the_five_plots_draw(study)


def test_a_trial_that_raised_fails(runs):
    _, _, b = runs
    study = b.study
    failed = [t for t in study.trials if t.state is TrialState.FAIL]
    assert [t.params["fail_at"] for t in failed] == [2]  # the one that raised
    assert failed[0].user_attrs["error"] and failed[0].value is None
    assert Counter(t.state.name for t in study.trials) == states_of(b)
    assert_the_five_plots_draw(study)


@pytest.mark.parametrize("name", ["a", "b"])
def test_an_opened_search_is_the_same_study(runs, name):
    root, *searches = runs
    live = searches["ab".index(name)].study
    opened = Experiment.open(root / name).study
    keep = ("state", "value", "params", "distributions", "intermediate_values")
    # trial by trial the same, opened from the journal as it was found live
    assert [[getattr(t, k) for k in keep] for t in opened.trials] == [
        [getattr(t, k) for k in keep] for t in live.trials
    ]
    assert_the_five_plots_draw(opened)


def test_export_optuna_writes_a_file_optuna_s_own_storage_opens(runs, tmp_path, capsys):
    root, a, _ = runs
    out = tmp_path / "a.log"
    assert cli(["export-optuna", str(root / "a"), "--out", str(out)]) == 0
    assert capsys.readouterr().out == f"wrote {out}; open it with: optuna-dashboard {out}\n"
    best = a.best
    assert a.study.trials[best.trial_id].state is TrialState.COMPLETE  # the best trained to the end
    for _ in range(2):  # exported again: the file is replaced, not added to
        storage = optuna.storages.JournalStorage(
            optuna.storages.journal.JournalFileBackend(str(out))
        )
        back = optuna.load_study(study_name=None, storage=storage)
        assert len(back.trials) == len(a.results())
        assert back.best_value == best.metric and back.best_trial.number == best.trial_id
        assert cli(["export-optuna", str(root / "a"), "--out", str(out)]) == 0


def test_export_optuna_writes_beside_the_journal_by_default(runs):
    root, _, b = runs
    assert cli(["export-optuna", str(root / "b")]) == 0
    storage = optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(str(root / "b" / "optuna.log"))
    )
    assert len(optuna.load_study(study_name=None, storage=storage).trials) == len(b.results())


def test_export_optuna_of_a_folder_with_no_search_says_so(tmp_path, capsys):
    assert cli(["export-optuna", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("export-optuna: no journal at ") and err.count("\n") == 1


def test_searches_side_by_side(runs):
    root, a, b = runs
    table = hypersched_nb.compare([root / "a", b])  # a folder and an Experiment alike
    assert list(table.index) == ["a", "b"]
    assert list(table.policy) == ["asha", "hypersched"] and set(table.workers) == {2}
    assert list(table.trials) == [len(a.results()), len(b.results())]
    assert list(table.best) == [a.best.metric, b.best.metric]
    for name, exp in (("a", a), ("b", b)):
        row, snap = table.loc[name], exp.statistics()
        assert 0 < row.found_at <= snap.time  # when the best came in
        assert 0 < row.worker_seconds <= row.cluster_seconds <= 2 * snap.time
        assert row.deadline == snap.deadline and row.status == "finished"
    fig = hypersched_nb.compare_plot([root / "a", root / "b"])
    # one line per search, stepping down to its best
    assert [s.name for s in fig.data] == ["a", "b"]
    assert [s.y[-1] for s in fig.data] == [a.best.metric, b.best.metric]
    assert all(list(s.y) == sorted(s.y, reverse=True) for s in fig.data)  # min: only falls


def test_the_searches_of_a_runs_folder_newest_first(runs):
    root, a, b = runs
    (root / "not-a-search").mkdir()
    listed = hypersched_nb.searches(root)
    assert list(listed.path) == [str(root / "b"), str(root / "a")]  # b started last
    assert list(listed.status) == ["finished", "finished"]
    assert list(listed.policy) == ["hypersched", "asha"]
    assert list(listed.best) == [b.best.metric, a.best.metric]
    assert listed.trainable[0] == "hypersched_nb.testing.trainables:TinyRegression"


def test_the_compare_magic_shows_the_table_and_the_figure(runs, monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell

    root, _, _ = runs
    shown = []
    monkeypatch.setattr("IPython.display.display", shown.append)
    shell = InteractiveShell.instance()
    hypersched_nb.load_ipython_extension(shell)
    shell.run_line_magic("hypersched", f"compare {root / 'a'} {root / 'b'}")
    table, fig = shown
    assert list(table.index) == ["a", "b"] and len(fig.data) == 2


def test_a_running_search_s_study_is_one_consistent_moment(tmp_path):
    configs = [{"lr": 0.004 * (i + 1), "sleep": 0.6} for i in range(6)]
    exp = Experiment(TinyRegression, configs, metric="loss", mode="min", deadline="150s",
                     max_epochs=8, policy="asha", eta=2, cluster=2, seed=0,
                     checkpoint_dir=str(tmp_path))  # fmt: skip
    exp.start()
    try:
        end = time.monotonic() + 120
        while not any(r.state == "RUNNING" and r.metrics for r in exp.statistics().trials):
            assert time.monotonic() < end, "no trial reported an epoch in 120 s"
            time.sleep(0.2)
        before = len(exp.results())
        study = exp.study
        after = len(exp.results())
        assert before <= len(study.trials) <= after  # one moment between the two
        running = [t for t in study.trials if t.state is TrialState.RUNNING]
        assert running  # mid-run: a trial trains
        for t in study.trials:  # and none half written
            assert t.state.name == OPTUNA_STATE[t.user_attrs["state"]] or (
                t.state is TrialState.COMPLETE and t.user_attrs["state"] == "TERMINATED"
            )
            assert len(t.intermediate_values) == t.user_attrs["epochs"]
            assert (t.datetime_complete is None) == (not t.state.is_finished())
        assert_the_five_plots_draw(study)
    finally:
        exp.stop()
    # stopped: every trial that ran is over, the one seen training with its epochs kept
    after = exp.study.trials
    assert not any(t.state is TrialState.RUNNING for t in after)
    for t in running:
        kept = after[t.number].intermediate_values
        assert all(kept[k] == v for k, v in t.intermediate_values.items())
