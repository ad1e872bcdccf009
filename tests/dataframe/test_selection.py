"""head, tail, iloc, loc, df[slice] and Series[...] vs pandas (several chunkings, default
and arbitrary indexes, filtered inputs with unknown lengths and empty chunks, bad input)."""

import numpy as np
import pandas as pd
import pytest

import mars_dask
import mars_dask.dataframe as md

from .helpers import assert_pandas

N = 29


def make_pdf(n=N, index=None, seed=2):
    rng = np.random.default_rng(seed)
    f = rng.normal(size=n)
    f[rng.random(n) < 0.2] = np.nan
    return pd.DataFrame({
        "a": rng.integers(0, 10, n),
        "f": f,
        "s": pd.array(rng.choice(["u", "vv", None], size=n), dtype="str"),
        "c": pd.Categorical(rng.choice(["x", "y"], size=n)),
        "d": pd.date_range("2020-01-01", periods=n, freq="D"),
    }, index=index)


@pytest.fixture(scope="module")
def pdf():
    return make_pdf()


@pytest.fixture(scope="module")
def pdf_labels():
    # a sorted, non-default index (for label slices) and a shuffled one (for label lists)
    return make_pdf(index=pd.Index(np.arange(10, 10 + 3 * N, 3), name="lab"))


def check(pairs):
    mars_dask.execute(*[t for t, _ in pairs])
    for t, exp in pairs:
        if isinstance(exp, (pd.DataFrame, pd.Series, pd.Index)):
            assert_pandas(t, exp)
        else:
            got = t.fetch()
            assert got == exp or (pd.isna(got) and pd.isna(exp)), (got, exp)
            assert type(got) is type(exp), (type(got), type(exp))


@pytest.mark.parametrize("chunk", [4, 100])
def test_head_tail(client, pdf, chunk):
    df = md.DataFrame(pdf, chunk_size=chunk)
    pairs = []
    for n in (0, 1, 3, 7, 12, N, N + 5, -3, -N - 1):
        pairs.append((df.head(n), pdf.head(n)))
        pairs.append((df.tail(n), pdf.tail(n)))
    pairs += [(df.head(), pdf.head()), (df["f"].tail(), pdf["f"].tail()), (df["s"].head(8), pdf["s"].head(8))]
    check(pairs)


def test_head_reads_only_needed_chunks(client, pdf):
    df = md.DataFrame(pdf, chunk_size=4)
    f = df[df["a"] >= 0]  # keeps all rows, lengths unknown
    h = f.head(6)
    assert_pandas(h, pdf.head(6))
    # only the first two filter chunks were executed to learn their lengths
    executed = [c for c in f.data.chunks if c.future is not None]
    assert len(executed) == 2, len(executed)
    t = f.tail(5)
    assert_pandas(t, pdf.tail(5))


def test_head_tail_filtered_empty_chunks(client, pdf):
    df = md.DataFrame(pdf, chunk_size=3)
    m = (pdf["a"] > 6)
    f = df[df["a"] > 6]
    exp = pdf[m]
    check([(f.head(3), exp.head(3)), (f.tail(4), exp.tail(4)), (f.head(100), exp.head(100)),
           (f.head(-2), exp.head(-2)), (f["f"].tail(2), exp["f"].tail(2))])
    none = df[df["a"] > 100]
    check([(none.head(3), pdf[pdf["a"] > 100].head(3)), (none.tail(2), pdf[pdf["a"] > 100].tail(2))])


ROWS = [
    slice(None, None), slice(3, 17), slice(5, None, 3), slice(None, 20, 4), slice(-7, -1), slice(40, 50),
    slice(None, None, -1), slice(20, 2, -3), slice(None, 5, -2), slice(-1, None, -4), slice(7, 3),
    [0, 5, 6, 28], [3, -1, 0, 17, 3], [], np.array([10, 11, 12]),
]


