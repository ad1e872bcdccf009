"""Mars's worker behaviour on Dask: quota admission, OOM handling, recovery ordering and
process restart without data loss, as a scheduler / worker / nanny plugin trio (laid out
like ``distributed/shuffle/``: private modules behind this small interface).

Install with ``dask scheduler --preload mars_dask`` and
``dask worker ADDR --nanny --preload mars_dask --preload-nanny mars_dask``, or on a running
cluster with :func:`install` (the first ``execute()`` on a scheduler without the plugin
warns once: :class:`mars_dask.errors.PluginsNotInstalledWarning`). Options: ``mars-dask.scheduler.*`` and ``mars-dask.worker.*``
in dask.config (``mars_dask/mars-dask.yaml``).
"""

from ._failover import failover_report
from ._http import register_routes
from ._hint import memory_hint
from ._impure import impure
from ._install import dask_setup, dask_teardown, install, setup_server
from ._nanny import MarsNannyPlugin
from ._protocol import PLUGIN_NAME, RESOURCE
from ._scheduler import MarsSchedulerPlugin
from ._worker import MarsWorkerPlugin

# the status routes (/api/mars/v1/...) of every scheduler built from now on in this process:
# `--preload mars_dask` imports this before the scheduler reads its routes (see _http)
register_routes()

__all__ = [
    "MarsNannyPlugin", "MarsSchedulerPlugin", "MarsWorkerPlugin", "PLUGIN_NAME", "RESOURCE",
    "dask_setup", "dask_teardown", "failover_report", "impure", "install", "memory_hint", "setup_server",
]
