"""Checkpoints: torch state dicts under any fsspec URL, checked by SHA-256, loaded weights-only."""

import json
import pickle
import stat

import numpy as np
import pytest
import torch

from hypersched_nb.runtime.checkpoint import (
    CheckpointError,
    checkpoint_url,
    load_checkpoint,
    prune_checkpoints,
    save_checkpoint,
)


def _state():
    return {"model": {"w": torch.arange(6.0).reshape(2, 3)}, "epoch": 4, "name": "net"}


def test_round_trip_on_a_local_folder(tmp_path):
    url = checkpoint_url(str(tmp_path), 3, 4)
    info = save_checkpoint(_state(), url, epoch=4)
    back = load_checkpoint(url, info.sha256)
    assert torch.equal(back["model"]["w"], _state()["model"]["w"])  # tensors survive
    assert back["epoch"] == 4 and back["name"] == "net"  # so do plain values
    assert info.epoch == 4 and info.bytes > 0 and len(info.sha256) == 64
    assert url.endswith("trial-00003/epoch-000004.pt")  # one folder per trial
    assert not list(tmp_path.rglob("*.tmp"))  # written through a temporary name, then moved


def test_on_a_local_disk_only_the_owner_can_read_the_folders_and_files(tmp_path):
    root = tmp_path / "runs" / "search"  # neither exists yet
    save_checkpoint(_state(), checkpoint_url(str(root), 3, 4), epoch=4)

    def mode(path):
        return stat.S_IMODE(path.stat().st_mode)

    for folder in (tmp_path / "runs", root, root / "trial-00003"):
        assert mode(folder) == 0o700, folder
    for file in (root / "trial-00003").iterdir():
        assert mode(file) == 0o600, file


def test_the_sidecar_says_what_the_weights_are_of(tmp_path):
    url = checkpoint_url(str(tmp_path), 3, 4)
    about = {"trial_id": 3, "config": {"lr": np.float32(0.5), "act": "relu"},
             "metrics": {"val_acc": 0.75}}  # fmt: skip
    info = save_checkpoint(_state(), url, epoch=4, about=about)
    sidecar = json.loads((tmp_path / "trial-00003" / "epoch-000004.pt.json").read_text())
    assert sidecar["sha256"] == info.sha256 and sidecar["epoch"] == 4
    assert sidecar["about"] == {"trial_id": 3, "config": {"lr": 0.5, "act": "relu"},
                                "metrics": {"val_acc": 0.75}}  # fmt: skip


def test_any_fsspec_url_works():
    url = checkpoint_url("memory://hs-test-ckpt", 0, 1)
    save_checkpoint(_state(), url, epoch=1)
    # without a checksum given, the sidecar's is used
    assert load_checkpoint(url)["epoch"] == 4


def test_a_corrupted_checkpoint_is_refused(tmp_path):
    url = checkpoint_url(str(tmp_path), 0, 1)
    info = save_checkpoint(_state(), url, epoch=1)
    path = tmp_path / "trial-00000" / "epoch-000001.pt"
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="SHA-256"):
        load_checkpoint(url, info.sha256)


def test_a_missing_checkpoint_is_a_checkpoint_error(tmp_path):
    with pytest.raises(CheckpointError, match="missing"):
        load_checkpoint(checkpoint_url(str(tmp_path), 0, 1), "0" * 64)


class _Gadget:
    pass


def test_arbitrary_objects_are_not_unpickled(tmp_path):
    url = checkpoint_url(str(tmp_path), 0, 1)
    info = save_checkpoint({"gadget": _Gadget()}, url, epoch=1)
    # weights_only=True: only tensors, numbers, strings and containers load
    with pytest.raises(pickle.UnpicklingError):
        load_checkpoint(url, info.sha256)


def test_prune_keeps_only_the_named_checkpoints(tmp_path):
    urls = [checkpoint_url(str(tmp_path), 7, e) for e in (1, 2, 3)]
    for e, url in enumerate(urls, 1):
        save_checkpoint(_state(), url, epoch=e)
    prune_checkpoints(str(tmp_path), 7, {urls[1], urls[2]})
    left = sorted(p.name for p in (tmp_path / "trial-00007").iterdir())
    assert left == [
        "epoch-000002.pt",
        "epoch-000002.pt.json",
        "epoch-000003.pt",
        "epoch-000003.pt.json",
    ]
