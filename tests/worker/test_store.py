"""MarsStore (mars_dask/spill): the worker's node-local ``data`` mapping.

Unit tests of the mapping and its files, a restart simulated by a killed child process, and
a real 2-process cluster using the store whose files must all be gone after it closes.
Shared-memory files go to a unique directory under /dev/shm (removed by the fixture).
"""

from __future__ import annotations

import gc
import mmap
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import types
import weakref

import numpy as np
import pandas as pd
import pandas.testing as tm
import pytest

from mars_dask.errors import DataIntegrityError
from mars_dask.spill import MarsStore, _files

pytestmark = pytest.mark.timeout(120)

MiB = 2**20


@pytest.fixture
def dirs(store_dirs):
    os.makedirs(store_dirs[0])
    return store_dirs

def make_store(dirs, name="w0", **kw):
    shm, spill = dirs
    kw.setdefault("memory_limit", 2**30)
    return MarsStore(directory=shm, spill_directory=spill, name=name, cluster="c", **kw)


def files_under(*roots):
    return [os.path.join(d, f) for r in roots for d, _, fs in os.walk(r) for f in fs]


def mmap_backed(a) -> bool:
    """Whether an ndarray's memory comes from a memory map (walks the .base chain)."""
    obj = a
    while obj is not None:
        if isinstance(obj, mmap.mmap):
            return True
        if isinstance(obj, memoryview):
            obj = obj.obj
        else:
            obj = getattr(obj, "base", None)
    return False


# -- round trips ------------------------------------------------------------------------
NUMPY_CASES = {
    "float": np.random.default_rng(0).random((7, 5)),
    "0-d": np.array(3.5),
    "int-1d": np.arange(10, dtype=np.int16),
    "empty": np.empty((0, 3)),
    "F-order": np.asfortranarray(np.arange(24.0).reshape(4, 6)),
    "non-contiguous": np.arange(60).reshape(6, 10)[::2, 1::3],
    "datetime": np.arange("2020-01-01", "2020-01-08", dtype="datetime64[D]"),
    "structured": np.array([(1, 2.0), (3, 4.0)], dtype=[("a", "i4"), ("b", "f8")]),
    "bool-3d": np.random.default_rng(1).random((2, 3, 4)) > 0.5,
    "complex": np.arange(6) * (1 + 2j),
    "bytes": np.array([b"ab", b"c"]),
}


@pytest.mark.parametrize("name", list(NUMPY_CASES))
def test_numpy_roundtrip(dirs, name):
    x = NUMPY_CASES[name]
    st = make_store(dirs)
    st["k"] = x
    got = st["k"]
    assert type(got) is np.ndarray
    assert got.dtype == x.dtype and got.shape == x.shape
    np.testing.assert_array_equal(got, x)
    assert not got.flags.writeable  # documented: kernels copy before writing
    if x.flags.f_contiguous and not x.flags.c_contiguous:
        assert got.flags.f_contiguous
    if x.size:
        assert mmap_backed(got)
    st.close()


def test_object_array_falls_back_to_dask_serialization(dirs):
    x = np.array([{"a": 1}, None, "s"], dtype=object)
    st = make_store(dirs)
    st["k"] = x
    assert st._entries["k"].header["kind"] == "dask"
    assert st["k"] is x  # the object itself is held; the file is the durable copy
    st2 = make_store(dirs, name="w0")
    st.close(remove=False)
    np.testing.assert_array_equal(st2.recover("k"), x)
    st2.close()


def _frames():
    n = 6
    return {
        "mixed": pd.DataFrame({
            "i": np.arange(n), "f": [1.5, np.nan, 2.0, 3.0, np.nan, 0.0],
            "s": ["a", None, "ccc", "d", "", "f"],
            "c": pd.Categorical(["x", "y", "x", None, "y", "x"]),
            "t": pd.date_range("2021-01-01", periods=n, tz="UTC"),
            "nat": [pd.Timestamp("2020-01-01"), pd.NaT] * 3,
            "I": pd.array([1, None, 3, 4, None, 6], dtype="Int64"),
            "b": [True, False] * 3,
        }, index=pd.Index(list("uvwxyz"), name="key")),
        "int-columns": pd.DataFrame({0: [1, 2], 1: [3.0, 4.0]}),
        "multiindex": pd.DataFrame({"v": [1, 2]},
                                   index=pd.MultiIndex.from_tuples([("a", 1), ("b", 2)], names=["p", "q"])),
        "empty": pd.DataFrame({"a": np.array([], dtype="f8")}),
    }


@pytest.mark.parametrize("name", list(_frames()))
def test_dataframe_arrow_roundtrip(dirs, name):
    df = _frames()[name]
    st = make_store(dirs)
    st["k"] = df
    plain = name in ("int-columns", "empty")  # all-numpy data and index: pandas' blocks
    assert st._entries["k"].header["kind"] == ("blocks" if plain else "arrow")
    tm.assert_frame_equal(st["k"], df)
    st.close()


def _block_frames():
    n = 5
    base = pd.DataFrame({"a": np.arange(n), "b": np.linspace(0, 1, n), "c": np.arange(n) * 2,
                         "t": pd.date_range("2020-01-01", periods=n).values,
                         "d": pd.to_timedelta(np.arange(n), unit="s").values,
                         "ok": np.array([True, False, True, True, False]), "u": np.arange(n, dtype="u1"),
                         "z": np.arange(n) + 1j})
    unconsolidated = base[["a"]].copy()
    unconsolidated["a2"] = np.arange(n) * 3  # a second int64 block
    f_order = pd.DataFrame(np.asfortranarray(np.arange(12.0).reshape(4, 3)), columns=list("xyz"))
    return {
        "dtypes": base,
        "unconsolidated": unconsolidated,
        "f-order": f_order,
        "c-order-2d": pd.DataFrame(np.arange(12.0).reshape(4, 3)),
        "strided": pd.DataFrame(np.arange(24.0).reshape(4, 6)[:, ::2]),
        "duplicate-columns": pd.DataFrame([[1, 2.0], [3, 4.0]], columns=["a", "a"]),
        "multiindex-columns": pd.DataFrame(np.ones((2, 2)), columns=pd.MultiIndex.from_tuples([("a", 1), ("b", 2)])),
        "int-index": base.set_index("a"),
        "float-index": pd.DataFrame({"v": [1, 2, 3]}, index=pd.Index([0.5, np.nan, 2.0], name="f")),
        "range-index-step": pd.DataFrame({"v": [1, 2, 3]}, index=pd.RangeIndex(10, 16, 2, name="r")),
        "no-rows": base.iloc[:0],
        "no-columns": pd.DataFrame(index=pd.RangeIndex(3)),
    }


