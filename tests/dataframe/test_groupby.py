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


def check(*pairs, values_only=()):
    """``assert_pandas`` for many results at once: metadata checked before execution, then
    one execution and one gather for all (the machine is shared, round trips are slow).
    ``values_only``: indexes of pairs whose dtypes depend on the data (rows that pandas
    leaves out of every group come out missing: ints become floats), checked on the result."""
    for j, (t, expected) in enumerate(pairs):
        if j in values_only:
            continue
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
        self.values_only = set()

    def __call__(self, t, expected, values_only=False):
        if values_only:
            self.values_only.add(len(self.pairs))
        self.pairs.append((t, expected))

    def check(self):
        pairs, self.pairs = self.pairs, []
        values_only, self.values_only = self.values_only, set()
        if pairs:
            check(*pairs, values_only=values_only)


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


# ---- keys that are not columns --------------------------------------------------------------


def _index_frame(n=40, seed=20):
    pdf = make_pdf(n, seed=seed)
    pdf.index = pd.MultiIndex.from_arrays([np.arange(n) % 3, np.arange(n) * 2], names=["a", "b"])
    return pdf


@pytest.mark.parametrize("chunk_size", [1, 9])
def test_keys_levels_functions_mappings_arrays(chunk_size, acc):
    pdf = _index_frame()
    n = len(pdf)
    df = md.DataFrame(pdf, chunk_size=chunk_size)
    arr = np.arange(n) % 4
    mapping = {i: "even" if i % 4 == 0 else "odd" for i in range(0, 2 * n, 2)}
    aligned = pd.Series(np.arange(2 * n) % 3, index=pd.MultiIndex.from_arrays([np.arange(2 * n) % 3, np.arange(2 * n)]),
                        name="zz").iloc[::-1]  # a pandas Series key is aligned on the labels
    for sort in (True, False):
        acc(df.groupby(level=0, sort=sort)[["v", "w"]].sum(), pdf.groupby(level=0, sort=sort)[["v", "w"]].sum())
        acc(df.groupby(level="b", sort=sort).w.max(), pdf.groupby(level="b", sort=sort).w.max())
        acc(df.groupby(level=["a", 1], sort=sort).v.mean(), pdf.groupby(level=["a", 1], sort=sort).v.mean())
        acc(df.groupby("a", sort=sort).w.sum(), pdf.groupby("a", sort=sort).w.sum())  # a label naming a level
        acc(df.groupby(arr, sort=sort)[["v", "w"]].agg(["sum", "max"]), pdf.groupby(arr, sort=sort)[["v", "w"]].agg(["sum", "max"]))
        acc(df.groupby(lambda ix: ix[1] % 3, sort=sort).w.sum(), pdf.groupby(lambda ix: ix[1] % 3, sort=sort).w.sum())
        acc(df.groupby(["k", arr], sort=sort).w.nunique(), pdf.groupby(["k", arr], sort=sort).w.nunique())
        acc(df.groupby([arr, "s"], sort=sort, dropna=False).v.sum(), pdf.groupby([arr, "s"], sort=sort, dropna=False).v.sum())
    acc(df.groupby(pd.Index(arr, name="quarter")).w.sum(), pdf.groupby(pd.Index(arr, name="quarter")).w.sum())
    acc(df.groupby(list(arr)).w.sum(), pdf.groupby(list(arr)).w.sum())  # a list of values: one key per row
    acc(df.groupby(aligned).w.sum(), pdf.groupby(aligned).w.sum())
    acc(df.w.groupby(arr).cumsum(), pdf.w.groupby(arr).cumsum())
    acc(df.groupby(level=0, as_index=False)[["v", "w"]].sum(), pdf.groupby(level=0, as_index=False)[["v", "w"]].sum())
    acc(df.groupby(["k", arr], as_index=False).w.sum(), pdf.groupby(["k", arr], as_index=False).w.sum())

    flat = pdf.reset_index(drop=True)
    fdf = md.DataFrame(flat, chunk_size=chunk_size)
    acc(fdf.groupby(mapping).w.sum(), flat.groupby(mapping).w.sum())
    acc(fdf.groupby(lambda i: i % 3, as_index=False).w.sum(), flat.groupby(lambda i: i % 3, as_index=False).w.sum())
    acc(fdf.w.groupby(level=0).sum(), flat.w.groupby(level=0).sum())


