"""Running tileables on a Dask cluster: ``execute``, ``fetch`` and the embedded cluster.

The session is a thin layer over a ``distributed.Client``: the current default client if
there is one, otherwise an embedded ``LocalCluster`` started once (sized to the machine,
with mars_dask's plugins installed) and reused.  Executed chunks keep their Dask Futures;
the tileable owns its chunks, so dropping the tileable releases the data on the cluster.

Scheduler loss: when the scheduler dies the Client cancels every Future (reason
``scheduler-connection-lost``) and tries to reconnect to the same address. ``execute()``,
``fetch()`` and the shape queries of iterative tiling notice it, wait for the client to
reconnect (``mars-dask.session.reconnect-timeout``, then :class:`MarsDaskError`) and for
the workers to rejoin (``mars-dask.session.rejoin-wait``: each restarted worker has listed
what its store holds to the new scheduler), and resubmit: every chunk needed whose Future
is dead -- including inputs executed by earlier ``execute()`` calls -- is emitted again from
the client-side chunk graph, with the same keys and recipes, so the new scheduler finds the
results the workers still hold (and its journal) instead of recomputing them.

A Client that was *closed* (``client.close()``, or a client that gave up reconnecting) is
not replaced silently: once ``execute()`` / ``fetch()`` have used a Client, they raise
:class:`ClientClosedError` after it closed (unless another Client is the default by then)
instead of starting the embedded cluster in its place; ``start_embedded_cluster()`` starts
it explicitly. A client that lost its scheduler and is reconnecting is still in use.

The embedded cluster listens on the loopback interface only: scheduler, nannies and workers
on 127.0.0.1, and the dashboard on 127.0.0.1 too when ``mars-dask.embedded.dashboard-address``
names no host (``":8787"``; another free port on 127.0.0.1 when 8787 is taken).
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import threading
import time
import weakref
from typing import Sequence

import dask.config
import numpy as np
from dask.utils import parse_timedelta
from distributed import Client, Future, LocalCluster, wait
from distributed.client import FuturesCancelledError, default_client
from distributed.comm import CommClosedError
from distributed.deploy.cluster import Cluster
from distributed.utils import clean_dashboard_address

from . import config
from .errors import ClientClosedError, MarsDaskError
from .tiling.core import Chunk, TileableData, bump_execution_epoch, has_unknown
from .tiling.emit import build_graph
from .tiling.tile import tile

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


def _shape_of(x) -> tuple:
    return tuple(getattr(x, "shape", ()))


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
        Cluster._update_worker_status(self, op, msg)


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


class _ChunkCollection:
    """A minimal Dask collection around an emitted graph, so that submission goes through
    ``Client.persist`` (public API, annotations included)."""

    def __init__(self, graph, keys):
        self._graph = graph
        self._keys = keys

    def __dask_graph__(self):
        return self._graph

    def __dask_keys__(self):
        return self._keys

    def __dask_layers__(self):
        return tuple(self._graph.layers)

    def __dask_tokenize__(self):
        return tuple(self._keys)

    @staticmethod
    def __dask_optimize__(dsk, keys, **kwargs):
        return dsk

    def __dask_postpersist__(self):
        return _futures_of, (self._keys,)

    def __dask_postcompute__(self):
        return list, ()


def _futures_of(dsk, keys, rename=None):
    return {k: dsk[k] for k in keys}


#: Client.cancel's reason for every Future when the client loses the scheduler
#: (distributed 2026.8, Client._reconnect)
LOST_REASON = "scheduler-connection-lost"
#: the event topic each worker logs on once it rejoined (mars_dask.plugins._worker)
REJOIN_TOPIC = "mars-worker-rejoin"

# client -> the largest worker count seen on its scheduler (to know how many should rejoin)
_n_workers: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class _SchedulerLost(Exception):
    """Internal: the scheduler connection was lost during an operation."""


class _Vanished(Exception):
    """Internal: a chunk's weakly held Future was released meanwhile (resubmit it)."""


def _dead(f) -> bool:
    """A Future that no longer stands for data on the cluster (cancelled: the client lost
    the scheduler, or the key was cancelled)."""
    return f.status == "cancelled"


