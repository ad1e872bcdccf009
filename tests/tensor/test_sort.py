import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import mars_dask
import mars_dask.tensor as mt
from mars_dask.tensor.core import TensorOperand
from tests.helpers import assert_tensor

nan = float("nan")


def _filter_kernel(x):
    return x[x > 0.5]


class _Filter(TensorOperand):
    """Test-only operand: keeps values > 0.5 chunk by chunk (1-d, unknown lengths)."""

    _op_name = "test-filter"

    def tile(self):
        (inp,) = self.inputs
        chunks = [self.new_chunk(c.index, (nan,), _filter_kernel, (c,)) for c in inp.chunks]
        return [(chunks, ((nan,) * len(chunks),))]


def unknown_filter(x_np, chunk_size):
    """``x[x > 0.5]`` as a tensor of unknown length (mt boolean indexing if available)."""
    t = mt.tensor(x_np, chunk_size=chunk_size)
    try:
        res = t[t > 0.5]
    except Exception:  # noqa: BLE001 - boolean indexing not available yet
        res = _Filter([t.data]).new_tensor((nan,), t.dtype)
    assert math.isnan(res.shape[0])
    return res, x_np[x_np > 0.5]


def _data(kind, n, rng):
    if kind == "float_nan":
        x = rng.normal(size=n)
        x[rng.random(n) < 0.2] = np.nan
        return x
    if kind == "dups":
        return rng.integers(-2, 2, n)
    if kind == "int32":
        return rng.integers(-1000, 1000, n).astype(np.int32)
    return rng.normal(size=n).astype(np.float32)


@pytest.mark.parametrize(
    "kind,n,chunk",
    [("float_nan", 23, 6), ("dups", 23, 6), ("int32", 23, 23), ("float32", 30, 7), ("dups", 0, 3),
     ("float_nan", 1, 1), ("dups", 4, 1)],
)
def test_sort_1d(client, kind, n, chunk):
    x = _data(kind, n, np.random.default_rng(n))
    t = mt.tensor(x, chunk_size=chunk)
    s = mt.sort(t)
    assert s.shape == (n,)
    assert_tensor(s, np.sort(x))
    assert not any(math.isnan(v) for v in s.nsplits[0])
    a = mt.argsort(t, kind="stable")
    assert_tensor(a, np.argsort(x, kind="stable"))


def test_sort_multichunk_lengths_unknown_until_executed(client):
    x = np.random.default_rng(1).normal(size=30)
    s = mt.sort(mt.tensor(x, chunk_size=10))
    s._ensure_tiled()
    assert s.shape == (30,)
    assert all(math.isnan(v) for v in s.nsplits[0])
    s.execute()
    assert sum(s.nsplits[0]) == 30
    np.testing.assert_array_equal(s.fetch(), np.sort(x))


def test_argsort_default_kind_gives_sorting_indices(client):
    x = np.random.default_rng(2).integers(0, 5, (9, 11))
    a = mt.argsort(mt.tensor(x, chunk_size=(4, 3)), axis=1)
    got = a.execute().fetch()
    np.testing.assert_array_equal(np.take_along_axis(x, got, axis=1), np.sort(x, axis=1))
    np.testing.assert_array_equal(np.sort(got, axis=1), np.tile(np.arange(11), (9, 1)))


@pytest.mark.parametrize("axis", [0, 1, 2, -1, None])
@pytest.mark.parametrize("shape,chunks", [((7, 9, 5), (4, 5, 3)), ((4, 0, 3), 2), ((3, 5, 2), (3, 5, 2))])
def test_sort_nd(client, shape, chunks, axis):
    rng = np.random.default_rng(3)
    x = rng.integers(-3, 4, shape).astype(float)
    x[rng.random(shape) < 0.1] = np.nan
    t = mt.tensor(x, chunk_size=chunks)
    assert_tensor(mt.sort(t, axis=axis), np.sort(x, axis=axis))
    assert_tensor(mt.argsort(t, axis=axis, kind="stable"), np.argsort(x, axis=axis, kind="stable"))


