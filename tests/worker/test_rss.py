"""RSSReader: the figure psutil gives, for this process and another, and None once the
process is gone."""

import os
import signal
import subprocess
import sys

import numpy as np
import psutil
import pytest

from mars_dask.plugins._rss import RSSReader

pytestmark = pytest.mark.timeout(60)


def test_own_rss_follows_allocations():
    read = RSSReader()
    before = read()
    assert abs(before - psutil.Process().memory_info().rss) < 8 * 2**20
    a = np.ones(64 * 2**20, dtype=np.uint8)  # 64 MiB, touched
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
