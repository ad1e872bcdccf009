"""DataFrame figures, mars_dask side by side with dask.dataframe on one LocalCluster(2 workers),
with pandas single-process times for scale.

    python benchmarks/bench_dataframe.py            # 10M rows (the issue's sizes)
    python benchmarks/bench_dataframe.py --quick    # 200k rows, a smoke run
    python benchmarks/bench_dataframe.py --only 678 # some of the workloads below

The data is generated here and written as 20 parquet files (``rows / 20`` rows each):
``k1`` (about ``rows / 10`` distinct keys: 1M groups at 10M rows), ``k2`` (100 groups),
``v``, ``w`` (floats), and a right-hand table of ``rows / 10`` rows keyed by ``k1``.

(1) groupby-agg, 1M groups     df.groupby("k1").agg({"v": "mean", "w": "sum"}) -> client
(2) groupby-agg, 100 groups    df.groupby("k2").agg({"v": "mean", "w": "sum"}) -> client
(3) merge 10M x 1M             df.merge(right, on="k1"), kept on the cluster
(4) sort_values on 10M rows    df.sort_values("v"), kept on the cluster
(5) read_parquet + filter + groupby over 20 files, -> client
(6) rolling(100).mean() on all rows, kept on the cluster (see rolling_workload)
(7) merge(how="left") 10M x 1M on the int key k1, kept on the cluster (see merge_left_workload)
(8) groupby("k2").cumsum() on all rows, kept on the cluster (see cumsum_workload)

(1)-(4) start from data already loaded on the workers in both systems (mars: execute(),
dask: persist()); runs alternate between the systems; medians and mars_dask/dask ratios.
"""

from __future__ import annotations

import argparse
import os
import tempfile

import dask.dataframe as dd
import numpy as np
import pandas as pd
from distributed import Client, LocalCluster, wait

import mars_dask.dataframe as md
from _common import alternate, n_tasks, print_table, settle, timed

NFILES = 20


