"""read_csv / read_parquet / to_csv / to_parquet and dask.dataframe interop, against pandas."""

import contextlib
import glob
import io
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


# ---- atomic, idempotent writes ------------------------------------------------------------
#
# A write task may run twice (failover re-runs it when its worker died before its result was
# safe) or die half-way (its worker killed).  The graph of a write is run here, in this
# process and without a cluster, so that one chunk's write task can be run twice, or have its
# first attempt fail half-way, exactly; the cluster tests further down check the same outputs
# end to end.


def _sort_key(k):
    return (k[0], tuple(k[1:])) if isinstance(k, tuple) else (str(k), ())


class _InProcess:
    """``Tileable.execute``/``fetch`` run the chunk graph in this process, one task after
    another (chunk 0 first).  ``pick(key, sizes)`` chooses a task (``sizes``: keys per layer
    name); it runs ``times`` times, and with ``fail_first`` its first attempt runs inside
    that context (which must make it raise ``OSError``), then ``on_fail()`` is called and the
    task is run again, as Dask retries it."""

    def __init__(self, monkeypatch, pick, times=1, fail_first=None, on_fail=None):
        from mars_dask.tiling.tileable import Tileable

        self.pick, self.times, self.fail_first, self.on_fail = pick, times, fail_first, on_fail
        self.results, self.picked, self.failed = {}, [], 0
        monkeypatch.setattr(Tileable, "execute", lambda t, *a, **k: self._execute(t))
        monkeypatch.setattr(Tileable, "fetch", lambda t, *a, **k: self.results[t.key])

    def _execute(self, t):
        graph = dict(t.__dask_graph__())
        sizes = {}
        for k in graph:
            if isinstance(k, tuple):
                sizes[k[0]] = sizes.get(k[0], 0) + 1
        res = {}

        def run(k):
            if k in res:
                return res[k]
            node = graph[k]
            values = {d: run(d) for d in sorted(node.dependencies, key=_sort_key)}
            if not self.pick(k, sizes):
                res[k] = node(values)
                return res[k]
            self.picked.append(k)
            if self.fail_first is not None and not self.failed:
                self.failed += 1
                with pytest.raises(OSError, match="injected"):
                    with self.fail_first():
                        node(values)
                self.on_fail()
            for _ in range(self.times):
                res[k] = node(values)
            return res[k]

        def nest(keys):
            return [nest(x) for x in keys] if isinstance(keys, list) else run(keys)

        parts = nest(t.__dask_keys__())
        finish, args = t.__dask_postcompute__()
        self.results[t.key] = finish(parts, *args)
        return t


def _chunk_write(prefix, n, i):
    """Picks the write task of chunk ``i`` (among the ``n`` per-chunk tasks of the layer
    whose name starts with ``prefix``)."""
    return lambda k, sizes: isinstance(k, tuple) and k[0].startswith(prefix) and sizes[k[0]] == n and k[1] == i


