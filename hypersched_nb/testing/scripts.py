"""The project's scripts (``benchmarks/``, ``scripts/``) as modules, for their tests.

They are files to run, not modules of the package: :func:`load_script` loads one from its
path, under its file name, so that a test can call its functions.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

__all__ = ["load_script"]


def load_script(path: Path) -> ModuleType:
    """The script at ``path``, loaded as a module named after its file."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
