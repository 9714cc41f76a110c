"""The figures at scale: trials grouped the same way live, in the static picture and in the
report, and a dashboard that redraws in place drawing exactly what a fresh figure draws."""

import dataclasses
import json

import numpy as np

from hypersched_nb import Experiment
from hypersched_nb.notebook._curve_bundle import CurveBundler
from hypersched_nb.notebook.dashboard import Dashboard
from hypersched_nb.notebook.drawings import allocation_figure, curves_figure
from hypersched_nb.notebook.figures import (
    AllocationHistory,
    allocation_layers,
    bundle_curves,
    curve_groups,
    spotlight,
)
from hypersched_nb.notebook.static import picture, picture_figure
from hypersched_nb.testing.traces import synthetic_trace
from tests.notebook.conftest import Recorded, views


def drawn(fig) -> dict:
    """A figure as plotly writes it: what the front end receives, the grey bundle's points
    as the set of points it draws (a live figure bundles the curves of trials that are over
    once, so its points come in another order; a NaN point draws nothing). The width a
    dashboard gives its figures is the dashboard's frame, not the drawing's."""
    out = json.loads(fig.to_json())
    out["layout"].pop("width", None)
    for trace in out["data"]:
        if trace["type"] == "scattergl" and "customdata" in trace:  # the grey bundle
            x, y, trial = (_values(trace.pop(k)) for k in ("x", "y", "customdata"))
            trace["points"] = point_set(trial, x, y)
    return out


def point_set(trial, epoch, metric) -> list:
    """The points drawn, as (trial, epoch, metric), each once, in order."""
    drawn = zip(trial, epoch, metric, strict=True)
    return sorted({(int(t), int(e), float(m)) for t, e, m in drawn if np.isfinite(m)})


def _values(data) -> np.ndarray:
    """A plotly array as written: a list, or a typed array (``{"dtype", "bdata"}``)."""
    if isinstance(data, dict):
        import base64

        return np.frombuffer(base64.b64decode(data["bdata"]), dtype=data["dtype"])
    return np.array(data, dtype=float)


def test_a_dashboard_redrawn_in_place_draws_what_a_fresh_figure_draws(crowded):
    final = crowded.statistics()
    seen = views(final, 12)
    watched = Recorded(seen[0])
    dash = Dashboard(watched)
    for snap in seen[1:]:
        watched.snap = snap
        dash.refresh(snap)
        assert drawn(dash.allocation) == drawn(allocation_figure(snap))
        assert drawn(dash.curves) == drawn(curves_figure(snap))
    assert len(dash.allocation.data) < 40  # grouped: a hundred trials, a few dozen traces


def test_the_bundle_kept_from_view_to_view_draws_the_points_of_a_bundle_made_anew(crowded):
    """Trials end between views and others step into or out of the spotlight; the bundle
    kept by the live figure draws, at each view, the points that bundling every other
    trial's curve draws."""
    kept, history, ended = CurveBundler(), AllocationHistory(), []
    for snap in ending_views(crowded.statistics(), 12):
        groups = curve_groups(history.read(snap), snap)
        alone = frozenset(r.trial_id for r in groups.leaders)
        assert _points(kept.bundle(snap, alone)) == _points(bundle_curves(groups.rest))
        ended.append(snap.counts["TERMINATED"])
    assert ended[0] < 5 and ended[-1] > 30  # they ended while watched


def ending_views(final, count: int) -> list:
    """``count`` views of the search ``final`` ends in which its trials start, report and
    end as time goes: a trial over by then keeps its row (the same object, as a live search
    hands it out), one under way has a new row with the part of its curve reported by then
    (its epochs spread evenly from its start to its stop)."""
    out = []
    for k in range(1, count + 1):
        t = final.time * k / count
        rows = []
        for r in final.trials:
            if r.started_at is None or r.started_at > t:
                rows.append(dataclasses.replace(r, state="PENDING", metrics=(), epochs=0))
            elif r.stopped_at is not None and r.stopped_at <= t:
                rows.append(r)
            else:
                span = max(1e-9, (r.stopped_at or final.time) - r.started_at)
                seen = r.metrics[: int(len(r.metrics) * (t - r.started_at) / span)]
                rows.append(dataclasses.replace(r, state="RUNNING", metrics=seen, epochs=len(seen)))
        n = sum(a.time <= t for a in final.allocation)
        out.append(dataclasses.replace(
            final, trials=tuple(rows), allocation=final.allocation[:max(1, n)], time=t,
            status="running", version=k,
        ))  # fmt: skip
    return out


