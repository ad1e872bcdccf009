"""Soak: scheduler memory and task count of a long-lived cluster, mars_dask beside plain Dask.

    python benchmarks/bench_soak.py [--iterations 10000] [--chunks 100000] [--every 1000] [--job-repeats 2]

Each system runs in a fresh process with its own 2-worker cluster started with the CLIs
(``dask scheduler`` / ``dask worker --nanny``; mars_dask: with the README's preloads, store
and plugins installed; plain Dask: none), so that the scheduler's RSS is measured in a
process of its own (in a LocalCluster it shares the client's process):

1. the loop ``x = f(x)`` with ``x`` held between iterations (mars_dask:
   ``x = (x + 1).execute()``, no checkpoints; plain Dask: ``x = (x + 1).persist()`` of a
   dask.array), sampling the scheduler's task count and RSS every ``--every`` iterations;
2. a job of ``--chunks`` chunks (``(y * 2 + 1).sum()`` of a ``(chunks, 10)`` array in rows
   of 1): task count and RSS after it ran with its result held, then after the handles are
   dropped.

Also printed for mars_dask: the failover journal's entries in memory, its segments and its
SQLite index on disk (the journal keeps every recipe on disk: it is what recovery reads
after the scheduler forgot the keys; its in-memory part holds entries of keys the scheduler
holds, at most ``mars-dask.failover.journal-memory-entries``; the per-key index is on disk).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import shutil
import signal
import subprocess
import sys
import time


def _scheduler_stats(dask_scheduler):
    """Tasks, RSS, and the blocks Python's allocators hold for live objects (after a
    collection): RSS above the baseline with the blocks back at it is allocator retention
    (pymalloc's 1 MiB arenas are returned only when empty), not objects kept alive."""
    import gc
    import os
    import sys

    import psutil

    gc.collect()
    return len(dask_scheduler.tasks), psutil.Process(os.getpid()).memory_info().rss, sys.getallocatedblocks()


@contextlib.contextmanager
def _cli_cluster(mars: bool, n_workers: int = 2):
    """``dask scheduler`` + ``dask worker --nanny`` processes on 127.0.0.1 (mars: with the
    README's preloads). The scheduler has a process of its own, so its RSS is the
    scheduler's alone (with a LocalCluster the scheduler lives in the client's process and
    the client's graphs would be counted as the scheduler's)."""
    import socket
    import tempfile

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    addr = f"tcp://127.0.0.1:{port}"
    pre = ["--preload", "mars_dask"] if mars else []
    tmp = tempfile.mkdtemp(prefix="mars-dask-soak-")
    procs = [subprocess.Popen([sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port",
                               str(port), "--no-dashboard", *pre], cwd=tmp, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)]
    for i in range(n_workers):
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "dask", "worker", addr, "--host", "127.0.0.1", "--nanny", "--nthreads", "1",
             "--name", f"w{i}", "--no-dashboard", "--local-directory", os.path.join(tmp, f"w{i}"),
             *(pre + ["--preload-nanny", "mars_dask"] if mars else [])],
            cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
    try:
        yield addr
    finally:
        for p in procs[1:] + procs[:1]:  # workers first: a clean close removes their stores
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
        shutil.rmtree(tmp, ignore_errors=True)


