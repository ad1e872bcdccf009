"""Statistics vs pandas: agg/aggregate, memory_usage, corr/corrwith/Series.corr/autocorr,
dot/@, is_monotonic*/check_monotonic (Series and Index), on several chunkings (1-row chunks
included), filtered inputs (unknown lengths, empty chunks), nulls, categoricals and
tz-aware datetimes."""

import pickle

import numpy as np
import pandas as pd
import pytest

import mars_dask
import mars_dask.dataframe as md
import mars_dask.tensor as mt

from .helpers import assert_pandas

N = 23


def make_pdf(n=N, seed=0):
    rng = np.random.default_rng(seed)
    f = rng.normal(size=n)
    f[rng.random(n) < 0.25] = np.nan
    g = rng.normal(size=n) + f * 0.5
    g[rng.random(n) < 0.2] = np.nan
    return pd.DataFrame({
        "i": rng.integers(-5, 20, n),
        "f": f,
        "g": g,
        "b": rng.random(n) < 0.5,
        "I": pd.array(np.where(rng.random(n) < 0.2, None, rng.integers(0, 9, n)), dtype="Int64"),
        "s": pd.array(rng.choice(["apple", "b", "c", None], size=n), dtype="str"),
        "c": pd.Categorical(rng.choice(["x", "y", "z"], size=n), categories=["z", "y", "x"], ordered=True),
        "d": pd.date_range("2021-01-01", periods=n, freq="13h", tz="Europe/Paris"),
    })


@pytest.fixture(scope="module")
def pdf():
    return make_pdf()


def numeric(pdf):
    return pdf[["i", "f", "g", "b", "I"]]


def check(pairs):
    mars_dask.execute(*[t for t, _ in pairs])
    for t, exp in pairs:
        if isinstance(exp, (pd.DataFrame, pd.Series, pd.Index)):
            assert_pandas(t, exp)
        else:
            got = t.fetch()
            if isinstance(exp, float) and np.isnan(exp):
                assert np.isnan(got), (got, exp)
            elif isinstance(exp, (float, np.floating)):
                assert got == pytest.approx(exp), (got, exp)
            else:
                assert got == exp, (got, exp)
            assert type(got) is type(exp), (type(got), type(exp))


# ---- agg ------------------------------------------------------------------------------------


@pytest.mark.parametrize("chunk", [1, 4, 100])
def test_agg_frame(client, pdf, chunk):
    num = numeric(pdf)
    df = md.DataFrame(num, chunk_size=chunk)
    full = md.DataFrame(pdf, chunk_size=chunk)
    mixed = pdf[["i", "s", "d", "I"]]
    dm = md.DataFrame(mixed, chunk_size=chunk)
    check([
        (df.agg("sum"), num.agg("sum")),
        (df.aggregate("mean"), num.aggregate("mean")),
        (df.agg(["sum", "mean"]), num.agg(["sum", "mean"])),
        (df.agg(["min", "max", "count", "var"]), num.agg(["min", "max", "count", "var"])),
        (dm.agg(["min", "max"]), mixed.agg(["min", "max"])),
        (df.agg({"i": "sum", "f": "mean"}), num.agg({"i": "sum", "f": "mean"})),
        (df.agg({"i": ["sum"], "f": "mean"}), num.agg({"i": ["sum"], "f": "mean"})),
        (full.agg({"i": "sum", "f": ["min", "max"], "s": "max"}), pdf.agg({"i": "sum", "f": ["min", "max"], "s": "max"})),
        (df.agg(["sum", "mean"], skipna=False), num.agg(["sum", "mean"], skipna=False)),
        (df.agg("sum", axis=1), num.agg("sum", axis=1)),
        (df.agg(["min", "max"], axis=1), num.agg(["min", "max"], axis=1)),
        (df[["i", "f"]].agg(lambda x: x.max() - x.min()), num[["i", "f"]].agg(lambda x: x.max() - x.min())),
        (df[["i", "f"]].agg(["sum", lambda x: x.max()]), num[["i", "f"]].agg(["sum", lambda x: x.max()])),
        (df[["i", "f"]].agg("cumsum"), num[["i", "f"]].agg("cumsum")),
    ])


