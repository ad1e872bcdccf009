"""Every value a task can return survives the store exactly.

Exactly: values (bit for bit, NaN included), dtype, shape, memory order where numpy keeps it
(an F-ordered array comes back F-ordered), index, column labels and their types, names,
freq. Three paths, each against a catalogue of values and hypothesis-generated ones:

1. the codecs alone (``encode`` into a buffer, ``decode`` from it);
2. a ``MarsStore`` holding the value in shared memory, after moving it to disk (read back by
   memory map and by O_DIRECT), and after a new store process adopts the file (the restart
   path, which verifies the checksum);
3. a real worker's store on a cluster configured as users get it (the nanny preload installs
   MarsStore): scattered in, forced to disk on the worker, computed on, gathered.
"""

from __future__ import annotations

import io
import os
import shutil
import uuid

import numpy as np
import pandas as pd
import pandas.testing as tm
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from hypothesis.extra import pandas as hpd

from mars_dask.spill import MarsStore
from mars_dask.spill._codec import decode, encode

pytestmark = pytest.mark.timeout(300)


# -- exact comparison ---------------------------------------------------------------------
def assert_same(got, expected, where="value"):
    """``got`` is ``expected`` in every respect the store must keep."""
    assert type(got) is type(expected) or (
        isinstance(expected, np.ndarray) and type(got) is np.ndarray), (where, type(got), type(expected))
    if isinstance(expected, np.ndarray):
        assert got.dtype == expected.dtype, (where, got.dtype, expected.dtype)
        assert got.shape == expected.shape, (where, got.shape, expected.shape)
        if expected.ndim > 1 and expected.flags.f_contiguous and not expected.flags.c_contiguous:
            assert got.flags.f_contiguous, (where, "F order lost")
        if expected.dtype.hasobject:
            assert got.tolist() == expected.tolist(), where
        else:  # bit for bit: NaN payloads, -0.0, NaT
            assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(expected).tobytes(), where
    elif isinstance(expected, pd.DataFrame):
        tm.assert_frame_equal(got, expected, check_exact=True, check_index_type=True,
                              check_column_type=True, check_freq=True, check_flags=True)
        assert list(map(type, got.columns)) == list(map(type, expected.columns)), where
    elif isinstance(expected, pd.Series):
        tm.assert_series_equal(got, expected, check_exact=True, check_index_type=True, check_freq=True)
    elif isinstance(expected, pd.Index):
        tm.assert_index_equal(got, expected, exact=True, check_exact=True)
        assert got.names == expected.names, where
        assert getattr(got, "freq", None) == getattr(expected, "freq", None), where
    elif isinstance(expected, tuple | list):
        assert len(got) == len(expected), where
        for i, (g, e) in enumerate(zip(got, expected)):
            assert_same(g, e, f"{where}[{i}]")
    elif isinstance(expected, dict):
        assert list(got) == list(expected), where
        for k in expected:
            assert_same(got[k], expected[k], f"{where}[{k!r}]")
    elif isinstance(expected, float) and np.isnan(expected):
        assert np.isnan(got), where
    else:
        assert got == expected, (where, got, expected)


