"""Lesson 10's check: the reference passes, the stub is "not attempted", typical mistakes are named."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from minigrad.learn import course as runner

check = runner.load_check(runner.get_lesson(10, Path(__file__).resolve().parents[2] / "lessons"))


def right(V, T, d, L, tied, mlp=4, biases=True, norms_per_block=2, final_norm=True, positions=True):
    block = norms_per_block * 2 * d + 3 * d * d + d * d + 2 * mlp * d * d
    if biases:
        block += 3 * d + d + mlp * d + d
    return (V * d + (T * d if positions else 0) + L * block + (2 * d if final_norm else 0)
            + (0 if tied else V * d))


def answers(count=right):
    return SimpleNamespace(gpt_parameter_count=count)


def test_rule_used_by_these_tests_is_right():
    check(answers())


def test_gpt2_small_is_the_released_size():
    assert right(50_257, 1024, 768, 12, True) == 124_439_808


def test_stub_is_not_attempted():
    def stub(V, T, d, L, tied):
        raise NotImplementedError
    with pytest.raises(NotImplementedError):
        check(answers(stub))


def test_tied_table_counted_twice():
    with pytest.raises(AssertionError, match=r"tied=True\): the tied table counted twice"):
        check(answers(lambda V, T, d, L, tied: right(V, T, d, L, False)))


def test_untied_head_forgotten():
    with pytest.raises(AssertionError, match=r"tied=False\): the head is missing"):
        check(answers(lambda V, T, d, L, tied: right(V, T, d, L, True)))


def test_position_table_forgotten():
    with pytest.raises(AssertionError, match=r"the position table transformer.wpe \(context x d = 56"):
        check(answers(lambda V, T, d, L, tied: right(V, T, d, L, tied, positions=False)))


def test_biases_forgotten():
    with pytest.raises(AssertionError, match=r"the biases are missing"):
        check(answers(lambda V, T, d, L, tied: right(V, T, d, L, tied, biases=False)))


def test_layer_norms_forgotten():
    with pytest.raises(AssertionError, match=r"the LayerNorms are missing"):
        check(answers(lambda V, T, d, L, tied: right(V, T, d, L, tied, norms_per_block=0, final_norm=False)))


def test_final_layer_norm_forgotten():
    with pytest.raises(AssertionError, match=r"the final LayerNorm transformer.ln_f"):
        check(answers(lambda V, T, d, L, tied: right(V, T, d, L, tied, final_norm=False)))


def test_one_layer_norm_per_block():
    with pytest.raises(AssertionError, match=r"each block has two LayerNorms"):
        check(answers(lambda V, T, d, L, tied: right(V, T, d, L, tied, norms_per_block=1)))


def test_mlp_not_widened():
    with pytest.raises(AssertionError, match=r"the MLP is 4d wide"):
        check(answers(lambda V, T, d, L, tied: right(V, T, d, L, tied, mlp=1)))


def test_attention_as_one_square_matrix():
    def count(V, T, d, L, tied):
        return right(V, T, d, L, tied) - L * (2 * d * d + 2 * d)
    with pytest.raises(AssertionError, match=r"c_attn makes queries, keys and values at once"):
        check(answers(count))


def test_bias_given_to_the_head():
    with pytest.raises(AssertionError, match=r"lm_head has no bias .* but you added 50"):
        check(answers(lambda V, T, d, L, tied: right(V, T, d, L, tied) + V))


def test_an_unexplained_count_gets_the_recipe():
    with pytest.raises(AssertionError, match=r"is off by \+7 .* count piece by piece"):
        check(answers(lambda V, T, d, L, tied: right(V, T, d, L, tied) + 7))


def test_nan_never_passes():
    with pytest.raises(AssertionError, match="NaN"):
        check(answers(lambda V, T, d, L, tied: float("nan")))
