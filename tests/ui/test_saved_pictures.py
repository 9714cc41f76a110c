"""What a notebook keeps and says, in JupyterLab and headless Chromium.

A search whose dashboard is shown runs to its end; the notebook is saved and its kernel shut
down; reopened by the same server (trusted: the server signed it when it saved it) and by a
fresh one (untrusted, as a notebook from git is), it shows the picture and no "model not
found". A page reloaded while the search runs draws its figures as they stand; a page whose kernel is
killed (SIGKILL of its process group) stops saying "running · … left" and says, instead,
that it is not connected and where the search stood when it last heard. A click on
stop turns the header to "stopped by you", and a search that fails fast says "failed",
promptly (how promptly is ``benchmarks/ui_latency.py``'s to measure). Screenshots go to
``tests/ui/artifacts/``.
"""

import json
import os
import shutil
import signal
import time
from pathlib import Path

import nbformat
import pytest

from hypersched_nb.testing.lab import PROMPTLY, Lab, browser_missing, wait_for_file

ARTIFACTS = Path(__file__).parent / "artifacts"

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(browser_missing() is not None, reason=str(browser_missing())),
]

SEARCH = """import optuna
from hypersched_nb import Experiment
from hypersched_nb.testing.trainables import TinyRegression

space = {{"lr": optuna.distributions.FloatDistribution(0.01, 0.1),
          "sleep": optuna.distributions.CategoricalDistribution([0.3]), {extra}}}
exp = Experiment(TinyRegression, space, metric="loss", mode="min", deadline="{deadline}",
                 max_epochs=6, cluster=2, seed=0)
exp.start()
exp.dashboard()"""
WATCH = 'from hypersched_nb.testing.lab import watch_search\n\nwatch_search(exp, "marks.json");'


def notebook(folder: Path, name: str, cells: list[str]) -> str:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    # the server's own environment: the kernel the shipped notebooks name is registered by
    # `make`, not in a test's fresh server
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, folder / name)
    return name


PID = 'import os\n\nopen("kernel.pid", "w").write(str(os.getpid()))'  # a cell: who to kill


def kill_kernel(folder: Path) -> None:
    """SIGKILL of the process group of the kernel that ran :data:`PID` in ``folder``: the
    kernel and its cluster's workers."""
    kernel = int((folder / "kernel.pid").read_text())
    os.killpg(os.getpgid(kernel), signal.SIGKILL)


def marks(folder: Path, seconds: float = 60) -> list[dict]:
    wait_for_file(folder / "marks.json", timeout=seconds)
    return json.loads((folder / "marks.json").read_text())


def pictures(lab: Lab) -> int:
    return lab.page.locator(".jp-OutputArea-output img[src^='data:image/png']").count()


def save(lab: Lab) -> None:
    lab.page.keyboard.press("Control+s")
    time.sleep(2.0)


def test_a_finished_dashboard_saved_is_a_picture_reopened_trusted_or_not(tmp_path):
    from playwright.sync_api import expect

    name = notebook(tmp_path, "finished.ipynb", [SEARCH.format(extra="", deadline="25s"),
                                                 "exp.wait()"])  # fmt: skip
    with Lab(tmp_path, artifacts=ARTIFACTS) as lab:
        lab.open(name)
        lab.run_all()
        lab.wait_ran(1, timeout=180)
        expect(lab.cell(0).locator("img[src^='data:image/png']")).to_have_count(1, timeout=30_000)
        assert lab.cell(0).locator(".widget-vbox").count() == 0  # the widget view went
        lab.screenshot("saved-1-finished", showing=lab.cell(0))
        save(lab)
        lab.page.close()
        lab.page = lab._browser.new_page(viewport=lab.size)
        lab.open(name)  # the same server: trusted
        time.sleep(3.0)
        lab.screenshot("saved-2-reopened-trusted", showing=lab.cell(0))
        trusted_text = lab.page.locator(".jp-Notebook").inner_text()
        trusted_pictures = pictures(lab)
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    shutil.copy(tmp_path / name, fresh / name)
    with Lab(fresh, artifacts=ARTIFACTS) as lab:  # another server: untrusted
        lab.open(name)
        time.sleep(3.0)
        lab.screenshot("saved-3-reopened-untrusted", showing=lab.cell(0))
        untrusted_text = lab.page.locator(".jp-Notebook").inner_text()
        untrusted_pictures = pictures(lab)
    for text, count in ((trusted_text, trusted_pictures), (untrusted_text, untrusted_pictures)):
        assert "model not found" not in text and "Error displaying widget" not in text
        assert count == 1  # the dashboard's picture


