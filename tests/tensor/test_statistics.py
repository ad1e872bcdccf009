
import numpy as np
import pytest

import mars_dask
import mars_dask.tensor as mt
from tests.helpers import assert_tensor
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
        assert_tensor(r, e, exact=True)


@pytest.mark.parametrize(
    "x",
    [np.arange(-20, 17, dtype=np.int32), np.array([3.0, np.nan, 1.0, 2.0, 5.0]), np.repeat([1, -2], 11),
     np.array([7])],
)
def test_quantile_flat_dtypes_nan_dups(client, x):
    t = mt.tensor(x, chunk_size=4)
    res = [mt.quantile(t, 0.37), mt.percentile(t, [5, 50, 95]), mt.median(t)]
    mars_dask.execute(*res)
    assert_tensor(res[0], np.quantile(x, 0.37), exact=True)
    assert_tensor(res[1], np.percentile(x, [5, 50, 95]), exact=True)
    assert_tensor(res[2], np.median(x))


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_percentile_axis(client, axis, keepdims):
    x = np.random.default_rng(1).integers(-50, 50, (5, 6, 4))
    t = mt.tensor(x, chunk_size=(2, 4, 3))
    r = mt.percentile(t, [10, 90], axis=axis, keepdims=keepdims, method="midpoint")
    assert_tensor(r, np.percentile(x, [10, 90], axis=axis, keepdims=keepdims, method="midpoint"), exact=True)
    m = mt.median(t, axis=axis, keepdims=keepdims)
    assert_tensor(m, np.median(x, axis=axis, keepdims=keepdims))


def test_quantile_axis_size0(client):
    x = np.zeros((0, 3))
    t = mt.tensor(x, chunk_size=2)
    assert_tensor(mt.quantile(t, 0.5, axis=1), np.quantile(x, 0.5, axis=1))


def test_quantile_unknown_input(client):
    x = np.random.default_rng(2).random(50)
    t, expected = unknown_filter(x, 13)
    assert_tensor(mt.percentile(t, [25, 50, 75]), np.percentile(expected, [25, 50, 75]), exact=True)
    t, expected = unknown_filter(x, 13)
    assert_tensor(mt.median(t), np.median(expected))


def test_empty_percentile_and_median(client):
    t = mt.tensor(np.zeros(0), chunk_size=2)
    with pytest.raises(IndexError):
        mt.percentile(t, 50).execute()
    with pytest.warns(RuntimeWarning):
        expected = np.median(np.zeros(0))
    assert_tensor(mt.median(t), expected)


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
