"""Reductions vs pandas: sum count mean min max std var sem prod any all nunique median
quantile describe, on several chunkings, with nulls, strings, categoricals, datetimes,
empty frames and filtered inputs (unknown lengths, empty chunks)."""

import numpy as np
import pandas as pd
import pytest

import mars_dask
import mars_dask.dataframe as md

from .helpers import assert_pandas

N = 23


def make_pdf(n=N, seed=0):
    rng = np.random.default_rng(seed)
    f = rng.normal(size=n)
    f[rng.random(n) < 0.25] = np.nan
    s = pd.array(rng.choice(["apple", "b", "c", None], size=n), dtype="str")
    return pd.DataFrame({
        "i": rng.integers(-5, 20, n),
        "f": f,
        "s": s,
        "b": rng.random(n) < 0.5,
        "I": pd.array(np.where(rng.random(n) < 0.2, None, rng.integers(0, 9, n)), dtype="Int64"),
        "c": pd.Categorical(rng.choice(["x", "y", "z"], size=n), categories=["z", "y", "x"], ordered=True),
        "d": pd.to_datetime("2021-01-01") + pd.to_timedelta(rng.integers(0, 1000, n), unit="h"),
    })


def numeric(pdf):
    return pdf[["i", "f", "b", "I"]]


CHUNKS = [4, 100]


@pytest.fixture(scope="module")
def pdf():
    return make_pdf()


def check(pairs):
    """Execute all results in one graph (one round trip), then compare each with pandas."""
    mars_dask.execute(*[t for t, _ in pairs])
    for t, exp in pairs:
        if isinstance(exp, (pd.DataFrame, pd.Series, pd.Index)):
            assert_pandas(t, exp)
        else:
            _scalar_eq(t.fetch(), exp)


def _scalar_eq(got, exp):
    if pd.isna(exp):
        assert pd.isna(got), (got, exp)
    elif isinstance(exp, float):
        assert got == pytest.approx(exp), (got, exp)
    else:
        assert got == exp, (got, exp)
    assert type(got) is type(exp), (type(got), type(exp))


@pytest.mark.parametrize("chunk", CHUNKS)
def test_frame_numeric_reductions(client, pdf, chunk):
    num = numeric(pdf)
    df = md.DataFrame(num, chunk_size=chunk)
    full = md.DataFrame(pdf, chunk_size=chunk)
    pairs = []
    for name in ["sum", "prod", "min", "max", "mean", "var", "std", "sem", "median"]:
        pairs.append((getattr(df, name)(), getattr(num, name)()))
        # numeric_only on the full (mixed) frame
        pairs.append((getattr(full, name)(numeric_only=True), getattr(pdf, name)(numeric_only=True)))
    check(pairs)


@pytest.mark.parametrize("chunk", [5, 100])
def test_skipna_min_count_ddof(client, pdf, chunk):
    num = numeric(pdf)
    df = md.DataFrame(num, chunk_size=chunk)
    allnan = pd.DataFrame({"x": [np.nan] * 9, "y": np.arange(9.0)})
    d2 = md.DataFrame(allnan, chunk_size=chunk)
    check([
        (df.sum(skipna=False), num.sum(skipna=False)),
        (df.mean(skipna=False), num.mean(skipna=False)),
        (df.var(ddof=0), num.var(ddof=0)),
        (df.std(ddof=2, skipna=False), num.std(ddof=2, skipna=False)),
        (df.min(skipna=False), num.min(skipna=False)),
        (df.sem(ddof=0), num.sem(ddof=0)),
        (d2.sum(min_count=1), allnan.sum(min_count=1)),
        (d2.prod(min_count=10), allnan.prod(min_count=10)),
        (d2.sum(), allnan.sum()),
        (d2.product(), allnan.product()),
    ])


