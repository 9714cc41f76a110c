"""The HTML report: one file that opens anywhere, without a kernel or a network."""

from hypersched_nb.notebook.report import write_report


def test_the_report_is_self_contained(finished, tmp_path):
    snap = finished.statistics()
    path = write_report(snap, tmp_path / "out" / "report.html")
    page = path.read_text()
    assert "<script src=" not in page and "cdn" not in page.lower().split("plotly.js v")[0][-200:]
    assert page.count("Plotly.newPlot") == 2  # the allocation plot and the learning curves
    assert "Workers per trial against the deadline" in page
    assert f"acc = {snap.best.metric:.6g}" in page  # the best metric and its configuration
    assert page.count("<tr>") >= len(snap.trials) + len(snap.events)