@pytest.mark.parametrize("chunk", [1, 5, 100])
def test_agg_series_and_index(client, pdf, chunk):
    df = md.DataFrame(pdf, chunk_size=chunk)
    idx = md.Index(pd.Index(pdf["i"]), chunk_size=chunk)
    f = df[df["i"] > 3]
    fe = pdf[pdf["i"] > 3]
    check([
        (df["i"].agg("sum"), pdf["i"].agg("sum")),
        (df["i"].agg(["sum", "mean"]), pdf["i"].agg(["sum", "mean"])),
        (df["I"].agg(["min", "max"]), pdf["I"].agg(["min", "max"])),
        (df["s"].agg(["min", "max", "count"]), pdf["s"].agg(["min", "max", "count"])),
        (df["d"].agg(["min", "max"]), pdf["d"].agg(["min", "max"])),
        (df["i"].agg({"tot": "sum", "mx": "max"}), pdf["i"].agg({"tot": "sum", "mx": "max"})),
        (df["f"].agg(lambda x: x.max() - x.min()), pdf["f"].agg(lambda x: x.max() - x.min())),
        (f["f"].agg(["sum", "std"]), fe["f"].agg(["sum", "std"])),
        (f.agg({"i": "max", "g": "mean"}), fe.agg({"i": "max", "g": "mean"})),
        (idx.agg("max"), pdf["i"].max()),
        (idx.aggregate(["min", "max"]), pd.Series(pdf["i"].to_numpy()).agg(["min", "max"])),
        (idx.all(), pd.Index(pdf["i"]).all()),
        (idx.any(), pd.Index(pdf["i"]).any()),
        (idx.min(), pd.Index(pdf["i"]).min()),
    ])


def test_agg_bad_input(client, pdf):
    df = md.DataFrame(pdf, chunk_size=5)
    with pytest.raises(TypeError):
        df.agg("mean")  # strings: pandas' TypeError
    with pytest.raises(AttributeError):
        df[["i"]].agg("nope")
    with pytest.raises(TypeError):
        df.agg()
    with pytest.raises(ValueError):
        df.agg("sum", axis=3)
    with pytest.raises(AttributeError):
        md.Index(pd.Index([1, 2])).agg("nope")


# ---- memory_usage -------------------------------------------------------------------------


@pytest.mark.parametrize("chunk", [1, 4, 100])
def test_memory_usage(client, chunk):
    rng = np.random.default_rng(1)
    n = 17
    p = pd.DataFrame({
        "i": rng.integers(0, 9, n),
        "f": rng.normal(size=n),
        "I": pd.array(rng.integers(0, 9, n), dtype="Int64"),
        "o": pd.Series(rng.choice(["a", "bb", None], n), dtype=object),
        "c": pd.Categorical(rng.choice(["x", "y"], n)),
        "d": pd.date_range("2020", periods=n, tz="UTC"),
    })
    # pandas' figures depend on the object's state, not only its values (an index counts its
    # hash table once built; an Arrow buffer can lose its validity bitmap in transit): compare
    # with the copy the workers see
    p = pickle.loads(pickle.dumps(p))
    df = md.DataFrame(p, chunk_size=chunk)
    labeled = pickle.loads(pickle.dumps(p.set_index(pd.Index(np.arange(n) * 3))))
    dl = md.DataFrame(labeled, chunk_size=chunk)
    check([
        (df.memory_usage(), p.memory_usage()),
        (df.memory_usage(index=False), p.memory_usage(index=False)),
        (df.memory_usage(deep=True), p.memory_usage(deep=True)),
        (dl.memory_usage(), labeled.memory_usage()),
        (df["o"].memory_usage(deep=True), p["o"].memory_usage(deep=True)),
        (df["c"].memory_usage(), p["c"].memory_usage()),
        (df["i"].memory_usage(index=False), p["i"].memory_usage(index=False)),
        (dl["f"].memory_usage(), labeled["f"].memory_usage()),
        (md.Index(pd.Index(p["f"]), chunk_size=chunk).memory_usage(), pd.Index(p["f"]).memory_usage()),
    ])
    s = pd.Series(pd.array(rng.choice(["a", "bb", None], n), dtype="str"))
    got = md.Series(s, chunk_size=chunk).memory_usage(deep=True).execute().fetch()
    assert abs(got - s.memory_usage(deep=True)) <= 2 * n  # Arrow validity bitmaps: bytes per chunk


# ---- correlations -----------------------------------------------------------------------------


