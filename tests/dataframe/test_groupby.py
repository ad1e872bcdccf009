"""groupby vs pandas: agg forms, shortcut methods, transform, apply, cumcount, sort/dropna/
observed semantics, both algorithms (tree and shuffle) forced and chosen automatically."""

import numpy as np
import pandas as pd
import pytest

import mars_dask.dataframe as md
from mars_dask.dataframe.groupby import kernels as K

from mars_dask.session import execute as _execute
from mars_dask.session import get_session

from .helpers import assert_pandas


def check(*pairs):
    """``assert_pandas`` for many results at once: metadata checked before execution, then
    one execution and one gather for all (the machine is shared, round trips are slow)."""
    for t, expected in pairs:
        meta = t.data.meta
        if isinstance(expected, pd.DataFrame):
            assert list(meta.columns) == list(expected.columns), (list(meta.columns), list(expected.columns))
            assert meta.dtypes.to_dict() == expected.dtypes.to_dict(), (meta.dtypes, expected.dtypes)
        else:
            assert meta.dtype == expected.dtype, (meta.dtype, expected.dtype)
            assert meta.name == expected.name, (meta.name, expected.name)
    ts = [t for t, _ in pairs]
    _execute(*ts)
    parts = get_session().client.gather([[c.future for c in t.data.chunks] for t in ts])
    for (t, expected), p in zip(pairs, parts):
        assert t.shape[0] == len(expected)
        got = type(t)._assemble(t.data.meta, p)
        assert type(got) is type(expected), (type(got), type(expected))
        if isinstance(expected, pd.DataFrame):
            pd.testing.assert_frame_equal(got, expected)
        else:
            pd.testing.assert_series_equal(got, expected)


class Acc:
    """Collects ``(tileable, expected)`` pairs; :meth:`check` verifies them in one go."""

    def __init__(self):
        self.pairs = []

    def __call__(self, t, expected):
        self.pairs.append((t, expected))

    def check(self):
        pairs, self.pairs = self.pairs, []
        if pairs:
            check(*pairs)


@pytest.fixture
def acc():
    a = Acc()
    yield a
    a.check()

pytestmark = pytest.mark.usefixtures("client")

METHODS = ["tree", "shuffle", "auto"]


def make_pdf(n=60, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "k": rng.integers(0, 6, n),
            "s": pd.array(rng.choice(["x", "y", "z", None], n), dtype="str"),
            "c": pd.Categorical(rng.choice(["lo", "mid", "hi"], n), categories=["lo", "mid", "hi", "unused"]),
            "t": pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 4, n), unit="D"),
            "v": np.where(rng.random(n) < 0.15, np.nan, rng.normal(size=n)),
            "w": rng.integers(-50, 50, n),
        }
    )


def chosen(t):
    """Which algorithm the aggregation ran with (after execution)."""
    func = t.chunks[0].func
    return {K.finish_tree: "tree", K.gather_ordered: "shuffle"}.get(func, func.__name__)


# ---- aggregation forms ----------------------------------------------------------------


@pytest.mark.parametrize("chunk_size", [13, 100])
@pytest.mark.parametrize("method", ["tree", "shuffle"])
def test_agg_forms(chunk_size, method, acc):
    pdf = make_pdf(50)
    df = md.DataFrame(pdf, chunk_size=chunk_size)
    gb, pgb = df.groupby("k", method=method), pdf.groupby("k")
    acc(gb[["v", "w"]].agg("sum"), pgb[["v", "w"]].agg("sum"))
    acc(gb[["v", "w"]].agg(["sum", "mean", "std", "count"]), pgb[["v", "w"]].agg(["sum", "mean", "std", "count"]))
    acc(gb.agg({"v": ["min", "max"], "w": "var", "s": "first"}),
                  pgb.agg({"v": ["min", "max"], "w": "var", "s": "first"}))
    acc(gb.agg(vs=("v", "sum"), wm=("w", "mean"), tl=("t", "last"), n=("s", "count")),
                  pgb.agg(vs=("v", "sum"), wm=("w", "mean"), tl=("t", "last"), n=("s", "count")))
    acc(gb["w"].agg(["prod", "size", "max"]), pgb["w"].agg(["prod", "size", "max"]))
    acc(gb["v"].agg(total="sum", avg="mean"), pgb["v"].agg(total="sum", avg="mean"))


