"""The dashboard, figures and static fallback, rendered without a front end."""

import base64
import html
import re
import threading
import time

import numpy as np
import pytest

from hypersched_nb.experiment._fail_fast import SearchFailed
from hypersched_nb.experiment.snapshot import ExperimentSnapshot
from hypersched_nb.notebook import _front_end
from hypersched_nb.notebook.dashboard import Dashboard
from hypersched_nb.notebook.drawings import allocation_figure, curves_figure
from hypersched_nb.notebook.figures import colour
from hypersched_nb.notebook.static import PNG, picture, picture_figure, summary
from hypersched_nb.testing.halt import halted_replay
from tests.notebook.conftest import small_trace


def test_the_dashboard_shows_a_finished_search(finished):
    dash = Dashboard(finished)
    snap = finished.statistics()
    assert "<b>asha</b> finished" in dash.header.value
    assert snap.best_text() in dash.header.value
    alloc = {t.name for t in dash.allocation.data}
    held = {f"trial {r.trial_id}" for r in snap.trials if r.peak_workers}
    assert alloc == held | {"cluster"}  # one stacked trace per trial that held workers
    assert {t.name for t in dash.curves.data} == {
        f"trial {r.trial_id}" for r in snap.trials if r.metrics
    }
    assert dash.slider.disabled and dash.stop_button.disabled  # nothing left to change
    last = snap.events[-1]
    assert re.search(rf"<td>{last['time']:.1f}s</td>", dash.events.value)


def test_an_experiment_shows_its_own_dashboard(finished):
    dash = finished.dashboard(interval=0.5)  # from hypersched_nb import Experiment has it
    assert isinstance(dash, Dashboard) and dash.experiment is finished
    assert dash.interval == 0.5  # options go to the dashboard


def test_a_finished_search_is_displayed_as_its_picture_alone(finished):
    bundle = Dashboard(finished)._bundle(finished.statistics())
    assert set(bundle) == {PNG, "text/plain"}  # no widget view left to say "model not found"
    assert base64.b64decode(bundle[PNG]).startswith(b"\x89PNG")
    assert bundle["text/plain"].startswith(str(finished.statistics()))


def test_while_a_search_runs_the_display_carries_the_picture_beside_the_widgets(replay):
    bundle = Dashboard(replay)._bundle(replay.statistics())
    assert "application/vnd.jupyter.widget-view+json" in bundle  # the live widgets
    assert base64.b64decode(bundle[PNG]).startswith(b"\x89PNG")  # what is shown without them
    assert "text/html" not in bundle  # an untrusted notebook would prefer it to the PNG


class Displays:
    """What ``IPython.display.display`` was given, and every update of it (and when)."""

    def __init__(self, monkeypatch):
        import IPython.display

        self.shown, self.updates, self.updated_at = [], [], []
        monkeypatch.setattr(IPython.display, "display", self.display)

    def display(self, data, raw, display_id):
        self.shown.append(data)
        return self

    def update(self, data, raw):
        self.updates.append(data)
        self.updated_at.append(time.monotonic())


def show_views(dash: Dashboard, views: int = 1) -> None:
    """What a front end's messages do once it has shown ``views`` views of the dashboard."""
    dash.allocation._view_count = dash.curves._view_count = views


def test_the_widgets_show_at_once_and_their_fallback_picture_follows(monkeypatch):
    displays = Displays(monkeypatch)
    exp, halt = halted_replay(small_trace(), at=40, deadline=120, workers=3)
    exp.start()
    assert halt.wait()
    dash = Dashboard(exp, interval=0.02, forecast_every=None)
    dash._ipython_display_()
    assert PNG not in displays.shown[0]  # no drawing before the widgets show
    end = time.monotonic() + 60
    while not displays.updates and time.monotonic() < end:
        time.sleep(0.05)
    first = displays.updates[0]
    assert "application/vnd.jupyter.widget-view+json" in first and PNG in first
    halt.release()
    exp.wait()
    dash._thread.join(timeout=30)
    assert set(displays.updates[-1]) == {PNG, "text/plain"}  # then the picture alone
    assert len(displays.updates) == 2  # the view is drawn again twice, not at every refresh