@pytest.mark.parametrize("name", list(_block_frames()))
def test_dataframe_blocks_roundtrip(dirs, name):
    df = _block_frames()[name]
    st = make_store(dirs)
    st["k"] = df
    assert st._entries["k"].header["kind"] == "blocks"
    got = st["k"]
    tm.assert_frame_equal(got, df)
    assert [b.dtype for b in got._mgr.blocks] == [b.dtype for b in df._mgr.blocks]
    # read back by a new process (the file is all there is) and usable like any frame
    st2 = make_store(dirs, name="w0")
    st.close(remove=False)
    back = st2.recover("k")
    tm.assert_frame_equal(back, df)
    if len(back.columns) and len(back):
        back.iloc[0, 0] = back.iloc[1, 0]  # copy-on-write: the map is never written
        tm.assert_frame_equal(st2.recover("k") if "k" not in st2 else st2["k"], df)
    st2.close()


@pytest.mark.parametrize("series", [
    pd.Series([1.0, 2.0, np.nan], name="price"),
    pd.Series(np.arange(4, dtype="i2"), index=pd.Index([3, 1, 2, 0], name="id"), name=("a", 1)),
    pd.Series(pd.date_range("2020", periods=3).values, index=pd.RangeIndex(3, 0, -1)),
    pd.Series([], dtype="f8"),
], ids=["float", "int-index", "datetime", "empty"])
def test_series_blocks_roundtrip(dirs, series):
    st = make_store(dirs)
    st["k"] = series
    assert st._entries["k"].header["kind"] == "blocks"
    tm.assert_series_equal(st["k"], series)
    st.close()


def test_series_and_index_roundtrip(dirs):
    st = make_store(dirs)
    s = pd.Series([1.0, 2.0, np.nan], name="price", index=pd.date_range("2020", periods=3))
    unnamed = pd.Series(["a", "b"])
    idx = pd.Index([3, 1, 2], name="ids")
    st["s"], st["u"], st["i"] = s, unnamed, idx
    # a DatetimeIndex (its freq) and str data go through Arrow
    assert {st._entries[k].header["kind"] for k in "sui"} == {"arrow"}
    tm.assert_series_equal(st["s"], s)
    tm.assert_series_equal(st["u"], unnamed)
    tm.assert_index_equal(st["i"], idx)
    st.close()


def test_object_dtype_frame_falls_back(dirs):
    df = pd.DataFrame({"o": pd.Series([1, "a", None], dtype=object)})
    st = make_store(dirs)
    st["k"] = df
    assert st._entries["k"].header["kind"] == "dask"
    tm.assert_frame_equal(st["k"], df)
    st.close()


@pytest.mark.parametrize("value", [{"a": [1, 2]}, "text", 42, None, (1, "x"), b"\0" * 10])
def test_arbitrary_objects(dirs, value):
    st = make_store(dirs, shm_limit=0)  # force the disk tier: must come back from the file
    st["k"] = value
    assert st.tier_of("k") == "disk"
    assert st["k"] == value
    st.close()


def test_tuple_keys_and_mapping_protocol(dirs):
    st = make_store(dirs)
    keys = [("x", 0, 1), "y", ("z", 2)]
    for i, k in enumerate(keys):
        st[k] = np.full(3, i)
    assert len(st) == 3 and set(st) == set(keys) and ("x", 0, 1) in st and "nope" not in st
    with pytest.raises(KeyError):
        st["nope"]
    st2 = make_store(dirs)
    st.close(remove=False)
    assert set(st2.existing_keys()) == set(keys)  # keys survive msgpack (tuples stay tuples)
    st2.close()


# -- memory: held once, tiers, eviction -------------------------------------------------
def _anon_bytes() -> int:
    with open("/proc/self/smaps_rollup") as f:
        for line in f:
            if line.startswith("Anonymous:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no Anonymous line")


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps_rollup"), reason="needs Linux smaps")
def test_result_held_in_memory_once(dirs):
    """After store[k] = a and dropping a, the only copy is the shared-memory file the store
    maps: the process's private (anonymous) memory goes back down by the array size."""
    st = make_store(dirs)
    n = 64 * MiB
    gc.collect()
    before = _anon_bytes()
    # fresh private pages, unmapped with the array: malloc may hand back resident memory freed
    # earlier in a long test process, and the figure would not move
    a = np.frombuffer(mmap.mmap(-1, n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS), dtype=np.float64)
    a[:] = 1.0
    assert _anon_bytes() - before > 0.9 * n
    st["k"] = a
    del a
    gc.collect()
    assert _anon_bytes() - before < 0.2 * n
    held = st["k"]
    assert mmap_backed(held) and held.sum() == n // 8
    path = st.path_of("k")
    assert path.startswith(dirs[0]) and os.path.getsize(path) >= n
    with open("/proc/self/maps") as f:
        assert path in f.read()
    st.close()