@pytest.mark.parametrize("chunk", [3, 100])
def test_min_max_count_nunique_all_dtypes(client, pdf, chunk):
    df = md.DataFrame(pdf, chunk_size=chunk)
    sub = pdf[["i", "s", "c", "d"]]
    dsub = md.DataFrame(sub, chunk_size=chunk)
    check([
        (df.count(), pdf.count()),
        (df.count(numeric_only=True), pdf.count(numeric_only=True)),
        (df.nunique(), pdf.nunique()),
        (df.nunique(dropna=False), pdf.nunique(dropna=False)),
        (dsub.min(), sub.min()),
        (dsub.max(), sub.max()),
        (df[["d"]].mean(), pdf[["d"]].mean()),
        (df[["s", "i"]].sum(), pdf[["s", "i"]].sum()),
    ])


@pytest.mark.parametrize("chunk", [4, 100])
def test_any_all_axis1(client, pdf, chunk):
    sub = pdf[["i", "f", "b", "s"]]
    df = md.DataFrame(sub, chunk_size=chunk)
    pairs = []
    for name in ("any", "all"):
        pairs += [
            (getattr(df, name)(), getattr(sub, name)()),
            (getattr(df, name)(skipna=False), getattr(sub, name)(skipna=False)),
            (getattr(df, name)(bool_only=True), getattr(sub, name)(bool_only=True)),
            (getattr(df, name)(axis=1), getattr(sub, name)(axis=1)),
        ]
    num = numeric(pdf)
    dn = md.DataFrame(num, chunk_size=chunk)
    for name in ("sum", "mean", "min", "max", "count", "std", "median"):
        pairs.append((getattr(dn, name)(axis=1), getattr(num, name)(axis=1)))
    pairs.append((dn.nunique(axis=1), num.nunique(axis=1)))
    nb = num.drop(columns=["b"])
    pairs.append((md.DataFrame(nb, chunk_size=chunk).quantile(0.3, axis=1), nb.quantile(0.3, axis=1)))
    pairs.append((dn.sum(axis="columns", min_count=3), num.sum(axis="columns", min_count=3)))
    check(pairs)


@pytest.mark.parametrize("chunk", [3, 100])
def test_series_scalars(client, pdf, chunk):
    df = md.DataFrame(pdf, chunk_size=chunk)
    pairs = []
    for col, names in [
        ("i", ["sum", "prod", "min", "max", "mean", "var", "std", "sem", "median", "count", "nunique", "any", "all"]),
        ("f", ["sum", "min", "max", "mean", "var", "std", "median", "count", "nunique"]),
        ("s", ["min", "max", "count", "nunique"]),
        ("d", ["min", "max", "mean", "median", "count"]),
        ("I", ["sum", "min", "max", "count"]),
        ("c", ["min", "max", "count", "nunique"]),
        ("b", ["sum", "any", "all", "mean"]),
    ]:
        for name in names:
            pairs.append((getattr(df[col], name)(), getattr(pdf[col], name)()))
    pairs.append((df["f"].sum(skipna=False), pdf["f"].sum(skipna=False)))
    pairs.append((df["f"].var(ddof=0), pdf["f"].var(ddof=0)))
    pairs.append((df["f"].nunique(dropna=False), pdf["f"].nunique(dropna=False)))
    check(pairs)


@pytest.mark.parametrize("chunk", [4, 100])
def test_quantile(client, pdf, chunk):
    num = pdf[["i", "f", "I"]]  # pandas itself cannot interpolate booleans
    df = md.DataFrame(num, chunk_size=chunk)
    pdf = pdf.drop(columns=["b"])
    full = md.DataFrame(pdf, chunk_size=chunk)
    check([
        (df.quantile(), num.quantile()),
        (df.quantile([0.1, 0.5, 0.9]), num.quantile([0.1, 0.5, 0.9])),
        (df.quantile(0.25, interpolation="lower"), num.quantile(0.25, interpolation="lower")),
        (full.quantile(0.4, numeric_only=True), pdf.quantile(0.4, numeric_only=True)),
        (df["f"].quantile(0.3), num["f"].quantile(0.3)),
        (df["i"].quantile([0.2, 0.8]), num["i"].quantile([0.2, 0.8])),
    ])


