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
