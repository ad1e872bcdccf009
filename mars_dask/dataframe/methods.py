"""Column work: element-wise and row-wise DataFrame/Series methods (pandas signatures).

Most methods run the pandas method chunk by chunk (:func:`.map.map_rows`); the output
metadata comes from running it on a non-empty stand-in, so pandas validates the arguments
(unknown columns, bad values) at build time.  Methods needing more than one chunk at a time:

- ``ffill``/``bfill``/``fillna(method=)``: each chunk gets the last (first) valid values of
  the chunks before (after) it through a chain of tiny "carry" chunks;
- ``reset_index``: a new default RangeIndex with global offsets (row lengths resolved first);
- ``Series.map``/``isin`` with a Series tileable, ``__setitem__`` with a differently indexed
  Series: the small side is concatenated into one chunk and passed whole to every chunk;
- ``DataFrame.apply(axis=0)`` needs whole columns: the frame is concatenated into one chunk.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from pandas.api.types import is_list_like

from ..tiling.core import ensure_known, new_key
from ..tiling.tileable import Tileable
from .arithmetic import _concat_or_meta, align, known_labels, positional_like
from .core import (
    DataFrame, DataFrameOperand, Series, frame_nsplits, infer_meta, nan, register_method,
)
from .map import aligned, infer_meta_of, is_pandas_tileable, is_scalar_tileable, map_rows

__all__: list[str] = []

_no_default = pd.api.extensions.no_default


def _isnan(x):
    return isinstance(x, float) and math.isnan(x)


# ---- generic kernels ----------------------------------------------------------------------


def _call(obj, name, args, kwargs):
    return getattr(obj, name)(*args, **kwargs)


def _simple(self, name, *args, rows="same", preserves_index=True, **kwargs):
    """``self.<name>(*args, **kwargs)`` chunk by chunk (all arguments are constants)."""
    return map_rows(_call, self, name, args, kwargs, rows=rows, preserves_index=preserves_index, name=name)


def _call_with(obj, other, name, args, kwargs):
    """``obj.<name>(other, *args, **kwargs)`` (``other`` an aligned chunk or a whole object)."""
    return getattr(obj, name)(other, *args, **kwargs)


def _safe_meta(func, *args, fallback, **kwargs):
    """Inferred metadata, or ``fallback`` when the user function fails on sample data
    (it then runs, and raises its own errors, at execution)."""
    try:
        return infer_meta(func, *args, **kwargs)
    except Exception:  # noqa: BLE001 - the user function may raise anything on sample data
        return fallback


def _inplace(self, out, inplace):
    """pandas' ``inplace=True`` as Mars does it: the handle now points at the result's
    data (other handles of the old data are unchanged) and the call returns None."""
    if inplace:
        self.data = out.data
        return None
    return out


# ---- one whole chunk, and broadcasting it ----------------------------------------------------


class Gather(DataFrameOperand):
    """All rows in one chunk (for small objects passed whole to every chunk of another)."""

    _op_name = "gather-rows"

    def tile(self):
        (t,) = self.inputs
        out = self.output
        n = t.shape[0]
        c = self.new_chunk(0, n, _concat_or_meta, (list(t.chunks), t.meta))
        return [([c], frame_nsplits(out.meta, (n,)))]


def gather(obj):
    """``obj`` as a single-chunk tileable (same labels and order)."""
    if obj.chunks is not None and len(obj.chunks) == 1:
        return obj
    data = obj.data
    op = Gather([data])
    return op.new_output(data.meta, data.shape[0], index_key=new_key("index-whole", data.index_key), range_index=data.range_index)


class BroadcastMap(DataFrameOperand):
    """``func(chunk, whole, *args)`` for every chunk of ``inputs[0]``; ``inputs[1]`` has one chunk."""

    _op_name = "broadcast-map"

    def tile(self):
        t, w = self.inputs
        out = self.output
        wc = w.chunks[0]
        chunks = []
        for i, c in enumerate(t.chunks):
            n = c.shape[0] if self.rows == "same" else nan
            chunks.append(self.new_chunk(i, n, self.func, (c, wc, *self.args), inputs=[c, wc]))
        return [(chunks, frame_nsplits(out.meta, tuple(c.shape[0] for c in chunks)))]


def broadcast_map(func, t, whole, *args, meta=None, rows="same", preserves_index=True):
    w = gather(whole)
    if meta is None:
        meta = infer_meta(func, t.data.meta, w.data.meta, *args)
    op = BroadcastMap([t.data, w.data], func=func, args=args, rows=rows)
    keep = preserves_index and rows == "same"
    return op.new_output(
        meta, t.shape[0] if rows == "same" else nan,
        index_key=t.data.index_key if keep else None, range_index=t.data.range_index if keep else False,
    )


def _with_labels_like(self, other):
    """``other`` (a tileable) brought to ``self``'s partitioning when their labels are equal
    (re-cut), else None."""
    if aligned(self, other):
        return other
    ls, lo = known_labels(self.data), known_labels(other.data)
    if ls is not None and lo is not None and not ls.equals(lo):
        return None
    try:
        return align(self, other, require_equal=True)[1] if (ls is not None and lo is not None) else None
    except ValueError:
        return None


# ---- assign / setitem helpers --------------------------------------------------------------


@register_method(DataFrame)
def assign(self, **kwargs):
    """pandas' ``assign``: callables are called with the (lazy) frame being built."""
    new = DataFrame(self.data)
    for k, v in kwargs.items():
        if callable(v) and not isinstance(v, Tileable):
            v = v(new)
        new[k] = v
    return new


