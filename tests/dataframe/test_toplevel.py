"""md top-level functions vs pandas: to_datetime, to_numeric, get_dummies, cut, qcut,
isna/notna, melt, eval, from_records, *_from_tensor, series_from_index, read_sql*, Arrow
dtypes and the re-exported pandas names (several chunkings, nulls, tz, categoricals)."""

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import mars_dask
import mars_dask.dataframe as md
import mars_dask.tensor as mt

from .helpers import assert_pandas, assert_pandas_all

CHUNKS = [None, 3, 1]


def test_reexports():
    assert md.Timestamp is pd.Timestamp and md.Timedelta is pd.Timedelta and md.NaT is pd.NaT
    assert md.NA is pd.NA and md.DateOffset is pd.DateOffset and md.offsets is pd.offsets
    assert md.Interval is pd.Interval and md.NamedAgg is pd.NamedAgg


@pytest.mark.parametrize("chunk", CHUNKS)
def test_isna_notna(client, chunk):
    pdf = pd.DataFrame({"a": [1.0, np.nan, 3.0, None, 5.0], "b": ["x", None, "z", "w", None],
                        "d": pd.to_datetime(["2020-01-01", None, "2020-01-03", "2020-01-04", None]).tz_localize("UTC")})
    df = md.DataFrame(pdf, chunk_size=chunk)
    idx = md.Index(pd.Index([1.0, np.nan, 2.0]), chunk_size=chunk)
    assert_pandas_all([
        (md.isna(df), pd.isna(pdf)), (md.notnull(df), pd.notnull(pdf)),
        (md.isnull(df["b"]), pd.isnull(pdf["b"])), (md.notna(df["d"]), pd.notna(pdf["d"])),
        (md.isna(idx), pd.Index([False, True, False])),
    ])
    t = md.isna(mt.tensor(np.array([1.0, np.nan, 2.0]), chunk_size=2))
    np.testing.assert_array_equal(t.execute().fetch(), [False, True, False])
    assert md.isna(None) is True and md.notna(3) is True


@pytest.mark.parametrize("chunk", CHUNKS)
def test_to_numeric(client, chunk):
    s = pd.Series(["1", "2", "-3", "4", "5"], name="s")
    f = pd.Series(["1.5", "2", "x", "4", "300"], name="f")
    u = pd.Series([1, 2, 200, 3, 4])
    ms, mf, mu = (md.Series(x, chunk_size=chunk) for x in (s, f, u))
    assert_pandas_all([
        (md.to_numeric(ms), pd.to_numeric(s)),
        (md.to_numeric(mf, errors="coerce"), pd.to_numeric(f, errors="coerce")),
        (md.to_numeric(ms, downcast="signed"), pd.to_numeric(s, downcast="signed")),
        (md.to_numeric(mf, errors="coerce", downcast="float"), pd.to_numeric(f, errors="coerce", downcast="float")),
        (md.to_numeric(mu, downcast="integer"), pd.to_numeric(u, downcast="integer")),
        (md.to_numeric(mu, downcast="unsigned"), pd.to_numeric(u, downcast="unsigned")),
        (md.to_numeric(mu), u),
    ])
    assert md.to_numeric(ms, downcast="signed").dtype == np.int8
    # chunk 0 all ints, a later chunk has a float: pandas gives float64 for all
    assert md.to_numeric(md.Series(["1", "2", "3", "4.5"], chunk_size=2)).execute().fetch().dtype == np.float64
    np.testing.assert_array_equal(md.to_numeric(["1", "2"]).execute().fetch(), np.array([1, 2]))
    tn = md.to_numeric(mt.tensor(np.array(["1", "2", "300", "x"]), chunk_size=2), errors="coerce",
                       downcast="float")
    exp_tn = pd.to_numeric(np.array(["1", "2", "300", "x"]), errors="coerce", downcast="float")
    assert tn.dtype == exp_tn.dtype
    np.testing.assert_array_equal(tn.execute().fetch(), exp_tn)
    assert md.to_numeric("3.5") == 3.5
    with pytest.raises(ValueError):
        md.to_numeric(mf).execute()
    with pytest.raises(ValueError, match="invalid downcasting"):
        md.to_numeric(ms, downcast="bad")
    with pytest.raises(TypeError):
        md.to_numeric(md.DataFrame({"a": [1]}))


