"""pivot_table / crosstab vs pandas (exact)."""

import numpy as np
import pandas as pd
import pytest

import mars_dask.dataframe as md

from .helpers import assert_pandas, assert_pandas_all


@pytest.fixture(scope="module")
def df():
    rng = np.random.default_rng(7)
    n = 61
    f = pd.DataFrame({
        "a": pd.Series(rng.choice(["x", "y", "z", None], n), dtype="str"),
        "b": rng.integers(0, 3, n),
        "c": pd.Categorical(rng.choice(["lo", "hi"], n), categories=["lo", "hi", "unused"]),
        "d": pd.Series(pd.date_range("2024-01-01", periods=3)).take(rng.integers(0, 3, n)).to_numpy(),
        "v": rng.normal(size=n),
        "w": rng.integers(0, 50, n),
    })
    f.loc[[3, 8, 20], "v"] = np.nan
    return f


@pytest.mark.parametrize("aggfunc", ["mean", "sum", "count", "min", "max"])
def test_pivot_table(client, df, aggfunc):
    m = md.DataFrame(df, chunk_size=9)
    for kw in (
        dict(values="v", index="a", columns="b"),
        dict(values=["v", "w"], index=["a", "d"], columns="c"),
        dict(values="w", index="c", columns=["b", "a"], fill_value=0),
    ):
        assert_pandas(md.pivot_table(m, aggfunc=aggfunc, **kw), pd.pivot_table(df, aggfunc=aggfunc, **kw))
    assert_pandas(m.pivot_table(values="v", index="b", aggfunc=aggfunc, dropna=False),
                  df.pivot_table(values="v", index="b", aggfunc=aggfunc, dropna=False))


def test_pivot_table_filtered_and_default_values(client, df):
    m = md.DataFrame(df, chunk_size=7)
    f = m[m["w"] > 40]  # unknown lengths, some chunks empty
    pf = df[df["w"] > 40]
    assert_pandas(f.pivot_table(values="v", index="a", columns="b", aggfunc="sum"),
                  pf.pivot_table(values="v", index="a", columns="b", aggfunc="sum"))
    num = df[["b", "v", "w"]]
    assert_pandas(md.DataFrame(num, chunk_size=10).pivot_table(index="b"), num.pivot_table(index="b"))


def test_crosstab(client, df):
    m = md.DataFrame(df, chunk_size=8)
    assert_pandas(md.crosstab(m["a"], m["b"]), pd.crosstab(df["a"], df["b"]))
    assert_pandas(md.crosstab(m["c"], [m["b"], m["a"]]), pd.crosstab(df["c"], [df["b"], df["a"]]))
    for norm in (True, "index", "columns"):
        assert_pandas(md.crosstab(m["a"], m["c"], normalize=norm), pd.crosstab(df["a"], df["c"], normalize=norm))
    assert_pandas(md.crosstab(m["a"], m["b"], values=m["v"], aggfunc="mean", rownames=["R"], colnames=["C"]),
                  pd.crosstab(df["a"], df["b"], values=df["v"], aggfunc="mean", rownames=["R"], colnames=["C"]))


def test_reshape_bad_inputs(df):
    m = md.DataFrame(df, chunk_size=8)
    with pytest.raises(KeyError, match="nope"):
        md.pivot_table(m, values="v", index="nope")
    with pytest.raises(KeyError, match="zz"):
        md.pivot_table(m, values="zz", index="a")
    with pytest.raises(TypeError):
        md.pivot_table(m, values="a", index="b", aggfunc="mean")  # mean of strings
    with pytest.raises(NotImplementedError):
        md.pivot_table(m, values="v", index="a", margins=True)
    with pytest.raises(ValueError, match="aggfunc"):
        md.crosstab(m["a"], m["b"], values=m["v"])
    with pytest.raises(ValueError, match="normalize"):
        md.crosstab(m["a"], m["b"], normalize="rows")


