"""The Index tileable: ``df.index``/``s.index`` and Mars 0.10's Index methods.

An Index tileable is cut into row chunks like the frame it comes from, each chunk a pandas
Index.  ``df.index`` keeps the frame's ``index_key`` (its values *are* the frame's labels,
in the same chunks), so ``df.index`` and anything built on it (``to_series``,
``md.DataFrame(data, index=df.index)``) stays row-aligned with ``df`` without any shuffle.

How the methods are computed (pandas' own code runs on every chunk, so values, dtypes and
names are pandas'):

- element-wise (``astype rename set_names fillna isna notna map dropna to_series
  to_frame``): chunk by chunk (:func:`.map.map_rows`); ``isna``/``notna`` return a bool
  tensor, as pandas returns a numpy array;
- ``drop drop_duplicates duplicated value_counts all any``: the Series machinery on
  ``to_series()`` (the values with the Index as labels), so the checks across chunks
  (``drop``'s missing labels, first/last occurrences, tree reductions) are shared with
  Series;
- ``min``/``max``: a tree of one-value slices of the Index itself, so the last step is
  pandas' own ``Index.min``/``max`` (its NaN and scalar types); a default RangeIndex
  answers from its length (pandas' Python ints);
- ``agg``, ``memory_usage``, ``check_monotonic``, ``is_monotonic*`` are the statistics
  module's (shared with Series);
- relabelling (``md.DataFrame(data, index=md.Index(..))``, ``s.index = ...``): the values
  are re-cut to the Index's row chunks and take its labels positionally
  (:func:`.arithmetic.positional_like`), as pandas assigns an index to array-like data.
"""

from __future__ import annotations

import weakref

import numpy as np
import pandas as pd

from ..tensor.core import TensorOperand
from ..tiling.tileable import Tileable
from .core import DataFrame, Index, Series, register_method
from .map import is_pandas_tileable, map_rows
from .reduction import Reducer, tree_reduce

__all__: list[str] = []

_no_default = pd.api.extensions.no_default


def _call(obj, name, args, kwargs):
    return getattr(obj, name)(*args, **kwargs)


def _elementwise(idx, name, *args, rows="same", meta=None, **kwargs):
    """``idx.<name>(*args, **kwargs)`` chunk by chunk; the rows keep their chunks."""
    return map_rows(_call, idx, name, args, kwargs, meta=meta, rows=rows, preserves_index=rows == "same",
                    name=f"index-{name}")


# ---- df.index / s.index --------------------------------------------------------------------

#: Index handle -> (weak reference to the DataFrame/Series it was taken from, that object's
#: data when it was taken): ``df.index.name = "x"`` renames ``df``'s index, as in Mars
_parents: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _labels_kernel(x):
    return x.index


def labels_of(obj) -> Index:
    """The row labels of a DataFrame/Series as a lazy Index (same chunks and ``index_key``;
    works with unknown lengths)."""
    return map_rows(_labels_kernel, obj, meta=obj.data.meta.index, name="index")


def _get_index(self):
    idx = labels_of(self)
    _parents[idx] = (weakref.ref(self), self.data)
    return idx


def _set_index(self, value):
    """``obj.index = labels`` (pandas: positional, same length)."""
    self.data = relabel(self, as_index(value)).data


DataFrame.index = property(_get_index, _set_index, doc="The row labels (a lazy Index tileable).")
Series.index = property(_get_index, _set_index, doc="The row labels (a lazy Index tileable).")


# ---- conversions ---------------------------------------------------------------------------


def _series_values_kernel(s, dtype, name):
    return pd.Index(s, dtype=dtype, name=s.name if name is _no_default else name)


def as_index(obj, *, dtype=None, name=_no_default) -> Index:
    """``obj`` (an Index/Series tileable, a 1-d tensor or local labels) as an Index
    tileable, as ``pd.Index(obj)`` would make it."""
    from ..tensor.core import Tensor
    from .datasource import from_pandas, from_tensor

    if isinstance(obj, Index):
        return obj
    if isinstance(obj, Series):
        meta = _series_values_kernel(obj.data.meta, dtype, name)
        return map_rows(_series_values_kernel, obj, dtype, name, meta=meta, preserves_index=False, name="index-from-series")
    if isinstance(obj, Tensor):
        return from_tensor(obj, "index", dtype=dtype, name=None if name is _no_default else name)
    if isinstance(obj, Tileable):
        raise TypeError(f"cannot make an Index from a {type(obj).__name__}")
    if not isinstance(obj, pd.Index) or dtype is not None or name is not _no_default:
        obj = pd.Index(obj, dtype=dtype, **({} if name is _no_default else {"name": name}))
    return from_pandas(obj, chunk_size=max(1, len(obj)))