@pytest.mark.parametrize("chunk", CHUNKS)
def test_to_datetime(client, chunk):
    s = pd.Series(["2020-01-01", "2020-02-03 04:05", None, "2021-12-31", "2020-01-01 00:00:00.000000001"])
    dm = pd.Series(["01/02/2020", "03/04/2020", None, "13/04/2020", "05/06/2020"])
    tz = pd.Series(["2020-01-01 00:00+01:00", "2020-06-01 12:00+01:00", None, "2020-03-01 00:00+01:00"])
    bad = pd.Series(["2020-01-01", "nope", "2020-01-03"])
    num = pd.Series([0, 1_600_000_000, 1_700_000_000], dtype="int64")
    parts = pd.DataFrame({"year": [2015, 2016, 2017], "month": [2, 3, 4], "day": [4, 5, 6]})
    ms, mtz, mbad, mnum, mparts = (md.Series(x, chunk_size=chunk) if isinstance(x, pd.Series)
                                   else md.DataFrame(x, chunk_size=chunk) for x in (s, tz, bad, num, parts))
    assert_pandas_all([
        (md.to_datetime(ms, format="ISO8601"), pd.to_datetime(s, format="ISO8601")),
        # the format is guessed from the first string of all chunks, not per chunk
        (md.to_datetime(md.Series(dm, chunk_size=chunk), errors="coerce"), pd.to_datetime(dm, errors="coerce")),
        (md.to_datetime(md.Series(dm, chunk_size=chunk), dayfirst=True), pd.to_datetime(dm, dayfirst=True)),
        (md.to_datetime(mtz), pd.to_datetime(tz)),
        (md.to_datetime(mtz, utc=True), pd.to_datetime(tz, utc=True)),
        (md.to_datetime(mbad, errors="coerce"), pd.to_datetime(bad, errors="coerce")),
        (md.to_datetime(mnum, unit="s"), pd.to_datetime(num, unit="s")),
        (md.to_datetime(mparts), pd.to_datetime(parts)),
        (md.to_datetime(md.Series(s[:2], chunk_size=chunk), format="%Y-%m-%d", exact=False),
         pd.to_datetime(s[:2], format="%Y-%m-%d", exact=False)),
    ])
    # the unit comes from all chunks: one nanosecond-precision string makes every chunk ns
    assert md.to_datetime(ms, format="ISO8601").execute().fetch().dtype == pd.to_datetime(s, format="ISO8601").dtype
    got = md.to_datetime(["2020-01-01", "2020-01-02"]).execute().fetch()
    pd.testing.assert_index_equal(got, pd.to_datetime(["2020-01-01", "2020-01-02"]))
    assert md.to_datetime("2020-01-05") == pd.Timestamp("2020-01-05")
    with pytest.raises(ValueError):
        md.to_datetime(mbad).execute()


@pytest.mark.parametrize("chunk", CHUNKS)
def test_get_dummies(client, chunk):
    pdf = pd.DataFrame({
        "A": ["a", "b", None, "c", "a"], "B": pd.Categorical(["x", "y", "x", None, "x"], categories=["z", "x", "y"]),
        "C": [1, 2, 3, 4, 5], "S": pd.array(["p", "q", "p", "q", None], dtype="str"),
    })
    df = md.DataFrame(pdf, chunk_size=chunk)
    s = pdf["A"]
    assert_pandas_all([
        (md.get_dummies(df), pd.get_dummies(pdf)),
        (md.get_dummies(df, prefix=["p1", "p2", "p3"], dummy_na=True), pd.get_dummies(pdf, prefix=["p1", "p2", "p3"],
                                                                                      dummy_na=True)),
        (md.get_dummies(df, columns=["A", "C"], drop_first=True, dtype=float),
         pd.get_dummies(pdf, columns=["A", "C"], drop_first=True, dtype=float)),
        (md.get_dummies(df["A"]), pd.get_dummies(s)),
        (md.get_dummies(df["B"], prefix="b", prefix_sep=":", dummy_na=True),
         pd.get_dummies(pdf["B"], prefix="b", prefix_sep=":", dummy_na=True)),
        (md.get_dummies(["a", "b", np.nan]), pd.get_dummies(["a", "b", np.nan])),
    ])
    # a chunk that lacks a category still gets its column
    one = md.get_dummies(md.Series(["a", "a", "a", "b"], chunk_size=2))
    assert_pandas(one, pd.get_dummies(pd.Series(["a", "a", "a", "b"])))
    with pytest.raises(TypeError, match="list-like"):
        md.get_dummies(df, columns="A")
    with pytest.raises(ValueError):
        md.get_dummies(df, prefix=["only_one"])


