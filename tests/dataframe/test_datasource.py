"""Creation: md.DataFrame/Series/Index from pandas, numpy, dicts, lists, tensors; date_range."""

import numpy as np
import pandas as pd
import pytest

import mars_dask.dataframe as md
import mars_dask.tensor as mt
from tests.dataframe.helpers import assert_pandas


def _frame(n=23):
    rng = np.random.default_rng(0)
    df = pd.DataFrame({
        "i": rng.integers(-5, 5, n),
        "f": rng.random(n),
        "s": pd.array([None if k % 4 == 0 else f"s{k}" for k in range(n)], dtype="str"),
        "c": pd.Categorical(list("abc" * n)[:n]),
        "t": pd.date_range("2021-03-27", periods=n, freq="7h", tz="Europe/Paris"),
        "b": rng.random(n) > 0.5,
        "n": pd.array([None if k % 3 == 0 else k for k in range(n)], dtype="Int64"),
    })
    df.loc[2, "f"] = np.nan
    return df


@pytest.mark.parametrize("chunk_size", [5, 7, 23, 100, (10, 13), None])
def test_from_pandas_frame(client, chunk_size):
    df = _frame()
    t = md.DataFrame(df, chunk_size=chunk_size)
    assert t.data.range_index
    got = assert_pandas(t, df)
    if isinstance(chunk_size, int):
        assert t.nsplits[0] == tuple(md.datasource.row_chunks(23, chunk_size, df))
    assert isinstance(got.index, pd.RangeIndex)


def test_from_pandas_series_index_and_multiindex_columns(client):
    df = _frame()
    for col in df.columns:
        assert_pandas(md.Series(df[col], chunk_size=6), df[col])
    assert_pandas(md.Index(df["t"], chunk_size=4), pd.Index(df["t"]))
    assert_pandas(md.Index(pd.Index(["x", None, "z"], dtype="str"), chunk_size=2), pd.Index(["x", None, "z"], dtype="str"))
    mi = df.copy()
    mi.columns = pd.MultiIndex.from_tuples([("a", c) for c in df.columns])
    assert_pandas(md.DataFrame(mi, chunk_size=8), mi)
    lab = df.set_index("s")
    t = md.DataFrame(lab, chunk_size=5)
    assert not t.data.range_index
    assert_pandas(t, lab)


def test_from_numpy_dict_list(client):
    a = np.arange(30.0).reshape(10, 3)
    assert_pandas(md.DataFrame(a, columns=list("xyz"), chunk_size=4), pd.DataFrame(a, columns=list("xyz")))
    d = {"a": [1, 2, None], "b": ["x", "y", "z"]}
    assert_pandas(md.DataFrame(d, chunk_size=2), pd.DataFrame(d))
    assert_pandas(md.Series([1, 2, 3], name="v", index=[5, 6, 7], chunk_size=2), pd.Series([1, 2, 3], name="v", index=[5, 6, 7]))
    assert_pandas(md.Series(np.arange(5), dtype="float32", chunk_size=3), pd.Series(np.arange(5), dtype="float32"))
    assert_pandas(md.Index([3, 1, 2], name="k", chunk_size=2), pd.Index([3, 1, 2], name="k"))
    assert_pandas(md.DataFrame.from_dict({"r1": [1, 2], "r2": [3, 4]}, orient="index", chunk_size=1),
                  pd.DataFrame.from_dict({"r1": [1, 2], "r2": [3, 4]}, orient="index"))
    recs = [(1, "a"), (2, "b"), (3, "c")]
    assert_pandas(md.DataFrame.from_records(recs, columns=["n", "s"], chunk_size=2),
                  pd.DataFrame.from_records(recs, columns=["n", "s"]))


def test_empty(client):
    df = _frame().iloc[:0]
    t = md.DataFrame(df, chunk_size=3)
    assert t.shape == (0, 7)
    assert_pandas(t, df)
    assert_pandas(md.Series(pd.Series([], dtype="str", name="e")), pd.Series([], dtype="str", name="e"))


def test_from_tensor(client):
    a = np.random.default_rng(1).random((17, 3))
    t = mt.tensor(a, chunk_size=(5, 2))
    got = md.DataFrame(t, columns=["a", "b", "c"])
    assert got.data.range_index and got.shape == (17, 3)
    assert_pandas(got, pd.DataFrame(a, columns=["a", "b", "c"]))
    assert_pandas(md.Series(mt.tensor(a[:, 0], chunk_size=4), name="s"), pd.Series(a[:, 0], name="s"))
    assert_pandas(md.Index(mt.tensor(a[:, 1], chunk_size=6), name="ix"), pd.Index(a[:, 1], name="ix"))
    assert_pandas(md.DataFrame(mt.tensor(a[:, 0], chunk_size=4)), pd.DataFrame(a[:, 0]))
    # a tensor with unknown chunk lengths (boolean filter): resolved by iterative tiling
    ft = mt.tensor(a[:, 0], chunk_size=4)
    ft = ft[ft > 0.5]
    assert_pandas(md.Series(ft), pd.Series(a[:, 0][a[:, 0] > 0.5]))
    with pytest.raises(ValueError):
        md.Series(t)  # 2-d tensor for a Series
    with pytest.raises(ValueError):
        md.DataFrame(t, columns=["a", "b"])  # wrong number of columns


