"""Reductions and cumulative reductions against numpy: values, dtypes, shapes, axes,
keepdims, the tree (combine levels), unknown chunk sizes and bad input."""

import warnings

import dask
import numpy as np
import pytest

import mars_dask.tensor as mt
from mars_dask.session import execute
from mars_dask.tensor.core import TensorOperand
from mars_dask.tiling.emit import build_graph
from mars_dask.tiling.tile import tile
from tests.helpers import assert_tensor

nan = float("nan")

RNG = np.random.RandomState(42)
A3 = RNG.rand(5, 7, 4)
A2 = RNG.rand(9, 6)
A1 = RNG.rand(23)


def _np(name, *args, **kwargs):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.asarray(getattr(np, name)(*args, **kwargs))


def _check_all(pairs, **kw):
    """Execute every lazy result in one graph, then compare each with numpy."""
    execute(*[t for t, _ in pairs])
    for t, expected in pairs:
        assert_tensor(t, expected, **kw)


# (data, chunk_size, axes to try): chunk sizes that do not divide the shape
CASES = [
    (A1, 8, [None, -1]),
    (A2, (4, 4), [None, 0, (0, 1)]),
    (A3, (3, 4, 3), [None, 1, (0, -1), ()]),
    (np.float64(3.5), None, [None]),
]

UFUNC_REDUCTIONS = ["sum", "prod", "min", "max", "any", "all", "nansum", "nanprod",
                    "nanmin", "nanmax", "count_nonzero"]
MOMENTS = ["mean", "nanmean", "var", "nanvar", "std", "nanstd"]


@pytest.mark.parametrize("name", UFUNC_REDUCTIONS + MOMENTS)
def test_reductions_match_numpy(client, name):
    pairs = []
    for data, chunk, axes in CASES:
        t = mt.tensor(data, chunk_size=chunk)
        for i, axis in enumerate(axes):
            keepdims = bool(i % 2)
            pairs.append((getattr(mt, name)(t, axis=axis, keepdims=keepdims),
                          _np(name, data, axis=axis, keepdims=keepdims)))
    _check_all(pairs)


@pytest.mark.parametrize("name", UFUNC_REDUCTIONS + MOMENTS)
def test_nan_data(client, name):
    data = A2.copy()
    data[1, :] = nan  # an all-NaN row
    data[3:7, 2] = nan
    data[0, 0] = nan
    t = mt.tensor(data, chunk_size=(4, 4))
    pairs = [(getattr(mt, name)(t, axis=axis), _np(name, data, axis=axis)) for axis in (None, 0, 1)]
    _check_all(pairs)


def test_dtypes_follow_numpy(client):
    ints = np.arange(-6, 6, dtype=np.int32).reshape(3, 4)
    pairs = []
    for dt in (np.int8, np.int32, np.uint16, np.bool_, np.float16, np.float32, np.complex64):
        data = ints.astype(dt) if dt is not np.complex64 else ints + 1j * ints[::-1]
        data = data.astype(dt)
        t = mt.tensor(data, chunk_size=(2, 4))
        for name in ("sum", "prod", "mean", "var", "min", "any", "cumsum", "nanmean", "count_nonzero", "argmax"):
            if name == "argmax" and dt is np.complex64:
                continue
            pairs.append((getattr(mt, name)(t, axis=0), _np(name, data, axis=0)))
    # dtype= argument: accumulate and return in the given dtype (int8 wraps as numpy's)
    big = np.full((20,), 100, dtype=np.int8)
    tb = mt.tensor(big, chunk_size=3)
    pairs += [(mt.sum(tb, dtype=np.int8), np.sum(big, dtype=np.int8)),
              (mt.sum(tb, dtype=np.float32), np.sum(big, dtype=np.float32)),
              (mt.mean(tb, dtype=np.float32), np.mean(big, dtype=np.float32)),
              (mt.var(tb, dtype=np.float32), np.var(big, dtype=np.float32)),
              (mt.cumsum(tb, dtype=np.int16), np.cumsum(big, dtype=np.int16)),
              (mt.prod(tb, dtype=np.float64), np.prod(big, dtype=np.float64))]
    _check_all(pairs, rtol=2e-3)