def test_the_display_becomes_the_picture_when_the_search_ends(replay, monkeypatch):
    displays = Displays(monkeypatch)
    dash = Dashboard(replay, interval=0.02, forecast_every=None)
    dash._ipython_display_()
    replay.run()
    dash._thread.join(timeout=30)
    assert "application/vnd.jupyter.widget-view+json" in displays.shown[0]
    assert set(displays.updates[-1]) == {PNG, "text/plain"}
    # no view shows the widgets any more: closed, so no late update reaches the front end
    assert dash.header.comm is None and dash.allocation.comm is None


def test_the_display_changes_only_once_the_front_end_has_shown_the_view(replay, monkeypatch):
    # a search that ends within seconds of its display: the view it was sent, still being
    # built in the page, is not replaced under it
    displays = Displays(monkeypatch)
    monkeypatch.setattr(_front_end, "GRACE", 600.0)
    dash = Dashboard(replay, interval=0.02, forecast_every=None)
    dash._ipython_display_()
    replay.run()
    time.sleep(0.5)  # the search is over; the dashboard has seen it
    assert displays.updates == [] and dash._thread.is_alive()
    shown_at = time.monotonic()
    show_views(dash)
    dash._thread.join(timeout=30)
    assert set(displays.updates[-1]) == {PNG, "text/plain"}
    assert displays.updated_at[0] >= shown_at


def test_without_a_front_end_the_display_changes_after_the_grace(replay, monkeypatch):
    displays = Displays(monkeypatch)  # no front end says it showed anything (nbclient)
    monkeypatch.setattr(_front_end, "GRACE", 0.5)
    dash = Dashboard(replay, interval=0.02, forecast_every=None)
    dash._ipython_display_()
    displayed_at = time.monotonic()
    replay.run()
    dash._thread.join(timeout=30)
    assert set(displays.updates[-1]) == {PNG, "text/plain"}
    assert displays.updated_at[0] - displayed_at >= 0.5 - 0.05  # (0.05: the clocks' reads)


def test_the_widgets_close_a_grace_after_the_display_stops_showing_them(replay, monkeypatch):
    displays = Displays(monkeypatch)
    monkeypatch.setattr(_front_end, "GRACE", 600.0)
    dash = Dashboard(replay, interval=0.02, forecast_every=None)
    dash._ipython_display_()
    show_views(dash)
    replay.run()
    dash._thread.join(timeout=30)
    assert set(displays.updates[-1]) == {PNG, "text/plain"}  # the view went at once
    # the front end may still be busy with what it had: the models stay a while
    assert dash.header.comm is not None and dash.allocation.comm is not None
    timers = [t for t in threading.enumerate() if t.name == "hypersched-close-widgets"]
    assert timers and all(t.daemon for t in timers)  # nothing keeps the kernel from exiting
    for timer in timers:
        timer.cancel()


def test_the_slider_moves_the_deadline(replay):
    dash = Dashboard(replay)
    assert dash.slider.value == 2.0  # minutes since the start
    dash.slider.value = 1.5
    assert replay.deadline == 90.0
    assert dash.slider_label.value == "at 90s (in 1m 30s)"


def test_a_deadline_moved_elsewhere_moves_the_slider(replay):
    dash = Dashboard(replay, slider_max=300)
    replay.deadline = "10m"
    dash.refresh()
    assert dash.slider.value == 10.0 and dash.slider.max >= 10.0  # the range grows to show it


def test_the_stop_button_stops(finished):
    dash = Dashboard(finished)
    dash.stop_button.disabled = False
    dash._on_stop(dash.stop_button)
    assert dash.stop_button.disabled and finished.done


def test_the_allocation_figure_stacks_steps_against_the_deadline(finished):
    snap = finished.statistics()
    fig = allocation_figure(snap)
    first, second = [t for t in fig.data if t.name.startswith("trial ")][:2]
    assert first.fill == "tozeroy" and second.fill == "tonexty"  # each band on the one below
    assert first.line.shape == "hv" and (second.y >= first.y).all()
    deadline = fig.layout.shapes[0]
    assert deadline.x0 == deadline.x1 == snap.deadline  # seconds: the deadline is under 10 minutes
    assert len(fig.layout.shapes) == 1  # a finished search draws no "now" line
    assert fig.layout.yaxis.range[1] >= snap.workers


