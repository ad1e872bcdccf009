"""Conversions and chunk layout vs pandas: values/to_tensor/from_tensor, type_name,
rechunk/rebalance, cartesian_chunk, sample."""

import numpy as np
import pandas as pd
import pytest

import mars_dask.dataframe as md
import mars_dask.tensor as mt

from .helpers import assert_pandas, assert_pandas_all


@pytest.fixture(scope="module")
def df():
    rng = np.random.default_rng(3)
    n = 23
    f = pd.DataFrame({
        "i": rng.integers(0, 100, n),
        "f": rng.normal(size=n),
        "s": pd.Series(rng.choice(["x", "y", None], n), dtype="str"),
        "c": pd.Categorical(rng.choice(["lo", "hi"], n)),
        "t": pd.date_range("2024-03-30", periods=n, freq="7h", tz="Europe/Paris"),
        "w": rng.integers(0, 5, n).astype(float),
    }, index=pd.Index(rng.permutation(n) * 3, name="k"))
    f.loc[f.index[[2, 9]], "f"] = np.nan
    return f


def _shapes(t):
    return tuple(int(x) for x in t.nsplits[0])


# ---- values / to_tensor / from_tensor / type_name ------------------------------------------------


@pytest.mark.parametrize("chunk_size", [1, 5, 30])
def test_values_and_to_tensor(client, df, chunk_size):
    m = md.DataFrame(df, chunk_size=chunk_size)
    num = m[["i", "f", "w"]]
    v = num.values
    assert isinstance(v, mt.Tensor) and v.dtype == np.float64 and v.shape == (23, 3)
    np.testing.assert_array_equal(v.execute().fetch(), df[["i", "f", "w"]].values)
    np.testing.assert_array_equal(num.to_tensor(dtype="float32").execute().fetch(),
                                  df[["i", "f", "w"]].to_numpy(dtype="float32"))
    np.testing.assert_array_equal(m["i"].values.execute().fetch(), df["i"].values)
    np.testing.assert_array_equal(m["f"].to_tensor(dtype="float32").execute().fetch(), df["f"].to_numpy("float32"))
    mixed = m.values  # strings, categoricals, tz-aware stamps: object, as pandas
    assert mixed.dtype == object
    pd.testing.assert_frame_equal(pd.DataFrame(mixed.execute().fetch()), pd.DataFrame(df.values))  # NaN == NaN
    got = m[["i", "s"]].to_tensor().execute().fetch()
    assert got.dtype == object
    pd.testing.assert_frame_equal(pd.DataFrame(got), pd.DataFrame(df[["i", "s"]].to_numpy()))
    f = m[m["i"] > 50]  # unknown lengths, some chunks empty
    np.testing.assert_array_equal(f["f"].values.execute().fetch(), df[df["i"] > 50]["f"].values)
    np.testing.assert_array_equal(f[["i", "w"]].values.execute().fetch(), df[df["i"] > 50][["i", "w"]].values)


def test_from_tensor_and_type_name(client, df):
    arr = np.arange(12.0).reshape(6, 2)
    t = mt.tensor(arr, chunk_size=4)
    assert_pandas(md.DataFrame.from_tensor(t, columns=["a", "b"]), pd.DataFrame(arr, columns=["a", "b"]))
    assert_pandas(md.Series.from_tensor(t[:, 0], name="z"), pd.Series(arr[:, 0], name="z"))
    idx = list("uvwxyz")
    assert_pandas(md.Series.from_tensor(t[:, 1], index=idx), pd.Series(arr[:, 1], index=idx))
    m = md.DataFrame(df, chunk_size=5)
    assert (m.type_name, m["i"].type_name, md.Index(df.index).type_name) == ("DataFrame", "Series", "Index")
    assert md.DataFrame.type_name == "DataFrame"
    s = m["i"]
    assert s.T is s


# ---- rechunk / rebalance -------------------------------------------------------------------------