def _carrier_kernel(i):
    return pd.Series(np.zeros(len(i), dtype=np.int8), index=i)


def _label_carrier(idx: Index):
    """A Series of zeros labelled by ``idx`` (same chunks): the shape ``positional_like``
    needs to hand its labels to other values."""
    meta = _carrier_kernel(idx.data.meta)
    return map_rows(_carrier_kernel, idx, meta=meta, name="index-labels")


def relabel(values, idx: Index):
    """``values`` (a DataFrame/Series tileable) with the labels of ``idx`` positionally and
    ``idx``'s row chunks (pandas' rule for assigning an index to array-like data); the
    lengths must match (checked now if known, else when the chunks are cut)."""
    from .arithmetic import positional_like

    return positional_like(_label_carrier(idx), values)


class _ChunkToNumpy(TensorOperand):
    """A 1-d tensor of ``func(chunk)`` for every row chunk of a Series/Index."""

    _op_name = "index-to-tensor"

    def tile(self):
        (x,) = self.inputs
        chunks = [self.new_chunk((i,), (c.shape[0],), _to_numpy_kernel, (c, self.func), blockwise=True)
                  for i, c in enumerate(x.chunks)]
        return [(chunks, (tuple(x.nsplits[0]),))]


def _to_numpy_kernel(x, func):
    return np.asarray(func(x))


def _tensor_of(obj, func, dtype, probe=False):
    if probe:  # pandas' own errors now (``isna`` of a MultiIndex...)
        from ._meta import meta_nonempty

        func(meta_nonempty(obj.data.meta))
    op = _ChunkToNumpy([obj.data], func=func)
    return op.new_tensor((obj.shape[0],), np.dtype(dtype))


def _to_series_kernel(i, name):
    return i.to_series(name=name)


@register_method(Index)
def to_series(self, index=None, name=None):
    """pandas' ``Index.to_series``: values and labels both from the Index (``index``:
    other labels, positionally)."""
    name = self.name if name is None else name
    out = map_rows(_to_series_kernel, self, name, meta=self.data.meta.to_series(name=name), name="index-to-series")
    return out if index is None else relabel(out, as_index(index))


@register_method(Index)
def to_frame(self, index=True, name=_no_default):
    """pandas' ``Index.to_frame``; ``index=False`` numbers the rows globally."""
    kw = {} if name is _no_default else {"name": name}
    meta = self.data.meta.to_frame(index=True, **kw)
    out = map_rows(_call, self, "to_frame", (), {"index": True, **kw}, meta=meta, name="index-to-frame")
    if index:
        return out
    return out.reset_index(drop=True)


Index.T = property(lambda self: self, doc="The transpose: the Index itself.")
Index.values = property(lambda self: to_tensor(self), doc="The values as a mars tensor.")


@register_method(Index)
def to_tensor(self, dtype=None, extract_multi_index=False):
    """The values as a 1-d mars tensor (Mars's ``Index.to_tensor``); with
    ``extract_multi_index`` a MultiIndex gives a 2-d tensor, one column per level."""
    if extract_multi_index and self.data.meta.nlevels > 1:
        from ..tensor.datasource import from_dataframe

        return from_dataframe(self.to_frame(index=False), dtype=dtype)
    dt = np.dtype(dtype) if dtype is not None else self.data.meta.to_numpy().dtype
    return _tensor_of(self, _ToNumpy(dt), dt)


class _ToNumpy:
    def __init__(self, dtype):
        self.dtype = dtype

    def __call__(self, x):
        return x.to_numpy(dtype=self.dtype)

    def __dask_tokenize__(self):
        return ("to-numpy", str(self.dtype))


# ---- names ---------------------------------------------------------------------------------


def _inplace(self, out, inplace):
    if inplace:
        self.data = out.data
        return None
    return out