def test_sort_nd_keeps_input_chunks(client):
    x = np.random.default_rng(4).normal(size=(6, 10))
    t = mt.tensor(x, chunk_size=(4, 3))
    s = mt.sort(t, axis=0)
    s._ensure_tiled()
    assert s.nsplits == ((4, 2), (3, 3, 3, 1))
    assert_tensor(s, np.sort(x, axis=0))


def test_tensor_sort_methods(client):
    x = np.random.default_rng(5).normal(size=(5, 8))
    t = mt.tensor(x, chunk_size=3)
    assert_tensor(t.argsort(axis=0, kind="stable"), np.argsort(x, axis=0, kind="stable"))
    t.sort()
    assert_tensor(t, np.sort(x))


def test_sort_0d_and_scalar_like(client):
    assert_tensor(mt.sort(mt.tensor(3.0), axis=None), np.sort(np.array(3.0), axis=None))
    with pytest.raises(np.exceptions.AxisError):
        mt.sort(mt.tensor(3.0))


def test_sort_unknown_input(client):
    x = np.random.default_rng(6).random(40)
    t, expected = unknown_filter(x, 12)
    s = mt.sort(t)
    assert_tensor(s, np.sort(expected))
    t, expected = unknown_filter(x, 12)
    assert_tensor(mt.argsort(t, kind="stable"), np.argsort(expected, kind="stable"))


def test_sort_bad_arguments():
    t = mt.tensor(np.arange(10), chunk_size=3)
    with pytest.raises(ValueError, match="kind"):
        mt.sort(t, kind="bogo")
    with pytest.raises(np.exceptions.AxisError):
        mt.sort(t, axis=1)
    with pytest.raises(np.exceptions.AxisError):
        mt.argsort(t, axis=-2)
    with pytest.raises(ValueError, match="order"):
        mt.sort(t, order="a")
    with pytest.raises(NotImplementedError):
        mt.unique(t, axis=0)


def test_partition(client):
    x = np.random.default_rng(11).integers(0, 20, (6, 13))
    t = mt.tensor(x, chunk_size=(4, 5))
    p = mt.partition(t, [2, 7], axis=1).execute().fetch()
    ap = mt.argpartition(t, 3, axis=None).execute().fetch()
    for k in (2, 7):
        assert (p[:, :k] <= p[:, k : k + 1]).all() and (p[:, k + 1 :] >= p[:, k : k + 1]).all()
        np.testing.assert_array_equal(p[:, k], np.partition(x, k, axis=1)[:, k])
    flat = x.ravel()[ap]
    assert flat[3] == np.partition(x, 3, axis=None)[3]
    assert (flat[:3] <= flat[3]).all() and (flat[4:] >= flat[3]).all()
    with pytest.raises(ValueError, match="out of bounds"):
        mt.partition(t, 13)
    with pytest.raises(TypeError):
        mt.partition(t, 1.5)


# ---- unique -----------------------------------------------------------------------------


def _check_unique(t, x, **flags):
    got = mt.unique(t, **flags)
    exp = np.unique(x, **flags)
    if not isinstance(exp, tuple):
        got, exp = (got,), (exp,)
    assert isinstance(got, tuple) and len(got) == len(exp)
    mars_dask.execute(*got)
    for g, e in zip(got, exp):
        assert_tensor(g, e)
        assert not math.isnan(sum(g.shape))


@pytest.mark.parametrize(
    "shape,chunks,kind",
    [((40,), 11, "dups"), ((40,), 40, "float_nan"), ((6, 7), (4, 4), "int32"), ((5, 6), 3, "float_nan"),
     ((0,), 3, "dups"), ((3, 0, 2), 2, "float32")],
)
def test_unique(client, shape, chunks, kind):
    rng = np.random.default_rng(7)
    x = _data(kind, int(np.prod(shape)), rng).reshape(shape)
    t = mt.tensor(x, chunk_size=chunks)
    _check_unique(t, x)
    _check_unique(t, x, return_index=True, return_inverse=True, return_counts=True)


