"""md.concat vs pandas (exact: order, labels, dtypes)."""

import numpy as np
import pandas as pd
import pytest

import mars_dask.dataframe as md

from .helpers import assert_pandas_all


@pytest.fixture(scope="module")
def frames():
    rng = np.random.default_rng(5)
    a = pd.DataFrame({
        "x": rng.integers(0, 9, 17),
        "s": pd.Series(rng.choice(["u", "v", None], 17), dtype="str"),
        "c": pd.Categorical(rng.choice(["p", "q"], 17)),
        "d": pd.date_range("2022-01-01", periods=17, freq="D"),
    })
    b = pd.DataFrame({
        "x": rng.normal(size=11),
        "s": pd.Series(rng.choice(["w", None], 11), dtype="str"),
        "c": pd.Categorical(rng.choice(["p", "q"], 11)),
        "e": rng.integers(0, 2, 11).astype(bool),
    }, index=pd.RangeIndex(100, 111))
    return a, b


def test_concat_rows(client, frames):
    a, b = frames
    ma, mb = md.DataFrame(a, chunk_size=5), md.DataFrame(b, chunk_size=4)
    cases = [
        (md.concat([ma, mb]), pd.concat([a, b])),
        (md.concat([ma, mb], join="inner"), pd.concat([a, b], join="inner")),
        (md.concat([ma, mb, ma], ignore_index=True), pd.concat([a, b, a], ignore_index=True)),
        (md.concat([ma, mb], keys=["one", "two"], names=["src", "row"]), pd.concat([a, b], keys=["one", "two"], names=["src", "row"])),
        (md.concat({"k1": ma, "k2": ma}), pd.concat({"k1": a, "k2": a})),
        (md.concat([ma, mb], sort=True), pd.concat([a, b], sort=True)),
        (md.concat([ma["x"], mb["x"]]), pd.concat([a["x"], b["x"]])),
        (md.concat([ma["s"], mb["x"]], ignore_index=True), pd.concat([a["s"], b["x"]], ignore_index=True)),
        (md.concat([ma, mb["e"]]), pd.concat([a, b["e"]])),
        (md.concat([ma, None, md.DataFrame(a.iloc[:0], chunk_size=3)]), pd.concat([a, None, a.iloc[:0]])),
        (md.concat([ma]), pd.concat([a])),
    ]
    assert_pandas_all(cases)
    assert cases[0][0].nsplits[0] == (5, 5, 5, 2, 4, 4, 3)


def test_concat_rows_unknown_lengths(client, frames):
    a, b = frames
    ma, mb = md.DataFrame(a, chunk_size=5), md.DataFrame(b, chunk_size=4)
    fa, fb = ma[ma["x"] > 6], mb[mb["x"] > 1.0]  # some chunks end up empty
    pa, pb = a[a["x"] > 6], b[b["x"] > 1.0]
    assert_pandas_all([
        (md.concat([fa, fb]), pd.concat([pa, pb])),
        (md.concat([fa, fb, fa], ignore_index=True), pd.concat([pa, pb, pa], ignore_index=True)),
    ])


def test_concat_columns(client, frames):
    a, b = frames
    ma = md.DataFrame(a, chunk_size=5)
    other = pd.DataFrame({"y": np.arange(17) * 2.5, "t": pd.Series(list("abcdefghijklmnopq"), dtype="str")})
    cases = [
        # same partitioning: chunk by chunk
        (md.concat([ma, ma[["x"]], ma["d"]], axis=1), pd.concat([a, a[["x"]], a["d"]], axis=1)),
        # different partitioning, same labels: re-cut rows
        (md.concat([ma, md.DataFrame(other, chunk_size=7)], axis=1), pd.concat([a, other], axis=1)),
        (md.concat([md.Series(other["y"], chunk_size=4), ma[["d", "c"]]], axis=1, keys=["A", "B"]),
         pd.concat([other["y"], a[["d", "c"]]], axis=1, keys=["A", "B"])),
    ]
    assert_pandas_all(cases)
    # filtered inputs: lengths found by iterative tiling
    fa = ma[ma["x"] > 3]
    pa = a[a["x"] > 3]
    assert_pandas_all([(md.concat([fa, md.DataFrame(pa[["x"]].rename(columns={"x": "z"}), chunk_size=3)], axis=1),
                pd.concat([pa, pa[["x"]].rename(columns={"x": "z"})], axis=1))])


def test_concat_columns_different_labels_raise(client, frames):
    a, b = frames
    t = md.concat([md.DataFrame(a.iloc[:11], chunk_size=5), md.DataFrame(b, chunk_size=4)], axis=1)
    with pytest.raises(ValueError, match="row labels differ"):
        t.execute()
    t = md.concat([md.DataFrame(a, chunk_size=5), md.DataFrame(b, chunk_size=4)], axis=1)
    with pytest.raises(ValueError, match="different lengths"):
        t.execute()


def test_concat_bad_inputs(frames):
    a, _ = frames
    ma = md.DataFrame(a, chunk_size=5)
    with pytest.raises(ValueError, match="No objects"):
        md.concat([])
    with pytest.raises(ValueError, match="No objects"):
        md.concat([None])
    with pytest.raises(TypeError, match="first argument"):
        md.concat(ma)
    with pytest.raises(TypeError, match="cannot concatenate"):
        md.concat([ma, 3])
    with pytest.raises(ValueError, match="inner"):
        md.concat([ma, ma], join="left")
    with pytest.raises(ValueError, match="axis"):
        md.concat([ma, ma], axis=2)
