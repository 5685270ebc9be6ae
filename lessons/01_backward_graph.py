# %% [markdown]
# # Lesson 1: The backward graph
#
# Every operation on a tensor leaves a node behind, and `backward()` visits those nodes in an
# order that lets gradients arriving by different paths add up before they travel on.
#
# ## What you will see
#
# - How a tensor remembers the operation that made it (`grad_fn`), and where that node's
#   edges lead.
# - The order in which `backward()` runs the nodes: dependency counting.
# - The walk itself, which you write (`minigrad check 1` marks it). Once it passes, every graph
#   of this lesson is walked by yours, beside minigrad's, and the two must leave the same
#   `.grad`s.
# - Why `b = a + a; c = b + b` needs the gradients reaching a node to be summed before the
#   node runs, and what a careless engine gets instead.
# - Why waiting for every gradient is also what keeps backward fast: the work done with and
#   without waiting, plotted.
# - The graph, drawn, and a `Function` of your own with a hand-written backward.

# %% [markdown]
# ## Tensors and the nodes behind them
#
# A tensor you create yourself is a *leaf*. If it has `requires_grad=True`, minigrad gives it
# one `AccumulateGrad` node: the place where gradients for it are added into `.grad`.
#
# A tensor made by an operation has a `grad_fn`, a node that knows the backward of that
# operation. The node has one edge per input, in `next_nodes`, pointing at the node of that
# input: its `grad_fn` if it was made by an op, its `AccumulateGrad` if it is a leaf.
#
# Below, `y = x * w` is used twice, once inside `tanh` and once on its own.

# %%
import re
import time

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import MaxNLocator

import minigrad as mg
from minigrad import count_dependencies
from minigrad.engine import AccumulateGrad, Node
from minigrad.learn.course import yours
from minigrad.learn.kit import node_label as label
from minigrad.learn.kit import setup, walk_order

lesson = setup(1)  # caps BLAS threads, draws headless, makes OUT
OUT = lesson.out
size = lesson.sizes(full=dict(deepest=18), small=dict(deepest=12))  # the doubling depths, in one place

x = mg.tensor(np.array([1.0, -2.0, 0.5]), requires_grad=True, name="x")
w = mg.tensor(np.array([0.3, 0.8, -1.2]), requires_grad=True, name="w")
y = x * w
loss = (y.tanh() + y).sum()


def edges(node: Node) -> list[str]:
    return [label(child) for child in node.next_nodes if child is not None]


print(f"x is a leaf: {x.is_leaf}, x.grad_fn = {x.grad_fn}")
print(f"y.grad_fn = {label(y.grad_fn)}, with edges to {edges(y.grad_fn)}")
print(f"loss.grad_fn = {label(loss.grad_fn)}, with edges to {edges(loss.grad_fn)}")

# %%
add_node = loss.grad_fn.next_nodes[0]
tanh_node, y_node = add_node.next_nodes
assert tanh_node.next_nodes[0] is y_node is y.grad_fn, "both uses of y lead to the one node of y"
x_node, w_node = y.grad_fn.next_nodes
assert x_node.variable is x and w_node.variable is w
assert (x * 2).grad_fn.next_nodes[0] is x_node, "every op that reads x points at x's one AccumulateGrad"

# %% [markdown]
# The node `MulBackward` of `y` is reached by two edges: one from `TanhBackward` and one from
# `AddBackward`. Backward must not run it until both have sent their gradient, and then it
# must run it on their *sum*, dL/dy = dL/dy (through tanh) + dL/dy (direct).
#
# ## The order of the walk: dependency counting
#
# minigrad finds the order in two passes over the graph, without recursion:
#
# 1. Starting from the output's node, count for every node how many edges point at it: how
#    many consumers it has to hear from.
# 2. Keep a list of nodes that are ready, starting with the output's node. Take one, run it,
#    and send each gradient it returns along its edge. Each node that receives one counts down;
#    when its count reaches zero every consumer has spoken, so it becomes ready.
#
# This is Kahn's topological sort, run from the output backwards. Two more things make it
# the real walk: a node runs on the *sum* of the gradients its consumers sent (each edge
# carries one term of the chain rule), and an edge may carry None (an input that needs no
# gradient, or a backward with nothing to send), which still counts as heard from. The first
# pass is minigrad's `count_dependencies`; here are its counts for our graph:

