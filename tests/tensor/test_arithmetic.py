"""Element-wise operations (mars_dask/tensor/arithmetic.py) against numpy: operators,
ufunc families, ``__array_ufunc__``, broadcasting across chunkings, dtypes (NEP 50
included), ``out=``/``where=``, ``astype``, ``where``/``clip``/``around``/``isclose``.
"""

import operator
import warnings

import numpy as np
import pytest

import mars_dask.tensor as mt
from mars_dask.session import execute
from tests.helpers import assert_tensor

RNG = np.random.RandomState(7)
F2 = RNG.rand(5, 6) * 4 - 2  # floats in [-2, 2)
F2B = RNG.rand(5, 6) + 0.5
I2 = RNG.randint(-20, 20, size=(5, 6)).astype(np.int64)
I2B = RNG.randint(1, 9, size=(5, 6)).astype(np.int64)  # non-zero divisors, small exponents
B2 = RNG.rand(5, 6) > 0.5


def _np(func, *args, **kwargs):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return func(*args, **kwargs)


def _check_all(pairs, **kw):
    """Execute every lazy result in one graph, then compare each with numpy."""
    execute(*[t for t, _ in pairs])
    for t, expected in pairs:
        assert_tensor(t, expected, **kw)


ARITH = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
         operator.mod, operator.pow]
COMPARE = [operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne]


@pytest.mark.parametrize("op", ARITH + COMPARE, ids=lambda f: f.__name__)
def test_binary_operators(client, op):
    pairs = []
    for a, b in ((F2, F2B), (I2, I2B)):
        ta = mt.tensor(a, chunk_size=(2, 4))
        tb = mt.tensor(b, chunk_size=3)  # different chunking: rechunked to common boundaries
        pairs += [
            (op(ta, tb), _np(op, a, b)),
            (op(ta, 3), _np(op, a, 3)),           # scalar on the right
            (op(2, tb), _np(op, 2, b)),           # reflected: scalar on the left
            (op(ta, b[0]), _np(op, a, b[0])),     # numpy array on the right (broadcast row)
            (op(a, tb), _np(op, a, b)),           # numpy array on the left: __array_ufunc__
        ]
    _check_all(pairs)


@pytest.mark.parametrize("op", [operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift],
                         ids=lambda f: f.__name__)
def test_bitwise_operators(client, op):
    a = np.abs(I2) % 16
    b = I2B % 5
    ta, tb = mt.tensor(a, chunk_size=2), mt.tensor(b, chunk_size=(5, 4))
    pairs = [(op(ta, tb), op(a, b)), (op(ta, 3), op(a, 3)), (op(1, tb), op(1, b))]
    if op not in (operator.lshift, operator.rshift):
        tB = mt.tensor(B2, chunk_size=4)
        pairs += [(op(tB, tB > 0), op(B2, B2 > 0)), (op(tB, True), op(B2, True))]
    _check_all(pairs)


def test_unary_operators(client):
    tf, ti, tb = mt.tensor(F2, chunk_size=2), mt.tensor(I2, chunk_size=4), mt.tensor(B2, chunk_size=3)
    u8 = np.arange(5, dtype=np.uint8)
    _check_all([(-tf, -F2), (+ti, +I2), (abs(tf), np.abs(F2)), (abs(ti), np.abs(I2)), (~ti, ~I2),
                (~tb, ~B2), (-mt.tensor(u8), -u8), (mt.abs(tf), np.abs(F2))])
    with pytest.raises(TypeError):
        -tb  # numpy: the boolean negative is not supported


def test_broadcasting_across_chunkings(client):
    a = RNG.rand(3, 1, 4)
    b = RNG.rand(5, 4)
    c = RNG.rand(4)
    ta = mt.tensor(a, chunk_size=(2, 1, 3))
    tb = mt.tensor(b, chunk_size=(2, 1))
    tc = mt.tensor(c, chunk_size=4)
    r = ta * tb + tc
    assert r.shape == (3, 5, 4)
    _check_all([(r, a * b + c), (tb - tc, b - c), (mt.tensor(7.0) * tb, 7.0 * b),
                (mt.add(mt.ones((0, 4), chunk_size=2), tc), np.zeros((0, 4)) + c)])


