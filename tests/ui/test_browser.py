"""The dashboard's controls in a real browser: JupyterLab, headless Chromium, the quick start.

While the quick start's ``exp.wait()`` blocks the kernel, the forecast panel draws its band
once the first results are in, a slider move and a stop click act promptly (as the kernel
itself records them), the dashboard's header says "stopped by you at …", and the page logs no
error.
Screenshots go to ``tests/ui/artifacts/``.
"""

import json
import time
from pathlib import Path

import nbformat
import pytest

from hypersched_nb.testing.lab import PROMPTLY, Lab, browser_missing, wait_for_file

QUICKSTART = Path(__file__).parents[2] / "notebooks" / "01-quickstart.ipynb"
ARTIFACTS = Path(__file__).parent / "artifacts"

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(browser_missing() is not None, reason=str(browser_missing())),
]


def quickstart_watched(folder: Path) -> tuple[int, int, int]:
    """The quick start, with a cell before ``exp.wait()`` that starts watching the search
    and one after it that notes when the wait ended: (the index of the cell that shows the
    dashboard, the index of the watching cell, the number of cells)."""
    nb = nbformat.read(QUICKSTART, as_version=4)
    # the server's own environment: `make` registers the kernel the notebook names
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    for cell in nb.cells:  # as if never run
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    wait = next(
        i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.source == "exp.wait()"
    )
    nb.cells.insert(wait, nbformat.v4.new_code_cell(
        'from hypersched_nb.testing.lab import watch_search\n\nwatch_search(exp, "marks.json");'
    ))  # fmt: skip
    nb.cells.insert(wait + 2, nbformat.v4.new_code_cell(
        'import json\nimport time\n\nopen("waited.json", "w").write(json.dumps(time.time()));'
    ))  # fmt: skip
    nbformat.write(nb, folder / "quickstart.ipynb")
    shown = next(i for i, c in enumerate(nb.cells) if "exp.dashboard()" in c.source)
    return shown, wait, len(nb.cells)


def test_the_slider_and_the_stop_button_act_while_exp_wait_blocks_the_kernel(tmp_path):
    from playwright.sync_api import expect

    shown, watch, cells = quickstart_watched(tmp_path)
    with Lab(tmp_path, artifacts=ARTIFACTS) as lab:
        lab.open("quickstart.ipynb")
        lab.run_all()
        lab.wait_ran(watch)  # the next cell, exp.wait(), holds the kernel from here
        dashboard = lab.page.locator(".widget-vbox").first
        header = dashboard.locator(".widget-html").first
        expect(header).to_contain_text("running", timeout=30_000)
        expect(dashboard).to_contain_text("drawn from the search", timeout=60_000)  # a forecast
        assert dashboard.locator(".js-plotly-plot").count() == 3  # its band, beside the two
        time.sleep(1.0)
        lab.screenshot("quickstart-1-waiting", showing=dashboard)
        moved = lab.drag(dashboard.locator(".widget-slider .noUi-handle").first, 60)
        time.sleep(2.0)
        lab.watch_for("stopped by you at")
        stopped = lab.click(dashboard.locator(".widget-button", has_text="stop").first)
        lab.said("stopped by you at", timeout=30)
        # the cell, not the widget view: the final picture may already have replaced it
        lab.screenshot("quickstart-2-stopped", showing=lab.cell(shown))
        wait_for_file(tmp_path / "marks.json", timeout=30)
        lab.wait_ran(cells - 1)
        lab.screenshot("quickstart-3-end", showing=lab.cell(cells - 1))
        outputs = "\n".join(lab.page.locator(".jp-OutputArea-output").all_inner_texts())
        errors = list(lab.errors)

    waited_until = json.loads((tmp_path / "waited.json").read_text())
    assert waited_until > stopped > moved  # both while exp.wait() held the kernel
    notes = json.loads((tmp_path / "marks.json").read_text())
    first = notes[0]
    assert first["status"] == "running"
    moved_to = next(n for n in notes if n["deadline"] != first["deadline"])
    assert moved_to["deadline"] > first["deadline"]  # dragged to the right: later
    assert moved_to["time"] - moved <= PROMPTLY, (
        f"moved {moved_to['time'] - moved:.2f} s after the drag"
    )
    finished = next(n for n in notes if n["status"] == "finished")
    assert finished["time"] - stopped <= PROMPTLY, (
        f"over {finished['time'] - stopped:.2f} s after the click"
    )
    assert errors == []
    assert "CancelledError" not in outputs  # distributed's word on the tasks stopped on purpose