@pytest.mark.parametrize("chunk", CHUNKS)
def test_cut(client, chunk):
    x = pd.Series([1.0, 7, 5, np.nan, 4, 6, 3], index=list("abcdefg"), name="v")
    s = md.Series(x, chunk_size=chunk)
    dts = pd.Series(pd.date_range("2020-01-01", periods=6, freq="13h", tz="Europe/Paris"))
    ii = pd.IntervalIndex.from_tuples([(0, 1), (2, 3), (4, 5)])
    assert_pandas_all([
        (md.cut(s, 3), pd.cut(x, 3)),
        (md.cut(s, 3, labels=["lo", "mid", "hi"]), pd.cut(x, 3, labels=["lo", "mid", "hi"])),
        (md.cut(s, 3, labels=False), pd.cut(x, 3, labels=False)),
        (md.cut(s, [0, 2, 4, 6], labels=False, right=False), pd.cut(x, [0, 2, 4, 6], labels=False, right=False)),
        (md.cut(s, [1, 3, 5, 7], include_lowest=True, precision=1), pd.cut(x, [1, 3, 5, 7], include_lowest=True,
                                                                           precision=1)),
        (md.cut(s, ii), pd.cut(x, ii)),
        (md.cut(md.Series(dts, chunk_size=chunk), 2), pd.cut(dts, 2)),
    ])
    # every chunk in range: labels=False stays int64
    assert md.cut(md.Series([1, 2, 3, 4], chunk_size=chunk), 2, labels=False).execute().fetch().dtype == np.int64
    res, bins = md.cut(s, 3, retbins=True)
    exp, ebins = pd.cut(x, 3, retbins=True)
    np.testing.assert_array_equal(bins.execute().fetch(), ebins)
    got = md.cut(mt.tensor(np.array([1, 7, 5, 4, 6, 3]), chunk_size=2), 3).execute().fetch()
    np.testing.assert_array_equal(np.asarray(got), np.asarray(pd.cut(np.array([1, 7, 5, 4, 6, 3]), 3)))
    with pytest.raises(ValueError, match="positive integer"):
        md.cut(s, 0)
    with pytest.raises(ValueError, match="must be unique"):
        md.cut(s, [1, 2, 2, 3])


