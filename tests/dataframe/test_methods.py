"""Column-work methods vs pandas: setitem/assign, astype, missing values, where/mask,
clip/abs/round, map/apply, rename/drop, reset_index/set_index, query/eval, isin/between."""

import numpy as np
import pandas as pd
import pytest

import mars_dask.dataframe as md
import mars_dask.tensor as mt

from .helpers import assert_pandas


def make_frame(n=17):
    rng = np.random.default_rng(42)
    return pd.DataFrame({
        "i": rng.integers(0, 10, n),
        "f": np.where(rng.random(n) < 0.3, np.nan, rng.normal(size=n)),
        "s": pd.array(np.where(rng.random(n) < 0.2, None, rng.choice(["ab", "Cd", "ef"], n)), dtype="str"),
        "k": pd.Categorical(rng.choice(["x", "y", "z"], n)),
        "d": pd.to_datetime("2021-01-01") + pd.to_timedelta(rng.integers(0, 100, n), unit="h"),
    }, index=pd.Index(rng.permutation(n) * 2, name="idx"))


@pytest.fixture(params=[4])
def cs(request):
    return request.param


@pytest.fixture
def df():
    return make_frame()


@pytest.mark.parametrize("cs", [4, 7])
def test_setitem_and_assign(client, df, cs):
    m = md.DataFrame(df, chunk_size=cs)
    e = df.copy()
    m["c"] = 1
    e["c"] = 1
    m["g"] = m["f"] * 2
    e["g"] = e["f"] * 2
    m["h"] = list(range(len(df)))
    e["h"] = list(range(len(df)))
    m["t"] = mt.arange(len(df), chunk_size=5) * 3
    e["t"] = np.arange(len(df)) * 3
    other = md.DataFrame(df, chunk_size=cs + 2)  # same labels, other partitioning
    m["j"] = other["i"] + 1
    e["j"] = e["i"] + 1
    part = df["f"].iloc[::3] * 10  # different labels: reindexed like pandas
    m["p"] = md.Series(part, chunk_size=2)
    e["p"] = part
    m["q"] = part
    e["q"] = part
    m[["u", "v"]] = np.ones((len(df), 2))
    e[["u", "v"]] = np.ones((len(df), 2))
    assert_pandas(m, e)
    got = md.DataFrame(df, chunk_size=cs).assign(z=lambda x: x["i"] + x["f"], y=3)
    assert_pandas(got, df.assign(z=lambda x: x["i"] + x["f"], y=3))
    with pytest.raises(ValueError, match="Length of values"):
        m["bad"] = [1, 2, 3]
    f = md.DataFrame(df, chunk_size=cs)
    f = f[f["i"] > 4]
    f["w"] = f["i"] * 2
    ef = df[df["i"] > 4].copy()
    ef["w"] = ef["i"] * 2
    assert_pandas(f, ef)


def test_astype(client, df, cs):
    m = md.DataFrame(df, chunk_size=cs)
    assert_pandas(m.astype({"i": "float64", "f": "float32"}), df.astype({"i": "float64", "f": "float32"}))
    assert_pandas(m["i"].astype(str), df["i"].astype(str))
    cat = pd.CategoricalDtype(["ab", "Cd", "ef"])
    assert_pandas(m["s"].astype(cat), df["s"].astype(cat))
    with pytest.raises(KeyError):
        m.astype({"nope": int})
    with pytest.raises(NotImplementedError):
        m["s"].astype("category")
    with pytest.raises(ValueError):
        m["s"].astype("int64").execute()  # pandas' own error at execution


