"""Odd places to save to and load from: folders, FIFOs, devices, links, folders that cannot be
entered, a file where a folder should be, dtypes numpy does not have. Each is a clear error (or,
for a link, a documented write-through), and nothing that is not a regular file is replaced."""

import os
import stat

import numpy as np
import pytest
from oracle import torch
from tiny_lm import TinyLM

import minigrad as mg
from minigrad.tools import io as mgio


def never_replace(monkeypatch):
    """Make a missing refusal fail the test instead of replacing a system file."""
    def replace(src, dst):
        raise AssertionError(f"save tried to replace {dst!r}")

    monkeypatch.setattr(mgio.os, "replace", replace)


# ---- non-regular targets ---------------------------------------------------------------------

def test_saving_onto_a_fifo_is_refused_without_blocking_and_the_fifo_stays(tmp_path, monkeypatch):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    # a reader is open without blocking, so even a save that opened the FIFO could not hang
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        never_replace(monkeypatch)
        with pytest.raises(mgio.NotARegularFileError,
                           match=r"save: cannot write '.*pipe': it is a FIFO \(named pipe\), "
                                 r"not a regular file"):
            mg.save(TinyLM(), fifo)
        assert os.read(reader, 16) == b""  # nothing was written into it
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert sorted(os.listdir(tmp_path)) == ["pipe"]  # no temporary file left either


def test_saving_onto_dev_null_is_refused_and_it_stays_a_device(monkeypatch):
    never_replace(monkeypatch)
    with pytest.raises(mgio.NotARegularFileError, match=r"it is a character device, not a regular file"):
        mg.save(TinyLM(), os.devnull)
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_saving_onto_a_folder_is_refused(tmp_path):
    (tmp_path / "ckpt").mkdir()
    with pytest.raises(IsADirectoryError, match=r"it is a folder, not a regular file"):
        mg.save(TinyLM(), tmp_path / "ckpt")
    assert (tmp_path / "ckpt").is_dir() and os.listdir(tmp_path / "ckpt") == []


def test_saving_onto_a_socket_is_refused(tmp_path, monkeypatch):
    import socket

    monkeypatch.chdir(tmp_path)  # a short relative path: socket paths are limited to ~100 bytes
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind("sock")
        with pytest.raises(mgio.NotARegularFileError, match=r"it is a socket, not a regular file"):
            mg.save(TinyLM(), "sock")
    finally:
        server.close()


@pytest.mark.parametrize("kind", ["fifo", "folder", "devnull"])
def test_loading_from_what_is_not_a_regular_file_is_refused_without_blocking(tmp_path, kind):
    if kind == "fifo":
        path = tmp_path / "pipe"
        os.mkfifo(path)
    elif kind == "folder":
        path = tmp_path
    else:
        path = os.devnull
    with pytest.raises(OSError, match=r"load: '.*' is a (FIFO \(named pipe\)|folder|character device), "
                                      r"not a checkpoint file"):
        mg.load(path)


# ---- symbolic links: written through ---------------------------------------------------------

def test_saving_through_a_symlink_writes_its_target_and_keeps_the_link(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    target = runs / "step100.safetensors"
    mg.save(TinyLM(seed=1), target)
    link = tmp_path / "latest.safetensors"
    link.symlink_to(target)
    model = TinyLM(seed=2)
    mg.save(model, link)
    assert link.is_symlink() and os.readlink(link) == str(target)
    np.testing.assert_array_equal(mg.load(target)["emb.weight"], model.emb.weight.data)
    assert sorted(os.listdir(runs)) == ["step100.safetensors"]  # the temp file went beside the target


def test_saving_through_a_dangling_symlink_creates_its_target(tmp_path):
    link = tmp_path / "latest.safetensors"
    link.symlink_to(tmp_path / "new.safetensors")
    mg.save(TinyLM(), link)
    assert link.is_symlink() and (tmp_path / "new.safetensors").is_file()


def test_a_symlink_to_a_fifo_is_refused_naming_the_target(tmp_path, monkeypatch):
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "link").symlink_to(tmp_path / "pipe")
    never_replace(monkeypatch)
    with pytest.raises(mgio.NotARegularFileError, match=r"'.*link' \(a link to '.*pipe'\): it is a FIFO"):
        mg.save(TinyLM(), tmp_path / "link")


