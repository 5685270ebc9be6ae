"""A lesson's own code, run in its small mode, for the tests that take an effect out of its
pipeline (tests/lessons/test_lesson_NN_removals.py).

`Pipeline(N)` runs lesson N's code cells as the runner does (MINIGRAD_SMALL=1, figures into a
temporary folder, what the cells print kept aside), in one namespace, `.ns`. A test runs the
cells up to a measurement (`run_until`), takes an effect out of the lesson's own pipeline (decay
switched off, the tie broken, a table put back to its initial rows, the text shuffled, a run
stopped early: by replacing a name in `.ns` or calling the lesson's functions with other
arguments), runs the measuring cells again (`run_cell`), and hands what they measured to the
lesson's verdict check in minigrad/learn/kit/verdicts.py.
"""

from __future__ import annotations

import builtins
import contextlib
import io
import os
import tempfile
from pathlib import Path

from minigrad.learn import course

REPO = Path(__file__).resolve().parents[2]


class Pipeline:
    """Lesson `number`'s code cells and the namespace they run in (small mode unless small=False)."""

    def __init__(self, number: int, small: bool = True):
        lessons = {lesson.number: lesson for lesson in course.find_lessons(REPO / "lessons")}
        self.lesson = lessons[number]
        self.cells = [cell for cell in self.lesson.cells() if cell.kind == "code"]
        self.small = small
        self.done = 0  # cells run so far by run_until
        self.out = tempfile.mkdtemp(prefix=f"lesson-{number:02d}-")
        self.ns = {"__name__": "__main__", "__file__": str(self.lesson.path), "__builtins__": builtins}

    def find(self, marker: str) -> int:
        """The index of the first code cell whose source contains `marker`."""
        found = [i for i, cell in enumerate(self.cells) if marker in cell.source]
        assert found, f"lesson {self.lesson.number} has no code cell containing {marker!r}"
        return found[0]

    def run_until(self, marker: str | None = None) -> dict:
        """Run the cells not run yet, up to (not including) the first containing `marker` (to the
        end when None); returns the namespace."""
        stop = len(self.cells) if marker is None else self.find(marker)
        for index in range(self.done, stop):
            self._run(index)
        self.done = max(self.done, stop)
        return self.ns

    def run_cell(self, marker: str) -> dict:
        """Run the first cell containing `marker` (again), in the namespace as it is now."""
        self._run(self.find(marker))
        return self.ns

    def _run(self, index: int) -> None:
        cell = self.cells[index]
        code = compile("\n" * (cell.line - 1) + cell.source, str(self.lesson.path), "exec")
        with self.environment(), quiet():
            exec(code, self.ns)

    @contextlib.contextmanager
    def environment(self):
        keys = ("MINIGRAD_SMALL", "MINIGRAD_OUT", "MINIGRAD_RUNNER")
        saved = {key: os.environ.get(key) for key in keys}
        os.environ.update(MINIGRAD_OUT=self.out, MINIGRAD_RUNNER="1")
        if self.small:
            os.environ["MINIGRAD_SMALL"] = "1"
        else:
            os.environ.pop("MINIGRAD_SMALL", None)
        try:
            yield
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


@contextlib.contextmanager
def quiet():
    """Keep what lesson code prints (progress bars too) out of the test's output."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        yield


def fails_for(conditions: dict[str, bool], *fragments: str) -> None:
    """The verdict fails, and among its failed statements is one containing each fragment."""
    from minigrad.learn.kit import verdicts

    failed = verdicts.failures(conditions)
    assert failed, "the verdict held with the effect removed"
    for fragment in fragments:
        assert any(fragment in statement for statement in failed), f"{fragment!r} not among {failed}"


def holds(conditions: dict[str, bool], *fragments: str) -> None:
    """Every statement holds (or, with fragments, every statement containing one of them)."""
    from minigrad.learn.kit import verdicts

    failed = verdicts.failures(conditions)
    if fragments:
        named = [s for s in conditions if any(f in s for f in fragments)]
        assert len(named) >= len(fragments), f"{fragments} do not all name a statement of {list(conditions)}"
        failed = [s for s in failed if s in named]
    assert failed == [], failed
