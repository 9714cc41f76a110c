"""A worker Dask has paused (memory) is said in the search's snapshot and on the
dashboard's line about workers, while it is paused and the search runs, and no longer."""

import queue

from hypersched_nb.core.events import WorkersChanged
from hypersched_nb.experiment.experiment import Experiment
from hypersched_nb.experiment.simulate import SimSettings, replayed
from hypersched_nb.notebook.dashboard import Dashboard
from tests.notebook.conftest import small_trace


class PausingWorkers:
    """The simulator on a cluster whose worker "1" Dask pauses at 20 s and resumes at 60 s,
    as a Dask runtime says it (WorkersChanged.paused); the search halts at 40 s and at 80 s
    until released, for a test to look at it."""

    def __init__(self, inner):
        self.inner = inner
        self.news = [(20.0, ("1",)), (60.0, ())]
        self.halts = [40.0, 80.0]
        self.reached, self.released = queue.Queue(), queue.Queue()

    def workers(self) -> int:
        return self.inner.workers()

    def execute(self, instruction) -> None:
        self.inner.execute(instruction)

    def advance(self, until: float):
        at = min([t for t, _ in self.news[:1]] + self.halts[:1], default=float("inf"))
        if until < at:
            return self.inner.advance(until)
        found = self.inner.advance(at)
        if found:
            return found
        if self.news and self.news[0][0] == at:
            _, paused = self.news.pop(0)
            return [WorkersChanged(at, self.inner.workers(), paused=paused)]
        self.halts.pop(0)
        self.reached.put(at)  # the clock stands at `at`
        self.released.get()
        return []

    def halted_at(self) -> float:
        return self.reached.get(timeout=30)

    def release(self) -> None:
        self.released.put(None)


def pausing_search():
    trace = small_trace()
    sim = replayed(trace, 0, SimSettings(workers=3, configs=len(trace.ids)))
    runtime = PausingWorkers(sim.runtime)
    exp = Experiment._on(
        runtime, sim.clock, sim.offered, metric=trace.metric_name, mode=trace.mode,
        deadline=120, max_epochs=sim.max_epochs, policy="asha", seed=0, scaling=sim.scaling,
    )  # fmt: skip
    return exp, runtime


def test_a_worker_dask_paused_is_in_the_snapshot_and_the_dashboard_until_it_resumes():
    exp, runtime = pausing_search()
    exp.start()
    try:
        assert runtime.halted_at() == 40.0
        snap = exp.statistics()
        assert snap.paused_workers == ("1",) and snap.workers == 3
        assert snap.cluster_text() == "3 workers, 1 paused by Dask (memory)"
        assert str(snap).splitlines()[0].endswith(", 3 workers, 1 paused by Dask (memory)")
        dash = Dashboard(exp, forecast_every=None)
        assert "3 workers, 1 paused by Dask (memory) · running" in dash.header.value
        runtime.release()
        assert runtime.halted_at() == 80.0  # resumed at 60 s: said no more
        assert exp.statistics().paused_workers == ()
        dash.refresh()
        assert "3 workers · running" in dash.header.value
        assert "paused by Dask" not in dash.header.value
    finally:
        runtime.release()
    exp.wait()


def test_a_worker_still_paused_when_the_search_ends_is_said_no_more():
    exp, runtime = pausing_search()
    runtime.news = runtime.news[:1]  # never resumed
    exp.start()
    try:
        assert runtime.halted_at() == 40.0
        assert exp.statistics().paused_workers == ("1",)
        runtime.release()
        runtime.halted_at()
    finally:
        runtime.release()
    exp.wait()
    snap = exp.statistics()
    assert snap.done and snap.paused_workers == () and snap.cluster_text() == "3 workers"
    dash = Dashboard(exp, forecast_every=None)
    assert "paused by Dask" not in dash.header.value
