"""The package's front door: two names, loaded on first use, and the notebook extension."""

import json
import subprocess
import sys


def test_importing_the_package_loads_nothing_heavy():
    code = (
        "import sys, json, hypersched_nb; "
        "print(json.dumps([m for m in ('torch', 'dask', 'distributed', 'optuna', 'IPython', 'plotly') if m in sys.modules]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert json.loads(done.stdout) == []  # Experiment and Trainable load on first use


def test_the_two_names_and_the_extension_hook():
    import hypersched_nb
    from hypersched_nb.experiment.experiment import Experiment
    from hypersched_nb.train.trainable import Trainable

    assert hypersched_nb.Experiment is Experiment and hypersched_nb.Trainable is Trainable
    assert callable(hypersched_nb.load_ipython_extension)
    assert {"Experiment", "Trainable"} <= set(dir(hypersched_nb))