def test_write_once_spill_and_readback(dirs):
    """Values beyond the shared-memory limit go to disk (LRU first), read back correctly, and
    a read-back value evicted again is dropped, not rewritten."""
    shm, spill = dirs
    one = 1 * MiB
    st = make_store(dirs, shm_limit=3 * one + 3 * 8192)
    arrs = [np.random.default_rng(i).random(one // 8) for i in range(6)]
    for i, a in enumerate(arrs):
        st[i] = a
    tiers = [st.tier_of(i) for i in range(6)]
    assert tiers == ["disk"] * 3 + ["shm"] * 3, tiers
    assert st.fast.total_weight <= st.shm_limit
    assert len(files_under(shm)) == 3 and len(files_under(spill)) == 3
    stats = {i: os.stat(st.path_of(i)) for i in range(3)}
    for _ in range(2):
        for i, a in enumerate(arrs):
            np.testing.assert_array_equal(st[i], a)
    assert all(st.tier_of(i) == "disk" for i in range(6))
    for i, s in stats.items():  # written once: same inode, same mtime
        s2 = os.stat(st.path_of(i))
        assert (s2.st_ino, s2.st_mtime_ns) == (s.st_ino, s.st_mtime_ns)
    st.close()


def test_evict_protocol_for_the_memory_monitor(dirs):
    """ManualEvictProto: ``fast`` is what is in memory, ``evict()`` moves the LRU value to
    disk and returns its weight, -1 when nothing is left."""
    st = make_store(dirs)
    st["a"], st["b"] = np.ones(1000), np.zeros(1000)
    assert len(st.fast) == 2
    w = st.evict()
    assert w >= 8000 and st.tier_of("a") == "disk" and st.tier_of("b") == "shm"
    assert st.spilled_total.memory == 8000
    assert st.evict() > 0 and st.evict() == -1
    assert not st.fast
    np.testing.assert_array_equal(st["a"], np.ones(1000))
    st.close()


@pytest.mark.parametrize("kw", [{"compression": "lz4"}, {"o_direct": False}, {"read_mode": "direct"}], ids=str)
def test_disk_tier_lz4_and_buffered(dirs, kw):
    if "compression" in kw:
        pytest.importorskip("lz4", reason="lz4 compression is the optional extra mars_dask[lz4]")
    st = make_store(dirs, name=str(kw), shm_limit=0, **kw)
    x = np.arange(3 * MiB // 8) % 7
    df = pd.DataFrame({"a": np.arange(1000), "s": ["x"] * 1000})
    st["x"], st["df"] = x, df
    if "compression" in kw:
        assert os.path.getsize(st.path_of("x")) < x.nbytes / 4
    np.testing.assert_array_equal(st["x"], x)
    tm.assert_frame_equal(st["df"], df)
    st.close()


def test_delete_frees_files_and_close_removes_everything(dirs):
    shm, spill = dirs
    st = make_store(dirs, shm_limit=2 * MiB)
    st["small"] = np.ones(10)
    st["big"] = np.ones(MiB)  # 8 MiB: straight to disk
    assert st.tier_of("small") == "shm" and st.tier_of("big") == "disk"
    p_small, p_big = st.path_of("small"), st.path_of("big")
    del st["small"], st["big"]
    assert not os.path.exists(p_small) and not os.path.exists(p_big)
    st["again"] = np.ones(10)
    st.close(remove=True)
    assert os.listdir(shm) == [] and (not os.path.exists(spill) or os.listdir(spill) == [])


def test_overwrite_key_replaces_file(dirs):
    st = make_store(dirs)
    st["k"] = np.ones(4)
    st["k"] = np.zeros(4)
    np.testing.assert_array_equal(st["k"], np.zeros(4))
    assert len(files_under(dirs[0])) == 1
    st.close()


# -- restart ----------------------------------------------------------------------------
def test_reopen_after_sigkill_ignores_torn_writes(dirs):
    """A child process stores keys (one moved to disk), leaves a torn write and a garbage
    file, and is SIGKILLed; a new store with the same name sees exactly the complete keys,
    adopts a recovered value without rewriting it, and discards the rest."""
    shm, spill = dirs
    child = textwrap.dedent(f"""
        import os, signal, numpy as np, pandas as pd
        from mars_dask.spill import MarsStore
        st = MarsStore(directory={shm!r}, spill_directory={spill!r}, name="w0", cluster="c", memory_limit=2**30)
        st["a"] = np.arange(100)
        st[("b", 1)] = pd.DataFrame({{"x": [1.0, 2.0]}})
        st["c"] = {{"obj": 1}}
        st.evict()                      # "a" goes to disk
        shm_dir = st.dirs[0]
        with open(os.path.join(shm_dir, "0" * 32 + ".mds.tmp-1-abc"), "wb") as f:
            f.write(b"MARSDS01 torn")  # killed in the middle of a write
        with open(os.path.join(shm_dir, "1" * 32 + ".mds"), "wb") as f:
            f.write(b"garbage")
        print("ready", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    proc = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert "ready" in proc.stdout

    st = make_store(dirs)
    assert len(st) == 0  # Dask requires an empty Worker.data at registration
    found = st.existing_keys()
    assert set(found) == {"a", ("b", 1), "c"}
    assert found["a"] == 800 and st.nbytes_of("a") == 800
    assert not [f for f in files_under(shm) if ".tmp-" in f or f.endswith("1" * 32 + ".mds")]

    a = st.recover("a")
    path, mtime = st._orphans["a"].path, os.stat(st._orphans["a"].path).st_mtime_ns
    st["a"] = a  # what Worker.update_data does: adopted, not rewritten
    assert "a" in st and st.tier_of("a") == "disk" and st.path_of("a") == path
    assert os.stat(path).st_mtime_ns == mtime
    np.testing.assert_array_equal(st["a"], np.arange(100))
    tm.assert_frame_equal(st.recover(("b", 1)), pd.DataFrame({"x": [1.0, 2.0]}))
    st.discard_existing()
    assert st.existing_keys() == {} and len(files_under(shm, spill)) == 1
    st.close()
    assert files_under(shm, spill) == []


# -- a real cluster ---------------------------------------------------------------------
def test_cluster_results_held_in_store_and_removed_on_close(dirs):
    """LocalCluster(processes=True, data=MarsStore): a tensor job's chunks live in the
    workers' stores (some spilled to disk by a small shared-memory limit), results equal
    numpy, and closing the cluster leaves no file in /dev/shm or the spill directory."""
    import dask
    from distributed import Client, LocalCluster

    import mars_dask.tensor as mt

    shm, spill = dirs
    cfg = {"mars-dask.store.directory": shm, "mars-dask.store.spill-directory": spill,
           "mars-dask.store.shm-limit": 300_000}
    with dask.config.set(cfg):
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, data=MarsStore,
                          memory_limit="1GiB", dashboard_address=":0", host="127.0.0.1") as cluster, \
                Client(cluster) as client:
            x = np.random.default_rng(0).random((400, 300))
            t = (mt.tensor(x, chunk_size=100) + 1) * 2
            t.execute()

            def inspect(dask_worker):
                st = dask_worker.data
                return (type(st).__name__, st.name, len(st),
                        sorted({st.tier_of(k) for k in st}), st.dirs)

            deadline = time.monotonic() + 30
            while True:  # results cheap to compute are written write-delay after they are done
                info = client.run(inspect)
                if "pending" not in {tier for i in info.values() for tier in i[3]} or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            assert {i[0] for i in info.values()} == {"MarsStore"}
            assert sorted(i[1] for i in info.values()) == ["0", "1"]  # nanny-assigned names
            assert sum(i[2] for i in info.values()) >= 12
            assert {"disk", "shm"} <= {tier for i in info.values() for tier in i[3]}
            assert files_under(shm) and files_under(spill), (info, shm, spill)
            np.testing.assert_allclose(t.fetch(), (x + 1) * 2)
            s = (t.sum(axis=0)).execute().fetch()
            np.testing.assert_allclose(s, ((x + 1) * 2).sum(axis=0))
            del t
    assert files_under(shm) == [] and os.listdir(shm) == []
    assert not os.path.exists(spill) or os.listdir(spill) == []


def test_transferred_copies_are_written_behind(dirs):
    """On a real cluster, a result fetched from another worker is held pending like a cheap
    task result, not written at once in the worker's event loop (Dask stores it while the
    key is in flight and records no startstops on it)."""
    import dask
    from distributed import Client, LocalCluster

    shm, spill = dirs
    cfg = {"mars-dask.store.directory": shm, "mars-dask.store.spill-directory": spill,
           "mars-dask.store.write-delay": "60s"}
    with dask.config.set(cfg):
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, data=MarsStore,
                          memory_limit="1GiB", dashboard_address=":0", host="127.0.0.1") as cluster, \
                Client(cluster) as client:
            a, b = sorted(client.scheduler_info()["workers"])
            x = client.submit(np.arange, 100_000, workers=[a], key="x")
            y = client.submit(np.sum, x, workers=[b], key="y")
            assert y.result() == np.arange(100_000).sum()

            def tiers(dask_worker):
                return {k: dask_worker.data.tier_of(k) for k in dask_worker.data}

            got = client.run(tiers)
            assert got[a] == {"x": "pending"}
            assert got[b] == {"x": "pending", "y": "pending"}, got


# -- disk-tier I/O: parallel O_DIRECT requests, recycled read buffers --------------------
ODD_SIZES = [0, 1, 4095, 4096, 4097, 3 * 65536 + 5, MiB + 123, 5 * MiB + 7]


@pytest.mark.parametrize("read_mode", ["direct", "mmap"])
@pytest.mark.parametrize("depth", [1, 4])
def test_parallel_disk_io_sizes_not_aligned(dirs, read_mode, depth):
    """Writes and reads with several small requests in flight return exactly the bytes
    stored, for sizes that are not multiples of the 4 KiB alignment, and empty arrays."""
    st = make_store(dirs, name=f"{read_mode}{depth}", shm_limit=0, read_mode=read_mode,
                    io_chunk=65536, io_depth=depth, read_depth=depth)
    rng = np.random.default_rng(3)
    arrays = {n: rng.integers(0, 256, n, dtype=np.uint8) for n in ODD_SIZES}
    arrays["misaligned"] = np.frombuffer(rng.bytes(MiB + 9), np.uint8)[3:]  # unaligned source
    arrays["empty-2d"] = np.empty((0, 5), dtype="f8")
    for k, a in arrays.items():
        st[k] = a
        assert st.tier_of(k) == "disk"
        assert os.path.getsize(st.path_of(k)) == st._entries[k].offset + a.nbytes
    for _ in range(2):
        for k, a in arrays.items():
            got = st[k]
            assert got.dtype == a.dtype and got.shape == a.shape
            np.testing.assert_array_equal(got, a)
            del got
    st.close()


def test_read_file_direct_parallel_and_truncated_file(tmp_path):
    from mars_dask.errors import StoreCorruptError
    from mars_dask.spill import _files

    data = np.random.default_rng(5).integers(0, 256, 3 * MiB + 4321, dtype=np.uint8)
    path = str(tmp_path / "f.mds")
    _files.write_file(path, {"size": data.nbytes}, lambda sink: sink.write(data),
                      direct=True, chunk=256 * 1024, depth=3)
    header, offset, size = _files.read_header(path)
    assert size == data.nbytes
    pool = _files.ReadPool(64 * MiB)
    for depth, chunk in [(1, 4096), (4, 65536), (16, MiB), (3, 100_000)]:
        buf = _files.read_file_direct(path, chunk, depth=depth, pool=pool)
        np.testing.assert_array_equal(np.frombuffer(buf, np.uint8, data.nbytes, offset), data)
        del buf
    plain = _files.read_file_direct(path, MiB)  # the default: a fresh mmap, one request
    assert isinstance(plain, mmap.mmap)
    np.testing.assert_array_equal(np.frombuffer(plain, np.uint8, data.nbytes, offset), data)
    plain.close()
    with open(path, "r+b") as f:
        f.truncate(offset + MiB + 3)
    with pytest.raises(StoreCorruptError):  # a torn file is caught by its header's size
        _files.read_header(path)
    buf = _files.read_file_direct(path, 65536, depth=4, pool=pool)  # reads what is there
    np.testing.assert_array_equal(np.frombuffer(buf, np.uint8, MiB + 3, offset), data[:MiB + 3])


def test_read_file_direct_checks_while_it_reads(tmp_path):
    """read_file_direct(check=...) hashes each block as its pieces arrive (verify's
    ``ready``): any depth and request size gives the same verdict as the check after the
    read; a flipped payload byte or a truncated file is a DataIntegrityError naming the file,
    never a hang or a wrong buffer."""
    from mars_dask.errors import DataIntegrityError
    from mars_dask.spill import _files

    data = np.random.default_rng(6).integers(0, 256, 2 * _files.BLOCK + 12345, dtype=np.uint8)
    path = str(tmp_path / "f.mds")
    _files.write_file(path, {"size": data.nbytes, "key": "k"}, lambda sink: sink.write(data),
                      direct=True, chunk=256 * 1024, depth=3)
    header, offset, size = _files.read_header(path)
    calls = []

    def check(buf, ready):
        calls.append(_files.verify(memoryview(buf)[:offset + size], path=path, key="k", ready=ready))

    for depth, chunk in [(1, 4096), (4, 65536), (16, MiB), (3, 3 * MiB + 1)]:
        buf = _files.read_file_direct(path, chunk, depth=depth, check=check)
        np.testing.assert_array_equal(np.frombuffer(buf, np.uint8, size, offset), data)
        assert calls.pop() == (header, offset, size)
    with open(path, "r+b") as f:
        f.seek(offset + _files.BLOCK + 17)
        b = f.read(1)
        f.seek(offset + _files.BLOCK + 17)
        f.write(bytes([b[0] ^ 0x40]))
    with pytest.raises(DataIntegrityError, match="checksum") as e:
        _files.read_file_direct(path, 65536, depth=4, check=check)
    assert path in str(e.value)
    with open(path, "r+b") as f:
        f.truncate(offset + MiB + 3)
    for depth in (1, 4):
        with pytest.raises(DataIntegrityError, match="truncated|short read"):
            _files.read_file_direct(path, 65536, depth=depth, check=check)


def test_read_pool_recycles_only_unused_buffers():
    from mars_dask.spill import _files

    pool = _files.ReadPool(8 * MiB)
    a = pool.get(2 * MiB)
    view = np.frombuffer(a, np.float64, 10, 4096)  # what a decoded value holds
    del a
    b = pool.get(2 * MiB)
    assert b.__array_interface__["data"][0] != view.base.__array_interface__["data"][0]
    del view
    c = pool.get(2 * MiB)  # the first slab is free again
    assert pool.stats()["hits"] == 1 and pool.stats()["misses"] == 2
    del b, c
    assert pool.stats()["free"] == 2 * pool.size_class(2 * MiB)
    assert pool.trim(0) == 2 * pool.size_class(2 * MiB) and pool.stats()["bytes"] == 0
    small = pool.get(1000)  # below ReadPool.MIN: a fresh buffer, not pooled
    assert isinstance(small, mmap.mmap) and pool.stats()["bytes"] == 0


def test_direct_reads_reuse_buffers_and_keep_held_values_intact(dirs):
    st = make_store(dirs, shm_limit=0, read_mode="direct")
    arrs = [np.full(MiB // 4, i, dtype=np.float64) for i in range(4)]  # 2 MiB each
    for i, a in enumerate(arrs):
        st[i] = a
    held = st[0]  # a task still uses it: its buffer must not be reused
    for _ in range(3):
        for i in range(1, 4):
            np.testing.assert_array_equal(st[i], arrs[i])
    np.testing.assert_array_equal(held, arrs[0])
    stats = st.read_pool.stats()
    assert stats["misses"] <= 2 and stats["hits"] >= 8, stats
    st.evict()  # memory pressure: free read buffers go first
    assert st.read_pool.stats()["free"] == 0
    np.testing.assert_array_equal(held, arrs[0])
    st.close()


def _disk_frames():
    frames = _frames()
    n = 50_000  # several I/O requests
    rng = np.random.default_rng(7)
    f = rng.random(n)
    f[::7] = np.nan
    frames["large"] = pd.DataFrame({
        "f": f, "i": np.arange(n, dtype="i8"), "h": f.astype("f2"),
        "s": pd.Series(np.where(rng.random(n) < 0.1, None, "v" + pd.Series(np.arange(n)).astype(str)),
                       dtype="str"),
        "c": pd.Categorical.from_codes(rng.integers(-1, 3, n), ["a", "b", "c"]),
        "b": rng.random(n) > 0.5,
        "u": pd.array(np.where(rng.random(n) < 0.2, None, np.arange(n)), dtype="UInt32"),
    }, index=pd.RangeIndex(10, 10 + 3 * n, 3, name="r"))
    frames["float-index"] = pd.DataFrame({"v": [1.0, np.nan]}, index=pd.Index([0.5, np.nan], name="x"))
    frames["large-numeric"] = frames["large"][["f", "i", "h", "b"]].set_index("i")  # pandas' blocks
    return frames


@pytest.mark.parametrize("read_mode", ["mmap", "direct"])
@pytest.mark.parametrize("name", list(_disk_frames()))
def test_dataframe_disk_tier_roundtrip(dirs, name, read_mode):
    """pandas values with strings, nulls, NaN, categoricals, nullable ints, a RangeIndex
    with a step (stored as metadata) come back equal from the disk tier."""
    df = _disk_frames()[name]
    st = make_store(dirs, shm_limit=0, read_mode=read_mode, io_chunk=65536)
    st["k"] = df
    plain = name in ("int-columns", "empty", "float-index", "large-numeric")
    assert st.tier_of("k") == "disk" and st._entries["k"].header["kind"] == ("blocks" if plain else "arrow")
    tm.assert_frame_equal(st["k"], df)
    s = df.iloc[:, 0].rename("col")
    st["s"] = s
    tm.assert_series_equal(st["s"], s)
    st.close()


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs Linux /proc")
def test_numeric_columns_stay_views_of_the_file(dirs):
    """Float columns with NaN are stored as NaN (not nulls): read back without a copy."""
    n = 100_000  # above HOLD_AS_IS: held as read back from the file
    df = pd.DataFrame({"f": np.where(np.arange(n) % 3 == 1, np.nan, 1.0), "i": np.arange(n)})
    st = make_store(dirs)
    st["k"] = df
    got = st["k"]
    tm.assert_frame_equal(got, df)
    path = st.path_of("k")
    with open("/proc/self/maps") as f:
        ranges = [tuple(int(x, 16) for x in line.split()[0].split("-"))
                  for line in f if line.rstrip().endswith(path)]
    for c in df.columns:
        addr = got[c].to_numpy().__array_interface__["data"][0]
        assert any(lo <= addr < hi for lo, hi in ranges), c
    st.close()


def test_sequences_of_arrays_and_frames(dirs):
    """A shuffle map task's tuple of pieces is stored item by item, without pickling."""
    df = pd.DataFrame({"a": np.arange(6), "b": np.linspace(0, 1, 6)})
    pieces = tuple(df.iloc[i::3] for i in range(3)) + (df.iloc[:0], np.arange(5.0), df["b"])
    st = make_store(dirs)
    st["t"], st["l"] = pieces, list(pieces[:2])
    st["o"], st["e"] = (df, {"x": 1}), ()
    assert [st._entries[k].header["kind"] for k in "tloe"] == ["seq", "seq", "dask", "dask"]
    st2 = make_store(dirs, name="w0")
    st.close(remove=False)
    source = st2.recover  # the files alone
    t, lst = source("t"), source("l")
    assert type(t) is tuple and type(lst) is list and len(t) == len(pieces)
    for got, want in zip(t, pieces):
        if isinstance(want, np.ndarray):
            np.testing.assert_array_equal(got, want)
        elif isinstance(want, pd.Series):
            tm.assert_series_equal(got, want)
        else:
            tm.assert_frame_equal(got, want)
    tm.assert_frame_equal(lst[1], pieces[1])
    got_o = source("o")
    tm.assert_frame_equal(got_o[0], df)
    assert got_o[1] == {"x": 1} and source("e") == ()
    st2.close()


class _FakeWorker:
    """What the store reads of its worker when a result is stored: the TaskState's state,
    compute time (startstops) and size (as Dask's are when it stores a value: see
    test_transferred_copies_are_written_behind for the real ones)."""

    def __init__(self):
        self.state = types.SimpleNamespace(tasks={})

    def finished(self, key, seconds, nbytes=800, annotations=None):
        self.state.tasks[key] = types.SimpleNamespace(
            state="executing", previous=None, nbytes=nbytes, annotations=annotations or {},
            startstops=[{"action": "compute", "start": 10.0, "stop": 10.0 + seconds}])

    def fetched(self, key, nbytes=800):
        """A copy received from another worker: Dask stores it while the key is in flight,
        and records the transfer's time on the task that needed it, not on the key."""
        self.state.tasks[key] = types.SimpleNamespace(state="flight", previous=None, nbytes=nbytes,
                                                      annotations={}, startstops=[])


def _write_behind_store(dirs, delay):
    st = make_store(dirs, write_delay=delay, write_delay_max_compute=0.2)
    w = _FakeWorker()
    st._worker = weakref.ref(w)
    return st, w


def test_write_behind_skips_short_lived_results(dirs):
    st, w = _write_behind_store(dirs, 0.3)
    x, y = np.arange(100.0), np.arange(50)
    w.finished("cheap", 0.001)
    w.finished("costly", 1.0)
    w.finished("mid", 0.25)  # under the delay, over write_delay_max_compute (0.2 s)
    w.fetched("copy")
    st["cheap"], st["costly"], st["scattered"], st["mid"], st["copy"] = x, y, x + 1, y + 1, x + 2
    assert st.tier_of("cheap") == "pending" and st.path_of("cheap") is None
    assert st.tier_of("copy") == "pending"
    del st["copy"]
    assert st.tier_of("mid") == "shm"
    assert st["cheap"] is x  # the object itself until it is written
    assert st.tier_of("costly") == "shm" and st.tier_of("scattered") == "shm"  # written at once
    del st["cheap"]  # released before its write: never written
    w.finished("later", 0.001)
    st["later"] = x
    deadline = time.monotonic() + 10
    while st.tier_of("later") == "pending" and time.monotonic() < deadline:
        time.sleep(0.02)
    assert st.tier_of("later") == "shm" and os.path.exists(st.path_of("later"))
    np.testing.assert_array_equal(st["later"], x)
    assert sorted(os.path.basename(os.path.dirname(f)) for f in files_under(*st.dirs)) == ["w0"] * 4
    st.close()


def test_a_shuffle_map_output_waits_however_long_it_took(dirs):
    """A shuffle's map output is read only by its piece tasks, which run at once and hold
    views of it: written at once (its compute took over write_delay_max_compute) it was
    unlinked again within milliseconds. It waits like a cheap result; other slow results
    are still written at once."""
    from mars_dask.plugins import _protocol as P

    st, w = _write_behind_store(dirs, 60)
    pieces = (pd.DataFrame({"a": np.arange(3)}), pd.DataFrame({"a": np.arange(3, 5)}))
    w.finished("map", 1.0, annotations={P.ANN_BOUNDARY: "shuffle", P.ANN_TILEABLE: "t"})
    w.finished("reduce", 1.0, annotations={P.ANN_TILEABLE: "t"})
    st["map"], st["reduce"] = pieces, pieces[0]
    assert st.tier_of("map") == "pending" and st.path_of("map") is None
    assert st.tier_of("reduce") == "shm"
    del st["map"]  # its pieces were taken: never written
    assert files_under(*st.dirs) == [st.path_of("reduce")]
    st.close()


def test_write_behind_flushes_on_close_keeping_files_and_spills(dirs):
    st, w = _write_behind_store(dirs, 60)
    vals = {f"k{i}": np.full(1000, i, dtype="f8") for i in range(4)}
    for k, v in vals.items():
        w.finished(k, 0.0, nbytes=v.nbytes)
        st[k] = v
    assert {st.tier_of(k) for k in vals} == {"pending"}
    assert st.evict() > 0  # the memory monitor spills a pending value: written to disk
    assert "disk" in {st.tier_of(k) for k in vals}
    st.close(remove=False)  # a worker closing for a restart: everything reaches a file
    st2 = make_store(dirs)
    assert set(st2.existing_keys()) == set(vals)
    for k, v in vals.items():
        np.testing.assert_array_equal(st2.recover(k), v)
    st2.close()


class _BlockedWrites:
    """Holds the write-behind thread inside its write (the store's lock released) until
    ``go`` is set; ``started`` is set when it begins. Other threads' writes go through."""

    def __init__(self, monkeypatch):
        from mars_dask.spill import _files

        self.started, self.go = threading.Event(), threading.Event()
        real = _files.write_tmp

        def write_tmp(*a, **kw):
            if threading.current_thread().name.startswith("mars-dask-store"):
                self.started.set()
                assert self.go.wait(10)
            return real(*a, **kw)

        monkeypatch.setattr(_files, "write_tmp", write_tmp)

    def wait_done(self, st, timeout=10):
        deadline = time.monotonic() + timeout
        while st._writing is not None or st._queue:
            assert time.monotonic() < deadline, "write-behind did not finish"
            time.sleep(0.01)


@pytest.mark.parametrize("change", ["none", "delete", "replace", "spill", "close"])
def test_write_behind_writes_without_the_lock(dirs, monkeypatch, change):
    """The writer thread writes with the store's lock released: reads and stores go on
    meanwhile, and a value deleted, replaced, spilled or closed during its write leaves
    no stray file and the newer state wins."""
    st, w = _write_behind_store(dirs, 0.05)
    old, new = np.arange(1000.0), -np.arange(1000.0)
    w.finished("k", 0.0, nbytes=old.nbytes)
    st["k"] = old
    blocked = _BlockedWrites(monkeypatch)
    assert blocked.started.wait(10)
    # the lock is free: another thread reads and stores (a synchronous write: scatter)
    done = []
    t = threading.Thread(target=lambda: done.append((st["k"] is old, st.__setitem__("s", old + 1))))
    t.start()
    t.join(10)
    assert done == [(True, None)]
    if change == "delete":
        del st["k"]
    elif change == "replace":
        w.finished("k", 1.0, nbytes=new.nbytes)  # costly: written at once
        st["k"] = new
    elif change == "spill":
        while st.tier_of("k") == "pending":
            assert st.evict() > 0  # the LRU's least recent: "k", written to disk now
    elif change == "close":
        blocked.go.set()
        st.close()
        blocked.wait_done(st)
        assert files_under(*st.dirs) == [] and not any(os.path.exists(d) for d in st.dirs)
        return
    blocked.go.set()
    blocked.wait_done(st)
    left = files_under(*st.dirs)
    assert not [f for f in left if ".tmp-" in f]
    if change == "delete":
        assert "k" not in st and len(left) == 1  # "s" alone
    else:
        want, tier = {"none": (old, "shm"), "replace": (new, "shm"), "spill": (old, "disk")}[change]
        assert st.tier_of("k") == tier and len(left) == 2
        np.testing.assert_array_equal(st["k"], want)
        st2 = make_store(dirs)
        st.close(remove=False)
        np.testing.assert_array_equal(st2.recover("k"), want)  # the file holds it too
        st2.close()
        return
    st.close()


def test_small_frames_are_held_as_they_are(dirs):
    """A small frame is written, but held as the object stored (re-reading builds a new
    frame, which costs more than it saves); its weight counts both copies."""
    from mars_dask.spill._store import HOLD_AS_IS

    small = pd.DataFrame({"a": np.arange(100)})
    big = pd.DataFrame({"a": np.arange(HOLD_AS_IS // 8 + 1)})
    st = make_store(dirs)
    st["s"], st["b"] = small, big
    assert st["s"] is small and st["b"] is not big and st.tier_of("s") == "shm"
    e = st._entries["s"]
    assert e.weight_in_memory == e.offset + e.size + e.nbytes
    st2 = make_store(dirs)
    st.close(remove=False)
    tm.assert_frame_equal(st2.recover("s"), small)
    st2.close()


def test_large_frames_are_read_back_only_when_read(dirs):
    """A frame above HOLD_AS_IS is written and dropped from the heap; it is built from its
    file when first read (then held), not when written: a result nobody reads again costs
    no decoding. The unread value still weighs its file and spills like any other."""
    from mars_dask.spill._store import _UNREAD, HOLD_AS_IS

    n = HOLD_AS_IS // 8 + 1
    frames = {f"f{i}": pd.DataFrame({"a": np.arange(n) + i, "b": np.ones(n)}) for i in range(3)}
    size = frames["f0"].memory_usage(index=False).sum()
    st = make_store(dirs, shm_limit=int(2.5 * size))
    st["f0"] = frames["f0"]
    assert st._lru.d["f0"] is _UNREAD and st.tier_of("f0") == "shm"
    assert st._lru.total_weight >= size
    got = st["f0"]
    tm.assert_frame_equal(got, frames["f0"])
    assert st._lru.d["f0"] is got and st["f0"] is got  # read once, then held
    st["f1"], st["f2"] = frames["f1"], frames["f2"]  # over the limit: f0 goes to disk
    assert st.tier_of("f0") == "disk" and st._lru.d["f2"] is _UNREAD
    for k, df in frames.items():
        tm.assert_frame_equal(st[k], df)
    st.close()
    assert files_under(*dirs) == []


# -- checksum format and read ahead ----------------------------------------------------------
@pytest.mark.parametrize("n", [0, 1, 4095, _files.BLOCK - 1, _files.BLOCK, _files.BLOCK + 1,
                               3 * _files.BLOCK + 7])
def test_block_checksum_streamed_equals_parallel(n):
    """The payload checksum computed while writing (in pieces of any size) is the one every
    reader computes, on one core or several; any flipped byte changes it."""
    data = np.random.default_rng(n).integers(0, 256, n, dtype=np.uint8)
    s = _files.BlockSum()
    for i in range(0, n, 1_000_003):
        s.update(data[i:i + 1_000_003])
    d = s.intdigest()
    assert {_files.payload_checksum(data, lanes) for lanes in (1, 2, 3, 4)} == {d}
    if n:
        data[n // 2] ^= 1
        assert _files.payload_checksum(data) != d


def test_files_of_the_previous_format_are_still_read(dirs):
    """A file of format 02 (one checksum over the whole payload) verifies and decodes; the
    same file with a flipped payload byte does not."""
    import struct

    import xxhash

    st = make_store(dirs, shm_limit=0, memory_limit=2**30)
    a = np.arange(3 * 2**20, dtype=np.int64)
    st["k"] = a
    path = st.path_of("k")
    st.close(remove=False)
    with open(path, "r+b") as f:
        raw = bytearray(f.read())
        magic, n, crc, size, _, mac = _files._PRELUDE.unpack_from(raw, 0)
        header, offset = _files.parse_header(raw)
        old = xxhash.xxh3_64(bytes(raw[offset:offset + size])).intdigest()
        struct.pack_into(_files._PRELUDE.format, raw, 0, b"MARSDS02", n, crc, size, old, mac)
        f.seek(0)
        f.write(raw)
    header, buf, off, sz = _files.open_verified(path, key="k")
    np.testing.assert_array_equal(np.frombuffer(buf, np.int64, count=len(a), offset=off), a)
    raw[offset + 100] ^= 1
    with open(path, "wb") as f:
        f.write(raw)
    with pytest.raises(DataIntegrityError, match="checksum"):
        _files.open_verified(path, key="k")


def _wait_ahead(st, n, timeout=30):
    deadline = time.monotonic() + timeout
    while not (len(st._ahead) >= n and all(f.done() for _, f in st._ahead.values())):
        assert time.monotonic() < deadline, "read ahead did not finish"
        time.sleep(0.01)


def test_read_ahead_checks_files_before_the_task_reads_them(dirs, read_mode="mmap"):
    """prefetch() reads and checks disk files in the background (at most read_ahead at a
    time); the next read of such a key uses that buffer (ahead_hits), values exact; keys in
    memory are not read ahead."""
    st = make_store(dirs, shm_limit=0, memory_limit=2**30, read_mode=read_mode, read_ahead=2)
    arrs = [np.random.default_rng(i).random(2**20 // 8 * 3) for i in range(4)]
    for i, a in enumerate(arrs):
        st[i] = a
    assert all(st.tier_of(i) == "disk" for i in range(4))
    st.prefetch([0, 1, 2, 3, "missing"])
    _wait_ahead(st, 2)
    assert set(st._ahead) == {0, 1}  # bounded
    assert all(st._entries[k].verified for k in (0, 1)) and not st._entries[2].verified
    for i in (0, 1):
        np.testing.assert_array_equal(st[i], arrs[i])
    assert st.ahead_hits == 2 and not st._ahead
    st.prefetch([2, 3])
    _wait_ahead(st, 2)
    for i in (3, 2):
        np.testing.assert_array_equal(st[i], arrs[i])
    assert st.ahead_hits == 4
    st.close()
    direct = make_store(dirs, name="w1", shm_limit=0, memory_limit=2**30, read_mode="direct")
    direct[0] = arrs[0]
    direct.prefetch([0])  # direct reads are not read ahead (they would hold private buffers)
    assert not direct._ahead and not direct._ahead_draining
    np.testing.assert_array_equal(direct[0], arrs[0])
    direct.close()


def test_read_ahead_of_a_damaged_file_leaves_the_error_to_the_reader(dirs):
    """A file damaged on disk fails its check in the read-ahead thread; the task's own read
    then raises DataIntegrityError naming the key (never a value)."""
    st = make_store(dirs, shm_limit=0, memory_limit=2**30, read_ahead=2)
    st["bad"] = np.arange(2**20, dtype=np.float64)
    st["gone"] = np.arange(10.0)
    with open(st.path_of("bad"), "r+b") as f:
        f.seek(-100, os.SEEK_END)
        b = f.read(1)
        f.seek(-100, os.SEEK_END)
        f.write(bytes([b[0] ^ 0xFF]))
    st.prefetch(["bad", "gone"])
    del st["gone"]  # deleted while (or before) it is read ahead
    deadline = time.monotonic() + 30
    while st._ahead_draining:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    with pytest.raises(DataIntegrityError, match="bad"):
        st["bad"]
    assert "gone" not in st
    st.close()


def _slow_sum(a):
    time.sleep(0.1)
    return float(a.sum())


def test_worker_reads_ahead_the_inputs_of_ready_tasks(dirs):
    """On a cluster configured as users get it (store + plugins), with results on disk and
    more ready tasks than threads, the worker plugin has the store read the next tasks'
    inputs ahead (the store's ahead_hits count reads served by a read-ahead); results
    exact."""
    import dask
    import distributed
    from distributed import Client, LocalCluster

    from tests.conftest import MARS_PRELOADS

    shm, spill = dirs
    cfg = {"mars-dask.store.directory": shm, "mars-dask.store.spill-directory": spill,
           "mars-dask.store.shm-limit": 4096, "mars-dask.store.write-delay": 0}
    with dask.config.set(cfg):
        with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, memory_limit="2GiB",
                          dashboard_address=":0", host="127.0.0.1", **MARS_PRELOADS) as cluster, \
                Client(cluster) as client:
            xs = [client.submit(np.full, 2**17, float(i), key=f"x-{i}") for i in range(16)]
            distributed.wait(xs)
            tiers = client.run(lambda dask_worker: sorted({dask_worker.data.tier_of(k)
                                                            for k in dask_worker.data}))
            assert list(tiers.values()) == [["disk"]], tiers
            sums = client.gather([client.submit(_slow_sum, x, key=f"s-{i}") for i, x in enumerate(xs)])
            assert sums == [float(i) * 2**17 for i in range(16)]
            hits = client.run(lambda dask_worker: dask_worker.data.ahead_hits)
            assert list(hits.values())[0] >= 4, hits  # typically 8-15 of 16 (a read ahead let go as its task starts is not counted)


def test_a_live_store_takes_over_a_dead_siblings_files(dirs):
    """``take_over``: a worker on the node gives back what a dead worker process left in its
    store, at once (no restart needed): each file is moved (not copied) into the live store
    and checked first; storing the returned object adopts the file; a key whose file is
    missing or damaged is left out (and the damaged file is not kept); the dead worker's
    successor no longer finds what was taken."""
    dead = make_store(dirs, name="w0", write_delay=0)
    x, y, z = np.arange(1000.0), np.ones((50, 40)), np.full(300, 7.0)
    df = pd.DataFrame({"a": np.arange(500), "b": np.linspace(0, 1, 500)})
    for k, v in {("x", 0): x, ("y", 1): y, "z": z, "df": df}.items():
        dead[k] = v
    dead_dirs = dead.dirs
    damaged = dead._entries["z"].path
    with open(damaged, "r+b") as f:  # one payload byte flipped
        f.seek(-1, os.SEEK_END)
        b = f.read(1)
        f.seek(-1, os.SEEK_END)
        f.write(bytes([b[0] ^ 0xFF]))
    dead._closed = True  # SIGKILLed: it neither writes nor removes anything any more

    live = make_store(dirs, name="w1", write_delay=0)
    live["own"] = np.zeros(10)
    got = live.take_over("w0", [("x", 0), ("y", 1), "z", "df", "never-written"])
    assert set(got) == {("x", 0), ("y", 1), "df"}
    np.testing.assert_array_equal(got[("x", 0)], x)
    np.testing.assert_array_equal(got[("y", 1)], y)
    tm.assert_frame_equal(got["df"], df)
    # moved, not copied: gone from the dead worker's directory, in the live one's
    left = files_under(*dead_dirs)
    assert left == [] and not os.path.exists(damaged)
    n_files = len(files_under(*live.dirs))
    for k, v in got.items():
        live[k] = v  # what Worker.update_data does: adopts the file, writes nothing
    assert len(files_under(*live.dirs)) == n_files == 4
    np.testing.assert_array_equal(live[("x", 0)], x)
    # a second ask finds nothing; the successor of w0 finds nothing of it either
    assert live.take_over("w0", [("x", 0)]) == {}
    successor = make_store(dirs, name="w0")
    assert successor.existing_keys() == {}
    successor.close()
    # deleting a taken-over key removes its file, as for any key of the live store
    del live[("y", 1)]
    assert len(files_under(*live.dirs)) == 3
    live.close()
    assert files_under(*live.dirs) == []


def test_a_successor_scanning_while_its_files_are_taken_over_skips_them(dirs, monkeypatch):
    """The dead worker's restarted process scans its directory while a sibling moves files
    out of it: a file gone between the listing and its read is skipped, not an error."""
    dead = make_store(dirs, name="w0", write_delay=0)
    for i in range(4):
        dead[("k", i)] = np.arange(100.0) + i
    dead._closed = True
    live = make_store(dirs, name="w1")
    real_read_header = _files.read_header
    taken = []

    def read_header_racing(path):
        if not taken:  # the sibling takes one key right after the successor listed the files
            taken.append(None)
            taken[0] = live.take_over("w0", [("k", 2)])
        return real_read_header(path)

    monkeypatch.setattr(_files, "read_header", read_header_racing)
    successor = make_store(dirs, name="w0")
    found = successor.existing_keys()
    monkeypatch.setattr(_files, "read_header", real_read_header)
    assert set(taken[0]) == {("k", 2)}
    assert set(found) == {("k", 0), ("k", 1), ("k", 3)}
    successor.close()
    live.close()


def test_write_now_for_pauses_write_behind_and_writes_what_waits(dirs, monkeypatch):
    """``write_now_for`` (asked by the scheduler after a worker process was lost): the values
    waiting for their write-behind are written at once, and values stored meanwhile are
    written before ``store[key] = value`` returns; afterwards write-behind holds back again."""
    st = make_store(dirs, write_delay="30s", write_delay_max_compute="1s")
    # the worker's view of each key: a task result that took 1 ms to compute
    task = types.SimpleNamespace(nbytes=8000, state="memory", previous=None,
                                 startstops=[{"action": "compute", "start": 0.0, "stop": 0.001}])
    worker = types.SimpleNamespace(state=types.SimpleNamespace(tasks=types.SimpleNamespace(get=lambda key: task)))
    monkeypatch.setattr(st, "_bound_worker", lambda: worker)
    st["a"] = np.arange(1000.0)
    assert st.tier_of("a") == "pending"
    st.write_now_for(0.5)
    deadline = time.monotonic() + 10
    while st.tier_of("a") == "pending" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert st.tier_of("a") == "shm"  # written now, not in 30 s
    st["b"] = np.arange(10.0)
    assert st.tier_of("b") == "shm"  # written before the assignment returned
    time.sleep(0.6)
    st["c"] = np.arange(10.0)
    assert st.tier_of("c") == "pending"  # the pause is over
    st.close()


def test_a_young_result_written_in_the_pause_is_held_as_is_until_it_ages(dirs, monkeypatch):
    """While write-behind is paused a cheap result is written at once, but the store keeps
    the task's own array (no mapping of the file to read it back, which cost as much as
    the write) and accounts for both; ``write_delay`` later, if still stored, the array is
    let go and the value is read from its file. A young value deleted is recycled whole."""
    st = make_store(dirs, write_delay="0.3s", write_delay_max_compute="1s")
    task = types.SimpleNamespace(nbytes=80_000, state="memory", previous=None,
                                 startstops=[{"action": "compute", "start": 0.0, "stop": 0.001}])
    worker = types.SimpleNamespace(state=types.SimpleNamespace(tasks=types.SimpleNamespace(get=lambda key: task)))
    monkeypatch.setattr(st, "_bound_worker", lambda: worker)
    st.write_now_for(60)
    a, b = np.arange(10_000.0), np.arange(10_000.0) * 2
    st["a"] = a
    st["b"] = b
    assert st.tier_of("a") == st.tier_of("b") == "shm"  # on file before the assignment returned
    assert st["a"] is a and st._entries["a"].mm is None  # held as is, the file never mapped
    file_bytes = os.path.getsize(st.path_of("a"))
    assert st.stats()["memory"] == 2 * (file_bytes + a.nbytes)  # file and array both counted
    np.testing.assert_array_equal(st._load(st._entries["a"]), a)  # the file holds the value
    inode = os.stat(st.path_of("b")).st_ino
    del st["b"]
    st["c"] = np.arange(10_000.0) * 3
    assert os.stat(st.path_of("c")).st_ino == inode  # b's file, never mapped, reused whole
    np.testing.assert_array_equal(st._load(st._entries["c"]), np.arange(10_000.0) * 3)
    deadline = time.monotonic() + 10
    while st.stats()["memory"] > 2 * file_bytes and time.monotonic() < deadline:
        time.sleep(0.02)
    assert st.stats()["memory"] == 2 * file_bytes  # the arrays let go: the files only
    got = st["a"]
    assert got is not a and mmap_backed(got)  # read back from the file
    np.testing.assert_array_equal(got, a)
    st.close()


