"""TinyGPT's fast paths (engine/fast.py) against the plain forms in ops.py.

Each fast form is run with the fast paths on and then inside `fast.disabled()`, on the same
arrays. Where a fast form keeps the plain form's operations in the same order the bytes must be
equal; where it sums in another order (a product with ones, einsum) or evaluates Phi by a fit,
the test states the tolerance and why. Each is also run in row blocks on two threads, which must
give the same bytes as one block on one thread.
"""

import math
import os
import threading

import numpy as np
import pytest

import minigrad as mg
from minigrad.engine import fast
from minigrad.models import TinyGPT
from minigrad.nn import functional as F

needs_fast = pytest.mark.skipif(not fast.enabled(), reason="MINIGRAD_FAST_PATHS=0: nothing to compare")
pytestmark = needs_fast


@pytest.fixture
def two_threads_small_blocks(small_row_blocks, monkeypatch):
    """Every TinyGPT fast form in blocks of a few rows, split over two threads at any size."""
    monkeypatch.setattr(fast, "ROWWISE_PARALLEL_MIN_BYTES", 0)


def both_ways(program):
    fast_result = program()
    with fast.disabled():
        plain_result = program()
    return fast_result, plain_result


def run_op(op, arrays, dtype, weights_seed=9, **kw):
    """op(*tensors) forward and backward against fixed random weights: [out, grads...]."""
    leaves = [mg.tensor(np.asarray(a, dtype=dtype), requires_grad=True) for a in arrays]
    out = op(*leaves, **kw)
    weights = np.random.default_rng(weights_seed).standard_normal(out.shape).astype(dtype)
    (out * weights).sum().backward()
    return [out.data] + [leaf.grad for leaf in leaves]


def assert_same_bytes(a, b):
    for x, y in zip(a, b, strict=True):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes()


def assert_rounding_close(a, b, rtol, atol):
    for x, y in zip(a, b, strict=True):
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_allclose(x, y, rtol=rtol, atol=atol)


rng = np.random.default_rng(0)


# ---- Linear: one product of rows for (B, T, in) inputs ---------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_linear_rows_agree_with_the_batched_product_to_rounding(dtype):
    x, w, b = rng.standard_normal((4, 6, 24)), rng.standard_normal((10, 24)), rng.standard_normal(10)
    fast_out, plain_out = both_ways(lambda: run_op(F.linear, (x, w, b), dtype))
    assert_same_bytes(*both_ways(lambda: run_op(F.linear, (x[0], w, b), dtype)))  # 2-D: + b in place
    # the same products summed in another order (one BLAS call over rows vs numpy's batched loop)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    assert_rounding_close(fast_out, plain_out, **tol)


def test_linear_rows_decline_a_vector_input_and_when_off():
    x, w = rng.standard_normal((5, 3)), rng.standard_normal((2, 3))
    assert fast.linear_rows(x[0], w, None) is None  # 1-D: the plain x @ W.T
    assert fast.linear_rows(x, w, None) is not None
    with fast.disabled():
        assert fast.linear_rows(x[None], w, None) is None


# ---- GELU: float32 Phi by a rational fit -------------------------------------------------------

def test_float32_gelu_fit_is_within_its_error_bound_of_erf():
    a = np.concatenate([np.linspace(-8, 8, 4001), rng.standard_normal(3000) * 3]).astype(np.float32)
    exact_cdf = np.array([0.5 * (1 + math.erf(x / math.sqrt(2))) for x in a.astype(np.float64)])
    out, cdf, pdf = fast.gelu_float32(a[None])
    # A&S 7.1.26 bounds the erf error by 1.5e-7, so 0.75e-7 in Phi, plus the float32 rounding
    # of 22 passes (steps of 6e-8 near 1): 3e-7 absolute in Phi, and |a| times that in a Phi(a)
    np.testing.assert_allclose(cdf[0], exact_cdf, rtol=0, atol=3e-7)
    assert (np.abs(out[0] - a * exact_cdf) <= 3e-7 * np.abs(a) + 1e-12).all()
    exact_pdf = np.exp(-0.5 * a.astype(np.float64) ** 2) / math.sqrt(2 * math.pi)
    np.testing.assert_allclose(pdf[0], exact_pdf, rtol=1e-6, atol=1e-12)
    with fast.disabled():  # the plain form: math.erf, rounded once to float32
        plain = F.gelu(mg.tensor(a)).data
    np.testing.assert_allclose(plain, a * exact_cdf, rtol=3e-7, atol=1e-30)


def test_gelu_fast_and_plain_agree_forward_and_backward():
    a = rng.standard_normal((3, 5, 40)) * 2
    fast32, plain32 = both_ways(lambda: run_op(F.gelu, (a,), np.float32))
    assert_rounding_close(fast32, plain32, rtol=0, atol=2e-6)  # the fit, scaled by |a| <= 10
    fast64, plain64 = both_ways(lambda: run_op(F.gelu, (a,), np.float64))
    assert_same_bytes(fast64, plain64)  # float64 keeps math.erf; the slope is the same three steps


def test_gelu_fit_is_only_for_float32_and_declines_when_off():
    assert fast.gelu_float32(np.zeros((2, 3))) is None  # float64: math.erf, exact
    with fast.disabled():
        assert fast.gelu_float32(np.zeros((2, 3), np.float32)) is None


# ---- LayerNorm and attention ------------------------------------------------------------------

def layer_norm(x, w, b):
    return F.layer_norm(x, x.shape[-1], w, b)


