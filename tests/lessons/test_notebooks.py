"""Lessons in a notebook: figures show inline on both routes (a generated notebook and jupytext),
once each; a generated notebook carries no path of the machine that wrote it.

The display calls are tested with a stand-in kernel (no IPython needed); where nbclient and
ipykernel are installed (the dev extra), real notebooks are executed in a real kernel.
"""

import sys
import types
from pathlib import Path

import pytest

from minigrad.learn import course as runner
from minigrad.learn.kit import figures

LESSON = '''\
# %% [markdown]
# # Lesson 5: Figures
#
# A lesson that draws, for the notebook tests.

# %%
import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

import minigrad as mg
from minigrad.learn.kit.figures import save_figure, show_file
from minigrad.learn.train import ProgressBar

OUT = Path(os.environ.get("MINIGRAD_OUT", "minigrad-out")) / "lesson-05"
OUT.mkdir(parents=True, exist_ok=True)

# %% [markdown]
# What will the line look like?

# %%
fig, ax = plt.subplots(figsize=(2, 2))
ax.plot([0, 1], [0, 1])
save_figure(fig, OUT / "line.png", dpi=50)
x = mg.tensor([1.0, 2.0], requires_grad=True, name="x")
loss = (x * x).sum()
loss.backward()
mg.tools.viz.render(mg.draw(loss), path=OUT / "graph.svg")
show_file(OUT / "graph.svg")
(OUT / "other.svg").write_text("<svg xmlns='http://www.w3.org/2000/svg'/>")  # written, not shown
bar = ProgressBar(3, "steps", interval=0.0)
for done in (1, 2, 3):
    bar.update(done)
bar.close()
# gradcheck is mentioned here; then run `minigrad check 5`
'''


@pytest.fixture
def figure_lesson(tmp_path, monkeypatch):
    root = tmp_path / "lessons"
    for folder in ("", "exercises", "solutions", "checks"):
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / folder / "__init__.py").write_text("")
    (root / "05_figures.py").write_text(LESSON)
    monkeypatch.setenv("MINIGRAD_LESSONS", str(root))
    monkeypatch.delenv("MINIGRAD_OUT", raising=False)
    return runner.get_lesson(5)


class FakeKernel:
    """Enough of IPython for figures.in_notebook() and the display calls: records what is shown."""

    def __init__(self, monkeypatch):
        self.shown: list[tuple[str, str]] = []
        self.events = types.SimpleNamespace(register=lambda *a: None, unregister=lambda *a: None)
        self.kernel = object()
        ipython = types.ModuleType("IPython")
        ipython.get_ipython = lambda: self
        display = types.ModuleType("IPython.display")
        display.SVG = lambda filename: ("svg", Path(filename).name)
        display.Image = lambda filename: ("image", Path(filename).name)
        display.display = self.shown.append
        monkeypatch.setitem(sys.modules, "IPython", ipython)
        monkeypatch.setitem(sys.modules, "IPython.display", display)
        monkeypatch.setattr(figures, "SHOWN", set())


def test_outside_a_notebook_save_figure_writes_and_closes_and_shows_nothing(tmp_path, monkeypatch):
    plt = pytest.importorskip("matplotlib.pyplot")
    monkeypatch.setattr(figures, "SHOWN", set())
    assert not figures.in_notebook()
    fig, _ = plt.subplots()
    path = figures.save_figure(fig, tmp_path / "sub" / "f.png", dpi=20)
    assert path.read_bytes().startswith(b"\x89PNG")
    assert not plt.fignum_exists(fig.number) and figures.SHOWN == set()


def test_in_a_notebook_kernel_each_saved_figure_is_displayed_from_its_file(tmp_path, monkeypatch):
    plt = pytest.importorskip("matplotlib.pyplot")
    kernel = FakeKernel(monkeypatch)
    assert figures.in_notebook()
    fig, _ = plt.subplots()
    figures.save_figure(fig, tmp_path / "a.png", dpi=20)
    (tmp_path / "g.svg").write_text("<svg xmlns='http://www.w3.org/2000/svg'/>")
    figures.show_file(tmp_path / "g.svg")
    assert kernel.shown == [("image", "a.png"), ("svg", "g.svg")]
    assert figures.SHOWN == {(tmp_path / "a.png").resolve(), (tmp_path / "g.svg").resolve()}
    assert not plt.fignum_exists(fig.number)


