"""The demo's command line: its one progress line, its errors, and (on a cluster) a whole run."""

import io

import pytest

from hypersched_nb.demo import _Progress, main


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