@register_method(DataFrame, Series)
def copy(self, deep=True):
    return _simple(self, "copy", deep=deep)


# ---- dtypes -------------------------------------------------------------------------------


def _needs_global_categories(meta, dtype):
    def bad(dt, current):
        if isinstance(dt, str) and dt == "category":
            return not isinstance(current, pd.CategoricalDtype)
        return isinstance(dt, pd.CategoricalDtype) and dt.categories is None
    if isinstance(dtype, dict):
        return any(bad(dt, meta.dtypes[c] if isinstance(meta, pd.DataFrame) else meta.dtype) for c, dt in dtype.items() if not isinstance(meta, pd.DataFrame) or c in meta.columns)
    if isinstance(meta, pd.DataFrame):
        return any(bad(dtype, dt) for dt in meta.dtypes)
    return bad(dtype, meta.dtype)


@register_method(DataFrame, Series)
def astype(self, dtype, copy=None, errors="raise"):
    """pandas' ``astype`` (a dtype or a dict column -> dtype).  ``"category"`` without
    explicit categories would give different categories per chunk: pass a
    ``pd.CategoricalDtype(categories)`` instead."""
    if isinstance(dtype, dict) and isinstance(self, DataFrame):
        missing = [c for c in dtype if c not in self.columns]
        if missing:
            raise KeyError("Only a column name can be used for the key in a dtype mappings argument. "
                           f"'{missing[0]}' not found in columns.")
    if _needs_global_categories(self.data.meta, dtype):
        raise NotImplementedError(
            "astype('category') needs the categories of all chunks: pass pd.CategoricalDtype(categories=...)"
        )
    return _simple(self, "astype", dtype, errors=errors)


# ---- missing values -------------------------------------------------------------------------


for _n in ("isna", "isnull", "notna", "notnull"):
    def _make(name):
        def method(self):
            return _simple(self, name)
        method.__name__ = name
        method.__doc__ = f"pandas' ``{name}`` chunk by chunk."
        return method
    register_method(DataFrame, Series, name=_n)(_make(_n))


def _edge_valid(obj, method):
    filled = obj.ffill() if method == "ffill" else obj.bfill()
    return filled.iloc[-1:] if method == "ffill" else filled.iloc[:1]


def _combine_carry(carry, edge, method):
    if carry is None:
        return edge
    if method == "ffill":
        both = pd.concat([carry, edge])
        return both.ffill().iloc[-1:]
    both = pd.concat([edge, carry])
    return both.bfill().iloc[:1]


def _fill_with_carry(obj, carry, method, limit):
    if carry is None or len(carry) == 0 or len(obj) == 0:
        return obj.ffill(limit=limit) if method == "ffill" else obj.bfill(limit=limit)
    if method == "ffill":
        both = pd.concat([carry, obj])
        res = both.ffill(limit=limit).iloc[len(carry):]
    else:
        both = pd.concat([obj, carry])
        res = both.bfill(limit=limit).iloc[: len(obj)]
    return res.astype(obj.dtypes.to_dict()) if isinstance(obj, pd.DataFrame) and not res.dtypes.equals(obj.dtypes) else res


