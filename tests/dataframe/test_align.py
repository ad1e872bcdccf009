"""align, reindex, reindex_like, pad/backfill vs pandas (issue 18)."""

import numpy as np
import pandas as pd
import pytest

import mars_dask.dataframe as md

from .helpers import assert_pandas, assert_pandas_all


def _frame(index, cols=("D", "B", "E", "A")):
    n = len(index)
    rng = np.random.default_rng(len(index))
    data = {
        "D": rng.integers(0, 9, n),
        "B": np.where(rng.random(n) < 0.3, np.nan, rng.normal(size=n)),
        "E": pd.Categorical(rng.choice(["x", "y", "z"], n)),
        "A": pd.date_range("2021-03-28", periods=n, freq="h", tz="Europe/Berlin"),
    }
    return pd.DataFrame({c: data[c] for c in cols}, index=index)


LEFT = _frame([1, 2, 7, 4, 9, 11, 0])
RIGHT = _frame([2, 3, 1, 20, 11, 5], cols=("A", "B", "D")).assign(C=2.5)


def _pairs(got, exp):
    return [(got[0], exp[0]), (got[1], exp[1])]


@pytest.mark.parametrize("cl,cr", [(1, 2), (3, 6)])
def test_align_frames(client, cl, cr):
    m, mo = md.DataFrame(LEFT, chunk_size=cl), md.DataFrame(RIGHT, chunk_size=cr)
    cases = []
    for join in ("outer", "inner", "left", "right"):
        for axis in (None, 0, 1, "index", "columns"):
            cases += _pairs(m.align(mo, join=join, axis=axis), LEFT.align(RIGHT, join=join, axis=axis))
        nl, nr = m.drop(columns=["A", "E"]), mo.drop(columns="A")  # pandas cannot fill tz or categories with 0
        cases += _pairs(nl.align(nr, join=join, fill_value=0),
                        LEFT.drop(columns=["A", "E"]).align(RIGHT.drop(columns="A"), join=join, fill_value=0))
    assert_pandas_all(cases)
    with pytest.raises(TypeError, match="Categorical|Timestamp"):
        LEFT.align(RIGHT, fill_value=0)
    with pytest.raises(TypeError, match="Categorical|Timestamp"):  # pandas' errors (its column order)
        m.align(mo, fill_value=0)


@pytest.mark.parametrize("chunk", [1, 3])
def test_align_series_and_mixed(client, chunk):
    s = pd.Series([1.0, np.nan, 3, 4], index=[7, 1, 5, 2], name="s")
    t = LEFT["D"]
    ms, mt_ = md.Series(s, chunk_size=chunk), md.Series(t, chunk_size=2)
    m = md.DataFrame(LEFT, chunk_size=chunk)
    cases = []
    for join in ("outer", "inner", "left", "right"):
        cases += _pairs(mt_.align(ms, join=join), t.align(s, join=join))
        cases += _pairs(m.align(ms, join=join, axis=0), LEFT.align(s, join=join, axis=0))
        cases += _pairs(ms.align(m, join=join, axis=0), s.align(LEFT, join=join, axis=0))
        cases += _pairs(mt_.align(ms, join=join, fill_value=-1), t.align(s, join=join, fill_value=-1))
    row = pd.Series({"A": 1, "Z": 2, "B": 3.0})
    for join in ("outer", "inner", "left", "right"):
        cases += _pairs(m.align(md.Series(row), join=join, axis=1), LEFT.align(row, join=join, axis=1))
    cases += _pairs(mt_.align(t.iloc[::-1]), t.align(t.iloc[::-1]))  # a local pandas object
    assert_pandas_all(cases)
    with pytest.raises(ValueError, match="Must specify axis=0 or 1"):
        LEFT.align(s)
    with pytest.raises(ValueError, match="Must specify axis=0 or 1"):
        m.align(ms)
    with pytest.raises(NotImplementedError, match="level"):
        m.align(ms, axis=0, level=0)


