"""A lab server for the lab's HTTP and browser tests."""

import threading

from minigrad.learn.lab.server import LabServer


def serving_lab():
    """A minigrad lab server on a free loopback port, served from a thread; shut down after.

    The lab's HTTP and browser tests each make one per module (`yield from serving_lab()`)."""
    lab = LabServer(port=0)
    thread = threading.Thread(target=lab.serve_forever, daemon=True)
    thread.start()
    yield lab
    lab.shutdown()
    lab.server_close()
