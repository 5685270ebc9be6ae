"""The gradient ledger: who sent what into each parameter during backward.

    with minigrad.tools.ledger(names=model) as led:
        loss.backward()
    print(led.table(model.emb.weight, rows=[1]))

The engine calls the ledger once for every gradient sent into a leaf's `AccumulateGrad`,
with the sending node (e.g. the `EmbeddingBackward` of a lookup or the `LinearBackward` of
a classifier). The ledger keeps each contribution under a *path* named after that node, so
for a tied table it can say, row by row, how much came through the lookup, how much through
the classifier, and what they add up to: the "vocabulary bridge audit".

Path names: given a Module, a path is named by the module it comes from, the one that owns the
parameter and runs that op: `lookup emb (EmbeddingBackward)`, `up (LinearBackward)`. The word
"classifier" is kept for the output map, a Linear that scores every row of a vocabulary (its
out_features is the row count of an Embedding in the model): `classifier head (LinearBackward)`.
A hidden Linear is not a classifier; without a Module, the ledger cannot tell them apart, so a
Linear path is then named by its node alone.
"""

from __future__ import annotations

import html
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from minigrad.engine import (
    AccumulateGrad,
    FunctionNode,
    Node,
    RowSparse,
    Tensor,
    check_in_range,
    recording,
)
from minigrad.nn.layers import Embedding, Linear
from minigrad.tools.labels import (
    describe_layout,
    grad_norm,
    grad_row,
    param_label,
    param_names,
    sum_grads,
)

# What an op is, seen from a vocabulary table: reading a row. Scoring every row is the role of
# the output map only (OUTPUT_MAP_ROLE), which the ledger finds from the model's modules.
DEFAULT_ROLES: dict[str, str] = {"Embedding": "lookup"}
OUTPUT_MAP_ROLE = "classifier"

EARLIER_GRAD = "earlier .grad"  # the path name of a .grad that existed before recording began


# ---------------------------------------------------------------------------------------------
# Path names


def path_name(sender: Node, role: str | None = None, module: str | None = None, ordinal: int = 1) -> str:
    """'classifier head (LinearBackward)': the op's role and module when known, then its backward
    node; 'lookup #2 (...)' for the second node of that kind."""
    words = " ".join(w for w in (role, module) if w)
    number = f" #{ordinal}" if ordinal > 1 else ""
    return f"{words}{number} ({sender.name})" if words else f"{sender.name}{number}"


def module_owners(names: Any) -> dict[int, list[tuple[str, Any]]]:
    """id(parameter) -> (module path, module) of every module that holds it; {} without a Module."""
    if not hasattr(names, "named_modules"):
        return {}
    owners: dict[int, list[tuple[str, Any]]] = {}
    for path, module in names.named_modules():
        for param in module._parameters.values():
            owners.setdefault(id(param), []).append((path, module))
    return owners


def vocabulary_sizes(names: Any) -> set[int]:
    """The row counts of the model's embedding tables: what an output map scores."""
    if not hasattr(names, "named_modules"):
        return set()
    return {module.num_embeddings for _, module in names.named_modules() if isinstance(module, Embedding)}


def _copy(grad: Any) -> Any:
    """The ledger keeps its own copy, so later in-place work cannot change what it recorded."""
    return grad.astype(grad.dtype) if isinstance(grad, RowSparse) else np.array(grad, copy=True)


# ---------------------------------------------------------------------------------------------
# What the ledger holds


@dataclass
class Contribution:
    """One gradient sent into a parameter: from which node, under which path name."""

    sender: Node | None  # None for the .grad that was there before recording began
    path: str
    grad: Any  # np.ndarray or RowSparse, the parameter's shape

    @property
    def layout(self) -> str:
        return describe_layout(self.grad)

    @property
    def norm(self) -> float:
        return grad_norm(self.grad)


@dataclass
class ParamRecord:
    """Every contribution that reached one parameter, in the order they arrived."""

    param: Tensor
    label: str
    contributions: list[Contribution] = field(default_factory=list)

    def paths(self) -> list[str]:
        """Path names in order of first arrival."""
        return list(dict.fromkeys(c.path for c in self.contributions))

    def path_grads(self) -> dict[str, Any]:
        """Each path's contributions summed (a node that sent twice, as in x*x, is one path)."""
        by_path: dict[str, list[Any]] = {}
        for c in self.contributions:
            by_path.setdefault(c.path, []).append(c.grad)
        return {path: sum_grads(grads) for path, grads in by_path.items()}

    def total(self) -> Any:
        """The sum of every contribution: what `.grad` holds if nothing else touched it."""
        return sum_grads([c.grad for c in self.contributions])

    def densified(self) -> str | None:
        """When sparse and dense contributions met, which made the accumulated gradient dense."""
        sparse = [c for c in self.contributions if isinstance(c.grad, RowSparse)]
        dense = [c for c in self.contributions if not isinstance(c.grad, RowSparse)]
        if not sparse or not dense:
            return None
        sparse_paths = " and ".join(dict.fromkeys(c.path for c in sparse))
        return (
            f"the accumulated gradient became dense: {dense[0].path} sent {dense[0].layout}, and "
            f"sparse + dense is dense, so the rows from {sparse_paths} were added into a table "
            f"that stores all {self.param.shape[0]} rows"
        )