# -- the catalogue --------------------------------------------------------------------------
def _numpy_values() -> dict:
    rng = np.random.default_rng(0)
    base = rng.random((6, 8))
    out = {
        "empty-0xk": np.empty((0, 4)),
        "empty-kx0": np.empty((4, 0), dtype="i8"),
        "empty-1d": np.array([], dtype="f4"),
        "empty-3d": np.zeros((2, 0, 3), dtype="M8[ns]"),
        "0-d": np.array(3.5),
        "0-d-int": np.array(7, dtype="u2"),
        "negative-strides": base[::-1, ::-2],
        "broadcast-zero-stride": np.broadcast_to(np.arange(5.0), (4, 5)),
        "non-contiguous": base[1::2, ::3],
        "F-order": np.asfortranarray(base),
        "F-order-3d": np.asfortranarray(rng.random((3, 4, 5))),
        "nan-and-signed-zero": np.array([np.nan, -0.0, np.inf, -np.inf, 1e-310]),
        "datetime64[ns]": np.array(["2020-01-01T00:00:00.123456789", "NaT"], dtype="M8[ns]"),
        "datetime64[D]": np.arange("2020-01-01", "2020-01-08", dtype="M8[D]"),
        "timedelta64[s]": np.array([1, -2, "NaT"], dtype="m8[s]"),
        "complex64": (rng.random(5) + 1j * rng.random(5)).astype("c8"),
        "complex128": rng.random((2, 3)) * (1 - 2j),
        "bytes": np.array([b"ab", b"", b"xyz\x00"], dtype="S4"),
        "unicode": np.array(["α", "βγ", ""], dtype="U3"),
        "structured": np.array([(1, 2.0, b"a"), (3, np.nan, b"bc")],
                               dtype=[("a", "<i4"), ("b", "<f8"), ("c", "S2")]),
        "structured-nested": np.zeros(3, dtype=[("p", [("x", "f4"), ("y", "f4")]), ("n", "i2", (2,))]),
        "big-endian": np.arange(4, dtype=">i4"),
        "bool": rng.random((3, 3)) > 0.5,
        "float16": rng.random(4).astype("f2"),
        "object": np.array([1, "a", None, (2, 3)], dtype=object),
        "object-2d": np.array([[1.5, None], ["x", {"k": 1}]], dtype=object),
    }
    for dt in np.typecodes["AllInteger"] + np.typecodes["AllFloat"] + "?":
        out[f"dtype-{np.dtype(dt).str}"] = (rng.random(5) * 100).astype(dt)
    return out


