"""RSSReader: the figure psutil gives, for this process and another, and None once the
process is gone."""

import mmap
import os
import signal
import subprocess
import sys

import numpy as np
import psutil
import pytest

from mars_dask.plugins._rss import RSSReader

pytestmark = pytest.mark.timeout(60)



def _fresh_pages(n: int) -> np.ndarray:
    """``n`` bytes of ones in fresh private pages, unmapped when the array goes: not malloc,
    which in a long test process may hand back memory freed earlier that is still resident
    (RSS then does not move: seen after tests/tensor/test_random.py)."""
    a = np.frombuffer(mmap.mmap(-1, n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS), dtype=np.uint8)
    a[:] = 1
    return a

def test_own_rss_follows_allocations():
    read = RSSReader()
    before = read()
    assert abs(before - psutil.Process().memory_info().rss) < 8 * 2**20
    a = _fresh_pages(64 * 2**20)
    assert read() - before >= 60 * 2**20
    del a
    read.close()
    assert read() is None


def test_other_process_and_its_exit():
    p = subprocess.Popen([sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(60)"],
                         stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        read = RSSReader(p.pid)
        want = psutil.Process(p.pid).memory_info().rss
        assert abs(read() - want) <= 2**20  # a sleeping process: the figure psutil gives
    finally:
        os.kill(p.pid, signal.SIGKILL)
        p.wait(10)
    assert read() is None  # reaped: its /proc entry is gone
    read.close()


def test_no_such_process():
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait(10)
    with pytest.raises(psutil.NoSuchProcess):
        RSSReader(p.pid)


# -- the worker plugin's per-task sampler ----------------------------------------------


def test_sampler_measures_a_short_task_from_its_start_and_end():
    """A task shorter than the interval is never sampled by the thread: its figure comes
    from the reads at its start and end (the output it keeps is in RSS at its end)."""
    from mars_dask.plugins._worker import _Sampler

    s = _Sampler(interval=3600.0)
    try:
        s.start("k")
        a = _fresh_pages(64 * 2**20)
        used = s.stop("k")
        assert used >= 60 * 2**20, used
        assert s.stop("k") is None  # not running any more
        del a
    finally:
        s.close()


def test_sampler_catches_a_peak_inside_a_long_task_and_shares_it():
    """The thread samples while tasks run: a 64 MiB peak that is gone before the task ends
    is in its figure; growth while two tasks run is shared between them."""
    import time

    from mars_dask.plugins._worker import _Sampler

    s = _Sampler(interval=0.01)
    try:
        s.start("long")
        a = _fresh_pages(64 * 2**20)
        time.sleep(0.2)
        del a  # numpy returns a buffer this big to the OS at once
        time.sleep(0.05)
        assert s.stop("long") >= 60 * 2**20

        s.start("x")
        s.start("y")
        b = _fresh_pages(64 * 2**20)
        x, y = s.stop("x"), s.stop("y")
        assert x >= 30 * 2**20 and y >= 30 * 2**20 and x + y <= 80 * 2**20, (x, y)
        del b
    finally:
        s.close()


def test_sampler_thread_sleeps_while_no_task_runs():
    """Between busy periods the thread waits for the next start instead of waking every
    interval (each wake takes the GIL)."""
    import time

    from mars_dask.plugins._worker import _Sampler

    s = _Sampler(interval=0.005)
    try:
        s.start("k")
        s.stop("k")
        time.sleep(0.1)  # the thread notices the busy period is over
        calls = []
        orig = s._sample
        s._sample = lambda: (calls.append(1), orig())
        time.sleep(0.2)
        assert calls == []  # 40 intervals, no sample
        s.start("k2")
        time.sleep(0.1)
        assert len(calls) >= 3  # the start's read, then the thread's
        s.stop("k2")
    finally:
        s.close()
