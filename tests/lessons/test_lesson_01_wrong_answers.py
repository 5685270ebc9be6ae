"""Lesson 1's check: the learner's backward walk. The reference passes, the stub is not
attempted, and each typical mistake in a walk gets its own diagnosis."""

from __future__ import annotations

import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from minigrad.learn import course as runner

LESSON = runner.get_lesson(1, Path(__file__).resolve().parents[2] / "lessons")
CHECK = runner.load_check(LESSON)

COUNT = """
def count_consumers(root):
    counts, to_visit = {root: 0}, [root]
    while to_visit:
        node = to_visit.pop()
        for child in node.next_nodes:
            if child is None:
                continue
            if child not in counts:
                counts[child] = 0
                to_visit.append(child)
            counts[child] += 1
    return counts
"""


def kahn(add: str = "arrived[child] = g if child not in arrived else arrived[child] + g",
         start: str = "grad", run: str = "() if total is None else node.apply(total)",
         pop: str = "arrived.pop(node, None)") -> str:
    """The reference walk with one line swappable."""
    return COUNT + f"""
def backward_walk(root, grad):
    waiting = count_consumers(root)
    arrived = {{root: {start}}}
    ready = [root]
    while ready:
        node = ready.pop()
        total = {pop}
        grads = {run}
        for child, g in zip(node.next_nodes, grads or (None,) * len(node.next_nodes)):
            if child is None:
                continue
            if g is not None:
                {add}
        for child in node.next_nodes:
            if child is not None:
                waiting[child] -= 1
                if waiting[child] == 0:
                    ready.append(child)
"""


def walk(source: str) -> SimpleNamespace:
    namespace: dict = {"np": __import__("numpy")}
    exec(compile(textwrap.dedent(source), "learner.py", "exec"), namespace)
    return SimpleNamespace(backward_walk=namespace["backward_walk"])


EAGER = """
def backward_walk(root, grad):
    stack = [(root, grad)]
    while stack:
        node, g = stack.pop()
        for child, sent in zip(node.next_nodes, node.apply(g)):
            if child is not None and sent is not None:
                stack.append((child, sent))
"""

RECURSIVE_COUNT = kahn().replace(COUNT, """
def count_consumers(root, counts=None):
    counts = {root: 0} if counts is None else counts
    for child in root.next_nodes:
        if child is None:
            continue
        if child not in counts:
            counts[child] = 0
            count_consumers(child, counts)
        counts[child] += 1
    return counts
""")

BREADTH_FIRST = """
from collections import deque

def backward_walk(root, grad):
    arrived, seen, queue = {root: grad}, {root}, deque([root])
    while queue:
        node = queue.popleft()
        for child, g in zip(node.next_nodes, node.apply(arrived.pop(node))):
            if child is None or g is None:
                continue
            arrived[child] = g if child not in arrived else arrived[child] + g
            if child not in seen:
                seen.add(child)
                queue.append(child)
"""

NONE_AS_A_NODE = kahn().replace("            if child is None:\n                continue\n", "")

WRONG = {
    "keeps only the last gradient": (kahn(add="arrived[child] = g"),
                                     "ran on one of the 2 gradients sent to it, not on their sum"),
    "runs a node on every arrival": (EAGER, r"AddBackward #2 ran twice: it is sent gradients by 2 consumers"),
    "recursion": (RECURSIVE_COUNT, "your walk recursed, once per node"),
    "adds in place": (kahn(add="if child in arrived:\n                    arrived[child] += g\n"
                               "                else:\n                    arrived[child] = g"),
                      r"in place \(\+=\)"),
    "ignores the seed": (kahn(start="np.ones_like(grad)"), "not on the gradient given to the walk"),
    "runs before every consumer has sent": (BREADTH_FIRST,
                                            "ran before TanhBackward #2, which sends it a gradient"),
    "treats None as a node": (NONE_AS_A_NODE, "your walk treated None as a node"),
    "runs a node on None": (kahn(run="node.apply(total)"), "your walk used a None gradient"),
    "looks up a gradient that never came": (kahn(pop="arrived.pop(node)"),
                                            "looked up the gradient of a node that received none"),
}


@pytest.mark.parametrize("mistake", WRONG)
def test_each_wrong_walk_gets_its_diagnosis(mistake):
    source, diagnosis = WRONG[mistake]
    with pytest.raises(AssertionError, match=diagnosis):
        CHECK(walk(source))


def test_the_reference_walk_passes_and_the_stub_is_not_attempted():
    CHECK(walk(kahn()))
    assert runner.check_answers(LESSON, LESSON.solution_path).passed
    assert runner.check_answers(LESSON, LESSON.exercise_path).status == runner.NOT_ATTEMPTED


def test_a_walk_that_never_calls_apply_is_named():
    with pytest.raises(AssertionError, match="never ran"):
        CHECK(walk("def backward_walk(root, grad):\n    pass\n"))


def test_minigrads_own_walk_is_refused_as_an_answer(tmp_path):
    mine = tmp_path / "mine.py"
    mine.write_text("from minigrad.engine.graph import backward as backward_walk\n")
    result = runner.check_answers(LESSON, mine)
    assert not result.passed
    assert "backward_walk is minigrad's own (minigrad.engine.graph.backward)" in result.message


SET_COUNT = kahn().replace(COUNT, """
def count_consumers(root):
    consumers, to_visit = {root: set()}, [root]
    while to_visit:
        node = to_visit.pop()
        for child in node.next_nodes:
            if child is None:
                continue
            if child not in consumers:
                consumers[child] = set()
                to_visit.append(child)
            consumers[child].add(node)  # a node that reads its input twice counts once
    return {node: len(readers) for node, readers in consumers.items()}
""")
ONCE = "if waiting[child] <= 0 and child not in done:\n                    done.add(child)"
SET_COUNT = SET_COUNT.replace("if waiting[child] == 0:", ONCE)
SET_COUNT = SET_COUNT.replace("ready = [root]", "ready, done = [root], set()")


def test_counting_readers_instead_of_edges_is_caught():
    expected = r"on y = x \* w; loss = \(y \* y \+ \(y \+ y\)\)\.sum\(\), MulBackward #\d ran before"
    with pytest.raises(AssertionError, match=expected):
        CHECK(walk(SET_COUNT))


def test_setting_grad_instead_of_adding_to_it_is_caught():
    sets = kahn(run="() if total is None else (setattr(node.variable, 'grad', total) or () "
                    "if hasattr(node, 'variable') else node.apply(total))")
    with pytest.raises(AssertionError, match=r"a.grad was set but a's AccumulateGrad never ran: let the"):
        CHECK(walk(sets))


def test_a_sum_that_cannot_add_a_row_sparse_gradient_is_named():
    with pytest.raises(AssertionError, match="RowSparse from the lookup"):
        CHECK(walk(kahn(add="arrived[child] = g if child not in arrived else np.add(arrived[child], g)")))
