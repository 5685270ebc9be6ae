"""A lab server for the lab's HTTP and browser tests, in this process or as `minigrad lab`."""

import contextlib
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from minigrad.learn.lab.server import LabServer

ROOT = Path(__file__).resolve().parents[2]


def serving_lab():
    """A minigrad lab server on a free loopback port, served from a thread; shut down after.

    The lab's HTTP and browser tests each make one per module (`yield from serving_lab()`)."""
    lab = LabServer(port=0)
    thread = threading.Thread(target=lab.serve_forever, daemon=True)
    thread.start()
    yield lab
    lab.shutdown()
    lab.server_close()


@contextlib.contextmanager
def lab_process():
    """`minigrad lab --port 0 --no-browser` as a process, once it says it is ready.

    Yields a dict: `url` (its first line), `port`; after the block, which ends it with Ctrl-C,
    also `returncode`, `out` (the rest of its output) and `err`."""
    process = subprocess.Popen([sys.executable, "-m", "minigrad.cli", "lab", "--port", "0", "--no-browser"],
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(ROOT)})
    try:
        url = process.stdout.readline().strip()
        lab = {"url": url, "port": int(url.rsplit(":", 1)[1].rstrip("/")) if ":" in url else None}
        seen = ""
        while "ready" not in seen:
            line = process.stdout.readline()
            if not line:
                break
            seen += line
        lab["ready"] = "ready" in seen
        yield lab
        process.send_signal(signal.SIGINT)
        lab["out"], lab["err"] = process.communicate(timeout=30)
        lab["returncode"] = process.returncode
    finally:
        if process.poll() is None:
            process.kill()
