"""Assertions for DataFrame tileables against pandas."""

import math

import pandas as pd


def _check_meta(t, expected):
    meta = t.data.meta
    if isinstance(expected, pd.DataFrame):
        assert list(meta.columns) == list(expected.columns), (list(meta.columns), list(expected.columns))
        assert meta.dtypes.to_dict() == expected.dtypes.to_dict(), (meta.dtypes, expected.dtypes)
    elif isinstance(expected, (pd.Series, pd.Index)):
        assert meta.dtype == expected.dtype, (meta.dtype, expected.dtype)
        assert meta.name == expected.name, (meta.name, expected.name)
    n = t.shape[0]
    assert (isinstance(n, float) and math.isnan(n)) or n == len(expected), (t.shape, len(expected))


def _check_values(t, expected, *, check_like=False, sort_index=False, **kwargs):
    assert t.shape[0] == len(expected)
    got = t.fetch()
    assert type(got) is type(expected), (type(got), type(expected))
    if sort_index:
        got, expected = got.sort_index(), expected.sort_index()
    if isinstance(expected, pd.DataFrame):
        pd.testing.assert_frame_equal(got, expected, check_like=check_like, **kwargs)
    elif isinstance(expected, pd.Series):
        pd.testing.assert_series_equal(got, expected, **kwargs)
    else:
        pd.testing.assert_index_equal(got, expected, **kwargs)
    return got


def assert_pandas(t, expected, *, check_like=False, sort_index=False, **kwargs):
    """Execute ``t`` and compare with the pandas result ``expected``.

    Checks the lazy metadata first (columns and dtypes / Series dtype and name, the number of
    rows when it is known before execution), then the values with pandas.testing.
    ``check_like``/``sort_index`` only where pandas itself defines no row order.
    """
    _check_meta(t, expected)
    t.execute()
    return _check_values(t, expected, check_like=check_like, sort_index=sort_index, **kwargs)


def assert_pandas_all(cases, **kwargs):
    """``assert_pandas`` for several ``(tileable, expected)`` pairs executed in one graph
    (one round trip instead of one per case)."""
    from mars_dask import execute

    for t, expected in cases:
        _check_meta(t, expected)
    execute(*[t for t, _ in cases])
    for t, expected in cases:
        _check_values(t, expected, **kwargs)