# ---- folders that cannot be reached ----------------------------------------------------------
# Tests run as root, for whom every permission check passes: the folder that cannot be entered
# is simulated where the operating system would say so (os.stat / os.open raising EACCES).

def test_saving_below_a_folder_that_cannot_be_entered_says_permission_not_missing(tmp_path, monkeypatch):
    locked = tmp_path / "locked" / "inner"
    locked.mkdir(parents=True)
    real_stat = os.stat

    def stat_without_entry(path, *args, **kwargs):
        if os.fspath(path).startswith(str(tmp_path / "locked")):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(mgio.os, "stat", stat_without_entry)
    with pytest.raises(PermissionError) as err:
        mg.save(TinyLM(), locked / "model.safetensors")
    message = str(err.value)
    assert "permission denied on the way to the folder" in message and "does not exist" not in message
    assert str(locked) in message


def test_saving_into_a_folder_that_refuses_new_files_says_so(tmp_path, monkeypatch):
    def refuse(path, flags, mode=0o777):
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(mgio.os, "open", refuse)
    with pytest.raises(PermissionError, match=r"the folder '.*' does not let you create files in it"):
        mg.save(TinyLM(), tmp_path / "model.safetensors")


def test_saving_where_a_path_component_is_a_file_names_that_file(tmp_path):
    (tmp_path / "notes.txt").write_text("not a folder")
    with pytest.raises(NotADirectoryError, match=r"'.*notes.txt' on its path is a file, not a folder"):
        mg.save(TinyLM(), tmp_path / "notes.txt" / "sub" / "model.safetensors")


def test_loading_where_a_path_component_is_a_file_names_that_file(tmp_path):
    (tmp_path / "notes.txt").write_text("not a folder")
    with pytest.raises(NotADirectoryError, match=r"'.*notes.txt' on its path is a file"):
        mg.load(tmp_path / "notes.txt" / "model.safetensors")


def test_loading_below_a_folder_that_cannot_be_entered_says_permission(tmp_path, monkeypatch):
    def stat_denied(path, *args, **kwargs):
        raise PermissionError(13, "Permission denied", os.fspath(path))

    monkeypatch.setattr(mgio.os, "stat", stat_denied)
    with pytest.raises(PermissionError, match=r"load: cannot read '.*': permission denied on the way"):
        mg.load(tmp_path / "locked" / "model.safetensors")


# ---- dtypes numpy does not have --------------------------------------------------------------

def torch_bfloat16_file(values):
    """A safetensors file written by PyTorch: `values` as bfloat16 'w' and float32 zeros 'b'; its
    bytes, and the bfloat16 values as float32."""
    from safetensors.torch import save

    weights = torch.tensor(values, dtype=torch.float32).to(torch.bfloat16)
    return save({"w": weights, "b": torch.zeros(2)}), weights.float()


def test_a_bfloat16_file_from_pytorch_is_read_as_float32_and_says_so(tmp_path, oracle):
    values = np.random.default_rng(0).standard_normal((3, 5))
    file_bytes, expected = oracle(torch_bfloat16_file, values)
    (tmp_path / "bf16.safetensors").write_bytes(file_bytes)
    with pytest.warns(UserWarning, match=r"'w' in '.*bf16.safetensors' is bfloat16.*read as float32"):
        state = mg.load(tmp_path / "bf16.safetensors")
    assert state["w"].dtype == np.float32 and state["w"].shape == (3, 5)
    np.testing.assert_array_equal(state["w"], expected)  # exact, every value
    assert state["w"].flags.writeable
    assert state["b"].dtype == np.float32


def torch_float8_file():
    from safetensors.torch import save

    return save({"w": torch.ones(4).to(torch.float8_e4m3fn)})


def test_a_float8_file_from_pytorch_names_the_dtype(tmp_path, oracle):
    (tmp_path / "f8.safetensors").write_bytes(oracle(torch_float8_file))
    with pytest.raises(mg.CheckpointError, match=r"'w' in '.*f8.safetensors' has dtype F8_E4M3, which "
                                                 r"numpy \(and so minigrad\) cannot hold"):
        mg.load(tmp_path / "f8.safetensors")