@pytest.mark.parametrize("chunk", CHUNKS)
def test_qcut(client, chunk):
    x = pd.Series([1.0, 7, 5, np.nan, 4, 6, 3, 2.5, 9], name="v")
    s = md.Series(x, chunk_size=chunk)
    assert_pandas_all([
        (md.qcut(s, 4), pd.qcut(x, 4)),
        (md.qcut(s, [0, 0.3, 0.9, 1], labels=False), pd.qcut(x, [0, 0.3, 0.9, 1], labels=False)),
        (md.qcut(s, 3, labels=["a", "b", "c"]), pd.qcut(x, 3, labels=["a", "b", "c"])),
    ])
    dts = pd.Series(pd.date_range("2020-01-01", periods=7, freq="7h", tz="Asia/Tokyo")).where(lambda d: d.dt.hour != 14)
    ints = pd.Series([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5], dtype="int64")
    assert_pandas_all([
        (md.qcut(md.Series(dts, chunk_size=chunk), 3), pd.qcut(dts, 3)),
        (md.qcut(md.Series(ints, chunk_size=chunk), 3, duplicate="drop"), pd.qcut(ints, 3, duplicates="drop")),
        (md.qcut(md.Series(ints, chunk_size=chunk), 6, labels=False, duplicates="drop"),
         pd.qcut(ints, 6, labels=False, duplicates="drop")),
    ])
    dup = pd.Series([1, 1, 1, 1, 2, 3])
    assert_pandas(md.qcut(md.Series(dup, chunk_size=chunk), 4, duplicate="drop"), pd.qcut(dup, 4, duplicates="drop"))
    with pytest.raises(ValueError, match="must be unique"):
        md.qcut(md.Series(dup, chunk_size=chunk), 4)
    with pytest.raises(ValueError, match="positive integer"):
        md.qcut(s, 0)
    got = md.qcut(list(range(5)), 4, labels=False).execute().fetch()
    np.testing.assert_array_equal(np.asarray(got), pd.qcut(range(5), 4, labels=False))


@pytest.mark.parametrize("chunk", CHUNKS)
def test_melt(client, chunk):
    pdf = pd.DataFrame({"A": ["a", "b", "c", None], "B": [1, 3, 5, 7], "C": [2.5, 4, 6, np.nan],
                        "D": pd.to_datetime(["2020-01-01"] * 4).tz_localize("UTC")})
    df = md.DataFrame(pdf, chunk_size=chunk)
    assert_pandas_all([
        (md.melt(df, id_vars=["A"], value_vars=["B"]), pd.melt(pdf, id_vars=["A"], value_vars=["B"])),
        (md.melt(df, id_vars=["A"], value_vars=["B", "C"]), pd.melt(pdf, id_vars=["A"], value_vars=["B", "C"])),
        (df.melt(id_vars="A", var_name="k", value_name="w"), pdf.melt(id_vars="A", var_name="k", value_name="w")),
        (md.melt(df[["B", "C"]]), pd.melt(pdf[["B", "C"]])),
        (md.melt(df, id_vars=["A", "B", "C", "D"]), pd.melt(pdf, id_vars=["A", "B", "C", "D"])),
    ])
    with pytest.raises(KeyError):
        md.melt(df, id_vars=["nope"])


@pytest.mark.parametrize("chunk", [None, 2])
def test_eval(client, chunk):
    pdf = pd.DataFrame({"A": range(1, 6), "B": range(10, 0, -2), "C C": [0.5, 1, 1.5, 2, np.nan]})
    df = md.DataFrame(pdf, chunk_size=chunk)
    k = 3  # noqa: F841 - used by the expressions below
    assert_pandas_all([
        (md.eval("df.A + df.B * 2", local_dict={"df": df}), pdf.A + pdf.B * 2),
        (md.eval("df.A + df.B > @k", local_dict={"df": df}), pdf.eval("A + B > @k")),
        (md.eval("A < B and A > 1 or A == 5", resolvers=(df,)), pdf.eval("A < B and A > 1 or A == 5")),
        (md.eval("1 < A <= 4", resolvers=(df,)), pdf.eval("1 < A <= 4")),
        (md.eval("D = A - `C C`", target=df, resolvers=(df,)), pdf.eval("D = A - `C C`")),
        (md.eval("df.A * k", local_dict={"df": df}), pdf.A * k),
        (md.eval("A in [1, 3]", resolvers=(df,)), pdf.eval("A in [1, 3]")),
        (md.eval("-A + ~(B > 4)", resolvers=(df,)), -pdf.A + ~(pdf.B > 4)),
    ])
    assert_pandas(md.eval("double = df.A * 2", target=df), pdf.assign(double=pdf.A * 2))
    with pytest.raises(TypeError):
        md.eval(3)
    with pytest.raises(ValueError):
        md.eval("E = A + 1", resolvers=(df,))
    with pytest.raises(SyntaxError):
        md.eval("lambda: 1", resolvers=(df,))


