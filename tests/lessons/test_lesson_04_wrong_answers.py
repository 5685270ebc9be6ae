"""Lesson 4's check: the learner's Embedding Function. The reference passes, the stub is "not
attempted", and each typical mistake gets its own diagnosis."""

from __future__ import annotations

import textwrap
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import minigrad as mg
from minigrad.learn import course as runner

LESSON = runner.get_lesson(4, Path(__file__).resolve().parents[2] / "lessons")
check = runner.load_check(LESSON)


SECOND = ".backward returned a different gradient: it wrote into what forward saved"


def embedding_with(backward_body: str, forward_body: str | None = None) -> SimpleNamespace:
    """The reference Embedding with its backward (and optionally forward) body replaced."""
    forward_body = forward_body or """
        ctx.ids = ids.copy()
        ctx.shape, ctx.sparse, ctx.padding_idx = weight.shape, sparse, padding_idx
        return weight[ids]
    """
    source = f"""
import numpy as np
import minigrad as mg
from minigrad import RowSparse

class Embedding(mg.Function):
    @staticmethod
    def forward(ctx, weight, ids, sparse=True, padding_idx=None):
{textwrap.indent(textwrap.dedent(forward_body), ' ' * 8)}
    @staticmethod
    def backward(ctx, grad):
        ids = ctx.ids.reshape(-1)
        vectors = grad.reshape(ids.size, -1)
{textwrap.indent(textwrap.dedent(backward_body), ' ' * 8)}
"""
    namespace: dict = {}
    exec(compile(source, "learner.py", "exec"), namespace)
    return SimpleNamespace(Embedding=namespace["Embedding"])


def rows_summed(add: str = "np.add.at", dtype: str = "grad.dtype") -> str:
    """A backward body: each row read once, its vectors combined by `add` into `dtype` sums,
    returned in the layout asked for (the reference's shape, one piece swappable)."""
    return f"""
        rows, where = np.unique(ids, return_inverse=True)
        sums = np.zeros((rows.size, vectors.shape[1]), dtype={dtype})
        {add}(sums, where, vectors)
        if not ctx.sparse:
            dense = np.zeros(ctx.shape, dtype={dtype})
            dense[rows] = sums
            return dense, None
        return RowSparse(rows, sums, ctx.shape, coalesced=True), None
    """


def test_the_reference_passes_and_the_stub_is_not_attempted():
    assert runner.check_answers(LESSON, LESSON.solution_path).passed
    assert runner.check_answers(LESSON, LESSON.exercise_path).status == runner.NOT_ATTEMPTED


def test_the_stub_does_not_hand_over_the_duplicate_trap():
    stub = LESSON.exercise_path.read_text()
    assert "add.at" not in stub and "+=" not in stub and "buffered" not in stub


def test_buffered_add_drops_a_repeat():
    answers = embedding_with("""
        dense = np.zeros(ctx.shape, dtype=grad.dtype)
        dense[ids] += vectors  # the classic bug: a repeated id keeps one vector
        if not ctx.sparse:
            return dense, None
        rows = np.unique(ids)
        return RowSparse(rows, dense[rows], ctx.shape, coalesced=True), None
    """)
    with pytest.raises(AssertionError, match="row 1 got the gradient of one occurrence; it appears twice"):
        check(answers)


def test_repeated_rows_left_unsummed_are_named():
    answers = embedding_with("""
        if not ctx.sparse:
            dense = np.zeros(ctx.shape, dtype=grad.dtype)
            np.add.at(dense, ids, vectors)
            return dense, None
        return RowSparse(ids, vectors, ctx.shape), None  # one row per position, repeats and all
    """)
    with pytest.raises(AssertionError, match="your RowSparse lists row 1 twice: name each row once"):
        check(answers)


def test_calling_coalesce_is_refused_as_the_exercise_itself():
    answers = embedding_with("""
        grad_weight = RowSparse(ids, vectors, ctx.shape).coalesce()
        return (grad_weight if ctx.sparse else grad_weight.to_dense()), None
    """)
    with pytest.raises(AssertionError, match=r"called RowSparse\.coalesce\(\).*that sum is this exercise"):
        check(answers)


def test_a_dense_gradient_where_a_row_sparse_one_is_asked_for():
    answers = embedding_with("""
        dense = np.zeros(ctx.shape, dtype=grad.dtype)
        np.add.at(dense, ids, vectors)
        return dense, None
    """)
    with pytest.raises(AssertionError, match=r"with sparse=True \(the default\) return a RowSparse, not a "
                                             r"dense \(8, 3\) array"):
        check(answers)


def test_every_row_stored_is_named_as_rows_nobody_read():
    answers = embedding_with("""
        dense = np.zeros(ctx.shape, dtype=grad.dtype)
        np.add.at(dense, ids, vectors)
        if not ctx.sparse:
            return dense, None
        return RowSparse(np.arange(ctx.shape[0]), dense, ctx.shape, coalesced=True), None
    """)
    with pytest.raises(AssertionError, match=r"stores rows that no position read \(0, 2, 4, 5, 7\)"):
        check(answers)


def test_ids_read_after_the_caller_changed_them():
    answers = embedding_with(
        rows_summed(),
        forward_body="""
        ctx.ids = ids  # no copy: the caller's array
        ctx.shape, ctx.sparse, ctx.padding_idx = weight.shape, sparse, padding_idx
        return weight[ids]
        """)
    with pytest.raises(AssertionError, match=r"forward must keep its own copy of ids \(ids\.copy\(\)\)"):
        check(answers)


def test_padding_row_gets_a_gradient():
    answers = embedding_with(rows_summed())  # padding_idx forgotten
    with pytest.raises(AssertionError, match=r"stores the padding row \(2\).*the padding row receives none"):
        check(answers)


