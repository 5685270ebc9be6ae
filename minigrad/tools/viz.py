"""Building the drawing of the backward graph: the DOT that Graphviz lays out.

`draw(loss, params=model, ledger=led)` walks the backward graph from `loss` and returns a
`graphviz.Digraph`: one box per backward op, one node per parameter (labelled with every name it
goes by), edges in the direction gradients flow. A tied parameter is one node with two incoming
edges. Given the ledger that recorded the backward, each edge into a parameter says what it
carried (`sparse: 1/6 rows` or `dense: 6x4`) and its norm.

Which norm: `‖G‖ whole table` is the norm of the whole gradient (every row of the table), while
the ledger's tables print one row's. `draw(..., row=r)` adds row r's norms, labelled `row r`, so
the drawing shows the very numbers `ledger.table(param, rows=[r])` prints.

Layout: `rankdir="auto"` (the default) draws top-to-bottom or left-to-right, whichever shows the
graph larger on a screen; a backward graph is usually a long chain, which left-to-right makes a
strip too wide to read.

Why a ledger for the edge labels: after backward the graph's structure is still there (the
output keeps its `grad_fn`), but what each edge carried is gone; the engine only sums it into
`.grad`. The ledger's recorder kept each contribution keyed by the node that sent it, which is
exactly what an edge is, so no graph has to be retained and nothing has to run twice.

Large graphs: a run of the same op applied one after another (a chain of Adds, say) is drawn as
one node marked "×N" once it is `collapse` long or longer. We chose this over grouping by module
because a backward node does not know which module created it, while a run is visible in the
graph itself.

Rendering is the render module's job: `render(graph)` turns DOT into SVG with the system `dot`
when it is on PATH and otherwise with the WebAssembly Graphviz from PyPI, and a Drawing's
`render("graph", format="svg")`, `pipe()` and `view()` (the graphviz and torchviz habit) go
through it, so none needs a system Graphviz. They are re-exported here.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import graphviz
import numpy as np

from minigrad.engine import (
    AccumulateGrad,
    FunctionNode,
    Node,
    RowSparse,
    Tensor,
    count_dependencies,
)
from minigrad.nn.module import Parameter
from minigrad.tools.labels import (
    describe_layout,
    grad_norm,
    grad_row,
    param_label,
    param_names,
    sum_grads,
)
from minigrad.tools.ledger import Ledger
from minigrad.tools.render import (
    RENDERERS,
    WASM_FORMATS,
    GraphvizNotFoundError,
    InProcessRendering,
    render,
    renderer_install_hint,
    svg,
    which_renderer,
)

RANKDIRS = ("auto", "LR", "RL", "TB", "BT")

# Sparse gradients are drawn green, dense ones orange: the colour of what tying costs.
SPARSE_COLOR, DENSE_COLOR = "#2a9d8f", "#e76f51"
OP_FILL, PARAM_FILL, TIED_FILL = "#eeeeee", "#dbe9f6", "#ffe08a"
ROW_COLOR = "#6a3d9a"  # the outline of a parameter whose chosen row is labelled

# What rankdir="auto" fits the drawing to, in points (1/72 in, as Graphviz measures): a 16:10
# screen. The node sizes below are estimates for 11-point Helvetica, before any layout runs.
SCREEN = (1200.0, 750.0)
CHAR_WIDTH, LINE_HEIGHT, RANKSEP, NODESEP = 6.0, 13.0, 36.0, 18.0

class Drawing(InProcessRendering, graphviz.Digraph):
    """A `graphviz.Digraph` whose `render`, `pipe`, `view` and Jupyter display need no system
    Graphviz (see the render module); its default format is SVG."""


# ---------------------------------------------------------------------------------------------
# Drawing


def draw(output: Tensor, params: Any = None, show_grads: bool = True, show_shapes: bool = True,
         rankdir: str = "auto", ledger: Ledger | None = None, collapse: int | None = 4,
         row: int | None = None, row_label: str | None = None) -> Drawing:
    """The backward graph reachable from `output`, as a Graphviz digraph.

    output:      the tensor whose backward graph to draw (e.g. the loss)
    params:      a Module or {name: tensor} dict naming the parameters
    show_grads:  label parameter edges with what they carried (needs `ledger`) and parameter
                 nodes with their `.grad` layout and norm (after a backward); these norms are of
                 the whole table, labelled `‖G‖ whole table`
    show_shapes: print output shapes on op nodes and shapes on parameter nodes
    rankdir:     "auto" (top-to-bottom or left-to-right, whichever fits a screen larger), "LR"
                 (output left, parameters right), "RL", "TB" or "BT"
    ledger:      the ledger that recorded the backward, for the per-edge labels
    collapse:    draw a run of at least this many repeated ops as one node; None to never collapse
    row:         also label row `row` of every parameter gradient and of every edge into a
                 parameter (`row r: ‖G‖ ...`, the numbers `ledger.table(p, rows=[r])` prints), and
                 outline those parameters; parameters with fewer rows are left as they are
    row_label:   how to name that row in the labels (e.g. its token; default: its number)
    """
    _check_draw_arguments(output, rankdir, collapse, ledger, row)
    names = param_names(params) if params is not None else dict(ledger.names if ledger else {})
    builder = _Builder(names, show_grads, show_shapes, ledger, None if row is None else int(row),
                       row_label)
    builder.node("output", [output.name or "output"] + ([str(output.shape)] if show_shapes else []),
                 shape="plaintext")
    _add_the_graph(builder, output._grad_node(), collapse)
    if row is not None and not builder.rows_shown:
        raise IndexError(
            f"draw: row {row} is out of range for every parameter drawn (their shapes: "
            f"{sorted({p.shape for p in builder.params_drawn}, key=str)})"
        )
    if rankdir == "auto":
        rankdir = _fitting_rankdir(builder.sizes, builder.edges)
    builder.graph.graph_attr["rankdir"] = rankdir
    return builder.graph


def _check_draw_arguments(output: Any, rankdir: str, collapse: Any, ledger: Any, row: Any) -> None:
    """draw's arguments, or an error naming the one that is wrong and what it must be."""
    _check_drawable(output)
    if rankdir not in RANKDIRS:
        raise ValueError(f"draw: rankdir must be one of {RANKDIRS}, got {rankdir!r}")
    if collapse is not None and (not isinstance(collapse, int) or collapse < 2):
        raise ValueError(f"draw: collapse must be an int >= 2 or None, got {collapse!r}")
    if ledger is not None and not isinstance(ledger, Ledger):
        raise TypeError(f"draw: ledger must be a minigrad Ledger, got {type(ledger).__name__}")
    if row is not None and (isinstance(row, bool) or not isinstance(row, int | np.integer) or row < 0):
        raise ValueError(f"draw: row must be a row index (an int >= 0) or None, got {row!r}")


