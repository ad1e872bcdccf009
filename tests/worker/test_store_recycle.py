"""Shared-memory files of deleted values are reused (mars_dask/spill/_recycle.py), never
while a value of the process still sees their pages; a restarted process pauses
write-behind. No cluster: the store alone, as in test_store.py."""

from __future__ import annotations

import os
import time

import numpy as np

from tests.worker.test_store import dirs, files_under, make_store  # noqa: F401 - the fixture

SHAPE = (250, 250)


def _inode(st, key):
    return os.stat(st.path_of(key)).st_ino


def test_deleted_file_is_reused_by_next_write_of_same_size(dirs):  # noqa: F811
    st = make_store(dirs, write_delay=0, shm_recycle="8MiB")
    rng = np.random.default_rng(0)
    a, b = rng.random(SHAPE), rng.random(SHAPE)
    st["a"] = a
    ino = _inode(st, "a")
    del st["a"]
    assert st.stats()["recycle"]["files"] == 1
    st["b"] = b
    assert _inode(st, "b") == ino  # the same tmpfs file, overwritten
    assert st.stats()["recycle"] == {"files": 0, "bytes": 0, "reused": 1, "limit": 8 * 2**20}
    np.testing.assert_array_equal(st["b"], b)
    st.close(remove=False)
    st2 = make_store(dirs, write_delay=0)  # read back by a new process: its checksum holds
    np.testing.assert_array_equal(st2.recover("b"), b)
    st2.close()
    assert files_under(*dirs) == []


def test_file_still_mapped_by_a_live_value_is_not_reused(dirs):  # noqa: F811
    st = make_store(dirs, write_delay=0, shm_recycle="8MiB")
    a = np.arange(SHAPE[0] * SHAPE[1], dtype="f8").reshape(SHAPE)
    st["a"] = a
    view = st["a"][10:20].T  # a view of the mapped file, as a task's result may be
    ino = _inode(st, "a")
    del st["a"]
    assert st.stats()["recycle"]["files"] == 0  # unlinked, not kept
    for i in range(5):
        st[f"x{i}"] = np.full(SHAPE, -1.0)
        assert _inode(st, f"x{i}") != ino
    np.testing.assert_array_equal(view, a[10:20].T)  # its pages were never written again


def test_pool_is_bounded_and_removed_on_close(dirs):  # noqa: F811
    one = SHAPE[0] * SHAPE[1] * 8 + 4096
    st = make_store(dirs, write_delay=0, shm_recycle=3 * one)
    for i in range(10):
        st[i] = np.ones(SHAPE)
    for i in range(10):
        del st[i]
    rec = st.stats()["recycle"]
    assert rec["files"] == 3 and rec["bytes"] <= 3 * one
    assert len(files_under(dirs[0])) == 3
    st.close()
    assert files_under(*dirs) == []


def test_recycling_off(dirs):  # noqa: F811
    st = make_store(dirs, write_delay=0, shm_recycle=0)
    st["a"] = np.ones(SHAPE)
    del st["a"]
    assert files_under(dirs[0]) == [] and st.stats()["recycle"]["reused"] == 0
    st.close()


def test_restarted_process_pauses_write_behind(dirs):  # noqa: F811
    """A store that finds a predecessor's files (its process died holding values) writes
    every result at once for write-behind-pause, before the scheduler says so."""
    first = make_store(dirs, write_delay=0)
    first["a"] = np.ones(SHAPE)
    first.close(remove=False)
    fresh = make_store(dirs, name="w1", write_delay="1s")
    _ = fresh.dirs
    assert fresh._write_now_until <= time.monotonic()  # nothing found: write-behind as usual
    fresh.close()
    restarted = make_store(dirs, write_delay="1s")
    _ = restarted.dirs
    assert restarted._write_now_until - time.monotonic() > restarted.write_behind_pause - 5
    restarted.close()