def test_beyond_most_trials_the_rest_are_one_band_and_the_total_is_kept(finished):
    snap = finished.statistics()
    times, series = snap.allocation_series()
    assert len(series) > 2  # the fixture's search has more trials than drawn here
    fig = allocation_figure(snap, most=1)
    stacked = [t for t in fig.data if t.name != "cluster"]
    alone = {t.name for t in stacked if t.name.startswith("trial ")}
    # the trial that held workers longest, and the best
    assert f"trial {snap.best.trial_id}" in alone and len(alone) <= 2
    band = stacked[-1]  # on top of the trials drawn alone
    assert band.name == f"{len(series) - len(alone)} other trials"
    on_top = [band.y[np.searchsorted(band.x, t, side="right") - 1] for t in times]
    assert on_top == [
        sum(column) for column in zip(*series.values(), strict=True)
    ]  # no worker lost


def test_curves_colour_trials_as_the_allocation_does(finished):
    snap = finished.statistics()
    fig = curves_figure(snap)
    best = next(t for t in fig.data if t.name == f"trial {snap.best.trial_id}")
    assert best.line.color == colour(snap.best.trial_id) and best.line.width > 3


def test_the_static_picture_is_a_png_of_the_summary_and_both_charts(finished):
    snap = finished.statistics()
    fig = picture_figure(snap)
    text = " ".join(t.get_text() for t in fig.texts)
    assert "deadline" in text and "best config: " in text
    alloc, curves = fig.axes
    held = {f"trial {r.trial_id}" for r in snap.trials if r.peak_workers}
    assert {c.get_label() for c in alloc.collections} == held  # a band per trial
    assert {ln.get_label() for ln in curves.lines} == {
        f"trial {r.trial_id}" for r in snap.trials if r.metrics
    }
    assert picture(snap).startswith(b"\x89PNG")


def test_show_gives_interactive_figures_with_a_png_fallback(finished):
    from hypersched_nb.notebook.static import bundles

    alloc, curves = bundles(finished.statistics())
    for bundle in (alloc, curves):
        assert bundle["application/vnd.plotly.v1+json"]["data"]  # plotly's own mimetype
        assert base64.b64decode(bundle[PNG]).startswith(b"\x89PNG")
        assert "text/html" not in bundle
    assert alloc["text/plain"] == "<workers per trial>"


def test_the_refresh_thread_follows_the_search_to_its_end(replay):
    dash = Dashboard(replay, interval=0.02).start()
    replay.run()
    dash._thread.join(timeout=30)
    assert not dash._thread.is_alive()  # it stops by itself once the search is over
    assert "finished" in dash.header.value and dash.slider.disabled


def test_a_refresh_that_fails_is_said_in_the_header_and_the_next_one_goes_on(replay):
    dash = Dashboard(replay, interval=0.02)
    real, calls, checked = replay.statistics, [], threading.Event()

    def statistics():  # the refresh thread's first snapshot fails; its second waits for us
        if threading.current_thread() is dash._thread:
            calls.append(None)
            if len(calls) == 1:
                raise RuntimeError("the snapshot broke once")
            checked.wait(timeout=30)
        return real()

    replay.statistics = statistics
    dash.start()
    end = time.monotonic() + 30
    while len(calls) < 2:  # the thread came back for another snapshot after the failure
        assert time.monotonic() < end, "the refresh thread never tried again"
        time.sleep(0.005)
    assert "refresh failed (trying again): RuntimeError: the snapshot broke once" in (
        dash.header.value
    )
    checked.set()
    replay.run()
    dash._thread.join(timeout=30)
    assert "finished" in dash.header.value and "failed" not in dash.header.value


