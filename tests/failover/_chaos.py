"""The chaos harness of the failover issue: jobs, fault injectors, exact comparison, metrics.

Used by ``tests/failover/test_chaos.py`` (small, bounded runs in CI) and
``benchmarks/bench_failover.py`` (full runs, the issue's target table).

Jobs (each one function per system, built on the current default client and returning a
numpy array or a pandas DataFrame):

- ``chain``: a 20-step tensor chain ``x = (x + x.T) * 0.5 + 1`` executed in stages (one
  ``execute``/``persist`` every ``every`` steps, with a ``sum(axis=0)`` reduction per
  stage); the result is the stacked reductions and a final total.
- ``frame``: read_parquet -> groupby -> merge -> sort_values over parquet files written
  by :func:`write_frame_data` (the result is sorted on a float score, index reset).
- ``loop``: ``x = f(x).execute()`` for ``iterations`` iterations, with ``checkpoint=True``
  every ``checkpoint_every`` iterations when ``execute`` accepts the keyword (plain Dask:
  ``persist`` each iteration). Per iteration it records the scheduler's TaskState count and,
  for mars_dask, the journal size (``mars_dask.failover_report``) when that exists.

Faults: :class:`NoFault`, :class:`PeriodicWorkerKill` (a random worker process SIGKILLed
every ``every`` seconds; its nanny restarts it), :class:`NodeKill` (worker process *and*
nanny SIGKILLed once, after a given iteration of the loop: its capacity and store are gone
for good), :class:`ShuffleKill` (the worker holding most map outputs of the first shuffle
SIGKILLed by a scheduler plugin at the transition that completes the shuffle's map stage)
and :class:`SchedulerKill` (the scheduler SIGKILLed once and started again on the same port,
journal and checkpoint directories).

Every kill of a worker is taken together with a snapshot of the scheduler (inside one
``run_on_scheduler`` call, so nothing moves in between): the keys in memory only on the
victim that are still needed, and the *minimal set* to recompute them -- those keys plus
their ancestors not in memory on another worker (target (b)). Executions are counted by
the counting scheduler plugin of ``tests/worker/_counting.py`` (a task interrupted by the
kill never reached memory, so only tasks that had finished and run again count as
re-executed).
"""

from __future__ import annotations

import inspect
import itertools
import os
import random
import signal
import threading
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
from distributed.diagnostics.plugin import SchedulerPlugin

# --------------------------------------------------------------------------------------
# probes for what the failover work provides (it lands while this harness is written)


def failover_report_available() -> bool:
    import mars_dask

    return hasattr(mars_dask, "failover_report")


def checkpoint_kwarg_available() -> bool:
    from mars_dask.tiling.tileable import Tileable

    try:
        import mars_dask.session as S

        params = set(inspect.signature(S.execute).parameters) | set(inspect.signature(Tileable.execute).parameters)
    except (TypeError, ValueError):
        return False
    return "checkpoint" in params


def scheduler_failover_available() -> bool:
    """The client side of scheduler failover (execute() reconnects and resubmits) and the
    scheduler side (the failover plugin reading the journal back)."""
    import importlib.util

    import mars_dask.session as S

    return (importlib.util.find_spec("mars_dask.plugins._failover") is not None
            and hasattr(S.Session, "_recover_connection") and failover_report_available())


def failover_report(client) -> dict | None:
    import mars_dask

    if not failover_report_available():
        return None
    try:
        return mars_dask.failover_report(client)
    except Exception as e:  # noqa: BLE001 - reported, not fatal to the run
        return {"error": repr(e)}


def failover_events(client, since: float = 0.0) -> list[dict]:
    """The "mars-failover" events logged at or after ``since`` (a ``time.time()``)."""
    try:
        return [msg for t, msg in client.get_events("mars-failover") if t >= since]
    except Exception:  # noqa: BLE001
        return []


# --------------------------------------------------------------------------------------
# jobs


def _execute(*ts, checkpoint=False):
    import mars_dask

    if checkpoint and checkpoint_kwarg_available():
        return mars_dask.execute(*ts, checkpoint=True)
    return mars_dask.execute(*ts)