@register_method(Index)
def rename(self, name, inplace=False):
    """pandas' ``Index.rename`` (a MultiIndex takes a list of names)."""
    return _inplace(self, _elementwise(self, "rename", name), inplace)


@register_method(Index)
def set_names(self, names, level=None, inplace=False):
    """pandas' ``Index.set_names`` (``level`` for a MultiIndex)."""
    return _inplace(self, _elementwise(self, "set_names", names, level=level), inplace)


def _rename_axis_kernel(x, names):
    x = x.copy(deep=False)
    x.index = x.index.set_names(names)
    return x


def _set_name(self, value, attr):
    """``idx.name = v`` / ``idx.names = v``: renames the Index and, as in Mars, the index of
    the DataFrame/Series it was taken from (if that object was not changed since)."""
    names = [value] if attr == "name" else list(value)
    if attr == "name" and self.data.meta.nlevels > 1:
        new = _elementwise(self, "rename", value)  # pandas' error for a MultiIndex
    else:
        new = _elementwise(self, "set_names", names)
    parent = _parents.get(self)
    obj = parent[0]() if parent is not None else None
    if obj is not None and obj.data is parent[1]:
        meta = obj.data.meta.copy(deep=False)
        meta.index = new.data.meta
        out = map_rows(_rename_axis_kernel, obj, names, meta=meta, name="rename-axis")
        obj.data = out.data
        _parents[self] = (weakref.ref(obj), obj.data)
    self.data = new.data


Index.name = property(lambda self: self.data.meta.name, lambda self, v: _set_name(self, v, "name"))
Index.names = property(lambda self: list(self.data.meta.names), lambda self, v: _set_name(self, v, "names"))
Index.nlevels = property(lambda self: self.data.meta.nlevels)


# ---- element-wise --------------------------------------------------------------------------


@register_method(Index)
def astype(self, dtype, copy=True):
    """pandas' ``Index.astype``.  ``"category"`` without categories would give each chunk
    its own categories: pass a ``pd.CategoricalDtype(categories)``."""
    if (isinstance(dtype, str) and dtype == "category" and not isinstance(self.dtype, pd.CategoricalDtype)) or (
            isinstance(dtype, pd.CategoricalDtype) and dtype.categories is None):
        raise NotImplementedError(
            "astype('category') needs the categories of all chunks: pass pd.CategoricalDtype(categories=...)")
    return _elementwise(self, "astype", dtype, copy=copy)


@register_method(Index)
def fillna(self, value=None, downcast=None):
    """pandas' ``Index.fillna`` (a scalar; Mars's ``downcast`` goes to pandas, which no
    longer has it)."""
    if is_pandas_tileable(value) or isinstance(value, Tileable):
        raise TypeError("Index.fillna needs a scalar value")
    kw = {} if downcast is None else {"downcast": downcast}
    return _elementwise(self, "fillna", value, **kw)


@register_method(Index)
def dropna(self, how="any"):
    """pandas' ``Index.dropna`` (row lengths become unknown)."""
    if how not in ("any", "all"):
        raise ValueError(f"invalid how option: {how}")
    return _elementwise(self, "dropna", how=how, rows="unknown")


class _NaFlags:
    def __init__(self, name):
        self.name = name

    def __call__(self, x):
        return getattr(x, self.name)()

    def __dask_tokenize__(self):
        return ("index-na", self.name)


@register_method(Index)
def isna(self):
    """pandas' ``Index.isna``: a bool tensor (pandas returns a numpy array)."""
    return _tensor_of(self, _NaFlags("isna"), bool, probe=True)


@register_method(Index)
def notna(self):
    """pandas' ``Index.notna``: a bool tensor."""
    return _tensor_of(self, _NaFlags("notna"), bool, probe=True)


def _map_whole(idx, whole, kwargs):
    return idx.map(whole, **kwargs)