@pytest.mark.parametrize("chunk", [4, 11])
def test_iloc_rows_and_columns(client, pdf, chunk):
    df = md.DataFrame(pdf, chunk_size=chunk)
    pairs = []
    for rows in ROWS:
        pairs.append((df.iloc[rows], pdf.iloc[rows]))
        pairs.append((df["f"].iloc[rows], pdf["f"].iloc[rows]))
    mask = (np.arange(N) % 3 == 0)
    pairs += [
        (df.iloc[mask], pdf.iloc[mask]),
        (df.iloc[list(mask)], pdf.iloc[list(mask)]),
        (df.iloc[2:9, [0, 2]], pdf.iloc[2:9, [0, 2]]),
        (df.iloc[[4, 1], 1:3], pdf.iloc[[4, 1], 1:3]),
        (df.iloc[:, [4, 0]], pdf.iloc[:, [4, 0]]),
        (df.iloc[3:8, 1], pdf.iloc[3:8, 1]),
        (df.iloc[mask, -1], pdf.iloc[mask, -1]),
        (df.iloc[:, 2], pdf.iloc[:, 2]),
        (df.iloc[5], pdf.iloc[5]),
        (df.iloc[-2, [0, 1]], pdf.iloc[-2, [0, 1]]),
        (df.iloc[7, 0], pdf.iloc[7, 0]),
        (df.iloc[9, 2], pdf.iloc[9, 2]),
        (df.iloc[3, 4], pdf.iloc[3, 4]),
        (df["s"].iloc[-1], pdf["s"].iloc[-1]),
        (df["a"].iloc[12], pdf["a"].iloc[12]),
        (df.iloc[:, np.array([True, False, True, False, False])], pdf.iloc[:, np.array([True, False, True, False, False])]),
    ]
    check(pairs)


def test_iloc_unknown_lengths(client, pdf):
    df = md.DataFrame(pdf, chunk_size=4)
    m = pdf["a"] % 2 == 0
    f = df[df["a"] % 2 == 0]
    exp = pdf[m]
    check([
        (f.iloc[1:6], exp.iloc[1:6]),
        (f.iloc[[0, -1]], exp.iloc[[0, -1]]),
        (f.iloc[::-2, [1]], exp.iloc[::-2, [1]]),
    ])
    # the row's label (its Series name) is unknown before execution: values and name after
    pd.testing.assert_series_equal(f.iloc[2].execute().fetch(), exp.iloc[2])
    with pytest.raises(IndexError):
        f.iloc[[0, 1000]].execute()


@pytest.mark.parametrize("chunk", [4, 100])
def test_loc_range_index(client, pdf, chunk):
    df = md.DataFrame(pdf, chunk_size=chunk)
    pairs = [
        (df.loc[3:7], pdf.loc[3:7]),
        (df.loc[3:7, "a"], pdf.loc[3:7, "a"]),
        (df.loc[:10:2, ["a", "s"]], pdf.loc[:10:2, ["a", "s"]]),
        (df.loc[20:], pdf.loc[20:]),
        (df.loc[15:3:-2], pdf.loc[15:3:-2]),
        (df.loc[5:0:-1], pdf.loc[5:0:-1]),
        (df.loc[-5:100], pdf.loc[-5:100]),
        (df.loc[[4, 2, 9]], pdf.loc[[4, 2, 9]]),
        (df.loc[[4, 2, 9], "d"], pdf.loc[[4, 2, 9], "d"]),
        (df.loc[6], pdf.loc[6]),
        (df.loc[6, "s"], pdf.loc[6, "s"]),
        (df.loc[:, "f":"c"], pdf.loc[:, "f":"c"]),
        (df.loc[df["a"] > 4], pdf.loc[pdf["a"] > 4]),
        (df.loc[df["a"] > 4, ["s", "a"]], pdf.loc[pdf["a"] > 4, ["s", "a"]]),
        (df.loc[df["a"] > 4, "f"], pdf.loc[pdf["a"] > 4, "f"]),
        (df.loc[(pdf["a"] > 4).to_numpy()], pdf.loc[(pdf["a"] > 4).to_numpy()]),
        (df["a"].loc[2:5], pdf["a"].loc[2:5]),
        (df["a"].loc[[1, 1, 0]], pdf["a"].loc[[1, 1, 0]]),
        (df["f"].loc[4], pdf["f"].loc[4]),
    ]
    check(pairs)


