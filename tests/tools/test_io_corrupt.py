"""Adversarial checkpoints: every damaged or mismatched file is a CheckpointError that names
the file and what is wrong, never a raw exception and never a silent wrong load."""

import json
import struct

import numpy as np
import pytest
from tiny_lm import TinyLM

import minigrad as mg
from minigrad.tools import io as mgio


@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "model.safetensors"
    mg.save(TinyLM(tied=True), path)
    return path


def header_span(blob: bytes) -> tuple[int, int]:
    """(start, end) of the JSON header: after the 8-byte little-endian length."""
    (n,) = struct.unpack("<Q", blob[:8])
    return 8, 8 + n


def same_state(a: dict, b: dict) -> bool:
    return (list(a) == list(b)
            and all(a[k].dtype == b[k].dtype and a[k].shape == b[k].shape
                    and np.array_equal(a[k], b[k]) for k in a)
            and [a[k] is a[j] for k in a for j in a] == [b[k] is b[j] for k in b for j in b])


def load_or_error(path):
    """The state, or the CheckpointError; any other exception fails the test."""
    try:
        return mg.load(path)
    except mg.CheckpointError as err:
        assert repr(str(path)) in str(err), f"the error does not name the file: {err}"
        return err


@pytest.mark.parametrize("flip", [0x01, 0x20, 0xFF])
def test_every_single_byte_flip_in_the_header_is_caught_or_harmless(saved, flip):
    blob = saved.read_bytes()
    original = mg.load(saved)
    start, end = header_span(blob)
    silent = []
    for i in range(0, end):
        damaged = bytearray(blob)
        damaged[i] ^= flip
        saved.write_bytes(bytes(damaged))
        result = load_or_error(saved)
        if isinstance(result, dict) and not same_state(result, original):
            silent.append((i, chr(blob[i]) if i >= start else f"length byte {i}"))
    assert silent == [], f"flips that loaded a different state without an error: {silent}"


@pytest.mark.parametrize("flip", [0x01, 0x80])
def test_every_single_byte_flip_in_the_data_is_caught(saved, flip):
    blob = saved.read_bytes()
    _, end = header_span(blob)
    for i in range(end, len(blob)):
        damaged = bytearray(blob)
        damaged[i] ^= flip
        saved.write_bytes(bytes(damaged))
        with pytest.raises(mg.CheckpointError, match=r"does not match the checksum saved with it"):
            mg.load(saved)


@pytest.mark.parametrize("keep_fraction", [0.0, 0.01, 0.3, 0.6, 0.99])
def test_a_truncated_file_at_any_point(saved, keep_fraction):
    blob = saved.read_bytes()
    saved.write_bytes(blob[:int(len(blob) * keep_fraction)])
    with pytest.raises(mg.CheckpointError, match=r"is not a readable safetensors file"):
        mg.load(saved)


def test_a_file_with_bytes_appended_is_not_read_as_the_checkpoint(saved):
    saved.write_bytes(saved.read_bytes() + b"\0" * 16)
    result = load_or_error(saved)
    assert isinstance(result, mg.CheckpointError)


@pytest.mark.parametrize("length", [2**64 - 1, 2**63, 10**9, 0])
def test_a_header_length_that_overflows_the_file(saved, length):
    blob = saved.read_bytes()
    saved.write_bytes(struct.pack("<Q", length) + blob[8:])
    with pytest.raises(mg.CheckpointError, match=r"'.*model.safetensors' is not a readable safetensors"):
        mg.load(saved)


def rewrite_header(path, edit):
    """Replace the JSON header with edit(header dict) (in place), keeping the data bytes."""
    blob = path.read_bytes()
    start, end = header_span(blob)
    header = json.loads(blob[start:end])
    edit(header)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + blob[end:])


@pytest.mark.parametrize("dtype", ["I32", "U32", "F16", "BF16", "F8_E4M3", "XYZ", "", 7])
def test_a_wrong_dtype_string(saved, dtype):
    rewrite_header(saved, lambda header: header["mix.weight"].update(dtype=dtype))
    # either the reader refuses it, or its bytes no longer match the saved checksum
    with pytest.raises(mg.CheckpointError, match=r"not a readable safetensors file|'mix.weight'.*checksum"):
        mg.load(saved)


