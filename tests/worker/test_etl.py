"""A realistic ETL on the README's CLI cluster (``dask scheduler --preload mars_dask``,
``dask worker --nanny --preload mars_dask --preload-nanny mars_dask``: every result goes
through the workers' MarsStore), compared exactly with pandas (issue 14).

CSV in (strings, ints, floats, a date column) read into several chunks -> new columns by
setitem (arithmetic, ``dt.month``) -> ``merge(how="left")`` with a small frame that lacks
some keys -> groupby-agg, filters that leave some partitions empty, ``sort_values`` ->
several outputs in one ``mars_dask.execute`` -> each fetched and compared with
``pandas.testing.assert_frame_equal`` (dtypes checked).

The CSV is ordered by date and its customers change along the file, so that the month
filter leaves the first partitions empty and the "customer unknown" filter (keys missing on
the right of the left join) leaves the early partitions empty too: the stores must hold
empty frames (numeric blocks of shape (0, k)).

Every dtype (``dt.month``'s int32 included), value, index and row order must be pandas'.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.conftest import RUN_SPEC_WARNING

N_ROWS = 4_000
N_CUST = 60  # customers c0..c59; the customer table knows c0..c39 only
CHUNK_BYTES = 24_000  # the CSV is ~230 kB: about 10 chunks


def _write_orders(path) -> None:
    rng = np.random.default_rng(14)
    day = pd.Timestamp("2023-01-01") + pd.to_timedelta(np.sort(rng.integers(0, 365, N_ROWS)), unit="D")
    # customers drift along the file: the first rows only have known customers, the last
    # ones mostly unknown ones
    pos = np.arange(N_ROWS) / N_ROWS
    cust = np.minimum((pos * N_CUST * 0.9 + rng.integers(0, 12, N_ROWS)).astype(int), N_CUST - 1)
    cust[: N_ROWS // 4] = rng.integers(0, 40, N_ROWS // 4)
    df = pd.DataFrame({
        "order_id": np.arange(N_ROWS, dtype=np.int64),
        "cust": [f"c{k}" for k in cust],
        "product": rng.choice(["apple", "banana", "cherry", "durian", "elderberry"], N_ROWS),
        "qty": rng.integers(1, 20, N_ROWS),
        "price": np.round(rng.uniform(0.5, 99.5, N_ROWS), 2),
        "day": day.strftime("%Y-%m-%d"),
        "note": rng.choice(["", "gift", "express, fragile", "repeat"], N_ROWS),
    })
    df.to_csv(path, index=False)


def _customers() -> pd.DataFrame:
    rng = np.random.default_rng(18)
    return pd.DataFrame({
        "cust": [f"c{k}" for k in range(40)],
        "region": rng.choice(["north", "south", "east", "west"], 40),
        "tier": rng.integers(1, 4, 40).astype(np.int64),
    })


def _etl(read, customers, frame):
    """The job, written once for pandas (``frame=pd.DataFrame``) and mars_dask."""
    df = read()
    df["c"] = df["qty"] * 2
    df["month"] = df["day"].dt.month
    df["revenue"] = df["qty"] * df["price"]
    j = df.merge(frame(customers), on="cust", how="left")
    by_region = j.groupby("region").agg({"revenue": "sum", "qty": "mean", "order_id": "count"})
    by_month = j.groupby(["month", "product"]).agg({"c": "sum", "price": "max"})
    late = j[j["month"] >= 11]  # the first partitions are empty
    # orders of customers the table lacks: the early partitions are empty (numeric columns
    # only: plain numeric blocks, which the store writes as raw buffers)
    unknown = j[j["region"].isna()][["order_id", "c", "revenue"]]
    top = late.sort_values(["revenue", "order_id"], ascending=[False, True])
    return {"by_region": by_region, "by_month": by_month, "late": late, "unknown": unknown, "top": top}


def _run_etl(cluster, tmp_path, client=None):
    """Run the ETL on ``cluster`` (a CLICluster, whose ``client`` is the default one) or,
    given ``client``, on that client's cluster; check every result against pandas."""
    import mars_dask
    import mars_dask.dataframe as md

    path = tmp_path / "orders.csv"
    _write_orders(path)
    customers = _customers()

    expected = _etl(lambda: pd.read_csv(path, parse_dates=["day"]), customers, lambda f: f)
    assert len(expected["unknown"]) and len(expected["late"])  # the data does what it should
    assert expected["by_region"]["order_id"].sum() < N_ROWS  # some keys are missing

    got = _etl(lambda: md.read_csv(str(path), parse_dates=["day"], chunk_bytes=CHUNK_BYTES),
               customers, lambda f: md.DataFrame(f, chunk_size=15))
    names = list(got)

    # the CLI cluster (or the given client's), not an embedded one
    assert mars_dask.get_client() is (client if client is not None else cluster.client)
    mars_dask.execute(*[got[n] for n in names])

    # several partitions, some of them empty (and so held by the stores)
    for n in ("late", "unknown"):
        rows = [c.shape[0] for c in got[n].data.chunks]
        assert len(rows) > 3 and 0 in rows and sum(rows) == len(expected[n]), (n, rows)

    for n in names:
        res = got[n].fetch()
        exp = expected[n]
        # exact, except the floating sums of by_region (summed in another order)
        pd.testing.assert_frame_equal(res, exp, check_dtype=True, check_index_type=True,
                                      check_exact=n != "by_region", rtol=1e-12, obj=n)
    return got


