"""The layers of docs/design.md hold:
core <- train <- sim | runtime <- experiment <- notebook | bench.

Specified here: import-linter's layers contract (pyproject.toml) is kept, and no module
looks a higher layer up by name (which import-linter cannot see); importing the core, with
every registered policy module, loads no heavy or asynchronous library (dask,
distributed, torch, ipywidgets, plotly, asyncio) in a fresh interpreter; and no module under
hypersched_nb/core imports time, datetime, os, threading, the stdlib random or asyncio
(h11's purity: the core reads no clock, touches no I/O, starts no thread, draws no
unseeded randomness).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "hypersched_nb" / "core"
HEAVY = ("dask", "distributed", "torch", "ipywidgets", "plotly", "asyncio")
IMPURE = ("time", "datetime", "os", "threading", "random", "asyncio")
#: the layers of pyproject.toml's contract, lowest first
LAYERS = (("core",), ("train",), ("sim", "runtime"), ("experiment",), ("notebook", "bench"))
LOOKUPS = ("import_module", "__import__", "load")


def test_the_import_linter_layers_contract_is_kept():
    done = subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports")],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    # lint-imports exits 0 only when every contract in pyproject.toml is kept
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "broken" in done.stdout and "0 broken" in done.stdout


def layer_of(module: str) -> int | None:
    """The layer of ``hypersched_nb.<package>...`` (None outside the layers)."""
    parts = module.split(".")
    if parts[0] != "hypersched_nb" or len(parts) < 2:
        return None
    return next((i for i, names in enumerate(LAYERS) if parts[1] in names), None)


def lookups_of(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import by name with a literal name: ``import_module("m")``,
    ``__import__("m")``, ``load("m:attr")``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
        arg = node.args[0]
        if name in LOOKUPS and isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            found.append((node.lineno, arg.value.partition(":")[0]))
    return found


def test_no_module_looks_up_a_higher_layer_by_name():
    package = ROOT / "hypersched_nb"
    upward = []
    for path in sorted(package.rglob("*.py")):
        own = layer_of("hypersched_nb." + ".".join(path.relative_to(package).parts))
        for line, module in lookups_of(path):
            target = layer_of(module)
            if own is not None and target is not None and target > own:
                upward.append(f"{path.relative_to(ROOT)}:{line} looks up {module}")
    assert upward == []


def test_the_lookup_check_sees_every_form(tmp_path):
    src = tmp_path / "m.py"
    src.write_text(
        "import importlib\nimportlib.import_module('hypersched_nb.notebook.dashboard')\n"
        "__import__('hypersched_nb.bench')\nload('hypersched_nb.sim.trace:Trace')\nload(name)\n"
    )
    found = [m for _, m in lookups_of(src)]
    assert found == [
        "hypersched_nb.notebook.dashboard",
        "hypersched_nb.bench",
        "hypersched_nb.sim.trace",
    ]
    assert [layer_of(m) for m in found] == [4, 4, 2]


def test_importing_the_core_and_every_policy_loads_nothing_heavy():
    from hypersched_nb.core.policies import REGISTRY

    modules = sorted({target.partition(":")[0] for target in REGISTRY.values()})
    code = (
        "import json, sys, importlib\n"
        "before = set(sys.modules)\n"
        "import hypersched_nb.core, hypersched_nb.core.policies\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "print(json.dumps(sorted(set(sys.modules) - before)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    added = json.loads(done.stdout)
    heavy = sorted(m for m in added if m.split(".")[0] in HEAVY)
    # not one module of these libraries, not even a submodule
    assert heavy == []
    # the check saw the policy modules really imported
    assert set(modules) <= set(added)


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, top-level module) of every absolute import in a source file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.split(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module.split(".")[0]))
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", None) == "__import__"
            and node.args
        ):
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found.append((node.lineno, arg.value.split(".")[0]))
    return found


def test_no_core_module_imports_a_clock_io_threads_or_stdlib_random():
    offending = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in sorted(CORE.rglob("*.py"))
        for line, module in imports_of(path)
        if module in IMPURE
    ]
    assert offending == []


def test_the_purity_check_sees_every_form_of_import(tmp_path):
    # the AST check itself catches plain, dotted, from- and __import__ forms
    src = tmp_path / "m.py"
    src.write_text(
        "import os.path\nfrom time import monotonic\nimport numpy.random\n__import__('threading')\nfrom . import random\n"
    )
    assert [m for _, m in imports_of(src)] == ["os", "time", "numpy", "threading"]
