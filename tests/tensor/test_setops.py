"""``mt.isin``, ``in1d``, ``setdiff1d`` and ``union1d`` against numpy."""

import math

import dask.config
import numpy as np
import pytest

import mars_dask
import mars_dask.tensor as mt
from mars_dask.tensor.setops import TensorIsIn
from tests.helpers import assert_tensor
from tests.tensor.test_numeric import check


def unknown(x, thr, chunk_size):
    t = mt.tensor(x, chunk_size=chunk_size)
    u = t[t > thr]
    assert math.isnan(u.shape[0])
    return u, x[x > thr]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 12, (5, 6))
    test = np.array([[3, 7], [11, 3], [20, -1]])
    return x, test


@pytest.mark.parametrize("chunks", [None, (2, 4), 1])
def test_isin_in1d(client, data, chunks):
    x, test = data
    t = mt.tensor(x, chunk_size=chunks)
    cases = [
        (mt.isin(t, test), np.isin(x, test)),
        (mt.isin(t, test, invert=True), np.isin(x, test, invert=True)),
        (mt.isin(t, mt.tensor(test, chunk_size=1)), np.isin(x, test)),  # many test chunks
        (mt.isin(t, mt.tensor(test, chunk_size=2), invert=True), np.isin(x, test, invert=True)),
        (mt.isin(t, [4.5, 5.0]), np.isin(x, [4.5, 5.0])),  # mixed dtypes compare by value
        (mt.isin(t, []), np.isin(x, [])),
        (mt.isin(t[0, 0], test), np.isin(x[0, 0], test)),  # 0-d element
        (mt.in1d(t, test), np.isin(x.ravel(), test.ravel())),
        (mt.in1d(t[1], [0, 1, 2], invert=True), np.isin(x[1], [0, 1, 2], invert=True)),
        (mt.in1d(mt.arange(10, chunk_size=3), mt.arange(4, 30, 2, chunk_size=4), assume_unique=True),
         np.isin(np.arange(10), np.arange(4, 30, 2), assume_unique=True)),
    ]
    mars_dask.execute(*[c[0] for c in cases])
    for r, e in cases:
        check(r, e)


def test_isin_large_test_elements_chunk_by_chunk(client, data):
    """When ``test_elements`` is large and spans many chunks, no chunk gathers it: each
    element chunk is tested against each test chunk."""
    x, _ = data
    test = np.arange(0, 40, 3)
    with dask.config.set({"mars-dask.tiling.chunk-store-limit": 16}):
        for invert in (False, True):
            r = mt.isin(mt.tensor(x, chunk_size=3), mt.tensor(test, chunk_size=4), invert=invert)
            assert_tensor(r, np.isin(x, test, invert=invert))
            keys = [c.key[0] for c in r.chunks[0].inputs]
            assert all(k.endswith("-partial") for k in keys), keys


def test_isin_unknown_shapes(client):
    x = np.random.default_rng(1).random(40)
    u, xu = unknown(x, 0.4, 7)
    v, xv = unknown(np.round(x, 1), 0.6, 6)
    cases = [(mt.isin(u, xv), np.isin(xu, xv)), (mt.isin(np.round(u, 1), v), np.isin(np.round(xu, 1), xv)),
             (mt.in1d(u, v, invert=True), np.isin(xu, xv, invert=True))]
    mars_dask.execute(*[c[0] for c in cases])
    for r, e in cases:
        assert_tensor(r, e)


@pytest.mark.parametrize("chunks", [None, 4, 1])
def test_setdiff1d_union1d(client, chunks):
    rng = np.random.default_rng(2)
    n = 5 if chunks == 1 else 23  # 1-element chunks: every chunk is a PSRS partition
    a = rng.integers(-5, 15, n)
    b = rng.integers(0, 25, (3, 4))
    if chunks == 1:
        b = b[:2, :2]
    f = np.array([2.5, np.nan, -1.0, 2.5, 7.0])
    ta, tb = mt.tensor(a, chunk_size=chunks), mt.tensor(b, chunk_size=chunks)
    ua, ub = np.unique(a), np.unique(b)
    cases = [
        (mt.setdiff1d(ta, tb), np.setdiff1d(a, b)),
        (mt.setdiff1d(tb, ta), np.setdiff1d(b, a)),
        (mt.setdiff1d(ta, [100]), np.setdiff1d(a, [100])),
        (mt.setdiff1d(mt.tensor(ua[::-1].copy(), chunk_size=chunks), ub, assume_unique=True),
         np.setdiff1d(ua[::-1], ub, assume_unique=True)),  # ar1's order kept
        (mt.union1d(ta, tb), np.union1d(a, b)),
        (mt.union1d(ta, f), np.union1d(a, f)),  # dtype promotion, NaN last
        (mt.union1d(tb, tb), np.union1d(b, b)),
    ]
    mars_dask.execute(*[c[0] for c in cases])
    for r, e in cases:
        assert math.isnan(r.shape[0]) or r.shape == e.shape
        assert_tensor(r, e)


def test_setops_unknown_shapes(client):
    x = np.round(np.random.default_rng(3).random(50), 1)
    u, xu = unknown(x, 0.35, 9)
    cases = [(mt.setdiff1d(u, [0.5, 0.6]), np.setdiff1d(xu, [0.5, 0.6])), (mt.union1d(u, [0.0, 2.0]),
             np.union1d(xu, [0.0, 2.0])), (mt.setdiff1d(x, u), np.setdiff1d(x, xu))]
    mars_dask.execute(*[c[0] for c in cases])
    for r, e in cases:
        assert_tensor(r, e)


def test_isin_lazy_metadata():
    t = mt.tensor(np.arange(5), chunk_size=2)
    r = mt.isin(t, [1, 2])
    assert isinstance(r.op, TensorIsIn) and not r.data.is_tiled
    assert r.shape == (5,) and r.dtype == np.bool_
    assert mt.in1d(mt.ones((2, 3), chunk_size=2), [1]).shape == (6,)
