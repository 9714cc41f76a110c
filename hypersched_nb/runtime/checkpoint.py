"""Checkpoints: a torch state dict in one file under any fsspec URL, with its SHA-256.

A checkpoint is written to ``<dir>/trial-<id>/epoch-<n>.pt`` through a temporary name and a
move (atomic on a local disk), next to a ``.json`` sidecar holding its checksum, size and
epoch and what it is of (``about``: the trial, its configuration and the metrics of that
epoch), so that after a crash the files alone tell which weights are which. The weights of
the search's best results so far go to ``<dir>/best/trial-<id>-epoch-<n>.pt``, apart from
the per-trial folders, whose old checkpoints are pruned. On a local disk the folders are
made readable by their owner only (0700) and the files too (0600): a checkpoint can hold
what the model learnt from private data.
Loading reads the bytes once, checks them against the checksum the caller was told (or the
sidecar's) and unpickles with ``weights_only=True``, so a checkpoint can hold tensors,
numbers, strings and containers of them, never arbitrary objects.

The same folder name may be one disk for every host (a shared mount, a bucket) or a disk of
each host's own. :func:`store_id` tells them apart: the first process to use a folder
leaves a random name in it (``.store``), and processes that read the same name share the
disk. Each checkpoint records the store it was written in, so that the runtime knows which
hosts can read it as it is and which must be sent its bytes (:func:`read_files`,
:func:`write_files`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import os
import pickle
from collections.abc import Mapping
from dataclasses import dataclass

from hypersched_nb._json import plain
from hypersched_nb.errors import HyperschedError

__all__ = [
    "BestCheckpoint",
    "Checkpoint",
    "CheckpointError",
    "best_url",
    "checkpoint_url",
    "earlier_checkpoint",
    "load_checkpoint",
    "private_folders",
    "prune_bests",
    "prune_checkpoints",
    "remove_checkpoint",
    "read_files",
    "save_checkpoint",
    "store_id",
    "write_files",
    "written_bests",
    "written_checkpoint",
]


class CheckpointError(HyperschedError, OSError):
    """A checkpoint is missing, truncated or does not match its checksum."""


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One written checkpoint: where it is, its checksum and size, the epochs it holds, and
    the store (:func:`store_id`) it was written in (None: not known)."""

    url: str
    sha256: str
    bytes: int
    epoch: int
    store: str | None = None


@dataclass(frozen=True, slots=True)
class BestCheckpoint:
    """The weights of one of the search's best results: where they are, their checksum,
    and which result they are (``trial_id`` after ``epoch`` epochs, reporting ``metric``)."""

    url: str
    sha256: str
    epoch: int
    trial_id: int
    metric: float

    @classmethod
    def of(cls, ckpt: Checkpoint, *, trial_id: int, metric: float) -> BestCheckpoint:
        return cls(ckpt.url, ckpt.sha256, ckpt.epoch, trial_id, metric)


def checkpoint_url(directory: str, trial_id: int, epoch: int) -> str:
    """Where trial ``trial_id``'s checkpoint after ``epoch`` epochs lives under ``directory``."""
    return f"{directory.rstrip('/')}/trial-{trial_id:05d}/epoch-{epoch:06d}.pt"


def best_url(directory: str, trial_id: int, epoch: int) -> str:
    """Where the weights of trial ``trial_id`` after ``epoch`` epochs go when they are the
    search's best so far."""
    return f"{directory.rstrip('/')}/best/trial-{trial_id:05d}-epoch-{epoch:06d}.pt"


def save_checkpoint(
    state: dict, url: str, *, epoch: int, about: Mapping | None = None, store: str | None = None
) -> Checkpoint:
    """Write ``state`` (a torch state dict) to ``url``, and its sidecar with ``about`` (what
    the weights are of: plain values); ``store`` is the :func:`store_id` of the folder it
    goes to. Returns what :func:`load_checkpoint` checks against."""
    import fsspec

    data = _serialised(state, url)
    info = Checkpoint(url, hashlib.sha256(data).hexdigest(), len(data), epoch, store)
    sidecar = {**dataclasses.asdict(info), "about": dict(about or {})}
    fs, path = fsspec.core.url_to_fs(url)
    _write(fs, path, data)
    _write(fs, f"{path}.json", json.dumps(sidecar, default=plain).encode("utf-8"))
    return info


