"""One build step that pyproject.toml cannot say: ship the repository's `lessons/` folder inside the
package, as `minigrad/_lessons/`, so that `minigrad lesson N` works after a non-editable install
(`pip install .` or a wheel).

Why not `[tool.setuptools.package-dir]` ("minigrad._lessons" = "lessons")? That mapping makes every
editable install (`pip install -e .`, what `make` runs) use setuptools' import-hook strategy, which
prints an 11-line "Editable installation ... folders with the same name as your package" warning
through `pip --quiet`. Without the mapping the layout is plain, the editable install is a one-line
.pth file that puts this folder on sys.path, and the lessons are found where they are
(`minigrad.learn.catalog.lessons_root`). Everything else about the package is in pyproject.toml.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

LESSONS, INSIDE = Path("lessons"), Path("minigrad", "_lessons")


class build_py_with_lessons(build_py):
    """build_py, then lessons/**/*.py copied to <build>/minigrad/_lessons/ (not in editable mode:
    an editable install reads lessons/ in the checkout)."""

    def run(self) -> None:
        super().run()
        if not self.editable_mode:
            for source in self.lesson_files():
                target = Path(self.build_lib, INSIDE, source.relative_to(LESSONS))
                self.mkpath(str(target.parent))
                self.copy_file(str(source), str(target), preserve_mode=False)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        outputs = super().get_outputs(include_bytecode)
        if self.editable_mode:
            return outputs
        return outputs + [str(Path(self.build_lib, INSIDE, f.relative_to(LESSONS))) for f in self.lesson_files()]

    @staticmethod
    def lesson_files() -> list[Path]:
        return sorted(p for p in LESSONS.rglob("*.py") if "__pycache__" not in p.parts)


setup(cmdclass={"build_py": build_py_with_lessons})