def test_after_a_stop_the_header_says_who_stopped_it_and_when_and_nothing_says_it_goes_on():
    exp, halt = halted_replay(small_trace(), at=40, deadline=120, workers=3)
    exp.start()
    assert halt.wait()
    dash = Dashboard(exp, forecast_every=None)
    assert "running" in dash.header.value and dash.policy_line.value
    dash._on_stop(dash.stop_button)
    assert "stopped by you at 40s" in dash.header.value  # at once, not at the next period
    assert " left" not in dash.header.value and dash.policy_line.value == ""
    assert dash.stop_button.disabled and dash.slider.disabled
    halt.release()
    exp.wait()
    dash.refresh()
    assert "stopped by you at 40s" in dash.header.value
    assert exp.statistics().status_text() == "stopped by you at 40s"  # the magic's words


def test_the_words_of_now_give_way_to_the_search_as_it_stood_once_the_page_loses_the_kernel():
    exp, halt = halted_replay(small_trace(), at=40, deadline=120, workers=3)
    exp.start()
    assert halt.wait()
    dash = Dashboard(exp, forecast_every=None)
    # which of the two a page shows is its style sheet's to say (tests/ui: a kernel killed)
    assert "<style>" in dash.header.value
    now, then = re.search(
        r"<span class='hs-now'>(.*?)</span><span class='hs-then'>(.*?)</span>", dash.header.value
    ).groups()
    assert now == "running · <b>1m 20s</b> left"
    assert html.unescape(then) == (
        "not connected to its kernel · as it stood at 40s: running, 1m 20s before its deadline 120s"
    )
    controls = dash.widget.children[2]  # the slider and the stop button act through the kernel
    assert (
        _front_end.NOW in controls._dom_classes and _front_end.NOW in dash.policy_line._dom_classes
    )
    assert summary(exp.statistics())[1].startswith("1m 20s left at 40s | ")  # the picture's
    halt.release()
    exp.wait()
    dash.refresh()
    assert _front_end.THEN not in dash.header.value  # "finished" stays true without a kernel


def test_after_a_fail_fast_the_header_says_failed_with_the_one_line_and_the_stop_is_off():
    from tests.experiment.test_fail_fast import NO_METRIC, search

    exp = search([NO_METRIC] * 60).start()
    dash = Dashboard(exp, forecast_every=None)
    with pytest.raises(SearchFailed):
        exp.wait()
    dash.refresh()
    assert "failed: the first 3 trials all failed with the same error" in dash.header.value
    header = html.unescape(dash.header.value)
    assert "SearchFailed" not in header and NO_METRIC in header
    assert dash.stop_button.disabled and dash.policy_line.value == ""


def test_a_search_that_fails_says_so_before_its_trials_have_wound_down():
    from hypersched_nb.experiment._session import Session

    session = Session(runtime=object(), clock=None)
    session.status = "running"
    session.failing(SearchFailed("the first 3 trials all failed"))
    assert session.status == "failing" and not session.done  # its thread still winds down


def test_a_hover_names_the_trials_configuration(finished):
    snap = finished.statistics()
    row = next(r for r in snap.trials if r.peak_workers)
    cfg = f"lr={row.config['lr']:.4g}"
    band = next(t for t in allocation_figure(snap).data if t.name == f"trial {row.trial_id}")
    curve = next(t for t in curves_figure(snap).data if t.name == f"trial {row.trial_id}")
    assert cfg in band.hovertemplate and cfg in curve.hovertemplate


def test_once_the_search_is_over_the_forecast_panel_says_so_and_forecasts_no_more():
    exp, halt = halted_replay(small_trace(), at=40, deadline=120, workers=3)
    exp.start()
    assert halt.wait()
    dash = Dashboard(exp, forecast_every=60)
    dash.forecast.separate = False
    dash.forecast.update()
    dash._on_stop(dash.stop_button)
    title = dash.forecast.title.value
    assert (
        "the search is over (stopped by you at 40s): this forecast was made while it ran" in title
    )
    assert dash.forecast.ended
    halt.release()
    exp.wait()


