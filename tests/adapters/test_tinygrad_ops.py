"""tinygrad's own op tests (its test_ops.py: each op forward and backward against PyTorch, with
shapes and dtypes checked) run against minigrad through an adapter that only renames
(tests/adapters/tinygrad_names.py). The tests are read from a tinygrad checkout, never copied
here: set MINIGRAD_TINYGRAD to one (`git clone https://github.com/tinygrad/tinygrad`); without
it, or without torch, this file skips.

The tests run are those of ops both libraries have, by family. Those that test tinygrad's own
choices rather than PyTorch's are expected to fail, each with the reason; one that starts to pass
fails this file (strict), so the list stays true.
"""

import unittest

import pytest
from tinygrad_names import CHECKOUT_VARIABLE, load_test_ops, tinygrad_test_file

if tinygrad_test_file() is None:  # one skip for the file, not one per test
    pytest.skip(f"set {CHECKOUT_VARIABLE} to a tinygrad checkout to run its op tests",
                allow_module_level=True)
pytest.importorskip("torch")  # tinygrad's tests compute PyTorch's answers themselves

FAMILIES = {
    "elementwise": """abs abs_exact acos acosh add add3 asin asinh atan atanh broadcasted_add
        broadcasted_add_2 ceil celu clip cmp_eq cmp_ge cmp_gt cmp_le cmp_lt cmp_lt_backwards
        cmp_ne_backwards cos cosh div div_int div_naninf div_rounding_mode elu erf exp exp2
        exp2_log2_zero_times_negative floor fmod gelu gelu_extreme hardsigmoid hardsigmoid_extreme
        hardswish hardtanh idiv_shift_rewrite_negative int_pow_const_int isclose isclose_edge_cases
        isclose_scalar leaky_relu lerp log log10 log2 logaddexp logical_not logsigmoid mish mod mul
        mul_naninf neg pow pow_const pow_const_direct pow_full pow_int_base_float_exponent
        pow_neg_inf_frac_exponent pow_zero_const pow_zero_exponent pow_zero_tensor relu relu6
        relu_exact relu_maximum_exact round round_quantization_gradient rsqrt scalar_div scalar_mul
        scalar_rsub scalar_sub selu sigmoid sigmoid_alt_extreme sigmoid_extreme sign sign_exact
        silu sin sinh softplus softsign softsign_exact sqrt sub swish tan tanh tanh_extreme
        tiny_add tiny_mul trunc""",
    "reductions": """all all_axis all_large all_zero_axis any any_axis any_zero_axis argmax argmin
        const_reduce max max_dont_collapse maximum mean mean_axis mean_zero_axis min minimum
        normalize prod std std_axis std_keepdim std_mean std_mean_loaded_nan std_one_in_axis
        std_zero_in_axis sum sum_collapse sum_collapse_neg sum_dtype_arg sum_fake sum_full sum_relu
        sum_simple sum_tiny sum_twice sum_with_zeros_shape var var_axis var_keepdim var_one_in_axis
        var_zero_in_axis""",
    "matmul": """9_gemm big_gemm broadcastdot dot dot_1d gemm gemm_fp16 gemm_with_zeros_shape
        matmul matmul_batched matmul_batched_vector matmul_simple matvec matvecmat
        mulacc_with_zero_strides multidot small_gemm small_gemm_eye small_gemm_range""",
    "softmax": """log_softmax log_softmax_other_axis logsumexp softmax softmax_argmax
        softmax_other_axis softmin""",
    "shape": """broadcast_full broadcast_partial broadcast_simple cast chunk detach expand flatten
        flip pad padding_add permute repeat repeat_interleave reshape roll simple_repeat split
        squeeze transpose unflatten unsqueeze view""",
    "cat_stack": "cat multicat stack stack_max sum_cat_collapse",
    "where": "inf_where masked_fill where where_permute",
    "indexing": """diag diagonal double_slice fancy_indexing_inf masked_select nonzero
        slice_both_endpoints_out_of_bounds slice_ellipsis slice_errors
        slice_fancy_indexing_dim_collapse_int slice_fancy_indexing_dim_inject_and_collapse
        slice_fancy_indexing_dim_inject_none slice_fancy_indexing_errors
        slice_fancy_indexing_list_indices slice_fancy_indexing_list_with_tensors
        slice_fancy_indexing_no_dim_collapse slice_fancy_indexing_tuple_indices
        slice_fancy_indexing_with_tensors slice_in_bounds_1dim slice_in_bounds_multidim
        slice_int_indexing slice_negative_strides slice_on_0dim_tensor
        slice_one_endpoint_out_of_bounds slice_start_gt_end slice_stride_gt_one
        slice_with_const_tensor slice_with_none slice_zero_in_shape stack_slice""",
    "losses": """binary_crossentropy binary_crossentropy_logits_pos_weights
        binary_crossentropy_reductions cross_entropy_class_indices
        cross_entropy_class_probabilities cross_entropy_reductions cross_entropy_smoothing nll_loss
        nll_loss_3d nll_loss_3d_weight nll_loss_ignore_index nll_loss_reductions nll_loss_weight
        sparse_categorical_crossentropy sparse_categorical_crossentropy_ignore_index
        sparse_categorical_crossentropy_label_smoothing sparse_categorical_crossentropy_reductions""",
    "attention": """scaled_dot_product_attention scaled_dot_product_attention_causal
        scaled_dot_product_attention_gqa scaled_dot_product_attention_gqa_errors
        scaled_dot_product_attention_mismatch_ls""",
    "ordering": "argsort sort topk",
    "scans_and_masks": """cumsum cumsum_zero_axis gather isfinite isinf isnan one_hot simple_cumsum
        small_cumsum tril triu""",
    "creation": """arange arange_4096 arange_big eye flip_eye_crash full full_like linspace
        meshgrid negative_dims_eye negative_dims_full ones ones_like zeros zeros_like""",
}
TESTS = [(family, name) for family, names in FAMILIES.items() for name in names.split()]

