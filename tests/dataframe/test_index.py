"""The Index tileable vs pandas: ``df.index``/``s.index``, ``md.Index(...)``, Mars 0.10's Index
methods, Index name setters, ``md.DataFrame/Series(..., index=md.Index(...))`` and the
``set_index``/``reset_index`` round trip (several chunkings incl. 1-row chunks, unknown
lengths after filters, empty chunks, nulls, categoricals, tz-aware datetimes, MultiIndex)."""

import pickle

import numpy as np
import pandas as pd
import pytest

import mars_dask
import mars_dask.dataframe as md
import mars_dask.tensor as mt
from mars_dask.dataframe.index import set_index_by

from .helpers import assert_pandas

N = 13


def make_pdf(n=N):
    rng = np.random.default_rng(3)
    return pd.DataFrame({
        "a": rng.integers(0, 4, n),
        "f": np.where(rng.random(n) < 0.3, np.nan, rng.random(n)),
        "s": pd.array([None if k % 5 == 0 else f"s{k % 3}" for k in range(n)], dtype="str"),
    }, index=pd.Index(rng.permutation(np.arange(100, 100 + n)), name="idx"))


INDEXES = {
    "int": pd.Index([5, 3, 3, 9, 1, 1, 7, 2, 8, 8, 0, 4, 6], name="i"),
    "float_nan": pd.Index([1.5, np.nan, 2.0, 2.0, np.nan, 0.5, 3.0, 1.5, 9.0, 4.0, 4.0, 0.0, 7.0]),
    "str": pd.Index(["b", "a", None, "c", "a", "d", "b", "e", "f", None, "g", "a", "h"], dtype="str", name="s"),
    "cat": pd.CategoricalIndex(list("xyzxyzxyzxyzx"), categories=["z", "y", "x"], ordered=True, name="c"),
    "tz": pd.DatetimeIndex(pd.date_range("2021-03-27", periods=N, freq="7h", tz="Europe/Paris")[::-1], name="t"),
    "multi": pd.MultiIndex.from_arrays([list("aabbccddeeffg"), [1, 2, 1, 2, 1, 2, 1, 1, 2, 2, 1, 1, 2]], names=["k", "n"]),
    "range": pd.RangeIndex(N),
}


def run(pairs):
    mars_dask.execute(*[t for t, _ in pairs])
    for t, exp in pairs:
        assert_pandas(t, exp)


def scalar(t):
    return t.execute().fetch()


# ---- df.index / s.index -------------------------------------------------------------------------


@pytest.mark.parametrize("chunk", [1, 4, None])
def test_frame_and_series_index(client, chunk):
    pdf = make_pdf()
    df = md.DataFrame(pdf, chunk_size=chunk)
    idx = df.index
    assert isinstance(idx, md.Index) and idx.index_key == df.index_key and idx.shape == (N,)
    mask = pdf["a"] > 1
    filt = df[df["a"] > 1]
    assert np.isnan(filt.index.shape[0])  # unknown lengths, some chunks empty with chunk=1
    mi = pdf.set_index(["a", "s"], append=True)
    run([
        (idx, pdf.index),
        (df["f"].index, pdf["f"].index),
        (filt.index, pdf[mask].index),
        (filt["f"].index, pdf[mask]["f"].index),
        (md.DataFrame(pdf.reset_index(drop=True), chunk_size=chunk).index, pd.RangeIndex(N)),
        (md.DataFrame(mi, chunk_size=chunk).index, mi.index),
        (df[df["a"] > 10].index, pdf[pdf["a"] > 10].index),  # every chunk empty
    ])
    assert md.DataFrame(mi).index.names == ["idx", "a", "s"]
    assert md.DataFrame(mi).index.nlevels == 3
    assert list(df.columns) == list(pdf.columns) and isinstance(df.columns, pd.Index)  # metadata


# ---- md.Index(...) ------------------------------------------------------------------------------