# %%
counts = count_dependencies(loss.grad_fn)
print({label(node): count for node, count in counts.items()})
assert counts[y.grad_fn] == 2 and counts[loss.grad_fn] == 0, "y's node hears from tanh and from the sum"

# %% [markdown]
# ## Build it: the walk
#
# Run `minigrad exercise 1`: it copies the stub to `minigrad-exercises/01_backward_graph.py`,
# in the folder you run it from (in a notebook, define the function in a cell instead and run
# `minigrad.check(1, globals())`). There, write `backward_walk(root, grad)`: count the edges
# into every node, then run each node once, on the sum of what arrived, when its count reaches
# zero, and pass on what it returns. Then run `minigrad check 1`: it runs your walk on a few
# graphs beside minigrad's and says which node ran too early, twice, never, or on the wrong sum.
#
# The line printed below says whose walk this lesson runs: yours once your copy passes, else
# minigrad's own (`backward` in `minigrad/engine/graph.py`, which also checks every gradient's
# shape and frees what the forward saved). In a notebook, `pieces = yours(1, globals())` marks
# the definitions of your notebook instead of the file.

# %%
pieces = yours(1)  # your backward_walk from minigrad-exercises/, if it passes `minigrad check 1`
walk = pieces.get("backward_walk")


def side_by_side(build, grad=1.0) -> dict[str, np.ndarray]:
    """Build a graph twice; walk one with `walk`, the other with loss.backward(); the .grads of
    both, which must be equal."""
    (out, leaves), (twin, twin_leaves) = build(), build()
    walk(out.grad_fn, np.full(out.shape, grad))
    twin.backward(np.full(twin.shape, grad))
    for mine, theirs in zip(leaves, twin_leaves):
        assert np.allclose(mine.grad, theirs.grad), f"{mine.name}.grad: the walk and backward() differ"
    return {leaf.name: leaf.grad for leaf in leaves}


# %%
def tanh_graph():
    """The graph above, built again from the same values, with its leaves."""
    x_, w_ = mg.tensor(x.data, requires_grad=True, name="x"), mg.tensor(w.data, requires_grad=True, name="w")
    y_ = x_ * w_
    return (y_.tanh() + y_).sum(), [x_, w_]


order = walk_order(walk, tanh_graph()[0])
print("the walk ran the nodes in this order (each with the nodes it sends gradients to):")
for step, node in enumerate(order, start=1):
    print(f"  {step}. {label(node):20} -> {edges(node)}")
position = {node: i for i, node in enumerate(order)}
for node in order:
    for child in node.next_nodes:
        if child is not None:
            assert position[child] > position[node], f"{label(child)} ran before its consumer {label(node)}"
print("x.grad and w.grad, seeded with 2.5:",
      {name: g.round(4).tolist() for name, g in side_by_side(tanh_graph, grad=2.5).items()})

# %% [markdown]
# ## Your prediction
#
# Take a = 3, then `b = a + a` and `c = b + b`. So c = 4a = 12, and dc/da = 4.
#
# The node of `b` is reached by two edges (c reads b twice), and so is the `AccumulateGrad` of
# `a`. After `c.backward()`, what do you expect in `a.grad`? Now imagine a careless engine
# that keeps, at each node, only the gradient that arrived *last* instead of adding what
# arrives. What would it put in `a.grad`?

# %%
def new_a() -> mg.Tensor:
    return mg.tensor(3.0, dtype=np.float64, requires_grad=True, name="a")


def doubled(a: mg.Tensor, times: int) -> mg.Tensor:
    """a added to itself, then that added to itself, and so on: `times` additions."""
    b = a
    for _ in range(times):
        b = b + b
    return b


# %%
def doubled_graph():
    a = new_a()
    return doubled(a, 2), [a]