def _index_grid_mars(n, c, salt=0):
    """A non-symmetric n x n grid; ``salt`` changes the keys (every run of a job gets its own,
    so no run reuses results, journal entries or checkpoints of another), not the values
    (``+ salt * 0.0`` adds zeros)."""
    import mars_dask.tensor as mt

    x = mt.arange(n, chunk_size=c)[:, None] * 0.001 + mt.arange(n, chunk_size=c)[None, :] * 0.002
    return x + mt.full(n, float(salt), chunk_size=c) * 0.0


def _index_grid_dask(n, c, salt=0):
    import dask.array as da

    x = da.arange(n, chunks=c)[:, None] * 0.001 + da.arange(n, chunks=c)[None, :] * 0.002
    return x + da.full(n, float(salt), chunks=c) * 0.0


def chain_mars(p: dict, ctx: "JobContext"):
    x = _index_grid_mars(p["n"], p["chunk"], p.get("salt", 0))
    reds = []
    for i in range(p["steps"]):
        x = (x + x.T) * 0.5 + 1
        if (i + 1) % p["every"] == 0 or i + 1 == p["steps"]:
            r = x.sum(axis=0)
            _execute(x, r)
            reds.append(r.fetch())
            ctx.stage(i + 1)
    total = x.sum().execute().fetch()
    return np.concatenate([np.stack(reds).ravel(), np.atleast_1d(total)])


def chain_dask(p: dict, ctx: "JobContext"):
    import dask
    from distributed import wait

    x = _index_grid_dask(p["n"], p["chunk"], p.get("salt", 0))
    reds = []
    for i in range(p["steps"]):
        x = (x + x.T) * 0.5 + 1
        if (i + 1) % p["every"] == 0 or i + 1 == p["steps"]:
            r = x.sum(axis=0)
            x, r = dask.persist(x, r)
            wait([x, r])
            reds.append(r.compute())
            ctx.stage(i + 1)
    total = x.sum().compute()
    return np.concatenate([np.stack(reds).ravel(), np.atleast_1d(total)])