def _pandas_values() -> dict:
    idx = pd.date_range("2021-01-01", periods=4, freq="D", name="when")
    mi = pd.MultiIndex.from_tuples([("a", 1), ("a", 2), ("b", 1), ("c", 3)], names=["k", "n"])
    mcols = pd.MultiIndex.from_tuples([("x", "p"), ("x", "q"), ("y", "p")], names=["top", None])
    ext = pd.DataFrame({
        "Int64": pd.array([1, None, 3, 4], dtype="Int64"),
        "UInt8": pd.array([1, 2, None, 4], dtype="UInt8"),
        "Float32": pd.array([1.5, None, 3.0, np.nan], dtype="Float32"),
        "boolean": pd.array([True, None, False, True], dtype="boolean"),
        "string[pyarrow]": pd.array(["a", None, "ccc", ""], dtype="string[pyarrow]"),
        "string[python]": pd.array(["a", None, "b", "c"], dtype="string[python]"),
        "str": pd.Series(["u", "v", None, "w"], dtype="str"),
        "category": pd.Categorical(["x", "y", "x", None], categories=["y", "x", "z"], ordered=True),
        "tz": pd.date_range("2020-03-08", periods=4, freq="h", tz="US/Eastern"),
        "interval": pd.arrays.IntervalArray.from_breaks([0, 1, 2.5, 3, 4], closed="left"),
        "period": pd.period_range("2020-01", periods=4, freq="M"),
        "sparse": pd.arrays.SparseArray([0, 0, 1.5, 0]),
        "timedelta": pd.to_timedelta([1, 2, None, 4], unit="s"),
        "int64[pyarrow]": pd.array([1, None, 3, 4], dtype="int64[pyarrow]"),
    })
    num = pd.DataFrame(np.arange(12.0).reshape(4, 3), columns=["a", "b", "c"])
    return {
        "frame-empty-rows": num.iloc[:0],
        "frame-empty-cols": num.iloc[:, :0],
        "frame-empty": pd.DataFrame(),
        "frame-empty-after-filter": num[num["a"] > 100],
        "frame-plain": num,
        "frame-int-labels": pd.DataFrame(np.ones((3, 2), dtype="i4"), columns=[10, 20], index=[5, 6, 7]),
        "frame-mixed-labels": pd.DataFrame([[1, 2.0]], columns=pd.Index(["a", 1], dtype=object)),
        "frame-float-labels": pd.DataFrame([[1, 2]], columns=[0.5, np.nan]),
        "frame-tuple-labels": pd.DataFrame([[1, 2]], columns=pd.Index([("a", 1), ("b", 2)], tupleize_cols=False)),
        "frame-timestamp-labels": pd.DataFrame([[1, 2]], columns=pd.to_datetime(["2020-01-01", "2020-01-02"])),
        "frame-named-columns": num.rename_axis(columns="cols", index="rows"),
        "frame-datetime-index": pd.DataFrame({"v": [1.0, 2, 3, 4]}, index=idx),
        "frame-range-index-step": pd.DataFrame({"v": [1, 2, 3]}, index=pd.RangeIndex(10, 4, -2, name="r")),
        "frame-multiindex-rows": pd.DataFrame({"v": [1, 2, 3, 4], "s": list("wxyz")}, index=mi),
        "frame-multiindex-cols": pd.DataFrame(np.arange(12).reshape(4, 3), columns=mcols),
        "frame-multiindex-both": pd.DataFrame(np.arange(12.0).reshape(4, 3), index=mi, columns=mcols),
        "frame-duplicate-cols": pd.DataFrame([[1, 2, 3]], columns=["a", "a", "b"]),
        "frame-object": pd.DataFrame({"o": [1, "a", None], "d": [{"k": 1}, [], 2.5]}),
        "frame-bool-datetime": pd.DataFrame({"b": [True, False], "t": pd.to_datetime(["2020", "NaT"])}),
        "frame-extension": ext,
        "frame-extension-empty": ext.iloc[:0],
        "frame-categorical-no-categories": pd.DataFrame({"c": pd.Series([], dtype="str").astype("category")}),
        "series-float": pd.Series([1.0, np.nan], name="x"),
        "series-no-name": pd.Series([1, 2, 3], dtype="i1"),
        "series-int-name": pd.Series([1, 2], name=0),
        "series-tuple-name": pd.Series([1, 2], name=("a", 1)),
        "series-timestamp-name": pd.Series([1, 2], name=pd.Timestamp("2020-01-01")),
        "series-empty": pd.Series([], dtype="f8", name="e"),
        "series-empty-object": pd.Series([], dtype=object),
        "series-multiindex": pd.Series([1, 2, 3, 4], index=mi, name="m"),
        **{f"series-{c}": ext[c].rename(c) for c in ext.columns},
        "index-int": pd.Index([3, 1, 2], name="i"),
        "index-str": pd.Index(["a", "b"], name="s"),
        "index-datetime-freq": idx,
        "index-range": pd.RangeIndex(0, 10, 3, name="r"),
        "index-multi": mi,
        "index-categorical": pd.CategoricalIndex(["a", "b", "a"], name="c"),
        "index-interval": pd.interval_range(0, 3, name="iv"),
        "index-period": pd.period_range("2020Q1", periods=3, freq="Q", name="p"),
        "index-empty": pd.Index([], dtype="int64"),
    }


def _containers() -> dict:
    a = np.arange(6.0).reshape(2, 3)
    df = pd.DataFrame({"a": [1, 2], "b": [0.5, np.nan]})
    return {
        "tuple-of-pieces": (a, df, df.iloc[:0], np.empty((0, 2))),
        "list-of-pieces": [df, df["a"], np.asfortranarray(a)],
        "tuple-mixed": (1, "x", None, a),
        "tuple-empty": (),
        "dict": {"arr": a, "frame": df, "nested": {"t": (df.iloc[:0],)}},
        "scalar-float": 3.25,
        "scalar-numpy": np.float32(2.5),
        "scalar-timestamp": pd.Timestamp("2020-01-01", tz="UTC"),
        "none": None,
        "string": "text",
    }


VALUES = {**_numpy_values(), **_pandas_values(), **_containers()}


def _codec_roundtrip(value):
    enc = encode(value)
    sink = io.BytesIO()
    enc.write(sink)
    data = sink.getvalue()
    if enc.size is not None:
        assert len(data) == enc.size
    return decode(enc.kind, enc.meta, bytearray(data), 0, len(data))


