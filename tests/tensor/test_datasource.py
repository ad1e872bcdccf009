"""Tensor creation (mars_dask.tensor.datasource) against numpy."""

import dask
import dask.array as da
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import mars_dask
import mars_dask.tensor as mt
from tests.helpers import _same_shape, assert_tensor

CHUNKINGS = [None, 1, 3, 4, (2, 3), ((1, 4, 2), (3, 2)), {0: 5}, -1]


def check_many(cases):
    """``assert_tensor`` for many ``(tensor, expected)`` pairs executed as one graph (one
    round trip to the cluster instead of one per case keeps the file fast)."""
    for t, e in cases:
        e = np.asarray(e)
        _same_shape(t.shape, e.shape)
        assert t.dtype == e.dtype, (t.dtype, e.dtype)
    mars_dask.execute(*[t for t, _ in cases])
    for t, e in cases:
        e = np.asarray(e)
        got = t.fetch()
        # 0-d results fetch as numpy scalars, as numpy's reductions give
        assert isinstance(got, np.generic if e.ndim == 0 else np.ndarray), (type(got), e)
        assert got.shape == e.shape and got.dtype == e.dtype, (got, e)
        np.testing.assert_array_equal(got, e)


# ---- tensor / array / asarray -------------------------------------------------------------


def test_tensor_chunk_size_forms(client):
    data = np.arange(35, dtype=np.int32).reshape(7, 5)
    ts = [mt.tensor(data, chunk_size=c) for c in CHUNKINGS]
    check_many([(t, data) for t in ts])
    for t in ts:
        assert tuple(sum(s) for s in t.nsplits) == (7, 5)
    assert ts[2].nsplits == ((3, 3, 1), (3, 2))
    assert ts[5].nsplits == ((1, 4, 2), (3, 2))
    assert ts[6].nsplits == ((5, 2), (5,))
    assert ts[7].nsplits == ((7,), (5,))


def test_tensor_from_various(client):
    cases = []
    for data in [np.float32(2.5), 7, [], np.zeros((0, 3)), np.zeros((4, 0, 2), dtype=np.int16),
                 [[1, 2], [3, 4]], [1.5, True], np.arange(60.0).reshape(3, 4, 5), [[True], [False]]]:
        expected = np.array(data)
        cases += [(mt.tensor(data, chunk_size=2), expected), (mt.array(data), expected),
                  (mt.asarray(data, chunk_size=3), expected)]
    check_many(cases)


def test_tensor_dtype_and_passthrough(client):
    assert_tensor(mt.tensor([1, 2, 3], dtype=np.float32, chunk_size=2), np.array([1, 2, 3], dtype=np.float32))
    assert_tensor(mt.asarray(np.arange(5), dtype="i1"), np.arange(5, dtype="i1"))
    t = mt.tensor(np.arange(10), chunk_size=3)
    assert mt.asarray(t) is t
    assert mt.tensor(t) is t
    r = mt.tensor(t, chunk_size=5)
    assert_tensor(r, np.arange(10))
    assert r.nsplits == ((5, 5),)
    assert_tensor(mt.asarray(t, dtype=np.float64), np.arange(10.0))
    # 0-d and scalars
    s = mt.tensor(3.5)
    assert s.shape == () and s.dtype == np.float64
    assert_tensor(s, np.array(3.5))


def test_tensor_bad_args():
    with pytest.raises(ValueError, match="chunk_size must be positive"):
        mt.tensor(np.arange(5), chunk_size=0)
    with pytest.raises(ValueError, match="entries"):
        mt.tensor(np.ones((2, 2)), chunk_size=(1, 1, 1))
    with pytest.raises(ValueError, match="sums to"):
        mt.tensor(np.arange(5), chunk_size=((2, 2),))
    with pytest.raises(TypeError, match="object"):
        mt.tensor([object()])
    with pytest.raises(ValueError, match="order"):
        mt.tensor([1], order="X")


