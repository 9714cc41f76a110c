"""The benchmark command as its contract (docs/design.md) states it: arguments, table, JSON,
errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from hypersched_nb.__main__ import main as hypersched_main
from hypersched_nb.bench import cli
from hypersched_nb.core import policies as registry

CONTRACT_TOP = ["trace", "workers", "runs"]
CONTRACT_ROW = [
    "policy",
    "deadline",
    "seed",
    "best",
    "oracle",
    "trials_started",
    "time_to_target",
    "worker_seconds_busy",
]
SHARED = Path(__file__).resolve().parents[3] / "shared" / "traces"


def write_trace(folder: Path, name: str = "toy", mode: str = "max") -> Path:
    """12 configurations × 6 epochs of 10 s; config i levels off at i/12 (or 1 − i/12)."""
    lines = ["trial,epoch,metric,seconds,param_lr"]
    for i in range(12):
        for e in range(1, 7):
            level = i / 12 if mode == "max" else 1 - i / 12
            value = level * (1 - 0.5**e) if mode == "max" else level + 0.5**e
            lines.append(f"{i},{e},{value:.6f},10.0,{0.001 * (i + 1)}")
    path = folder / f"{name}.csv"
    path.write_text("\n".join(lines) + "\n")
    sidecar = {"metric": "score", "mode": mode, "scaling": {"2": 1.8}, "startup_seconds": 5}
    path.with_suffix(".json").write_text(json.dumps(sidecar))
    return path


@pytest.fixture
def toy(tmp_path) -> Path:
    return write_trace(tmp_path)


def bench(*args: str) -> int:
    return cli.main([str(a) for a in args])


def base(trace: Path, **extra) -> list[str]:
    args = {
        "--trace": trace,
        "--workers": 2,
        "--deadlines": "40,200",
        "--policies": "asha,random,hyperband",
        "--seeds": 2,
        "--configs": 8,
    }
    args.update(extra)
    return [str(x) for kv in args.items() for x in kv]


# ------------------------------------------------------------------ what it produces


def test_json_has_exactly_the_contract_fields(toy, tmp_path, capsys):
    out = tmp_path / "out.json"
    assert bench(*base(toy), "--json", out) == 0  # success
    doc = json.loads(out.read_text())
    assert list(doc) == CONTRACT_TOP  # top level: trace, workers, runs
    assert doc["trace"] == str(toy) and doc["workers"] == 2  # as given on the command line
    assert len(doc["runs"]) == 3 * 2 * 2  # policies × deadlines × seeds
    for row in doc["runs"]:
        # the contract's first fields in order, then the fields added since, at the end
        assert list(row) == CONTRACT_ROW + ["worker_seconds_billed", "early_signal_at_end"]
        assert isinstance(row["deadline"], float) and row["seed"] in (0, 1)  # seeds 0 … K−1
        assert row["best"] <= row["oracle"]  # the oracle bounds every policy
        assert row["time_to_target"] is None  # no --target given
    table = capsys.readouterr().out
    for word in ("asha", "random", "hyperband", "oracle", "40 s", "200 s", " ± "):
        assert word in table  # a row per policy, a column per deadline, mean ± sd


def test_the_table_counts_the_runs_that_ended_trusting_the_first_epochs(toy, tmp_path, capsys):
    out = tmp_path / "out.json"
    told = base(toy, **{"--policies": "hypersched,asha", "--early-signal": "trust"})
    assert bench(*told, "--json", out) == 0
    table = capsys.readouterr().out
    assert "runs that ended trusting the first epochs (early_signal='trust'" in table
    counts = table.split("runs that ended trusting")[1].splitlines()
    assert [line.split() for line in counts[3:]] == [["hypersched", "2/2", "2/2"]]  # not asha
    rows = json.loads(out.read_text())["runs"]
    assert {r["policy"]: r["early_signal_at_end"] for r in rows} == {
        "hypersched": "trust",
        "asha": None,
    }


def test_every_policy_sees_the_same_configurations_for_a_seed(toy, tmp_path):
    out = tmp_path / "out.json"
    assert bench(*base(toy), "--json", out) == 0
    oracle = {}
    for row in json.loads(out.read_text())["runs"]:
        oracle.setdefault((row["deadline"], row["seed"]), set()).add(row["oracle"])
    assert all(len(v) == 1 for v in oracle.values())  # same offers → same oracle bound


def test_the_same_command_gives_the_same_json(toy, tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert bench(*base(toy), "--json", a) == 0
    assert bench(*base(toy), "--json", b) == 0
    assert a.read_text() == b.read_text()  # deterministic: seeds fix everything


def test_two_processes_give_the_same_json_as_one(toy, tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert bench(*base(toy, **{"--policies": "asha,random"}), "--json", a) == 0
    assert bench(*base(toy, **{"--policies": "asha,random"}), "--json", b, "--jobs", 2) == 0
    assert a.read_text() == b.read_text()  # same rows in the same order


def test_target_reports_time_to_target(toy, tmp_path, capsys):
    out = tmp_path / "out.json"
    assert bench(*base(toy), "--target", 0.5, "--json", out) == 0
    rows = json.loads(out.read_text())["runs"]
    reached = [r for r in rows if r["time_to_target"] is not None]
    assert reached  # 0.5 is within reach of the better configurations
    for r in reached:
        assert r["best"] >= 0.5 and r["time_to_target"] <= r["deadline"]  # reached in time
    assert "time to reach 0.5" in capsys.readouterr().out  # its own table


def test_min_mode_trace_is_bounded_from_below_by_the_oracle(tmp_path):
    trace = write_trace(tmp_path, "loss", mode="min")
    out = tmp_path / "out.json"
    assert bench(*base(trace), "--json", out) == 0
    for row in json.loads(out.read_text())["runs"]:
        assert row["best"] >= row["oracle"]  # lower is better: nobody beats the oracle


def test_options_reach_the_simulation(toy, tmp_path):
    out = tmp_path / "out.json"
    args = base(toy, **{"--policies": "random", "--deadlines": "1000", "--seeds": 1})
    assert bench(*args, "--startup", 0, "--scaling", "none", "--max-epochs", 3, "--json", out) == 0
    row = json.loads(out.read_text())["runs"][0]
    assert row["trials_started"] == 8  # 3 epochs each: all 8 configs fit in 1000 s
    assert row["worker_seconds_busy"] == pytest.approx(8 * 3 * 10.0)  # no start-up cost


def test_dispatch_from_the_package_entry_point(toy, tmp_path):
    out = tmp_path / "out.json"
    assert hypersched_main(["bench", *base(toy), "--json", str(out)]) == 0
    assert out.exists()  # python -m hypersched_nb bench …


def test_help_lists_the_contract_options(capsys):
    assert bench("--help") == 0  # --help is not an error
    text = capsys.readouterr().out
    for option in (
        "--trace",
        "--workers",
        "--deadlines",
        "--policies",
        "--seeds",
        "--configs",
        "--max-epochs",
        "--min-epochs",
        "--eta",
        "--scaling",
        "--startup",
        "--target",
        "--json",
    ):
        assert option in text  # every option of the contract is documented


@pytest.mark.skipif(not SHARED.is_dir(), reason="needs ../shared/traces (not in a fresh clone)")
def test_shared_trace_by_name(tmp_path):
    out = tmp_path / "out.json"
    args = ["--trace", "lcbench-126026", "--workers", "8", "--deadlines", "900"]
    assert bench(*args, "--policies", "asha", "--seeds", 1, "--json", out) == 0
    assert json.loads(out.read_text())["runs"][0]["best"] > 0.5  # LCBench accuracies


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    "change, message",
    [
        ({"--policies": "asha,nope"}, "policy 'nope' is unknown; choose one of"),
        ({"--deadlines": "40,soon"}, "deadline 'soon' is not a number of seconds"),
        ({"--deadlines": "-5"}, "deadline -5 must be a positive number"),
        ({"--trace": "no-such-trace"}, "trace 'no-such-trace' is neither a CSV file nor"),
        ({"--workers": 0}, "`--workers` is 0, but must be >= 1"),
        ({"--workers": "two"}, "argument --workers: invalid int value: 'two'"),
        ({"--seeds": 0}, "`--seeds` is 0, but must be >= 1"),
        ({"--max-epochs": 0}, "`--max-epochs` is 0, but must be >= 1"),
        ({"--jobs": 3}, "argument --jobs: invalid choice: 3"),
        ({"--eta": 1}, "`eta` is 1.0, but must be > 1"),
        ({"--min-epochs": 9}, "`max_epochs` is 6, but must be >= min_epochs (9)"),
        ({"--scaling": "{oops"}, "scaling '{oops' is neither a JSON object nor one of"),
        ({"--startup": -1}, "`--startup` is -1.0, but must be >= 0 seconds"),
        ({"--cost-budget": -5}, "`--cost-budget` is -5.0, but must be > 0 worker-seconds"),
        (
            {"--early-signal": "maybe"},
            "`--early-signal` is 'maybe', but must be one of 'auto', 'trust', 'doubt'",
        ),
        (
            {"--cost-budget": 0.5},
            "`--cost-budget` is 0.5 worker-seconds, less than one epoch of one worker",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_code_2(toy, tmp_path, capsys, change, message):
    out = tmp_path / "out.json"
    assert bench(*base(toy, **change), "--json", out) == 2  # refused
    err = capsys.readouterr().err
    assert message in err  # names the value and the rule
    assert err.count("\n") == 1  # one line
    assert not out.exists()  # nothing ran, nothing written


@pytest.mark.parametrize(
    "csv, sidecar, message",
    [
        ("trial,epoch,metric,seconds\n0,1,0.5,1\n0,2,abc,1\n", None,
         "column 'metric' holds 'abc' (trial 0, epoch 2), but must hold numbers"),
        ("trial,epoch,metric,seconds\n0,1,0.5,1\n", "[1, 2]",
         "x.json: holds an array, but must be a JSON object"),
    ],
    ids=["metric-text", "sidecar-list"],
)  # fmt: skip
def test_a_malformed_trace_is_one_line_and_exit_code_2(tmp_path, capsys, csv, sidecar, message):
    trace = tmp_path / "x.csv"
    trace.write_text(csv)
    if sidecar is not None:
        trace.with_suffix(".json").write_text(sidecar)
    assert bench(*base(trace)) == 2  # refused before anything runs
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1  # one line naming what to change


def test_from_the_shell_a_malformed_trace_is_one_line_not_a_traceback(tmp_path):
    trace = tmp_path / "x.csv"
    trace.write_text("trial,epoch,metric,seconds\n0,1,0.5,1\n0,2,0.6,soon\n")
    done = subprocess.run(
        [sys.executable, "-m", "hypersched_nb", "bench", *base(trace)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr == (
        f"python -m hypersched_nb bench: trace {trace}: column 'seconds' holds 'soon' "
        "(trial 0, epoch 2), but must hold numbers\n"
    )


def test_a_missing_required_option_is_named(toy, capsys):
    assert bench("--trace", str(toy), "--workers", "2") == 2
    assert "required: --deadlines, --policies, --seeds" in capsys.readouterr().err


def test_a_missing_json_folder_is_refused_before_running(toy, tmp_path, capsys):
    assert bench(*base(toy), "--json", tmp_path / "nowhere" / "out.json") == 2
    assert "`--json` folder" in capsys.readouterr().err  # not after an hour of runs


def test_a_registered_policy_that_cannot_load_is_refused(toy, capsys, monkeypatch):
    monkeypatch.setitem(registry.REGISTRY, "ghost", "hypersched_nb.core.policies._ghost:Ghost")
    assert bench(*base(toy, **{"--policies": "asha,ghost"})) == 2
    assert "policy 'ghost' is registered but cannot be loaded" in capsys.readouterr().err


def test_a_failing_run_keeps_the_finished_ones(toy, tmp_path, capsys, monkeypatch):
    real, calls = cli.simulate, []

    def flaky(trace, policy, deadline, seed, settings):
        calls.append(policy)
        if len(calls) == 4:
            raise RuntimeError("simulated crash\nwith a second line")
        return real(trace, policy, deadline, seed, settings)

    monkeypatch.setattr(cli, "simulate", flaky)
    out = tmp_path / "out.json"
    assert bench(*base(toy), "--json", out) == 1  # a failure, not bad input
    rows = json.loads(out.read_text())["runs"]
    assert len(rows) == 3  # the three finished runs are kept
    captured = capsys.readouterr()
    assert "asha" in captured.out  # and their table is printed
    expected = (
        "python -m hypersched_nb bench: run asha deadline 200 seed 1 failed: "
        f"RuntimeError: simulated crash; 3 finished run(s) written to {out}"
    )
    assert captured.err.strip().splitlines() == [expected]  # one line naming the run


def test_bench_with_a_prior_trace_tells_hypersched_and_names_it_in_the_json(tmp_path, capsys):
    from hypersched_nb.sim.trace import load_trace, split_halves

    past, new = split_halves(load_trace("digits-cnn"), seed=0)
    paths = []
    for half in (past, new):
        rows = [
            {"trial": i, "epoch": e + 1, "metric": float(m), "seconds": float(s),
             **{f"param_{k}": v for k, v in half.params[i].items()}}
            for i in half.ids
            for e, (m, s) in enumerate(zip(half.metrics[i], half.seconds[i], strict=True))
        ]  # fmt: skip
        path = tmp_path / f"{'past' if half is past else 'new'}.csv"
        pd.DataFrame(rows).to_csv(path, index=False)
        path.with_suffix(".json").write_text(json.dumps({"metric": "val_acc", "mode": "max"}))
        paths.append(path)
    out = tmp_path / "out.json"
    args = ["--trace", paths[1], "--workers", 8, "--deadlines", 60, "--policies", "hypersched",
            "--seeds", 2, "--prior", paths[0], "--json", out]  # fmt: skip
    assert bench(*args) == 0
    doc = json.loads(out.read_text())
    assert doc["prior"] == "trace 'past'"
    assert {r["early_signal_at_end"] for r in doc["runs"]} == {"trust"}


def test_bench_refuses_a_prior_that_shares_no_parameter_in_one_line(toy, tmp_path, capsys):
    other = tmp_path / "other.csv"
    pd.DataFrame(
        [{"trial": 0, "epoch": 1, "metric": 0.5, "seconds": 1.0, "param_width": 3}]
    ).to_csv(other, index=False)
    assert bench(*base(toy), "--prior", other) == 2
    assert "shares no parameter with this search's" in capsys.readouterr().err
