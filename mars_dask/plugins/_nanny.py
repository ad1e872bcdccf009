"""The nanny half: the store as the worker's ``data``, and why a worker process died.

Only the nanny outlives a worker process, so only it can tell the scheduler how the
process ended: its exit code (``-9``: SIGKILL), whether the nanny's own memory monitor
terminated it (``distributed.worker.memory.terminate``), and the RSS it last had. The
scheduler plugin uses that to tell an out-of-memory death (retry the culprit alone) from
an external kill (nobody is to blame) and from a crash (count it, as Dask does).

A periodic callback samples the worker process (cheap: one read of its ``statm``, see
``_rss.py``) and notices its exit; the nanny's own restart logic is left untouched.

Scheduler loss: Dask's worker closes *and takes its nanny with it* when its connection to
the scheduler breaks. With this plugin the worker plugin instead tells the nanny
(``mars_scheduler_lost``) and closes alone, keeping its store's files; the nanny restarts
it as after any exit, and the new process waits for a scheduler at the same address,
registers and lists what the store holds (see ``_worker.py``). If no scheduler is back
within ``mars-dask.worker.scheduler-reconnect-timeout`` the nanny closes, as Dask's would.

Store directories: the nanny holds a shared lock on its worker's two store directories
(``mars_dask/_leftovers.py``) from its start to its close, computed from what it hands the
worker process (``data``, name, scheduler address, local directory; see
``_leftovers.nanny_store_dirs``) and checked again each time a new worker process starts
(a clean close removes the directories, the next process makes new ones). So they stay
locked while a killed process is restarted and while the nanny waits for a scheduler,
and lose their last lock only when the whole worker is gone; at its close the nanny
removes them if no process holds them any more. When it starts, it sweeps its worker's
store roots (a background thread) for the directories of dead workers and clusters.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import time

import dask.config
import psutil
from dask.utils import parse_bytes, parse_timedelta
from distributed.core import Status
from distributed.diagnostics.plugin import NannyPlugin
from tornado.ioloop import PeriodicCallback

from .. import config
from .. import _dask_internals as DI
from . import _protocol as P
from ._rss import RSSReader

logger = logging.getLogger("mars_dask.plugins")

_UNSET = object()


class MarsNannyPlugin(NannyPlugin):
    name = "mars-dask-nanny"
    idempotent = True

    def setup(self, nanny):
        DI.check("nanny")
        self.nanny = nanny
        self._proc = None  # the AsyncProcess being watched
        self._pid = None
        self._addr = None
        self._rss = 0
        self._read_rss = None  # RSSReader of self._pid
        self._recent: collections.deque = collections.deque()
        interval = parse_timedelta(config.get("worker.monitor-interval"))
        self._pc = PeriodicCallback(self._poll, interval * 1000)
        self._pc.start()
        self._tasks: set = set()
        self._lost_deadline = None  # scheduler lost: give up at this time (monotonic)
        self._saved_death_timeout = _UNSET
        DI.register_handlers(nanny, {P.NANNY_SCHEDULER_LOST: self._scheduler_lost})
        self.store_dirs = None  # (shm dir, spill dir) of the worker's store
        self._dir_locks: list = []
        self._hold_store_dirs(sweep=True)

    def teardown(self, nanny):
        self._pc.stop()
        if self._read_rss is not None:
            self._read_rss.close()
        DI.unregister_handler(nanny, P.NANNY_SCHEDULER_LOST, self._scheduler_lost)
        # a nanny that closes takes its worker with it: nothing will adopt the files
        self._release_store_dirs(remove=nanny.status in (Status.closing, Status.closed))

    # -- the store's directories ----------------------------------------------------------
    def _hold_store_dirs(self, sweep: bool = False) -> None:
        """Hold (again, if a clean close removed them) the worker's store directories; with
        ``sweep``, sweep their roots for the directories nobody holds (a thread)."""
        from .._leftovers import hold_dir, nanny_store_dirs, sweep_in_background

        try:
            found = nanny_store_dirs(self.nanny)
            if found is None:
                self._release_store_dirs()
                self.store_dirs = None
                return
            roots, dirs = found
            if dirs != self.store_dirs:
                self._release_store_dirs()
                self.store_dirs = dirs
            locks = []
            for i, d in enumerate(dirs):
                old = self._dir_locks[i] if i < len(self._dir_locks) else None
                if old is not None and old.valid():
                    locks.append(old)
                    continue
                if old is not None:
                    old.release()
                locks.append(hold_dir(d))
            self._dir_locks = locks
        except Exception as e:  # noqa: BLE001 - e.g. an unsafe root: the worker process refuses it, naming it
            logger.warning("cannot hold the store directories of %s: %s", self.nanny.address, e)
            return
        if sweep:
            sweep_in_background(roots=roots, own=dirs, who=f"nanny {self.nanny.address}")

    def _release_store_dirs(self, remove: bool = False) -> None:
        """Let the store directories go; with ``remove``, delete them if no process holds
        them any more (a worker process that is still alive holds them: its own close
        decides)."""
        from .._leftovers import remove_if_unused

        locks, self._dir_locks = self._dir_locks, []
        for lk in locks:
            lk.release()
        if remove and self.store_dirs:
            for d in self.store_dirs:
                try:
                    if remove_if_unused(d)[0]:
                        logger.debug("removed the store directory %s of a worker that is gone", d)
                        try:
                            os.rmdir(os.path.dirname(d))  # its cluster directory, if now empty
                        except OSError:
                            pass
                except Exception as e:  # noqa: BLE001 - best effort: a leftover is swept later  # pragma: no cover
                    logger.info("could not remove %s: %s", d, e)

    # -- scheduler loss -------------------------------------------------------------------
    def _scheduler_lost(self, worker=None) -> str:
        """The worker process lost its scheduler and is closing so that this nanny restarts
        it. Returns "OK" (the worker then closes without closing the nanny)."""
        nanny = self.nanny
        if nanny.status != Status.running:
            return "closing"
        timeout = reconnect_timeout()
        if timeout is None:
            return "disabled"
        if self._lost_deadline is None:
            self._lost_deadline = time.monotonic() + timeout
        logger.warning("worker %s lost the scheduler %s: restarting it, waiting up to %.0f s "
                       "for a scheduler at that address", worker, nanny.scheduler_addr, timeout)
        # Nanny._on_worker_exit first unregisters the dead worker from the scheduler
        # (Nanny._unregister, up to 10 s against a dead scheduler) before starting the
        # next process; that address means nothing to a new scheduler, so skip it
        # (private: WorkerProcess.worker_address, which _unregister checks).
        addr = DI.forget_worker_process_address(nanny)
        if addr is not None:
            self._addr = addr
        # The next process must not wait for a scheduler forever (a nanny cannot kill a
        # process that is still starting): it gets the rest of the timeout as its
        # death_timeout (Server.start's bound; private: WorkerProcess.worker_kwargs is
        # reused for every process the nanny starts), restored once it is back.
        kw = DI.worker_process_kwargs(nanny)
        if kw is not None:
            if self._saved_death_timeout is _UNSET:
                self._saved_death_timeout = kw.get("death_timeout")
            kw["death_timeout"] = max(1.0, self._lost_deadline - time.monotonic())
        return "OK"

    def _restore_death_timeout(self) -> None:
        kw = DI.worker_process_kwargs(self.nanny)
        if self._saved_death_timeout is not _UNSET and kw is not None:
            kw["death_timeout"] = self._saved_death_timeout
        self._saved_death_timeout = _UNSET

    def _check_lost(self) -> None:
        wstatus = DI.worker_process_status(self.nanny)
        back = DI.worker_process_address(self.nanny)
        if wstatus == Status.running and back is not None:
            # the restarted worker process registered (with the new scheduler)
            logger.info("worker process of %s is back (%s)", self.nanny.address, back)
            self._lost_deadline = None
            self._restore_death_timeout()
            return
        now = time.monotonic()
        if now > self._lost_deadline and self.nanny.status == Status.running:
            if wstatus == Status.starting and now < self._lost_deadline + 30:
                return  # its death_timeout ends it (Nanny.close waits for a starting process)
            self._lost_deadline = None
            self._restore_death_timeout()
            logger.error("no scheduler at %s within mars-dask.worker.scheduler-reconnect-timeout: "
                         "closing the nanny", self.nanny.scheduler_addr)
            t = asyncio.ensure_future(self.nanny.close(reason="mars-scheduler-reconnect-timeout"))
            self._tasks.add(t)
            t.add_done_callback(self._tasks.discard)

    def _poll(self) -> None:
        if self._lost_deadline is not None:
            self._check_lost()
        proc = DI.worker_process(self.nanny)
        if self._proc is not None:
            code = self._proc.exitcode
            if code is not None or proc is not self._proc:
                self._report(code)
                self._proc = None
                if self._read_rss is not None:
                    self._read_rss.close()
                    self._read_rss = None
        if self._proc is None and proc is not None and proc.pid is not None and proc.exitcode is None:
            self._hold_store_dirs()  # a new process: its store directories may be new
            self._proc, self._pid, self._rss = proc, proc.pid, 0
            self._recent.clear()
            try:
                self._read_rss = RSSReader(self._pid)  # once per process (closed at its exit)
            except psutil.Error:
                self._read_rss = None
        if self._proc is not None:
            self._addr = DI.worker_process_address(self.nanny) or self._addr
            rss = self._read_rss() if self._read_rss is not None else None
            if rss is None:
                return
            now = time.monotonic()
            # a dying process reports a falling RSS: keep the peak of the last 2 s
            self._recent.append((now, rss))
            while self._recent and self._recent[0][0] < now - 2.0:
                self._recent.popleft()
            self._rss = max(r for _, r in self._recent)

    def _report(self, exitcode) -> None:
        nanny = self.nanny
        mm = getattr(nanny, "memory_manager", None)
        msg = dict(
            nanny=nanny.address,
            worker=self._addr,
            pid=self._pid,
            exitcode=exitcode,
            rss=self._rss,
            memory_limit=getattr(mm, "memory_limit", None),
            memory_terminated=DI.memory_terminated_pid(nanny) == self._pid,
            restarting=nanny.status == Status.running and getattr(nanny, "auto_restart", True),
        )
        # Dask's nanny logs the exit and the restart; the scheduler logs the loss with this
        # report's verdict
        logger.debug("worker process %s exited (%s)", self._pid, msg)
        t = asyncio.ensure_future(self._send(msg))
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)

    async def _send(self, msg) -> None:
        try:
            await asyncio.wait_for(self.nanny.scheduler.mars_worker_exit(**msg), 10)
        except Exception as e:  # noqa: BLE001 - the scheduler falls back to Dask's behaviour
            logger.info("could not report the worker exit to the scheduler: %s", e)


def reconnect_timeout() -> float | None:
    """``mars-dask.worker.scheduler-reconnect-timeout`` in seconds; None: disabled (a worker
    that loses its scheduler closes with its nanny, as in Dask)."""
    v = config.get("worker.scheduler-reconnect-timeout")
    if v is None or v is False:
        return None
    v = parse_timedelta(v)
    return v if v > 0 else None


#: what the forkserver imports once for every worker process it forks: what a worker imports
#: to run mars_dask tasks anyway (a tensor job's worker had pandas, pyarrow and scipy.special
#: loaded too; they come with these)
FORKSERVER_PRELOAD = ("distributed", "numpy", "pandas", "mars_dask", "mars_dask.plugins",
                      "mars_dask.spill", "mars_dask.tensor", "mars_dask.dataframe")

#: Dask's default ``distributed.worker.multiprocessing-method``
_DASK_START_METHOD = "spawn"


def choose_start_method() -> str | None:
    """Start this process's worker processes the way ``mars-dask.worker.start-method`` says:
    sets ``distributed.worker.multiprocessing-method`` (for this whole process) and, for
    ``forkserver``, what the fork server imports. Must run before the first worker process
    starts (a ``--preload-nanny``). Returns the method set, or None (Dask's is kept).

    Why: a worker process killed mid-job (an OOM kill, a lost node's neighbour) is restarted
    by its nanny, and until it is serving again its share of the work waits and its results
    are taken over by others. Spawned (Dask's default), the new process is a fresh
    interpreter that imports distributed (0.65-0.84 s from the kill to the worker's return,
    0.6-0.8 s of CPU, measured on 3 idle workers) and then numpy, pandas and mars_dask on its
    first task (~1 s more). Forked from a server that imported them once: 0.17-0.30 s, 0.1 s
    of CPU, and less memory per process (the imported code is shared). ``auto`` does this in
    a ``dask worker`` process only: in a LocalCluster the user's own process would be left
    with the fork server as a child after the cluster closes. A multiprocessing method the
    user configured (anything but Dask's default) is kept, as is ``null``."""
    import multiprocessing

    want = config.get("worker.start-method")
    if want == "auto":
        want = "forkserver" if DI.in_worker_cli() else None
    if not want or want == _DASK_START_METHOD:
        return None
    if want != "forkserver":
        raise ValueError(f"mars-dask.worker.start-method is {want!r}: it is one of auto, "
                         "forkserver, spawn or null (Dask's setting)")
    current = dask.config.get("distributed.worker.multiprocessing-method")
    if current != _DASK_START_METHOD or want not in multiprocessing.get_all_start_methods():
        return None
    if not DI.enabled("worker-forkserver"):
        return None
    dask.config.set({"distributed.worker.multiprocessing-method": want})
    DI.preload_forkserver(FORKSERVER_PRELOAD)
    return want


def tune_malloc(nanny) -> dict:
    """Give the nanny's worker processes ``mars-dask.worker.malloc-mmap-threshold`` and
    ``malloc-trim-threshold`` (glibc's heap thresholds), except a variable the user's Dask
    config already sets to something other than Dask's default.  Must run before the first
    process starts (a ``--preload-nanny``).

    Why: Dask spawns workers with ``MALLOC_TRIM_THRESHOLD_=65536``, which also turns off
    glibc's adaptive mmap threshold, so every array above 128 KiB is a fresh mapping whose
    pages fault in on first touch and go back to the kernel when freed.  A numpy task
    allocating an 8 MB temporary pays that each time: on the 2-core test machine the
    element-wise tasks of a 1000x1000-chunked job ran three times slower than the same code
    in one process.  The defaults are glibc's own adaptive ceilings (arrays up to 32 MiB
    from the heap, up to 64 MiB of free heap kept), so a worker holds at most that much
    more than Dask's setting would."""
    env = {}
    for var, key in (("MALLOC_MMAP_THRESHOLD_", "worker.malloc-mmap-threshold"),
                     ("MALLOC_TRIM_THRESHOLD_", "worker.malloc-trim-threshold")):
        v = config.get(key)
        if v is not None:
            env[var] = parse_bytes(v)
    if not env or not DI.enabled("worker-malloc"):
        return {}
    dask_default = {"MALLOC_TRIM_THRESHOLD_": "65536"}  # distributed.nanny.pre-spawn-environ
    current = nanny.pre_spawn_env
    chosen = {k: str(v) for k, v in env.items() if k not in current or str(current[k]) == dask_default.get(k)}
    if chosen:
        DI.set_pre_spawn_env(nanny, chosen)
    return chosen


def install_store(nanny) -> bool:
    """Make the nanny start its worker processes with ``data=MarsStore`` (unless the
    user passed a ``data`` of their own). Must run before the first process starts, i.e.
    from a ``--preload-nanny``."""
    if not config.get("worker.store"):
        return False
    from ..spill import MarsStore

    if nanny.worker_kwargs.get("data") is not None:
        return False
    nanny.worker_kwargs["data"] = MarsStore
    # a nanny that already started a process reuses its WorkerProcess (and the kwargs it
    # was built with) for the next one
    kw = DI.worker_process_kwargs(nanny)
    if kw is not None:
        kw["data"] = MarsStore
    return True