grads = side_by_side(doubled_graph)  # the walk on one twin, backward() on the other
print(f"c = 4a = 12; a.grad after the walk = {grads['a']}, the same as after c.backward()")
assert grads["a"] == 4.0


# %%
def paths(node: Node, grad: np.ndarray, visits: list[int]) -> list[float]:
    """What reaches the leaf along each path from `node`, one number per path: no summing, no
    waiting, every path followed on its own. `visits[0]` counts the node runs."""
    visits[0] += 1
    if isinstance(node, AccumulateGrad):
        return [float(grad)]
    found = []
    for child, child_grad in zip(node.next_nodes, node.function.backward(node.ctx, grad)):
        if child is not None:
            found += paths(child, child_grad, visits)
    return found


each_path = paths(doubled(new_a(), 2).grad_fn, np.ones(()), [0])
print(f"what each path from c to a carries: {each_path}; summed: {sum(each_path)}")
print(f"keeping the last arrival at b's node and at a's: one path's worth, {each_path[-1]}")
assert each_path == [1.0, 1.0, 1.0, 1.0]

# %% [markdown]
# Keeping only the last arrival loses one of two equal contributions at `b` and again at `a`:
# 1 instead of 4. Each edge into a node carries one term of the chain rule, and the gradient
# of a node is the sum of those terms. Shared parameters (weight tying, later in the course)
# depend on the same sum.
#
# ## Waiting is also what makes it fast
#
# There is another way to get 4: never wait. Whenever a gradient arrives at a node, run the
# node on it at once and pass the results on, adding only at the leaves. That is correct,
# because the derivative is the sum over all paths from output to leaf of the product of the
# local derivatives along the path: `paths` above is such an engine. But it follows every path
# separately. After k doublings there are 2^k paths from the output to `a`, so the eager
# engine runs about 2^(k+1) nodes, while the walk, by dependency counting, runs each of the
# k + 1 nodes once. We count both, the walk with `walk_order`, which lists every node run.

# %%
depths = list(range(1, size.deepest + 1))
eager_runs, counted_runs = [], []
for k in depths:
    a = new_a()
    out = doubled(a, k)
    runs = [0]
    start = time.perf_counter()
    assert sum(paths(out.grad_fn, np.ones(()), runs)) == 2.0**k, "the eager engine is slow but correct"
    eager_seconds = time.perf_counter() - start
    eager_runs.append(runs[0])
    counted_runs.append(len(walk_order(walk, out)))  # the walk: yours once it passes
    assert a.grad == 2.0**k
    if k % 4 == 0 or k == depths[-1]:
        print(f"k = {k:2d}: dc/da = {a.grad:8.0f}; eager runs {runs[0]:7d} nodes ({eager_seconds:.3f} s), "
              f"the walk runs {counted_runs[-1]}")
assert eager_runs == [2 ** (k + 1) - 1 for k in depths] and counted_runs == [k + 1 for k in depths]

# %%
fig, ax = plt.subplots(figsize=(6, 4))
ax.semilogy(depths, eager_runs, marker="o", label="run on every arrival (one visit per path)")
ax.semilogy(depths, counted_runs, marker="s", label="dependency counting (one visit per node)")
ax.xaxis.set_major_locator(MaxNLocator(integer=True))
ax.set_xlabel("k, the number of doublings  b = b + b")
ax.set_ylabel("node runs in one backward")
ax.set_title("Summing before running keeps backward linear")
ax.grid(True, alpha=0.3)
ax.legend(fontsize=8)
lesson.save(fig, "node-runs.png",
            "node runs per backward against k doublings: one line doubles with k (running on every "
            "arrival), the other grows by one (dependency counting)", dpi=120)

