"""Chunk kernels for the dashboard tests (imported by the worker processes: the CLI cluster
puts the repository on their PYTHONPATH)."""

import os
import time


def gated(a, gate="", first=0, timeout=120.0):
    """``a + 1``; a chunk whose first value is ``first`` or more waits until the file
    ``gate`` exists (at most ``timeout``): the job runs its first chunks, then holds every
    worker thread, so that what it looks like while it runs stays still until the test lets
    it finish."""
    if a.size and a.flat[0] >= first:
        deadline = time.monotonic() + timeout
        while not os.path.exists(gate) and time.monotonic() < deadline:
            time.sleep(0.02)
    return a + 1


def slow(a, delay=0.05):
    """``a + 1`` after ``delay`` seconds: a job that runs for a while at a steady pace."""
    time.sleep(delay)
    return a + 1
