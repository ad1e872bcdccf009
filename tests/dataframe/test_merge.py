"""merge / join vs pandas, for every join algorithm: dtypes, row order and index exactly
pandas' (``assert_frame_equal`` without sorting), with Mars's join arguments.

The tileable's metadata is checked after execution: a ``left``/``right``/``outer`` join's
dtypes depend on whether some rows are unmatched (pandas upcasts then), which is settled
from the data; before execution the metadata holds the upcast dtypes (checked too).
"""

import numpy as np
import pandas as pd
import pytest

import mars_dask.dataframe as md
from mars_dask.session import execute
from mars_dask.tiling.emit import build_graph, postorder
from mars_dask.tiling.tile import tile


def check(t, expected):
    check_all([(t, expected)])


def check_all(cases):
    """Check ``(tileable, expected)`` cases, executed together: columns before execution,
    dtypes (metadata), values, row order and index after."""
    for t, expected in cases:
        assert list(t.data.meta.columns) == list(expected.columns)
    execute(*[c[0] for c in cases])
    for t, expected in cases:
        meta = t.data.meta
        assert meta.dtypes.to_dict() == expected.dtypes.to_dict(), (t.op.how, t.op.algorithm, meta.dtypes, expected.dtypes)
        got = t.fetch()
        pd.testing.assert_frame_equal(got, expected, obj=f"{t.op.how}/{t.op.algorithm}")
        assert t.shape[0] == len(expected)


def mdf(df, chunk_size):
    return md.DataFrame(df, chunk_size=chunk_size)
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


@pytest.mark.parametrize("chunks", [(19, 30), (40, 30)])
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
            assert t.op.algorithm == "single"  # one chunk each: one merge
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
    check(m, pd.merge(left, right, on="k", how="left"))
    assert m.op.algorithm == "bcast-right"


def test_broadcast_limit_config(client, frames):
    import dask

    left, right = frames
    with dask.config.set({"mars-dask.dataframe.broadcast-limit": 1}):
        m = md.merge(md.DataFrame(left, chunk_size=6), md.DataFrame(right, chunk_size=5), on="k")
        check(m, pd.merge(left, right, on="k"))
    assert m.op.algorithm == "shuffle"


def _key_case(kind, method, how, sort):
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
    elif kind == "datetime_tz":
        days = pd.date_range("2021-03-27", periods=6, freq="12h", tz="Europe/Paris")
        lk = pd.Series(rng.choice(days, n)).dt.tz_convert("Europe/Paris")
        lk[4] = pd.NaT
        rk = pd.Series(rng.choice(days[1:], m)).dt.tz_convert("Europe/Paris")
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
    t = md.merge(md.DataFrame(left, chunk_size=15), md.DataFrame(right, chunk_size=9), on=on, how=how, method=method,
                 sort=sort)
    return t, pd.merge(left, right, on=on, how=how, sort=sort)


def test_key_dtypes(client):
    kinds = ["string", "categorical", "datetime", "datetime_tz", "int_float", "multi", "cat_vs_str"]
    variants = [("shuffle", "inner", False), ("shuffle", "outer", False), ("broadcast", "left", False),
                ("broadcast", "left", True), ("shuffle", "right", True)]
    check_all([_key_case(k, *v) for k in kinds for v in variants])


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
    check(t, pd.merge(left, right, how="cross"))


def test_empty_sides(client, frames):
    left, right = frames
    # pandas' dtypes of a join with an empty side depend on the data (no row matches)
    cases = []
    el, er = left.iloc[:0], right.iloc[:0]
    for how in ("inner", "left", "right", "outer"):
        for method in ("auto", "shuffle"):
            t = md.merge(md.DataFrame(el, chunk_size=13), md.DataFrame(right, chunk_size=13), on="k", how=how, method=method)
            cases.append((t, pd.merge(el, right, on="k", how=how)))
            t = md.merge(md.DataFrame(left, chunk_size=19), md.DataFrame(er, chunk_size=9), on="k", how=how, method=method)
            cases.append((t, pd.merge(left, er, on="k", how=how)))
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
    with pytest.raises(NotImplementedError, match="magic"):  # as Mars
        md.merge(left, right, on="k", method="magic")
    with pytest.raises(pd.errors.MergeError):
        md.merge(left, md.DataFrame(pd.DataFrame({"z": [1, 2]}), chunk_size=1))  # no common columns
    with pytest.raises(TypeError):
        md.merge(left, [1, 2, 3])


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
    # and one per merged partition, shuffled back to the left's chunks (left order)
    assert len({k for k in marked if "-reorder-map" in k[0]}) == 5
    assert set(marked.values()) == {"shuffle"}
    # reducers are not boundaries
    assert all("-map" in k[0] for k in marked)


