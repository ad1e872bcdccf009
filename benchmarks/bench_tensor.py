"""Tensor figures, mars_dask side by side with dask.array on one LocalCluster(2 workers).

    python benchmarks/bench_tensor.py            # full sizes (the issue's), ~10 min
    python benchmarks/bench_tensor.py --quick    # small sizes, a smoke run

(a) ((x + 1) * 2).sum()   x: 8000x8000 float64 random, 1000x1000 chunks
(b) x.T @ x               x: 4000x4000, 1000x1000 chunks
(c) x[x > 0.5].sum()      x as in (a); dask needs no compute_chunk_sizes() for a sum
(d) build + submit a 100,000-chunk element-wise graph: from building the expression until
    the scheduler has accepted the whole graph (its update_graph finished), both through
    ``client.persist``, on a fresh ``dask scheduler`` process without workers (nothing
    runs: the figure is the client's and the scheduler's graph handling alone).

x is generated and persisted on the workers beforehand in both systems (each with its own
random generator), so (a)-(c) time the operation: build, submit, compute, and bring the
result to the client.  Runs alternate between the two systems; medians are printed with the
mars_dask/dask ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import dask.array as da
import numpy as np
from distributed import Client, LocalCluster, wait
from distributed.diagnostics.plugin import SchedulerPlugin

import mars_dask.tensor as mt
from _common import alternate, n_tasks, print_table, settle


class GraphAccepted(SchedulerPlugin):
    """Records the wall time at which each update_graph finished on the scheduler."""

    name = "bench-graph-accepted"

    def __init__(self):
        self.times = []

    def update_graph(self, scheduler, **kwargs):
        self.times.append(time.time())


def bench_ops(client, n, chunk, n_mm, reps):
    xm = mt.random.RandomState(1).rand(n, n, chunk_size=chunk).execute()
    xd = da.random.default_rng(1).random((n, n), chunks=chunk).persist()
    wait(xd)
    xm_mm = mt.random.RandomState(2).rand(n_mm, n_mm, chunk_size=chunk).execute()
    xd_mm = da.random.default_rng(2).random((n_mm, n_mm), chunks=chunk).persist()
    wait(xd_mm)
    baseline = n_tasks(client)

    cases = {
        "(a) ((x + 1) * 2).sum()": (
            lambda: ((xm + 1) * 2).sum().execute().fetch(),
            lambda: ((xd + 1) * 2).sum().compute(),
        ),
        "(b) x.T @ x": (
            lambda: (xm_mm.T @ xm_mm).execute().fetch(),
            lambda: (xd_mm.T @ xd_mm).compute(),
        ),
        "(c) x[x > 0.5].sum()": (
            lambda: xm[xm > 0.5].sum().execute().fetch(),
            lambda: xd[xd > 0.5].sum().compute(),
        ),
    }
    rows = []
    for name, (fm, fd) in cases.items():
        tm, td = alternate(client, baseline, reps, fm, fd)
        rows.append((name, tm, td, "<= 1.10"))
    del xm, xd, xm_mm, xd_mm
    settle(client, 0)
    return rows


def _fresh_scheduler(tmp: str):
    """A ``dask scheduler`` process of its own (no workers): each measurement starts from an
    empty scheduler, and nothing runs, so the figure is graph handling alone."""
    fn = os.path.join(tmp, f"scheduler-{time.monotonic_ns()}.json")
    proc = subprocess.Popen(
        [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
         "--dashboard-address", ":0", "--scheduler-file", fn],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while not os.path.exists(fn) and time.monotonic() < deadline:
        time.sleep(0.05)
    return proc, fn


def bench_submit(shape, chunk, reps):
    import cloudpickle

    if GraphAccepted.__module__ != "__main__":  # the scheduler process cannot import this file
        cloudpickle.register_pickle_by_value(sys.modules[GraphAccepted.__module__])

    def run(build):
        with tempfile.TemporaryDirectory() as tmp:
            proc, fn = _fresh_scheduler(tmp)
            try:
                with Client(scheduler_file=fn, timeout=60) as client:
                    client.register_plugin(GraphAccepted())
                    t0 = time.time()
                    fut = client.persist(build())
                    get = lambda: client.run_on_scheduler(  # noqa: E731
                        lambda dask_scheduler: dask_scheduler.plugins[GraphAccepted.name].times
                    )
                    while not get():
                        time.sleep(0.02)
                    elapsed = get()[-1] - t0
                    del fut
            finally:
                proc.kill()
                proc.wait()
        return elapsed

    tm, td = [], []
    for _ in range(reps):
        tm.append(run(lambda: (mt.ones(shape, chunk_size=chunk) + 1) * 2))
        td.append(run(lambda: (da.ones(shape, chunks=chunk) + 1) * 2))
    nchunks = int(np.prod([-(-s // c) for s, c in zip(shape, chunk)]))
    return [(f"(d) build+submit {nchunks:,}-chunk graph", statistics.median(tm), statistics.median(td), "<= 1.50")]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    p.add_argument("--reps", type=int, default=None)
    args = p.parse_args(argv)
    if args.quick:
        n, chunk, n_mm, reps, shape, sub_chunk, sub_reps = 2000, 500, 1000, 2, (200, 500), (10, 10), 1
    else:
        n, chunk, n_mm, reps, shape, sub_chunk, sub_reps = 8000, 1000, 4000, 5, (2000, 5000), (10, 10), 3
    reps = args.reps or reps

    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0", host="127.0.0.1") as cluster, Client(cluster) as client:
        rows = bench_ops(client, n, chunk, n_mm, reps)
    rows += bench_submit(shape, sub_chunk, sub_reps)

    print_table(rows)
    return rows


if __name__ == "__main__":
    main()
