"""Time from SIGKILL of a worker process to job completion: mars_dask vs plain Dask.

A CLI cluster (2 workers x 2 threads, nannies) persists ``--chunks`` chunks, each costing
``--cost`` seconds to compute (think: the output of an expensive upstream stage); a job
then reads all of them. Right after the job starts, the worker process holding most
chunks is SIGKILLed (the job's tasks cost ``--job-cost`` seconds each, so the kill lands while it
runs; the script refuses to report a job that finished before the kill). Plain Dask recomputes every chunk that process held; mars_dask's
restarted process reopens its store and re-registers them, so only the tasks that were
running re-execute.

    python benchmarks/bench_restart.py [--chunks 64] [--cost 0.5] [--job-cost 0.2] [--mb 8] [--repeat 1]
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=64)
    ap.add_argument("--cost", type=float, default=0.5, help="seconds to compute one stored chunk")
    ap.add_argument("--job-cost", type=float, default=0.2, help="seconds per task of the job that reads them")
    ap.add_argument("--mb", type=int, default=8, help="MiB per chunk")
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args()
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
