"""merge / join vs pandas, both join algorithms.

Shuffle joins emit rows grouped by hash partition, where pandas defines left order (inner,
left) or sorted keys (outer): those results are compared after sorting every column
(``_canon``).  Broadcast joins of the right side (and ``right`` joins broadcasting the left
side) keep pandas' order, and are compared exactly.
"""

import numpy as np
import pandas as pd
import pytest

import mars_dask.dataframe as md
from mars_dask.session import execute
from mars_dask.tiling.emit import build_graph
from mars_dask.tiling.tile import tile



def _canon(df, with_index):
    df = df.reset_index() if with_index else df.reset_index(drop=True)
    cols = list(df.columns)
    return df.sort_values(cols, na_position="last", kind="stable").reset_index(drop=True)


def check(t, expected, *, exact=None):
    """Meta first, then values; ``exact`` (default: the order-keeping algorithms) compares
    row order and labels too, otherwise rows are compared as a multiset with their labels."""
    check_all([(t, expected, exact)])


def check_all(cases):
    """Check ``(tileable, expected[, exact])`` cases, executed together in one graph."""
    cases = [c if len(c) == 3 else (*c, None) for c in cases]
    for t, expected, _ in cases:
        meta = t.data.meta
        assert list(meta.columns) == list(expected.columns)
        assert meta.dtypes.to_dict() == expected.dtypes.to_dict(), (meta.dtypes, expected.dtypes)
    execute(*[c[0] for c in cases])
    for t, expected, exact in cases:
        got = t.fetch()
        algo = getattr(t.op, "algorithm", None)
        if exact is None:
            exact = algo == "bcast-right" or (algo == "bcast-left" and t.op.how == "right")
        if exact:
            pd.testing.assert_frame_equal(got, expected)
        elif isinstance(expected.index, pd.RangeIndex):
            pd.testing.assert_index_equal(got.index, pd.RangeIndex(len(expected)))
            pd.testing.assert_frame_equal(_canon(got, False), _canon(expected, False))
        else:
            pd.testing.assert_frame_equal(_canon(got, True), _canon(expected, True))
        assert t.shape[0] == len(expected)


@pytest.fixture
def frames():
    rng = np.random.default_rng(0)
    left = pd.DataFrame({
        "k": rng.integers(0, 12, 37).astype("float64"),
        "s": rng.choice(["a", "b", "c", None], 37),
        "v": rng.integers(0, 100, 37),
    })
    left.loc[[3, 17], "k"] = np.nan
    right = pd.DataFrame({
        "k": rng.integers(5, 20, 23).astype("float64"),
        "w": rng.normal(size=23),
        "b": rng.integers(0, 2, 23).astype(bool),
    })
    right.loc[[4], "k"] = np.nan
    return left, right


@pytest.mark.parametrize("chunks", [(13, 8), (40, 6), (19, 30), (40, 30)])
def test_merge_how_method(client, frames, chunks):
    left, right = frames
    ml, mr = md.DataFrame(left, chunk_size=chunks[0]), md.DataFrame(right, chunk_size=chunks[1])
    cases = []
    for how in ("inner", "left", "right", "outer"):
        for method in ("auto", "broadcast", "shuffle"):
            if method == "broadcast" and how == "outer":
                with pytest.raises(ValueError, match="broadcast"):
                    md.merge(ml, mr, how=how, method=method)
                continue
            cases.append((md.merge(ml, mr, on="k", how=how, method=method), pd.merge(left, right, on="k", how=how)))
    check_all(cases)
    for t, _ in cases:
        how, method = t.op.how, t.op.method
        if chunks == (40, 30):
            assert t.op.algorithm in ("bcast-left", "bcast-right")  # one chunk each: one merge
        elif method == "shuffle" or how == "outer":
            assert t.op.algorithm == "shuffle"
        elif method == "broadcast":
            assert t.op.algorithm == {"left": "bcast-right", "right": "bcast-left"}.get(how, t.op.algorithm)
            assert t.op.algorithm.startswith("bcast")


def test_nan_keys_match_each_other(client):
    left = pd.DataFrame({"k": [1.0, np.nan, 2.0, np.nan], "a": range(4)})
    right = pd.DataFrame({"k": [np.nan, 2.0, 5.0], "b": range(3)})
    for method in ("shuffle", "broadcast"):
        m = md.merge(md.DataFrame(left, chunk_size=3), md.DataFrame(right, chunk_size=2), on="k", method=method)
        check(m, pd.merge(left, right, on="k"))
        assert m.fetch()["k"].isna().sum() == 2


def test_exact_order_auto_broadcast(client, frames):
    left, right = frames
    # the right side is small: broadcast keeps pandas' left order and a global RangeIndex
    m = md.DataFrame(left, chunk_size=6).merge(md.DataFrame(right, chunk_size=5), on="k", how="left")
    check(m, pd.merge(left, right, on="k", how="left"), exact=True)
    assert m.op.algorithm == "bcast-right"


