"""Record PyTorch's answers to the tests' comparisons in tests/oracle_recordings/ (needs torch).

    python scripts/record_oracle.py                  # every comparison: each module's file rewritten
                                                     # from scratch, files of modules gone removed
    python scripts/record_oracle.py tests/nn/test_llama.py -k float32   # these tests: their answers
                                                     # merged into the files that are there
    python scripts/record_oracle.py --fresh tests/nn/test_llama.py      # these modules' files
                                                     # rewritten from scratch (run them whole)

The tests run as usual (minigrad's side is compared with torch's), with MINIGRAD_ORACLE=record-all
or =record, and conftest.py writes the files when the session ends. Without torch the same tests
compare against these files (tests/helpers/oracle.py). Commit the files with the change that
needed them; their total size is printed (tests/test_oracle.py keeps it under a budget).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TORCH = "torch==2.13.0"  # the version the recordings were made with
RECORDINGS = ROOT / "tests" / "oracle_recordings"


def modules_asking_the_oracle() -> list[Path]:
    """Test files with a test that takes the `oracle` fixture (or a helper handed it)."""
    return sorted(p for p in (ROOT / "tests").rglob("test_*.py")
                  if re.search(r"\boracle\b", p.read_text(encoding="utf-8")) and p.name != "test_oracle.py")


def main(argv: list[str]) -> int:
    try:
        import torch
    except ImportError:
        from minigrad.tools.install_hint import install_packages  # this Python's pip, not a bare `pip`

        print(f"record_oracle: PyTorch is not installed here; install it ({install_packages(TORCH)}) and "
              "run again", file=sys.stderr)
        return 2
    fresh = "--fresh" in argv
    argv = [a for a in argv if a != "--fresh"]
    everything = not argv
    files = modules_asking_the_oracle()
    targets = [str(p.relative_to(ROOT)) for p in files] if everything else argv
    env = {**os.environ, "MINIGRAD_ORACLE": "record-all" if everything or fresh else "record"}
    print(f"recording with torch {torch.__version__}: {len(targets) if everything else 'the given'} test "
          f"{'modules' if everything else 'selection'}")
    status = subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *targets],
                             cwd=ROOT, env=env)
    if everything:
        kept = {p.stem for p in files}
        for stale in RECORDINGS.glob("*.npz"):
            if stale.stem not in kept:
                stale.unlink()
                print(f"removed {stale.relative_to(ROOT)}: no test module of that name asks the oracle")
    sizes = {p.name: p.stat().st_size for p in sorted(RECORDINGS.glob("*.npz"))}
    for name, size in sizes.items():
        print(f"{size / 1024:8.1f} KiB  {name}")
    print(f"{sum(sizes.values()) / 1024:8.1f} KiB  in {len(sizes)} files")
    if status:
        print(f"record_oracle: pytest exited with {status}: a test failed; its answers were recorded as "
              "far as it ran", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
