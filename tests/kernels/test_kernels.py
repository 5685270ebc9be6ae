"""Every kernel of the interface: the fast implementation against the plain one, on the same
arrays, called directly. Where the fast form does the plain form's operations in the same order on
each row the bytes must be equal; where it sums in another order or fits a function, the test
states the tolerance and why. Each is also run in tiny row blocks on two threads.
"""

import inspect
import math
import os
import select
import signal
import subprocess
import sys
import threading

import numpy as np
import pytest

from minigrad.engine import kernels
from minigrad.engine.kernels import fast, plain

rng = np.random.default_rng(0)


def same_bytes(a, b):
    a, b = (a, b) if isinstance(a, tuple) else ((a,), (b,))
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if x is None or y is None:
            assert x is None and y is None
            continue
        assert x.dtype == y.dtype and x.shape == y.shape
        assert np.asarray(x).tobytes() == np.asarray(y).tobytes()


def close(a, b, rtol, atol):
    a, b = (a, b) if isinstance(a, tuple) else ((a,), (b,))
    for x, y in zip(a, b, strict=True):
        if x is None or y is None:
            assert x is None and y is None
            continue
        assert x.dtype == y.dtype and x.shape == y.shape
        assert np.all(np.isfinite(x)) and np.all(np.isfinite(y))
        np.testing.assert_allclose(x, y, rtol=rtol, atol=atol)


@pytest.fixture(params=["default sizes", "tiny row blocks on two threads"])
def blocks(request):
    if request.param != "default sizes":
        request.getfixturevalue("small_row_blocks")
    return request.param


# ---- the interface itself ---------------------------------------------------------------------

def test_both_implementations_have_every_kernel_with_the_same_signature():
    for name in kernels.INTERFACE:
        plain_kernel, fast_kernel = getattr(plain, name), getattr(fast, name)
        assert inspect.signature(plain_kernel) == inspect.signature(fast_kernel), name
        assert plain_kernel.__doc__, f"plain.{name} says what it computes"


def test_the_plain_module_holds_nothing_but_the_interface_and_its_helpers():
    public = {n for n, v in vars(plain).items() if inspect.isfunction(v) and v.__module__ == plain.__name__
              and not n.startswith("_")}
    assert public == set(kernels.INTERFACE)


def test_choose_swaps_every_name_and_plain_only_nests_and_ends_in_any_order():
    assert kernels.fast_enabled() == (os.environ.get("MINIGRAD_FAST_KERNELS", "1") != "0")
    default = kernels.fast_enabled()
    first, second = kernels.plain_only(), kernels.plain_only()
    first.__enter__()
    second.__enter__()
    assert all(getattr(kernels, n) is getattr(plain, n) for n in kernels.INTERFACE)
    first.__exit__(None, None, None)  # the outer block ends first: still plain
    assert not kernels.fast_enabled()
    second.__exit__(None, None, None)
    assert kernels.fast_enabled() == default
    if default:
        assert all(getattr(kernels, n) is getattr(fast, n) for n in kernels.INTERFACE)


def test_plain_only_blocks_on_two_threads_leave_the_default_behind():
    default = kernels.fast_enabled()
    entered, leave_a = threading.Event(), threading.Event()

    def thread_a():
        with kernels.plain_only():
            entered.set()
            leave_a.wait(10)

    a = threading.Thread(target=thread_a)
    a.start()
    entered.wait(10)
    with kernels.plain_only():
        leave_a.set()  # a ends its block while this one is still open
        a.join(10)
        assert not kernels.fast_enabled()
    assert kernels.fast_enabled() == default


def test_use_fast_sets_the_default_and_refuses_a_non_bool():
    default = kernels.fast_enabled()
    try:
        kernels.use_fast(False)
        assert not kernels.fast_enabled()
        with kernels.plain_only():
            pass
        assert not kernels.fast_enabled()  # the block brought back the new default, not the old
        kernels.use_fast(True)
        assert kernels.fast_enabled()
        with pytest.raises(TypeError, match=r"use_fast\(on\): expected True or False, got 1"):
            kernels.use_fast(1)
    finally:
        kernels.use_fast(default)


