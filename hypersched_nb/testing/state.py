"""Two object graphs compared by value: where a rebuilt state differs from the original.

Pickled bytes are too strict for this (they also record which values are shared, which a
rebuilt state need not repeat) and ``==`` too weak (most of our objects compare by
identity), so :func:`differences` walks both graphs: numbers (NaN equal to NaN), strings,
containers in order, NumPy generators by their state, and objects by their attributes.
"""

from __future__ import annotations

import math
import types

import numpy as np

__all__ = ["differences"]

_PLAIN = (int, str, bool, bytes, type(None))
_CODE = (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.ModuleType)


def differences(a, b, *, most: int = 5) -> list[str]:
    """Up to ``most`` paths where ``a`` and ``b`` differ (empty: the same by value)."""
    found: list[str] = []
    _walk(a, b, "", set(), found, most)
    return found


def _walk(a, b, path: str, seen: set, found: list, most: int) -> None:
    if len(found) >= most or (id(a), id(b)) in seen:
        return
    seen.add((id(a), id(b)))
    if type(a) is not type(b):
        found.append(f"{path}: {type(a).__name__} != {type(b).__name__}")
    elif isinstance(a, (dict, list, tuple)):
        _items(a, b, path, seen, found, most)
    else:
        differs = _value_differs(a, b)
        if differs is None:
            _attributes(a, b, path, seen, found, most)
        elif differs:
            found.append(f"{path}: {a!r} != {b!r}")


def _value_differs(a, b) -> bool | None:
    """Whether two values of one of the kinds compared as values differ; None for others."""
    if isinstance(a, float):
        return a != b and not (math.isnan(a) and math.isnan(b))
    if isinstance(a, _PLAIN) or isinstance(a, _CODE):
        return a != b
    if isinstance(a, np.random.Generator):
        return a.bit_generator.state != b.bit_generator.state
    if isinstance(a, np.ndarray):
        return not np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    return None


def _items(a, b, path: str, seen: set, found: list, most: int) -> None:
    if isinstance(a, dict):
        if list(a) != list(b):
            found.append(f"{path}: keys {list(a)[:8]} != {list(b)[:8]}")
            return
        pairs = [(f"{path}[{k!r}]", a[k], b[k]) for k in a]
    elif len(a) != len(b):
        found.append(f"{path}: {len(a)} items != {len(b)}")
        return
    else:
        pairs = [(f"{path}[{i}]", x, y) for i, (x, y) in enumerate(zip(a, b, strict=True))]
    for where, x, y in pairs:
        _walk(x, y, where, seen, found, most)


def _attributes(a, b, path: str, seen: set, found: list, most: int) -> None:
    slots = [s for cls in type(a).__mro__ for s in getattr(cls, "__slots__", ())]
    if not slots and not hasattr(a, "__dict__"):  # a value of its own (an enum): its equality
        if a != b:
            found.append(f"{path}: {a!r} != {b!r}")
        return
    names = list(getattr(a, "__dict__", {})) + [s for s in slots if hasattr(a, s)]
    for name in names:
        _walk(getattr(a, name), getattr(b, name, None), f"{path}.{name}", seen, found, most)