WITH_NAN = F2.copy()
WITH_NAN[0, :2], WITH_NAN[1, 3:], WITH_NAN[4, 0] = np.nan, np.inf, -np.inf

FAMILIES = {  # ufunc name -> input domain
    "sin": F2, "cos": F2, "tan": F2, "arcsin": F2 / 2, "arctan": F2, "sinh": F2, "tanh": F2,
    "arccosh": F2B + 1, "deg2rad": F2, "hypot": (F2, F2B), "arctan2": (F2, F2B),
    "exp": F2, "exp2": F2, "expm1": F2, "log": F2B, "log2": F2B, "log10": F2B, "log1p": F2B,
    "logaddexp": (F2, F2B), "sqrt": F2B, "cbrt": F2, "square": I2, "reciprocal": F2B,
    "floor": F2, "ceil": F2, "trunc": F2, "rint": F2,
    "isnan": WITH_NAN, "isinf": WITH_NAN, "isfinite": WITH_NAN, "signbit": F2, "sign": I2, "copysign": (F2, -F2B),
    "maximum": (F2, F2B), "fmin": (F2, F2B), "gcd": (I2, I2B), "lcm": (I2, I2B),
    "logical_and": (B2, F2 > 0), "logical_not": B2, "heaviside": (F2, F2B), "nextafter": (F2, F2B),
    "ldexp": (F2, I2B), "float_power": (F2B, F2), "conjugate": F2 + 1j * F2B, "positive": I2,
}


@pytest.mark.parametrize("name", list(FAMILIES))
def test_ufunc_families(client, name):
    data = FAMILIES[name]
    args = data if isinstance(data, tuple) else (data,)
    targs = [mt.tensor(a, chunk_size=(2, 4)) for a in args]
    expected = _np(getattr(np, name), *args)
    _check_all([(getattr(mt, name)(*targs), expected), (getattr(np, name)(*targs), expected)])