def test_array_key_after_filter_and_errors(acc):
    pdf = make_pdf(40, seed=21)
    df = md.DataFrame(pdf, chunk_size=7)
    sub, psub = df[df.w > 0], pdf[pdf.w > 0]
    arr = np.arange(len(psub)) % 3
    acc(sub.groupby(arr).v.sum(), psub.groupby(arr).v.sum())  # row lengths learnt first
    acc(sub.groupby(["k", arr]).v.cumsum(), psub.groupby(["k", arr]).v.cumsum())
    acc.check()
    with pytest.raises(ValueError, match="same length"):
        df.groupby(np.arange(3))
    with pytest.raises(ValueError, match="same length"):
        sub.groupby(np.arange(len(psub) + 1)).v.sum().execute()
    with pytest.raises(KeyError):
        df.groupby(level="nope")
    with pytest.raises(TypeError):
        df.groupby("k", level=0)


# ---- Mars's arguments: method=, combine_size=, NamedAgg -------------------------------------


def test_method_argument_of_reductions(acc):
    rng = np.random.default_rng(22)
    pdf = pd.DataFrame({"k": rng.integers(0, 3, 300), "v": rng.normal(size=300)})
    df = md.DataFrame(pdf, chunk_size=40)
    pairs = []
    for method in ("tree", "shuffle"):
        for name in ("sum", "mean", "count", "size", "max", "var", "sem", "all"):
            t = getattr(df.groupby("k").v, name)(method=method)
            pairs.append((t, method))
            acc(t, getattr(pdf.groupby("k").v, name)())
        t = df.groupby("k").agg("sum", method)  # Mars's positional order: func, method
        pairs.append((t, method))
        acc(t, pdf.groupby("k").agg("sum"))
    t = df.groupby("k").v.agg(["sum", "std"], method="tree", combine_size=2)
    acc(t, pdf.groupby("k").v.agg(["sum", "std"]))
    acc.check()
    for t, method in pairs:
        assert chosen(t) == method
    with pytest.raises(ValueError, match="method"):
        df.groupby("k").v.sum(method="bogus")


def test_named_agg(acc):
    pdf = make_pdf(40, seed=23)
    df = md.DataFrame(pdf, chunk_size=11)
    for method in METHODS:
        gb, pgb = df.groupby("k", method=method), pdf.groupby("k")
        acc(gb.agg(total=md.NamedAgg(column="v", aggfunc="sum"), top=pd.NamedAgg("w", "max"), u=("s", "nunique")),
            pgb.agg(total=pd.NamedAgg(column="v", aggfunc="sum"), top=pd.NamedAgg("w", "max"), u=("s", "nunique")))


# ---- reductions added for Mars: all any sem skew kurt kurtosis ----------------------------


@pytest.mark.parametrize("method", METHODS)
def test_all_any_sem_skew_kurt(method, acc):
    pdf = make_pdf(60, seed=24)
    pdf["b"] = pdf.w > 0
    pdf.loc[pdf.index[::9], "k"] = 9  # a group of its own (small)
    df = md.DataFrame(pdf, chunk_size=13)
    for key in ("k", ["s", "c"]):
        for sort in (True, False):
            gb, pgb = df.groupby(key, sort=sort, dropna=False, method=method), pdf.groupby(key, sort=sort, dropna=False)
            for name in ("all", "any"):
                acc(getattr(gb[["v", "w", "b", "s"]], name)(), getattr(pgb[["v", "w", "b", "s"]], name)())
            for name in ("sem", "skew", "kurt"):
                acc(getattr(gb[["v", "w"]], name)(), getattr(pgb[["v", "w"]], name)())
            acc(gb.v.kurtosis(), pgb.v.kurt())
            acc(gb.w.sem(ddof=2), pgb.w.sem(ddof=2))
            acc(gb.v.skew(skipna=False), pgb.v.skew(skipna=False))
            acc(gb.agg({"v": ["sem", "skew"], "b": "all"}), pgb.agg({"v": ["sem", "skew"], "b": "all"}))
    acc(df.groupby("c", observed=False, method=method).v.agg(["all", "any", "sem"]),
        pdf.groupby("c", observed=False).v.agg(["all", "any", "sem"]))


# ---- scans: cumulative ops, fills, head ----------------------------------------------------