def write_frame_data(directory, nrows: int, nfiles: int, nkeys: int, seed: int = 0) -> Path:
    """Parquet input of the ``frame`` job: ``facts`` (id, k, v) and ``extra`` (id, u, ids in
    another order: joining them needs a shuffle) in ``nfiles`` files each, and a small
    ``dims`` table (k, w)."""
    d = Path(directory)
    for sub in ("facts", "extra", "dims"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    per = nrows // nfiles
    perm = rng.permutation(per * nfiles)
    for i in range(nfiles):
        df = pd.DataFrame({"id": np.arange(i * per, (i + 1) * per, dtype=np.int64),
                           "k": rng.integers(0, nkeys, per), "v": rng.random(per)})
        df.to_parquet(d / "facts" / f"part-{i:03d}.parquet", index=False)
        ids = perm[i * per:(i + 1) * per].astype(np.int64)
        pd.DataFrame({"id": ids, "u": rng.random(per)}).to_parquet(d / "extra" / f"part-{i:03d}.parquet",
                                                                    index=False)
    pd.DataFrame({"k": np.arange(nkeys), "w": rng.random(nkeys)}).to_parquet(d / "dims" / "part-000.parquet",
                                                                            index=False)
    return d


def _frame_pipeline(mod, d):
    f = mod.read_parquet(str(Path(d) / "facts"))
    e = mod.read_parquet(str(Path(d) / "extra"))
    dims = mod.read_parquet(str(Path(d) / "dims"))
    g = f.groupby("k").agg({"v": "sum", "id": "count"}).reset_index()
    g = g.rename(columns={"v": "vsum", "id": "n"})
    m = f.merge(e, on="id").merge(g, on="k").merge(dims, on="k")
    m["score"] = m["v"] * m["w"] + m["vsum"] + m["u"]
    return m.sort_values("score")


_FRAME_COLUMNS = {"id": "int64", "k": "int64", "v": "float64", "u": "float64", "vsum": "float64", "n": "int64",
                  "w": "float64", "score": "float64"}


def _normalize_frame(df: pd.DataFrame) -> pd.DataFrame:
    return df.reset_index(drop=True)[list(_FRAME_COLUMNS)].astype(_FRAME_COLUMNS)


def _frame_data(p: dict) -> Path:
    """The job's input directory; with a ``salt``, a copy of it of its own (new paths, new
    keys: see :func:`_index_grid_mars`)."""
    import shutil

    src = Path(p["data"])
    if not p.get("salt"):
        return src
    dst = src.parent / f"{src.name}-{p['salt']}"
    if not dst.exists():
        shutil.copytree(src, dst)
    return dst


def frame_mars(p: dict, ctx: "JobContext"):
    import mars_dask.dataframe as md

    r = _frame_pipeline(md, _frame_data(p))
    r.execute()
    return _normalize_frame(r.fetch())


def frame_dask(p: dict, ctx: "JobContext"):
    import dask.dataframe as dd

    r = _frame_pipeline(dd, _frame_data(p))
    return _normalize_frame(r.compute())


def _loop_f(x):
    return (x + x.T) * 0.25 + 1


def loop_mars(p: dict, ctx: "JobContext"):
    x = _index_grid_mars(p["n"], p["chunk"], p.get("salt", 0))
    for i in range(1, p["iterations"] + 1):
        # the idiom, x = f(x).execute(): the old handle lives until f(x) is executed
        x = _execute(_loop_f(x), checkpoint=bool(p.get("checkpoint_every")) and i % p["checkpoint_every"] == 0)
        ctx.iteration(i, [str(c.key) for c in x.data.chunks])
    return x.fetch()


def loop_dask(p: dict, ctx: "JobContext"):
    from distributed import wait

    x = _index_grid_dask(p["n"], p["chunk"], p.get("salt", 0))
    for i in range(1, p["iterations"] + 1):
        x = _loop_f(x).persist()
        wait(x)
        ctx.iteration(i, [str(k) for k in _flatten(x.__dask_keys__())])
    return x.compute()


def _flatten(keys):
    for k in keys:
        if isinstance(k, list):
            yield from _flatten(k)
        else:
            yield k


@dataclass
class Job:
    name: str
    mars: Callable
    dask: Callable

    def fn(self, system: str) -> Callable:
        return self.mars if system == "mars" else self.dask


JOBS = {
    "chain": Job("chain", chain_mars, chain_dask),
    "frame": Job("frame", frame_mars, frame_dask),
    "loop": Job("loop", loop_mars, loop_dask),
}


class JobContext:
    """What a running job tells the harness: stages done, loop iterations (with their
    output keys), and per-iteration lineage figures."""

    def __init__(self, client, system: str, per_iteration: bool = False):
        self.client = client
        self.system = system
        self.per_iteration = per_iteration
        self.stages: list[tuple[int, float]] = []
        self.iter_keys: dict[int, list[str]] = {}
        self.iter_stats: list[dict] = []
        self.progress = 0
        self.cond = threading.Condition()
        self.t0 = time.monotonic()

    def _advance(self, n):
        with self.cond:
            self.progress = n
            self.cond.notify_all()

    def stage(self, step: int) -> None:
        self.stages.append((step, time.monotonic() - self.t0))
        self._advance(step)

    def iteration(self, i: int, keys: list[str]) -> None:
        self.iter_keys[i] = keys
        if self.per_iteration:
            row = {"iteration": i, "scheduler_tasks": scheduler_task_count(self.client)}
            if self.system == "mars":
                rep = failover_report(self.client)
                row["journal_entries"] = rep.get("journal_entries") if rep else None
            self.iter_stats.append(row)
        self._advance(i)

    def wait_progress(self, n: int, timeout: float, stop: threading.Event | None = None) -> bool:
        deadline = time.monotonic() + timeout
        with self.cond:
            while self.progress < n:
                left = deadline - time.monotonic()
                if left <= 0 or (stop is not None and stop.is_set()):
                    return False
                self.cond.wait(min(left, 0.2))
        return True


def scheduler_task_count(client) -> int:
    return client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks))


