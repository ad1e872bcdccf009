"""The worker half: quota resource, what each task really used, and restart recovery.

- Quota: the worker advertises resource ``mars-memory`` = ``quota-fraction`` x its memory
  limit, so the resource restrictions the scheduler plugin derives from the memory
  estimates bound the estimated bytes running at once (Mars's QuotaActor).
- Measuring: a sampler thread follows the process RSS while tasks execute; when a task
  ends the plugin tells the scheduler what it used (peak RSS during the task minus RSS at
  its start, at least its output's size) so later chunks of the same tileable get a
  better estimate. Only a worker with several threads measures: one with a single thread
  runs every task alone, so no restriction applies there (see ``_quota.py``), and the
  reads would cost its event loop a GIL hand-over at each task start and end. It also
  reports task starts: the scheduler needs to know which tasks were *executing* (not
  merely queued) on a process that dies, to tell culprits from bystanders.
- Restart: a process started by the nanny after its predecessor died finds the
  predecessor's results in the node-local store (``MarsStore.existing_keys``). It asks
  the scheduler which of them are still wanted, adopts those into the worker's state
  (``Worker.update_data`` with the recovered values: the store adopts its files, nothing
  is rewritten) and tells the scheduler, which then marks them in memory here instead of
  recomputing them. The rest is deleted.
- Scheduler loss: when the connection to the scheduler breaks (not a close the scheduler
  asked for), Dask closes the worker *and its nanny*. With a nanny running our nanny plugin,
  the worker instead tells the nanny (``mars_scheduler_lost``), notes the loss on its
  plugin state (the plugin's teardown then keeps the store's files) and closes alone; the nanny restarts it, the new process waits for a scheduler at the same
  address (``mars-dask.worker.scheduler-reconnect-timeout``), registers, and the restart
  recovery above lists the store's keys to the new scheduler (``mars_hello``), keeping
  them until it answers. Once that is done every worker start logs an event on topic
  ``mars-worker-rejoin`` (a reconnecting client waits for those before resubmitting).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time

import psutil
from dask.utils import parse_timedelta
from distributed.core import Status
from distributed.diagnostics.plugin import WorkerPlugin

from .. import config
from .. import _dask_internals as DI
from . import _protocol as P
from ._rss import RSSReader

logger = logging.getLogger("mars_dask.plugins")
#: seconds a dead peer's address stays refused: long enough for the inputs it held to be
#: dropped from this worker's records (the first failed fetch drops them all, or the
#: scheduler's next message), short enough that an address in use again is soon reachable
PEER_GONE_FOR = 10.0


def quota_of(worker, fraction: float | None = None) -> int:
    """``fraction`` (default ``mars-dask.worker.quota-fraction``) of the worker's memory
    limit (the machine's memory when the worker has none)."""
    if fraction is None:
        fraction = float(config.get("worker.quota-fraction"))
    limit = getattr(getattr(worker, "memory_manager", None), "memory_limit", None)
    if not limit:
        limit = psutil.virtual_memory().total
    return int(limit * fraction)


class _Sampler:
    """What each executing task used: the process RSS, read when a task starts or ends (on
    the event loop, one ``pread``) and every ``interval`` while tasks run (a daemon thread),
    each change shared equally between the tasks running then; a task's figure is the peak
    of its accumulated share.

    Why reads at the task events and a thread that waits an interval before its first
    sample: every wake of the thread hands the GIL back and forth with the task thread and
    the event loop, which on a loaded machine can cost milliseconds of wall time (in a loop
    of 100 small graphs the median iteration took 169 ms with the thread sampling from each
    task's start every 20 ms, 138 ms with it sampling once a second: one run, on a loaded
    machine). A task shorter than the interval is measured from its start and end reads
    alone; the thread samples only while tasks run, to catch peaks that end before their
    task does. Only workers with several threads measure (see the module docstring)."""

    def __init__(self, interval: float):
        self.interval = interval
        self._read_rss = RSSReader()
        self.lock = threading.Lock()
        self.running: dict = {}  # key -> [growth attributed so far, its peak]
        self.last = self.rss()  # RSS at the previous read
        self.wake = threading.Event()
        self.stopped = False
        self.thread = threading.Thread(target=self._run, name="mars-dask-rss", daemon=True)
        self.thread.start()

    def rss(self) -> int:
        return self._read_rss() or 0

    def _sample(self) -> None:
        """Read RSS; share its change since the previous read between the tasks running
        (RSS is per process). Called with ``lock`` held."""
        rss = self.rss()
        if self.running:
            share = (rss - self.last) / len(self.running)
            for rec in self.running.values():
                rec[0] += share
                if rec[0] > rec[1]:
                    rec[1] = rec[0]
        self.last = rss

    def _run(self) -> None:
        while not self.stopped:
            self.wake.wait()  # set by start(): a busy period begins
            while not self.stopped:
                time.sleep(self.interval)
                self.wake.clear()  # a start() after this sets it again: no busy period missed
                with self.lock:
                    if not self.running:
                        break
                    self._sample()

    def start(self, key) -> None:
        with self.lock:
            self._sample()
            self.running[key] = [0.0, 0.0]  # [growth attributed so far, its peak]
        self.wake.set()  # no waiter (the thread is sampling) costs nothing

    def stop(self, key) -> int | None:
        """Peak RSS growth attributed to ``key`` while it ran (its end included)."""
        with self.lock:
            if key not in self.running:
                return None
            self._sample()
            rec = self.running.pop(key)
        return int(rec[1])

    def close(self) -> None:
        self.stopped = True
        self.wake.set()


#: re-exported for callers that imported it from here (the constant lives in _protocol)
REJOIN_TOPIC = P.REJOIN_TOPIC


def _install_scheduler_loss_hook(worker, st: _State) -> None:
    """Wrap ``worker.close`` (through ``_dask_internals.hook_worker_close``: see there what
    it relies on): a close because the scheduler connection broke while the worker was
    running becomes a close of the worker alone, which its nanny restarts, keeping the
    store's files (``st.scheduler_lost``, read by the plugin's teardown). A close the
    scheduler asked for (``op: close``) sets the worker closing before the stream ends, so
    it is not mistaken for a loss."""
    from ._nanny import reconnect_timeout

    if st.close_hooked:
        return

    def make_close(orig):
        async def close(timeout: float = 30, executor_wait: bool = True, nanny: bool = True,
                        reason: str = "worker-close"):
            if (DI.is_scheduler_connection_broken(reason) and nanny and worker.nanny
                    and DI.worker_is_running(worker) and reconnect_timeout() is not None):
                try:
                    async with worker.rpc(worker.nanny) as r:
                        answer = await asyncio.wait_for(
                            getattr(r, P.NANNY_SCHEDULER_LOST)(worker=worker.address), 5)
                except Exception as e:  # noqa: BLE001 - no nanny plugin: Dask's behaviour
                    answer = repr(e)
                if answer == "OK":
                    logger.warning("lost the scheduler %s: closing this worker process (keeping its "
                                   "store) for its nanny to restart", worker.scheduler.address)
                    st.scheduler_lost = True
                    return await orig(timeout=timeout, executor_wait=False, nanny=False,
                                      reason=P.REASON_SCHEDULER_LOST)
                logger.info("nanny will not restart this worker after the scheduler loss (%s)", answer)
            return await orig(timeout=timeout, executor_wait=executor_wait, nanny=nanny, reason=reason)

        return close

    DI.hook_worker_close(worker, make_close)
    st.close_hooked = True


class _State(WorkerPlugin):
    """Per-worker state, kept on a sibling plugin in ``worker.plugins`` (public;
    ``P.WORKER_STATE_PLUGIN``): the mars_dask plugin may be added twice (by the worker's
    preload and by the scheduler plugin at registration; Dask then tears the first
    instance down and sets the second up) and must not measure or recover twice. It has
    no hooks of its own: the mars_dask plugin's teardown does the closing work."""

    name = P.WORKER_STATE_PLUGIN

    def __init__(self, worker, quota: int):
        self.worker = worker
        self.quota = quota
        self.sampler = None  # only where tasks run together (see the module docstring)
        if worker.state.nthreads > 1:
            self.sampler = _Sampler(parse_timedelta(config.get("worker.sample-interval")))
        self.enabled = False  # the scheduler has the mars_dask plugin (hello answered)
        self.task = None
        self.scheduler_lost = False  # closing for the nanny to restart it: keep the store's files
        self.close_hooked = False


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
        self._gone: dict | None = None  # peers the scheduler saw die -> refused until (monotonic)

    # -- lifecycle ----------------------------------------------------------------------
    def setup(self, worker):
        st = worker.plugins.get(P.WORKER_STATE_PLUGIN)
        # asked by the scheduler's /api/mars/v1/store route (this instance's from now on)
        DI.register_handlers(worker, handlers={P.OP_STORE_STATS: self._store_stats,
                                               P.OP_TAKE_OVER: self._take_over,
                                               P.OP_WRITE_NOW: self._write_now,
                                               P.OP_PEER_GONE: self._peer_gone})
        if isinstance(st, _State):
            self.st = st
            st.enabled = st.enabled or self.scheduler_has_plugin
            store = self._store()
            if store is not None:
                store.bind(worker, owner=self)  # this instance closes it from now on
            return
        DI.check("worker", server=worker)
        self.st = st = _State(worker, quota_of(worker, self.quota_fraction))
        st.enabled = self.scheduler_has_plugin
        worker.plugins[P.WORKER_STATE_PLUGIN] = st
        store = self._store()
        if store is not None:
            store.bind(worker, owner=self)
        if DI.enabled("scheduler-loss-restart"):
            _install_scheduler_loss_hook(worker, st)
        # Before registration the resources travel with the registration message; after
        # it, Worker.set_resources tells the scheduler.
        if DI.enabled("quota") and (worker.status != Status.running or not worker.batched_stream.comm):
            DI.set_resource_before_registration(worker, P.RESOURCE, st.quota)
        st.task = asyncio.ensure_future(self._after_registration())

    async def _after_registration(self) -> None:
        w = self.st.worker
        deadline = time.monotonic() + 60
        while w.status != Status.running or not w.batched_stream.comm:
            if w.status in (Status.closing, Status.closed, Status.failed) or time.monotonic() > deadline:
                return
            await asyncio.sleep(0.01)
        n = None
        try:
            await w.set_resources(**{P.RESOURCE: self.st.quota})
            n = await self._recover()
        except Exception as e:  # noqa: BLE001 - never take the worker down
            logger.warning("mars_dask worker plugin start-up on %s: %s (is the scheduler "
                           "started with --preload mars_dask?)", w.address, e)
        try:
            # a client resubmitting after a scheduler loss waits for this (see session.py)
            w.log_event(P.REJOIN_TOPIC, {"action": "rejoined", "worker": w.address, "name": w.name,
                                         "adopted": n})
        except Exception:  # noqa: BLE001,S110  # pragma: no cover
            pass

    def teardown(self, worker):
        if worker.status not in (Status.closing, Status.closed, Status.closing_gracefully, Status.failed):
            return  # replaced by another instance of this plugin: keep the state
        st = self.st
        if st.sampler is not None:
            st.sampler.close()
        if st.enabled and not st.scheduler_lost:
            # A clean close (the store removes its files): the scheduler must not wait
            # for a restart of this process.
            worker.batched_send({"op": P.OP_CLOSING})
        store = self._store()
        if store is not None and store.bound_by is self:
            # closing because the scheduler was lost, for the nanny to restart this worker:
            # the files stay for the next process
            store.close(remove=not st.scheduler_lost)

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
        if store is not None and resp.get("write_now"):  # workers are being lost: see _write_now
            store.write_now_for(resp["write_now"])
        if store is None or not existing:
            return 0
        wanted = [k for k in resp.get("adopt", ()) if k in existing]
        keep = set(wanted)
        # files a sibling is taking over right now (a process restarted within a fraction
        # of a second scans its store while they are moved): theirs, not to be dropped
        leave = set(resp.get("leave", ()))
        unwanted = [k for k in existing if k not in keep and k not in leave]
        adopted = []
        if wanted:
            values = {}
            for k in wanted:
                try:
                    values[k] = store.recover(k)
                except Exception as e:  # noqa: BLE001 - e.g. a damaged file: recomputed instead
                    logger.warning("could not recover %r from the store: %s", k, e)
                    unwanted.append(k)
            w.update_data(values, stimulus_id=f"mars-recover-{time.time()}")
            adopted = list(values)
        if unwanted:
            await asyncio.to_thread(store.discard_existing, unwanted)
        logger.info("recovered %d results from the store of the previous process (%d dropped)",
                    len(adopted), len(unwanted))
        await w.scheduler.mars_adopted(worker=w.address, keys=adopted)
        return len(adopted)

    async def _take_over(self, name=None, keys=()) -> dict:
        """The scheduler asks this worker to give back results that the dead worker
        ``name`` on this node left in its store (``MarsStore.take_over``): they go into this
        worker's memory as :meth:`_recover` puts a predecessor's, and the scheduler then
        moves them to processing here (answered at once, nothing runs)."""
        store = self._store()
        if store is None or not keys:
            return {"keys": []}
        values = await asyncio.to_thread(store.take_over, name, list(keys))
        if values:
            self.st.worker.update_data(values, stimulus_id=f"mars-take-over-{time.time()}")
        return {"keys": list(values)}

    def _write_now(self, seconds=0.0) -> str:
        """The scheduler saw a worker process die: write every result at once for
        ``seconds`` (``MarsStore.write_now_for``)."""
        store = self._store()
        if store is not None and seconds:
            store.write_now_for(seconds)
        return "OK"

    def _peer_gone(self, address: str = "") -> str:
        """The scheduler saw the worker process at ``address`` die: fail this worker's
        connections to it now, and new ones for a while (its inputs are fetched elsewhere)."""
        if not address or not DI.enabled("fail-fast-fetch"):
            return "OK"
        if self._gone is None:
            self._gone = {}
            DI.refuse_connections(self.st.worker, self._gone)
        now = time.monotonic()
        for a in [a for a, until in self._gone.items() if until <= now]:  # a long-lived worker sees many deaths
            del self._gone[a]
        self._gone[address] = now + PEER_GONE_FOR
        DI.fail_connections_to(self.st.worker, address)
        return "OK"

    async def _store_stats(self) -> dict:
        """The store's figures (``MarsStore.stats``; ``store`` None without the store), read
        in a thread: they take the store's lock, which task threads also take."""
        store = self._store()
        w = self.st.worker
        return {"name": w.name, "store": await asyncio.to_thread(store.stats) if store is not None else None}

    # -- read ahead -----------------------------------------------------------------------
    def _read_ahead(self) -> None:
        """Ask the store to read (and check) ahead the inputs of the next tasks to run: a
        task became ready, or a thread just freed up. The next tasks are the top of the
        worker state's ``ready`` and ``constrained`` heaps (what ``WorkerState`` runs next;
        private: HeapSet.peekn)."""
        store = self._store()
        if store is None or not store.reads_ahead or not store.on_disk:
            return  # nothing on disk (the common case): not even a look at the heaps
        if not DI.enabled("store-read-ahead"):
            return
        keys = [d.key for ts in DI.next_ready_tasks(self.st.worker, store.read_ahead)
                for d in ts.dependencies]
        if keys:
            store.prefetch(keys)

    # -- per-task accounting ------------------------------------------------------------
    def transition(self, key, start, finish, **kwargs):
        st = self.st
        if finish in ("ready", "constrained") or start == "executing":
            self._read_ahead()
        if not st.enabled:
            return
        if finish == "executing":
            if st.sampler is not None:
                st.sampler.start(key)
            st.worker.batched_send({"op": P.OP_STARTED, "key": key})
        elif start in ("executing", "long-running") and st.sampler is not None:
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
