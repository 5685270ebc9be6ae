"""Every fast twin registered at the seam against its plain op, and the fast gradient sums against
the plain ones: same numbers (bit for bit where the twin says so), both ways."""

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn.functional as F
from minigrad.engine import fast_ops, ops, recording, seam

rng = np.random.default_rng(0)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


# (plain op, inputs maker, keyword arguments, bit-identical?)
CASES = {
    ops.Tanh: (lambda: [f32(300, 1200)], {}, True),
    ops.GELU: (lambda: [f32(64, 256)], {}, False),
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


def run(op, arrays, kwargs, fast):
    tensors = [mg.tensor(a, requires_grad=True) if a is not None and a.dtype.kind == "f" else
               (None if a is None else mg.tensor(a)) for a in arrays]
    with mg.use(fast=fast):
        out = op.apply(*tensors, **kwargs)
        assert (out.grad_fn.function is not op) == fast
        weights = np.linspace(-1, 1, out.data.size, dtype=out.dtype).reshape(out.shape)
        out.backward(weights)
    grads = [t.grad for t in tensors if t is not None and t.requires_grad]
    grads = [g.to_dense() if hasattr(g, "to_dense") else g for g in grads]
    return out.data, grads


def test_every_twin_is_covered_here():
    assert set(fast_ops.TWINS) == set(CASES)
    assert all(seam._fast_twins[plain] is twin for plain, twin in fast_ops.TWINS.items())


@pytest.mark.parametrize("blocks", ["default sizes", "tiny row blocks on two threads"])
@pytest.mark.parametrize("op", list(CASES), ids=lambda op: op.__name__)
def test_the_twin_computes_what_its_plain_op_computes(op, blocks, request):
    if blocks != "default sizes":
        request.getfixturevalue("small_row_blocks")  # every row-block kernel takes its threaded path
    make, kwargs, exact = CASES[op]
    arrays = make()
    out_fast, grads_fast = run(op, arrays, kwargs, fast=True)
    out_plain, grads_plain = run(op, arrays, kwargs, fast=False)
    for a, b in zip([out_fast, *grads_fast], [out_plain, *grads_plain], strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape and np.all(np.isfinite(a))
        if exact:
            assert a.tobytes() == b.tobytes()
        else:
            np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)


def test_owned_sums_equal_new_array_sums_bit_for_bit_on_a_tied_table():
    table = mg.nn.Parameter(f32(40, 8))
    ids = mg.tensor(rng.integers(0, 40, (6, 5)))
    grads = {}
    for fast in (True, False):
        table.grad = None
        with mg.use(fast=fast):
            h = F.embedding(ids, table).tanh()
            loss = F.cross_entropy(h @ table.T, ids)  # the table read twice: lookup and head
            loss.backward()
        grads[fast] = table.grad
    assert grads[True].tobytes() == grads[False].tobytes()


def test_owned_sums_never_add_into_an_array_someone_else_holds():
    # Add sends one G to both inputs: summing into it in place would change the other's gradient
    x = mg.tensor(f32(5), requires_grad=True)
    y = mg.tensor(f32(5), requires_grad=True)
    kept = []
    with recording(lambda sender, receiver, g: kept.append(g)):  # a recorder holds each one
        ((x + y) * 2.0 + x).sum().backward()
    np.testing.assert_array_equal(x.grad, np.full(5, 3.0, np.float32))
    np.testing.assert_array_equal(y.grad, np.full(5, 2.0, np.float32))
    assert all(not np.shares_memory(x.grad, g) or g is x.grad for g in kept)


def test_a_leaf_grad_is_never_an_array_an_op_still_holds():
    w = mg.tensor(f32(3, 3), requires_grad=True)
    out = w.reshape(9)  # reshape's backward returns a view of G: the leaf must get its own copy
    g = np.ones(9, np.float32)
    out.backward(g)
    w.grad += 1
    np.testing.assert_array_equal(g, np.ones(9, np.float32))
