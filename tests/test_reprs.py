"""repr()/str()/_repr_html_ of tileables (mars_dask/tiling/_repr.py).

Executed: exactly numpy's/pandas' text of the whole object, fetched from the shown ends
only. Lazy: the structure, computing nothing. Failing to fetch: the structure and a note.
"""

import contextlib

import numpy as np
import pandas as pd
import pytest
from distributed import Client

import mars_dask.dataframe as md
import mars_dask.tensor as mt
from mars_dask.session import Session
from mars_dask.tiling.core import execution_epoch


@pytest.fixture
def gathered(client, monkeypatch):
    """What repr gathers: a pass-through spy on the Client's ``gather`` recording the
    results of each call (the futures' values), so tests see how much data travelled."""
    calls = []
    real = client.gather

    def spy(futures, *args, **kwargs):
        out = real(futures, *args, **kwargs)
        calls.append(out)
        return out

    monkeypatch.setattr(client, "gather", spy)
    return calls


def _scheduler_keys(client) -> set:
    return set(client.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.tasks)))


# ---- executed DataFrame / Series / Index: pandas' own text ----------------------------


def _frame(n, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "i": rng.integers(-1000, 1000, n),
        "f": rng.random(n) * 10.0 ** rng.integers(-3, 6, n),
        "s": [f"s{k}" * (k % 4) for k in range(n)],
        "c": pd.Categorical(list("abc" * n)[:n]),
        "t": pd.date_range("2021-03-27", periods=n, freq="7h", tz="Europe/Paris"),
    })


@pytest.mark.parametrize("n, chunk_size", [(5, 2), (60, 7), (61, 7), (62, 31), (63, 100), (1000, 97), (1000, 1000)])
def test_executed_frame_is_pandas_repr(client, n, chunk_size):
    pdf = _frame(n)
    df = md.DataFrame(pdf, chunk_size=chunk_size).execute()
    assert repr(df) == repr(pdf)
    assert str(df) == str(pdf)
    assert df._repr_html_() == pdf._repr_html_()


def test_executed_frame_follows_display_options(client):
    wide = pd.DataFrame(np.arange(40 * 300).reshape(300, 40) * 1.5, columns=[f"c{k}" for k in range(40)],
                        index=pd.MultiIndex.from_product([range(30), list("abcdefghij")], names=["x", "y"]))
    wide2 = pd.DataFrame(np.arange(24 * 90).reshape(90, 24), columns=pd.MultiIndex.from_product([list("abcdef"), range(4)]))
    df, df2 = md.DataFrame(wide, chunk_size=45).execute(), md.DataFrame(wide2, chunk_size=20).execute()
    options = [
        {},
        {"display.max_rows": 20, "display.min_rows": 6},
        {"display.max_rows": 7, "display.min_rows": 0},
        {"display.max_columns": 5},
        {"display.max_columns": 0, "display.max_rows": 0},
        {"display.max_columns": None, "display.width": 200},
        {"display.show_dimensions": True},
        {"display.show_dimensions": False},
        {"display.max_rows": None},
    ]
    for opts in options:
        with pd.option_context(opts) if opts else contextlib.nullcontext():
            assert repr(df) == repr(wide), opts
            assert df._repr_html_() == wide._repr_html_(), opts
            assert repr(df2) == repr(wide2), opts
            assert df2._repr_html_() == wide2._repr_html_(), opts