@settings(max_examples=25, deadline=None)
@given(
    data=hnp.arrays(hnp.scalar_dtypes().filter(lambda d: d.kind in "biuf"),
                    hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=6)),
    chunk=st.integers(1, 4),
)
def test_tensor_roundtrip_property(client, data, chunk):
    got = mt.tensor(data, chunk_size=chunk).execute().fetch()
    # a 0-d result is a numpy scalar, as ``data[()]`` (scalars are in native byte order)
    expected_dtype = data[()].dtype if data.ndim == 0 else data.dtype
    assert got.dtype == expected_dtype and got.shape == data.shape
    np.testing.assert_array_equal(got, data)


# ---- constant fills -----------------------------------------------------------------------


@pytest.mark.parametrize("func", ["ones", "zeros"])
def test_ones_zeros(client, func):
    cases = []
    for shape, chunk in [((5,), 2), ((4, 6), (3, 4)), ((2, 0, 3), 2), ((), None), (7, 3), ((3, 4, 5), 2)]:
        for dtype in [None, np.int8, bool]:
            t = getattr(mt, func)(shape, dtype=dtype, chunk_size=chunk)
            cases.append((t, getattr(np, func)(shape, dtype=dtype)))
    check_many(cases)


def test_full_and_empty(client):
    assert_tensor(mt.full((5, 3), 7, chunk_size=2), np.full((5, 3), 7))
    assert_tensor(mt.full((5, 3), 2.5, dtype=np.int32, chunk_size=2), np.full((5, 3), 2.5, dtype=np.int32))
    assert_tensor(mt.full(4, np.float32(1.5)), np.full(4, np.float32(1.5)))
    fill = np.arange(3.0)
    assert_tensor(mt.full((4, 3), fill, chunk_size=2), np.full((4, 3), fill))
    col = np.arange(4).reshape(4, 1)
    assert_tensor(mt.full((2, 4, 3), col, chunk_size=(1, 3, 2)), np.full((2, 4, 3), col))
    e = mt.empty((4, 5), dtype=np.int16, chunk_size=3)
    assert e.dtype == np.int16 and e.shape == (4, 5)
    got = e.execute().fetch()
    assert got.shape == (4, 5) and got.dtype == np.int16
    assert mt.empty(3).key != mt.empty(3).key  # never shared
    f = mt.ones((3, 4), order="F", chunk_size=2)
    assert f.order == "F"
    assert_tensor(f, np.ones((3, 4), order="F"))


def test_fill_bad_args():
    with pytest.raises(ValueError, match="negative"):
        mt.ones((2, -1))
    with pytest.raises(TypeError, match="shape"):
        mt.zeros("ab")
    with pytest.raises(ValueError, match="chunk_size"):
        mt.zeros((4, 4), chunk_size=-3)
    with pytest.raises(ValueError, match="broadcast"):
        mt.full((4, 3), np.arange(4))
    with pytest.raises(ValueError, match="order"):
        mt.ones(3, order="Q")


@pytest.mark.parametrize("func,fill", [("ones_like", 1), ("zeros_like", 0), ("full_like", 9)])
def test_like(client, func, fill):
    a = np.arange(12, dtype=np.int16).reshape(3, 4)
    t = mt.tensor(a, chunk_size=(2, 3))
    args = (fill,) if func == "full_like" else ()
    r = getattr(mt, func)(t, *args)
    assert_tensor(r, getattr(np, func)(a, *args))
    assert r.nsplits == t.nsplits  # follows the source chunks
    assert_tensor(getattr(mt, func)(t, *args, dtype=np.float32), getattr(np, func)(a, *args, dtype=np.float32))
    assert_tensor(getattr(mt, func)(a, *args, chunk_size=2), getattr(np, func)(a, *args))
    assert_tensor(getattr(mt, func)([[1.5, 2]], *args), getattr(np, func)([[1.5, 2]], *args))
    assert_tensor(getattr(mt, func)(t, *args, shape=(2, 5)), getattr(np, func)(a, *args, shape=(2, 5)))
    e = mt.empty_like(t)
    assert e.shape == (3, 4) and e.dtype == np.int16
    assert e.execute().fetch().shape == (3, 4)


