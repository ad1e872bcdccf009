"""Helpers shared by the benchmark scripts (run them as ``python benchmarks/<name>.py``)."""

from __future__ import annotations

import gc
import importlib.util
import os
import statistics
import sys
import time


def compile_mars_dask() -> None:
    """Give mars_dask the bytecode an installed package has, before anything is timed.

    ``pip install`` compiles a wheel's modules when it installs them (Dask's and Mars's
    are); an editable install (the README's) leaves it to the first import, and with
    ``PYTHONDONTWRITEBYTECODE`` set (as on the machine these figures come from) it is
    never written: every process -- the client and each worker -- then compiled mars_dask
    from source, about 1 s of CPU each, which no user of an installed package pays."""
    import compileall

    spec = importlib.util.find_spec("mars_dask")
    for root in spec.submodule_search_locations or ():
        if not compileall.compile_dir(root, quiet=1):
            print(f"warning: compiling {root} failed; mars_dask runs will compile it", file=sys.stderr)
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("PYTHONDONTWRITEBYTECODE is set: mars_dask's bytecode was compiled for these runs", flush=True)


def n_tasks(client) -> int:
    return client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks))


def settle(client, baseline: int, timeout: float = 120) -> None:
    """Wait until the scheduler has forgotten everything but ``baseline`` tasks (persisted
    inputs), so that the next run recomputes: keys are deterministic in both systems."""
    gc.collect()
    deadline = time.monotonic() + timeout
    while n_tasks(client) > baseline and time.monotonic() < deadline:
        time.sleep(0.05)


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def alternate(client, baseline: int, reps: int, *fns) -> list[float]:
    """Run each function ``reps`` times, alternating between them (so slow phases of a noisy
    machine hit all of them alike); returns the median time of each."""
    times = [[] for _ in fns]
    for _ in range(reps):
        for i, fn in enumerate(fns):
            times[i].append(timed(fn))
            settle(client, baseline)
    return [statistics.median(t) for t in times]


def print_table(rows, header=("benchmark", "mars_dask s", "dask s", "ratio", "target"), extra=None):
    """rows: (name, mars seconds, dask seconds, target text[, extra column])."""
    cols = f"{header[0]:46s} {header[1]:>12s} {header[2]:>10s} {header[3]:>7s}  {header[4]}"
    if extra:
        cols += f"  {extra}"
    print()
    print(cols)
    for row in rows:
        name, m, d, target = row[:4]
        line = f"{name:46s} {m:12.3f} {d:10.3f} {m / d:7.2f}  {target:7s}"
        if len(row) > 4:
            line += f"  {row[4]}"
        print(line)