def make_scan_pdf(n=48, seed=25):
    rng = np.random.default_rng(seed)
    pdf = pd.DataFrame(
        {
            "k": rng.integers(0, 4, n).astype(float),
            "c": pd.Categorical(rng.choice(["lo", "hi"], n), categories=["lo", "mid", "hi"]),
            "v": np.where(rng.random(n) < 0.3, np.nan, rng.normal(size=n)),
            "i": rng.integers(-5, 9, n),
            "b": rng.random(n) < 0.5,
            "n": pd.array(np.where(rng.random(n) < 0.3, None, rng.integers(1, 4, n)), dtype="Int64"),
            "t": pd.date_range("2020", periods=n, tz="UTC").to_series().sample(frac=1.0, random_state=1).to_numpy(),
            "d": pd.to_timedelta(rng.integers(0, 5, n), unit="h"),
            "s": pd.array(rng.choice(["x", "y", None], n), dtype="str"),
        },
        index=pd.Index(np.arange(n) * 5 + 3, name="ix"),
    )
    pdf.loc[pdf.index[::7], ["t", "d"]] = pd.NaT
    return pdf


@pytest.mark.parametrize("chunk_size", [1, 5, 17, 100])
def test_cumulative(chunk_size, acc):
    pdf = make_scan_pdf()
    pdf.loc[pdf.index[[4, 30]], "k"] = np.nan
    df = md.DataFrame(pdf, chunk_size=chunk_size)
    for dropna in (True, False):
        gb, pgb = df.groupby("k", dropna=dropna), pdf.groupby("k", dropna=dropna)
        # with rows outside every group (missing keys, dropna=True) the dtypes depend on the
        # data (values_only); bools then become floats or objects depending on pandas' path
        num = ["v", "i", "n"] if dropna else ["v", "i", "b", "n"]
        for name in ("cumsum", "cumprod", "cummax", "cummin"):
            r = getattr(gb[num], name)()
            assert r.data.index_key == df.data.index_key
            acc(r, getattr(pgb[num], name)(), values_only=dropna)
        acc(gb.v.cumsum(skipna=False), pgb.v.cumsum(skipna=False))
        acc(gb[["v", "i"]].cummax(skipna=False), pgb[["v", "i"]].cummax(skipna=False), values_only=dropna)
    # datetimes and timedeltas: pandas' cummax/cummin/cumsum of them take NaT as a number
    # when some key is missing (a pandas bug, not reproduced); with dropna=False every row
    # is in a group
    gb, pgb = df.groupby("k", dropna=False), pdf.groupby("k", dropna=False)
    acc(gb.d.cumsum(), pgb.d.cumsum())
    acc(gb[["t", "d"]].cummax(), pgb[["t", "d"]].cummax())
    acc(gb.t.cummin(), pgb.t.cummin())
    for key in (["c", "k"], "c"):
        gb, pgb = df.groupby(key, dropna=False), pdf.groupby(key, dropna=False)
        acc(gb.cumsum(numeric_only=True), pgb.cumsum(numeric_only=True))
        acc(gb.i.cummin(axis=0), pgb.i.cummin())
    acc(df.i.groupby(df.c).cumprod(), pdf.i.groupby(pdf.c).cumprod())
    acc(df.groupby("b").i.cumsum(), pdf.groupby("b").i.cumsum())
    acc.check()
    with pytest.raises(TypeError):
        df.groupby("k").cumsum()  # strings have no cumsum, as in pandas
    with pytest.raises(ValueError):
        df.groupby("k").v.cumsum(axis=1)


def _keep_some(c):
    return c[c["i"] > 0]


def test_scans_unknown_lengths_and_empty_chunks(acc):
    pdf = make_scan_pdf(60, seed=26)
    pdf.loc[pdf.index[12:30], "i"] = -1  # whole chunks filtered away
    pexp = _keep_some(pdf)
    df = md.DataFrame(pdf, chunk_size=6).map_chunk(_keep_some)
    assert np.isnan(df.shape[0])
    gb, pgb = df.groupby("k"), pexp.groupby("k")
    acc(gb[["v", "i"]].cumsum(), pgb[["v", "i"]].cumsum())
    acc(gb.v.cummax(), pgb.v.cummax())
    acc(gb.ffill(), pgb.ffill())
    acc(gb.v.bfill(limit=1), pgb.v.bfill(limit=1))
    acc(gb.head(2), pgb.head(2))
    acc(gb.head(-3), pgb.head(-3))
    empty, pempty = md.DataFrame(pdf.iloc[:0], chunk_size=5), pdf.iloc[:0]
    acc(empty.groupby("k")[["v", "i"]].cumsum(), pempty.groupby("k")[["v", "i"]].cumsum())
    acc(empty.groupby("k").ffill(), pempty.groupby("k").ffill())
    acc(empty.groupby("k").head(1), pempty.groupby("k").head(1))


