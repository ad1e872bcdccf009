"""Property tests: element-wise operations and reductions agree with numpy on random
shapes (up to 3-d, size-0 axes included), random chunkings, random axes and keepdims."""

import warnings

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import mars_dask.tensor as mt
from mars_dask.session import execute
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
    assert_tensor(getattr(mt, name)(t, axis=axis, **kwargs), expected, rtol=1e-9, atol=1e-12)