class LedgerTable:
    """Per row: the norm of each path's gradient and of their sum. Prints as a table.

    A row that a sparse path does not store prints as '-' (its norm counts as 0): the
    difference between "sent a zero row" and "sent nothing for this row" is the sparse layout.
    """

    def __init__(self, label: str, paths: list[str], layouts: list[str], rows: list[int],
                 row_labels: list[str], norms: np.ndarray, stored: np.ndarray, totals: np.ndarray,
                 note: str | None):
        self.label = label
        self.paths = paths
        self.layouts = layouts
        self.rows = rows
        self.row_labels = row_labels
        self.norms = norms  # (len(rows), len(paths)): norm of row r of path p
        self.stored = stored  # (len(rows), len(paths)) bool: path p holds row r
        self.totals = totals  # (len(rows),): norm of row r of the summed gradient
        self.note = note

    def norm(self, row: int, path: str) -> float:
        """The norm of `row` from `path` (a path name, or 'total')."""
        if row not in self.rows:
            raise KeyError(f"LedgerTable: row {row} is not in this table (rows {self.rows})")
        i = self.rows.index(row)
        if path == "total":
            return float(self.totals[i])
        if path not in self.paths:
            raise KeyError(f"LedgerTable: no path {path!r} reached {self.label} (paths: {self.paths})")
        return float(self.norms[i, self.paths.index(path)])

    def __str__(self) -> str:
        heads = ["row"] + self.paths + ["total"]
        layout = ["layout"] + self.layouts + [""]
        cells = [
            [label] + [f"{v:.4f}" if held else "-" for v, held in zip(norms, stored)] + [f"{total:.4f}"]
            for label, norms, stored, total in zip(self.row_labels, self.norms, self.stored, self.totals)
        ]
        lines_in = [heads, layout, *cells]
        widths = [max(len(line[k]) for line in lines_in) for k in range(len(heads))]

        def fmt(line: list[str]) -> str:
            first = line[0].ljust(widths[0])
            return "  ".join([first] + [c.rjust(w) for c, w in zip(line[1:], widths[1:])]).rstrip()

        lines = [f"gradient ledger for {self.label} (norm of each row, by path)"]
        lines += [fmt(line) for line in lines_in]
        if self.note:
            lines += textwrap.wrap("note: " + self.note, width=96, subsequent_indent="  ")
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        """The same table for a notebook: a header row of paths, their layouts, a row per row."""
        heads = ["row", *self.paths, "total"]
        body = [["layout", *self.layouts, ""]] + [
            [label] + [f"{v:.4f}" if held else "-" for v, held in zip(norms, stored)] + [f"{total:.4f}"]
            for label, norms, stored, total in zip(self.row_labels, self.norms, self.stored, self.totals)
        ]
        caption = f"gradient ledger for {self.label} (norm of each row, by path)"
        note = f"<p><em>note:</em> {html.escape(self.note)}</p>" if self.note else ""
        return html_table(caption, heads, body) + note


def html_table(caption: str, heads: list[str], body: list[list[str]]) -> str:
    """A plain HTML table: numbers right-aligned, the first column left-aligned; text escaped."""
    def row(cells: list[str], tag: str) -> str:
        return "<tr>" + "".join(
            f'<{tag} style="text-align:{"left" if k == 0 else "right"}">{html.escape(c)}</{tag}>'
            for k, c in enumerate(cells)) + "</tr>"

    return (f"<table><caption>{html.escape(caption)}</caption><thead>{row(heads, 'th')}</thead>"
            f"<tbody>{''.join(row(cells, 'td') for cells in body)}</tbody></table>")


# ---------------------------------------------------------------------------------------------
# The ledger