# ---- transpose ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(11)
    n = 17
    f = pd.DataFrame({
        "i": rng.integers(0, 100, n),
        "f": rng.normal(size=n),
        "s": pd.Series(rng.choice(["x", "y", None], n), dtype="str"),
        "c": pd.Categorical(rng.choice(["lo", "hi"], n)),
        "t": pd.date_range("2024-03-30", periods=n, freq="5h", tz="Europe/Paris"),
        "n": pd.array(rng.integers(0, 9, n), dtype="Int64"),
    }, index=pd.Index(rng.permutation(n) * 2, name="k"))
    f.loc[f.index[[1, 6]], "f"] = np.nan
    f.loc[f.index[[2]], "n"] = pd.NA
    return f


@pytest.mark.parametrize("chunk_size", [1, 4, 40])
def test_transpose(client, frame, chunk_size):
    m = md.DataFrame(frame, chunk_size=chunk_size)
    cases = [
        (m.T, frame.T),  # mixed: object
        (m[["i", "f"]].transpose(), frame[["i", "f"]].T),  # common float64
        (m[["n"]].T, frame[["n"]].T),  # one extension dtype: kept
        (m[["c"]].T, frame[["c"]].T),
        (m[["t"]].T, frame[["t"]].T),
    ]
    for t, exp in cases:
        assert_pandas(t, exp)
    f = m[m["i"] > 50]  # unknown lengths, some chunks empty
    assert_pandas(f[["i", "f"]].T, frame[frame["i"] > 50][["i", "f"]].T)
    none = m[m["i"] > 1000]
    assert_pandas(none.T, frame[frame["i"] > 1000].T)
    # the result is a frame like any other: its columns are the row labels
    lab = frame.index[3]
    assert_pandas(m[["i", "f"]].T[lab], frame[["i", "f"]].T[lab])
    assert_pandas(m[["i", "f"]].T.T, frame[["i", "f"]].T.T)


def test_transpose_range_index_is_lazy_and_multiindex(client, frame):
    plain = frame.reset_index(drop=True)[["i", "f"]]
    m = md.DataFrame(plain, chunk_size=5)
    t = m.T
    assert not m.data.is_executed  # the labels of a default RangeIndex are known
    assert list(t.columns) == list(range(17))
    assert_pandas(t, plain.T)
    labelled = md.DataFrame(frame[["i", "f"]], chunk_size=4)
    t = labelled.T
    assert not labelled.data.is_executed  # labels straight from the local frame
    assert t.columns.equals(frame.index)
    assert_pandas(t, frame[["i", "f"]].T)
    mi = frame.reset_index().set_index(["k", "s"])[["i", "f"]]
    assert_pandas(md.DataFrame(mi, chunk_size=6).T, mi.T)
    no_cols = pd.DataFrame(index=pd.Index([3, 1, 2], name="r"))
    assert_pandas(md.DataFrame(no_cols, chunk_size=2).T, no_cols.T)
    wide = pd.DataFrame(np.arange(60.0).reshape(3, 20), columns=[f"c{i}" for i in range(20)])
    import dask

    with dask.config.set({"mars-dask.tiling.chunk-store-limit": 100}):  # several row chunks in the result
        t = md.DataFrame(wide, chunk_size=2).T
    assert_pandas(t, wide.T)
    assert len(t.nsplits[0]) > 1


# ---- stack / explode ----------------------------------------------------------------------------


@pytest.mark.parametrize("chunk_size", [1, 4])
def test_stack(client, frame, chunk_size):
    num = frame[["i", "f"]]
    m = md.DataFrame(num, chunk_size=chunk_size)
    cols = pd.MultiIndex.from_tuples([("a", "x"), ("a", "y"), ("b", "x")], names=["u", "v"])
    wide = pd.DataFrame(np.arange(21.0).reshape(7, 3), columns=cols)
    wide.iloc[2, :2] = np.nan
    wide.iloc[4, 2] = np.nan
    mw = md.DataFrame(wide, chunk_size=chunk_size + 2)
    assert_pandas_all([
        (m.stack(), num.stack()),
        (m.stack(dropna=True), num.stack().dropna()),
        (m.stack(dropna=False), num.stack()),
        (mw.stack(), wide.stack()),
        (mw.stack(level=0), wide.stack(level=0)),
        (mw.stack(level="v", dropna=True), wide.stack(level="v").dropna(how="all")),
        (m[m["i"] > 50].stack(), num[num["i"] > 50].stack()),
    ])


