"""Checkpoints of a training run: metadata comes back, file objects work as well as paths, and
the model, the optimizer and the scheduler go into one file as nested plain data."""

import io
import json
import math

import numpy as np
import pytest
import safetensors
from doc_pages import run_page
from tiny_lm import IDS, TARGETS, TinyLM

import minigrad as mg
from minigrad import optim
from minigrad.tools import io as mgio


def train(model, opt, steps, sched=None):
    for _ in range(steps):
        opt.zero_grad()
        model.loss(IDS, TARGETS).backward()
        opt.step()
        if sched is not None:
            sched.step()


# ---- metadata ----------------------------------------------------------------------------------

def test_load_gives_back_the_metadata_save_wrote(tmp_path):
    path = tmp_path / "m.safetensors"
    mg.save(TinyLM(), path, metadata={"step": "100", "note": "tied run"})
    state = mg.load(path)
    assert state.metadata == {"step": "100", "note": "tied run"}  # minigrad's own entry left out
    assert isinstance(state, dict) and sorted(state) == sorted(TinyLM().state_dict())


def test_without_metadata_it_is_empty_and_a_foreign_files_header_is_shown(tmp_path):
    mg.save(TinyLM(), tmp_path / "a.safetensors")
    assert mg.load(tmp_path / "a.safetensors").metadata == {}
    safetensors.numpy.save_file({"w": np.ones(2)}, str(tmp_path / "b.safetensors"), metadata={"format": "np"})
    assert mg.load(tmp_path / "b.safetensors").metadata == {"format": "np"}


def test_what_load_returns_still_loads_into_a_model_and_compares_as_a_dict(tmp_path):
    model = TinyLM(seed=3)
    mg.save(model, tmp_path / "m.safetensors", metadata={"k": "v"})
    state = mg.load(tmp_path / "m.safetensors")
    assert state == {k: state[k] for k in state}  # a plain dict's equality
    fresh = TinyLM(seed=4)
    fresh.load_state_dict(state)
    np.testing.assert_array_equal(fresh.emb.weight.data, model.emb.weight.data)
    assert state["head.weight"] is state["emb.weight"]


# ---- file objects ------------------------------------------------------------------------------

def test_save_and_load_through_an_in_memory_file(tmp_path):
    model = TinyLM(seed=5)
    plain = io.BytesIO()
    mg.save(model, plain)
    mg.save(model, tmp_path / "m.safetensors")
    # the same bytes (without user metadata: safetensors orders several entries at random)
    assert plain.getvalue() == (tmp_path / "m.safetensors").read_bytes()
    buffer = io.BytesIO()
    mg.save(model, buffer, metadata={"step": "7"})
    buffer.seek(0)
    state = mg.load(buffer)
    assert state.metadata == {"step": "7"} and state["head.weight"] is state["emb.weight"]
    np.testing.assert_array_equal(state["mix.weight"], model.mix.weight.data)


def test_save_and_load_through_open_files(tmp_path):
    model = TinyLM(seed=6)
    with open(tmp_path / "m.safetensors", "wb") as f:
        mg.save(model, f)
    with open(tmp_path / "m.safetensors", "rb") as f:
        state = mg.load(f)
    np.testing.assert_array_equal(state["emb.weight"], model.emb.weight.data)
    with open(tmp_path / "m.safetensors", "rb") as f:
        mgio.load_into(TinyLM(seed=7), f)


def test_text_mode_files_are_refused_with_the_mode_to_use(tmp_path):
    wb = r"open it in binary mode \('wb'\)"
    with open(tmp_path / "t.txt", "w") as f, pytest.raises(TypeError, match=wb):
        mg.save(TinyLM(), f)
    (tmp_path / "t.txt").write_text("x")
    with open(tmp_path / "t.txt") as f, pytest.raises(TypeError, match=r"open it in binary mode \('rb'\)"):
        mg.load(f)


