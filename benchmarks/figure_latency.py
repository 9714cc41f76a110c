"""How soon a box of plotly figures is on the page: plotly's own ``FigureWidget`` against
the dashboard's (:mod:`hypersched_nb.notebook._plotly_widget`).

    python benchmarks/figure_latency.py [--repeats 3] [--throttle 1] [--artifacts DIR]

JupyterLab on 127.0.0.1 and headless Chromium, as in ``tests/ui`` (needs
``apt-get install chromium``). One notebook, one page: each cell waits for the browser's
word, then shows a box of 1, 2 or 5 figures, of each kind in turn, ``--repeats`` times;
the time is from the word to the box on the page. plotly's ``FigureWidget`` sends its 5 MB
script (plotly.js and the widget's code) with every figure, and the page evaluates it for
each; the dashboard's sends it once per kernel, and the page evaluates it once. Each figure
is changed ten times from a thread while the page loads it, and must end as the kernel left
it (anywidget holds a model's messages until the model is ready). ``--throttle`` slows
Chromium's CPU that many times (a slower machine). Prints, per count, the median and the
maximum of each kind and their ratio, and how many boxes did not end as the kernel left
them (target: 0).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import nbformat

from hypersched_nb.testing.lab import Lab, browser_missing

FIGURE_KINDS = {"plotly's FigureWidget": "go.FigureWidget", "the dashboard's": "figure_widget"}
FIGURES_SETUP = """\
import threading
import time

import ipywidgets as w
import plotly.graph_objects as go

from hypersched_nb.notebook._plotly_widget import figure_widget
from hypersched_nb.testing.lab import wait_for_file


def moved(figures):
    \"\"\"Move each figure's one point from 0 to 10, 0.1 s apart, from a thread.\"\"\"
    def move():
        for y in range(1, 11):
            time.sleep(0.1)
            for figure in figures:
                figure.data[0].y = [y]
    threading.Thread(target=move, daemon=True).start()
    return figures"""
# every figure in an output holds y = [10], where the kernel left it
MOVED = "(out) => [...out.querySelectorAll('.js-plotly-plot')].every(g => g.data[0].y[0] === 10)"


def figure_views(
    repeats: int, artifacts: Path, *, throttle: float = 1.0, counts: tuple[int, ...] = (1, 2, 5)
) -> None:
    """Seconds from a cell's start to its box of figures on the page, by kind and count; the
    figures change from a thread while the page loads them, and each must end as the kernel
    left it. ``throttle``: Chromium's CPU slowed that many times (a slower machine)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import expect

    jobs = [(kind, k) for _ in range(repeats) for k in counts for kind in FIGURE_KINDS]
    cells = [FIGURES_SETUP]
    for i, (kind, k) in enumerate(jobs):  # the words are split: the cell's source is on the page
        figures = ", ".join([f"{FIGURE_KINDS[kind]}({{'data': [{{'y': [0]}}]}})"] * k)
        cells.append(
            f'wait_for_file("go-{i}")\nw.VBox([w.HTML("shown" + "-{i}"), *moved([{figures}])])'
        )
    took: dict[tuple[str, int], list[float]] = {}
    stale = 0  # boxes whose figures did not end as the kernel left them
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
        nbformat.write(nb, folder / "figures.ipynb")
        with Lab(folder, artifacts=artifacts) as lab:
            lab.open("figures.ipynb")
            if throttle > 1:
                cdp = lab.page.context.new_cdp_session(lab.page)
                cdp.send("Emulation.setCPUThrottlingRate", {"rate": throttle})
            lab.run_all()
            for i, job in enumerate(jobs, start=1):
                lab.wait_ran(i - 1, timeout=180)
                time.sleep(1.0)  # the page at rest
                output = lab.cell(i).locator(".jp-OutputArea")
                lab.watch_for(f"shown-{i - 1}", within=output)
                go = time.time()
                (folder / f"go-{i - 1}").touch()
                took.setdefault(job, []).append(lab.said(f"shown-{i - 1}", timeout=300) - go)
                expect(output.locator(".js-plotly-plot")).to_have_count(job[1], timeout=60_000)
                try:
                    lab.page.wait_for_function(MOVED, arg=output.element_handle(), timeout=30_000)
                except PlaywrightTimeout:
                    stale += 1
            errors = list(lab.errors)
    slower = f", Chromium's CPU slowed {throttle:g} times" if throttle > 1 else ""
    print(f"a box of figures on the page after its cell began, {repeats} times each{slower}:")
    for k in counts:
        times = [took[kind, k] for kind in FIGURE_KINDS]  # plotly's, then the dashboard's
        cols = [f"{kind} median {statistics.median(t):.2f} s, max {max(t):.2f} s"
                for kind, t in zip(FIGURE_KINDS, times, strict=True)]  # fmt: skip
        ratio = statistics.median(times[1]) / statistics.median(times[0])
        print(f"  {k} figure(s): " + "   ".join(cols) + f"   ratio {ratio:.2f}")
    print(f"boxes whose figures did not end as the kernel left them: {stale} of {len(jobs)}")
    print(f"page and console errors: {len(errors)}", *errors, sep="\n  ")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--throttle", type=float, default=1.0, help="slow Chromium's CPU")
    parser.add_argument("--artifacts", type=Path, default=Path("tests/ui/artifacts"))
    args = parser.parse_args()
    missing = browser_missing()
    if missing is not None:
        raise SystemExit(f"no browser: {missing}")
    figure_views(args.repeats, args.artifacts, throttle=args.throttle)


if __name__ == "__main__":
    main()