@register_method(Index, name="map")
def _index_map(self, mapper, na_action=None, dtype=None, memory_scale=None):
    """pandas' ``Index.map`` chunk by chunk (a Series tileable ``mapper`` is passed whole to
    every chunk).  ``dtype`` gives the result dtype without running ``mapper`` on sample
    values; ``memory_scale`` (Mars's memory hint) is accepted and unused."""
    kw = {"na_action": na_action}
    meta = None
    if dtype is not None:
        meta = pd.Index([], dtype=dtype, name=self.name)
    if is_pandas_tileable(mapper):
        from ._meta import meta_nonempty

        from .methods import broadcast_map

        if meta is None:
            meta = _mapping_meta(self.data.meta, meta_nonempty(mapper.data.meta), kw)
        return broadcast_map(_map_whole, self, mapper, kw, meta=meta, preserves_index=False)
    if meta is None:
        from .core import infer_meta

        try:
            meta = _mapping_meta(self.data.meta, mapper, kw)
            if meta is None:
                meta = infer_meta(_map_whole, self.data.meta, mapper, kw)
        except Exception:  # noqa: BLE001 - a user function may fail on sample values
            if not callable(mapper):
                raise
            meta = pd.Index([], dtype=object, name=self.name)
    return map_rows(_map_whole, self, mapper, kw, meta=meta, preserves_index=False, name="index-map")


def _mapping_meta(meta, mapper, kw):
    """The result structure of mapping by a dict/Series, found on its own keys (all of them
    found, the usual case) instead of made-up sample values that would miss and upcast."""
    if isinstance(meta.dtype, pd.CategoricalDtype) and len(meta.dtype.categories):
        # pandas maps the categories: a sample of all of them, without the stand-in's NaN
        # (NaN mapped to a non-NaN value would turn the result into a plain Index)
        return _map_whole(pd.CategoricalIndex(meta.dtype.categories, dtype=meta.dtype, name=meta.name), mapper, kw)[:0]
    if not isinstance(mapper, (dict, pd.Series)) or not len(mapper):
        return None
    keys = pd.Index(list(mapper.keys())[:4] if isinstance(mapper, dict) else mapper.index[:4])
    try:
        keys = keys.astype(meta.dtype)
    except (TypeError, ValueError):
        return None
    return _map_whole(keys.rename(meta.name), mapper, kw)[:0]


# ---- through the Series machinery ----------------------------------------------------------


@register_method(Index)
def drop(self, labels, errors="raise"):
    """pandas' ``Index.drop``: missing labels raise KeyError (checked across all chunks)."""
    if errors not in ("raise", "ignore"):
        raise ValueError("errors must be either 'raise' or 'ignore'")
    return labels_of(self.to_series().drop(labels, errors=errors))


@register_method(Index)
def drop_duplicates(self, keep="first", method="auto"):
    """pandas' ``Index.drop_duplicates`` (order kept; ``method`` as Mars: auto/tree/shuffle)."""
    return labels_of(self.to_series().drop_duplicates(keep=keep, method=method))


@register_method(Index)
def duplicated(self, keep="first", method="auto"):
    """pandas' ``Index.duplicated``: a bool tensor."""
    return _tensor_of(self.to_series().duplicated(keep=keep, method=method), _SeriesValues(), bool)


class _SeriesValues:
    def __call__(self, s):
        return s.to_numpy()

    def __dask_tokenize__(self):
        return "series-values"


@register_method(Index)
def value_counts(self, normalize=False, sort=True, ascending=False, bins=None, dropna=True, method="auto"):
    """pandas' ``Index.value_counts`` (a tree of per-chunk counts; ``method`` is Mars's and
    accepted for compatibility)."""
    if method not in ("auto", "tree", "shuffle"):
        raise ValueError(f"method must be 'auto', 'tree' or 'shuffle', got {method!r}")
    return self.to_series().value_counts(normalize=normalize, sort=sort, ascending=ascending, bins=bins,
                                          dropna=dropna)


def _check_minmax_axis(axis):
    if axis not in (None, 0, -1):
        raise ValueError("`axis` must be fewer than the number of dimensions (1)")


class RangeReducer(Reducer):
    """For an Index known to be the default ``RangeIndex(0, n)``: the chunks' lengths are
    summed and pandas' ``RangeIndex`` method runs on the whole range (its results are
    Python ints and its memory size a constant, unlike an int64 Index's)."""

    def map(self, x):
        return len(x)

    def combine(self, parts):
        return sum(parts)

    def finish(self, parts):
        return getattr(pd.RangeIndex(self.combine(parts)), self.name)(**self.kw)


