"""``mt.amax``/``amin``/``product``/``innerproduct``, the element-wise ``nan_to_num``,
``fix``, ``i0``, ``sinc``, ``angle``, ``real``, ``imag``, ``iscomplex``, ``isreal``,
``array_equal`` and ``tree_add``/``tree_multiply`` against numpy."""

import math

import numpy as np
import pytest

import mars_dask
import mars_dask.tensor as mt
from tests.helpers import assert_tensor

# one chunk, uneven chunks, 1-element chunks
CHUNKS = [None, (2, 3), 1]


def check(t, expected, **kw):
    """``assert_tensor`` for arrays; 0-d results fetch as numpy scalars of numpy's dtype."""
    expected = np.asarray(expected)
    if expected.ndim:
        return assert_tensor(t, expected, **kw)
    assert t.shape == () and t.dtype == expected.dtype, (t.shape, t.dtype, expected.dtype)
    got = t.execute().fetch()
    assert isinstance(got, np.generic) and got.dtype == expected.dtype, (type(got), expected.dtype)
    exact = kw.get("exact")
    if exact or (exact is None and expected.dtype.kind not in "fc"):
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(got, expected, rtol=kw.get("rtol", 1e-7), atol=kw.get("atol", 0), equal_nan=True)
    return got


def unknown(x, thr=0.3, chunk_size=4):
    """``t[t > thr]``: a 1-d tensor whose length is unknown until executed."""
    t = mt.tensor(x, chunk_size=chunk_size)
    u = t[t > thr]
    assert math.isnan(u.shape[0])
    return u, x[x > thr]


@pytest.fixture(scope="module")
def xs():
    rng = np.random.default_rng(0)
    x = rng.normal(scale=3, size=(4, 5))
    x[0, 1], x[1, 2], x[2, 3] = np.nan, np.inf, -np.inf
    z = (rng.normal(size=(4, 5)) + 1j * rng.normal(size=(4, 5))).astype(np.complex64)
    z[0, 0] = 2.0  # a real value in a complex array
    return x, z


def test_aliases():
    assert mt.amax is mt.max and mt.amin is mt.min and mt.product is mt.prod
    assert mt.innerproduct is mt.inner


@pytest.mark.parametrize("chunks", CHUNKS)
def test_aliases_values(client, chunks):
    x = np.arange(1, 21, dtype=np.int32).reshape(4, 5)
    t = mt.tensor(x, chunk_size=chunks)
    res = [mt.amax(t, axis=0), mt.amin(t, axis=1, keepdims=True), mt.product(t[:2], axis=1), mt.amax(t)]
    exp = [np.amax(x, axis=0), np.amin(x, axis=1, keepdims=True), np.prod(x[:2], axis=1), np.amax(x)]
    mars_dask.execute(*res)
    for r, e in zip(res, exp):
        check(r, e)
    check(mt.innerproduct(t, t[:3]), np.inner(x, x[:3]))


@pytest.mark.parametrize("chunks", CHUNKS)
def test_elementwise_real(client, xs, chunks):
    x, _ = xs
    t = mt.tensor(x, chunk_size=chunks)
    xi = np.arange(-6, 14, dtype=np.int16).reshape(4, 5)
    ti = mt.tensor(xi, chunk_size=chunks)
    with np.errstate(all="ignore"):
        cases = [
            (mt.nan_to_num(t), np.nan_to_num(x)),
            (mt.nan_to_num(t, nan=-1.5, posinf=9.0, neginf=-9.0), np.nan_to_num(x, nan=-1.5, posinf=9.0, neginf=-9.0)),
            (mt.nan_to_num(ti), np.nan_to_num(xi)),
            (mt.nan_to_num(t.astype(np.float32)), np.nan_to_num(x.astype(np.float32))),
            (mt.fix(t), np.fix(x)),
            (mt.fix(ti), np.fix(xi)),
            (mt.i0(t[:, 2:]), np.i0(x[:, 2:])),
            (mt.i0(ti), np.i0(xi)),
            (mt.sinc(t), np.sinc(x)),
            (mt.sinc(ti.astype(np.float32)), np.sinc(xi.astype(np.float32))),
            (mt.angle(t), np.angle(x)),
            (mt.angle(ti, deg=True), np.angle(xi, deg=True)),
            (mt.real(ti), np.real(xi)),
            (mt.imag(t), np.imag(x)),
            (mt.iscomplex(t), np.iscomplex(x)),
            (mt.isreal(ti), np.isreal(xi)),
        ]
    mars_dask.execute(*[c[0] for c in cases])
    for r, e in cases:
        assert_tensor(r, e, rtol=1e-12)


