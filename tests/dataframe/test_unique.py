"""value_counts, unique, nlargest/nsmallest, drop_duplicates and duplicated vs pandas
(tree and shuffle algorithms, several chunkings, nulls, strings, categoricals, datetimes,
filtered inputs with empty chunks, empty frames, bad input)."""

import dask
import numpy as np
import pandas as pd
import pytest

import mars_dask
import mars_dask.dataframe as md

from .helpers import assert_pandas

N = 41


def make_pdf(n=N, seed=1):
    rng = np.random.default_rng(seed)
    f = rng.integers(0, 4, n).astype(float)
    f[rng.random(n) < 0.2] = np.nan
    return pd.DataFrame({
        "k": rng.integers(0, 5, n),
        "f": f,
        "s": pd.array(rng.choice(["a", "bb", "c", None], size=n), dtype="str"),
        "c": pd.Categorical(rng.choice(["x", "y"], size=n), categories=["z", "y", "x"]),
        "d": pd.to_datetime("2022-01-01") + pd.to_timedelta(rng.integers(0, 3, n), unit="D"),
        "v": rng.normal(size=n),
    }, index=pd.Index(rng.permutation(np.arange(100, 100 + n)), name="idx"))


@pytest.fixture(scope="module")
def pdf():
    return make_pdf()


def check(pairs):
    mars_dask.execute(*[t for t, _ in pairs])
    for t, exp in pairs:
        assert_pandas(t, exp)


@pytest.mark.parametrize("chunk", [4, 9, 100])
def test_value_counts(client, pdf, chunk):
    df = md.DataFrame(pdf, chunk_size=chunk)
    pairs = []
    for col in ["k", "f", "s", "c", "d"]:
        pairs.append((df[col].value_counts(), pdf[col].value_counts()))
        pairs.append((df[col].value_counts(dropna=False), pdf[col].value_counts(dropna=False)))
    pairs += [
        (df["k"].value_counts(normalize=True), pdf["k"].value_counts(normalize=True)),
        (df["s"].value_counts(ascending=True), pdf["s"].value_counts(ascending=True)),
        (df["s"].value_counts(sort=False), pdf["s"].value_counts(sort=False)),
        (df["c"].value_counts(sort=False, dropna=False), pdf["c"].value_counts(sort=False, dropna=False)),
        (df["f"].value_counts(normalize=True, dropna=False), pdf["f"].value_counts(normalize=True, dropna=False)),
        (df.value_counts(subset=["k", "s"]), pdf.value_counts(subset=["k", "s"])),
        (df.value_counts(subset=["k", "f"], dropna=False, normalize=True),
         pdf.value_counts(subset=["k", "f"], dropna=False, normalize=True)),
        (df[["k", "c"]].value_counts(), pdf[["k", "c"]].value_counts()),
    ]
    check(pairs)


def test_value_counts_ties_many_chunks(client):
    rng = np.random.default_rng(5)
    s = pd.Series(rng.integers(0, 60, 400), name="x")  # many ties: first appearance order decides
    ms = md.Series(s, chunk_size=13)
    check([(ms.value_counts(), s.value_counts()), (ms.value_counts(ascending=True), s.value_counts(ascending=True))])


@pytest.mark.parametrize("chunk", [4, 100])
def test_unique(client, pdf, chunk):
    df = md.DataFrame(pdf, chunk_size=chunk)
    results = [(df[c].unique(), pdf[c].unique()) for c in ["k", "f", "s", "c", "d"]]
    results.append((md.unique(df["k"]), pd.unique(pdf["k"])))
    mars_dask.execute(*[t for t, _ in results])
    for t, exp in results:
        got = t.fetch()
        assert type(got) is type(exp)
        if isinstance(exp, np.ndarray):
            np.testing.assert_array_equal(got, exp)
        else:
            pd.testing.assert_extension_array_equal(got, exp)


@pytest.mark.parametrize("chunk", [4, 100])
def test_nlargest_nsmallest(client, pdf, chunk):
    df = md.DataFrame(pdf, chunk_size=chunk)
    pairs = []
    for name in ("nlargest", "nsmallest"):
        for keep in ("first", "last", "all"):
            pairs.append((getattr(df, name)(6, "k", keep=keep), getattr(pdf, name)(6, "k", keep=keep)))
            pairs.append((getattr(df["f"], name)(5, keep=keep), getattr(pdf["f"], name)(5, keep=keep)))
        pairs.append((getattr(df, name)(7, ["k", "v"]), getattr(pdf, name)(7, ["k", "v"])))
        pairs.append((getattr(df, name)(3, "d"), getattr(pdf, name)(3, "d")))
        pairs.append((getattr(df, name)(100, "f"), getattr(pdf, name)(100, "f")))
        pairs.append((getattr(df["v"], name)(), getattr(pdf["v"], name)()))
    check(pairs)