def test_index_constructor(client):
    a = np.arange(10, 0, -1)
    s = md.Series(pd.Series([3, 1, 2], name="v"), chunk_size=2)
    run([
        (md.Index([3, 1, 2], name="x", chunk_size=2), pd.Index([3, 1, 2], name="x")),
        (md.Index(a, chunk_size=3), pd.Index(a)),
        (md.Index(pd.Index(["a", "b"], name="n"), chunk_size=1), pd.Index(["a", "b"], name="n")),
        (md.Index([1, 2], "float64"), pd.Index([1, 2], dtype="float64")),  # Mars's positional dtype
        (md.Index([(1, "a"), (2, "b")], names=["p", "q"]), pd.MultiIndex.from_tuples([(1, "a"), (2, "b")], names=["p", "q"])),
        (md.Index([(1, "a"), (2, "b")], tupleize_cols=False), pd.Index([(1, "a"), (2, "b")], tupleize_cols=False)),
        (md.Index(mt.tensor(a, chunk_size=4), name="t"), pd.Index(a, name="t")),
        (md.Index(s), pd.Index(pd.Series([3, 1, 2], name="v"))),
        (md.Index(s, name="w"), pd.Index(pd.Series([3, 1, 2]), name="w")),
        (md.Index(md.Index([1, 2]), name="r"), pd.Index([1, 2], name="r")),
        (md.Index(list(range(7)), num_partitions=3), pd.Index(list(range(7)))),
    ])
    assert md.Index(list(range(7)), num_partitions=3).execute().nsplits == ((3, 3, 1),)
    assert md.Index(a, chunk_size=3).execute().nsplits == ((3, 3, 3, 1),)
    with pytest.raises(TypeError, match="one of `names` and `name`"):
        md.Index([1], name="a", names=["b"])
    with pytest.raises(NotImplementedError, match="GPU"):
        md.Index([1], gpu=True)


# ---- element-wise -------------------------------------------------------------------------------


@pytest.mark.parametrize("chunk", [1, 5])
@pytest.mark.parametrize("kind", sorted(INDEXES))
def test_elementwise(client, kind, chunk):
    pidx = INDEXES[kind]
    idx = md.Index(pidx, chunk_size=chunk)
    pairs = [
        (idx.rename("r") if kind != "multi" else idx.rename(["r1", "r2"]),
         pidx.rename("r") if kind != "multi" else pidx.rename(["r1", "r2"])),
        (idx.set_names("z", level=0) if kind == "multi" else idx.set_names("z"),
         pidx.set_names("z", level=0) if kind == "multi" else pidx.set_names("z")),
        (idx.to_series(), pidx.to_series()),
        (idx.to_series(name="q"), pidx.to_series(name="q")),
        (idx.to_frame(), pidx.to_frame()),
        (idx.to_frame(index=False), pidx.to_frame(index=False)),
        (idx.dropna(), pidx.dropna()),
        (idx.dropna(how="all"), pidx.dropna(how="all")),
        (idx.map(str), pidx.map(str)),
    ]
    if kind not in ("multi",):
        pairs.append((idx.to_frame(name="nm"), pidx.to_frame(name="nm")))
        pairs.append((idx.astype(object), pidx.astype(object)))
    if kind in ("int", "float_nan", "range"):
        pairs.append((idx.astype("float32"), pidx.astype("float32")))
        pairs.append((idx.fillna(-1), pidx.fillna(-1)))
        pairs.append((idx.map(lambda x: x * 2), pidx.map(lambda x: x * 2)))
    if kind == "str":
        pairs.append((idx.fillna("zz"), pidx.fillna("zz")))
        pairs.append((idx.astype(pd.CategoricalDtype(["a", "b"])), pidx.astype(pd.CategoricalDtype(["a", "b"]))))
    run(pairs)
    # isna / notna: bool arrays, as pandas
    if kind == "multi":
        with pytest.raises(NotImplementedError, match="isna is not defined for MultiIndex"):
            idx.isna()  # pandas' own error, at build time
        return
    for got, exp in ((idx.isna(), pidx.isna()), (idx.notna(), pidx.notna())):
        np.testing.assert_array_equal(scalar(got), exp)
        assert got.dtype == np.dtype(bool)


