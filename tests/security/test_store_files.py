"""The store's files against another local user and against damage.

- A second unprivileged user (``other_user``, tests/security/conftest.py) pre-creates the
  store's root (mode 0777, or a symlink to a directory of theirs): the store refuses it with
  an error naming it, on a CLI cluster as the README starts it and in-process.
- On a running CLI cluster, that user can neither list the store's directories nor read its
  files, nor plant, replace or delete a file there.
- Damage: a flipped byte or a truncated file is detected (a clear error naming key and
  file), never decoded as a value; a damaged file left for a restarted process is not
  adopted: the result is recomputed and right.
- A full disk (ENOSPC) while moving values to the disk tier keeps them in memory: the
  job's results are exact and the warning is reported (a real small tmpfs when root; a
  fault hook on the store's writes otherwise).
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import subprocess
import time
import uuid

import numpy as np
import pytest

import mars_dask
import mars_dask.tensor as mt
from mars_dask.errors import DataIntegrityError, UnsafeDirectoryError
from mars_dask.spill import MarsStore, _files

pytestmark = pytest.mark.timeout(240)


def _shm_base(tmp_path) -> str:
    return "/dev/shm" if os.path.isdir("/dev/shm") else str(tmp_path)


@pytest.fixture
def shm_dir(tmp_path):
    d = os.path.join(_shm_base(tmp_path), f"mars-dask-sec-{uuid.uuid4().hex[:8]}")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _store(shm, spill, **kw):
    kw.setdefault("memory_limit", 2**30)
    kw.setdefault("write_delay", 0)
    return MarsStore(directory=shm, spill_directory=spill, name="w0", cluster="c", **kw)


# -- directories ----------------------------------------------------------------------------------
@pytest.mark.parametrize("how", ["0777-dir", "0700-dir", "symlink"])
def test_root_planted_by_another_user_is_refused(other_user, shm_dir, tmp_path, how):
    theirs = shm_dir + "-theirs"
    code = {"0777-dir": f"import os; os.mkdir({shm_dir!r}); os.chmod({shm_dir!r}, 0o777)",
            "0700-dir": f"import os; os.mkdir({shm_dir!r}, 0o700)",
            "symlink": f"import os; os.mkdir({theirs!r}, 0o777); os.chmod({theirs!r}, 0o777); "
                       f"os.symlink({theirs!r}, {shm_dir!r})"}[how]
    r = other_user.run(code)
    assert r.returncode == 0, r.stderr
    try:
        with pytest.raises(UnsafeDirectoryError) as e:
            _store(shm_dir, str(tmp_path / "spill"))
        assert shm_dir in str(e.value)
        assert not any(os.scandir(theirs if how == "symlink" else shm_dir)) if how != "0700-dir" else True
    finally:
        for p in (shm_dir, theirs):
            if os.path.islink(p):
                os.unlink(p)
            shutil.rmtree(p, ignore_errors=True)


def test_group_writable_parent_is_refused_and_own_root_is_tightened(shm_dir, tmp_path):
    os.mkdir(shm_dir, 0o700)
    os.chmod(shm_dir, 0o777)  # ours, but anyone could swap what is inside
    with pytest.raises(UnsafeDirectoryError, match="writable by group or others"):
        _store(os.path.join(shm_dir, "root"), str(tmp_path / "spill"))
    os.chmod(shm_dir, 0o755)  # ours and only ours to write: used, and tightened to 0700
    st = _store(shm_dir, str(tmp_path / "spill"))
    st["k"] = np.arange(3)
    assert oct(os.stat(shm_dir).st_mode & 0o777) == oct(0o700)
    for d in st.dirs:
        assert os.stat(d).st_mode & 0o777 == 0o700
    st.close()


def test_cli_worker_refuses_a_planted_store_root(other_user, tmp_path):
    """The README's CLI cluster with a store root another user created first: the worker
    does not start, and its log names the directory and the reason."""
    from tests.worker.conftest import CLICluster

    root = f"/dev/shm/mars-dask-sec-{uuid.uuid4().hex[:8]}"
    assert other_user.run(f"import os; os.mkdir({root!r}); os.chmod({root!r}, 0o777)").returncode == 0
    c = CLICluster(tmp_path / "c", mars=True, n_workers=1, nthreads=1,
                   env={"DASK_MARS_DASK__STORE__DIRECTORY": root})
    (tmp_path / "c").mkdir()
    try:
        with pytest.raises(Exception):
            c.start(timeout=30)
        logs = c.logs(20000)
        assert "refusing to use" in logs and root in logs, logs[-3000:]
        assert os.listdir(root) == []  # nothing written into their directory
    finally:
        c.close()
        shutil.rmtree(root, ignore_errors=True)


def test_other_user_can_neither_read_nor_plant_on_a_running_cluster(other_user, cli_cluster):
    c = cli_cluster(mars=True, n_workers=1, nthreads=1)
    x = mt.random.RandomState(0).rand(400, 400, chunk_size=100)
    mars_dask.execute(x)
    expected = x.fetch()

    def paths(dask_worker):
        st = dask_worker.data
        st.flush()
        return [st.path_of(k) for k in st if st.path_of(k)], list(st.dirs)

    (files, dirs), = c.client.run(paths).values()
    assert files and dirs
    for d in [*dirs, os.path.dirname(dirs[0]), str(c.shm_dir)]:
        assert os.stat(d).st_mode & 0o077 == 0, d
        assert not other_user.can_read(d), d
    for f in files:
        assert os.stat(f).st_mode & 0o777 == 0o600, f
        assert not other_user.can_read(f), f
    r = other_user.run(f"""
        import os, sys
        hits = []
        for d in {dirs!r}:
            try:
                with open(os.path.join(d, "planted.mds"), "wb") as f:
                    f.write(b"x")
                hits.append("planted " + d)
            except OSError:
                pass
        for f in {files!r}:
            for act in (lambda: os.unlink(f), lambda: os.rename(f, f + ".x"), lambda: open(f, "r+b")):
                try:
                    act()
                    hits.append("changed " + f)
                except OSError:
                    pass
        print(hits)
        sys.exit(1 if hits else 0)
        """)
    assert r.returncode == 0, r.stdout + r.stderr
    np.testing.assert_array_equal(x.fetch(), expected)


# -- damage ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_damaged_disk_file_is_an_error_naming_key_and_file(shm_dir, tmp_path, damage):
    st = _store(shm_dir, str(tmp_path / "spill"))
    value = np.random.default_rng(1).random(50_000)
    st[("x", 3)] = value
    assert st.evict() > 0 and st.tier_of(("x", 3)) == "disk"
    path = st.path_of(("x", 3))
    with open(path, "r+b") as f:
        if damage == "flip":
            f.seek(os.path.getsize(path) - 1000)
            b = f.read(8)
            f.seek(-8, 1)
            f.write(bytes(x ^ 0xFF for x in b))
        else:
            f.truncate(os.path.getsize(path) - 4096)
    with pytest.raises(DataIntegrityError) as e:
        st[("x", 3)]
    assert e.value.key == ("x", 3) and e.value.path == path
    assert path in str(e.value) and "('x', 3)" in str(e.value)
    st.close()


def test_damaged_file_left_for_a_restart_is_not_adopted(shm_dir, tmp_path):
    st = _store(shm_dir, str(tmp_path / "spill"))
    good, bad = np.arange(10_000.0), np.arange(10_000.0) * 2
    st["good"], st["bad"] = good, bad
    path = st.path_of("bad")
    st.close(remove=False)
    with open(path, "r+b") as f:
        f.seek(8192)
        f.write(b"\x00\x01\x02\x03")
    again = _store(shm_dir, str(tmp_path / "spill"))
    assert set(again.existing_keys()) == {"good", "bad"}  # the header is intact
    np.testing.assert_array_equal(again.recover("good"), good)
    with pytest.raises(DataIntegrityError):
        again.recover("bad")
    again.close()


def test_damaged_store_file_after_a_worker_kill_is_recomputed(cli_cluster):
    """A worker process is SIGKILLed; one of the files it leaves is damaged before the new
    process starts: that key is recomputed (not adopted), the others adopted, result exact."""
    c = cli_cluster(mars=True, n_workers=1, nthreads=1, env={"DASK_MARS_DASK__SCHEDULER__RESTART_GRACE": "60s"})
    x = mt.random.RandomState(2).rand(8, 50_000, chunk_size=(1, 50_000))
    mars_dask.execute(x)
    expected = x.fetch()

    def files(dask_worker):
        st = dask_worker.data
        st.flush()
        return {str(k): st.path_of(k) for k in st}

    paths = next(iter(c.client.run(files).values()))
    victim_key, victim_path = sorted(paths.items())[0]
    name = next(iter(c.workers().values()))["name"]
    # stop the process first (SIGSTOP) so that nothing rewrites the file, damage it, kill
    addr, info = c.worker_by_name(name)
    pid = c.client.run(os.getpid, workers=[addr])[addr]
    os.kill(pid, 19)
    with open(victim_path, "r+b") as f:
        f.seek(os.path.getsize(victim_path) - 64)
        f.write(b"\xff" * 16)
    os.kill(pid, 9)
    s = (x + 1).sum()
    mars_dask.execute(s)
    assert np.isclose(s.fetch(), (expected + 1).sum())
    np.testing.assert_array_equal(x.fetch(), expected)
    counts = c.counts()
    reexec = {k: n - 1 for k, n in counts["executed"].items() if k in paths and n > 1}
    assert victim_key in reexec, (victim_key, counts["executed"])
    assert len(reexec) < len(paths), reexec  # the intact ones were adopted
    assert "could not recover" in c.logs()


# -- full disk ------------------------------------------------------------------------------------
def test_enospc_keeps_values_in_memory(shm_dir, tmp_path, monkeypatch, caplog):
    """The fault hook: every write to the disk tier fails with ENOSPC."""
    spill = str(tmp_path / "spill")
    real = _files.write_tmp

    def full(path, *a, **kw):
        if path.startswith(spill):
            raise OSError(errno.ENOSPC, "No space left on device", path)
        return real(path, *a, **kw)

    monkeypatch.setattr(_files, "write_tmp", full)
    st = _store(shm_dir, spill, shm_limit=300_000)
    values = {i: np.full(10_000, float(i)) for i in range(10)}  # 80 kB each: 800 kB > 300 kB
    with caplog.at_level(logging.WARNING, logger="mars_dask.spill"):
        for k, v in values.items():
            st[k] = v
        st[99] = np.zeros(100_000)  # larger than the shm limit: goes straight to the disk tier
    assert "No space left" in caplog.text
    for k, v in values.items():
        np.testing.assert_array_equal(st[k], v)
    assert st.tier_of(99) == "heap"
    assert st.evict() == -1  # the memory monitor is told nothing could be spilled
    st.close()


@pytest.fixture
def small_tmpfs(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root (test_enospc_keeps_values_in_memory covers the hook)")
    mnt = tmp_path / "full"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)], capture_output=True)
    if r.returncode:
        pytest.skip(f"cannot mount tmpfs: {r.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        for _ in range(20):
            if subprocess.run(["umount", str(mnt)], capture_output=True).returncode == 0:
                break
            time.sleep(0.5)
        else:
            subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_full_spill_filesystem_on_a_cli_cluster(small_tmpfs, cli_cluster):  # the cluster closes first
    """The disk tier on a 2 MiB tmpfs, the memory tier limited to 4 MiB, 24 MiB of chunks
    held at once: spilling fails with ENOSPC, values stay in memory, the job is exact and the
    workers report the failure on the ``mars-store`` event topic."""
    c = cli_cluster(mars=True, n_workers=1, nthreads=1,
                    env={"DASK_MARS_DASK__STORE__SPILL_DIRECTORY": str(small_tmpfs / "spill"),
                         "DASK_MARS_DASK__STORE__SHM_LIMIT": "4MiB"})
    x = mt.random.RandomState(3).rand(24, 131072, chunk_size=(1, 131072))  # 24 chunks of 1 MiB
    mars_dask.execute(x)
    expected = x.fetch()
    s = (x * 2).sum(axis=1)
    mars_dask.execute(s)
    np.testing.assert_allclose(s.fetch(), (expected * 2).sum(axis=1))
    events = c.client.get_events("mars-store")
    assert any(e[1].get("action") == "write-failed" and e[1].get("errno") == errno.ENOSPC for e in events), events
    assert c.client.run(lambda dask_worker: dask_worker.status.name) != {}
