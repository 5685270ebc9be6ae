import os
import signal
import sys
import tempfile
import threading
from pathlib import Path

# Verdicts `minigrad check` remembers for `minigrad lessons` go to a folder of this run, not the
# user's cache (the processes the tests start inherit it).
os.environ.setdefault("MINIGRAD_CACHE", tempfile.mkdtemp(prefix="minigrad-test-cache-"))

# Shared test helpers (tiny_lm, seed_bridge, lab_server, learner_copies, nanogpt_torch, llama_torch,
# op_checks, oracle) live in tests/helpers/, importable by name from every test folder.
sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))

import numpy as np
import oracle as torch_oracle
import pytest
from hypothesis import settings

# Few examples per property: every op is gradchecked on every element, which is costly.
settings.register_profile("minigrad", max_examples=15, deadline=None)
settings.load_profile("minigrad")


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture
def oracle(request):
    """PyTorch's answers for this test module: computed where torch is installed (and checked
    against the recording), read from tests/oracle_recordings/ where it is not (helpers/oracle.py)."""
    return torch_oracle.Oracle(request.path.stem)


def pytest_sessionfinish(session, exitstatus):
    """A recording session (scripts/record_oracle.py) writes what it recorded."""
    for path in torch_oracle.write_recordings():
        print(f"\nrecorded {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path}")


@pytest.fixture
def small_row_blocks(monkeypatch):
    """The fast kernels' row blocks on tiny arrays: blocks of 120 bytes (3 rows of 5 float64, at
    least one row), run on two threads from any size on, so small tests take the threaded path."""
    from minigrad.engine.kernels import fast

    monkeypatch.setattr(fast, "ROW_BLOCK_BYTES", 3 * 5 * 8)
    monkeypatch.setattr(fast, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(fast, "ROWWISE_PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(fast, "threads", 2)


@pytest.fixture(params=["fast kernels", "plain kernels"])
def fast_and_plain(request):
    """Run the test twice: with the kernels chosen by default (the fast ones, unless
    MINIGRAD_FAST_KERNELS=0), and with the plain ones."""
    from minigrad.engine import kernels

    if request.param == "plain kernels":
        with kernels.plain_only():
            yield request.param
    else:
        yield request.param


# `make test-quick` (pytest -m "not slow") leaves these out: whole lessons run end to end (on minigrad's
# pieces and on the learner's), notebooks in a real kernel, a real browser, building the sdist.
# `make test` runs everything.
SLOW_FILES = {"test_lab_browser.py", "test_notebooks.py", "test_packaging.py",
              "test_lessons_run_your_pieces.py", "test_model_pieces.py"}
SLOW_TESTS = ("test_lesson_runs_headless_through_the_runner", "test_lesson_runs_as_a_plain_script")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in SLOW_FILES or item.name.startswith(SLOW_TESTS):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _forget_where_a_notebook_searched():
    """A notebook run remembers where it looked for the exercise folder (catalog.SEARCHED, for
    `yours(N)`'s message): no test may inherit that from one that ran before it."""
    yield
    catalog = sys.modules.get("minigrad.learn.course.catalog")
    if catalog is not None:
        catalog.SEARCHED.clear()


@pytest.fixture(autouse=True)
def _ctrl_c_interrupts():
    """Tests that press Ctrl-C (on the lab, on a check) need it to interrupt. A suite started as a
    background job inherits SIGINT ignored, and so would every process it starts: give it back
    Python's own handler (a child then starts with the default and makes its KeyboardInterrupt)."""
    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
