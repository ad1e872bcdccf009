import warnings

import numpy as np
import pytest

import mars_dask
import mars_dask.tensor as mt
from tests.helpers import assert_tensor
from tests.tensor.test_numeric import check
from tests.tensor.test_sort import unknown_filter

METHODS = ["linear", "lower", "higher", "nearest", "midpoint"]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(7, 9)).astype(np.float32)
    return x, mt.tensor(x, chunk_size=(4, 5))


@pytest.mark.parametrize("method", METHODS)
def test_percentile_flat_exact(client, data, method):
    x, t = data
    qs = [50, 0, 100, [10, 33.3, 99.9], np.array([[1.5, 70], [25, 87.5]])]
    results = [mt.percentile(t, q, method=method) for q in qs]
    results.append(mt.quantile(t, [0.2, 0.71], method=method, keepdims=True))
    mars_dask.execute(*results)
    expected = [np.percentile(x, q, method=method) for q in qs]
    expected.append(np.quantile(x, [0.2, 0.71], method=method, keepdims=True))
    for r, e in zip(results, expected):
        check(r, e, exact=True)


@pytest.mark.parametrize(
    "x",
    [np.arange(-20, 17, dtype=np.int32), np.array([3.0, np.nan, 1.0, 2.0, 5.0]), np.repeat([1, -2], 11),
     np.array([7])],
)
def test_quantile_flat_dtypes_nan_dups(client, x):
    t = mt.tensor(x, chunk_size=4)
    res = [mt.quantile(t, 0.37), mt.percentile(t, [5, 50, 95]), mt.median(t)]
    mars_dask.execute(*res)
    check(res[0], np.quantile(x, 0.37), exact=True)
    check(res[1], np.percentile(x, [5, 50, 95]), exact=True)
    check(res[2], np.median(x))


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_percentile_axis(client, axis, keepdims):
    x = np.random.default_rng(1).integers(-50, 50, (5, 6, 4))
    t = mt.tensor(x, chunk_size=(2, 4, 3))
    r = mt.percentile(t, [10, 90], axis=axis, keepdims=keepdims, method="midpoint")
    check(r, np.percentile(x, [10, 90], axis=axis, keepdims=keepdims, method="midpoint"), exact=True)
    m = mt.median(t, axis=axis, keepdims=keepdims)
    check(m, np.median(x, axis=axis, keepdims=keepdims))


def test_quantile_axis_size0(client):
    x = np.zeros((0, 3))
    t = mt.tensor(x, chunk_size=2)
    check(mt.quantile(t, 0.5, axis=1), np.quantile(x, 0.5, axis=1))


def test_quantile_unknown_input(client):
    x = np.random.default_rng(2).random(50)
    t, expected = unknown_filter(x, 13)
    check(mt.percentile(t, [25, 50, 75]), np.percentile(expected, [25, 50, 75]), exact=True)
    t, expected = unknown_filter(x, 13)
    check(mt.median(t), np.median(expected))


def test_empty_percentile_and_median(client):
    t = mt.tensor(np.zeros(0), chunk_size=2)
    with pytest.raises(IndexError):
        mt.percentile(t, 50).execute()
    with pytest.warns(RuntimeWarning):
        expected = np.median(np.zeros(0))
    check(mt.median(t), expected)


def test_quantile_bad_arguments():
    t = mt.tensor(np.arange(10.0), chunk_size=3)
    with pytest.raises(ValueError, match="Percentiles"):
        mt.percentile(t, 101)
    with pytest.raises(ValueError, match="Percentiles"):
        mt.percentile(t, [-1, 50])
    with pytest.raises(ValueError, match="Quantiles"):
        mt.quantile(t, 1.5)
    with pytest.raises(ValueError, match="not a valid method"):
        mt.quantile(t, 0.5, method="foo")
    with pytest.raises(np.exceptions.AxisError):
        mt.quantile(t, 0.5, axis=1)
    with pytest.raises(TypeError):
        mt.median(mt.tensor(np.ones(3, dtype=complex)))


# ---- histogram -------------------------------------------------------------------------


def _check_hist(a_np, t, **kw):
    h, e = mt.histogram(t, **kw)
    assert not h.data.is_tiled  # nothing ran at build time
    mars_dask.execute(h, e)
    with np.errstate(invalid="ignore"):  # density of no data is 0/0, as numpy says
        eh, ee = np.histogram(a_np, **kw)
    assert_tensor(h, eh, rtol=1e-5)
    assert_tensor(e, ee, exact=True)


