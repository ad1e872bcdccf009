"""Running tileables on a Dask cluster: ``execute`` and ``fetch``.

The session is a thin layer over a ``distributed.Client``: the current default client if
there is one, otherwise mars_dask's embedded ``LocalCluster``. Executed chunks keep their
Dask Futures; the tileable owns its chunks, so dropping the tileable releases the data on
the cluster.

This module holds the execute/fetch path (tiling, emitting a graph, submitting it through
``Client.persist``, binding chunks to their Futures). Its two other jobs have rooms of
their own, and their public names stay importable from here:

- :mod:`mars_dask._embedded`: the embedded cluster and which Client is used
  (``get_client``, ``start_embedded_cluster``, ``stop_embedded_cluster``; a closed Client
  is not replaced silently: :class:`ClientClosedError`);
- :mod:`mars_dask._reconnect`: following a Client through the loss of its scheduler
  (wait for it to reconnect and for the workers to rejoin, then resubmit what was lost
  with the same keys and recipes).

The first ``execute()`` on a scheduler without mars_dask's plugin warns once
(:class:`~mars_dask.errors.PluginsNotInstalledWarning`; see
:func:`mars_dask.plugins.install`).
"""

from __future__ import annotations

import contextvars
import logging
import uuid
import weakref
from typing import NamedTuple, Sequence

import numpy as np
from distributed import Client, Future

from . import _embedded as _embedded_room
from . import _progress, config
from ._embedded import (  # noqa: F401  (the session's names, as before the split)
    _CLOSED,
    _WHAT_TO_DO,
    LOOPBACK,
    _closed_current,
    _closed_error,
    _describe,
    _descriptions,
    _EmbeddedCluster,
    _lock,
    _loopback_dashboard_address,
    _remember,
    get_client,
    start_embedded_cluster,
    stop_embedded_cluster,
)
from ._reconnect import (  # noqa: F401  (the session's names, as before the split)
    LOST_REASON,
    REJOIN_TOPIC,
    Reconnecting,
    _dead,
    _lost_by_disconnect,
    _n_workers,
    _revive,
    _SchedulerLost,
    _Vanished,
)
from .errors import ClientClosedError
from .plugins._install import warn_if_not_installed
from .tiling.core import Chunk, TileableData, bump_execution_epoch, has_unknown
from .tiling.emit import build_graph
from .tiling.tile import tile, walk_tileables

logger = logging.getLogger("mars_dask.session")


