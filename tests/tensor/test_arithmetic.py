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
    with pytest.raises(ValueError, match="broadcast"):
        mt.add(t, 1, out=mt.zeros((1, 6)))  # numpy: the output does not broadcast up
    with pytest.raises(TypeError):
        mt.add(t, 1, out=np.zeros(F2.shape))  # Mars: out must be a tensor
    with pytest.raises(ValueError, match="2 entries"):
        mt.divmod(t, 2, out=(mt.zeros(F2.shape),))
    with pytest.raises(TypeError, match="bool"):
        mt.add(t, 1, where=mt.tensor(I2))  # numpy: where= must be boolean
    with pytest.raises(TypeError, match="bogus"):
        mt.add(t, 1, bogus=True)


F4 = F2.astype(np.float32)


@pytest.mark.parametrize("chunks", [(5, 6), (2, 4), 1])
def test_ufunc_dtype_argument(client, chunks):
    """dtype= selects numpy's loop: the fetched data has that dtype (not only the metadata)."""
    tf4, ti = mt.tensor(F4, chunk_size=chunks), mt.tensor(I2, chunk_size=chunks)
    pairs = [(mt.true_divide(tf4, 2, dtype="f8"), np.true_divide(F4, 2, dtype="f8")),
             (mt.add(ti, 1, dtype=np.float32), np.add(I2, 1, dtype=np.float32)),
             (mt.sqrt(abs(tf4), dtype="f8"), np.sqrt(abs(F4), dtype="f8")),
             (mt.multiply(tf4, 3, dtype="i4", casting="unsafe"), np.multiply(F4, 3, dtype="i4", casting="unsafe")),
             (mt.negative(ti, dtype="f4"), np.negative(I2, dtype="f4")),
             (np.add(tf4, tf4, dtype="f8"), np.add(F4, F4, dtype="f8")),  # through __array_ufunc__
             (mt.divmod(ti, 3, dtype="f8")[1], np.divmod(I2, 3, dtype="f8")[1])]
    _check_all(pairs)
    for t, e in pairs:
        assert t.fetch().dtype == e.dtype


def test_ufunc_casting_errors():
    """numpy's casting checks at build time, with numpy's exception types."""
    tf, ti = mt.tensor(F2, chunk_size=2), mt.tensor(I2, chunk_size=2)
    with pytest.raises(np._core._exceptions._UFuncInputCastingError):
        mt.add(tf, 1, dtype="i8")  # same_kind: float input to an int loop
    with pytest.raises(np._core._exceptions._UFuncOutputCastingError):
        mt.add(tf, 1, out=mt.zeros(F2.shape, dtype="i8"))
    with pytest.raises(TypeError):
        mt.add(ti, ti, dtype="f4", casting="no")
    with pytest.raises(TypeError):
        mt.sqrt(ti, out=mt.zeros(I2.shape, dtype="i8"))
    with pytest.raises(ValueError):
        mt.add(tf, 1, order="X")


