"""The dashboard's forecast panel: a band of the expected best against the deadline, with the
deadline marked; what more workers would give; its own thread, which never holds the
dashboard while it simulates."""

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from hypersched_nb.notebook.dashboard import Dashboard
from hypersched_nb.notebook.forecast_panel import NO_PRIOR, ForecastPanel, cluster_sizes
from hypersched_nb.testing.halt import halted_replay
from tests.notebook.conftest import small_trace


@pytest.fixture
def halted():
    """A search held still at 40 s of its 120 s (3 workers), released and over after the test."""
    exp, halt = halted_replay(small_trace(), at=40, deadline=120, workers=3)
    exp.start()
    assert halt.wait()
    yield exp
    halt.release()
    exp.wait()


@pytest.fixture
def unreported():
    """A search held still at 5 s, before its first result (epochs take 10 s)."""
    exp, halt = halted_replay(small_trace(), at=5, deadline=120, workers=3)
    exp.start()
    assert halt.wait()
    yield exp
    halt.release()
    exp.wait()


class SlowForecasts:
    """The search, as the dashboard sees it, whose forecasts wait (once in, holding nothing
    of the dashboard's) until the test lets them go on."""

    def __init__(self, exp):
        self.exp = exp
        self.entered, self.go_on = threading.Event(), threading.Event()

    def statistics(self):
        return self.exp.statistics()

    @property
    def deadline(self):
        return self.exp.deadline

    @deadline.setter
    def deadline(self, spec):
        self.exp.deadline = spec

    def forecast(self, *args, **kw):
        self.entered.set()
        assert self.go_on.wait(60)
        return self.exp.forecast(*args, **kw)


def marker(panel: ForecastPanel) -> float:
    (line,) = [s for s in panel.figure.layout.shapes if s.yref == "paper"]
    assert line.x0 == line.x1
    return line.x0


def test_the_band_marks_the_deadline_and_the_marker_follows_the_slider(halted):
    dash = Dashboard(halted, forecast_every=30)
    band = dash.forecast.update()  # what its thread does every 30 s
    assert band.workers == (3, 4, 6) == cluster_sizes(3)  # now, half as many more, twice
    assert band.deadlines == (40.0, 80.0, 120.0, 160.0, 200.0)  # now + 0.5-2 × the time left
    names = [t.name for t in dash.forecast.figure.data]
    assert names[1] == "10-90 %" and dash.forecast.figure.data[1].fill == "tonexty"
    assert "expected, 3 workers" in names and "6 workers" in names
    assert dash.forecast.plot.layout.display is None  # shown, now that there is a band
    assert marker(dash.forecast) == 120.0
    assert halted.last_forecast.forecast.outlooks[0].deadline == 80.0  # the search remembers it
    dash.slider.value = 3.0  # minutes
    assert halted.deadline == 180.0 and marker(dash.forecast) == 180.0
    points = band.at(180.0)  # read on the band, between 160 s and 200 s
    assert "by 180s on 3 workers" in dash.forecast.title.value
    assert f"<b>{points[0].expected:.4g}</b>" in dash.forecast.title.value
    assert "+3 workers would give" in dash.forecast.table.value
    assert "a new one is on its way" not in dash.forecast.title.value
    dash.slider.value = 5.0  # beyond the band: a new forecast is asked for at once
    assert marker(dash.forecast) == 300.0 and dash.forecast._wake.is_set()
    assert "beyond this forecast (up to 200s): a new one is on its way" in dash.forecast.title.value
    dash.close()  # and the panel's process


def test_a_slider_move_is_handled_while_a_forecast_runs(halted):
    slow = SlowForecasts(halted)
    dash = Dashboard(slow, forecast_every=30)
    dash.forecast.start()
    assert slow.entered.wait(30)  # the panel's thread is in the forecast now
    mover = threading.Thread(target=setattr, args=(dash.slider, "value", 2.5), daemon=True)
    mover.start()
    mover.join(30)
    assert not mover.is_alive()  # the slider did not wait for the forecast
    assert halted.deadline == 150.0 and marker(dash.forecast) == 150.0
    assert dash.forecast.band is None  # the forecast is still held
    slow.go_on.set()
    end = time.monotonic() + 60
    while dash.forecast.band is None and time.monotonic() < end:
        time.sleep(0.05)
    dash.close()
    dash.forecast.close(wait=True)  # its thread ends between two forecasts
    assert dash.forecast.band is not None and marker(dash.forecast) == 150.0
    assert "by 150s on 3 workers" in dash.forecast.title.value


def test_before_any_result_it_says_there_is_no_prior(unreported):
    panel = ForecastPanel(unreported)
    assert panel.update() is None
    assert NO_PRIOR in panel.title.value and panel.figure.data == ()
    assert panel.plot.layout.display == "none"  # no empty chart: the line says why
    assert unreported.last_forecast is None  # nothing was simulated
    # a promise of a forecast to come: a page that lost its kernel says none was made
    assert "<span class='hs-then'>none made</span>" in panel.title.value


def test_before_any_result_with_a_prior_it_says_it_is_drawn_from_it(unreported):
    panel = ForecastPanel(unreported, prior=small_trace())
    band = panel.update()
    assert band is not None and "drawn from the prior alone" in panel.title.value
    assert band.deadlines[0] == 62.5  # no best yet: the band starts at its first deadline
    panel.close()