def test_a_wrong_shape_with_the_same_byte_count(saved):
    def reverse_and_add_an_axis(header):
        entry = header["mix.weight"]
        entry["shape"] = entry["shape"][::-1] + [1]  # (4, 4) -> [4, 4, 1]: same bytes, new shape

    rewrite_header(saved, reverse_and_add_an_axis)
    with pytest.raises(mg.CheckpointError, match=r"'mix.weight'.*does not match the checksum"):
        mg.load(saved)


def rewrite_names(path, edit):
    """Apply edit(names list) in place to our metadata entry, leaving its checksums alone."""
    def edit_header(header):
        info = json.loads(header["__metadata__"][mgio.METADATA_KEY])
        edit(info["names"])
        header["__metadata__"][mgio.METADATA_KEY] = json.dumps(info)

    rewrite_header(path, edit_header)


def test_a_tie_recorded_to_a_name_the_file_does_not_hold(saved):
    rewrite_names(saved, lambda names: names[0].__setitem__(0, "ghost.weight"))
    with pytest.raises(mg.CheckpointError, match=r"lists stored tensors \['ghost.weight', 'mix.bias', "
                                                 r"'mix.weight'\] but the file holds"):
        mg.load(saved)


def test_an_alias_renamed_without_its_checksum(saved):
    rewrite_names(saved, lambda names: names[0].__setitem__(1, "tail.weight"))
    with pytest.raises(mg.CheckpointError, match=r"tensor names in the metadata do not match the checksum"):
        mg.load(saved)


# ---- files that are sound but do not fit the module: load_into ------------------------------

def fits_error(path, module, message, strict=True):
    before = {k: v.copy() for k, v in module.state_dict().items()}
    with pytest.raises(mg.CheckpointError, match=r"load_into: '.*' does not fit this TinyLM: " + message):
        mg.load_into(module, path, strict=strict)
    for k, v in module.state_dict().items():  # nothing was written
        np.testing.assert_array_equal(v, before[k])


def test_load_into_a_matching_model_copies_the_values_and_keeps_the_tie(saved):
    model = mg.load_into(TinyLM(tied=True, seed=5), saved)
    source = mg.load(saved)
    np.testing.assert_array_equal(model.emb.weight.data, source["emb.weight"])
    assert model.head.weight is model.emb.weight


def test_load_into_with_tensors_missing(tmp_path):
    path = tmp_path / "m.safetensors"
    state = TinyLM(tied=False).state_dict()
    del state["mix.bias"]
    mg.save(state, path)
    fits_error(path, TinyLM(tied=False), r"missing keys \['mix.bias'\], unexpected keys \[\]")


def test_load_into_with_extra_tensors(tmp_path):
    path = tmp_path / "m.safetensors"
    mg.save({**TinyLM(tied=False).state_dict(), "extra.weight": np.ones(3)}, path)
    fits_error(path, TinyLM(tied=False), r"missing keys \[\], unexpected keys \['extra.weight'\]")


def test_load_into_with_a_shape_mismatch(tmp_path):
    path = tmp_path / "m.safetensors"
    mg.save({**TinyLM(tied=False).state_dict(), "mix.bias": np.zeros(5)}, path)
    fits_error(path, TinyLM(tied=False), r"'mix.bias' has shape \(5,\) in the state but \(4,\) in the model")


def test_load_into_with_a_dtype_that_cannot_be_stored(tmp_path):
    path = tmp_path / "m.safetensors"
    state = TinyLM(tied=False).state_dict()
    mg.save({**state, "mix.bias": state["mix.bias"].astype(np.complex64)}, path)
    fits_error(path, TinyLM(tied=False), r"'mix.bias' has dtype complex64 in the state")


def test_load_into_with_a_tie_the_model_does_not_have(saved):
    fits_error(saved, TinyLM(tied=False), r"the state ties 'emb.weight' and 'head.weight'")


def test_load_into_with_an_alias_to_a_name_the_model_does_not_have(tmp_path):
    path = tmp_path / "m.safetensors"
    state = TinyLM(tied=True).state_dict()
    mg.save({**state, "ghost.weight": state["emb.weight"]}, path)
    fits_error(path, TinyLM(tied=True), r"missing keys \[\], unexpected keys \['ghost.weight'\]")


def test_load_into_of_a_corrupted_file_is_the_load_error(saved):
    blob = bytearray(saved.read_bytes())
    blob[-1] ^= 0xFF
    saved.write_bytes(bytes(blob))
    with pytest.raises(mg.CheckpointError, match=r"load: '.*model.safetensors': tensor .* checksum"):
        mg.load_into(TinyLM(tied=True), saved)