def test_a_corrupted_file_object_is_a_checkpoint_error_naming_it():
    with pytest.raises(mg.CheckpointError, match=r"load: the file object <BytesIO> is not a readable"):
        mg.load(io.BytesIO(b"\x08\x00\x00\x00\x00\x00\x00\x00garbage!"))


# ---- model, optimizer and scheduler in one file ------------------------------------------------

def test_a_nested_checkpoint_round_trips_every_kind_of_plain_data(tmp_path):
    table = np.arange(6.0).reshape(2, 3)
    tree = {
        "model": TinyLM(seed=1).state_dict(),
        "step": 12, "loss": 2.5, "name": "run-a", "done": False, "nothing": None,
        "nan": math.nan, "inf": -math.inf, "big": 2**70,
        "betas": (0.9, 0.999), "lrs": [0.1, 0.01], "by_int": {0: "zero", 3: "three"},
        "scalar": np.float32(1.5), "count": np.int64(4),
        "table": table, "same_table": table, "empty": {}, "nested": {"a": [{"b": (1, [2])}]},
    }
    mg.save(tree, tmp_path / "run.safetensors", metadata={"who": "test"})
    back = mg.load(tmp_path / "run.safetensors")
    assert back.metadata == {"who": "test"}
    assert list(back) == list(tree)
    assert back["model"]["head.weight"] is back["model"]["emb.weight"]  # the tie is kept
    assert back["same_table"] is back["table"]  # so is any other sharing
    np.testing.assert_array_equal(back["table"], table)
    for key in ("step", "loss", "name", "done", "nothing", "inf", "big", "betas", "lrs", "by_int",
                "empty", "nested"):
        assert back[key] == tree[key] and type(back[key]) is type(tree[key]), key
    assert math.isnan(back["nan"])
    assert back["scalar"] == np.float32(1.5) and back["scalar"].dtype == np.float32
    assert back["count"] == 4 and back["count"].dtype == np.int64
    assert list(back["by_int"]) == [0, 3]


def test_a_nested_checkpoint_is_a_safetensors_file_with_arrays_named_by_their_path(tmp_path):
    model = TinyLM()
    opt = optim.Adam(model.parameters(), lr=0.01)
    train(model, opt, 1)
    mg.save({"model": model.state_dict(), "optimizer": opt.state_dict()}, tmp_path / "run.safetensors")
    with safetensors.safe_open(tmp_path / "run.safetensors", framework="np") as f:
        keys = set(f.keys())
    assert "model/emb.weight" in keys and "model/head.weight" not in keys  # stored once
    assert any(k.startswith("optimizer/state/0/") for k in keys), keys


def test_resuming_from_a_checkpoint_continues_exactly_as_the_uninterrupted_run(tmp_path):
    straight = TinyLM(seed=2)
    straight_opt = optim.AdamW(straight.parameters(), lr=0.05, weight_decay=0.1)
    train(straight, straight_opt, 6)

    first = TinyLM(seed=2)
    first_opt = optim.AdamW(first.parameters(), lr=0.05, weight_decay=0.1)
    train(first, first_opt, 3)
    buffer = io.BytesIO()
    mg.save({"model": first.state_dict(), "optimizer": first_opt.state_dict(), "iteration": 3}, buffer)
    buffer.seek(0)
    ckpt = mg.load(buffer)
    resumed = TinyLM(seed=99)
    resumed_opt = optim.AdamW(resumed.parameters(), lr=0.05, weight_decay=0.1)
    resumed.load_state_dict(ckpt["model"])
    resumed_opt.load_state_dict(ckpt["optimizer"])
    assert ckpt["iteration"] == 3
    train(resumed, resumed_opt, 3)
    for name, value in straight.state_dict().items():
        np.testing.assert_array_equal(resumed.state_dict()[name], value, err_msg=name)


