"""The install command a message suggests: one that works, as written, for the Python running now.

minigrad is not published on a package index yet, so a hint never names a distribution to fetch
from one. It names the pip of the running interpreter (`.venv/bin/pip` in a checkout set up by
`make`, never a bare `pip` that may belong to another Python) and, for one of minigrad's extras:
- in a source checkout (an editable install, as `make` makes), the extra of this checkout:
  `.venv/bin/pip install -e ".[lessons]"`;
- anywhere else (`pip install .` from a clone, or a wheel), the extra's own requirements, read
  from the installed metadata: `pip install "matplotlib>=3.7" ...`.
"""

from __future__ import annotations

import re
import sys
from importlib import metadata
from pathlib import Path

DISTRIBUTION = "minigrad-tying"  # the name in pyproject.toml; the import name is `minigrad`


def _shown(path: Path) -> str:
    """`path` as the learner types it: relative to the current folder when inside it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def pip_command() -> str:
    """The pip of the running Python: `.venv/bin/pip` (the script beside the interpreter, relative
    to the current folder when it is inside it), else `<python> -m pip`."""
    python = Path(sys.executable)
    pip = python.with_name("pip.exe" if python.suffix == ".exe" else "pip")
    if pip.is_file():
        return _quoted(_shown(pip))
    return f"{_quoted(_shown(python))} -m pip"


def _quoted(text: str) -> str:
    return f'"{text}"' if re.search(r"\s", text) else text


def source_checkout() -> Path | None:
    """The clone minigrad runs from (the folder holding its pyproject.toml beside the `minigrad`
    package), or None for an installed copy."""
    root = Path(__file__).resolve().parents[2]
    pyproject = root / "pyproject.toml"
    try:
        text = pyproject.read_text(encoding="utf-8")
    except OSError:
        return None
    return root if f'name = "{DISTRIBUTION}"' in text else None


def extra_requirements(extra: str) -> list[str]:
    """The requirements minigrad's `extra` adds, from the installed metadata ([] when not installed)."""
    try:
        requires = metadata.requires(DISTRIBUTION) or []
    except metadata.PackageNotFoundError:
        return []
    marker = re.compile(r"""\s*;\s*extra\s*==\s*["']""" + re.escape(extra) + r"""["']\s*$""")
    return [marker.sub("", r) for r in requires if marker.search(r)]


def install_extra(extra: str) -> str:
    """The one command that installs minigrad's `extra` for this Python (see the module docstring)."""
    checkout = source_checkout()
    if checkout is not None:
        where = "." if checkout == Path.cwd().resolve() else _shown(checkout)
        return f'{pip_command()} install -e "{where}[{extra}]"'
    requirements = extra_requirements(extra)
    if not requirements:  # no metadata to read: say what to do from a clone
        return (f'{pip_command()} install "<your clone of minigrad>[{extra}]" (minigrad is not on a '
                "package index yet)")
    return install_packages(*requirements)


def install_packages(*requirements: str) -> str:
    """`<this pip> install "req" ...` for packages from the package index."""
    return f"{pip_command()} install " + " ".join(f'"{r}"' if re.search(r"[<>=!~\[ ]", r) else r
                                                  for r in requirements)