def test_elementwise_unknown_lengths_and_mapping(client):
    pdf = make_pdf()
    df = md.DataFrame(pdf, chunk_size=3)
    mask = pdf["a"] > 1
    pidx = pdf[mask].index
    idx = df[df["a"] > 1].index
    mapping = {k: k % 7 for k in pdf.index}
    mapper = pd.Series([f"m{k}" for k in range(len(pdf))], index=pdf.index)
    run([
        (idx.map(mapping), pidx.map(mapping)),
        (idx.map(md.Series(mapper, chunk_size=4)), pidx.map(mapper)),
        (idx.map(lambda x: x + 1, dtype="int64"), pidx.map(lambda x: x + 1)),
        (idx.to_series(index=md.Index(np.arange(len(pidx)))), pidx.to_series(index=np.arange(len(pidx)))),
        (idx.to_frame(index=False), pidx.to_frame(index=False)),
    ])
    np.testing.assert_array_equal(scalar(idx.isna()), pidx.isna())
    np.testing.assert_array_equal(scalar(idx.values), pidx.values)
    mi = INDEXES["multi"]
    np.testing.assert_array_equal(scalar(md.Index(mi, chunk_size=4).to_tensor()), mi.to_numpy())
    lv = md.Index(mi.set_levels([10, 20, 30, 40, 50, 60, 70], level=0), chunk_size=4).to_tensor(extract_multi_index=True)
    np.testing.assert_array_equal(scalar(lv), mi.set_levels([10, 20, 30, 40, 50, 60, 70], level=0).to_frame(index=False).to_numpy())
    with pytest.raises(NotImplementedError, match="categories"):
        md.Index(["a"]).astype("category")
    with pytest.raises(ValueError, match="invalid how"):
        md.Index([1]).dropna(how="some")
    with pytest.raises(TypeError, match="list-like"):
        md.Index(INDEXES["multi"]).rename("x")  # pandas' own error, at build time


# ---- through the Series machinery ---------------------------------------------------------------


@pytest.mark.parametrize("chunk", [1, 4])
@pytest.mark.parametrize("kind", ["int", "str", "cat", "tz", "multi", "float_nan"])
def test_drop_duplicates_duplicated_value_counts_drop(client, kind, chunk):
    pidx = INDEXES[kind]
    idx = md.Index(pidx, chunk_size=chunk)
    drop = list(pidx[[0, 3]])  # NaN labels: see test_drop_nan_label
    pairs = [
        (idx.drop_duplicates(), pidx.drop_duplicates()),
        (idx.drop_duplicates(keep="last"), pidx.drop_duplicates(keep="last")),
        (idx.drop_duplicates(keep=False, method="shuffle"), pidx.drop_duplicates(keep=False)),
        (idx.drop(drop), pidx.drop(drop)),
        (idx.drop(drop + [pidx[0]], errors="ignore"), pidx.drop(drop + [pidx[0]], errors="ignore")),
    ]
    if kind != "multi":
        pairs += [
            (idx.value_counts(), pidx.value_counts()),
            (idx.value_counts(dropna=False, normalize=True), pidx.value_counts(dropna=False, normalize=True)),
            (idx.value_counts(sort=False, method="tree"), pidx.value_counts(sort=False)),
        ]
    run(pairs)
    for keep in ("first", "last", False):
        got = idx.duplicated(keep=keep)
        np.testing.assert_array_equal(scalar(got), pidx.duplicated(keep=keep))
        assert got.dtype == np.dtype(bool)


def test_drop_missing_label_raises(client):
    idx = md.Index([1, 2, 3, 4], chunk_size=2)
    with pytest.raises(KeyError, match=r"\[9\] not found in axis"):
        idx.drop([2, 9]).execute()
    with pytest.raises(ValueError, match="errors must be"):
        idx.drop([2], errors="no")
    with pytest.raises(ValueError, match="keep must be"):
        idx.drop_duplicates(keep="middle")


# ---- reductions ---------------------------------------------------------------------------------


@pytest.mark.parametrize("chunk", [1, 4])
@pytest.mark.parametrize("kind", ["int", "float_nan", "tz", "cat", "range", "str"])
def test_reductions(client, kind, chunk):
    pidx = INDEXES[kind]
    idx = md.Index(pidx, chunk_size=chunk)
    checks = [(idx.min(), pidx.min()), (idx.max(), pidx.max())]
    if kind == "float_nan":
        checks += [(idx.min(skipna=False), pidx.min(skipna=False)), (idx.max(skipna=False), pidx.max(skipna=False))]
    if kind in ("int", "float_nan", "range"):
        checks += [(idx.all(), pidx.all()), (idx.any(), pidx.any())]
    if kind in ("int", "float_nan", "tz", "range"):
        fresh = pickle.loads(pickle.dumps(pidx))  # pandas adds its lookup table's size once built
        checks += [(idx.memory_usage(), fresh.memory_usage()), (idx.memory_usage(deep=True), fresh.memory_usage(deep=True))]
    mars_dask.execute(*[t for t, _ in checks])
    for t, exp in checks:
        got = t.fetch()
        assert type(got) is type(exp) and (got == exp or (pd.isna(got) and pd.isna(exp))), (got, exp)
    with pytest.raises(ValueError, match="axis"):
        idx.min(axis=1)


