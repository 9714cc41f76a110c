"""The demo's command line: its one progress line, its errors, and (on a cluster) a whole run."""

import io

import pytest

from hypersched_nb.demo import _Progress, main, search_space


@pytest.fixture(autouse=True)
def _demo_environment(monkeypatch):
    """The demo quiets Dask through the environment, as a program may: here it is undone after
    each test, or every later cluster of the test run would log nothing below ERROR."""
    monkeypatch.setenv("DASK_LOGGING__DISTRIBUTED", "error")


class Tty(io.StringIO):
    def isatty(self):
        return True


def test_on_a_terminal_progress_rewrites_one_line():
    out = Tty()
    p = _Progress(out, every=10)
    p.show("10s left")
    p.show("9s left")
    p.end()
    assert out.getvalue().startswith("\r10s left\x1b[K\r9s left\x1b[K")
    assert out.getvalue().endswith("\n") and out.getvalue().count("\n") == 1


def test_elsewhere_progress_prints_a_plain_line_now_and_then():
    out = io.StringIO()
    p = _Progress(out, every=3600)
    p.show("first", force=True)
    p.show("too soon")  # within `every` seconds: skipped
    p.show("last", force=True)
    p.show("last", force=True)  # the same line twice is printed once
    assert out.getvalue() == "first\nlast\n"


def test_bad_options_fail_before_any_cluster_starts(capsys):
    assert main(["--deadline", "soon"]) == 2
    assert capsys.readouterr().err.startswith("hypersched_nb demo: `deadline` is 'soon'")


@pytest.fixture
def never_started(monkeypatch):
    """The search the demo builds may not start (a bad option is said before)."""
    from hypersched_nb.experiment.experiment import Experiment

    def start(self):
        raise AssertionError("the search started")

    monkeypatch.setattr(Experiment, "start", start)


@pytest.mark.parametrize(
    "argv, message",
    [(["--seed", "-1"], "`seed` is -1, but must be an integer from 0 to 2**32 - 1"),
     (["--eta", "inf"], "`eta` is inf, but must be a finite number > 1"),
     (["--deadline=-5m"], "`deadline` is '-5m', which is before the search starts"),
     (["--address", ""], "`cluster` is '', but must be a scheduler address"),
     (["--address", "nohost"], "`cluster` is 'nohost', which is not an address"),
     (["--every", "-1"], "`--every` is -1.0, but must be a number of seconds >= 0"),
     (["--every", "nan"], "`--every` is nan, but must be a number of seconds >= 0"),
     (["--report", ""], "`--report` is '', but must be the path of an HTML file (like report.html)")],
)  # fmt: skip
def test_each_bad_option_is_one_line_before_the_search_starts(never_started, capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"hypersched_nb demo: {message}") and err.count("\n") == 1


def test_mnist1d_cosine_anneals_over_the_searchs_epoch_budget():
    from hypersched_nb.train.examples import MNIST1DCosine
    from hypersched_nb.train.trainable import TrainContext

    model, space = search_space("mnist1d-cosine", 6)
    assert model is MNIST1DCosine and space["budget_epochs"] == 6  # the schedule ends with R
    assert space["warmup_epochs"].high == 5  # a warm-up always shorter than the budget
    model().setup({"warmup_epochs": 5, "budget_epochs": 6}, TrainContext())  # a valid config
    assert search_space("mnist1d-cosine", 30)[1]["warmup_epochs"].high == 8
    assert "budget_epochs" not in search_space("mnist1d", 30)[1]


def test_digits_mlp_is_the_perceptron_with_its_own_space():
    from hypersched_nb.train.examples import DigitsMLP

    model, space = search_space("digits-mlp", 30)
    assert model is DigitsMLP and set(space) == set(DigitsMLP.space())


def test_an_epoch_budget_below_one_is_still_the_searchs_one_line(never_started, capsys):
    assert main(["--model", "mnist1d-cosine", "--max-epochs", "0"]) == 2
    assert capsys.readouterr().err.startswith("hypersched_nb demo: `max_epochs` is 0")


def test_a_report_path_that_is_a_folder_is_refused_before_the_search(
    never_started, tmp_path, capsys
):
    assert main(["--report", str(tmp_path)]) == 2
    assert "`--report` is " in capsys.readouterr().err  # not after the search, when writing it


def test_workers_and_address_together_are_refused(never_started, capsys):
    with pytest.raises(SystemExit):
        main(["--workers", "2", "--address", "tcp://127.0.0.1:1"])
    assert "argument --address: not allowed with argument --workers" in capsys.readouterr().err


def test_a_scheduler_that_does_not_answer_is_one_line(monkeypatch, capsys):
    from hypersched_nb.errors import ConfigError
    from hypersched_nb.experiment.experiment import Experiment

    def start(self):
        raise ConfigError("no Dask scheduler answers at tcp://127.0.0.1:1 (Connection refused)")

    monkeypatch.setattr(Experiment, "start", start)
    assert main(["--address", "tcp://127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert (
        err
        == "hypersched_nb demo: no Dask scheduler answers at tcp://127.0.0.1:1 (Connection refused)\n"
    )


@pytest.mark.cluster
def test_the_demo_searches_and_writes_its_report(tmp_path, capsys):
    report = tmp_path / "report.html"
    assert main(
        ["--deadline", "40s", "--workers", "2", "--max-epochs", "4", "--report", str(report)]
    ) in (0, 1)
    out = capsys.readouterr().out
    assert "on a local Dask cluster; deadline 40s" in out and f"report: {report}" in out
    assert report.stat().st_size > 1_000_000  # plotly.js is inside: it opens offline
    if "best val_acc" in out:  # and where the best model's weights are
        assert "its weights: " in out and "/best/trial-" in out
