"""Failover under chaos: mars_dask vs plain Dask, the targets (a)-(f) of the failover issue.

Real CLI clusters (tests/worker/conftest.py: ``dask scheduler`` + 2 ``dask worker --nanny``
processes, ``--workers``/``--threads``), one per system; the jobs, faults and metrics are
those of the chaos harness (tests/failover/_chaos.py). Every faulted run is compared exactly
with the fault-free run of the same system.

(a) the tensor chain ``x = (x + x.T) * 0.5 + 1`` (``--steps`` steps on an ``--n`` square in
    ``--chunk`` chunks, executed in stages of ``--every-steps`` with a reduction each), run
    ``--runs`` times with a random worker process SIGKILLed every ``--kill-every`` s (its
    nanny restarts it): runs correct / runs, wall times. A run not done within
    ``--run-timeout`` counts as failed (its cluster is replaced).
(b) from the same runs: tasks re-executed vs the minimal set (per kill: the keys in memory
    only on the victim that were still needed, plus their ancestors not in memory elsewhere,
    taken inside the scheduler at the instant of the kill); for mars_dask also the plugin's
    own plan size ("recovery-plan" events).
(c) read_parquet -> groupby -> merge -> sort_values (``--rows`` rows, ``--files`` files); the
    worker holding most map outputs of the first shuffle is SIGKILLed at the transition that
    completes its map stage: map tasks re-run vs that worker's share.
(d) the chain with the scheduler SIGKILLed after its first stage and restarted on the same
    port and journal directory: does the job complete, correct?
(e) ``x = f(x).execute()`` for ``--iterations`` iterations with ``checkpoint=True`` every 10:
    scheduler TaskStates and journal entries at iteration 10 and at the end; then a worker and
    its nanny SIGKILLed after iteration ``--iterations // 2 + 5``: iterations re-run.
(f) fault-free wall time of the jobs: mars_dask jobs on the cluster with the plugins vs the
    same mars_dask jobs on the plain cluster (the plugins' overhead; target <= 1.05), and the
    plain Dask version (for reference), after ``--warmup`` untimed runs of each, with the CPU
    seconds of each run beside its wall time; scheduler throughput on a ``--tasks``-task graph:
    graph acceptance (as bench_tensor.py (d), on schedulers without workers, with and without
    ``--preload mars_dask``) and running a ``--run-tasks``-task graph on the workers (tasks/s).

    python benchmarks/bench_failover.py [--quick] [--runs 20] [--only abcdef]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.failover import _chaos as C  # noqa: E402
from tests.failover.conftest import make_cluster  # noqa: E402

JOB_SYSTEM = {"mars": "mars", "plain": "dask"}


class Bench:
    def __init__(self, args):
        self.a = args
        self.tmp = Path(tempfile.mkdtemp(prefix="bench-failover-"))
        self.clusters: dict = {}
        self.n_made = 0
        self.rows: list = []
        self.raw: dict = {}

    # -- clusters ------------------------------------------------------------------------
    def cluster(self, system, fresh=False, **kw):
        if fresh and system in self.clusters:
            self.drop(system)
        if system not in self.clusters:
            self.n_made += 1
            self.clusters[system] = make_cluster(
                self.tmp / f"{system}-{self.n_made}", system == "mars", n_workers=kw.pop("n_workers", self.a.workers),
                nthreads=self.a.threads, memory_limit=self.a.memory_limit, **kw)
        c = self.clusters[system]
        c.client.wait_for_workers(c.n_workers, timeout=180)
        return c

    def scheduler_only(self, system):
        """A scheduler process without workers (nothing runs: graph handling alone)."""
        from distributed import Client

        from tests.worker.conftest import CLICluster

        self.n_made += 1
        path = self.tmp / f"{system}-sched-{self.n_made}"
        path.mkdir(parents=True)
        c = CLICluster(path, mars=system == "mars", n_workers=0)
        try:
            c.start_scheduler()
            c.client = Client(scheduler_file=str(c.scheduler_file), timeout=60)
        except BaseException:
            c.close()
            raise
        return c

    def drop(self, system):
        c = self.clusters.pop(system, None)
        if c is not None:
            c.close()
            c.cleanup_dirs()

    def close(self):
        import shutil

        for s in list(self.clusters):
            self.drop(s)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def log(self, msg):
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)

    # -- params --------------------------------------------------------------------------
    def chain(self):
        a = self.a
        return dict(n=a.n, chunk=a.chunk, steps=a.steps, every=a.every_steps)

    def frame(self):
        d = self.tmp / "frame-data"
        if not d.exists():
            C.write_frame_data(d, self.a.rows, self.a.files, self.a.keys)
        return dict(data=str(d))

    def loop(self):
        return dict(n=self.a.loop_n, chunk=self.a.loop_chunk, iterations=self.a.iterations, checkpoint_every=10)

    # -- (a) + (b) -----------------------------------------------------------------------
    def ab(self):
        out = {}
        for system in ("mars", "plain"):
            job = JOB_SYSTEM[system]
            c = self.cluster(system)
            ref = C.run_job(c, job, "chain", self.chain(), timeout=self.a.run_timeout)
            self.log(ref.summary())
            if not ref.ok:
                raise RuntimeError(ref.error)
            C.settle(c.client)
            runs = []
            n_runs = self.a.runs if system == "mars" else min(self.a.runs, self.a.plain_runs)
            for i in range(n_runs):
                c = self.cluster(system)
                before = _recovery_counts(c) if system == "mars" else None
                res = C.run_job(c, job, "chain", self.chain(), C.PeriodicWorkerKill(self.a.kill_every, seed=i),
                                expected=ref.result, timeout=self.a.run_timeout)
                if before is not None:
                    res.store_loss = _per_kill(before, _recovery_counts(c), len(res.kills))
                self.log(f"run {i + 1}/{n_runs} " + res.summary()
                         + (f" per kill: {res.store_loss}" if res.store_loss else ""))
                runs.append(res)
                if res.error is not None:
                    self.drop(system)  # a hung or failed run leaves the cluster in any state
                else:
                    C.settle(c.client)
            out[system] = (ref, runs)
        self.raw["ab"] = {s: {"ref_wall": r.wall, "runs": [_brief(x) for x in runs]} for s, (r, runs) in out.items()}

        def cell_a(system):
            ref, runs = out[system]
            ok = sum(r.ok for r in runs)
            walls = [r.wall for r in runs if r.ok]
            med = f", median {statistics.median(walls):.0f}s" if walls else ""
            fails = [_err(r.error) for r in runs if r.error]
            return f"{ok}/{len(runs)} (ref {ref.wall:.0f}s{med}; kills {sum(len(r.kills) for r in runs)})" + (
                f" [{fails[0]}]" if fails else "")

        m_ok = all(r.ok for r in out["mars"][1])
        self.rows.append((f"(a) chain, worker kill every {self.a.kill_every:g}s: correct", cell_a("mars"),
                          cell_a("plain"), "N/N", m_ok))

        def cell_slow(system):
            ref, runs = out[system]
            ratios = sorted(r.wall / ref.wall for r in runs if r.ok)
            if not ratios:
                return "-", None
            return (f"median {statistics.median(ratios):.2f} (runs {ratios[0]:.2f}-{ratios[-1]:.2f})",
                    statistics.median(ratios))

        (ms, mr_), (ps, _) = cell_slow("mars"), cell_slow("plain")
        self.rows.append(("(a) faulted wall / fault-free wall", ms, ps, "<= 1.5", mr_ is not None and mr_ <= 1.5))
        losses = [r.store_loss for r in out["mars"][1] if r.store_loss]
        if losses:
            keys = losses[0].keys()
            avg = {k: sum(x[k] for x in losses) / len(losses) for k in keys}
            self.rows.append(("(a) per kill: results lost / not yet written / adopted / recomputed",
                              " / ".join(f"{avg[k]:.0f}" for k in ("lost", "lost_unwritten", "adopted", "recomputed")),
                              "", "info", None))

        def cell_b(system):
            _, runs = out[system]
            rx = sum(r.reexecuted for r in runs)
            mn = sum(r.minimal_count() for r in runs)
            ratio = rx / mn if mn else float("nan")
            plan = [r.planned_recompute() for r in runs]
            plan_s = f", plan {sum(p for p in plan if p)}" if any(p is not None for p in plan) else ""
            return f"{rx}/{mn} = {ratio:.2f}{plan_s}", ratio

        (mb, mr), (pb, _) = cell_b("mars"), cell_b("plain")
        self.rows.append(("(b) re-executed / minimal set", mb, pb, "<= 1.2", mr <= 1.2))

    # -- (c) -----------------------------------------------------------------------------
    def c(self):
        out = {}
        for system in ("mars", "plain"):
            job = JOB_SYSTEM[system]
            c = self.cluster(system)
            ref = C.run_job(c, job, "frame", self.frame(), timeout=self.a.run_timeout)
            self.log(ref.summary())
            C.settle(c.client)
            figs = []
            for _i in range(self.a.shuffle_runs):
                c = self.cluster(system)
                res = C.run_job(c, job, "frame", self.frame(), C.ShuffleKill(), expected=ref.result,
                                timeout=self.a.run_timeout)
                self.log(res.summary() + f" {C.shuffle_figures(res)}")
                figs.append((res, C.shuffle_figures(res)))
                if res.error is not None:
                    self.drop(system)
                else:
                    C.settle(c.client)
                    c.client.wait_for_workers(c.n_workers, timeout=180)
            out[system] = (ref, figs)
        self.raw["c"] = {s: [(_brief(r), f) for r, f in figs] for s, (_, figs) in out.items()}

        def cell(system):
            ref, figs = out[system]
            got = [(r, f) for r, f in figs if f]
            if not got:
                return "no kill", float("nan"), False
            rerun = sum(f["rerun_maps"] for _, f in got)
            share = sum(f["share"] for _, f in got)
            maps = sum(f["maps"] for _, f in got)
            ok = all(r.ok for r, _ in got)
            return (f"{rerun}/{share} of {maps} maps = {rerun / share:.2f}x"
                    f" ({'correct' if ok else 'WRONG/failed'}, {statistics.median(r.wall for r, _ in got):.0f}s"
                    f" vs {ref.wall:.0f}s)"), rerun / share, ok

        m, mr, mok = cell("mars")
        p, _, _ = cell("plain")
        self.rows.append(("(c) shuffle map tasks re-run / lost share", m, p, "<= 2x", mr <= 2 and mok))

    # -- (d) -----------------------------------------------------------------------------
    def d(self):
        cells = {}
        for system in ("mars", "plain"):
            job = JOB_SYSTEM[system]
            c = self.cluster(system, fresh=True)
            ref = C.run_job(c, job, "chain", self.chain(), timeout=self.a.run_timeout)
            C.settle(c.client)
            res = C.run_job(c, job, "chain", self.chain(), C.SchedulerKill(after_progress=self.a.every_steps),
                            expected=ref.result, timeout=self.a.run_timeout)
            self.log(res.summary())
            killed = bool(res.kills) and res.kills[0]["gone"]
            cells[system] = (res.ok and killed,
                             ("correct" if res.ok else "FAILED: " + _err(res.error or "wrong result"))
                             + (f" ({res.wall:.0f}s vs {ref.wall:.0f}s)" if res.ok else "")
                             + ("" if killed else " [kill did not happen]"))
            self.drop(system)
        self.rows.append(("(d) scheduler SIGKILL + restart", cells["mars"][1], cells["plain"][1], "completes",
                          cells["mars"][0]))

    # -- (e) -----------------------------------------------------------------------------
    def e(self):
        out = {}
        after = self.a.iterations // 2 + 5
        for system in ("mars", "plain"):
            job = JOB_SYSTEM[system]
            c = self.cluster(system, fresh=True, env={"DASK_MARS_DASK__SCHEDULER__RESTART_GRACE": "2s"})
            ref = C.run_job(c, job, "loop", self.loop(), timeout=self.a.run_timeout, per_iteration=True)
            self.log(ref.summary())
            C.settle(c.client)
            res = C.run_job(c, job, "loop", self.loop(), C.NodeKill(after=after), expected=ref.result,
                            timeout=self.a.run_timeout, per_iteration=True)
            self.log(res.summary())
            out[system] = (ref, res)
            self.drop(system)  # one node is gone for good
        self.raw["e"] = {s: {"ref_iter_stats": r.ctx.iter_stats, "run": _brief(x),
                             "reexecuted_iterations": C.reexecuted_iterations(x)} for s, (r, x) in out.items()}

        def growth(res, fld):
            rows = [r for r in res.ctx.iter_stats if r.get(fld) is not None]
            if not rows:
                return "n/a", None
            at10 = next((r[fld] for r in rows if r["iteration"] == 10), rows[0][fld])
            end = rows[-1][fld]
            return f"{at10} -> {end}", (at10, end)

        for fld, label in (("scheduler_tasks", "scheduler TaskStates"), ("journal_entries", "journal entries")):
            m, mv = growth(out["mars"][0], fld)
            p, _ = growth(out["plain"][0], fld)
            flat = mv is not None and mv[1] <= 1.5 * mv[0] + 50
            self.rows.append((f"(e) loop: {label} at it. 10 -> {self.a.iterations}", m, p, "flat", flat))

        def cell(system):
            ref, res = out[system]
            it = C.reexecuted_iterations(res)
            if res.error:
                return f"FAILED ({_err(res.error)})", 10**9
            return (f"{len(it)} ({min(it) if it else '-'}..{max(it) if it else '-'}), "
                    f"{'correct' if res.correct else 'WRONG'}"), len(it) if res.ok else 10**9

        m, mn = cell("mars")
        p, _ = cell("plain")
        self.rows.append((f"(e) iterations re-run, node lost after it. {after}", m, p, "<= 10", mn <= 10))

    # -- (f) -----------------------------------------------------------------------------
    def f_walls(self):
        jobs = {"chain": self.chain, "frame": self.frame, "loop": self.loop}
        jobs = {name: jobs[name]() for name in self.a.f_jobs.split(",")}
        walls = {}
        runs = [("mars", "mars", "mars"), ("plain", "mars", "mars-on-plain"), ("plain", "dask", "dask")]
        # untimed warm-up runs: a fresh cluster's first runs pay imports, worker start-up and
        # the machine's caches (as pytest-benchmark's warm-up)
        for _ in range(self.a.warmup):
            for name, params in jobs.items():
                for cluster_system, job_system, _label in runs:
                    c = self.cluster(cluster_system)
                    self.run_fault_free(c, job_system, name, params)
                    C.settle(c.client)
        cpus = {}
        for rep in range(self.a.reps):
            for name, params in jobs.items():
                # alternating, and in the reverse order every other repetition: noise and
                # warm-up hit all alike
                for cluster_system, job_system, label in (runs if rep % 2 == 0 else runs[::-1]):
                    c = self.cluster(cluster_system)
                    cpu0 = _cpu_seconds(c)
                    res = self.run_fault_free(c, job_system, name, params)
                    cpus.setdefault((name, label), []).append(_cpu_seconds(c) - cpu0)
                    walls.setdefault((name, label), []).append(res.wall)
                    C.settle(c.client)
        self.raw["f_walls"] = {f"{k[0]}/{k[1]}": v for k, v in walls.items()}
        self.raw["f_cpu"] = {f"{k[0]}/{k[1]}": v for k, v in cpus.items()}
        all_ratios = []
        for name in jobs:
            m = statistics.median(walls[(name, "mars")])
            mp = statistics.median(walls[(name, "mars-on-plain")])
            d = statistics.median(walls[(name, "dask")])
            # the figure: the median of each repetition's ratio (the two runs of a repetition
            # are back to back, so a slow spell of this shared machine hits both)
            ratios = [a / b for a, b in zip(walls[(name, "mars")], walls[(name, "mars-on-plain")])]
            all_ratios += ratios
            ratio = statistics.median(ratios)
            self.rows.append((f"(f) fault-free {name} wall, plugins vs none",
                              f"{m:.2f}s / {mp:.2f}s, paired {ratio:.3f}",
                              f"dask.* {d:.2f}s (mars/dask {m / d:.2f})", "<= 1.05", ratio <= 1.05))
            # CPU seconds of the cluster's processes and the client (steal time, which makes
            # the walls of this VM noisy, is not in them): where an overhead would show
            cm = statistics.median(cpus[(name, "mars")])
            cp = statistics.median(cpus[(name, "mars-on-plain")])
            cr = statistics.median(a / b for a, b in zip(cpus[(name, "mars")], cpus[(name, "mars-on-plain")]))
            self.rows.append((f"(f) fault-free {name} CPU, plugins vs none", f"{cm:.2f}s / {cp:.2f}s, paired {cr:.3f}",
                              f"dask.* {statistics.median(cpus[(name, 'dask')]):.2f}s", "info", None))
        if len(jobs) > 1:
            ratio = statistics.median(all_ratios)
            self.rows.append((f"(f) fault-free wall, all {len(all_ratios)} pairs", f"paired {ratio:.3f}", "",
                              "info", None))
        for system in ("mars", "plain"):
            self.drop(system)

    def run_fault_free(self, c, job_system, name, params) -> C.RunResult:
        """One fault-free run, which must succeed."""
        res = C.run_job(c, job_system, name, params, timeout=self.a.run_timeout)
        if not res.ok:
            raise RuntimeError(res.summary())
        return res

    def f_throughput(self):
        """Scheduler throughput: graph acceptance without workers, then running on workers."""
        import dask.array as da

        import mars_dask.tensor as mt

        n = self.a.tasks
        builds = {"mars_dask graph": lambda: (mt.ones(n, chunk_size=1) + 1) * 2,
                  "dask.array graph": lambda: (da.ones(n, chunks=1) + 1) * 2}
        acc = {}
        for system in ("mars", "plain"):
            c = self.scheduler_only(system)
            try:
                for gname, build in builds.items():
                    acc[(system, gname)] = statistics.median(
                        C.graph_accept_seconds(c.client, build) for _ in range(self.a.reps))
                    C.settle(c.client)
            finally:
                c.close()
                c.cleanup_dirs()
        run = {}
        nr = self.a.run_tasks
        for _rep in range(self.a.reps):
            for system in ("mars", "plain"):
                c = self.cluster(system)
                x = (da.ones(nr, chunks=1) + 1) * 2
                t0 = time.perf_counter()
                y = c.client.persist(x)
                from distributed import wait

                wait(y, timeout=self.a.run_timeout)
                run.setdefault(system, []).append(time.perf_counter() - t0)
                del y
                C.settle(c.client)
        for gname in builds:
            tm, tp = n / acc[("mars", gname)], n / acc[("plain", gname)]
            self.rows.append((f"(f) accept {n:,}-task {gname}, tasks/s", f"{tm:,.0f}", f"{tp:,.0f} ({tm / tp:.2f})",
                              ">= 0.9x", tm / tp >= 0.9))
        tm, tp = nr / statistics.median(run["mars"]), nr / statistics.median(run["plain"])
        self.rows.append((f"(f) run {nr:,} tasks on {self.a.workers} workers, tasks/s", f"{tm:,.0f}",
                          f"{tp:,.0f} ({tm / tp:.2f})", ">= 0.9x", tm / tp >= 0.9))
        self.raw["f_throughput"] = {"accept": {f"{k[0]}/{k[1]}": v for k, v in acc.items()}, "run": run}


def _cpu_seconds(cluster) -> float:
    """User + system CPU seconds so far of the cluster's processes (scheduler, nannies,
    workers) and of this process (the client)."""
    import psutil

    total = time.process_time()
    for p in cluster.procs:
        if p.poll() is not None:
            continue
        try:
            root = psutil.Process(p.pid)
            for q in [root, *root.children(recursive=True)]:
                t = q.cpu_times()
                total += t.user + t.system
        except psutil.Error:
            pass
    return total


def _recovery_counts(cluster) -> dict | None:
    """The scheduler plugin's restart-recovery counters (``mars_stats``)."""
    try:
        return cluster.mars_stats()
    except Exception:  # noqa: BLE001 - a scheduler between lives
        return None