def test_metadata_is_plain_values_only():
    """A file's header is msgpack of plain values: nothing in it can run code on decode."""
    import msgpack

    def plain(v):
        if isinstance(v, dict):
            return all(isinstance(k, str) and plain(x) for k, x in v.items())
        if isinstance(v, list | tuple):
            return all(plain(x) for x in v)
        return v is None or type(v) in (str, int, float, bool, bytes)

    for name, value in VALUES.items():
        enc = encode(value)
        packed = msgpack.packb(enc.meta, use_bin_type=True)
        meta = msgpack.unpackb(packed, raw=False)
        assert plain(meta), name
        assert b"\x80\x05" not in packed and b"\x80\x04" not in packed, (name, "pickle in metadata")


@pytest.mark.parametrize("name", list(VALUES))
def test_codec_roundtrip(name):
    value = VALUES[name]
    assert_same(_codec_roundtrip(value), value, name)


# -- through MarsStore -----------------------------------------------------------------------
@pytest.fixture
def dirs(store_dirs):
    return store_dirs

def _store(dirs, name="w0", **kw):
    shm, spill = dirs
    kw.setdefault("memory_limit", 2**30)
    kw.setdefault("write_delay", 0)
    return MarsStore(directory=shm, spill_directory=spill, name=name, cluster="c", **kw)


def _through_store(dirs, values: dict, read_mode="mmap", compression=None) -> None:
    """Each value in shared memory, on disk, and adopted by a restarted store."""
    st = _store(dirs, read_mode=read_mode, compression=compression)
    for k, v in values.items():
        st[k] = v
    for k, v in values.items():
        assert_same(st[k], v, f"{k} (shm)")
        assert st.tier_of(k) in ("shm", "heap")
    while st.evict() != -1:
        pass
    for k, v in values.items():
        assert st.tier_of(k) == "disk", k
        assert_same(st[k], v, f"{k} (disk, {read_mode}, {compression})")
    st.close(remove=False)
    again = _store(dirs, read_mode=read_mode, compression=compression)  # a restarted process
    assert set(again.existing_keys()) == set(values)
    for k, v in values.items():
        got = again.recover(k)
        again[k] = got
        assert_same(again[k], v, f"{k} (adopted)")
    again.close()


@pytest.mark.parametrize("read_mode,compression", [("mmap", None), ("direct", None), ("mmap", "lz4")])
def test_store_roundtrip_every_value(dirs, read_mode, compression):
    if compression == "lz4":
        pytest.importorskip("lz4", reason="lz4 is the optional 'lz4' extra")
    _through_store(dirs, VALUES, read_mode, compression)


# -- hypothesis -------------------------------------------------------------------------------
_DTYPES = st.one_of(hnp.scalar_dtypes(), hnp.byte_string_dtypes(max_len=4), hnp.unicode_string_dtypes(max_len=4),
                    hnp.array_dtypes(hnp.scalar_dtypes(), min_size=1, max_size=3))


@st.composite
def _arrays(draw):
    a = draw(hnp.arrays(_DTYPES, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5)))
    layout = draw(st.sampled_from(["as-is", "F", "reversed", "strided", "broadcast", "transposed"]))
    if layout == "F":
        a = np.asfortranarray(a)
    elif layout == "reversed" and a.ndim:
        a = a[::-1]
    elif layout == "strided" and a.ndim:
        a = a[::2]
    elif layout == "broadcast":
        a = np.broadcast_to(a, (2, *a.shape))
    elif layout == "transposed":
        a = a.T
    return a


_COLUMN_DTYPES = ["i8", "i4", "u1", "f8", "f4", "bool", "M8[ns]", "m8[ns]", "c16", "Int64", "boolean",
                  "str", "category", "object"]