def test_ddof(client):
    t = mt.tensor(A2, chunk_size=4)
    pairs = []
    for ddof in (0, 1, 5, 9, 12):
        for name in ("var", "std", "nanvar", "nanstd"):
            pairs.append((getattr(mt, name)(t, axis=0, ddof=ddof), _np(name, A2, axis=0, ddof=ddof)))
    pairs.append((t.var(ddof=1), np.var(A2, ddof=1)))
    _check_all(pairs)


def test_numerically_stable_variance(client):
    data = 1e9 + RNG.rand(200)  # naive sum-of-squares would lose every digit
    t = mt.tensor(data, chunk_size=7)
    assert_tensor(mt.var(t, combine_size=2), np.var(data), rtol=1e-6)
    assert_tensor(mt.std(t), np.std(data), rtol=1e-6)


def test_complex_moments(client):
    data = RNG.rand(13) + 1j * RNG.rand(13)
    t = mt.tensor(data, chunk_size=4)
    _check_all([(mt.mean(t), np.mean(data)), (mt.var(t), np.var(data)), (mt.std(t, ddof=1), np.std(data, ddof=1))])


@pytest.mark.parametrize("name", ["argmin", "argmax", "nanargmin", "nanargmax"])
def test_arg_reductions(client, name):
    ties = np.array([[3, 1, 1, 5], [1, 7, 1, 1], [0, 0, 9, 9], [9, 0, 0, 9], [1, 1, 1, 1]], dtype=np.int64)
    with_nan = A2.copy()
    with_nan[2, 3] = with_nan[5, 1] = nan
    pairs = []
    for data, chunk in ((A3, (3, 4, 3)), (ties, (2, 3)), (ties, 1), (A1, 8), (np.float64(2.0), None)):
        t = mt.tensor(data, chunk_size=chunk)
        for i, axis in enumerate([None] + list(range(-data.ndim, data.ndim))):
            keepdims = bool(i % 2)
            pairs.append((getattr(mt, name)(t, axis=axis, keepdims=keepdims),
                          _np(name, data, axis=axis, keepdims=keepdims)))
    # plain forms: the first NaN is the extreme, as in numpy; nan forms skip NaNs
    t = mt.tensor(with_nan, chunk_size=(4, 2))
    pairs += [(getattr(mt, name)(t, axis=a, combine_size=2), _np(name, with_nan, axis=a)) for a in (None, 0, 1)]
    _check_all(pairs)


def test_nanarg_all_nan_raises_at_execution(client):
    data = A2.copy()
    data[:, 3] = nan
    t = mt.nanargmin(mt.tensor(data, chunk_size=4), axis=0)
    with pytest.raises(ValueError, match="All-NaN"):
        t.execute()
    assert_tensor(mt.nanargmax(mt.tensor(data, chunk_size=4), axis=1), np.nanargmax(data, axis=1))


def test_empty_inputs(client):
    e1 = np.empty((0,))
    e2 = np.empty((0, 3))
    t1 = mt.tensor(e1)
    t2 = mt.tensor(e2, chunk_size=2)
    pairs = [(mt.sum(t1), np.sum(e1)), (mt.prod(t1), np.prod(e1)), (mt.any(t1), np.any(e1)),
             (mt.all(t1), np.all(e1)), (mt.count_nonzero(t1), np.count_nonzero(e1)),
             (mt.sum(t2, axis=0), np.sum(e2, axis=0)), (mt.min(t2, axis=1), np.min(e2, axis=1)),
             (mt.argmax(t2, axis=1), np.argmax(e2, axis=1)),
             (mt.mean(t2, axis=0), _np("mean", e2, axis=0)), (mt.var(t1), _np("var", e1)),
             (mt.cumsum(t2, axis=0), np.cumsum(e2, axis=0)), (mt.cumprod(t1), np.cumprod(e1))]
    _check_all(pairs)


@pytest.mark.parametrize("func", [mt.min, mt.max, mt.nanmin, mt.nanmax, mt.argmin, mt.nanargmax])
def test_empty_without_identity_raises_at_build_time(func):
    with pytest.raises(ValueError):
        func(mt.tensor(np.empty((0,))))
    with pytest.raises(ValueError):
        func(mt.tensor(np.empty((3, 0))), axis=1)
    with pytest.raises(ValueError):
        func(mt.tensor(np.empty((0, 0))), axis=0)


