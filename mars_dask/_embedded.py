"""The embedded cluster, and which Client ``execute()`` uses.

Why a room of its own: starting, owning and stopping mars_dask's embedded ``LocalCluster``
(and the rule that decides between it and the user's Client) is process-wide state with its
own lock and its own lifetime (``atexit``), unrelated to how a graph is submitted.

``get_client()``: the current default Client, otherwise the embedded cluster's, started
once (sized to the machine, with mars_dask's plugins and store installed as the CLI
preloads install them) and reused.

A Client that was *closed* (``client.close()``, or a client that gave up reconnecting) is
not replaced silently: once ``execute()`` / ``fetch()`` have used a Client, they raise
:class:`ClientClosedError` after it closed (unless another Client is the default by then)
instead of starting the embedded cluster in its place; ``start_embedded_cluster()`` starts
it explicitly. A client that lost its scheduler and is reconnecting is still in use.

The embedded cluster listens on the loopback interface only: scheduler, nannies and workers
on 127.0.0.1, and the dashboard on 127.0.0.1 too when ``mars-dask.embedded.dashboard-address``
names no host (``":8787"``; another free port on 127.0.0.1 when 8787 is taken).

Public names are re-exported by :mod:`mars_dask.session` (and :mod:`mars_dask`), where
they have always been importable from.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import threading
import weakref

import dask.config
from dask.utils import parse_timedelta
from distributed import Client, LocalCluster
from distributed.client import default_client
from distributed.utils import clean_dashboard_address

from . import _dask_internals as DI
from . import config
from .errors import ClientClosedError

# the session's logger, as before the split (one name to configure for the whole session)
logger = logging.getLogger("mars_dask.session")

_lock = threading.Lock()
_embedded: tuple[LocalCluster, Client] | None = None
#: the Client that get_client() last handed out (weakly: the user owns it) and a description
#: of it taken while it was open (a closed Client no longer knows its scheduler)
_current: tuple[weakref.ref, str] | None = None

#: Client.status values of a client that was closed or is closing (not "connecting": that one
#: lost its scheduler and is trying to reconnect, and is still in use)
_CLOSED = ("closing", "closed")
#: the embedded cluster listens here only (scheduler, nannies, workers; the dashboard too
#: when its configured address names no host)
LOOPBACK = "127.0.0.1"


_WHAT_TO_DO = (
    "mars_dask does not start a new cluster in its place. Create a new distributed.Client "
    "(it becomes the default that execute() uses), or start mars_dask's embedded local "
    "cluster explicitly with mars_dask.start_embedded_cluster(); tileables executed "
    "through the closed client lost their results: execute them again"
)


# client -> its description, taken while it was open (Client.close() forgets the scheduler)
_descriptions: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _describe(client: Client) -> str:
    addr = getattr(getattr(client, "scheduler", None), "address", None)
    if addr is None:
        try:
            return _descriptions[client]
        except (KeyError, TypeError):
            pass
    what = "the embedded cluster's " if _embedded is not None and _embedded[1] is client else ""
    desc = f"{what}{getattr(client, 'id', '?')} (scheduler {addr or 'unknown'})"
    if addr is not None:
        try:
            _descriptions[client] = desc
        except TypeError:  # not weakly referenceable (a stand-in)
            pass
    return desc


def _remember(client: Client) -> None:
    global _current
    if _current is None or _current[0]() is not client:
        _current = (weakref.ref(client), _describe(client))


def _closed_current() -> str | None:
    """The description of the client get_client() last handed out, if it has been closed
    since (or is gone: a Client that was garbage-collected was closed by its finalizer)."""
    if _current is None:
        return None
    ref, desc = _current
    c = ref()
    if c is None or c.status in _CLOSED:
        return desc
    return None


def _closed_error(desc: str, what: str = "") -> ClientClosedError:
    return ClientClosedError(
        f"{what or 'the distributed Client that mars_dask was using'}, {desc}, has been closed "
        f"(client.close(), or it lost its scheduler and gave up reconnecting): {_WHAT_TO_DO}"
    )


def _loopback_dashboard_address(address):
    """``mars-dask.embedded.dashboard-address`` with 127.0.0.1 where it names no host
    (``":8787"``, ``"8787"``, ``8787``, ``""``): Dask binds such an address on every interface.
    An address with a host is kept (the user chose it); ``None``/``False``: no dashboard."""
    if address is None or address is False:
        return None
    try:
        parsed = clean_dashboard_address(address)
    except Exception:  # noqa: BLE001 - not ours to judge: LocalCluster reports it
        return address
    out = [f"{a['address'] or LOOPBACK}:{a['port']}" for a in parsed]
    return out[0] if len(out) == 1 else out



class _EmbeddedCluster(LocalCluster):
    """The embedded ``LocalCluster``, which never gives up on a nanny that is alive.

    ``SpecCluster._update_worker_status`` closes a worker's nanny for good when no worker of
    that name is back within ``distributed.deploy.lost-worker-timeout`` (15 s) of its
    removal, and the job then waits forever with fewer (or zero) workers. Here the nanny,
    which restarts its process on its own, is left alone; a nanny that did close is
    replaced (its spec is still in ``worker_spec``, so ``_correct_state`` starts a new one):
    the embedded cluster keeps its size (change it with ``cluster.scale``, which removes
    the spec first). Private: ``SpecCluster._update_worker_status`` of distributed 2026.8.
    """

    def _update_worker_status(self, op, msg):
        if not DI.enabled("embedded-cluster-respawn"):
            return super()._update_worker_status(op, msg)
        if op == "remove":
            name = self.scheduler_info["workers"].get(msg, {}).get("name")
            delay = parse_timedelta(dask.config.get("distributed.deploy.lost-worker-timeout"))

            def check(tries=60):
                from distributed.core import Status

                w = self.workers.get(name)
                if self.status != Status.running or w is None:
                    return
                st = getattr(w, "status", None)
                if st in (Status.closing, Status.closing_gracefully) and tries > 0:
                    asyncio.get_running_loop().call_later(1.0, check, tries - 1)
                    return
                if st not in (Status.closed, Status.failed):
                    return
                if any(d["name"] == name for d in self.scheduler_info["workers"].values()):
                    return
                logger.warning("embedded cluster: worker %s and its nanny are gone; starting a new one", name)
                del self.workers[name]
                task = self._correct_state()
                task.add_done_callback(
                    lambda t: t.cancelled() or t.exception() is None
                    or logger.warning("embedded cluster: could not replace worker %s: %r", name, t.exception()))

            if name is not None:
                asyncio.get_running_loop().call_later(delay, check)
        # skip SpecCluster's version (the timed close), keep Cluster's bookkeeping
        DI.cluster_worker_status(self, op, msg)


def start_embedded_cluster() -> Client:
    """Start (once) the embedded ``LocalCluster`` used when no Client exists, and return its
    Client (the default Client from then on).

    ``execute()`` calls this when no Client was ever used; after the Client in use was
    closed it raises :class:`ClientClosedError` instead, and this is how to get the
    embedded cluster explicitly (an embedded cluster whose client the user closed is
    replaced). It listens on 127.0.0.1 only (see the module docstring)."""
    global _embedded
    with _lock:
        if _embedded is not None and _embedded[1].status in _CLOSED:
            old_cluster, _ = _embedded
            _embedded = None
            try:
                old_cluster.close()
            except Exception:  # noqa: BLE001 - already closing with its client
                logger.debug("closing the previous embedded cluster", exc_info=True)
        if _embedded is None:
            kwargs = {}
            for opt, kw in [("n-workers", "n_workers"), ("threads-per-worker", "threads_per_worker")]:
                v = config.get(f"embedded.{opt}")
                if v is not None:
                    kwargs[kw] = v
            # the same installation as the CLI: --preload mars_dask on the scheduler and
            # the workers, --preload-nanny mars_dask (MarsStore + exit monitor)
            cluster = _EmbeddedCluster(
                host=LOOPBACK,  # scheduler, nannies and workers: loopback only
                memory_limit=config.get("embedded.memory-limit"),
                dashboard_address=_loopback_dashboard_address(config.get("embedded.dashboard-address")),
                scheduler_kwargs={"preload": ["mars_dask"]},
                preload=["mars_dask"],
                preload_nanny=["mars_dask"],
                **kwargs,
            )
            client = Client(cluster, set_as_default=True)
            logger.info("started embedded cluster %s (dashboard %s)", cluster.scheduler_address, client.dashboard_link)
            _embedded = (cluster, client)
            atexit.register(stop_embedded_cluster)
        client = _embedded[1]
        _remember(client)
        return client


def stop_embedded_cluster() -> None:
    """Close the embedded cluster (at exit too); a later ``execute()`` without a Client
    starts a new one (this is mars_dask's own call, not a Client the user closed)."""
    global _embedded, _current
    with _lock:
        if _embedded is not None:
            cluster, client = _embedded
            _embedded = None
            if _current is not None and _current[0]() is client:
                _current = None
            client.close()
            cluster.close()


def get_client() -> Client:
    """The current default Client, or the embedded cluster's (started the first time).

    Raises :class:`ClientClosedError` when the Client this returned before (the embedded
    cluster's included) has been closed and no other Client is the default now: nothing is
    started in its place."""
    try:
        c = default_client()
    except ValueError:
        c = None
    if c is not None and c.status not in _CLOSED:
        _remember(c)
        return c
    if c is not None:  # a closed client still current in this context (Client.as_current)
        raise _closed_error(_describe(c), "the current distributed Client")
    desc = _closed_current()
    if desc is None and _embedded is not None and _embedded[1].status in _CLOSED:
        desc = _describe(_embedded[1])
    if desc is not None:
        raise _closed_error(desc)
    return start_embedded_cluster()
