"""mars_dask: Mars's tileables, ordering, memory quota, spill and failover on Dask.

``import mars_dask.tensor as mt`` builds lazy tensors; ``mars_dask.execute(*tileables)`` or
``t.execute()`` runs them on the current ``distributed.Client`` (or an embedded
``LocalCluster``) and ``t.fetch()`` returns numpy results.
"""

from . import config  # noqa: F401  (registers the mars-dask.* dask.config defaults)
from .errors import ClientClosedError, MarsDaskError, NotExecutedError, PluginsNotInstalledWarning, TilingError
from .session import Session, execute, fetch, get_client, get_session, start_embedded_cluster
from .plugins import dask_setup, dask_teardown, failover_report, impure, memory_hint  # noqa: F401  (--preload mars_dask)

__version__ = "0.1.0"

__all__ = [
    "ClientClosedError", "MarsDaskError", "NotExecutedError", "PluginsNotInstalledWarning", "TilingError",
    "Session", "execute", "fetch",
    "failover_report", "get_client", "get_session", "impure", "memory_hint", "start_embedded_cluster",
]