@st.composite
def _frames(draw):
    names = draw(st.lists(st.one_of(st.text(max_size=3), st.integers(-5, 5)), max_size=4, unique=True))
    kinds = [draw(st.sampled_from(_COLUMN_DTYPES)) for _ in names]
    cols = []
    for n, k in zip(names, kinds):
        if k in ("Int64", "boolean", "str", "category", "object"):
            elements = {"Int64": st.one_of(st.none(), st.integers(-10, 10)),
                        "boolean": st.one_of(st.none(), st.booleans()),
                        "str": st.one_of(st.none(), st.text(max_size=3)),
                        "category": st.sampled_from(["a", "b", None]),
                        "object": st.one_of(st.none(), st.integers(), st.text(max_size=2))}[k]
            cols.append(hpd.column(name=n, elements=elements))
        else:
            cols.append(hpd.column(name=n, dtype=np.dtype(k)))
    index = draw(st.sampled_from(["range", "int", "datetime"]))
    idx = {"range": hpd.range_indexes(max_size=6),
           "int": hpd.indexes(dtype="i8", max_size=6),
           "datetime": hpd.indexes(dtype="M8[ns]", max_size=6)}[index]
    df = draw(hpd.data_frames(cols, index=idx))
    for n, k in zip(names, kinds):
        if k in ("Int64", "boolean", "str", "category"):
            df[n] = df[n].astype(k)
    return df


_SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                            HealthCheck.too_slow])


@_SETTINGS
@given(value=st.one_of(_arrays(), _frames(), _frames().map(lambda df: df.iloc[:, 0] if df.shape[1] else df.index),
                       st.tuples(_arrays(), _frames())))
def test_codec_roundtrip_property(value):
    assert_same(_codec_roundtrip(value), value)


@_SETTINGS
@given(values=st.lists(st.one_of(_arrays(), _frames()), min_size=1, max_size=4))
def test_store_roundtrip_property(tmp_path_factory, values):
    tmp = tmp_path_factory.mktemp("rt")
    dirs = (os.path.join("/dev/shm" if os.path.isdir("/dev/shm") else str(tmp),
                         f"mars-dask-test-{uuid.uuid4().hex[:10]}"), str(tmp / "spill"))
    try:
        _through_store(dirs, {("k", i): v for i, v in enumerate(values)})
    finally:
        shutil.rmtree(dirs[0], ignore_errors=True)


# -- a real worker's store ----------------------------------------------------------------------
def _spill_all(dask_worker):
    store = dask_worker.data
    assert type(store).__name__ == "MarsStore", type(store)
    while store.evict() != -1:
        pass
    return sorted({store.tier_of(k) for k in store})


def _identity(x):
    return x


def test_real_worker_store_roundtrip(client):
    """Scattered into the workers' MarsStore (the cluster users get), forced to disk there,
    passed through a task (read back from the file) and gathered."""
    values = {k: v for k, v in VALUES.items() if not k.startswith("dtype-")}
    futs = client.scatter(values, broadcast=False)
    results = {k: client.submit(_identity, f, key=f"identity-{k}-{uuid.uuid4().hex[:6]}") for k, f in futs.items()}
    client.gather(list(results.values()))
    tiers = client.run(_spill_all)
    assert any("disk" in t for t in tiers.values()), tiers
    got = client.gather(results)
    again = client.gather({k: client.submit(_identity, f, key=f"again-{k}-{uuid.uuid4().hex[:6]}")
                           for k, f in futs.items()})
    for k, v in values.items():
        assert_same(got[k], v, k)
        assert_same(again[k], v, f"{k} (from disk)")


def _evict(key, dask_worker=None):
    store = dask_worker.data
    if key in store:
        store._lru.evict(key)  # this value only: moved to its file on disk
        return store.tier_of(key)
    return None


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(value=st.one_of(_arrays(), _frames(), st.tuples(_arrays(), _frames())))
def test_real_worker_store_roundtrip_property(client, value):
    """Hypothesis' values through a real worker's store: held in memory, then on disk."""
    [fut] = client.scatter([value], broadcast=False, hash=False)
    first = client.submit(_identity, fut, pure=False)
    assert_same(first.result(), value, "in memory")
    tiers = client.run(_evict, fut.key)
    assert "disk" in tiers.values(), tiers
    again = client.submit(_identity, fut, pure=False)
    assert_same(again.result(), value, "from disk")
    del fut, first, again