def _serialised(state: dict, url: str) -> memoryview:
    """``state`` as torch.save writes it; a one-line CheckpointError when it cannot be
    written, or holds what :func:`load_checkpoint` would refuse (a class of the user's: a
    safe load runs no code, so it unpickles tensors, numbers, strings and containers only)."""
    import torch
    from torch.serialization import get_unsafe_globals_in_checkpoint

    buf = io.BytesIO()
    try:
        torch.save(state, buf)
    except Exception as exc:  # noqa: BLE001 - pickle raises many types for what it cannot take
        raise CheckpointError(
            f"state_dict() for {url} cannot be saved ({type(exc).__name__}: {exc}): return "
            "tensors, numbers, strings, and lists or dicts of them"
        ) from None
    buf.seek(0)
    unsafe = get_unsafe_globals_in_checkpoint(buf)
    if unsafe:
        raise CheckpointError(
            f"state_dict() for {url} holds {', '.join(sorted(unsafe))}, which a safe load "
            "refuses: return tensors, numbers, strings, and lists or dicts of them"
        )
    return buf.getbuffer()


def _write(fs, path: str, data) -> None:
    """Write ``data`` to ``path`` through a temporary name and a move; on a local disk, in
    folders and a file that only their owner can read."""
    from fsspec.implementations.local import LocalFileSystem

    tmp = f"{path}.tmp"
    try:
        if not isinstance(fs, LocalFileSystem):
            fs.makedirs(path.rpartition("/")[0], exist_ok=True)
            with fs.open(tmp, "wb") as f:
                f.write(data)
            fs.mv(tmp, path)
            return
        private_folders(os.path.dirname(path))
        with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError:  # a full disk, say: what was written of it goes
        with contextlib.suppress(OSError):
            fs.rm(tmp)
        raise


def private_folders(folder: str) -> None:
    """Make ``folder`` and its missing parents, each with mode 0700."""
    missing = []
    while folder and not os.path.isdir(folder):
        missing.append(folder)
        folder = os.path.dirname(folder)
    for made in reversed(missing):
        try:
            os.mkdir(made, 0o700)
        except FileExistsError:  # made meanwhile by another worker
            pass


def store_id(directory: str) -> str:
    """The name of the store that holds ``directory``: the same in every process that
    reads and writes the same files there, different where a host has a disk of its own
    under the same name. Left in ``<directory>/.store`` by the first process to ask."""
    import uuid

    import fsspec

    fs, root = fsspec.core.url_to_fs(directory)
    path = f"{root.rstrip('/')}/.store"
    if not fs.exists(path):
        _write(fs, path, uuid.uuid4().hex.encode())
    with fs.open(path, "rb") as f:
        return f.read().decode().strip()


def read_files(url: str) -> dict[str, bytes]:
    """The bytes of the checkpoint at ``url`` and of its sidecar, by URL: what another
    host needs to load it (:func:`write_files`)."""
    import fsspec

    out = {}
    for u in (url, f"{url}.json"):
        fs, path = fsspec.core.url_to_fs(u)
        try:
            with fs.open(path, "rb") as f:
                out[u] = f.read()
        except FileNotFoundError:
            raise CheckpointError(f"checkpoint {u} is missing") from None
    return out


def write_files(files: Mapping[str, bytes]) -> None:
    """Write the files :func:`read_files` read, each where it was (on this host's disk)."""
    import fsspec

    for url, data in files.items():
        fs, path = fsspec.core.url_to_fs(url)
        _write(fs, path, data)


