"""Chunk kernels for the worker tests (importable by the worker processes)."""

import time

import numpy as np


def slow_add_one(a, delay=0.1):
    time.sleep(delay)
    return a + 1


def hog(a, nbytes=0, hold=0.3):
    """Allocate and touch ``nbytes`` temporarily (as a kernel with a big temporary)."""
    if nbytes:
        buf = np.ones(int(nbytes), dtype=np.uint8)
        time.sleep(hold)
        del buf
    return a + 1


def creep(a, nbytes=0, step=64 * 2**20, pause=0.02):
    """Grow to ``nbytes`` gradually (so that the nanny's memory monitor sees it)."""
    parts = []
    total = 0
    while total < nbytes:
        parts.append(np.ones(step, dtype=np.uint8))
        total += step
        time.sleep(pause)
    time.sleep(1.0)
    return a + 1


def oom_or_wait(a, nbytes=0, path="", timeout=60.0):
    """The chunk holding 0 grows beyond the worker's memory limit; the others wait until
    ``path`` exists (the test creates it once the worker died), so they are running when
    the culprit first kills the worker, and finish at once when retried."""
    import os

    if a.size and a.flat[0] == 0:
        return creep(a, nbytes)
    deadline = time.monotonic() + timeout
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.05)
    return a + 1


def block(a, delay=2.0):
    time.sleep(delay)
    return a


def sleep_then(delay, value):
    time.sleep(delay)
    return value


def record_then_add_one(a, path="", delay=0.5):
    """A side effect: append the chunk's first value to ``path``, then wait and add one."""
    with open(path, "a") as f:
        f.write(f"{int(a.flat[0])}\n")
    time.sleep(delay)
    return a + 1


def slow_demean(s, delay=0.03):
    """A per-group function that costs ``delay`` seconds (a slow ``groupby.transform``)."""
    time.sleep(delay)
    return s - s.mean()
