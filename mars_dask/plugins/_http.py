"""Read-only JSON routes on the scheduler's HTTP server (the one serving the dashboard):
what Mars is doing, for people, scripts and monitoring.

``GET http://HOST:DASHBOARD_PORT/api/mars/v1/...`` answers ``{"version": 1, ...}``:

- ``tileables``: per ``execute()`` call, newest first, each tileable's operand, chunks
  done / total / erred, bytes held, elapsed time and state (``_tileables.py``);
- ``quota``: per worker its ``mars-memory`` quota, what executing tasks reserved, its
  measured memory; the tasks waiting for admission with their estimates
  (``Quota.report``);
- ``store``: per worker the node-local store's bytes in memory / shared memory / disk,
  write-behind backlog and spill I/O (``MarsStore.stats``), asked of the workers when the
  route is requested (``scheduler.broadcast`` to a worker handler), not shipped all the
  time;
- ``failover``: what :func:`mars_dask.failover_report` returns (``null`` without the
  failover plugin), the restart-recovery counters and the recent ``mars-failover`` events.

A scheduler without the mars_dask plugin answers 404 with ``{"version": 1, "error": ...}``.

How the routes are registered, and why. Distributed builds its HTTP server's routes in
``Scheduler.__init__`` from the modules listed in ``distributed.scheduler.http.routes``
(each exposing ``routes = [(pattern, handler, kwargs)]``; ``get_handlers`` adds the
``dask_server`` keyword and the ``--dashboard-prefix``). It imports the ``--preload``
modules earlier in that same ``__init__`` (``preloading.process_preloads`` runs before the
routes are read: checked on 2026.6-2026.8), so importing mars_dask appends this module to
that list (:func:`register_routes`, called by ``mars_dask.plugins``) and every scheduler
built afterwards serves the routes: ``dask scheduler --preload mars_dask``, a
``LocalCluster`` with ``scheduler_kwargs={"preload": ["mars_dask"]}`` and the embedded
cluster (checked by tests/worker/test_status_routes.py). A scheduler whose HTTP server
was built before mars_dask was imported, or without this module in the list (the plugin
installed on a running cluster with ``mars_dask.plugins.install(client)``), gets the same
handlers from the plugin's ``start`` through tornado's public
``scheduler.http_application.add_handlers`` (:func:`add_routes`), at the root: the
dashboard prefix is not known there.
"""

from __future__ import annotations

import asyncio
import json
import logging

import dask.config
from dask.utils import parse_timedelta
from tornado import web

from .. import config
from . import _protocol as P

logger = logging.getLogger("mars_dask.plugins")

VERSION = 1
#: the config list distributed builds the scheduler's routes from
ROUTES_KEY = "distributed.scheduler.http.routes"
BASE = "api/mars/v1/"
#: the dashboard page (``/mars``, ``_pages``) linked in the dashboard's top bar
NAV_PAGE = "mars"
#: events of the failover plugin returned by the failover route (the latest)
EVENTS = 100


def _jsonable(o):
    """``json.dumps`` default: sets as lists, numpy scalars as numbers, anything else as
    its ``str`` (keys, addresses, exceptions)."""
    if isinstance(o, (set, frozenset)):
        return list(o)
    item = getattr(o, "item", None)
    if callable(item):
        try:
            return item()
        except (TypeError, ValueError):
            pass
    return str(o)


async def tileables_answer(scheduler, plugin) -> dict:
    return plugin.tracker.report()


async def quota_answer(scheduler, plugin) -> dict:
    return plugin.quota.report(plugin.recovery.executing)


async def store_answer(scheduler, plugin) -> dict:
    return {"workers": await ask_workers(scheduler, P.OP_STORE_STATS)}