def _lost_by_disconnect(f) -> bool:
    # private: FutureState.exception is the FutureCancelledError with Client's reason
    exc = getattr(getattr(f, "_state", None), "exception", None)
    return getattr(exc, "reason", None) == LOST_REASON


def _revive(outputs: Sequence[Chunk]) -> list[tuple[Chunk, Future]]:
    """Unbind the dead Futures of ``outputs`` and of everything they are built from (down
    to chunks whose Futures are alive), so that the next emission rebuilds them from the
    chunk graph with the same keys and recipes. Returns ``(chunk, its dead Future)``."""
    revived = []
    seen = set()
    stack = list(outputs)
    while stack:
        c = stack.pop()
        k = c.key
        if k in seen:
            continue
        seen.add(k)
        f = c.future
        if f is not None:
            if not _dead(f):
                continue  # alive
            # rebuilt from its recipe, or (lineage cut at a checkpoint: Chunk.cut_lineage)
            # requested by key from the scheduler, whose journal knows how to restore it
            c.future = None
            revived.append((c, f))
        stack.extend(c.inputs)
    return revived


class Session:
    """Executes chunk graphs on one ``Client``."""

    def __init__(self, client: Client | None = None):
        self.client = client or get_client()
        self._check_open()
        _describe(self.client)  # noted while open, for the errors after a close

    def _check_open(self, chunks: Sequence[Chunk] = ()) -> None:
        """Raise :class:`ClientClosedError` if this session's client, or the client that
        executed one of ``chunks``, has been closed (a reconnecting client is still open)."""
        if self.client.status in _CLOSED:
            raise _closed_error(_describe(self.client), "this session's distributed Client")
        for c in chunks:
            f = c.future
            fc = getattr(f, "client", None)
            if fc is not None and fc is not self.client and fc.status in _CLOSED:
                raise ClientClosedError(
                    f"chunk {c.key!r} was executed through {_describe(fc)}, which has been "
                    f"closed since: its result is gone. Execute the tileable again (on the "
                    f"current Client, {_describe(self.client)}) before fetching it"
                )

    def cut_lineage(self, chunks: Sequence[Chunk]) -> None:
        """Checkpointed chunks forget their recipe on the client too, if the scheduler
        journals lineage (mars_dask's failover plugin); otherwise nothing could rebuild
        them after a loss."""
        if _has_failover(self.client):
            for c in chunks:
                c.cut_lineage()

    # -- scheduler loss ------------------------------------------------------------------
    def _note_workers(self) -> None:
        # private: the Client's cached scheduler identity (refreshed every few seconds)
        n = (getattr(self.client, "_scheduler_identity", None) or {}).get("n_workers") or 0
        if n > _n_workers.get(self.client, 0):
            _n_workers[self.client] = n

    def _connected(self) -> bool:
        return self.client.status == "running"

    def _recover_connection(self, deadline: float | None = None) -> None:
        """After a scheduler loss: wait for the client to reconnect (or fail clearly), then
        give the workers a bounded time to rejoin with what their stores hold."""
        c = self.client
        timeout = parse_timedelta(config.get("session.reconnect-timeout"))
        if deadline is None:
            deadline = time.monotonic() + timeout
        address = getattr(getattr(c, "scheduler", None), "address", None)
        t0 = time.monotonic()
        if not self._connected():
            logger.warning("lost the scheduler %s: waiting up to %.0f s for it to come back", address, timeout)
        while not self._connected():
            if c.status in ("closing", "closed") or time.monotonic() > deadline:
                raise MarsDaskError(
                    f"lost the connection to the scheduler {address} and could not reconnect "
                    f"within {timeout:.0f} s (mars-dask.session.reconnect-timeout; the Client "
                    f"itself gives up after its `timeout`): the results of this job are lost"
                )
            time.sleep(0.05)
        rejoin = parse_timedelta(config.get("session.rejoin-wait"))
        want = _n_workers.get(c, 0)
        end = min(time.monotonic() + rejoin, deadline)
        while True:
            if not self._connected():  # lost again while waiting
                return self._recover_connection(deadline)
            try:
                info = c.scheduler_info(n_workers=-1)
                workers = set(info["workers"])
                joined = {m.get("worker") for _, m in c.get_events(REJOIN_TOPIC) if isinstance(m, dict)}
            except Exception:  # noqa: BLE001 - lost again: see above
                workers, joined = set(), set()
            if workers and len(workers) >= want and workers <= joined:
                break
            if time.monotonic() > end:
                logger.warning("resubmitting with %d of %d workers rejoined", len(workers & joined), want)
                break
            time.sleep(0.1)
        if time.monotonic() - t0 > 0.5:
            logger.warning("reconnected to %s after %.1f s, %d workers; resubmitting lost work",
                           address, time.monotonic() - t0, len(workers))

    def _is_loss(self, exc: BaseException, futures=()) -> bool:
        """Did ``exc`` come from losing the scheduler (rather than from a kernel)?"""
        if not self._connected():
            return True  # reconnecting, or closed (then _recover_connection raises)
        if isinstance(exc, CommClosedError):
            return True
        return any(f is not None and _lost_by_disconnect(f) for f in futures)

    def _wait_all(self, futs, deadline_holder: list) -> None:
        """``distributed.wait`` that cannot hang on a client that never reconnects."""
        timeout = parse_timedelta(config.get("session.reconnect-timeout"))
        while True:
            try:
                wait(futs, timeout=1.0)
                return
            except FuturesCancelledError:
                return  # all done, some cancelled: the caller looks at why
            except TimeoutError:
                st = self.client.status
                if st == "running":
                    deadline_holder[0] = None
                    continue
                if st in ("closing", "closed"):
                    raise _SchedulerLost()
                if deadline_holder[0] is None:
                    deadline_holder[0] = time.monotonic() + timeout
                elif time.monotonic() > deadline_holder[0]:
                    raise _SchedulerLost()

    # -- execution -------------------------------------------------------------------
    def submit_chunks(self, chunks: Sequence[Chunk], checkpoint: bool = False) -> None:
        """Submit the graph computing ``chunks`` (only the part not executed or lost),
        wait for it, and bind each chunk to its Future.  A failing kernel raises its own
        exception; a lost scheduler is waited for and the lost part resubmitted.
        ``checkpoint``: ``chunks`` are lineage boundaries written to durable storage."""
        chunks = list(dict.fromkeys(chunks))
        pending: dict = {}  # chunks submitted by this call (not known finished yet)
        while True:
            self._note_workers()
            revived = _revive(chunks)
            if any(_lost_by_disconnect(f) for _, f in revived):
                self._recover_connection()
            todo = [c for c in chunks if c.future is None]
            if checkpoint:
                for c in todo:
                    if c.boundary is None:
                        c.boundary = "checkpoint"
            # chunks executed before (by this or earlier graphs) and lost are outputs again:
            # their tileables hold them, as before the loss
            out = {c.key for c in todo}
            todo += [c for c, _ in revived if c.future is None and c.key not in out]
            del revived
            if todo:
                graph = build_graph(todo, fuse=config.get("tiling.fuse", True))
                keys = [c.key for c in todo]
                try:
                    futures = self.client.persist(_ChunkCollection(graph, keys))
                except Exception as e:
                    if not self._is_loss(e):
                        raise
                    self._recover_connection()
                    continue
                del graph
                for c in todo:
                    c.future = futures[c.key]
                    pending[c] = None
                del futures
                bump_execution_epoch()
            if not pending:
                return
            try:
                self._wait(list(pending))
                return
            except _SchedulerLost:
                self._recover_connection()
            except _Vanished:
                pending = {c: None for c in pending if c.future is not None}

    def _wait(self, chunks: Sequence[Chunk]) -> None:
        futs = [c.future for c in chunks]
        if any(f is None for f in futs):
            raise _Vanished()
        holder = [None]
        self._wait_all(futs, holder)
        for c in chunks:
            f = c.future
            if f is None:
                raise _Vanished()
            if f.status != "finished":
                if any(_lost_by_disconnect(c2.future) for c2 in chunks) or (
                    not self._connected() and self.client.status not in ("closing", "closed")
                ):
                    raise _SchedulerLost()
                for c2 in chunks:
                    if c2.future is not None and c2.future.status != "finished":
                        c2.future = None
                bump_execution_epoch()
                if self.client.status in ("closing", "closed") and f.status == "cancelled":
                    raise MarsDaskError(
                        f"the client closed (it lost the scheduler and did not reconnect within "
                        f"its timeout) while waiting for {f.key!r}"
                    )
                f.result()  # raises the kernel's original exception

    def _retrying(self, chunks: Sequence[Chunk], fn):
        """``fn()`` (a client call on the Futures of ``chunks``), resubmitting lost chunks
        and retrying if the scheduler is lost meanwhile."""
        while True:
            self.submit_chunks(chunks)  # nothing to do unless something was lost
            try:
                return fn()
            except Exception as e:
                if not self._is_loss(e, [c.future for c in chunks]):
                    raise
                self._recover_connection()

    def fill_shapes(self, chunks: Sequence[Chunk]) -> None:
        """Fetch the real shapes of executed chunks (only the shapes come back)."""
        chunks = [c for c in chunks if has_unknown(c.shape)]
        if not chunks:
            return

        def shapes():
            return self.client.gather(
                self.client.map(_shape_of, [c.future for c in chunks], pure=False)
            )

        for c, s in zip(chunks, self._retrying(chunks, shapes)):
            c.shape = tuple(s)
            if c.nbytes is not None and np.isnan(c.nbytes):
                c.nbytes = None

    def run_for_meta(self, chunks: Sequence[Chunk]) -> None:
        """Iterative tiling's callback: execute ``chunks`` and learn their shapes."""
        self.submit_chunks(chunks)
        self.fill_shapes(chunks)

    def tile(self, datas: Sequence[TileableData]) -> None:
        tile(datas, self.run_for_meta)

    def execute(self, datas: Sequence[TileableData], checkpoint: bool = False) -> None:
        self._check_open()
        self.tile(datas)
        chunks = [c for d in datas for c in d.chunks]
        self.submit_chunks(chunks, checkpoint=checkpoint)
        self.fill_shapes(chunks)
        for d in datas:
            if has_unknown(d.shape) or any(has_unknown(s) for s in d.nsplits):
                d.refresh_nsplits()

    def gather(self, data: TileableData) -> list:
        chunks = data.chunks
        # a result whose client was closed is gone: say so rather than recompute it here
        self._check_open(chunks)
        return self._retrying(chunks, lambda: self.client.gather([c.future for c in chunks]))


