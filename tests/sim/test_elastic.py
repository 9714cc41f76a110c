"""Elastic clusters: a policy may size the cluster within a maximum; billing is ∫ size dt.

Specified here: the driver asks an elastic policy for a size at every decision, grants it
within [workers held, maximum], bills worker-seconds as the integral of the cluster size over
time and reports the bill in its outcome and in the benchmark's row; a fixed cluster bills
workers × the time the search ran; the benchmark takes --cost-budget.
"""

from __future__ import annotations

import json

import pytest

from hypersched_nb.bench import cli
from hypersched_nb.core.events import ScaleCluster, Start
from hypersched_nb.core.policies._fifo import FIFO
from hypersched_nb.errors import InvalidTransition
from hypersched_nb.experiment.driver import Driver
from hypersched_nb.experiment.simulate import SimSettings, simulate
from hypersched_nb.sim.clock import VirtualClock
from hypersched_nb.sim.runtime import SimRuntime, offers
from hypersched_nb.sim.trace import TRACE_KEY
from hypersched_nb.testing.pytest_policies import synthetic_trace, trace_from_curves

THREE = trace_from_curves([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]], seconds=10.0)  # 2 epochs of 10 s


def test_a_cluster_never_grows_past_its_maximum_nor_shrinks_under_its_trials():
    rt = SimRuntime(THREE, VirtualClock(), 2, max_workers=3)
    with pytest.raises(InvalidTransition, match="at most 3"):
        rt.execute(ScaleCluster(4))
    rt.execute(Start(0, {TRACE_KEY: 0}, 2))
    with pytest.raises(InvalidTransition, match="2 held"):
        rt.execute(ScaleCluster(1))
    assert rt.workers() == 2  # a refused change changes nothing


class Scripted(FIFO):
    """FIFO on a cluster of 2 workers for the first 10 s, then of 1 (or ``size`` always)."""

    elastic = True

    def __init__(self, size: int | None = None):
        self.size = size

    def cluster_size(self, ctx):
        return self.size if self.size is not None else (2 if ctx.now < 10 else 1)


def run(
    policy, trace=THREE, *, workers: int = 1, max_workers: int = 4
) -> tuple[Driver, SimRuntime]:
    clock = VirtualClock()
    rt = SimRuntime(trace, clock, workers, max_workers=max_workers)
    driver = Driver(
        policy,
        rt,
        clock,
        iter(offers(trace, 3, 0)),
        deadline=1_000,
        max_epochs=2,
        journal=True,
        max_workers=max_workers,
    )
    driver.run()
    return driver, rt


def test_the_driver_grants_a_size_between_what_is_held_and_the_maximum():
    driver, rt = run(Scripted())
    out = driver.outcome
    # t = 0: 2 workers, two trials start; t = 10: 1 is asked, but both still hold a worker;
    # t = 20: both complete, the cluster shrinks to 1 and the third trial runs until t = 40,
    # when the search is over and gives its last worker back
    sizes = [(e["time"], e["reason"]) for e in out.journal if e["action"] == "ScaleCluster"]
    assert sizes == [
        (0.0, "1 -> 2 workers"),
        (20.0, "2 -> 1 workers"),
        (40.0, "1 -> 0 workers: nothing left to train"),
    ]
    assert out.ended_at == pytest.approx(40.0)
    assert out.worker_seconds_billed == pytest.approx(2 * 20 + 1 * 20)  # ∫ size dt


def test_a_request_past_the_maximum_gets_the_maximum():
    driver, rt = run(Scripted(size=10), max_workers=4)
    asked = [e["reason"] for e in driver.outcome.journal if e["action"] == "ScaleCluster"]
    assert asked[0] == "1 -> 4 workers"  # clamped, not refused
    # three trials at once on 4 workers: all done at t = 20, billed for all 4 workers
    assert driver.outcome.worker_seconds_billed == pytest.approx(4 * 20)


def test_a_fixed_cluster_bills_its_workers_for_the_time_the_search_ran():
    row = simulate(synthetic_trace(), "asha", 200, 0, SimSettings(workers=3, configs=12))
    out = row.outcome
    assert row.record.worker_seconds_billed == pytest.approx(3 * out.ended_at)  # size × duration
    assert (
        row.record.worker_seconds_billed >= row.record.worker_seconds_busy
    )  # idle workers are billed too


def test_an_elastic_search_never_holds_more_than_the_maximum():
    row = simulate(
        synthetic_trace(),
        "seer",
        400,
        0,
        SimSettings(workers=4, configs=16, eta=2),
        journal=True,
        policy_params={"max_configs": 16},
    )
    sizes = [
        int(e["reason"].split(" -> ")[1].split()[0])
        for e in row.outcome.journal
        if e["action"] == "ScaleCluster"
    ]
    assert sizes and max(sizes) <= 4  # it did resize, never past 4 workers
    assert row.record.worker_seconds_billed <= 4 * row.outcome.ended_at  # no more than a fixed 4


def toy_trace(folder) -> str:
    lines = ["trial,epoch,metric,seconds"]
    lines += [f"{i},{e},{(i + 1) * e / 40:.4f},10.0" for i in range(6) for e in range(1, 5)]
    path = folder / "toy.csv"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_the_benchmark_takes_a_cost_budget_and_reports_the_bill(tmp_path, capsys):
    out = tmp_path / "runs.json"
    args = [
        "--trace",
        toy_trace(tmp_path),
        "--workers",
        "2",
        "--deadlines",
        "200",
        "--policies",
        "fifo,seer",
        "--seeds",
        "1",
        "--configs",
        "6",
        "--cost-budget",
        "150",
        "--json",
        str(out),
    ]
    assert cli.main(args) == 0
    runs = {r["policy"]: r for r in json.loads(out.read_text())["runs"]}
    assert runs["seer"]["worker_seconds_billed"] <= 150  # the elastic policy keeps to it
    assert runs["fifo"]["worker_seconds_billed"] == pytest.approx(2 * 120)  # fixed: 2 × 120 s run


def test_the_benchmark_refuses_a_budget_that_is_not_positive(tmp_path, capsys):
    args = [
        "--trace",
        toy_trace(tmp_path),
        "--workers",
        "2",
        "--deadlines",
        "100",
        "--policies",
        "fifo",
        "--seeds",
        "1",
        "--cost-budget",
        "0",
    ]
    assert cli.main(args) == 2  # refused before anything runs
    assert "`--cost-budget` is 0.0, but must be > 0" in capsys.readouterr().err


def test_a_search_that_ends_at_its_deadline_gives_its_workers_back_after_billing_them():
    clock = VirtualClock()
    rt = SimRuntime(THREE, clock, 1, max_workers=4)
    driver = Driver(Scripted(size=3), rt, clock, iter(offers(THREE, 3, 0)), deadline=15.0,
                    max_epochs=2, journal=True, max_workers=4)  # fmt: skip
    out = driver.run()
    assert out.journal[-1] == {
        "time": 15.0, "trial": None, "action": "ScaleCluster",
        "reason": "3 -> 0 workers: deadline reached",
    }  # fmt: skip
    assert rt.workers() == 0 and driver.capacity == 0
    assert out.worker_seconds_billed == pytest.approx(3 * 15.0)  # billed up to the deadline