@pytest.mark.parametrize("chunk", [4, 100])
def test_describe(client, pdf, chunk):
    df = md.DataFrame(pdf, chunk_size=chunk)
    sub = pdf[["i", "f", "s", "b", "c"]]
    dsub = md.DataFrame(sub, chunk_size=chunk)
    obj = pdf[["s", "c", "b"]]
    check([
        (df.describe(), pdf.describe()),
        (df.describe(percentiles=[0.1, 0.9]), pdf.describe(percentiles=[0.1, 0.9])),
        (dsub.describe(include="all"), sub.describe(include="all")),
        (md.DataFrame(obj, chunk_size=chunk).describe(), obj.describe()),
        (df.describe(include=["number"]), pdf.describe(include=["number"])),
        (df.describe(exclude=["number"]), pdf.describe(exclude=["number"])),
        (df["f"].describe(), pdf["f"].describe()),
        (df["s"].describe(), pdf["s"].describe()),
        (df["d"].describe(), pdf["d"].describe()),
        (df["c"].describe(), pdf["c"].describe()),
    ])


def test_filtered_unknown_lengths_and_empty_chunks(client, pdf):
    num = numeric(pdf)
    df = md.DataFrame(num, chunk_size=4)
    mask = num["i"] > 10  # leaves several chunks empty
    fdf = df[df["i"] > 10]
    assert np.isnan(fdf.shape[0])
    exp = num[mask]
    pairs = [(getattr(fdf, name)(), getattr(exp, name)())
             for name in ("sum", "mean", "var", "min", "max", "count", "median", "nunique")]
    pairs.append((fdf["f"].mean(), exp["f"].mean()))
    # everything filtered away: pandas' results on an empty frame
    none = df[df["i"] > 1000]
    exp0 = num[num["i"] > 1000]
    pairs += [(none.count(), exp0.count()), (none["i"].sum(), exp0["i"].sum()), (none["f"].max(), exp0["f"].max())]
    check(pairs)
    got = none.min().execute().fetch()
    pd.testing.assert_series_equal(got, exp0.min(), check_dtype=False)  # the meta cannot know it is empty
    assert pd.isna(none["f"].sum(min_count=1).execute().fetch())


def test_empty_frame(client):
    empty = pd.DataFrame({"a": pd.Series([], dtype="int64"), "b": pd.Series([], dtype="float64")})
    df = md.DataFrame(empty, chunk_size=3)
    pairs = [(getattr(df, name)(), getattr(empty, name)())
             for name in ("sum", "mean", "min", "max", "count", "var", "median", "nunique")]
    pairs += [(df.describe(), empty.describe()), (df["a"].sum(), empty["a"].sum()), (df["b"].mean(), empty["b"].mean())]
    check(pairs)


def test_many_chunks_tree_levels(client):
    rng = np.random.default_rng(3)
    p = pd.DataFrame({"x": rng.normal(size=300), "y": rng.integers(0, 50, 300)})
    df = md.DataFrame(p, chunk_size=13)  # 24 chunks: two combine levels
    check([(df.var(), p.var()), (df.sum(), p.sum()), (df.nunique(), p.nunique()), (df["y"].max(), p["y"].max()),
           (df.describe(), p.describe())])


@pytest.mark.parametrize("chunk", [4, 100])
def test_cumulative(client, pdf, chunk):
    num = pdf[["i", "f"]]
    df = md.DataFrame(num, chunk_size=chunk)
    small = num / 10
    ds = md.DataFrame(small, chunk_size=chunk)
    f = df[df["i"] > 8]  # unknown lengths, empty chunks
    pairs = []
    for name in ("cumsum", "cummax", "cummin"):
        pairs += [
            (getattr(df, name)(), getattr(num, name)()),
            (getattr(df, name)(skipna=False), getattr(num, name)(skipna=False)),
            (getattr(df["f"], name)(), getattr(num["f"], name)()),
            (getattr(f, name)(), getattr(num[num["i"] > 8], name)()),
            (getattr(df, name)(axis=1), getattr(num, name)(axis=1)),
        ]
    pairs.append((ds.cumprod(), small.cumprod()))
    pairs.append((ds["f"].cumprod(skipna=False), small["f"].cumprod(skipna=False)))
    check(pairs)