def test_a_terminal_ipython_is_not_a_notebook(monkeypatch):
    FakeKernel(monkeypatch)
    monkeypatch.setattr(sys.modules["IPython"], "get_ipython", lambda: types.SimpleNamespace())
    assert not figures.in_notebook()


def test_show_file_of_a_missing_file_names_it(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"show_file: .*nothing\.png does not exist"):
        figures.show_file(tmp_path / "nothing.png")


def test_the_generated_notebook_shows_what_the_lesson_did_not_show_itself(figure_lesson, tmp_path,
                                                                          monkeypatch):
    kernel = FakeKernel(monkeypatch)
    hooks = {}
    kernel.events.register = lambda event, callback: hooks.setdefault(event, callback)
    out = tmp_path / "nb"
    out.mkdir()
    monkeypatch.chdir(out)
    lesson_file = runner.notebook_setup(5)
    assert lesson_file == str(figure_lesson.path)
    hooks["pre_run_cell"]()
    (out / "lesson-05").mkdir()
    (out / "lesson-05" / "shown.svg").write_text("<svg xmlns='http://www.w3.org/2000/svg'/>")
    figures.show_file(out / "lesson-05" / "shown.svg")  # the lesson showed this one
    (out / "lesson-05" / "written.png").write_bytes(b"\x89PNG")  # and only wrote this one
    hooks["post_run_cell"]()
    assert kernel.shown == [("svg", "shown.svg"), ("image", "written.png")]


def test_lessons_show_every_figure_they_save():
    root = Path(__file__).resolve().parents[2] / "lessons"
    for path in sorted(root.glob("[0-9][0-9]_*.py")):
        text = path.read_text()
        assert "fig.savefig(" not in text, f"{path.name}: save with lesson.save(...) so notebooks show it"
        renders = text.count("mg.tools.viz.render(")
        assert text.count(".announce(") >= renders, f"{path.name}: announce each drawing it renders"


def test_lesson_kit_shows_what_it_saves_and_announces(tmp_path, monkeypatch, capsys):
    plt = pytest.importorskip("matplotlib.pyplot")
    from minigrad.learn.kit import LessonSetup

    kernel = FakeKernel(monkeypatch)
    lesson = LessonSetup(5, tmp_path, small=True)
    fig, _ = plt.subplots()
    lesson.save(fig, "a.png", "a line", dpi=20)
    (tmp_path / "g.svg").write_text("<svg xmlns='http://www.w3.org/2000/svg'/>")
    lesson.announce(tmp_path / "g.svg", "a drawing")
    assert kernel.shown == [("image", "a.png"), ("svg", "g.svg")]
    assert "shows: a line" in capsys.readouterr().out


# ---- in a real kernel ----------------------------------------------------------------------------

def executed(node, cwd: Path) -> list[dict]:
    """Execute a notebook (an nbformat NotebookNode) in a real kernel; every code cell's outputs."""
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    nbclient.NotebookClient(node, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(cwd)}}).execute()
    return [output for cell in node.cells if cell.cell_type == "code" for output in cell.outputs]


def shown_images(outputs: list[dict]) -> list[str]:
    return [kind for o in outputs if o["output_type"] == "display_data"
            for kind in o["data"] if kind.startswith("image/")]


def test_a_generated_notebook_runs_in_a_kernel_and_shows_each_figure_once(figure_lesson, tmp_path):
    path = runner.write_notebook(figure_lesson, tmp_path / "nb")
    assert str(tmp_path) not in path.read_text()  # nothing of this machine's folders is baked in
    nbformat = pytest.importorskip("nbformat")
    outputs = executed(nbformat.read(path, as_version=4), path.parent)
    assert shown_images(outputs) == ["image/png", "image/svg+xml", "image/svg+xml"]  # line, graph, other
    assert (tmp_path / "nb" / "lesson-05" / "line.png").is_file()
    stderr = "".join(o.get("text", "") for o in outputs if o.get("name") == "stderr")
    assert stderr.count("\r") == 3 and "\033" not in stderr  # the bar redrew in place


def test_the_jupytext_route_shows_the_figures_too(figure_lesson, tmp_path):
    jupytext = pytest.importorskip("jupytext")
    notebook = jupytext.read(figure_lesson.path)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    (tmp_path / "run").mkdir()
    outputs = executed(notebook, tmp_path / "run")
    assert shown_images(outputs) == ["image/png", "image/svg+xml"]  # what the lesson shows itself


