"""Check for lesson 1: the learner's backward walk, `backward_walk(root, grad)`.

The walk runs in the learner's process on graphs built there (a probe), with every node's run
recorded: which node ran, in what order, on what gradient, and what it sent on. Here the same
graphs are walked by minigrad's own `backward` with the same recording, and the two are
compared: every node once, after all its consumers, on the sum of what they sent, the leaves'
.grad equal. A difference is named: a node that kept only the last gradient, ran on every
arrival, ran too early or never, a sum changed in place, a seed ignored, a None not skipped,
a recursion too deep.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from minigrad.engine import AccumulateGrad, Node, Tensor, ops, tensor, to_dense
from minigrad.engine import graph as engine_graph
from minigrad.learn.course.learner import LearnerRaised, probe, run
from minigrad.learn.kit.walks import watching

from . import _common as common

DEPTH = 3000  # a chain deeper than Python's recursion limit


def _leaf(values: Any, name: str) -> Tensor:
    return tensor(np.asarray(values, dtype=np.float64), requires_grad=True, name=name)


def _doubled() -> tuple:
    a = _leaf(3.0, "a")
    b = a + a
    return b + b, [a], 1.0


def _shared() -> tuple:
    x, w = _leaf([1.0, -2.0, 0.5], "x"), _leaf([0.3, 0.8, -1.2], "w")
    y = x * w
    return (y.tanh() + y).sum(), [x, w], 2.5


def _two_lengths() -> tuple:
    x, w = _leaf([0.4, -1.1], "x"), _leaf([1.5, 0.2], "w")
    y = x * w  # reached from the sum directly and through two tanh
    return (y.tanh().tanh() + y).sum(), [x, w], 1.0


def _one_array_two_inputs(x_first: bool) -> tuple:
    x, z = _leaf([1.0, 2.0], "x"), _leaf([-1.0, 0.5], "z")
    s, tripled = x + z, x * 3.0  # AddBackward sends one array to x and to z; 3.0 has no node
    return ((tripled + s) if x_first else (s + tripled)).sum(), [x, z], 1.0


def _silent() -> tuple:
    x, w = _leaf(np.ones((2, 4)), "x"), _leaf([[0.3, 0.2], [0.1, 0.5]], "w")
    cos, sin = w * 1.0, w * 2.0  # the rotation treats its angles as constants: it sends them None
    return ops.Rotary.apply(x, cos, sin, style="halves").sum() + (w * w).sum(), [x, w], 1.0


def _layer() -> tuple:
    rng = np.random.default_rng(1)
    x, W, v = _leaf(rng.standard_normal((2, 3)), "x"), _leaf(rng.standard_normal((3, 4)), "W"), \
        _leaf(rng.standard_normal(4), "v")
    h = (x @ W).tanh()
    return (h * h).sum() + (h @ v).sum(), [x, W, v], 0.5


def _read_twice_by_two() -> tuple:
    x, w = _leaf([0.7, -0.3], "x"), _leaf([1.2, 0.5], "w")
    y = x * w  # y's node has four edges into it: two from y * y, two from y + y
    return (y * y + (y + y)).sum(), [x, w], 1.0


def _second_backward() -> tuple:
    x = _leaf([1.0, -2.0, 3.0], "x")
    x.grad = np.array([0.5, 0.5, 0.5])  # left by an earlier backward: gradients add up
    return (x * x).sum(), [x], 1.0


def _tied_table() -> tuple:
    from minigrad.nn import functional as F

    table = _leaf(np.random.default_rng(2).standard_normal((5, 3)), "E")
    h = F.embedding(np.array([1, 3, 1]), table)  # its gradient: a RowSparse of rows 1 and 3
    return (h @ table.T).tanh().sum(), [table], 1.0  # and a dense one from the product


def _deep() -> tuple:
    x = _leaf(0.5, "x")
    y = x
    for _ in range(DEPTH):
        y = y * 1.0001
    return y, [x], 1.0


# name: (build, what it is, for the messages)
GRAPHS: dict[str, tuple[Callable[[], tuple], str]] = {
    "doubled": (_doubled, "b = a + a; c = b + b"),
    "shared": (_shared, "y = x * w; loss = (tanh(y) + y).sum(), seeded with grad = 2.5"),
    "two paths of different lengths": (_two_lengths, "y = x * w; loss = (tanh(tanh(y)) + y).sum()"),
    "one array, two inputs": (lambda: _one_array_two_inputs(False), "loss = ((x + z) + x * 3.0).sum()"),
    "one array, two inputs (swapped)": (lambda: _one_array_two_inputs(True),
                                        "loss = (x * 3.0 + (x + z)).sum()"),
    "a path that sends nothing": (_silent, "loss = rotate(x, w * 1.0, w * 2.0).sum() + (w * w).sum(), where "
                                           "the rotation sends None to its angles"),
    "a layer": (_layer, "h = tanh(x @ W); loss = (h * h).sum() + (h @ v).sum(), seeded with grad = 0.5"),
    "read twice by two ops": (_read_twice_by_two, "y = x * w; loss = (y * y + (y + y)).sum()"),
    "a second backward": (_second_backward, "loss = (x * x).sum(), x.grad holding [0.5, 0.5, 0.5] already"),
    "a tied table": (_tied_table, "h = embedding([1, 3, 1], E); loss = tanh(h @ E.T).sum(): E gets a "
                                  "RowSparse from the lookup and a dense gradient from the product"),
    "deep": (_deep, f"a chain of {DEPTH} multiplications"),
}


# ---- a walk, recorded (in either process) -----------------------------------------------------

def labels(root: Node) -> dict[Node, str]:
    """A name for every node reachable from root, the same in both processes: its type, the
    leaf's name for an AccumulateGrad, and a number when the type repeats."""
    order, seen, stack = [], {root}, [root]
    while stack:
        node = stack.pop()
        order.append(node)
        for child in reversed(node.next_nodes):
            if child is not None and child not in seen:
                seen.add(child)
                stack.append(child)
    names = [f"{node.variable.name}'s AccumulateGrad" if isinstance(node, AccumulateGrad) else node.name
             for node in order]
    counts, numbered = Counter(names), Counter[str]()
    result = {}
    for node, name in zip(order, names):
        numbered[name] += 1
        result[node] = f"{name} #{numbered[name]}" if counts[name] > 1 else name
    return result