def test_float64_values_for_a_float32_gradient():
    answers = embedding_with(rows_summed(dtype="np.float64"))  # float64 whatever grad is
    with pytest.raises(AssertionError, match="values are float64, but grad is float32"):
        check(answers)


def test_a_gradient_for_ids_is_refused():
    answers = embedding_with("""
        rows, where = np.unique(ids, return_inverse=True)
        sums = np.zeros((rows.size, vectors.shape[1]), dtype=grad.dtype)
        np.add.at(sums, where, vectors)
        return RowSparse(rows, sums, ctx.shape, coalesced=True), np.zeros(ctx.ids.shape)
    """)
    with pytest.raises(AssertionError, match="returned a gradient for ids"):
        check(answers)


def test_only_the_first_sequence_is_named_as_skipped_positions():
    answers = embedding_with("""
        first = ctx.ids[0]  # loops over T of the first sequence only
        rows, where = np.unique(first, return_inverse=True)
        sums = np.zeros((rows.size, vectors.shape[1]), dtype=grad.dtype)
        np.add.at(sums, where, vectors[:first.size])
        if not ctx.sparse:
            dense = np.zeros(ctx.shape, dtype=grad.dtype)
            dense[rows] = sums
            return dense, None
        all_rows = np.unique(ids)
        dense = np.zeros(ctx.shape, dtype=grad.dtype)
        dense[rows] = sums
        return RowSparse(all_rows, dense[all_rows], ctx.shape, coalesced=True), None
    """)
    skipped = r"position \(1, 0\), position \(1, 1\), position \(1, 2\), position \(1, 3\)"
    with pytest.raises(AssertionError, match=rf"leaves out the gradient of 4 of the 8 positions \({skipped}"):
        check(answers)


def test_wrong_sign_is_named():
    answers = embedding_with(rows_summed(add="np.subtract.at"))
    with pytest.raises(AssertionError, match="sign is flipped everywhere"):
        check(answers)


def test_a_forward_that_returns_the_wrong_shape():
    answers = embedding_with("return None, None", forward_body="""
        ctx.ids = ids.copy()
        return weight[ids.reshape(-1)]
    """)
    with pytest.raises(AssertionError, match=r"forward returned shape \(4, 3\) for ids of shape \(1, 4\)"):
        check(answers)


def test_a_class_that_is_not_a_function_is_refused():
    with pytest.raises(AssertionError, match="subclasses minigrad.Function"):
        check(SimpleNamespace(Embedding=object))


def test_the_reference_runs_inside_the_engine_with_a_repeated_id():
    from minigrad.learn.course import load_module

    embedding = load_module(LESSON.solution_path).Embedding
    table = mg.tensor(np.arange(12.0).reshape(4, 3), requires_grad=True)
    embedding.apply(table, np.array([[1, 1, 3]])).sum().backward()
    assert isinstance(table.grad, mg.RowSparse)
    assert table.grad.indices.tolist() == [1, 3] and table.grad.values.tolist() == [[2.0] * 3, [1.0] * 3]


def test_an_empty_batch_and_a_single_id_are_tried():
    solution = LESSON.solution_path.read_text()
    assert "grad.reshape(ids.size, *ctx.shape[1:])" in solution
    namespace: dict = {}
    exec(solution.replace("grad.reshape(ids.size, *ctx.shape[1:])", "grad.reshape(ids.size, -1)"), namespace)
    empty_breaks = SimpleNamespace(Embedding=namespace["Embedding"])  # reshape(0, -1) is ambiguous
    with pytest.raises(AssertionError, match=r"on an empty batch \(ids of shape \(0,\)\), your Embedding "
                                             r"raised ValueError: cannot reshape"):
        check(empty_breaks)
    namespace = {}
    assumes_an_axis = "ctx.ids = ids.reshape(ids.shape[0], -1).copy()"
    exec(solution.replace("ctx.ids = ids.copy()", assumes_an_axis), namespace)
    two_axes_only = SimpleNamespace(Embedding=namespace["Embedding"])  # assumes ids have an axis
    with pytest.raises(AssertionError, match=r"on a single id \(ids of shape \(\)\), your Embedding raised "
                                             r"IndexError: tuple index"):
        check(two_axes_only)


def test_a_backward_that_writes_into_the_gradient_it_is_given():
    zeroes_padding_in_grad = """
        if ctx.padding_idx is not None:
            vectors[ids == ctx.padding_idx] = 0  # a view of grad: the caller's array changes
            keep = ids != ctx.padding_idx
            ids, vectors = ids[keep], vectors[keep]
    """ + rows_summed()
    with pytest.raises(AssertionError, match=r"Embedding.backward wrote into grad, the gradient it was given "
                                             r"\(with padding_idx=2\).*a view of grad"):
        check(embedding_with(zeroes_padding_in_grad))


def test_a_backward_that_writes_into_what_forward_saved():
    sums_into_a_table_made_by_forward = """
        ctx.ids = ids.copy()
        ctx.shape, ctx.sparse, ctx.padding_idx = weight.shape, sparse, padding_idx
        ctx.table_grad = np.zeros(weight.shape, dtype=weight.dtype)  # made once, summed into by backward
        return weight[ids]
    """
    backward = """
        keep = ids != ctx.padding_idx
        np.add.at(ctx.table_grad, ids[keep], vectors[keep])
        if not ctx.sparse:
            return ctx.table_grad.copy(), None
        rows = np.unique(ids[keep])
        return RowSparse(rows, ctx.table_grad[rows], ctx.shape, coalesced=True), None
    """
    with pytest.raises(AssertionError, match=f"run a second time on the same forward, Embedding{SECOND}"):
        check(embedding_with(backward, sums_into_a_table_made_by_forward))