def test_there_is_one_in_notebook_and_a_kernel_shell_of_any_class_counts(monkeypatch):
    from minigrad.learn import kit

    assert kit.in_notebook is figures.in_notebook
    colab_like = type("Shell", (), {"kernel": object()})  # Colab's shell subclasses ipykernel's
    ipython = types.ModuleType("IPython")
    ipython.get_ipython = colab_like
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    assert figures.in_notebook()


def test_the_exercise_cell_of_a_generated_notebook_shows_its_verdict_once_in_a_kernel(figure_lesson,
                                                                                       tmp_path):
    root = figure_lesson.root
    (root / "exercises" / "05_figures.py").write_text(
        "def double(x):\n    raise NotImplementedError('double is not written yet')\n")
    (root / "checks" / "05_figures.py").write_text("def check(answers):\n    assert answers.double(2) == 4\n")
    nbformat = pytest.importorskip("nbformat")
    path = runner.write_notebook(figure_lesson, tmp_path / "nb")
    node = nbformat.read(path, as_version=4)
    assert node.cells[-1].source.endswith("minigrad.check(5, globals())")
    outputs = executed(node, path.parent)
    texts = [o.get("text", "") + o.get("data", {}).get("text/plain", "") for o in outputs]
    verdicts = [text for text in texts if "lesson 5 exercise" in text]
    assert len(verdicts) == 1 and "NOT ATTEMPTED\n  double is not written yet" in verdicts[0]


# ---- the learner's copies, found from wherever the notebook runs -------------------------------------

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def learner_folder(tmp_path, monkeypatch):
    """A learner's folder with the repository's lessons and no exercise folder set."""
    monkeypatch.setenv("MINIGRAD_LESSONS", str(REPO / "lessons"))
    for name in ("MINIGRAD_EXERCISES", "MINIGRAD_OUT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_notebook_written_for_a_lesson_records_where_the_copies_are_relative_to_itself(learner_folder):
    path = runner.write_notebook(runner.get_lesson(3), learner_folder / "minigrad-out")
    assert "notebook_setup(3, exercises='../minigrad-exercises')" in path.read_text()
    assert str(learner_folder) not in path.read_text()


def test_the_setup_cell_finds_the_copies_by_walking_up_and_says_where_it_looked(learner_folder, capsys,
                                                                                monkeypatch):
    from minigrad.learn.course import catalog, pieces
    from minigrad.learn.course.notebook import notebook_setup

    deep = learner_folder / "a" / "b"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    notebook_setup(3)  # nothing recorded, nothing found
    found = pieces.yours(3, announce=False)
    assert "you have not built yours yet" in found.reason
    first, second = deep / "minigrad-exercises", learner_folder / "a" / "minigrad-exercises"
    assert f"looked for the folder at {first}, {second}" in found.reason
    (learner_folder / "minigrad-exercises").mkdir()
    (learner_folder / "minigrad-exercises" / "03_lookup_is_matmul.py").write_text(
        runner.get_lesson(3).solution_path.read_text())
    notebook_setup(3)
    assert catalog.working_folder() == learner_folder / "minigrad-exercises" and not catalog.SEARCHED
    assert pieces.yours(3, announce=False).are_yours


def test_a_notebook_run_in_a_real_kernel_uses_the_learners_copy(learner_folder, monkeypatch):
    """`minigrad lesson 3 --notebook` then jupyter: the kernel runs in minigrad-out/, the copy is
    in minigrad-exercises/ beside it, and the lesson says it runs the learner's function."""
    nbformat = pytest.importorskip("nbformat")
    monkeypatch.setenv("MINIGRAD_SMALL", "1")
    (learner_folder / "minigrad-exercises").mkdir()
    (learner_folder / "minigrad-exercises" / "03_lookup_is_matmul.py").write_text(
        runner.get_lesson(3).solution_path.read_text())
    path = runner.write_notebook(runner.get_lesson(3), learner_folder / "minigrad-out")
    outputs = executed(nbformat.read(path, as_version=4), path.parent)
    printed = "".join(o.get("text", "") for o in outputs)
    copy = learner_folder / "minigrad-exercises" / "03_lookup_is_matmul.py"
    assert f"using your table_grad_from_one_hot ({copy})" in printed, printed[:3000]
