"""A script that starts a search at its top level, without ``if __name__ == "__main__":``, is
refused in one line before any worker process starts: Dask's workers are spawned, and each
imports the script again."""

import subprocess
import sys
import textwrap
import types

import dask
import pytest

from hypersched_nb.errors import ConfigError
from hypersched_nb.runtime import cluster

GUARD = 'put it under  if __name__ == "__main__":'

SEARCH = """\
from hypersched_nb import Experiment
from hypersched_nb.testing.trainables import TinyRegression

exp = Experiment(TinyRegression, {"lr": [0.1, 0.01]}, metric="loss", mode="min",
                 deadline="20s", max_epochs=2, policy="asha", cluster=1,
                 checkpoint_dir="runs")
exp.run()
"""


def test_an_unguarded_script_is_refused_in_one_line_before_any_worker_starts(tmp_path):
    script = tmp_path / "search.py"
    script.write_text(SEARCH)
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0
    line = (
        "search.py:7 starts a search when the file is imported, and Dask's worker processes "
        f"import it again: {GUARD}"
    )
    lines = done.stderr.strip().splitlines()
    assert lines[0] == line  # the first thing the user sees, above the traceback
    assert lines[-1] == f"hypersched_nb.errors.ConfigError: {line}"  # which a caller can catch
    assert "Nanny" not in done.stderr and done.stderr.count("Traceback") == 1


SPAWNED = """\
import multiprocessing

from hypersched_nb.runtime import cluster

if __name__ != "__main__":  # only the spawned process, importing the script as a worker does
    cluster.check_script_guard()


def nothing():
    pass


if __name__ == "__main__":
    child = multiprocessing.get_context("spawn").Process(target=nothing)
    child.start()
    child.join()
    raise SystemExit(child.exitcode)
"""


def test_a_spawned_process_importing_the_script_says_the_line_first_and_exits(tmp_path):
    script = tmp_path / "search.py"
    script.write_text(SPAWNED)
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1  # the child's exit status
    assert done.stderr.splitlines()[0] == (
        "search.py:6 starts a search when the file is imported, and Dask's worker processes "
        f"import it again: {GUARD}"
    )
    assert "Traceback" not in done.stderr


def run_as_main(tmp_path, monkeypatch, source, *, name="__main__", spec=None):
    """Run ``source`` as the top level of the script ``search.py`` (module ``name``) in this
    process; return what it left in ``found``."""
    path = tmp_path / "search.py"
    source = textwrap.dedent(source)
    path.write_text(source)
    module = types.ModuleType(name)
    module.__file__, module.__spec__ = str(path), spec
    monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.chdir(tmp_path)
    exec(compile(source, str(path), "exec"), module.__dict__)
    return module.__dict__.get("found")


CALLED = """\
    from hypersched_nb.runtime import cluster

    def search():
        return cluster._unguarded_start()

    {}
"""


@pytest.mark.parametrize(
    "line, found",
    [("found = search()", ("search.py", 6, "__main__")),
     ('if __name__ == "__main__":\n        found = search()', None),
     ('if "__main__" == __name__:\n        found = search()', None),
     ('if __name__ != "__main__":\n        pass\n    else:\n        found = search()', None),
     ('try:\n        if __name__ == "__main__":\n            found = search()\n    finally:\n        pass', None)],
)  # fmt: skip
def test_the_line_that_starts_the_search_is_found_outside_the_guard(
    tmp_path, monkeypatch, line, found
):
    assert run_as_main(tmp_path, monkeypatch, CALLED.format(line)) == found


def test_a_search_started_later_from_a_function_passes(tmp_path, monkeypatch):
    # the module's top level has returned: not an import, so nothing starts twice
    run_as_main(tmp_path, monkeypatch, CALLED.format("found = search"))
    assert sys.modules["__main__"].search() is None


@pytest.mark.parametrize(
    "name, spec",
    [("__main__", types.SimpleNamespace(name="tool.__main__")),  # python -m tool
     ("__main__", types.SimpleNamespace(name="__main__"))],
)  # fmt: skip
def test_what_spawn_does_not_import_again_passes(tmp_path, monkeypatch, name, spec):
    assert run_as_main(tmp_path, monkeypatch, CALLED.format("found = search()"), spec=spec) is None


def test_forked_workers_import_nothing_again(tmp_path, monkeypatch):
    with dask.config.set({"distributed.worker.multiprocessing-method": "fork"}):
        assert run_as_main(tmp_path, monkeypatch, CALLED.format("found = search()")) is None


def test_a_notebook_or_python_c_passes(monkeypatch):
    monkeypatch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))  # no __file__
    monkeypatch.delitem(sys.modules, "__mp_main__", raising=False)
    assert cluster._unguarded_start() is None
    cluster.check_script_guard()


STARTS = """\
    from hypersched_nb.runtime import cluster

    cluster.check_script_guard()
"""


def test_the_check_is_a_one_line_config_error(tmp_path, monkeypatch):
    with pytest.raises(ConfigError) as err:
        run_as_main(tmp_path, monkeypatch, STARTS)
    assert str(err.value) == (
        "search.py:3 starts a search when the file is imported, and Dask's worker processes "
        f"import it again: {GUARD}"
    )


def test_a_worker_importing_the_script_exits_with_the_line_and_no_traceback(tmp_path, monkeypatch):
    with pytest.raises(SystemExit) as exit_:  # raised while spawn imports it as __mp_main__
        run_as_main(tmp_path, monkeypatch, STARTS, name="__mp_main__")
    assert str(exit_.value).startswith("search.py:3 starts a search when the file is imported")


@pytest.mark.parametrize(
    "source, line, guarded",
    [('go()\nif __name__ == "__main__":\n    go()\n', 1, False),
     ('go()\nif __name__ == "__main__":\n    go()\n', 3, True),
     ('def main():\n    go()\n\nif __name__ == "__main__":\n    main()\n', 2, False),
     ('def main():\n    go()\n\nif __name__ == "__main__":\n    main()\n', 5, True),
     ('if __name__ == "__main__":\n    x = go(\n        1,\n    )\ny = 2\n', 3, True),
     ('if __name__ == "__main__":\n    x = go(\n        1,\n    )\ny = 2\n', 5, False),
     ('if __name__ == "mine":\n    go()\n', 2, False),
     ('if __name__ is not None:\n    go()\n', 2, False)],
)  # fmt: skip
def test_under_main_guard(source, line, guarded):
    assert cluster.under_main_guard(source, line) is guarded
