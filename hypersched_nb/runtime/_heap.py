"""The kernel's heap at a search's start, left out of its garbage collections while it runs.

A full collection walks every object the process tracks, and every thread waits meanwhile:
in a notebook kernel, the modules imported before the search (pandas, torch, plotly, the
widgets: some 300,000 objects) cost each one hundreds of milliseconds, landing on the
dashboard's redraw or on ``results()``. :func:`hold` moves what is alive when a search
starts to the permanent generation (``gc.freeze()``), so that the collections during the
search walk only what was made since; :func:`release` hands it back (``gc.unfreeze()``) when
the last search running ends, so that what becomes garbage later (an old ``Experiment``) is
still collected. Searches that overlap share one hold.

A search of thousands of trials makes hundreds of thousands of objects of its own (its
trials' records, Dask's futures and messages), and those that outlive one full collection
mostly live on to the end. So, while a hold lasts, what survives a full collection is
frozen too (:func:`_refreeze`, a ``gc.callbacks`` hook): the next one walks only what was
made since the last, not the whole search. The price: a reference cycle among objects
frozen meanwhile that becomes garbage is collected only after the release.
"""

from __future__ import annotations

import gc
import threading

__all__ = ["hold", "release"]

_LOCK = threading.Lock()
_HELD = [0]  # searches holding the freeze


def hold() -> None:
    """Leave what is alive now out of the collections until the matching :func:`release`."""
    with _LOCK:
        _HELD[0] += 1
        gc.freeze()  # again for a later search: what it made meanwhile joins
        if _refreeze not in gc.callbacks:
            gc.callbacks.append(_refreeze)


def release() -> None:
    """End one :func:`hold`; the last hands every frozen object back to the collector."""
    with _LOCK:
        if _HELD[0] == 0:
            return
        _HELD[0] -= 1
        if _HELD[0] == 0:
            if _refreeze in gc.callbacks:
                gc.callbacks.remove(_refreeze)
            gc.unfreeze()


def _refreeze(phase: str, info: dict) -> None:
    """After a full collection during a hold, freeze what survived it."""
    if phase == "stop" and info.get("generation") == 2:
        gc.freeze()
