"""JSON for the files a search writes (its journal, checkpoint sidecars)."""

from __future__ import annotations

__all__ = ["plain"]


def plain(value):
    """A value JSON cannot write as it is (``json.dumps(default=plain)``): a NumPy or torch
    scalar as its number, anything else as its repr."""
    item = getattr(value, "item", None)
    if item is not None:
        try:
            return item()
        except (ValueError, RuntimeError):
            pass
    return repr(value)
