"""read_csv / read_parquet / to_csv / to_parquet and dask.dataframe interop, against pandas."""

import glob
import os

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import mars_dask.dataframe as md
from mars_dask.dataframe.map import boolean_filter
from tests.dataframe.helpers import assert_pandas


def _frame(n=60, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "a": np.arange(n),
        "i": rng.integers(-50, 50, n),
        "f": np.where(rng.random(n) < 0.2, np.nan, rng.random(n).round(6)),
        "s": pd.array([None if k % 7 == 0 else f"w{k % 5}" for k in range(n)], dtype="str"),
        "t": pd.date_range("2022-01-01", periods=n, freq="37min").astype("M8[us]"),
    })


@pytest.fixture
def csv_files(tmp_path):
    paths = []
    for k in range(3):
        p = tmp_path / f"part{k}.csv"
        _frame(40 + 7 * k, seed=k).to_csv(p, index=False)
        paths.append(str(p))
    return tmp_path, paths


def _concat(paths, **kw):
    return pd.concat([pd.read_csv(p, **kw) for p in sorted(paths)], ignore_index=True)


# ---- CSV ----------------------------------------------------------------------------------


def test_read_csv_files_glob_list(client, csv_files):
    d, paths = csv_files
    exp = _concat(paths)
    t = md.read_csv(str(d / "part*.csv"))
    assert t.data.range_index
    got = assert_pandas(t, exp)
    assert isinstance(got.index, pd.RangeIndex) and len(t.chunks) == 3
    # a list is read in the given order
    assert_pandas(md.read_csv([paths[2], paths[1]]), pd.concat([pd.read_csv(paths[2]), pd.read_csv(paths[1])], ignore_index=True))
    assert_pandas(md.read_csv(paths[0]), pd.read_csv(paths[0]))