def write_data(path: str, rows: int, seed: int = 0) -> tuple[str, str]:
    rng = np.random.default_rng(seed)
    per = rows // NFILES
    left = os.path.join(path, "left")
    os.makedirs(left, exist_ok=True)
    for i in range(NFILES):
        pd.DataFrame(
            {
                "k1": rng.integers(0, rows // 10, per),
                "k2": rng.integers(0, 100, per),
                "v": rng.random(per),
                "w": rng.random(per),
            }
        ).to_parquet(os.path.join(left, f"part.{i:02d}.parquet"), index=False)
    right = os.path.join(path, "right.parquet")
    pd.DataFrame({"k1": np.arange(rows // 10), "attr": rng.random(rows // 10)}).to_parquet(right, index=False)
    return left, right


def rolling_workload(client, reps, mdf, nparts):
    """(6) ``rolling(100).mean()`` over every row, kept on the cluster: mars_dask hands each
    chunk the last rows of the chunk before it (window.py's halos); dask.dataframe's rolling
    (``map_overlap``) needs known divisions, so it gets the same rows from ``from_pandas`` in
    ``nparts`` partitions.  Checks both against pandas, then times them alternately.
    Returns the table row."""
    pdf = mdf.fetch().reset_index(drop=True)
    pdf_time = timed(lambda: pdf.rolling(100).mean())
    exp = pdf.rolling(100).mean()
    ddf = dd.from_pandas(pdf, npartitions=nparts).persist()
    wait(ddf)
    del pdf
    baseline = n_tasks(client)

    def run_mars():
        t = mdf.rolling(100).mean()
        t.execute()
        return t

    def run_dask():
        y = ddf.rolling(100).mean().persist()
        wait(y)
        return y

    for got in (run_mars().fetch(), run_dask().compute()):
        pd.testing.assert_frame_equal(got.reset_index(drop=True), exp, check_exact=False)
    del got, exp
    settle(client, baseline)
    tm, td = alternate(client, baseline, reps, run_mars, run_dask)
    return ("(6) rolling(100).mean()", tm, td, "<= 1.00", f"pandas {pdf_time:.2f}s")


def merge_left_workload(client, reps, mdf, mright, ddf, dright):
    """(7) ``merge(right, on="k1", how="left")``, kept on the cluster: every key matches, so
    pandas keeps every dtype and the left order; mars_dask's result is checked equal to
    pandas' (dtypes, order, index), dask's by length and dtypes (its row order is not
    pandas').  Times them alternately; returns the table row."""
    pdf, pright = mdf.fetch(), mright.fetch()
    pdf_time = timed(lambda: pdf.merge(pright, on="k1", how="left"))
    exp = pdf.merge(pright, on="k1", how="left")
    del pdf, pright
    baseline = n_tasks(client)

    def run_mars():
        t = mdf.merge(mright, on="k1", how="left")
        t.execute()
        return t

    def run_dask():
        y = ddf.merge(dright, on="k1", how="left").persist()
        wait(y)
        return y

    pd.testing.assert_frame_equal(run_mars().fetch(), exp)
    got = run_dask().compute()
    assert len(got) == len(exp) and got.dtypes.to_dict() == exp.dtypes.to_dict(), got.dtypes
    del got, exp
    settle(client, baseline)
    tm, td = alternate(client, baseline, reps, run_mars, run_dask)
    return ('(7) merge(how="left") (rows x rows/10)', tm, td, "<= 1.00", f"pandas {pdf_time:.2f}s")


def cumsum_workload(client, reps, mdf, ddf):
    """(8) ``groupby("k2").cumsum()`` (100 groups) over every row, kept on the cluster:
    mars_dask passes each group's running sums from chunk to chunk (groupby/scan.py), no
    shuffle; dask.dataframe's cumulative groupby does the same kind of scan.  Checks both
    against pandas (mars_dask exactly: order, index, dtypes), then times them alternately.
    Returns the table row."""
    pdf = mdf.fetch()
    pdf_time = timed(lambda: pdf.groupby("k2").cumsum())
    exp = pdf.groupby("k2").cumsum()
    del pdf
    baseline = n_tasks(client)

    def run_mars():
        t = mdf.groupby("k2").cumsum()
        t.execute()
        return t

    def run_dask():
        y = ddf.groupby("k2").cumsum().persist()
        wait(y)
        return y

    pd.testing.assert_frame_equal(run_mars().fetch(), exp)
    got = run_dask().compute()
    pd.testing.assert_frame_equal(got.reset_index(drop=True), exp.reset_index(drop=True), check_exact=False)
    del got, exp
    settle(client, baseline)
    tm, td = alternate(client, baseline, reps, run_mars, run_dask)
    return ('(8) groupby("k2").cumsum()', tm, td, "<= 1.00", f"pandas {pdf_time:.2f}s")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--reps", type=int, default=None)
    p.add_argument("--only", default="12345678", help="workloads to run, e.g. '678' (default: all)")
    args = p.parse_args(argv)
    only = set(args.only.replace(",", ""))
    rows = 200_000 if args.quick else 10_000_000
    reps = args.reps or (2 if args.quick else 3)

    with tempfile.TemporaryDirectory() as tmp:
        left_path, right_path = write_data(tmp, rows)
        files = sorted(os.path.join(left_path, f) for f in os.listdir(left_path))

        # pandas, single process, for scale
        pdf = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
        pright = pd.read_parquet(right_path)
        pandas_work = {
            "(1)": lambda: pdf.groupby("k1").agg({"v": "mean", "w": "sum"}),
            "(2)": lambda: pdf.groupby("k2").agg({"v": "mean", "w": "sum"}),
            "(3)": lambda: pdf.merge(pright, on="k1"),
            "(4)": lambda: pdf.sort_values("v"),
            "(5)": lambda: (lambda d: d[d.v > 0.5].groupby("k2").agg({"w": "sum"}))(
                pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)),
        }
        pandas_times = {k: timed(f) for k, f in pandas_work.items() if k[1] in only}
        del pdf, pright

        with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0", host="127.0.0.1") as cluster, Client(cluster) as client:
            mdf = md.read_parquet(left_path).execute()
            mright = md.read_parquet(right_path).execute()
            ddf = dd.read_parquet(left_path).persist()
            dright = dd.read_parquet(right_path).persist()
            wait([ddf, dright])
            baseline = n_tasks(client)

            def keep_dask(x):
                y = x.persist()
                wait(y)

            cases = [
                ("(1) groupby-agg, 1M groups" if not args.quick else "(1) groupby-agg, many groups",
                 lambda: mdf.groupby("k1").agg({"v": "mean", "w": "sum"}).execute().fetch(),
                 lambda: ddf.groupby("k1").agg({"v": "mean", "w": "sum"}).compute()),
                ("(2) groupby-agg, 100 groups",
                 lambda: mdf.groupby("k2").agg({"v": "mean", "w": "sum"}).execute().fetch(),
                 lambda: ddf.groupby("k2").agg({"v": "mean", "w": "sum"}).compute()),
                ("(3) merge (rows x rows/10)",
                 lambda: mdf.merge(mright, on="k1").execute(),
                 lambda: keep_dask(ddf.merge(dright, on="k1"))),
                ("(4) sort_values",
                 lambda: mdf.sort_values("v").execute(),
                 lambda: keep_dask(ddf.sort_values("v"))),
            ]
            rows_out = []
            for name, fm, fd in cases:
                if name[1] not in only:
                    continue
                tm, td = alternate(client, baseline, reps, fm, fd)
                rows_out.append((name, tm, td, "<= 1.10", f"pandas {pandas_times[name[:3]]:.2f}s"))

            def pipe_mars():
                d = md.read_parquet(left_path)
                return d[d.v > 0.5].groupby("k2").agg({"w": "sum"}).execute().fetch()

            def pipe_dask():
                d = dd.read_parquet(left_path)
                return d[d.v > 0.5].groupby("k2").agg({"w": "sum"}).compute()

            if "5" in only:
                pd.testing.assert_frame_equal(pipe_mars().sort_index(), pipe_dask().sort_index(), check_exact=False)
                settle(client, baseline)
                tm, td = alternate(client, baseline, reps, pipe_mars, pipe_dask)
                rows_out.append(("(5) read_parquet+filter+groupby, 20 files", tm, td, "<= 1.10",
                                 f"pandas {pandas_times['(5)']:.2f}s"))
            for n, workload in (("6", lambda: rolling_workload(client, reps, mdf, NFILES)),
                                ("7", lambda: merge_left_workload(client, reps, mdf, mright, ddf, dright)),
                                ("8", lambda: cumsum_workload(client, reps, mdf, ddf))):
                if n in only:
                    settle(client, baseline)
                    rows_out.append(workload())

    print(f"\n{rows:,} rows, 2 workers x 1 thread; medians of {reps} runs")
    print_table(rows_out, extra="pandas single process")
    return rows_out


if __name__ == "__main__":
    main()