class FillDirectional(DataFrameOperand):
    """ffill/bfill across chunks: a chain of carry chunks holds the last (first) valid
    values of all chunks before (after) each chunk."""

    _op_name = "fill-directional"

    def tile(self):
        (t,) = self.inputs
        out = self.output
        method = self.method
        chunks = t.chunks
        n = len(chunks)
        order = range(n) if method == "ffill" else range(n - 1, -1, -1)
        carries = {}
        carry = None
        for k, i in enumerate(order):
            carries[i] = carry
            if k == len(order) - 1:
                break
            edge = self.new_chunk(i, nan, _edge_valid, (chunks[i], method), suffix="-edge", meta=t.meta)
            carry = self.new_chunk(i, nan, _combine_carry, (carry, edge, method), suffix="-carry", meta=t.meta)
        res = [
            self.new_chunk(i, chunks[i].shape[0], _fill_with_carry, (chunks[i], carries[i], method, self.limit))
            for i in range(n)
        ]
        return [(res, frame_nsplits(out.meta, tuple(c.shape[0] for c in res)))]


def _directional(self, method, limit=None):
    if limit is not None and (not isinstance(limit, int) or limit <= 0):
        raise ValueError("Limit must be greater than 0")
    if limit is not None:
        raise NotImplementedError("limit= with ffill/bfill across chunks is not supported")
    meta = infer_meta(lambda x: getattr(x, method)(), self.data.meta)
    op = FillDirectional([self.data], method=method, limit=limit)
    return op.new_output(meta, self.shape[0], index_key=self.data.index_key, range_index=self.data.range_index)


@register_method(DataFrame, Series)
def ffill(self, *, axis=None, inplace=False, limit=None, limit_area=None):
    if axis not in (None, 0, "index", "rows"):
        raise NotImplementedError("ffill along the columns is not supported")
    if limit_area is not None:
        raise NotImplementedError("limit_area= is not supported")
    return _inplace(self, _directional(self, "ffill", limit), inplace)


@register_method(DataFrame, Series)
def bfill(self, *, axis=None, inplace=False, limit=None, limit_area=None):
    if axis not in (None, 0, "index", "rows"):
        raise NotImplementedError("bfill along the columns is not supported")
    if limit_area is not None:
        raise NotImplementedError("limit_area= is not supported")
    return _inplace(self, _directional(self, "bfill", limit), inplace)


@register_method(DataFrame, Series)
def fillna(self, value=None, method=None, axis=None, inplace=False, limit=None):
    """pandas' ``fillna``: a scalar, dict or Series ``value`` (local or a tileable; a Series
    value is matched by label), a 0-d tileable (``s.mean()``), or Mars's
    ``method='ffill'|'bfill'`` across chunks."""
    return _inplace(self, _fillna(self, value, method, axis, limit), inplace)


def _fillna(self, value, method, axis, limit):
    if method is not None:
        if value is not None:
            raise ValueError("Cannot specify both 'value' and 'method'.")
        m = {"ffill": "ffill", "pad": "ffill", "bfill": "bfill", "backfill": "bfill"}.get(method)
        if m is None:
            raise ValueError(f"Invalid fill method. Expecting pad (ffill) or backfill (bfill). Got {method}")
        return _directional(self, m, limit)
    if value is None:
        raise ValueError("Must specify a fill 'value' or 'method'.")
    kw = {} if axis is None else {"axis": axis}
    if limit is not None:
        raise NotImplementedError("limit= is not supported")
    if is_pandas_tileable(value):
        v = _with_labels_like(self, value)
        if v is not None:
            return map_rows(_call_with, self, v, "fillna", (), kw, name="fillna")
        return broadcast_map(_call_with, self, value, "fillna", (), kw)
    if is_scalar_tileable(value):
        return map_rows(_call_with, self, value, "fillna", (), kw, name="fillna")
    return _simple(self, "fillna", value, **kw)


@register_method(DataFrame, Series)
def dropna(self, *, axis=0, how=_no_default, thresh=_no_default, subset=None, inplace=False, ignore_index=False):
    if axis not in (0, "index", "rows"):
        raise NotImplementedError("dropna along the columns is not supported")
    kw = {}
    if how is not _no_default:
        kw["how"] = how
    if thresh is not _no_default:
        kw["thresh"] = thresh
    if subset is not None:
        if isinstance(self, DataFrame):
            sub = [subset] if not is_list_like(subset) else list(subset)
            missing = [c for c in sub if c not in self.columns]
            if missing:
                raise KeyError(missing)
        kw["subset"] = subset
    out = _simple(self, "dropna", rows="unknown", preserves_index=False, **kw)
    if ignore_index:
        out = reset_index(out, drop=True)
    return _inplace(self, out, inplace)


# ---- where / mask / clip / abs / round --------------------------------------------------------


def _where_kernel(obj, cond, other, name, meta=None, axis=None):
    out = getattr(obj, name)(cond, other, axis=axis)
    if meta is not None:
        from .arithmetic import _conform

        out = _conform(out, meta)
    return out