def _points(b) -> list:
    return point_set(b.trial, b.epoch, b.metric)


def test_a_redraw_when_only_time_moved_moves_the_now_line(crowded):
    snap = views(crowded.statistics(), 4)[1]
    watched = Recorded(snap)
    dash = Dashboard(watched)
    later = dataclasses.replace(snap, time=snap.time + 30.0)  # the same version
    dash.refresh(later)
    assert drawn(dash.allocation)["layout"] == drawn(allocation_figure(later))["layout"]
    assert dash.allocation.layout.shapes[1].x0 == later.time  # the "now" line


def test_a_snapshot_of_another_search_is_drawn_from_scratch(crowded, finished):
    dash = Dashboard(crowded)
    other = finished.statistics()  # not a later picture of the same search
    dash.refresh(other)
    assert drawn(dash.allocation) == drawn(allocation_figure(other))
    assert drawn(dash.curves) == drawn(curves_figure(other))


def test_the_history_reads_each_record_once(crowded):
    final = crowded.statistics()
    history, read = AllocationHistory(), []
    add = history._add
    history._add = lambda record: (read.append(record), add(record))
    for snap in views(final, 10):
        history.read(snap)
        history.read(snap)  # the same snapshot again reads nothing
    assert read == list(final.allocation)


def test_a_history_read_in_steps_is_the_history_read_at_once(crowded):
    final = crowded.statistics()
    stepped, whole = AllocationHistory(), AllocationHistory().read(final)
    for snap in views(final, 10):
        stepped.read(snap)
    assert list(stepped.trials) == list(whole.trials) and stepped.holding == whole.holding
    end = whole.end(final)
    for trial in whole.trials:
        assert stepped.worker_seconds(trial, end) == whole.worker_seconds(trial, end)
    total, all_at_once = stepped.total(end), whole.total(end)
    assert np.array_equal(total.times, all_at_once.times)
    assert np.array_equal(total.values, all_at_once.values)
    assert spotlight(stepped, final) == spotlight(whole, final)


def test_the_longest_held_ranked_as_the_search_goes_are_those_ranked_anew(crowded):
    """Ranked from the last ranking and the trials that changed since, at every view and at
    ends that go on or back (a deadline moved earlier), as a ranking of every trial."""
    final = crowded.statistics()
    going = AllocationHistory()
    for snap in views(final, 15):
        going.read(snap)
        end = going.end(snap)
        for now, most in ((end, 5), (end + 7.0, 5), (end - 3.0, 5), (end, 8)):
            anew = sorted(going.trials, key=lambda t: (-going.worker_seconds(t, now), t))
            assert going.longest(most, now) == anew[:most]


def test_every_band_tops_the_workers_of_the_trials_at_and_below_it(crowded):
    snap = crowded.statistics()
    times, series = snap.allocation_series()
    layers = allocation_layers(AllocationHistory().read(snap), snap, most=5)
    alone = [int(layer.name.split()[1]) for layer in layers[:-1]]
    assert layers[-1].trials == len(series) - len(alone)  # the grey band: everyone else
    for i, layer in enumerate(layers):
        under = series.keys() if layer is layers[-1] else alone[: i + 1]
        tops = layer.top[np.searchsorted(layer.x, times, side="right") - 1]
        assert list(tops) == [sum(series[t][k] for t in under) for k in range(len(times))]


def test_the_static_picture_groups_trials_as_the_live_figure_does(crowded):
    snap = crowded.statistics()
    alloc, curves = picture_figure(snap).axes
    bands = [c.get_label() for c in alloc.collections]
    live = [t.name for t in allocation_figure(snap).data if t.name != "cluster"]
    assert bands == live  # the same bands, bottom first
    assert live[-1].endswith("other trials")
    assert alloc.get_title(loc="right") == f"grey: {live[-1]}"
    lines = [ln.get_label() for ln in curves.lines]
    assert lines == [t.name for t in curves_figure(snap).data]  # the grey bundle, then leaders


def test_the_static_picture_stays_small_and_grouped_at_two_thousand_trials():
    exp = Experiment.replay(
        synthetic_trace(n=2000, epochs=16), policy="hypersched", deadline=6000, workers=8,
        configs=2000, seed=0,
    )  # fmt: skip
    exp.run()
    snap = exp.statistics()
    alloc, curves = picture_figure(snap).axes
    assert len(alloc.collections) + len(curves.lines) < 60  # one per trial drawn alone, one grey
    assert len(picture(snap)) < 250_000