@pytest.mark.parametrize("cs", [4, 7])
def test_missing_values(client, df, cs):
    m = md.DataFrame(df, chunk_size=cs)
    for name in ("isna", "isnull", "notna", "notnull"):
        assert_pandas(getattr(m, name)(), getattr(df, name)())
    assert_pandas(m.fillna({"f": 0.5, "s": "?"}), df.fillna({"f": 0.5, "s": "?"}))
    assert_pandas(m["f"].fillna(-1), df["f"].fillna(-1))
    assert_pandas(m.ffill(), df.ffill())
    assert_pandas(m.bfill(), df.bfill())
    assert_pandas(m["f"].fillna(method="ffill"), df["f"].ffill())
    assert_pandas(m["f"].fillna(method="bfill"), df["f"].bfill())
    # leading/trailing NaNs spanning several chunks
    s = pd.Series([np.nan, np.nan, np.nan, 1.0, np.nan, np.nan, np.nan, np.nan, 2.0, np.nan, np.nan])
    ms = md.Series(s, chunk_size=2)
    assert_pandas(ms.ffill(), s.ffill())
    assert_pandas(ms.bfill(), s.bfill())
    assert_pandas(ms[ms.isna() | (ms > 1)].ffill(), s[s.isna() | (s > 1)].ffill())
    assert_pandas(m.dropna(), df.dropna())
    assert_pandas(m.dropna(subset=["f"]), df.dropna(subset=["f"]))
    assert_pandas(m.dropna(how="all"), df.dropna(how="all"))
    assert_pandas(m.dropna(thresh=5), df.dropna(thresh=5))
    assert_pandas(m.dropna(ignore_index=True), df.dropna(ignore_index=True))
    with pytest.raises(KeyError):
        m.dropna(subset=["zz"])
    with pytest.raises(ValueError):
        m.fillna()


def test_where_mask_clip_abs_round(client, df, cs):
    m = md.DataFrame(df, chunk_size=cs)
    num, en = m[["i", "f"]], df[["i", "f"]]
    assert_pandas(num.where(num > 0), en.where(en > 0))
    assert_pandas(num.where(lambda x: x > 0, -1), en.where(lambda x: x > 0, -1))
    assert_pandas(num.mask(num["i"] > 3, 0), en.mask(en["i"] > 3, 0))
    assert_pandas(m["f"].where(m["i"] > 3, m["i"]), df["f"].where(df["i"] > 3, df["i"]))
    assert_pandas(num.clip(-0.5, 0.5), en.clip(-0.5, 0.5))
    assert_pandas(m["i"].clip(lower=3), df["i"].clip(lower=3))
    assert_pandas(num.abs(), en.abs())
    assert_pandas(num.round(2), en.round(2))
    assert_pandas(m["f"].round(1), df["f"].round(1))


def test_map_apply(client, df, cs):
    m = md.DataFrame(df, chunk_size=cs)
    assert_pandas(m["i"].map({1: "one", 2: "two"}), df["i"].map({1: "one", 2: "two"}))
    assert_pandas(m["i"].map(lambda x: x * 2.5), df["i"].map(lambda x: x * 2.5))
    assert_pandas(m["s"].map(str.upper, na_action="ignore"), df["s"].map(str.upper, na_action="ignore"))
    lookup = pd.Series([10.0, 20.0, 30.0], index=[1, 2, 3])
    assert_pandas(m["i"].map(lookup), df["i"].map(lookup))
    assert_pandas(m["i"].map(md.Series(lookup, chunk_size=2)), df["i"].map(lookup))
    assert_pandas(m["f"].apply(lambda x: x + 1), df["f"].apply(lambda x: x + 1))
    assert_pandas(m.apply(lambda r: r["i"] * 2 + 1, axis=1), df.apply(lambda r: r["i"] * 2 + 1, axis=1))
    num, en = m[["i", "f"]], df[["i", "f"]]
    assert_pandas(num.apply(lambda c: c - c.mean()), en.apply(lambda c: c - c.mean()))
    assert_pandas(num.apply(lambda r: r * 2, axis=1), en.apply(lambda r: r * 2, axis=1))
    assert_pandas(num.transform(lambda x: x + 1), en.transform(lambda x: x + 1))
    assert_pandas(m.copy(), df.copy())
    assert_pandas(m["s"].replace("ab", "AB"), df["s"].replace("ab", "AB"))


def _boom(x):
    if x > 5:
        raise ZeroDivisionError(f"boom at {x}")
    return x


def _always(x):
    raise KeyError("always fails")


def test_user_function_errors_surface(client, df):
    m = md.DataFrame(df, chunk_size=5)
    with pytest.raises(ZeroDivisionError, match="boom at"):
        m["i"].apply(_boom).execute()
    with pytest.raises(ZeroDivisionError, match="boom at"):
        m["i"].map(_boom).execute()
    with pytest.raises(KeyError, match="always fails"):
        m.apply(_always, axis=1).execute()
    with pytest.raises(ZeroDivisionError, match="boom at"):
        m.apply(lambda r: _boom(r["i"]), axis=1).execute()


