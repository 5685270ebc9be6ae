"""The recorded PyTorch oracle (tests/helpers/oracle.py): what it keys on, what it stores, and that
every mode fails where it must: an answer nobody recorded, a recording torch no longer agrees with,
a torch side that depends on something it is not given, and minigrad disagreeing with a recording."""

import importlib.util
from pathlib import Path

import numpy as np
import oracle as torch_oracle
import pytest
from oracle import Oracle, decode, differences, digest, encode

import minigrad as mg
from minigrad.nn import functional as F

TESTS = Path(__file__).resolve().parent


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """An empty recordings folder and empty per-session caches."""
    monkeypatch.setattr(torch_oracle, "RECORDINGS", tmp_path)
    for cache in ("loaded", "recorded", "computed"):
        monkeypatch.setattr(Oracle, cache, {})
    return tmp_path


def square(x):
    return x * x


def refuse(x):
    raise AssertionError("the torch side ran in recorded mode")


# ---- the key: fn's name and the arguments, exactly ----------------------------------------------

def test_the_digest_sees_values_dtypes_shapes_and_containers():
    a = np.arange(6.0).reshape(2, 3)
    same = digest(square, (a.copy(),), {})
    assert digest(square, (a,), {}) == same
    others = [(a + 1e-16 * 0 + 1,), (a.astype(np.float32),), (a.reshape(3, 2),), (a.T.copy(),),
              ([a],), ((a,),), (a, None)]
    assert len({digest(square, args, {}) for args in others} | {same}) == len(others) + 1
    assert digest(square, (np.float64(2.0),), {}) != digest(square, (np.array([2.0]),), {})  # 0-d != (1,)
    assert digest(square, (np.float64(2.0),), {}) != digest(square, (2.0,), {})
    assert digest(square, (1,), {}) != digest(square, (True,), {}) != digest(square, (1.0,), {})
    assert digest(square, (), {"k": 1}) != digest(square, (), {"k": 2})
    assert digest(square, (), {"a": 1, "b": 2}) == digest(square, (), {"b": 2, "a": 1})
    assert digest(square, (a,), {}) != digest(refuse, (a,), {})  # fn's name is part of the key
    assert digest(square, (square,), {}) != digest(square, (refuse,), {})


def test_an_argument_the_digest_cannot_see_is_refused_by_name():
    with pytest.raises(TypeError, match=r"oracle: args\[1\]\['w'\] is a Tensor; pass arrays"):
        digest(square, (1, {"w": mg.tensor([1.0])}), {})
    with pytest.raises(TypeError, match="has a key of type int; use str keys"):
        digest(square, ({1: 2},), {})


# ---- answers: encoded, stored and read back as they were --------------------------------------------

ANSWER = {"out": np.linspace(-1, 1, 5, dtype=np.float32), "ids": np.array([[3, 1]]),
          "scalar": np.float64(2.5), "mask": np.array([True, False]), "none": None,
          "message": "modified by an inplace operation", "pair": (1.5, float("nan")),
          "list": [np.array(7, dtype=np.int16), b"\x00\xff"], "nested": {"x": ()}}


def test_answers_survive_encoding_and_the_file(fresh):
    arrays = []
    tree = encode(ANSWER, arrays)
    assert differences(decode(tree, arrays), ANSWER) == []
    recording = torch_oracle.Recording("round_trip", read=False)
    recording.entries["k"] = ("fn", tree, arrays)
    recording.write()
    first = recording.path.read_bytes()
    back = torch_oracle.Recording("round_trip")
    name, tree_back, arrays_back = back.entries["k"]
    got = decode(tree_back, arrays_back)
    assert differences(got, ANSWER) == [] and name == "fn"
    assert got["scalar"].dtype == np.float64 and got["scalar"].shape == () and type(got["pair"]) is tuple
    assert got["list"][0].shape == () and got["list"][0].dtype == np.int16 and got["list"][1] == b"\x00\xff"
    back.write()
    assert recording.path.read_bytes() == first  # the same answers make the same bytes


def test_differences_name_what_changed():
    assert differences(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-13])) == []  # the last bits
    assert differences(np.array([1.0, 2.0]), np.array([1.0, 2.001])) == ["result: 1 of 2 entries differ"]
    assert differences(np.array([np.nan]), np.array([np.nan])) == []
    assert differences(np.array([np.nan]), np.array([0.0])) != []
    assert differences(np.array([1.0]), np.array([1.0], np.float32)) == [
        "result: float64 (1,) now, float32 (1,) recorded"]
    assert differences({"a": [1, "x"]}, {"a": [1, "y"]}) == ["result['a'][1]: 'x' now, 'y' recorded"]
    assert differences((1,), [1]) == ["result: tuple now, list recorded"]


# ---- the modes ----------------------------------------------------------------------------------------

