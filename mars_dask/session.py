"""Running tileables on a Dask cluster: ``execute``, ``fetch`` and the embedded cluster.

The session is a thin layer over a ``distributed.Client``: the current default client if
there is one, otherwise an embedded ``LocalCluster`` started once (sized to the machine,
with mars_dask's plugins installed) and reused.  Executed chunks keep their Dask Futures;
the tileable owns its chunks, so dropping the tileable releases the data on the cluster.
"""

from __future__ import annotations

import atexit
import logging
import threading
from typing import Sequence

import numpy as np
from distributed import Client, Future, LocalCluster, wait
from distributed.client import default_client

from . import config
from .tiling.core import Chunk, TileableData, bump_execution_epoch, has_unknown
from .tiling.emit import build_graph
from .tiling.tile import tile

logger = logging.getLogger("mars_dask.session")

_lock = threading.Lock()
_embedded: tuple[LocalCluster, Client] | None = None


def _shape_of(x) -> tuple:
    return tuple(getattr(x, "shape", ()))


def start_embedded_cluster() -> Client:
    """Start (once) the embedded ``LocalCluster`` used when no Client exists."""
    global _embedded
    with _lock:
        if _embedded is None:
            kwargs = {}
            for opt, kw in [("n-workers", "n_workers"), ("threads-per-worker", "threads_per_worker")]:
                v = config.get(f"embedded.{opt}")
                if v is not None:
                    kwargs[kw] = v
            # the same installation as the CLI: --preload mars_dask on the scheduler and
            # the workers, --preload-nanny mars_dask (MarsStore + exit monitor)
            cluster = LocalCluster(
                memory_limit=config.get("embedded.memory-limit"),
                dashboard_address=config.get("embedded.dashboard-address"),
                scheduler_kwargs={"preload": ["mars_dask"]},
                preload=["mars_dask"],
                preload_nanny=["mars_dask"],
                **kwargs,
            )
            client = Client(cluster, set_as_default=True)
            logger.info("started embedded cluster %s (dashboard %s)", cluster.scheduler_address, client.dashboard_link)
            _embedded = (cluster, client)
            atexit.register(stop_embedded_cluster)
        return _embedded[1]


def stop_embedded_cluster() -> None:
    global _embedded
    with _lock:
        if _embedded is not None:
            cluster, client = _embedded
            _embedded = None
            client.close()
            cluster.close()


def get_client() -> Client:
    """The current default Client, or the embedded cluster's."""
    try:
        return default_client()
    except ValueError:
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


class Session:
    """Executes chunk graphs on one ``Client``."""

    def __init__(self, client: Client | None = None):
        self.client = client or get_client()

    # -- execution -------------------------------------------------------------------
    def submit_chunks(self, chunks: Sequence[Chunk]) -> None:
        """Submit the graph computing ``chunks`` (only the not yet executed part), wait for
        it, and bind each chunk to its Future.  A failing kernel raises its own exception."""
        todo = [c for c in dict.fromkeys(chunks) if c.future is None]
        if not todo:
            return
        graph = build_graph(todo, fuse=config.get("tiling.fuse", True))
        keys = [c.key for c in todo]
        futures = self.client.persist(_ChunkCollection(graph, keys))
        for c in todo:
            c.future = futures[c.key]
        bump_execution_epoch()
        self._wait(todo)

    def _wait(self, chunks: Sequence[Chunk]) -> None:
        futs = [c.future for c in chunks]
        wait(futs)
        for c in chunks:
            f = c.future
            if f.status != "finished":
                for c2 in chunks:
                    if c2.future is not None and c2.future.status != "finished":
                        c2.future = None
                bump_execution_epoch()
                f.result()  # raises the kernel's original exception

    def fill_shapes(self, chunks: Sequence[Chunk]) -> None:
        """Fetch the real shapes of executed chunks (only the shapes come back)."""
        chunks = [c for c in chunks if has_unknown(c.shape)]
        if not chunks:
            return
        shapes = self.client.gather(
            self.client.map(_shape_of, [c.future for c in chunks], pure=False)
        )
        for c, s in zip(chunks, shapes):
            c.shape = tuple(s)
            if c.nbytes is not None and np.isnan(c.nbytes):
                c.nbytes = None

    def run_for_meta(self, chunks: Sequence[Chunk]) -> None:
        """Iterative tiling's callback: execute ``chunks`` and learn their shapes."""
        self.submit_chunks(chunks)
        self.fill_shapes(chunks)

    def tile(self, datas: Sequence[TileableData]) -> None:
        tile(datas, self.run_for_meta)

    def execute(self, datas: Sequence[TileableData]) -> None:
        self.tile(datas)
        chunks = [c for d in datas for c in d.chunks]
        self.submit_chunks(chunks)
        self.fill_shapes(chunks)
        for d in datas:
            if has_unknown(d.shape) or any(has_unknown(s) for s in d.nsplits):
                d.refresh_nsplits()

    def gather(self, data: TileableData) -> list:
        return self.client.gather([c.future for c in data.chunks])


def get_session() -> Session:
    return Session(get_client())


def execute(*tileables, session: Session | None = None, **kwargs):
    """Execute tileables in one graph; returns the tileable (or a list of them), now
    holding its data on the cluster, as Mars's ``execute`` does."""
    if not tileables:
        raise TypeError("execute() needs at least one tileable")
    if len(tileables) == 1 and isinstance(tileables[0], (list, tuple)):
        tileables = tuple(tileables[0])
    session = session or get_session()
    session.execute([t.data for t in tileables])
    return tileables[0] if len(tileables) == 1 else list(tileables)


def fetch(*tileables, session: Session | None = None):
    """numpy/pandas results of executed tileables."""
    res = [t.fetch(session=session) for t in tileables]
    return res[0] if len(res) == 1 else res


__all__ = ["Session", "execute", "fetch", "get_client", "get_session", "Future"]