def _values(grad: Any) -> Any:
    if grad is None:
        return None
    return np.array(to_dense(grad) if hasattr(grad, "to_dense") else grad, dtype=np.float64)


def walk_recorded(walk: Callable, graph: str) -> dict:
    """Build `graph`, walk it with `walk(root, grad)`, and return what happened, as data."""
    out, leaves, seed = GRAPHS[graph][0]()
    names = labels(out.grad_fn)
    runs: list = []

    def seen(node: Node, grad: Any, sent: Any) -> None:
        edges = zip(node.next_nodes, sent) if isinstance(sent, tuple) else ()
        runs.append((names.get(node, "a node outside the graph"), _values(grad),
                     [[names.get(child), _values(g)] for child, g in edges if child is not None]))

    with watching(seen):
        walk(out.grad_fn, np.asarray(seed, dtype=np.float64))
    return {"runs": [name for name, _, _ in runs], "arrived": [g for _, g, _ in runs],
            "sent": [s for _, _, s in runs], "consumers": _consumers(names),
            "grads": {leaf.name: None if leaf.grad is None else _values(leaf.grad) for leaf in leaves}}


def _consumers(names: dict[Node, str]) -> dict[str, list[str]]:
    """For each node's name, the names of the nodes that send it a gradient (one per edge)."""
    consumers: dict[str, list[str]] = {name: [] for name in names.values()}
    for node, name in names.items():
        for child in node.next_nodes:
            if child is not None:
                consumers[names[child]].append(name)
    return consumers


@probe
def learners_walk(answers: Any, graph: str) -> dict:
    """The learner's backward_walk on `graph` (in their process)."""
    return walk_recorded(answers.backward_walk, graph)


def minigrads_walk(root: Node, grad: np.ndarray) -> None:
    """minigrad's own walk: the engine's backward."""
    engine_graph.backward(root, grad)


# ---- here: the check --------------------------------------------------------------------------

# What an error from the walk usually means: (a test on its type's name and message, the advice).
RAISED = [
    (lambda kind, message: kind == "RecursionError",
     "your walk recursed, once per node, and Python's recursion limit stopped it (RecursionError). Keep "
     "the nodes that are ready in a list and loop while it is not empty"),
    (lambda kind, message: "read-only" in message,
     "your walk added in place (+=) into an array an op returned: an op may hand the same array to two "
     "inputs, or one that cannot be written. Make each sum a new array: total = total + g"),
    (lambda kind, message: "NoneType" in message and ("next_nodes" in message or "apply" in message),
     "your walk treated None as a node: an entry of next_nodes is None for an input that needs no "
     "gradient (like the 3.0 in x * 3.0); skip it"),
    (lambda kind, message: "NoneType" in message,
     "your walk used a None gradient: a node may send None on an edge (nothing to send), and a node may "
     "receive nothing at all; skip a None, and do not run a node that received nothing (it still counts "
     "as heard from)"),
    (lambda kind, message: kind == "KeyError",
     "your walk looked up the gradient of a node that received none: when every consumer sent None "
     "there is nothing to run, but the nodes below still count it as heard from"),
]


def _raised(error: LearnerRaised, graph: str) -> AssertionError:
    on = f"on {GRAPHS[graph][1]}"
    for matches, advice in RAISED:
        if matches(error.kind, str(error)):
            return AssertionError(f"{on}, {advice}\n({error.kind}: {error})")
    return AssertionError(f"{on}, backward_walk raised {error.kind}: {error}")