@pytest.mark.parametrize("chunks", [(5, 6), (2, 4), 1])
def test_ufunc_out_where_casting(client, chunks):
    t, u = mt.tensor(F2, chunk_size=chunks), mt.tensor(F2B, chunk_size=3)
    ti = mt.tensor(I2, chunk_size=chunks)
    mask = F2 > 0
    pairs = []
    # out as a 1-tuple, out of another dtype under casting="unsafe"
    o1 = mt.zeros(F2.shape, chunk_size=4)
    assert mt.add(t, u, out=(o1,)) is o1
    pairs.append((o1, F2 + F2B))
    o2 = mt.zeros(F2.shape, dtype="i4", chunk_size=2)
    mt.multiply(t, 10, out=o2, casting="unsafe")
    pairs.append((o2, np.multiply(F2, 10, out=np.zeros(F2.shape, "i4"), casting="unsafe")))
    # where with out: the other values of out are kept
    o3 = mt.full(F2.shape, -7.0, chunk_size=3)
    mt.sqrt(t, out=o3, where=t > 0)
    e3 = np.full(F2.shape, -7.0)
    np.sqrt(F2, out=e3, where=mask)
    pairs.append((o3, e3))
    # a numpy condition, broadcast along the rows; where=False leaves out untouched
    o4 = mt.ones(F2.shape, chunk_size=2)
    mt.subtract(t, 1, out=o4, where=mask[0])
    e4 = np.ones(F2.shape)
    np.subtract(F2, 1, out=e4, where=mask[0])
    pairs.append((o4, e4))
    o5 = mt.ones(F2.shape, chunk_size=2)
    mt.add(t, 1, out=o5, where=False)
    pairs.append((o5, np.ones(F2.shape)))
    # the inputs broadcast up to out's shape
    o6 = mt.zeros((3, 5, 6), chunk_size=2)
    mt.add(t, 1, out=o6)
    pairs.append((o6, np.broadcast_to(F2 + 1, (3, 5, 6))))
    # two outputs: one given, one allocated
    q = mt.zeros(I2.shape, dtype="i8", chunk_size=3)
    q2, r2 = mt.divmod(ti, 3, out=(q, None))
    assert q2 is q
    pairs += [(q, I2 // 3), (r2, I2 % 3)]
    _check_all(pairs)


@pytest.mark.parametrize("chunks", [(5, 6), (2, 4), 1])
def test_ufunc_where_without_out(client, chunks):
    """Mars allows where= without out=: the selected values are numpy's (numpy leaves the
    others uninitialized; here they are zeros)."""
    t = mt.tensor(F2, chunk_size=chunks)
    mask = F2 > 0
    res = mt.sqrt(t, where=t > 0)
    res2 = mt.add(t, 1, where=np.broadcast_to(mask[0], (2, 5, 6)))  # where= broadcasts the output
    assert res.shape == F2.shape and res2.shape == (2, 5, 6)
    execute(res, res2)
    got, got2 = res.fetch(), res2.fetch()
    np.testing.assert_allclose(got[mask], np.sqrt(F2[mask]))
    np.testing.assert_array_equal(got[~mask], 0)
    np.testing.assert_allclose(got2[:, :, mask[0]], np.broadcast_to(F2 + 1, (2, 5, 6))[:, :, mask[0]])
    np.testing.assert_array_equal(got2[:, :, ~mask[0]], 0)


def test_where_on_unknown_shape(client):
    t = mt.tensor(F2.ravel(), chunk_size=7)
    sel = t[t > 0]
    data = F2.ravel()[F2.ravel() > 0]
    o = mt.sqrt(sel, where=sel > 1)
    o.execute()
    got = o.fetch()
    np.testing.assert_allclose(got[data > 1], np.sqrt(data[data > 1]))
    assert_tensor(mt.true_divide(sel, 2, dtype="f4"), np.true_divide(data, 2, dtype="f4"))


def _fortran(a, chunks):
    """A Fortran-ordered tensor (the order attribute a datasource sets for F data)."""
    t = mt.tensor(np.asfortranarray(a), chunk_size=chunks)
    t.data.order = "F"
    return t


def _flags(x):
    return (x.flags.c_contiguous, x.flags.f_contiguous)


@pytest.mark.parametrize("chunks", [(5, 6), (2, 4), 1])
def test_memory_order_kept(client, chunks):
    """numpy's default order="K": element-wise results of F-ordered inputs are F-ordered
    (and clip, around, astype); C wins over F; order= forces a layout."""
    fa, fb = np.asfortranarray(F2), np.asfortranarray(F2B)
    ta, tb, tc = _fortran(F2, chunks), _fortran(F2B, 3), mt.tensor(F2B, chunk_size=chunks)
    row, col = F2B[0], F2B[:, :1]
    cases = [(mt.sin(ta), np.sin(fa)), (ta + tb, fa + fb), (ta * 2, fa * 2), (2 - ta, 2 - fa),
             (ta + mt.tensor(row, chunk_size=4), fa + row), (ta + mt.tensor(col), fa + col),
             (ta + tc, fa + F2B), (tc + ta, F2B + fa),
             (mt.clip(ta, -1, 1), np.clip(fa, -1, 1)), (ta.clip(0, None), fa.clip(0, None)),
             (mt.around(ta, 1), np.around(fa, 1)), (ta.round(), fa.round()),
             (ta.astype("f4"), fa.astype("f4")), (ta.astype("f4", order="C"), fa.astype("f4", order="C")),
             (mt.add(ta, 1, order="C"), np.add(fa, 1, order="C")),
             (mt.add(tc, 1, order="F"), np.add(F2B, 1, order="F")),
             (mt.where(ta > 0, ta, 0), np.where(fa > 0, fa, 0)), (mt.divmod(ta, 0.5)[0], np.divmod(fa, 0.5)[0]),
             (ta > tb, fa > fb), (-ta, -fa), (abs(ta), abs(fa)), (ta.copy(), fa.copy()),
             (ta.copy(order="K"), fa.copy(order="K"))]
    _check_all(cases)
    for t, e in cases:
        assert t.flags["C_CONTIGUOUS"] == e.flags.c_contiguous and t.flags["F_CONTIGUOUS"] == e.flags.f_contiguous
        assert _flags(t.fetch()) == _flags(e), (t.order, _flags(t.fetch()), _flags(e))


def test_out_keeps_its_order(client):
    ta = _fortran(F2, 2)
    o = mt.zeros(F2.shape, chunk_size=3)  # C-ordered out: numpy writes into its layout
    mt.add(ta, 1, out=o)
    assert_tensor(o, F2 + 1)
    assert o.fetch().flags.c_contiguous and not o.fetch().flags.f_contiguous
    of = _fortran(np.zeros(F2.shape), 4)
    mt.sin(mt.tensor(F2), out=of)
    assert_tensor(of, np.sin(F2))
    assert of.fetch().flags.f_contiguous


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
