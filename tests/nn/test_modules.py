"""Module bookkeeping (names, aliases, state) and the Linear layer."""

import numpy as np
import pytest
from oracle import torch
from tiny_lm import TinyLM

import minigrad as mg
from minigrad import nn
from minigrad.nn import functional as F


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = nn.Linear(2, 2, rng=0)
        self.scale = nn.Parameter(np.ones(2))


class Nested(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = nn.Linear(2, 3, rng=1)
        self.block = Block()
        self.last = nn.Linear(3, 2, rng=2)


def test_named_parameters_go_depth_first_in_registration_order():
    names = [n for n, _ in Nested().named_parameters()]
    assert names == ["first.weight", "first.bias", "block.scale", "block.inner.weight",
                     "block.inner.bias", "last.weight", "last.bias"]


def torch_nested_names():
    """The parameter names of Nested written in torch (the same registration order)."""

    class TorchBlock(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = torch.nn.Linear(2, 2)
            self.scale = torch.nn.Parameter(torch.ones(2))

    class TorchNested(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.first, self.block, self.last = torch.nn.Linear(2, 3), TorchBlock(), torch.nn.Linear(3, 2)

    return [n for n, _ in TorchNested().named_parameters()]


def test_named_parameters_match_pytorch_names(oracle):
    ours = [n for n, _ in Nested().named_parameters()]
    assert ours == oracle(torch_nested_names)


def test_a_tied_parameter_is_listed_once_and_every_name_is_kept():
    model = TinyLM(tied=True)
    names = [n for n, _ in model.named_parameters()]
    assert names == ["emb.weight", "mix.weight", "mix.bias"]
    assert sum(p is model.emb.weight for p in model.parameters()) == 1
    assert model.aliases()["emb.weight"] == ["emb.weight", "head.weight"]
    assert model.param_names()[id(model.emb.weight)] == ["emb.weight", "head.weight"]
    assert model.num_parameters() == 7 * 4 + 4 * 4 + 4
    assert TinyLM(tied=False).num_parameters() == 2 * 7 * 4 + 4 * 4 + 4


def test_a_shared_submodule_keeps_every_path_as_an_alias():
    model = nn.Module()
    model.a = nn.Linear(2, 2, rng=0)
    model.b = model.a
    assert model.aliases() == {"a.weight": ["a.weight", "b.weight"], "a.bias": ["a.bias", "b.bias"]}
    assert [n for n, _ in model.named_modules()] == ["", "a"]
    assert len(list(model.parameters())) == 2


def test_a_module_inside_itself_does_not_loop_forever():
    model = Nested()
    model.block.back = model
    assert [n for n, _ in model.named_parameters()][:2] == ["first.weight", "first.bias"]
    assert len(model.aliases()) == 7


def test_assigning_a_tensor_over_a_parameter_is_refused_and_keeps_it():
    lin = nn.Linear(3, 4)
    original = lin.weight
    with pytest.raises(TypeError, match=r"cannot assign a Tensor to Linear.weight, which is a Parameter: "
                                        r"expected a minigrad.nn.Parameter \(to tie weights\) or None"):
        lin.weight = lin.weight * 1.0
    assert lin.weight is original and "weight" in dict(lin.named_parameters())
    lin.bias = None  # None is allowed: it removes the parameter
    assert [n for n, _ in lin.named_parameters()] == ["weight"]


def test_tying_parameters_of_different_shapes_is_refused_and_keeps_the_old_one():
    emb, head = nn.Embedding(7, 4), nn.Linear(4, 6, bias=False)  # head.weight is (6, 4)
    original = head.weight
    with pytest.raises(ValueError, match=r"cannot assign a Parameter of shape \(7, 4\) to Linear.weight, "
                                         r"which has shape \(6, 4\): tied weights must have the same shape"):
        head.weight = emb.weight
    assert head.weight is original


def test_zero_grad_forgets_every_gradient_including_a_tied_one():
    model = TinyLM(tied=True)
    model.loss().backward()
    assert all(p.grad is not None for p in model.parameters())
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())
    assert model.head.weight.grad is None


# ---- state dicts -----------------------------------------------------------------------------

def test_state_dict_has_every_name_and_tied_names_share_one_array():
    model = TinyLM(tied=True)
    state = model.state_dict()
    assert list(state) == ["emb.weight", "mix.weight", "mix.bias", "head.weight"]
    assert state["head.weight"] is state["emb.weight"] is model.emb.weight.data


def test_load_state_dict_round_trip_and_bumps_versions():
    source, target = TinyLM(seed=1), TinyLM(seed=2)
    target.load_state_dict({k: v.copy() for k, v in source.state_dict().items()})
    for (_, a), (_, b) in zip(source.named_parameters(), target.named_parameters()):
        np.testing.assert_array_equal(a.data, b.data)
    assert target.emb.weight._version == 1  # a graph that saved the old values will notice
    assert target.head.weight is target.emb.weight


def test_a_tied_parameter_loads_from_any_one_of_its_names():
    source, target = TinyLM(seed=1), TinyLM(seed=2)
    state = {k: v for k, v in source.state_dict().items() if k != "emb.weight"}  # only head.weight
    target.load_state_dict(state)
    np.testing.assert_array_equal(target.emb.weight.data, source.emb.weight.data)


def snapshot(model):
    return {k: v.copy() for k, v in model.state_dict().items()}


def assert_unchanged(model, before):
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(v, before[k])


def test_missing_and_unexpected_keys():
    model = TinyLM()
    before = snapshot(model)
    state = snapshot(TinyLM(seed=5))
    del state["mix.bias"]
    state["extra"] = np.zeros(1)
    with pytest.raises(KeyError, match=r"missing keys \['mix.bias'\], unexpected keys \['extra'\]"):
        model.load_state_dict(state)
    assert_unchanged(model, before)
    model.load_state_dict(state, strict=False)  # loads the names both have
    np.testing.assert_array_equal(model.mix.weight.data, state["mix.weight"])
    np.testing.assert_array_equal(model.mix.bias.data, before["mix.bias"])


def test_a_failed_load_leaves_the_model_unchanged():
    model = TinyLM()
    before = snapshot(model)
    state = snapshot(TinyLM(seed=5))
    state["mix.bias"] = np.zeros(5)  # the last parameter is wrong: the earlier ones must not be written
    with pytest.raises(ValueError, match=r"'mix.bias' has shape \(5,\) in the state but \(4,\) in the model"):
        model.load_state_dict(state)
    assert_unchanged(model, before)


def test_a_value_of_another_kind_is_refused():
    model = TinyLM()
    state = snapshot(model)
    state["mix.bias"] = state["mix.bias"].astype(np.complex128)
    with pytest.raises(ValueError, match=r"'mix.bias' has dtype complex128 in the state, which cannot "
                                         r"be stored in the model's float64"):
        model.load_state_dict(state)


def test_tied_names_with_different_values_are_refused():
    model, untied = TinyLM(tied=True), TinyLM(tied=False, seed=3)
    before = snapshot(model)
    with pytest.raises(ValueError, match=r"the model ties 'emb.weight' and 'head.weight' \(one shared "
                                         r"Parameter\), but the state gives them different values"):
        model.load_state_dict(untied.state_dict())
    assert_unchanged(model, before)


def test_names_the_state_ties_but_the_model_does_not_are_refused_unless_not_strict():
    tied, untied = TinyLM(tied=True, seed=3), TinyLM(tied=False)
    before = snapshot(untied)
    with pytest.raises(ValueError, match=r"the state ties 'emb.weight' and 'head.weight' \(one shared "
                                         r"array\), but the model keeps them as separate Parameters"):
        untied.load_state_dict(tied.state_dict())
    assert_unchanged(untied, before)
    untied.load_state_dict(tied.state_dict(), strict=False)
    np.testing.assert_array_equal(untied.head.weight.data, tied.emb.weight.data)
    assert untied.head.weight is not untied.emb.weight


# ---- Linear ----------------------------------------------------------------------------------

def test_linear_weight_is_out_by_in_and_computes_x_w_transpose_plus_b():
    lin = nn.Linear(3, 5, rng=0)
    assert lin.weight.shape == (5, 3) and lin.bias.shape == (5,)
    x = np.random.default_rng(1).normal(size=(2, 4, 3)).astype(np.float32)
    np.testing.assert_allclose(lin(mg.tensor(x)).data, x @ lin.weight.data.T + lin.bias.data, rtol=1e-6)
    assert repr(lin) == "Linear(in_features=3, out_features=5, bias=True)"


def test_linear_gradcheck_on_a_single_vector_and_without_bias():
    rng = np.random.default_rng(4)
    x = mg.tensor(rng.normal(size=3), requires_grad=True)
    w = mg.tensor(rng.normal(size=(5, 3)), requires_grad=True)
    assert mg.gradcheck(lambda x, w: F.linear(x, w), [x, w]).ok


def test_linear_function_applies_with_two_or_three_inputs():
    from minigrad.engine import ops

    w = mg.tensor(np.ones((2, 3)), requires_grad=True)
    ops.Linear.apply(np.ones((4, 3)), w).sum().backward()
    np.testing.assert_array_equal(w.grad, np.full((2, 3), 4.0))


def test_linear_input_with_the_wrong_last_dim():
    with pytest.raises(ValueError, match=r"linear: input has shape \(2, 4\), but its last dim must be "
                                         r"in_features=3 \(weight shape \(5, 3\)\)"):
        nn.Linear(3, 5)(mg.zeros(2, 4))
    with pytest.raises(ValueError, match=r"input has shape \(\), but its last dim must be in_features=3"):
        nn.Linear(3, 5)(mg.tensor(1.0))


def test_linear_weight_and_bias_shapes():
    with pytest.raises(ValueError, match=r"linear: weight has shape \(3,\), expected a 2-D \(out_features, "
                                         r"in_features\) matrix"):
        F.linear(mg.zeros(2, 3), mg.zeros(3))
    with pytest.raises(ValueError, match=r"linear: bias has shape \(3,\), expected \(5,\)"):
        F.linear(mg.zeros(2, 3), mg.zeros(5, 3), mg.zeros(3))


@pytest.mark.parametrize("args, message", [((0, 3), "in_features must be a positive int, got 0"),
                                           ((3, -1), "out_features must be a positive int, got -1")])
def test_bad_linear_sizes(args, message):
    with pytest.raises(ValueError, match=message):
        nn.Linear(*args)


# ---- names a module can be registered under ------------------------------------------------
# state_dict() joins names with ".", so a name holding "." collides with a nested path, and a
# key named like a method hides it: both are refused, as PyTorch refuses them.

def test_a_module_dict_key_with_a_dot_is_refused_so_no_state_dict_name_is_lost():
    inner = nn.ModuleDict({"b": nn.Linear(2, 2, rng=0)})
    with pytest.raises(KeyError, match=r'ModuleDict: the name \'a.b\' contains "\."'):
        nn.ModuleDict({"a": inner, "a.b": nn.Linear(2, 2, rng=1)})
    d = nn.ModuleDict({"a": inner})
    with pytest.raises(KeyError, match=r"'a_b'"):  # the message suggests a name that works
        d["a.b"] = nn.Linear(2, 2, rng=1)
    assert list(d) == ["a"] and len(d.state_dict()) == 2


@pytest.mark.parametrize("key", ["keys", "items", "values", "forward", "state_dict", "training",
                                 "_modules", "parameters"])
def test_a_module_dict_key_that_would_hide_a_method_or_attribute_is_refused(key):
    with pytest.raises(KeyError, match=rf"ModuleDict: the key '{key}' would hide ModuleDict.{key}"):
        nn.ModuleDict({key: nn.Linear(2, 2, rng=0)})
    d = nn.ModuleDict({"ok": nn.Linear(2, 2, rng=0)})
    with pytest.raises(KeyError, match=rf"'{key}'"):
        d[key] = nn.Linear(2, 2, rng=1)
    assert list(d.keys()) == ["ok"]  # .keys() still works


def test_a_module_dict_key_can_be_replaced_and_non_str_or_empty_keys_are_refused():
    d = nn.ModuleDict({"wte": nn.Linear(2, 2, rng=0)})
    d["wte"] = replacement = nn.Linear(2, 2, rng=1)
    assert d["wte"] is replacement and d.wte is replacement
    with pytest.raises(TypeError, match=r"ModuleDict: a name must be a str, got int 3"):
        nn.ModuleDict({3: nn.Linear(2, 2, rng=0)})
    with pytest.raises(KeyError, match=r"ModuleDict: a name cannot be empty"):
        nn.ModuleDict({"": nn.Linear(2, 2, rng=0)})


@pytest.mark.parametrize("value", [lambda: nn.Linear(2, 2, rng=0), lambda: nn.Parameter(np.ones(2))])
def test_setattr_with_a_dotted_name_is_refused_for_modules_and_parameters(value):
    model = nn.Module()
    with pytest.raises(KeyError, match=r"Module: the name 'a.b' contains \"\.\""):
        setattr(model, "a.b", value())
    assert model.state_dict() == {}


def test_add_module_and_register_parameter_follow_pytorch():
    model = nn.Module()
    model.add_module("lin", lin := nn.Linear(2, 3, rng=0))
    model.register_parameter("scale", scale := nn.Parameter(np.ones(3)))
    assert model.lin is lin and model.scale is scale
    assert list(model.state_dict()) == ["scale", "lin.weight", "lin.bias"]  # own first, as PyTorch
    with pytest.raises(KeyError, match=r"Module: the key 'eval' would hide Module.eval"):
        model.add_module("eval", nn.Linear(2, 2, rng=1))
    with pytest.raises(KeyError, match=r"'x.y' contains"):
        model.register_parameter("x.y", nn.Parameter(np.ones(1)))
    with pytest.raises(TypeError, match=r"add_module: 'm' must be a Module, got int"):
        model.add_module("m", 3)
