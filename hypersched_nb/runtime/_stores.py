"""Which store each worker's checkpoint folder is, asked before a search starts.

The client's checkpoint folder is its ``home`` store (its
:func:`~hypersched_nb.runtime.checkpoint.store_id`). A worker that finds another store under
that folder (a host with a disk of its own) is fine for a local folder, whose checkpoints
then travel through Dask; a URL (``://``) is meant to be one store for every host, so a
worker that finds another there, or one that cannot write the folder at all, is one line:
raised before anything starts, or warned of when the worker joins later.
"""

from __future__ import annotations

from hypersched_nb.errors import ConfigError, warn
from hypersched_nb.runtime import _worker
from hypersched_nb.runtime._messages import Failed
from hypersched_nb.runtime._slots import Slot, Slots
from hypersched_nb.runtime.checkpoint import store_id

__all__ = ["home_store", "note_store", "probe_stores"]


def home_store(directory: str) -> str:
    """The store_id of ``directory`` on this kernel's host: one line if it cannot be made."""
    try:
        return store_id(directory)
    except OSError as exc:
        raise ConfigError(
            f"checkpoint_dir {directory!r} cannot be written from this kernel "
            f"({type(exc).__name__}: {exc}): give a folder or URL it can write"
        ) from None


def probe_stores(client, slots: Slots, directory: str, home: str) -> None:
    """Ask every worker which store ``directory`` is (see :func:`note_store`); raises
    :class:`ConfigError` for the first that is not fit."""
    try:
        seen = client.run(_worker.store, directory, on_error="return")
    except Exception:  # noqa: BLE001 - unreachable now: each worker's warm-up says later
        return
    for s in slots.all():
        if s.addr in seen:
            note_store(s, seen[s.addr], directory, home, raise_=True)


def note_store(slot: Slot, found, directory: str, home: str, *, raise_: bool) -> None:
    """Note the store ``slot``'s worker ``found`` under ``directory`` (a store_id, a
    Failed or an exception); what is wrong with it is raised (``raise_``) or warned of."""
    if isinstance(found, str):
        slot.store = found
    problem = _store_problem(directory, home, slot, found)
    if problem is not None and raise_:
        raise ConfigError(problem)
    if problem is not None:
        warn(problem)


def _store_problem(directory: str, home: str, slot: Slot, found) -> str | None:
    """What is wrong with the store ``slot``'s worker ``found`` under ``directory``
    (a store_id, a Failed or an exception), given this kernel's ``home``; None if nothing."""
    import socket

    from distributed.comm import get_address_host

    there = f"worker {slot.name} (host {get_address_host(slot.addr)})"
    here = f"this kernel (host {socket.gethostname()})"
    if not isinstance(found, str):
        why = found.error if isinstance(found, Failed) else f"{type(found).__name__}: {found}"
        return (
            f"checkpoint_dir {directory!r} cannot be written from {there}, though {here} "
            f"writes it ({why}): give every worker a folder it can write"
        )
    if "://" in directory and found != home:
        return (
            f"checkpoint_dir {directory!r} is not one store for every host: {there} finds "
            f"other files there than {here}: give a URL every host reaches (a bucket, a "
            "shared mount), or a local folder, whose checkpoints then travel through Dask"
        )
    return None
