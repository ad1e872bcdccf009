"""DataFrame tileables: data classes, user handles and the operand base.

Design (differs from Mars where Dask's conventions are simpler and as accurate):

- Row partitions only.  A DataFrame is cut into row chunks; every chunk holds all columns
  (chunk grid ``(n, 1)``, ``nsplits = (row_lengths, (ncols,))``).  Series and Index are 1-d
  (``nsplits = (row_lengths,)``).  Row lengths may be ``nan`` (after filters), resolved by
  iterative tiling (``ensure_known``) when an operation needs them.
- Metadata is an empty pandas object, ``meta``, with the exact columns, dtypes, index dtype
  and names (dask.dataframe's approach): output metadata is found by running the pandas
  operation on a small non-empty stand-in (``meta_nonempty``), so it follows pandas exactly.
- ``index_key`` identifies the row labels *and* their partitioning: two tileables with the
  same ``index_key`` have the same labels in the same chunks, so row-wise operations between
  them are chunk by chunk.  Operations that keep rows (column selection, arithmetic,
  ``fillna``...) keep the key; filters and reorderings make a new one.
- ``range_index``: the index is the default ``RangeIndex(0, n)`` across all chunks (each
  chunk holds its own slice of it), as pandas gives for a fresh frame.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd
from ._meta import make_meta, meta_nonempty

from ..tiling.core import Chunk, Operand, TileableData
from ..tiling.tileable import Tileable

nan = float("nan")


# ---- metadata ---------------------------------------------------------------------------


def row_nbytes(meta) -> float:
    """Rough bytes per row of a pandas object (strings/objects counted at 64 bytes)."""
    if isinstance(meta, pd.DataFrame):
        dtypes = list(meta.dtypes)
    elif isinstance(meta, (pd.Series, pd.Index)):
        dtypes = [meta.dtype]
    else:
        return 8.0
    total = 8.0  # the index
    for dt in dtypes:
        itemsize = getattr(dt, "itemsize", None)
        if isinstance(dt, np.dtype) and dt.kind not in "OSU":
            total += dt.itemsize
        elif itemsize and getattr(dt, "kind", "O") not in "OSU":
            total += itemsize
        else:
            total += 64
    return total


def empty_like_meta(obj):
    """The ``meta`` (empty, same structure) of a pandas object."""
    return make_meta(obj)


def infer_meta(func, *args, _empty_fallback=True, **kwargs):
    """Metadata of ``func(*args, **kwargs)``: run it on non-empty stand-ins of the pandas
    metas among ``args`` and keep an empty result of the same structure.

    Meta inference never invents an error: when ``func`` fails on the stand-ins but not on
    the empty metas themselves, the empty result is the metadata (pandas raises at
    execution if the real data is bad, with its own exception).  ``_empty_fallback=False``
    for user functions, whose result on an empty object says nothing about their output."""

    def stand_in(a):
        if isinstance(a, (pd.DataFrame, pd.Series, pd.Index)):
            return meta_nonempty(a)
        return a

    try:
        res = func(*[stand_in(a) for a in args], **{k: stand_in(v) for k, v in kwargs.items()})
    except Exception as sample_error:  # noqa: BLE001 - any pandas error
        if not _empty_fallback:
            raise
        # The stand-in's made-up values may fail where the real data would not (a string
        # column of "foo" cast to int): an error pandas would also raise on an empty object
        # is the arguments' fault and raised now; otherwise the structure comes from the
        # empty metas and the real error, if any, from pandas at execution.
        try:
            res = func(*args, **kwargs)
        except Exception:  # noqa: BLE001
            raise sample_error from None
    if isinstance(res, (pd.DataFrame, pd.Series, pd.Index)):
        return res.iloc[:0] if not isinstance(res, pd.Index) else res[:0]
    return make_meta(res)


# ---- data -------------------------------------------------------------------------------


class _PandasData(TileableData):
    __slots__ = ("meta", "index_key", "range_index")

    def __init__(self, op, shape, meta, key, index_key=None, range_index=False):
        super().__init__(op, shape, key)
        self.meta = meta
        self.index_key = index_key or key
        self.range_index = range_index

    @property
    def nrows(self):
        return self.shape[0]


class DataFrameData(_PandasData):
    __slots__ = ()

    @property
    def columns(self) -> pd.Index:
        return self.meta.columns

    @property
    def dtypes(self) -> pd.Series:
        return self.meta.dtypes


class _OneDimData(_PandasData):
    __slots__ = ()

    @property
    def dtype(self):
        return self.meta.dtype

    @property
    def name(self):
        return self.meta.name


class SeriesData(_OneDimData):
    __slots__ = ()


class IndexData(_OneDimData):
    __slots__ = ()


# ---- operand base -----------------------------------------------------------------------


class DataFrameOperand(Operand):
    """Base of DataFrame/Series/Index operations.

    ``new_output(meta, nrows, index_key=..., range_index=...)`` creates the output handle of
    the right kind from its ``meta``; ``new_chunk(i, nrows, func, args, ...)`` makes row
    chunk ``i`` (its key is ``(output_key, i)`` or ``(output_key, i, 0)`` for frames).
    """

    _op_name = "dataframe-op"

    def new_outputs(self, specs: Sequence[dict], key: str | None = None) -> list:
        base = key or self.make_key()
        outs = []
        for i, spec in enumerate(specs):
            k = base if len(specs) == 1 else f"{base}-{i}"
            outs.append(wrap(self._make_data(k, **spec)))
        return outs

    def new_output(self, meta, nrows=nan, *, index_key=None, range_index=False, key=None):
        return self.new_outputs([dict(meta=meta, nrows=nrows, index_key=index_key, range_index=range_index)], key=key)[0]

    def _make_data(self, key, meta, nrows=nan, index_key=None, range_index=False):
        if isinstance(meta, pd.DataFrame):
            data = DataFrameData(self, (nrows, len(meta.columns)), meta, key, index_key, range_index)
        elif isinstance(meta, pd.Series):
            data = SeriesData(self, (nrows,), meta, key, index_key, range_index)
        elif isinstance(meta, pd.Index):
            data = IndexData(self, (nrows,), meta, key, index_key, range_index)
        else:
            raise TypeError(f"cannot make a DataFrame tileable from meta of type {type(meta).__name__}")
        self.add_output(data)
        return data

    def new_chunk(
        self,
        i: int,
        nrows,
        func,
        args: tuple = (),
        kwargs: dict | None = None,
        *,
        out: int = 0,
        meta=None,
        inputs: Sequence[Chunk] | None = None,
        memory: int | None = None,
        blockwise: bool = False,
        suffix: str = "",
    ) -> Chunk:
        """Row chunk ``i`` of output ``out`` (``suffix`` names an intermediate step)."""
        o = self._outputs[out]()
        if meta is None:
            meta = o.meta if o is not None else None
        is_frame = isinstance(meta, pd.DataFrame)
        okey = self.output_key(out) + suffix
        index = (i, 0) if is_frame and not suffix else (i,)
        shape = (nrows, len(meta.columns)) if is_frame else (nrows,)
        return Chunk(
            (okey, *index),
            index,
            shape,
            func,
            tuple(args),
            kwargs,
            inputs=inputs,
            memory=memory,
            nbytes=float(nrows) * row_nbytes(meta) if meta is not None else None,
            blockwise=blockwise,
        )


def row_splits(data: _PandasData) -> tuple:
    return data.nsplits[0]


def frame_nsplits(meta, rows: Sequence) -> tuple:
    """``nsplits`` for an output with row lengths ``rows`` and structure ``meta``."""
    rows = tuple(rows)
    if isinstance(meta, pd.DataFrame):
        return (rows, (len(meta.columns),))
    return (rows,)


# ---- handles ----------------------------------------------------------------------------


def wrap(data: TileableData):
    """The user handle for a data object."""
    if isinstance(data, DataFrameData):
        return DataFrame(data)
    if isinstance(data, SeriesData):
        return Series(data)
    if isinstance(data, IndexData):
        return Index(data)
    raise TypeError(type(data))


def _keep_object(out: pd.Index, meta: pd.Index, parts: list) -> pd.Index:
    """``out`` (the parts appended), as an object Index again if ``meta`` says object."""
    if meta.dtype != object or out.dtype == object or isinstance(meta, pd.MultiIndex):
        return out
    return pd.Index(np.concatenate([p.to_numpy(dtype=object) for p in parts]), dtype=object, name=out.name)


class _PandasTileable(Tileable):
    """Shared by DataFrame, Series and Index handles."""

    __slots__ = ()
    _data_type: type = _PandasData

    def __init__(self, data=None, *args, **kwargs):
        if isinstance(data, self._data_type):
            super().__init__(data)
            return
        from .datasource import from_pandas_like

        super().__init__(from_pandas_like(type(self), data, *args, **kwargs).data)

    @property
    def meta(self):
        return self._data.meta

    @property
    def index_key(self):
        return self._data.index_key

    def __len__(self):
        """The number of rows.  When it is unknown (after a filter, ``dropna``...) the
        minimal graph is run as Mars does: the object is tiled through the session, which
        executes only the chunks whose lengths are unknown (their results are kept, so a
        later ``execute()`` does not redo them) and records the lengths on the data."""
        n = self.shape[0]
        if isinstance(n, float) and math.isnan(n):
            from ..session import get_session
            from ..tiling.core import ensure_known

            data = self._data
            session = get_session()
            if not data.is_tiled:
                session.tile([data])
            if any(isinstance(x, float) and math.isnan(x) for x in data.nsplits[0]):
                need = [c for c in data.chunks if isinstance(c.shape[0], float) and math.isnan(c.shape[0])]
                session.run_for_meta(need)
                for _ in ensure_known(data):  # refreshes nsplits and shape from the chunks
                    pass
            n = data.shape[0]
        return int(n)

    def __bool__(self):
        raise ValueError(
            f"The truth value of a {type(self).__name__} is ambiguous (and lazy): execute() and fetch() it"
        )

    @staticmethod
    def _assemble_meta(data):
        return data.meta

    @staticmethod
    def _assemble(meta, parts: list):
        """The chunks as one pandas object. ``pd.concat`` and ``Index.append`` re-infer the
        dtype of an object index (object ints come back int64): an object index stays object,
        as pandas keeps it."""
        parts = list(parts)
        if not parts:
            return meta
        if isinstance(meta, pd.Index):
            out = parts[0].append(parts[1:]) if len(parts) > 1 else parts[0]
            return _keep_object(out, meta, parts)
        if len(parts) == 1:
            return parts[0]
        out = pd.concat(parts)
        index = _keep_object(out.index, meta.index, [p.index for p in parts])
        return out if index is out.index else out.set_axis(index)

    def to_pandas(self):
        return self.execute().fetch()



class DataFrame(_PandasTileable):
    """A lazy pandas DataFrame cut into row chunks (Mars's ``md.DataFrame``)."""

    __slots__ = ()
    _data_type = DataFrameData

    @property
    def columns(self) -> pd.Index:
        return self._data.meta.columns

    @property
    def dtypes(self) -> pd.Series:
        return self._data.meta.dtypes

    @property
    def ndim(self):
        return 2

    def __getitem__(self, item):
        from .indexing import getitem

        return getitem(self, item)

    def __setitem__(self, key, value):
        from .indexing import setitem

        setitem(self, key, value)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        cols = object.__getattribute__(self, "_data").meta.columns
        if name in cols:
            return self[name]
        raise AttributeError(f"'DataFrame' object has no attribute {name!r}")

    def __dir__(self):
        return sorted(set(super().__dir__()) | {c for c in self.columns if isinstance(c, str) and c.isidentifier()})


class _OneDim(_PandasTileable):
    __slots__ = ()

    @property
    def dtype(self):
        return self._data.meta.dtype

    @property
    def name(self):
        return self._data.meta.name


class Series(_OneDim):
    """A lazy pandas Series cut into row chunks."""

    __slots__ = ()
    _data_type = SeriesData

    def __getitem__(self, item):
        from .indexing import getitem

        return getitem(self, item)


class Index(_OneDim):
    """A lazy pandas Index cut into row chunks."""

    __slots__ = ()
    _data_type = IndexData


def register_method(*classes, name: str | None = None):
    """Decorator: attach a function as a method of the handle classes (``DataFrame``,
    ``Series``, ``Index``).  Each feature module registers its own methods, so the classes
    here stay small and modules never edit each other."""

    def deco(func):
        for cls in classes:
            setattr(cls, name or func.__name__, func)
        return func

    return deco


def _binop(name, reflected=False):
    def method(self, other):
        from .arithmetic import binary_op

        return binary_op(name, other, self) if reflected else binary_op(name, self, other)

    method.__name__ = f"__{'r' if reflected else ''}{name}__"
    return method


for _cls in (DataFrame, Series):
    for _n in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor"):
        setattr(_cls, f"__{_n}__", _binop(_n))
        setattr(_cls, f"__r{_n}__", _binop(_n, True))
    for _n in ("lt", "le", "gt", "ge", "eq", "ne"):
        setattr(_cls, f"__{_n}__", _binop(_n))
    _cls.__hash__ = object.__hash__


def _unary(name):
    def method(self):
        from .arithmetic import unary_op

        return unary_op(name, self)

    return method


for _cls in (DataFrame, Series):
    _cls.__neg__ = _unary("neg")
    _cls.__invert__ = _unary("invert")
    _cls.__abs__ = _unary("abs")
    _cls.__pos__ = _unary("pos")