def test_two_output_ufuncs(client):
    tf, ti = mt.tensor(F2, chunk_size=3), mt.tensor(I2, chunk_size=2)
    q, r = mt.divmod(ti, 3)
    fr, ex = mt.frexp(tf)
    frac, whole = np.modf(tf)
    q2, r2 = divmod(tf, 0.7)
    nq, nr = np.divmod(ti, I2B)
    _check_all([(q, I2 // 3), (r, I2 % 3), (fr, np.frexp(F2)[0]), (ex, np.frexp(F2)[1]),
                (frac, np.modf(F2)[0]), (whole, np.modf(F2)[1]), (q2, divmod(F2, 0.7)[0]),
                (r2, divmod(F2, 0.7)[1]), (nq, I2 // I2B), (nr, I2 % I2B)])


def test_reflected_divmod(client):
    q, r = divmod(3, mt.tensor(I2B, chunk_size=2))
    _check_all([(q, 3 // I2B), (r, 3 % I2B)])


def test_array_ufunc_protocol(client):
    t = mt.tensor(F2, chunk_size=2)
    s = np.sin(t)
    assert isinstance(s, mt.Tensor)
    pairs = [(s, np.sin(F2)), (np.add(t, 1), F2 + 1), (np.add.reduce(t, axis=1), np.add.reduce(F2, axis=1)),
             (np.maximum.reduce(t, axis=0, keepdims=True), np.maximum.reduce(F2, axis=0, keepdims=True)),
             (np.logical_or.reduce(t > 1, axis=None), np.logical_or.reduce(F2 > 1, axis=None)),
             (np.add.accumulate(t, axis=1), np.add.accumulate(F2, axis=1))]
    _check_all(pairs)


def test_array_ufunc_reduce_default_axis(client):
    t = mt.tensor(F2, chunk_size=2)
    assert_tensor(np.add.reduce(t), np.add.reduce(F2))


def test_array_ufunc_accumulate_default_axis(client):
    t = mt.tensor(F2, chunk_size=2)
    assert_tensor(np.add.accumulate(t), np.add.accumulate(F2))


def test_out_argument(client):
    t = mt.tensor(F2, chunk_size=2)
    out = mt.zeros(F2.shape, chunk_size=3)
    res = mt.add(t, 1, out=out)
    assert res is out
    assert_tensor(out, F2 + 1)


def test_where_argument(client):
    t = mt.tensor(F2, chunk_size=2)
    out = mt.zeros(F2.shape)
    mt.sqrt(t, out=out, where=t > 0)
    expected = np.zeros(F2.shape)
    _np(np.sqrt, F2, out=expected, where=F2 > 0)
    assert_tensor(out, expected)


def test_out_and_where_bad_input():
    t = mt.tensor(F2, chunk_size=2)
    with pytest.raises(ValueError, match="shape"):
        mt.add(t, 1, out=mt.zeros((5,)))
    with pytest.raises(TypeError):
        mt.add(t, 1, out=np.zeros(F2.shape))
    with pytest.raises(TypeError, match="out="):
        mt.add(t, 1, where=t > 0)
    with pytest.raises(TypeError):
        mt.divmod(t, 2, where=t > 0)


@pytest.mark.parametrize("src,dst", [(np.float64, np.int32), (np.int64, np.float32), (np.bool_, np.int8),
                                     (np.float64, np.float64)])
def test_astype(client, src, dst):
    data = (F2 * 10).astype(src)
    t = mt.tensor(data, chunk_size=2)
    _check_all([(t.astype(dst), data.astype(dst)), (mt.astype(t, dst), data.astype(dst)), (t.copy(), data)])


def test_astype_casting_rules():
    t = mt.tensor(F2, chunk_size=2)
    with pytest.raises(TypeError, match="safe"):
        t.astype(np.int32, casting="safe")
    with pytest.raises(TypeError):
        t.astype(np.int64, casting="same_kind")
    with pytest.raises(TypeError):
        mt.tensor(I2).astype(np.int8, casting="equiv")
    with pytest.raises(TypeError):
        t.astype("not-a-dtype")
    assert t.astype(np.float64, copy=False) is t  # no copy asked and nothing to do


def test_where_clip_around(client):
    t, u = mt.tensor(F2, chunk_size=2), mt.tensor(F2B, chunk_size=3)
    cond = mt.tensor(B2, chunk_size=4)
    pairs = [(mt.where(cond, t, u), np.where(B2, F2, F2B)), (mt.where(t > 0, t, 0), np.where(F2 > 0, F2, 0)),
             (mt.where(B2[0], 1, u), np.where(B2[0], 1, F2B)),  # numpy condition, broadcast
             (mt.where(cond, 1, 2.5), np.where(B2, 1, 2.5)),
             (mt.clip(t, -1, 1), np.clip(F2, -1, 1)), (t.clip(None, 0.5), np.clip(F2, None, 0.5)),
             (mt.clip(mt.tensor(I2), 0, 5), np.clip(I2, 0, 5)),
             (mt.clip(t, u - 1, 1.5), np.clip(F2, F2B - 1, 1.5)),
             (mt.around(t, 2), np.around(F2, 2)), (mt.round(t * 100, -1), np.round(F2 * 100, -1)),
             (t.round(), np.round(F2)), (mt.around(mt.tensor(I2), -1), np.around(I2, -1))]
    _check_all(pairs)


def test_isclose_allclose(client):
    a = F2.copy()
    a[0, 0] = np.nan
    b = a + 1e-9
    b[1, 1] += 1e-3
    ta, tb = mt.tensor(a, chunk_size=2), mt.tensor(b, chunk_size=3)
    pairs = [(mt.isclose(ta, tb), np.isclose(a, b)), (mt.isclose(ta, b, equal_nan=True), np.isclose(a, b, equal_nan=True)),
             (mt.isclose(ta, 0.5, atol=1), np.isclose(a, 0.5, atol=1)),
             (mt.isclose(ta, tb, rtol=1e-2), np.isclose(a, b, rtol=1e-2)),
             (mt.allclose(ta, tb), np.allclose(a, b)), (mt.allclose(ta, tb, rtol=1e-2, equal_nan=True),
                                                        np.allclose(a, b, rtol=1e-2, equal_nan=True)),
             (mt.allclose(mt.tensor(F2, chunk_size=2), F2 + 1e-10), np.allclose(F2, F2 + 1e-10))]
    _check_all(pairs)


DTYPE_CASES = [  # (a, b) -> numpy's result dtype for add / true_divide / multiply / comparisons
    (np.arange(4, dtype=np.int8), np.arange(4, dtype=np.int8)),
    (np.arange(4, dtype=np.uint8), np.arange(4, dtype=np.int8)),
    (np.arange(4, dtype=np.int32), np.arange(4, dtype=np.int32)),
    (np.arange(4, dtype=np.uint64), np.arange(4, dtype=np.int64)),
    (np.arange(4, dtype=np.float32), np.arange(4, dtype=np.int16)),
    (np.arange(4, dtype=np.float32), np.arange(4, dtype=np.int64)),
    (np.arange(4) > 1, np.arange(4) > 2),
    (np.arange(4, dtype=np.complex64), np.arange(4, dtype=np.float64)),
    (np.arange(4, dtype=np.float16), np.arange(4, dtype=np.float16)),
]


@pytest.mark.parametrize("a,b", DTYPE_CASES, ids=lambda x: str(x.dtype))
def test_dtypes_exact(client, a, b):
    ta, tb = mt.tensor(a, chunk_size=3), mt.tensor(b, chunk_size=2)
    pairs = []
    for f in (np.add, np.multiply, np.true_divide, np.less, np.maximum):
        pairs.append((f(ta, tb), _np(f, a, b)))
    _check_all(pairs)


def test_nep50_weak_scalars(client):
    i8 = np.arange(5, dtype=np.int8)
    f32 = np.linspace(0, 1, 5, dtype=np.float32)
    u8 = np.arange(5, dtype=np.uint8)
    t8, t32, tu8 = mt.tensor(i8, chunk_size=2), mt.tensor(f32, chunk_size=2), mt.tensor(u8, chunk_size=3)
    cases = [(t8 + 1, i8 + 1), (t8 * 2.0, i8 * 2.0), (t32 * 2.0, f32 * 2.0), (t32 + 1, f32 + 1),
             (tu8 + 250, u8 + 250), (t8 + np.int32(1), i8 + np.int32(1)),  # numpy scalars are strong
             (t32 * np.float64(2), f32 * np.float64(2)), (1j * t32, 1j * f32), (t8 // 2, i8 // 2)]
    for t, e in cases:
        assert t.dtype == e.dtype, (t.dtype, e.dtype)
    _check_all(cases)
    with pytest.raises(OverflowError):
        t8 + 1000  # out of bounds for int8: numpy raises, and so does the build
    with pytest.raises(OverflowError):
        tu8 + (-1)


def test_bad_input_at_build_time():
    t = mt.tensor(F2, chunk_size=2)
    with pytest.raises(ValueError, match="broadcast"):
        t + mt.ones((4,))
    with pytest.raises(ValueError, match="broadcast"):
        mt.where(t > 0, t, np.ones((2, 6)))
    with pytest.raises(TypeError):
        mt.add(t)
    with pytest.raises(TypeError):
        mt.add(t, 1, bogus=True)
    with pytest.raises(TypeError):
        t + object()
    with pytest.raises(ValueError):
        mt.where(t > 0, t)
    with pytest.raises(ValueError):
        mt.clip(t)
    with pytest.raises(TypeError):
        mt.bitwise_and(t, 1)  # numpy: not supported for floats
    with pytest.raises(TypeError):
        bool(t > 0)


def test_elementwise_output_chunks_follow_inputs():
    """Blockwise output: same grid as the input; differently chunked inputs are re-cut
    to common boundaries (unify_nsplits) before the blockwise step."""
    from mars_dask.tiling.tile import tile

    a = mt.tensor(F2, chunk_size=(2, 4))
    b = mt.tensor(F2B, chunk_size=(3, 3))
    r = a + b
    tile([r.data], None)
    assert r.nsplits == ((2, 1, 1, 1), (3, 1, 2))  # union of both inputs' boundaries
    s = mt.sin(a)
    tile([s.data], None)
    assert s.nsplits == a.nsplits
    assert all(c.blockwise for c in s.data.chunks)