@pytest.mark.parametrize("chunk", CHUNKS)
def test_constructors(client, chunk):
    recs = [(1, 2.5, "x"), (2, 3.5, "y"), (3, None, "z")]
    exp = pd.DataFrame.from_records(recs, columns=["a", "b", "c"])
    arr = np.array([(1, 2.0), (3, 4.0), (5, 6.0)], dtype=[("i", "i4"), ("f", "f8")])
    a2 = np.arange(12.0).reshape(4, 3)
    t1 = np.array([3, 1, 2], dtype=np.int16)
    pidx = pd.Index([10, 20, 30, 40], name="n")
    assert_pandas_all([
        (md.from_records(recs, columns=["a", "b", "c"], chunk_size=chunk), exp),
        (md.from_records(mt.tensor(arr, chunk_size=chunk or 3)), pd.DataFrame.from_records(arr)),
        (md.dataframe_from_tensor(mt.tensor(a2, chunk_size=(chunk or 4, 2)), columns=list("xyz")),
         pd.DataFrame(a2, columns=list("xyz"))),
        (md.dataframe_from_tensor(mt.tensor(a2, chunk_size=chunk or 4), index=pd.Index(list("abcd"))),
         pd.DataFrame(a2, index=list("abcd"))),
        (md.series_from_tensor(mt.tensor(t1, chunk_size=chunk or 3), name="s"), pd.Series(t1, name="s")),
        (md.series_from_tensor(mt.tensor(t1, chunk_size=chunk or 3), dtype="float32", index=["p", "q", "r"]),
         pd.Series(t1, dtype="float32", index=["p", "q", "r"])),
        (md.series_from_index(md.Index(pidx, chunk_size=chunk)), pidx.to_series()),
        (md.series_from_index(md.Index(pidx, chunk_size=chunk), name="m"), pidx.to_series(name="m")),
    ])
    with pytest.raises(NotImplementedError, match="GPU"):
        md.dataframe_from_tensor(mt.tensor(a2), gpu=True)


def test_arrow_dtypes(client):
    dt = md.ArrowStringDtype()
    assert dt == pd.ArrowDtype(pa.string()) and isinstance(dt, md.ArrowStringDtype)
    assert not isinstance(pd.ArrowDtype(pa.int64()), md.ArrowStringDtype)
    assert pd.api.types.pandas_dtype("Arrow[string]") == dt
    assert pd.api.types.pandas_dtype("Arrow[int64]") == pd.ArrowDtype(pa.int64())
    ldt = md.ArrowListDtype(np.int64)
    assert ldt == pd.ArrowDtype(pa.list_(pa.int64())) and isinstance(ldt, md.ArrowListDtype)
    sa = md.ArrowStringArray(["a", None, "c"])
    assert isinstance(sa, md.ArrowStringArray) and sa.dtype == dt and sa.isna().tolist() == [False, True, False]
    la = md.ArrowListArray([[1, 2], None, [3]])
    assert isinstance(la, md.ArrowListArray) and la.dtype == ldt and not isinstance(la, md.ArrowStringArray)
    ps = pd.Series(["x", None, "yy", "z"], dtype="Arrow[string]")
    s = md.Series(["x", None, "yy", "z"], dtype="Arrow[string]", chunk_size=3)
    assert_pandas_all([
        (s, ps), (s.str.len(), ps.str.len()),
        (md.Series(["x", "y"], chunk_size=1).astype("Arrow[string]"), pd.Series(["x", "y"]).astype(dt)),
    ])