def test_constructor_signatures(client):
    """Mars 0.10's constructor signatures: ``md.Index(data, dtype, copy, name, tupleize_cols,
    chunk_size, gpu, sparse, names, num_partitions)``; tensors with a local index;
    ``num_partitions``; tileables as data."""
    a = np.arange(12.0).reshape(6, 2)
    lab = pd.Index(list("abcdef"), name="l")
    mi = pd.MultiIndex.from_tuples([(1, "a"), (2, "b"), (3, "c")], names=["p", "q"])
    t = md.Index(mi, chunk_size=2)
    assert t.data.meta.nlevels == 2 and t.data.meta.names == ["p", "q"]  # was a flat meta
    assert_pandas(t, mi)
    assert_pandas(md.Index([1, 2], "float64"), pd.Index([1.0, 2.0]))  # 2nd positional: dtype, not index=
    assert_pandas(md.Index([(1, "a"), (2, "b")], names=["x", "y"]),  # names= was ignored
                  pd.MultiIndex.from_tuples([(1, "a"), (2, "b")], names=["x", "y"]))
    assert_pandas(md.Index(pd.Index([1, 2], name="o"), name="n", dtype="float32"),
                  pd.Index([1, 2], dtype="float32", name="n"))
    # a tensor with a local index (was NotImplementedError)
    assert_pandas(md.DataFrame(mt.tensor(a, chunk_size=4), index=lab, columns=["x", "y"]),
                  pd.DataFrame(a, index=lab, columns=["x", "y"]))
    assert_pandas(md.Series(mt.tensor(a[:, 0], chunk_size=4), index=list("abcdef"), name="s"),
                  pd.Series(a[:, 0], index=list("abcdef"), name="s"))
    with pytest.raises(ValueError, match="Length of values"):
        md.Series(mt.tensor(a[:, 0]), index=[1, 2])
    # num_partitions: that many chunks of about equal length
    assert md.DataFrame(a, num_partitions=3).execute().nsplits[0] == (2, 2, 2)
    assert md.Series(np.arange(7), num_partitions=2).execute().nsplits == ((4, 3),)
    # tileables as data
    ps = pd.Series(a[:, 0], name="v", index=lab)
    s = md.Series(ps, chunk_size=4)
    assert md.Series(s).data is s.data
    assert md.DataFrame(md.DataFrame(a)).shape == (6, 2)
    assert_pandas(md.DataFrame(s), pd.DataFrame(ps))
    for ctor in (md.DataFrame, md.Series, md.Index):
        with pytest.raises(NotImplementedError, match="GPU"):
            ctor([1], gpu=True)


def test_bad_chunk_size():
    df = _frame()
    with pytest.raises(ValueError):
        md.DataFrame(df, chunk_size=0)
    with pytest.raises(ValueError):
        md.DataFrame(df, chunk_size=(5, 5, 5))
    with pytest.raises(TypeError):
        md.DataFrame(df, chunk_size="x")


DR_CASES = [
    dict(start="2020-01-01", end="2020-03-05", freq="D"),
    dict(start="2020-01-01", periods=50, freq="7h", tz="UTC"),
    dict(end="2020-01-01 12:00", periods=31, freq="15min", tz="Asia/Tokyo", name="when"),
    dict(start="2021-03-20", end="2021-04-10", freq="D", tz="Europe/Paris"),  # DST in the range
    dict(start="2021-03-27", periods=40, freq="h", tz="Europe/Paris"),
    dict(start="2020-01-01 10:30", end="2020-02-01", freq="2D", normalize=True),
    dict(start="2020-01-01", end="2020-01-10", freq="D", inclusive="neither"),
    dict(start="2020-01-01", end="2020-01-10 05:00", freq="12h", inclusive="right"),
    dict(start="2020-01-01", periods=9, freq="s", inclusive="left", unit="s"),
    dict(start="2020-01-31", end="2022-06-30", freq="ME"),
    dict(start="2020-01-01", periods=37, freq="B", tz="US/Eastern"),
    dict(start="2020-01-01", end="2021-01-01", freq="W-WED"),
    dict(start="2020-01-01", end="2020-01-02", periods=13),
    dict(start="2020-01-01", end="2020-01-02", periods=11, tz="Europe/Paris", inclusive="both"),
    dict(start="2020-01-05", end="2020-01-01", freq="D"),  # empty
    dict(start="2020-01-01", end="2020-01-01", freq="D", inclusive="left"),
]


@pytest.mark.parametrize("kw", DR_CASES)
def test_date_range(client, kw):
    expected = pd.date_range(**kw)
    for cs in (4, 7):
        t = md.date_range(**kw, chunk_size=cs)
        assert t.shape == (len(expected),)
        got = assert_pandas(t, expected, exact=True)
        assert got.dtype == expected.dtype
    # no data travels in the graph: chunks hold scalars only
    for c in t.chunks:
        assert not any(isinstance(a, (pd.Index, np.ndarray)) and len(a) > 1 for a in c.args)


def test_date_range_errors():
    with pytest.raises(ValueError):
        md.date_range(start="2020-01-01", end="2020-02-01", periods=3, freq="D")
    with pytest.raises(ValueError):
        md.date_range(start="2020-01-01", periods=-1)
    with pytest.raises(ValueError):
        md.date_range(start="2020-01-01", periods=3, freq="nonsense")