def test_executed_series_and_index_are_pandas_repr(client):
    n = 1000
    series = [
        pd.Series(np.arange(n) * 0.25, name="x"),
        pd.Series(np.arange(n), index=pd.date_range("2020-01-01", periods=n, freq="D"), name="daily"),
        pd.Series(pd.Categorical(list("ab" * (n // 2)))),
        pd.Series(["a", "bb"] * 10),
    ]
    for s in series:
        t = md.Series(s, chunk_size=90).execute()
        assert repr(t) == repr(s)
        assert t._repr_html_() is None  # pandas' Series has no HTML repr: Jupyter shows the text
    indexes = [
        pd.Index(np.arange(n) * 3, name="i"),
        pd.RangeIndex(5, 5 + 2 * n, 2, name="r"),
        pd.date_range("2020-01-01", periods=n, freq="h"),
        pd.Index([f"v{k}" for k in range(30)]),
        pd.Index([f"v{k}" * (k % 5) for k in range(300)], name="s"),
    ]
    for idx in indexes:
        t = md.Index(idx, chunk_size=90).execute()
        assert repr(t) == repr(idx)


def test_executed_empty_frame_and_series(client):
    cases = [pd.DataFrame({"a": pd.Series([], dtype="int64"), "b": pd.Series([], dtype="float64")}),
             pd.DataFrame(index=range(500)), pd.Series([], dtype="float64", name="e")]
    for pdf in cases:
        t = (md.DataFrame if isinstance(pdf, pd.DataFrame) else md.Series)(pdf).execute()
        assert repr(t) == repr(pdf)
    filtered = md.DataFrame(_frame(50), chunk_size=10)
    filtered = filtered[filtered["i"] > 10_000].execute()  # unknown length until executed: 0
    assert repr(filtered) == repr(_frame(50).iloc[:0])


def test_executed_large_frame_fetches_only_its_ends(client, gathered):
    n = 1_000_000  # generated on the cluster: the frame itself never travels
    df = md.DataFrame(mt.arange(2 * n, chunk_size=200_000).reshape(n, 2), columns=["a", "b"]).execute()
    pdf = pd.DataFrame(np.arange(2 * n).reshape(n, 2), columns=["a", "b"])
    assert len(df.chunks) == 10
    assert repr(df) == repr(pdf)
    # one gather of two small slices: the first and the last chunk's shown rows
    assert len(gathered) == 1
    parts = gathered[0]
    assert len(parts) == 2
    rows = [len(piece) for part in parts for piece in part]
    assert sum(rows) <= pd.get_option("display.max_rows") + 2, rows
    assert df._repr_html_() == pdf._repr_html_()
    assert len(gathered) == 2 and sum(len(p) for part in gathered[1] for p in part) == sum(rows)


def test_executed_wide_frame_fetches_only_its_shown_columns(client, gathered):
    wide = pd.DataFrame(np.arange(100 * 500).reshape(100, 500) * 0.5, columns=[f"c{k}" for k in range(500)])
    df = md.DataFrame(wide, chunk_size=40).execute()
    with pd.option_context("display.max_columns", 20):
        assert repr(df) == repr(wide)
    pieces = [p for part in gathered[0] for p in part]
    assert {p.shape[1] for p in pieces} == {22}  # 11 at each end: pandas shows 10 and "..."
    assert sum(len(p) for p in pieces) == 62


# ---- executed tensors: numpy's own text ---------------------------------------------------


def _arrays():
    rng = np.random.default_rng(1)
    return [
        np.arange(10),
        np.arange(1000),  # exactly numpy's threshold: not abbreviated
        np.arange(1001),
        rng.random((50, 40)),
        rng.random((3, 400)) * 1e6,
        (rng.random((40, 41)) > 0.5),
        rng.integers(-10**9, 10**9, (20, 20, 20)).astype(np.int32),
        (rng.random(3000) + 1j * rng.random(3000)).astype(np.complex64),
        rng.random((7, 1)).astype(np.float16),
        np.array([f"w{k}" * (k % 3) for k in range(2000)]),
        np.arange("2000-01-01", "2004-02-09", dtype="datetime64[D]"),
        np.zeros((0, 3)),
        np.array(5),
        np.array(2.5),
    ]


@pytest.mark.parametrize("arr", _arrays(), ids=lambda a: f"{a.dtype}{a.shape}")
def test_executed_tensor_is_numpy_repr(client, arr):
    chunk = 7 if arr.ndim else None
    t = (mt.tensor(arr, chunk_size=chunk) if chunk else mt.tensor(arr)).execute()
    assert repr(t) == repr(arr)
    assert str(t) == str(arr)
    assert t._repr_html_() is None  # numpy has no HTML repr either


def test_executed_tensor_follows_print_options(client):
    arr = np.random.default_rng(2).random((30, 30)) * 100
    t = mt.tensor(arr, chunk_size=4).execute()
    for opts in [dict(threshold=10, edgeitems=1), dict(edgeitems=5, linewidth=40), dict(precision=2, suppress=True),
                 dict(threshold=100_000), dict(linewidth=250)]:
        with np.printoptions(**opts):
            assert repr(t) == repr(arr), opts
            assert str(t) == str(arr), opts


def test_executed_large_tensor_fetches_only_its_corners(client, gathered):
    t = mt.arange(4_000_000, chunk_size=100_000).reshape(2000, 2000).rechunk(200).execute()
    expected = np.arange(4_000_000).reshape(2000, 2000)
    assert repr(t) == repr(expected)
    assert len(gathered) == 1
    # four corner chunks (plus the ones holding the never-shown middle item): 7x7 values
    assert len(gathered[0]) <= 4
    assert sum(p.size for p in gathered[0]) == 7 * 7


# ---- lazy: structure, no computation --------------------------------------------------------


def test_lazy_reprs_show_structure_and_compute_nothing(client, gathered):
    a = mt.ones((1000, 600), chunk_size=(100, 300)) + 1
    pdf = pd.DataFrame({"x": np.arange(100), "y": np.arange(100) * 0.5, "z": ["s"] * 100})
    df = md.DataFrame(pdf, chunk_size=30)
    filtered = df[df["x"] > 3]
    series = filtered["y"]
    index = md.Index(pd.Index(np.arange(50), name="ix"), chunk_size=20)
    keys, epoch = _scheduler_keys(client), execution_epoch[0]

    texts = {name: (repr(x), str(x), x._repr_html_())
             for name, x in dict(a=a, df=df, filtered=filtered, series=series, index=index).items()}

    assert execution_epoch[0] == epoch and not gathered
    assert not _scheduler_keys(client) - keys
    for x in (a, df, filtered, series, index):
        assert not x.data.is_executed

    r, s, h = texts["a"]
    assert r == s
    for fact in ["Tensor", "shape=(1000, 600)", "dtype=float64", "nchunks=20", "grid=(10, 2)",
                 "chunksize=(100, 300)", "op=", "state=lazy"]:
        assert fact in r, (fact, r)
    assert h.startswith("<div>") and "<table>" in h and "(100, 300)" in h and "float64" in h
    r, _, h = texts["df"]
    assert r.startswith("DataFrame <") and "shape=(100, 3)" in r and "nchunks=4" in r
    assert r.splitlines()[1].split() == ["x", "y", "z"]
    assert r.splitlines()[2].split() == ["dtype", "int64", "float64", str(pdf["z"].dtype)]
    assert "<table" in h and "float64" in h
    r, _, _ = texts["filtered"]
    assert "shape=(nan, 3)" in r and "nchunks=4" in r
    r, _, _ = texts["series"]
    assert r.startswith("Series <") and "shape=(nan,)" in r and "dtype=float64" in r and "name='y'" in r
    r, _, _ = texts["index"]
    assert r.startswith("Index <") and "shape=(50,)" in r and "dtype=int64" in r and "nchunks=3" in r


def test_lazy_wide_frame_dtypes_are_truncated(client):
    pdf = pd.DataFrame(np.zeros((3, 200)), columns=[f"col{k}" for k in range(200)])
    r = repr(md.DataFrame(pdf))
    assert "col0" in r and "col199" in r and "col100" not in r and "..." in r


def test_lazy_tensor_whose_chunks_need_data(client):
    x = mt.tensor(np.arange(10), chunk_size=3)
    y = x[x > 4] * 2  # length known after execution
    r = repr(y)
    assert "shape=(nan,)" in r and "state=lazy" in r
    assert not y.data.is_executed


# ---- fetching fails: structure and a note, never an exception ------------------------------


def test_repr_after_the_client_was_closed(cluster):
    other = Client(cluster, set_as_default=False)
    session = Session(other)
    pdf = _frame(100)
    df = md.DataFrame(pdf, chunk_size=30).execute(session=session)
    t = mt.arange(5000, chunk_size=1000).execute(session=session)
    assert repr(df) == repr(pdf)
    other.close()
    for x in (df, t):
        r = repr(x)
        assert "state=executed" in r and "data not shown" in r and "closed" in r
        assert str(x) == r
    h = df._repr_html_()
    assert "data not shown" in h and "<table>" in h
    assert t._repr_html_() is None  # Jupyter shows the text repr (with its note)
    assert repr(df).splitlines()[1].split() == list(pdf.columns)


def test_repr_of_persisted_tileables(client):
    """client.persist(t) gives an executed tileable too; its shape may be unknown (Dask
    does not learn shapes), then the structure says so."""
    pdf = _frame(100)
    persisted = client.persist(md.DataFrame(pdf, chunk_size=7))
    assert repr(persisted) == repr(pdf)
    df = md.DataFrame(pdf, chunk_size=7)
    filtered = client.persist(df[df["i"] > 0])
    r = repr(filtered)
    assert "shape=(nan, 5)" in r and "state=executed" in r and "shape is unknown" in r


def test_tensor_package_does_not_import_pandas():
    """The scheduler and the workers import ``mars_dask.tensor`` to unpickle a tensor job's
    kernels; the repr machinery (which needs pandas) is imported only when something is
    printed: importing pandas there cost every scheduler ~65 MiB of RSS for nothing."""
    import subprocess
    import sys

    code = ("import sys, mars_dask, mars_dask.tensor as mt\n"
            "t = mt.ones((4, 4), chunk_size=2)\n"
            "print(sorted(m for m in ('pandas', 'pyarrow') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