def _problems(cluster) -> list[str]:
    """Tracebacks, mars_dask warnings/errors and "different run_spec" warnings (one key
    submitted with two recipes, issue 17) in the cluster's logs so far (a store or
    checkpoint write that failed is logged, not raised: the job itself still succeeds)."""
    bad = []
    for f in sorted(cluster.tmp.glob("*.log")):
        for line in f.read_text(errors="replace").splitlines():
            if "Traceback" in line or RUN_SPEC_WARNING in line or (" - mars_dask" in line and any(
                    f" - {lvl} - " in line for lvl in ("WARNING", "ERROR", "CRITICAL"))):
                bad.append(f"{f.name}: {line}")
    return bad


@pytest.mark.timeout(300)
def test_etl_one_recipe_per_key(client, tmp_path):
    """Issue 17: the ETL tiles in stages (the merge's and the groupbys' unknown lengths are
    learnt by executing part of the graph first); a key emitted in an early stage with an
    input inlined (fused) into its task must carry the same recipe when a later stage
    emits it again, or the scheduler logs "Detected different `run_spec`" (before the fix:
    the merge's ``-len`` keys, several per run). Checked on the scheduler's own log, and by
    the suite-wide hook in ``tests/conftest.py``."""
    from tests.conftest import run_spec_warnings

    def logged():  # newest first
        return [msg for _, msg in client.get_scheduler_logs(n=10_000) if RUN_SPEC_WARNING in msg]

    before = len(logged())
    run_spec_warnings.take()
    with client.as_current():
        _run_etl(None, tmp_path, client=client)
    after = logged()
    assert len(after) == before, after[0]
    assert run_spec_warnings.messages == [], run_spec_warnings.messages[0]


@pytest.mark.timeout(300)
def test_etl_on_cli_cluster(cli_cluster, tmp_path):
    """Default store settings (write-behind: small results are written 1 s after they are
    done): the results are fetched right away, and again once the stores have written them."""
    import time

    c = cli_cluster(mars=True, n_workers=2, nthreads=2, memory_limit="2GiB")
    got = _run_etl(c, tmp_path)
    # every result still held has been written to its store by now (write-behind: a failed
    # write is logged, not raised: _problems below); they are still served whole
    time.sleep(1.5)
    for n, t in got.items():
        assert len(t.fetch()) == t.shape[0], n
    assert not _problems(c), "\n".join(_problems(c)[:20]) + "\n" + c.logs(6000)


@pytest.mark.timeout(300)
def test_etl_on_cli_cluster_every_value_stored(cli_cluster, tmp_path):
    """``mars-dask.store.write-delay: 0``: every task result, intermediates and empty
    partitions included, is written to the store before it counts as done."""
    c = cli_cluster(mars=True, n_workers=2, nthreads=2, memory_limit="2GiB",
                    env={"DASK_MARS_DASK__STORE__WRITE_DELAY": "0s"})
    _run_etl(c, tmp_path)
    assert not _problems(c), "\n".join(_problems(c)[:20]) + "\n" + c.logs(6000)