@pytest.mark.parametrize("chunk_size", [1, 4, 13])
def test_ffill_bfill_fillna(chunk_size, acc):
    pdf = make_scan_pdf(40, seed=27)
    pdf.loc[pdf.index[::3], ["s", "n", "i"]] = None, pd.NA, None
    df = md.DataFrame(pdf, chunk_size=chunk_size)
    for dropna in (True, False):
        pdf.loc[pdf.index[6], "k"] = np.nan
        df = md.DataFrame(pdf, chunk_size=chunk_size)
        gb, pgb = df.groupby("k", dropna=dropna), pdf.groupby("k", dropna=dropna)
        for limit in (None, 1, 2):  # (with a missing key, the bool column's dtype depends on the data)
            acc(gb.ffill(limit=limit), pgb.ffill(limit=limit), values_only=dropna)
            acc(gb.bfill(limit=limit), pgb.bfill(limit=limit), values_only=dropna)
            acc(gb.v.ffill(limit=limit), pgb.v.ffill(limit=limit))
            acc(gb[["v", "s"]].backfill(limit=limit), pgb[["v", "s"]].bfill(limit=limit))
        acc(gb.fillna(method="ffill"), pgb.ffill(), values_only=dropna)
        acc(gb.fillna(method="pad", limit=1), pgb.ffill(limit=1), values_only=dropna)
        acc(gb.v.fillna(method="backfill"), pgb.v.bfill())
        # fillna(value): pandas 3 dropped GroupBy.fillna; as its transforms do, rows whose key is
        # missing come out missing
        acc(gb[["v", "i"]].fillna(0), pgb[["v", "i"]].transform(lambda x: x.fillna(0)))
        acc(gb.v.fillna(-1.0), pgb.v.transform(lambda x: x.fillna(-1.0)))
        for limit in (1, 2):  # each group's first `limit` missing values, across chunks
            acc(gb[["v", "i"]].fillna(0, limit=limit), pgb[["v", "i"]].transform(lambda x, lim=limit: x.fillna(0, limit=lim)))
    acc(df.groupby(["c", "b"]).v.ffill(), pdf.groupby(["c", "b"]).v.ffill())
    acc.check()
    with pytest.raises(ValueError, match="Limit must be greater than 0"):
        df.groupby("k").ffill(limit=0)
    with pytest.raises(ValueError):
        df.groupby("k").fillna()
    with pytest.raises(ValueError):
        df.groupby("k").fillna(method="nearest")


@pytest.mark.parametrize("chunk_size", [1, 6, 100])
def test_head(chunk_size, acc):
    pdf = make_scan_pdf(40, seed=28)
    pdf.loc[pdf.index[3], "k"] = np.nan
    df = md.DataFrame(pdf, chunk_size=chunk_size)
    for dropna in (True, False):
        gb, pgb = df.groupby("k", dropna=dropna), pdf.groupby("k", dropna=dropna)
        for n in (0, 1, 3, -2, 100, -100):
            acc(gb.head(n), pgb.head(n))
        acc(gb[["v", "t"]].head(2), pgb[["v", "t"]].head(2))
        acc(gb.v.head(), pgb.v.head())
    acc(df.groupby(["c", "b"], as_index=False).head(1), pdf.groupby(["c", "b"], as_index=False).head(1))
    acc(df.v.groupby(df.i > 0).head(-1), pdf.v.groupby(pdf.i > 0).head(-1))


# ---- sample ----------------------------------------------------------------------------