@pytest.mark.parametrize("variable", ["MINIGRAD_FAST_KERNELS", "MINIGRAD_FAST_PATHS"])
def test_the_environment_chooses_the_plain_kernels(variable):
    code = "import minigrad; print(minigrad.kernels.fast_enabled())"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINIGRAD_FAST")}
    for value, expected in (("0", "False"), ("1", "True")):
        done = subprocess.run([sys.executable, "-c", code], env={**env, variable: value},
                              capture_output=True, text=True, check=True)
        assert done.stdout.strip() == expected


def test_set_threads_refuses_what_is_not_a_positive_int():
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match=r"set_threads\(n\): n must be an int of at least 1"):
            kernels.set_threads(bad)


# ---- the vocabulary's kernels -----------------------------------------------------------------

@pytest.mark.parametrize("row_shape", [(), (1,), (2,), (5,), (3, 2), (128,)])
def test_segment_sums_are_bit_identical_and_sum_every_repeat(row_shape, blocks):
    ids = np.concatenate([rng.integers(0, 30, 300), np.full(200, 3), np.full(17, 9)])
    rng.shuffle(ids)
    rows = rng.normal(size=(ids.size, *row_shape)).astype(np.float32)
    got = fast.segment_sums(ids, rows)
    same_bytes(got, plain.segment_sums(ids, rows))
    unique, sums = got
    assert unique.tolist() == sorted(set(ids.tolist()))
    expected = np.zeros((30, *row_shape))
    np.add.at(expected, ids, rows.astype(np.float64))
    np.testing.assert_allclose(sums, expected[unique], rtol=1e-4, atol=1e-4)


def test_segment_sums_of_no_rows():
    for kernel in (plain.segment_sums, fast.segment_sums):
        unique, sums = kernel(np.zeros(0, np.int64), np.zeros((0, 4), np.float32))
        assert unique.shape == (0,) and sums.shape == (0, 4) and sums.dtype == np.float32


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_linear_of_a_matrix_is_bit_identical_and_of_a_batch_agrees_to_rounding(dtype):
    x, w, b = (rng.standard_normal(s).astype(dtype) for s in ((4, 6, 24), (10, 24), (10,)))
    same_bytes(fast.linear(x[0], w, b), plain.linear(x[0], w, b))  # + b in place: the same sums
    same_bytes(fast.linear(x[0, 0], w, b), plain.linear(x[0, 0], w, b))  # a vector: the plain form
    # the same products summed in another order (one BLAS call over rows vs numpy's batched loop)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    close(fast.linear(x, w, b), plain.linear(x, w, b), **tol)
    close(fast.linear(x, w, None), plain.linear(x, w, None), **tol)


def test_linear_writes_into_out_when_given_and_promotes_a_wider_bias():
    x, w = rng.standard_normal((5, 3)).astype(np.float32), rng.standard_normal((2, 3)).astype(np.float32)
    for kernel in (plain.linear, fast.linear):
        out = np.empty((5, 2), np.float32)
        assert kernel(x, w, np.ones(2, np.float32), out=out) is out
        np.testing.assert_allclose(out, x @ w.T + 1, rtol=1e-6)
        assert kernel(x, w, np.ones(2)).dtype == np.float64  # numpy's promotion, as the plain form


def test_linear_of_no_rows_into_out_gives_no_rows_in_both():
    x, w = np.zeros((0, 3), np.float32), rng.standard_normal((5, 3)).astype(np.float32)
    for kernel in (plain.linear, fast.linear):
        out = np.empty((0, 5), np.float32)
        assert kernel(x, w, None, out=out) is out and out.shape == (0, 5)
        assert kernel(x.reshape(0, 1, 3), w, np.ones(5, np.float32)).shape == (0, 1, 5)