def test_reductions_empty_and_filtered(client):
    pdf = make_pdf()
    df = md.DataFrame(pdf, chunk_size=2)
    for bound in (1, 10):  # some chunks empty; all empty
        t = df[df["a"] > bound].index
        exp = pdf[pdf["a"] > bound].index
        for got, want in ((t.min(), exp.min()), (t.max(), exp.max()), (t.any(), exp.any()), (t.all(), exp.all())):
            g = scalar(got)
            assert (pd.isna(g) and pd.isna(want)) or g == want, (g, want)


def test_agg(client):
    pidx = INDEXES["int"]
    idx = md.Index(pidx, chunk_size=4)
    assert scalar(idx.agg("max")) == pidx.to_series().agg("max")
    assert_pandas(idx.aggregate(["min", "max"]), pd.Series(pidx).agg(["min", "max"]).rename(None))


# ---- monotonicity -------------------------------------------------------------------------------


MONO = {
    "inc": [1, 2, 2, 3, 5, 8, 8, 9],
    "strict": [1, 2, 3, 4, 5, 6, 7, 8],
    "dec": [9, 8, 8, 5, 3, 2, 2, 1],
    "edge_break": [1, 2, 3, 2, 4, 5, 6, 7],  # broken only across a chunk boundary for chunk 3
    "edge_tie": [1, 2, 3, 3, 4, 5, 6, 7],  # a tie across a chunk boundary (strict fails)
    "nan": [1.0, 2.0, np.nan, 4.0, 5.0, 6.0, 7.0, 8.0],
    "one": [4],
    "empty": [],
    "str": ["a", "b", "b", "c", "d", "e", "f", "g"],
}


@pytest.mark.parametrize("chunk", [1, 3, 8])
def test_check_monotonic(client, chunk):
    cases = []
    for name, vals in MONO.items():
        pidx = pd.Index(vals, dtype="float64" if name in ("nan", "empty") else None)
        idx = md.Index(pidx, chunk_size=chunk)
        cases += [
            (idx.is_monotonic_increasing, pidx.is_monotonic_increasing),
            (idx.is_monotonic, pidx.is_monotonic_increasing),
            (idx.is_monotonic_decreasing, pidx.is_monotonic_decreasing),
            (idx.check_monotonic(), pidx.is_monotonic_increasing),
            (idx.check_monotonic(strict=True), pidx.is_monotonic_increasing and pidx.is_unique),
            (idx.check_monotonic(decreasing=True, strict=True), pidx.is_monotonic_decreasing and pidx.is_unique),
        ]
    cat = pd.CategoricalIndex(list("zzyx"), categories=["z", "y", "x"], ordered=True)
    tz = INDEXES["tz"]
    cases += [
        (md.Index(cat, chunk_size=chunk).is_monotonic_increasing, cat.is_monotonic_increasing),
        (md.Index(tz, chunk_size=chunk).is_monotonic_decreasing, tz.is_monotonic_decreasing),
        (md.Index(tz, chunk_size=chunk).is_monotonic_increasing, tz.is_monotonic_increasing),
    ]
    mars_dask.execute(*[t for t, _ in cases])
    got = [t.fetch() for t, _ in cases]
    assert got == [e for _, e in cases]
    assert all(type(g) is bool for g in got)
    with pytest.raises((TypeError, ValueError), match="decreasing"):
        md.Index([1]).check_monotonic(decreasing="yes")


def test_monotonic_with_empty_chunks(client):
    pdf = pd.DataFrame({"a": [1, 0, 0, 1, 1, 0, 1, 0, 0, 1]}, index=[0, 5, 1, 2, 9, 3, 4, 7, 8, 6])
    df = md.DataFrame(pdf, chunk_size=2)
    for mask, t in ((pdf["a"] > 0, df[df["a"] > 0]), (pdf["a"] == 0, df[df["a"] == 0])):
        exp = pdf[mask].index
        assert scalar(t.index.is_monotonic_increasing) is exp.is_monotonic_increasing


