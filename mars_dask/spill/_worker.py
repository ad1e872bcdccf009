"""Tying a store to the Dask worker that owns it.

``Worker(data=MarsStore)`` (or ``(MarsStore, kwargs)``) constructs the store inside
``WorkerMemoryManager.__init__`` without telling it which worker it belongs to, yet the
store needs the worker's stable name (so a restarted process with that name reopens the same
files), its memory limit (to size the shared-memory tier) and a hook on worker close (to
remove its files). :func:`find_constructing_worker` finds the memory manager on the call
stack; :class:`StoreTeardown` is a worker plugin whose ``teardown`` (run by ``Worker.close``)
removes the files. A process killed by a signal never runs it, which is the point: its
files stay for the restarted process.
"""

from __future__ import annotations

import logging
import sys

from distributed.diagnostics.plugin import WorkerPlugin

logger = logging.getLogger("mars_dask.spill")


def find_constructing_worker(max_depth: int = 12):
    """``(worker, memory_manager)`` if called (indirectly) from
    ``WorkerMemoryManager.__init__``, else ``(None, None)``."""
    from distributed.worker_memory import WorkerMemoryManager

    f = sys._getframe(1)
    for _ in range(max_depth):
        if f is None:
            break
        s = f.f_locals.get("self")
        if isinstance(s, WorkerMemoryManager):
            return f.f_locals.get("worker"), s
        f = f.f_back
    return None, None


class StoreTeardown(WorkerPlugin):
    """Removes the store's files when the worker closes (a clean shutdown, a cluster close,
    ``client.restart()``). Installed by the store itself on the worker it belongs to."""

    name = "mars-store-teardown"

    def teardown(self, worker) -> None:
        from ._store import MarsStore

        data = worker.data
        if isinstance(data, MarsStore):
            # closing because the scheduler was lost, for the nanny to restart this worker
            # (set by mars_dask.plugins._worker): the files stay for the next process
            data.close(remove=not getattr(worker, "_mars_dask_scheduler_lost", False))


def install_teardown(worker) -> bool:
    """Queue :class:`StoreTeardown` among the plugins the worker sets up when it starts.

    ``Worker.__init__`` keeps its start-up plugins in ``_pending_plugins``; the store is
    built inside ``__init__``, before ``start()`` sets them up."""
    pending = getattr(worker, "_pending_plugins", None)
    if not isinstance(pending, tuple):
        logger.warning("cannot install the store teardown plugin on %r; "
                       "call store.close(remove=True) on worker close yourself", worker)
        return False
    worker._pending_plugins = (*pending, StoreTeardown())
    return True