@pytest.mark.parametrize(
    "x,chunks",
    [(np.random.default_rng(3).normal(size=(6, 7)), (4, 3)), (np.arange(-9, 14, dtype=np.int32), 5),
     (np.zeros(0), 3), (np.full(5, 2.5), 2)],
)
def test_histogram_auto_range(client, x, chunks):
    _check_hist(x, mt.tensor(x, chunk_size=chunks))
    _check_hist(x, mt.tensor(x, chunk_size=chunks), bins=3, density=True)


def test_histogram_bins_range_weights(client):
    rng = np.random.default_rng(4)
    x = rng.normal(size=40)
    w = rng.random(40)
    t = mt.tensor(x, chunk_size=9)
    _check_hist(x, t, bins=5, range=(-1, 1))
    _check_hist(x, t, bins=[-3, -1, 0, 0.5, 3])
    _check_hist(x, t, bins=4, weights=w)
    h, e = mt.histogram(t, bins=[-3, -1, 0, 0.5, 3], weights=mt.tensor(w, chunk_size=7), density=True)
    eh, _ = np.histogram(x, bins=[-3, -1, 0, 0.5, 3], weights=w, density=True)
    assert_tensor(h, eh)
    h, e = mt.histogram(t, bins=mt.tensor([-3.0, 0.0, 3.0], chunk_size=2))
    assert_tensor(h, np.histogram(x, bins=[-3.0, 0.0, 3.0])[0])
    assert_tensor(mt.histogram_bin_edges(t, bins=6), np.histogram_bin_edges(x, bins=6), exact=True)


def test_histogram_unknown_input(client):
    x = np.random.default_rng(5).random(50)
    t, expected = unknown_filter(x, 12)
    h, e = mt.histogram(t, bins=4)
    assert h.shape == (4,) and e.shape == (5,)
    mars_dask.execute(h, e)
    eh, ee = np.histogram(expected, bins=4)
    assert_tensor(h, eh)
    assert_tensor(e, ee, exact=True)


def test_histogram_nan_autorange_fails_like_numpy(client):
    t = mt.tensor(np.array([1.0, np.nan, 2.0]), chunk_size=2)
    with pytest.raises(ValueError, match="not finite"):
        mt.histogram(t)[0].execute()


def test_histogram_bad_arguments():
    t = mt.tensor(np.arange(10.0), chunk_size=3)
    with pytest.raises(ValueError):
        mt.histogram(t, bins=0)
    with pytest.raises(ValueError, match="max must be larger"):
        mt.histogram(t, range=(2, 1))
    with pytest.raises(ValueError, match="monotonically"):
        mt.histogram(t, bins=[0, 2, 1])
    with pytest.raises(ValueError, match="weights"):
        mt.histogram(t, weights=np.ones(4))


# ---- histogram string rules ------------------------------------------------------------

RULES = ["auto", "fd", "doane", "scott", "stone", "rice", "sturges", "sqrt"]


def _hist_data():
    rng = np.random.default_rng(7)
    return {
        "normal": rng.normal(size=(6, 7)),
        "skewed_f32": rng.exponential(size=31).astype(np.float32),
        "int16": rng.integers(-300, 300, 40).astype(np.int16),
        "int_small_range": rng.integers(0, 4, 25),
        "constant": np.full(9, 2.5),
    }


@pytest.mark.parametrize("name,chunks", [
    ("normal", None), ("normal", 4), ("normal", 1), ("skewed_f32", 4), ("int16", 7), ("int16", 1),
    ("int_small_range", 4), ("constant", 4),
])
def test_histogram_rules_match_numpy_edges(client, name, chunks):
    x = _hist_data()[name]
    if chunks == 1:
        x = x.ravel()[:12]  # 1-element chunks: keep the graph small
    t = mt.tensor(x, chunk_size=chunks)
    rules = RULES if chunks != 1 else ["auto", "stone", "doane"]
    res, exp = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # stone: "may be suboptimal"
        for rule in rules:
            h, e = mt.histogram(t, bins=rule)
            assert np.isnan(h.shape[0]) and np.isnan(e.shape[0])
            res += [h, e, mt.histogram_bin_edges(t, bins=rule, range=(-1, 2))]
            exp += [*np.histogram(x, bins=rule), np.histogram_bin_edges(x, bins=rule, range=(-1, 2))]
    mars_dask.execute(*res)
    for r, e in zip(res, exp):
        assert_tensor(r, e, exact=True)