def test_like_unknown_shape(client):
    t = mt.tensor(np.arange(10), chunk_size=3)
    if not hasattr(mt, "getitem") and not hasattr(t, "__getitem__"):
        pytest.skip("no boolean indexing")
    try:
        sub = t[t > 4]
    except Exception:  # noqa: BLE001 - any failure here means it is not available
        pytest.skip("boolean indexing not available")
    assert_tensor(mt.ones_like(sub), np.ones(5, dtype=np.int64))
    assert_tensor(mt.full_like(sub, 3, dtype=np.float32), np.full(5, 3, dtype=np.float32))


# ---- ranges -------------------------------------------------------------------------------


ARANGE_CASES = [
    ((10,), {}), ((2, 11, 3), {}), ((0, 1, 0.1), {}), ((5, 0, -1), {}), ((5, 0), {}),
    ((0, 5, 0.5), {"dtype": int}), ((0.1, 1, 0.1), {"dtype": np.float32}), ((np.int32(1), 5), {}),
    ((1, 5, np.float32(0.5)), {}), ((-3.5, 7.25, 0.75), {}), ((0,), {}), ((10,), {"dtype": np.uint8}),
    ((), {"start": 2, "stop": 9, "step": 2}), ((0, 2, 1 / 3), {}), ((1e10, 1e10 + 50, 7), {}),
]


def test_arange(client):
    """Bit-for-bit equal to numpy (dtype, length and values), whatever the chunking."""
    cases = []
    for args, kwargs in ARANGE_CASES:
        for chunk in [1, 4, None]:
            cases.append((mt.arange(*args, chunk_size=chunk, **kwargs), np.arange(*args, **kwargs)))
    check_many(cases)


def test_arange_bad_args():
    with pytest.raises(ZeroDivisionError):
        mt.arange(0, 5, 0)
    with pytest.raises(ValueError, match="length"):
        mt.arange(0, np.inf)
    with pytest.raises(TypeError):
        mt.arange()
    with pytest.raises(TypeError, match="scalars"):
        mt.arange([1, 2])
    with pytest.raises(ValueError, match="chunk_size"):
        mt.arange(10, chunk_size=0)


def test_linspace(client):
    cases = []
    for args, kwargs in [
        ((0, 1), {}), ((0, 1, 7), {}), ((-2, 3.5, 11), {"endpoint": False}), ((1, 10, 9), {"dtype": int}),
        ((0, 1, 1), {}), ((0, 1, 0), {}), ((np.float32(0), np.float32(1), 9), {}), ((5, 5, 4), {}),
        ((0, 1e-320, 5), {}), ((3, -7, 13), {"dtype": np.float32}),
    ]:
        for chunk in [3, 1, None]:
            cases.append((mt.linspace(*args, chunk_size=chunk, **kwargs), np.linspace(*args, **kwargs)))
    check_many(cases)


def test_linspace_retstep_and_errors(client):
    t, step = mt.linspace(0, 10, 6, retstep=True, chunk_size=4)
    e, estep = np.linspace(0, 10, 6, retstep=True)
    assert step == estep
    assert_tensor(t, e)
    with pytest.raises(ValueError, match="must be non-negative"):
        mt.linspace(0, 1, -1)
    with pytest.raises(TypeError):
        mt.linspace(0, 1, 2.5)


def test_eye(client):
    cases = []
    for N, M, k in [(5, None, 0), (4, 6, 1), (6, 4, -2), (3, 3, 5), (0, 3, 0), (5, 5, -4), (7, 7, 2)]:
        for chunk in [2, (3, 1), None]:
            cases.append((mt.eye(N, M, k, chunk_size=chunk), np.eye(N, M, k)))
            cases.append((mt.eye(N, M, k=k, dtype=np.int8, chunk_size=chunk), np.eye(N, M, k, dtype=np.int8)))
    check_many(cases)


def test_identity_and_eye_errors(client):
    assert_tensor(mt.identity(4, chunk_size=3), np.identity(4))
    assert_tensor(mt.identity(3, dtype=bool), np.identity(3, dtype=bool))
    with pytest.raises(ValueError, match="negative"):
        mt.eye(-1)
    with pytest.raises(TypeError):
        mt.eye(2.5)


