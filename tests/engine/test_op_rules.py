"""The ops' rules as data the tests run: ops.RULES names every op (and nothing else), the table in
ops/__init__.py's docstring is generated from it, and every op it names passes gradcheck here
through a sample that runs that very op (a trace checks it ran)."""

import inspect

import numpy as np
import pytest

import minigrad as mg
from minigrad.engine import ops
from minigrad.nn import functional as F

rng = np.random.default_rng(0)


def r(*shape, low=-2.0, high=2.0):
    return rng.uniform(low, high, size=shape)


def positive(*shape):
    return r(*shape, low=0.5, high=2.0)


def away_from_zero(*shape):
    return np.sign(r(*shape)) * positive(*shape)


ids = np.array([[1, 3, 1], [0, 3, 2]])
mask = np.array([[True, False, True], [False, False, True]])
cos, sin = np.cos(r(1, 2)), np.sin(r(1, 2))
pos_weight = np.array([0.5, 1.0, 3.0])

# op: (function of leaves, their values); each function runs its op (checked by a trace)
SAMPLES = {
    ops.Add: (lambda a, b: a + b, [r(2, 3), r(3)]),
    ops.Sub: (lambda a, b: a - b, [r(2, 3), r(3)]),
    ops.Mul: (lambda a, b: a * b, [r(2, 3), r(2, 1)]),
    ops.Div: (lambda a, b: a / b, [r(2, 3), away_from_zero(3)]),
    ops.Pow: (lambda a: a ** 3, [r(2, 3)]),
    ops.Neg: (lambda a: -a, [r(3)]),
    ops.Clone: (lambda a: a.clone(), [r(3)]),
    ops.Copy: (lambda a: _copied_into_another(a), [r(3)]),
    ops.MatMul: (lambda a, b: a @ b, [r(2, 3), r(3, 4)]),
    ops.Sum: (lambda a: a.sum(0), [r(2, 3)]),
    ops.Mean: (lambda a: a.mean(1), [r(2, 3)]),
    ops.Max: (lambda a: a.max(1), [np.arange(6.0).reshape(2, 3) * 0.7 - 1]),
    ops.Min: (lambda a: a.min(0), [np.arange(6.0).reshape(2, 3) * 0.3 + 1]),
    ops.Prod: (lambda a: a.prod(1), [r(2, 3)]),
    ops.LogSumExp: (lambda a: a.logsumexp(1), [r(2, 3)]),
    ops.Var: (lambda a: a.var(1), [r(2, 3)]),
    ops.Exp: (lambda a: a.exp(), [r(3)]),
    ops.Log: (lambda a: a.log(), [positive(3)]),
    ops.Tanh: (lambda a: a.tanh(), [r(2, 3)]),
    ops.Sigmoid: (lambda a: a.sigmoid(), [r(3)]),
    ops.LogSigmoid: (lambda a: F.logsigmoid(a), [r(3)]),
    ops.ReLU: (lambda a: a.relu(), [away_from_zero(3)]),
    ops.GELU: (lambda a: a.gelu(), [r(2, 3)]),
    ops.Sqrt: (lambda a: a.sqrt(), [positive(3)]),
    ops.Abs: (lambda a: a.abs(), [away_from_zero(3)]),
    ops.SiLU: (lambda a: F.silu(a), [r(2, 3)]),
    ops.Sin: (lambda a: a.sin(), [r(3)]),
    ops.Cos: (lambda a: a.cos(), [r(3)]),
    ops.Erf: (lambda a: a.erf(), [r(3)]),
    ops.Exp2: (lambda a: a.exp2(), [r(3)]),
    ops.Log2: (lambda a: a.log2(), [positive(3)]),
    ops.Rsqrt: (lambda a: a.rsqrt(), [positive(3)]),
    ops.Softplus: (lambda a: F.softplus(a, beta=2.0), [r(3)]),
    ops.LeakyReLU: (lambda a: F.leaky_relu(a, 0.1), [away_from_zero(3)]),
    ops.Sign: (lambda a: a.sign() * a, [away_from_zero(3)]),
    ops.Clamp: (lambda a: a.clamp(-1.0, 1.0), [np.array([-1.7, -0.5, 0.3, 1.6])]),
    ops.Maximum: (lambda a, b: a.maximum(b), [np.array([1.0, -1.0, 2.0]), np.array([0.0, 0.5, -2.0])]),
    ops.Minimum: (lambda a, b: a.minimum(b), [np.array([1.0, -1.0, 2.0]), np.array([0.0, 0.5, -2.0])]),
    ops.PowTensor: (lambda a, b: a ** b, [positive(3), r(3)]),
    ops.Cast: (lambda a: a.to(np.float32).to(np.float64), [r(3)]),  # checked with a wider step: below
    ops.Reshape: (lambda a: a.reshape(3, 2), [r(2, 3)]),
    ops.Permute: (lambda a: a.permute(1, 0), [r(2, 3)]),
    ops.GetItem: (lambda a: a[np.array([0, 2, 2])], [r(3, 2)]),
    ops.SetItem: (lambda a, b: _set_item(a, b), [r(3), r(2)]),
    ops.Concatenate: (lambda a, b: F.concatenate([a, b], axis=0), [r(2, 3), r(1, 3)]),
    ops.Stack: (lambda a, b: F.stack([a, b], axis=1), [r(2, 3), r(2, 3)]),
    ops.Narrow: (lambda a: a.narrow(1, 1, 2), [r(2, 3)]),
    ops.MaskedFill: (lambda a: a.masked_fill(mask, 0.5), [r(2, 3)]),
    ops.Where: (lambda a, b: F.where(mask, a, b), [r(2, 3), r(2, 3)]),
    ops.Flip: (lambda a: a.flip(1), [r(2, 3)]),
    ops.Expand: (lambda a: a.expand(2, 3), [r(1, 3)]),
    ops.Embedding: (lambda w: F.embedding(ids, w), [r(4, 2)]),
    ops.Linear: (lambda x, w, b: F.linear(x, w, b), [r(2, 3), r(4, 3), r(4)]),
    ops.Softmax: (lambda a: a.softmax(1), [r(2, 3)]),
    ops.LogSoftmax: (lambda a: a.log_softmax(1), [r(2, 3)]),
    ops.CrossEntropy: (lambda z: F.cross_entropy(z, np.array([2, 0])), [r(2, 3)]),
    ops.LinearCrossEntropy: (lambda x, w: F.linear_cross_entropy(x, w, np.array([2, 0])), [r(2, 3), r(4, 3)]),
    ops.LayerNorm: (lambda x, w, b: F.layer_norm(x, 3, w, b), [r(2, 3), r(3), r(3)]),
    ops.RMSNorm: (lambda x, w: F.rms_norm(x, 3, w), [r(2, 3), r(3)]),
    ops.Rotary: (lambda x: F.rotate_pairs(x, cos, sin), [r(3, 4)]),
    ops.ScaledDotProductAttention: (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                                    [r(1, 3, 2), r(1, 3, 2), r(1, 3, 2)]),
    ops.SoftTargetCrossEntropy: (lambda z: F.cross_entropy(z, np.array([2, 0]), label_smoothing=0.1),
                                 [r(2, 3)]),
    ops.NLLLoss: (lambda z: F.nll_loss(z, np.array([2, 0])), [r(2, 3)]),
    ops.Repeat: (lambda a: a.repeat(2, 1, 3), [r(2, 3)]),
    ops.Cumsum: (lambda a: a.cumsum(1) * a, [r(2, 3)]),
    ops.Gather: (lambda a: a.gather(1, np.array([[2, 0, 2], [1, 1, 0]])), [r(2, 3)]),
    ops.RoundedDivide: (lambda a, b: (a // b) * a + a.div(b, rounding_mode="trunc") * b,
                        [r(2, 3), away_from_zero(3)]),
    ops.Remainder: (lambda a, b: a % b + a.fmod(b), [r(2, 3) * 3, away_from_zero(3)]),
    ops.ScatterAdd: (lambda a, src: a.scatter_add(1, np.array([[2, 0, 2], [1, 1, 0]]), src),
                     [r(2, 3), r(2, 3)]),
    ops.Tan: (lambda a: a.tan(), [r(3, low=-1.2, high=1.2)]),
    ops.Sinh: (lambda a: a.sinh(), [r(3)]),
    ops.Cosh: (lambda a: a.cosh(), [r(3)]),
    ops.Asin: (lambda a: a.asin(), [r(3, low=-0.9, high=0.9)]),
    ops.Acos: (lambda a: a.acos(), [r(3, low=-0.9, high=0.9)]),
    ops.Atan: (lambda a: a.atan(), [r(3)]),
    ops.Asinh: (lambda a: a.asinh(), [r(3)]),
    ops.Acosh: (lambda a: a.acosh(), [r(3, low=1.1, high=3.0)]),
    ops.Atanh: (lambda a: a.atanh(), [r(3, low=-0.9, high=0.9)]),
    ops.Log10: (lambda a: a.log10(), [positive(3)]),
    ops.Round: (lambda a: a.floor() * a, [np.array([0.3, 1.6, -2.4])]),  # off the steps (whole numbers)
    ops.BCE: (lambda p, y: F.binary_cross_entropy(p, y, weight=np.array([0.5, 1.0, 2.0])),
              [r(2, 3, low=0.1, high=0.9), r(2, 3, low=0.0, high=1.0)]),
    ops.BCEWithLogits: (lambda x, y: F.binary_cross_entropy_with_logits(x, y, pos_weight=pos_weight),
                        [r(2, 3), r(2, 3, low=0.0, high=1.0)]),
}


# the float32 in between rounds each value by about 1e-7: a step of 1e-2 keeps that small beside it
GRADCHECK_OPTIONS = {ops.Cast: dict(eps=1e-2, atol=1e-5)}


def _copied_into_another(a):
    out = mg.zeros(3, dtype=np.float64)
    out.copy_(a)  # out now reads a: its gradient goes back through Copy
    return out * 2.0


def _set_item(a, b):
    out = a * 1.0
    out[np.array([0, 2])] = b
    return out


def every_op():
    return [v for v in vars(ops).values()
            if inspect.isclass(v) and issubclass(v, mg.Function) and v is not mg.Function]


def test_rules_name_every_op_and_nothing_else():
    assert set(ops.RULES) == set(every_op())
    for op, (forward, backward, lesson) in ops.RULES.items():
        assert forward and backward and lesson, op


def test_the_docstring_table_is_the_one_rules_table_makes():
    assert ops.rules_table() in ops.__doc__, (
        "regenerate the table in minigrad/engine/ops/__init__.py's docstring from "
        "`python -c 'from minigrad.engine import ops; print(ops.rules_table())'`")


def test_every_op_of_the_rules_has_a_sample_here():
    assert set(SAMPLES) == set(ops.RULES)


def ran_ops(fn, leaves):
    """The ops whose backward ran when fn(*leaves) was backpropagated."""
    out = fn(*leaves)
    seen, stack = set(), [out.grad_fn]
    while stack:
        node = stack.pop()
        if node is not None and getattr(node, "op", None) is not None and node.op not in seen:
            seen.add(node.op)
            stack.extend(node.next_nodes)
        elif node is not None:
            stack.extend(node.next_nodes)
    return seen


@pytest.mark.parametrize("op", list(ops.RULES), ids=lambda op: op.__name__)
def test_every_op_passes_gradcheck_through_its_sample(op):
    fn, values = SAMPLES[op]
    leaves = [mg.tensor(np.asarray(v, np.float64), requires_grad=True) for v in values]
    assert op in ran_ops(fn, leaves), f"the sample for {op.__name__} does not run it"
    report = mg.gradcheck(fn, leaves, **GRADCHECK_OPTIONS.get(op, {}))
    assert report.ok, str(report)
