"""Learning-curve traces as the trace contract (docs/design.md) fixes them: long-form CSV plus an
optional JSON sidecar.

Specified here: what a trace loads into (curves per trial, parameters, mode, scaling,
start-up cost); every malformed input is refused with a one-line TraceFormatError naming the
file and the rule (missing column, a cell that is not a number, epochs with gaps or not from 1,
an epoch repeated, negative seconds, no rows, a sidecar that is not a JSON object or has a bad
mode, scaling or start-up cost); lookup by name through $HYPERSCHED_TRACES; an unknown name lists
the known ones.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hypersched_nb.core.scaling import NONE, ScalingCurve
from hypersched_nb.errors import ConfigError, TraceFormatError
from hypersched_nb.sim.trace import TRACE_KEY, find_trace, load_trace, split_halves
from hypersched_nb.testing.pytest_policies import trace_from_curves

GOOD = """trial,epoch,metric,seconds,param_lr,param_opt
0,1,0.5,2.0,0.1,sgd
0,2,0.6,1.0,0.1,sgd
0,3,0.7,1.0,0.1,sgd
1,1,0.2,3.0,0.01,adam
1,2,,3.0,0.01,adam
"""


def write(tmp_path: Path, text: str, name: str = "t", sidecar: dict | str | None = None) -> Path:
    path = tmp_path / f"{name}.csv"
    path.write_text(text)
    if sidecar is not None:
        path.with_suffix(".json").write_text(
            sidecar if isinstance(sidecar, str) else json.dumps(sidecar)
        )
    return path


def refused(path: Path) -> str:
    with pytest.raises(TraceFormatError) as info:
        load_trace(path)
    message = str(info.value)
    assert "\n" not in message  # one line, always
    return message


def test_a_trace_loads_one_curve_per_trial(tmp_path):
    trace = load_trace(write(tmp_path, GOOD))
    assert trace.name == "t" and trace.ids == (0, 1)
    # metrics and seconds in epoch order; an empty cell is NaN (a diverged epoch)
    assert trace.metrics[0].tolist() == [0.5, 0.6, 0.7]
    assert np.isnan(trace.metrics[1][1])
    assert trace.seconds[1].tolist() == [3.0, 3.0]
    # param_ columns become the configuration, without the prefix
    assert trace.params[0] == {"lr": 0.1, "opt": "sgd"}
    assert trace.config(1) == {TRACE_KEY: 1, "lr": 0.01, "opt": "adam"}
    # curves may stop early; the longest sets the default R
    assert trace.longest == 3


def test_without_a_sidecar_higher_is_better_with_no_speed_up_and_no_start_up(tmp_path):
    trace = load_trace(write(tmp_path, GOOD))
    assert (trace.mode, trace.metric_name, trace.scaling, trace.startup_seconds) == (
        "max",
        "metric",
        NONE,
        0.0,
    )


def test_the_sidecar_gives_metric_mode_scaling_and_start_up(tmp_path):
    meta = {
        "metric": "val_loss",
        "mode": "min",
        "scaling": {"2": 1.8, "4": 3.1},
        "startup_seconds": 20,
    }
    trace = load_trace(write(tmp_path, GOOD, sidecar=meta))
    assert (trace.metric_name, trace.mode, trace.startup_seconds) == ("val_loss", "min", 20.0)
    assert trace.scaling == ScalingCurve({2: 1.8, 4: 3.1})


def test_row_order_does_not_matter(tmp_path):
    lines = GOOD.splitlines()
    shuffled = "\n".join([lines[0], *reversed(lines[1:])]) + "\n"
    a, b = load_trace(write(tmp_path, GOOD, "a")), load_trace(write(tmp_path, shuffled, "b"))
    assert all(np.array_equal(a.seconds[i], b.seconds[i]) for i in a.ids)
    assert a.metrics[0].tolist() == b.metrics[0].tolist()


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        (
            "trial,epoch,seconds\n0,1,1.0\n",
            "missing column(s) metric; need trial, epoch, metric, seconds",
        ),
        (
            "trial,metric\n0,0.5\n",
            "missing column(s) epoch, seconds; need trial, epoch, metric, seconds",
        ),
        (
            "trial,epoch,metric,seconds\n0,1,0.5,1\n0,3,0.6,1\n",
            "trial 0 epochs must run 1, 2, 3, ... without gaps",
        ),
        (
            "trial,epoch,metric,seconds\n4,2,0.5,1\n4,3,0.6,1\n",
            "trial 4 epochs must run 1, 2, 3, ... without gaps",
        ),
        (
            "trial,epoch,metric,seconds\n0,1,0.5,1\n0,1,0.6,1\n",
            "trial 0 has epoch 1 twice; keep one row per trial and epoch",
        ),
        (
            "trial,epoch,metric,seconds\n3,1,0.5,1\n3,2,0.6,1\n3,2,0.6,1\n3,2,0.7,1\n",
            "trial 3 has epoch 2 in 3 rows; keep one row per trial and epoch",
        ),
        ("trial,epoch,metric,seconds\n0,1,0.5,-1\n", "`seconds` must be >= 0 on every row"),
        ("trial,epoch,metric,seconds\n0,1,0.5,\n", "`seconds` must be >= 0 on every row"),
        ("trial,epoch,metric,seconds\n", "has no rows"),
    ],
    ids=[
        "no-metric",
        "two-missing",
        "gap",
        "not-from-1",
        "repeated",
        "repeated-thrice",
        "negative-seconds",
        "no-seconds",
        "empty",
    ],
)
def test_malformed_csv_is_refused_naming_file_and_rule(tmp_path, text, rule):
    path = write(tmp_path, text)
    message = refused(path)
    assert message == f"trace {path}: {rule}"


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        (
            "trial,epoch,metric,seconds\n3,1,0.5,1\n3,2,abc,1\n",
            "column 'metric' holds 'abc' (trial 3, epoch 2), but must hold numbers",
        ),
        (
            "trial,epoch,metric,seconds\n3,1,0.5,1\n3,2,0.6,1.5s\n",
            "column 'seconds' holds '1.5s' (trial 3, epoch 2), but must hold numbers",
        ),
        (
            "trial,epoch,metric,seconds\n3,1,0.5,1\nthree,2,0.6,1\n",
            "column 'trial' holds 'three' (row 2 below the header), but must hold whole numbers",
        ),
        (
            "trial,epoch,metric,seconds\n3,1,0.5,1\n,2,0.6,1\n",
            "column 'trial' holds nothing (row 2 below the header), but must hold whole numbers",
        ),
        (
            "trial,epoch,metric,seconds\n3,1,0.5,1\n3,two,0.6,1\n",
            "column 'epoch' holds 'two' (trial 3, row 2 below the header), but must hold whole numbers",
        ),
        (
            "trial,epoch,metric,seconds\n3,1,0.5,1\n3,1.5,0.6,1\n",
            "column 'epoch' holds 1.5 (trial 3, row 2 below the header), but must hold whole numbers",
        ),
    ],
    ids=["metric", "seconds", "trial", "empty-trial", "epoch", "fractional-epoch"],
)
def test_a_cell_that_is_not_a_number_is_refused_naming_column_value_and_row(tmp_path, text, rule):
    path = write(tmp_path, text)
    assert refused(path) == f"trace {path}: {rule}"


@pytest.mark.parametrize(
    ("sidecar", "rule"),
    [
        ("[1, 2]", 'holds an array, but must be a JSON object such as {"mode": "max", "startup_seconds": 0}'),
        ('"max"', 'holds a string, but must be a JSON object such as {"mode": "max", "startup_seconds": 0}'),
        ({"startup_seconds": "soon"}, '`startup_seconds` is "soon", but must be a number of seconds >= 0'),
        ({"startup_seconds": -1}, "`startup_seconds` is -1, but must be a number of seconds >= 0"),
        ('{"startup_seconds": Infinity}', "`startup_seconds` is Infinity, but must be a number of seconds >= 0"),
        ({"startup_seconds": True}, "`startup_seconds` is true, but must be a number of seconds >= 0"),
        ({"scaling": [1.8, 3.1]}, "scaling [1.8, 3.1] must map worker counts to speed-ups"),
        ({"scaling": {"two": 1.8}}, "scaling point 'two': 1.8 is not a worker count and a speed-up"),
    ],
    ids=["list", "string", "startup-text", "startup-negative", "startup-infinite", "startup-bool",
         "scaling-list", "scaling-point"],
)  # fmt: skip
def test_a_sidecar_that_is_not_an_object_or_has_a_bad_value_is_refused(tmp_path, sidecar, rule):
    path = write(tmp_path, GOOD, sidecar=sidecar)
    assert refused(path) == f"sidecar {path.with_suffix('.json')}: {rule}"


def test_a_sidecar_mode_other_than_max_or_min_is_refused(tmp_path):
    path = write(tmp_path, GOOD, sidecar={"mode": "maximize"})
    assert (
        refused(path)
        == f"sidecar {path.with_suffix('.json')}: `mode` is 'maximize', but must be 'max' or 'min'"
    )


def test_a_sidecar_that_is_not_json_is_refused(tmp_path):
    path = write(tmp_path, GOOD, sidecar="{mode: max")
    assert refused(path).startswith(f"sidecar {path.with_suffix('.json')}: invalid JSON (")


def test_a_name_is_looked_up_in_hypersched_traces(tmp_path, monkeypatch):
    write(tmp_path, GOOD, "mine")
    monkeypatch.setenv("HYPERSCHED_TRACES", str(tmp_path))
    # by bare name and by name with its suffix
    assert load_trace("mine").name == "mine"
    assert find_trace("mine.csv") == tmp_path / "mine.csv"


def test_an_unknown_name_lists_the_known_ones(tmp_path, monkeypatch):
    write(tmp_path, GOOD, "alpha")
    write(tmp_path, GOOD, "beta")
    monkeypatch.setenv("HYPERSCHED_TRACES", str(tmp_path))
    with pytest.raises(TraceFormatError) as info:
        load_trace("gamma")
    message = str(info.value)
    assert message.startswith("trace 'gamma' is neither a CSV file nor a known name; known: ")
    # the known names, sorted, on the same line
    known = message.split("known: ")[1].split(", ")
    assert {"alpha", "beta"} <= set(known) and known == sorted(known) and "\n" not in message


def test_a_missing_csv_path_is_looked_up_by_its_name(tmp_path, monkeypatch):
    monkeypatch.setenv("HYPERSCHED_TRACES", str(tmp_path))
    with pytest.raises(
        TraceFormatError, match=r"^trace '.*nowhere\.csv' is neither a CSV file nor a known name"
    ):
        load_trace(tmp_path / "elsewhere" / "nowhere.csv")


SHARED = Path(__file__).resolve().parents[3] / "shared" / "traces"


def test_the_shared_lcbench_traces_load_by_name():
    if not (SHARED / "lcbench-126026.csv").exists():
        pytest.skip("needs ../shared/traces (not in a fresh clone)")
    trace = load_trace("lcbench-126026")
    # 200 configurations, 52 epochs each, with the sidecar's ResNet-50 profile and 20 s start-up
    assert len(trace.ids) == 200 and trace.longest == 52
    assert trace.scaling == ScalingCurve.parse("resnet50-v100") and trace.startup_seconds == 20.0


def _rank(values) -> np.ndarray:
    return np.argsort(np.argsort(values)).astype(float)


def _epoch1_rank_correlation_among_learners(name: str) -> float:
    """Spearman's ρ of epoch 1 with the last epoch, over the trials that trained every epoch
    and learned something (best ≥ 0.2: above the 0.1 of chance)."""
    trace = load_trace(name)
    curves = [trace.metrics[t] for t in trace.ids]
    learners = [c for c in curves if len(c) == trace.longest and np.nanmax(c) >= 0.2]
    return float(
        np.corrcoef(_rank([c[0] for c in learners]), _rank([c[-1] for c in learners]))[0, 1]
    )


@pytest.mark.parametrize("name", ["digits-cnn", "digits-mlp", "mnist1d-cnn", "mnist1d-cosine"])
def test_the_shipped_traces_were_recorded_by_really_training(name):
    trace = load_trace(name)  # found in hypersched_nb/traces, no ../shared needed
    assert trace.meta["source"].startswith("recorded by scripts/record_traces.py")
    assert len(trace.ids) == 100 and trace.longest == 30
    assert trace.metric_name == "val_acc" and trace.mode == "max"


def test_on_the_scheduled_family_epoch_1_ranks_the_learners_worse_than_under_a_constant_rate():
    # the third family: a learning rate warmed up and annealed over the 30-epoch budget
    scheduled = _epoch1_rank_correlation_among_learners("mnist1d-cosine")
    for constant in ("digits-cnn", "mnist1d-cnn"):
        assert scheduled < _epoch1_rank_correlation_among_learners(constant) - 0.2


def test_split_halves_gives_two_disjoint_halves_that_keep_every_curve_and_the_trace_s_timings():
    trace = trace_from_curves([[0.1 * i, 0.1 * i + 0.05] for i in range(7)], seconds=3.0)
    past, new = split_halves(trace, seed=4)
    assert len(past.ids) == 3 and len(new.ids) == 4
    assert set(past.ids) | set(new.ids) == set(trace.ids) and not set(past.ids) & set(new.ids)
    for half in (past, new):
        for i in half.ids:
            assert (
                list(half.metrics[i]) == list(trace.metrics[i])
                and half.params[i] == trace.params[i]
            )
        assert (half.mode, half.metric_name, half.startup_seconds) == (
            trace.mode,
            trace.metric_name,
            trace.startup_seconds,
        )
    assert split_halves(trace, seed=4)[0].ids == past.ids  # the same seed, the same halves
    assert {split_halves(trace, seed=s)[0].ids for s in range(6)} != {past.ids}  # seeds differ


def test_a_subset_of_configurations_the_trace_lacks_is_refused_naming_one():
    trace = trace_from_curves([[0.1], [0.2]], seconds=1.0)
    with pytest.raises(ConfigError, match="has no configuration 5"):
        trace.subset([0, 5], name="x")