@pytest.mark.parametrize("chunk", [4, 100])
def test_loc_labels(client, pdf_labels, chunk):
    p = pdf_labels
    df = md.DataFrame(p, chunk_size=chunk)
    shuffled = p.sample(frac=1, random_state=0)
    ds = md.DataFrame(shuffled, chunk_size=chunk)
    pairs = [
        (df.loc[13:40], p.loc[13:40]),
        (df.loc[14:41, ["f"]], p.loc[14:41, ["f"]]),  # bounds that are not labels: sorted index
        (df.loc[:30], p.loc[:30]),
        (df.loc[70:], p.loc[70:]),
        (df.loc[[40, 13, 40]], p.loc[[40, 13, 40]]),
        (ds.loc[[40, 13, 94]], shuffled.loc[[40, 13, 94]]),
        (ds.loc[[40, 13], "s"], shuffled.loc[[40, 13], "s"]),
        (df.loc[df["a"] > 3, "d"], p.loc[p["a"] > 3, "d"]),
        (df["f"].loc[16:34], p["f"].loc[16:34]),
        (ds.loc[43], shuffled.loc[43]),
        (ds["s"].loc[43], shuffled["s"].loc[43]),
        (ds["a"][[43, 10]], shuffled["a"][[43, 10]]),
        (ds["a"][52], shuffled["a"][52]),
    ]
    check(pairs)
    with pytest.raises(KeyError):
        ds.loc[[40, 11]].execute()


@pytest.mark.parametrize("chunk", [4, 100])
def test_getitem_slices(client, pdf, pdf_labels, chunk):
    df = md.DataFrame(pdf, chunk_size=chunk)
    dl = md.DataFrame(pdf_labels, chunk_size=chunk)
    dates = pdf.set_index("d")
    dd = md.DataFrame(dates, chunk_size=chunk)
    mask = (np.arange(N) % 4 == 1)
    pairs = [
        (df[2:9], pdf[2:9]),
        (df[::3], pdf[::3]),
        (dl[1:5], pdf_labels[1:5]),  # integer slices are positional (pandas 3)
        (dl["f"][-4:], pdf_labels["f"][-4:]),
        (df["s"][3:12:2], pdf["s"][3:12:2]),
        (df["a"][mask], pdf["a"][mask]),
        (df["a"][list(mask)], pdf["a"][list(mask)]),
        (df["a"][[3, 4]], pdf["a"][[3, 4]]),
        (df["a"][5], pdf["a"][5]),
        (dd["2020-01-05":"2020-01-11"], dates["2020-01-05":"2020-01-11"]),
        (dd["a"]["2020-01-20":], dates["a"]["2020-01-20":]),
    ]
    check(pairs)


def test_empty_frame(client):
    e = pd.DataFrame({"a": pd.Series([], dtype="int64"), "s": pd.Series([], dtype="str")})
    df = md.DataFrame(e, chunk_size=3)
    check([(df.head(3), e.head(3)), (df.tail(3), e.tail(3)), (df.iloc[0:5], e.iloc[0:5]),
           (df.iloc[[], [1]], e.iloc[[], [1]]), (df.loc[:, ["s"]], e.loc[:, ["s"]])])


def test_bad_input(client, pdf, pdf_labels):
    df = md.DataFrame(pdf, chunk_size=5)
    with pytest.raises(IndexError):
        df.iloc[100]
    with pytest.raises(IndexError):
        df.iloc[[1, 100]]
    with pytest.raises(IndexError):
        df.iloc[np.array([True, False])]
    with pytest.raises(IndexError):
        df.iloc[:, 9]
    with pytest.raises(IndexError):
        df.iloc[1, 2, 3]
    with pytest.raises(TypeError):
        df.iloc["a"]
    with pytest.raises(TypeError):
        df.iloc["a":"b"]
    with pytest.raises(ValueError):
        df.iloc[pdf["a"] > 2]
    with pytest.raises(KeyError):
        df.loc[:, "nope"]
    with pytest.raises(KeyError):
        df.loc[3:5, ["a", "nope"]]
    with pytest.raises(KeyError):
        df.loc[1000]
    with pytest.raises(KeyError):
        df.loc[[1, 1000]]
    with pytest.raises(TypeError):
        df.head("3")
    with pytest.raises(KeyError):
        df["nope"]
    with pytest.raises(KeyError):
        md.DataFrame(pdf_labels, chunk_size=5).loc[[11]].execute()


# ---- issue 18: iloc[...] = / loc[...] =, numpy indexers, 0-d values ---------------------------------


def _shuffled(n=N):
    return make_pdf(n, index=pd.Index(np.random.default_rng(5).permutation(n) * 2, name="lab"))


def _check_set(pdf, setter, chunk, filtered=False):
    """``setter(obj, frame_kind)`` applied to a tileable and to pandas gives the same frame."""
    m = md.DataFrame(pdf, chunk_size=chunk)
    e = pdf.copy()
    if filtered:  # unknown lengths, empty chunks
        m, e = m[m["a"] > 3], e[e["a"] > 3].copy()
    key = m.key
    setter(m, md)
    setter(e, pd)
    assert m.key != key  # the handle points at new data (Mars)
    assert_pandas(m, e)


