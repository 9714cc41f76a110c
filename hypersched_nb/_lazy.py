"""Names imported on first use: the one loader of the package ``__init__`` files.

A package lists what it offers and where each name lives; the module behind a name is
imported the first time the name is read, so that importing the package stays light (no
torch, no Dask). :func:`load` imports what a ``"module:attr"`` string names, as the policy
registry and the ``%hypersched`` magic write them.

Example:
    >>> load("math:pi") > 3
    True
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping

__all__ = ["lazy", "load"]


def load(target: str):
    """What ``"module:attr"`` names (``"module"`` alone: the module itself)."""
    module, _, attr = target.partition(":")
    found = importlib.import_module(module)
    return getattr(found, attr) if attr else found


def lazy(
    package: str, names: Mapping[str, str], *, submodules: Iterable[str] = ()
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of ``package``: each of ``names`` (name ->
    the module that defines it) and each of ``submodules`` is imported when first read, then
    kept in the package as a plain attribute::

        __getattr__, __dir__ = lazy(__name__, {"Trainable": "hypersched_nb.train.trainable"})
    """
    targets = {name: f"{module}:{name}" for name, module in names.items()}
    targets |= {name: f"{package}.{name}" for name in submodules}

    def __getattr__(name: str):
        target = targets.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = load(target)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(targets))

    return __getattr__, __dir__