def test_bad_arguments_raise_at_build_time():
    t = mt.tensor(A2, chunk_size=4)
    with pytest.raises(np.exceptions.AxisError):
        mt.sum(t, axis=2)
    with pytest.raises(np.exceptions.AxisError):
        t.mean(axis=(0, -3))
    with pytest.raises(ValueError, match="duplicate"):
        mt.var(t, axis=(1, -1))
    with pytest.raises(TypeError):
        mt.argmin(t, axis=(0,))
    with pytest.raises(np.exceptions.AxisError):
        mt.cumsum(t, axis=2)
    with pytest.raises(TypeError):
        mt.cumsum(t, axis=(0,))
    with pytest.raises(TypeError):
        mt.sum(t, out=np.empty(()))
    with pytest.raises(ValueError):
        mt.sum(t, axis=0, out=mt.zeros((3,)))
    with pytest.raises(TypeError):
        mt.sum(t, bogus=1)
    with pytest.raises(TypeError):
        mt.var(t, ddof="x")
    with pytest.raises(ValueError, match="combine_size"):
        mt.sum(t, combine_size=1)
    with pytest.raises(TypeError):
        mt.sum(mt.tensor(np.array(["a", "b"])))


def test_out_argument(client):
    t = mt.tensor(A2, chunk_size=4)
    out = mt.zeros((6,), dtype=np.float32)
    res = mt.sum(t, axis=0, out=out)
    assert res is out
    assert_tensor(out, np.sum(A2, axis=0).astype(np.float32), rtol=1e-6)
    out2 = mt.zeros((), dtype=np.int64)
    mt.argmax(t, out=out2)
    assert_tensor(out2, np.argmax(A2))


def test_methods_and_numpy_dispatch(client):
    t = mt.tensor(A3, chunk_size=3)
    pairs = [(t.sum(), A3.sum()), (t.sum(1), A3.sum(1)), (t.mean(axis=(0, 1), keepdims=True), A3.mean(axis=(0, 1), keepdims=True)),
             (t.std(0, ddof=1), A3.std(0, ddof=1)), (t.var(), A3.var()), (t.min(2), A3.min(2)), (t.max(), A3.max()),
             (t.argmin(1), A3.argmin(1)), (t.argmax(), A3.argmax()), (t.any(0), A3.any(0)), (t.all(), A3.all()),
             (t.prod(axis=2), A3.prod(axis=2)), (t.cumsum(1), A3.cumsum(1)), (t.cumprod(), A3.cumprod())]
    s = np.sum(t, axis=1)  # numpy hands over to the Tensor's method: still lazy
    assert isinstance(s, mt.Tensor)
    pairs.append((s, np.sum(A3, axis=1)))
    pairs.append((mt.allclose(t, A3 + 1e-12), np.allclose(A3, A3 + 1e-12)))
    _check_all(pairs)


# ---- the tree ---------------------------------------------------------------------------


def _chunk_keys(t):
    tile([t.data], None)
    seen, stack, keys = set(), list(t.data.chunks), []
    while stack:
        c = stack.pop()
        if c.key in seen:
            continue
        seen.add(c.key)
        keys.append(c.key)
        stack.extend(c.inputs)
    return keys


@pytest.mark.parametrize("combine_size,levels", [(2, 4), (4, 2), (32, 0)])
def test_tree_levels(client, combine_size, levels):
    data = np.arange(20 * 3).reshape(20, 3)
    t = mt.tensor(data, chunk_size=(1, 2))  # 20 chunks along the reduced axis
    r = mt.sum(t, axis=0, combine_size=combine_size)
    names = {k[0].rsplit("-", 1)[-1] for k in _chunk_keys(r) if isinstance(k, tuple) and "-combine" in k[0]}
    assert len(names) == levels, names
    assert_tensor(r, data.sum(axis=0))


def test_combine_size_config(client):
    data = np.arange(64.0).reshape(8, 8)
    t = mt.tensor(data, chunk_size=1)
    with dask.config.set({"mars-dask.tensor.combine-size": 2}):
        r = mt.mean(t)
    keys = _chunk_keys(r)
    # two reduced axes: 2 partials per axis per group (at least 2): 8 -> 4 -> 2 -> aggregate
    levels = {k[0].rsplit("-", 1)[-1] for k in keys if isinstance(k, tuple) and "-combine" in k[0]}
    assert levels == {"combine0", "combine1"}, levels
    assert_tensor(r, data.mean())
    assert_tensor(mt.var(t, axis=(0, 1), combine_size=9), data.var())