def test_broadcast_limit_config(client, frames):
    import dask

    left, right = frames
    with dask.config.set({"mars-dask.dataframe.broadcast-limit": 1}):
        m = md.merge(md.DataFrame(left, chunk_size=6), md.DataFrame(right, chunk_size=5), on="k")
        check(m, pd.merge(left, right, on="k"))
    assert m.op.algorithm == "shuffle"


def _key_case(kind, method):
    rng = np.random.default_rng(1)
    n, m = 29, 17
    if kind == "string":
        lk = pd.Series(rng.choice(["x", "y", "z", "w", None], n), dtype="str")
        rk = pd.Series(rng.choice(["x", "z", "q", None], m), dtype="str")
    elif kind in ("categorical", "cat_vs_str"):
        cats = ["p", "q", "r", "s"]
        lk = pd.Series(pd.Categorical(rng.choice(cats + [None], n), categories=cats))
        rk = pd.Series(pd.Categorical(rng.choice(cats[1:], m), categories=cats))
        if kind == "cat_vs_str":
            rk = rk.astype("str")
    elif kind == "datetime":
        days = pd.date_range("2021-01-01", periods=6)
        lk = pd.Series(rng.choice(days, n)).astype("datetime64[ns]")
        lk[2] = pd.NaT
        rk = pd.Series(rng.choice(days[2:], m)).astype("datetime64[us]")
    elif kind == "int_float":
        lk = pd.Series(rng.integers(0, 8, n))
        rk = pd.Series(rng.integers(3, 12, m).astype(float))
    else:
        lk = pd.Series(rng.integers(0, 3, n))
        rk = pd.Series(rng.integers(0, 3, m))
    left = pd.DataFrame({"k": lk, "a": np.arange(n)})
    right = pd.DataFrame({"k": rk, "b": np.arange(m) * 1.5})
    on = "k"
    if kind == "multi":
        left["k2"] = rng.choice(["u", "v"], n)
        right["k2"] = rng.choice(["u", "v"], m)
        on = ["k", "k2"]
    how = "left" if method == "broadcast" else "inner"
    t = md.merge(md.DataFrame(left, chunk_size=15), md.DataFrame(right, chunk_size=9), on=on, how=how, method=method)
    return t, pd.merge(left, right, on=on, how=how)


def test_key_dtypes(client):
    kinds = ["string", "categorical", "datetime", "int_float", "multi", "cat_vs_str"]
    check_all([_key_case(k, m) for k in kinds for m in ("shuffle", "broadcast")])


def test_left_on_right_on_suffixes_indicator(client, frames):
    left, right = frames
    r2 = right.rename(columns={"k": "key"}).assign(v=np.arange(len(right)))
    cases = []
    for how in ("inner", "outer"):
        kw = dict(left_on="k", right_on="key", how=how, suffixes=("_l", "_r"), indicator=True)
        t = md.merge(md.DataFrame(left, chunk_size=8), md.DataFrame(r2, chunk_size=5), method="shuffle", **kw)
        cases.append((t, pd.merge(left, r2, **kw)))
    check_all(cases)


def test_index_joins(client, frames):
    left, right = frames
    li = left.set_index("k")
    ri = right.set_index("k")
    cases = []
    for how, method in (("inner", "auto"), ("left", "shuffle"), ("right", "auto"), ("outer", "shuffle")):
        if True:
            t = md.merge(md.DataFrame(li, chunk_size=13), md.DataFrame(ri, chunk_size=8), left_index=True, right_index=True, how=how, method=method)
            cases.append((t, pd.merge(li, ri, left_index=True, right_index=True, how=how)))
    # column on one side, index on the other
    for how in ("inner", "left", "right"):
        t = md.merge(md.DataFrame(left, chunk_size=13), md.DataFrame(ri, chunk_size=8), left_on="k", right_index=True, how=how, method="shuffle")
        cases.append((t, pd.merge(left, ri, left_on="k", right_index=True, how=how)))
        t = md.merge(md.DataFrame(li, chunk_size=13), md.DataFrame(right, chunk_size=8), left_index=True, right_on="k", how=how)
        cases.append((t, pd.merge(li, right, left_index=True, right_on="k", how=how)))
    check_all(cases)


def test_join(client, frames):
    left, right = frames
    li = left.set_index("k")
    ri = right.set_index("k")
    ml, mr = md.DataFrame(li, chunk_size=13), md.DataFrame(ri, chunk_size=8)
    cases = []
    for how in ("left", "inner", "outer", "right"):
        cases.append((ml.join(mr, how=how, suffixes=("_l", "")), li.join(ri, how=how, suffixes=("_l", ""))))
        cases.append((ml.join(mr, how=how, method="shuffle"), li.join(ri, how=how)))
    # join on a column of the caller
    for how in ("left", "inner"):
        cases.append((md.DataFrame(left, chunk_size=7).join(mr, on="k", how=how), left.join(ri, on="k", how=how)))
    # a named Series
    s = right.set_index("k")["w"]
    cases.append((ml.join(md.Series(s, chunk_size=5), method="shuffle"), li.join(s)))
    check_all(cases)
    with pytest.raises(ValueError, match="overlap"):
        ml.join(md.DataFrame(li, chunk_size=5))


