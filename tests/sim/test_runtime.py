"""The trace simulator (SimRuntime): discrete events on a virtual clock.

Specified here: an epoch on k workers takes the trace's seconds / s(k); every start, resume
and resize first costs the start-up seconds, and only those; a resumed trial goes on from
its next epoch, a fresh start from epoch 1; the last epoch of a curve says ``done``; workers
are never over-committed (the instruction that would is refused, on one line); nothing
happens after the time the driver advances to; simultaneous epochs come back together; a
paused or stopped trial reports nothing more; the offered configurations depend on the seed
alone.
"""

from __future__ import annotations

import pytest

from hypersched_nb.core.events import Continue, Pause, Resize, ScaleCluster, Start, Stop
from hypersched_nb.errors import InvalidTransition
from hypersched_nb.sim.clock import VirtualClock
from hypersched_nb.sim.runtime import SimRuntime, offers
from hypersched_nb.sim.trace import TRACE_KEY
from hypersched_nb.testing.pytest_policies import synthetic_trace, trace_from_curves

SCALING = {2: 1.6, 4: 2.5}
CURVES = [[0.1, 0.2, 0.3, 0.4, 0.5, 0.6], [0.3, 0.4], [0.5, 0.6, 0.7]]


def sim(workers: int = 4, startup: float = 0.0, seconds=10.0) -> SimRuntime:
    trace = trace_from_curves(CURVES, seconds, scaling=SCALING, startup=startup)
    return SimRuntime(trace, VirtualClock(), workers)


def start(rt: SimRuntime, tid: int, workers: int = 1, restore: bool = False) -> None:
    rt.execute(Start(tid, {TRACE_KEY: tid}, workers, restore))


@pytest.mark.parametrize(("k", "speed_up"), [(1, 1.0), (2, 1.6), (3, 2.05), (4, 2.5)])
def test_an_epoch_on_k_workers_takes_seconds_over_s_of_k(k, speed_up):
    rt = sim()
    start(rt, 0, workers=k)
    [result] = rt.advance(100.0)
    # 10 s on one worker; s(3) is interpolated between s(2) and s(4)
    assert result.time == pytest.approx(10.0 / speed_up)
    assert result.match(trial_id=0, epoch=1, metric=0.1, workers=k, startup=0.0)
    assert result.seconds == pytest.approx(10.0 / speed_up)
    # the clock stands at the event
    assert rt.clock.now() == result.time


def test_every_start_resume_and_resize_costs_the_start_up_and_nothing_else_does():
    rt = sim(startup=5.0)
    start(rt, 0)
    [first] = rt.advance(1e9)
    # a start: 5 s start-up, then a 10 s epoch
    assert first.match(epoch=1, time=15.0, startup=5.0, seconds=10.0)
    rt.execute(Continue(0))
    [second] = rt.advance(1e9)
    # going on costs no start-up
    assert second.match(epoch=2, time=25.0, startup=0.0)
    rt.execute(Resize(0, 2))
    [third] = rt.advance(1e9)
    # a resize restarts: 5 s again, then 10 / 1.6 s
    assert third.match(epoch=3, startup=5.0, workers=2)
    assert third.time == pytest.approx(25.0 + 5.0 + 10.0 / 1.6)
    rt.execute(Pause(0))
    assert rt.advance(100.0) == [] and rt.clock.now() == 100.0
    start(rt, 0, restore=True)
    [fourth] = rt.advance(1e9)
    # a resume pays the start-up and goes on from the epoch after the checkpoint
    assert fourth.match(epoch=4, time=115.0, startup=5.0, workers=1)


def test_a_fresh_start_trains_from_epoch_one_again():
    rt = sim()
    start(rt, 0)
    rt.advance(1e9)
    rt.execute(Stop(0))
    start(rt, 0)
    [result] = rt.advance(1e9)
    assert result.match(epoch=1, metric=0.1)


def test_the_last_epoch_of_a_curve_is_done():
    rt = sim()
    start(rt, 1)
    [first] = rt.advance(1e9)
    rt.execute(Continue(1))
    [last] = rt.advance(1e9)
    # curve 1 has two epochs: the trial cannot train further
    assert not first.done and last.done and last.epoch == 2


def test_workers_are_never_over_committed():
    rt = sim(workers=2)
    start(rt, 0)
    start(rt, 1)
    # a third trial does not fit; the refusal is one line naming trial and room
    with pytest.raises(InvalidTransition, match=r"^trial 2: can't hold 1 workers, 0 free$"):
        start(rt, 2)
    assert rt.held() == 2
    rt.execute(Stop(1))
    start(rt, 2)
    # a stopped trial's worker is free again
    assert dict(rt.iter_running()) == {0: 1, 2: 1}
    # a resize beyond the cluster is refused too
    with pytest.raises(InvalidTransition, match=r"^trial 0: can't hold 3 workers"):
        rt.execute(Resize(0, 3))


def test_an_elastic_cluster_never_shrinks_below_the_workers_held():
    rt = SimRuntime(trace_from_curves(CURVES), VirtualClock(), 2, max_workers=4)
    start(rt, 0, workers=2)
    with pytest.raises(InvalidTransition):
        rt.execute(ScaleCluster(1))
    # nor grows past its maximum
    with pytest.raises(InvalidTransition):
        rt.execute(ScaleCluster(5))
    rt.execute(ScaleCluster(4))
    assert rt.workers() == 4


def test_nothing_happens_after_the_time_advanced_to():
    rt = sim()
    start(rt, 0)
    # the epoch ends at 10: advancing to 9.5 returns nothing and stops the clock at 9.5
    assert rt.advance(9.5) == [] and rt.clock.now() == 9.5
    # an event exactly at the time advanced to happens
    [result] = rt.advance(10.0)
    assert result.time == 10.0
    # advancing to the past never moves the clock back
    assert rt.advance(3.0) == [] and rt.clock.now() == 10.0


def test_simultaneous_epochs_come_back_together_and_later_ones_wait():
    rt = sim(seconds=[[10.0] * 6, [10.0, 10.0], [15.0] * 3])
    for tid in (0, 1, 2):
        start(rt, tid)
    first = rt.advance(1e9)
    # trials 0 and 1 both end an epoch at 10; trial 2 ends at 15, in a later batch
    assert sorted(r.trial_id for r in first) == [0, 1] and {r.time for r in first} == {10.0}
    [later] = rt.advance(1e9)
    assert later.match(trial_id=2, time=15.0)


@pytest.mark.parametrize("instruction", [Pause, Stop])
def test_a_paused_or_stopped_trial_reports_nothing_more(instruction):
    rt = sim()
    start(rt, 0)
    start(rt, 2)
    rt.execute(instruction(0))
    # trial 0's epoch in flight is dropped; trial 2's still happens
    assert [r.trial_id for r in rt.advance(1e9)] == [2]
    assert rt.advance(50.0) == []


def test_offers_depend_on_the_seed_alone():
    trace = synthetic_trace(n=30)
    a, b = offers(trace, 12, seed=3), offers(trace, 12, seed=3)
    # the same seed offers the same configurations in the same order
    assert a == b
    # twelve distinct configurations of the trace, each naming its curve
    assert len({c[TRACE_KEY] for c in a}) == 12 and all(c[TRACE_KEY] in trace.ids for c in a)
    assert a[0] == trace.config(a[0][TRACE_KEY])
    # another seed, another draw
    assert offers(trace, 12, seed=4) != a
    # asking for more than the trace holds offers all of it once
    assert sorted(c[TRACE_KEY] for c in offers(trace, 100, seed=3)) == list(trace.ids)