@pytest.mark.parametrize("method,chunk", [("tree", 6), ("shuffle", 10), ("auto", 15), ("tree", 100)])
def test_drop_duplicates(client, pdf, method, chunk):
    df = md.DataFrame(pdf, chunk_size=chunk)
    pairs = []
    for keep in ("first", "last", False):
        for subset in (["k", "s"], "f", ["c", "d"]):
            pairs.append((df.drop_duplicates(subset=subset, keep=keep, method=method),
                          pdf.drop_duplicates(subset=subset, keep=keep)))
        pairs.append((df.duplicated(subset=["k", "f"], keep=keep, method=method),
                       pdf.duplicated(subset=["k", "f"], keep=keep)))
        pairs.append((df["s"].drop_duplicates(keep=keep, method=method), pdf["s"].drop_duplicates(keep=keep)))
        pairs.append((df["s"].duplicated(keep=keep, method=method), pdf["s"].duplicated(keep=keep)))
    pairs.append((df.drop_duplicates(method=method), pdf.drop_duplicates()))
    pairs.append((df[["k", "c"]].drop_duplicates(method=method), pdf[["k", "c"]].drop_duplicates()))
    pairs.append((df.drop_duplicates("k", ignore_index=True, method=method), pdf.drop_duplicates("k", ignore_index=True)))
    check(pairs)


def test_drop_duplicates_auto_large_uses_shuffle(client):
    rng = np.random.default_rng(2)
    p = pd.DataFrame({"a": rng.integers(0, 50, 200), "b": rng.integers(0, 3, 200)})
    df = md.DataFrame(p, chunk_size=30)
    with dask.config.set({"mars-dask.tiling.chunk-store-limit": 16}):
        r = df.drop_duplicates(["a", "b"])
        assert_pandas(r, p.drop_duplicates(["a", "b"]))
    keys = {c.key[0] for c in _walk(r.chunks)}
    assert any(k.endswith("-dedup-map") for k in keys), keys
    r2 = df.drop_duplicates(["a", "b"])
    assert_pandas(r2, p.drop_duplicates(["a", "b"]))
    assert not any(k.endswith("-dedup-map") for k in {c.key[0] for c in _walk(r2.chunks)})


def _walk(chunks):
    seen, stack = {}, list(chunks)
    while stack:
        c = stack.pop()
        if c.key in seen:
            continue
        seen[c.key] = c
        stack.extend(c.inputs)
    return list(seen.values())


def test_filtered_inputs_with_empty_chunks(client, pdf):
    df = md.DataFrame(pdf, chunk_size=5)
    mask = (pdf["k"] >= 3) & (pdf["v"] > 0)
    f = df[(df["k"] >= 3) & (df["v"] > 0)]
    exp = pdf[mask]
    check([
        (f["k"].value_counts(), exp["k"].value_counts()),
        (f.nlargest(4, "v"), exp.nlargest(4, "v")),
        (f.drop_duplicates("k", method="tree"), exp.drop_duplicates("k")),
        (f.drop_duplicates("k", method="shuffle", keep="last"), exp.drop_duplicates("k", keep="last")),
        (f.duplicated("s", method="shuffle"), exp.duplicated("s")),
        (f.drop_duplicates("s", ignore_index=True, method="shuffle"), exp.drop_duplicates("s", ignore_index=True)),
    ])
    none = df[df["k"] > 100]
    e0 = pdf[pdf["k"] > 100]
    check([
        (none["k"].value_counts(), e0["k"].value_counts()),
        (none.drop_duplicates("k"), e0.drop_duplicates("k")),
        (none.nsmallest(3, "v"), e0.nsmallest(3, "v")),
    ])


def test_empty_frame(client):
    e = pd.DataFrame({"a": pd.Series([], dtype="int64"), "s": pd.Series([], dtype="str")})
    df = md.DataFrame(e, chunk_size=2)
    check([
        (df["a"].value_counts(), e["a"].value_counts()),
        (df.drop_duplicates(), e.drop_duplicates()),
        (df.duplicated(), e.duplicated()),
        (df.nlargest(2, "a"), e.nlargest(2, "a")),
    ])


def test_bad_input(client, pdf):
    df = md.DataFrame(pdf, chunk_size=5)
    with pytest.raises(KeyError, match="nope"):
        df.drop_duplicates(subset=["k", "nope"])
    with pytest.raises(KeyError):
        df.duplicated(subset="nope")
    with pytest.raises(ValueError):
        df.drop_duplicates(keep="middle")
    with pytest.raises(ValueError):
        df.drop_duplicates(method="magic")
    with pytest.raises(KeyError):
        df.nlargest(3, "nope")
    with pytest.raises(TypeError):
        df.nlargest(3, "s")  # pandas: object columns cannot use nlargest
    with pytest.raises(TypeError):
        df["s"].nsmallest(2)
    with pytest.raises(ValueError):
        df.nlargest(3, "k", keep="none")
    with pytest.raises(ValueError):
        df["k"].value_counts(normalize="yes")
    with pytest.raises(KeyError):
        df.value_counts(subset=["nope"])