def test_histogram_rules_density_unknown_bool_empty(client):
    x = np.random.default_rng(8).normal(size=60)
    t, xu = unknown_filter(x, 9)
    res, exp = [], []
    for rule in ("auto", "scott", "fd"):
        res += list(mt.histogram(t, bins=rule, density=True))
        exp += list(np.histogram(xu, bins=rule, density=True))
    b = np.array([True, False, True, True])
    with pytest.warns(RuntimeWarning, match="Converting input from bool"):
        res += list(mt.histogram(mt.tensor(b, chunk_size=3), bins="sqrt"))
    with pytest.warns(RuntimeWarning, match="Converting input from bool"):
        exp += list(np.histogram(b, bins="sqrt"))
    empty = mt.tensor(np.zeros(0, np.float32), chunk_size=2)
    res += list(mt.histogram(empty, bins="fd")) + [mt.histogram_bin_edges(empty, "stone", range=(1, 3))]
    exp += list(np.histogram(np.zeros(0, np.float32), bins="fd"))
    exp += [np.histogram_bin_edges(np.zeros(0, np.float32), "stone", range=(1, 3))]
    # a range that keeps no value
    res += list(mt.histogram(mt.tensor(x, chunk_size=7), bins="auto", range=(10, 11)))
    exp += list(np.histogram(x, bins="auto", range=(10, 11)))
    mars_dask.execute(*res)
    for r, e in zip(res, exp):
        assert_tensor(r, e, rtol=1e-12)


def test_histogram_rules_errors(client):
    t = mt.tensor(np.arange(10.0), chunk_size=3)
    with pytest.raises(ValueError, match="not a valid estimator"):
        mt.histogram(t, bins="foo")
    with pytest.raises(TypeError, match="weighted data"):
        mt.histogram(t, bins="auto", weights=np.ones(10))
    with pytest.raises(ValueError, match="max must be larger"):
        mt.histogram(t, bins="fd", range=(3, 1))
    with pytest.raises(ValueError, match="not finite"):
        mt.histogram(mt.tensor([1.0, np.nan, 3.0], chunk_size=2), bins="sturges")[1].execute()
    # Mars's order: weights before density
    h, _ = mt.histogram(t, 2, None, mt.ones(10, chunk_size=4), True)
    assert_tensor(h, np.histogram(np.arange(10.0), 2, None, weights=np.ones(10), density=True)[0])
    res = mt.histogram(t, bins="rice")  # an ExecutableTuple, as Mars's
    assert res.execute() is res
    got_h, got_e = res.fetch()
    exp_h, exp_e = np.histogram(np.arange(10.0), bins="rice")
    np.testing.assert_array_equal(got_h, exp_h)
    np.testing.assert_array_equal(got_e, exp_e)


# ---- ptp, average ----------------------------------------------------------------------

CHUNKS2 = [None, (2, 3), 1]


@pytest.mark.parametrize("chunks", CHUNKS2)
def test_ptp(client, chunks):
    x = np.random.default_rng(9).normal(size=(4, 5))
    xi = np.array([[-128, 127, 0], [5, -3, 2]], dtype=np.int8)  # ptp wraps as numpy's
    t, ti = mt.tensor(x, chunk_size=chunks), mt.tensor(xi, chunk_size=chunks)
    cases = [(mt.ptp(t), np.ptp(x)), (mt.ptp(t, axis=0), np.ptp(x, axis=0)),
             (mt.ptp(t, axis=1, keepdims=True), np.ptp(x, axis=1, keepdims=True)),
             (mt.ptp(t, axis=(0, 1)), np.ptp(x, axis=(0, 1))), (mt.ptp(ti, axis=1), np.ptp(xi, axis=1)),
             (mt.ptp(ti), np.ptp(xi))]
    mars_dask.execute(*[c[0] for c in cases])
    for r, e in cases:
        check(r, e, exact=True)
    out = mt.empty(5, chunk_size=2)
    assert mt.ptp(t, axis=0, out=out) is out
    check(out, np.ptp(x, axis=0), exact=True)
    u, xu = unknown_filter(x.ravel(), 6)
    check(mt.ptp(u), np.ptp(xu), exact=True)
    with pytest.raises(TypeError):
        mt.ptp(mt.tensor([True, False]))
    with pytest.raises(np.exceptions.AxisError):
        mt.ptp(t, axis=2)