def test_explode(client):
    e = pd.DataFrame({
        "x": [[1, 2], [], None, [3], [4, 5, 6], np.nan, ["a"]],
        "y": [[1], [2], [3], [4, 5], [6, 7, 8], [9], []],
        "z": list("abcdefg"),
    }, index=[5, 5, 6, 7, 8, 9, 10])
    for cs in (1, 3, 10):
        m = md.DataFrame(e, chunk_size=cs)
        assert_pandas_all([
            (m.explode("x"), e.explode("x")),
            (m.explode("x", ignore_index=True), e.explode("x", ignore_index=True)),
            (m.explode(["x"]), e.explode(["x"])),
            (m["y"].explode(), e["y"].explode()),
            (m["y"].explode(ignore_index=True), e["y"].explode(ignore_index=True)),
            (m[m["z"] > "b"].explode("y"), e[e["z"] > "b"].explode("y")),
        ])
    with pytest.raises(KeyError):
        md.DataFrame(e).explode("nope")


# ---- append ---------------------------------------------------------------------------------------


def test_append(client, frame):
    a, b = frame.iloc[:9], frame.iloc[9:][["f", "i", "s"]]
    ma, mb = md.DataFrame(a, chunk_size=4), md.DataFrame(b, chunk_size=3)
    row = pd.Series({"i": 1, "f": 2.5}, name=99)
    assert_pandas_all([
        (ma.append(mb), pd.concat([a, b])),
        (ma.append(mb, ignore_index=True), pd.concat([a, b], ignore_index=True)),
        (ma.append(mb, sort=True), pd.concat([a, b], sort=True)),
        (ma.append([mb, ma]), pd.concat([a, b, a])),
        (ma.append(b), pd.concat([a, b])),
        (ma[["i", "f"]].append(row), pd.concat([a[["i", "f"]], row.to_frame().T.infer_objects().rename_axis("k")])),
        (ma["i"].append(mb["i"]), pd.concat([a["i"], b["i"]])),
        (ma["i"].append([mb["i"], ma["i"]], ignore_index=True), pd.concat([a["i"], b["i"], a["i"]], ignore_index=True)),
        (ma[ma["i"] > 30].append(mb, verify_integrity=True), pd.concat([a[a["i"] > 30], b])),
    ])
    assert_pandas(ma[["i"]].append({"i": 7}, ignore_index=True), pd.concat([a[["i"]], pd.DataFrame({"i": [7]})], ignore_index=True))
    with pytest.raises(TypeError, match="ignore_index=True"):
        ma.append({"i": 7})
    with pytest.raises(TypeError, match="has a name"):
        ma.append(pd.Series({"i": 7}))
    with pytest.raises(ValueError, match="overlapping values"):
        ma.append(mb.append(ma[ma["i"] > 50]), verify_integrity=True).execute()


# ---- axis edits -----------------------------------------------------------------------------------


def test_insert_and_pop(client, frame):
    import mars_dask.tensor as mt

    for cs in (1, 5):
        m, p = md.DataFrame(frame, chunk_size=cs), frame.copy()
        assert m.insert(0, "two", m["i"] * 2) is None
        p.insert(0, "two", p["i"] * 2)
        m.insert(3, "k", 1.5)
        p.insert(3, "k", 1.5)
        m.insert(len(p.columns), "lst", list(range(17)))
        p.insert(len(p.columns), "lst", list(range(17)))
        m.insert(1, "i", mt.arange(17), allow_duplicates=True)
        p.insert(1, "i", np.arange(17), allow_duplicates=True)
        assert_pandas(m, p)
        popped, expected = m.pop("two"), p.pop("two")
        assert_pandas_all([(popped, expected), (m, p)])
    m = md.DataFrame(frame, chunk_size=3)
    f, pf = m[m["i"] > 40], frame[frame["i"] > 40].copy()  # unknown lengths
    f.insert(2, "g", f["f"] + 1)
    pf.insert(2, "g", pf["f"] + 1)
    f.insert(0, "one", 1)
    pf.insert(0, "one", 1)
    assert_pandas_all([(f.pop("s"), pf.pop("s")), (f, pf)])
    with pytest.raises(ValueError, match="already exists"):
        m.insert(0, "i", 1)
    with pytest.raises(IndexError):
        m.insert(40, "new", 1)
    with pytest.raises(KeyError):
        m.pop("nope")
    ints = pd.DataFrame(np.arange(12).reshape(4, 3))  # integer column labels keep their dtype
    mi, pi = md.DataFrame(ints, chunk_size=3), ints.copy()
    mi.insert(1, 7, mi[0])
    pi.insert(1, 7, pi[0])
    assert_pandas(mi, pi)
    assert mi.columns.dtype == pi.columns.dtype


