"""Window operations vs pandas: rolling (row counts and time offsets), expanding, ewm, and
shift/diff/pct_change, across chunk boundaries (1-row chunks, chunks shorter than the window,
uneven chunks, unknown lengths and empty chunks after a filter)."""

import warnings

import numpy as np
import pandas as pd
import pytest

import mars_dask.dataframe as md

from .helpers import assert_pandas, assert_pandas_all


def make_frame(n=23, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "f": np.where(rng.random(n) < 0.25, np.nan, rng.normal(size=n) * 3 + 10),
        "i": rng.integers(0, 9, n),
        "g": rng.normal(size=n),
        "p": np.arange(n),
    }, index=pd.Index(rng.permutation(n) * 3, name="idx"))


@pytest.fixture(scope="module")
def df():
    return make_frame()


def _filtered(df, cs=3):
    """A filtered md frame whose row lengths are unknown and some chunks empty."""
    m = md.DataFrame(df, chunk_size=cs)
    cond = (m["i"] > 2) & (m["p"] // cs % 3 != 1)  # chunks 1, 4, 7... become empty
    e = df[(df["i"] > 2) & (df["p"] // cs % 3 != 1)]
    return m[cond], e


def _frames(df):
    return [(md.DataFrame(df, chunk_size=cs), df) for cs in (1, (5, 1, 9, 2, 6))] + [_filtered(df)]


def test_rolling_counts(client, df):
    cases = []
    for k, (m, e) in enumerate(_frames(df)):
        one_row = k == 0  # 1-row chunks: a subset (every window crosses many chunks)
        cases += [
            (m.rolling(3).sum(), e.rolling(3).sum()),
            (m.rolling(5, min_periods=2).mean(), e.rolling(5, min_periods=2).mean()),
            (m["f"].rolling(4).var(), e["f"].rolling(4).var()),
            (m.rolling(4, center=True).max(), e.rolling(4, center=True).max()),
            (m["g"].rolling(5, center=True, min_periods=1).median(), e["g"].rolling(5, center=True, min_periods=1).median()),
            (m.rolling(3, closed="left").min(), e.rolling(3, closed="left").min()),
            (m.rolling(2, closed="both").count(), e.rolling(2, closed="both").count()),
            (m["f"].rolling(6).std(ddof=0), e["f"].rolling(6).std(ddof=0)),
            (m.rolling(4).skew(), e.rolling(4).skew()),
            (m["g"].rolling(5).kurt(), e["g"].rolling(5).kurt()),
            (m.rolling(3).quantile(0.3), e.rolling(3).quantile(0.3)),
            (m.rolling(3).agg(["sum", "mean"]), e.rolling(3).agg(["sum", "mean"])),
            (m.rolling(3).aggregate({"f": "sum", "g": ["min", "max"]}), e.rolling(3).aggregate({"f": "sum", "g": ["min", "max"]})),
            (m["f"].rolling(3).agg(["std", "max"]), e["f"].rolling(3).agg(["std", "max"])),
            (m.rolling(4)["g"].mean(), e.rolling(4)["g"].mean()),
            (m.rolling(4)[["f", "i"]].sum(), e.rolling(4)[["f", "i"]].sum()),
            (m.rolling(3, win_type="triang").mean(), e.rolling(3, win_type="triang").mean()),
            (m["g"].rolling(3).apply(lambda a: a[-1] - a[0], raw=True), e["g"].rolling(3).apply(lambda a: a[-1] - a[0], raw=True)),
        ][: 6 if one_row else None]
    assert_pandas_all(cases)


def test_rolling_structure_not_gathered(client, df):
    m = md.DataFrame(df, chunk_size=2)
    r = m.rolling(5, center=True).mean()
    r.execute()
    chunks = r.data.chunks
    assert len(chunks) == len(m.execute().data.chunks) == 12
    # each output chunk reads its own input chunk and two small carries, never the whole frame
    assert all(len(c.inputs) <= 3 for c in chunks)
    pd.testing.assert_frame_equal(r.fetch(), df.rolling(5, center=True).mean())


def test_rolling_time_based(client):
    n = 30
    rng = np.random.default_rng(3)
    idx = pd.DatetimeIndex(pd.Timestamp("2024-03-10 01:59:50", tz="US/Eastern")
                           + pd.to_timedelta(np.cumsum(rng.integers(0, 3, n)), unit="s"), name="t")
    s = pd.Series(np.where(rng.random(n) < 0.2, np.nan, rng.normal(size=n)), index=idx, name="v")
    df = pd.DataFrame({"v": s.to_numpy(), "t": idx, "w": rng.integers(0, 5, n)})
    cases = []
    for cs in (1, 3, 7):
        ms = md.Series(s, chunk_size=cs)
        m = md.DataFrame(df, chunk_size=cs)
        cases += [
            (ms.rolling("2s").sum(), s.rolling("2s").sum()),
            (ms.rolling("3s", min_periods=2).mean(), s.rolling("3s", min_periods=2).mean()),
            (ms.rolling("4s", closed="both").count(), s.rolling("4s", closed="both").count()),
            (ms.rolling(pd.Timedelta("3s"), center=True).max(), s.rolling(pd.Timedelta("3s"), center=True).max()),
            (m.rolling("3s", on="t").sum(), df.rolling("3s", on="t").sum()),
            (m.rolling("2s", on="t")[["w"]].mean(), df.rolling("2s", on="t")[["w"]].mean()),
        ]
    ms = md.Series(s, chunk_size=4)
    f, e = ms[ms.notna()], s[s.notna()]
    cases.append((f.rolling("5s").std(), e.rolling("5s").std()))
    assert_pandas_all(cases)
    # a non-monotonic index fails like pandas (at build time on the sample, else at execution)
    bad = pd.Series([1.0, 2.0, 3.0], index=pd.DatetimeIndex(["2024-01-03", "2024-01-01", "2024-01-02"]))
    with pytest.raises(ValueError, match="monotonic"):
        md.Series(bad, chunk_size=1).rolling("2D").sum().execute()


def test_rolling_errors(client, df):
    m = md.DataFrame(df, chunk_size=4)
    with pytest.raises(ValueError):
        m.rolling(-1)
    with pytest.raises(ValueError, match="min_periods"):
        m.rolling(2, min_periods=3)
    with pytest.raises(NotImplementedError):
        m.rolling(2, axis=1)
    with pytest.raises(KeyError):
        m.rolling(2)["zz"]
    with pytest.raises(AttributeError):
        m.rolling(2).nope  # noqa: B018
    assert "Rolling" in repr(m.rolling(3))
    r = m.rolling(3, min_periods=2, center=True)
    assert (r.window, r.min_periods, r.center, r.axis) == (3, 2, True, 0)
    assert "f" in dir(r) and r.f.mean().dtype == np.float64
    obj = md.DataFrame(pd.DataFrame({"s": ["a", "b"]}), chunk_size=1)
    with pytest.raises(Exception) as info:  # pandas' own error (at build time or when run)
        obj.rolling(2).sum().execute()
    with pytest.raises(type(info.value)):
        pd.DataFrame({"s": ["a", "b"]}).rolling(2).sum()


EXPANDING_NAMES = ["count", "sum", "mean", "var", "std", "min", "max", "skew", "kurt"]


def test_expanding(client, df):
    cases = []
    for k, (m, e) in enumerate(_frames(df)):
        for name in EXPANDING_NAMES:
            cases.append((getattr(m.expanding(), name)(), getattr(e.expanding(), name)()))
        if k == 0:  # 1-row chunks: the aggregations above only
            continue
        cases += [
            (m["f"].expanding(4).var(ddof=0), e["f"].expanding(4).var(ddof=0)),
            (m.expanding(min_periods=0).sum(), e.expanding(min_periods=0).sum()),
            (m.expanding(3).count(), e.expanding(3).count()),
            (m["f"].expanding(5).agg(["mean", "std", "skew"]), e["f"].expanding(5).agg(["mean", "std", "skew"])),
            (m.expanding().agg({"f": ["min", "kurt"], "i": "sum"}), e.expanding().agg({"f": ["min", "kurt"], "i": "sum"})),
            (m.expanding(2)["g"].median(), e.expanding(2)["g"].median()),
            (m.expanding().quantile(0.75), e.expanding().quantile(0.75)),
            (m["g"].expanding().apply(np.ptp, raw=True), e["g"].expanding().apply(np.ptp, raw=True)),
            (m.expanding().agg(["sum", "median"]), e.expanding().agg(["sum", "median"])),
        ]
    assert_pandas_all(cases)


def test_expanding_large_mean_and_errors(client):
    # values far from zero with a tiny spread: the carried moments stay centred
    s = pd.Series(1e9 + np.arange(40) % 7 * 0.5)
    ms = md.Series(s, chunk_size=3)
    assert_pandas_all([(ms.expanding().var(), s.expanding().var()), (ms.expanding().skew(), s.expanding().skew())],
                      rtol=1e-6, atol=1e-6)
    with pytest.raises(NotImplementedError):
        ms.expanding(center=True)
    with pytest.raises(ValueError):
        ms.expanding(min_periods=-1)


@pytest.mark.parametrize("adjust", [True, False])
@pytest.mark.parametrize("ignore_na", [False, True])
def test_ewm(client, df, adjust, ignore_na):
    e0 = df.copy()
    e0.iloc[7:12, 0] = np.nan  # a gap across chunk boundaries
    cases = []
    for m, e in _frames(e0):
        kw = dict(adjust=adjust, ignore_na=ignore_na)
        cases += [
            (m.ewm(com=1.5, **kw).mean(), e.ewm(com=1.5, **kw).mean()),
            (m["f"].ewm(span=4, min_periods=3, **kw).var(), e["f"].ewm(span=4, min_periods=3, **kw).var()),
            (m.ewm(alpha=0.3, **kw).std(bias=True), e.ewm(alpha=0.3, **kw).std(bias=True)),
            (m["f"].ewm(halflife=2.0, **kw).agg(["mean", "std"]), e["f"].ewm(halflife=2.0, **kw).agg(["mean", "std"])),
            (m.ewm(alpha=1.0, **kw).var(), e.ewm(alpha=1.0, **kw).var()),
        ]
        if adjust:
            cases.append((m.ewm(com=0.5, **kw).sum(), e.ewm(com=0.5, **kw).sum()))
    assert_pandas_all(cases)


def test_ewm_errors(client, df):
    m = md.DataFrame(df, chunk_size=4)
    with pytest.raises(ValueError, match="mutually exclusive"):
        m.ewm(com=1, span=2)
    with pytest.raises(ValueError):
        m.ewm()
    with pytest.raises(ValueError):
        m.ewm(alpha=1.5)
    with pytest.raises(AttributeError):  # pandas' own error
        m.ewm(com=1).agg("median")
    with pytest.raises(NotImplementedError):
        m.ewm(com=1).agg(lambda x: x)
    with pytest.raises(NotImplementedError):
        m.ewm(com=1, axis=1)


def test_shift_diff(client, df):
    tz = pd.date_range("2021-03-28", periods=len(df), freq="37min", tz="Europe/Berlin")
    d = df.assign(t=tz, n=pd.array(np.where(df["i"] > 6, None, df["i"]), dtype="Int64"))
    cases = []
    for k, (m, e) in enumerate(_frames(d)):
        cases += [
            (m.shift(), e.shift()),
            (m.shift(3), e.shift(3)),
            (m.shift(-5), e.shift(-5)),
            (m["i"].shift(2, fill_value=-1), e["i"].shift(2, fill_value=-1)),
            (m["t"].shift(-2), e["t"].shift(-2)),
            (m.shift(0), e.shift(0)),
            (m.shift(40), e.shift(40)),
            (m[["f", "i"]].shift([1, -2]), e[["f", "i"]].shift([1, -2])),
            (m.diff(), e.diff()),
            (m["i"].diff(-3), e["i"].diff(-3)),
            (m["t"].diff(2), e["t"].diff(2)),
            (m["n"].diff(), e["n"].diff()),
            (m[["f", "g"]].diff(axis=1), e[["f", "g"]].diff(axis=1)),
            (m[["f", "g", "i"]].pct_change(), e[["f", "g", "i"]].pct_change()),
            (m["f"].pct_change(periods=-2), e["f"].pct_change(periods=-2)),
            (m.shift(1, axis=1), e.shift(1, axis=1)),
        ][: 8 if k == 0 else None]
    assert_pandas_all(cases)


def test_empty_and_other_dtypes(client):
    e = make_frame().iloc[:0]
    m = md.DataFrame(e, chunk_size=3)
    assert_pandas_all([
        (m.rolling(3).sum(), e.rolling(3).sum()),
        (m.expanding().mean(), e.expanding().mean()),
        (m.expanding().median(), e.expanding().median()),
        (m.ewm(com=1).var(), e.ewm(com=1).var()),
        (m.shift(2), e.shift(2)),
        (m.diff(-1), e.diff(-1)),
    ])
    d = pd.DataFrame({
        "k": pd.Categorical(list("abcabcabca")),
        "s": pd.array(["x", None, "y", "z", "w", None, "u", "v", "q", "r"], dtype="string"),
        "b": [True, False] * 5,
        "n": pd.array([1, None, 3, 4, 5, None, 7, 8, 9, 10], dtype="Int64"),
    })
    cases = []
    for cs in (1, 3):
        m = md.DataFrame(d, chunk_size=cs)
        cases += [
            (m.shift(2), d.shift(2)),
            (m.shift(-1, fill_value=None), d.shift(-1)),
            (m["b"].diff(), d["b"].diff()),
            (m["n"].rolling(3).sum(), d["n"].rolling(3).sum()),
            (m["n"].expanding().max(), d["n"].expanding().max()),
            (m["n"].ewm(span=3).mean(), d["n"].ewm(span=3).mean()),
        ]
    assert_pandas_all(cases)


def test_shift_freq_and_fill_method(client):
    s = pd.Series([1.0, np.nan, 3.0, 4.0, np.nan, np.nan, 8.0],
                  index=pd.date_range("2020-01-01", periods=7, freq="D", tz="UTC"))
    ms = md.Series(s, chunk_size=2)
    cases = [
        (ms.shift(2, freq="h"), s.shift(2, freq="h")),
        (ms.tshift(1, freq="D"), s.shift(1, freq="D")),
        (ms.shift(fill_value=None), s.shift()),
    ]
    assert_pandas_all(cases)
    with pytest.warns(FutureWarning, match="fill_method"):
        got = ms.pct_change(fill_method="pad")
    # (the chunks' concatenation drops the index's freq attribute, as for any md.Series)
    assert_pandas(got, s.ffill().pct_change(), check_freq=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_pandas(ms.pct_change(), s.pct_change(), check_freq=False)  # pandas' default: no filling
    assert_pandas(ms.tshift(2), s.shift(2, freq="D"), check_freq=False)  # the index's own freq
    irregular = md.Series(s.iloc[[0, 2, 3]], chunk_size=2)
    with pytest.raises(ValueError, match="Freq"):
        irregular.tshift(1)
    with pytest.raises(ValueError):
        ms.shift(1, axis=1)
    with pytest.raises(ValueError):
        ms.pct_change(fill_method="nope")
    irr = pd.Series(np.arange(1.0, 11.0) ** 2, index=pd.DatetimeIndex(
        ["2020-01-01", "2020-01-02", "2020-01-04", "2020-01-05", "2020-01-06", "2020-01-09", "2020-01-10",
         "2020-01-11", "2020-01-13", "2020-01-14"], tz="Asia/Tokyo"))
    for cs in (1, 3):
        mi = md.Series(irr, chunk_size=cs)
        assert_pandas_all([
            (mi.pct_change(freq="D"), irr.pct_change(freq="D")),
            (mi.pct_change(2, freq="D"), irr.pct_change(2, freq="D")),
            (mi.pct_change(-1, freq="24h"), irr.pct_change(-1, freq="24h")),
        ], check_freq=False)
    with pytest.raises(NotImplementedError):
        md.Series(irr, chunk_size=3).pct_change(freq="MS")


def test_halo_edges_stay_tasks_of_their_own(client):
    """On an executed frame each chunk's edge rows are a task of their own (run beside
    their chunk; only the rows move): inlined into the next chunk's task they made it read
    two whole chunks, one of them fetched from another worker."""
    from mars_dask.tiling.emit import build_graph
    from mars_dask.tiling.tile import tile

    pdf = make_frame(40)
    m = md.DataFrame(pdf, chunk_size=10)
    m.execute()
    data_keys = {c.key for c in m.data.chunks}
    for r in (m.rolling(3).mean(), m.groupby("i").cumsum()):
        tile([r.data], None)
        graph = build_graph(r.data.chunks)
        deps = graph.get_all_dependencies()
        for c in r.data.chunks:
            assert len(deps[c.key] & data_keys) == 1, (c.key, deps[c.key])
    assert_pandas(m.rolling(3).mean(), pdf.rolling(3).mean())