@pytest.mark.parametrize("chunk_bytes", [301, 1531])
def test_read_csv_byte_ranges(client, tmp_path, chunk_bytes):
    df = _frame(150)
    p = tmp_path / "big.csv"
    df.to_csv(p, index=False)
    t = md.read_csv(str(p), chunk_bytes=chunk_bytes, parse_dates=["t"])
    n_parts = -(-os.path.getsize(p) // chunk_bytes)
    assert len(t.op.parts) == n_parts > 1
    exp = pd.read_csv(p, parse_dates=["t"])
    got = assert_pandas(t, exp)
    pd.testing.assert_index_equal(got.index, pd.RangeIndex(0, 150), exact=True)
    assert sum(t.nsplits[0]) == 150 and len(t.nsplits[0]) == n_parts
    # several split files together, header none with names, sep
    df.to_csv(tmp_path / "nh1.tsv", index=False, header=False, sep="\t")
    df.iloc[:33].to_csv(tmp_path / "nh2.tsv", index=False, header=False, sep="\t")
    names = list(df.columns)
    kw = dict(header=None, names=names, sep="\t", usecols=["a", "s", "f"], dtype={"a": "int32"})
    t = md.read_csv(str(tmp_path / "nh*.tsv"), chunk_bytes=chunk_bytes, **kw)
    assert_pandas(t, _concat(glob.glob(str(tmp_path / "nh*.tsv")), **kw))


def test_read_csv_options(client, csv_files, tmp_path):
    d, paths = csv_files
    pat = str(d / "part*.csv")
    for kw in [
        dict(usecols=["s", "a"]),
        dict(dtype={"i": "float64", "s": "category"}),
        dict(parse_dates=["t"]),
        dict(index_col="a"),
        dict(index_col=0, usecols=["a", "f"]),
    ]:
        t = md.read_csv(pat, chunk_bytes=400, **kw)
        exp = pd.concat([pd.read_csv(p, **kw) for p in paths]) if "index_col" in kw else _concat(paths, **kw)
        if kw.get("dtype", {}).get("s") == "category":  # categories differ per file; pandas concat gives object
            exp["s"] = exp["s"].astype("category")
            got = t.execute().fetch()
            pd.testing.assert_frame_equal(got.astype({"s": "str"}), exp.astype({"s": "str"}))
            continue
        got = assert_pandas(t, exp)
        assert t.data.range_index == ("index_col" not in kw)
    # nrows: first rows of the concatenation
    for n in (0, 45, 200):
        assert_pandas(md.read_csv(pat, nrows=n), _concat(paths).head(n))


@pytest.mark.parametrize("comp", ["gzip", "bz2"])
def test_read_csv_compressed(client, tmp_path, comp):
    ext = {"gzip": "gz", "bz2": "bz2"}[comp]
    frames = [_frame(30, seed=k) for k in range(2)]
    for k, f in enumerate(frames):
        f.to_csv(tmp_path / f"c{k}.csv.{ext}", index=False, compression=comp)
    t = md.read_csv(str(tmp_path / f"c*.csv.{ext}"), chunk_bytes=50)  # compressed: one part per file
    assert len(t.op.parts) == 2
    exp = pd.concat([pd.read_csv(tmp_path / f"c{k}.csv.{ext}") for k in range(2)], ignore_index=True)
    assert_pandas(t, exp)
    # explicit compression on a file without an extension
    exp0 = pd.read_csv(tmp_path / f"c0.csv.{ext}")
    (tmp_path / f"c0.csv.{ext}").rename(tmp_path / "noext")
    assert_pandas(md.read_csv(str(tmp_path / "noext"), compression=comp), exp0)


def test_read_csv_errors(tmp_path, csv_files):
    d, paths = csv_files
    with pytest.raises(FileNotFoundError):
        md.read_csv(str(tmp_path / "missing*.csv"))
    with pytest.raises(FileNotFoundError):
        md.read_csv(str(tmp_path / "missing.csv"))
    with pytest.raises(ValueError, match="(?i)usecols"):
        md.read_csv(paths[0], usecols=["nope"])
    with pytest.raises(ValueError):
        md.read_csv(paths[0], chunksize=10)
    with pytest.raises(ValueError):
        md.read_csv(paths[0], chunk_bytes=0)


def test_read_csv_dtype_drift_is_reported(client, tmp_path):
    # the first rows parse as int, a later part holds text: a clear error naming the column
    p = tmp_path / "drift.csv"
    p.write_text("x,y\n" + "".join(f"{k},{k}\n" for k in range(200)) + "oops,1\n")
    t = md.read_csv(str(p), chunk_bytes=300, sample_rows=50)
    with pytest.raises(ValueError, match="'x'.*dtype="):
        t.execute()
    t = md.read_csv(str(p), chunk_bytes=300, dtype={"x": "str"})
    assert_pandas(t, pd.read_csv(p, dtype={"x": "str"}))


def test_csv_round_trip(client, tmp_path):
    df = _frame(53)
    t = md.DataFrame(df, chunk_size=10)
    paths = t.to_csv(str(tmp_path / "out" / "p-*.csv"), index=False)
    assert paths == [str(tmp_path / "out" / f"p-{k}.csv") for k in range(6)]
    back = md.read_csv(str(tmp_path / "out" / "p-*.csv"), parse_dates=["t"])
    # p-*.csv sorts as pandas would read them in sorted order
    exp = _concat(paths, parse_dates=["t"])
    assert_pandas(back, exp)
    assert t.to_csv(str(tmp_path / "one.csv")) is None
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "one.csv", index_col=0, parse_dates=["t"]),
                                  pd.read_csv(pd.io.common.StringIO(df.to_csv()), index_col=0, parse_dates=["t"]))
    assert (tmp_path / "one.csv").read_text() == df.to_csv()
    t.to_csv(str(tmp_path / "one.csv.gz"), index=False)
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "one.csv.gz"), pd.read_csv(pd.io.common.StringIO(df.to_csv(index=False))))
    assert t["a"].to_csv() == df["a"].to_csv()
    # a filtered frame (unknown lengths, chunks that end up empty) written and read back
    f = boolean_filter(t, t["a"] > 35)
    f.to_csv(str(tmp_path / "one.csv"))
    assert (tmp_path / "one.csv").read_text() == df[df["a"] > 35].to_csv()


# ---- Parquet ------------------------------------------------------------------------------


@pytest.fixture
def pq_files(tmp_path):
    d = tmp_path / "pq"
    d.mkdir()
    df = _frame(100)
    df.iloc[:60].to_parquet(d / "f0.parquet", row_group_size=10)
    df.iloc[60:].to_parquet(d / "f1.parquet", row_group_size=15)
    return d, df