@pytest.mark.parametrize("chunks", CHUNKS)
def test_elementwise_complex(client, xs, chunks):
    _, z = xs
    t = mt.tensor(z, chunk_size=chunks)
    zz = z.astype(np.complex128)
    zz[1, 1] = complex(np.nan, np.inf)
    tt = mt.tensor(zz, chunk_size=chunks)
    cases = [
        (mt.angle(t), np.angle(z)), (mt.angle(t, deg=True), np.angle(z, deg=True)),
        (mt.real(t), np.real(z)), (mt.imag(t), np.imag(z)),
        (mt.iscomplex(t), np.iscomplex(z)), (mt.isreal(t), np.isreal(z)),
        (mt.nan_to_num(tt), np.nan_to_num(zz)), (mt.sinc(t), np.sinc(z)),
        (mt.nan_to_num(tt, nan=3.0, posinf=1.0), np.nan_to_num(zz, nan=3.0, posinf=1.0)),
    ]
    mars_dask.execute(*[c[0] for c in cases])
    for r, e in cases:
        assert_tensor(r, e, rtol=1e-6)


def test_elementwise_unknown_shape_and_scalars(client):
    x = np.random.default_rng(1).random(23) * 4 - 1
    u, xu = unknown(x)
    with np.errstate(invalid="ignore"):
        log_xu = np.log(xu - 1)
    cases = [(mt.fix(u), np.fix(xu)), (mt.sinc(u), np.sinc(xu)), (mt.i0(u), np.i0(xu)),
             (mt.angle(u - 1, deg=True), np.angle(xu - 1, deg=True)), (mt.real(u), np.real(xu)),
             (mt.imag(u), np.imag(xu)), (mt.isreal(u), np.isreal(xu)), (mt.iscomplex(u), np.iscomplex(xu)),
             (mt.nan_to_num(mt.log(u - 1)), np.nan_to_num(log_xu))]
    with np.errstate(all="ignore"):
        mars_dask.execute(*[c[0] for c in cases])
    for r, e in cases:
        assert_tensor(r, e, rtol=1e-12)
    check(mt.sinc(0.5), np.sinc(0.5))
    check(mt.angle(1j), np.angle(1j))
    check(mt.fix(-2.5), np.fix(-2.5))


def test_nan_to_num_copy_false(client):
    x = np.array([np.nan, 1.0, -np.inf])
    t = mt.tensor(x, chunk_size=2)
    r = mt.nan_to_num(t, copy=False)
    assert r is t
    assert_tensor(t, np.nan_to_num(x))
    with pytest.raises(ValueError):
        mt.nan_to_num([1.0, np.nan], copy=False)


def test_elementwise_mars_kwargs(client):
    x = np.linspace(-2, 2, 7)
    t = mt.tensor(x, chunk_size=3)
    r = mt.sinc(t, dtype=np.float32, gpu=None, sparse=False)
    assert_tensor(r, np.sinc(x).astype(np.float32))
    assert_tensor(mt.angle(t, deg=True, dtype=np.float32), np.angle(x, deg=True).astype(np.float32))
    out = mt.empty(7, chunk_size=2)
    assert mt.fix(t, out=out) is out
    assert_tensor(out, np.fix(x))


