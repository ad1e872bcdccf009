"""Property tests: element-wise operations and reductions agree with numpy on random
shapes (up to 3-d, size-0 axes included), random chunkings, random axes and keepdims; the
fetched objects are numpy's (scalars for 0-d results, the memory order); ``Tensor.flags``
and Mars's tuple ``chunk_size`` shorter than the shape."""

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import mars_dask.tensor as mt
from mars_dask.session import execute
from mars_dask.tiling.tile import tile
from tests.helpers import assert_tensor

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=6)
floats = st.floats(-100, 100, allow_nan=False, width=64)
ints = st.integers(-50, 50)


@st.composite
def array_and_chunks(draw, elements=floats, dtype=np.float64):
    shape = draw(shapes)
    data = draw(hnp.arrays(dtype, shape, elements=elements))
    chunks = tuple(draw(st.integers(1, max(1, s))) for s in shape)
    return data, chunks


@st.composite
def axis_for(draw, ndim):
    """None, an int (maybe negative) or a tuple of distinct axes."""
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none":
        return None
    if kind == "int":
        return draw(st.integers(-ndim, ndim - 1))
    return tuple(draw(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim)))


def _np(func, *args, **kwargs):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.asarray(func(*args, **kwargs))


ELEMENTWISE = [np.add, np.subtract, np.multiply, np.true_divide, np.maximum, np.greater, np.hypot]


@SETTINGS
@given(ac=array_and_chunks(), data=st.data())
def test_binary_elementwise(client, ac, data):
    a, chunks = ac
    # the second operand broadcasts against a trailing part of the shape, chunked its own way
    k = data.draw(st.integers(0, a.ndim))
    bshape = tuple(data.draw(st.sampled_from([1, s])) for s in a.shape[a.ndim - k:])
    b = data.draw(hnp.arrays(np.float64, bshape, elements=floats))
    bchunks = tuple(data.draw(st.integers(1, max(1, s))) for s in bshape)
    func = data.draw(st.sampled_from(ELEMENTWISE))
    ta, tb = mt.tensor(a, chunk_size=chunks), mt.tensor(b, chunk_size=bchunks)
    pairs = [(func(ta, tb), _np(func, a, b)), (func(tb, ta), _np(func, b, a)),
             (func(ta, 2.5), _np(func, a, 2.5))]
    execute(*[t for t, _ in pairs])
    for t, e in pairs:
        assert_tensor(t, e, rtol=1e-12)