def test_a_page_reloaded_while_the_search_runs_draws_its_figures_as_they_stand(tmp_path):
    name = notebook(tmp_path, "reload.ipynb", [SEARCH.format(extra="", deadline="40s")])
    traces = "() => document.querySelector('.js-plotly-plot').data.length"  # workers per trial
    with Lab(tmp_path, artifacts=ARTIFACTS) as lab:
        lab.open(name)
        lab.run_all()
        lab.wait_ran(0, timeout=120)
        lab.page.locator(".widget-html", has_text="running").first.wait_for(timeout=60_000)
        time.sleep(8.0)  # trials come and go: the figures change after they were first sent
        save(lab)
        before = lab.page.evaluate(traces)
        lab.page.reload()
        lab.page.locator(".js-plotly-plot").first.wait_for(timeout=60_000)
        time.sleep(4.0)  # redraws of the reloaded figures
        after = lab.page.evaluate(traces)
        lab.screenshot("reload-1-reloaded", showing=lab.cell(0))
        errors = list(lab.errors)
    assert before > 2, f"only {before} traces before the reload: the search did not get going"
    assert after >= before, f"{after} traces after the reload, {before} before it"
    assert errors == [], f"the page logged: {errors}"


def test_a_page_whose_kernel_is_killed_says_where_the_search_stood_not_that_it_runs(tmp_path):
    from playwright.sync_api import expect

    name = notebook(tmp_path, "killed.ipynb", [SEARCH.format(extra="", deadline="3m"), PID])
    with Lab(tmp_path, artifacts=ARTIFACTS) as lab:
        lab.open(name)
        lab.run_all()
        lab.wait_ran(1, timeout=120)
        header = lab.cell(0).locator(".widget-html").first
        expect(header).to_contain_text(" left", timeout=60_000)
        time.sleep(3.0)
        kill_kernel(tmp_path)
        gone = header.locator(".hs-then")
        expect(gone).to_be_visible(timeout=60_000)  # once JupyterLab has heard it died
        said = header.inner_text()
        controls = lab.cell(0).locator(".widget-hbox.hs-now").first
        controls_shown = controls.is_visible()
        lab.screenshot("killed-1-not-connected", showing=lab.cell(0))
    assert "not connected to its kernel · as it stood at " in said
    assert ": running, " in said and "before its deadline" in said
    assert " left" not in said, f"the page still says the time left: {said!r}"
    assert not controls_shown, "the slider and the stop button still show without a kernel"