@pytest.mark.parametrize("chunk", [1, 4, 100])
def test_corr(client, pdf, chunk):
    num = numeric(pdf)
    df = md.DataFrame(num, chunk_size=chunk)
    full = md.DataFrame(pdf, chunk_size=chunk)
    const = num.assign(k=0.1)
    f = df[df["i"] > 3]
    fe = num[num["i"] > 3]
    check([
        (df.corr(), num.corr()),
        (df.corr(min_periods=14), num.corr(min_periods=14)),
        (full.corr(numeric_only=True), pdf.corr(numeric_only=True)),
        (md.DataFrame(const, chunk_size=chunk).corr(), const.corr()),
        (f.corr(), fe.corr()),
        (df.corr(method="spearman"), num.corr(method="spearman")),
        (df.corr(method="kendall"), num.corr(method="kendall")),
        (df["f"].corr(df["g"]), num["f"].corr(num["g"])),
        (df["f"].corr(df["i"], min_periods=100), num["f"].corr(num["i"], min_periods=100)),
        (df["f"].corr(df["g"], method="spearman"), num["f"].corr(num["g"], method="spearman")),
        (df["f"].autocorr(), num["f"].autocorr()),
        (df["i"].autocorr(lag=3), num["i"].autocorr(lag=3)),
        (f["g"].corr(f["f"]), fe["g"].corr(fe["f"])),
    ])


@pytest.mark.parametrize("chunk", [3, 100])
def test_corrwith(client, pdf, chunk):
    num = numeric(pdf)
    df = md.DataFrame(num, chunk_size=chunk)
    other = num[["g", "f"]].rename(columns={"g": "i"}).assign(z=1.0) * 2 + 1
    dother = md.DataFrame(other, chunk_size=chunk)
    shifted = num["g"].iloc[3:]  # another index: aligned as pandas (inner)
    check([
        (df.corrwith(df["g"]), num.corrwith(num["g"])),
        (df.corrwith(dother), num.corrwith(other)),
        (df.corrwith(dother, drop=True), num.corrwith(other, drop=True)),
        (df.corrwith(md.Series(shifted, chunk_size=chunk)), num.corrwith(shifted)),
        (df.corrwith(df["g"], method="spearman"), num.corrwith(num["g"], method="spearman")),
        (df[["f", "g"]].corrwith(df[["g", "f"]], axis=1), num[["f", "g"]].corrwith(num[["g", "f"]], axis=1)),
    ])


def test_corr_bad_input(client, pdf):
    df = md.DataFrame(pdf, chunk_size=5)
    with pytest.raises(ValueError):
        df.corr()  # strings: pandas' ValueError
    with pytest.raises(ValueError):
        df[["i"]].corr(method="cosine")
    with pytest.raises(TypeError):
        df["i"].autocorr(lag=1.5)


# ---- dot -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("chunk", [1, 4, 100])
def test_dot(client, chunk):
    rng = np.random.default_rng(3)
    p = pd.DataFrame(rng.integers(0, 5, (13, 3)), columns=list("abc"))
    pf = pd.DataFrame(rng.normal(size=(13, 3)), columns=list("abc"))
    w = pd.DataFrame(rng.normal(size=(3, 2)), index=list("abc"), columns=["u", "v"])
    v = pd.Series([1, 2, 3], index=list("abc"), name="w")
    df = md.DataFrame(p, chunk_size=chunk)
    dff = md.DataFrame(pf, chunk_size=chunk)
    s1 = md.Series(pf["a"], chunk_size=chunk)
    check([
        (df.dot(md.DataFrame(w, chunk_size=2)), p.dot(w)),
        (df.dot(md.Series(v, chunk_size=2)), p.dot(v)),
        (df @ md.Series(v), p @ v),
        (dff.dot(w), pf.dot(w)),
        (dff.dot(w.to_numpy()), pf.dot(w.to_numpy())),
        (df["a"].dot(df["b"]), p["a"].dot(p["b"])),
        (s1 @ dff["b"], pf["a"] @ pf["b"]),
        (df["a"].dot(dff), p["a"].dot(pf)),
        (dff["a"].dot(pf["b"].to_numpy()), pf["a"].dot(pf["b"].to_numpy())),
        (dff["a"] @ mt.tensor(pf["b"].to_numpy(), chunk_size=5), pf["a"] @ pf["b"].to_numpy()),
        (df["a"].dot(list(p["b"])), p["a"].dot(list(p["b"]))),
    ])
    t = dff.dot(mt.tensor(w.to_numpy(), chunk_size=2)).execute().fetch()
    pd.testing.assert_frame_equal(t, pf.dot(w.to_numpy()))
    with pytest.raises(ValueError):
        df.dot(pd.DataFrame(np.ones((2, 2))))  # pandas: matrices are not aligned