@pytest.mark.parametrize("method", ["tree", "shuffle"])
def test_shortcut_methods(method, acc):
    pdf = make_pdf(50, seed=1)
    df = md.DataFrame(pdf, chunk_size=17)
    gb, pgb = df.groupby("k", method=method), pdf.groupby("k")
    num = ["v", "w"]
    for name in ["sum", "mean", "std", "var", "prod", "median"]:
        acc(getattr(gb[num], name)(), getattr(pgb[num], name)())
    for name in ["count", "min", "max", "first", "last", "nunique"]:
        cols = ["s", "t", "v", "w"]  # (min/max of an unordered categorical raise, as in pandas)
        acc(getattr(gb[cols], name)(), getattr(pgb[cols], name)())
    acc(gb.count(), pgb.count())
    acc(gb.size(), pgb.size())
    acc(gb["v"].var(ddof=0), pgb["v"].var(ddof=0))
    acc(gb["w"].std(ddof=2), pgb["w"].std(ddof=2))
    acc(gb.v.mean(), pgb.v.mean())  # attribute selection


def test_custom_callables_and_mixed(acc):
    pdf = make_pdf(50, seed=2)
    df = md.DataFrame(pdf, chunk_size=19)

    def spread(x):
        return x.max() - x.min()

    for method in METHODS:
        gb, pgb = df.groupby("k", method=method), pdf.groupby("k")
        acc(gb[["v", "w"]].agg(spread), pgb[["v", "w"]].agg(spread))
        acc(gb.agg({"v": ["sum", spread], "w": "nunique"}), pgb.agg({"v": ["sum", spread], "w": "nunique"}))
        acc(gb.agg(r=("w", spread), m=("v", "median")), pgb.agg(r=("w", spread), m=("v", "median")))


# ---- keys: types, nulls, sort, observed ---------------------------------------------------


@pytest.mark.parametrize("key", ["s", "t", ["s", "k"]])
@pytest.mark.parametrize("method", ["tree", "shuffle"])
def test_key_types_sort_dropna(key, method, acc):
    pdf = make_pdf(60, seed=3)
    df = md.DataFrame(pdf, chunk_size=23)
    for sort in (True, False):
        for dropna in (True, False):
            gb = df.groupby(key, sort=sort, dropna=dropna, method=method)
            pgb = pdf.groupby(key, sort=sort, dropna=dropna)
            # exact order (no check_like): sort=True sorted keys, sort=False first appearance
            acc(gb[["v", "w"]].agg(["sum", "mean", "max"]), pgb[["v", "w"]].agg(["sum", "mean", "max"]))
            acc(gb["w"].nunique(), pgb["w"].nunique())


def test_float_keys_with_nan(acc):
    pdf = make_pdf(50, seed=4)
    pdf["f"] = np.where(np.arange(50) % 7 == 0, np.nan, pdf["k"] * 0.5)
    df = md.DataFrame(pdf, chunk_size=19)
    for method in ("tree", "shuffle"):
        for sort in (True, False):
            for dropna in (True, False):
                gb = df.groupby("f", sort=sort, dropna=dropna, method=method)
                pgb = pdf.groupby("f", sort=sort, dropna=dropna)
                acc(gb["w"].agg(["sum", "var", "first"]), pgb["w"].agg(["sum", "var", "first"]))
                acc(gb["w"].agg(lambda x: x.iloc[-1]), pgb["w"].agg(lambda x: x.iloc[-1]))