def _check_runs(graph: str, got: dict, expected: dict, consumers: dict[str, list[str]]) -> None:
    """Every node minigrad runs ran, once, after every node that sends it a gradient."""
    on = f"on {GRAPHS[graph][1]}"
    counts, wanted = Counter(got["runs"]), Counter(expected["runs"])
    for name in expected["runs"]:
        if counts[name] == 0:
            raise AssertionError(f"{on}, {_never_ran(name, got)}")
    for name, count in counts.items():
        if count > wanted[name]:
            senders = len(consumers.get(name, ()))
            why = (f"it is sent gradients by {senders} consumers: run it once, after the last of them, on "
                   "their sum (running it on every arrival follows each path separately, and the work grows "
                   "with the number of paths)") if senders > 1 else "run each node once"
            raise AssertionError(f"{on}, {name} ran {common.times(count)}: {why}")
    _check_order(on, got["runs"], consumers)


def _check_order(on: str, runs: list[str], consumers: dict[str, list[str]]) -> None:
    """Each node ran after every node that sends it a gradient."""
    position = {name: i for i, name in enumerate(runs)}
    for name, senders in consumers.items():
        early = [s for s in senders if s in position and name in position and position[s] > position[name]]
        if early:
            raise AssertionError(
                f"{on}, {name} ran before {early[0]}, which sends it a gradient: a node waits until "
                "every consumer has sent its gradient (count the edges into it, and run it when the count "
                "reaches 0)")


def _never_ran(name: str, got: dict) -> str:
    """Why a node minigrad runs may not have run in the learner's walk."""
    leaf = name.removesuffix("'s AccumulateGrad")
    if leaf != name and got["grads"].get(leaf) is not None:
        return (f"{leaf}.grad was set but {name} never ran: let the leaf's node do it, node.apply(g), which "
                "adds g into .grad (it may hold an earlier gradient) in the leaf's own dtype")
    return (f"{name} never ran. A node runs once every node that sends it a gradient has run: count the "
            "edges into each node first, and count one down for every edge, even when the gradient sent on "
            "it is None")


def _parts(expected: dict, name: str) -> list[np.ndarray]:
    """The gradients minigrad's walk sent to `name`, one per edge (None left out)."""
    return [g for sent in expected["sent"] for target, g in sent if target == name and g is not None]


def _check_arrivals(graph: str, got: dict, expected: dict) -> None:
    """Each node ran on the sum of what was sent to it, the output's node on the walk's `grad`."""
    on = f"on {GRAPHS[graph][1]}"
    arrived = dict(zip(got["runs"], got["arrived"]))
    wanted = dict(zip(expected["runs"], expected["arrived"]))
    root = expected["runs"][0]
    if not common.close(arrived[root], wanted[root]):
        raise AssertionError(f"{on}, the output's node ran on {common.short(arrived[root])}, not on the "
                             f"gradient given to the walk ({common.short(wanted[root])}): start from `grad`")
    for name in expected["runs"]:
        got_sum, want = np.asarray(arrived[name]), np.asarray(wanted[name])
        if got_sum.shape != want.shape or not common.close(got_sum, want):
            raise AssertionError(f"{on}, {_wrong_sum(name, got_sum, want, expected, wanted)}")


def _wrong_sum(name: str, got_sum: np.ndarray, want: np.ndarray, expected: dict, wanted: dict) -> str:
    """What went wrong with the sum a node ran on: one gradient kept, a sum changed in place."""
    parts = _parts(expected, name)
    if len(parts) > 1 and any(common.close(got_sum, part) for part in parts):
        return (f"{name} ran on one of the {len(parts)} gradients sent to it, not on their sum: when a "
                "gradient arrives at a node that already has one, add the two")
    others = [other for other in wanted if other != name and np.shape(wanted[other]) == got_sum.shape
              and common.close(got_sum, wanted[other])]
    if others:
        return (f"{name} ran on {common.short(got_sum)}, which is what {others[0]} should receive: a sum was "
                "changed in place (+=) in an array that an op had also sent along another edge (AddBackward "
                "sends one array to both its inputs). Make each sum a new array: total = total + g")
    return (f"{name} ran on {common.short(got_sum)}, but the gradients sent to it add up to "
            f"{common.short(want)}")


def _check_leaves(graph: str, got: dict, expected: dict) -> None:
    on = f"on {GRAPHS[graph][1]}"
    for name, want in expected["grads"].items():
        have = got["grads"].get(name)
        if want is None:
            if have is not None:
                raise AssertionError(f"{on}, {name}.grad is {common.short(have)}, but no gradient reaches "
                                     f"{name}")
            continue
        if have is None:
            raise AssertionError(f"{on}, {name}.grad is None after your walk: its AccumulateGrad never ran")
        have = common.as_array(have, f"{name}.grad")
        if have.shape != np.shape(want) or not common.close(have, want):
            raise AssertionError(f"{on}, {name}.grad is {common.short(have)}, expected {common.short(want)}")


def check(answers: ModuleType) -> None:
    common.answer_function(answers, "backward_walk")
    for graph in GRAPHS:
        try:
            got = run(answers, learners_walk, graph)
        except NotImplementedError:
            raise
        except LearnerRaised as error:
            raise _raised(error, graph) from error
        expected = walk_recorded(minigrads_walk, graph)
        _check_runs(graph, got, expected, expected["consumers"])
        _check_arrivals(graph, got, expected)
        _check_leaves(graph, got, expected)
