"""Whole programs with the fast kernels (the default) and with the plain ones: every op that names a
kernel, a tied language model's AdamW steps, diamonds and accumulation, a TinyGPT step. Where the
kernels used are bit-identical (test_kernels.py) the programs must be too; elsewhere the test
states the tolerance and why."""

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn.functional as F
from minigrad.engine import kernels, ops
from minigrad.models import TinyGPT

rng = np.random.default_rng(0)
needs_fast = pytest.mark.skipif(not kernels.fast_enabled(),
                                reason="MINIGRAD_FAST_KERNELS=0: nothing to compare")
pytestmark = needs_fast


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def leaf(values, dtype=np.float64):
    return mg.tensor(np.asarray(values, dtype=dtype), requires_grad=True)


def both_ways(program):
    """Run `program()` with the fast kernels and then the plain ones; return both results."""
    with_fast = program()
    with kernels.plain_only():
        assert not kernels.fast_enabled()
        plain = program()
    assert kernels.fast_enabled()
    return with_fast, plain


def assert_same_bits(a, b):
    for x, y in zip(a, b, strict=True):
        x, y = mg.engine.to_dense(x), mg.engine.to_dense(y)
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes()


def assert_rounding_close(a, b, rtol, atol):
    for x, y in zip(a, b, strict=True):
        x, y = mg.engine.to_dense(x), mg.engine.to_dense(y)
        assert x.dtype == y.dtype and x.shape == y.shape and np.all(np.isfinite(x))
        np.testing.assert_allclose(x, y, rtol=rtol, atol=atol)


# ---- every op that names a kernel -------------------------------------------------------------

# (op, inputs maker, keyword arguments, bit-identical?)
CASES = {
    ops.Tanh: (lambda: [f32(300, 1200)], {}, True),
    ops.GELU: (lambda: [f32(64, 256)], {}, False),
    ops.Erf: (lambda: [f32(8, 16)], {}, True),
    ops.Sigmoid: (lambda: [f32(8, 16)], {}, True),
    ops.LogSigmoid: (lambda: [f32(8, 16)], {}, True),
    ops.Softplus: (lambda: [f32(8, 16)], {}, True),
    ops.Embedding: (lambda: [f32(50, 8), rng.zipf(1.5, size=(16, 40)) % 50], {}, True),
    ops.Linear: (lambda: [f32(4, 16, 32), f32(24, 32), f32(24)], {}, False),
    ops.CrossEntropy: (lambda: [f32(64, 500), rng.integers(0, 500, 64)], {}, True),
    ops.LinearCrossEntropy: (lambda: [f32(4, 16, 32), f32(300, 32), None, rng.integers(0, 300, (4, 16))],
                             {}, True),
    ops.LayerNorm: (lambda: [f32(8, 32, 64), f32(64), f32(64)], {}, False),
    ops.ScaledDotProductAttention: (lambda: [f32(2, 4, 16, 8), f32(2, 4, 16, 8), f32(2, 4, 16, 8)],
                                    {"is_causal": True}, False),
    ops.RMSNorm: (lambda: [f32(8, 32, 64), f32(64)], {"eps": 1e-5}, False),
    ops.SiLU: (lambda: [np.r_[f32(64, 256).ravel() * 4, -200, 200].astype(np.float32)], {}, False),
}


def run(op, arrays, kwargs):
    tensors = [mg.tensor(a, requires_grad=True) if a is not None and a.dtype.kind == "f" else
               (None if a is None else mg.tensor(a)) for a in arrays]
    out = op.apply(*tensors, **kwargs)
    weights = np.linspace(-1, 1, out.data.size, dtype=out.dtype).reshape(out.shape)
    out.backward(weights)
    grads = [t.grad for t in tensors if t is not None and t.requires_grad]
    return [out.data, *(mg.engine.to_dense(g) for g in grads)]


def test_every_op_that_names_a_kernel_is_covered_here():
    import inspect

    calling = {op for op in vars(ops).values() if isinstance(op, type) and issubclass(op, mg.Function)
               and "kernels." in inspect.getsource(op)}
    assert calling == set(CASES)