@pytest.mark.parametrize("chunk_size", [1, 4, 50])
def test_rechunk(client, df, chunk_size):
    m = md.DataFrame(df, chunk_size=chunk_size)
    r = m.rechunk(3)
    rs = m["t"].rechunk({0: 7})
    ri = md.Index(df.index, chunk_size=chunk_size).rechunk((5,))
    rx = m.rechunk(((10, 0, 13),))
    assert_pandas_all([(r, df), (rs, df["t"]), (ri, df.index), (rx, df)])
    assert _shapes(r) == (3,) * 7 + (2,)
    assert _shapes(rs) == (7, 7, 7, 2)
    assert _shapes(ri) == (5,) * 4 + (3,)
    assert _shapes(rx) == (10, 0, 13)
    assert m.rechunk(chunk_size) is m  # already so


def test_rechunk_unknown_lengths_and_empty(client, df):
    m = md.DataFrame(df, chunk_size=4)
    f = m[m["i"] > 60]
    pf = df[df["i"] > 60]
    r = f.rechunk(2)
    e = m[m["i"] > 1000].rechunk(2)
    assert_pandas_all([(r, pf), (e, df.iloc[:0]), (f["c"].rechunk(1), pf["c"])])
    n = len(pf)
    assert _shapes(r) == (2,) * (n // 2) + ((1,) if n % 2 else ())
    assert _shapes(e) == (0,)
    # the re-cut result still lines up with other operations
    assert_pandas((r["i"] + r["w"]).rechunk(3), pf["i"] + pf["w"])


def test_rechunk_errors(client, df):
    m = md.DataFrame(df, chunk_size=4)
    with pytest.raises(ValueError, match="positive"):
        m.rechunk(0)
    with pytest.raises(TypeError):
        m.rechunk("x")
    with pytest.raises(ValueError, match="add up"):
        m.rechunk(((3, 3),))
    with pytest.raises(ValueError):
        m["i"].rechunk({1: 3})


def test_rebalance(client, df):
    m = md.DataFrame(df, chunk_size=20)  # chunks of 20 and 3
    b = m.rebalance(num_partitions=4)
    s = m["f"].rebalance(num_partitions=30)  # more parts than rows: one row each
    i = md.Index(df.index, chunk_size=20).rebalance(num_partitions=2)
    f = m[m["i"] > 30].rebalance(num_partitions=3)
    auto = m.rebalance()  # the cluster's 2 threads * 1.2 -> 3 parts
    assert_pandas_all([(b, df), (s, df["f"]), (i, df.index), (f, df[df["i"] > 30]), (auto, df)])
    assert _shapes(b) == (6, 6, 6, 5)
    assert _shapes(s) == (1,) * 23
    assert _shapes(i) == (12, 11)
    assert len(_shapes(f)) == 3 and max(_shapes(f)) - min(_shapes(f)) <= 1
    assert _shapes(auto) == (8, 8, 7)
    with pytest.raises(NotImplementedError):
        m.rebalance(axis=1)


# ---- cartesian_chunk -----------------------------------------------------------------------------


def test_cartesian_chunk(client, df):
    left = md.DataFrame(df[["i", "f"]], chunk_size=7)
    right = md.DataFrame(df[["i", "w"]].head(9), chunk_size=4)

    def cross_lt(lc, rc):
        m = lc.reset_index(drop=True).merge(rc.reset_index(drop=True), how="cross", suffixes=("_l", "_r"))
        return m[m["i_l"] < m["i_r"]]

    res = left.cartesian_chunk(right, cross_lt)
    got = res.execute().fetch()
    assert len(res.chunks) == 4 * 3
    exp = cross_lt(df[["i", "f"]], df[["i", "w"]].head(9))
    key = ["i_l", "f", "i_r", "w"]
    pd.testing.assert_frame_equal(got.sort_values(key).reset_index(drop=True), exp.sort_values(key).reset_index(drop=True))
    # Series output, extra arguments; failing meta inference needs output_type
    s = left["i"].cartesian_chunk(right["i"], lambda a, b, k: pd.Series([len(a) * len(b) * k]), args=(2,))
    assert s.execute().fetch().sum() == 23 * 9 * 2

    def picky(a, b):
        if (a["f"] == 1.0).any():  # the stand-ins' values
            raise RuntimeError("needs real chunks")
        return a.head(1)

    with pytest.raises(TypeError, match="output_type"):
        left.cartesian_chunk(right, picky)
    r = left.cartesian_chunk(right, picky, output_type="dataframe", dtypes=df[["i", "f"]].dtypes)
    assert list(r.dtypes) == [np.dtype("int64"), np.dtype("float64")]
    assert len(r.execute().fetch()) == 4 * 3


# ---- sample -------------------------------------------------------------------------------------


def _check_sample(got, df, n, replace):
    assert len(got) == n
    assert list(got.columns) == list(df.columns) and got.dtypes.equals(df.dtypes)
    assert got.index.isin(df.index).all()
    if not replace:
        assert got.index.is_unique
    pd.testing.assert_frame_equal(got, df.loc[got.index])


@pytest.mark.parametrize("chunk_size", [1, 6, 40])
def test_sample(client, df, chunk_size):
    m = md.DataFrame(df, chunk_size=chunk_size)
    a = m.sample(n=9, random_state=5)
    b = m.sample(frac=0.5, random_state=5)
    c = m.sample(n=40, replace=True, random_state=np.random.RandomState(1))
    d = m.sample(frac=0.4, weights="w", random_state=7)
    e = m.sample(n=30, replace=True, weights=m["w"], random_state=7)
    f = m["f"].sample(n=23, random_state=0)  # all rows, some order
    assert a.shape[0] == 9 and np.isnan(b.shape[0])
    from mars_dask import execute

    execute(a, b, c, d, e, f)
    _check_sample(a.fetch(), df, 9, False)
    _check_sample(b.fetch(), df, round(0.5 * 23), False)
    _check_sample(c.fetch(), df, 40, True)
    _check_sample(d.fetch(), df, round(0.4 * 23), False)
    _check_sample(e.fetch(), df, 30, True)
    assert (d.fetch()["w"] > 0).all() and (e.fetch()["w"] > 0).all()  # weight 0: never drawn
    pd.testing.assert_series_equal(f.fetch().sort_index(), df["f"].sort_index())
    # the same random_state gives the same rows
    pd.testing.assert_frame_equal(m.sample(n=9, random_state=5).execute().fetch(), a.fetch())


def test_sample_filtered_and_options(client, df):
    m = md.DataFrame(df, chunk_size=5)
    pf = df[df["i"] > 40]
    f = m[m["i"] > 40]
    got = f.sample(n=4, random_state=1, ignore_index=True).execute().fetch()
    assert list(got.index) == [0, 1, 2, 3]
    assert got["t"].isin(pf["t"]).all()
    z = m.sample(n=0, random_state=1)
    assert_pandas(z, df.iloc[:0])
    cols = m.sample(n=2, axis=1, random_state=3)
    assert_pandas(cols, df.sample(n=2, axis=1, random_state=3))
    w = list(range(23))  # positional weights: row 0 never drawn
    got = m.sample(n=10, weights=w, random_state=2).execute().fetch()
    _check_sample(got, df, 10, False)
    assert df.index[0] not in got.index
    lw = pd.Series(1.0, index=df.index[:3])  # by label: only these three rows have weight
    got = m.sample(n=3, weights=lw, random_state=2).execute().fetch()
    assert sorted(got.index) == sorted(df.index[:3])


def test_sample_errors(client, df):
    m = md.DataFrame(df, chunk_size=5)
    with pytest.raises(ValueError, match="frac` OR `n"):
        m.sample(n=1, frac=0.5)
    with pytest.raises(ValueError, match="negative"):
        m.sample(n=-1)
    with pytest.raises(ValueError, match="Replace has to be set"):
        m.sample(frac=1.5)
    with pytest.raises(ValueError, match="larger sample than population"):
        m.sample(n=24).execute()
    with pytest.raises(KeyError, match="not a valid column"):
        m.sample(n=1, weights="nope")
    with pytest.raises(ValueError, match="Strings cannot be passed"):
        m["i"].sample(n=1, weights="i")
    with pytest.raises(ValueError, match="same length"):
        m.sample(n=1, weights=[1, 2])
    with pytest.raises(ValueError, match="negative values"):
        m.sample(n=1, weights=m["f"] - 10).execute()
    with pytest.raises(ValueError, match="sum to zero"):
        m.sample(n=1, weights=m["w"] * 0).execute()
    with pytest.raises(ValueError, match="cannot be achieved with replace=False"):
        m.sample(n=20, weights="w").execute()