def test_map_step_fuses_with_elementwise_chain(client):
    t = mt.tensor(A2, chunk_size=(3, 6))  # 3 chunks
    expr = ((t + 1) * 2).sum(axis=0)
    tile([expr.data], None)
    graph = build_graph(expr.data.chunks)
    layers = set(graph.layers)
    assert not any(name.startswith("elementwise") for name in layers), layers
    map_chunks = [c for c in expr.data.chunks[0].inputs]
    assert all(k.key[0].endswith("-map") for k in map_chunks)
    assert all(len(c.inputs) == 1 for c in map_chunks)
    assert_tensor(expr, ((A2 + 1) * 2).sum(axis=0))


def test_partial_memory_estimates_are_small():
    t = mt.tensor(np.ones((100, 100)), chunk_size=50)
    r = t.sum(axis=1)
    tile([r.data], None)
    out = r.data.chunks[0]
    maps = out.inputs
    assert all(m.nbytes <= 50 * 8 for m in maps)
    assert all(m.memory >= 50 * 50 * 8 for m in maps)


# ---- unknown chunk sizes ---------------------------------------------------------------


class _RowFilter(TensorOperand):
    """Test-only stand-in for boolean indexing: keeps the rows where a 1-d boolean tensor
    is True, so the result's row chunk lengths are unknown (nan) until execution."""

    _op_name = "test-row-filter"

    def tile(self):
        x, cond = self.inputs
        chunks = []
        for idx in x.chunk_grid():
            shape = (nan,) + tuple(x.chunk_at(idx).shape[1:])
            chunks.append(self.new_chunk(idx, shape, np.compress, (cond.chunk_at(idx[:1]), x.chunk_at(idx)), {"axis": 0}))
        return [(chunks, ((nan,) * len(x.nsplits[0]),) + tuple(x.nsplits[1:]))]


def _filtered(data, keep, chunk):
    """(lazy tensor of ``data[keep]`` with unknown row lengths, the numpy value)."""
    x = mt.tensor(data, chunk_size=chunk)
    tile([x.data], None)
    cond = mt.tensor(keep, chunk_size=(x.nsplits[0],))
    op = _RowFilter([x.data, cond.data])
    t = op.new_tensor((nan,) + data.shape[1:], data.dtype)
    return t, data[keep]


def test_unknown_shape_reductions(client):
    keep1 = A1 > 0.5
    keep1[:5] = False  # the first chunk becomes empty
    t1, e1 = _filtered(A1, keep1, 5)
    assert np.isnan(t1.shape[0])
    keep2 = A2[:, 0] > 0.4
    t2, e2 = _filtered(A2, keep2, (2, 4))
    pairs = []
    for name in UFUNC_REDUCTIONS + MOMENTS + ["argmin", "nanargmax"]:
        pairs.append((getattr(mt, name)(t1), _np(name, e1)))
        pairs.append((getattr(mt, name)(t2, axis=0), _np(name, e2, axis=0)))
        if not name.endswith(("argmin", "argmax")):
            pairs.append((getattr(mt, name)(t2, axis=1, combine_size=2), _np(name, e2, axis=1)))
    for name in ("cumsum", "cumprod", "nancumsum"):
        pairs.append((getattr(mt, name)(t1), _np(name, e1)))
        pairs.append((getattr(mt, name)(t2, axis=0), _np(name, e2, axis=0)))
        pairs.append((getattr(mt, name)(t2), _np(name, e2)))
    for t, _expected in pairs:
        if t.ndim == 0:
            assert t.shape == ()
    _check_all(pairs)


def test_unknown_shape_sum_needs_no_meta_pass(client):
    """A tree reduction tiles without the chunk sizes: tiling needs no session at all."""
    t1, e1 = _filtered(A1, A1 > 0.5, 4)
    s, m = t1.sum(), t1.mean()
    tile([s.data, m.data], None)  # would raise TilingError if sizes were needed
    assert any(np.isnan(n) for n in t1.data.nsplits[0])
    _check_all([(s, e1.sum()), (m, e1.mean())])


def test_unknown_shape_all_empty(client):
    t, e = _filtered(A1, np.zeros(A1.shape, dtype=bool), 6)
    _check_all([(t.sum(), e.sum()), (mt.count_nonzero(t), np.count_nonzero(e)), (mt.any(t), False)])
    with pytest.raises(ValueError, match="zero-size"):
        t.max().execute()
    with pytest.raises(ValueError, match="empty"):
        t.argmax().execute()