def test_map_chunk(client, df, cs):
    m = md.DataFrame(df, chunk_size=cs)
    got = m.map_chunk(lambda c: c[["i"]] * 2, preserves_index=True)
    assert_pandas(got, df[["i"]] * 2)
    got = m.map_chunk(lambda c: c[c["i"] > 5])
    assert_pandas(got, df[df["i"] > 5])


def test_rename_drop(client, df, cs):
    m = md.DataFrame(df, chunk_size=cs)
    assert_pandas(m.rename(columns={"i": "I", "zz": "Z"}), df.rename(columns={"i": "I", "zz": "Z"}))
    assert_pandas(m.rename(columns=str.upper), df.rename(columns=str.upper))
    assert_pandas(m.rename(index=lambda x: x + 1), df.rename(index=lambda x: x + 1))
    assert_pandas(m["i"].rename("new"), df["i"].rename("new"))
    assert_pandas(m.drop(columns=["s", "k"]), df.drop(columns=["s", "k"]))
    assert_pandas(m.drop("f", axis=1), df.drop("f", axis=1))
    labels = list(df.index[:3])
    assert_pandas(m.drop(labels), df.drop(labels))
    assert_pandas(m.drop(index=[999], errors="ignore"), df.drop(index=[999], errors="ignore"))
    with pytest.raises(KeyError):
        m.drop(columns=["nope"])
    with pytest.raises(KeyError, match="not found in axis"):
        m.drop(index=[999]).execute()
    with pytest.raises(KeyError):
        m.rename(columns={"zz": "a"}, errors="raise")


@pytest.mark.parametrize("cs", [4, 7])
def test_reset_set_index(client, df, cs):
    m = md.DataFrame(df, chunk_size=cs)
    assert_pandas(m.reset_index(), df.reset_index())
    assert_pandas(m.reset_index(drop=True), df.reset_index(drop=True))
    f = m[m["i"] > 6]  # unknown lengths, some chunks empty
    ef = df[df["i"] > 6]
    r = f.reset_index(drop=True)
    assert_pandas(r, ef.reset_index(drop=True))
    assert_pandas(r + r.reset_index(drop=True)[["i"]], ef.reset_index(drop=True) + ef.reset_index(drop=True)[["i"]])
    assert_pandas(m["f"].reset_index(name="val"), df["f"].reset_index(name="val"))
    assert_pandas(m["f"].reset_index(drop=True), df["f"].reset_index(drop=True))
    assert_pandas(m.set_index("s"), df.set_index("s"))
    assert_pandas(m.set_index(["k", "i"], drop=False), df.set_index(["k", "i"], drop=False))
    assert_pandas(m.set_index("i", append=True), df.set_index("i", append=True))
    assert_pandas(m.set_index(m["d"]), df.set_index(df["d"]))
    with pytest.raises(KeyError):
        m.set_index("nope")


def test_query_eval(client, df, cs):
    m = md.DataFrame(df, chunk_size=cs)
    lim = 4  # noqa: F841 - used by the query string via @lim
    names = ["ab", "ef"]  # noqa: F841 - used by the query string via @names
    assert_pandas(m.query("i > @lim and f < 1"), df.query("i > @lim and f < 1"))
    assert_pandas(m.query("s in @names"), df.query("s in @names"))
    assert_pandas(m.query("idx > 10"), df.query("idx > 10"))
    assert_pandas(m.eval("i * 2 + f"), df.eval("i * 2 + f"))
    assert_pandas(m.eval("z = i + @lim"), df.eval("z = i + @lim"))
    assert_pandas(m.eval("i > @lim"), df.eval("i > @lim"))

    def inner():
        lim = 8  # noqa: F841 - resolved through the caller's frame
        return m.query("i >= @lim"), df.query("i >= @lim")

    got, exp = inner()
    assert_pandas(got, exp)
    with pytest.raises(Exception) as info:
        df.query("i > @undefined_name")
    with pytest.raises(type(info.value)):
        m.query("i > @undefined_name")
    with pytest.raises(Exception):
        m.query("nope > 1")