def __getattr__(name):
    # the embedded cluster's state lives in mars_dask._embedded (rebound there, so not
    # copied here): ``session._embedded`` and ``session._current`` still read it
    if name in ("_embedded", "_current"):
        return getattr(_embedded_room, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _shape_of(x) -> tuple:
    return tuple(getattr(x, "shape", ()))


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


class _Call(NamedTuple):
    """The ``execute()`` call in progress: every graph it submits (iterative tiling submits
    several) carries its id, and each layer its operand's class name, so the scheduler
    reports the call as one (``/api/mars/v1/tileables``)."""

    id: str
    operands: dict  # tileable key -> operand class name


#: the call in progress in this context (a context variable: execute() calls in several
#: threads do not mix; graphs submitted outside an execute() carry no call id)
_current_call: contextvars.ContextVar[_Call | None] = contextvars.ContextVar("mars_dask_call", default=None)


def _new_call(datas: Sequence[TileableData]) -> _Call:
    ops = {t.key: type(t.op).__name__ for t in walk_tileables(datas, stop_at_tiled=False) if t.op is not None}
    return _Call(uuid.uuid4().hex[:16], ops)


class Session(Reconnecting):
    """Executes chunk graphs on one ``Client``."""

    def __init__(self, client: Client | None = None):
        self.client = client or get_client()
        #: chunk key -> (the chunk's Future, the Future of its shape), asked for while the
        #: graph runs (see ``submit_chunks(shapes=True)``)
        self._shape_futures: dict = {}
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

    # -- execution -------------------------------------------------------------------
    def submit_chunks(self, chunks: Sequence[Chunk], checkpoint: bool = False, shapes: bool = False) -> None:
        """Submit the graph computing ``chunks`` (only the part not executed or lost),
        wait for it, and bind each chunk to its Future.  A failing kernel raises its own
        exception; a lost scheduler is waited for and the lost part resubmitted.
        ``checkpoint``: ``chunks`` are lineage boundaries written to durable storage.
        ``shapes``: the shapes of those of ``chunks`` whose shape is unknown are asked for
        with the graph (each runs as soon as its chunk is done), so that :meth:`fill_shapes`
        only collects them instead of a round of tasks after the graph."""
        chunks = list(dict.fromkeys(chunks))
        wanted = {c.key for c in chunks if has_unknown(c.shape)} if shapes else ()
        _progress.track(chunks)  # execute()'s progress bar counts them (if it has one)
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
                call = _current_call.get()
                graph = build_graph(todo, fuse=config.get("tiling.fuse"), call=call.id if call else None,
                                    operands=call.operands if call else None)
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
                self._ask_shapes([c for c in todo if c.key in wanted])
            if not pending:
                return
            try:
                self._wait(list(pending))
                return
            except _SchedulerLost:
                self._recover_connection()
            except _Vanished:
                pending = {c: None for c in pending if c.future is not None}
            except BaseException:
                for c in chunks:  # a failed kernel: nobody will collect them
                    self._shape_futures.pop(c.key, None)
                raise

    def _ask_shapes(self, chunks: Sequence[Chunk]) -> None:
        if chunks:
            futures = self.client.map(_shape_of, [c.future for c in chunks], pure=False)
            for c, f in zip(chunks, futures):
                self._shape_futures[c.key] = (c.future, f)

    def fill_shapes(self, chunks: Sequence[Chunk]) -> None:
        """Fetch the real shapes of executed chunks (only the shapes come back); those asked
        for by ``submit_chunks(shapes=True)`` are collected, the others asked now."""
        asked = {}
        for c in chunks:
            entry = self._shape_futures.pop(c.key, None)
            if entry is not None and entry[0] is c.future:
                asked[c.key] = entry[1]
        chunks = [c for c in chunks if has_unknown(c.shape)]
        if not chunks:
            return

        def shapes():
            futures = [asked.pop(c.key, None) for c in chunks]  # once: a retry asks afresh
            need = [c.future for c, f in zip(chunks, futures) if f is None]
            new = iter(self.client.map(_shape_of, need, pure=False) if need else ())
            return self.client.gather([f if f is not None else next(new) for f in futures])

        for c, s in zip(chunks, self._retrying(chunks, shapes)):
            c.shape = tuple(s)
            if c.nbytes is not None and np.isnan(c.nbytes):
                c.nbytes = None

    def run_for_meta(self, chunks: Sequence[Chunk]) -> None:
        """Iterative tiling's callback: execute ``chunks`` and learn their shapes."""
        self.submit_chunks(chunks, shapes=True)
        self.fill_shapes(chunks)

    def tile(self, datas: Sequence[TileableData]) -> None:
        tile(datas, self.run_for_meta)

    def execute(self, datas: Sequence[TileableData], checkpoint: bool = False) -> None:
        self._check_open()
        # once per scheduler: a cluster without mars_dask's plugin runs this work without
        # quota, restart or failover (stacklevel: the caller of mars_dask.execute)
        warn_if_not_installed(self.client, stacklevel=3)
        token = _current_call.set(_new_call(datas))
        try:
            self.tile(datas)
            chunks = [c for d in datas for c in d.chunks]
            self.submit_chunks(chunks, checkpoint=checkpoint, shapes=True)
            self.fill_shapes(chunks)
        finally:
            _current_call.reset(token)
        for d in datas:
            if has_unknown(d.shape) or any(has_unknown(s) for s in d.nsplits):
                d.refresh_nsplits()

    def gather(self, data: TileableData) -> list:
        return self.gather_chunks(data.chunks)

    def gather_chunks(self, chunks: Sequence[Chunk]) -> list:
        """The values of executed ``chunks`` (lost ones rebuilt), in order."""
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


def execute(*tileables, session: Session | None = None, checkpoint: bool = False, wait: bool = True,
            new_session_kwargs: dict | None = None, show_progress: bool | str | None = None,
            progress_update_interval: float = 1):
    """Execute tileables in one graph; returns the tileable (or a list of them), now
    holding its data on the cluster, as Mars's ``execute`` does.

    ``checkpoint=True``: the tileables' chunks are lineage boundaries (annotated
    ``mars_boundary="checkpoint"``): the failover plugin writes them to durable storage
    (``mars-dask.failover.checkpoint-directory``) and recovery starts from there instead of
    re-running what they were computed from.

    ``show_progress`` (Mars's): ``True``, ``False``, ``"auto"`` (a bar once the call has run
    for ``mars-dask.session.progress-after``) or ``None`` (``mars-dask.session.show-progress``);
    the bar counts the finished chunks and is refreshed every ``progress_update_interval``
    seconds (see :mod:`mars_dask._progress`). Mars's ``wait`` and ``new_session_kwargs`` are
    accepted with the values that mean what happens here: ``execute()`` blocks, and the
    session is a distributed Client (or ``session=Session(client)``). Other keywords raise
    ``TypeError``."""
    if not tileables:
        raise TypeError("execute() needs at least one tileable")
    # every argument is checked before any work (or an embedded cluster) starts
    if not wait:
        raise NotImplementedError(
            "execute(wait=False) is not supported: execute() blocks here until the results are "
            "on the cluster. For asynchronous work use Dask's API on the tileable "
            "(client.persist(t) / client.compute(t) return Futures)")
    if new_session_kwargs:
        raise TypeError(
            f"execute(new_session_kwargs={new_session_kwargs!r}) is not supported: a mars_dask "
            "session is a distributed Client. Create one (distributed.Client(...)) and it is "
            "used, or pass session=mars_dask.Session(client)")
    # the bar's clock starts with the call (starting the embedded cluster counts)
    progress = _progress.Progress(show_progress, progress_update_interval)
    if len(tileables) == 1 and isinstance(tileables[0], (list, tuple)):
        tileables = tuple(tileables[0])
    session = session or get_session()
    datas = [t.data for t in tileables]
    with progress:
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
    """numpy/pandas results of executed tileables (``session`` is the only option: others
    raise ``TypeError``)."""
    res = [t.fetch(session=session) for t in tileables]
    return res[0] if len(res) == 1 else res


__all__ = ["ClientClosedError", "Session", "execute", "fetch", "get_client", "get_session",
           "start_embedded_cluster", "stop_embedded_cluster", "Future"]
