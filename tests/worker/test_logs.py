"""What mars_dask logs where a user looks (issue 20), on real CLI clusters
(tests/worker/conftest.py: ``DASK_LOGGING__MARS_DASK=info``, each process's stderr in
``<tmp>/scheduler.log`` and ``<tmp>/worker-<i>.log``):

- a job without faults logs nothing at INFO (or above) from mars_dask, on the scheduler
  and on the workers and nannies, beyond their start-up lines;
- a worker lost logs two lines on the scheduler: the loss (which worker, why, what it held
  and was running) and the recovery plan (what was adopted from its restarted process,
  what is recomputed), whatever the path: a SIGKILLed process restarted by its nanny, or a
  node lost with its nanny.

Every wait is bounded; the cluster fixture kills what it started."""

from __future__ import annotations

import os
import re
import signal
import time
from collections import Counter

import numpy as np
import pytest

import mars_dask
import mars_dask.dataframe as md
import mars_dask.tensor as mt
from mars_dask.tensor.arithmetic import elementwise
from tests.helpers import NO_TAKE_OVER_ENV, run_in_thread
from tests.worker import _kernels as K

#: generous: a killed process is adopted as soon as it is back; a gone node at once
ENV = {"DASK_MARS_DASK__SCHEDULER__RESTART_GRACE": "60s"}
#: "<date> <time> - <logger> - <LEVEL> - <message>" (distributed.admin.log-format)
LINE = re.compile(r"^\S+ \S+ - (?P<logger>[\w.]+) - (?P<level>[A-Z]+) - (?P<msg>.*)$")
LEVELS = ("INFO", "WARNING", "ERROR", "CRITICAL")
#: start-up work that may log after the cluster is up (a sweep of dead clusters' leftovers
#: runs in a background thread when a store, nanny or scheduler starts)
STARTUP_LOGGERS = ("mars_dask.leftovers",)


class LogMark:
    """The mars_dask lines (INFO and above) that a cluster's processes logged since this mark
    was made: files are read from the offsets they had then."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.offsets = {f.name: f.stat().st_size for f in cluster.tmp.glob("*.log")}

    def lines(self, name_glob="*.log") -> list[tuple[str, str, str]]:
        """``(file, level, message)`` of every mars_dask line at INFO or above since the mark."""
        out = []
        for f in sorted(self.cluster.tmp.glob(name_glob)):
            with open(f, "rb") as fh:
                fh.seek(self.offsets.get(f.name, 0))
                text = fh.read().decode(errors="replace")
            for line in text.splitlines():
                m = LINE.match(line)
                if (m and m["logger"].startswith("mars_dask") and m["level"] in LEVELS
                        and not m["logger"].startswith(STARTUP_LOGGERS)):
                    out.append((f.name, m["level"], m["msg"]))
        return out

    def scheduler(self) -> list[str]:
        return [msg for _, level, msg in self.lines("scheduler.log") if level == "INFO"]


def _loss_and_recovery(mark, timeout=60) -> tuple[list[str], list[str]]:
    """The scheduler's loss and recovery lines since ``mark``, once both are there."""
    deadline = time.monotonic() + timeout
    while True:
        lines = mark.scheduler()
        lost = [m for m in lines if m.startswith("lost worker ")]
        rec = [m for m in lines if m.startswith("recovery for worker ")]
        if (lost and rec) or time.monotonic() > deadline:
            return lost, rec
        time.sleep(0.1)


def _wait_written(cluster, timeout=30):
    """Until no stored value waits for its write-behind (a SIGKILL before then loses it)."""
    def pending(dask_worker):
        st = dask_worker.data
        return sum(1 for k in list(st) if st.tier_of(k) == "pending") if hasattr(st, "tier_of") else 0

    cluster.wait(lambda: sum(cluster.client.run(pending).values()) == 0, timeout, "write-behind")


def _only_on(cluster, chunks) -> tuple[str, str, int]:
    """(name, address, results only it holds) of the worker holding most of ``chunks``."""
    who = cluster.client.who_has([c.future for c in chunks])
    per = Counter(next(iter(addrs)) for addrs in who.values() if len(addrs) == 1)
    addr, n = per.most_common(1)[0]
    return cluster.workers()[addr]["name"], addr, n