@pytest.mark.parametrize("chunks", CHUNKS2)
def test_average(client, chunks):
    rng = np.random.default_rng(10)
    x = rng.normal(size=(4, 5))
    xi = rng.integers(0, 9, (4, 5))
    w = rng.random((4, 5))
    w1 = rng.random(5)
    t, ti = mt.tensor(x, chunk_size=chunks), mt.tensor(xi, chunk_size=chunks)
    x3 = rng.normal(size=(2, 3, 4))
    w3 = rng.random((4, 2))
    cases = [
        (mt.average(t), np.average(x)),
        (mt.average(ti, axis=0), np.average(xi, axis=0)),
        (mt.average(t, weights=w), np.average(x, weights=w)),
        (mt.average(ti, axis=1, weights=w1), np.average(xi, axis=1, weights=w1)),
        (mt.average(t, axis=1, weights=mt.tensor(w1, chunk_size=2), keepdims=True),
         np.average(x, axis=1, weights=w1, keepdims=True)),
        (mt.average(mt.tensor(x3, chunk_size=2), axis=(2, 0), weights=w3), np.average(x3, axis=(2, 0), weights=w3)),
        (mt.average(t.astype(np.float32), axis=0, weights=w.astype(np.float32)),
         np.average(x.astype(np.float32), axis=0, weights=w.astype(np.float32))),
        (mt.average(ti, weights=xi), np.average(xi, weights=xi)),
        (mt.average(mt.tensor(xi > 3), axis=0), np.average(xi > 3, axis=0)),
    ]
    for kw in ({}, {"axis": 1}, {"axis": 0, "weights": w1[:4]}, {"weights": w, "axis": 1}):
        avg, scl = mt.average(t, returned=True, **kw)
        e_avg, e_scl = np.average(x, returned=True, **kw)
        cases += [(avg, e_avg), (scl, e_scl)]
    mars_dask.execute(*[c[0] for c in cases])
    for r, e in cases:
        check(r, e, rtol=1e-12)


def test_average_unknown_and_errors(client):
    x = np.random.default_rng(11).random(40)
    u, xu = unknown_filter(x, 7)
    avg, scl = mt.average(u, returned=True)
    e_avg, e_scl = np.average(xu, returned=True)
    mars_dask.execute(avg, scl)
    check(avg, e_avg, rtol=1e-12)
    check(scl, e_scl, exact=True)
    check(mt.average(u, weights=u), np.average(xu, weights=xu), rtol=1e-12)
    t = mt.tensor(np.arange(6.0).reshape(2, 3), chunk_size=2)
    with pytest.raises(TypeError, match="Axis must be specified"):
        mt.average(t, weights=[1, 2, 3])
    with pytest.raises(ValueError, match="Shape of weights"):
        mt.average(t, axis=0, weights=[1, 2, 3])
    with pytest.raises(ZeroDivisionError):
        mt.average(t, axis=1, weights=[1, -1, 0]).execute()
    with pytest.raises(np.exceptions.AxisError):
        mt.average(t, axis=2)


# ---- cov, corrcoef ---------------------------------------------------------------------


@pytest.mark.parametrize("chunks", CHUNKS2)
def test_cov_corrcoef(client, chunks):
    rng = np.random.default_rng(12)
    x = rng.normal(size=(3, 6))
    y = rng.normal(size=(2, 6))
    xi = rng.integers(0, 10, (6, 3))
    z = x + 1j * rng.normal(size=(3, 6))
    fw = np.array([1, 2, 1, 3, 1, 2])
    aw = rng.random(6)
    t, ty, ti = (mt.tensor(a, chunk_size=chunks) for a in (x, y, xi))
    tz = mt.tensor(z, chunk_size=chunks)
    cases = [
        (mt.cov(t), np.cov(x)), (mt.cov(t, ty), np.cov(x, y)), (mt.cov(ti, rowvar=False), np.cov(xi, rowvar=False)),
        (mt.cov(t, bias=True), np.cov(x, bias=True)), (mt.cov(t, ddof=3), np.cov(x, ddof=3)),
        (mt.cov(t, fweights=fw), np.cov(x, fweights=fw)), (mt.cov(t, aweights=aw), np.cov(x, aweights=aw)),
        (mt.cov(t, fweights=mt.tensor(fw, chunk_size=4), aweights=aw, ddof=2),
         np.cov(x, fweights=fw, aweights=aw, ddof=2)),
        (mt.cov(t, aweights=mt.tensor(aw, chunk_size=4), bias=True), np.cov(x, aweights=aw, bias=True)),
        (mt.cov(t[0]), np.cov(x[0])), (mt.cov(t[0], t[1]), np.cov(x[0], x[1])),
        (mt.cov(tz), np.cov(z)), (mt.cov(t, dtype=np.float32), np.cov(x, dtype=np.float32)),
        (mt.corrcoef(t), np.corrcoef(x)), (mt.corrcoef(t, ty), np.corrcoef(x, y)),
        (mt.corrcoef(ti, rowvar=False), np.corrcoef(xi, rowvar=False)), (mt.corrcoef(tz), np.corrcoef(z)),
        (mt.corrcoef(t[1]), np.corrcoef(x[1])),
    ]
    mars_dask.execute(*[c[0] for c in cases])
    for r, e in cases:
        check(r, e, rtol=1e-5 if e.dtype == np.float32 else 1e-10, atol=1e-12)