def test_align_unknown_lengths_and_empty(client):
    m, mo = md.DataFrame(LEFT, chunk_size=2), md.DataFrame(RIGHT, chunk_size=2)
    fl, fr = m[m["D"] > 3], mo[mo["D"] > 100]  # some chunks (or all of them) empty
    el, er = LEFT[LEFT["D"] > 3], RIGHT[RIGHT["D"] > 100]
    cases = []
    for join in ("outer", "inner", "left", "right"):
        cases += _pairs(fl.align(mo, join=join), el.align(RIGHT, join=join))
        cases += _pairs(m.align(fr, join=join), LEFT.align(er, join=join))
    # labels unknown at build time: dtypes are those for missing labels (as the arithmetic's)
    from mars_dask import execute

    execute(*[g for g, _ in cases])
    for got, exp in cases:
        res = got.fetch()
        assert res.dtypes.to_dict() == got.data.meta.dtypes.to_dict()  # the data is as announced
        pd.testing.assert_frame_equal(res, exp, check_dtype=False)
    got = m.align(mo, join="left")[1]
    assert got.index_key == m.index_key  # the looked-up side is chunk-aligned with the left one
    assert_pandas(got[["B", "D"]].add(m["D"], axis=0), RIGHT.reindex(LEFT.index)[["B", "D"]].add(LEFT["D"], axis=0))


@pytest.mark.parametrize("chunk", [1, 4])
def test_reindex(client, chunk):
    df = LEFT.rename_axis("k")
    m = md.DataFrame(df, chunk_size=chunk)
    labels = [9, 3, 1, 1, 100, 0]
    cases = [
        (m.reindex(labels), df.reindex(labels)),
        (m[["D", "B"]].reindex(index=labels, fill_value=0), df[["D", "B"]].reindex(index=labels, fill_value=0)),
        (m.reindex(columns=["A", "Z", "D"]), df.reindex(columns=["A", "Z", "D"])),
        (m.reindex(["A", "Z"], axis=1), df.reindex(["A", "Z"], axis=1)),
        (m.reindex(index=[2, 8], columns=["B", "Q"]), df.reindex(index=[2, 8], columns=["B", "Q"])),
        (m.reindex(pd.Index([7, 6], name="new")), df.reindex(pd.Index([7, 6], name="new"))),
        (m.reindex(np.array([11, 12, 4])), df.reindex(np.array([11, 12, 4]))),
        (m.reindex([]), df.reindex([])),
        (m["D"].reindex(labels), df["D"].reindex(labels)),
        (m["E"].reindex(labels), df["E"].reindex(labels)),
        (m["A"].reindex(labels), df["A"].reindex(labels)),
        (m["D"].reindex(md.Index(pd.Index([4, 5, 2], name="i"), chunk_size=2)),
         df["D"].reindex(pd.Index([4, 5, 2], name="i"))),
        (m["B"].reindex(md.Series(pd.Series([1, 1], index=[9, 4]))), df["B"].reindex(pd.Series([1, 1], index=[9, 4]).index)),
    ]
    f = m[m["D"] > 2]  # unknown length of the source
    ef = df[df["D"] > 2]
    cases.append((f.reindex(labels), ef.reindex(labels)))
    assert_pandas_all(cases, check_dtype=False)
    for got, exp in cases[:-1]:  # dtypes known at build time for local sources
        got_meta = got.data.meta
        if isinstance(exp, pd.DataFrame):
            assert got_meta.dtypes.to_dict() == exp.dtypes.to_dict()
        else:
            assert got_meta.dtype == exp.dtype
    with pytest.raises(ValueError, match="duplicate"):
        df.loc[[1, 1]].reindex([1])
    with pytest.raises(ValueError, match="duplicate"):
        md.DataFrame(df.loc[[1, 2, 1]], chunk_size=chunk).reindex([1]).execute()
    with pytest.raises(NotImplementedError, match="nearest"):
        m.reindex(labels, method="nearest")
    with pytest.raises(ValueError, match="monotonic increasing or decreasing"):
        df.reindex(labels, method="ffill")
    with pytest.raises(ValueError, match="monotonic increasing or decreasing"):
        m.reindex(labels, method="ffill").execute()
    with pytest.raises(TypeError, match="columns"):
        m["D"].reindex(columns=["x"])