@pytest.mark.parametrize("blocks", ["default sizes", "tiny row blocks on two threads"])
@pytest.mark.parametrize("op", list(CASES), ids=lambda op: op.__name__)
def test_each_op_computes_the_same_with_either_kernels(op, blocks, request):
    if blocks != "default sizes":
        request.getfixturevalue("small_row_blocks")  # every row-block kernel takes its threaded path
    make, kwargs, exact = CASES[op]
    arrays = make()
    with_fast, plain = both_ways(lambda: run(op, arrays, kwargs))
    if exact:
        assert_same_bits(with_fast, plain)
    else:
        assert_rounding_close(with_fast, plain, rtol=2e-5, atol=2e-6)


# ---- whole programs ---------------------------------------------------------------------------

def test_tied_language_model_steps_with_adamw_are_bit_identical():
    from minigrad.models import TinyLM

    def program():
        rng = np.random.default_rng(0)
        model = TinyLM(vocab_size=50, embedding_dim=8, hidden=16, context=2, tied=True, rng=1)
        optimizer = mg.optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.1)
        out = []
        for _ in range(4):
            contexts = rng.integers(0, 50, size=(64, 2))
            contexts[:16] = 7  # one id very frequent: a long run when summing the lookup's rows
            targets = rng.integers(0, 50, size=64)
            model.zero_grad()
            loss = model.loss(contexts, targets)
            loss.backward()
            optimizer.step()
            out.append(loss.data)
        return out + [p.data for p in model.parameters()]

    assert_same_bits(*both_ways(program))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cross_entropy_is_bit_identical_with_and_without_its_buffer(dtype):
    def program():
        rng = np.random.default_rng(3)
        z = leaf(rng.normal(size=(6, 11)) * 5, dtype=dtype)
        targets = rng.integers(0, 11, size=6)
        loss = F.cross_entropy(z * 2.0, targets)
        loss.backward(retain_graph=True)
        loss.backward()
        summed = F.cross_entropy(z, targets, reduction="sum")
        summed.backward()
        return [loss.data, summed.data, z.grad]

    assert_same_bits(*both_ways(program))


@pytest.mark.parametrize("shape", [(20, 40), (3, 7, 40), (1, 40), (41, 40)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cross_entropy_in_threaded_row_blocks_is_bit_identical(small_row_blocks, shape, dtype):
    def program():
        rng = np.random.default_rng(6)
        z = leaf(rng.normal(size=shape) * 8, dtype=dtype)
        targets = rng.integers(0, shape[-1], size=shape[:-1])
        loss = F.cross_entropy((z * 1.0).reshape(-1, shape[-1]), targets.reshape(-1))  # rows of classes
        loss.backward()
        return [loss.data, z.grad]

    assert_same_bits(*both_ways(program))


def test_diamonds_and_accumulation_are_bit_identical():
    def program():
        rng = np.random.default_rng(5)
        a = leaf(rng.normal(size=(4, 3)))
        table = leaf(rng.normal(size=(6, 3)))
        for _ in range(2):  # accumulate across calls
            left, right = a * 2.0, a.tanh()
            b = left * right + a  # a diamond with a third edge
            rows = F.embedding(np.array([1, 1, 5, 0]), table)
            head = F.linear(b + rows, table)  # the tied table: sparse rows meet a dense path
            (F.cross_entropy(head, np.array([0, 5, 5, 2])) + (b * b).sum()).backward()
        c = a + a
        (c + c).sum().backward()
        return [a.grad, table.grad]

    assert_same_bits(*both_ways(program))


@pytest.mark.parametrize("dtype, tol", [(np.float32, dict(rtol=1e-4, atol=1e-6)),
                                        (np.float64, dict(rtol=1e-9, atol=1e-13))])
def test_tinygpt_logits_and_every_gradient_with_either_kernels(dtype, tol):
    ids = np.random.default_rng(2).integers(0, 13, (3, 9))

    def program():
        model = TinyGPT(13, 8, 12, 3, 2, tied=True, dtype=dtype, rng=5)
        logits = model(ids[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, 13), ids[:, 1:].reshape(-1))
        loss.backward()
        return [logits.data, np.asarray(loss.data)] + [p.grad for p in model.parameters()]

    # float32: every gradient within 1e-4 of its size (rounding through 2 blocks); not compared
    # after AdamW steps, whose update m / sqrt(v) turns a rounding difference in a gradient near
    # zero (a bias's first step) into a difference of the learning rate's size
    assert_rounding_close(*both_ways(program), **tol)