@pytest.mark.timeout(300)
def test_fault_free_jobs_log_nothing_at_info(cli_cluster):
    """Tensor and DataFrame jobs (shuffles with checkpointed map outputs, iterative tiling,
    ``execute(checkpoint=True)``, an iterative loop whose lineage is offloaded to the
    journal): no mars_dask line at INFO or above in any process's log after start-up."""
    import pandas as pd

    c = cli_cluster(mars=True, n_workers=2, nthreads=2, env=ENV)
    mark = LogMark(c)

    rs = np.random.RandomState(0)
    a = rs.rand(400, 300)
    x = mt.tensor(a, chunk_size=100)
    np.testing.assert_allclose(((x + 1) * 2).sum(axis=0).execute().fetch(), ((a + 1) * 2).sum(axis=0))
    np.testing.assert_allclose(x[x > 0.9].execute().fetch(), a[a > 0.9])
    np.testing.assert_allclose((x.T @ x).execute(checkpoint=True).fetch(), a.T @ a)

    df = pd.DataFrame({"k": rs.randint(0, 50, 2000), "v": rs.rand(2000), "w": rs.randint(0, 9, 2000)})
    other = pd.DataFrame({"k": np.arange(50), "name": [f"n{i}" for i in range(50)]})
    mdf = md.DataFrame(df, chunk_size=300)
    got = mdf.groupby("k").agg({"v": "sum", "w": "max"}).execute().fetch()
    pd.testing.assert_frame_equal(got.sort_index(), df.groupby("k").agg({"v": "sum", "w": "max"}).sort_index())
    merged = mdf.merge(md.DataFrame(other, chunk_size=20), on="k", method="shuffle").execute().fetch()
    assert len(merged) == len(df.merge(other, on="k"))
    srt = mdf.sort_values("v").execute().fetch()
    np.testing.assert_array_equal(srt["v"].to_numpy(), np.sort(df["v"].to_numpy()))

    y = mt.ones((40, 40), chunk_size=20).execute()
    for _ in range(10):
        y = (y + 1).execute()
    np.testing.assert_array_equal(y.fetch(), np.full((40, 40), 11.0))

    time.sleep(2)  # write-behind, checkpoints and journal writes of the last job
    stats = c.mars_stats()
    assert stats["failover"]["worker_losses"] == 0, stats["failover"]
    assert stats["failover"]["checkpoints_written"] > 0  # the shuffles' checkpoints ran, quietly
    assert mark.lines() == [], "\n".join(map(str, mark.lines()))


@pytest.mark.timeout(300)
def test_sigkilled_worker_process_logs_one_loss_and_one_recovery_line(cli_cluster):
    """A worker process SIGKILLed after a job whose results it holds: its nanny restarts it
    and the scheduler adopts the results from the store. The scheduler logs one line for
    the loss (address, signal, results held) and one for the recovery (as many adopted as
    the restart counters say, nothing recomputed); the result is numpy's. The cluster runs
    with the default logging (no ``logging:`` setting for mars_dask): the lines show where
    distributed's do."""
    c = cli_cluster(mars=True, n_workers=2, nthreads=2,
                    env={**ENV, **NO_TAKE_OVER_ENV, "DASK_LOGGING__MARS_DASK": None})
    x = mt.random.rand(32, 5_000, chunk_size=(1, 5_000))
    mars_dask.execute(x)
    xv = x.fetch()
    _wait_written(c)
    name, addr, only_there = _only_on(c, x.data.chunks)
    assert only_there >= 4
    before = c.mars_stats()
    mark = LogMark(c)

    c.kill_worker_process(name)
    lost, rec = _loss_and_recovery(mark)
    new_addr, _ = c.worker_by_name(name)
    assert new_addr != addr
    np.testing.assert_allclose((x + 1).sum().execute().fetch(), (xv + 1).sum())
    np.testing.assert_array_equal(x.fetch(), xv)

    stats = c.mars_stats()
    adopted = stats["adopted"] - before["adopted"]
    assert adopted == only_there, (adopted, only_there)
    assert stats["recomputed"] == before["recomputed"]
    assert stats["failover"]["worker_losses"] == 1
    # the failover plugin's figures agree: nothing recomputed, the restart is an event
    assert stats["failover"]["recomputed"] == before["failover"]["recomputed"], stats["failover"]
    restarts = [e for e in stats["failover"]["events"] if e["action"] == "restart-adopted"]
    assert [(e["worker"], e["n"]) for e in restarts] == [(addr, adopted)], restarts
    assert stats["failover"]["recoveries"][-1]["adopted"] == adopted
    lines = mark.scheduler()  # after the next job too: nothing more
    lost = [m for m in lines if m.startswith("lost worker ")]
    rec = [m for m in lines if m.startswith("recovery for worker ")]
    assert len(lost) == 1 and len(rec) == 1 and len(lines) == 2, "\n".join(lines)
    assert lost[0].startswith(f"lost worker {addr} ({name}): killed by signal 9 (SIGKILL); its nanny restarts it;"), lost
    assert f"it held {only_there} results no other worker has and was running 0 tasks" in lost[0], lost
    assert re.search(rf"^recovery for worker {re.escape(addr)} \({name}\): adopted {adopted} results of its "
                     rf"restarted process {re.escape(new_addr)} after [\d.]+ s; nothing recomputed$", rec[0]), rec
    # the nanny's and the worker's logs: one line, the results recovered from the store
    others = [(f, lvl, m) for f, lvl, m in mark.lines() if f != "scheduler.log"]
    assert [m for _, _, m in others] == [f"recovered {adopted} results from the store of the previous process "
                                         f"(0 dropped)"], others


