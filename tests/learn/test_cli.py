"""The `minigrad` command itself: --version, and output cut short by a closed pipe."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import pytest

import minigrad
from minigrad import cli

REPO = Path(__file__).resolve().parents[2]


def test_version_is_the_packages_and_written_once(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == f"minigrad {minigrad.__version__}\n"
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert "version" not in project and "version" in project["dynamic"]  # read from minigrad.__version__
    distribution = importlib.metadata.packages_distributions().get("minigrad", [])
    if distribution:  # installed (editable or not): the metadata agrees
        assert importlib.metadata.version(distribution[0]) == minigrad.__version__


def test_a_closed_pipe_ends_quietly(tmp_path):
    """`minigrad lessons | head`: the reader goes away; no BrokenPipeError traceback."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # every write to the pipe now fails with EPIPE
    try:
        done = subprocess.run([sys.executable, "-m", "minigrad.cli", "lessons"], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, cwd=tmp_path, timeout=300)
    finally:
        os.close(write_end)
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
    assert done.returncode == 1