def _check_drawable(output: Any) -> None:
    """A tensor with a backward graph to draw, or an error saying why not."""
    if not isinstance(output, Tensor):
        raise TypeError(f"draw: output must be a Tensor, got {type(output).__name__}")
    if not output.requires_grad:
        raise ValueError(
            f"draw: output of shape {output.shape} does not require grad, so it has no backward "
            "graph; build it from tensors with requires_grad=True, outside no_grad()"
        )


def _add_the_graph(builder: _Builder, root: Node, collapse: int | None) -> None:
    """Every node reachable from `root` and the edges between them, breadth-first from the
    output (so node ids and order are stable), runs of repeated ops drawn as one node."""
    runs = _collapse_runs(root, collapse)
    builder.add_node(root, runs)
    builder.edge("output", builder.ids[root], style="dashed")
    queue = deque([root])
    while queue:
        node = queue.popleft()
        last = runs.get(node, [node])[-1]  # a collapsed run sends on from its last node
        for child in last.next_nodes:
            if child is not None and child not in builder.ids:
                builder.add_node(child, runs)
                queue.append(child)
        builder.add_edges(node, last)


def _fitting_rankdir(sizes: dict[str, tuple[float, float]], edges: list[tuple[str, str]]) -> str:
    """'TB' or 'LR': whichever draws the graph larger when scaled to fit SCREEN (ties: 'LR').

    An estimate before layout, as dot ranks nodes: each node sits one rank past its furthest
    predecessor; nodes of a rank line up across the flow, ranks follow each other along it.
    """
    ranks = _nodes_by_rank(sizes, edges)
    tb_width, tb_height = _extent(ranks, across=0, along=1)
    lr_height, lr_width = _extent(ranks, across=1, along=0)

    def scale(width: float, height: float) -> float:
        return min(SCREEN[0] / width, SCREEN[1] / height)

    return "TB" if scale(tb_width, tb_height) > scale(lr_width, lr_height) else "LR"