def test_boolean_indexing_if_available(client):
    x = mt.tensor(A1, chunk_size=4)
    try:
        f = x[x > 0.5]
    except (ImportError, AttributeError, NotImplementedError):
        pytest.skip("boolean indexing is not there yet")
    e = A1[A1 > 0.5]
    _check_all([(f.sum(), e.sum()), (f.mean(), e.mean()), (f.argmax(), e.argmax()), (f.cumsum(), e.cumsum())])


# ---- cumulative reductions ---------------------------------------------------------------


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "nancumsum", "nancumprod"])
def test_cumulative(client, name):
    with_nan = A2.copy()
    with_nan[[0, 4, 8], [1, 2, 5]] = nan
    pairs = []
    for data, chunk in ((A1, 8), (A2, (4, 5)), (A3, (3, 4, 3)), (with_nan, 4), (np.float64(1.5), None),
                        (np.arange(12, dtype=np.int32).reshape(3, 4), 2), (np.ones((3, 0)), 2)):
        t = mt.tensor(data, chunk_size=chunk)
        for axis in {None, 0, -1} if data.ndim else (None,):
            pairs.append((getattr(mt, name)(t, axis=axis), _np(name, data, axis=axis)))
    _check_all(pairs)


def test_cumulative_private_ravel(client, monkeypatch):
    """axis=None flattens with manipulation.ravel, or with the private fallback without it."""
    from mars_dask.tensor import manipulation

    monkeypatch.delattr(manipulation, "ravel", raising=False)
    pairs = [(mt.cumsum(mt.tensor(A3, chunk_size=(2, 3, 3))), np.cumsum(A3)),
             (mt.nancumprod(mt.tensor(A2, chunk_size=4)), np.nancumprod(A2)),
             (mt.cumsum(mt.tensor(np.float64(2.0))), np.cumsum(np.float64(2.0)))]
    t2, e2 = _filtered(A2, A2[:, 0] > 0.3, (4, 4))
    pairs.append((mt.cumprod(t2), np.cumprod(e2)))  # unknown row lengths: made known first
    _check_all(pairs)


def test_array_ufunc_accumulate(client):
    t = mt.tensor(A2, chunk_size=4)
    _check_all([(np.add.accumulate(t, axis=1), np.add.accumulate(A2, axis=1)),
                (np.multiply.accumulate(t, axis=0), np.multiply.accumulate(A2, axis=0))])


@pytest.mark.parametrize("name", ["sum", "min", "max", "mean", "prod", "nansum", "any", "all", "count_nonzero",
                                  "var", "std", "argmax"])
def test_reducing_a_multidimensional_selection_filters_each_chunk_in_place(client, name):
    """``a[mask].sum()`` with a 2-d mask: an order-free reduction of the whole selection
    filters and reduces each chunk of ``a`` where it is; numpy's C order would first join
    each row of chunks into one (moving most of ``a`` between workers).  argmax needs the
    order and keeps numpy's.  Values equal numpy's, also for a mask chunked differently and
    for a selection already executed."""
    from mars_dask.tiling.emit import postorder

    rng = np.random.default_rng(0)
    a = rng.random((23, 17))
    a[3, 4] = np.nan
    x = mt.tensor(a, chunk_size=(6, 5))
    t = getattr(mt, name)(x[x > 0.5])
    t._ensure_tiled()
    order, _ = postorder(t.chunks)
    selects = [c for c in order if c.key[0].endswith("-select")]
    assert len(selects) == (0 if name == "argmax" else 16)
    assert not [c for c in order if "rechunk" in c.key[0]] or name == "argmax"
    np.testing.assert_allclose(t.execute().fetch(), getattr(np, name)(a[a > 0.5]), rtol=1e-12)
    m = mt.tensor(a < 0.3, chunk_size=(7, 9))
    np.testing.assert_allclose(getattr(mt, name)(x[m]).execute().fetch(), getattr(np, name)(a[a < 0.3]), rtol=1e-12)
    done = x[x > 0.2]
    done.execute()
    np.testing.assert_allclose(getattr(mt, name)(done).execute().fetch(), getattr(np, name)(a[a > 0.2]), rtol=1e-12)
