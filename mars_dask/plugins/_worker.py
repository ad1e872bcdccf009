"""The worker half: quota resource, what each task really used, and restart recovery.

- Quota: the worker advertises resource ``mars-memory`` = ``quota-fraction`` x its memory
  limit, so the resource restrictions the scheduler plugin derives from the memory
  estimates bound the estimated bytes running at once (Mars's QuotaActor).
- Measuring: a sampler thread follows the process RSS while tasks execute; when a task
  ends the plugin tells the scheduler what it used (peak RSS during the task minus RSS at
  its start, at least its output's size) so later chunks of the same tileable get a
  better estimate. It also reports task starts: the scheduler needs to know which tasks
  were *executing* (not merely queued) on a process that dies, to tell culprits from
  bystanders.
- Restart: a process started by the nanny after its predecessor died finds the
  predecessor's results in the node-local store (``MarsStore.existing_keys``). It asks
  the scheduler which of them are still wanted, adopts those into the worker's state
  (``Worker.update_data`` with the recovered values: the store adopts its files, nothing
  is rewritten) and tells the scheduler, which then marks them in memory here instead of
  recomputing them. The rest is deleted.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time

import dask.config
import psutil
from dask.utils import parse_timedelta
from distributed.core import Status
from distributed.diagnostics.plugin import WorkerPlugin

from . import _protocol as P

logger = logging.getLogger("mars_dask.plugins")


def quota_of(worker, fraction: float | None = None) -> int:
    """``fraction`` (default ``mars-dask.worker.quota-fraction``) of the worker's memory
    limit (the machine's memory when the worker has none)."""
    if fraction is None:
        fraction = float(dask.config.get("mars-dask.worker.quota-fraction"))
    limit = getattr(getattr(worker, "memory_manager", None), "memory_limit", None)
    if not limit:
        limit = psutil.virtual_memory().total
    return int(limit * fraction)


class _Sampler:
    """What each executing task used: the process RSS sampled while tasks run (a daemon
    thread, idle otherwise), each change shared equally between the tasks running then;
    a task's figure is the peak of its accumulated share."""

    def __init__(self, interval: float):
        self.interval = interval
        self.proc = psutil.Process()
        self.lock = threading.Lock()
        self.running: dict = {}  # key -> [rss at start, peak rss]
        self.wake = threading.Event()
        self.stopped = False
        self.thread = threading.Thread(target=self._run, name="mars-dask-rss", daemon=True)
        self.thread.start()

    def rss(self) -> int:
        try:
            return self.proc.memory_info().rss
        except psutil.Error:  # pragma: no cover
            return 0

    def _run(self) -> None:
        last = self.rss()
        while not self.stopped:
            if not self.running:
                self.wake.wait(1.0)
                self.wake.clear()
                last = self.rss()
                continue
            rss = self.rss()
            with self.lock:
                # RSS is per process: a change is shared between the tasks running now
                share = (rss - last) / max(1, len(self.running))
                for rec in self.running.values():
                    rec[0] += share
                    if rec[0] > rec[1]:
                        rec[1] = rec[0]
            last = rss
            time.sleep(self.interval)

    def start(self, key) -> None:
        with self.lock:
            self.running[key] = [0.0, 0.0]  # [growth attributed so far, its peak]
        self.wake.set()

    def stop(self, key) -> int | None:
        """Peak RSS growth attributed to ``key`` while it ran."""
        with self.lock:
            rec = self.running.pop(key, None)
        if rec is None:
            return None
        return int(rec[1])

    def close(self) -> None:
        self.stopped = True
        self.wake.set()


class _State:
    """Per-worker state, kept on the worker object: the plugin may be added twice (by the
    worker's preload and by the scheduler plugin at registration; Dask then tears the
    first instance down and sets the second up) and must not measure or recover twice."""

    def __init__(self, worker, quota: int):
        self.worker = worker
        self.quota = quota
        self.sampler = _Sampler(parse_timedelta(dask.config.get("mars-dask.worker.sample-interval")))
        self.enabled = False  # the scheduler has the mars_dask plugin (hello answered)
        self.task = None


class MarsWorkerPlugin(WorkerPlugin):
    """Installed by ``--preload mars_dask`` on a worker, by the scheduler plugin on every
    worker that registers, or by ``client.register_plugin``."""

    name = P.PLUGIN_NAME
    idempotent = True

    def __init__(self, quota_fraction: float | None = None, scheduler_has_plugin: bool = False):
        self.quota_fraction = quota_fraction
        # True when registered by the scheduler plugin: task reports may be sent at once
        # (otherwise only after the scheduler answered mars_hello)
        self.scheduler_has_plugin = scheduler_has_plugin

    # -- lifecycle ----------------------------------------------------------------------
    def setup(self, worker):
        st = getattr(worker, "_mars_dask_state", None)
        if st is not None:
            self.st = st
            st.enabled = st.enabled or self.scheduler_has_plugin
            return
        self.st = st = _State(worker, quota_of(worker, self.quota_fraction))
        st.enabled = self.scheduler_has_plugin
        worker._mars_dask_state = st
        state = worker.state
        # Before registration the resources travel with the registration message; after
        # it, Worker.set_resources tells the scheduler.
        if worker.status != Status.running or not worker.batched_stream.comm:
            state.available_resources[P.RESOURCE] = (
                state.available_resources.get(P.RESOURCE, 0) + st.quota - state.total_resources.get(P.RESOURCE, 0)
            )
            state.total_resources[P.RESOURCE] = st.quota
        st.task = asyncio.ensure_future(self._after_registration())

    async def _after_registration(self) -> None:
        w = self.st.worker
        deadline = time.monotonic() + 60
        while w.status != Status.running or not w.batched_stream.comm:
            if w.status in (Status.closing, Status.closed, Status.failed) or time.monotonic() > deadline:
                return
            await asyncio.sleep(0.01)
        try:
            await w.set_resources(**{P.RESOURCE: self.st.quota})
            await self._recover()
        except Exception as e:  # never take the worker down
            logger.warning("mars_dask worker plugin start-up on %s: %s (is the scheduler "
                           "started with --preload mars_dask?)", w.address, e)

    def teardown(self, worker):
        if worker.status not in (Status.closing, Status.closed, Status.closing_gracefully, Status.failed):
            return  # replaced by another instance of this plugin: keep the state
        st = self.st
        st.sampler.close()
        if st.enabled:
            # A clean close (the store removes its files): the scheduler must not wait
            # for a restart of this process.
            worker.batched_send({"op": P.OP_CLOSING})

    # -- restart recovery ---------------------------------------------------------------
    def _store(self):
        from ..spill import MarsStore

        data = self.st.worker.data
        return data if isinstance(data, MarsStore) else None

    async def _recover(self) -> None:
        w = self.st.worker
        store = self._store()
        existing = {}
        if store is not None:
            existing = await asyncio.to_thread(store.existing_keys)
        resp = await w.scheduler.mars_hello(
            worker=w.address, persistent=store is not None, keys=list(existing)
        )
        self.st.enabled = True
        if store is None or not existing:
            return
        wanted = [k for k in resp.get("adopt", ()) if k in existing]
        keep = set(wanted)
        unwanted = [k for k in existing if k not in keep]
        adopted = []
        if wanted:
            values = {}
            for k in wanted:
                try:
                    values[k] = store.recover(k)
                except Exception as e:
                    logger.warning("could not recover %r from the store: %s", k, e)
            w.update_data(values, stimulus_id=f"mars-recover-{time.time()}")
            adopted = list(values)
        if unwanted:
            await asyncio.to_thread(store.discard_existing, unwanted)
        logger.info("recovered %d results from the store of the previous process (%d dropped)",
                    len(adopted), len(unwanted))
        await w.scheduler.mars_adopted(worker=w.address, keys=adopted)

    # -- per-task accounting ------------------------------------------------------------
    def transition(self, key, start, finish, **kwargs):
        st = self.st
        if not st.enabled:
            return
        if finish == "executing":
            st.sampler.start(key)
            st.worker.batched_send({"op": P.OP_STARTED, "key": key})
        elif start in ("executing", "long-running"):
            used = st.sampler.stop(key)
            if finish != "memory" or used is None:
                return
            ts = st.worker.state.tasks.get(key)
            ann = (ts.annotations or {}) if ts is not None else {}
            tileable = ann.get(P.ANN_TILEABLE)
            if tileable is None:
                return
            nbytes = ts.nbytes or 0
            st.worker.batched_send(
                {"op": P.OP_USED, "key": key, "tileable": tileable, "used": int(max(used, nbytes))}
            )