def test_a_new_panel_shows_the_last_forecast_the_search_was_asked(halted):
    halted.forecast(["+1m"], [3, 6], runs=3)
    panel = ForecastPanel(halted)
    assert panel.band.deadlines[-1] == 180.0 and panel.band.workers == (3, 6)
    assert "made" in panel.title.value


def test_the_runs_are_simulated_in_a_process_of_its_own_and_say_the_same(halted):
    panel = ForecastPanel(halted, runs=4)
    try:
        band = panel.update()
        assert panel.separate and panel._pool is not None  # the spawned process forecast
    finally:
        panel.close()
    here = ForecastPanel(halted, runs=4, separate=False).update()
    assert (band.expected == here.expected).all() and (band.p90 == here.p90).all()


def test_an_interrupt_of_the_kernels_process_group_leaves_the_forecasts_process_running(halted):
    """JupyterLab's stop button (and a shutdown) sends SIGINT to the kernel's whole process
    group, the panel's process with it: the interrupt is the kernel's to act on, and the
    forecast stays out of the kernel's process."""
    panel = ForecastPanel(halted, runs=2)
    try:
        assert panel.update() is not None
        pid = panel._pool.submit(os.getpid).result()
        os.kill(pid, signal.SIGINT)
        assert panel.update() is not None and panel.separate
        assert panel._pool.submit(os.getpid).result() == pid
    finally:
        panel.close()


def test_a_search_the_process_cannot_load_is_forecast_on_the_panels_thread(monkeypatch):
    """A policy defined in the notebook (``__main__``) is not there in a spawned process."""
    import sys

    from hypersched_nb.core.policies import create

    policy = create("asha", max_epochs=6, min_epochs=1, eta=4, seed=0)
    mine = type("NotebookPolicy", (type(policy),), {"__module__": "__main__"})
    monkeypatch.setattr(sys.modules["__main__"], "NotebookPolicy", mine, raising=False)
    policy.__class__ = mine
    exp, halt = halted_replay(small_trace(), at=40, deadline=120, workers=3, policy=policy)
    exp.start()
    assert halt.wait()
    try:
        panel = ForecastPanel(exp, runs=2)
        assert panel.update() is not None and not panel.separate and panel._pool is None
    finally:
        halt.release()
        exp.wait()


@pytest.mark.parametrize("every", [0, -5.0, "30s", True])
def test_a_period_that_is_not_a_number_of_seconds_is_one_line_saying_so(finished, every):
    from hypersched_nb.errors import ConfigError

    with pytest.raises(
        ConfigError, match=r"^`forecast_every` is .*; give a period in seconds > 0$"
    ):
        Dashboard(finished, forecast_every=every)


def test_no_panel_where_the_forecast_is_turned_off(finished):
    dash = Dashboard(finished, forecast_every=None)
    assert dash.forecast is None
    with_panel = Dashboard(finished, forecast_every=30)
    assert len(with_panel.widget.children) == len(dash.widget.children) + 1


def test_a_slider_move_while_the_panel_draws_waits_for_nothing_and_is_drawn_after(halted):
    dash = Dashboard(halted, forecast_every=30)
    panel = dash.forecast
    panel.update()
    drawing, go_on = threading.Event(), threading.Event()
    write = panel._write

    def slow_write(*args):  # the panel's thread, in the middle of writing its widgets
        drawing.set()
        assert go_on.wait(30)
        write(*args)

    panel._write = slow_write
    drawer = threading.Thread(target=panel._draw, daemon=True)
    drawer.start()
    assert drawing.wait(30)
    panel._write = write  # only the drawing under way is slow
    mover = threading.Thread(target=setattr, args=(dash.slider, "value", 2.5), daemon=True)
    mover.start()
    mover.join(30)
    assert not mover.is_alive() and halted.deadline == 150.0  # it did not wait for the panel
    assert marker(panel) == 120.0  # not drawn yet: the panel holds its widgets
    go_on.set()
    drawer.join(30)
    assert marker(panel) == 150.0 and "by 150s" in panel.title.value  # drawn when it let go
    dash.close()


def test_pandas_is_loaded_when_a_dashboard_is_built_and_not_on_import():
    # a forecast is a DataFrame: imported half-way on the panel's thread, plotly on the
    # dashboard's thread would find pandas in sys.modules still being initialised
    code = (
        "import sys\n"
        "from hypersched_nb import Experiment\n"
        "from hypersched_nb.notebook.dashboard import Dashboard\n"
        "from hypersched_nb.testing.traces import synthetic_trace\n"
        "imported = 'pandas' in sys.modules\n"
        "exp = Experiment.replay(synthetic_trace(n=4, epochs=8), policy='asha', deadline=60,\n"
        "                        workers=2, configs=4, seed=0)\n"
        "Dashboard(exp)\n"
        "print(imported, 'pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_the_runs_are_counted_against_the_best_when_the_panel_shows_not_when_made(halted):
    panel = ForecastPanel(halted, every=60, separate=False)
    panel.update()
    made_with = panel.band.best
    assert f"beats {made_with:.4g} (the best now) in" in panel.table.value
    panel.follow(panel.deadline, best=made_with + 10.0)  # a best since found, out of reach
    assert f"beats {made_with + 10.0:.4g} (the best now) in" in panel.table.value
    assert panel.table.value.count(f"0 of {panel.band.runs} runs") == len(panel.band.workers)
    assert "%</td>" not in panel.table.value  # counts of runs, never "100 %"
