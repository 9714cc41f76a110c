"""The HTML report: one file that opens anywhere, without a kernel or a network."""

import json
import re

from hypersched_nb.notebook.report import packed_plotly_js, unpack, write_report


def test_the_report_is_self_contained(finished, tmp_path):
    snap = finished.statistics()
    path = write_report(snap, tmp_path / "out" / "report.html")
    page = path.read_text()
    assert "<script src=" not in page and "cdn." not in page  # nothing fetched
    assert "Workers per trial against the deadline" in page
    assert f"acc = {snap.best.metric:.6g}" in page  # the best metric and its configuration
    figures = re.findall(
        r'<script type="application/json" class="figure"[^>]*>(.*?)</script>', page
    )
    assert len(figures) == 2 and "Plotly.newPlot" in page  # drawn by the page's own loader
    assert all(json.loads(f)["data"] for f in figures)  # the allocation plot, the curves
    tables = re.findall(
        r'<script type="application/gzip" class="packed-html"[^>]*>(.*?)</script>', page
    )
    rows = sum(unpack(t).count("<tr>") for t in tables)
    assert rows >= len(snap.trials) + len(snap.events)  # every trial and every decision


def test_the_report_carries_plotly_js_itself_packed(finished, tmp_path):
    from plotly.offline import get_plotlyjs

    page = write_report(finished.statistics(), tmp_path / "report.html").read_text()
    (packed,) = re.findall(r'<script id="plotly-js" type="application/gzip">(.*?)</script>', page)
    assert packed == packed_plotly_js() and unpack(packed) == get_plotlyjs()
    assert len(packed) < len(get_plotlyjs()) / 2  # what keeps a report small


def test_the_report_draws_in_a_browser(finished, tmp_path):
    """The page's loader unpacks the tables and plotly.js and draws both figures, with no
    error (Debian's chromium, headless; skipped where there is none)."""
    import importlib.util

    import pytest

    from hypersched_nb.testing.lab import find_chromium

    if importlib.util.find_spec("playwright") is None or find_chromium() is None:
        pytest.skip("needs playwright and a chromium binary (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    snap = finished.statistics()
    path = write_report(snap, tmp_path / "report.html")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=find_chromium(), headless=True)
        try:
            page = browser.new_page()
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(path.as_uri())
            page.wait_for_selector("#curves .main-svg", timeout=30_000)
            assert page.locator("#allocation .main-svg").count() >= 1
            assert page.locator("#decisions tr").count() == len(snap.events) + 1
            assert page.locator(".unpacked").count() == 0 and errors == []
        finally:
            browser.close()


def test_the_report_keeps_the_last_forecast_beside_what_happened(tmp_path):
    from hypersched_nb.testing.halt import halted_replay
    from tests.notebook.conftest import small_trace

    exp, halt = halted_replay(small_trace(), at=40, deadline=120, workers=3)
    exp.start()
    assert halt.wait()
    exp.forecast(["+1m", 120], [3, 6], runs=4)  # made at 40 s, for the deadline at 120 s
    made = exp.last_forecast.made
    halt.release()
    exp.wait()
    snap = exp.statistics()
    page = write_report(snap, tmp_path / "report.html").read_text()
    assert "Last forecast, beside what really happened" in page
    assert f"made {made:%Y-%m-%d %H:%M:%S}, the search at 40 s with deadline 120 s" in page
    assert f"best acc {snap.best.metric:.4g} by {snap.time:.0f} s; deadline 120 s" in page
    (table,) = re.findall(r"<table class='forecast'>(.*?)</table>", page)
    assert table.count("<tr") == 1 + 4  # a row per (deadline, workers) asked
    (real,) = re.findall(r"<tr class='real'>(.*?)(?=<tr|$)", table)  # the deadline and size it had
    assert real.startswith("<td>120<td>3<td>") and real.endswith(("<td>yes", "<td>no"))


def test_a_report_without_a_forecast_has_no_forecast_section(finished, tmp_path):
    page = write_report(finished.statistics(), tmp_path / "report.html").read_text()
    assert "Last forecast" not in page


def test_the_report_is_readable_by_its_owner_only(finished, tmp_path):
    import stat

    old = tmp_path / "report.html"
    old.write_text("an older report")
    old.chmod(0o644)
    path = write_report(finished.statistics(), old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # as the journal and the checkpoints
    assert "an older report" not in path.read_text()


def test_the_report_says_what_happened_in_the_words_of_the_dashboard(finished, tmp_path):
    page = write_report(finished.statistics(), tmp_path / "r.html").read_text()
    assert f"asha search, {finished.statistics().status_text()}" in page


def test_a_report_made_while_the_search_runs_is_dated_and_never_says_it_runs_now(tmp_path):
    from hypersched_nb.testing.halt import halted_replay
    from tests.notebook.conftest import small_trace

    exp, halt = halted_replay(small_trace(), at=40, deadline=120, workers=3)
    exp.start()
    assert halt.wait()
    page = write_report(exp.statistics(), tmp_path / "r.html").read_text()
    halt.release()
    exp.wait()
    assert "asha search, as it stood at 40s: running, 1m 20s before its deadline 120s" in page
    assert "(in " not in page