def test_scalar_result_in_arithmetic(client, pdf):
    df = md.DataFrame(numeric(pdf), chunk_size=5)
    r = df["i"].sum() + 1
    assert r.execute().fetch() == pdf["i"].sum() + 1


def test_bad_input(client, pdf):
    df = md.DataFrame(pdf, chunk_size=5)
    with pytest.raises(TypeError):
        df.mean()  # strings and categoricals: pandas raises TypeError
    with pytest.raises(TypeError):
        df.sum()
    with pytest.raises(TypeError):
        df[["c"]].sum()
    with pytest.raises(TypeError):
        df["s"].mean()
    with pytest.raises(TypeError):
        df["d"].sum()
    with pytest.raises(TypeError):
        df["s"].sum(numeric_only=True)
    with pytest.raises(ValueError):
        df.sum(axis=2)
    with pytest.raises(ValueError):
        df.sum(skipna="yes")
    with pytest.raises(ValueError):
        df.quantile(1.5)
    with pytest.raises(ValueError):
        df[["i"]].quantile(0.5, interpolation="cubic")
    with pytest.raises(TypeError):
        df[["i"]].var(ddof="x")
    with pytest.raises(TypeError):
        pd.DataFrame({"c": pd.Categorical(["a"])}).min()
    with pytest.raises(TypeError):
        md.DataFrame(pd.DataFrame({"c": pd.Categorical(["a", "b"])}), chunk_size=1).min()


# ---- skew / kurt ------------------------------------------------------------------------


@pytest.mark.parametrize("chunk", [1, 4, 100])
def test_skew_kurt(client, pdf, chunk):
    num = numeric(pdf)
    df = md.DataFrame(num, chunk_size=chunk)
    full = md.DataFrame(pdf, chunk_size=chunk)
    const = pd.DataFrame({"k": [0.1] * 9, "z": [0.0] * 9, "few": [1.0, 2.0, np.nan, np.nan, np.nan, 3.0, np.nan, np.nan, np.nan]})
    dc = md.DataFrame(const, chunk_size=chunk)
    f32 = pd.Series(np.arange(11, dtype="float32") ** 2, name="f32")
    pairs = []
    for name in ("skew", "kurt", "kurtosis"):
        pairs += [
            (getattr(df, name)(), getattr(num, name)()),
            (getattr(df, name)(skipna=False), getattr(num, name)(skipna=False)),
            (getattr(full, name)(numeric_only=True), getattr(pdf, name)(numeric_only=True)),
            (getattr(df["f"], name)(), getattr(num["f"], name)()),
            (getattr(df["i"], name)(), getattr(num["i"], name)()),
            (getattr(df["I"], name)(), getattr(num["I"], name)()),
            (getattr(dc, name)(), getattr(const, name)()),  # constant columns / too few values: NaN
            (getattr(md.Series(f32, chunk_size=chunk), name)(), getattr(f32, name)()),  # float32 scalar
            (getattr(df, name)(axis=1), getattr(num, name)(axis=1)),
        ]
    fdf = df[df["i"] > 3]  # unknown lengths, empty chunks
    exp = num[num["i"] > 3]
    pairs += [(fdf.skew(), exp.skew()), (fdf.kurt(), exp.kurt())]
    check(pairs)


def test_skew_kurt_mars_options(client):
    from scipy import stats

    rng = np.random.default_rng(5)
    x = rng.gamma(2.0, size=40)
    s = md.Series(x, chunk_size=7)
    ts = [s.skew(bias=True), s.kurt(bias=True), s.kurt(fisher=False), s.kurt(bias=True, fisher=False)]
    mars_dask.execute(*ts)
    got = [t.fetch() for t in ts]
    assert got[0] == pytest.approx(stats.skew(x, bias=True))
    assert got[1] == pytest.approx(stats.kurtosis(x, bias=True))
    assert got[2] == pytest.approx(stats.kurtosis(x, bias=False, fisher=False))
    assert got[3] == pytest.approx(stats.kurtosis(x, bias=True, fisher=False))
    df = md.DataFrame({"a": x, "b": x[::-1] ** 2}, chunk_size=6)
    r = df.kurt(axis=1, bias=True).execute().fetch()
    np.testing.assert_allclose(r.to_numpy(), stats.kurtosis(np.column_stack([x, x[::-1] ** 2]), axis=1, bias=True))