def _nodes_by_rank(sizes: dict[str, tuple[float, float]],
                   edges: list[tuple[str, str]]) -> dict[int, list[tuple[float, float]]]:
    """{rank: the (width, height) of each node at that rank}, a node one rank past its furthest
    predecessor (Kahn's order: every predecessor is ranked before its successors)."""
    rank = {node_id: 0 for node_id in sizes}
    waiting = {node_id: 0 for node_id in sizes}
    out: dict[str, list[str]] = {node_id: [] for node_id in sizes}
    for tail, head in edges:
        out[tail].append(head)
        waiting[head] += 1
    ready = [node_id for node_id, n in waiting.items() if n == 0]
    while ready:
        tail = ready.pop()
        for head in out[tail]:
            rank[head] = max(rank[head], rank[tail] + 1)
            waiting[head] -= 1
            if waiting[head] == 0:
                ready.append(head)
    ranks: dict[int, list[tuple[float, float]]] = {}
    for node_id, r in rank.items():
        ranks.setdefault(r, []).append(sizes[node_id])
    return ranks


def _extent(ranks: dict[int, list[tuple[float, float]]], across: int, along: int) -> tuple[float, float]:
    """(size across the flow, size along it) of ranked nodes; 0 picks a node's width, 1 its height."""
    side = max(sum(s[across] for s in nodes) + NODESEP * (len(nodes) - 1) for nodes in ranks.values())
    length = sum(max(s[along] for s in nodes) for nodes in ranks.values()) + RANKSEP * (len(ranks) - 1)
    return side, length


