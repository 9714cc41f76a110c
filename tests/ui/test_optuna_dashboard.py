"""A live search exported with ``export-optuna`` opens in optuna-dashboard (headless
Chromium): the page shows as many trials as the search had, and its best value. The
screenshot goes to the temporary folder (``hypersched-optuna-dashboard.png``)."""

import importlib.util
import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState

from hypersched_nb import Experiment
from hypersched_nb.__main__ import main as cli
from hypersched_nb.testing.lab import browser_missing, find_chromium
from hypersched_nb.testing.trainables import TinyRegression


def _missing() -> str | None:
    if importlib.util.find_spec("optuna_dashboard") is None:
        return "optuna-dashboard is not installed (pip install -e '.[test]')"
    return browser_missing()


pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(_missing() is not None, reason=str(_missing())),
]
SCREENSHOT = Path(tempfile.gettempdir()) / "hypersched-optuna-dashboard.png"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(file: Path, log: Path) -> tuple[subprocess.Popen, str]:
    """optuna-dashboard on ``file``, once it answers: (its process, its URL)."""
    port = free_port()
    exe = Path(sys.executable).parent / "optuna-dashboard"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(exe), str(file), "--host", "127.0.0.1", "--port", str(port)],
            stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    end = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{url}/api/studies", timeout=5).close()
            return proc, url
        except OSError:
            if proc.poll() is not None or time.monotonic() > end:
                proc.kill()
                raise AssertionError(
                    f"optuna-dashboard did not answer: {log.read_text()}"
                ) from None
            time.sleep(0.3)


def test_an_exported_search_opens_in_optuna_dashboard_with_its_trials_and_best(tmp_path):
    from playwright.sync_api import expect, sync_playwright

    exp = Experiment(TinyRegression, {"lr": FloatDistribution(0.002, 0.05, log=True), "sleep": 0.2},
                     metric="loss", mode="min", deadline="150s", max_epochs=6, eta=2,
                     policy="asha", configs=8, cluster=2, sampler="random", seed=1,
                     checkpoint_dir=str(tmp_path / "search"))  # fmt: skip
    exp.run()
    best, trials = exp.best, len(exp.results())
    assert (
        exp.study.trials[best.trial_id].state is TrialState.COMPLETE
    )  # the best trained to the end
    out = tmp_path / "optuna.log"
    assert cli(["export-optuna", str(tmp_path / "search"), "--out", str(out)]) == 0

    proc, url = serve(out, tmp_path / "dashboard.log")
    try:
        with urllib.request.urlopen(f"{url}/api/studies", timeout=10) as answer:
            (study,) = json.load(answer)["study_summaries"]
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=find_chromium(), headless=True)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{url}/dashboard/studies/{study['study_id']}/trials")
            # the trial list counts every trial of the search
            expect(page.get_by_text(f"{trials} Trials", exact=True)).to_be_visible(timeout=30_000)
            page.goto(f"{url}/dashboard/studies/{study['study_id']}")
            # the best trial is the search's, with its value
            card = page.get_by_text(f"Best Trial (number={best.trial_id})", exact=True)
            expect(card).to_be_visible(timeout=30_000)
            expect(page.get_by_text(repr(best.metric), exact=True)).to_be_visible()
            page.screenshot(path=str(SCREENSHOT), full_page=True)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