def test_unique_result_unknown_until_executed(client):
    x = np.random.default_rng(8).integers(0, 5, 30)
    u = mt.unique(mt.tensor(x, chunk_size=4))
    assert math.isnan(u.shape[0])
    u.execute()
    assert u.shape == (5,)


def test_unique_unknown_input(client):
    x = np.round(np.random.default_rng(9).random(60), 1)
    t, expected = unknown_filter(x, 20)
    _check_unique(t, expected, return_index=True, return_counts=True)
    t, expected = unknown_filter(x, 20)
    _check_unique(t, expected, return_inverse=True)


@settings(max_examples=15, deadline=None)
@given(
    x=hnp.arrays(np.int64, st.integers(0, 20), elements=st.integers(-4, 4)),
    chunk=st.integers(4, 10),
)
def test_sort_unique_property(client, x, chunk):
    t = mt.tensor(x, chunk_size=chunk)
    s, u = mt.sort(t), mt.unique(t, return_counts=True)
    mars_dask.execute(s, *u)
    np.testing.assert_array_equal(s.fetch(), np.sort(x))
    ev, ec = np.unique(x, return_counts=True)
    np.testing.assert_array_equal(u[0].fetch(), ev)
    np.testing.assert_array_equal(u[1].fetch(), ec)


# ---- searchsorted ----------------------------------------------------------------------


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted(client, side):
    a = np.sort(np.random.default_rng(10).integers(0, 10, 31))
    v = np.array([[-1, 0, 3], [5, 9, 12]])
    ta = mt.tensor(a, chunk_size=6)
    assert_tensor(mt.searchsorted(ta, mt.tensor(v, chunk_size=2), side=side), np.searchsorted(a, v, side=side))
    assert_tensor(mt.searchsorted(ta, 4, side=side), np.searchsorted(a, 4, side=side))
    with pytest.raises(ValueError):
        mt.searchsorted(ta, v, side="middle")


# ---- topk / argtopk -----------------------------------------------------------------------


def _stable_top(x, k, axis=-1, largest=True, order=None):
    """numpy reference: the first k of a stable sort in the requested direction (ties: the
    smallest index first), values and indices."""
    if axis is None:
        x, axis = x.ravel(), 0
    xm = np.moveaxis(x, axis, -1)
    n = xm.shape[-1]
    kw = {} if order is None else {"order": order}
    if largest:
        o = (n - 1 - np.argsort(xm[..., ::-1], axis=-1, kind="stable", **kw))[..., ::-1]
    else:
        o = np.argsort(xm, axis=-1, kind="stable", **kw)
    o = o[..., :k]
    return np.moveaxis(np.take_along_axis(xm, o, -1), -1, axis), np.moveaxis(o, -1, axis).astype(np.int64)


def _check_topk(t, x, k, **kw):
    ev, ei = _stable_top(x, k, **kw)
    v, (v2, i2), i = mt.topk(t, k, **kw), mt.topk(t, k, return_index=True, **kw), mt.argtopk(t, k, **kw)
    mars_dask.execute(v, v2, i2, i)
    for got, exp in ((v, ev), (v2, ev), (i2, ei), (i, ei)):
        assert_tensor(got, exp, exact=True)


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize(
    "kind,n,chunk,k",
    [("float_nan", 23, 6, 5), ("dups", 23, 6, 7), ("dups", 23, 23, 4), ("int32", 23, 5, 23),
     ("float32", 30, 7, 12), ("float_nan", 9, 1, 3), ("dups", 12, 1, 12), ("dups", 10, 3, 50), ("float32", 1, 1, 2)],
)
def test_topk_1d(client, kind, n, chunk, k, largest):
    x = _data(kind, n, np.random.default_rng(n + k))
    _check_topk(mt.tensor(x, chunk_size=chunk), x, k, largest=largest)
    # the brief's references: np.sort(a)[::-1][:k] (NaN first), and indices pointing at them
    ref = np.sort(x)[::-1][:k] if largest else np.sort(x)[:k]
    np.testing.assert_array_equal(_stable_top(x, k, largest=largest)[0], ref)