# ---- dtypes decided by the data, as pandas decides them -------------------------------------


def _typed_frames():
    """A left frame whose keys all exist on the right, and a right frame with columns of
    many dtypes (int, int32 as ``dt.month`` gives, bool, nullable, Arrow, categorical,
    datetime with tz)."""
    rng = np.random.default_rng(3)
    n, m = 31, 14
    right = pd.DataFrame({
        "k": np.arange(m) * 2,
        "i": rng.integers(0, 1000, m),
        "d": pd.date_range("2024-01-15", periods=m, freq="17D"),
        "b": rng.integers(0, 2, m).astype(bool),
        "n": pd.array(rng.integers(0, 9, m), dtype="Int64"),
        "ar": pd.array(rng.integers(0, 9, m), dtype="int64[pyarrow]"),
        "c": pd.Categorical(rng.choice(["x", "y"], m)),
        "tz": pd.date_range("2024-03-30", periods=m, freq="7h", tz="Europe/Paris"),
    })
    right["month"] = right["d"].dt.month
    left = pd.DataFrame({"k": rng.choice(right["k"].to_numpy()[:-1], n), "a": rng.integers(0, 50, n)})
    return left, right


def test_left_join_keeps_dtypes_when_all_keys_match(client):
    left, right = _typed_frames()
    cases = []
    for chunks in ((7, 5), ((10, 0, 20, 1), 14)):
        for method in ("auto", "broadcast", "shuffle"):
            ml, mr = mdf(left, chunks[0]), mdf(right, chunks[1])
            t = md.merge(ml, mr, on="k", how="left", method=method)
            # before execution: the dtypes of a result with unmatched rows
            assert t.dtypes["i"] == np.float64 and t.dtypes["b"] == np.dtype(object) and t.dtypes["month"] == np.float64
            cases.append((t, pd.merge(left, right, on="k", how="left")))
            cases.append((ml.join(mr.set_index("k"), on="k", method=method), left.join(right.set_index("k"), on="k")))
        # every right key exists on the left only for the right's own keys
        cases.append((md.merge(mdf(right[["k"]], chunks[1]), mdf(left, 9), on="k", how="right", method="shuffle"),
                      pd.merge(right[["k"]], left, on="k", how="right")))
        cases.append((md.merge(mdf(right, chunks[1]), mdf(right[["k"]].iloc[::-1], 4), on="k", how="outer"),
                      pd.merge(right, right[["k"]].iloc[::-1], on="k", how="outer")))
    check_all(cases)
    expected = pd.merge(left, right, on="k", how="left")
    assert expected.dtypes["i"] == np.int64 and expected.dtypes["month"] == np.int32  # pandas keeps them


def test_etl_month_column_stays_int(client):
    left, right = _typed_frames()
    t = mdf(left, 8).merge(mdf(right, 5), on="k", how="left")  # right["month"] is ``d.dt.month`` (int32)
    check(t, pd.merge(left, right, on="k", how="left"))
    assert t.fetch()["month"].dtype == np.int32


def test_etl_month_from_the_dt_accessor(client):
    left, right = _typed_frames()
    mr = mdf(right.drop(columns=["month"]), 5)
    mr["month"] = mr["d"].dt.month
    check(mdf(left, 8).merge(mr, on="k", how="left"), pd.merge(left, right, on="k", how="left"))


