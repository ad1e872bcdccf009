"""Leftovers of dead clusters (mars_dask/_leftovers.py, mars_dask/cleanup.py; issue 16,
part 2): directory locks, the sweeps a new store / nanny runs, ``python -m
mars_dask.cleanup``, and the crash leak on a real CLI cluster (tests/worker/conftest.py):
SIGKILL a whole cluster holding 0.5 GiB (1 GiB with --runslow), start another one on the
same store roots, and the dead one's directories are gone within its start-up.

Every wait is bounded; every root is a unique directory of the test's own."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import mars_dask
import mars_dask.tensor as mt
from mars_dask import _leftovers as L
from mars_dask.spill import MarsStore, purge_store
from mars_dask.spill._store import _safe
from tests.worker.conftest import REPO, CLICluster

GiB = 2**30
HOUR = 3600.0


@pytest.fixture
def roots(store_dirs):
    return store_dirs

def _files(*dirs) -> list[str]:
    return sorted(os.path.join(d, f) for r in dirs for d, _, fs in os.walk(r) for f in fs)


def _du(*dirs) -> int:
    return sum(os.lstat(f).st_blocks * 512 for f in _files(*dirs))


def _plant(path, nbytes=4096, age=0.0, marked=True) -> str:
    """A directory with one file; ``marked``: made by a version that locks (held once and
    let go: what a SIGKILL leaves), else a plain 0700 directory (an older version's);
    ``age``: its files' and its own mtime that many seconds ago."""
    if marked:
        L.hold_dir(path).release()
    else:
        os.makedirs(path, mode=0o700)
    f = os.path.join(path, "x.mds")
    with open(f, "wb") as fh:
        fh.write(b"\1" * nbytes)
    if age:
        t = time.time() - age
        os.utime(f, (t, t))
        os.utime(path, (t, t))
    return path


def _join_sweeps(timeout=30):
    for t in threading.enumerate():
        if t.name == "mars-dask-sweep":
            t.join(timeout)
            assert not t.is_alive(), "a sweep did not finish"


# -- locks ----------------------------------------------------------------------------------
def test_lock_protocol(tmp_path):
    """A held directory cannot be removed (by another process either); once let go it
    is removed through a tombstone; a holder whose directory was removed notices it, and
    holding again makes a new one."""
    d = str(tmp_path / "root" / "cluster" / "w0")
    lock = L.hold_dir(d)
    st = os.stat(d)
    assert stat.S_IMODE(st.st_mode) == 0o700 | stat.S_ISVTX and st.st_uid == os.geteuid()
    assert lock.held and lock.valid() and L.is_locked(d)
    assert L.remove_if_unused(d)[:2] == (False, "locked")
    probe = subprocess.run([sys.executable, "-c", "import sys; from mars_dask import _leftovers as L; "
                            f"sys.exit(0 if L.remove_if_unused({d!r})[1] == 'locked' else 1)"],
                           cwd=str(REPO), timeout=60)
    assert probe.returncode == 0  # another process sees the lock as well
    second = L.hold_dir(d)  # owners share the lock (the worker and its nanny)
    lock.release()
    assert L.is_locked(d) and L.remove_if_unused(d)[1] == "locked"
    second.release()
    assert not L.is_locked(d)
    removed, why, size = L.remove_if_unused(d, measure=True)
    assert removed and size == 0 and not os.path.exists(d)
    assert os.listdir(os.path.dirname(d)) == []  # the tombstone is gone too
    assert not second.valid()
    again = L.hold_dir(d)
    assert again.valid() and os.path.isdir(d)
    shutil.rmtree(d)  # e.g. a worker's clean close
    assert not again.valid()
    again.release()


def test_unmarked_directory_counts_by_age(tmp_path):
    """A directory an older version made (no lock, no mark) is stale only when its newest
    file is older than the grace period."""
    young = _plant(str(tmp_path / "c" / "young"), marked=False)
    old = _plant(str(tmp_path / "c" / "old"), marked=False, age=HOUR)
    assert L.remove_if_unused(young, legacy_grace=60)[:2] == (False, "no lock, recent files")
    assert L.remove_if_unused(old, legacy_grace=60)[0] and not os.path.exists(old)
    assert os.path.isdir(young)


def test_interrupted_removal_is_finished_by_a_later_sweep(tmp_path, monkeypatch):
    """A tombstone (a sweeper died between its rename and its rmtree) is deleted by a later
    sweep, once it is older than a removal in progress would be."""
    root = tmp_path / "root"
    tomb = _plant(str(root / "tcp_127.0.0.1_9" / f".w0{L.TOMBSTONE}123-abcdef"))
    assert L.sweep_store_roots([str(root)]) == [] and os.path.isdir(tomb)  # maybe in progress
    monkeypatch.setattr(L, "TOMBSTONE_AGE", -1.0)
    (found,) = L.sweep_store_roots([str(root)], sizes="all")
    assert found.removed and found.size == 4096 and not os.path.exists(tomb)
    assert os.listdir(root) == []


# -- sweeps ---------------------------------------------------------------------------------
def test_new_store_sweeps_dead_clusters_and_adopts_its_own(roots):
    """What a SIGKILL leaves (directories let go, files kept): a new store of worker w0 in
    cluster c adopts its own files, and its sweep removes the other clusters' unlocked
    directories (both roots) but leaves a held one, a young unlocked one of an older
    version, and its own cluster's other workers (their nannies decide)."""
    shm, spill = roots

    def killed(cluster, name):
        st = MarsStore(directory=shm, spill_directory=spill, name=name, cluster=cluster, memory_limit=GiB,
                       write_delay=0)
        st["k"] = np.arange(1000.0)
        st.evict()  # one file in each tier
        st["m"] = np.arange(10.0)
        dirs = st.dirs
        st.close(remove=False)  # files kept, locks dropped: what a SIGKILL leaves
        return dirs

    import dask

    with dask.config.set({"mars-dask.store.sweep-leftovers": False}):  # planting
        own = killed("c", "w0")
        sibling = killed("c", "w1")
        dead = killed("tcp://127.0.0.1:1", "w0")
        held = killed("tcp://127.0.0.1:2", "w0")
    locks = [L.hold_dir(d) for d in held]
    young_legacy = _plant(os.path.join(shm, "tcp_127.0.0.1_3", "w0"), marked=False)
    old_legacy = _plant(os.path.join(spill, "tcp_127.0.0.1_4", "w0"), marked=False, age=HOUR)
    assert all(_files(d) for d in [*own, *sibling, *dead, *held])

    st = MarsStore(directory=shm, spill_directory=spill, name="w0", cluster="c", memory_limit=GiB)
    assert set(st.existing_keys()) == {"k", "m"}  # its own: adopted, never swept
    assert all(L.is_locked(d) for d in st.dirs)
    _join_sweeps()
    assert not any(os.path.exists(d) for d in dead)
    assert not os.path.exists(os.path.dirname(dead[0]))  # its empty cluster directory too
    assert not os.path.exists(old_legacy)
    for d in [*own, *sibling, *held, young_legacy]:
        assert _files(d), d
    np.testing.assert_array_equal(st.recover("k"), np.arange(1000.0))
    st.close()
    assert not any(os.path.exists(d) for d in own)
    assert purge_store(shm, spill, "tcp://127.0.0.1:2", "w0") is False  # held: left alone
    for lk in locks:
        lk.release()
    assert purge_store(shm, spill, "tcp://127.0.0.1:2", "w0") is True
    assert not any(os.path.exists(d) for d in held)


def _cleanup(env, *args):
    r = subprocess.run([sys.executable, "-m", "mars_dask.cleanup", *args], env=env, cwd=str(REPO),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def _line(out, path):
    lines = [ln for ln in out.splitlines() if ln.rstrip().endswith(")") and f" {path}  (" in ln]
    assert len(lines) == 1, (path, out)
    return lines[0]


def test_cleanup_command_lists_and_removes_what_nobody_holds(roots, tmp_path):
    """``python -m mars_dask.cleanup --dry-run`` lists a planted stale store directory (and
    a dead cluster's journal) and removes nothing; without ``--dry-run`` they are removed,
    while a locked store directory, a young one of an older version, the journal of a
    cluster that still holds a store lock and a young checkpoint directory stay."""
    shm, spill = roots
    journal, checkpoints = tmp_path / "fo" / "journal", tmp_path / "fo" / "checkpoints"
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               DASK_MARS_DASK__STORE__DIRECTORY=shm, DASK_MARS_DASK__STORE__SPILL_DIRECTORY=spill,
               DASK_MARS_DASK__FAILOVER__JOURNAL_DIRECTORY=str(journal),
               DASK_MARS_DASK__FAILOVER__CHECKPOINT_DIRECTORY=str(checkpoints),
               DASK_MARS_DASK__WORKER__SCHEDULER_RECONNECT_TIMEOUT="60s",
               DASK_MARS_DASK__FAILOVER__REJOIN_HOLD="60s", DASK_MARS_DASK__SESSION__RECONNECT_TIMEOUT="60s")
    stale = _plant(os.path.join(shm, "tcp_127.0.0.1_1111", "w0"), nbytes=2**20)
    stale_spill = _plant(os.path.join(spill, "tcp_127.0.0.1_1111", "w0"), nbytes=2**20)
    locked = _plant(os.path.join(shm, "tcp_127.0.0.1_2222", "w0"))
    lock = L.hold_dir(locked)
    young_legacy = _plant(os.path.join(spill, "tcp_127.0.0.1_3333", "w1"), marked=False)
    dead_journal = _plant(str(journal / "127.0.0.1-1111"), age=HOUR)
    live_journal = _plant(str(journal / "127.0.0.1-2222"), age=HOUR)  # its workers hold a lock
    young_checkpoints = _plant(str(checkpoints / "127.0.0.1-5555"))
    # a live scheduler's (it holds its journal directory: the failover plugin's lock)
    sched_journal = _plant(str(journal / "127.0.0.1-6666"), age=HOUR)
    sched_checkpoints = _plant(str(checkpoints / "127.0.0.1-6666"), age=HOUR)
    sched_lock = L.hold_dir(sched_journal)
    keep = [locked, young_legacy, live_journal, young_checkpoints, sched_journal, sched_checkpoints]
    gone = [stale, stale_spill, dead_journal]
    try:
        out = _cleanup(env, "--dry-run")
        for p in gone:
            assert _line(out, p).startswith("would remove"), out
        for p in keep:
            assert _line(out, p).startswith("in use"), out
        assert "1.00 MiB" in _line(out, stale)
        assert "total: 9 directories" in out and "would remove 3" in out, out
        assert all(os.path.isdir(p) and _files(p) for p in gone + keep)

        out = _cleanup(env)
        for p in gone:
            assert _line(out, p).startswith("removed"), out
        assert not any(os.path.exists(p) for p in gone), out
        assert not os.path.exists(os.path.dirname(stale))
        assert all(os.path.isdir(p) and _files(p) for p in keep)
        print(out)
    finally:
        lock.release()
        sched_lock.release()
    out = _cleanup(env)  # let go: removed now
    for p in [locked, sched_journal, sched_checkpoints]:
        assert _line(out, p).startswith("removed") and not os.path.exists(p), out


def test_failover_call_holds_its_directories_and_sweeps_dead_ones(tmp_path):
    """What the failover plugin calls at start (``hold_failover_dirs``): its journal and
    checkpoint directories are held (a sweep leaves them, however old), a dead cluster's
    old ones are swept in the background, a dead cluster's recent ones stay (a scheduler
    may still be restarted on them); once let go and old, they are swept too."""
    import dask

    root = tmp_path / "fo"
    mine = [_plant(str(root / k / "127.0.0.1-8786"), age=HOUR) for k in ("journal", "checkpoints")]
    dead = [_plant(str(root / k / "127.0.0.1-8787"), age=HOUR) for k in ("journal", "checkpoints")]
    recent = [_plant(str(root / k / "127.0.0.1-8788")) for k in ("journal", "checkpoints")]
    with dask.config.set({"mars-dask.failover.rejoin-hold": "60s",
                          "mars-dask.session.reconnect-timeout": "60s",
                          "mars-dask.worker.scheduler-reconnect-timeout": "60s"}):
        locks = L.hold_failover_dirs(*mine, tag="127.0.0.1-8786")
        assert len(locks) == 2 and all(lk.valid() for lk in locks)
        _join_sweeps()
        assert not any(os.path.exists(d) for d in dead)
        assert all(_files(d) for d in mine + recent)
        found = L.sweep_failover_roots(str(root / "journal"), str(root / "checkpoints"), roots=[])
        assert {f.path: f.why for f in found if f.in_use} == {
            **{d: "its cluster holds a lock" for d in mine}, **{d: "recent files" for d in recent}}
        for lk in locks:
            lk.release()
        L.sweep_failover_roots(str(root / "journal"), str(root / "checkpoints"), roots=[])
    assert not any(os.path.exists(d) for d in mine) and all(_files(d) for d in recent)


# -- real clusters --------------------------------------------------------------------------
def _store_dirs(c):
    return c.client.run(lambda dask_worker: list(dask_worker.data.dirs))


def _nanny_dirs(c):
    def held(dask_worker):
        p = dask_worker.plugins["mars-dask-nanny"]
        return [list(p.store_dirs), [lk.valid() for lk in p._dir_locks]]

    return c.client.run(held, nanny=True)


@pytest.mark.timeout(300)
def test_nanny_holds_the_store_through_a_worker_restart(cli_cluster):
    """The nanny holds exactly its worker's store directories; while the killed worker
    process is being restarted, sweeps (run here in a loop) cannot remove them, and the
    new process adopts the results."""
    c = cli_cluster(mars=True, n_workers=1, nthreads=1, memory_limit="2GiB",
                    env={"DASK_MARS_DASK__SCHEDULER__RESTART_GRACE": "60s"})
    x = mt.random.RandomState(0).rand(400, 400, chunk_size=100)
    mars_dask.execute(x)
    expected = x.fetch()
    c.client.run(lambda dask_worker: dask_worker.data.flush())
    (dirs,) = _store_dirs(c).values()
    (nanny,) = _nanny_dirs(c).values()
    assert nanny == [dirs, [True, True]]
    files = _files(*dirs)
    assert len(files) >= 16
    c.kill_worker_process("w0")
    deadline, sweeps = time.monotonic() + 60, 0
    while time.monotonic() < deadline:
        L.sweep_store_roots([str(c.shm_dir), str(c.spill_dir)])
        sweeps += 1
        assert _files(*dirs) == files  # nothing swept from under the restart
        try:
            # the scheduler's view: run() on the dead address would retry for the connect timeout
            if len(c.workers()) == 1 and c.mars_stats()["adopted"] >= 16:
                break
        except Exception:  # noqa: BLE001,S110 - the worker is not back yet
            pass
        time.sleep(0.02)
    assert c.mars_stats()["adopted"] >= 16, c.logs()
    # sweeps ran while the process was gone (a forkserver restart and its adoption can take
    # well under half a second, a handful of sweeps)
    assert sweeps >= 2
    np.testing.assert_array_equal(x.fetch(), expected)
    (nanny,) = _nanny_dirs(c).values()
    assert nanny == [dirs, [True, True]]


def _wait_dead(pids, timeout=30):
    """Until every pid is gone (or a zombie: it holds no lock any more)."""
    deadline = time.monotonic() + timeout
    for pid in pids:
        while True:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                        break
            except (FileNotFoundError, ProcessLookupError):
                break
            assert time.monotonic() < deadline, f"process {pid} did not die"
            time.sleep(0.02)


def _crash_leak(tmp_path, nbytes):
    (tmp_path / "c1").mkdir()
    (tmp_path / "c2").mkdir()
    old = CLICluster(tmp_path / "c1", mars=True, n_workers=2, nthreads=1, memory_limit="3GiB")
    new = CLICluster(tmp_path / "c2", mars=True, n_workers=2, nthreads=1, memory_limit="3GiB",
                     env={"DASK_MARS_DASK__STORE__DIRECTORY": str(old.shm_dir),
                          "DASK_MARS_DASK__STORE__SPILL_DIRECTORY": str(old.spill_dir)})
    new.shm_dir, new.spill_dir = old.shm_dir, old.spill_dir
    try:
        old.start()
        rows = nbytes // (4096 * 8)
        x = mt.random.RandomState(0).rand(rows, 4096, chunk_size=(rows // 16, 4096))
        mars_dask.execute(x)
        old.client.run(lambda dask_worker: dask_worker.data.flush())
        tag = _safe(old.client.scheduler.address)
        old_dirs = [old.shm_dir / tag, old.spill_dir / tag]
        stored = _du(*old_dirs)
        assert stored >= 0.95 * nbytes, stored
        pids = list(old.client.run(os.getpid).values()) + [p.pid for p in old.procs]
        for p in old.procs:  # the whole cluster: scheduler, nannies and worker processes
            os.killpg(p.pid, signal.SIGKILL)
        _wait_dead(pids)
        quiet = [logging.getLogger(n) for n in ("distributed.client", "distributed.utils")]
        levels = [q.level for q in quiet]
        try:
            for q in quiet:  # the client's reconnection attempts, cancelled
                q.setLevel(logging.CRITICAL)
            old.client.close(timeout=2)
        except Exception:  # noqa: BLE001,S110 - its scheduler is gone
            pass
        finally:
            for q, lv in zip(quiet, levels):
                q.setLevel(lv)
        old.client = None
        assert _du(*old_dirs) == stored  # nothing reclaims them by itself

        gone = {}

        def watch():  # when they disappear, while the new cluster starts
            while any(d.exists() for d in old_dirs) and time.monotonic() < t0 + 60:
                time.sleep(0.005)
            gone["t"] = time.monotonic() - t0

        t0 = time.monotonic()
        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        new.start()
        started = time.monotonic() - t0
        watcher.join(max(0.0, t0 + 61 - time.monotonic()))
        assert not any(d.exists() for d in old_dirs), \
            "the dead cluster's directories are still there\n" + new.logs()
        gone_after = gone["t"]
        new_tag = _safe(new.client.scheduler.address)
        assert new_tag != tag
        dirs = _store_dirs(new)
        assert len(dirs) == 2
        for ds in dirs.values():
            for d in ds:
                assert os.path.dirname(os.path.dirname(d)) in (str(old.shm_dir), str(old.spill_dir))
                assert os.path.basename(os.path.dirname(d)) == new_tag
                assert os.path.isdir(d) and L.is_locked(d)
        y = mt.random.RandomState(1).rand(1000, 100, chunk_size=100)
        mars_dask.execute(y)
        new.client.run(lambda dask_worker: dask_worker.data.flush())
        assert _files(*(d for ds in dirs.values() for d in ds))  # its own are intact
        print(f"\ncrash leak: a SIGKILLed 2-worker cluster left {stored / GiB:.2f} GiB in its store "
              f"directories; a new cluster on the same roots (another port) reclaimed all of it "
              f"{gone_after:.2f} s after it was launched (its start-up took {started:.2f} s)")
        assert gone_after <= started + 1.0  # within its start-up (its nannies sweep when they start)
    finally:
        for c in (old, new):
            c.close()
        old.cleanup_dirs()


@pytest.mark.timeout(300)
def test_crash_leak_is_reclaimed_by_the_next_cluster(tmp_path):
    """Issue 16's crash leak test, 0.5 GiB (1 GiB: the slow variant)."""
    _crash_leak(tmp_path, GiB // 2)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_crash_leak_is_reclaimed_by_the_next_cluster_1gib(tmp_path):
    _crash_leak(tmp_path, GiB)


def test_cli_cluster_tag_matches_failover_tag():
    """The store's and the failover plugin's names of one scheduler address are one
    cluster for the failover directories' liveness."""
    from mars_dask.plugins._failover import _address_tag

    for addr in ["tcp://127.0.0.1:8786", "tls://my-host.example:8786", "tcp://[::1]:40123"]:
        assert L.cluster_id(_safe(addr)) == L.cluster_id(_address_tag(addr))
    assert L.cluster_id(_safe("tcp://127.0.0.1:8786")) != L.cluster_id(_address_tag("tcp://127.0.0.1:8787"))


def test_paths_are_what_the_worker_uses(tmp_path):
    """``store_roots`` (what the nanny holds) resolves the roots as MarsStore does:
    explicit, else configured, else the spill root beside the worker's local directory."""
    import dask

    local = tmp_path / "dask-scratch-space"
    wdir = local / "worker-abc"
    wdir.mkdir(parents=True)
    shm = str(tmp_path / "shm")
    with dask.config.set({"mars-dask.store.spill-directory": None}):
        st = MarsStore(str(wdir), directory=shm, memory_limit=GiB)
        assert L.store_roots(shm, scratch=str(local)) == (shm, str(local / "mars-spill"))
        assert L.store_roots(shm, scratch=str(local)) == (st.directory, st.spill_directory)
    with dask.config.set({"mars-dask.store.directory": shm, "mars-dask.store.spill-directory": "/b"}):
        assert L.store_roots(scratch=str(local)) == (shm, "/b")
    assert L.store_roots("/a", "/b") == ("/a", "/b")