# --------------------------------------------------------------------------------------
# kills and the minimal recomputation set (both run inside the scheduler process)

_LIVE_WAITING = ("waiting", "processing", "no-worker", "queued")


def _lost_and_minimal(s, ws):
    """Keys in memory only on ``ws`` that are still needed (wanted by a client or waited on
    by a dependent not yet computed), and the minimal set to recompute them: those keys plus
    their ancestors not in memory on another worker, transitively."""
    needed_lost = []
    for ts in ws.has_what:
        if len(ts.who_has) != 1:
            continue
        if ts.who_wants or any(d.state in _LIVE_WAITING for d in ts.dependents):
            needed_lost.append(ts)
    minimal = set()
    stack = list(needed_lost)
    while stack:
        ts = stack.pop()
        if ts.key in minimal:
            continue
        minimal.add(ts.key)
        for d in ts.dependencies:
            if d.state == "memory" and any(w is not ws for w in d.who_has):
                continue  # live elsewhere
            if d.state == "memory" or d.state in ("released", "forgotten", "waiting", "no-worker"):
                stack.append(d)
    return [str(t.key) for t in needed_lost], [str(k) for k in minimal]


def _snapshot_and_kill(dask_scheduler, name=None, pick=0.0, with_nanny=False):
    """Inside the scheduler: choose the victim (worker ``name``, or a running worker chosen by
    ``pick`` in [0, 1)), take the snapshot and SIGKILL its process by the pid it registered
    with (and its nanny's, the parent of that process, when ``with_nanny``), so that nothing
    happens between the snapshot and the kill."""
    import psutil

    s = dask_scheduler
    running = sorted((a for a, w in s.workers.items() if w.status.name == "running" and w.pid),
                     key=str)
    if name is not None:
        running = [a for a in running if str(s.workers[a].name) == str(name)]
    if not running:
        return None
    addr = running[int(pick * len(running)) % len(running)]
    ws = s.workers[addr]
    pid = ws.pid
    nanny_pid = psutil.Process(pid).ppid() if with_nanny else None
    lost, minimal = _lost_and_minimal(s, ws)
    rec = {"address": addr, "name": str(ws.name), "pid": pid, "held": len(ws.has_what),
           "lost_needed": lost, "minimal": minimal, "processing": [str(ts.key) for ts in ws.processing],
           "time": time.time()}
    if nanny_pid:  # the nanny first: killed second, it could start a replacement first
        os.kill(nanny_pid, signal.SIGKILL)
        rec["nanny_pid"] = nanny_pid
    os.kill(pid, signal.SIGKILL)
    return rec


def pid_gone(pid: int, timeout: float = 10.0) -> bool:
    """The process is gone (or a zombie no one reaped yet) within ``timeout`` seconds."""
    import psutil

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def kill_worker(cluster, name=None, *, with_nanny=False, rng=None) -> dict | None:
    """SIGKILL the worker process of worker ``name`` (a random running worker when None) by
    the pid it registered with (the one ``CLICluster.kill_worker_process`` asks the worker
    for; asked from the scheduler here, so that a restarting worker cannot block the killer),
    taking the scheduler snapshot at the same instant. ``with_nanny``: its nanny too (node
    loss). Returns the record, with ``gone``: the process(es) really died."""
    rec = cluster.client.run_on_scheduler(_snapshot_and_kill, name=name, pick=(rng or random).random(),
                                          with_nanny=with_nanny)
    if rec is None:
        return None
    rec["gone"] = pid_gone(rec["pid"]) and (not with_nanny or pid_gone(rec["nanny_pid"]))
    return rec