def load_checkpoint(url: str, sha256: str | None = None, *, map_location="cpu") -> dict:
    """Read the state dict at ``url``, checking it against ``sha256`` (default: its sidecar)."""
    import fsspec
    import torch

    fs, path = fsspec.core.url_to_fs(url)
    try:
        with fs.open(path, "rb") as f:
            data = f.read()
        if sha256 is None:
            with fs.open(f"{path}.json", "rb") as f:
                sha256 = _written_sha256(f.read(), url)
    except FileNotFoundError as exc:
        raise CheckpointError(f"checkpoint {url} is missing ({exc.filename or exc})") from None
    got = hashlib.sha256(data).hexdigest()
    if got != sha256:
        raise CheckpointError(
            f"checkpoint {url} has SHA-256 {got[:12]}…, but {sha256[:12]}… was written"
        )
    try:
        return torch.load(io.BytesIO(data), map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CheckpointError(
            f"checkpoint {url} holds objects a safe load refuses, so nothing of it ran or "
            f"loaded ({first})"
        ) from None


def _written_sha256(sidecar: bytes, url: str) -> str:
    """The checksum the sidecar of the checkpoint at ``url`` holds; a CheckpointError when
    it holds none (not JSON, not an object, no ``sha256``): then nothing vouches for the
    checkpoint's bytes."""
    try:
        record = json.loads(sidecar)
    except ValueError as exc:  # not JSON, or not UTF-8 text
        problem = f"is not valid JSON ({exc})"
    else:
        if isinstance(record, dict) and isinstance(record.get("sha256"), str):
            return record["sha256"]
        problem = "has no `sha256` checksum" if isinstance(record, dict) else "is not a JSON object"
    raise CheckpointError(
        f"checkpoint {url} cannot be trusted: its sidecar {url}.json {problem}; pass the "
        "SHA-256 it was saved with, or save the checkpoint again"
    )


def prune_checkpoints(directory: str, trial_id: int, keep: set[str]) -> None:
    """Delete trial ``trial_id``'s checkpoints (and sidecars) whose URL is not in ``keep``."""
    _prune(f"{directory.rstrip('/')}/trial-{trial_id:05d}", "epoch-*.pt", keep)


def prune_bests(directory: str, keep: set[str]) -> None:
    """Delete the best weights under ``directory`` (and sidecars) whose URL is not in
    ``keep``: those of epochs a halted batch trained but never reported."""
    _prune(f"{directory.rstrip('/')}/best", "*.pt", keep)


def _prune(folder: str, pattern: str, keep: set[str]) -> None:
    import fsspec

    fs, root = fsspec.core.url_to_fs(folder)
    kept = {fsspec.core.url_to_fs(u)[1] for u in keep}
    for path in fs.glob(f"{root}/{pattern}"):
        if path not in kept:
            _remove(fs, path)


def remove_checkpoint(url: str) -> None:
    """Delete the checkpoint at ``url`` and its sidecar (nothing if they are gone)."""
    import fsspec

    _remove(*fsspec.core.url_to_fs(url))


def _remove(fs, path: str) -> None:
    for p in (path, f"{path}.json"):
        try:
            fs.rm(p)
        except FileNotFoundError:
            pass


def written_checkpoint(directory: str, trial_id: int, *, at_most: int) -> Checkpoint | None:
    """The latest checkpoint of trial ``trial_id`` under ``directory`` that holds at most
    ``at_most`` epochs, as its sidecar describes it (None if there is none): where a search
    that outlived its kernel resumes the trial from."""
    return _newest(checkpoint_url(directory, trial_id, 0), below=at_most + 1)


def earlier_checkpoint(ckpt: Checkpoint) -> Checkpoint | None:
    """The newest checkpoint beside ``ckpt`` (of the same trial) that holds fewer epochs, as
    its sidecar describes it; None if there is none: where a trial goes back to when
    ``ckpt`` is refused."""
    return _newest(ckpt.url, below=ckpt.epoch)


def _newest(beside: str, *, below: int) -> Checkpoint | None:
    """The checkpoint of most epochs, fewer than ``below``, in the folder of ``beside``."""
    import fsspec

    fs, path = fsspec.core.url_to_fs(beside)
    found = [
        s
        for s in _sidecars(fs, f"{path.rpartition('/')[0]}/epoch-*.pt.json")
        if s["epoch"] < below and fs.exists(s["path"])
    ]
    if not found:
        return None
    last = max(found, key=lambda s: s["epoch"])
    return Checkpoint(last["url"], last["sha256"], last["bytes"], last["epoch"])


def written_bests(directory: str, metric: str) -> list[BestCheckpoint]:
    """Every best's weights under ``directory`` whose sidecar says which trial and epoch
    they are and what ``metric`` they reported, oldest epoch first."""
    import fsspec

    fs, root = fsspec.core.url_to_fs(f"{directory.rstrip('/')}/best")
    out = []
    for s in _sidecars(fs, f"{root}/*.pt.json"):
        value = (s["about"].get("metrics") or {}).get(metric)
        if isinstance(value, (int, float)) and "trial_id" in s["about"]:
            out.append(
                BestCheckpoint(s["url"], s["sha256"], s["epoch"], s["about"]["trial_id"], value)
            )
    return out


def _sidecars(fs, pattern: str) -> list[dict]:
    """The sidecars matching ``pattern`` that read (others are skipped: a write cut short),
    each with ``path`` (its checkpoint's, on ``fs``) and ``url`` as found here."""
    out = []
    for path in fs.glob(pattern):
        try:
            with fs.open(path, "r") as f:
                sidecar = json.load(f)
            epoch, sha = int(sidecar["epoch"]), str(sidecar["sha256"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        checkpoint = path.removesuffix(".json")
        url = (
            fs.unstrip_protocol(checkpoint) if "://" in str(sidecar.get("url", "")) else checkpoint
        )
        out.append({**sidecar, "epoch": epoch, "sha256": sha, "path": checkpoint, "url": url,
                    "about": sidecar.get("about") or {}})  # fmt: skip
    return out