def _replaced_everywhere(obj, cond, other, name, axis=None):
    """The structure of ``where``/``mask`` when some values are replaced (dtypes upcast)."""
    full = (name == "mask")
    along = 0 if axis is None else axis
    if isinstance(other, (pd.DataFrame, pd.Series)) and len(other) and (
            isinstance(obj, pd.Series) or along == 0 or isinstance(other, pd.DataFrame)):
        # a stand-in (or local value) with other labels would align to NaN and upcast where
        # the real, aligned value does not: give it the object's labels
        other = other.iloc[np.arange(len(obj)) % len(other)].set_axis(obj.index, axis=0)
        # pandas keeps an int column int when the float values put in are all integral:
        # assume they are not (a stand-in's 1.0 would say int64)
        if isinstance(other, pd.Series):
            other = other + 0.5 if other.dtype.kind == "f" else other
        else:
            other = other.assign(**{c: other[c] + 0.5 for c in other.columns if other[c].dtype.kind == "f"}) \
                if all(isinstance(c, str) for c in other.columns) else other
    if isinstance(cond, (pd.DataFrame, pd.Series)):
        cond = (cond.astype(bool) & False) | full
        if len(cond) == len(obj):
            cond = cond.set_axis(obj.index, axis=0)
    return getattr(obj, name)(cond, other, axis=axis)


def _where(self, name, cond, other, axis=None, level=None):
    """``where``/``mask`` chunk by chunk: a tileable ``cond``/``other`` is brought to the
    object's partitioning (labels must be equal), a 0-d tileable ``other`` is a scalar,
    ``axis=0`` aligns a Series ``other`` with the rows of a DataFrame."""
    if level is not None:
        raise NotImplementedError("where/mask with level= is not supported")
    if axis is not None:
        axis = self.data.meta._get_axis_number(axis)
    if callable(cond) and not isinstance(cond, Tileable):
        cond = cond(self)
    if callable(other) and not isinstance(other, Tileable):
        other = other(self)
    args = []
    for v in (cond, other):
        if is_pandas_tileable(v):
            w = _with_labels_like(self, v)
            if w is None:
                raise NotImplementedError(
                    f"{name}() with a condition/other whose index differs from the object's is not supported"
                )
            v = w
        elif is_scalar_tileable(v):
            pass
        elif isinstance(v, Tileable):  # a tensor: positional, like an array
            v = positional_like(self, v)
        elif isinstance(v, (np.ndarray, list)) and np.ndim(v) >= 1:
            v = np.asarray(v)
            if isinstance(self, Series) or v.ndim == 2:
                v = positional_like(self, v) if isinstance(self, Series) else _positional_frame(self, v)
        args.append(v)
    if other is _no_default:
        args[1] = np.nan
    try:
        meta = infer_meta_of(_replaced_everywhere, self, args[0], args[1], name, axis)
    except Exception:  # noqa: BLE001 - no upcast structure from sample data: chunks keep their own
        meta = None
    return map_rows(_where_kernel, self, args[0], args[1], name, meta, axis, name=name)


def _positional_frame(self, arr):
    from .arithmetic import _prepare_local

    return _prepare_local(self, arr, "index")


@register_method(DataFrame, Series)
def where(self, cond, other=np.nan, inplace=False, axis=None, level=None, errors="raise", try_cast=False):
    """pandas' ``where`` (Mars's signature; ``errors``/``try_cast`` are accepted and, as in
    pandas, have no effect)."""
    return _inplace(self, _where(self, "where", cond, other, axis, level), inplace)


@register_method(DataFrame, Series)
def mask(self, cond, other=_no_default, inplace=False, axis=None, level=None, errors="raise", try_cast=False):
    """pandas' ``mask`` (Mars's signature; ``errors``/``try_cast`` have no effect)."""
    return _inplace(self, _where(self, "mask", cond, other, axis, level), inplace)


def _clip_kernel(obj, lower, upper, kwargs):
    return obj.clip(lower, upper, **kwargs)


@register_method(DataFrame, Series)
def clip(self, lower=None, upper=None, *, axis=None, inplace=False, **kwargs):
    """pandas' ``clip``; bounds may be scalars, 0-d tileables, or array-likes/Series
    (tileables are aligned with the object, as pandas aligns them)."""
    kw = {} if axis is None else {"axis": axis}
    kw.update(kwargs)
    bounds = []
    for v in (lower, upper):
        if is_pandas_tileable(v):
            w = _with_labels_like(self, v)
            if w is None:
                raise NotImplementedError("clip with tileable bounds whose index differs from the object's is not supported")
            v = w
        elif isinstance(v, Tileable) and not is_scalar_tileable(v):
            v = positional_like(self, v)
        bounds.append(v)
    return _inplace(self, map_rows(_clip_kernel, self, bounds[0], bounds[1], kw, name="clip"), inplace)


