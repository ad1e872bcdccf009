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

(e) mt.topk(x, 1000)         x: 1e8 float64 random, 1e7 chunks (dask: da.topk)
(f) gamma(2.0, (8000, 8000)).sum()   1000x1000 chunks (dask: da.random.default_rng().gamma)
(g) dot(S, D)              S: 20000x20000 CSR, density 1e-3, 5000x5000 chunks; D: 20000x100
                            dense (dask: da.from_array(S, asarray=False)); "not available"
                            while ``mt.tensor(scipy.sparse matrix)`` raises NotImplementedError

(e)-(g) also print numpy's (scipy's) single-process time for the same work.
``--only e,g`` runs only some groups (letters as above; ``d`` is the submit figure).

x is generated and persisted on the workers beforehand in both systems (each with its own
random generator), so (a)-(c) time the operation: build, submit, compute, and bring the
result to the client.  Runs alternate between the two systems; medians are printed with the
mars_dask/dask ratio.
"""

from __future__ import annotations

import argparse
import math
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
from _common import alternate, n_tasks, print_table, settle, timed


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


FULL_SIZES = {"topk": (100_000_000, 10_000_000, 1000), "gamma": (8000, 1000), "sparse": (20000, 5000, 100, 1e-3)}
QUICK_SIZES = {"topk": (1_000_000, 100_000, 1000), "gamma": (1000, 250), "sparse": (2000, 500, 100, 1e-3)}


def _not_available(name, exc):
    """A row for a workload mars_dask cannot run yet (no timing, the reason instead)."""
    return (name, math.nan, math.nan, "-", f"mars_dask: not available ({type(exc).__name__}: {exc})")


def bench_more(client, sizes, reps, only):
    """(e) topk, (f) a random distribution draw, (g) sparse @ dense; each row also carries
    numpy's (scipy's) single-process time for the same work."""
    rows = []
    if "e" in only:
        n, c, k = sizes["topk"]
        xm = mt.random.RandomState(4).rand(n, chunk_size=c).execute()
        xd = da.random.default_rng(4).random(n, chunks=c).persist()
        wait(xd)
        baseline = n_tasks(client)
        tm, td = alternate(
            client, baseline, reps,
            lambda: mt.topk(xm, k).execute().fetch(),
            lambda: da.topk(xd, k).compute(),
        )
        del xm, xd
        settle(client, 0)
        x_np = np.random.default_rng(4).random(n)
        tn = statistics.median(timed(lambda: np.sort(np.partition(x_np, n - k)[n - k:])[::-1]) for _ in range(reps))
        del x_np
        rows.append((f"(e) topk({n:.0e} float64, k={k})", tm, td, "<= 1.00", f"{tn:.3f}"))

    if "f" in only:
        n, c = sizes["gamma"]
        name = f"(f) gamma(2.0, ({n}, {n})).sum()"
        fm = lambda: mt.random.RandomState(5).gamma(2.0, size=(n, n), chunk_size=c).sum().execute().fetch()  # noqa: E731
        fd = lambda: da.random.default_rng(5).gamma(2.0, size=(n, n), chunks=c).sum().compute()  # noqa: E731
        try:
            fm()
        except (NotImplementedError, AttributeError) as e:
            rows.append(_not_available(name, e))
        else:
            fd()  # both warmed up alike
            settle(client, 0)
            tm, td = alternate(client, 0, reps, fm, fd)
            tn = statistics.median(
                timed(lambda: np.random.default_rng(5).gamma(2.0, size=(n, n)).sum()) for _ in range(reps)
            )
            rows.append((name, tm, td, "<= 1.00", f"{tn:.3f}"))

    if "g" in only:
        import scipy.sparse

        n, c, m, density = sizes["sparse"]
        name = f"(g) sparse({n}x{n}, {density:g}) @ dense({n}x{m})"
        s_np = scipy.sparse.random(n, n, density=density, format="csr", dtype=np.float64, random_state=6)
        d_np = np.random.default_rng(6).random((n, m))
        try:
            sm = mt.tensor(s_np, chunk_size=c).execute()
        except (NotImplementedError, TypeError) as e:  # TypeError: before sparse input existed
            rows.append(_not_available(name, e))
        else:
            dm = mt.tensor(d_np, chunk_size=(c, m)).execute()
            sd = da.from_array(s_np, chunks=(c, c), asarray=False).persist()
            dd = da.from_array(d_np, chunks=(c, m)).persist()
            wait([sd, dd])
            baseline = n_tasks(client)
            try:
                mt.dot(sm, dm).execute().fetch()
            except NotImplementedError as e:
                rows.append(_not_available(name, e))
            else:
                da.dot(sd, dd).compute()  # both warmed up alike
                settle(client, baseline)
                tm, td = alternate(
                    client, baseline, reps,
                    lambda: mt.dot(sm, dm).execute().fetch(),
                    lambda: da.dot(sd, dd).compute(),
                )
                tn = statistics.median(timed(lambda: s_np @ d_np) for _ in range(reps))
                rows.append((name, tm, td, "<= 1.00", f"{tn:.3f}"))
            del sm, dm, sd, dd
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
    p.add_argument("--only", default="abcdefg", help="groups to run, e.g. 'efg' (default: all)")
    args = p.parse_args(argv)
    only = set(args.only.replace(",", "").lower())
    if args.quick:
        n, chunk, n_mm, reps, shape, sub_chunk, sub_reps = 2000, 500, 1000, 2, (200, 500), (10, 10), 1
    else:
        n, chunk, n_mm, reps, shape, sub_chunk, sub_reps = 8000, 1000, 4000, 5, (2000, 5000), (10, 10), 3
    sizes = QUICK_SIZES if args.quick else FULL_SIZES
    reps = args.reps or reps

    rows = []
    if only & set("abcefg"):
        with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0", host="127.0.0.1") as cluster, Client(cluster) as client:
            if only & set("abc"):
                rows += [r for r in bench_ops(client, n, chunk, n_mm, reps) if r[0][1] in only]
            rows += bench_more(client, sizes, reps, only)
    if "d" in only:
        rows += bench_submit(shape, sub_chunk, sub_reps)

    print_table(rows, extra="numpy s / note")
    return rows


if __name__ == "__main__":
    main()