@pytest.mark.parametrize("method", METHODS)
def test_categorical_observed(method, acc):
    pdf = make_pdf(40, seed=5)
    df = md.DataFrame(pdf, chunk_size=15)
    for observed in (True, False):
        for sort in (True, False):
            gb = df.groupby("c", observed=observed, sort=sort, method=method)
            pgb = pdf.groupby("c", observed=observed, sort=sort)
            acc(gb[["v", "w"]].sum(), pgb[["v", "w"]].sum())
            acc(gb["w"].agg(["mean", "count", "size"]), pgb["w"].agg(["mean", "count", "size"]))
            acc(gb["v"].median(), pgb["v"].median())
            gb2 = df.groupby(["c", "k"], observed=observed, sort=sort, method=method)
            pgb2 = pdf.groupby(["c", "k"], observed=observed, sort=sort)
            acc(gb2["w"].sum(), pgb2["w"].sum())


def test_series_keys_and_series_groupby(acc):
    pdf = make_pdf(50, seed=6)
    df = md.DataFrame(pdf, chunk_size=19)
    # a column of the frame used as a Series key behaves like its label
    acc(df.groupby(df["k"])[["v", "w"]].sum(), pdf.groupby(pdf["k"])[["v", "w"]].sum())
    # a computed aligned Series (not a column): nothing is excluded, named by the Series
    key = (df["w"] > 0).rename("pos")
    pkey = (pdf["w"] > 0).rename("pos")
    for method in METHODS:
        acc(df.groupby(key, method=method)[["v", "w"]].mean(), pdf.groupby(pkey)[["v", "w"]].mean())
        acc(df.groupby(["k", key], sort=False, method=method).agg({"v": "sum", "w": ["min", "var"]}),
                      pdf.groupby(["k", pkey], sort=False).agg({"v": "sum", "w": ["min", "var"]}))
        acc(df["v"].groupby(df["k"]).agg(["sum", "count"]), pdf["v"].groupby(pdf["k"]).agg(["sum", "count"]))
        acc(df["w"].groupby([df["s"], key], dropna=False).max(),
                      pdf["w"].groupby([pdf["s"], pkey], dropna=False).max())


def test_as_index_false(acc):
    pdf = make_pdf(45, seed=7)
    df = md.DataFrame(pdf, chunk_size=17)
    for method in METHODS:
        gb, pgb = df.groupby(["s", "k"], as_index=False, method=method), pdf.groupby(["s", "k"], as_index=False)
        acc(gb[["v", "w"]].sum(), pgb[["v", "w"]].sum())
        acc(gb.size(), pgb.size())
        acc(gb["v"].agg(["sum", "mean"]), pgb["v"].agg(["sum", "mean"]))
        acc(gb.agg(m=("w", "max"), u=("v", "nunique")), pgb.agg(m=("w", "max"), u=("v", "nunique")))


# ---- algorithm choice -----------------------------------------------------------------------


def test_auto_chooses_by_group_count(acc):
    rng = np.random.default_rng(8)
    n = 1200
    few = pd.DataFrame({"k": rng.integers(0, 3, n), "v": rng.normal(size=n)})
    many = pd.DataFrame({"k": rng.permutation(n), "v": rng.normal(size=n)})
    for pdf, expect in ((few, "tree"), (many, "shuffle")):
        df = md.DataFrame(pdf, chunk_size=300)
        for sort in (True, False):
            t = df.groupby("k", sort=sort).agg(["sum", "mean", "std"])
            acc(t, pdf.groupby("k", sort=sort).agg(["sum", "mean", "std"]))
            acc.check()
            assert chosen(t) == expect
        t = df.groupby("k", method="tree").v.sum()
        acc(t, pdf.groupby("k").v.sum())
        acc.check()
        assert chosen(t) == "tree"
        t = df.groupby("k", method="shuffle").v.sum()
        acc(t, pdf.groupby("k").v.sum())
        acc.check()
        assert chosen(t) == "shuffle"


