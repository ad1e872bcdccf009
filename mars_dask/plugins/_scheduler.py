"""The scheduler half: one ``SchedulerPlugin`` wiring quota admission (``_quota``),
worker-death handling (``_restart``), failover (``_failover``: lineage journal,
checkpoints, scheduler restart) and per-call tileable tracking (``_tileables``, served
with the others' figures by the JSON routes of ``_http``) to Dask's hooks, handlers and
worker messages."""

from __future__ import annotations

import logging

from distributed.diagnostics.plugin import SchedulerPlugin
from distributed.protocol.pickle import dumps

from .. import config
from .. import _dask_internals as DI
from . import _protocol as P
from . import _http
from ._failover import Failover
from ._impure import HANDLER as IMPURE_HANDLER
from ._impure import ImpureRuns
from ._quota import Quota
from ._restart import Recovery
from ._tileables import Tileables
from ._trim import TrimAfterForgetting, forget_finished_graphs

logger = logging.getLogger("mars_dask.plugins")


class MarsSchedulerPlugin(SchedulerPlugin):
    """Installed by ``dask scheduler --preload mars_dask``, the embedded cluster, or
    ``client.register_plugin(MarsSchedulerPlugin())``. It also registers the worker plugin,
    so every worker that joins advertises its quota and reports its tasks."""

    name = P.PLUGIN_NAME
    idempotent = True

    def __init__(self, install_worker_plugin: bool = True, add_http_routes: bool = True):
        self.install_worker_plugin = install_worker_plugin
        # False when the scheduler's HTTP server was built with the routes (the preload
        # checks: see _http's docstring); otherwise start() adds them
        self.add_http_routes = add_http_routes

    async def start(self, scheduler):
        self.scheduler = scheduler
        DI.check("scheduler", server=scheduler)
        self.tracker = Tileables(config.get("dashboard.finished-calls-kept"))
        self.quota = Quota(scheduler)
        if not DI.enabled("quota"):
            self.quota.enabled = False
        self.recovery = Recovery(scheduler, self.quota)
        self.failover = None
        self.impure = ImpureRuns()
        keep = config.get("scheduler.finished-spans-kept")
        self.trim = TrimAfterForgetting(
            scheduler.loop, config.get("scheduler.trim-after-forgotten"),
            prune=lambda: forget_finished_graphs(scheduler, keep))
        if config.get("failover.enabled"):
            self.failover = Failover(scheduler)
            self.recovery.failover = self.failover
        DI.register_handlers(scheduler, handlers={
            "mars_hello": self._hello, "mars_adopted": self._adopted,
            "mars_worker_exit": self._worker_exit, "mars_stats": self._stats,
            IMPURE_HANDLER: self.impure.claim,
        }, stream_handlers={
            P.OP_STARTED: self.recovery.started,
            P.OP_USED: self._used,
            P.OP_CLOSING: self.recovery.closing,
        })
        if DI.enabled("restart-recovery"):
            self._orig_add_keys = DI.wrap_add_keys(scheduler, self._add_keys)
        for addr in scheduler.workers:
            self.recovery.add_worker(addr)
        if self.install_worker_plugin:
            from ._worker import MarsWorkerPlugin

            await DI.add_worker_plugin_from_scheduler(
                scheduler, dumps(MarsWorkerPlugin(scheduler_has_plugin=True)), P.PLUGIN_NAME)
        if self.failover is not None:
            await self.failover.start()
        if self.add_http_routes:
            _http.add_routes(scheduler)
        if DI.enabled("dashboard-pages"):
            DI.add_dashboard_nav_page(scheduler, _http.NAV_PAGE)  # "Mars" in the top bar

    async def close(self):
        if self.failover is not None:
            self.failover.close()

    # -- hooks --------------------------------------------------------------------------
    def update_graph(self, scheduler, *, annotations=None, tasks=(), client=None, stimulus_id=None, **kwargs):
        if annotations:
            self.quota.update_graph(annotations)
            self.tracker.update_graph(annotations, client=client, stimulus_id=stimulus_id)
        if self.failover is not None:
            self.failover.update_graph(tasks, annotations)

    def transition(self, key, start, finish, *args, stimulus_id=None, **kwargs):
        self.tracker.transition(key, start, finish, self.scheduler.tasks)
        if finish in ("memory", "forgotten", "erred"):
            ts = self.scheduler.tasks.get(key)
            tile = (ts.annotations or {}).get(P.ANN_TILEABLE) if ts is not None else None
            if tile is not None:
                self.quota.task_done(key, tile)
        if finish == "forgotten":
            self.trim.forgotten()
        self.recovery.transition(key, start, finish, stimulus_id)
        self.impure.transition(key, finish)
        if self.failover is not None:
            self.failover.transition(key, start, finish, stimulus_id, kwargs.get("worker"),
                                     kwargs.get("startstops"), kwargs.get("nbytes", 0))

    def log_event(self, topic, msg):
        if DI.is_remove_worker_event(topic, msg):
            if DI.enabled("restart-recovery"):
                self.recovery.remove_worker_event(msg)
            if self.failover is not None and DI.enabled("failover-recovery-plans"):
                self.failover.remove_worker_event(msg)

    def add_worker(self, scheduler, worker):
        self.recovery.add_worker(worker)

    def remove_worker(self, scheduler, worker, *, stimulus_id=None, **kwargs):
        self.recovery.remove_worker(stimulus_id)
        if self.failover is not None:
            self.failover.remove_worker(stimulus_id)

    # -- handlers -----------------------------------------------------------------------
    def _hello(self, worker, persistent=False, keys=()):
        return self.recovery.hello(worker, persistent, keys)

    def _adopted(self, worker, keys=()):
        self.recovery.adopted(worker, keys)
        return "OK"

    def _worker_exit(self, **report):
        self.recovery.worker_exit(report)
        return "OK"

    def _add_keys(self, worker=None, keys=(), stimulus_id=None, **kwargs):
        """Dask answers a worker's ``add-keys`` for a key not in memory with
        ``remove-replicas``: for a result being given back to that worker (restart recovery,
        take-over) the worker would drop the value just before the scheduler moves the key
        to processing there, and then run the task, whose inputs were detached (a task that
        failed with "Not enough arguments"). Those keys are left out."""
        keys = [k for k in keys if not self.recovery.being_given_back(k)]
        if keys:
            return self._orig_add_keys(worker=worker, keys=keys, stimulus_id=stimulus_id, **kwargs)

    def _used(self, worker=None, key=None, tileable=None, used=0):
        self.quota.observe(tileable, int(used), held=self.recovery.held_keys())

    def _stats(self):
        """Counters for tests, benchmarks and the curious (``client.run_on_scheduler``
        is not needed: ``rpc.mars_stats()``)."""
        return {**self.recovery.counts, "exclusive": len(self.quota.exclusive),
                "observed": dict(self.quota.observed),
                "malloc_trims": self.trim.trims, "malloc_trim_freed": self.trim.freed,
                "spans_pruned": self.trim.pruned,
                "failover": self.failover.stats() if self.failover is not None else None}
