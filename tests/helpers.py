"""Assertions shared by the tests: results of lazy tileables against numpy."""

import math

import numpy as np


def _same_shape(lazy_shape, real_shape):
    assert len(lazy_shape) == len(real_shape), (lazy_shape, real_shape)
    for a, b in zip(lazy_shape, real_shape):
        assert (isinstance(a, float) and math.isnan(a)) or a == b, (lazy_shape, real_shape)


def assert_tensor(t, expected, *, rtol=1e-7, atol=0, check_dtype=True, exact=None):
    """Execute ``t`` and compare with the numpy result ``expected``.

    Checks that the lazy metadata (shape where known, dtype) matched numpy's before
    execution, that the shape is fully known afterwards, and the values (exactly for
    integer/bool dtypes, to ``rtol``/``atol`` for floats).
    """
    expected = np.asarray(expected)
    _same_shape(t.shape, expected.shape)
    if check_dtype:
        assert t.dtype == expected.dtype, (t.dtype, expected.dtype)
    t.execute()
    assert tuple(t.shape) == expected.shape, (t.shape, expected.shape)
    got = t.fetch()
    assert isinstance(got, np.ndarray), type(got)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    if check_dtype:
        assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    if exact is None:
        exact = expected.dtype.kind not in "fc"
    if exact:
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)
    return got
