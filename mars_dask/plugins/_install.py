"""Installing the plugins: the ``--preload mars_dask`` hooks and ``install(client)``.

Distributed imports a ``--preload`` module and calls its ``dask_setup(server)`` when the
server starts (a click command receives the extra CLI arguments), ``dask_teardown`` when
it closes. One function serves the three servers:

- scheduler (``dask scheduler --preload mars_dask``): the scheduler plugin (which in turn
  registers the worker plugin for every worker that joins);
- nanny (``dask worker ... --nanny --preload-nanny mars_dask``): ``data=MarsStore`` for the
  worker processes it starts (so their results outlive them) and the exit monitor;
- worker (``dask worker ... --preload mars_dask``): the worker plugin before the worker
  registers, so its quota travels with the registration.

On a cluster started without them, :func:`install` adds what can be added to running
servers, and the first ``execute()`` on a scheduler without the plugin says so
(:func:`warn_if_not_installed`). It warns rather than installing by itself: the plugins
change how *every* client's work is scheduled on that cluster (quota admission, ordering),
and the store cannot be added to running worker processes anyway.
"""

from __future__ import annotations

import logging
import threading
import warnings

import click
import dask.config

from .. import _dask_internals as DI
from ..errors import PluginsNotInstalledWarning
from ._protocol import PLUGIN_NAME

logger = logging.getLogger("mars_dask.plugins")


def _apply_options(quota_fraction, restart_grace, store):
    cfg = {}
    if quota_fraction is not None:
        cfg["mars-dask.worker.quota-fraction"] = quota_fraction
    if restart_grace is not None:
        cfg["mars-dask.scheduler.restart-grace"] = restart_grace
    if store is not None:
        cfg["mars-dask.worker.store"] = store
    if cfg:
        dask.config.set(cfg)


def log_like_distributed() -> bool:
    """Let the plugins' log lines (``mars_dask.*``) show where and when distributed's own do,
    unless logging was configured for them or for the process.

    Why: ``dask scheduler --preload mars_dask`` prints distributed's INFO lines to stderr,
    but a ``mars_dask`` logger nobody configured shows only warnings (Python's last-resort
    handler), so the lines a user looks for there (a worker lost, its recovery) would be
    hidden. Following distributed's level keeps the embedded cluster quiet as well
    (``LocalCluster`` silences distributed to WARNING in the user's process and its worker
    processes). Left alone: a level or handler set on ``mars_dask`` (``logging: {mars_dask:
    info}`` in dask's config, ``DASK_LOGGING__MARS_DASK``) or a handler on the root logger
    (the application configured logging itself, or pytest captures it)."""
    ours, theirs = logging.getLogger("mars_dask"), logging.getLogger("distributed")
    if ours.level != logging.NOTSET or ours.handlers or logging.getLogger().handlers or not theirs.handlers:
        return False
    ours.setLevel(theirs.getEffectiveLevel())
    for h in theirs.handlers:
        ours.addHandler(h)
    ours.propagate = False
    return True


async def setup_server(server) -> None:
    from distributed import Nanny, Scheduler, Worker

    log_like_distributed()

    from ._nanny import MarsNannyPlugin, choose_start_method, install_store, tune_malloc
    from ._scheduler import MarsSchedulerPlugin
    from ._worker import MarsWorkerPlugin

    if isinstance(server, Scheduler):
        from ._http import routes_in_config

        # a scheduler built after this module's import has the status routes from the
        # routes config (see _http); otherwise the plugin adds them when it starts
        server.add_plugin(MarsSchedulerPlugin(add_http_routes=not routes_in_config()))
    elif isinstance(server, Nanny):
        DI.check("nanny", server)
        method = choose_start_method()
        if method:
            logger.info("%s starts its worker processes by %s", server.address or "nanny", method)
        tune_malloc(server)
        if install_store(server):
            logger.info("worker processes of %s keep their results in MarsStore", server.address)
        await server.plugin_add(MarsNannyPlugin())
    elif isinstance(server, Worker):
        await server.plugin_add(MarsWorkerPlugin())
    else:  # a Client preload: nothing to do
        logger.debug("mars_dask preload on %r: nothing to install", server)


@click.command(name="mars_dask")
@click.option("--mars-quota-fraction", type=float, default=None,
              help="mars-memory resource as a fraction of the worker memory limit "
                   "(mars-dask.worker.quota-fraction)")
@click.option("--mars-restart-grace", type=str, default=None,
              help="how long the scheduler holds a dead process's results for its restart "
                   "(mars-dask.scheduler.restart-grace)")
@click.option("--mars-store/--no-mars-store", default=None,
              help="nanny: start workers with data=MarsStore (mars-dask.worker.store)")
def dask_setup(server, mars_quota_fraction, mars_restart_grace, mars_store):
    """Preload hook: ``--preload mars_dask`` (scheduler, worker), ``--preload-nanny
    mars_dask`` (nanny)."""
    _apply_options(mars_quota_fraction, mars_restart_grace, mars_store)
    return setup_server(server)