class ShuffleKillPlugin(SchedulerPlugin):
    """SIGKILLs, at the transition that completes the map stage of the first shuffle, the
    worker process that ran most of its map tasks (its share of the stage). Map outputs: keys annotated
    ``mars_boundary="shuffle"`` (grouped by ``mars_tileable``) for mars_dask; for plain
    Dask the transfer tasks of a P2P shuffle (``shuffle-transfer-*``/``hash-join-transfer-*``,
    the dependencies of ``shuffle-barrier-<id>``; the stage is complete when the barrier is in
    memory)."""

    name = "chaos-shuffle-kill"

    def __init__(self, min_maps: int = 2):
        self.min_maps = min_maps
        self.record = None
        self.scheduler = None
        self.seen = []  # (key, kind, map outputs) of each candidate transition, for diagnosis
        self.ran = {}  # map (or P2P transfer) key -> the worker it ran on

    async def start(self, scheduler):
        self.scheduler = scheduler

    def _group(self, ts):
        ann = ts.annotations or {}
        if ann.get("mars_boundary") == "shuffle":
            return ("mars", ann.get("mars_tileable"))
        k = ts.key[0] if isinstance(ts.key, tuple) else ts.key
        if isinstance(k, str) and k.startswith("shuffle-barrier-"):
            return ("p2p", k[len("shuffle-barrier-"):])
        return None

    def _members(self, kind, gid):
        s = self.scheduler
        return [t for t in s.tasks.values()
                if (t.annotations or {}).get("mars_boundary") == "shuffle"
                and (t.annotations or {}).get("mars_tileable") == gid]

    def transition(self, key, start, finish, *args, **kwargs):
        if self.record is not None or finish != "memory":
            return
        s = self.scheduler
        ts = s.tasks.get(key)
        if ts is None:
            return
        k0 = key[0] if isinstance(key, tuple) else key
        worker = kwargs.get("worker") or next((w.address for w in ts.who_has), None)
        if isinstance(k0, str) and "transfer-" in k0:  # shuffle-transfer-*, hash-join-transfer-*
            # where each P2P transfer ran (the transfers may be released before the barrier's
            # transition is seen here)
            self.ran[str(key)] = worker
            return
        g = self._group(ts)
        if g is None:
            return
        if g[0] == "mars":
            self.ran[str(key)] = worker
            members = [str(t.key) for t in self._members(*g)]
            if any(k not in self.ran for k in members):
                return  # the map stage is not complete (map outputs may be consumed already)
        else:
            # P2P: the data a transfer sent sits in the shuffle buffers of the workers
            members = [str(d.key) for d in ts.dependencies]
        ran = {k: self.ran.get(k) for k in members}
        self.seen.append((str(key), g[0], len(ran)))
        if len(ran) < self.min_maps:
            return
        # the victim: the worker that ran most map tasks of the stage (its share)
        addr, n = Counter(w for w in ran.values() if w).most_common(1)[0]
        ws = s.workers.get(addr)
        if ws is None or not ws.pid:
            return
        held_only = sum(1 for k in members if (t := s.tasks.get(k)) is not None and t.state == "memory"
                        and {w.address for w in t.who_has} == {addr})
        lost, minimal = _lost_and_minimal(s, ws)
        self.record = {"kind": g[0], "group": str(g[1]), "maps": sorted(members),
                       "address": addr, "name": str(ws.name), "pid": ws.pid, "share": n, "held_only": held_only,
                       "lost_needed": lost, "minimal": minimal, "time": time.time()}
        os.kill(ws.pid, signal.SIGKILL)


def _shuffle_record(dask_scheduler):
    p = dask_scheduler.plugins.get(ShuffleKillPlugin.name)
    return None if p is None else (p.record, p.seen[-20:])


# --------------------------------------------------------------------------------------
# faults


class Fault:
    name = "none"

    def start(self, cluster, ctx: JobContext) -> None:
        self.cluster, self.ctx = cluster, ctx
        self.kills: list[dict] = []
        self.errors: list[str] = []
        self.stop_event = threading.Event()
        self.thread = None

    def stop(self) -> None:
        self.stop_event.set()
        if self.thread is not None:
            self.thread.join(60)

    def _spawn(self, fn):
        def run():
            try:
                fn()
            except Exception:  # noqa: BLE001 - recorded for the report
                self.errors.append(traceback.format_exc())

        self.thread = threading.Thread(target=run, daemon=True, name=f"chaos-{self.name}")
        self.thread.start()


class NoFault(Fault):
    name = "none"