def _run(system: str, iterations: int, chunks: int, every: int, job_repeats: int) -> dict:
    from distributed import Client

    mars = system == "mars"
    out = {"loop": [], "jobs": []}
    with _cli_cluster(mars) as addr, Client(addr, timeout=60) as client:
        client.wait_for_workers(2, timeout=60)
        def sample(**extra):
            n, rss, blocks = client.run_on_scheduler(_scheduler_stats)
            return {"tasks": n, "rss_mib": rss / 2**20, "blocks": blocks, **extra}

        out["baseline"] = sample()
        if mars:
            import mars_dask
            import mars_dask.tensor as mt

            x = mt.ones((10, 10), chunk_size=5).execute()
            step = lambda x: (x + 1).execute()  # noqa: E731
        else:
            import dask.array as da

            x = da.ones((10, 10), chunks=5).persist()
            step = lambda x: (x + 1).persist()  # noqa: E731
        t0 = time.perf_counter()
        for i in range(1, iterations + 1):
            x = step(x)
            if i % every == 0:
                gc.collect()
                extra = {}
                if mars:
                    rep = mars_dask.failover_report(client)
                    extra = {"journal_in_memory": rep["journal_entries_in_memory"],
                             "journal_mib": rep["journal_bytes"] / 2**20,
                             "index_mib": rep.get("journal_index_bytes", 0) / 2**20}
                out["loop"].append(sample(i=i, seconds=time.perf_counter() - t0, **extra))
        value = float(x.fetch()[0, 0]) if mars else float(x.compute()[0, 0])
        assert value == iterations + 1, value
        del x, step
        gc.collect()
        time.sleep(2)
        out["after_loop"] = sample()

        for _ in range(job_repeats):
            job = {}
            if mars:
                y = mt.ones((chunks, 10), chunk_size=(1, 10))
                s = (y * 2 + 1).sum()
                t0 = time.perf_counter()
                s.execute()
                result = s.fetch()
            else:
                y = da.ones((chunks, 10), chunks=(1, 10))
                s = ((y * 2 + 1).sum()).persist()
                t0 = time.perf_counter()
                result = s.compute()
            assert float(result) == chunks * 30, result
            job["seconds"] = time.perf_counter() - t0
            job["held"] = sample()
            del s, y
            gc.collect()
            time.sleep(12)  # the trim runs at most 10 s after the forgetting began
            job["dropped"] = sample()
            if mars:
                rep = mars_dask.failover_report(client)
                job["journal"] = {"entries": rep["journal_entries"],
                                  "in_memory": rep["journal_entries_in_memory"],
                                  "mib": rep["journal_bytes"] / 2**20,
                                  "index_mib": rep.get("journal_index_bytes", 0) / 2**20}
            out["jobs"].append(job)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--iterations", type=int, default=10_000)
    p.add_argument("--chunks", type=int, default=100_000)
    p.add_argument("--every", type=int, default=1000)
    p.add_argument("--job-repeats", type=int, default=2, help="runs of the large job, one after the other")
    p.add_argument("--system", choices=["mars", "plain"], help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.system:  # the child
        print(json.dumps(_run(a.system, a.iterations, a.chunks, a.every, a.job_repeats)))
        return 0
    res = {}
    for system in ("mars", "plain"):
        r = subprocess.run([sys.executable, __file__, "--system", system, "--iterations", str(a.iterations),
                            "--chunks", str(a.chunks), "--every", str(a.every), "--job-repeats", str(a.job_repeats)], capture_output=True, text=True)
        if r.returncode:
            print(r.stderr[-3000:], file=sys.stderr)
            return 1
        res[system] = json.loads(r.stdout.strip().splitlines()[-1])
    m, d = res["mars"], res["plain"]
    print(f"scheduler tasks and RSS (MiB); baseline mars_dask {m['baseline']['tasks']} / "
          f"{m['baseline']['rss_mib']:.0f}, plain Dask {d['baseline']['tasks']} / {d['baseline']['rss_mib']:.0f}")
    print(f"\n== loop x = f(x), {a.iterations} iterations")
    print(f"  {'iteration':>9} {'mars tasks':>10} {'mars RSS':>9} {'journal mem':>11} {'journal MiB':>11}"
          f" {'index MiB':>9} {'dask tasks':>10} {'dask RSS':>9}")
    for ms, ds in zip(m["loop"], d["loop"]):
        print(f"  {ms['i']:>9} {ms['tasks']:>10} {ms['rss_mib']:>9.0f} {ms['journal_in_memory']:>11}"
              f" {ms['journal_mib']:>11.1f} {ms.get('index_mib', 0):>9.1f} {ds['tasks']:>10} {ds['rss_mib']:>9.0f}")
    if len(m["loop"]) > 1 and len(d["loop"]) > 1:
        def growth(s):  # RSS growth per iteration between the first and the last sample
            return (s[-1]["rss_mib"] - s[0]["rss_mib"]) * 2**20 / (s[-1]["i"] - s[0]["i"])
        print(f"  RSS growth per iteration (first to last sample): mars {growth(m['loop']) / 1024:.1f} KiB, "
              f"plain Dask {growth(d['loop']) / 1024:.1f} KiB")
    print(f"  handles dropped: mars {m['after_loop']['tasks']} tasks / {m['after_loop']['rss_mib']:.0f} MiB, "
          f"plain Dask {d['after_loop']['tasks']} / {d['after_loop']['rss_mib']:.0f} MiB; loop time "
          f"mars {m['loop'][-1]['seconds']:.0f} s, plain Dask {d['loop'][-1]['seconds']:.0f} s")
    print(f"\n== a {a.chunks}-chunk job, {a.job_repeats} times (live blocks: sys.getallocatedblocks(), thousands)")
    print(f"  baseline: mars {m['baseline']['blocks'] / 1e3:.0f}k blocks, plain Dask {d['baseline']['blocks'] / 1e3:.0f}k")
    for i, (mj, dj) in enumerate(zip(m["jobs"], d["jobs"])):
        for what in ("held", "dropped"):
            print(f"  run {i + 1} {what:>8}: mars {mj[what]['tasks']} tasks / {mj[what]['rss_mib']:.0f} MiB / "
                  f"{mj[what]['blocks'] / 1e3:.0f}k blocks, plain Dask {dj[what]['tasks']} / "
                  f"{dj[what]['rss_mib']:.0f} MiB / {dj[what]['blocks'] / 1e3:.0f}k")
        print(f"  run {i + 1} time: mars {mj['seconds']:.1f} s, plain Dask {dj['seconds']:.1f} s")
    if m["jobs"] and "journal" in m["jobs"][-1]:
        j = m["jobs"][-1]["journal"]
        print(f"  mars journal after the jobs: {j['entries']} entries ({j['in_memory']} in memory), "
              f"segments {j['mib']:.1f} MiB, index {j['index_mib']:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