class Ledger:
    """Records, while active, every gradient that reaches a leaf, keyed by the node that sent it.

    names: a Module or {name: tensor} dict, to label parameters ('emb.weight = head.weight');
           a Module also names each path by the module it comes from (see the module docstring)
    roles: forward op name -> role word for path names, for every op of that kind; default
           {'Embedding': 'lookup'}, plus 'classifier' for the output map. With roles given
           (e.g. {}), no output map is singled out.
    """

    def __init__(self, names: Any = None, roles: Mapping[str, str] | None = None):
        self.names = param_names(names)
        self.roles = dict(DEFAULT_ROLES if roles is None else roles)
        self.find_output_map = roles is None
        self.owners = module_owners(names)
        self.vocabulary = vocabulary_sizes(names)
        self._records: dict[int, ParamRecord] = {}
        self._path_of: dict[tuple[int, int], str] = {}  # (id(param), id(sender)) -> path name
        self._recording: Any = None

    # ---- recording ---------------------------------------------------------------------------
    def __enter__(self) -> Ledger:
        if self._recording is not None:
            raise RuntimeError("ledger: this ledger is already recording (it cannot be entered twice)")
        self._recording = recording(self)
        self._recording.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._recording.__exit__(*exc)
        self._recording = None

    def __call__(self, sender: Node, receiver: AccumulateGrad, grad: Any) -> None:
        """The engine's hook: `sender` sent `grad` into the leaf behind `receiver`."""
        param = receiver.variable
        record = self._records.get(id(param))
        if record is None:
            record = ParamRecord(param, param_label(param, self.names))
            if param.grad is not None:  # backward adds to it: keep it so the total matches .grad
                record.contributions.append(Contribution(None, EARLIER_GRAD, _copy(param.grad)))
            self._records[id(param)] = record
        record.contributions.append(Contribution(sender, self._path(param, sender), _copy(grad)))

    def _path(self, param: Tensor, sender: Node) -> str:
        """A path name per sending node; a second node of the same kind gets '#2'."""
        key = (id(param), id(sender))
        if key not in self._path_of:
            taken = {name for (pid, _), name in self._path_of.items() if pid == id(param)}
            role, module = self._role_and_module(param, sender)
            k = 1
            while (name := path_name(sender, role, module, k)) in taken:
                k += 1
            self._path_of[key] = name  # the sender stays alive in its Contribution: ids stay unique
        return self._path_of[key]

    def _role_and_module(self, param: Tensor, sender: Node) -> tuple[str | None, str | None]:
        """The role word and the module path (module paths joined by ' = ' when shared) for what
        `sender` sent into `param`; None for what is not known."""
        op = sender.op.__name__ if isinstance(sender, FunctionNode) else None
        owners = [(path, m) for path, m in self.owners.get(id(param), []) if type(m).__name__ == op]
        module = " = ".join(path for path, _ in owners) or None
        role = self.roles.get(op) if op else None
        if role is None and self.find_output_map and any(
                isinstance(m, Linear) and m.out_features in self.vocabulary for _, m in owners):
            role = OUTPUT_MAP_ROLE
        return role, module

    # ---- reading -----------------------------------------------------------------------------
    def __contains__(self, param: Tensor) -> bool:
        """Whether `param` received gradient while recording."""
        return id(param) in self._records

    @property
    def params(self) -> list[Tensor]:
        """The leaves that received gradient, in order of first arrival."""
        return [r.param for r in self._records.values()]

    def record(self, param: Tensor | str) -> ParamRecord:
        """What reached `param` (a tensor, or one of its names)."""
        if isinstance(param, str):
            matches = [r for r in self._records.values() if param in self.names.get(id(r.param), ())]
            if not matches:
                known = [n for r in self._records.values() for n in self.names.get(id(r.param), ())]
                raise KeyError(
                    f"ledger: no parameter named {param!r} received gradient while recording "
                    f"(named parameters that did: {known})"
                )
            return matches[0]
        if not isinstance(param, Tensor):
            raise TypeError(f"ledger: param must be a Tensor or a name, got {type(param).__name__}")
        record = self._records.get(id(param))
        if record is None:
            raise KeyError(
                f"ledger: {param_label(param, self.names)} of shape {param.shape} received no "
                "gradient while the ledger was recording; run backward() inside "
                "`with minigrad.tools.ledger() as led:`"
            )
        return record

    def contributions(self, param: Tensor | str) -> list[Contribution]:
        return list(self.record(param).contributions)

    def path_grads(self, param: Tensor | str) -> dict[str, Any]:
        """Path name -> the gradient that path sent (summed over its contributions)."""
        return self.record(param).path_grads()

    def contributions_from(self, sender: Node, param: Tensor) -> list[Contribution]:
        """What one node sent into one parameter, in order (one per edge, per backward)."""
        record = self._records.get(id(param))
        return [c for c in record.contributions if c.sender is sender] if record else []

    def table(self, param: Tensor | str, rows: Iterable[int] | None = None,
              labels: Sequence[str] | Mapping[int, str] | None = None) -> LedgerTable:
        """Per row, the norm of each path's gradient and of the total (print it to see it).

        param:  the parameter (or one of its names); its shape is (V, ...)
        rows:   row ids in [0, V); default every row
        labels: a name per row (e.g. the vocabulary), as a length-V sequence or {row: name}
        """
        record = self.record(param)
        rows = _table_rows(record, rows)
        n_rows = record.param.shape[0]
        row_labels = [_row_label(r, labels, n_rows) for r in rows]
        grads = record.path_grads()
        paths = list(grads)
        norms, stored, totals = _row_norms([[grad_row(grads[p], r) for p in paths] for r in rows])
        shape2 = (len(rows), len(paths))
        return LedgerTable(record.label, paths, [describe_layout(grads[p]) for p in paths], rows,
                           row_labels, norms.reshape(shape2), stored.reshape(shape2), totals,
                           record.densified())

    def _repr_html_(self) -> str:
        """A notebook shows the summary as a table: per parameter and path, layout and norm."""
        body = [[r.label, p, describe_layout(g), f"{grad_norm(g):.4f}"]
                for r in self._records.values() for p, g in r.path_grads().items()]
        return html_table(f"gradient ledger: {len(self._records)} parameters received gradient",
                          ["parameter", "path", "layout", "norm (whole table)"], body)

    def __str__(self) -> str:
        """What `print(ledger)` shows: how many parameters received gradient, then `summary()`."""
        if not self._records:
            return "gradient ledger: nothing recorded yet"
        n = len(self._records)
        head = f"gradient ledger: {n} parameter{'s' if n > 1 else ''} received gradient"
        return head + "\n" + self.summary()

    def __repr__(self) -> str:
        recording_now = " (recording)" if self._recording is not None else ""
        what = "; ".join(f"{r.label} ({len(r.paths())} path{'s' if len(r.paths()) > 1 else ''})"
                         for r in self._records.values()) or "nothing recorded yet"
        return f"<Ledger{recording_now}: {what}>"

    def summary(self) -> str:
        """One line per parameter: each path with its layout and norm, and the total's layout."""
        lines = []
        for r in self._records.values():
            parts = [f"{p} {describe_layout(g)} norm {grad_norm(g):.4f}" for p, g in r.path_grads().items()]
            lines.append(f"{r.label}: " + "; ".join(parts) + f" -> .grad {describe_layout(r.total())}")
        return "\n".join(lines)


