"""Quota admission on the scheduler: memory estimates become resource restrictions.

Every key emitted by ``mars_dask.tiling.emit`` carries ``mars_memory`` (its estimated peak
bytes) and ``mars_tileable``. When the graph arrives (``SchedulerPlugin.update_graph``,
which Dask calls *before* it transitions the new tasks, so restrictions set there are the
ones the tasks are scheduled with), each key gets
``resource_restrictions = {"mars-memory": min(estimate, quota)}``: a worker runs tasks only
while their estimates fit in the ``mars-memory`` it advertises, and a task estimated above
the quota takes the whole quota, i.e. runs alone. Without any worker advertising the
resource nothing is restricted (plain Dask workers run the graph as Dask would).

Nor is anything restricted while every such worker has a single thread: there a task always
runs alone, so a restriction could not change what runs, and it would cost what Dask does
differently for restricted tasks (it never queues them on the scheduler, where it otherwise
holds root tasks back until a thread is free, and it checks them against the workers'
resources at every decision). This is decided for each graph when it arrives: a
multi-threaded worker that joins later runs the earlier graphs' tasks unrestricted.

Estimates improve as chunks finish: the worker plugin reports what each task used and
the first report for a tileable (and any later, larger one) re-estimates the chunks of
that tileable that are not running yet.

:meth:`Quota.report` is what ``/api/mars/v1/quota`` shows, computed when asked.
"""

from __future__ import annotations

import logging


from .. import config
from .. import _dask_internals as DI
from . import _protocol as P

logger = logging.getLogger("mars_dask.plugins")

# not "queued": Dask queues only unrestricted tasks and ignores restrictions there
_NOT_STARTED = frozenset({"released", "waiting", "no-worker"})