def test_elementwise_errors():
    t = mt.tensor(np.arange(3.0))
    with pytest.raises(TypeError):
        mt.i0(t.astype(np.complex128))
    with pytest.raises(TypeError):
        mt.fix(t, foo=1)
    with pytest.raises(TypeError):
        np.i0(np.ones(2, np.complex128))  # numpy agrees


@pytest.mark.parametrize("chunks", CHUNKS)
def test_array_equal(client, chunks):
    x = np.arange(20.0).reshape(4, 5)
    xn = x.copy()
    xn[1, 1] = np.nan
    t = mt.tensor(x, chunk_size=chunks)
    tn = mt.tensor(xn, chunk_size=chunks)
    y = x.copy()
    y[3, 4] = -1
    cases = [
        (mt.array_equal(t, x), np.array_equal(x, x)),
        (mt.array_equal(t, mt.tensor(x, chunk_size=3)), True),
        (mt.array_equal(t, y), np.array_equal(x, y)),
        (mt.array_equal(t, x[:2]), np.array_equal(x, x[:2])),
        (mt.array_equal(t, x.ravel()), np.array_equal(x, x.ravel())),
        (mt.array_equal(tn, xn), np.array_equal(xn, xn)),
        (mt.array_equal(tn, xn, equal_nan=True), np.array_equal(xn, xn, equal_nan=True)),
        (mt.array_equal(t.astype(int), x.astype(int), equal_nan=True), True),
        (mt.array_equal([1, 2], [1, 2]), True),
    ]
    for r, _ in cases:
        assert r.shape == () and r.dtype == np.bool_
    mars_dask.execute(*[c[0] for c in cases])
    for r, e in cases:
        assert bool(r.fetch()) is bool(e), (r, e)
        check(r, np.bool_(e))


def test_array_equal_unknown_shapes(client):
    x = np.random.default_rng(2).random(30)
    u, xu = unknown(x, 0.5, 7)
    u2, _ = unknown(x, 0.5, 4)
    u3, _ = unknown(x, 0.6, 4)
    cases = [(mt.array_equal(u, xu), True), (mt.array_equal(u, u2), True), (mt.array_equal(u, u3), False),
             (mt.array_equal(u, xu + 1), False), (mt.array_equal(u, xu[:-1]), False)]
    mars_dask.execute(*[c[0] for c in cases])
    for r, e in cases:
        assert bool(r.fetch()) is e


@pytest.mark.parametrize("chunks", CHUNKS)
def test_tree_add_multiply(client, chunks):
    rng = np.random.default_rng(3)
    arrs = [rng.integers(-5, 5, (3, 4)).astype(np.int32) for _ in range(5)]
    ts = [mt.tensor(a, chunk_size=chunks) for a in arrs]
    f32 = rng.random(4).astype(np.float32)
    cases = [
        (mt.tree_add(*ts), arrs[0] + arrs[1] + arrs[2] + arrs[3] + arrs[4]),
        (mt.tree_add(*ts, combine_size=2), sum(arrs[1:], arrs[0])),
        (mt.tree_multiply(*ts[:3], 2), arrs[0] * arrs[1] * arrs[2] * 2),
        (mt.tree_add(ts[0], f32, 1.5), arrs[0] + f32 + 1.5),  # broadcasting; NEP 50 dtypes
        (mt.tree_multiply(ts[0], ts[1], combine_size=3, dtype=np.float64), (arrs[0] * arrs[1]).astype(np.float64)),
        (mt.tree_add(ts[4]), arrs[4]),
    ]
    mars_dask.execute(*[c[0] for c in cases])
    for r, e in cases:
        assert_tensor(r, e, rtol=1e-6)
    with pytest.raises(ValueError):
        mt.tree_add(*ts, combine_size=1)
    with pytest.raises(TypeError):
        mt.tree_add()