def test_isin_between(client, df, cs):
    m = md.DataFrame(df, chunk_size=cs)
    assert_pandas(m["i"].isin([1, 3, 5]), df["i"].isin([1, 3, 5]))
    assert_pandas(m["s"].isin({"ab"}), df["s"].isin({"ab"}))
    vals = pd.Series([2, 4, 6])
    assert_pandas(m["i"].isin(vals), df["i"].isin(vals))
    assert_pandas(m["i"].isin(md.Series(vals, chunk_size=2)), df["i"].isin(vals))
    assert_pandas(m.isin({"i": [1, 2], "s": ["ef"]}), df.isin({"i": [1, 2], "s": ["ef"]}))
    assert_pandas(m["i"].between(2, 6), df["i"].between(2, 6))
    assert_pandas(m["f"].between(-0.5, 0.5, inclusive="neither"), df["f"].between(-0.5, 0.5, inclusive="neither"))
    assert_pandas(m["d"].between("2021-01-02", "2021-01-03"), df["d"].between("2021-01-02", "2021-01-03"))
    with pytest.raises(TypeError):
        m["i"].isin(3)
    with pytest.raises(ValueError):
        m["i"].between(1, 2, inclusive="bad")


def test_empty_frame(client):
    e = make_frame().iloc[:0]
    m = md.DataFrame(e, chunk_size=3)
    assert_pandas(m.fillna({"f": 0}), e.fillna({"f": 0}))
    assert_pandas(m.ffill(), e.ffill())
    assert_pandas(m.dropna(), e.dropna())
    assert_pandas(m.reset_index(), e.reset_index())
    assert_pandas(m.query("i > 1"), e.query("i > 1"))
    assert_pandas(m["i"].isin([1]), e["i"].isin([1]))


# ---- issue 18: inplace, where/mask axis, tileable arguments, meta inference, map_chunk --------


@pytest.mark.parametrize("cs", [1, 5])
def test_inplace_methods(client, df, cs):
    """``inplace=True`` replaces the handle's data and returns None (Mars)."""
    num = df[["i", "f"]]
    cases = [
        ("fillna", (0.5,), {}), ("dropna", (), {}), ("replace", (3, 30), {}),
        ("rename", (), {"columns": {"i": "I"}}), ("drop", (), {"columns": ["f"]}),
        ("set_index", ("i",), {}), ("reset_index", (), {}), ("where", (num > 0, -1), {}),
        ("mask", (num > 0, -1), {}), ("clip", (0, 5), {}), ("sort_values", ("f",), {}),
        ("sort_index", (), {}), ("query", ("i > 4",), {}), ("eval", ("g = i * 2",), {}),
        ("ffill", (), {}), ("bfill", (), {}),
    ]
    for name, args, kw in cases:
        m = md.DataFrame(num, chunk_size=cs)
        margs = tuple(md.DataFrame(a, chunk_size=cs) if isinstance(a, pd.DataFrame) else a for a in args)
        e = getattr(num, name)(*args, **kw)  # pandas 3.1 deprecates inplace=: same result
        assert getattr(m, name)(*margs, inplace=True, **kw) is None, name
        assert_pandas(m, e)
    s = md.Series(df["f"], chunk_size=cs)
    e = df["f"].copy()
    assert s.fillna(0, inplace=True) is None
    e.fillna(0, inplace=True)
    assert_pandas(s, e)
    with pytest.raises(TypeError, match="Cannot reset_index inplace on a Series"):
        s.reset_index(inplace=True)


@pytest.mark.parametrize("cs", [1, 4])
def test_where_mask_axis_with_series_other(client, df, cs):
    num = df[["i", "f"]]
    m = md.DataFrame(num, chunk_size=cs)
    for name in ("where", "mask"):
        got = getattr(m, name)(m > 3, m["i"], axis=0)
        assert_pandas(got, getattr(num, name)(num > 3, num["i"], axis=0))
        got = getattr(m, name)(m > 3, df["i"], axis="index")
        assert_pandas(got, getattr(num, name)(num > 3, df["i"], axis="index"))
    f = m[m["i"] > 4]  # unknown lengths
    fe = num[num["i"] > 4]
    assert_pandas(f.mask(f > 5, f["f"], axis=0), fe.mask(fe > 5, fe["f"], axis=0))