class _Builder:
    """Adds nodes and edges to one Drawing, numbering ops op0, op1, ... and parameters param0, ..."""

    def __init__(self, names: dict[int, list[str]], show_grads: bool, show_shapes: bool,
                 ledger: Ledger | None, row: int | None, row_label: str | None = None):
        self.graph = Drawing(name="backward", format="svg", graph_attr={"fontname": "Helvetica"},
                             node_attr={"fontname": "Helvetica", "fontsize": "11"},
                             edge_attr={"fontname": "Helvetica", "fontsize": "10"})
        self.names, self.show_grads, self.show_shapes = names, show_grads, show_shapes
        self.ledger = ledger if show_grads else None
        self.row, self.row_label = row, row_label
        self.ids: dict[Node, str] = {}
        self.counts = {"op": 0, "param": 0}
        self.sizes: dict[str, tuple[float, float]] = {}  # node id -> estimated (width, height)
        self.edges: list[tuple[str, str]] = []
        self.params_drawn: list[Tensor] = []
        self.rows_shown = False  # whether some parameter has row `row`

    def node(self, node_id: str, lines: list[str], **attrs: str) -> None:
        """Add a node labelled with `lines`, remembering its size for rankdir="auto"."""
        width = CHAR_WIDTH * max(len(line) for line in lines) + 16
        self.sizes[node_id] = (max(width, 54.0), max(LINE_HEIGHT * len(lines) + 8, 36.0))
        self.graph.node(node_id, "\\n".join(lines), **attrs)

    def edge(self, tail: str, head: str, **attrs: str) -> None:
        self.edges.append((tail, head))
        self.graph.edge(tail, head, **attrs)

    def row_of(self, param: Tensor) -> int | None:
        """The chosen row when `param` has it, else None."""
        if self.row is None or len(param.shape) == 0 or self.row >= param.shape[0]:
            return None
        self.rows_shown = True
        return self.row

    def norm_lines(self, grad: Any, row: int | None) -> list[str]:
        """'‖G‖ whole table 0.5969', then with a row 'row 1: ‖G‖ 0.5799' (or what it lacks)."""
        lines = [f"‖G‖ whole table {grad_norm(grad):#.4g}"]
        if row is not None:
            values = grad_row(grad, row)
            name = self.row_label or str(row)
            lines.append(f"row {name}: not stored" if values is None else
                         f"row {name}: ‖G‖ {float(np.linalg.norm(np.asarray(values, np.float64))):#.4g}")
        return lines

    def _new_id(self, node: Node, kind: str) -> str:
        self.ids[node] = f"{kind}{self.counts[kind]}"
        self.counts[kind] += 1
        return self.ids[node]

    def add_node(self, node: Node, runs: dict[Node, list[Node]]) -> None:
        if isinstance(node, AccumulateGrad):
            self._add_param(self._new_id(node, "param"), node.variable)
            return
        run = runs.get(node, [node])
        forward = node.op.__name__ if isinstance(node, FunctionNode) else type(node).__name__
        lines = [forward + (f" ×{len(run)}" if len(run) > 1 else ""), node.name]
        shape = getattr(run[0], "grad_shape", None)
        if self.show_shapes and shape is not None:
            lines.append(f"out {shape}")
        self.node(self._new_id(node, "op"), lines, shape="box", style="rounded,filled", fillcolor=OP_FILL)

    def _add_param(self, node_id: str, param: Tensor) -> None:
        aliases = self.names.get(id(param), [])
        kind = "" if isinstance(param, Parameter) or aliases else "leaf "
        self.params_drawn.append(param)
        lines = [kind + param_label(param, self.names)]
        if self.show_shapes:
            lines.append(str(param.shape))
        attrs = {"shape": "ellipse", "style": "filled",
                 "fillcolor": TIED_FILL if len(aliases) > 1 else PARAM_FILL}
        if self.show_grads and param.grad is not None:
            row = self.row_of(param)
            lines += [f".grad {describe_layout(param.grad)}", *self.norm_lines(param.grad, row)]
            if row is not None:
                attrs.update(color=ROW_COLOR, penwidth="2.5")
            if self.ledger is not None and param in self.ledger and self.ledger.record(param).densified():
                lines.append("became dense here: sparse + dense")
        self.node(node_id, lines, **attrs)

    def add_edges(self, node: Node, last: Node) -> None:
        """Edges out of `node` (sent by `last`, the end of its run); into a parameter they say
        what they carried."""
        children = [c for c in last.next_nodes if c is not None]
        for k, child in enumerate(children):
            attrs: dict[str, str] = {}
            carried = self._carried(last, child, children[:k].count(child), children.count(child))
            if carried is not None and isinstance(child, AccumulateGrad):  # an edge into a parameter
                color = SPARSE_COLOR if isinstance(carried, RowSparse) else DENSE_COLOR
                lines = [describe_layout(carried), *self.norm_lines(carried, self.row_of(child.variable))]
                attrs = {"label": "\\n".join(lines), "color": color, "fontcolor": color, "penwidth": "2"}
            self.edge(self.ids[node], self.ids[child], **attrs)

    def _carried(self, sender: Node, child: Node, k: int, n_edges: int) -> Any:
        """What the k-th of `n_edges` edges from sender into a parameter carried, per the ledger.

        The engine records one contribution per edge per backward, in edge order, so edge k
        carried contributions k, k + n_edges, ... (summed over repeated backwards)."""
        if self.ledger is None or not isinstance(child, AccumulateGrad):
            return None
        sent = [c.grad for c in self.ledger.contributions_from(sender, child.variable)][k::n_edges]
        return sum_grads(sent) if sent else None


def _collapse_runs(root: Node, collapse: int | None) -> dict[Node, list[Node]]:
    """First node of each run of >= `collapse` same ops in a chain -> the nodes of that run.

    A chain link is an op whose only input is one op of the same kind that feeds nothing else.
    """
    if collapse is None:
        return {}
    # the engine's own count of edges into each node; its keys come in discovery order, in which
    # a node whose only consumer is X always comes after X
    consumers = count_dependencies(root)
    runs: dict[Node, list[Node]] = {}
    inside: set[Node] = set()
    for node in consumers:  # discovery order, so a run is met at its first node
        if node in inside:
            continue
        run = [node]
        while (nxt := _chain_link(run[-1], consumers)) is not None:
            run.append(nxt)
        if len(run) >= collapse:
            runs[node] = run
            inside.update(run)
    return runs


def _chain_link(node: Node, consumers: dict[Node, int]) -> Node | None:
    """The op that continues a chain from `node`: its only input, an op of the same kind that
    feeds nothing else; None when the chain ends here."""
    children = [c for c in node.next_nodes if c is not None]
    if (len(children) == 1 and isinstance(node, FunctionNode) and isinstance(children[0], FunctionNode)
            and children[0].op is node.op and consumers[children[0]] == 1):
        return children[0]
    return None


__all__ = ["RENDERERS", "WASM_FORMATS", "Drawing", "GraphvizNotFoundError", "draw",
           "render", "renderer_install_hint", "svg", "which_renderer"]