def test_read_sql(client, tmp_path):
    pytest.importorskip("sqlalchemy", reason="SQLAlchemy is not installed: md.read_sql* need it")
    import sqlalchemy as sa

    uri = f"sqlite:///{tmp_path / 'db.sqlite'}"
    pdf = pd.DataFrame({"a": np.arange(10), "b": [1.5, None] * 5, "c": list("abcdefghij"),
                        "n": [1, 2, 3, 4, None, 6, 7, 8, 9, 10]})
    eng = sa.create_engine(uri)
    pdf.to_sql("t", eng, index=False)
    exp = pd.read_sql_table("t", eng)
    for cs in (None, 1, 4):
        assert_pandas(md.read_sql_table("t", uri, chunk_size=cs), exp)
        assert_pandas(md.read_sql("t", eng, chunk_size=cs), exp)
        q = "SELECT a, c FROM t WHERE a > 2"
        assert_pandas(md.read_sql_query(q, uri, chunk_size=cs, index_col="a"), pd.read_sql_query(q, eng, index_col="a"))
        assert_pandas(md.read_sql(q, uri, chunk_size=cs), pd.read_sql(q, eng))
    assert_pandas(md.read_sql_table("t", uri, columns=["c"], chunk_size=4), pd.read_sql_table("t", eng, columns=["c"]))
    q = "SELECT * FROM t WHERE a >= :lo"
    assert_pandas(md.read_sql_query(q, uri, params={"lo": 4}, chunk_size=3),
                  pd.read_sql_query(sa.text(q), eng, params={"lo": 4}))
    # partition_col: ranges of a column (rows come range by range; NULLs of the column left out)
    for parts in (1, 3):
        got = md.read_sql_table("t", uri, partition_col="a", num_partitions=parts)
        assert got.execute().fetch()["a"].tolist() == list(range(10))
        assert_pandas(got, exp)
    got = md.read_sql("t", uri, partition_col="n", num_partitions=2, low_limit=3, high_limit=8)
    assert_pandas(got, exp[exp["n"].notna()].reset_index(drop=True))
    with pytest.raises(ValueError, match="num_partitions"):
        md.read_sql("t", uri, partition_col="a")
    with pytest.raises(TypeError, match="DBAPI"):
        md.read_sql("t", object())
    eng.dispose()


def test_read_sql_needs_sqlalchemy(client, tmp_path):
    try:
        import sqlalchemy  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="SQLAlchemy"):
            md.read_sql("SELECT 1", f"sqlite:///{tmp_path / 'x.db'}")
    else:
        pytest.skip("SQLAlchemy is installed: test_read_sql covers read_sql")


def test_names_are_public():
    missing = [n for n in md.toplevel.__all__ if not hasattr(md, n)]
    assert not missing
    assert mars_dask  # the package imported


@pytest.mark.parametrize("chunk", [2, 1])
def test_unknown_lengths_and_empty_chunks(client, chunk):
    """Inputs from a filter (lengths unknown until executed, some chunks empty)."""
    pdf = pd.DataFrame({"k": [5, 1, 1, 6, 7, 1, 8, 9], "s": ["1", "x", "y", "2.5", None, "z", "3", "a"],
                        "c": ["b", "q", "q", "a", "b", "q", None, "a"], "v": [0.5, 9, 9, 2.0, 3.5, 9, np.nan, 1.0]})
    df = md.DataFrame(pdf, chunk_size=chunk)
    flt, pflt = df[df["k"] > 4], pdf[pdf["k"] > 4]
    assert np.isnan(flt.shape[0])
    assert_pandas_all([
        (md.to_numeric(flt["s"], errors="coerce"), pd.to_numeric(pflt["s"], errors="coerce")),
        (md.get_dummies(flt[["c", "k"]]), pd.get_dummies(pflt[["c", "k"]])),
        (md.cut(flt["v"], 2), pd.cut(pflt["v"], 2)),
        (md.qcut(flt["v"], 2, labels=False), pd.qcut(pflt["v"], 2, labels=False)),
        (md.melt(flt, id_vars=["k"], value_vars=["v", "c"]), pd.melt(pflt, id_vars=["k"], value_vars=["v", "c"])),
        (md.isna(flt), pd.isna(pflt)),
    ])
    bins = mt.tensor(np.array([0.0, 1.0, 4.0, 10.0]), chunk_size=2)
    assert_pandas(md.cut(df["v"], bins, right=False), pd.cut(pdf["v"], [0.0, 1.0, 4.0, 10.0], right=False))
    idx = md.Index(pd.Index(["1", "2", "30"], name="i"), chunk_size=chunk)
    assert_pandas(md.to_numeric(idx), pd.to_numeric(pd.Index(["1", "2", "30"], name="i")))
