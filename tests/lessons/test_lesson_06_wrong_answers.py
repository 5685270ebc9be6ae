"""Lesson 6's check: the learner ties a model. The reference and minigrad's own tie pass, the stub
is "not attempted", and each typical wrong tie gets its own diagnosis."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import minigrad as mg
from minigrad.learn import course as runner
from minigrad.learn.kit import minigrads_tie
from minigrad.models import TinyGPT, TinyLM

LESSON = runner.get_lesson(6, Path(__file__).resolve().parents[2] / "lessons")
check = runner.load_check(LESSON)


def pair(model):
    """(the module holding the table, the module holding the output map) of TinyLM or TinyGPT."""
    if hasattr(model, "lm_head"):
        return model.transformer.wte, model.lm_head
    return model.emb, model.head


def tie_with(how):
    def tie_weights(model):
        table, head = pair(model)
        how(table, head)
        return model
    return SimpleNamespace(tie_weights=tie_weights)


def test_the_reference_and_minigrads_tie_pass_and_the_stub_is_not_attempted():
    assert runner.check_answers(LESSON, LESSON.solution_path).passed
    assert runner.check_answers(LESSON, LESSON.exercise_path).status == runner.NOT_ATTEMPTED
    check(SimpleNamespace(tie_weights=minigrads_tie))


def test_tying_the_other_way_round_is_a_tie_too():
    def reverse(table, head):
        table.weight = head.weight

    check(tie_with(reverse))


def test_copied_values_are_not_a_tie():
    def copy(table, head):
        with mg.no_grad():
            head.weight.data[...] = table.weight.data

    with pytest.raises(AssertionError, match="TinyLM: you copied the table's numbers into the output map"):
        check(tie_with(copy))


def test_two_parameters_over_one_array_are_not_a_tie():
    def share_memory(table, head):
        head.weight.data = table.weight.data  # the same memory, still two Parameters

    with pytest.raises(AssertionError, match="are two Parameters over one array.*head.weight = emb.weight"):
        check(tie_with(share_memory))


def test_a_model_left_untied():
    with pytest.raises(AssertionError, match="TinyLM: the model is not tied"):
        check(tie_with(lambda table, head: None))


def test_a_tie_that_only_knows_tinylm():
    def tinylm_only(model):
        model.head.weight = model.emb.weight
        return model

    with pytest.raises(AssertionError, match="(?s)raised AttributeError.*Here model is TinyGPT"):
        check(SimpleNamespace(tie_weights=tinylm_only))


def test_tying_the_position_table_is_refused_by_its_shape():
    def wrong_table(model):
        if hasattr(model, "lm_head"):
            model.lm_head.weight = model.transformer.wpe.weight  # (context, d), not (V, d)
        else:
            model.head.weight = model.emb.weight
        return model

    with pytest.raises(AssertionError, match="raised ValueError: cannot assign a Parameter of shape"):
        check(SimpleNamespace(tie_weights=wrong_table))


def test_returning_something_else_than_the_model():
    with pytest.raises(AssertionError, match="tie_weights returned a bool; return the model"):
        check(SimpleNamespace(tie_weights=lambda model: True))


def test_minigrads_tie_is_the_models_own_and_refuses_another_model():
    model = mg.nn.Sequential(mg.nn.Linear(3, 4))
    with pytest.raises(TypeError, match="one of minigrad's language models .* got a Sequential"):
        minigrads_tie(model)
    tied = minigrads_tie(TinyLM(6, 3, 4, tied=False))
    assert tied.head.weight is tied.emb.weight and tied.tied
    assert np.array_equal(TinyLM(6, 3, 4, tied=True).head.weight.data, tied.head.weight.data)
    gpt = minigrads_tie(TinyGPT(7, 4, 4, 2, 1, tied=False))
    assert gpt.lm_head.weight is gpt.transformer.wte.weight and gpt.tied


def test_a_tie_that_returns_none_or_another_model_is_refused():
    def ties_in_place(model):
        table, head = pair(model)
        head.weight = table.weight  # a right tie, but nothing returned

    with pytest.raises(AssertionError, match=r"TinyLM: tie_weights returned None; return the model it was"):
        check(SimpleNamespace(tie_weights=ties_in_place))

    def ties_a_copy(model):
        import copy

        other = copy.deepcopy(model)
        table, head = pair(other)
        head.weight = table.weight
        return other

    expected = "tie_weights returned another model TinyLM, not the model it was given: tie that model"
    with pytest.raises(AssertionError, match=expected):
        check(SimpleNamespace(tie_weights=ties_a_copy))