def _per_kill(before, after, kills: int) -> dict | None:
    """What each kill cost the store, on average over a run: results only the victim held
    (``lost``), of which its store had not written yet (write-behind: ``lost_unwritten``),
    results its restarted process gave back (``adopted``) and results recomputed."""
    if not before or not after or not kills:
        return None
    return {k: round((after.get(k, 0) - before.get(k, 0)) / kills, 1)
            for k in ("lost", "lost_unwritten", "adopted", "recomputed")}


def _err(text: str) -> str:
    """A short name for a run's error: 'timeout' or the exception's class."""
    import re

    if text.startswith("timeout"):
        return "timeout"
    heads = re.findall(r"^([A-Za-z_][\w.]*(?:Error|Exception|Cancelled\w*|Worker))\b", text, re.M)
    return heads[-1].rsplit(".", 1)[-1][:40] if heads else text.strip().splitlines()[-1][:40]


def _brief(r: C.RunResult) -> dict:
    return {"wall": r.wall, "ok": r.ok, "correct": r.correct, "error": (r.error or "")[-500:] or None,
            "executed": r.executed, "reexecuted": r.reexecuted, "minimal": r.minimal_count(),
            "planned": r.planned_recompute(), "deaths": r.deaths,
            "kills": [{k: (len(v) if isinstance(v, list) else v) for k, v in x.items()} for x in r.kills],
            "report": {k: v for k, v in (r.report or {}).items() if k not in ("events", "recoveries")} or None}