def test_scheduler_state_goes_into_the_same_checkpoint(tmp_path):
    model = TinyLM()
    opt = optim.SGD(model.parameters(), lr=0.1)
    sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
    train(model, opt, 4, sched)
    mg.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict()},
            tmp_path / "run.safetensors")
    ckpt = mg.load(tmp_path / "run.safetensors")
    assert ckpt["scheduler"] == sched.state_dict()
    assert ckpt["optimizer"]["param_groups"][0]["lr"] == opt.param_groups[0]["lr"]
    fresh = optim.lr_scheduler.CosineAnnealingLR(optim.SGD(TinyLM().parameters(), lr=0.1), T_max=10)
    fresh.load_state_dict(ckpt["scheduler"])
    assert fresh.last_epoch == 4 and fresh.get_last_lr() == sched.get_last_lr()


@pytest.mark.parametrize("value, where, what", [
    ({"f": lambda epoch: 1.0}, r"checkpoint\['f'\]", "function"),
    ({"opt": {"groups": [{"params": object()}]}}, r"checkpoint\['opt'\]\['groups'\]\[0\]\['params'\]",
     "object"),
    ({"grad": mg.RowSparse([1], np.ones((1, 2)), (3, 2))}, r"checkpoint\['grad'\]",
     r"RowSparse \(call .to_dense\(\) first\)"),
    ({"d": {(1, 2): 3}}, r"checkpoint\['d'\] has a key \(1, 2\) of type tuple", ""),
])
def test_what_a_checkpoint_cannot_hold_is_refused_naming_where_it_is(tmp_path, value, where, what):
    with pytest.raises(TypeError, match=rf"save: {where}.*{what}"):
        mg.save(value, tmp_path / "x.safetensors")
    assert not (tmp_path / "x.safetensors").exists()


def test_load_into_a_nested_checkpoint_says_to_pick_the_models_part(tmp_path):
    mg.save({"model": TinyLM().state_dict(), "step": 1}, tmp_path / "run.safetensors")
    with pytest.raises(mg.CheckpointError,
                       match=r"holds a checkpoint of several parts \(\['model', 'step'\]\)"):
        mgio.load_into(TinyLM(), tmp_path / "run.safetensors")


def test_a_flat_state_dict_is_written_exactly_as_before_without_a_tree(tmp_path):
    mg.save(TinyLM(), tmp_path / "m.safetensors")
    with safetensors.safe_open(tmp_path / "m.safetensors", framework="np") as f:
        info = json.loads(f.metadata()[mgio.METADATA_KEY])
    assert set(info) == {"names", "names_sha256", "sha256"}


def test_a_flipped_byte_in_the_layout_of_a_nested_checkpoint_is_caught(tmp_path):
    path = tmp_path / "run.safetensors"
    mg.save({"model": TinyLM().state_dict(), "step": 12345}, path)
    blob = path.read_bytes()
    assert blob.count(b"12345") == 1
    path.write_bytes(blob.replace(b"12345", b"12346"))
    with pytest.raises(mg.CheckpointError, match=r"layout does not match the checksum"):
        mg.load(path)


def test_the_checkpoint_page_runs_and_prints_what_it_shows(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # the page writes its files into the working directory
    assert run_page("checkpoints.md", capsys) == 3
    assert (tmp_path / "run.safetensors").exists()


def test_paths_that_join_to_the_same_name_get_distinct_tensors(tmp_path):
    a, b = np.zeros(2), np.ones(2)
    mg.save({"a/b": a, "a": {"b": b}, "n": 1}, tmp_path / "x.safetensors")
    back = mg.load(tmp_path / "x.safetensors")
    np.testing.assert_array_equal(back["a/b"], a)
    np.testing.assert_array_equal(back["a"]["b"], b)


def test_a_checkpoint_must_be_a_dict_at_the_top():
    with pytest.raises(TypeError, match=r"save: expected a Module, a state dict or a dict of checkpoint "
                                        r"parts, got list"):
        mg.save([np.ones(2)], io.BytesIO())
