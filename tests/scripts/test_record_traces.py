"""scripts/record_traces.py: a tiny trace recorded end to end by really training, loaded as
the simulator loads the shipped ones; and a scaling run that fails is tried again.

The script is not a module of the package: it is loaded from its path."""

import subprocess
import sys
from pathlib import Path

import pytest

from hypersched_nb.sim.trace import load_trace
from hypersched_nb.testing.scripts import load_script

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "record_traces.py"

record_traces = load_script(SCRIPT)


def test_a_tiny_recording_is_a_trace_with_its_sidecar(tmp_path):
    done = subprocess.run(
        [
            sys.executable, str(SCRIPT), "--only", "digits-cnn", "--configs", "3",
            "--epochs", "2", "--scaling-epochs", "2", "--startup-runs", "1",
            "--out", str(tmp_path),
        ],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    trace = load_trace(str(tmp_path / "digits-cnn.csv"))
    assert len(trace.ids) == 3 and trace.longest <= 2  # 3 configurations, up to 2 epochs
    assert trace.meta["source"].startswith("recorded by scripts/record_traces.py")
    assert trace.meta["scaling_detail"]["failed_tries"] == []  # the first try worked
    assert trace.scaling.as_dict()[2] > 0  # a measured speed-up on 2 gloo processes


@pytest.mark.parametrize(
    ("example", "dataset"),
    [("DigitsCNN", "digits"), ("DigitsMLP", "digits"), ("MNIST1DCNN", "mnist1d"),
     ("MNIST1DCosine", "mnist1d")],
)  # fmt: skip
def test_each_example_s_start_up_is_timed_with_its_own_dataset_loaded(example, dataset):
    # the library a start-up imports and the data warmed before the trials follow the class,
    # not a list of names: a new example is timed as a worker that already imported it
    assert record_traces._dataset(example) == dataset


def test_a_scaling_run_that_fails_is_tried_again(monkeypatch):
    tries = iter([(None, [-6, 0]), (([1.0, 1.2], [0.6, 0.7]), [0, 0])])
    monkeypatch.setattr(record_traces, "_scaling_run", lambda *a: next(tries))
    got = record_traces.measure_scaling("DigitsCNN", epochs=2, seed=0)
    assert got["speedup"] == pytest.approx(1.1 / 0.65, abs=1e-3)
    assert got["failed_tries"] == [[-6, 0]]  # the abort is on record


def test_after_the_last_try_it_says_so_in_one_line(monkeypatch):
    monkeypatch.setattr(record_traces, "_scaling_run", lambda *a: (None, [-6, 0]))
    with pytest.raises(RuntimeError) as err:
        record_traces.measure_scaling("DigitsCNN", epochs=2, seed=0, tries=2)
    assert str(err.value) == (
        "scaling run of DigitsCNN on 2 gloo processes failed 2 times (exit codes "
        "[[-6, 0], [-6, 0]]); the trace's CSV is written, rerun this script to write its sidecar"
    )