def test_var_numerically_stable():
    rng = np.random.default_rng(9)
    pdf = pd.DataFrame({"k": rng.integers(0, 4, 400), "v": 1e9 + rng.normal(size=400)})
    df = md.DataFrame(pdf, chunk_size=37)
    for method in ("tree", "shuffle"):
        got = df.groupby("k", method=method)["v"].agg(["var", "std"]).execute().fetch()
        pd.testing.assert_frame_equal(got, pdf.groupby("k")["v"].agg(["var", "std"]), rtol=1e-6)


# ---- transform / apply / cumcount ----------------------------------------------------------


@pytest.mark.parametrize("chunk_size", [9, 23])
def test_transform(chunk_size, acc):
    pdf = make_pdf(40, seed=10)
    pdf.index = pdf.index * 3 + 1  # a non-default index is kept
    df = md.DataFrame(pdf, chunk_size=chunk_size)
    gb, pgb = df.groupby("s"), pdf.groupby("s")
    for f in ("sum", "mean", "max", "count", "std"):
        r = gb[["v", "w"]].transform(f)
        assert r.data.index_key == df.data.index_key
        acc(r, pgb[["v", "w"]].transform(f))
    acc(gb["w"].transform(lambda x: x - x.mean()), pgb["w"].transform(lambda x: x - x.mean()))
    acc(gb[["v", "w"]].transform(lambda x: x.rank()), pgb[["v", "w"]].transform(lambda x: x.rank()))
    acc(gb["v"].transform("cumsum"), pgb["v"].transform("cumsum"))
    acc(df.groupby(["k", "c"], dropna=False)["v"].transform("min"),
                  pdf.groupby(["k", "c"], dropna=False)["v"].transform("min"))
    # series grouped by an aligned series
    acc(df["v"].groupby(df["k"]).transform("mean"), pdf["v"].groupby(pdf["k"]).transform("mean"))


@pytest.mark.parametrize("chunk_size", [16, 100])
def test_apply(chunk_size, acc):
    pdf = make_pdf(45, seed=11)
    df = md.DataFrame(pdf, chunk_size=chunk_size)
    for sort in (True, False):
        gb, pgb = df.groupby("k", sort=sort), pdf.groupby("k", sort=sort)
        acc(gb.apply(lambda g: g["w"].sum() - g["v"].max()), pgb.apply(lambda g: g["w"].sum() - g["v"].max()))
        acc(gb.apply(lambda g: g.nlargest(2, "w")), pgb.apply(lambda g: g.nlargest(2, "w")))
        acc(gb["v"].apply(lambda s: s.fillna(0).cumsum()), pgb["v"].apply(lambda s: s.fillna(0).cumsum()))
        acc(df.groupby(["s", "k"], sort=sort, dropna=False).apply(lambda g: g[["v", "w"]].mean()),
                      pdf.groupby(["s", "k"], sort=sort, dropna=False).apply(lambda g: g[["v", "w"]].mean()))
    acc(df.groupby("k", group_keys=False).apply(lambda g: g.head(2)),
                  pdf.groupby("k", group_keys=False).apply(lambda g: g.head(2)))


@pytest.mark.parametrize("chunk_size", [3, 11, 100])
def test_cumcount(chunk_size, acc):
    pdf = make_pdf(30, seed=12)
    df = md.DataFrame(pdf, chunk_size=chunk_size)
    for key in ("k", ["s", "k"]):
        for asc in (True, False):
            r = df.groupby(key, dropna=False).cumcount(ascending=asc)
            assert r.data.index_key == df.data.index_key
            acc(r, pdf.groupby(key, dropna=False).cumcount(ascending=asc))
    acc(df.groupby("k").cumcount(), pdf.groupby("k").cumcount())


# ---- empty and filtered inputs -----------------------------------------------------------