# %% [markdown]
# ## Drawing the graph
#
# `mg.draw(output)` follows the same edges, from the output's `grad_fn` through each node's
# `next_nodes`, and returns a Graphviz digraph: one box per backward node (forward op,
# backward node, output shape) and one ellipse per leaf. `mg.tools.viz.render` turns it into SVG,
# with the system Graphviz if you have one and otherwise with a WebAssembly build of Graphviz
# that pip installs. Running the backward inside `mg.ledger()` records what each edge into a
# leaf carried, and the drawing writes it on the edge.
#
# In the first drawing, look for the two edges from the first `AddBackward` box to the second,
# and the two edges into `a`, each carrying 2: the two terms that add up to 4. In the second,
# `MulBackward` has two incoming edges, one through `TanhBackward` and one straight from
# `AddBackward`.

# %%
def edges_into(source: str, box: str) -> int:
    """How many edges of the DOT source end at the box whose label starts with `box`."""
    node_id = re.search(rf'(\w+) \[label="{re.escape(box)}', source).group(1)
    return len(re.findall(rf"-> {node_id}\b", source))


a = new_a()
c = doubled(a, 2)
c.name = "c"
with mg.ledger(names={"a": a}) as led:
    c.backward()
doubled_graph = mg.draw(c, ledger=led, collapse=None)  # collapse=None: draw every node of a chain
doubled_svg = OUT / "graph-doubled.svg"
mg.tools.viz.render(doubled_graph, path=doubled_svg)  # writes graph-doubled.dot, then the SVG
lesson.announce(doubled_svg, "the graph of c = b + b, b = a + a: two edges into a, each carrying 2")
assert edges_into(doubled_graph.source, "a\\n") == 2
assert [float(part.grad) for part in led.contributions(a)] == [2.0, 2.0], "each edge into a carries 2"

# %%
loss.name = "loss"
loss.backward()
tanh_graph = mg.draw(loss, params={"x": x, "w": w})
tanh_svg = OUT / "graph-tanh.svg"
mg.tools.viz.render(tanh_graph, path=tanh_svg)
lesson.announce(tanh_svg, "the graph of (tanh(y) + y).sum(), y = x * w: two edges into the one node of y")
assert edges_into(tanh_graph.source, "Mul\\nMulBackward") == 2

# %% [markdown]
# ## A Function of your own
#
# Every op in minigrad is a `Function` with a `forward` and a `backward` side by side. The
# forward gets numpy arrays and may save what the backward will need. The backward gets
# G = dL/d(output), the gradient that arrived at its node, and returns one gradient per input:
# G times the local derivative (the chain rule).
#
# Here is x³. We compare its backward with minigrad's own: the same cube written with the power
# op, whose backward someone else wrote. (Lesson 2 builds a stronger test that needs no second
# implementation: finite differences, and minigrad's `gradcheck`, which runs them on every
# element.)

# %%
class Cube(mg.Function):
    @staticmethod
    def forward(ctx, a: np.ndarray) -> np.ndarray:  # a³
        ctx.save_for_backward(a)
        return a**3

    @staticmethod
    def backward(ctx, grad: np.ndarray) -> np.ndarray:  # d a³ = G · 3a²
        (a,) = ctx.saved
        return grad * 3 * a**2


# %%
upstream = np.array([[1.0, -2.0], [0.5, 3.0]])  # not all ones, so the chain rule's G matters
mine = mg.tensor(np.array([[-1.5, 0.2], [0.7, 2.0]]), requires_grad=True, name="points")
Cube.apply(mine).backward(upstream)
theirs = mg.tensor(mine.data, requires_grad=True)
(theirs**3).backward(upstream)
print("Cube.backward:      ", mine.grad.tolist())
print("minigrad's a ** 3:  ", theirs.grad.tolist())
assert np.allclose(mine.grad, theirs.grad) and np.allclose(mine.grad, upstream * 3 * mine.data**2)

# %% [markdown]
# ## What the walk you ran was
#
# Every graph above was walked by the walk named at the top of the lesson: yours, once your
# copy of the exercise passed `minigrad check 1`, run beside `backward()` on a twin of each
# graph with the same `.grad`s as the result. To write it or change it: `minigrad exercise 1`,
# then `minigrad check 1` (or `minigrad check 1 --file my_copy.py`; in a notebook,
# `minigrad.check(1, globals())`), then run this lesson again.