# ---- names --------------------------------------------------------------------------------------


def test_name_setters(client):
    pdf = make_pdf()
    df = md.DataFrame(pdf, chunk_size=4)
    idx = df.index
    idx.name = "new"
    exp = pdf.copy()
    exp.index.name = "new"
    assert idx.name == "new" and df.index.name == "new"
    assert_pandas(df, exp)  # the frame's index renamed too, as in Mars
    assert_pandas(idx, exp.index)
    s = df["f"]
    sidx = s.index
    s2 = s + 1  # a new object: the old handle is not renamed behind its back
    sidx.name = "only"
    assert s.index.name == "only" and s2.index.name == "new"

    mi = pdf.set_index("a", append=True)
    mdf = md.DataFrame(mi, chunk_size=3)
    mdf.index.names = ["x", "y"]
    exp = mi.copy()
    exp.index.names = ["x", "y"]
    assert_pandas(mdf, exp)
    loose = md.Index([1, 2])
    loose.name = "q"
    assert_pandas(loose, pd.Index([1, 2], name="q"))
    r = md.Index([1, 2], name="a")
    assert r.rename("b", inplace=True) is None and r.name == "b"
    assert r.set_names("c", inplace=True) is None and r.name == "c"


def test_index_setters(client):
    ps = pd.Series(np.arange(7), name="v")
    s = md.Series(ps, chunk_size=3)
    s.index = list("abcdefg")
    exp = ps.copy()
    exp.index = list("abcdefg")
    assert_pandas(s, exp)
    pdf = make_pdf()
    df = md.DataFrame(pdf, chunk_size=4)
    new = md.Index(np.arange(N) * 10, name="ten", chunk_size=5)
    df.index = new
    exp = pdf.copy()
    exp.index = pd.Index(np.arange(N) * 10, name="ten")
    assert_pandas(df, exp)
    assert df.execute().nsplits[0] == (5, 5, 3)  # the new Index's row chunks
    with pytest.raises(ValueError, match="Length"):
        s.index = [1, 2]


# ---- constructors with a lazy index -------------------------------------------------------------


