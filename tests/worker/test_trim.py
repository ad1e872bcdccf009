"""The scheduler gives freed heap back to the OS after a large job (plugins/_trim.py)."""

from __future__ import annotations

import asyncio
import gc
import time

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


def _live_blocks(dask_scheduler):
    """Blocks Python's allocators hold for live objects on the scheduler (after a
    collection), without the test harness's counting plugin (it keeps a record per key)."""
    import gc
    import sys

    from tests.worker._counting import NAME

    counting = dask_scheduler.plugins.get(NAME)
    if counting is not None:
        counting.__init__()
    gc.collect()
    return len(dask_scheduler.tasks), sys.getallocatedblocks()


def test_nothing_of_a_dropped_job_stays_alive_on_the_scheduler(cli_cluster):
    """After a 5,000-chunk job (10,000 tasks) is dropped, the scheduler's live heap is back
    where it was before it (measured +500 to +1,600 blocks, with the CPU loaded or not: Dask's
    history of computations, bounded at 100). The failover journal's writer once kept its last
    write, the offload of all the job's keys, alive until the next job (+13,000 blocks here).

    Dask's bounded logs are cut to 10 entries here (they are not the job): at their defaults
    what they hold depends on timing, not on what the job left. The logs of recent messages
    keep their last 1,000 batches, and how many keys a ``free-keys`` batch lists depends on
    load. The system monitor keeps up to an hour of samples, which grow with the test's
    wall time. Together they measured +900 to +8,000 blocks, and failed CI once at +8,018."""
    import mars_dask.tensor as mt

    bounded_logs = {"DASK_DISTRIBUTED__ADMIN__LOW_LEVEL_LOG_LENGTH": "10",
                    "DASK_DISTRIBUTED__ADMIN__LOG_LENGTH": "10",
                    "DASK_DISTRIBUTED__ADMIN__SYSTEM_MONITOR__LOG_LENGTH": "10"}
    c = cli_cluster(mars=True, n_workers=2, nthreads=1,
                    env={"DASK_MARS_DASK__SCHEDULER__TRIM_AFTER_FORGOTTEN": "2000", **bounded_logs})
    client = c.client

    def job(n):
        y = mt.ones((n, 10), chunk_size=(1, 10))
        s = (y * 2 + 1).sum()
        mars_dask.execute(s, show_progress=False)
        assert s.fetch() == n * 30

    job(3_000)  # a first job imports what the scheduler needs for this kind of work
    gc.collect()  # (a tileable graph has reference cycles)
    c.wait(lambda: c.mars_stats()["malloc_trims"] >= 1, 60, "a malloc_trim after the first job")
    n0, before = client.run_on_scheduler(_live_blocks)
    assert n0 == 0
    trims = c.mars_stats()["malloc_trims"]
    job(5_000)
    gc.collect()
    c.wait(lambda: c.mars_stats()["malloc_trims"] > trims, 60, "a malloc_trim after the job was dropped")
    n1, after = client.run_on_scheduler(_live_blocks)
    assert n1 == 0
    assert after - before < 8_000, (before, after)


def _logged_recipes_and_rss(dask_scheduler):
    """How many messages in the scheduler's logs of recent messages still carry a recipe,
    and the scheduler's RSS."""
    import os

    import psutil

    n = 0
    for bcomm in [*dask_scheduler.stream_comms.values(), *dask_scheduler.client_comms.values()]:
        for payload in bcomm.recent_message_log:
            if isinstance(payload, list):
                n += sum(1 for m in payload if isinstance(m, dict) and "run_spec" in m)
    return n, psutil.Process(os.getpid()).memory_info().rss


def test_data_embedded_in_a_dropped_job_leaves_the_scheduler(cli_cluster):
    """A job whose graph embeds 64 MB of numpy data: while it is held, the recipes sent
    to the workers sit in Dask's logs of recent messages (with the data); once its handles
    are dropped, the trim strips the logs and the scheduler's RSS falls by most of the
    data (plain Dask keeps it until 1,000 later batches push it out)."""
    import numpy as np

    import mars_dask.tensor as mt

    c = cli_cluster(mars=True, n_workers=2, nthreads=1, env={"DASK_MARS_DASK__SCHEDULER__TRIM_AFTER_FORGOTTEN": "100"})
    client = c.client
    data = np.random.default_rng(0).random((8_000, 1_000))  # 400 chunks of 160 KB
    y = mt.tensor(data, chunk_size=(20, 1_000))
    s = (y * 2 + 1).sum()
    mars_dask.execute(s)
    assert s.fetch() == pytest.approx((data * 2 + 1).sum(), rel=1e-12)
    logged_held, rss_held = client.run_on_scheduler(_logged_recipes_and_rss)
    assert logged_held >= 400  # the data's recipes, sent to the workers, are in the logs
    trims = c.mars_stats()["malloc_trims"]
    del s, y
    gc.collect()
    c.wait(lambda: c.mars_stats()["malloc_trims"] > trims, 60, "a malloc_trim after the job was dropped")
    logged_after, rss_after = client.run_on_scheduler(_logged_recipes_and_rss)
    assert logged_after == 0
    assert rss_held - rss_after > 0.5 * data.nbytes, (rss_held / 2**20, rss_after / 2**20)


def _inc(x):
    return x + 1


def test_spans_of_finished_graphs_are_pruned():
    """Dask keeps a span per submitted graph for ever; prune_spans forgets those of finished
    graphs beyond the newest ``keep`` (never one whose tasks are still held), and the
    scheduler goes on working (later graphs, heartbeats reporting span metrics)."""
    from distributed import Client, LocalCluster

    from mars_dask import _dask_internals as DI

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        held = client.submit(_inc, 1, key="held-1")
        assert held.result() == 2
        for i in range(30):  # one task group per graph: a group still known joins its span
            assert client.submit(_inc, i, key=f"done{i}x-0").result() == i + 1

        def count(dask_scheduler):
            return len(dask_scheduler.tasks), len(dask_scheduler.extensions["spans"].spans)

        deadline = time.monotonic() + 10
        while count_now := client.run_on_scheduler(count):
            if count_now[0] == 1 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        n_tasks, n_spans = count_now
        assert n_tasks == 1 and n_spans >= 20  # Dask shares a default span between overlapping graphs

        def prune(dask_scheduler):  # min_age 0: heartbeats may still report pruned spans
            pruned = DI.prune_spans(dask_scheduler, keep=2, min_age=0)
            ext = dask_scheduler.extensions["spans"]
            held_span = dask_scheduler.tasks["held-1"].group.span_id
            live = {i for i, sp in ext.spans.items() if sp.id == i}  # the others: one stand-in
            return (pruned, len(live), held_span in live, sum(map(len, ext.spans_search_by_tag.values())),
                    len({id(sp) for i, sp in ext.spans.items() if sp.id != i}))

        pruned, left, held_kept, indexed, stand_ins = client.run_on_scheduler(prune)
        assert pruned >= n_spans - 3 and left <= 3 and held_kept and indexed == left and stand_ins == 1
        assert client.submit(_inc, 41, key="after-1").result() == 42
        time.sleep(1.5)  # heartbeats with span metrics come and find their spans
        assert client.submit(_inc, 42, key="after-2").result() == 43
        assert held.result() == 2