def test_cov_unknown_degenerate_and_errors(client):
    x = np.random.default_rng(13).random(30)
    u, xu = unknown_filter(x, 7)
    check(mt.cov(u), np.cov(xu), rtol=1e-10)
    check(mt.corrcoef(u, u * 2 + 1), np.corrcoef(xu, xu * 2 + 1), rtol=1e-10)
    assert_tensor(mt.cov(np.zeros((0, 3))), np.cov(np.zeros((0, 3))))
    with pytest.warns(RuntimeWarning, match="Degrees of freedom"):
        r = mt.cov(mt.tensor([[1.0, 2.0]]), ddof=2)
    with pytest.warns(RuntimeWarning), np.errstate(all="ignore"):
        e = np.cov(np.array([[1.0, 2.0]]), ddof=2)
    with np.errstate(all="ignore"):
        check(r, e)
    t = mt.tensor(np.ones((2, 4)), chunk_size=3)
    with pytest.raises(ValueError, match="ddof must be integer"):
        mt.cov(t, ddof=1.5)
    with pytest.raises(ValueError, match="more than 2"):
        mt.cov(mt.ones((2, 2, 2)))
    with pytest.raises(TypeError, match="fweights must be integer"):
        mt.cov(t, fweights=[1, 1.5, 1, 1])
    with pytest.raises(ValueError, match="cannot be negative"):
        mt.cov(t, aweights=[1, -1, 1, 1])
    with pytest.raises(RuntimeError, match="incompatible numbers"):
        mt.cov(t, fweights=[1, 1])
    with pytest.raises(RuntimeError, match="multidimensional"):
        mt.cov(t, aweights=mt.ones((4, 1)))
    with pytest.raises(ValueError, match="cannot be negative"):
        mt.cov(t, fweights=mt.tensor([1, -1, 1, 1], chunk_size=2)).execute()


# ---- trapz, digitize, bincount ---------------------------------------------------------


@pytest.mark.parametrize("chunks", CHUNKS2)
def test_trapz(client, chunks):
    rng = np.random.default_rng(14)
    y = rng.normal(size=(4, 5))
    yi = rng.integers(0, 9, (4, 5))
    x1 = np.cumsum(rng.random(5))
    t, ti = mt.tensor(y, chunk_size=chunks), mt.tensor(yi, chunk_size=chunks)
    cases = [
        (mt.trapz(t), np.trapezoid(y)), (mt.trapz(t, axis=0), np.trapezoid(y, axis=0)),
        (mt.trapz(ti, dx=0.5), np.trapezoid(yi, dx=0.5)), (mt.trapz(ti, dx=2), np.trapezoid(yi, dx=2)),
        (mt.trapz(t, x=x1), np.trapezoid(y, x=x1)),
        (mt.trapz(t, x=mt.tensor(y * 2, chunk_size=chunks), axis=0), np.trapezoid(y, x=y * 2, axis=0)),
        (mt.trapz(t[0], x=x1), np.trapezoid(y[0], x=x1)),
        (mt.trapz(t.astype(np.float32), axis=-2), np.trapezoid(y.astype(np.float32), axis=-2)),
    ]
    mars_dask.execute(*[c[0] for c in cases])
    for r, e in cases:
        check(r, e, rtol=1e-6 if e.dtype == np.float32 else 1e-12)
    u, yu = unknown_filter(rng.random(20), 6)
    check(mt.trapz(u, dx=0.1), np.trapezoid(yu, dx=0.1), rtol=1e-12)
    with pytest.raises(np.exceptions.AxisError):
        mt.trapz(t, axis=2)