_failover_known: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _has_failover(client) -> bool:
    if client not in _failover_known:
        def probe(dask_scheduler):
            p = dask_scheduler.plugins.get("mars-dask")
            return getattr(p, "failover", None) is not None

        try:
            _failover_known[client] = bool(client.run_on_scheduler(probe))
        except Exception:  # noqa: BLE001 - e.g. run_on_scheduler not allowed: keep lineage
            _failover_known[client] = False
    return _failover_known[client]


def get_session() -> Session:
    return Session(get_client())


def execute(*tileables, session: Session | None = None, checkpoint: bool = False, **kwargs):
    """Execute tileables in one graph; returns the tileable (or a list of them), now
    holding its data on the cluster, as Mars's ``execute`` does.

    ``checkpoint=True``: the tileables' chunks are lineage boundaries (annotated
    ``mars_boundary="checkpoint"``): the failover plugin writes them to durable storage
    (``mars-dask.failover.checkpoint-directory``) and recovery starts from there instead of
    re-running what they were computed from."""
    if not tileables:
        raise TypeError("execute() needs at least one tileable")
    if len(tileables) == 1 and isinstance(tileables[0], (list, tuple)):
        tileables = tuple(tileables[0])
    session = session or get_session()
    datas = [t.data for t in tileables]
    session.execute(datas, checkpoint=checkpoint)
    # each executed tileable now owns its results (TileableData.seal: the chunk graph
    # holds them weakly), so iterative jobs free what they no longer use
    chunks = [c for d in datas for c in d.chunks]
    for d in datas:
        d.seal()
    if checkpoint:
        session.cut_lineage(chunks)
    return tileables[0] if len(tileables) == 1 else list(tileables)


def fetch(*tileables, session: Session | None = None):
    """numpy/pandas results of executed tileables."""
    res = [t.fetch(session=session) for t in tileables]
    return res[0] if len(res) == 1 else res


__all__ = ["ClientClosedError", "Session", "execute", "fetch", "get_client", "get_session",
           "start_embedded_cluster", "stop_embedded_cluster", "Future"]
