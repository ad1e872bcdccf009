"""Time from SIGKILL of a worker process to job completion: mars_dask vs plain Dask.

A CLI cluster (2 workers x 2 threads, nannies) persists ``--chunks`` chunks, each costing
``--cost`` seconds to compute (think: the output of an expensive upstream stage); a job
then reads all of them. Right after the job starts, the worker process holding most
chunks is SIGKILLed (the job's tasks cost ``--job-cost`` seconds each, so the kill lands while it
runs; the script refuses to report a job that finished before the kill). Plain Dask recomputes every chunk that process held; mars_dask's
restarted process reopens its store and re-registers them, so only the tasks that were
running re-execute.

    python benchmarks/bench_restart.py [--chunks 64] [--cost 0.5] [--job-cost 0.2] [--mb 8] [--repeat 1]

``--rejoin K``: instead, how fast a SIGKILLed worker process is back, by how the nanny starts
it (``mars-dask.worker.start-method``: ``forkserver``, auto's choice on ``dask worker``, and
``null``, Dask's spawn), interleaved on one 3-worker cluster each: seconds from the kill to
a worker of that name answering with a new pid, the new process's CPU seconds and RSS then,
and the seconds its first small mars_dask task took (a spawned process imports numpy,
pandas and mars_dask.tensor for it).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

import mars_dask  # noqa: E402
import mars_dask.tensor as mt  # noqa: E402
from mars_dask.tensor.arithmetic import elementwise  # noqa: E402
from _common import compile_mars_dask  # noqa: E402
from tests.worker import _kernels as K  # noqa: E402
from tests.worker.conftest import CLICluster  # noqa: E402


def run(mars: bool, chunks: int, cost: float, mb: int, job_cost: float) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="bench-restart-"))
    c = CLICluster(tmp, mars=mars, n_workers=2, nthreads=2, memory_limit="4GiB",
                   env={"DASK_MARS_DASK__SCHEDULER__RESTART_GRACE": "60s"})
    try:
        client = c.start()
        n = mb * 2**20 // 8
        base = mt.random.rand(chunks, n, chunk_size=(1, n))
        x = elementwise(K.slow_add_one, base, dtype=float, delay=cost)  # the costly stage
        mars_dask.execute(x)
        xkeys = [str(ch.key) for ch in x.data.chunks]
        who = client.who_has([ch.future for ch in x.data.chunks])
        addr, held = Counter(a for v in who.values() for a in v).most_common(1)[0]
        name = c.workers()[addr]["name"]
        job = elementwise(K.slow_add_one, x * 2, dtype=float, delay=job_cost).sum()
        done = threading.Event()
        err = []

        def go():
            try:
                mars_dask.execute(job)
            except BaseException as e:  # noqa: BLE001
                err.append(e)
            done.set()

        threading.Thread(target=go, daemon=True).start()
        time.sleep(0.5)
        t0 = time.perf_counter()
        c.kill_worker_process(name)
        if done.is_set():
            raise RuntimeError("the job finished before the kill: raise --job-cost")
        if not done.wait(600):
            raise TimeoutError("job did not finish")
        dt = time.perf_counter() - t0
        if err:
            raise err[0]
        counts = c.counts()
        reexec = sum(counts["executed"].get(k, 0) - 1 for k in xkeys)
        assert np.isfinite(job.fetch())
        return {"mode": "mars_dask" if mars else "plain Dask", "held": held, "reexec": reexec, "seconds": dt}
    finally:
        c.close()
        c.cleanup_dirs()


def rejoin(kills: int) -> list:

    import psutil

    rows = []
    clusters = {}
    try:
        for method in ("forkserver", "null"):
            tmp = Path(tempfile.mkdtemp(prefix="bench-rejoin-"))
            c = CLICluster(tmp, mars=True, n_workers=3, nthreads=1, memory_limit="2GiB",
                           env={"DASK_MARS_DASK__WORKER__START_METHOD": method})
            clusters[method] = c.start_or_clean_up()
        for i in range(kills):
            for method, c in clusters.items():
                name = f"w{i % 3}"
                pid = c.kill_worker_process(name)
                t0 = time.perf_counter()
                while True:  # the scheduler's record, not a run(): one on the dead address
                    try:         # retries its connection for distributed.comm.timeouts.connect
                        addr, w = c.worker_by_name(name)
                        if w["pid"] != pid:
                            new = w["pid"]
                            break
                    except KeyError:
                        pass
                    time.sleep(0.01)
                back = time.perf_counter() - t0
                p = psutil.Process(new)
                cpu, rss = sum(p.cpu_times()[:2]), p.memory_info().rss
                t1 = time.perf_counter()
                c.client.submit(_tensor_task, workers=[addr], pure=False).result()
                first = time.perf_counter() - t1
                rows.append({"method": method, "back": back, "cpu": cpu, "rss": rss / 2**20, "first": first})
                print(f"  {method:<10} kill {i}: back {back:.2f} s, CPU {cpu:.2f} s, first task {first:.2f} s",
                      flush=True)
                if back > 5:  # an outlier: what the cluster logged meanwhile
                    print(c.logs(2500), flush=True)
                time.sleep(1)
    finally:
        for c in clusters.values():
            c.close()
            c.cleanup_dirs()
    print(f"\nSIGKILL of a worker process, {kills} per method, 3 workers x 1 thread (medians, [min-max])")
    print(f"{'start method':<14} {'kill -> back (s)':>22} {'its CPU (s)':>20} {'RSS (MiB)':>16} {'first task (s)':>20}")
    for method in ("forkserver", "null"):
        rs = [r for r in rows if r["method"] == method]
        label = "forkserver" if method == "forkserver" else "spawn (null)"
        print(f"{label:<14} {_cell(rs, 'back'):>22} {_cell(rs, 'cpu'):>20} {_cell(rs, 'rss', '{:.0f}'):>16} "
              f"{_cell(rs, 'first'):>20}")
    return rows


def _cell(rows, k, f="{:.2f}") -> str:
    import statistics

    v = [r[k] for r in rows]
    return (f + " [" + f + "-" + f + "]").format(statistics.median(v), min(v), max(v))


def _tensor_task():
    """What a worker runs for a small mars_dask tensor chunk: imports and a kernel."""
    import numpy as np

    import mars_dask.tensor  # noqa: F401 - what a mars_dask task's code comes from

    return float(np.ones((100, 100)).sum())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=64)
    ap.add_argument("--cost", type=float, default=0.5, help="seconds to compute one stored chunk")
    ap.add_argument("--job-cost", type=float, default=0.2, help="seconds per task of the job that reads them")
    ap.add_argument("--mb", type=int, default=8, help="MiB per chunk")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--rejoin", type=int, default=0, metavar="K",
                    help="instead: K kills per worker start method, time until the process is back")
    a = ap.parse_args()
    if a.rejoin:
        compile_mars_dask()  # else each spawned process compiles mars_dask: not what users pay
        rejoin(a.rejoin)
        return
    rows = []
    for _ in range(a.repeat):
        for mars in (True, False):
            rows.append(run(mars, a.chunks, a.cost, a.mb, a.job_cost))
    print(f"\n{a.chunks} stored chunks x {a.mb} MiB, {a.cost:.2f} s to compute each; "
          f"the job {a.job_cost:.2f} s per chunk; 2 workers x 2 threads; SIGKILL of the process holding most chunks")
    print(f"{'mode':<12} {'chunks lost':>11} {'re-executed':>11} {'kill -> done (s)':>17}")
    for r in rows:
        print(f"{r['mode']:<12} {r['held']:>11} {r['reexec']:>11} {r['seconds']:>17.2f}")


if __name__ == "__main__":
    main()