def test_read_parquet_row_groups_and_files(client, pq_files):
    d, df = pq_files
    exp = pd.read_parquet(d)
    t = md.read_parquet(str(d), split_row_groups=True)
    assert len(t.op.parts) == 6 + 3 and t.shape == (100, 5)  # lengths known from the footers
    t._ensure_tiled()  # and tiling needs no execution
    assert t.nsplits[0] == (10,) * 6 + (15, 15, 10)
    got = assert_pandas(t, exp)
    pd.testing.assert_index_equal(got.index, pd.RangeIndex(0, 100), exact=True)
    assert_pandas(md.read_parquet(str(d / "*.parquet"), split_row_groups=False), exp)
    t = md.read_parquet([str(d / "f1.parquet"), str(d / "f0.parquet")], split_row_groups="adaptive", chunk_bytes=1)
    assert_pandas(t, pd.read_parquet([str(d / "f1.parquet"), str(d / "f0.parquet")]))
    # a single file keeps its stored index exactly
    assert_pandas(md.read_parquet(str(d / "f1.parquet")), pd.read_parquet(d / "f1.parquet"))


def test_read_parquet_columns_and_filters(client, pq_files):
    d, df = pq_files
    t = md.read_parquet(str(d), columns=["s", "f"], split_row_groups=True)
    assert t.op.columns == ["s", "f"]
    assert_pandas(t, pd.read_parquet(d, columns=["s", "f"]))
    # "a" is sorted: row groups wholly outside the filter are pruned by their statistics
    filt = [("a", ">=", 75), ("a", "<", 95)]
    t = md.read_parquet(str(d), filters=filt, split_row_groups=True)
    assert len(t.op.parts) == 2  # f1's row groups [60,75) and [90,100) ... are 75-89 and 90-99
    assert np.isnan(t.shape[0])
    got = assert_pandas(t, pd.read_parquet(d, filters=filt))
    pd.testing.assert_index_equal(got.index, pd.RangeIndex(0, 20), exact=True)
    for filt in ([("i", ">", 10)], [[("s", "==", "w1")], [("a", "<", 4)]], [("s", "in", ["w2", "w3"]), ("f", ">", 0.5)]):
        t = md.read_parquet(str(d), columns=["i", "s", "a"], filters=filt, split_row_groups=True)
        assert_pandas(t, pd.read_parquet(d, columns=["i", "s", "a"], filters=filt))
    t = md.read_parquet(str(d), filters=[("a", ">", 1000)], split_row_groups=True)
    assert len(t.op.parts) == 0
    assert_pandas(t, pd.read_parquet(d, filters=[("a", ">", 1000)]))


def test_read_parquet_stored_index(client, tmp_path):
    df = _frame(40).set_index("s")
    df.to_parquet(tmp_path / "x.parquet", row_group_size=7)
    t = md.read_parquet(str(tmp_path / "x.parquet"), split_row_groups=True)
    assert not t.data.range_index
    assert_pandas(t, pd.read_parquet(tmp_path / "x.parquet"))
    assert_pandas(md.read_parquet(str(tmp_path / "x.parquet"), columns=["f"], split_row_groups=True),
                  pd.read_parquet(tmp_path / "x.parquet", columns=["f"]))
    named = _frame(30).set_axis(pd.RangeIndex(5, 35, name="r"))
    named.to_parquet(tmp_path / "r.parquet", row_group_size=8)
    assert_pandas(md.read_parquet(str(tmp_path / "r.parquet"), split_row_groups=True), pd.read_parquet(tmp_path / "r.parquet"))
    kw = dict(filters=[("a", "<", 20)])
    assert_pandas(md.read_parquet(str(tmp_path / "r.parquet"), split_row_groups=True, **kw), pd.read_parquet(tmp_path / "r.parquet", **kw))


def test_read_parquet_errors(pq_files, tmp_path):
    d, _ = pq_files
    with pytest.raises(KeyError, match="nope"):
        md.read_parquet(str(d), columns=["a", "nope"])
    with pytest.raises(KeyError, match="zz"):
        md.read_parquet(str(d), filters=[("zz", "==", 1)])
    with pytest.raises(FileNotFoundError):
        md.read_parquet(str(tmp_path / "none*.parquet"))
    with pytest.raises(ValueError):
        md.read_parquet(str(d), engine="fastparquet")