# ---- monotonic -------------------------------------------------------------------------------


@pytest.mark.parametrize("chunk", [1, 3, 100])
def test_monotonic(client, chunk):
    inc = pd.Series([1, 2, 2, 3, 5, 8, 8, 9])
    strict = pd.Series([1.0, 2.5, 3.0, 7.0, 9.0])
    dec = pd.Series(pd.date_range("2021", periods=7, tz="Asia/Tokyo")[::-1])
    broken = pd.Series([1, 2, 3, 2, 5, 6])  # breaks inside or across chunks
    withnan = pd.Series([1.0, np.nan, 3.0])
    cat = pd.Series(pd.Categorical(["c", "b", "b", "a"], categories=["c", "b", "a"], ordered=True))
    pairs = []
    for p in (inc, strict, dec, broken, withnan, cat):
        s = md.Series(p, chunk_size=chunk)
        pairs += [
            (s.is_monotonic_increasing, p.is_monotonic_increasing),
            (s.is_monotonic_decreasing, p.is_monotonic_decreasing),
            (s.is_monotonic, p.is_monotonic_increasing),
            (s.check_monotonic(strict=True), p.is_monotonic_increasing and p.is_unique),
            (s.check_monotonic(decreasing=True, strict=True), p.is_monotonic_decreasing and p.is_unique),
        ]
        idx = md.Index(pd.Index(p), chunk_size=chunk)
        pairs += [(idx.is_monotonic_increasing, pd.Index(p).is_monotonic_increasing),
                  (idx.check_monotonic(decreasing=True), pd.Index(p).is_monotonic_decreasing)]
    f = md.Series(inc, chunk_size=chunk)
    f = f[f > 2]  # unknown lengths, empty chunks
    pairs.append((f.is_monotonic_increasing, True))
    empty = md.Series(pd.Series([], dtype=float), chunk_size=chunk)
    pairs.append((empty.is_monotonic_decreasing, True))
    check(pairs)


# ---- md.CustomReduction ---------------------------------------------------------------------


class _Sum(md.CustomReduction):
    def agg(self, x):
        return x.sum()


class _Mean(md.CustomReduction):
    def pre(self, x):
        return x.sum(), x.count()

    def agg(self, s, c):
        return s.sum(), c.sum()

    def post(self, s, c):
        return s / c


class _Unique(md.CustomReduction):
    pre_with_agg = True

    def pre(self, x):
        return pd.Series(x.unique())

    def agg(self, x):
        return pd.Series(x.unique())

    def post(self, x):
        return x.unique()


@pytest.mark.parametrize("chunk", [1, 2, 5, 100])
def test_custom_reduction_by_the_tree(chunk):
    """Mars's protocol (pre, agg on the concatenated partials, post) on every chunking,
    through ``r(s)``, ``s.agg(r)``, ``df.agg(r)`` and a list with pandas' own names; equal to
    the reduction of the local object."""
    s = pd.Series([1.0, 2, 3, np.nan, 5, 6, 7, 7], name="x")
    df = pd.DataFrame({"a": np.arange(8), "b": s.to_numpy()})
    ms, mdf = md.Series(s, chunk_size=chunk), md.DataFrame(df, chunk_size=chunk)
    assert _Sum()(ms).execute().fetch() == _Sum()(s) == s.sum()
    assert ms.agg(_Mean()).execute().fetch() == _Mean()(s) == s.mean()
    np.testing.assert_array_equal(_Unique()(ms).execute().fetch(), s.unique())
    pd.testing.assert_series_equal(mdf.agg(_Mean()).execute().fetch(), df.agg(_Mean()))
    pd.testing.assert_frame_equal(mdf.agg(["sum", _Mean()]).execute().fetch(), df.agg(["sum", _Mean()]))
    # empty chunks (a filter that leaves some chunks without rows), unknown length
    f = ms[ms > 4]
    assert f.agg(_Mean()).execute().fetch() == s[s > 4].mean()


def test_custom_reduction_errors():
    with pytest.raises(NotImplementedError, match="GPU"):
        _Sum(is_gpu=True)
    with pytest.raises(NotImplementedError):
        md.CustomReduction()(pd.Series([1, 2]))  # agg is the user's to define