def test_sample():
    pdf = make_pdf(80, seed=29)
    pdf.loc[[3, 50], "k"] = 99  # a group of two rows
    pdf["k"] = pdf["k"].astype(float)
    pdf.loc[7, "k"] = np.nan
    df = md.DataFrame(pdf, chunk_size=9)
    sizes = pdf.groupby("k").size()

    def fetch(t):
        return t.execute().fetch()

    for sort in (True, False):
        gb, pgb = df.groupby("k", sort=sort), pdf.groupby("k", sort=sort)
        cases = [
            (dict(n=1), sizes.clip(upper=1)),
            (dict(frac=0.5), (sizes * 0.5).round().astype(int)),
            (dict(n=5, replace=True), sizes * 0 + 5),
            (dict(n=3), sizes.clip(upper=3)),  # Mars's errors="ignore": a smaller group is taken whole
            (dict(n=1, weights=np.arange(80) + 1.0), sizes.clip(upper=1)),
        ]
        for kw, expected_sizes in cases:
            got = fetch(gb.sample(random_state=5, **kw))
            assert list(got.columns) == list(pdf.columns) and got.dtypes.equals(pdf.dtypes)
            again = fetch(gb.sample(random_state=5, **kw))
            pd.testing.assert_frame_equal(got, again)  # reproducible
            pd.testing.assert_frame_equal(got, pdf.loc[got.index])  # rows of the frame, unchanged
            assert got.groupby("k", sort=sort).size().to_dict() == expected_sizes.to_dict(), kw
            # groups come out together, in pandas' group order
            order = list(dict.fromkeys(got["k"]))
            assert order == list(pgb.size().index), (order, list(pgb.size().index))
        s = fetch(df.groupby("k", sort=sort).v.sample(n=2, random_state=1))
        assert s.name == "v" and set(s.index) <= set(pdf.index)
    # zero weight rows are never drawn
    w = np.where(np.arange(80) % 2 == 0, 1.0, 0.0)
    got = fetch(df.groupby("s", dropna=False).sample(n=2, weights=w, random_state=0))
    assert (got.index % 2 == 0).all()
    with pytest.raises(ValueError):
        df.groupby("k").sample(n=3, errors="raise").execute()
    with pytest.raises(ValueError):
        df.groupby("k").sample(n=1, frac=0.5)


# ---- fixed bugs ------------------------------------------------------------------------------


def test_transform_keeps_missing_of_rows_without_group(acc):
    """A bool column transformed where some keys are missing: pandas gives those rows NaN
    (object dtype); the chunks' results were cast back to bool, turning NaN into True."""
    pdf = pd.DataFrame({"k": [1.0, np.nan, 2.0, 1.0, np.nan, 2.0], "b": [True, False, False, True, False, True]})
    df = md.DataFrame(pdf, chunk_size=2)
    got = df.groupby("k")["b"].transform(lambda x: x).execute().fetch()
    pd.testing.assert_series_equal(got, pdf.groupby("k")["b"].transform(lambda x: x), check_dtype=False)
    got = df.groupby("k")[["b"]].cummax().execute().fetch()
    pd.testing.assert_frame_equal(got, pdf.groupby("k")[["b"]].cummax(), check_dtype=False)


@pytest.mark.parametrize("how", ["cumsum", "cumprod", "cummax", "cummin"])
def test_scan_state_by_aggregation_is_the_last_row_of_the_scan(how):
    """The state a chunk hands on for cum<op> of numeric columns comes from pandas' sum/prod/
    max/min (one pass): bit for bit the last valid row of pandas' cum<op> (which it was
    computed from before), with nulls, all-null groups, null keys, ints and wide magnitudes."""
    from mars_dask.dataframe.groupby import scan

    rng = np.random.default_rng(5)
    n = 5000
    v = rng.normal(size=n) * 10.0 ** rng.integers(-6, 12, n)
    v[rng.random(n) < 0.1] = np.nan
    values = pd.DataFrame({"v": v, "p": 1 + rng.normal(size=n) * 1e-3, "i": rng.integers(-3, 4, n)})
    values.loc[values.index[:40], "p"] = np.nan
    keys = pd.Series(rng.integers(0, 40, n).astype(float))
    keys[rng.random(n) < 0.02] = np.nan
    keys[:40] = 99.0  # a group whose "p" is all null
    for dropna in (True, False):
        ks = [keys]
        got_v, got_k = scan._acc_state(values, ks, dropna, how, {})
        g = scan._group(values, ks, dropna)
        exp = getattr(g, how)().groupby([pd.Index(keys)], sort=False, dropna=dropna).last()
        exp_v, exp_k = scan._as_state(exp)
        # (the scan of an int column is float where null keys are dropped: its rows are null)
        pd.testing.assert_frame_equal(got_v, exp_v, check_exact=True, check_dtype=False)
        pd.testing.assert_frame_equal(got_k, exp_k, check_exact=True)
        assert got_v["i"].dtype == np.int64