def test_constructors_with_md_index(client):
    pdf = make_pdf()
    df = md.DataFrame(pdf, chunk_size=4)
    mask = pdf["a"] > 1
    lazy = df[df["a"] > 1].index  # unknown length until executed
    k = int(mask.sum())
    pidx = pdf[mask].index
    ones = md.DataFrame(pdf, chunk_size=1)
    sparse_lazy = ones[ones["a"] > 2].index  # most 1-row chunks empty
    sparse_pidx = pdf[pdf["a"] > 2].index
    data = {"x": np.arange(k), "y": list("pqrstuvwxyz"[:k])}
    t = mt.tensor(np.arange(2 * k).reshape(k, 2), chunk_size=3)
    run([
        (md.DataFrame({"x": [1, 2, 3]}, index=md.Index([5, 6, 7], chunk_size=2)),
         pd.DataFrame({"x": [1, 2, 3]}, index=pd.Index([5, 6, 7]))),
        (md.DataFrame(data, index=lazy), pd.DataFrame(data, index=pidx)),
        (md.DataFrame(data, index=lazy, columns=["y"]), pd.DataFrame(data, index=pidx, columns=["y"])),
        (md.Series(np.arange(k), index=lazy, name="n", dtype="float64"),
         pd.Series(np.arange(k), index=pidx, name="n", dtype="float64")),
        (md.DataFrame({"c": 1, "d": "z"}, index=lazy), pd.DataFrame({"c": 1, "d": "z"}, index=pidx)),
        (md.Series(2.5, index=lazy), pd.Series(2.5, index=pidx)),
        (md.DataFrame(index=lazy, columns=["e"]), pd.DataFrame(index=pidx, columns=["e"])),
        (md.Series(index=sparse_lazy), pd.Series(index=sparse_pidx)),  # empty chunks: pandas' object
        (md.Series(None, index=sparse_lazy, dtype="Int64"), pd.Series(None, index=sparse_pidx, dtype="Int64")),
        (md.DataFrame(t, index=lazy, columns=["u", "w"]), pd.DataFrame(np.arange(2 * k).reshape(k, 2), index=pidx, columns=["u", "w"])),
        (md.DataFrame(t, index=pidx, columns=["u", "w"]), pd.DataFrame(np.arange(2 * k).reshape(k, 2), index=pidx, columns=["u", "w"])),
        (md.Series(mt.tensor(np.arange(k), chunk_size=2), index=df[df["a"] > 1]["f"]),
         pd.Series(np.arange(k), index=pd.Index(pdf[mask]["f"]))),
        (md.Series(md.Index([7, 8, 9], name="q", chunk_size=2)), pd.Series(pd.Index([7, 8, 9], name="q"))),
        (md.Series(md.Index(pidx), index=lazy), pd.Series(pidx, index=pidx)),
        (md.DataFrame(md.Index(pidx), index=lazy), pd.DataFrame(pidx, index=pidx)),
        (md.DataFrame(md.Series(pdf["f"], chunk_size=5)), pd.DataFrame(pdf["f"])),
    ])
    assert md.DataFrame(data, index=lazy).index_key == lazy.index_key  # aligned with the index
    with pytest.raises(ValueError, match=r"Length of values \(3\) does not match length of index \(4\)"):
        md.Series([1, 2, 3], index=md.Index([1, 2, 3, 4]))  # known lengths: pandas' error now
    with pytest.raises(ValueError, match="Length of values"):
        md.Series(np.arange(k + 1), index=lazy).execute()  # unknown: when the chunks are cut

    # labelled data: pandas reindexes it by the index
    ps = pd.Series([1, 2, 3], index=[0, 1, 2], name="v")
    pf = pd.DataFrame({"x": [1.5, 2.5, 3.5], "y": list("abc")}, index=[2, 1, 0])
    ix = pd.Index([1, 0, 7, 2])
    run([
        (md.Series(ps, index=md.Index(ix, chunk_size=3)), pd.Series(ps, index=ix)),
        (md.Series(ps, index=md.Index([2, 0])), pd.Series(ps, index=[2, 0])),  # every label found: int64 kept
        (md.Series({0: "a", 2: "c"}, index=md.Index(ix, chunk_size=2)), pd.Series({0: "a", 2: "c"}, index=ix)),
        (md.DataFrame(pf, index=md.Index(ix, chunk_size=2)), pd.DataFrame(pf, index=ix)),
        (md.DataFrame({"x": ps}, index=md.Index(ix, chunk_size=2)), pd.DataFrame({"x": ps}, index=ix)),
        (md.Series(md.Series(ps, chunk_size=2), index=md.Index(ix, chunk_size=3)), pd.Series(ps, index=ix)),
        (md.Series(md.Series(ps, chunk_size=2), index=ix, name="w"), pd.Series(ps, index=ix, name="w")),
        (md.DataFrame(md.DataFrame(pf, chunk_size=2), index=list(ix)), pd.DataFrame(pf, index=list(ix))),
    ])


# ---- set_index / reset_index ------------------------------------------------------------------


@pytest.mark.parametrize("chunk", [1, 5])
def test_set_index_reset_index_round_trip(client, chunk):
    pdf = make_pdf()
    df = md.DataFrame(pdf, chunk_size=chunk)
    run([
        (df.set_index("a").reset_index(), pdf.set_index("a").reset_index()),
        (df.reset_index().set_index("idx"), pdf.reset_index().set_index("idx")),
        (df.set_index(["a", "s"]).index, pdf.set_index(["a", "s"]).index),
        (df.set_index(["a", "s"]).reset_index(level="s"), pdf.set_index(["a", "s"]).reset_index(level="s")),
        (set_index_by(df, df.index), pdf.set_index(pdf.index)),
        (set_index_by(df, df.set_index(["a", "s"]).index), pdf.set_index(pdf.set_index(["a", "s"]).index)),
        (set_index_by(df, md.Index(np.arange(N)[::-1], name="r", chunk_size=4)),
         pdf.set_index(pd.Index(np.arange(N)[::-1], name="r"))),
        (set_index_by(df, md.Index(np.arange(N), chunk_size=3), append=True),
         pdf.set_index(pd.Index(np.arange(N)), append=True)),
    ])
    filt = df[df["a"] > 1]
    pfilt = pdf[pdf["a"] > 1]
    assert_pandas(set_index_by(filt, filt.index.rename("z")), pfilt.set_index(pfilt.index.rename("z")))
