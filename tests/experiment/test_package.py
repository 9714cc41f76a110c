"""The package's front door: two names, loaded on first use, and the notebook extension."""

import json
import subprocess
import sys
import types

import pytest

from hypersched_nb._lazy import lazy, load


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
    from hypersched_nb.notebook.experiment import Experiment
    from hypersched_nb.train.trainable import Trainable

    assert hypersched_nb.Experiment is Experiment and hypersched_nb.Trainable is Trainable
    assert callable(hypersched_nb.load_ipython_extension)
    assert {"Experiment", "Trainable"} <= set(dir(hypersched_nb))
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        hypersched_nb.Nothing  # noqa: B018 - the lookup is the test


def test_the_public_experiment_is_the_search_with_its_dashboard():
    from hypersched_nb import Experiment
    from hypersched_nb.experiment.experiment import Experiment as Search

    # the search knows nothing of widgets; the notebook layer adds the view
    assert issubclass(Experiment, Search) and not hasattr(Search, "dashboard")
    assert callable(Experiment.dashboard)
    # a replay is built as the class it is asked of
    replay = Experiment.replay("digits-cnn", policy="asha", deadline=10, workers=2, configs=2)
    assert type(replay) is Experiment


def test_lazy_names_load_on_first_use_and_stay(monkeypatch):
    package = types.ModuleType("lazy_pkg")
    monkeypatch.setitem(sys.modules, "lazy_pkg", package)
    package.__getattr__, package.__dir__ = lazy(
        "lazy_pkg", {"sqrt": "math", "OrderedDict": "collections"}
    )
    assert package.sqrt(9.0) == 3.0 and "sqrt" in vars(package)  # kept after the first use
    assert dir(package) == sorted({*vars(package), "OrderedDict", "sqrt"})
    with pytest.raises(AttributeError, match="'lazy_pkg' has no attribute 'cos'"):
        package.cos  # noqa: B018 - the lookup is the test
    # "module:attr" names an attribute, "module" the module itself
    assert load("math:pi") > 3 and load("math").__name__ == "math"