class PeriodicWorkerKill(Fault):
    """A random running worker process SIGKILLed every ``every`` seconds (first after
    ``first`` seconds, default ``every``), at most ``max_kills`` times."""

    def __init__(self, every: float, first: float | None = None, max_kills: int | None = None, seed: int = 0):
        self.every, self.first, self.max_kills = every, every if first is None else first, max_kills
        self.rng = random.Random(seed)
        self.name = f"kill/{every:g}s"

    def start(self, cluster, ctx):
        super().start(cluster, ctx)

        def loop():
            wait = self.first
            while not self.stop_event.wait(wait):
                if self.max_kills is not None and len(self.kills) >= self.max_kills:
                    return
                t = time.monotonic()
                try:
                    rec = kill_worker(cluster, rng=self.rng)
                except Exception:  # noqa: BLE001 - a worker between lives: try again soon
                    self.errors.append(traceback.format_exc(limit=3))
                    rec = None
                if rec is None:
                    wait = 0.5
                    continue
                rec["t"] = t - ctx.t0
                self.kills.append(rec)
                wait = max(0.0, self.every - (time.monotonic() - t))

        self._spawn(loop)


class NodeKill(Fault):
    """After the job reports progress ``after`` (loop iteration or chain step), SIGKILL one
    worker process and its nanny (a node lost for good, with the store in its memory)."""

    def __init__(self, after: int, name=None):
        self.after, self.victim = after, name
        self.name = f"node-kill@{after}"

    def start(self, cluster, ctx):
        super().start(cluster, ctx)

        def go():
            if ctx.wait_progress(self.after, 600, self.stop_event):
                rec = kill_worker(cluster, self.victim, with_nanny=True)
                if rec is not None:
                    rec["t"] = time.monotonic() - ctx.t0
                    rec["after"] = ctx.progress
                    self.kills.append(rec)

        self._spawn(go)


class ShuffleKill(Fault):
    """The worker that ran most map tasks killed as the first shuffle's map stage completes
    (by :class:`ShuffleKillPlugin`, inside the scheduler)."""

    name = "shuffle-kill"

    def __init__(self, min_maps: int = 2):
        self.min_maps = min_maps

    def start(self, cluster, ctx):
        super().start(cluster, ctx)
        cluster.client.register_plugin(ShuffleKillPlugin(self.min_maps), name=ShuffleKillPlugin.name)

    def stop(self):
        super().stop()
        client = self.cluster.client
        rec, self.seen = client.run_on_scheduler(_shuffle_record) or (None, [])
        if rec is not None:
            rec["gone"] = pid_gone(rec["pid"], 5)
            self.kills.append(rec)
        client.unregister_scheduler_plugin(ShuffleKillPlugin.name)


class SchedulerKill(Fault):
    """SIGKILL the scheduler once, ``after`` seconds into the job (or after progress
    ``after_progress``), and start a new one on the same port and directories."""

    def __init__(self, after: float = 3.0, after_progress: int | None = None):
        self.after, self.after_progress = after, after_progress
        self.name = "scheduler-kill"

    def start(self, cluster, ctx):
        super().start(cluster, ctx)
        if not cluster.port:
            raise ValueError("SchedulerKill needs CLICluster(fixed_port=True)")

        def go():
            if self.after_progress is not None:
                if not ctx.wait_progress(self.after_progress, 600, self.stop_event):
                    return
            elif self.stop_event.wait(self.after):
                return
            t = time.monotonic()
            self.counts_before = _safe_counts(cluster)
            pid = cluster.kill_scheduler()
            gone = pid_gone(pid, 5)
            cluster.start_scheduler()
            self.kills.append({"scheduler_pid": pid, "gone": gone, "t": t - ctx.t0,
                               "restart_s": time.monotonic() - t})

        self._spawn(go)


def _safe_counts(cluster):
    try:
        return cluster.counts()
    except Exception:  # noqa: BLE001
        return None


# --------------------------------------------------------------------------------------
# runs