@register_method(DataFrame, Series)
def abs(self):  # noqa: A001 - pandas' name
    return _simple(self, "abs")


@register_method(DataFrame, Series)
def round(self, decimals=0, *args, **kwargs):  # noqa: A001 - pandas' name
    return _simple(self, "round", decimals)


# ---- map / apply ------------------------------------------------------------------------------


@register_method(Series)
def map(self, arg, na_action=None, *, dtype=None, meta=None):  # noqa: A001 - pandas' name
    """pandas' ``Series.map`` with a dict, a function or a Series (a Series tileable is
    passed whole to every chunk).  ``dtype=``/``meta=`` (Mars) give the output structure
    when running the function on sample data cannot."""
    if na_action not in (None, "ignore"):
        raise ValueError(f"na_action must either be 'ignore' or None, {na_action!r} was passed")
    if not (callable(arg) or isinstance(arg, (dict, pd.Series)) or is_pandas_tileable(arg) or hasattr(arg, "__getitem__")):
        raise TypeError(f"map() needs a function, dict or Series, got {type(arg).__name__}")
    if meta is None and dtype is not None:
        meta = pd.Series([], dtype=dtype, name=self.name, index=self.data.meta.index)
    if is_pandas_tileable(arg):
        return broadcast_map(_call_with, self, arg, "map", (na_action,), {}, meta=meta)
    if meta is None:
        meta = _safe_meta(
            lambda x: x.map(arg, na_action), self.data.meta,
            fallback=pd.Series([], dtype=object, name=self.name, index=self.data.meta.index),
        )
    return map_rows(_call, self, "map", (arg, na_action), {}, meta=meta, name="map")


def _apply_rows(obj, func, args, kwargs):
    return obj.apply(func, *args, **kwargs)


@register_method(DataFrame, Series)
def apply(self, func, axis=0, *args, **kwargs):
    """pandas' ``apply``: on a Series element-wise (chunk by chunk); on a DataFrame with
    ``axis=1`` row by row (chunk by chunk); ``axis=0`` needs whole columns, so the frame is
    gathered into one chunk first.  Mars's ``dtype=``/``dtypes=``/``meta=`` keywords give
    the output structure when inferring it from sample data fails (else object dtype)."""
    dtype = kwargs.pop("dtype", None)
    dtypes = kwargs.pop("dtypes", None)
    meta = kwargs.pop("meta", None)
    kwargs.pop("output_type", None)
    if isinstance(func, (str, list, dict)):
        raise NotImplementedError("apply with function names/lists/dicts is not supported: use agg/transform")
    if not callable(func):
        raise TypeError(f"'{type(func).__name__}' object is not callable")
    if isinstance(self, Series):
        fargs = kwargs.pop("args", args)
        pkw = {"args": tuple(fargs), **kwargs}
        if meta is None and dtype is not None:
            meta = pd.Series([], dtype=dtype, name=self.name, index=self.data.meta.index)
        if meta is None:
            meta = _safe_meta(_call, self.data.meta, "apply", (func,), pkw,
                              fallback=pd.Series([], dtype=object, name=self.name, index=self.data.meta.index))
        return map_rows(_call, self, "apply", (func,), pkw, meta=meta, name="apply")
    if axis not in (0, 1, "index", "columns"):
        raise ValueError(f"No axis named {axis} for object type DataFrame")
    axis = 1 if axis in (1, "columns") else 0
    fargs = kwargs.pop("args", args)
    pkw = {"axis": axis, "args": tuple(fargs), **kwargs}
    if meta is None and dtypes is not None:
        meta = pd.DataFrame({c: pd.Series([], dtype=dt) for c, dt in dict(dtypes).items()}, index=self.data.meta.index)
    if meta is None and dtype is not None:
        meta = pd.Series([], dtype=dtype, index=self.data.meta.index)
    if axis == 1:
        if meta is None:
            meta = _safe_meta(_call, self.data.meta, "apply", (func,), pkw,
                              fallback=pd.Series([], dtype=object, index=self.data.meta.index))
        return map_rows(_call, self, "apply", (func,), pkw, meta=meta, name="apply")
    whole = gather(self)
    if meta is None:
        meta = _safe_meta(_call, self.data.meta, "apply", (func,), pkw, fallback=pd.Series([], dtype=object))
    return map_rows(_call, whole, "apply", (func,), pkw, meta=meta, rows="unknown", preserves_index=False, name="apply")