def test_bad_skew_input(client, pdf):
    df = md.DataFrame(pdf, chunk_size=5)
    with pytest.raises(TypeError):
        df.skew()  # strings: pandas' TypeError
    with pytest.raises(TypeError):
        df["d"].kurt()
    with pytest.raises(ValueError):
        df[["i"]].skew(bias="no")
    with pytest.raises(ValueError):
        df[["i"]].sum(combine_size=1)
    with pytest.raises(ValueError):
        df[["i"]].sum(method="magic")


# ---- level= --------------------------------------------------------------------------------


def make_mi(n=31, seed=2):
    rng = np.random.default_rng(seed)
    k = pd.array(rng.choice(["a", "b", "c", None], n), dtype="str")
    mi = pd.MultiIndex.from_arrays([k, rng.integers(0, 3, n)], names=["k", "j"])
    x = rng.normal(size=n)
    x[rng.random(n) < 0.2] = np.nan
    return pd.DataFrame({
        "x": x,
        "y": rng.integers(0, 9, n),
        "b": rng.random(n) < 0.5,
        "I": pd.array(np.where(rng.random(n) < 0.2, None, rng.integers(0, 9, n)), dtype="Int64"),
        "s": pd.array(rng.choice(["u", "v"], n), dtype="str"),
    }, index=mi)


LEVEL_NAMES = ["sum", "prod", "min", "max", "mean", "var", "std", "sem", "count", "all", "any", "skew", "kurt"]


@pytest.mark.parametrize("chunk", [1, 5, 100])
def test_level_reductions(client, chunk):
    p = make_mi()
    num = p[["x", "y", "b", "I"]]
    df = md.DataFrame(num, chunk_size=chunk)
    pairs = []
    for name in LEVEL_NAMES:
        g = num.groupby(level=0)
        pairs.append((getattr(df, name)(level=0), getattr(g, name)()))
        pairs.append((getattr(df["x"], name)(level="j"), getattr(num["x"].groupby(level="j"), name)()))
    for name in ("sum", "mean", "var", "max", "count"):
        pairs.append((getattr(df, name)(level=["j", "k"]), getattr(num.groupby(level=["j", "k"]), name)()))
    pairs += [
        (df.sum(level="k", skipna=False), num.groupby(level="k").sum(skipna=False)),
        (df.mean(level="k", skipna=False), num.groupby(level="k").mean(skipna=False)),
        (df.sum(level="j", min_count=3), num.groupby(level="j").sum(min_count=3)),
        (df.var(level=1, ddof=0), num.groupby(level=1).var(ddof=0)),
        (df["y"].std(level=1, ddof=2), num["y"].groupby(level=1).std(ddof=2)),
    ]
    check(pairs)


def test_level_mixed_and_filtered(client):
    p = make_mi()
    df = md.DataFrame(p, chunk_size=4)
    num = p[["x", "y", "b", "I"]]
    mask = p["y"] > 5
    f = df[df["y"] > 5]
    check([
        (df.sum(level=0, numeric_only=True), p.groupby(level=0).sum(numeric_only=True)),
        (df.mean(level=0, numeric_only=True), p.groupby(level=0).mean(numeric_only=True)),
        (df.count(level=1), p.groupby(level=1).count()),
        (df.count(level=1, numeric_only=True), num.groupby(level=1).count()),
        (df[["s", "y"]].max(level="k"), p[["s", "y"]].groupby(level="k").max()),
        (df[["s"]].sum(level="k"), p[["s"]].groupby(level="k").sum()),
        (f[["x", "y"]].mean(level=0), p[mask][["x", "y"]].groupby(level=0).mean()),
        (f["x"].sum(level=1), p[mask]["x"].groupby(level=1).sum()),
        (df[["x", "y"]].sum(axis=1, level=0), pd.DataFrame({"x": p["x"], "y": p["y"]}).T.groupby(level=0).sum().T),
    ])
    # nothing left: pandas' result on the empty input
    none = df[df["y"] > 100][["x", "y"]]
    exp = p[p["y"] > 100][["x", "y"]].groupby(level=0).sum()
    got = none.sum(level=0).execute().fetch()
    pd.testing.assert_frame_equal(got, exp)
    with pytest.raises(TypeError):
        df.mean(level=0)  # a string column: pandas' own error
    with pytest.raises((KeyError, IndexError, ValueError)):
        df.sum(level="nope")