def test_empty_frame(acc):
    pdf = make_pdf(20).iloc[:0]
    df = md.DataFrame(pdf, chunk_size=5)
    for method in METHODS:
        gb, pgb = df.groupby("k", method=method), pdf.groupby("k")
        acc(gb[["v", "w"]].agg(["sum", "mean"]), pgb[["v", "w"]].agg(["sum", "mean"]))
        acc(gb.size(), pgb.size())
        acc(gb["w"].nunique(), pgb["w"].nunique())


def _keep_high(c):
    return c[c["w"] > 20]


@pytest.mark.parametrize("method", METHODS)
def test_filtered_unknown_lengths(method, acc):
    pdf = make_pdf(50, seed=13)
    pdf.loc[12:35, "w"] = -1  # chunks 1 and 2 (of 12 rows) end up empty after the filter
    pexp = _keep_high(pdf)
    df = md.DataFrame(pdf, chunk_size=12).map_chunk(_keep_high)
    assert np.isnan(df.shape[0])
    for sort in (True, False):
        gb, pgb = df.groupby("s", sort=sort, method=method), pexp.groupby("s", sort=sort)
        acc(gb[["v", "w"]].agg(["sum", "var"]), pgb[["v", "w"]].agg(["sum", "var"]))
        acc(gb["w"].nunique(), pgb["w"].nunique())
    acc(df.groupby("k")["w"].cumcount(), pexp.groupby("k")["w"].cumcount())
    acc(df.groupby("k")["w"].transform("sum"), pexp.groupby("k")["w"].transform("sum"))
    acc(df.groupby("k")["w"].transform(lambda x: x.cummax()), pexp.groupby("k")["w"].transform(lambda x: x.cummax()))


def test_boolean_mask_filter():
    pdf = make_pdf(60, seed=14)
    df = md.DataFrame(pdf, chunk_size=9)
    sub = df[df["w"] > 0]
    psub = pdf[pdf["w"] > 0]
    assert_pandas(sub.groupby("k").agg({"v": "mean", "w": "sum"}), psub.groupby("k").agg({"v": "mean", "w": "sum"}))


# ---- errors ---------------------------------------------------------------------------------


def test_build_time_errors():
    pdf = make_pdf(20)
    df = md.DataFrame(pdf, chunk_size=6)
    with pytest.raises(KeyError, match="nope"):
        df.groupby("nope")
    with pytest.raises(KeyError, match="nope"):
        df.groupby(["k", "nope"])
    with pytest.raises(KeyError):
        df.groupby("k")["nope"]
    with pytest.raises(KeyError):
        df.groupby("k").agg({"nope": "sum"})
    with pytest.raises(AttributeError):
        df.groupby("k").agg("no_such_function")
    with pytest.raises(TypeError):
        df.groupby("k")["s"].mean()  # strings have no mean, as in pandas
    with pytest.raises(ValueError, match="method"):
        df.groupby("k", method="bogus")
    with pytest.raises(TypeError):
        df.groupby(None)
    other = md.DataFrame(pdf, chunk_size=7)
    with pytest.raises(ValueError, match="same index"):
        df.groupby(other["k"])


class BoomError(Exception):
    pass


def _boom_on_real_data(x):
    if len(x) > 2:  # the metadata stand-ins have 2 rows
        raise BoomError("user function failed")
    return x.sum()


def test_user_function_errors_surface():
    pdf = pd.DataFrame({"k": [1] * 10 + [2] * 10, "v": np.arange(20.0)})
    df = md.DataFrame(pdf, chunk_size=6)
    for t in (
        df.groupby("k").agg(_boom_on_real_data),
        df.groupby("k")["v"].apply(_boom_on_real_data),
        df.groupby("k")["v"].transform(_boom_on_real_data),
    ):
        with pytest.raises(BoomError, match="user function failed"):
            t.execute()

    def always(x):
        raise BoomError("always")

    with pytest.raises(BoomError, match="always"):  # already when inferring the metadata
        df.groupby("k").apply(always)
