"""benchmarks/gpu_run.py: its one-line refusal without a GPU, its watchdog, its figures, and
its CPU dry run, whose one JSON line is the GPU run's.

The script is not a module of the package: it is loaded from its path."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from hypersched_nb.testing.scripts import load_script

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_run.py"

gpu_run = load_script(SCRIPT)


def run_script(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], cwd=cwd, capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA GPU")
def test_without_cuda_it_exits_2_with_one_line_naming_it_before_starting_anything(tmp_path):
    done = run_script("--minutes", "5", "--json", str(tmp_path / "out.json"), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""  # no JSON line: nothing ran
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("gpu_run.py: no CUDA GPU (torch.cuda.is_available() is False")
    assert "docs/guide/gpu.md" in lines[0] and "--dry-run" in lines[0]
    assert list(tmp_path.iterdir()) == []  # no checkpoint folder, no JSON file


def test_the_line_names_every_missing_package(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    absent = {"dask_cuda", "pynvml", "optuna"}
    monkeypatch.setattr(gpu_run, "_importable", lambda module: module not in absent)
    line = gpu_run.missing_for_run(gpu=True)
    assert "no CUDA GPU" in line and "optuna, dask-cuda, nvidia-ml-py not installed" in line
    assert "\n" not in line
    # a dry run needs neither a GPU nor dask-cuda nor NVML
    assert "dask-cuda" not in gpu_run.missing_for_run(gpu=False)


def test_without_torch_the_line_says_so_rather_than_failing(monkeypatch):
    monkeypatch.setattr(gpu_run, "_importable", lambda module: module != "torch")
    assert "torch not installed" in gpu_run.missing_for_run(gpu=True)


def test_nothing_is_missing_on_a_cuda_host_with_the_extra(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(gpu_run, "_importable", lambda module: True)
    assert gpu_run.missing_for_run(gpu=True) is None


def test_the_watchdog_prints_out_of_time_and_ends_the_process_with_3(tmp_path):
    # a run stuck in its search (a cluster that never starts, say) past the watchdog's time
    stuck = (
        "import pathlib, time, types\n"
        "from hypersched_nb.testing.scripts import load_script\n"
        f"gpu_run = load_script(pathlib.Path({str(SCRIPT)!r}))\n"
        "args = types.SimpleNamespace(dry_run=False, minutes=5.0)\n"
        "dog = gpu_run.Watchdog(time.monotonic() + 0.5, args)\n"
        "dog.phase = 'search'\n"
        "time.sleep(60)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", stuck], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 3, done.stderr
    (line,) = done.stdout.splitlines()
    fig = json.loads(line)
    assert fig["status"] == "out of time" and fig["phase"] == "search"
    assert fig["minutes"] == 5.0 and fig["dry_run"] is False


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


def result(trial: int, workers: int, startup: float, seconds: float = 2.0) -> dict:
    return {"trial_id": trial, "workers": workers, "startup": startup, "seconds": seconds}


def test_startup_times_are_sorted_into_starts_resizes_and_resumes():
    results = [
        result(0, 1, 5.0),  # trial 0 starts
        result(0, 1, 0.0),  # goes on: no startup
        result(1, 1, 4.0),  # trial 1 starts
        result(0, 2, 0.7),  # trial 0 grows to 2 workers
        result(0, 2, 0.3),  # paused, then resumed on 2
        result(0, 1, 0.6),  # shrinks to 1
    ]
    got = gpu_run.startup_times(results)
    assert got == {"start": [5.0, 4.0], "resize": [0.7, 0.6], "resume": [0.3]}


def test_the_overhead_ratio_is_the_searchs_worker_seconds_over_the_plain_loops():
    results = [result(0, 1, 5.0, 2.0), result(0, 1, 0.0, 2.2), result(1, 1, 1.0, 1.1)]
    plain = {64: 2.0, 128: 1.0, 256: None}
    got = gpu_run.overhead(results, {0: 64, 1: 128}, plain, worker_seconds=20.0)
    assert got["plain_s_for_these_epochs"] == pytest.approx(5.0)  # 2 + 2 + 1
    assert got["overhead_ratio"] == pytest.approx(20.0 / 5.0)
    assert got["epoch_ratio"] == pytest.approx(2.1)  # median of 7/2, 2.2/2, 2.1/1
    # an epoch at a batch size the plain loop did not time: no whole-run ratio
    partial = gpu_run.overhead(results, {0: 64, 1: 256}, plain, worker_seconds=20.0)
    assert partial["overhead_ratio"] is None and partial["epoch_ratio"] == pytest.approx(2.3)


def test_worker_seconds_follow_the_cluster_size():
    # 2 workers from the start (counted from 0) to 10 s, then 4 until the end at 20 s
    assert gpu_run.available_worker_seconds([(1.0, 2), (10.0, 4)], 20.0) == pytest.approx(60.0)
    assert gpu_run.available_worker_seconds([(1.0, 2), (30.0, 4)], 20.0) == pytest.approx(40.0)
    assert gpu_run.available_worker_seconds([], 20.0) == 0.0


def test_the_json_line_is_one_line_of_plain_numbers(capsys, tmp_path):
    gpu_run.emit({"a": math.nan, "b": 1.23456789, "c": {"d": [math.inf, 2]}}, tmp_path / "f")
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    assert json.loads(out) == {"a": None, "b": 1.235, "c": {"d": [None, 2]}}
    assert json.loads((tmp_path / "f").read_text()) == json.loads(out)


@pytest.mark.cluster
def test_the_cpu_dry_run_prints_the_gpu_runs_json_line_with_cpu_figures(tmp_path):
    out = tmp_path / "figures.json"
    done = run_script("--dry-run", "--json", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    (line,) = done.stdout.splitlines()  # stdout is the JSON line alone
    fig = json.loads(line)
    assert fig == json.loads(out.read_text())
    assert fig["status"] == "finished" and fig["dry_run"] is True and fig["workers"] == 1
    assert fig["gpu_busy_pct"] is None and fig["device"] == "cpu (dry run)"
    assert fig["wall_s"] <= fig["minutes"] * 60  # the figures came within the budget
    assert fig["trials"] >= 1 and fig["epochs"] >= 1 and fig["best_val_acc"] is not None
    assert set(fig["best_config"]) == {"lr", "momentum", "weight_decay", "batch_size"}
    # 32 training images: every batch size trains the same one-batch epoch, timed once
    assert len(set(fig["plain_epoch_s"].values())) == 1 and fig["plain_epoch_s"]["64"] > 0
    assert fig["overhead_ratio"] == pytest.approx(
        fig["worker_s"] / fig["plain_s_for_these_epochs"], rel=1e-3
    )
    assert fig["epoch_ratio"] > 0 and fig["start_s"]["count"] >= 1
    assert fig["resize_s"]["count"] == 0  # one worker: nothing to resize to
    assert sorted(p.name for p in tmp_path.iterdir()) == ["figures.json"]  # temp folder gone