@register_method(DataFrame, Series)
def transform(self, func, axis=0, *args, **kwargs):
    """pandas' ``transform`` with element-wise/row-preserving functions (chunk by chunk)."""
    if axis not in (0, "index"):
        raise NotImplementedError("transform along the columns is not supported")
    return map_rows(_transform_kernel, self, func, args, kwargs, name="transform")


def _transform_kernel(obj, func, args, kwargs):
    return obj.transform(func, 0, *args, **kwargs)


@register_method(DataFrame, Series)
def replace(self, to_replace=None, value=_no_default, inplace=False, limit=None, regex=False, method=_no_default):
    """pandas' ``replace`` chunk by chunk (Mars's signature; ``limit``/``method`` were
    removed from pandas and are refused unless left at their defaults)."""
    if limit is not None or method is not _no_default:
        raise TypeError("replace() got an unexpected keyword argument 'limit'/'method' (removed from pandas)")
    if value is _no_default:
        out = _simple(self, "replace", to_replace, regex=regex)
    else:
        out = _simple(self, "replace", to_replace, value, regex=regex)
    return _inplace(self, out, inplace)


# ---- rename / drop ----------------------------------------------------------------------------


@register_method(DataFrame, Series)
def rename(self, mapper=None, *, index=None, columns=None, axis=None, copy=None, inplace=False, level=None, errors="ignore"):
    """pandas' ``rename``: column mappers keep the rows; index mappers relabel every chunk."""
    return _inplace(self, _rename(self, mapper, index, columns, axis, level, errors), inplace)


def _rename(self, mapper, index, columns, axis, level, errors):
    if isinstance(self, Series):
        target = index if index is not None else mapper
        if target is None:
            return copy_(self)
        if not (callable(target) or isinstance(target, (dict, pd.Series))):  # a new name
            return map_rows(_call, self, "rename", (target,), {}, name="rename")
        if errors == "raise":
            raise NotImplementedError("errors='raise' with an index mapper is not supported")
        return map_rows(_call, self, "rename", (target,), {"level": level}, preserves_index=False, name="rename")
    kw = {"level": level, "errors": errors}
    if mapper is not None:
        if index is not None or columns is not None:
            raise TypeError("Cannot specify both 'mapper' and any of 'index' or 'columns'")
        if axis in (1, "columns"):
            columns = mapper
        else:
            index = mapper
    relabels = index is not None
    if relabels and errors == "raise":
        raise NotImplementedError("errors='raise' with an index mapper is not supported")
    out = map_rows(_call, self, "rename", (), {"index": index, "columns": columns, **kw}, preserves_index=not relabels, name="rename")
    return out


copy_ = copy


def _drop_kernel(obj, labels, kwargs):
    return obj.drop(labels, **kwargs)


def _label_list(labels):
    """Local labels, or the chunk results (Series, Index or arrays) of a tileable of labels."""
    if isinstance(labels, list) and labels and all(isinstance(p, (pd.Series, pd.Index, np.ndarray)) for p in labels):
        return [x for p in labels for x in p.tolist()]
    return labels


def _found_labels(obj, labels):
    labels = pd.Index(_label_list(labels))
    return labels[labels.isin(obj.index)]


def _check_found(founds, labels):
    # pd.Index.isin, not a set: NaN labels find NaN (a set lookup of nan misses another nan)
    found = pd.Index([x for f in founds for x in f])
    labels = pd.Index(_label_list(labels))
    missing = labels[~labels.isin(found)]
    if len(missing):
        raise KeyError(f"{list(missing)} not found in axis")
    return None


def _drop_rows_checked(obj, check, labels):
    return obj.drop(_label_list(labels), errors="ignore")


class DropRows(DataFrameOperand):
    """Drop row labels: a list, or the one chunk of a second input (a tileable of labels)."""

    _op_name = "drop-rows"

    def tile(self):
        t = self.inputs[0]
        out = self.output
        labels = self.labels if len(self.inputs) == 1 else list(self.inputs[1].chunks)
        check = None
        if self.errors == "raise":
            founds = [self.new_chunk(i, nan, _found_labels, (c, labels), suffix="-found", meta=pd.Series([], dtype=object)) for i, c in enumerate(t.chunks)]
            check = self.new_chunk(0, nan, _check_found, (founds, labels), suffix="-check", meta=pd.Series([], dtype=object))
        chunks = [self.new_chunk(i, nan, _drop_rows_checked, (c, check, labels)) for i, c in enumerate(t.chunks)]
        return [(chunks, frame_nsplits(out.meta, (nan,) * len(chunks)))]