@pytest.mark.parametrize("order", ["random", "ascending", "descending", "nan_heavy", "int_dups"])
def test_topk_values_of_big_chunks_by_blocks(client, order):
    """Chunks of over a million elements take the blocked selection (sort.py
    ``_stream_top_vals``: no whole copy of the chunk): equal to numpy for data in every order,
    NaN, duplicates, both directions, a k larger than a block's survivors."""
    from mars_dask.tensor.sort import _STREAM_BLOCK, _stream_top_vals

    n = 8 * _STREAM_BLOCK + 12345  # two chunks, each past the blocked selection's threshold
    rng = np.random.default_rng(len(order))
    x = {"random": lambda: rng.random(n), "ascending": lambda: np.arange(n, dtype=np.float64),
         "descending": lambda: np.arange(n, 0, -1).astype(np.float64),
         "nan_heavy": lambda: np.where(rng.random(n) < 0.3, np.nan, rng.random(n)),
         "int_dups": lambda: rng.integers(0, 50, n)}[order]()
    for k, largest in ((1000, True), (1000, False), (3, True), (3, False)):
        assert _stream_top_vals(x[: n // 2 + 1], k, largest) is not None
        ref = np.sort(x)[::-1][:k] if largest else np.sort(x)[:k]
        got = mt.topk(mt.tensor(x, chunk_size=n // 2 + 1), k, largest=largest).execute().fetch()
        np.testing.assert_array_equal(got, ref)


def test_topk_ties_smallest_index_first(client):
    x = np.array([1, 3, 3, 2, 3, 0, 3])
    t = mt.tensor(x, chunk_size=2)
    assert_tensor(mt.argtopk(t, 3), np.array([1, 2, 4]))
    assert_tensor(mt.argtopk(t, 5), np.array([1, 2, 4, 6, 3]))
    assert_tensor(mt.argtopk(t, 2, largest=False), np.array([5, 0]))
    y = np.zeros(20)
    assert_tensor(mt.argtopk(mt.tensor(y, chunk_size=3), 4), np.arange(4))


@pytest.mark.parametrize("axis", [0, -1, None])
@pytest.mark.parametrize("shape,chunks", [((7, 9), (3, 4)), ((7, 9), (7, 9)), ((5, 4), 1), ((4, 0), 2)])
def test_topk_2d(client, shape, chunks, axis):
    rng = np.random.default_rng(12)
    x = rng.integers(-3, 4, shape).astype(float)
    x[rng.random(shape) < 0.1] = np.nan
    t = mt.tensor(x, chunk_size=chunks)
    for k, largest in ((3, True), (5, False), (100, True)):
        _check_topk(t, x, k, axis=axis, largest=largest)


def test_topk_3d_axis_none(client):
    x = np.random.default_rng(13).integers(0, 6, (4, 5, 6))
    t = mt.tensor(x, chunk_size=(3, 2, 4))
    _check_topk(t, x, 17, axis=None)
    _check_topk(t, x, 4, axis=1, largest=False)


def test_topk_other_dtypes(client):
    rng = np.random.default_rng(18)
    c = rng.integers(0, 3, 15) + 1j * rng.integers(0, 2, 15)
    c[[2, 9]] = complex(np.nan, 0)
    d = rng.integers(0, 5, 15).astype("datetime64[D]")
    d[[1, 4]] = np.datetime64("NaT")
    for x in (c, d, rng.random(15) < 0.5, np.array(list("abcabcxyzxyzaaa"))):
        t = mt.tensor(x, chunk_size=4)
        for largest in (True, False):
            ev, ei = _stable_top(x, 6, largest=largest)
            v, i = mt.topk(t, 6, largest=largest, return_index=True)
            mars_dask.execute(v, i)
            np.testing.assert_array_equal(v.fetch(), ev)
            np.testing.assert_array_equal(i.fetch(), ei)


def test_topk_unsorted(client):
    x = np.random.default_rng(14).integers(0, 10, (6, 40))
    t = mt.tensor(x, chunk_size=(4, 7))
    ev, ei = _stable_top(x, 9, axis=1)
    v = mt.topk(t, 9, axis=1, sorted=False).execute().fetch()
    np.testing.assert_array_equal(np.sort(v, axis=1), np.sort(ev, axis=1))
    # argtopk(sorted=False): the same indices, in ascending order along the axis
    assert_tensor(mt.argtopk(t, 9, axis=1, sorted=False), np.sort(ei, axis=1))


def test_topk_unknown_shape(client):
    x = np.round(np.random.default_rng(15).random(50), 2)
    for k in (4, 100):
        t, expected = unknown_filter(x, 7)
        v = mt.topk(t, k)
        assert math.isnan(v.shape[0])
        ev, ei = _stable_top(expected, k)
        assert_tensor(v, ev, exact=True)
        t, _ = unknown_filter(x, 7)
        assert_tensor(mt.argtopk(t, k, largest=False), _stable_top(expected, k, largest=False)[1])


def test_topk_structured_order(client):
    rng = np.random.default_rng(16)
    x = np.empty(30, dtype=[("a", "i8"), ("b", "f8")])
    x["a"] = rng.integers(0, 3, 30)
    x["b"] = rng.integers(0, 4, 30)
    t = mt.tensor(x, chunk_size=7)
    for order in ("a", ["b", "a"], None):
        kw = {} if order is None else {"order": order}
        ev, ei = _stable_top(x, 8, order=order)
        assert_tensor(mt.topk(t, 8, **kw), ev, exact=True)
        assert_tensor(mt.argtopk(t, 8, **kw), ei)
    with pytest.raises(ValueError, match="unknown field"):
        mt.topk(t, 3, order="c")


def test_topk_is_a_tree(client):
    """40 chunks, k=3: every node combines at most combine-size partials (never the input)."""
    x = np.random.default_rng(17).random(400)
    v = mt.argtopk(mt.tensor(x, chunk_size=10), 3, parallel_kind="psrs")
    v._ensure_tiled()
    (final,) = v.chunks
    seen, stack = 0, [final]
    while stack:
        c = stack.pop()
        for a in c.args:
            if isinstance(a, list):
                assert len(a) <= 4
                seen += 1
                stack.extend(a)
    assert seen >= 3
    assert_tensor(v, _stable_top(x, 3)[1])


def test_topk_bad_arguments():
    t = mt.tensor(np.arange(10.0), chunk_size=3)
    with pytest.raises(ValueError):
        mt.topk(t, 0)
    with pytest.raises(ValueError):
        mt.argtopk(t, -2)
    with pytest.raises(TypeError):
        mt.topk(t, 1.5)
    with pytest.raises(np.exceptions.AxisError):
        mt.topk(t, 2, axis=1)
    with pytest.raises(ValueError, match="order"):
        mt.topk(t, 2, order="a")
    with pytest.raises(ValueError, match="parallel_kind"):
        mt.topk(t, 2, parallel_kind="bogus")
    with pytest.raises(ValueError, match="psrs_kinds"):
        mt.topk(t, 2, psrs_kinds=["quicksort", "mergesort"])
    with pytest.raises(TypeError, match="psrs_kinds"):
        mt.topk(t, 2, psrs_kinds="quicksort")
    assert mt.topk(t, 20).shape == (10,)  # k beyond the axis: the whole axis, as Mars