def test_one_unmatched_row_upcasts_the_whole_result(client):
    left, right = _typed_frames()
    left = pd.concat([left, pd.DataFrame({"k": [999], "a": [1]})], ignore_index=True)  # in the last chunk only
    cases = []
    for method in ("auto", "shuffle"):
        t = md.merge(mdf(left, 8), mdf(right, 5), on="k", how="left", method=method)
        cases.append((t, pd.merge(left, right, on="k", how="left")))
        rl = pd.concat([right.iloc[:3].assign(k=[-1, -2, -3]), right], ignore_index=True)  # unmatched in chunk 0
        t = md.merge(mdf(left[["k", "a"]], 8), mdf(rl, 5), on="k", how="right", method=method)
        cases.append((t, pd.merge(left[["k", "a"]], rl, on="k", how="right")))
    check_all(cases)
    assert cases[0][1].dtypes["i"] == np.float64 and cases[0][1].dtypes["b"] == np.dtype(object)


def test_nullable_and_arrow_keys_and_columns(client):
    left = pd.DataFrame({"k": pd.array([1, 2, None, 4, 2, 7], dtype="Int64"),
                         "s": pd.array(["a", None, "c", "d", "e", "f"], dtype="string[pyarrow]")})
    right = pd.DataFrame({"k": pd.array([2, None, 4, 9], dtype="Int64"), "v": pd.array([1, 2, 3, 4], dtype="Int32"),
                          "w": pd.array([0.5, None, 1.5, 2.5], dtype="double[pyarrow]")})
    cases = [(md.merge(mdf(left, 4), mdf(right, 3), on="k", how=how, method=method),
              pd.merge(left, right, on="k", how=how))
             for how in ("left", "outer", "inner", "right") for method in ("auto", "shuffle")
             if not (how == "outer" and method == "broadcast")]
    check_all(cases)


# ---- row order and index exactly pandas' ---------------------------------------------------


def _dup_frames():
    """Many-to-many keys, null keys on both sides, unmatched keys on both sides."""
    rng = np.random.default_rng(7)
    n, m = 40, 22
    left = pd.DataFrame({"k": rng.integers(0, 9, n).astype(float), "a": np.arange(n)},
                        index=pd.Index(rng.permutation(n) + 100, name="L"))
    left.loc[left.index[[5, 30]], "k"] = np.nan
    right = pd.DataFrame({"k": rng.integers(4, 14, m).astype(float), "b": np.arange(m) * 10.0},
                         index=pd.Index(rng.permutation(m) + 500, name="R"))
    right.loc[right.index[[3]], "k"] = np.nan
    return left, right


@pytest.mark.parametrize("chunks", [(9, 6), ((13, 0, 20, 7), (5, 0, 1, 6, 10))])
def test_row_order_every_algorithm(client, chunks):
    left, right = _dup_frames()
    ml, mr = mdf(left, chunks[0]), mdf(right, chunks[1])
    cases = []
    for how in ("inner", "left", "right", "outer"):
        for method in ("auto", "broadcast", "shuffle"):
            for sort in (False, True):
                if method == "broadcast" and how == "outer":
                    continue
                t = md.merge(ml, mr, on="k", how=how, method=method, sort=sort)
                cases.append((t, pd.merge(left, right, on="k", how=how, sort=sort)))
    check_all(cases)
    algos = {(t.op.how, t.op.method, t.op.sort): t.op.algorithm for t, _ in cases}
    assert algos[("inner", "broadcast", False)] in ("bcast-left", "bcast-right")
    assert algos[("left", "shuffle", False)] == "shuffle"
    assert algos[("right", "broadcast", True)] == "bcast-left"


def test_inner_broadcast_of_the_left_keeps_left_order(client):
    left, right = _dup_frames()
    big = pd.concat([right] * 3, ignore_index=True)
    t = md.merge(mdf(left, 40), mdf(big, 7), on="k", method="broadcast")
    check(t, pd.merge(left, big, on="k"))
    assert t.op.algorithm == "bcast-left" and len(t.data.chunks) == 10  # ranges of the left rows, one per right chunk