def test_reindex_multiindex(client):
    idx = pd.MultiIndex.from_tuples([("a", 1), ("b", 2), ("a", 2), ("c", 0)], names=["l", "n"])
    s = pd.Series([1.0, 2, 3, 4], index=idx)
    labels = pd.MultiIndex.from_tuples([("a", 2), ("z", 9), ("c", 0)], names=["l", "n"])
    assert_pandas(md.Series(s, chunk_size=1).reindex(labels), s.reindex(labels))


def test_reindex_like(client):
    m, mo = md.DataFrame(LEFT, chunk_size=3), md.DataFrame(RIGHT, chunk_size=2)
    assert_pandas_all([
        (mo.reindex_like(m), RIGHT.reindex_like(LEFT)),
        (mo.reindex_like(LEFT), RIGHT.reindex_like(LEFT)),
        (m["B"].reindex_like(mo["B"]), LEFT["B"].reindex_like(RIGHT["B"])),
    ])
    assert mo.reindex_like(m).index_key == m.index_key


@pytest.mark.parametrize("chunk", [1, 3])
def test_pad_backfill(client, chunk):
    s = pd.Series([np.nan, 1, np.nan, np.nan, 4, np.nan, np.nan])
    df = pd.DataFrame({"a": s, "b": s[::-1].to_numpy()})
    ms, m = md.Series(s, chunk_size=chunk), md.DataFrame(df, chunk_size=chunk)
    assert_pandas_all([
        (ms.pad(), s.ffill()), (ms.backfill(), s.bfill()),
        (m.pad(), df.ffill()), (m.backfill(), df.bfill()),
    ])
    m2 = md.DataFrame(df, chunk_size=chunk)
    assert m2.pad(inplace=True) is None
    assert_pandas(m2, df.ffill())


@pytest.mark.parametrize("chunk", [1, 3, 50])
def test_reindex_with_method(client, chunk):
    idx = pd.date_range("2010-01-01", periods=6, freq="D", tz="UTC")
    df = pd.DataFrame({"prices": [100, 101, np.nan, 100, 89, 88], "c": pd.Categorical(list("abcabc"))}, index=idx)
    m = md.DataFrame(df, chunk_size=chunk)
    new = pd.date_range("2009-12-29", "2010-01-09", freq="12h", tz="UTC")[::-1].sort_values()
    shuffled = new[np.random.default_rng(0).permutation(len(new))]
    cases = []
    for method in ("ffill", "pad", "bfill", "backfill"):
        for target in (new, shuffled):
            cases.append((m.reindex(target, method=method), df.reindex(target, method=method)))
        cases.append((m.reindex(new, method=method, limit=1), df.reindex(new, method=method, limit=1)))
        cases.append((m["prices"].reindex(shuffled, method=method, fill_value=-1),
                      df["prices"].reindex(shuffled, method=method, fill_value=-1)))
    f = m[m["prices"] > 95]  # unknown lengths, empty chunks
    ef = df[df["prices"] > 95]
    cases.append((f.reindex(new, method="ffill"), ef.reindex(new, method="ffill")))
    cases.append((m.iloc[:0].reindex(new[:3], method="bfill"), df.iloc[:0].reindex(new[:3], method="bfill")))
    assert_pandas_all(cases)
    mo = md.DataFrame(pd.DataFrame({"x": np.arange(len(new))}, index=new), chunk_size=4)
    assert_pandas(m.reindex_like(mo, method="ffill"), df.reindex_like(mo.execute().fetch(), method="ffill"))
    with pytest.raises(ValueError, match="limit argument only valid"):
        df.reindex(new, limit=1)
    with pytest.raises(ValueError, match="limit argument only valid"):
        m.reindex(new, limit=1)