@pytest.mark.parametrize("dtype, tol", [(np.float32, dict(rtol=2e-5, atol=2e-5)),
                                        (np.float64, dict(rtol=1e-11, atol=1e-12))])
def test_layer_norm_fast_and_plain_agree_to_rounding(dtype, tol):
    # an offset and spread the statistics must not lose: x = 50 + 3 z
    x = 50 + 3 * rng.standard_normal((4, 7, 32))
    w, b = rng.standard_normal(32), rng.standard_normal(32)
    fast_out, plain_out = both_ways(lambda: run_op(layer_norm, (x, w, b), dtype))
    # the means are summed in another order (einsum): float rounding apart
    assert_rounding_close(fast_out, plain_out, **tol)


def test_layer_norm_without_affine_parameters_agrees():
    x = rng.standard_normal((6, 16))
    fast_out, plain_out = both_ways(lambda: run_op(lambda t: F.layer_norm(t, 16), (x,), np.float64))
    assert_rounding_close(fast_out, plain_out, rtol=1e-11, atol=1e-12)


def attention(q, k, v, is_causal=True):
    return F.scaled_dot_product_attention(q, k, v, is_causal=is_causal)


@pytest.mark.parametrize("is_causal", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_attention_fast_and_plain_agree_to_rounding(is_causal, dtype):
    q, k, v = (rng.standard_normal((3, 2, 9, e)) for e in (4, 4, 5))
    fast_out, plain_out = both_ways(lambda: run_op(attention, (q, k, v), dtype, is_causal=is_causal))
    # the softmax's sums and sum(dP P) are einsums in the fast form, and it multiplies by 1 / sum
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-13)
    assert_rounding_close(fast_out, plain_out, **tol)


def test_attention_on_a_single_sequence_uses_the_plain_form():
    q = rng.standard_normal((5, 4))
    assert fast.attention(q, q, q, 0.5, None) is None  # no batch axis to split
    fast_out, plain_out = both_ways(lambda: run_op(attention, (q, q, q), np.float64))
    assert_same_bytes(fast_out, plain_out)


# ---- on two threads: the same bytes as on one -------------------------------------------------

def transformer_ops_program(dtype):
    def program():
        x = rng_for_program().standard_normal((5, 3, 8, 12))
        outs = run_op(F.gelu, (x,), dtype)
        outs += run_op(layer_norm, (x, np.ones(12) * 0.5, np.zeros(12) + 0.1), dtype)
        outs += run_op(attention, (x, x * 0.5, x[..., :6]), dtype)
        return outs
    return program


def rng_for_program():
    return np.random.default_rng(4)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_blocks_on_two_threads_give_the_bytes_of_one_thread(dtype, monkeypatch):
    program = transformer_ops_program(dtype)
    one_thread = program()  # the default sizes: these small arrays stay in one block
    monkeypatch.setattr(fast, "ROW_BLOCK_BYTES", 3 * 12 * 8)
    monkeypatch.setattr(fast, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(fast, "ROWWISE_PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(fast, "_THREADS", 2)
    threads = set()
    original = fast.in_row_blocks

    def watched(n_rows, row_bytes, work, *args):
        original(n_rows, row_bytes, lambda lo, hi: (threads.add(threading.get_ident()), work(lo, hi)), *args)

    monkeypatch.setattr(fast, "in_row_blocks", watched)
    two_threads = program()
    assert len(threads) == 2  # the helper thread took part
    assert_same_bytes(one_thread, two_threads)


def test_set_threads_keeps_row_blocks_on_one_thread(two_threads_small_blocks, monkeypatch):
    monkeypatch.setattr(fast, "_THREADS", fast._THREADS)  # restored after the test
    fast.set_threads(1)
    threads = set()
    fast.in_row_blocks(20, 5 * 8, lambda lo, hi: threads.add(threading.get_ident()))
    assert threads == {threading.get_ident()}
    fast.set_threads(2)
    fast.in_row_blocks(20, 5 * 8, lambda lo, hi: threads.add(threading.get_ident()))
    assert len(threads) == min(2, os.cpu_count() or 1)
    with pytest.raises(ValueError, match="set_threads: n must be at least 1, got 0"):
        fast.set_threads(0)


# ---- a whole TinyGPT step ----------------------------------------------------------------------

@pytest.mark.parametrize("dtype, tol", [(np.float32, dict(rtol=1e-4, atol=1e-6)),
                                        (np.float64, dict(rtol=1e-9, atol=1e-13))])
def test_tinygpt_logits_and_every_gradient_with_and_without_fast_paths(dtype, tol):
    ids = np.random.default_rng(2).integers(0, 13, (3, 9))

    def program():
        model = TinyGPT(13, 8, 12, 3, 2, tied=True, dtype=dtype, rng=5)
        logits = model(ids[:, :-1])
        loss = F.cross_entropy(logits, ids[:, 1:])
        loss.backward()
        return [logits.data, np.asarray(loss.data)] + [mg.engine.to_dense(p.grad) for p in model.parameters()]

    fast_out, plain_out = both_ways(program)
    # float32: every gradient within 1e-4 of its size (rounding through 2 blocks); not compared
    # after AdamW steps, whose update m / sqrt(v) turns a rounding difference in a gradient near
    # zero (a bias's first step) into a difference of the learning rate's size
    assert_rounding_close(fast_out, plain_out, **tol)


def test_freed_memory_is_kept_on_glibc():
    import platform
    import sys

    expected = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
    assert fast.keep_freed_memory() is expected