INT32 = "tinygrad's default integer is int32 (PyTorch's and minigrad's: int64); the test compares dtypes"
EXPECTED_TO_FAIL = {
    "arange": INT32, "arange_4096": INT32, "arange_big": INT32, "argmax": INT32, "argmin": INT32,
    "chunk": INT32, "full": INT32, "one_hot": INT32, "split": INT32, "softmax_argmax": INT32, "where": INT32,
    "sort": INT32, "argsort": INT32, "topk": INT32, "nonzero": INT32,
    "where_permute": INT32,
    "cmp_lt_backwards": "reads .grad.numpy(): tinygrad's .grad is a Tensor, PyTorch's and minigrad's "
                        "a tensor and an array",
    "cmp_ne_backwards": "reads .grad.numpy(): tinygrad's .grad is a Tensor, minigrad's an array",
    "reshape": "tinygrad's reshape takes None for an axis kept as it is; PyTorch's does not",
    "isinf": "isinf(detect_positive=, detect_negative=) are tinygrad's arguments; PyTorch's isinf has none",
    "sigmoid_alt_extreme": "asks for a gradient of 0 where PyTorch's is NaN (e^300 / (1 + e^300) in float32)",
    "sparse_categorical_crossentropy": "tinygrad's sparse_categorical_crossentropy puts the classes last; "
                                       "renamed to cross_entropy it reads (3, 12, 10) as PyTorch does",
    "slice_fancy_indexing_errors": "calls Tensor.randint, which minigrad does not have",
    "sum_dtype_arg": "asks for AttributeError for dtype=\"\" (tinygrad's error); minigrad's, as numpy's, "
                     "is TypeError",
    "pad": "tinygrad's pad also takes one (before, after) pair per axis, first axis first; the test's last "
           "case passes pairs, which PyTorch's F.pad does not take",
}


@pytest.fixture(scope="module")
def test_ops():
    with pytest.MonkeyPatch.context() as patch:
        yield load_test_ops(tinygrad_test_file(), patch)


@pytest.mark.parametrize("family, name", TESTS, ids=[f"{f}-{n}" for f, n in TESTS])
def test_tinygrads_op_test(test_ops, family, name):
    result = unittest.TestResult()
    test_ops.TestOps(f"test_{name}").run(result)
    problems = result.errors + result.failures
    if result.skipped:
        pytest.skip(f"tinygrad skips it: {result.skipped[0][1]}")
    if name in EXPECTED_TO_FAIL:
        assert problems, f"test_{name} passes now: take it off EXPECTED_TO_FAIL ({EXPECTED_TO_FAIL[name]})"
        pytest.xfail(EXPECTED_TO_FAIL[name])
    assert not problems, problems[0][1]


def test_the_lists_name_each_test_once():
    names = [name for _, name in TESTS]
    assert len(names) == len(set(names))
    assert set(EXPECTED_TO_FAIL) <= set(names)