@pytest.mark.parametrize("chunks", CHUNKS2)
def test_digitize(client, chunks):
    rng = np.random.default_rng(15)
    x = rng.normal(size=(4, 5))
    x[0, 0] = 0.0
    inc, dec = [-1.0, 0.0, 0.5, 1.0], [1.0, 0.5, 0.0, -1.0]
    t = mt.tensor(x, chunk_size=chunks)
    cases = [(mt.digitize(t, inc), np.digitize(x, inc)), (mt.digitize(t, inc, right=True), np.digitize(x, inc, right=True)),
             (mt.digitize(t, dec), np.digitize(x, dec)), (mt.digitize(t, dec, True), np.digitize(x, dec, True)),
             (mt.digitize(t, mt.tensor(inc, chunk_size=3)), np.digitize(x, inc)),
             (mt.digitize(t, mt.tensor(dec, chunk_size=1), right=True), np.digitize(x, dec, right=True)),
             (mt.digitize(mt.tensor(np.arange(6), chunk_size=chunks and 4), [1, 3]), np.digitize(np.arange(6), [1, 3])),
             (mt.digitize(0.2, inc), np.digitize(0.2, inc))]
    mars_dask.execute(*[c[0] for c in cases])
    for r, e in cases:
        check(r, e)
    u, xu = unknown_filter(x.ravel(), 6)
    check(mt.digitize(u, [0.6, 0.9]), np.digitize(xu, [0.6, 0.9]))
    with pytest.raises(ValueError, match="monoton"):
        mt.digitize(t, [0, 2, 1])
    with pytest.raises(ValueError, match="monoton"):
        mt.digitize(t, mt.tensor([0, 2, 1], chunk_size=2)).execute()
    with pytest.raises(TypeError, match="complex"):
        mt.digitize(t.astype(complex), inc)
    with pytest.raises(ValueError):
        mt.digitize(t, [[1, 2]])


@pytest.mark.parametrize("chunks", [None, 6, 1])
def test_bincount(client, chunks):
    rng = np.random.default_rng(16)
    x = rng.integers(0, 9, 20 if chunks != 1 else 8)
    w = rng.random(x.size)
    t = mt.tensor(x, chunk_size=chunks)
    cases = [(mt.bincount(t), np.bincount(x)), (mt.bincount(t, minlength=15), np.bincount(x, minlength=15)),
             (mt.bincount(t, weights=w), np.bincount(x, weights=w)),
             (mt.bincount(t, weights=mt.tensor(w.astype(np.float32), chunk_size=7), minlength=3),
              np.bincount(x, weights=w.astype(np.float32), minlength=3)),
             (mt.bincount(t.astype(np.uint8)), np.bincount(x.astype(np.uint8))),
             (mt.bincount(t, weights=x), np.bincount(x, weights=x))]
    for r, _ in cases:
        assert np.isnan(r.shape[0])
    mars_dask.execute(*[c[0] for c in cases])
    for r, e in cases:
        assert_tensor(r, e, rtol=1e-12)


def test_bincount_unknown_empty_and_errors(client):
    x = np.random.default_rng(17).integers(0, 30, 40)
    t = mt.tensor(x, chunk_size=9)
    u = t[t > 12]
    assert_tensor(mt.bincount(u), np.bincount(x[x > 12]))
    assert_tensor(mt.bincount(u, weights=u * 0.5), np.bincount(x[x > 12], weights=x[x > 12] * 0.5))
    assert_tensor(mt.bincount(mt.tensor(np.zeros(0, int), chunk_size=2), minlength=4), np.bincount([], minlength=4))
    for bad in (np.array([1.0, 2.0]), np.zeros(0)):
        with pytest.raises(TypeError):
            np.bincount(bad)
        with pytest.raises(TypeError):
            mt.bincount(mt.tensor(bad))
    with pytest.raises(ValueError):
        mt.bincount(mt.ones((2, 2), dtype=int))
    with pytest.raises(ValueError):
        mt.bincount(t, minlength=-1)
    with pytest.raises(ValueError, match="same length"):
        mt.bincount(t, weights=np.ones(3))
    with pytest.raises(ValueError):
        mt.bincount(mt.tensor([1, -1, 2], chunk_size=2)).execute()
    with pytest.raises(TypeError):
        mt.bincount(t, weights=np.ones(40, complex))
