"""The scheduler gives freed heap back to the OS after a large job (plugins/_trim.py)."""

from __future__ import annotations

import asyncio
import gc

import pytest

import mars_dask
from mars_dask.plugins._trim import TrimAfterForgetting, malloc_trim


def test_trim_once_after_a_burst_of_forgetting(monkeypatch):
    """One trim per burst, after it ends; none below the threshold; 0 disables it."""
    calls = []
    monkeypatch.setattr("mars_dask.plugins._trim.malloc_trim", lambda: calls.append(1) or True)

    async def main():
        loop = asyncio.get_running_loop()
        t = TrimAfterForgetting(loop, threshold=100, delay=0.05)
        off = TrimAfterForgetting(loop, threshold=0, delay=0.05)
        for _ in range(99):
            t.forgotten()
        await asyncio.sleep(0.2)
        assert calls == []  # below the threshold
        for _ in range(3):  # a burst over three delays: still one trim, at its end
            for _ in range(200):
                t.forgotten()
                off.forgotten()
            await asyncio.sleep(0.03)
        assert calls == []
        await asyncio.sleep(0.2)
        assert calls == [1] and t.trims == 1 and t.count == 0
        for _ in range(50):
            t.forgotten()
        await asyncio.sleep(0.2)
        assert calls == [1]  # the count starts again after a trim
        steady = TrimAfterForgetting(loop, threshold=10, delay=0.02, max_wait=0.1)
        t0 = loop.time()
        while loop.time() - t0 < 0.5:  # forgetting that never pauses (a long loop)
            steady.forgotten()
            await asyncio.sleep(0.005)
        assert steady.trims >= 2

    asyncio.run(main())


@pytest.mark.skipif(not malloc_trim(), reason="libc has no malloc_trim (not glibc)")
@pytest.mark.timeout(300)
def test_scheduler_rss_falls_after_a_large_job_is_dropped(cli_cluster):
    """A 5,000-chunk job, its handles dropped: every task is forgotten and the scheduler
    trims its heap by itself (measured RSS falls, as the trim's own before/after says)."""
    import mars_dask.tensor as mt

    c = cli_cluster(mars=True, n_workers=2, nthreads=1, env={"DASK_MARS_DASK__SCHEDULER__TRIM_AFTER_FORGOTTEN": "2000"})
    client = c.client

    def rss(dask_scheduler):
        import os

        import psutil

        return len(dask_scheduler.tasks), psutil.Process(os.getpid()).memory_info().rss

    y = mt.ones((5_000, 10), chunk_size=(1, 10))
    s = (y * 2 + 1).sum()
    mars_dask.execute(s)
    assert s.fetch() == 5_000 * 30
    n_held, rss_held = client.run_on_scheduler(rss)
    assert n_held >= 5_000
    del s, y
    gc.collect()
    c.wait(lambda: c.mars_stats()["malloc_trims"] >= 1, 60, "a malloc_trim after the job was dropped")
    n_after, rss_after = client.run_on_scheduler(rss)
    stats = c.mars_stats()
    assert n_after == 0
    assert stats["malloc_trim_freed"] > 0
    assert rss_after < rss_held, (rss_held / 2**20, rss_after / 2**20)