def test_level_single_index_and_categorical(client):
    rng = np.random.default_rng(9)
    idx = pd.CategoricalIndex(rng.choice(["q", "r", "s"], 20), categories=["s", "r", "q", "t"], name="c")
    p = pd.DataFrame({"v": rng.normal(size=20)}, index=idx)
    dt = pd.DataFrame({"v": np.arange(12.0)}, index=pd.date_range("2021-01-01", periods=12, freq="7h", tz="UTC").floor("D"))
    check([
        (md.DataFrame(p, chunk_size=3).sum(level=0), p.groupby(level=0).sum()),
        (md.DataFrame(p, chunk_size=3)["v"].var(level="c"), p["v"].groupby(level="c").var()),
        (md.DataFrame(dt, chunk_size=5).mean(level=0), dt.groupby(level=0).mean()),
    ])


# ---- a tileable as an argument -----------------------------------------------------------


def test_quantile_tileable_q(client, pdf):
    """issue 18: ``quantile(mt.tensor(...))`` failed with "Could not serialize object of type
    _HLGExprSequence" (the tensor was pickled into the task instead of being an input)."""
    import mars_dask.tensor as mt

    num = pdf[["i", "f"]]
    df = md.DataFrame(num, chunk_size=4)
    fq = md.DataFrame(num, chunk_size=4)
    qs = mt.tensor([0.3, 0.7], chunk_size=1)
    check([
        (df["f"].quantile(mt.tensor([0.3, 0.7])), num["f"].quantile([0.3, 0.7])),
        (df["i"].quantile(qs), num["i"].quantile([0.3, 0.7])),
        (df.quantile(qs), num.quantile([0.3, 0.7])),
        (df["f"].quantile(mt.tensor(0.25)), num["f"].quantile(0.25)),
        (fq.quantile(md.Series([0.1, 0.9])), num.quantile([0.1, 0.9])),
    ])
    # one point: pandas names the result after it, which the lazy meta cannot know; the
    # fetched result is pandas' own
    for got, exp in [(df.quantile(mt.tensor(0.4), axis=1), num.quantile(0.4, axis=1)),
                     (df.quantile(mt.tensor(0.4)), num.quantile(0.4))]:
        pd.testing.assert_series_equal(got.execute().fetch(), exp)


def test_mars_signature_options(client, pdf):
    """Mars's positional order (axis, skipna, level, ...), ``numeric_only=None``,
    ``combine_size`` (partials per tree node) and ``method`` are accepted."""
    num = numeric(pdf)
    rng = np.random.default_rng(4)
    p = pd.DataFrame({"x": rng.normal(size=60), "y": rng.integers(0, 9, 60)})
    df = md.DataFrame(p, chunk_size=3)  # 20 chunks: several combine levels with combine_size=2
    dn = md.DataFrame(num, chunk_size=4)
    check([
        (df.sum(combine_size=2), p.sum()),
        (df.var(combine_size=3, method="tree"), p.var()),
        (df["x"].skew(combine_size=2), p["x"].skew()),
        (df.mean(None, True, None, None), p.mean()),
        (dn.sum(0, False), num.sum(skipna=False)),
        (dn.all(None, None, True), num.all()),
        (df.count(combine_size=2), p.count()),
    ])
