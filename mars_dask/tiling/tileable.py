"""The user-facing handle shared by tensors and DataFrames.

A :class:`Tileable` wraps a :class:`~mars_dask.tiling.core.TileableData`; in-place
operations (``t[...] = v``) swap the wrapped data, as Mars does.  The handle implements
Mars's ``execute()``/``fetch()`` and the Dask collection protocol, so ``dask.compute(t)``,
``client.compute(t)`` and ``client.persist(t)`` work too.
"""

from __future__ import annotations

import weakref

import dask
import dask.threaded

from ..errors import NotExecutedError
from .core import Chunk, TileableData, execution_epoch
from .emit import build_graph

# the last graph emitted for a tileable, with the execution epoch it was built in
_graph_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class Tileable:
    __slots__ = ("_data", "__weakref__")

    def __init__(self, data: TileableData):
        self._data = data

    @property
    def data(self) -> TileableData:
        return self._data

    @data.setter
    def data(self, value: TileableData) -> None:
        self._data = value

    @property
    def key(self) -> str:
        return self._data.key

    @property
    def op(self):
        return self._data.op

    @property
    def shape(self) -> tuple:
        return self._data.shape

    @property
    def ndim(self) -> int:
        return len(self._data.shape)

    @property
    def nsplits(self):
        return self._data.nsplits

    @property
    def chunks(self):
        return self._data.chunks

    # -- display: structure when lazy, numpy/pandas' own text of the data once executed
    # (only the shown part is fetched; never computes, never raises: see tiling._repr,
    # imported when first printed: it needs pandas, which the scheduler and the workers of a
    # tensor job would otherwise import for nothing, ~65 MiB each)
    def __repr__(self) -> str:
        from . import _repr

        return _repr.text(self)

    def __str__(self) -> str:
        from . import _repr

        return _repr.text(self, as_str=True)

    def _repr_html_(self) -> str | None:
        from . import _repr

        return _repr.html(self)

    # -- Mars execution ----------------------------------------------------------------
    def execute(self, session=None, checkpoint: bool = False, *, wait: bool = True, new_session_kwargs=None,
                show_progress=None, progress_update_interval: float = 1):
        """Compute and keep the data on the cluster; returns ``self``. ``checkpoint=True``
        also writes the result to durable storage, cutting its lineage; ``show_progress``,
        ``progress_update_interval``, ``wait`` and ``new_session_kwargs`` are Mars's (see
        :func:`mars_dask.execute`). Other keywords raise ``TypeError``."""
        from ..session import execute

        return execute(self, session=session, checkpoint=checkpoint, wait=wait,
                       new_session_kwargs=new_session_kwargs, show_progress=show_progress,
                       progress_update_interval=progress_update_interval)

    def fetch(self, session=None):
        """The computed value as a numpy/pandas object (after :meth:`execute`)."""
        from ..session import get_session

        if not self._data.is_executed:
            raise NotExecutedError(
                f"{type(self).__name__} {self.key} has not been executed; call .execute() first"
            )
        session = session or get_session()
        parts = session.gather(self._data)
        self._data.pin()  # the gather may have rebuilt lost chunks (new Futures)
        return self._assemble(self._assemble_meta(self._data), parts)

    @staticmethod
    def _assemble_meta(data: TileableData):  # pragma: no cover - abstract
        """Small picklable facts :meth:`_assemble` needs (it may run on the cluster)."""
        raise NotImplementedError

    @staticmethod
    def _assemble(meta, parts: list):  # pragma: no cover - abstract
        """Build one object from the chunk results (in C order of the chunk grid)."""
        raise NotImplementedError

    def _ensure_tiled(self) -> None:
        if not self._data.is_tiled:
            from ..tiling.tile import tile

            try:
                tile([self._data], None)
            except Exception as e:
                from ..errors import TilingError

                if not isinstance(e, TilingError):
                    raise
                from ..session import get_session

                get_session().tile([self._data])

    # -- Dask collection protocol ----------------------------------------------------------
    def __dask_graph__(self):
        # Dask calls this more than once per submission (``is_dask_collection`` does too):
        # keep the graph while nothing was executed since it was built
        self._ensure_tiled()
        cached = _graph_cache.get(self._data)
        if cached is not None and cached[0] == execution_epoch[0]:
            return cached[1]
        graph = build_graph(self._data.chunks)
        _graph_cache[self._data] = (execution_epoch[0], graph)
        return graph

    def __dask_keys__(self):
        self._ensure_tiled()
        return _nest([c.key for c in self._data.chunks], self._data.chunk_shape)

    def __dask_layers__(self):
        return (self._data.key,)

    def __dask_tokenize__(self):
        return self._data.key

    __dask_scheduler__ = staticmethod(dask.threaded.get)

    @staticmethod
    def __dask_optimize__(dsk, keys, **kwargs):
        return dsk

    def __dask_postcompute__(self):
        _graph_cache.pop(self._data, None)  # submitted: do not keep its futures alive
        return _postcompute, (type(self)._assemble, self._assemble_meta(self._data))

    def __dask_postpersist__(self):
        _graph_cache.pop(self._data, None)
        return _postpersist, (type(self), self._data)


def _nest(flat: list, shape: tuple):
    """Nest a C-ordered flat list into lists of lists following ``shape``."""
    if len(shape) <= 1:
        return list(flat)
    step = len(flat) // shape[0] if shape[0] else 0
    return [_nest(flat[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0])]


def concatenate_grid(parts: list, grid: tuple):
    """Blocks ``parts`` (C order over the block ``grid``) joined into one numpy array
    (dask.array's ``concatenate3``).

    dask.array is imported on first use (a fifth of a second that a scalar's fetch, and a
    worker that never joins blocks, do not pay), and as the package, not only
    ``dask.array.core``: a thread importing ``dask.array.core`` while another thread is
    still running ``dask/array/__init__.py`` gets ``concatenate3`` before the package has
    registered numpy with its dispatch ("No dispatch for <class 'numpy.ndarray'>", seen in
    a worker running two rechunk tasks at once). Importing the package waits for its
    initialisation to finish."""
    import dask.array  # noqa: F401
    from dask.array.core import concatenate3

    return concatenate3(_nest(parts, grid))


def _flatten(nested) -> list:
    if isinstance(nested, list):
        return [x for n in nested for x in _flatten(n)]
    return [nested]


def _postcompute(results, assemble, meta):
    parts = _flatten(results) if isinstance(results, list) else [results]
    return assemble(meta, parts)


def _postpersist(dsk, cls, data: TileableData, rename=None):
    """Rebuild a tileable whose chunks are bound to the persisted Futures."""
    new = TileableData.__new__(type(data))
    for slot in _all_slots(type(data)):
        if hasattr(data, slot):
            setattr(new, slot, getattr(data, slot))
    new.op = None
    chunks = []
    for c in data.chunks:
        nc = Chunk(c.key, c.index, c.shape, None, (), None, inputs=(), nbytes=c.nbytes)
        nc.future = dsk[c.key]
        chunks.append(nc)
    new.chunks = chunks
    return cls(new)


def _all_slots(tp) -> list[str]:
    slots = []
    for k in tp.__mro__:
        for s in getattr(k, "__slots__", ()):
            if s not in ("__weakref__", "__dict__"):
                slots.append(s)
    return slots
