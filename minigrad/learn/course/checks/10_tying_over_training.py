"""Check for lesson 10: a GPT-2-style model's parameter count, against TinyGPT's own count."""

from types import ModuleType

from minigrad.models import TinyGPT

from . import _common as common

# (V, T, d, L): every size different so each typical mistake gives its own number; two blocks
# first (with one, "one LayerNorm per block" and "no ln_f" give the same count), then one, then
# GPT-2 small's shapes (counted by formula: too large to build here).
CONFIGS = [(50, 7, 8, 2), (11, 5, 4, 1)]
GPT2_SMALL = (50_257, 1024, 768, 12)
GPT2_SMALL_RELEASED = 124_439_808  # the released (tied) GPT-2 small, parameter by parameter


def check(answers: ModuleType) -> None:
    count = common.answer_function(answers, "gpt_parameter_count")
    for V, T, d, L in CONFIGS:
        for tied in (False, True):
            expected = TinyGPT(V, T, d, 2, L, tied=tied, rng=0).num_parameters()  # the model counts itself
            _check_one(count, V, T, d, L, tied, expected)
    _check_one(count, *GPT2_SMALL, True, GPT2_SMALL_RELEASED)


def _check_one(count, V: int, T: int, d: int, L: int, tied: bool, expected: int) -> None:
    what = f"gpt_parameter_count(vocab_size={V}, context={T}, d_model={d}, n_layers={L}, tied={tied})"
    got = common.as_number(common.call_answer(count, V, T, d, L, tied), what, integer=True)
    table = V * d
    biases = L * (3 * d + d + 4 * d + d)
    layer_norms = (2 * L + 1) * 2 * d
    mistakes = [
        (expected + table if tied else expected - table,
         f"the tied table counted twice: lm_head.weight is transformer.wte.weight, one Parameter of "
         f"V*d = {table:,} numbers" if tied else
         f"the head is missing: untied, lm_head.weight is its own (V, d) table of {table:,} numbers"),
        (expected - T * d, f"the position table transformer.wpe (context x d = {T * d:,} numbers) is "
                           "missing"),
        (expected - biases, f"the biases are missing: each block's four Linears have 3d + d + 4d + d = "
                            f"{9 * d:,} of them"),
        (expected - layer_norms, f"the LayerNorms are missing: two per block and ln_f at the top, each a "
                                 f"scale and a shift of d = {d} numbers"),
        (expected - 2 * d, "the final LayerNorm transformer.ln_f (a scale and a shift) is missing"),
        (expected - L * (6 * d * d + 3 * d), "the MLP is 4d wide: c_fc is Linear(d, 4d), c_proj "
                                             "Linear(4d, d)"),
        (expected - L * (2 * d * d + 2 * d), "c_attn makes queries, keys and values at once: Linear(d, 3d)"),
        (expected + V, f"lm_head has no bias (Linear(d, V, bias=False)), but you added {V:,}"),
    ]
    if L > 1:
        mistakes.append((expected - L * 2 * d, "each block has two LayerNorms (ln_1 and ln_2), not one"))
    if got != expected and not any(got == wrong for wrong, _ in mistakes):
        raise AssertionError(
            f"{what} is off by {got - expected:+,.0f} (expected {expected:,}, got {got:,.0f}); count piece "
            "by piece: wte V*d, wpe T*d, per block 2 LayerNorms (2d each), c_attn 3d*d + 3d, c_proj d*d + d, "
            "c_fc 4d*d + 4d, mlp.c_proj 4d*d + d; ln_f 2d; the head d*V unless tied"
        )
    common.assert_number(got, expected, what, mistakes)