@pytest.mark.parametrize("shape", [(20, 40), (1, 40), (41, 40), (0, 7)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cross_entropy_rows_are_bit_identical_into_a_buffer_or_in_place(shape, dtype, blocks):
    z = (rng.normal(size=shape) * 8).astype(dtype)
    y = rng.integers(0, shape[1], size=(shape[0], 1))
    scale = np.asarray(1 / max(shape[0], 1), dtype)
    results = []
    for kernel in (plain.cross_entropy_rows, fast.cross_entropy_rows):
        out = np.empty_like(z)
        total, target = kernel(z, y, scale, out=out)
        in_place = z.copy()
        total2, target2 = kernel(in_place, y, scale, out=in_place)
        same_bytes((out, total, target), (in_place, total2, target2))
        results.append((out, total, target))
    same_bytes(*results)
    dz, total, target = results[0]
    if shape[0]:
        p = np.exp(z - z.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        p[np.arange(shape[0]), y[:, 0]] -= 1
        np.testing.assert_allclose(dz, p * scale, rtol=1e-5, atol=1e-7)


def test_cross_entropy_rows_of_non_contiguous_logits_give_the_plain_bytes(small_row_blocks):
    z = rng.normal(size=(40, 20)).T  # (20, 40), Fortran order
    y = rng.integers(0, 40, (20, 1))
    outs = [np.empty((20, 40)), np.empty((20, 40))]
    same_bytes(plain.cross_entropy_rows(z, y, 0.05, outs[0]), fast.cross_entropy_rows(z, y, 0.05, outs[1]))
    same_bytes(outs[0], outs[1])


# ---- elementwise --------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(20, 7), (3, 7, 5), (41,), ()])
def test_tanh_is_bit_identical(shape, blocks):
    a = rng.normal(size=shape) * 3
    same_bytes(fast.tanh(a), plain.tanh(a))


def test_the_float32_gelu_fit_is_within_its_error_bound_of_erf():
    a = np.concatenate([np.linspace(-8, 8, 4001), rng.standard_normal(3000) * 3]).astype(np.float32)
    exact_cdf = np.array([0.5 * (1 + math.erf(x / math.sqrt(2))) for x in a.astype(np.float64)])
    out, cdf, pdf = fast.gelu(a[None])
    # A&S 7.1.26 bounds the erf error by 1.5e-7, so 0.75e-7 in Phi, plus the float32 rounding
    # of 22 passes (steps of 6e-8 near 1): 3e-7 absolute in Phi, and |a| times that in a Phi(a)
    np.testing.assert_allclose(cdf[0], exact_cdf, rtol=0, atol=3e-7)
    assert (np.abs(out[0] - a * exact_cdf) <= 3e-7 * np.abs(a) + 1e-12).all()
    exact_pdf = np.exp(-0.5 * a.astype(np.float64) ** 2) / math.sqrt(2 * math.pi)
    np.testing.assert_allclose(pdf[0], exact_pdf, rtol=1e-6, atol=1e-12)
    plain_out, _, _ = plain.gelu(a)  # the plain form: math.erf, rounded once to float32
    np.testing.assert_allclose(plain_out, a * exact_cdf, rtol=3e-7, atol=1e-30)


def test_gelu_fits_only_float32_and_its_backward_is_bit_identical(blocks):
    a64 = rng.standard_normal((3, 5, 40)) * 2
    same_bytes(fast.gelu(a64), plain.gelu(a64))  # float64 keeps math.erf
    a = a64.astype(np.float32)
    _, cdf, pdf = plain.gelu(a)
    g = rng.standard_normal(a.shape).astype(np.float32)
    same_bytes(fast.gelu_backward(g, a, cdf, pdf), plain.gelu_backward(g, a, cdf, pdf))
    close(fast.gelu(a), plain.gelu(a), rtol=0, atol=2e-6)  # the fit, scaled by |a| <= 10


def test_erf_and_sigmoid_have_one_form():
    assert fast.erf is plain.erf and fast.sigmoid is plain.sigmoid
    a = np.array([-800.0, -1.0, 0.0, 1.0, 800.0])
    np.testing.assert_allclose(plain.sigmoid(a), [0.0, 0.2689414, 0.5, 0.7310586, 1.0], rtol=1e-6)
    np.testing.assert_allclose(plain.erf(a), [-1.0, -0.8427008, 0.0, 0.8427008, 1.0], rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_silu_and_its_backward_agree_to_rounding_also_far_out(dtype, blocks):
    a = np.r_[rng.standard_normal(250) * 4, -200, 200, -1e4, 0].astype(dtype).reshape(2, -1)
    g = rng.standard_normal(a.shape).astype(dtype)
    tol = dict(rtol=1e-6, atol=1e-7) if dtype == np.float32 else dict(rtol=1e-14, atol=1e-15)
    with np.errstate(over="raise"):
        close(fast.silu(a), plain.silu(a), **tol)
    _, s = plain.silu(a)
    close(fast.silu_backward(g, a, s), plain.silu_backward(g, a, s), **tol)


# ---- norms and attention --------------------------------------------------------------------------

@pytest.mark.parametrize("centred", [True, False])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("dtype, tol", [(np.float32, dict(rtol=2e-5, atol=2e-5)),
                                        (np.float64, dict(rtol=1e-11, atol=1e-12))])
def test_layer_norm_and_its_backward_agree_to_rounding(centred, affine, dtype, tol, blocks):
    # an offset and spread the statistics must not lose: x = 50 + 3 z
    x = (50 + 3 * rng.standard_normal((4, 7, 32))).astype(dtype)
    w, b = (rng.standard_normal(32).astype(dtype) if affine else None for _ in range(2))
    b = b if centred else None
    got, expected = fast.layer_norm(x, w, b, 1e-5, centred), plain.layer_norm(x, w, b, 1e-5, centred)
    close(got, expected, **tol)  # the means are summed in another order (einsum)
    g = rng.standard_normal(x.shape).astype(dtype)
    _, xhat, rstd = expected
    close(fast.layer_norm_backward(g, xhat, rstd, w, centred),
          plain.layer_norm_backward(g, xhat, rstd, w, centred), **tol)


@pytest.mark.parametrize("mask", ["causal", "none", "float"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_attention_and_its_backward_agree_to_rounding(mask, dtype, blocks):
    q, k, v = (rng.standard_normal((3, 2, 9, e)).astype(dtype) for e in (4, 4, 5))
    bias = {"causal": np.triu(np.full((9, 9), -np.inf, dtype), 1), "none": None,
            "float": rng.standard_normal((9, 9)).astype(dtype)}[mask]
    # the softmax's sums and sum(dP P) are einsums in the fast form, and it multiplies by 1 / sum
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-13)
    got, expected = fast.attention(q, k, v, 0.5, bias, None), plain.attention(q, k, v, 0.5, bias, None)
    close(got, expected, **tol)
    g = rng.standard_normal(got[0].shape).astype(dtype)
    needs = (True, True, True, False)
    p = expected[1]
    close(fast.attention_backward(g, q, k, v, p, None, 0.5, needs),
          plain.attention_backward(g, q, k, v, p, None, 0.5, needs), **tol)


def test_attention_with_dropout_a_mask_gradient_or_no_batch_axis_runs_the_plain_form():
    q = rng.standard_normal((2, 5, 4))
    keep = (rng.random((2, 5, 5)) > 0.3) * 2.0
    same_bytes(fast.attention(q, q, q, 0.5, None, keep), plain.attention(q, q, q, 0.5, None, keep))
    one = q[0]
    same_bytes(fast.attention(one, one, one, 0.5, None, None),
               plain.attention(one, one, one, 0.5, None, None))
    _, p = plain.attention(q, q, q, 0.5, None, None)
    needs = (True, False, True, True)
    same_bytes(fast.attention_backward(q, q, q, q, p, None, 0.5, needs),
               plain.attention_backward(q, q, q, q, p, None, 0.5, needs))


def test_a_row_masked_everywhere_gets_zero_weights_in_both():
    q = rng.standard_normal((2, 3, 4))
    bias = np.zeros((3, 3))
    bias[1] = -np.inf
    for kernel in (plain.attention, fast.attention):
        out, p = kernel(q, q, q, 0.5, bias, None)
        assert np.all(p[:, 1] == 0) and np.all(out[:, 1] == 0) and np.all(np.isfinite(out))


# ---- work over rows, and row blocks on two threads --------------------------------------------------

def test_rowwise_covers_every_row_once(blocks):
    table = np.zeros((2000, 700))  # 11 MB: above the size where the fast form splits the rows
    seen = []
    lock = threading.Lock()

    def work(lo, hi):
        with lock:
            seen.extend(range(lo, hi))
        table[lo:hi] += 1

    for kernel in (plain.rowwise, fast.rowwise):
        seen.clear()
        kernel(table, work)
        assert sorted(seen) == list(range(2000))
    assert np.all(table == 2)


def test_row_blocks_cover_every_row_once_on_two_threads(small_row_blocks):
    seen, threads = [], set()

    def work(lo, hi):
        seen.extend(range(lo, hi))
        threads.add(threading.get_ident())
        assert hi - lo <= 3

    fast.in_row_blocks(20, 5 * 8, work)
    assert sorted(seen) == list(range(20))
    assert len(threads) == 2


def test_row_blocks_stay_on_one_thread_below_the_parallel_size(monkeypatch):
    monkeypatch.setattr(fast, "threads", 2)
    threads = set()
    fast.in_row_blocks(8, 64, lambda lo, hi: threads.add(threading.get_ident()))
    assert threads == {threading.get_ident()}


def test_set_threads_keeps_row_blocks_on_one_thread(small_row_blocks, monkeypatch):
    monkeypatch.setattr(fast, "threads", fast.threads)  # restored after the test
    kernels.set_threads(1)
    assert kernels.get_threads() == 1
    threads = set()
    fast.in_row_blocks(20, 5 * 8, lambda lo, hi: threads.add(threading.get_ident()))
    assert threads == {threading.get_ident()}
    kernels.set_threads(2)
    fast.in_row_blocks(20, 5 * 8, lambda lo, hi: threads.add(threading.get_ident()))
    assert len(threads) == min(2, os.cpu_count() or 1)


def test_an_error_in_the_helper_threads_half_reaches_the_caller(small_row_blocks):
    def work(lo, hi):
        if lo >= 10:
            raise ValueError(f"row {lo}")

    with pytest.raises(ValueError, match="row 1"):
        fast.in_row_blocks(20, 5 * 8, work)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_runs_row_blocks_on_a_helper_of_its_own(small_row_blocks):
    fast.in_row_blocks(20, 5 * 8, lambda lo, hi: None)  # the parent's helper thread exists now
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the child: would wait forever on the parent's (absent) helper thread
        covered = []
        fast.in_row_blocks(20, 5 * 8, lambda lo, hi: covered.extend(range(lo, hi)))
        os.write(write, bytes([sorted(covered) == list(range(20))]))
        os._exit(0)
    os.close(write)
    ready, _, _ = select.select([read], [], [], 20)
    if not ready:
        os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)
    answer = os.read(read, 1) if ready else b""
    os.close(read)
    assert ready, "the forked child did not finish its row blocks"
    assert answer == b"\x01"


# ---- recycled buffers ---------------------------------------------------------------------------

def test_a_buffer_is_handed_out_again_only_once_nothing_holds_it():
    first = fast.buffer("test-buffer", (64, 3), np.float32)
    held = fast.buffer("test-buffer", (64, 3), np.float32)
    assert held is not first  # the test still holds the first: a new one
    reused = id(held)
    del held  # now only the buffer keeps it
    again = fast.buffer("test-buffer", (64, 3), np.float32)
    assert id(again) == reused
    view = again[2:]
    del again  # a view still holds it: a new one
    assert id(fast.buffer("test-buffer", (64, 3), np.float32)) != reused
    del view
    assert fast.buffer("test-buffer", (64, 4), np.float32).shape == (64, 4)  # another shape: a new one
    assert fast.buffer("test-buffer", (64, 4), np.float64).dtype == np.float64
    assert plain.buffer("test-buffer", (2, 2), np.float32).shape == (2, 2)
    del first


def test_freed_memory_is_kept_on_glibc():
    import platform

    expected = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
    assert kernels.keep_freed_memory() is expected
