"""Scheduler failover on a real CLI cluster (tests/worker/conftest.py, ``fixed_port=True``):
SIGKILL the scheduler by pid in the middle of ``execute()`` (and between two), start a new
one on the same address and journal directory, and the job completes with numpy's exact
answer; the workers (restarted by their nannies) bring back what their stores hold, which
the new scheduler's counting plugin shows was not executed again. Without a scheduler
coming back, ``execute()`` fails with a clear error within the configured time.

Every wait is bounded; the fixture kills every process it started."""

from __future__ import annotations

import time

import dask
import numpy as np
import pytest

import mars_dask
import mars_dask.tensor as mt
from mars_dask.errors import MarsDaskError
from mars_dask.tensor.arithmetic import elementwise
from tests.helpers import run_in_thread
from tests.worker import _kernels as K

# this machine is shared: a worker process can take seconds to start
ENV = {"DASK_MARS_DASK__SCHEDULER__RESTART_GRACE": "60s"}
REJOIN_TOPIC = "mars-worker-rejoin"


@pytest.fixture
def cluster(cli_cluster):
    def make(**kw):
        return cli_cluster(fixed_port=True, env={**ENV, **kw.pop("env", {})}, **kw)

    return make



def _keys(t) -> set[str]:
    return {str(c.key) for c in t.data.chunks}


def _adopted(client) -> int:
    """Results the restarted workers brought back from their stores (rejoin events)."""
    return sum(m.get("adopted") or 0 for _, m in client.get_events(REJOIN_TOPIC) if isinstance(m, dict))


def _restart_scheduler(cluster) -> None:
    cluster.start_scheduler()
    cluster.wait(lambda: cluster.client.status == "running", 60, "client reconnected")


@pytest.mark.timeout(240)
def test_scheduler_killed_mid_job_and_between_jobs(cluster):
    c = cluster(n_workers=2, nthreads=2)
    client = c.client

    # executed before the failover: its results live in the workers' stores
    x = mt.random.RandomState(7).rand(24, 20_000, chunk_size=(1, 20_000))
    mars_dask.execute(x)
    xv = x.fetch()
    xkeys = _keys(x)
    # execute(checkpoint=True): the outputs are emitted as lineage boundaries, which the
    # failover plugin writes to the checkpoint directory
    w = (x[:4] * 3).execute(checkpoint=True)
    assert all(ch.boundary == "checkpoint" for ch in w.data.chunks)
    np.testing.assert_array_equal(w.fetch(), xv[:4] * 3)
    if hasattr(mars_dask, "failover_report"):
        assert mars_dask.failover_report(client)["checkpoints_written"] >= len(w.data.chunks)

    # a job of 24 slow tasks (the elementwise kernel fuses into the per-row reduction)
    s = elementwise(K.slow_add_one, x, dtype=float, delay=0.25).sum(axis=1)
    t, box = run_in_thread(mars_dask.execute, s)
    before = xkeys | _keys(w)

    def job_done():  # job keys finished on the first scheduler
        return sum(1 for k in c.counts()["finished"] if k not in before)

    c.wait(lambda: job_done() >= 6, 60, "job progress")
    done_before = job_done()  # (at least: more may finish before the kill)

    t_kill = time.monotonic()
    c.kill_scheduler()
    time.sleep(0.5)  # the clients and workers notice the loss
    assert client.status != "running"
    _restart_scheduler(c)
    t.join(120)
    took = time.monotonic() - t_kill
    assert not t.is_alive(), "execute() did not finish after the failover\n" + c.logs()
    if "error" in box:
        raise box["error"]
    print(f"\nscheduler SIGKILL -> job done: {took:.1f} s")

    np.testing.assert_array_equal(s.fetch(), (xv + 1).sum(axis=1))
    # the new scheduler started empty: what it executed is what was not kept
    counts = c.counts()
    executed = counts["executed"]
    skeys = _keys(s)
    assert not xkeys & set(executed), "results of the earlier execute() were recomputed"
    re_run = sum(executed.get(k, 0) for k in skeys)
    print(f"job keys: {len(skeys)}, finished before the kill: >= {done_before}, re-executed by the "
          f"new scheduler: {re_run}; results rejoined from the worker stores: {_adopted(client)}")
    assert re_run <= len(skeys) - done_before, (re_run, done_before)
    assert _adopted(client) >= len(xkeys) + done_before
    # the earlier tileable is still there (fetch resubmits its lost Futures: reused)
    np.testing.assert_array_equal(x.fetch(), xv)
    assert not xkeys & set(c.counts()["executed"])

    # -- between two jobs: the scheduler dies while idle ---------------------------------
    adopted_before = _adopted(client)  # the next scheduler starts with no events
    t_kill = time.monotonic()
    c.kill_scheduler()
    time.sleep(0.5)
    _restart_scheduler(c)
    z = (s * 2 + x.sum(axis=1)).execute()  # built on both earlier results
    print(f"idle scheduler SIGKILL -> next job done: {time.monotonic() - t_kill:.1f} s")
    np.testing.assert_array_equal(z.fetch(), (xv + 1).sum(axis=1) * 2 + xv.sum(axis=1))
    executed = c.counts()["executed"]
    assert not (xkeys | skeys) & set(executed), "earlier results were recomputed"
    assert _adopted(client) >= len(xkeys) + len(skeys), adopted_before
    np.testing.assert_array_equal(s.fetch(), (xv + 1).sum(axis=1))
    # iterative tiling (unknown shapes) on results executed before the failover
    m = x[x > 0.9].execute()
    np.testing.assert_array_equal(m.fetch(), xv[xv > 0.9])
    assert not xkeys & set(c.counts()["executed"])


