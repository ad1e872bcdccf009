"""pivot_table / crosstab vs pandas (exact)."""

import numpy as np
import pandas as pd
import pytest

import mars_dask.dataframe as md

from .helpers import assert_pandas


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