def test_record_then_answer_without_running_the_torch_side(fresh, monkeypatch):
    x = np.arange(3.0)
    monkeypatch.setattr(torch_oracle, "torch_installed", lambda: True)
    monkeypatch.setenv("MINIGRAD_ORACLE", "record")
    np.testing.assert_array_equal(Oracle("mine")(square, x), x * x)
    assert [p.name for p in torch_oracle.write_recordings()] == ["mine.npz"]
    monkeypatch.setenv("MINIGRAD_ORACLE", "recorded")
    Oracle.loaded.clear()
    with pytest.raises(pytest.fail.Exception, match="no recorded PyTorch answer for refuse"):
        Oracle("mine")(refuse, x)  # another fn is another key
    with pytest.raises(pytest.fail.Exception, match="no recorded PyTorch answer for square"):
        Oracle("mine")(square, x + 1)  # and so are other inputs
    monkeypatch.setattr(torch_oracle, "digest", lambda fn, args, kwargs: digest(square, args, kwargs))
    np.testing.assert_array_equal(Oracle("mine")(refuse, x), x * x)  # answered; refuse never ran


def test_recorded_mode_fails_on_inputs_nobody_recorded(fresh, monkeypatch):
    monkeypatch.setenv("MINIGRAD_ORACLE", "recorded")
    with pytest.raises(pytest.fail.Exception, match=r"no recorded PyTorch answer for square with these "
                                                    r"arguments in tests/oracle_recordings/other.npz.*"
                                                    r"python scripts/record_oracle.py"):
        Oracle("other")(square, np.arange(2.0))


def test_live_mode_fails_when_the_recording_is_missing_or_stale(fresh, monkeypatch):
    monkeypatch.setattr(torch_oracle, "torch_installed", lambda: True)
    x = np.arange(3.0)
    monkeypatch.setenv("MINIGRAD_ORACLE", "live")
    with pytest.raises(pytest.fail.Exception, match="has no recorded answer .* would fail without torch"):
        Oracle("live")(square, x)
    stale = torch_oracle.Recording("live", read=False)
    arrays = []
    stale.entries[digest(square, (x,), {})] = ("square", encode(x * x + 1, arrays), arrays)
    stale.write()
    Oracle.loaded.clear()
    with pytest.raises(pytest.fail.Exception, match=r"the recording of square .* no longer says what torch "
                                                    r"says \(result: 3 of 3 entries differ\)"):
        Oracle("live")(square, x)


def test_a_torch_side_that_reads_what_it_is_not_given_is_caught(fresh, monkeypatch):
    monkeypatch.setattr(torch_oracle, "torch_installed", lambda: True)
    monkeypatch.setenv("MINIGRAD_ORACLE", "record")
    hidden = {"scale": 1.0}

    def scaled(x):
        return x * hidden["scale"]

    Oracle("closure")(scaled, np.ones(2))
    hidden["scale"] = 2.0
    with pytest.raises(AssertionError, match="scaled gave two answers for the same arguments"):
        Oracle("closure")(scaled, np.ones(2))


def test_an_unknown_mode_and_recording_without_torch_are_refused(monkeypatch):
    monkeypatch.setenv("MINIGRAD_ORACLE", "replay")
    with pytest.raises(ValueError, match="MINIGRAD_ORACLE must be one of live, recorded, record, record-all"):
        torch_oracle.mode()
    monkeypatch.setenv("MINIGRAD_ORACLE", "record")
    monkeypatch.setattr(torch_oracle, "torch_installed", lambda: False)
    with pytest.raises(RuntimeError, match="MINIGRAD_ORACLE=record runs PyTorch, which is not installed"):
        torch_oracle.mode()


def test_a_missing_module_names_itself_only_when_called():
    missing = torch_oracle.LazyModule("no_such_module_for_the_oracle")
    stand_in = missing.nn.functional.gelu  # naming it at import time is fine
    with pytest.raises(RuntimeError, match="no_such_module_for_the_oracle.nn.functional.gelu: torch is not "
                                           "installed"):
        stand_in(1.0)
    assert torch_oracle.LazyModule("math").sqrt(4.0) == 2.0


# ---- the recordings in the repository -------------------------------------------------------------------

def test_a_recorded_answer_tells_a_right_gelu_from_a_wrong_one(monkeypatch):
    """tests/engine/test_torch_parity.py's recorded gelu gradient accepts minigrad's and refuses the
    other approximation's (which differs by about 1e-3): the recording has the power to fail a test."""
    monkeypatch.setenv("MINIGRAD_ORACLE", "recorded")
    spec = importlib.util.spec_from_file_location("parity", TESTS / "engine" / "test_torch_parity.py")
    parity = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(parity)

    x = np.random.default_rng(2).normal(size=(5, 4)) * 2  # the inputs that test records
    recorded = Oracle("test_torch_parity")(parity.torch_gelu_grad, x, "tanh")
    for approximate, agrees in (("tanh", True), ("none", False)):
        m = mg.tensor(x, requires_grad=True)
        F.gelu(m, approximate=approximate).sum().backward()
        assert np.allclose(m.grad, recorded, rtol=1e-9, atol=1e-12) == agrees


def test_every_recording_belongs_to_a_test_module_that_asks_the_oracle():
    modules = {p.stem: p for p in TESTS.rglob("test_*.py")}
    for path in sorted(torch_oracle.RECORDINGS.glob("*.npz")):
        assert path.stem in modules, f"{path.name}: no test module of that name (record again to remove it)"
        asks = "oracle" in modules[path.stem].read_text()
        assert asks, f"{path.name}: its module no longer asks the oracle"


def test_the_recordings_stay_small():
    total = sum(p.stat().st_size for p in torch_oracle.RECORDINGS.glob("*.npz"))
    assert 0 < total < 3 * 2**20, f"{total / 2**20:.1f} MiB of recordings: shrink the inputs"
