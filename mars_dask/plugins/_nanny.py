"""The nanny half: the store as the worker's ``data``, and why a worker process died.

Only the nanny outlives a worker process, so only it can tell the scheduler how the
process ended: its exit code (``-9``: SIGKILL), whether the nanny's own memory monitor
terminated it (``distributed.worker.memory.terminate``), and the RSS it last had. The
scheduler plugin uses that to tell an out-of-memory death (retry the culprit alone) from
an external kill (nobody is to blame) and from a crash (count it, as Dask does).

A periodic callback samples the worker process (cheap: one ``psutil`` call) and notices
its exit; the nanny's own restart logic is left untouched.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time

import dask.config
import psutil
from dask.utils import parse_timedelta
from distributed.core import Status
from distributed.diagnostics.plugin import NannyPlugin
from tornado.ioloop import PeriodicCallback

logger = logging.getLogger("mars_dask.plugins")


class MarsNannyPlugin(NannyPlugin):
    name = "mars-dask-nanny"
    idempotent = True

    def setup(self, nanny):
        self.nanny = nanny
        self._proc = None  # the AsyncProcess being watched
        self._pid = None
        self._addr = None
        self._rss = 0
        self._recent: collections.deque = collections.deque()
        interval = parse_timedelta(dask.config.get("mars-dask.worker.monitor-interval"))
        self._pc = PeriodicCallback(self._poll, interval * 1000)
        self._pc.start()
        self._tasks: set = set()

    def teardown(self, nanny):
        self._pc.stop()

    def _poll(self) -> None:
        wp = self.nanny.process
        proc = getattr(wp, "process", None)
        if self._proc is not None:
            code = self._proc.exitcode
            if code is not None or proc is not self._proc:
                self._report(code)
                self._proc = None
        if self._proc is None and proc is not None and proc.pid is not None and proc.exitcode is None:
            self._proc, self._pid, self._rss = proc, proc.pid, 0
            self._recent.clear()
        if self._proc is not None:
            self._addr = getattr(wp, "worker_address", None) or self._addr
            try:
                rss = psutil.Process(self._pid).memory_info().rss
            except psutil.Error:
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
            memory_terminated=getattr(mm, "_last_terminated_pid", None) == self._pid,
            restarting=nanny.status == Status.running and getattr(nanny, "auto_restart", True),
        )
        logger.info("worker process %s exited (%s)", self._pid, msg)
        t = asyncio.ensure_future(self._send(msg))
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)

    async def _send(self, msg) -> None:
        try:
            await asyncio.wait_for(self.nanny.scheduler.mars_worker_exit(**msg), 10)
        except Exception as e:  # the scheduler falls back to Dask's behaviour
            logger.info("could not report the worker exit to the scheduler: %s", e)


def install_store(nanny) -> bool:
    """Make the nanny start its worker processes with ``data=MarsStore`` (unless the
    user passed a ``data`` of their own). Must run before the first process starts, i.e.
    from a ``--preload-nanny``."""
    if not dask.config.get("mars-dask.worker.store", True):
        return False
    from ..spill import MarsStore

    if nanny.worker_kwargs.get("data") is not None:
        return False
    nanny.worker_kwargs["data"] = MarsStore
    # a nanny that already started a process reuses its WorkerProcess (and the kwargs it
    # was built with) for the next one
    wp = getattr(nanny, "process", None)
    if wp is not None and getattr(wp, "worker_kwargs", None) is not None:
        wp.worker_kwargs["data"] = MarsStore
    return True