def test_a_resumed_search_says_it_was_interrupted_and_when_it_went_on():
    from datetime import datetime, timedelta

    from hypersched_nb.experiment._session import Session

    session = Session()  # a live search, as Experiment.resume() opens it
    first = datetime.now() - timedelta(minutes=5)
    clock = session.open(started=first)
    assert 299 < session.resumed_at < 302 and clock.now() >= session.resumed_at
    snap = ExperimentSnapshot(
        time=310.0, deadline=600.0, status="running", metric="acc", mode="max", policy="asha",
        describe="", workers=2, started=first, resumed_at=session.resumed_at,
    )  # fmt: skip
    resumed = (first + timedelta(seconds=session.resumed_at)).strftime("%H:%M")
    assert snap.status_text() == f"interrupted, resumed at {resumed}; running"
    assert Session().open() is not None and Session().resumed_at is None  # a first start


def test_the_trials_sort_by_the_column_chosen_and_one_chosen_shows_whole(finished):
    from hypersched_nb.notebook.trials_panel import sorted_rows

    dash = Dashboard(finished, forecast_every=None)
    snap, panel = finished.statistics(), dash.trials
    best = snap.best.trial_id
    assert panel.table.value.split("<tr>")[2].startswith(f"<td>#{best}</td>")  # by best
    assert sorted_rows(snap, "best")[0].trial_id == best  # the best first
    assert [r.trial_id for r in sorted_rows(snap, "trial")] == sorted(
        r.trial_id for r in snap.trials
    )
    panel.sort.value = "epochs"
    epochs = [r.epochs for r in sorted_rows(snap, "epochs")]
    assert epochs == sorted(epochs, reverse=True)
    first_row = panel.table.value.split("<tr>")[2]
    assert first_row.startswith(f"<td>#{sorted_rows(snap, 'epochs')[0].trial_id}</td>")
    assert sorted_rows(snap, "epochs", first=3) == sorted_rows(snap, "epochs")[:3]
    panel.pick.value = best
    detail = panel.detail.value
    assert f"trial {best}" in detail and f"lr={snap.best.config['lr']:.4g}" in detail
    decisions = [e for e in snap.events if e["trial"] == best]
    assert detail.count("<tr>") == len(decisions) > 0  # every decision about it, with its reason
    assert "workers</b> 1 from" in detail  # the workers it held over time


def test_the_trial_list_holds_the_best_few_and_keeps_the_one_chosen(finished):
    """A search of thousands of trials would send every one of them at each redraw: the
    list offers the ``picks`` best, and the trial chosen stays while it falls behind."""
    from hypersched_nb.notebook.trials_panel import TrialsPanel, sorted_rows

    snap = finished.statistics()
    first, second = (r.trial_id for r in sorted_rows(snap, "best", first=2))
    panel = TrialsPanel(snap, picks=2)
    assert [v for _, v in panel.pick.options] == [first, second]
    panel.pick.value = second
    panel.picks = 1
    panel.show(snap)
    assert [v for _, v in panel.pick.options] == [first, second] and panel.pick.value == second
    assert f"trial {second}" in panel.detail.value


def test_each_sort_puts_the_best_first_and_ties_by_the_older_trial(finished):
    import dataclasses
    import math

    from hypersched_nb.notebook.trials_panel import SORTS, sorted_rows

    snap = finished.statistics()
    rows = list(snap.trials)
    rows[0] = dataclasses.replace(rows[0], best=math.nan, started_at=None)  # never reported
    snap = dataclasses.replace(snap, trials=tuple(rows))
    sign = 1.0 if snap.mode == "max" else -1.0
    plain = {
        "best": lambda r: -sign * r.best if math.isfinite(r.best) else math.inf,
        "epochs": lambda r: -r.epochs,
        "workers now": lambda r: -r.workers,
        "most workers": lambda r: -r.peak_workers,
        "started": lambda r: math.inf if r.started_at is None else r.started_at,
        "trial": lambda r: r.trial_id,
    }
    for by in SORTS:
        expected = sorted(snap.trials, key=lambda r, k=plain[by]: (k(r), r.trial_id))
        assert sorted_rows(snap, by) == expected, by
        assert sorted_rows(snap, by, first=4) == expected[:4], by
    assert sorted_rows(snap, "best")[-1] is snap.trials[0]  # no result: last
