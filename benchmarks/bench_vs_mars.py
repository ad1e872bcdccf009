"""mars_dask side by side with Dask and Mars 0.10 (issue #21), each run in a fresh process.

    python benchmarks/bench_vs_mars.py --mars-python /tmp/marsvenv/bin/python     # full sizes
    python benchmarks/bench_vs_mars.py --quick --reps 1 --mars-python ...          # smoke run
    python benchmarks/bench_vs_mars.py --only start,merge,sort --reps 3

Every (system, workload, repetition) is one new Python process that starts its cluster the
way a user would, runs one workload and prints one JSON line; the parent collects them:

- ``mars_dask``: ``import mars_dask.tensor as mt / mars_dask.dataframe as md`` and
  ``.execute()``: the embedded cluster, started by the first ``execute()`` (no Client made);
- ``dask``: ``LocalCluster()`` + ``Client`` with their defaults, ``dask.array`` /
  ``dask.dataframe``, ``persist()`` + ``wait`` / ``compute()``;
- ``mars`` (only with ``--mars-python PATH``, a venv from ``make-mars-venv.sh``: Mars 0.10
  needs Python <= 3.11, numpy < 1.24, pandas < 2): ``mars.new_session(n_cpu=2)`` and the
  very same workload code as mars_dask (its API is Mars's);
- ``numpy``: numpy/pandas in the one process, the floor users compare against.

Workloads (``--only`` takes these names, comma separated):

  start     session start + first tiny job (``ones(10).sum()`` to the client)
  elemwise  ``((x + 1) * 2).sum()``          x: n x n float64, c x c chunks (8000, 1000)
  matmul    ``(x.T @ x).sum()``              x: m x m (4000), c x c chunks
  filter    ``x[x > 0.5].sum()``             x as in elemwise
  chain     20 element-wise steps (``y = y * 1.5`` and ``y = y - 0.25`` ten times), ``.sum()``
  groupby   read_parquet (rows, 20 files) + ``groupby("k1").agg({"v": "mean", "w": "sum"})``
            (rows / 10 groups: 1M at 10M rows), result to the client
  merge     read_parquet + ``merge(right, on="k1")`` (rows x rows / 10, int key), kept on
            the cluster
  sort      read_parquet + ``sort_values("v")`` (float column), kept on the cluster
  apply     read_parquet + ``groupby("k2").apply(weighted_mean)`` (100 groups: a Python
            function per group, so 1M groups would time the interpreter), to the client
  rolling   read_parquet + ``df[["v", "w"]].rolling(100).mean()``, kept on the cluster

What is timed: for ``start``, session creation plus the first tiny job (the cluster start
*is* the measurement; the imports are reported beside it, not in it). For the others, the
session is started and warmed with the same tiny job first, untimed; the tensor input is
then built and kept on the cluster, untimed; the timed section is the workload itself:
build the expression, run it, and bring the result to the client or keep it on the cluster
(as said per workload). DataFrame workloads time the read_parquet too. Interpreter start,
imports, shutdown and the correctness checks are never timed.

Inputs: the parquet files (bench_dataframe's ``write_data``: ``k1``, ``k2`` ints, ``v``,
``w`` floats, and a right table keyed by ``k1``) are written once before the runs and read
by every system. The tensor ``x`` is built inside each system from its position,
``x[i, j] = ((i * n + j) * 2654435761 % 2**32) / 2**32`` (a multiplicative hash: uniform on
[0, 1), exact integer arithmetic), not from each system's random generator: the three
generators give different numbers for the same seed, and identical inputs are what lets
the results be compared to rtol 1e-9.

Bytecode: mars_dask is compiled (``compileall``) before the runs, as ``pip install`` does
for Dask's and Mars's modules; an editable install under ``PYTHONDONTWRITEBYTECODE`` would
otherwise compile it from source in every process (about 1 s of CPU in each worker).

Correctness: each run reports check values computed from its result (sums, row counts,
the first rows of a sort, the number of descents in the sorted column, ...); they must
agree with numpy/pandas' (ints exactly, floats to rtol 1e-9). A run whose checks disagree
is printed as WRONG and its time is left out of the medians and ratios: a fast wrong
answer never counts.

Repetitions interleave the systems (the order rotates with each repetition, so a slow
phase of a shared machine hits them alike). Printed per workload: each system's median,
mars_dask / Dask, mars_dask / Mars, mars_dask / min(Dask, Mars) with every repetition's
ratio, and mars_dask / numpy. Targets (issue #21): median mars_dask / min(Dask, Mars)
<= 0.9 and no repetition above 1.1; session start <= Dask's.

Mars 0.10 on this machine (tried with small runs): ``mars.new_session(n_cpu=2)`` works as
documented (one worker with two CPU slots, and a web service; it prints "Web service started"
and a progress bar, so the parent takes the child's result from the line carrying the
``bench_vs_mars`` key). It needs no ``if __name__ == "__main__"`` guard here, but a Mars
source tree in the working directory breaks its import (``mars/typing.py`` shadows the
standard ``typing``: RecursionError), so every child runs in a scratch directory. The
session is stopped with ``stop_server()`` (untimed) so no worker outlives its run. It reads
the parquet files written by this pandas/pyarrow (Mars's venv has pandas 1.5, pyarrow 12).
The child's top level imports only the standard library, as the Mars venv has neither
Dask nor mars_dask.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

SYSTEMS = ("mars_dask", "dask", "mars", "numpy")
WORKLOADS = ("start", "elemwise", "matmul", "filter", "chain", "groupby", "merge", "sort", "apply", "rolling")
DATAFRAME_WORKLOADS = ("groupby", "merge", "sort", "apply", "rolling")
LABELS = {
    "start": "session start + first tiny job",
    "elemwise": "((x + 1) * 2).sum()",
    "matmul": "(x.T @ x).sum()",
    "filter": "x[x > 0.5].sum()",
    "chain": "20-step element-wise chain .sum()",
    "groupby": "read_parquet + groupby(k1).agg",
    "merge": "read_parquet + merge(on=k1)",
    "sort": "read_parquet + sort_values(v)",
    "apply": "read_parquet + groupby(k2).apply(f)",
    "rolling": "read_parquet + rolling(100).mean()",
}
FULL = {"n": 8000, "chunk": 1000, "n_mm": 4000, "rows": 10_000_000}
QUICK = {"n": 2000, "chunk": 500, "n_mm": 1000, "rows": 200_000}
RTOL = 1e-9
MARK = "bench_vs_mars"  # the key that marks a child's result line among its other output


# ---------------------------------------------------------------- the child: one run

def weighted_mean(g):
    """The function of ``apply``: a per-group reduction pandas cannot vectorise."""
    return (g["v"] * g["w"]).sum() / g["w"].sum()


class MarsAPI:
    """mars_dask or Mars 0.10: one API (mars_dask's is Mars's), so one workload code."""

    def __init__(self, system):
        self.system = system
        if system == "mars":
            import mars
            import mars.dataframe as md
            import mars.tensor as mt
            self._mars = mars
        else:
            import mars_dask.dataframe as md
            import mars_dask.tensor as mt
        self.t, self.df = mt, md

    def start(self):
        if self.system == "mars":
            self._session = self._mars.new_session(n_cpu=2)
        # mars_dask: this first execute() starts the embedded cluster
        return self.get(self.t.ones(10).sum())

    def arange(self, n, chunk):
        return self.t.arange(n, chunk_size=chunk)

    def keep(self, x):
        return x.execute()

    def get(self, x):
        return x.execute().fetch()

    def apply(self, grouped, f):
        return grouped.apply(f)

    def head(self, s, k):
        return self.get(s.head(k))

    def rolling_mean(self, df, window):
        return df.rolling(window).mean()

    def stop(self):
        if self.system == "mars":
            self._session.stop_server()
        else:
            import mars_dask
            mars_dask.session.stop_embedded_cluster()


class DaskAPI:
    def __init__(self, system):
        import dask.array as da
        import dask.dataframe as dd
        from distributed import Client, LocalCluster, wait
        self.t, self.df, self._wait = da, dd, wait
        self._Client, self._LocalCluster = Client, LocalCluster

    def start(self):
        self._cluster = self._LocalCluster()
        self._client = self._Client(self._cluster)
        return self.get(self.t.ones(10).sum())

    def arange(self, n, chunk):
        return self.t.arange(n, chunks=chunk)

    def keep(self, x):
        x = x.persist()
        self._wait(x)
        return x

    def get(self, x):
        return x.compute()

    def apply(self, grouped, f):
        return grouped.apply(f, meta=(None, "f8"))

    def head(self, s, k):
        return s.head(k, npartitions=-1)

    def rolling_mean(self, df, window):
        """``df.rolling`` needs known divisions (read_parquet without an index has none:
        "Can only rolling dataframes with known divisions"); ``map_overlap`` with the
        window's rows from the partition before is Dask's documented way around it."""
        return df.map_overlap(lambda part: part.rolling(window).mean(), window - 1, 0)

    def stop(self):
        self._client.close()
        self._cluster.close()


class NumpyAPI:
    """numpy/pandas in this process: no session, nothing deferred."""

    def __init__(self, system):
        import numpy as np
        import pandas as pd
        self.t, self.df = np, pd

    def start(self):
        raise NotImplementedError("numpy/pandas has no session to start")

    def arange(self, n, chunk):
        return self.t.arange(n)

    def keep(self, x):
        return x

    def get(self, x):
        return x

    def apply(self, grouped, f):
        return grouped.apply(f)

    def head(self, s, k):
        return s.head(k)

    def rolling_mean(self, df, window):
        return df.rolling(window).mean()

    def stop(self):
        pass


API = {"mars_dask": MarsAPI, "mars": MarsAPI, "dask": DaskAPI, "numpy": NumpyAPI}


def hashed_grid(api, n, chunk):
    """x[i, j] = ((i * n + j) * 2654435761 % 2**32) / 2**32, chunked c x c, in any system."""
    i = api.arange(n, chunk).reshape(n, 1)
    j = api.arange(n, chunk).reshape(1, n)
    return ((i * n + j) * 2654435761 % 4294967296) / 4294967296.0


def _tensor_workload(name, api, sizes):
    """(input, run(x)) of a tensor workload; every one brings a scalar to the client."""
    if name == "matmul":
        return hashed_grid(api, sizes["n_mm"], sizes["chunk"]), lambda x: api.get((x.T @ x).sum())
    x = hashed_grid(api, sizes["n"], sizes["chunk"])
    if name == "elemwise":
        return x, lambda x: api.get(((x + 1) * 2).sum())
    if name == "filter":
        return x, lambda x: api.get(x[x > 0.5].sum())

    def chain(x):
        y = x
        for _ in range(10):
            y = y * 1.5
            y = y - 0.25
        return api.get(y.sum())

    return x, chain


def _dataframe_workload(name, api, paths):
    """run() of a dataframe workload, and check(result) -> the check values."""
    left, right = paths
    read = api.df.read_parquet

    def frame_checks(res, cols):
        out = {"rows": int(len(res))}
        for c in cols:
            out[f"sum {c}"] = float(api.get(res[c].sum()))
        return out

    if name == "groupby":
        def run():
            return api.get(read(left).groupby("k1").agg({"v": "mean", "w": "sum"}))

        def check(res):
            return {"rows": len(res), "sum v": float(res["v"].sum()), "sum w": float(res["w"].sum()),
                    "sum key": int(res.index.to_numpy().sum())}
        return run, check

    if name == "apply":
        def run():
            return api.get(api.apply(read(left).groupby("k2"), weighted_mean))

        def check(res):
            return {"rows": len(res), "sum": float(res.sum()), "sum key": int(res.index.to_numpy().sum())}
        return run, check

    if name == "merge":
        def run():
            return api.keep(read(left).merge(read(right), on="k1"))

        def check(res):
            return frame_checks(res, ["k1", "v", "attr"])
        return run, check

    if name == "sort":
        def run():
            return api.keep(read(left).sort_values("v"))

        def check(res):
            out = frame_checks(res, ["v", "k1"])
            out["head v"] = [float(v) for v in api.head(res["v"], 5)]
            out["descents"] = int(api.get((res["v"].diff() < 0).sum()))
            return out
        return run, check

    if name == "rolling":
        def run():
            return api.keep(api.rolling_mean(read(left)[["v", "w"]], 100))

        def check(res):
            out = frame_checks(res, ["v", "w"])
            out["non-null v"] = int(api.get(res["v"].count()))
            return out
        return run, check
    raise ValueError(name)


def child(spec):
    """One run: start the system, run the workload once, print one JSON line."""
    system, name, sizes = spec["system"], spec["workload"], spec["sizes"]
    t0 = time.perf_counter()
    api = API[system](system)
    out = {MARK: 1, "system": system, "workload": name, "import_s": time.perf_counter() - t0}
    try:
        if name == "start":
            t0 = time.perf_counter()
            res = api.start()
            out["seconds"] = time.perf_counter() - t0
            out["check"] = {"sum": float(res)}
        else:
            if system != "numpy":
                api.start()
            if name in DATAFRAME_WORKLOADS:
                run, check = _dataframe_workload(name, api, spec["paths"])
                t0 = time.perf_counter()
                res = run()
                out["seconds"] = time.perf_counter() - t0
                out["check"] = check(res)
            else:
                x, run = _tensor_workload(name, api, sizes)
                x = api.keep(x)
                t0 = time.perf_counter()
                res = run(x)
                out["seconds"] = time.perf_counter() - t0
                out["check"] = {"sum": float(res)}
        print(json.dumps(out), flush=True)
    finally:
        api.stop()


# ---------------------------------------------------------------- the parent

def run_child(python, spec, cwd, timeout):
    """Runs one child; returns its JSON dict, or {"error": ...}."""
    cmd = [python, os.path.abspath(__file__), "--child", json.dumps(spec)]
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{") and MARK in line:
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                break
    tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
    return {"error": f"exit {proc.returncode}: {tail[:200]}"}


def _agrees(a, b):
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(_agrees(x, y) for x, y in zip(a, b))
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    return math.isclose(a, b, rel_tol=RTOL, abs_tol=0.0) or (math.isnan(a) and math.isnan(b))


def check_runs(runs):
    """Marks each run of one workload "ok" or "WRONG: ..." against numpy/pandas' checks
    (or, without a numpy run, the first run that finished)."""
    done = [r for r in runs if "check" in r]
    ref = next((r for r in done if r["system"] == "numpy"), done[0] if done else None)
    for r in done:
        bad = [k for k in ref["check"] if k not in r["check"] or not _agrees(ref["check"][k], r["check"][k])]
        r["status"] = "ok" if not bad else "WRONG: " + ", ".join(
            f"{k} {r['check'].get(k)!r} != {ref['check'][k]!r}" for k in bad)


def _fmt(v, spec="8.3f"):
    return f"{v:{spec}}" if not math.isnan(v) else f"{'-':>{len(format(1.0, spec))}}"


def _ratios(t):
    """mars_dask / Dask, / Mars and / the faster of the two, from {system: seconds}."""
    nan = math.nan
    md = t.get("mars_dask", nan)
    rivals = [t[s] for s in ("dask", "mars") if not math.isnan(t.get(s, nan))]
    return {"md/dask": md / t.get("dask", nan), "md/mars": md / t.get("mars", nan),
            "md/min": md / min(rivals) if rivals else nan}


def report(results, systems, workloads, reps):
    """Prints the table of medians and their ratios with the targets, then every
    repetition's ratios, then the runs that failed or were wrong."""
    head = f"{'workload':38s} " + " ".join(f"{s + ' s':>11s}" for s in systems)
    head += f"  {'md/dask':>8s} {'md/mars':>8s} {'md/min':>8s} {'md/np':>8s}  target"
    lines, per_rep_lines, problems = [head], [], []
    for w in workloads:
        runs = [r for r in results if r["workload"] == w]
        good = {s: [r for r in runs if r["system"] == s and r.get("status") == "ok"] for s in systems}
        med = {s: statistics.median(r["seconds"] for r in good[s]) if good[s] else math.nan for s in systems}
        ratio = _ratios(med)
        reps_ratios = [_ratios({r["system"]: r["seconds"] for s in systems for r in good[s] if r["rep"] == rep})
                       for rep in range(reps)]
        all_md_ok = all(r.get("status") == "ok" for r in runs if r["system"] == "mars_dask")
        if w == "start":
            target, met = "md/dask <= 1.00", ratio["md/dask"] <= 1.0
        else:
            target = "md/min <= 0.90, every rep <= 1.10"
            met = ratio["md/min"] <= 0.9 and all(r["md/min"] <= 1.1 for r in reps_ratios)
        line = f"{LABELS[w]:38s} " + " ".join(_fmt(med[s], "11.3f") for s in systems)
        line += "  " + " ".join(_fmt(ratio[k]) for k in ("md/dask", "md/mars", "md/min"))
        line += f" {_fmt(med['mars_dask'] / med['numpy'], '8.1f')}  {target}: {'met' if met and all_md_ok else 'MISSED'}"
        lines.append(line)
        per_rep_lines.append(f"{w:9s} " + "   ".join(
            f"rep {i}: " + " ".join(f"{k} {_fmt(v, '.2f')}" for k, v in r.items()) for i, r in enumerate(reps_ratios)))
        for r in runs:
            if "error" in r or r.get("status") != "ok":
                problems.append(f"  {w} / {r['system']} (rep {r['rep']}): {r.get('error') or r['status']}")
    print("\n" + "\n".join(lines))
    print("\nratios of each repetition (the systems ran one after the other, order rotating):")
    print("\n".join(per_rep_lines))
    imports = {s: [r["import_s"] for r in results if r["system"] == s and "import_s" in r] for s in systems}
    print("\nimports (not timed; session start is timed from after them):", ", ".join(
        f"{s} {statistics.median(v):.2f} s" for s, v in imports.items() if v))
    if problems:
        print("runs that failed or gave wrong results (left out of the medians and ratios):")
        print("\n".join(problems))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes (a smoke run of a few minutes)")
    p.add_argument("--reps", type=int, default=None, help="repetitions (default 3, --quick 2)")
    p.add_argument("--only", default=",".join(WORKLOADS), help="workloads, comma separated")
    p.add_argument("--mars-python", default=None, help="python of a Mars 0.10 venv (make-mars-venv.sh)")
    p.add_argument("--timeout", type=float, default=None, help="seconds per run (default 3600, --quick 600)")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return child(json.loads(args.child))

    workloads = [w.strip() for w in args.only.split(",") if w.strip()]
    unknown = set(workloads) - set(WORKLOADS)
    if unknown:
        p.error(f"unknown workloads {sorted(unknown)}; choose from {', '.join(WORKLOADS)}")
    sizes = QUICK if args.quick else FULL
    reps = args.reps or (2 if args.quick else 3)
    timeout = args.timeout or (600 if args.quick else 3600)
    systems = [s for s in SYSTEMS if s != "mars" or args.mars_python]
    python = {"mars_dask": sys.executable, "dask": sys.executable, "numpy": sys.executable,
              "mars": args.mars_python}

    from _common import compile_mars_dask  # the parent only (a Mars child has no mars_dask)

    compile_mars_dask()
    results = []
    with tempfile.TemporaryDirectory(prefix="bench_vs_mars-") as tmp:
        paths = None
        if set(workloads) & set(DATAFRAME_WORKLOADS):
            from bench_dataframe import write_data
            paths = write_data(tmp, sizes["rows"])
        scratch = os.path.join(tmp, "cwd")
        os.makedirs(scratch)
        for rep in range(reps):
            order = systems[rep % len(systems):] + systems[:rep % len(systems)]
            for w in workloads:
                for s in order:
                    if s == "numpy" and w == "start":
                        continue
                    spec = {"system": s, "workload": w, "sizes": sizes, "paths": paths}
                    r = run_child(python[s], spec, scratch, timeout)
                    r.update(system=s, workload=w, rep=rep)
                    results.append(r)
                    took = f"{r['seconds']:.3f} s" if "seconds" in r else r.get("error")
                    print(f"rep {rep} {w:9s} {s:10s} {took}", flush=True)
    for w in workloads:
        check_runs([r for r in results if r["workload"] == w])
    print(f"\n{sizes}, {reps} repetitions, a fresh process per run; medians (s) of the correct runs")
    report(results, systems, workloads, reps)
    return results


if __name__ == "__main__":
    main()