def _reduce(self, name, dtype, **kw):
    """pandas' ``Index.<name>(**kw)``: the Series tree reduction of the values, or the
    whole range's own method for a default RangeIndex."""
    if self.data.range_index:
        return tree_reduce(self, RangeReducer(name=name, kw=kw), scalar_dtype=np.dtype(dtype), name=f"index-{name}")
    return getattr(self.to_series(), name)(**kw)


class ExtremeReducer(Reducer):
    """``Index.min``/``max``: the partial of a chunk is its extreme value as a one-element
    slice (or a missing value when ``skipna=False`` meets one), so the last step is pandas'
    own ``Index.min``/``max`` on a few values of the Index's dtype (categorical order, time
    zones and pandas' NaN result kept)."""

    def _pick(self, x):
        if len(x) and not isinstance(x, pd.MultiIndex) and x.hasnans:
            if not self.skipna:
                return x[x.isna()][:1]
            x = x.dropna()
        if len(x) == 0:
            return None
        pos = x.argmin() if self.name == "min" else x.argmax()
        return x[pos : pos + 1]

    def map(self, x):
        return self._pick(x)

    def combine(self, parts):
        parts = [p for p in parts if p is not None]
        if not parts:
            return None
        return self._pick(Index._assemble(self.empty, parts))

    def finish(self, parts):
        p = self.combine(parts)
        return getattr(self.empty if p is None else p, self.name)(skipna=self.skipna)


def _extreme(self, name, axis, skipna):
    from ._meta import meta_nonempty

    _check_minmax_axis(axis)
    if self.data.range_index:
        return _reduce(self, name, np.int64, skipna=skipna)
    meta = self.data.meta
    probe = getattr(meta_nonempty(meta), name)(skipna=skipna)  # pandas' errors now
    dt = meta.dtype if isinstance(meta.dtype, np.dtype) and meta.dtype.kind not in "OSU" else np.asarray(probe).dtype
    if dt.kind in "OSU":
        dt = np.dtype(object)
    red = ExtremeReducer(name=name, skipna=bool(skipna), empty=meta)
    return tree_reduce(self, red, scalar_dtype=dt, name=f"index-{name}")


@register_method(Index, name="min")
def _index_min(self, axis=None, skipna=True):
    """pandas' ``Index.min`` (a tree reduction; fetches pandas' scalar)."""
    return _extreme(self, "min", axis, skipna)


@register_method(Index, name="max")
def _index_max(self, axis=None, skipna=True):
    """pandas' ``Index.max`` (a tree reduction; fetches pandas' scalar)."""
    return _extreme(self, "max", axis, skipna)


@register_method(Index, name="all")
def _index_all(self):
    """pandas' ``Index.all`` (a tree reduction)."""
    return _reduce(self, "all", bool)


@register_method(Index, name="any")
def _index_any(self):
    """pandas' ``Index.any`` (a tree reduction)."""
    return _reduce(self, "any", bool)


# ---- df.set_index(md.Index) ---------------------------------------------------------------------


def _levels_frame_kernel(i):
    """The levels as columns ``0..nlevels-1``, labelled by the Index itself."""
    return i.to_frame(index=True, name=list(range(i.nlevels)) if i.nlevels > 1 else 0)


def _set_index_kernel(df, levels, names, append):
    new = pd.MultiIndex.from_frame(levels, names=names) if len(names) > 1 else pd.Index(levels.iloc[:, 0]).rename(names[0])
    return df.set_index(new, append=append)


def set_index_by(df, idx: Index, append=False):
    """``df.set_index(idx)`` for an Index tileable: pandas takes its values positionally
    (same length).  Unless ``idx`` already has ``df``'s row chunks (``df.index`` and what
    is built from it), its levels are re-cut to them first."""
    names = list(idx.data.meta.names)
    levels = map_rows(_levels_frame_kernel, idx, meta=_levels_frame_kernel(idx.data.meta), name="index-levels")
    if levels.data.index_key != df.data.index_key:
        from .arithmetic import positional_like

        levels = positional_like(df, levels)
    meta = _set_index_kernel(df.data.meta, levels.data.meta, names, append)
    return map_rows(_set_index_kernel, df, levels, names, append, meta=meta, preserves_index=False, name="set-index")