async def failover_answer(scheduler, plugin) -> dict:
    f = plugin.failover
    stats = None
    if f is not None:
        # Failover.stats waits (up to 2 s) for the journal writer: drain it off the loop
        await asyncio.to_thread(f.flush, 2.0)
        stats = f.stats(wait=0)
    events = [{"time": t, **(e if isinstance(e, dict) else {"event": e})}
              for t, e in list(scheduler.get_events(P.EVENT_TOPIC))[-EVENTS:]]
    return {"failover": stats, "restart": dict(plugin.recovery.counts), "events": events}


#: route name -> the answer's builder (the JSON routes below and the pages of ``_pages``)
ANSWERS = {"tileables": tileables_answer, "quota": quota_answer, "store": store_answer,
           "failover": failover_answer}


class _Route(web.RequestHandler):
    """A GET answering ``{"version": 1, **ANSWERS[name](scheduler, plugin)}`` as JSON."""

    def initialize(self, dask_server=None, name=""):
        self.server = dask_server
        self.name = name

    async def get(self):
        plugin = self.server.plugins.get(P.PLUGIN_NAME)
        if plugin is None or not hasattr(plugin, "tracker"):  # absent, or not started
            self.set_status(404)
            body = {"error": f"the scheduler has no started mars_dask plugin ({P.PLUGIN_NAME!r})"}
        else:
            body = await ANSWERS[self.name](self.server, plugin)
        self.set_header("Content-Type", "application/json")
        self.write(json.dumps({"version": VERSION, **body}, default=_jsonable))


async def ask_workers(scheduler, op: str) -> dict:
    """``{address: answer}`` of handler ``op`` on every worker; a worker that fails or does
    not answer within ``mars-dask.dashboard.worker-timeout`` gets ``{"error": ...}``."""
    timeout = parse_timedelta(config.get("dashboard.worker-timeout"))

    async def one(addr):
        try:
            got = await asyncio.wait_for(
                scheduler.broadcast(msg={"op": op}, workers=[addr], on_error="raise"), timeout)
            return got[addr]
        except asyncio.TimeoutError:
            return {"error": f"no answer within {timeout} s"}
        except Exception as e:  # noqa: BLE001 - e.g. a plain Dask worker: no such handler
            return {"error": f"{type(e).__name__}: {e}"}

    addrs = list(scheduler.workers)
    return dict(zip(addrs, await asyncio.gather(*(one(a) for a in addrs))))


#: what distributed's get_handlers reads from every module in distributed.scheduler.http.routes
routes: list[tuple] = [(BASE + name, _Route, {"name": name}) for name in ANSWERS]
#: the modules listed in ``distributed.scheduler.http.routes``: these routes, and the
#: dashboard pages (``_pages``: imported only while a scheduler is built, see its docstring)
ROUTE_MODULES = (__name__, __name__.rpartition(".")[0] + "._pages")


def routes_in_config() -> bool:
    """This module is in ``distributed.scheduler.http.routes`` (schedulers built now serve
    the routes and the pages)."""
    return __name__ in (dask.config.get(ROUTES_KEY, default=None) or ())


def register_routes() -> None:
    """Append :data:`ROUTE_MODULES` to ``distributed.scheduler.http.routes`` (at import of
    mars_dask, i.e. when a ``--preload mars_dask`` is processed: before the scheduler reads
    the list)."""
    listed = list(dask.config.get(ROUTES_KEY, default=None) or ())
    missing = [m for m in ROUTE_MODULES if m not in listed]
    if missing:
        dask.config.set({ROUTES_KEY: [*listed, *missing]})


def add_routes(scheduler) -> bool:
    """Add the routes to a scheduler whose HTTP server was built without them (see the
    module docstring). Returns whether there was an HTTP server to add them to."""
    app = getattr(scheduler, "http_application", None)
    if app is None:
        return False
    app.add_handlers(r".*$", [("/" + pattern, cls, {**kw, "dask_server": scheduler}) for pattern, cls, kw in routes])
    logger.info("mars_dask status routes added to the running HTTP server: /%s{tileables,quota,store,failover}", BASE)
    return True
