"""``.str`` and ``.dt`` accessors vs pandas."""

import pandas as pd
import pytest

import mars_dask.dataframe as md

from .helpers import assert_pandas


@pytest.fixture
def data():
    s = pd.Series(["Apple pie", None, "banana", " cherry ", "date-x-y", "", "Eggplant"] * 2, dtype="str", name="s")
    d = pd.Series(pd.to_datetime(["2021-03-04 05:06:07", None, "2020-12-31 23:59:59", "2022-07-01 12:00:00"] * 3), name="d")
    return s, d


def test_str_methods(client, data):
    s, _ = data
    m = md.Series(s, chunk_size=4)
    for name, args, kw in [
        ("lower", (), {}), ("upper", (), {}), ("len", (), {}), ("strip", (), {}),
        ("contains", ("an",), {}), ("contains", ("^[A-Z]",), {"regex": True}),
        ("startswith", ("b",), {}), ("endswith", ("y",), {}), ("replace", ("a", "A"), {}),
        ("slice", (1, 4), {}), ("get", (0,), {}), ("split", ("-",), {}),
        ("extract", (r"(\w)(\w)",), {}), ("extract", (r"(\w)",), {"expand": False}),
        ("cat", (), {"others": s.str.upper(), "sep": "|"}),
    ]:
        assert_pandas(getattr(m.str, name)(*args, **kw), getattr(s.str, name)(*args, **kw))
    f = m[m.str.len() > 5]  # unknown lengths, some chunks empty
    assert_pandas(f.str.upper(), s[s.str.len() > 5].str.upper())
    cat = s.astype("category")
    assert_pandas(md.Series(cat, chunk_size=3).str.upper(), cat.str.upper())
    with pytest.raises(NotImplementedError):
        m.str.split("-", expand=True)
    with pytest.raises(NotImplementedError):
        m.str.cat(["x"] * len(s))
    with pytest.raises(AttributeError):
        md.Series(pd.Series([1, 2])).str  # noqa: B018
    with pytest.raises(AttributeError):
        m.str.no_such_method


def test_dt_accessor(client, data):
    _, d = data
    m = md.Series(d, chunk_size=5)
    for prop in ("year", "month", "day", "hour", "dayofweek", "date", "minute"):
        # NaT present: pandas' float64 values (metadata: pandas' dtype without NaT, see below)
        pd.testing.assert_series_equal(getattr(m.dt, prop).execute().fetch(), getattr(d.dt, prop))
    assert_pandas(m.dt.normalize(), d.dt.normalize())
    assert_pandas(m.dt.strftime("%Y/%m/%d"), d.dt.strftime("%Y/%m/%d"))
    for meth in ("floor", "ceil", "round"):
        assert_pandas(getattr(m.dt, meth)("h"), getattr(d.dt, meth)("h"))
    assert_pandas(m.dt.tz_localize("UTC").dt.tz_convert("Asia/Tokyo"), d.dt.tz_localize("UTC").dt.tz_convert("Asia/Tokyo"))
    pd.testing.assert_series_equal((m - pd.Timestamp("2020-01-01")).dt.days.execute().fetch(),
                                   (d - pd.Timestamp("2020-01-01")).dt.days)


@pytest.mark.parametrize("chunk", [1, 3, 100])
def test_dt_fields_keep_pandas_int_dtype(client, chunk):
    """pandas gives int32 for ``dt.month``... on data without NaT (issue 18: an ETL's month
    column came out float64); with a NaT pandas gives float64, and so does the fetched
    result (the metadata says int32, as in Mars: whether a NaT occurs is only known at
    execution)."""
    d = pd.Series(pd.date_range("2021-01-30", periods=7, freq="13D", tz="Europe/Paris"), name="d")
    m = md.Series(d, chunk_size=chunk)
    for prop in ("year", "month", "day", "hour", "day_of_week", "quarter", "is_month_start"):
        assert_pandas(getattr(m.dt, prop), getattr(d.dt, prop))
    f = m[m.dt.day > 10]  # unknown lengths, empty chunks
    assert_pandas(f.dt.month, d[d.dt.day > 10].dt.month)
    withnat = pd.Series([pd.Timestamp("2021-05-01"), pd.NaT, pd.Timestamp("2021-07-01")], name="d")
    got = md.Series(withnat, chunk_size=chunk).dt.month.execute().fetch()
    pd.testing.assert_series_equal(got, withnat.dt.month)
    with pytest.raises(AttributeError):
        md.Series(pd.Series(["a"]), chunk_size=1).dt  # noqa: B018
