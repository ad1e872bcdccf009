"""Arithmetic and comparisons with index alignment, vs pandas."""

import numpy as np
import pandas as pd
import pytest

import mars_dask.dataframe as md
import mars_dask.tensor as mt
from mars_dask.dataframe.arithmetic import align, rechunk_rows

from .helpers import assert_pandas, assert_pandas_all


@pytest.fixture
def frame():
    rng = np.random.default_rng(0)
    n = 23
    return pd.DataFrame({
        "a": rng.integers(-5, 5, n),
        "b": rng.normal(size=n),
        "c": np.where(rng.random(n) < 0.2, np.nan, rng.normal(size=n)),
    })


CHUNKS = [(5, 7), (23, 4)]


@pytest.mark.parametrize("cl,cr", CHUNKS)
def test_same_data_different_chunks(client, frame, cl, cr):
    a, b = md.DataFrame(frame, chunk_size=cl), md.DataFrame(frame, chunk_size=cr)
    assert_pandas(a + b, frame + frame)  # ints stay ints: labels known equal
    assert_pandas(a["a"] * b["b"], frame["a"] * frame["b"])
    assert_pandas(a["a"] > b["a"], frame["a"] > frame["a"])
    assert_pandas(a.sub(b["b"], axis=0), frame.sub(frame["b"], axis=0))


def test_unsorted_equal_index_keeps_order(client, frame):
    f = frame.set_axis(np.random.default_rng(1).permutation(len(frame)) * 3)
    a, b = md.DataFrame(f, chunk_size=5), md.DataFrame(f, chunk_size=7)
    got = assert_pandas(a * b, f * f)
    assert list(got.index) == list(f.index)
    # unknown labels at build time (filtered on both sides): runtime check finds them equal
    fa, fb = a[a["a"] > -100], b[b["a"] > -100]
    exp = f.astype({"a": "float64"}) * f.astype({"a": "float64"})  # build time cannot know: upcast
    got = (fa + fb).execute().fetch()
    assert list(got.index) == list(f.index)
    pd.testing.assert_frame_equal(got, f + f, check_dtype=False)
    assert (fa + fb).dtypes["a"] == exp.dtypes["a"]


@pytest.mark.parametrize("cl,cr", [(3, 4), (50, 50)])
def test_different_indexes_sorted_union(client, cl, cr):
    s1 = pd.Series(np.arange(12), index=[5, 3, 1, 7, 9, 0, 2, 4, 6, 8, 30, 22], name="x")
    s2 = pd.Series(np.arange(9) * 10.0, index=[1, 3, 11, 12, -1, 5, 40, 22, 7], name="x")
    a, b = md.Series(s1, chunk_size=cl), md.Series(s2, chunk_size=cr)
    assert_pandas(a + b, s1 + s2)
    assert_pandas(a.add(b, fill_value=0), s1.add(s2, fill_value=0))
    assert_pandas(b.rsub(a, fill_value=1), s2.rsub(s1, fill_value=1))
    assert_pandas(a.lt(b), s1.lt(s2))
    assert_pandas(a.div(b), s1.div(s2))
    # filtered (unknown lengths, some chunks empty)
    fa, fb = a[a > 6], b[b < 50]
    assert_pandas(fa + fb, s1[s1 > 6] + s2[s2 < 50])


def test_string_and_datetime_labels(client):
    s1 = pd.Series([1.0, 2, 3, 4], index=["d", "b", "a", "z"])
    s2 = pd.Series([10.0, 20, 30], index=["b", "q", "a"])
    assert_pandas(md.Series(s1, chunk_size=3) * md.Series(s2, chunk_size=2), s1 * s2)
    i1 = pd.to_datetime(["2020-01-03", "2020-01-01", "2020-01-05"])
    t1 = pd.Series([1.0, 2, 3], index=i1)
    t2 = pd.Series([5.0, 6], index=pd.to_datetime(["2020-01-01", "2019-12-31"]))
    assert_pandas(md.Series(t1, chunk_size=2) - md.Series(t2, chunk_size=1), t1 - t2)


def test_frames_different_index_and_columns(client, frame):
    f2 = frame.iloc[::2].rename(columns={"c": "d"}) * 2
    a, b = md.DataFrame(frame, chunk_size=6), md.DataFrame(f2, chunk_size=4)
    assert_pandas(a + b, frame + f2)
    assert_pandas(a.mul(b, fill_value=1), frame.mul(f2, fill_value=1))