@dataclass
class RunResult:
    system: str
    job: str
    fault: str
    wall: float
    result: object = None
    error: str | None = None
    correct: bool | None = None
    executed: int = 0
    reexecuted: int = 0
    reexec_keys: dict = field(default_factory=dict)  # key -> extra executions
    deaths: int = 0
    kills: list = field(default_factory=list)
    fault_errors: list = field(default_factory=list)
    report: dict | None = None
    events: list = field(default_factory=list)
    ctx: JobContext | None = None
    store_loss: dict | None = None  # per kill, mars_dask only (benchmarks/bench_failover.py)

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.correct)

    def minimal_keys(self) -> set:
        """Union over this run's worker kills of the minimal recomputation sets."""
        out = set()
        for k in self.kills:
            out |= set(k.get("minimal") or ())
        return out

    def planned_recompute(self) -> int | None:
        """Keys the failover plugin planned to recompute ("recovery-plan" events), if any."""
        plans = [e for e in self.events if isinstance(e, dict) and e.get("action") == "recovery-plan"]
        return sum(int(e.get("n", len(e.get("recompute") or ()))) for e in plans) if plans else None

    def minimal_count(self) -> int:
        return sum(len(k.get("minimal") or ()) for k in self.kills)

    def summary(self) -> str:
        return (f"{self.system}/{self.job}/{self.fault}: {self.wall:.1f}s correct={self.correct} "
                f"executed={self.executed} reexecuted={self.reexecuted} minimal={self.minimal_count()} "
                f"deaths={self.deaths} kills={len(self.kills)} error={(self.error or '')[:300]}")


def same_result(a, b) -> bool:
    """Exact equality (numpy array_equal, pandas assert_frame_equal with exact values)."""
    if isinstance(a, pd.DataFrame) or isinstance(b, pd.DataFrame):
        try:
            pd.testing.assert_frame_equal(a, b, check_exact=True)
            return True
        except AssertionError:
            return False
    return bool(np.array_equal(np.asarray(a), np.asarray(b)))


_SALT = itertools.count(1)


def run_job(cluster, system: str, job: str | Job, params: dict, fault: Fault | None = None, *,
            expected=None, timeout: float = 300, per_iteration: bool = False) -> RunResult:
    """Run ``job`` on ``cluster`` (whose client is the default client) under ``fault``;
    compare with ``expected`` (exactly) when given. Returns the metrics of the run."""
    job = JOBS[job] if isinstance(job, str) else job
    params = dict(params)
    params.setdefault("salt", next(_SALT))
    fault = fault or NoFault()
    client = cluster.client
    before = _safe_counts(cluster) or {"executed": {}, "removed": []}
    ctx = JobContext(client, system, per_iteration)
    box: dict = {}
    t_wall = time.time()

    def target():
        try:
            with client.as_current():
                box["result"] = job.fn(system)(params, ctx)
        except BaseException as e:  # noqa: BLE001 - reported
            box["error"] = "".join(traceback.format_exception(e))[-3000:]

    th = threading.Thread(target=target, daemon=True, name=f"chaos-job-{job.name}")
    ctx.t0 = time.monotonic()
    fault.start(cluster, ctx)
    th.start()
    th.join(timeout)
    wall = time.monotonic() - ctx.t0
    fault.stop()
    res = RunResult(system, job.name, fault.name, wall, ctx=ctx)
    if th.is_alive():
        res.error = f"timeout: the job did not finish within {timeout:.0f}s"
    else:
        res.error = box.get("error")
        res.result = box.get("result")
    res.kills = list(fault.kills)
    res.fault_errors = list(fault.errors)
    if expected is not None and res.error is None:
        res.correct = same_result(res.result, expected)
    elif res.error is None and expected is None:
        res.correct = True  # this is the reference run
    after = _safe_counts(cluster)
    if after is not None:
        # after a scheduler kill the counts start again from zero
        base = before if getattr(fault, "name", "") != "scheduler-kill" else {"executed": {}, "removed": []}
        ex_b, ex_a = base["executed"], after["executed"]
        diff = {k: v - ex_b.get(k, 0) for k, v in ex_a.items() if v - ex_b.get(k, 0) > 0}
        res.executed = sum(diff.values())
        res.reexec_keys = {k: v - 1 for k, v in diff.items() if v > 1}
        res.reexecuted = sum(res.reexec_keys.values())
        res.deaths = len(after["removed"]) - len(base["removed"])
        if getattr(fault, "name", "") == "scheduler-kill" and getattr(fault, "counts_before", None):
            cb = fault.counts_before
            res.executed += sum(v - before["executed"].get(k, 0) for k, v in cb["executed"].items())
            res.deaths += len(cb["removed"]) - len(before["removed"])
    if system == "mars":
        res.report = failover_report(client)
        res.events = failover_events(client, t_wall)
    return res