# ---- diag / tril / triu -------------------------------------------------------------------


def test_diag_from_vector(client):
    cases = []
    for n, chunk in [(5, 2), (6, 3), (1, 1), (0, 1), (7, ((3, 1, 3),))]:
        v = np.arange(1, n + 1, dtype=np.int32)
        for k in [0, 1, -2, 3]:
            cases.append((mt.diag(mt.tensor(v, chunk_size=chunk), k), np.diag(v, k)))
    check_many(cases)


def test_diag_extract(client):
    cases = []
    for shape, chunk in [((5, 5), 2), ((4, 7), (3, 2)), ((7, 3), 3), ((0, 4), 2), ((1, 1), 1)]:
        m = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
        for k in [0, 1, -1, 3, -5]:
            cases.append((mt.diag(mt.tensor(m, chunk_size=chunk), k), np.diag(m, k)))
    check_many(cases)


def test_diag_numpy_input_and_errors(client):
    assert_tensor(mt.diag([1, 2, 3]), np.diag([1, 2, 3]))
    assert_tensor(mt.diag(np.ones((3, 4)), k=1, chunk_size=2), np.diag(np.ones((3, 4)), k=1))
    with pytest.raises(ValueError, match="1- or 2-d"):
        mt.diag(np.ones((2, 2, 2)))
    with pytest.raises(ValueError, match="1- or 2-d"):
        mt.diag(5)


@pytest.mark.parametrize("func", ["tril", "triu"])
def test_tril_triu(client, func):
    cases = []
    for shape, chunk in [((5, 5), 2), ((4, 7), (3, 2)), ((2, 6, 4), (1, 4, 3)), ((0, 3), 2)]:
        m = np.arange(1, np.prod(shape) + 1).reshape(shape)
        for k in [0, 2, -1, -4]:
            cases.append((getattr(mt, func)(mt.tensor(m, chunk_size=chunk), k), getattr(np, func)(m, k)))
    check_many(cases)


def test_tri_errors():
    with pytest.raises(ValueError, match="2 dimensions"):
        mt.tril(np.arange(3))


# ---- dask interop ---------------------------------------------------------------------------


def test_from_dask_roundtrip(client):
    x = np.arange(48.0).reshape(6, 8)
    d = da.from_array(x, chunks=(4, 3)) + 1
    t = mt.from_dask(d)
    assert t.shape == (6, 8) and t.dtype == d.dtype
    assert_tensor(t, x + 1)
    assert t.nsplits == d.chunks
    assert_tensor(mt.tensor(d, chunk_size=5), x + 1)
    back = mt.tensor(x, chunk_size=(5, 3)).to_dask()
    assert isinstance(back, da.Array)
    assert back.chunks == ((5, 1), (3, 3, 2))
    np.testing.assert_array_equal(back.compute(), x)
    np.testing.assert_array_equal((back * 2).sum(axis=0).compute(), (x * 2).sum(axis=0))
    # through a mars_dask expression and back into dask
    np.testing.assert_array_equal(mt.from_dask(mt.arange(10, chunk_size=4).to_dask()).execute().fetch(), np.arange(10))


def test_from_dask_unknown_chunks():
    d = da.from_array(np.arange(10), chunks=5)
    d = d[d > 3]
    with pytest.raises(ValueError, match="known chunk sizes"):
        mt.from_dask(d)


def test_dask_compute(client):
    t = mt.ones((4, 5), chunk_size=2)
    (got,) = dask.compute(t)
    np.testing.assert_array_equal(got, np.ones((4, 5)))
    a, b = dask.compute(mt.arange(7, chunk_size=3), mt.eye(3, chunk_size=2))
    np.testing.assert_array_equal(a, np.arange(7))
    np.testing.assert_array_equal(b, np.eye(3))


