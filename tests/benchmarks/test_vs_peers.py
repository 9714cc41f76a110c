"""benchmarks/vs_peers.py: its scoring on fabricated timed values (what counts by the
deadline, the paired count, the percentile), its table, and a tiny dry run of the Optuna side.

The script is not a module of the package: it is loaded from its path."""

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "vs_peers.py"


def _load():
    """The script as a module, registered first: its dataclass looks its module up."""
    spec = importlib.util.spec_from_file_location("vs_peers", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["vs_peers"] = module
    spec.loader.exec_module(module)
    return module


vs_peers = _load()


def test_a_value_reported_after_the_deadline_never_counts():
    values = [(1.0, 0.5), (2.0, 0.7), (2.0001, 0.99), (9.0, 1.0)]
    assert vs_peers.best_by(values, 2.0) == 0.7


def test_a_value_reported_exactly_at_the_deadline_counts():
    assert vs_peers.best_by([(3.0, 0.8)], 3.0) == 0.8


def test_a_run_with_no_finite_value_by_the_deadline_scores_the_missing_score():
    values = [(0.5, math.nan), (4.0, 0.9)]
    assert vs_peers.best_by(values, 1.0) == vs_peers.MISSING
    assert vs_peers.best_by([], 1.0, missing=-1.0) == -1.0


def test_non_finite_values_are_ignored_before_the_deadline():
    assert vs_peers.best_by([(0.1, math.nan), (0.2, 0.3), (0.3, math.inf)], 1.0) == 0.3


def test_paired_counts_wins_ties_and_losses_seed_by_seed():
    ours = {0: 0.9, 1: 0.8, 2: 0.7, 3: 0.6}
    theirs = {0: 0.95, 1: 0.8, 2: 0.5, 3: 0.61}
    assert vs_peers.paired(ours, theirs) == (2, 1, 1)


def test_paired_counts_only_the_seeds_both_ran():
    assert vs_peers.paired({0: 0.5, 1: 0.5}, {1: 0.4, 2: 0.9}) == (0, 0, 1)


def test_the_tenth_percentile_interpolates_linearly():
    s = vs_peers.summary([float(v) for v in range(11)])
    assert s["p10"] == pytest.approx(1.0)
    assert s["median"] == 5.0 and s["mean"] == 5.0
    assert vs_peers.summary([0.0, 1.0])["p10"] == pytest.approx(0.1)


def _run(system: str, seed: int, score: float, **kw):
    return vs_peers.Run("digits", 0.5, 4.0, system, seed, score, **kw)


def test_the_table_pairs_each_system_with_our_default_and_gives_our_share_told():
    runs = [
        _run("hypersched", 0, 0.9, told=3, offered=4),
        _run("hypersched", 1, 0.8, told=5, offered=6),
        _run("tpe-sha", 0, 0.95),
        _run("tpe-sha", 1, 0.7),
    ]
    lines = vs_peers.table(runs).splitlines()
    ours = next(line for line in lines if "| hypersched |" in line)
    theirs = next(line for line in lines if "| tpe-sha |" in line)
    assert "8/10 (80%)" in ours
    assert "| 1/0/1 |" in theirs
    assert "| 0.8250 | 0.8250 |" in theirs  # mean and median of 0.95 and 0.7


def test_an_unknown_system_is_refused_naming_the_choices(capsys):
    with pytest.raises(SystemExit):
        vs_peers.parse(["--systems", "ray"])
    assert "tpe-hyperband" in capsys.readouterr().err


def test_a_dry_run_runs_every_system_scores_every_run_and_writes_its_json(tmp_path):
    out = tmp_path / "runs.json"
    cmd = [sys.executable, str(SCRIPT), "--dry-run", "--json", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    runs = json.loads(out.read_text())["runs"]
    ran = [s for s in vs_peers.SYSTEMS if s != "ray-asha" or vs_peers.ray_installed()]
    assert [r["system"] for r in runs] == ran
    if not vs_peers.ray_installed():  # CI's environment: not a dependency, said in one line
        assert "ray-asha left out: ray[tune] is not installed here" in done.stdout
    for r in runs:
        assert all(t <= r["deadline"] for t, _ in r["values"])
        assert r["score"] == vs_peers.best_by(r["values"], r["deadline"])
    ours = runs[0]
    assert ours["offered"] is not None and 0 <= ours["told"] <= ours["offered"]
    assert all(f"| {system} |" in done.stdout for system in ran)


def test_the_first_value_is_the_median_time_to_a_finite_value_and_runs_without_one_are_counted():
    runs = [
        _run("asha", 0, 0.5, values=[(1.0, math.nan), (2.0, 0.5)]),
        _run("asha", 1, 0.5, values=[(4.0, 0.5)]),
        _run("asha", 2, 0.0, values=[(5.0, 0.9)]),  # after its deadline of 4 s
    ]
    assert vs_peers.first_value(runs) == "3.0 (1 none)"
    assert vs_peers.first_value(runs[:2]) == "3.0"
    assert vs_peers.first_value(runs[2:]) == "— (1 none)"