def settle(client, baseline: int = 0, timeout: float = 60) -> None:
    """Wait until the scheduler has forgotten everything but ``baseline`` tasks."""
    import gc

    gc.collect()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if scheduler_task_count(client) <= baseline:
                return
        except Exception:  # noqa: BLE001,S110 - e.g. the scheduler restarting: poll again
            pass
        time.sleep(0.1)


def wait_workers(cluster, n: int, timeout: float = 90) -> None:
    """Wait until ``n`` workers are registered (after kills, the nannies' restarts)."""
    cluster.client.wait_for_workers(n, timeout=timeout)


# --------------------------------------------------------------------------------------
# figures


def reexecuted_iterations(res: RunResult) -> list[int]:
    """Loop iterations (job ``loop``) any of whose output keys executed more than once."""
    ctx = res.ctx
    if ctx is None:
        return []
    key_iter = {k: i for i, keys in ctx.iter_keys.items() for k in keys}
    return sorted({key_iter[k] for k in res.reexec_keys if k in key_iter})


def shuffle_figures(res: RunResult) -> dict | None:
    """Target (c): re-executed map tasks of the killed shuffle vs the victim's share."""
    rec = next((k for k in res.kills if "maps" in k), None)
    if rec is None:
        return None
    maps = set(rec["maps"])
    rerun = sum(v for k, v in res.reexec_keys.items() if k in maps)
    return {"maps": len(maps), "share": rec["share"], "held_only": rec["held_only"], "rerun_maps": rerun,
            "reexecuted": res.reexecuted, "kind": rec["kind"], "gone": rec.get("gone")}


def lineage_growth(res: RunResult, field_name: str = "scheduler_tasks", at: int = 10) -> tuple | None:
    """(value at iteration ``at`` -- the first checkpoint --, value at the last iteration) of a
    per-iteration figure of the ``loop`` job (``scheduler_tasks`` or ``journal_entries``)."""
    rows = [r for r in (res.ctx.iter_stats if res.ctx else []) if r.get(field_name) is not None]
    if len(rows) < 2:
        return None
    first = next((r for r in rows if r["iteration"] == at), rows[0])
    return first[field_name], rows[-1][field_name]


class GraphAccepted(SchedulerPlugin):
    """Records when each ``update_graph`` finished on the scheduler (throughput figures, as
    benchmarks/bench_tensor.py (d)); registered after mars_dask's plugin, so it runs after it."""

    name = "chaos-graph-accepted"

    def __init__(self):
        self.times = []

    def update_graph(self, scheduler, **kwargs):
        self.times.append(time.time())


def _accepted_times(dask_scheduler):
    return list(dask_scheduler.plugins[GraphAccepted.name].times)


def graph_accept_seconds(client, build: Callable, timeout: float = 300) -> float:
    """Seconds from building a collection until the scheduler accepted its graph
    (``client.persist``); the persisted futures are released again afterwards."""
    client.register_plugin(GraphAccepted(), name=GraphAccepted.name)
    try:
        t0 = time.time()
        fut = client.persist(build())
        deadline = time.monotonic() + timeout
        while not client.run_on_scheduler(_accepted_times):
            if time.monotonic() > deadline:
                raise TimeoutError("graph not accepted")
            time.sleep(0.02)
        elapsed = client.run_on_scheduler(_accepted_times)[-1] - t0
        del fut
        return elapsed
    finally:
        client.unregister_scheduler_plugin(GraphAccepted.name)