def _norm(row: Any) -> float:
    return 0.0 if row is None or isinstance(row, int) else float(np.linalg.norm(row))


def _table_rows(record: ParamRecord, rows: Iterable[int] | None) -> list[int]:
    """The rows ledger.table shows: `rows` as ints checked to be rows of the parameter, or every row."""
    shape = record.param.shape
    if len(shape) == 0:
        raise ValueError(f"ledger.table: {record.label} is a scalar; a table needs rows")
    n_rows = shape[0]
    rows = list(range(n_rows)) if rows is None else [int(r) for r in rows]
    check_in_range(np.array(rows, dtype=np.int64), n_rows, who="ledger.table", item="row", name="rows",
                   range_of=f"{record.label} with {n_rows} rows")
    return rows


def _row_norms(row_grads: list[list[Any]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(each path's norm, whether it stored the row, the total's norm) per row, from each row's
    gradient per path (None where a path did not store the row)."""
    stored = np.array([[g is not None for g in line] for line in row_grads], dtype=bool)
    norms = np.array([[_norm(g) for g in line] for line in row_grads], dtype=np.float64)
    totals = np.array([_norm(sum(g.astype(np.float64) for g in line if g is not None))
                       for line in row_grads], dtype=np.float64)
    return norms, stored, totals


def _row_label(row: int, labels: Any, n_rows: int) -> str:
    if labels is None:
        return str(row)
    if isinstance(labels, Mapping):
        return f"{row} {labels[row]}" if row in labels else str(row)
    if len(labels) != n_rows:
        raise ValueError(
            f"ledger.table: labels has {len(labels)} entries, expected one per row ({n_rows})"
        )
    return f"{row} {labels[row]}"


def ledger(names: Any = None, roles: Mapping[str, str] | None = None) -> Ledger:
    """A gradient ledger; use as `with minigrad.tools.ledger(names=model) as led: loss.backward()`."""
    return Ledger(names=names, roles=roles)

