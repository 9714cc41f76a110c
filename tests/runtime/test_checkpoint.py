"""Checkpoints: torch state dicts under any fsspec URL, checked by SHA-256, loaded weights-only."""

import json
import stat

import numpy as np
import pytest
import torch

from hypersched_nb.runtime._bests import BestWeights
from hypersched_nb.runtime.checkpoint import (
    CheckpointError,
    best_url,
    checkpoint_url,
    load_checkpoint,
    prune_checkpoints,
    read_files,
    save_checkpoint,
    store_id,
    write_files,
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


def test_a_state_dict_a_safe_load_would_refuse_is_refused_when_saved(tmp_path):
    url = checkpoint_url(str(tmp_path), 0, 1)
    with pytest.raises(CheckpointError) as refused:
        save_checkpoint({"gadget": _Gadget()}, url, epoch=1)
    assert str(refused.value) == (
        f"state_dict() for {url} holds {__name__}._Gadget, which a safe load refuses: "
        "return tensors, numbers, strings, and lists or dicts of them"
    )
    assert not list(tmp_path.rglob("*.pt*"))  # nothing written


def test_a_state_dict_torch_cannot_save_is_one_line(tmp_path):
    import threading

    url = checkpoint_url(str(tmp_path), 0, 1)
    with pytest.raises(CheckpointError, match=r"cannot be saved \(TypeError: cannot pickle"):
        save_checkpoint({"lock": threading.Lock()}, url, epoch=1)


class _Payload:
    """What a crafted checkpoint would run when unpickled: here, touch a file."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_a_crafted_pickle_is_refused_and_runs_no_code(tmp_path):
    import hashlib
    import io

    marker = tmp_path / "ran"
    buf = io.BytesIO()
    torch.save({"model": _Payload(marker)}, buf)  # as an attacker would, past save_checkpoint
    url = checkpoint_url(str(tmp_path), 0, 1)
    path = tmp_path / "trial-00000" / "epoch-000001.pt"
    path.parent.mkdir()
    path.write_bytes(buf.getvalue())
    with pytest.raises(CheckpointError, match="holds objects a safe load refuses"):
        load_checkpoint(url, hashlib.sha256(buf.getvalue()).hexdigest())  # checksum matches
    assert not marker.exists()  # nothing of it ran


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


def test_the_last_two_best_records_stay_and_weights_never_reported_go_at_the_end(tmp_path):
    bests = BestWeights("loss", -1.0)  # lower is better
    for epoch, loss in ((1, 0.9), (2, 0.5), (3, 0.4)):
        url = best_url(str(tmp_path), 0, epoch)
        bests.offer(0, save_checkpoint(_state(), url, epoch=epoch), loss)
    # a halted batch wrote epochs 4 and 5 before its halt came; they were never reported
    for epoch in (4, 5):
        save_checkpoint(_state(), best_url(str(tmp_path), 0, epoch), epoch=epoch)
    assert len(list((tmp_path / "best").glob("*.pt"))) == 4  # epoch 1 went when 3 came
    bests.prune(str(tmp_path))
    left = sorted(p.name for p in (tmp_path / "best").glob("*.pt"))
    assert left == ["trial-00000-epoch-000002.pt", "trial-00000-epoch-000003.pt"]
    assert (bests.best().epoch, bests.best(at_most=0.45).epoch) == (3, 2)


@pytest.mark.parametrize(
    "sidecar, problem",
    [
        (b"{not json", "is not valid JSON (Expecting property name"),
        (b"\xff\xfe\xfd", "is not valid JSON ("),
        (b'["sha256", "0123"]', "is not a JSON object;"),
        (b'{"epoch": 1}', "has no `sha256` checksum;"),
        (b'{"sha256": 12345}', "has no `sha256` checksum;"),
    ],
    ids=["not-json", "not-text", "a-list", "no-sha256", "sha256-not-text"],
)
def test_a_sidecar_without_a_checksum_makes_the_checkpoint_untrusted_in_one_line(
    tmp_path, sidecar, problem
):
    url = checkpoint_url(str(tmp_path), 0, 1)
    saved = save_checkpoint(_state(), url, epoch=1)
    (tmp_path / "trial-00000" / "epoch-000001.pt.json").write_bytes(sidecar)
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(url)  # no checksum given: the sidecar's would be used
    message = str(info.value)
    assert message.startswith(f"checkpoint {url} cannot be trusted: its sidecar {url}.json ")
    assert problem in message and "\n" not in message
    assert message.endswith("; pass the SHA-256 it was saved with, or save the checkpoint again")
    assert load_checkpoint(url, saved.sha256)["epoch"] == 4  # as the message says


def test_processes_that_share_a_disk_name_the_same_store_and_other_disks_another(tmp_path):
    here = store_id(str(tmp_path / "run"))
    assert store_id(str(tmp_path / "run")) == here  # asked again, or by another process
    assert store_id(str(tmp_path / "elsewhere")) != here  # another disk under another name
    assert store_id("memory://hs-store/run") != here


def test_a_checkpoint_records_its_store_and_its_files_rebuild_it_on_another_disk(tmp_path):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    url = checkpoint_url(a, 1, 2)
    info = save_checkpoint(_state(), url, epoch=2, store=store_id(a))
    assert info.store == store_id(a)
    files = read_files(url)  # the checkpoint and its sidecar, by URL
    assert set(files) == {url, f"{url}.json"}
    moved = {k.replace(a, b): v for k, v in files.items()}
    write_files(moved)
    back = load_checkpoint(url.replace(a, b))  # checked against the sidecar that came along
    assert torch.equal(back["model"]["w"], _state()["model"]["w"])


def test_reading_a_checkpoint_that_is_not_there_is_a_checkpoint_error(tmp_path):
    with pytest.raises(CheckpointError, match="is missing"):
        read_files(checkpoint_url(str(tmp_path), 1, 2))