def test_order_with_filtered_unknown_lengths_and_index_joins(client):
    left, right = _dup_frames()
    ml, mr = mdf(left, 7), mdf(right, 5)
    fl, fr = ml[ml["a"] % 3 != 1], mr[mr["b"] > 40]
    pl, pr = left[left["a"] % 3 != 1], right[right["b"] > 40]
    li, ri = pl.set_index("k"), pr.set_index("k")
    cases = []
    for how in ("inner", "left", "right", "outer"):
        cases.append((md.merge(fl, fr, on="k", how=how, method="shuffle"), pd.merge(pl, pr, on="k", how=how)))
        cases.append((md.merge(fl.set_index("k"), fr.set_index("k"), left_index=True, right_index=True, how=how,
                               method="shuffle"),
                      pd.merge(li, ri, left_index=True, right_index=True, how=how)))
        cases.append((fl.join(fr.set_index("k"), on="k", how=how, method="shuffle"), pl.join(ri, on="k", how=how)))
        cases.append((md.merge(fl, fr.set_index("k"), left_on="k", right_index=True, how=how, method="shuffle"),
                      pd.merge(pl, ri, left_on="k", right_index=True, how=how)))
    for sort in (False, True):
        cases.append((fl.set_index("k").join(fr.set_index("k"), how="left", sort=sort, method="shuffle"),
                      li.join(ri, how="left", sort=sort)))
    check_all(cases)


def test_categorical_and_tz_columns_multikey(client):
    rng = np.random.default_rng(11)
    cats = pd.CategoricalDtype(["z", "a", "m"])
    n, m = 35, 18
    left = pd.DataFrame({
        "k1": pd.Series(rng.choice(["z", "a", "m", None], n), dtype=cats),
        "k2": pd.date_range("2021-10-30", periods=4, freq="D", tz="Europe/Paris")[rng.integers(0, 4, n)],
        "c": pd.Categorical(rng.choice(["p", "q"], n)),
        "a": rng.integers(0, 5, n),
    })
    right = pd.DataFrame({
        "k1": pd.Series(rng.choice(["a", "m", "z"], m), dtype=cats),
        "k2": pd.date_range("2021-10-31", periods=3, freq="D", tz="Europe/Paris")[rng.integers(0, 3, m)],
        "t": pd.date_range("2020-01-01", periods=m, freq="h", tz="UTC"),
        "b": rng.integers(0, 2, m).astype(bool),
    })
    ml, mr = mdf(left, 8), mdf(right, 5)
    cases = []
    for how in ("inner", "left", "right", "outer"):
        for method, sort in (("shuffle", False), ("shuffle", True), ("auto", False)):
            t = md.merge(ml, mr, on=["k1", "k2"], how=how, method=method, sort=sort)
            cases.append((t, pd.merge(left, right, on=["k1", "k2"], how=how, sort=sort)))
    check_all(cases)


# ---- Mars's arguments ----------------------------------------------------------------------


def test_mars_merge_arguments(client, frames):
    import dask

    left, right = frames
    ml, mr = mdf(left, 8), mdf(right, 5)
    expected = pd.merge(left, right, on="k", how="left")
    cases = [
        (md.merge(ml, mr, on="k", how="left", auto_merge="none", auto_merge_threshold=2, bloom_filter=True,
                  bloom_filter_options={"filter": "small", "error_rate": 0.05}, bloom_filter_chunk_threshold=3),
         expected),
        (ml.merge(mr, on="k", how="left", auto_merge="after", bloom_filter=False, method="shuffle"), expected),
        (ml.merge(mr, "inner", "k", auto_merge="before", bloom_filter="auto"), pd.merge(left, right, "inner", "k")),
        (md.merge(ml, mr, on="k", how="left", method="shuffle"), expected),  # small: broadcast unless forced
    ]
    check_all(cases)
    assert [t.op.algorithm for t, _ in cases] == ["bcast-right", "shuffle", "bcast-right", "shuffle"]
    with dask.config.set({"mars-dask.dataframe.broadcast-limit": 1}):  # read when the join is built
        forced, auto = md.merge(ml, mr, on="k", how="left", method="broadcast"), md.merge(ml, mr, on="k", how="left")
    check_all([(forced, expected), (auto, expected)])
    assert (forced.op.algorithm, auto.op.algorithm) == ("bcast-right", "shuffle")
    for kw, exc in (
        (dict(auto_merge="sometimes"), ValueError),
        (dict(bloom_filter="maybe"), ValueError),
        (dict(bloom_filter_options=[("filter", "large")]), TypeError),
        (dict(bloom_filter_options={"size": 3}), ValueError),
        (dict(bloom_filter_options={"filter": "tiny"}), ValueError),
        (dict(auto_merge_threshold="8"), TypeError),
        (dict(method="hash"), NotImplementedError),
        (dict(method="broadcast", validate="one_to_one"), ValueError),
    ):
        with pytest.raises(exc):
            md.merge(ml, mr, on="k", **kw)