def test_cross_merge(client):
    left = pd.DataFrame({"a": [1, 2, 3, 4, 5]})
    right = pd.DataFrame({"b": ["x", "y", None]})
    t = md.merge(md.DataFrame(left, chunk_size=2), md.DataFrame(right, chunk_size=2), how="cross")
    check(t, pd.merge(left, right, how="cross"), exact=True)


def test_empty_sides(client, frames):
    left, right = frames
    # pandas' dtypes of a join with an empty side depend on the data (no row matches):
    # compare values with the documented metadata dtypes
    cases = []
    el, er = left.iloc[:0], right.iloc[:0]
    for how in ("inner", "left", "right", "outer"):
        for method in ("auto", "shuffle"):
            t = md.merge(md.DataFrame(el, chunk_size=13), md.DataFrame(right, chunk_size=13), on="k", how=how, method=method)
            cases.append((t, pd.merge(el, right, on="k", how=how).astype(t.data.meta.dtypes.to_dict())))
            t = md.merge(md.DataFrame(left, chunk_size=19), md.DataFrame(er, chunk_size=9), on="k", how=how, method=method)
            cases.append((t, pd.merge(left, er, on="k", how=how).astype(t.data.meta.dtypes.to_dict())))
    check_all(cases)


def test_unknown_lengths_filtered(client, frames):
    left, right = frames
    ml, mr = md.DataFrame(left, chunk_size=8), md.DataFrame(right, chunk_size=6)
    fl = ml[ml["v"] > 60]  # some chunks end up empty
    fr = mr[mr["w"] > 0]
    pl, pr = left[left["v"] > 60], right[right["w"] > 0]
    cases = [(md.merge(fl, fr, on="k", how="left", method=m), pd.merge(pl, pr, on="k", how="left")) for m in ("auto", "broadcast", "shuffle")]
    cases.append((md.merge(fl, fr, on="k", how="outer"), pd.merge(pl, pr, on="k", how="outer")))
    cases.append((md.merge(fl, mr, on="k", how="right", method="broadcast"), pd.merge(pl, right, on="k", how="right")))
    check_all(cases)


def test_validate(client):
    left = pd.DataFrame({"k": [1, 2, 3, 4, 5, 6], "a": range(6)})
    right = pd.DataFrame({"k": [1, 2, 2, 7], "b": range(4)})
    ml, mr = md.DataFrame(left, chunk_size=4), md.DataFrame(right, chunk_size=3)
    check(md.merge(ml, mr, on="k", validate="one_to_many"), pd.merge(left, right, on="k", validate="one_to_many"))
    t = md.merge(ml, mr, on="k", validate="one_to_one")
    with pytest.raises(pd.errors.MergeError):
        t.execute()
    with pytest.raises(pd.errors.MergeError):
        pd.merge(left, right, on="k", validate="one_to_one")


def test_bad_inputs():
    left = md.DataFrame(pd.DataFrame({"k": [1, 2], "a": [1.0, 2.0]}), chunk_size=1)
    right = md.DataFrame(pd.DataFrame({"k": ["1", "2"], "b": [1, 2], "j": [3, 4]}), chunk_size=1)
    with pytest.raises(KeyError, match="nope"):
        md.merge(left, right, on="nope")
    with pytest.raises(KeyError):
        md.merge(left, right, left_on="k", right_on="missing")
    with pytest.raises(ValueError, match="merge on"):
        md.merge(left, right, on="k")  # int64 vs str keys
    with pytest.raises(ValueError, match="how"):
        md.merge(left, right, on="k", how="sideways")
    with pytest.raises(ValueError, match="method"):
        md.merge(left, right, on="k", method="magic")
    with pytest.raises(pd.errors.MergeError):
        md.merge(left, md.DataFrame(pd.DataFrame({"z": [1, 2]}), chunk_size=1))  # no common columns
    with pytest.raises(TypeError):
        md.merge(left, [1, 2, 3])
    with pytest.raises(NotImplementedError):
        md.merge(left, left, on="k", sort=True)


def test_shuffle_join_graph_has_boundaries(frames):
    left, right = frames
    t = md.merge(md.DataFrame(left, chunk_size=10), md.DataFrame(right, chunk_size=5), on="k", method="shuffle")
    tile([t.data], None)
    assert t.op.algorithm == "shuffle"
    hlg = build_graph(t.data.chunks)
    marked = {}
    for _name, layer in hlg.layers.items():
        ann = layer.annotations or {}
        if "mars_boundary" in ann:
            for k in layer:
                v = ann["mars_boundary"](k)
                if v is not None:
                    marked[k] = v
    map_keys = {k for k in marked if "-shuffle-left-map" in k[0] or "-shuffle-right-map" in k[0]}
    assert len(map_keys) == 4 + 5  # one map output per input chunk of each side
    assert set(marked.values()) == {"shuffle"}
    # reducers are not boundaries
    assert all("-map" in k[0] for k in marked)