def test_widget_state_saved_while_the_search_ran_reopens_as_it_stood_figures_and_all(tmp_path):
    # JupyterLab's "Save Widget State Automatically": without it, a trusted notebook reopened
    # after its kernel died says "model not found" where the dashboard was (its widget
    # renderer does not fall back to the picture the output carries; an untrusted one shows it)
    from playwright.sync_api import expect

    name = notebook(tmp_path, "state.ipynb", [SEARCH.format(extra="", deadline="3m"), PID])
    save_state = {"@jupyter-widgets/jupyterlab-manager/plugin": {"saveState": True}}
    with Lab(tmp_path, artifacts=ARTIFACTS, settings=save_state) as lab:
        lab.open(name)
        lab.run_all()
        lab.wait_ran(1, timeout=120)
        expect(lab.cell(0).locator(".widget-html").first).to_contain_text(" left", timeout=60_000)
        time.sleep(4.0)  # a few results in the figures
        save(lab)
        kill_kernel(tmp_path)
        lab.page.close()
        lab.page = lab._browser.new_page(viewport=lab.size)
        lab.open(name)  # the same server: trusted, a fresh kernel
        header = lab.cell(0).locator(".widget-html").first
        expect(header).to_contain_text(
            "not connected to its kernel · as it stood at ", timeout=60_000
        )
        plots = lab.cell(0).locator(".js-plotly-plot")
        expect(plots).to_have_count(3, timeout=60_000)  # the forecast's, workers, curves
        figures = [plots.nth(1), plots.nth(2)]  # (the forecast's shows once one was made)
        for figure in figures:
            expect(figure).to_be_visible(timeout=30_000)
        time.sleep(2.0)  # drawn
        widths = [figure.bounding_box()["width"] for figure in figures]
        lab.screenshot("state-1-reopened", showing=figures[0])
        said = header.inner_text()
    assert " left" not in said, f"the reopened page says the time left: {said!r}"
    assert min(widths) > 400, f"figures drawn {widths} px wide"


def test_a_click_on_stop_is_heard_and_the_page_says_stopped(tmp_path):
    name = notebook(tmp_path, "stop.ipynb", [SEARCH.format(extra="", deadline="3m"), WATCH,
                                             "exp.wait()"])  # fmt: skip
    with Lab(tmp_path, artifacts=ARTIFACTS) as lab:
        lab.open(name)
        lab.watch_for("stopped by you at")
        lab.run_all()
        lab.wait_ran(1, timeout=120)
        dashboard = lab.page.locator(".widget-vbox").first
        dashboard.locator(".widget-html", has_text="running").first.wait_for(timeout=60_000)
        time.sleep(3.0)
        clicked = lab.click(dashboard.locator(".widget-button", has_text="stop").first)
        said = lab.said("stopped by you at", timeout=30)
        # the cell, not the widget view: the final picture may already have replaced it
        lab.screenshot("stop-1-stopped", showing=lab.cell(0))
        lab.wait_ran(2, timeout=120)
        errors = list(lab.errors)
    # the first status after "running": "stopping", or "finished" where stopping lasted
    # less than the watcher's 20 ms poll (a warm cluster is not closed)
    heard = next(m for m in marks(tmp_path) if m["status"] not in ("created", "running"))
    assert heard["status"] in ("stopping", "finished"), f"after running: {heard['status']!r}"
    kernel, page = heard["time"] - clicked, said - clicked
    assert kernel <= PROMPTLY, f"the kernel heard the click {kernel:.2f} s after it"
    assert page <= PROMPTLY, f"the page said 'stopped by you' {page:.2f} s after the click"
    assert errors == [], f"the page logged: {errors}"


def test_a_search_that_fails_fast_says_failed_and_turns_its_stop_off(tmp_path):
    bad = '"returns": optuna.distributions.CategoricalDistribution(["not a dict"]),'
    name = notebook(tmp_path, "fail.ipynb", [SEARCH.format(extra=bad, deadline="3m"), WATCH])
    # the header's words: a failed trial's row in the events table says "failed: " before
    # the search itself fails (fail_fast waits for three), and the controls rightly stay on
    header = "hypersched failed: "
    with Lab(tmp_path, artifacts=ARTIFACTS) as lab:
        lab.open(name)
        lab.watch_for(header)
        lab.run_all()
        lab.wait_ran(1, timeout=120)
        said = lab.said(header, timeout=120)
        lab.screenshot("fail-1-failed", showing=lab.cell(0))
        # one query: the final picture may replace the buttons between two
        stop_off = lab.page.locator(".widget-button:enabled", has_text="stop").count() == 0
    # the notes are written once the search is over, which a loaded machine can delay
    knew = next(m for m in marks(tmp_path, 240) if m["status"] in ("failing", "failed"))
    late = said - knew["time"]
    assert late <= PROMPTLY, f"the page said 'failed' {late:.2f} s after the kernel knew"
    assert stop_off, "the stop button is still on after the search failed"
