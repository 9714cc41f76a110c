"""benchmarks/gpu_run.py: its one-line refusal without a GPU, its figures, and its CPU dry run.

The script is not a module of the package: it is loaded from its path."""

import json
import math
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from hypersched_nb.testing.scripts import load_script

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_run.py"

gpu_run = load_script(SCRIPT)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA GPU")
def test_without_cuda_it_exits_2_with_one_line_before_starting_anything(tmp_path):
    t0 = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--json", str(tmp_path / "out.json")],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stdout == ""  # not even the run's label: nothing started
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("gpu_run.py: no CUDA GPU (torch.cuda.is_available() is False")
    assert 'pip install ".[cuda]"' in lines[0] and "--dry-run" in lines[0]
    assert list(tmp_path.iterdir()) == []  # no checkpoint folder, no JSON
    assert time.monotonic() - t0 < 30


def test_the_line_names_every_missing_piece(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(gpu_run.importlib.util, "find_spec", lambda name: None)
    line = gpu_run.missing_for_gpu()
    assert "no CUDA GPU" in line and "dask-cuda and nvidia-ml-py not installed" in line
    assert "\n" not in line


def test_nothing_is_missing_on_a_cuda_host_with_the_extra(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(gpu_run.importlib.util, "find_spec", lambda name: object())
    assert gpu_run.missing_for_gpu() is None


def test_utilisation_summary_per_gpu_and_overall():
    gib = 2**30
    samples = {
        "0": [(0.0, 0.0, 1 * gib), (0.5, 50.0, 3 * gib), (1.0, 100.0, 2 * gib), (1.5, 90.0, None)],
        "1": [(0.0, 0.0, gib), (0.5, None, gib), (1.0, 30.0, gib)],  # one reading failed
    }
    s = gpu_run.utilisation_summary(samples)
    g0, g1, every = s["per_gpu"]["0"], s["per_gpu"]["1"], s["overall"]
    assert (g0["samples"], g0["readings"]) == (4, 4)
    assert g0["busy_pct"] == pytest.approx(60.0)
    assert g0["active_share"] == pytest.approx(0.75)
    assert g0["peak_mem_gib"] == pytest.approx(3.0)
    assert (g1["samples"], g1["readings"]) == (3, 2)
    assert g1["busy_pct"] == pytest.approx(15.0) and g1["active_share"] == pytest.approx(0.5)
    assert (every["gpus"], every["samples"], every["readings"]) == (2, 7, 6)
    assert every["busy_pct"] == pytest.approx(270.0 / 6)
    assert every["active_share"] == pytest.approx(4 / 6)


def test_utilisation_summary_without_readings_says_none():
    s = gpu_run.utilisation_summary({"0": [(0.0, None, None)]})
    assert s["per_gpu"]["0"]["busy_pct"] is None
    assert s["per_gpu"]["0"]["peak_mem_gib"] is None
    assert s["overall"]["busy_pct"] is None and s["overall"]["active_share"] is None
    assert gpu_run.utilisation_summary({})["overall"] == {
        "gpus": 0, "samples": 0, "readings": 0, "busy_pct": None, "active_share": None,
    }  # fmt: skip


def test_worker_seconds_from_results_and_the_cluster_size():
    results = [
        {"seconds": 2.0, "startup": 1.0, "workers": 1, "info": {"step_s": 1.5}},
        {"seconds": 1.0, "startup": 0.0, "workers": 2, "info": {"step_s": 0.8}},
        {"seconds": 1.0, "startup": 0.0, "workers": 1, "info": None},
    ]
    got = gpu_run.epoch_seconds(results)
    assert got == {"epochs": 3, "held": pytest.approx(6.0), "in_step": pytest.approx(3.1),
                   "untimed": 1}  # fmt: skip
    # 2 workers from the start (counted from 0) to 10 s, then 4 until the end at 20 s
    assert gpu_run.available_worker_seconds([(1.0, 2), (10.0, 4)], 20.0) == pytest.approx(60.0)
    assert gpu_run.available_worker_seconds([(1.0, 2), (30.0, 4)], 20.0) == pytest.approx(40.0)
    assert gpu_run.available_worker_seconds([], 20.0) == 0.0


@pytest.mark.cluster
def test_the_cpu_dry_run_reports_cpu_figures(tmp_path):
    out = tmp_path / "figures.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--dry-run", "--deadline", "25s", "--json", str(out)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "DRY RUN: CPU figures" in done.stdout and "not sampled" in done.stdout
    fig = json.loads(out.read_text())
    run, search, o = fig["run"], fig["search"], fig["overhead"]
    assert run["dry_run"] and run["workers"] == 2 and fig["utilisation"] is None
    assert search["status"] == "finished" and search["best"] is not None
    assert search["best"]["config"]["dataset"] == "standin"
    assert search["trials_started"] >= 1 and search["epochs_trained"] >= 1
    assert o["epochs_reported"] == search["epochs_trained"] and o["epochs_untimed"] == 0
    assert o["workers"] == 2 and o["available_worker_s"] == pytest.approx(2 * o["wall_s"])
    assert 0 < o["step_worker_s"] <= o["held_worker_s"] <= o["available_worker_s"]
    assert o["overhead_ratio"] == pytest.approx(o["available_worker_s"] / o["step_worker_s"])
    assert math.isfinite(o["overhead_ratio"]) and o["overhead_ratio"] >= 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["figures.json"]  # temp folder gone