@pytest.mark.timeout(120)
def test_no_scheduler_comes_back(cluster):
    c = cluster(n_workers=1, nthreads=2,
                env={"DASK_MARS_DASK__WORKER__SCHEDULER_RECONNECT_TIMEOUT": "4s"})
    x = mt.ones((8, 1000), chunk_size=(1, 1000))
    mars_dask.execute(x)
    y = elementwise(K.slow_add_one, x, dtype=float, delay=1.0).sum()
    with dask.config.set({"mars-dask.session.reconnect-timeout": "3s"}):
        t, box = run_in_thread(mars_dask.execute, y)
        time.sleep(1.0)
        t0 = time.monotonic()
        c.kill_scheduler()
        t.join(30)
        waited = time.monotonic() - t0
    assert not t.is_alive(), "execute() hangs without a scheduler"
    assert isinstance(box.get("error"), MarsDaskError), box
    assert "reconnect" in str(box["error"])
    assert waited < 15, waited
    # the nanny gives up too (mars-dask.worker.scheduler-reconnect-timeout): `dask worker` exits
    workers = [p for p in c.procs if p is not c.scheduler_proc]
    c.wait(lambda: all(p.poll() is not None for p in workers), 40, "worker CLI exit")
    # the client would keep trying to reconnect for its own timeout (60 s): close it now
    client, c.client = c.client, None
    client.close(timeout=5)


@pytest.mark.timeout(120)
def test_embedded_cluster_keeps_its_nannies():
    """The embedded LocalCluster does not close a nanny whose worker is not back within
    distributed.deploy.lost-worker-timeout (Dask's LocalCluster does, and a job then hangs
    with fewer workers); a nanny that closed is replaced."""
    import asyncio
    import os
    import signal

    from distributed import Client

    from mars_dask.session import _EmbeddedCluster

    with dask.config.set({"distributed.deploy.lost-worker-timeout": "0.5s"}), \
            _EmbeddedCluster(n_workers=2, threads_per_worker=1, dashboard_address=None,
                             memory_limit="1GiB") as cluster, Client(cluster) as client:
        client.wait_for_workers(2, timeout=60)
        nannies = dict(cluster.workers)
        # a process takes longer than lost-worker-timeout to come back: Dask would close
        # its nanny 0.5 s after the loss
        _, pid = next(iter(client.run(os.getpid).items()))
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 60
        time.sleep(1.0)
        while len(client.scheduler_info()["workers"]) < 2:
            assert time.monotonic() < deadline, "the killed worker did not come back"
            time.sleep(0.1)
        assert dict(cluster.workers) == nannies
        assert all(n.status.name == "running" for n in nannies.values())
        # a nanny that closed for good is replaced
        name, nanny = next(iter(nannies.items()))
        asyncio.run_coroutine_threadsafe(nanny.close(), cluster.loop.asyncio_loop).result(30)
        while not (len(client.scheduler_info()["workers"]) == 2 and cluster.workers.get(name) not in (None, nanny)):
            assert time.monotonic() < deadline + 30, "the closed nanny was not replaced"
            time.sleep(0.2)


@pytest.mark.timeout(240)
def test_corrupt_journal_record_in_the_middle_after_a_scheduler_kill(cluster):
    """The scheduler is SIGKILLed; bytes in the middle of its journal segment are then
    overwritten. The restarted scheduler skips the damaged record(s), keeps every later
    intact one (it does not truncate the segment there), and jobs on the earlier results
    are exact."""
    import glob
    import os

    c = cluster(n_workers=1, nthreads=1)
    client = c.client
    x = mt.random.RandomState(3).rand(8, 2_000, chunk_size=(1, 2_000)).execute()
    y = (x + 1).execute()
    z = (y * 2).execute()
    w = (z - x).sum(axis=1).execute()
    xv = x.fetch()
    before = mars_dask.failover_report(client)["journal_entries"]
    assert before >= 4 * 8, before
    [segment] = glob.glob(str(c.tmp / "journal" / "*" / "segment-*.mdj"))
    c.kill_scheduler()
    size = os.path.getsize(segment)
    with open(segment, "r+b") as f:
        f.seek(size // 2)
        f.write(b"\xa5" * 48)  # a damaged record (or two) in the middle
    _restart_scheduler(c)
    after = mars_dask.failover_report(client)["journal_entries"]
    assert before - 4 <= after < before, (before, after)  # only the damaged ones are gone
    assert os.path.getsize(segment) >= size  # nothing after the damage was truncated away
    assert "skipped" in c.logs(20000) and "resynchronised" in c.logs(20000)
    r = (w + z.sum(axis=1) + y.sum(axis=1)).execute()
    np.testing.assert_allclose(r.fetch(), ((xv + 1) * 2 - xv).sum(axis=1) + ((xv + 1) * 2).sum(axis=1)
                               + (xv + 1).sum(axis=1), rtol=1e-12)