@register_method(DataFrame, Series)
def drop(self, labels=None, *, axis=0, index=None, columns=None, level=None, inplace=False, errors="raise"):
    """pandas' ``drop`` of columns (checked at build time) or row labels (checked across
    all chunks when ``errors='raise'``: the missing labels raise KeyError at execution).
    Row labels may be a tileable (Series, Index or tensor): its values are gathered into one
    chunk, an input of every chunk's drop."""
    if level is not None:
        raise NotImplementedError("level= is not supported")
    if labels is not None:
        if index is not None or columns is not None:
            raise ValueError("Cannot specify both 'labels' and 'index'/'columns'")
        if axis in (1, "columns"):
            if isinstance(self, Series):
                raise ValueError("No axis named 1 for object type Series")
            columns = labels
        else:
            index = labels
    out = self
    if columns is not None:
        if isinstance(columns, Tileable):
            raise TypeError("drop(columns=) needs local labels (the columns of the result must be known)")
        out = map_rows(_drop_kernel, out, columns, {"axis": 1, "errors": errors}, name="drop")
    if index is not None:
        if isinstance(index, Tileable):  # its chunks are inputs of every chunk's drop
            if index.ndim != 1:
                raise ValueError(f"labels must be 1-dimensional, got {index.ndim} dimensions")
            op = DropRows([out.data, index.data], labels=None, errors=errors)
        else:
            labs = list(index) if is_list_like(index) else [index]
            op = DropRows([out.data], labels=labs, errors=errors)
        out = op.new_output(out.data.meta, nan)
    return _inplace(self, out, inplace)


# ---- index manipulation -------------------------------------------------------------------------


def _reset_index_kernel(obj, start, kwargs):
    out = obj.reset_index(**kwargs)
    if start is not None:
        out.index = pd.RangeIndex(start, start + len(out))
    return out


class ResetIndex(DataFrameOperand):
    _op_name = "reset-index"

    def tile(self):
        (t,) = self.inputs
        out = self.output
        yield from ensure_known(t)
        rows = tuple(int(x) for x in t.nsplits[0])
        chunks = []
        start = 0
        for i, (c, n) in enumerate(zip(t.chunks, rows)):
            chunks.append(self.new_chunk(i, n, _reset_index_kernel, (c, start if self.new_range else None, self.kwargs)))
            start += n
        return [(chunks, frame_nsplits(out.meta, rows))]


@register_method(DataFrame, Series)
def reset_index(self, level=None, *, drop=False, name=_no_default, inplace=False, allow_duplicates=False, names=None):
    """pandas' ``reset_index``: the new default RangeIndex is global across the chunks
    (unknown row lengths are resolved first)."""
    if inplace and isinstance(self, Series) and not drop:
        raise TypeError("Cannot reset_index inplace on a Series to create a DataFrame")
    kw = {"level": level, "drop": drop, "allow_duplicates": allow_duplicates}
    if isinstance(self, Series):
        if name is not _no_default:
            kw["name"] = name
    else:
        if names is not None:
            kw["names"] = names
    meta = infer_meta(lambda x: x.reset_index(**kw), self.data.meta)
    new_range = level is None or (isinstance(self.data.meta.index, pd.MultiIndex) is False) or \
        (len(level if is_list_like(level) else [level]) >= self.data.meta.index.nlevels)
    op = ResetIndex([self.data], kwargs=kw, new_range=new_range)
    return _inplace(self, op.new_output(meta, self.shape[0], range_index=new_range), inplace)


@register_method(DataFrame)
def set_index(self, keys, *, drop=True, append=False, inplace=False, verify_integrity=False):
    """pandas' ``set_index`` with column label(s) or an aligned Series; rows keep their order."""
    return _inplace(self, _set_index(self, keys, drop, append, verify_integrity), inplace)


def _set_index(self, keys, drop, append, verify_integrity):
    if verify_integrity:
        raise NotImplementedError("verify_integrity=True is not supported")
    from .core import Index

    if isinstance(keys, Index):  # an md Index not built from self: assigned by position, as pandas
        from .index import set_index_by

        return set_index_by(self, keys, append=append)
    if is_pandas_tileable(keys):
        k = _with_labels_like(self, keys)
        if k is None:
            raise ValueError("set_index with a Series whose index differs from the frame's is not supported")
        return map_rows(_set_index_series, self, k, drop, append, preserves_index=False, name="set-index")
    lst = keys if isinstance(keys, list) else [keys]
    missing = [k for k in lst if not isinstance(k, (pd.Series, pd.Index, np.ndarray)) and k not in self.columns]
    if missing:
        raise KeyError(f"None of {missing} are in the columns")
    if any(isinstance(k, (pd.Series, pd.Index, np.ndarray, list)) for k in lst):
        raise NotImplementedError("set_index with local arrays is not supported")
    return map_rows(_call, self, "set_index", (keys,), {"drop": drop, "append": append}, preserves_index=False, name="set-index")