@SETTINGS
@given(ac=array_and_chunks(elements=ints, dtype=np.int32), op=st.sampled_from(["neg", "abs", "mod", "floordiv", "pow"]))
def test_integer_elementwise(client, ac, op):
    a, chunks = ac
    t = mt.tensor(a, chunk_size=chunks)
    lazy, expected = {
        "neg": (-t, -a), "abs": (abs(t), np.abs(a)), "mod": (t % 7, a % 7),
        "floordiv": (t // -3, a // -3), "pow": (t ** 2, a ** 2),
    }[op]
    assert_tensor(lazy, expected)


REDUCTIONS = ["sum", "prod", "mean", "var", "std", "min", "max", "any", "all", "nansum",
              "nanmean", "nanmax", "count_nonzero", "argmin", "argmax", "cumsum", "cumprod"]


@SETTINGS
@given(ac=array_and_chunks(elements=st.floats(-2, 2, allow_nan=False, width=64)), data=st.data())
def test_reductions(client, ac, data):
    a, chunks = ac
    name = data.draw(st.sampled_from(REDUCTIONS))
    t = mt.tensor(a, chunk_size=chunks)
    kwargs = {}
    if name in ("argmin", "argmax", "cumsum", "cumprod"):
        axis = data.draw(st.one_of(st.none(), st.integers(-a.ndim, a.ndim - 1)))
    else:
        axis = data.draw(axis_for(a.ndim))
    if name not in ("cumsum", "cumprod"):
        kwargs["keepdims"] = data.draw(st.booleans())
    if name in ("var", "std"):
        kwargs["ddof"] = data.draw(st.integers(0, 2))
    combine = data.draw(st.integers(2, 5))
    try:
        expected = _np(getattr(np, name), a, axis=axis, **kwargs)
    except ValueError:  # empty reduction without identity: the build raises as numpy does
        try:
            getattr(mt, name)(t, axis=axis, **kwargs)
        except ValueError:
            return
        raise AssertionError(f"{name} on {a.shape} axis={axis} did not raise at build time") from None
    if name not in ("cumsum", "cumprod"):
        kwargs["combine_size"] = combine
    got = assert_tensor(getattr(mt, name)(t, axis=axis, **kwargs), expected, rtol=1e-9, atol=1e-12)
    # numpy gives a scalar (np.float64(...)) for a 0-d result, and so does fetch()
    assert type(got) is type(getattr(np, name)(a, axis=axis, **{k: v for k, v in kwargs.items() if k != "combine_size"}))


@SETTINGS
@given(ac=array_and_chunks(), fortran=st.booleans(), data=st.data())
def test_fetched_layout_is_numpys(client, ac, fortran, data):
    """The fetched array has numpy's memory layout (flags) for element-wise results of C or
    Fortran inputs (numpy's order="K"), and Tensor.flags says so beforehand."""
    a, chunks = ac
    src = np.asfortranarray(a) if fortran else a
    t = mt.tensor(src, chunk_size=chunks)
    if fortran:
        t.data.order = "F"  # what a datasource records for Fortran data
    func = data.draw(st.sampled_from([np.sin, np.negative, lambda x: x * 2 + 1, lambda x: np.clip(x, -1, 1)]))
    r, e = func(t), _np(func, src)
    got = assert_tensor(r, e)
    assert (got.flags.c_contiguous, got.flags.f_contiguous) == (e.flags.c_contiguous, e.flags.f_contiguous)
    assert (r.flags["C_CONTIGUOUS"], r.flags["F_CONTIGUOUS"]) == (e.flags.c_contiguous, e.flags.f_contiguous)


def test_zero_d_results_are_numpy_scalars(client):
    a = np.arange(15.0).reshape(3, 5)
    t = mt.tensor(a, chunk_size=2)
    cases = [(mt.ones(5, chunk_size=2).sum(), np.ones(5).sum()), (t.sum(), a.sum()), (t.max(), a.max()),
             (t.argmax(), a.argmax()), ((t > 3).any(), (a > 3).any()), (t[1, 2], a[1, 2]),
             (mt.tensor(3.5) * 2, np.float64(3.5) * 2), (mt.linalg.norm(t), np.linalg.norm(a)),
             (mt.tensor(np.int8(3)) + mt.tensor(np.int8(4)), np.int8(3) + np.int8(4))]
    execute(*[c for c, _ in cases])
    for lazy, expected in cases:
        got = lazy.fetch()
        assert type(got) is type(expected) and got == expected, (got, expected)
    assert mt.tensor(a, chunk_size=2).sum().to_numpy() == 105.0


def test_flags():
    c = mt.ones((3, 4), chunk_size=2)
    f = mt.ones((3, 4), chunk_size=2)
    f.data.order = "F"
    assert c.flags == {"C_CONTIGUOUS": True, "F_CONTIGUOUS": False}  # Mars's dict
    assert f.flags == {"C_CONTIGUOUS": False, "F_CONTIGUOUS": True}
    assert c.flags.c_contiguous and not c.flags.f_contiguous and c.flags["C"] and not c.flags["F"]
    assert f.flags.f_contiguous and f.flags.fortran and not f.flags.contiguous
    assert c.flags.owndata and c.flags.writeable and c.flags["WRITEABLE"]  # as the fetched array's
    for t in (mt.ones(4), mt.tensor(2.0), mt.ones((1, 4)), mt.ones((0, 3)), f[:1]):  # both, as numpy's
        assert t.flags == {"C_CONTIGUOUS": True, "F_CONTIGUOUS": True}, t.shape
    with pytest.raises(AttributeError):
        c.flags.bogus
    with pytest.raises(KeyError):
        c.flags["bogus"]


def test_chunk_size_tuple_shorter_than_shape():
    """Mars (decide_chunk_sizes): a tuple chunk_size gives the leading axes; the others are
    chunked automatically within the chunk store limit."""
    import dask.config

    t = mt.ones((4, 6), chunk_size=(2,))
    tile([t.data], None)
    assert t.nsplits == ((2, 2), (6,))
    t = mt.tensor(np.ones((5, 3, 2)), chunk_size=[3])
    tile([t.data], None)
    assert t.nsplits == ((3, 2), (3,), (2,))
    with dask.config.set({"mars-dask.tiling.chunk-store-limit": 64}):  # 8 float64s per chunk
        t = mt.ones((4, 6), chunk_size=(2,))
        tile([t.data], None)
        assert t.nsplits == ((2, 2), (4, 2))
    with pytest.raises(ValueError, match="more dimensions"):
        mt.ones((4,), chunk_size=(2, 2))