@pytest.mark.timeout(300)
def test_sigkill_during_a_job_logs_one_loss_and_one_recovery_line(cli_cluster):
    """The same kill while the worker runs tasks of a job over results it holds: still one
    loss line (with what it was running) and one recovery line (the held results adopted,
    the tasks it was running run again, not blamed: an external kill)."""
    c = cli_cluster(mars=True, n_workers=2, nthreads=2, env=ENV)
    x = mt.random.rand(32, 5_000, chunk_size=(1, 5_000))
    mars_dask.execute(x)
    xv = x.fetch()
    xkeys = {str(ch.key) for ch in x.data.chunks}
    _wait_written(c)
    name, addr, only_there = _only_on(c, x.data.chunks)
    before = c.mars_stats()
    mark = LogMark(c)

    s = elementwise(K.slow_add_one, x, dtype=float, delay=0.3).sum()
    t, box = run_in_thread(mars_dask.execute, s)
    c.wait(lambda: sum(v for k, v in c.counts()["finished"].items() if k not in xkeys) >= 4, 60, "job progress")
    c.kill_worker_process(name)
    t.join(180)
    assert not t.is_alive(), "job did not finish\n" + c.logs()
    if "error" in box:
        raise box["error"]
    np.testing.assert_allclose(s.fetch(), (xv + 1).sum())

    lost, rec = _loss_and_recovery(mark)
    stats = c.mars_stats()
    adopted = stats["adopted"] - before["adopted"]
    assert adopted >= 1
    lines = mark.scheduler()
    assert len(lost) == 1 and len(rec) == 1 and len(lines) == 2, "\n".join(lines)
    assert lost[0].startswith(f"lost worker {addr} ({name}): killed by signal 9 (SIGKILL); its nanny restarts it;"), lost
    running = int(re.search(r"was running (\d+) tasks", lost[0])[1])
    assert 1 <= running, lost
    # the other worker on this node gave them back from the dead process's store at once
    # (mars-dask.scheduler.restart-take-over), before the restarted process could
    assert stats["taken_over"] - before["taken_over"] == adopted
    other = next(a for a in c.workers() if a != addr and c.workers()[a]["name"] != name)
    assert f"recovery for worker {addr} ({name}): adopted {adopted} results taken over from its store by worker {other} " in rec[0], rec
    assert re.search(rf"re-running the {running} tasks it was running", rec[0]), (lost, rec)
    assert [m for f, lvl, m in mark.lines() if lvl != "INFO" or f == "scheduler.log" and m not in lines] == []


@pytest.mark.timeout(300)
def test_node_lost_for_good_logs_one_loss_and_one_recovery_line(cli_cluster):
    """A worker whose nanny is gone too: one loss line (its nanny does not answer: lost for
    good) and one recovery line (as many recomputed as the restart counters say)."""
    c = cli_cluster(mars=True, n_workers=2, nthreads=2, env={**ENV, **NO_TAKE_OVER_ENV})
    x = mt.random.rand(16, 1000, chunk_size=(1, 1000))
    mars_dask.execute(x)
    xv = x.fetch()
    name, addr, only_there = _only_on(c, x.data.chunks)
    before = c.mars_stats()
    mark = LogMark(c)

    # both pids first: a worker whose nanny is gone may exit before it answers a run()
    nanny_pid, worker_pid = c.pids(addr)
    os.kill(nanny_pid, signal.SIGKILL)  # first: a nanny killed second may start a replacement
    try:
        os.kill(worker_pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    lost, rec = _loss_and_recovery(mark)
    np.testing.assert_array_equal(x.fetch(), xv)
    np.testing.assert_allclose((x * 2).sum().execute().fetch(), (xv * 2).sum())

    stats = c.mars_stats()
    recomputed = stats["recomputed"] - before["recomputed"]
    assert recomputed == only_there and stats["adopted"] == before["adopted"]
    lines = mark.scheduler()
    assert len(lost) == 1 and len(rec) == 1 and len(lines) == 2, "\n".join(lines)
    assert lost[0].startswith(f"lost worker {addr} ({name}): its nanny "), lost
    assert "lost for good" in lost[0] and f"it held {only_there} results no other worker has" in lost[0], lost
    assert rec[0] == (f"recovery for worker {addr} ({name}): recomputing {recomputed} keys "
                      f"(0 from checkpoints, 0 from the journal)"), rec