@pytest.mark.parametrize("func", ["empty", "ones", "zeros", "full"])
def test_fill_order_f(client, func):
    args = (3.5,) if func == "full" else ()
    for chunk in (None, (2, 3), 1):
        t = getattr(mt, func)((4, 5), *args, order="F", chunk_size=chunk)
        assert t.order == "F"
        assert getattr(mt, func)((4, 5), *args, chunk_size=chunk).order == "C"
        got = t.execute().fetch()
        assert got.shape == (4, 5)
        if func != "empty":
            np.testing.assert_array_equal(got, getattr(np, func)((4, 5), *args, order="F"))


def test_from_dataframe(client):
    import pandas as pd

    import mars_dask.dataframe as md

    pdf = pd.DataFrame({"a": np.arange(7), "b": np.linspace(0, 1, 7), "c": np.arange(7, dtype="i2")})
    for chunk in (None, 3, 1):
        df = md.DataFrame(pdf, chunk_size=chunk)
        t = mt.from_dataframe(df)
        assert t.order == "F" and t.shape == (7, 3) and t.dtype == np.float64
        assert_tensor(t, pdf.to_numpy())
        assert_tensor(mt.from_dataframe(df, dtype="f4"), pdf.to_numpy(dtype="f4"))
        ints = mt.from_dataframe(df[["a", "c"]])
        assert_tensor(ints, pdf[["a", "c"]].to_numpy())
    # rows of unknown count (a filter) keep their chunks
    df = md.DataFrame(pdf, chunk_size=3)
    filtered = mt.from_dataframe(df[df["a"] > 2])
    assert_tensor(filtered, pdf[pdf["a"] > 2].to_numpy())
    assert_tensor(mt.from_dataframe(pdf), pdf.to_numpy())
    with pytest.raises(TypeError):
        mt.from_dataframe(np.ones(3))


@pytest.mark.parametrize("name,package", [
    ("fromzarr", "zarr"), ("from_zarr", "zarr"), ("tozarr", "zarr"), ("to_zarr", "zarr"),
    ("fromhdf5", "h5py"), ("from_hdf5", "h5py"), ("tohdf5", "h5py"), ("to_hdf5", "h5py"),
])
def test_optional_readers_writers(tmp_path, name, package):
    try:
        __import__(package)
    except ImportError:
        with pytest.raises(ImportError, match=package):
            if name.startswith("to"):
                getattr(mt, name)(str(tmp_path / "x"), mt.ones((2, 2)), dataset="d")
            else:
                getattr(mt, name)(str(tmp_path / "x"), dataset="d")
        return
    pytest.skip(f"{package} is installed: covered by test_zarr_hdf5_roundtrip")


def test_zarr_hdf5_roundtrip(client, tmp_path):
    x = np.arange(20.0).reshape(4, 5)
    ran = False
    try:
        import zarr
    except ImportError:
        pass
    else:
        mt.tozarr(str(tmp_path / "z"), mt.tensor(x, chunk_size=2), dataset="d").execute()
        assert_tensor(mt.fromzarr(str(tmp_path / "z"), dataset="d", chunk_size=3), x)
        arr = zarr.open(str(tmp_path / "z"), mode="r")["d"]
        assert_tensor(mt.from_zarr(arr), x)
        ran = True
    try:
        import h5py
    except ImportError:
        pass
    else:
        mt.tohdf5(str(tmp_path / "h.h5"), mt.tensor(x, chunk_size=2), group="g", dataset="d").execute()
        assert_tensor(mt.fromhdf5(str(tmp_path / "h.h5"), group="g", dataset="d", chunk_size=3), x)
        with h5py.File(str(tmp_path / "h.h5"), "r") as f:
            t = mt.from_hdf5(f["g/d"])
        assert_tensor(t, x)
        ran = True
    if not ran:
        pytest.skip("neither zarr nor h5py is installed")


@pytest.mark.parametrize("name", ["fromtiledb", "from_tiledb", "totiledb", "to_tiledb", "fromvineyard",
                                  "from_vineyard", "tovineyard", "to_vineyard", "imread"])
def test_integrations_not_shipped(name):
    with pytest.raises(NotImplementedError, match="TileDB|Vineyard|image"):
        getattr(mt, name)("x")