@pytest.mark.parametrize("chunk", [1, 4, 100])
def test_iloc_setitem(client, chunk):
    pdf = _shuffled()
    cases = [
        lambda o, lib: o.iloc.__setitem__((slice(2, 9), 1), 0.5),
        lambda o, lib: o.iloc.__setitem__((slice(None, None, 3), [0]), 99),
        lambda o, lib: o.iloc.__setitem__(([7, 1, 4], 0), np.array([70, 10, 40])),
        lambda o, lib: o.iloc.__setitem__((-1, [0, 1]), [5, 5.5]),
        lambda o, lib: o.iloc.__setitem__((np.arange(N) % 2 == 0, 1), -1.0),
        lambda o, lib: o.iloc.__setitem__((slice(0, 3), 4), pd.Timestamp("1999-01-01")),
    ]
    for setter in cases:
        _check_set(pdf, setter, chunk)
    _check_set(pdf, lambda o, lib: o.iloc.__setitem__((slice(1, 4), 1), 0.0), chunk, filtered=True)
    s = md.Series(pdf["f"], chunk_size=chunk)
    e = pdf["f"].copy()
    s.iloc[[0, 5]] = 1.5
    e.iloc[[0, 5]] = 1.5
    assert_pandas(s, e)


@pytest.mark.parametrize("chunk", [1, 4, 100])
def test_loc_setitem(client, chunk):
    pdf = _shuffled()
    lab = [int(x) for x in pdf.index[[3, 11, 20]]]
    cases = [
        lambda o, lib: o.loc.__setitem__((lab[0], "f"), -1.0),
        lambda o, lib: o.loc.__setitem__((lab, ["a", "f"]), 0),
        lambda o, lib: o.loc.__setitem__((o["a"] > 4, "f"), 0.0),
        lambda o, lib: o.loc.__setitem__((o["a"] > 4, "f"), o["a"] * 1.5),
        lambda o, lib: o.loc.__setitem__(o["a"] < 2, 1),
        lambda o, lib: o.loc.__setitem__((o["f"].isna(), "s"), "was-null"),
        lambda o, lib: o.loc.__setitem__((np.asarray(pdf["a"] == 3), "a"), 33),
    ]
    for setter in cases[:4] + cases[5:]:
        _check_set(pdf, setter, chunk)
    _check_set(pdf[["a", "f"]], cases[4], chunk)
    _check_set(pdf, lambda o, lib: o.loc.__setitem__((o["a"] > 5, "f"), 7.0), chunk, filtered=True)
    m = md.DataFrame(pdf, chunk_size=chunk)
    m.loc[[lab[0], -999], "a"] = 1
    with pytest.raises(KeyError):
        m.execute()
    m = md.DataFrame(pdf, chunk_size=chunk)
    m.iloc[0, 0] = "text"  # pandas 3: incompatible values raise TypeError
    with pytest.raises(TypeError):
        m.execute()


@pytest.mark.parametrize("chunk", [1, 4])
def test_getitem_numpy_and_scalar_tileable(client, chunk):
    pdf = _shuffled()
    m = md.DataFrame(pdf, chunk_size=chunk)
    mask = np.asarray(pdf["a"] > 4)
    assert_pandas(m[mask], pdf[mask])
    assert_pandas(m[list(mask)], pdf[list(mask)])
    assert_pandas(m[np.array(["a", "f"])], pdf[np.array(["a", "f"])])
    assert_pandas(m[m["a"] > 4], pdf[pdf["a"] > 4])
    with pytest.raises(ValueError):
        m[mask[:-1]]
    e = pdf.copy()
    m["g"] = m["a"].sum()
    e["g"] = pdf["a"].sum()
    m["h"] = m["f"].max()
    e["h"] = pdf["f"].max()
    m[["a"]] = m[["f"]]
    e[["a"]] = e[["f"]]
    assert_pandas(m, e)
    f = md.DataFrame(pdf, chunk_size=chunk)
    f = f[f["a"] > 6]
    fe = pdf[pdf["a"] > 6].copy()
    f["t"] = f["a"].sum()
    fe["t"] = fe["a"].sum()
    assert_pandas(f, fe)