@contextlib.contextmanager
def _torn_writer(method):
    """``pd.DataFrame.to_csv``/``to_parquet`` write the first half of their bytes, then
    raise (a disk that went away, a worker that died)."""
    orig = getattr(pd.DataFrame, method)

    def torn(self, buf, *args, **kwargs):
        if method == "to_csv":
            kw = {k: v for k, v in kwargs.items() if k not in ("encoding", "errors", "compression", "mode")}
            data = orig(self, None, *args, **kw).encode()
        else:
            bio = io.BytesIO()
            orig(self, bio, *args, **kwargs)
            data = bio.getvalue()
        half = data[: len(data) // 2]
        buf.write(half.decode("utf-8", "ignore") if isinstance(buf, io.TextIOBase) else half)
        buf.flush()
        raise OSError("injected: the write died half-way")

    setattr(pd.DataFrame, method, torn)
    try:
        yield
    finally:
        setattr(pd.DataFrame, method, orig)


_HOW = ["parquet", "csv-files", "csv-one"]
_PREFIX = {"parquet": "to-parquet", "csv-files": "to-csv", "csv-one": "to-csv"}


def _write(t, how, out):
    if how == "parquet":
        return t.to_parquet(str(out))
    if how == "csv-files":
        return t.to_csv(str(out / "p-*.csv"))
    return t.to_csv(str(out / "one.csv"))


def _final_names(how, n):
    return {"parquet": [f"part.{i}.parquet" for i in range(n)], "csv-files": [f"p-{i}.csv" for i in range(n)],
            "csv-one": ["one.csv"]}[how]


def _check_complete_files(how, out, df, step):
    """Every visible file under a final name is complete and right; the readers of the
    directory (pyarrow's dataset discovery, a ``*.csv`` glob) see only those."""
    n = -(-len(df) // step)
    names = sorted(os.listdir(out)) if out.exists() else []
    visible = [f for f in names if not f.startswith(".")]
    assert set(visible) <= set(_final_names(how, n)), names
    if how == "parquet":
        for f in visible:
            i = int(f.split(".")[1])
            pd.testing.assert_frame_equal(pd.read_parquet(out / f), df.iloc[i * step:(i + 1) * step])
        if visible:
            exp = pd.concat([df.iloc[int(f.split(".")[1]) * step:][:step] for f in sorted(visible)], ignore_index=True)
            pd.testing.assert_frame_equal(pd.read_parquet(out), exp)
    elif how == "csv-files":
        for f in visible:
            i = int(f[2:-4])
            assert (out / f).read_bytes() == df.iloc[i * step:(i + 1) * step].to_csv().encode()
        assert sorted(glob.glob(str(out / "*.csv"))) == sorted(str(out / f) for f in visible)
    else:
        for f in visible:
            assert (out / f).read_bytes() == df.to_csv().encode()
    return names


@pytest.mark.parametrize("how", _HOW)
def test_a_chunk_write_run_twice_leaves_one_correct_output(monkeypatch, tmp_path, how):
    """Failover re-runs a write task whose result was lost: the output is as if it ran once
    (the single-file CSV used to get the chunk's rows appended a second time)."""
    df = _frame(50)
    run = _InProcess(monkeypatch, _chunk_write(_PREFIX[how], 5, 2), times=2)
    out = tmp_path / "out"
    _write(md.DataFrame(df, chunk_size=10), how, out)
    assert len(run.picked) == 1  # the chunk's write task was found (and ran twice)
    names = _check_complete_files(how, out, df, 10)
    assert names == sorted(_final_names(how, 5))  # all there, nothing else (no temporaries, no parts)


@pytest.mark.parametrize("how", _HOW)
def test_a_write_that_dies_half_way_leaves_no_torn_file(monkeypatch, tmp_path, how):
    """The first attempt of chunk 2's write dies after writing half its bytes: nothing
    appears under a final name that is not complete (before, the half-written file stayed
    there, under its final name, until a retry replaced it -- or for good when none came);
    the retry then completes the output."""
    df = _frame(50)
    out = tmp_path / "out"
    seen = []

    def on_fail():
        names = _check_complete_files(how, out, df, 10)
        assert not [f for f in names if ".tmp-" in f], names  # the failed attempt's temporary is gone
        assert _final_names(how, 5)[0 if how == "csv-one" else 2] not in names
        seen.append(names)

    method = "to_parquet" if how == "parquet" else "to_csv"
    run = _InProcess(monkeypatch, _chunk_write(_PREFIX[how], 5, 2), fail_first=lambda: _torn_writer(method),
                     on_fail=on_fail)
    _write(md.DataFrame(df, chunk_size=10), how, out)
    assert run.failed == 1 and len(seen) == 1
    assert _check_complete_files(how, out, df, 10) == sorted(_final_names(how, 5))


def test_single_file_csv_rerun_of_each_chunk_is_byte_identical(monkeypatch, tmp_path):
    """Whichever chunk's task runs twice (first, middle, last), the single file is byte for
    byte pandas' ``to_csv`` of the whole frame: one header, every row once, in order."""
    df = _frame(43)
    for i in range(5):
        _InProcess(monkeypatch, _chunk_write("to-csv", 5, i), times=2)
        p = tmp_path / f"one-{i}.csv"
        md.DataFrame(df, chunk_size=9).to_csv(str(p), index=False)
        assert p.read_bytes() == df.to_csv(index=False).encode(), i
    assert sorted(os.listdir(tmp_path)) == [f"one-{i}.csv" for i in range(5)]


# the write kernels themselves, called directly (a local and a non-local filesystem)

def _memory_fs(tmp_name):
    import fsspec

    fs = fsspec.filesystem("memory")
    root = f"/mdtest-{tmp_name}"
    fs.makedirs(root, exist_ok=True)
    return fs, root


@pytest.mark.parametrize("where", ["local", "memory"])
def test_write_kernels_are_atomic_and_idempotent(tmp_path, where):
    from fsspec.implementations.local import LocalFileSystem

    from mars_dask.dataframe.io.csv import _write_csv_file
    from mars_dask.dataframe.io.parquet import _write_parquet_part

    if where == "local":
        fs, root = LocalFileSystem(), str(tmp_path)
    else:
        fs, root = _memory_fs(tmp_path.name)

    def listing():
        return sorted(p.rsplit("/", 1)[1] for p in fs.ls(root, detail=False))

    def read(name):
        with fs.open(f"{root}/{name}", "rb") as f:
            return f.read()

    df = _frame(30)
    try:
        for _ in range(2):  # the same chunk twice: one file, the same bytes
            _write_parquet_part(df, fs, f"{root}/part.0.parquet", {"compression": "gzip"})
            _write_csv_file(df, fs, f"{root}/p-0.csv.gz",
                            {"index": False, "compression": {"method": "gzip", "mtime": 0}})
            assert listing() == ["p-0.csv.gz", "part.0.parquet"]
        pd.testing.assert_frame_equal(pd.read_parquet(io.BytesIO(read("part.0.parquet"))), df)
        ref = io.BytesIO()
        df.to_csv(ref, index=False, mode="wb", compression={"method": "gzip", "mtime": 0, "filename": "p-0.csv.gz"})
        assert read("p-0.csv.gz") == ref.getvalue()
        # a write that dies half-way: the complete file stays as it was, no temporary is left
        good = read("part.0.parquet")
        with _torn_writer("to_parquet"), pytest.raises(OSError, match="injected"):
            _write_parquet_part(df.iloc[:5], fs, f"{root}/part.0.parquet", {})
        with _torn_writer("to_csv"), pytest.raises(OSError, match="injected"):
            _write_csv_file(df, fs, f"{root}/p-1.csv", {})
        assert listing() == ["p-0.csv.gz", "part.0.parquet"] and read("part.0.parquet") == good
    finally:
        if where == "memory":
            fs.rm(root, recursive=True)


def test_stale_names_are_recognised_exactly():
    from mars_dask.dataframe.io._common import is_stale, part_path, stale_targets, temp_path

    t = temp_path("/d/part.1.parquet")
    assert t.startswith("/d/.part.1.parquet.tmp-") and is_stale(t.rsplit("/", 1)[1], {"part.1.parquet"})
    p = part_path("/d/one.csv", "0123456789ab", 7).rsplit("/", 1)[1]
    assert p == ".one.csv.part-0123456789ab-000007"
    pt = temp_path("/d/" + p).rsplit("/", 1)[1]
    names = {"one.csv"}
    assert is_stale(p, names, parts=True) and is_stale(pt, names, parts=True)
    assert not is_stale(p, names) and not is_stale(pt, names)  # parts only for single-file outputs
    for other in ("one.csv", ".one.csv", ".one.csv.tmp-1-xyz", ".one.csv.tmp-12-0badc0de0", ".two.csv.tmp-1-0badc0de",
                  ".one.csv.part-0123-000001", "one.csv.tmp-1-0badc0de", ".one.csv.partial"):
        assert not is_stale(other, names, parts=True), other
    assert stale_targets(["/a/x", "/a/y", "/b/x"]) == {"/a": (["x", "y"], False), "/b": (["x"], False)}


# ---- the same on the cluster ---------------------------------------------------------------


def test_writes_remove_stale_temporaries_of_their_outputs_only(client, tmp_path):
    """Temporaries that killed attempts (of this job or an earlier one) left behind are
    removed by the write's clean-up; other files, hidden or not, are kept."""
    df = _frame(30)
    t = md.DataFrame(df, chunk_size=10)
    pq, one = tmp_path / "pq", tmp_path / "csv"
    pq.mkdir()
    one.mkdir()
    stale_pq = [".part.1.parquet.tmp-999999-0badc0de", ".part.2.parquet.tmp-1-00000000"]
    keep_pq = [".keep", "_notes.txt", ".part.1.parquet.tmp-x", ".part.9.parquet.tmp-1-0badc0de"]
    stale_one = [".one.csv.tmp-7-0badc0de", ".one.csv.part-0123456789ab-000003",
                 "..one.csv.part-0123456789ab-000003.tmp-5-0badc0de"]
    keep_one = [".one.csv.partial", ".two.csv.part-0123456789ab-000001", "two.csv"]
    for d, names in ((pq, stale_pq + keep_pq), (one, stale_one + keep_one)):
        for f in names:
            (d / f).write_bytes(b"junk")
    t.to_parquet(str(pq))
    t.to_csv(str(one / "one.csv"))
    assert sorted(os.listdir(pq)) == sorted(keep_pq + ["part.0.parquet", "part.1.parquet", "part.2.parquet"])
    assert sorted(os.listdir(one)) == sorted(keep_one + ["one.csv"])
    assert (one / "one.csv").read_bytes() == df.to_csv().encode()
    pd.testing.assert_frame_equal(pd.read_parquet(pq), df)
    # a glob never reads the temporaries or parts of a write in progress (fsspec's * matches
    # hidden names, Python's glob and pyarrow do not)
    only = tmp_path / "only"
    only.mkdir()
    (only / "one.csv").write_bytes((one / "one.csv").read_bytes())
    for f in stale_one:
        (only / f).write_bytes(b"junk")
    assert_pandas(md.read_csv(str(only / "*"), index_col=0), pd.read_csv(one / "one.csv", index_col=0))


def test_single_file_csv_compression_and_encodings(client, tmp_path):
    """A single file written in parts is what pandas writes for the whole frame: byte for
    byte uncompressed, with byte-order-mark encodings (the mark written once), bz2 and tar;
    gzip (same header with a fixed mtime; pandas' own flushes shape the deflate blocks), zip
    and xz decompress to the same bytes.  Nothing else is left in the directory."""
    import bz2
    import gzip
    import lzma
    import zipfile

    df = _frame(37)
    t = md.DataFrame(df, chunk_size=8)
    ours, ref = tmp_path / "ours", tmp_path / "pandas"
    ref.mkdir()
    exact = [
        ("a.csv", dict(compression="bz2")),
        ("a.csv.tar", dict()),
        ("u8.csv", dict(encoding="utf-8-sig")),
        ("u16.csv", dict(encoding="utf-16", index=False)),
    ]
    for name, kw in exact:
        assert t.to_csv(str(ours / name), **kw) is None
        df.to_csv(ref / name, **kw)
        assert (ours / name).read_bytes() == (ref / name).read_bytes(), name
    assert bz2.decompress((ours / "a.csv").read_bytes()) == df.to_csv().encode()
    gz = {"method": "gzip", "mtime": 0}
    t.to_csv(str(ours / "a.csv.gz"), compression=gz)
    df.to_csv(ref / "a.csv.gz", compression=gz)
    head = len(b"\x1f\x8b\x08\x08") + 6 + len(b"a.csv\x00")  # magic, flags, mtime, xfl, os, file name
    assert (ours / "a.csv.gz").read_bytes()[:head] == (ref / "a.csv.gz").read_bytes()[:head]
    assert gzip.decompress((ours / "a.csv.gz").read_bytes()) == df.to_csv().encode()
    t.to_csv(str(ours / "a.csv.xz"), index=False)
    assert lzma.decompress((ours / "a.csv.xz").read_bytes()) == df.to_csv(index=False).encode()
    t.to_csv(str(ours / "a.csv.zip"), index=False)
    df.to_csv(ref / "a.csv.zip", index=False)
    with zipfile.ZipFile(ours / "a.csv.zip") as z, zipfile.ZipFile(ref / "a.csv.zip") as zr:
        assert z.namelist() == zr.namelist() == ["a.csv"]
        assert z.read("a.csv") == zr.read("a.csv") == df.to_csv(index=False).encode()
    # one file per chunk, compressed
    paths = t.to_csv(str(ours / "gz" / "p-*.csv.gz"), compression=gz)
    assert len(paths) == 5
    for i, p in enumerate(paths):
        with open(p, "rb") as f:
            assert gzip.decompress(f.read()) == df.iloc[i * 8:(i + 1) * 8].to_csv().encode()
    assert sorted(os.listdir(ours)) == sorted([n for n, _ in exact] + ["a.csv.gz", "a.csv.zip", "a.csv.xz", "gz"])
    assert sorted(os.listdir(ours / "gz")) == [f"p-{i}.csv.gz" for i in range(5)]


def test_read_parquet_mars_arguments(client, pq_files):
    """Mars 0.10's signature: ``groups_as_chunks=True`` gives one chunk per row group;
    ``engine`` second positionally; Mars's other arguments are accepted (issue 18)."""
    d, df = pq_files
    exp = pd.read_parquet(d)
    t = md.read_parquet(str(d), groups_as_chunks=True)
    t._ensure_tiled()
    assert t.nsplits[0] == (10,) * 6 + (15, 15, 10)
    assert_pandas(t, exp)
    t = md.read_parquet(str(d), "auto", ["s", "f"], True, use_arrow_dtype=True, incremental_index=True,
                        memory_scale=2, merge_small_files=False, merge_small_file_options={})
    assert len(t.op.parts) == 9
    got = assert_pandas(t, pd.read_parquet(d, columns=["s", "f"]))
    pd.testing.assert_index_equal(got.index, pd.RangeIndex(0, 100), exact=True)
    assert len(md.read_parquet(str(d)).op.parts) < 9  # default: small row groups merged


def test_read_csv_mars_arguments(client, csv_files):
    _, paths = csv_files
    exp = _concat(paths)
    for kw in ({"incremental_index": True}, {"incremental_index": False, "use_arrow_dtype": True},
               {"head_lines": 5, "head_bytes": "1k", "memory_scale": 2, "merge_small_files": False}):
        got = assert_pandas(md.read_csv(paths, chunk_bytes=200, **kw), exp)
        pd.testing.assert_index_equal(got.index, pd.RangeIndex(0, len(exp)), exact=True)
    with pytest.raises(NotImplementedError, match="GPU"):
        md.read_csv(paths, gpu=True)


# ---- to_sql (issue 18) --------------------------------------------------------------------


@pytest.mark.parametrize("chunk", [1, 7, 100])
def test_to_sql(client, tmp_path, chunk):
    sa = pytest.importorskip("sqlalchemy", reason="SQLAlchemy is not installed: to_sql needs it")
    uri = f"sqlite:///{tmp_path / 'db.sqlite'}"
    eng = sa.create_engine(uri)
    pdf = pd.DataFrame({
        "a": np.arange(17), "f": [1.5, None, 3.25] * 5 + [0.0, 1.0],
        "s": [None if k % 5 == 0 else f"w{k}" for k in range(17)],
        "t": pd.date_range("2021-01-01", periods=17, freq="D"),
        "c": pd.Categorical(list("xyz" * 5 + "xy")),
    }, index=pd.Index(np.arange(17)[::-1] * 3, name="k"))
    m = md.DataFrame(pdf, chunk_size=chunk)

    def table(name, **kw):
        return pd.read_sql_table(name, eng, **kw)

    def expected(frame, name, **kw):
        frame.to_sql(name, eng, **kw)
        return table(name)

    res = m.to_sql("t", uri)  # runs now (rows in the frame's order); Mars's .execute() is a no-op
    res.execute()
    pd.testing.assert_frame_equal(table("t"), expected(pdf, "e"))
    assert res.shape == (0, 0)
    # Mars's if_exists: "fail" raises pandas' error, "append" adds, "replace" starts over
    with pytest.raises(ValueError, match="already exists"):
        m.to_sql("t", eng)
    m.to_sql("t", eng, if_exists="append")
    pdf.to_sql("e", eng, if_exists="append")
    pd.testing.assert_frame_equal(table("t"), table("e"))
    m.to_sql("t", eng, if_exists="replace", index=False)
    pd.testing.assert_frame_equal(table("t"), expected(pdf, "e2", index=False))
    # a Series; an index label; sqlalchemy dtypes; unknown lengths with empty chunks
    m["f"].to_sql("sf", uri, index_label="idx", dtype={"f": sa.Float()})
    pd.testing.assert_frame_equal(table("sf"), expected(pdf["f"], "ef", index_label="idx", dtype={"f": sa.Float()}))
    filtered = m[m["a"] % 4 == 1]
    filtered.to_sql("filt", eng, chunksize=2, method="multi")
    pd.testing.assert_frame_equal(table("filt"), expected(pdf[pdf["a"] % 4 == 1], "efilt"))
    m[m["a"] > 100].to_sql("none", eng)
    pd.testing.assert_frame_equal(table("none"), expected(pdf.iloc[:0], "enone"))
    with pytest.raises(ValueError, match="is not valid for if_exists"):
        m.to_sql("t", eng, if_exists="nope")
    with pytest.raises(TypeError, match="DBAPI"):
        m.to_sql("t", object())
    eng.dispose()