def test_astype_meta_does_not_invent_errors(client):
    """pandas raises at execution with its own message; meta inference used to fail at build
    time with "cannot convert float NaN to integer"."""
    p = pd.DataFrame({"s": pd.Series(["1", "2", "x"], dtype=object), "t": ["4", "5", "6"]})
    m = md.DataFrame(p, chunk_size=2)
    got = m.astype({"s": "int64"})  # must not raise here
    assert got.dtypes["s"] == np.dtype("int64")
    with pytest.raises(ValueError, match="invalid literal for int"):
        got.execute()
    assert_pandas(m.astype({"t": "int64"}), p.astype({"t": "int64"}))
    with pytest.raises(KeyError):
        m.astype({"nope": "int64"})


@pytest.mark.parametrize("cs", [1, 3])
def test_tileable_arguments(client, df, cs):
    """Tileables as arguments are operand inputs (never pickled into the graph)."""
    m = md.DataFrame(df, chunk_size=cs)
    labels = [int(x) for x in df.index[[0, 5, 6]]]
    assert_pandas(m.drop(md.Series(labels, chunk_size=2)), df.drop(labels))
    assert_pandas(m.drop(index=md.Index(pd.Index(labels), chunk_size=2)), df.drop(index=labels))
    assert_pandas(m.drop(mt.tensor(labels, chunk_size=2)), df.drop(labels))
    with pytest.raises(KeyError):
        m.drop(md.Series([-12345])).execute()
    s = m["i"]
    assert_pandas(s.isin(md.Series([1, 3, 5], chunk_size=2)), df["i"].isin([1, 3, 5]))
    assert_pandas(s.isin(mt.tensor([1, 3, 5], chunk_size=2)), df["i"].isin([1, 3, 5]))
    num = df[["i", "f"]]
    mn = md.DataFrame(num, chunk_size=cs)
    assert_pandas(mn.isin(md.Series(num["i"], chunk_size=4)), num.isin(num["i"]))
    f = m["f"]
    assert_pandas(f.fillna(f.sum()), df["f"].fillna(df["f"].sum()))
    assert_pandas(f.fillna(mt.tensor(2.5)), df["f"].fillna(2.5))
    assert_pandas(f.fillna(md.Series(df["i"] * 1.0, chunk_size=2)), df["f"].fillna(df["i"] * 1.0))
    assert_pandas(f.where(f > 0, f.sum()), df["f"].where(df["f"] > 0, df["f"].sum()))
    assert_pandas(f.where(f > 0, m["i"]), df["f"].where(df["f"] > 0, df["i"]))
    assert_pandas(f.clip(mt.tensor(-0.5), f.max()), df["f"].clip(-0.5, df["f"].max()))


@pytest.mark.parametrize("cs", [1, 4])
def test_len_of_unknown_length_executes(client, df, cs):
    """``len()`` runs what it needs (Mars) instead of raising, and records the length."""
    m = md.DataFrame(df, chunk_size=cs)
    f = m[m["i"] > 4]
    assert len(f) == int((df["i"] > 4).sum())
    assert f.shape[0] == len(f)
    assert_pandas(f, df[df["i"] > 4])
    assert len(m["f"].dropna()) == int(df["f"].notna().sum())
    assert len(m[m["i"] > 100]) == 0


def test_map_chunk_mars_signature(client, df):
    m = md.DataFrame(df, chunk_size=4)
    got = m.map_chunk(lambda c: c["i"] + 1, output_type="series", dtypes=pd.Series([np.dtype("int64")], name="i"))
    assert_pandas(got, df["i"] + 1)
    got = m.map_chunk(lambda c, k: c[["i"]] * k, args=(3,), output_type="dataframe",
                      dtypes=pd.Series([np.dtype("int64")], index=["i"]))
    assert_pandas(got, df[["i"]] * 3)
    got = m.map_chunk(lambda c, add=0: c[["i"]] + add, add=2)
    assert_pandas(got, df[["i"]] + 2)
    got = m.map_chunk(lambda c, chunk_index: c[["i"]].assign(ci=chunk_index[0]), with_chunk_index=True)
    assert_pandas(got, df[["i"]].assign(ci=np.arange(len(df)) // 4))
    empty = m[m["i"] > 100]  # empty chunks: func is not called (Mars)
    got = empty.map_chunk(lambda c: c.iloc[[0]], output_type="dataframe", dtypes=df.dtypes)
    assert_pandas(got, df.iloc[:0])
    with pytest.raises(TypeError, match="Cannot determine `output_type`"):
        m.map_chunk(lambda c: c.no_such_attribute)