def test_mars_join_signature(client, frames):
    left, right = frames
    li, ri = left.set_index("k"), right.set_index("k").rename(columns={"w": "v"})
    ml, mr = mdf(li, 9), mdf(ri, 6)
    # Mars's positional order: other, on, how, lsuffix, rsuffix, sort, method
    t1 = ml.join(mr, None, "left", "_l", "_r", False, "shuffle")
    t2 = ml.join(mr, how="outer", lsuffix="_l", rsuffix="_r", method=None, auto_merge="none",
                 auto_merge_threshold=4, bloom_filter=False)
    t3 = ml.join(mr, how="inner", lsuffix="_l", rsuffix="_r", sort=True, method="broadcast")
    check_all([(t1, li.join(ri, lsuffix="_l", rsuffix="_r")),
               (t2, li.join(ri, how="outer", lsuffix="_l", rsuffix="_r")),
               (t3, li.join(ri, how="inner", lsuffix="_l", rsuffix="_r", sort=True))])
    assert t1.op.algorithm == "shuffle" and t3.op.algorithm.startswith("bcast")
    with pytest.raises(ValueError, match="auto_merge"):
        ml.join(mr, lsuffix="_l", auto_merge="never")
    with pytest.raises(ValueError, match="overlap"):
        ml.join(mr)


def test_left_join_on_a_lookup_table_knows_its_lengths(client):
    """A left join broadcasting a right side whose keys are unique has one row per left row:
    the result's chunk lengths are the left's (known without executing the join, so no
    task gathers them), and the values are still pandas'.  Duplicated keys, two null keys
    (pandas matches nulls to each other) or a duplicated key pair leave them unknown until
    execution, and the rows are still pandas'."""
    rng = np.random.default_rng(3)
    left = pd.DataFrame({"k": rng.integers(0, 30, 50).astype("float64"), "j": rng.integers(0, 2, 50) * 1.0,
                         "v": rng.random(50)})
    left.loc[[4, 9], "k"] = np.nan
    # float columns: the dtypes do not depend on the data, so nothing runs before the merge
    lookup = pd.DataFrame({"k": np.r_[np.arange(25.0), np.nan], "j": 0.0, "a": np.arange(26.0), "b": rng.random(26)})
    cases = [
        (lookup, ["k"], True),
        (pd.concat([lookup, lookup.iloc[[3]]]), ["k"], False),
        (pd.concat([lookup, lookup.iloc[[25]]]), ["k"], False),  # two null keys
        (pd.concat([lookup, lookup.iloc[:5].assign(j=1)]), ["k", "j"], True),
        (pd.concat([lookup, lookup.iloc[:5]]), ["k", "j"], False),
    ]
    for right, on, unique in cases:
        t = mdf(left, (20, 0, 20, 10)).merge(mdf(right, 8), on=on, how="left")
        t._ensure_tiled()
        assert (t.nsplits[0] == (20, 0, 20, 10)) is unique, (on, t.nsplits)
        steps = {c.key[0].rsplit("-", 1)[-1] for c in postorder(t.chunks)[0]}
        assert ("len" in steps) is not unique, steps
        check(t, pd.merge(left, right, on=on, how="left"))