def test_parquet_round_trip(client, tmp_path):
    df = _frame(57)
    t = md.DataFrame(df, chunk_size=5)  # 12 chunks: file names must sort in chunk order
    assert t.to_parquet(str(tmp_path / "out")) is None
    files = sorted(os.listdir(tmp_path / "out"))
    assert len(files) == 12 and files[0] == "part.00.parquet"
    back = md.read_parquet(str(tmp_path / "out"))
    assert back.shape == (57, 5)
    assert_pandas(back, df)
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "out"), df)
    # a filtered frame (unknown lengths, some chunks empty), then a labelled index
    f = boolean_filter(t, t["a"] % 4 == 0)
    f.to_parquet(str(tmp_path / "filtered"))
    assert_pandas(md.read_parquet(str(tmp_path / "filtered")), pd.read_parquet(tmp_path / "filtered"))
    # each file stores its part's RangeIndex(start, stop, 4) as metadata, which pandas (like us)
    # drops when reading several files: the labels become the default RangeIndex
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "filtered"), df[df["a"] % 4 == 0].reset_index(drop=True))
    small = md.DataFrame(df.set_index("t"), chunk_size=20)
    small.to_parquet(str(tmp_path / "lab"))
    assert sorted(os.listdir(tmp_path / "lab")) == ["part.0.parquet", "part.1.parquet", "part.2.parquet"]
    assert_pandas(md.read_parquet(str(tmp_path / "lab")), df.set_index("t"))


# ---- dask interop -------------------------------------------------------------------------


def test_to_dask(client, csv_files):
    df = _frame(45)
    t = md.DataFrame(df, chunk_size=10)
    ddf = t.to_dask()
    assert isinstance(ddf, dd.DataFrame)
    assert ddf.divisions == (0, 10, 20, 30, 40, 44)
    pd.testing.assert_frame_equal(ddf.compute(), df)
    pd.testing.assert_frame_equal(ddf.loc[15:25].compute(), df.loc[15:25])
    s = t["i"].to_dask()
    assert isinstance(s, dd.Series)
    pd.testing.assert_series_equal(s.compute(), df["i"])
    # labelled, not sorted across chunks: unknown divisions; sorted and executed: known
    lab = md.DataFrame(df.set_index("s"), chunk_size=10)
    assert not lab.to_dask().known_divisions
    pd.testing.assert_frame_equal(lab.to_dask().compute(), df.set_index("s"))
    srt = md.DataFrame(df.set_index("t"), chunk_size=10)
    assert srt.to_dask(divisions="compute").divisions[0] == df["t"].iloc[0]
    # unknown lengths: read_csv resolves them when tiled; a filter gives unknown divisions
    d, paths = csv_files
    r = md.read_csv(str(d / "part*.csv"), chunk_bytes=500)
    rd = r.to_dask()
    assert rd.known_divisions
    pd.testing.assert_frame_equal(rd.compute(), _concat(paths))
    f = boolean_filter(t, t["a"] > 12)
    fd = f.to_dask()
    assert not fd.known_divisions
    pd.testing.assert_frame_equal(fd.compute(), df[df["a"] > 12])
    # executed objects hand over their futures
    t.execute()
    pd.testing.assert_frame_equal(t.to_dask().compute(), df)


def test_from_dask(client):
    df = _frame(33)
    ddf = dd.from_pandas(df, npartitions=4)
    ddf = ddf[ddf["i"] > 0].assign(g=ddf["i"] * 2)
    t = md.from_dask(ddf)
    assert_pandas(t, ddf.compute())
    assert len(t.chunks) == ddf.npartitions == 4
    s = md.from_dask(ddf["f"])
    assert_pandas(s, ddf["f"].compute())
    with pytest.raises(TypeError):
        md.from_dask(df)


def test_dask_protocol(client):
    df = _frame(25)
    t = md.DataFrame(df, chunk_size=6)
    got_s, got_i = dask.compute(t["f"], md.date_range("2020-01-01", periods=9, chunk_size=4))
    pd.testing.assert_series_equal(got_s, df["f"])
    pd.testing.assert_index_equal(got_i, pd.date_range("2020-01-01", periods=9))
    got = client.compute(t).result()
    pd.testing.assert_frame_equal(got, df)
    p = client.persist(t)
    assert p.data.is_executed
    pd.testing.assert_frame_equal(p.fetch(), df)
    pd.testing.assert_frame_equal(dask.compute(p)[0], df)


def test_read_parquet_hive_partitions(client, tmp_path):
    df = pd.DataFrame({"g": list("xyz" * 8), "v": np.arange(24)})
    df.to_parquet(tmp_path / "hive", partition_cols=["g"])
    t = md.read_parquet(str(tmp_path / "hive"), split_row_groups=True)
    assert_pandas(t, pd.read_parquet(tmp_path / "hive"))
    f = md.read_parquet(str(tmp_path / "hive"), filters=[("g", "==", "y")])
    assert len(f.op.parts) == 1  # the other directories are pruned by the partition expression
    assert_pandas(f, pd.read_parquet(tmp_path / "hive", filters=[("g", "==", "y")]))
