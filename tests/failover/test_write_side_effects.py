"""Writes under failover, on a real CLI cluster (``dask scheduler`` / ``dask worker --nanny``
with mars_dask): the worker process that is writing a file of ``to_parquet`` / ``to_csv`` is
SIGKILLed by pid in the middle of that write (the first worker process seen with a file of
the output directory open, in ``/proc/<pid>/fd``), the nanny restarts it and failover re-runs
the write.
Afterwards the output read back equals the input exactly, the directory holds the final
files and nothing else: no torn file, no duplicated rows, no temporary, no part.

Every wait is bounded; each test takes a few seconds on top of the cluster's start."""

from __future__ import annotations

import os
import re
import signal
import threading
import time

import pandas as pd
import pytest

import mars_dask.dataframe as md
import mars_dask.tensor as mt
from tests.worker.conftest import CLICluster

# a SIGKILLed worker process restarts in seconds here, but the machine is shared and slow
ENV = {"DASK_MARS_DASK__SCHEDULER__RESTART_GRACE": "60s"}
NCHUNKS, ROWS = 8, 150_000  # a write of one chunk takes ~0.1-0.3 s: long enough to be hit
TMP = re.compile(r"^\.(?P<name>.+)\.tmp-(?P<pid>\d+)-[0-9a-f]{8}$")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    path = tmp_path_factory.mktemp("writes")
    c = CLICluster(path, mars=True, n_workers=2, nthreads=1, memory_limit="3GiB", env=ENV)
    try:
        c.start()
        yield c
    finally:
        c.close()
        c.cleanup_dirs()


def _pid_gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")  # dead, not yet reaped
    except FileNotFoundError:
        return True


def _open_in(pid: int, out: str) -> list[str]:
    """The files under ``out`` that process ``pid`` has open."""
    found = []
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return found
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith(out + "/"):
            found.append(target[len(out) + 1:])
    return found


class KillAWriter(threading.Thread):
    """Watches the worker processes ``pids`` and SIGKILLs the first one that has a file
    under ``out`` open: it dies in the middle of writing that file.  The kill counts as
    mid-write when that file is still there afterwards (the process died before renaming
    it); if the write won the race, one more process is hit later (at most two kills)."""

    def __init__(self, out, pids, only=None):
        super().__init__(daemon=True)
        self.out, self.pids, self.only = str(out), set(pids), only
        self.stop = threading.Event()
        self.kills: list[dict] = []

    def run(self):
        while not self.stop.is_set() and len(self.kills) < 2:
            for pid in sorted(self.pids):
                files = [f for f in _open_in(pid, self.out) if "/" not in f]
                if not files or (self.only is not None and not any(self.only.match(f) for f in files)):
                    continue
                t = time.monotonic()
                os.kill(pid, signal.SIGKILL)
                self.pids.discard(pid)
                deadline = time.monotonic() + 10
                while not _pid_gone(pid) and time.monotonic() < deadline:
                    time.sleep(0.01)
                rec = {"pid": pid, "files": files, "t": t, "gone": _pid_gone(pid),
                       "mid_write": any(os.path.exists(os.path.join(self.out, f)) for f in files)}
                self.kills.append(rec)
                if rec["mid_write"]:
                    return
                break
            time.sleep(0.002)


def _frame():
    """A frame made on the workers (nothing large in the graph): 8 chunks of random ints."""
    x = mt.random.RandomState(7).randint(0, 1 << 40, size=(NCHUNKS * ROWS, 4), chunk_size=(ROWS, 4))
    return md.DataFrame(x, columns=["a", "b", "c", "d"])


def _write(t, how, out):
    if how == "parquet":
        t.to_parquet(str(out), compression="zstd")
    elif how == "csv-files":
        t.to_csv(str(out / "p-*.csv"), index=False)
    else:  # csv-one, csv-one-concat
        t.to_csv(str(out / "one.csv"), index=False)


def _expected_names(how):
    return {"parquet": [f"part.{i}.parquet" for i in range(NCHUNKS)],
            "csv-files": [f"p-{i}.csv" for i in range(NCHUNKS)], "csv-one": ["one.csv"],
            "csv-one-concat": ["one.csv"]}[how]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("how", ["parquet", "csv-files", "csv-one", "csv-one-concat"])
def test_worker_killed_mid_write(cluster, tmp_path, how):
    """``csv-one``: a single file, written as parts then concatenated, killed while writing
    a part; ``csv-one-concat``: killed while concatenating the parts into the file."""
    c = cluster
    c.client.wait_for_workers(c.n_workers, timeout=60)
    pids = set(c.client.run(os.getpid).values())
    out = tmp_path / "out"
    t = _frame()
    killer = KillAWriter(out, pids, only=re.compile(r"^\.one\.csv\.tmp-") if how == "csv-one-concat" else None)
    killer.start()
    t0 = time.monotonic()
    try:
        _write(t, how, out)
    finally:
        done = time.monotonic()
        killer.stop.set()
        killer.join(10)
    print(f"\n{how}: write {done - t0:.1f} s, kills {killer.kills}")
    assert killer.kills, "no write was caught in progress"
    assert all(k["gone"] and k["t"] < done for k in killer.kills), killer.kills
    assert any(k["mid_write"] for k in killer.kills), killer.kills

    # the directory: the final files, and nothing else (the orphaned temporary is removed)
    assert sorted(os.listdir(out)) == _expected_names(how)

    # read back: exactly the input (no torn file, no row twice)
    exp = _frame().execute().fetch()
    if how == "parquet":
        for i in range(NCHUNKS):
            pd.testing.assert_frame_equal(pd.read_parquet(out / f"part.{i}.parquet"),
                                          exp.iloc[i * ROWS:(i + 1) * ROWS])
        pd.testing.assert_frame_equal(pd.read_parquet(out), exp)
    elif how == "csv-files":
        got = pd.concat([pd.read_csv(out / f"p-{i}.csv") for i in range(NCHUNKS)], ignore_index=True)
        pd.testing.assert_frame_equal(got, exp)
    else:
        assert (out / "one.csv").read_bytes() == exp.to_csv(index=False).encode()
    # what the killed process was writing: a temporary (writes used to go to the final name)
    assert all(any(TMP.match(f) for f in k["files"]) for k in killer.kills), killer.kills
    c.client.wait_for_workers(c.n_workers, timeout=60)  # the nanny restarted the killed process