class Quota:
    def __init__(self, scheduler):
        self.scheduler = scheduler
        self.enabled = bool(config.get("scheduler.quota-admission"))
        self.margin = float(config.get("scheduler.estimate-margin"))
        self.min_fraction = float(config.get("scheduler.min-estimate-fraction"))
        self.observed: dict[str, int] = {}  # tileable -> largest measured use
        self.pending: dict[str, set] = {}  # tileable -> keys restricted, not finished
        self.exclusive: set = set()  # keys that must run with the whole quota
        self._last_quota = 0
        self._last_concurrent = True

    def quota(self) -> int:
        """The largest ``mars-memory`` any worker advertises (0: quota admission off);
        while no worker is connected (all restarting), the last one seen."""
        dr = self.scheduler.resources.get(P.RESOURCE)
        if dr:
            self._last_quota = int(max(dr.values()))
        return self._last_quota

    def concurrent(self) -> bool:
        """Whether some worker advertising the quota runs several tasks at once (only there
        can a restriction change what runs); while no worker is connected, the last answer."""
        dr = self.scheduler.resources.get(P.RESOURCE)
        workers = self.scheduler.workers
        seen = [ws.nthreads for addr in (dr or ()) if (ws := workers.get(addr)) is not None]
        if seen:
            self._last_concurrent = max(seen) > 1
        return self._last_concurrent

    def estimate(self, ts) -> int | None:
        ann = ts.annotations or {}
        est = ann.get(P.ANN_MEMORY)
        if est is None:
            return None
        obs = self.observed.get(ann.get(P.ANN_TILEABLE))
        if obs is not None:
            est = max(int(obs * self.margin), int(est * self.min_fraction))
        return int(est)

    def restrict(self, ts, quota: int) -> None:
        if ts.key in self.exclusive:
            need = quota
        else:
            est = self.estimate(ts)
            if not est:
                return
            need = min(est, quota)
        DI.set_resource_restriction(ts, P.RESOURCE, need)

    # -- hooks --------------------------------------------------------------------------
    def update_graph(self, annotations: dict) -> None:
        mem = annotations.get(P.ANN_MEMORY)
        if not mem or not self.enabled:
            return
        quota = self.quota()
        if quota <= 0 or not self.concurrent():
            return
        tasks = self.scheduler.tasks
        for key in mem:
            ts = tasks.get(key)
            if ts is None or ts.state != "released" or DI.run_spec(ts) is None:
                continue
            self.restrict(ts, quota)
            tile = (ts.annotations or {}).get(P.ANN_TILEABLE)
            if tile is not None:
                self.pending.setdefault(tile, set()).add(key)

    def task_done(self, key, tileable) -> None:
        s = self.pending.get(tileable)
        if s is not None:
            s.discard(key)
            if not s:
                del self.pending[tileable]
                # keep the measurement while the tileable may be recomputed; it is small
        self.exclusive.discard(key)

    def observe(self, tileable: str, used: int, held=()) -> None:
        """A chunk of ``tileable`` used ``used`` bytes: re-estimate its not-started
        siblings when this is the first or the largest measurement."""
        prev = self.observed.get(tileable)
        if prev is not None and used <= prev:
            return
        self.observed[tileable] = used
        quota = self.quota()
        if quota <= 0:
            return
        tasks = self.scheduler.tasks
        changed = 0
        for key in self.pending.get(tileable, ()):
            ts = tasks.get(key)
            if ts is None or ts.state not in _NOT_STARTED or key in held:
                continue
            before = DI.resource_restriction(ts, P.RESOURCE)
            self.restrict(ts, quota)
            # a task without an estimate (restored from the journal: no annotations) keeps none
            changed += before != DI.resource_restriction(ts, P.RESOURCE)
        if changed:
            logger.debug("re-estimated %d chunks of %s from a measured %d bytes", changed, tileable, used)

    # -- /api/mars/v1/quota ---------------------------------------------------------------
    def report(self, executing: dict, limit: int = 200) -> dict:
        """Per worker: its quota (``mars-memory``), what the tasks executing there reserved
        (the worker acquires a task's restriction when it starts and releases it when it
        ends: ``executing`` is ``{address: keys}`` as the worker plugin reports starts), what
        Dask has assigned to it (``used_resources``: every task sent there, started or not)
        and its measured memory (process RSS from its heartbeats). Then the restricted tasks
        not running yet that wait for admission: sent to a worker and not started, or with
        no worker (``no-worker``), the highest priority first (at most ``limit``), each with
        its estimate and whether it would fit in its worker's free quota now (if it does, a
        thread or its inputs are what it waits for). Costs one pass over the restricted keys
        not finished yet (``pending``), only when asked."""
        s = self.scheduler
        tasks = s.tasks
        workers = {}
        for addr, ws in s.workers.items():
            keys = executing.get(addr, ())
            reserved = 0
            for k in keys:
                ts = tasks.get(k)
                if ts is not None:
                    reserved += DI.resource_restriction(ts, P.RESOURCE) or 0
            mem = ws.memory
            workers[addr] = {
                "name": ws.name, "nthreads": ws.nthreads, "limit": ws.resources.get(P.RESOURCE),
                "reserved": reserved, "executing": len(keys), "assigned": ws.used_resources.get(P.RESOURCE, 0),
                "memory": mem.process, "managed": mem.managed, "memory_limit": ws.memory_limit,
                "waiting": 0, "waiting_bytes": 0,
            }
        waiting = []
        for tile, keys in self.pending.items():
            for k in keys:
                ts = tasks.get(k)
                if ts is None or ts.state not in ("processing", "no-worker"):
                    continue
                ws = ts.processing_on
                addr = ws.address if ws is not None else None
                if addr is not None and k in executing.get(addr, ()):
                    continue
                est = DI.resource_restriction(ts, P.RESOURCE)
                if est:
                    waiting.append((ts.priority or (), k, tile, addr, est, ts.state))
        waiting.sort(key=lambda w: w[0])
        out = []
        for _, k, tile, addr, est, state in waiting:
            w = workers.get(addr)
            fits = None
            if w is not None:
                w["waiting"] += 1
                w["waiting_bytes"] += est
                fits = est <= (w["limit"] or 0) - w["reserved"]
            if len(out) < limit:
                out.append({"key": str(k), "tileable": tile, "worker": addr, "state": state,
                            "estimate": est, "fits_now": fits})
        return {"admission": bool(self.enabled and self.quota() > 0 and self.concurrent()),
                "resource": P.RESOURCE, "quota": self.quota(), "workers": workers,
                "n_waiting": len(waiting), "waiting": out, "observed": dict(self.observed),
                "exclusive": len(self.exclusive)}
