"""Tying a store to the Dask worker that owns it.

``Worker(data=MarsStore)`` (or ``(MarsStore, kwargs)``) constructs the store inside the
worker's constructor without telling it which worker it belongs to, yet the store needs the
worker's stable name (so a restarted process with that name reopens the same files), its
memory limit (to size the shared-memory tier) and a hook on worker close (to remove its files).

- With the mars_dask worker plugin (``--preload mars_dask``, or registered by the scheduler
  plugin): the plugin's ``setup`` calls :meth:`MarsStore.bind` and its ``teardown`` closes the
  store (keeping the files when the worker closes because it lost its scheduler).
- Without it (``LocalCluster(data=MarsStore)``): the store looks for its worker the first time
  it needs it (``mars_dask._dask_internals.worker_holding_store``), binds itself and puts a
  :class:`StoreTeardown` in the worker's public ``plugins`` dict, whose ``teardown`` (run by
  ``Worker.close``) removes the files. If that contact is missing on the running distributed,
  the store works unbound: a random, non-restartable name, the machine's memory for its
  limit, and ``store.close()`` is the user's to call.

A process killed by a signal never runs a teardown, which is the point: its files stay for
the restarted process.
"""

from __future__ import annotations

import logging

from distributed.diagnostics.plugin import WorkerPlugin

logger = logging.getLogger("mars_dask.spill")


class StoreTeardown(WorkerPlugin):
    """Removes the store's files when the worker closes (a clean shutdown, a cluster close,
    ``client.restart()``), for a store no mars_dask worker plugin bound."""

    name = "mars-store-teardown"

    def __init__(self, store=None):
        self.store = store

    def teardown(self, worker) -> None:
        store = self.store
        if store is not None and store.bound_by is None:
            store.close(remove=True)


def install_teardown(store, worker) -> bool:
    """Put a :class:`StoreTeardown` of ``store`` in ``worker.plugins`` (public: ``Worker.close``
    tears down every plugin there)."""
    plugins = getattr(worker, "plugins", None)
    if not isinstance(plugins, dict):
        logger.warning("cannot install the store teardown plugin on %r; "
                       "call store.close(remove=True) on worker close yourself", worker)
        return False
    plugins.setdefault(StoreTeardown.name, StoreTeardown(store))
    return True