def _set_index_series(df, s, drop, append):
    return df.set_index(s, drop=drop, append=append)


# ---- query / eval --------------------------------------------------------------------------------


def _at_names(expr):
    from pandas.core.computation.parsing import tokenize_string

    names = []
    toks = list(tokenize_string(expr))
    for a, b in zip(toks, toks[1:]):
        if a[1] == "@" and b[0] == 1:
            names.append(b[1])
    return names


def _resolve_locals(expr, level, local_dict, global_dict):
    """Values of the ``@name`` variables of ``expr`` from the caller's frame, found by
    pandas' own scope resolver (locals, then globals, as ``DataFrame.query`` does)."""
    from pandas.core.computation.scope import Scope

    if not isinstance(expr, str):
        raise ValueError(f"expr must be a string to be evaluated, {type(expr)} given")
    scope = Scope(level + 1, global_dict=global_dict, local_dict=local_dict)
    return {n: scope.resolve(n, is_local=True) for n in _at_names(expr)}


def _query_kernel(df, expr, resolved, kwargs):
    return df.query(expr, local_dict=resolved, global_dict={}, **kwargs)


def _eval_kernel(df, expr, resolved, kwargs):
    return df.eval(expr, local_dict=resolved, global_dict={}, **kwargs)


@register_method(DataFrame)
def query(self, expr, *, inplace=False, local_dict=None, global_dict=None, level=0, **kwargs):
    """pandas' ``query`` chunk by chunk; ``@variables`` are resolved now, in the caller's
    scope, and travel with the expression."""
    resolved = _resolve_locals(expr, level + 1, local_dict, global_dict)
    meta = infer_meta(_query_kernel, self.data.meta, expr, resolved, kwargs)
    out = map_rows(_query_kernel, self, expr, resolved, kwargs, meta=meta, rows="unknown", preserves_index=False, name="query")
    return _inplace(self, out, inplace)


@register_method(DataFrame)
def eval(self, expr, *, inplace=False, local_dict=None, global_dict=None, level=0, **kwargs):  # noqa: A001 - pandas' name
    """pandas' ``DataFrame.eval`` chunk by chunk (``@variables`` resolved now); with
    ``inplace=True`` an assignment expression replaces the frame's data (returns None)."""
    resolved = _resolve_locals(expr, level + 1, local_dict, global_dict)
    meta = infer_meta(_eval_kernel, self.data.meta, expr, resolved, kwargs)
    if not isinstance(meta, (pd.DataFrame, pd.Series)):
        raise NotImplementedError("eval expressions giving a scalar are not supported")
    out = map_rows(_eval_kernel, self, expr, resolved, kwargs, meta=meta, name="eval")
    if inplace:
        if not isinstance(meta, pd.DataFrame):
            raise ValueError("Cannot operate inplace if there is no assignment")
        return _inplace(self, out, inplace)
    return out


# ---- isin / between --------------------------------------------------------------------------------


def _is_index(t):
    from .core import Index

    return isinstance(t, Index)


def _isin_parts(obj, parts):
    return obj.isin(_label_list(parts))


@register_method(DataFrame, Series)
def isin(self, values):
    """pandas' ``isin``; ``values`` may be a tileable (a Series, Index or tensor, gathered
    into one chunk and passed to every chunk; a DataFrame's ``isin`` with a Series or
    DataFrame matches labels, as in pandas)."""
    if isinstance(values, Tileable):
        if isinstance(self, DataFrame) and is_pandas_tileable(values) and not _is_index(values):
            return broadcast_map(_call_with, self, values, "isin", (), {})
        from .map import AllChunks

        return map_rows(_isin_parts, self, AllChunks(values), name="isin")
    if isinstance(values, str) or not (is_list_like(values) or isinstance(values, dict)):
        raise TypeError(
            "only list-like objects are allowed to be passed to isin(), "
            f"you passed a `{type(values).__name__}`"
        )
    if isinstance(values, (set, frozenset)):
        values = list(values)
    return _simple(self, "isin", values)


@register_method(Series)
def between(self, left, right, inclusive="both"):
    if inclusive not in ("both", "neither", "left", "right"):
        raise ValueError("Inclusive has to be either string of 'both','left', 'right', or 'neither'.")
    return _simple(self, "between", left, right, inclusive=inclusive)