def test_range_indexes_different_lengths(client):
    s1 = pd.Series(np.arange(10))
    s2 = pd.Series(np.arange(7) * 2)
    assert_pandas(md.Series(s1, chunk_size=3) + md.Series(s2, chunk_size=4), s1 + s2)
    assert_pandas(md.Series(s2, chunk_size=4) + md.Series(s1, chunk_size=3), s2 + s1)
    # lengths unknown at build time
    a = md.Series(s1, chunk_size=3)
    b = md.Series(s2, chunk_size=2)
    fa = a[a > 2].reset_index(drop=True)
    fb = b[b > 4].reset_index(drop=True)
    ea = s1[s1 > 2].reset_index(drop=True)
    eb = s2[s2 > 4].reset_index(drop=True)
    assert_pandas(fa + fb, ea + eb)


def test_duplicate_labels(client):
    s1 = pd.Series([1, 2, 3, 4], index=[3, 1, 1, 2])
    s2 = pd.Series([10, 20, 30], index=[1, 1, 5])
    assert_pandas(md.Series(s1, chunk_size=2) + md.Series(s2, chunk_size=2), s1 + s2)


def test_scalars_and_local_objects(client, frame):
    m = md.DataFrame(frame, chunk_size=5)
    assert_pandas(m * 2, frame * 2)
    assert_pandas(2 - m, 2 - frame)
    assert_pandas(m ** 2, frame ** 2)
    assert_pandas(m["a"] // 3, frame["a"] // 3)
    assert_pandas(m["a"] % 3, frame["a"] % 3)
    assert_pandas(-m, -frame)
    assert_pandas(abs(m), abs(frame))
    row = pd.Series({"a": 1, "b": 2.0, "c": 3.0})
    assert_pandas(m + row, frame + row)  # broadcast across the columns
    assert_pandas(m.sub(row, axis="columns"), frame.sub(row, axis="columns"))
    local = frame.iloc[3:11] * 3
    assert_pandas(m + local, frame + local)
    assert_pandas(m["b"] + frame["b"].iloc[::-1], frame["b"] + frame["b"].iloc[::-1])
    arr = np.arange(len(frame))
    assert_pandas(m["a"] + arr, frame["a"] + arr)
    assert_pandas(m["a"] == arr, frame["a"] == arr)
    assert_pandas(m + np.ones((len(frame), 3)), frame + np.ones((len(frame), 3)))
    assert_pandas(m.radd(1), frame.radd(1))
    assert_pandas(m.rdiv(1), frame.rdiv(1))
    assert_pandas(m.eq(0), frame.eq(0))
    assert_pandas(m["a"].ge(0), frame["a"].ge(0))


def test_mixed_dtypes(client):
    df = pd.DataFrame({
        "s": pd.array(["a", None, "c", "d", "e"], dtype="str"),
        "d": pd.to_datetime(["2020-01-01", None, "2020-01-03", "2020-02-01", "2021-01-01"]),
        "k": pd.Categorical(["x", "y", "x", None, "y"]),
        "i": pd.array([1, None, 3, 4, 5], dtype="Int64"),
    })
    m = md.DataFrame(df, chunk_size=2)
    assert_pandas(m["s"] + "_", df["s"] + "_")
    assert_pandas(m["s"] == "c", df["s"] == "c")
    assert_pandas(m["d"] - pd.Timestamp("2020-01-01"), df["d"] - pd.Timestamp("2020-01-01"))
    assert_pandas(m["k"] == "x", df["k"] == "x")
    assert_pandas(m["i"] * 2, df["i"] * 2)
    m2 = md.DataFrame(df, chunk_size=3)
    assert_pandas(m["i"] + m2["i"], df["i"] + df["i"])
    assert_pandas(m["d"] > m2["d"], df["d"] > df["d"])


def test_empty(client):
    df = pd.DataFrame({"a": pd.Series([], dtype="int64"), "b": pd.Series([], dtype="float64")})
    m = md.DataFrame(df, chunk_size=3)
    assert_pandas(m + 1, df + 1)
    assert_pandas(m + md.DataFrame(df, chunk_size=2), df + df)
    f = md.DataFrame(pd.DataFrame({"a": [1, 2, 3], "b": [1.0, 2, 3]}), chunk_size=2)
    assert_pandas(f[f["a"] > 10] * 2, pd.DataFrame({"a": [1, 2, 3], "b": [1.0, 2, 3]}).iloc[:0] * 2)


def test_comparison_requires_identical_labels(client):
    s1 = pd.Series([1, 2, 3], index=[0, 1, 2])
    s2 = pd.Series([1, 2, 3], index=[0, 1, 5])
    with pytest.raises(ValueError, match="identically-labeled"):
        s1 == s2
    with pytest.raises(ValueError, match="identically-labeled"):
        md.Series(s1, chunk_size=2) == md.Series(s2, chunk_size=2)
    a = md.Series(s1, chunk_size=2)
    b = md.Series(s2, chunk_size=2)
    with pytest.raises(ValueError, match="identically-labeled"):
        (a[a > 0] == b[b > 0]).execute()
    assert_pandas(a.eq(b), s1.eq(s2))


def test_bad_inputs(client, frame):
    m = md.DataFrame(frame, chunk_size=5)
    with pytest.raises(ValueError):
        m.add(1, axis=3)
    with pytest.raises(ValueError, match="Length of values"):
        m["a"] + np.arange(3)


def test_rechunk_rows_and_align(client, frame):
    m = md.DataFrame(frame, chunk_size=5)
    r = rechunk_rows(m, (3, 10, 0, 10))
    assert_pandas(r, frame)
    assert r.nsplits[0] == (3, 10, 0, 10)
    with pytest.raises(ValueError):
        rechunk_rows(m, (3, 4))
    f = m[m["a"] > 0]
    r2 = rechunk_rows(f, (int((frame["a"] > 0).sum()),))
    assert_pandas(r2, frame[frame["a"] > 0])
    s1 = pd.Series([1.0, 2.0], index=[2, 0])
    s2 = pd.Series([3.0], index=[1])
    la, ra = align(md.Series(s1, chunk_size=1), md.Series(s2, chunk_size=1))
    el, er = s1.align(s2, join="outer")
    assert_pandas(la, el)
    assert_pandas(ra, er)


# ---- issue 18: DataFrame <op> Series / list-likes, pandas or numpy on the other side ------


@pytest.mark.parametrize("cl,cr", [(1, 5), (6, 23), (23, 1)])
def test_frame_op_series_along_index(client, frame, cl, cr):
    s = pd.Series(np.arange(len(frame)) * 1.5 - 4, name="s")
    m, ms = md.DataFrame(frame, chunk_size=cl), md.Series(s, chunk_size=cr)
    cases = [(getattr(m, op)(ms, axis=ax), getattr(frame, op)(s, axis=ax))
             for op, ax in (("add", 0), ("sub", "index"), ("mul", "rows"), ("div", 0), ("rsub", 0),
                            ("floordiv", 0), ("pow", 0), ("lt", 0), ("eq", "index"))]
    cases.append((m.add(s, axis=0), frame.add(s, axis=0)))  # a local Series
    # different labels: aligned (sorted union, missing rows)
    s2 = s.iloc[::-2].copy()
    s2.index = s2.index + 3
    cases.append((m.sub(md.Series(s2, chunk_size=cr), axis=0), frame.sub(s2, axis=0)))
    cases.append((m.mul(md.Series(s2, chunk_size=cr), axis=0, fill_value=1), frame.mul(s2, axis=0, fill_value=1)))
    assert_pandas_all(cases)
    # unknown lengths on both sides (filtered; with 1-row chunks some chunks are empty)
    fm, fs = m[m["a"] > 0], ms[ms > 0]
    assert_pandas(fm.add(fs, axis=0), frame[frame["a"] > 0].add(s[s > 0], axis=0), check_dtype=False)


@pytest.mark.parametrize("chunk", [1, 4, 23])
def test_frame_op_list_like(client, frame, chunk):
    m = md.DataFrame(frame, chunk_size=chunk)
    rows = list(range(len(frame)))
    assert_pandas_all([
        (m + [1, 2, 3], frame + [1, 2, 3]),
        (m.mul((1, -1, 2)), frame.mul((1, -1, 2))),
        (m - np.array([1.5, 2, 3]), frame - np.array([1.5, 2, 3])),
        (m.add(rows, axis=0), frame.add(rows, axis=0)),
        (m.sub(tuple(rows), axis="index"), frame.sub(tuple(rows), axis="index")),
        (m.rtruediv(np.arange(1, len(frame) + 1), axis=0), frame.rtruediv(np.arange(1, len(frame) + 1), axis=0)),
        (m.add(np.full((len(frame), 3), 2.0)), frame.add(np.full((len(frame), 3), 2.0))),
    ])
    f = m[m["a"] > 0]  # unknown length: the list is matched with the rows at tile time
    ef = frame[frame["a"] > 0]
    assert_pandas(f.add(list(range(len(ef))), axis=0), ef.add(list(range(len(ef))), axis=0))
    with pytest.raises(ValueError, match="Unable to coerce to Series, length must be 3: given 2"):
        frame + [1, 2]
    with pytest.raises(ValueError, match="Unable to coerce to Series, length must be 3: given 2"):
        m + [1, 2]
    with pytest.raises(ValueError, match="Unable to coerce to Series, length must be 23: given 3"):
        frame.add([1, 2, 3], axis=0)
    with pytest.raises(ValueError, match="Unable to coerce to Series, length must be 23: given 3"):
        m.add([1, 2, 3], axis=0)


@pytest.mark.parametrize("chunk", [1, 5])
def test_frame_op_series_along_columns(client, frame, chunk):
    m = md.DataFrame(frame, chunk_size=chunk)
    row = pd.Series({"a": 1, "b": 2.0, "c": -1.0})
    other = pd.Series({"b": 2.0, "z": 3.0, "a": 1.0})  # partly other labels: columns union
    mrow, mother = md.Series(row, chunk_size=2), md.Series(other, chunk_size=1)
    assert_pandas_all([
        (m + mrow, frame + row),
        (mrow * m, row * frame),
        (m - mother, frame - other),
        (m.rsub(mother), frame.rsub(other)),
        (m.div(mrow, axis="columns"), frame.div(row, axis="columns")),
        (m.ge(mrow), frame.ge(row)),
        (m + m["a"], frame + frame["a"]),  # pandas matches the row labels with the column names
        (mrow + frame, row + frame),  # md Series with a local frame
        (m + mt.tensor(np.array([1.0, 2, 3]), chunk_size=2), frame + np.array([1.0, 2, 3])),
    ])
    # labels unknown before execution: the small side is executed first
    assert_pandas(m + mother[mother > 1.5], frame + other[other > 1.5])
    assert_pandas(m.add(mother, fill_value=0), frame.add(other, fill_value=0))


def test_pandas_and_numpy_on_the_left(client, frame):
    """Failed before: pandas' operators made object-dtype pandas objects whose cells were md
    tileables, and numpy ufuncs other than the operators raised."""
    m = md.DataFrame(frame, chunk_size=4)
    s = frame["b"]
    ms = md.Series(s, chunk_size=7)
    local = frame.iloc[3:15] * 2
    results = [
        (frame + m, frame + frame),
        (local - m, local - frame),
        (s * ms, s * s),
        (s.iloc[::2] / ms, s.iloc[::2] / s),
        (frame < m, frame < frame),
        (s ** ms, s ** s),
        (s + m, s + frame),  # a local Series matched with the md frame's columns
        (np.arange(len(frame)) - ms, np.arange(len(frame)) - s),
        (np.float64(2) * ms, np.float64(2) * s),
        (np.log(ms.abs()), np.log(s.abs())),
        (np.exp(m[["b", "c"]]), np.exp(frame[["b", "c"]])),
        (np.add(m, 1), np.add(frame, 1)),
        (np.maximum(ms, md.Series(s.iloc[::-1], chunk_size=5)), np.maximum(s, s.iloc[::-1])),
        (np.maximum(ms, s.iloc[2:]), np.maximum(s, s.iloc[2:])),
        (np.sqrt(ms.abs(), dtype="float32"), np.sqrt(s.abs(), dtype="float32")),
    ]
    for got, _ in results:
        assert isinstance(got, (md.DataFrame, md.Series)), type(got)
    assert_pandas_all(results)
    frac, whole = np.modf(ms)
    efrac, ewhole = np.modf(s)
    assert_pandas_all([(frac, efrac), (whole, ewhole)])
