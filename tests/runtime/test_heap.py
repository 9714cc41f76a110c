"""While a search runs, the kernel's garbage collections leave out what was alive at its
start; once the last search ends, all of it is collectable again."""

import gc

import pytest

from hypersched_nb.runtime import _heap


@pytest.fixture(autouse=True)
def no_other_search(monkeypatch):
    """These specs count holds from none: a hold another test left (a search never closed)
    is set aside, and its freeze undone, for their length."""
    monkeypatch.setattr(_heap, "_HELD", [0])
    hooked = _heap._refreeze in gc.callbacks
    if hooked:
        gc.callbacks.remove(_heap._refreeze)
    gc.unfreeze()
    yield
    gc.unfreeze()
    if hooked and _heap._refreeze not in gc.callbacks:
        gc.callbacks.append(_heap._refreeze)


def test_what_is_alive_at_the_start_is_frozen_until_the_search_ends():
    assert gc.get_freeze_count() == 0
    _heap.hold()
    try:
        assert gc.get_freeze_count() > 0  # the modules imported so far, at least
    finally:
        _heap.release()
    assert gc.get_freeze_count() == 0  # an old search's garbage is collected again


def test_overlapping_searches_unfreeze_when_the_last_one_ends():
    _heap.hold()
    _heap.hold()
    _heap.release()
    assert gc.get_freeze_count() > 0  # one search still runs
    _heap.release()
    assert gc.get_freeze_count() == 0
    _heap.release()  # a release too many changes nothing
    assert gc.get_freeze_count() == 0


def test_what_survives_a_full_collection_during_a_search_is_frozen_too():
    _heap.hold()
    try:
        made = [[i] for i in range(10_000)]  # the search's own objects
        before = gc.get_freeze_count()
        gc.collect()
        assert gc.get_freeze_count() >= before + len(made)  # the next one walks none of them
    finally:
        _heap.release()
    assert gc.get_freeze_count() == 0 and _heap._refreeze not in gc.callbacks
    gc.collect()
    assert gc.get_freeze_count() == 0  # no hold: a collection freezes nothing