def print_table(rows, args):
    print()
    print(f"chaos benchmark: {args.workers} workers x {args.threads} threads; chain {args.n}x{args.n}/{args.chunk} "
          f"{args.steps} steps; frame {args.rows:,} rows; loop {args.iterations} it.; {args.runs} run(s) for (a)/(b) ({args.plain_runs} of plain Dask)")
    w0 = max(len(r[0]) for r in rows)
    w1 = max(max(len(str(r[1])) for r in rows), 9)
    w2 = max(max(len(str(r[2])) for r in rows), 10)
    print(f"{'target':{w0}s}  {'mars_dask':{w1}s}  {'plain Dask':{w2}s}  {'goal':9s}  met")
    for name, m, p, goal, met in rows:
        verdict = "-" if met is None else "yes" if met else "NO"
        print(f"{name:{w0}s}  {str(m):{w1}s}  {str(p):{w2}s}  {goal:9s}  {verdict}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes, 2 runs (smoke run, minutes)")
    ap.add_argument("--only", default="abcdef",
                    help="which targets to run (letters; a and b run together; w: only the wall times of f, "
                         "t: only its throughput)")
    ap.add_argument("--runs", type=int, default=None, help="faulted chain runs for (a)/(b) (default 20)")
    ap.add_argument("--plain-runs", type=int, default=None,
                    help="faulted chain runs of plain Dask for (a)/(b) (default 3: a run it does not finish "
                         "lasts --run-timeout)")
    ap.add_argument("--kill-every", type=float, default=None, help="seconds between worker kills (default 10)")
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--chunk", type=int, default=None)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--every-steps", type=int, default=5, help="chain steps per execute (stage)")
    ap.add_argument("--rows", type=int, default=None)
    ap.add_argument("--files", type=int, default=16)
    ap.add_argument("--keys", type=int, default=1000)
    ap.add_argument("--shuffle-runs", type=int, default=None)
    ap.add_argument("--iterations", type=int, default=None)
    ap.add_argument("--loop-n", type=int, default=1000)
    ap.add_argument("--loop-chunk", type=int, default=250)
    ap.add_argument("--tasks", type=int, default=None, help="tasks of the throughput graph (default 100000)")
    ap.add_argument("--run-tasks", type=int, default=None,
                    help="tasks of the graph run on the workers for throughput (default: --tasks)")
    ap.add_argument("--f-jobs", default="chain,frame,loop", help="the jobs timed for the wall times of (f)")
    ap.add_argument("--reps", type=int, default=None, help="repetitions of the fault-free timings of (f)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed runs of each (f) job on each cluster first")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--memory-limit", default="6GiB")
    ap.add_argument("--run-timeout", type=float, default=None, help="seconds before a run counts as failed")
    ap.add_argument("--json", default=None, help="write the raw figures here")
    a = ap.parse_args(argv)
    quick = dict(runs=2, plain_runs=2, kill_every=4.0, n=2000, chunk=250, rows=200_000, shuffle_runs=1, iterations=30,
                 tasks=20_000, reps=1, run_timeout=240.0)
    full = dict(runs=20, plain_runs=3, kill_every=10.0, n=6000, chunk=500, rows=500_000, shuffle_runs=3, iterations=100,
                tasks=100_000, reps=3, run_timeout=900.0)
    for k, v in (quick if a.quick else full).items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    if a.run_tasks is None:
        a.run_tasks = 5_000 if a.quick else a.tasks
    b = Bench(a)
    try:
        sections = (("a", "ab", b.ab), ("c", "c", b.c), ("d", "d", b.d), ("e", "e", b.e),
                    ("f", "fw", b.f_walls), ("f", "ft", b.f_throughput))
        for letter, keys, fn in sections:
            if any(ch in a.only for ch in keys):
                b.log(f"--- ({letter})")
                try:
                    fn()
                except Exception as e:  # noqa: BLE001 - one section failing still prints the rest
                    b.log(f"({letter}) failed: {e!r}")
                    b.rows.append((f"({letter}) section failed", repr(e)[:60], "", "", False))
                    for s in list(b.clusters):
                        b.drop(s)
    finally:
        b.close()
    print_table(b.rows, a)
    if a.json:
        Path(a.json).write_text(json.dumps(b.raw, indent=1, default=str))
    return b.rows


if __name__ == "__main__":
    main()
