"""at/iat, iteration, keys, Series.to_dict/to_frame and plot vs pandas (issue 18)."""

import sys
import types

import numpy as np
import pandas as pd
import pytest

import mars_dask.dataframe as md

from .helpers import assert_pandas, assert_pandas_all


@pytest.fixture
def frame():
    n = 11
    return pd.DataFrame({
        "i": np.arange(n) * 3,
        "f": np.where(np.arange(n) % 4 == 0, np.nan, np.arange(n) / 2),
        "c": pd.Categorical(list("abcabcabcab")),
        "t": pd.date_range("2021-10-31", periods=n, freq="h", tz="Europe/Berlin"),
        "s": list("qwertyuiopa"),
    }, index=pd.Index(np.arange(n)[::-1] * 2, name="k"))


@pytest.mark.parametrize("chunk", [1, 4, 11])
def test_at_iat(client, frame, chunk):
    m = md.DataFrame(frame, chunk_size=chunk)
    got = [m.at[4, "f"], m.at[0, "s"], m.iat[3, 1], m.iat[-1, 3], m["i"].at[8], m["c"].iat[2], m.at[20, "t"]]
    exp = [frame.at[4, "f"], frame.at[0, "s"], frame.iat[3, 1], frame.iat[-1, 3], frame["i"].at[8],
           frame["c"].iat[2], frame.at[20, "t"]]
    from mars_dask import execute

    execute(*got)
    for g, e in zip(got, exp):
        v = g.fetch()
        assert v == e or (pd.isna(v) and pd.isna(e)), (v, e)
    with pytest.raises(KeyError):
        frame.at[5, "f"]
    with pytest.raises(KeyError):
        m.at[5, "f"].execute()
    with pytest.raises(ValueError, match="Invalid call for scalar access"):
        m.at[[4, 6], "f"]
    with pytest.raises(ValueError, match="iAt based indexing can only have integer indexers"):
        frame.iat[0.5, 0]
    with pytest.raises(ValueError, match="iAt based indexing can only have integer indexers"):
        m.iat[0.5, 0]
    with pytest.raises(TypeError):
        m.at[4]  # a DataFrame needs a row and a column, as in pandas


@pytest.mark.parametrize("chunk", [1, 3])
def test_iteration(client, frame, chunk):
    m = md.DataFrame(frame, chunk_size=chunk)
    for bs in (1, 4, 1000):
        got = list(m.iterrows(batch_size=bs))
        exp = list(frame.iterrows())
        assert [k for k, _ in got] == [k for k, _ in exp]
        for (_, g), (_, e) in zip(got, exp):
            pd.testing.assert_series_equal(g, e)
        # repr: NaN != NaN inside tuples
        assert repr(list(m.itertuples(batch_size=bs))) == repr(list(frame.itertuples()))
        assert repr(list(m.itertuples(index=False, name="Row", batch_size=bs))) == repr(
            list(frame.itertuples(index=False, name="Row")))
        assert type(next(m.itertuples(name="Row", batch_size=bs))).__name__ == "Row"
        assert repr(list(m["f"].items(batch_size=bs))) == repr(list(frame["f"].items()))
        assert list(m["s"].iteritems(batch_size=bs)) == list(frame["s"].items())
    cols = [(k, v) for k, v in m.items()]
    assert [k for k, _ in cols] == list(frame.columns)
    assert all(isinstance(v, md.Series) for _, v in cols)  # lazy, as in Mars
    assert_pandas_all([(v, frame[k]) for k, v in m.iteritems()])
    # unknown lengths and empty chunks (filtered)
    f = m[m["i"] > 15]
    assert repr(list(f.itertuples(batch_size=2))) == repr(list(frame[frame["i"] > 15].itertuples()))
    assert list(m[m["i"] > 1000].iterrows()) == []
    with pytest.raises(ValueError, match="batch_size"):
        list(m.iterrows(batch_size=0))


def test_keys_to_dict_to_frame(client, frame):
    m = md.DataFrame(frame, chunk_size=4)
    pd.testing.assert_index_equal(m.keys(), frame.keys())
    assert_pandas(m["f"].keys(), frame["f"].keys())
    s = frame["f"]
    ms = m["f"]
    got = ms.to_dict()
    exp = s.to_dict()
    assert list(got) == list(exp)
    assert all(got[k] == exp[k] or (np.isnan(got[k]) and np.isnan(exp[k])) for k in exp)
    from collections import OrderedDict

    assert isinstance(m["s"].to_dict(into=OrderedDict), OrderedDict)
    assert m["s"].to_dict(OrderedDict) == frame["s"].to_dict(into=OrderedDict)  # Mars: into positional
    assert m["t"].to_dict() == frame["t"].to_dict()
    unnamed = pd.Series([1, 2, 3])
    assert_pandas_all([
        (ms.to_frame(), s.to_frame()),
        (ms.to_frame("x"), s.to_frame("x")),
        (m["c"].to_frame(), frame["c"].to_frame()),
        (m["t"].to_frame(name=("a", "b")), frame["t"].to_frame(name=("a", "b"))),
        (md.Series(unnamed, chunk_size=1).to_frame(), unnamed.to_frame()),
        (ms[ms > 2].to_frame(), s[s > 2].to_frame()),
    ])
    assert ms.to_frame().index_key == ms.index_key  # rows unchanged: stays aligned


def test_plot_delegates_to_pandas(client, frame, monkeypatch):
    """Mars's plot: execute and call pandas' plotting (a recording backend stands in for
    matplotlib, which pandas would otherwise need)."""
    calls = []
    backend = types.ModuleType("mars_dask_test_plot_backend")

    def plot(data, kind, **kwargs):
        calls.append((data, kind, kwargs))
        return "drawn"

    backend.plot = plot
    monkeypatch.setitem(sys.modules, backend.__name__, backend)
    b = backend.__name__  # pandas' own backend= keyword (no global option touched)
    m = md.DataFrame(frame[["i", "f"]], chunk_size=3)
    assert m.plot(backend=b) == "drawn"
    assert m.plot(kind="bar", x="i", y="f", backend=b) == "drawn"
    assert m.plot.scatter("i", "f", s=3, backend=b) == "drawn"
    assert m["f"].plot.hist(bins=4, backend=b) == "drawn"
    assert m["f"].plot(kind="kde", backend=b) == "drawn"
    ms = md.Series(frame["i"], chunk_size=5)
    assert m.plot.line(color=ms, backend=b) == "drawn"  # tileable keywords are executed too
    pd.testing.assert_frame_equal(calls[0][0], frame[["i", "f"]])
    assert calls[0][1] == "line"
    assert calls[1][1] == "bar" and calls[1][2]["x"] == "i"
    assert calls[2][1] == "scatter" and calls[2][2]["x"] == "i" and calls[2][2]["y"] == "f"
    pd.testing.assert_series_equal(calls[3][0], frame["f"])
    assert calls[3][1] == "hist" and calls[3][2]["bins"] == 4
    assert calls[4][1] == "kde"
    pd.testing.assert_series_equal(calls[5][2]["color"], frame["i"])
    assert_pandas(m, frame[["i", "f"]])
