"""The node-local result store: the worker's ``data`` mapping (see ``_store.py``).

Use it as ``Worker(data=MarsStore)``, ``LocalCluster(data=MarsStore)`` or
``dask worker ... --preload mars_dask`` (which sets it up); options come from
``mars-dask.store.*`` in dask.config.
"""

from ._store import MarsStore, default_directory, purge_store, store_dirs
from ._worker import StoreTeardown

__all__ = ["MarsStore", "StoreTeardown", "default_directory", "purge_store", "store_dirs"]