def dask_teardown(server) -> None:
    """Nothing to undo: the plugins tear themselves down with their server."""


def _store_installer():
    """A NannyPlugin that makes the nanny start worker processes with ``data=MarsStore``;
    ``restart = True`` so that Dask restarts the workers when it is registered."""
    from distributed.diagnostics.plugin import NannyPlugin

    class MarsStoreInstaller(NannyPlugin):
        name = "mars-dask-store"
        restart = True
        idempotent = True

        def setup(self, nanny):
            from ._nanny import install_store

            install_store(nanny)

    return MarsStoreInstaller()


def install(client, *, store: bool = False) -> dict:
    """Install mars_dask on the running cluster of ``client``.

    What ``client.register_plugin`` can install: the scheduler plugin (quota admission,
    OOM handling, recovery ordering; it registers the worker plugin on every worker) and
    the nanny exit monitor. What it cannot install without restarting the worker
    processes: the store (``Worker.data`` is fixed when a worker starts). With
    ``store=True`` the workers are restarted with ``MarsStore`` (results they held are
    lost, as with ``client.restart()``); otherwise a warning says so. Returns what was
    installed.
    """
    from ._nanny import MarsNannyPlugin
    from ._scheduler import MarsSchedulerPlugin

    done = {"scheduler": False, "nanny": False, "store": False}
    client.register_plugin(MarsSchedulerPlugin())
    done["scheduler"] = True
    has_nannies = any(w.get("nanny") for w in client.scheduler_info()["workers"].values())
    if has_nannies:
        client.register_plugin(MarsNannyPlugin())
        done["nanny"] = True
    if store and has_nannies:
        client.register_plugin(_store_installer())
        done["store"] = True
    else:
        warnings.warn(
            "mars_dask.install: the node-local store (results that survive a worker process "
            "restart) cannot be added to running worker processes; start the workers with "
            "`dask worker ADDR --nanny --preload mars_dask --preload-nanny mars_dask`, or call "
            "install(client, store=True) to restart them with it (their data is lost)"
            + ("" if has_nannies else "; this cluster has no nannies, so it cannot restart them"),
            PluginsNotInstalledWarning,  # a RuntimeWarning
            stacklevel=2,
        )
    return done


#: scheduler addresses already checked by warn_if_not_installed (warned, or found installed)
_checked: set[str] = set()
_checked_lock = threading.Lock()

_MISSING = (
    "mars_dask: the scheduler {address} has no mars_dask plugin ({name!r}): mars_dask work "
    "runs there as plain Dask tasks, without memory quota admission, OOM handling, Mars "
    "ordering, worker restart without data loss, scheduler failover or the node-local "
    "store. To add the plugins to the running cluster call "
    "mars_dask.plugins.install(client) (the store cannot be added to running worker "
    "processes: install(client, store=True) restarts them with it, losing the data they "
    "hold). Or start the cluster with them: `dask scheduler --preload mars_dask` and "
    "`dask worker ADDR --nanny --preload mars_dask --preload-nanny mars_dask`; for a "
    "LocalCluster pass scheduler_kwargs={{'preload': ['mars_dask']}}, "
    "preload=['mars_dask'], preload_nanny=['mars_dask']; or create no Client and "
    "execute() starts an embedded cluster with everything installed. (Warned once per "
    "scheduler; category mars_dask.errors.PluginsNotInstalledWarning.)"
)


def warn_if_not_installed(client, *, stacklevel: int = 2) -> bool | None:
    """Warn once per scheduler address if the scheduler of ``client`` has no mars_dask
    plugin: a :class:`~mars_dask.errors.PluginsNotInstalledWarning` (filterable) and a
    warning on the ``mars_dask.plugins`` logger, both saying what is missing and how to
    install it. Called by every ``execute()``; only the first one per scheduler asks it
    (one ``run_on_scheduler`` round trip).

    Returns whether the plugin is there (``None``: not asked now -- already checked,
    the client is not connected, or the scheduler would not answer, e.g.
    ``distributed.scheduler.pickle`` is off, in which case nothing is said).
    """
    address = getattr(getattr(client, "scheduler", None), "address", None)
    if address is None or getattr(client, "asynchronous", False) or client.status != "running":
        return None  # not connected now (e.g. reconnecting): ask on a later execute()
    with _checked_lock:
        if address in _checked:
            return None
        _checked.add(address)
    name = PLUGIN_NAME
    try:
        # a lambda travels by value: the scheduler need not be able to import mars_dask
        installed = bool(client.run_on_scheduler(lambda dask_scheduler: name in dask_scheduler.plugins))
    except Exception:  # noqa: BLE001 - e.g. run_on_scheduler refused: cannot tell, say nothing
        logger.debug("could not ask the scheduler %s for the mars_dask plugin", address, exc_info=True)
        return None
    if not installed:
        msg = _MISSING.format(address=address, name=name)
        logger.warning("%s", msg)
        warnings.warn(msg, PluginsNotInstalledWarning, stacklevel=stacklevel + 1)
    return installed
