"""Saving and loading as safetensors: ties survive, writes are atomic, bad files say so."""

import json
import os
import stat

import numpy as np
import pytest
import safetensors
from tiny_lm import TinyLM

import minigrad as mg
from minigrad.tools import io as mgio


def stored_keys_and_metadata(path):
    with safetensors.safe_open(path, framework="np") as f:
        return sorted(f.keys()), f.metadata()


def test_untied_round_trip_keeps_names_values_and_dtypes(tmp_path):
    model = TinyLM(tied=False, dtype=np.float32)
    path = tmp_path / "model.safetensors"
    mg.save(model, path)
    state = mg.load(path)
    assert list(state) == list(model.state_dict())
    for name, value in model.state_dict().items():
        assert state[name].dtype == np.float32
        np.testing.assert_array_equal(state[name], value)


def test_a_tied_parameter_is_stored_once_with_every_alias_in_the_metadata(tmp_path):
    path = tmp_path / "tied.safetensors"
    mg.save(TinyLM(tied=True), path)
    keys, metadata = stored_keys_and_metadata(path)
    assert keys == ["emb.weight", "mix.bias", "mix.weight"]
    names = json.loads(metadata[mgio.METADATA_KEY])["names"]
    assert names == [["emb.weight", "head.weight"], ["mix.weight"], ["mix.bias"]]


def test_load_restores_the_tie_an_update_through_one_name_is_seen_through_the_other(tmp_path):
    path = tmp_path / "tied.safetensors"
    mg.save(TinyLM(tied=True), path)
    state = mg.load(path)
    assert list(state) == ["emb.weight", "head.weight", "mix.weight", "mix.bias"]
    assert state["head.weight"] is state["emb.weight"]
    state["emb.weight"][2, 1] = 123.0
    assert state["head.weight"][2, 1] == 123.0


def test_loading_into_a_tied_model_keeps_its_tie_through_training(tmp_path):
    path = tmp_path / "tied.safetensors"
    source = TinyLM(tied=True, seed=1)
    mg.save(source, path)
    model = TinyLM(tied=True, seed=2)
    model.load_state_dict(mg.load(path))
    np.testing.assert_array_equal(model.head.weight.data, source.emb.weight.data)
    assert model.head.weight is model.emb.weight
    model.loss().backward()
    with mg.no_grad():
        model.head.weight.sub_(0.1 * model.head.weight.grad)  # a step through the head's name
    np.testing.assert_array_equal(model.emb.weight.data, model.head.weight.data)
    assert not np.array_equal(model.emb.weight.data, source.emb.weight.data)


def test_the_same_model_always_gives_the_same_bytes(tmp_path):
    model = TinyLM(tied=True)
    as_tensors = {name: p for name, p in model._all_named_parameters()}  # Tensors, not arrays
    for i in range(3):
        mg.save(model if i else as_tensors, tmp_path / f"{i}.safetensors")
    blobs = {(tmp_path / f"{i}.safetensors").read_bytes() for i in range(3)}
    assert len(blobs) == 1


def test_a_view_of_the_same_memory_counts_as_the_same_tensor(tmp_path):
    table = np.arange(6.0).reshape(2, 3)
    mg.save({"a": table, "b": table[...]}, tmp_path / "v.safetensors")
    state = mg.load(tmp_path / "v.safetensors")
    assert state["a"] is state["b"]


def test_partly_overlapping_arrays_are_refused(tmp_path):
    table = np.arange(6.0).reshape(2, 3)
    with pytest.raises(ValueError, match=r"'a' \(2, 3\) and 'b' \(3,\) share part of their memory"):
        mg.save({"a": table, "b": table[0]}, tmp_path / "x.safetensors")
    assert not (tmp_path / "x.safetensors").exists()


def test_user_metadata_is_kept_and_our_keys_are_reserved(tmp_path):
    path = tmp_path / "m.safetensors"
    mg.save(TinyLM(), path, metadata={"step": "100"})
    assert stored_keys_and_metadata(path)[1]["step"] == "100"
    with pytest.raises(ValueError, match=r"metadata key 'minigrad' is reserved"):
        mg.save(TinyLM(), path, metadata={"minigrad": "{}"})
    with pytest.raises(TypeError, match=r"metadata must map str to str, got 'step': 100"):
        mg.save(TinyLM(), path, metadata={"step": 100})


def torch_reads(file_bytes):
    """What safetensors.torch reads from the file's bytes: {name: tensor}, by name."""
    from safetensors.torch import load

    return dict(sorted(load(file_bytes).items()))


def test_pytorch_reads_our_file(tmp_path, oracle):
    model = TinyLM(tied=True, dtype=np.float32)
    path = tmp_path / "tied.safetensors"
    mg.save(model, path)
    tensors = oracle(torch_reads, path.read_bytes())
    assert sorted(tensors) == ["emb.weight", "mix.bias", "mix.weight"]  # the alias is metadata only
    np.testing.assert_array_equal(tensors["emb.weight"], model.emb.weight.data)