def test_select_dtypes_and_affixes(client, frame):
    m = md.DataFrame(frame, chunk_size=4)
    assert_pandas_all([
        (m.select_dtypes("number"), frame.select_dtypes("number")),
        (m.select_dtypes(include=["category", "datetimetz"]), frame.select_dtypes(include=["category", "datetimetz"])),
        (m.select_dtypes(exclude="number"), frame.select_dtypes(exclude="number")),
        (m.add_prefix("p_"), frame.add_prefix("p_")),
        (m.add_suffix("_s"), frame.add_suffix("_s")),
        (m.add_prefix("r", axis=0), frame.add_prefix("r", axis=0)),
        (m["f"].add_prefix("p"), frame["f"].add_prefix("p")),
        (m["f"].add_suffix("s"), frame["f"].add_suffix("s")),
        (m[m["i"] > 50].select_dtypes("number"), frame[frame["i"] > 50].select_dtypes("number")),
        (m[m["i"] > 50].add_suffix("_s"), frame[frame["i"] > 50].add_suffix("_s")),
    ])
    with pytest.raises(ValueError, match="at least one of include or exclude"):
        m.select_dtypes()
    with pytest.raises(ValueError):
        m["f"].add_prefix("p", axis=1)


def test_set_axis_and_rename_axis(client, frame):
    import mars_dask.tensor as mt

    m = md.DataFrame(frame, chunk_size=5)
    labels = pd.Index(list("abcdefghijklmnopq"), name="L")
    mi = pd.MultiIndex.from_arrays([np.arange(17) % 3, np.arange(17)], names=["u", "v"])
    assert_pandas_all([
        (m.set_axis(list(labels)), frame.set_axis(list(labels))),
        (m.set_axis(labels), frame.set_axis(labels)),
        (m.set_axis(mi), frame.set_axis(mi)),
        (m["f"].set_axis(labels), frame["f"].set_axis(labels)),
        (m.set_axis(m["t"]), frame.set_axis(frame["t"])),
        (m.set_axis(mt.arange(17) * 2), frame.set_axis(np.arange(17) * 2)),
        (m.set_axis(list("ABCDEF"), axis=1), frame.set_axis(list("ABCDEF"), axis=1)),
        (m.rename_axis("kk"), frame.rename_axis("kk")),
        (m.rename_axis(None), frame.rename_axis(None)),
        (m.rename_axis(columns="cols"), frame.rename_axis(columns="cols")),
        (m.rename_axis("C", axis=1), frame.rename_axis("C", axis=1)),
        (m["i"].rename_axis("idx"), frame["i"].rename_axis("idx")),
    ])
    f = m[m["i"] > 50]
    pf = frame[frame["i"] > 50]
    assert_pandas(f.set_axis(list(range(len(pf)))), pf.set_axis(list(range(len(pf)))))
    m2, p2 = md.DataFrame(frame, chunk_size=4), frame.copy()
    assert m2.set_axis(labels, inplace=True) is None
    assert m2.rename_axis("new", inplace=True) is None
    assert_pandas(m2, p2.set_axis(labels).rename_axis("new"))
    with pytest.raises(ValueError, match="Length mismatch"):
        m.set_axis([1, 2])
    with pytest.raises(ValueError, match="Length mismatch"):
        m.set_axis([1, 2], axis=1)
    with pytest.raises(ValueError, match="No axis named"):
        m["i"].set_axis([1], axis=1)