def test_a_file_written_by_another_tool_loads_untied(tmp_path):
    path = tmp_path / "other.safetensors"
    safetensors.numpy.save_file({"w": np.ones((2, 2), np.float32), "v": np.zeros(3)}, str(path))
    state = mg.load(path)
    assert sorted(state) == ["v", "w"] and state["w"].flags.writeable


# ---- atomic writes ---------------------------------------------------------------------------

def test_a_crash_while_saving_leaves_the_old_checkpoint_and_no_temp_file(tmp_path, monkeypatch):
    path = tmp_path / "model.safetensors"
    old = TinyLM(seed=1)
    mg.save(old, path)
    before = path.read_bytes()

    def crash(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(mgio.os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        mg.save(TinyLM(seed=2), path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["model.safetensors"]


def test_the_temp_file_is_in_the_target_directory_and_the_result_is_readable(tmp_path, monkeypatch):
    replaced = []
    real_replace = os.replace
    def recording_replace(src, dst):
        replaced.append((src, dst))
        real_replace(src, dst)

    monkeypatch.setattr(mgio.os, "replace", recording_replace)
    path = tmp_path / "model.safetensors"
    mg.save(TinyLM(), path)
    ((src, dst),) = replaced
    assert os.path.dirname(src) == str(tmp_path) and dst == str(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~_umask()  # not mkstemp's private 0600


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_save_never_touches_the_process_umask_and_the_file_gets_the_umask_mode(tmp_path, monkeypatch,
                                                                               mask):
    old = os.umask(mask)  # the test sets it; save itself must not even read it this way
    try:
        def no_umask(*args):
            raise AssertionError("save called os.umask: that changes it for every thread")
        monkeypatch.setattr(os, "umask", no_umask)
        path = tmp_path / "model.safetensors"
        mg.save(TinyLM(), path)
        monkeypatch.undo()
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask
        assert os.listdir(tmp_path) == ["model.safetensors"]
    finally:
        os.umask(old)


# ---- dtypes and shapes -----------------------------------------------------------------------

class WithScalar(mg.nn.Module):
    def __init__(self, value):
        super().__init__()
        self.scale = mg.nn.Parameter(np.array(value))
        self.w = mg.nn.Parameter(np.arange(3.0))


def test_a_module_with_a_0d_parameter_reloads_its_own_checkpoint(tmp_path):
    path = tmp_path / "scalar.safetensors"
    source = WithScalar(2.5)
    mg.save(source, path)
    state = mg.load(path)
    assert state["scale"].shape == () and state["scale"] == 2.5
    target = WithScalar(-1.0)
    target.load_state_dict(state)
    assert target.scale.shape == () and target.scale.data == 2.5
    np.testing.assert_array_equal(target.w.data, source.w.data)


@pytest.mark.parametrize("shape", [(), (0,), (1,), (2, 0, 3), (1, 1)])
def test_every_shape_comes_back_as_it_was(tmp_path, shape):
    path = tmp_path / "s.safetensors"
    value = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    mg.save({"a": value}, path)
    back = mg.load(path)["a"]
    assert back.shape == shape and back.dtype == np.float32
    np.testing.assert_array_equal(back, value)


@pytest.mark.parametrize("dtype", [">f4", ">f8", ">i2", ">u4", ">c8"])
def test_a_big_endian_array_comes_back_little_endian_with_the_same_values(tmp_path, dtype):
    path = tmp_path / "be.safetensors"
    value = (np.arange(1, 7) * 3).reshape(2, 3).astype(dtype)
    assert value.dtype.byteorder == ">"
    mg.save({"a": value, "s": np.array(7, dtype=dtype)}, path)
    state = mg.load(path)
    little = np.dtype(dtype).newbyteorder("<")
    assert state["a"].dtype == little and state["a"].shape == (2, 3)
    np.testing.assert_array_equal(state["a"], value)
    assert state["s"].shape == () and state["s"] == 7


def test_a_non_contiguous_array_saves_its_values(tmp_path):
    path = tmp_path / "t.safetensors"
    value = np.arange(12.0).reshape(3, 4).T
    mg.save({"t": value}, path)
    np.testing.assert_array_equal(mg.load(path)["t"], value)


@pytest.mark.parametrize("value", [np.array(["a", "b"]), np.array([object()]), np.zeros(2, "V4")])
def test_a_dtype_a_checkpoint_cannot_hold_is_refused_at_save_by_name(tmp_path, value):
    path = tmp_path / "bad.safetensors"
    with pytest.raises(TypeError, match=r"save: 'odd' has dtype .*; a checkpoint holds bool, int, "
                                        r"uint, float and complex tensors only"):
        mg.save({"fine": np.zeros(2), "odd": value}, path)
    assert not path.exists()


def test_saving_into_a_missing_directory(tmp_path):
    target = tmp_path / "nope" / "model.safetensors"
    with pytest.raises(FileNotFoundError, match=r"cannot write .*model.safetensors.*: directory .*nope.* "
                                                r"does not exist"):
        mg.save(TinyLM(), target)


# ---- bad files -------------------------------------------------------------------------------

def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"load: no checkpoint file at '.*absent.safetensors'"):
        mg.load(tmp_path / "absent.safetensors")


@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "model.safetensors"
    mg.save(TinyLM(tied=True), path)
    return path


@pytest.mark.parametrize("keep", [4, 40, -3])  # inside the length, inside the header, in the data
def test_truncated_file(saved, keep):
    saved.write_bytes(saved.read_bytes()[:keep])
    with pytest.raises(mg.CheckpointError, match=r"is not a readable safetensors file \(truncated or "
                                                 r"corrupted\?\)"):
        mg.load(saved)


def test_garbage_file(saved):
    saved.write_bytes(b"not a checkpoint at all")
    with pytest.raises(mg.CheckpointError, match="is not a readable safetensors file"):
        mg.load(saved)


def test_a_flipped_byte_in_the_data_is_caught_by_the_checksum(saved):
    blob = bytearray(saved.read_bytes())
    blob[-5] ^= 0xFF  # the last tensor's bytes: the format alone cannot notice
    saved.write_bytes(bytes(blob))
    with pytest.raises(mg.CheckpointError, match=r"tensor '.*' \(.*\) does not match the checksum saved "
                                                 r"with it: the file is corrupted"):
        mg.load(saved)


def rewrite_metadata(path, edit):
    """Rewrite the file with edit(our metadata entry) -> new entry text, the tensors unchanged."""
    with safetensors.safe_open(path, framework="np") as f:
        tensors = {k: f.get_tensor(k) for k in f.keys()}
        metadata = f.metadata()
    metadata[mgio.METADATA_KEY] = edit(json.loads(metadata[mgio.METADATA_KEY]))
    safetensors.numpy.save_file(tensors, str(path), metadata=metadata)


def with_names(names):
    return lambda info: json.dumps({**info, "names": names})


@pytest.mark.parametrize("edit, message", [
    (lambda info: "{", r"metadata 'minigrad' is not valid JSON"),
    (lambda info: json.dumps({"names": info["names"]}),
     r"must be a JSON object with exactly the keys \['names', 'names_sha256', 'sha256'\]"),
    (with_names([["emb.weight"], []]), r"'names' must be a list of non-empty lists of names"),
    (with_names([["emb.weight", "head.weight"], ["mix.weight"]]),
     r"the metadata lists stored tensors \['emb.weight', 'mix.weight'\] but the file holds "
     r"\['emb.weight', 'mix.bias', 'mix.weight'\]"),
    (with_names([["emb.weight", "mix.bias"], ["mix.weight"], ["mix.bias"]]),
     r"gives the names \['mix.bias'\] to more than one tensor"),
])
def test_inconsistent_minigrad_metadata(saved, edit, message):
    rewrite_metadata(saved, edit)
    with pytest.raises(mg.CheckpointError, match=message):
        mg.load(saved)


def test_missing_key_when_loading_into_a_model(saved):
    state = mg.load(saved)
    del state["mix.bias"]
    with pytest.raises(KeyError, match=r"missing keys \['mix.bias'\]"):
        TinyLM().load_state_dict(state)


def test_shape_mismatch_when_loading_into_a_model(tmp_path):
    path = tmp_path / "m.safetensors"
    mg.save({"emb.weight": np.zeros((8, 4)), "mix.weight": np.zeros((4, 4)), "mix.bias": np.zeros(4),
             "head.weight": np.zeros((7, 4))}, path)
    model = TinyLM(tied=False)
    before = model.emb.weight.data.copy()
    with pytest.raises(ValueError, match=r"'emb.weight' has shape \(8, 4\) in the state but \(7, 4\)"):
        model.load_state_dict(mg.load(path))
    np.testing.assert_array_equal(model.emb.weight.data, before)


def test_a_checkpoint_whose_ties_disagree_with_the_model(tmp_path):
    tied, untied = tmp_path / "tied.safetensors", tmp_path / "untied.safetensors"
    mg.save(TinyLM(tied=True), tied)
    mg.save(TinyLM(tied=False), untied)
    with pytest.raises(ValueError, match=r"the state ties 'emb.weight' and 'head.weight'"):
        TinyLM(tied=False).load_state_dict(mg.load(tied))
    with pytest.raises(ValueError, match=r"the model ties 'emb.weight' and 'head.weight'"):
        TinyLM(tied=True).load_state_dict(mg.load(untied))
