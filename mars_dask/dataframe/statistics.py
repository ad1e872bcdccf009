"""Statistics built on the tree reductions of :mod:`.reduction`: ``agg``/``aggregate``,
``memory_usage``, ``corr``/``corrwith``/``Series.corr``/``autocorr``, ``dot``/``@``, and
monotonicity (``is_monotonic*``, Mars's ``check_monotonic``), on DataFrame, Series and (as
Mars has them) Index.

- ``agg`` with function names runs each named reduction as its own tree reduction and puts
  the small results together in one final task, shaped and typed as pandas shapes them (the
  structure comes from running pandas on a stand-in, so pandas' errors and labels are its
  own).  A user callable cannot be split into partials: its columns are gathered.
- ``memory_usage``: per-chunk usage summed; the part of a column's usage that does not
  depend on its length (a categorical's categories, an Arrow array's first offset) is that
  of the empty column, counted once, so the total equals pandas' for numpy, categorical and
  object columns (deep too) and a RangeIndex; Arrow string validity bitmaps may differ by a
  byte per chunk.
- Pearson correlations are chunked: every chunk gives, for each pair of columns, the count,
  means, sums of squared deviations and co-deviation over the rows where *both* values are
  present (pandas' pairwise-complete rule), merged up the tree with Chan et al.'s formulas.
  Spearman needs global ranks and Kendall all pairs of rows: for those methods (and
  callables), as in Mars, the columns are gathered and pandas computes the result.
- ``dot``: a frame's rows times the (small, ``ncols``-row) right-hand side, chunk by chunk;
  ``Series @ Series``: per-chunk dot products summed by the tree.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from ._meta import meta_nonempty

from ..tensor.core import Tensor
from ..tiling.tileable import Tileable
from .core import DataFrame, DataFrameOperand, Index, Series, frame_nsplits, nan, register_method
from .map import aligned, map_rows
from .reduction import (
    GatherReducer, Reducer, _as_frame, _call_method, _cast_like, _check_axis, _float_matrix,
    _np_dtype, _numeric_positions, _probe, _quiet, _validate_bool, fold_partials, tree_reduce,
)

__all__: list[str] = []


# ---- putting small results together -------------------------------------------------------


def _value_of(assemble, meta, chunks):
    return assemble(meta, list(chunks))


@_quiet
def _assemble_kernel(specs, build, args):
    return build([_value_of(*s) for s in specs], *args)


class Assemble(DataFrameOperand):
    """One task that receives the whole values of several (small) tileables and builds the
    result with ``build(values, *args)``: the last step of ``agg`` with several functions."""

    _op_name = "assemble"

    def tile(self):
        specs = [(cls._assemble, cls._assemble_meta(t), list(t.chunks)) for cls, t in zip(self.classes, self.inputs)]
        out = self.output
        chunk = self.new_chunk(0, self.nrows, _assemble_kernel, (specs, self.build, self.args),
                               inputs=[c for s in specs for c in s[2]], meta=out.meta)
        return [([chunk], frame_nsplits(out.meta, (self.nrows,)))]


def assemble(parts, build, args, meta, nrows):
    """A DataFrame/Series ``build([values of parts], *args)`` (one chunk, ``meta``)."""
    op = Assemble([p.data for p in parts], classes=tuple(type(p) for p in parts), build=build, args=tuple(args),
                  nrows=nrows)
    return op.new_output(meta, nrows)


# ---- agg / aggregate --------------------------------------------------------------------------


def _func_label(f):
    if isinstance(f, str):
        return f
    return getattr(f, "__name__", repr(f))


def _build_frame(values, cells, index, columns, meta):
    """pandas' list/dict ``agg`` result: one column per input column, each made of its
    functions' results (missing cells NaN), then pandas' dtypes where the values allow."""
    cols = []
    for j in range(len(columns)):
        row = {}
        for (r, c), (k, key) in cells.items():
            if c == j:
                v = values[k]
                row[r] = v[key] if key is not None else v
        cols.append(pd.Series([row.get(i, np.nan) for i in range(len(index))], index=index))
    if not cols:
        return meta.iloc[:0]
    res = pd.concat(cols, axis=1)
    res.columns = columns
    return _cast_like(res, meta)


def _build_series(values, cells, index, meta):
    vals = []
    for i in range(len(index)):
        k, key = cells[i]
        vals.append(values[k][key] if key is not None else values[k])
    try:
        return pd.Series(vals, index=index, name=meta.name, dtype=meta.dtype)
    except (TypeError, ValueError):
        return pd.Series(vals, index=index, name=meta.name)


@_quiet
def _agg_kernel(obj, func, args, kwargs):
    return obj.agg(func, 0, *args, **kwargs)


def _agg_rows_kernel(df, func, args, kwargs):
    return df.agg(func, 1, *args, **kwargs)


def _gathered_agg(obj, func, args, kwargs, res):
    """``obj.agg(func)`` for a callable: the columns gathered, pandas applies ``func``."""
    red = GatherReducer(cols=None, func=_agg_kernel, args=(func, tuple(args), dict(kwargs)), kw={})
    if isinstance(res, (pd.Series, pd.DataFrame)):
        return tree_reduce(obj, red, res.iloc[:0], nan, name="agg")
    return tree_reduce(obj, red, scalar_dtype=_np_dtype(res), name="agg")


def _named(obj, f, args, kwargs):
    """``obj.<f>(*args, **kwargs)`` for a function name, or the gathered callable."""
    if isinstance(f, str):
        method = getattr(type(obj), f, None)
        if method is None or not callable(method):
            raise AttributeError(f"'{f}' is not a valid function for '{type(obj).__name__}' object")
        return method(obj, *args, **kwargs)
    from .custom_reduction import CustomReduction, custom_reduce

    if isinstance(f, CustomReduction) and not args and not kwargs:  # Mars's protocol: a tree
        return custom_reduce(obj, f)
    res = _probe(obj, lambda m: m.agg(f, 0, *args, **kwargs))
    return _gathered_agg(obj, f, args, kwargs, res)


def _frame_agg(self, func, args, kwargs, res):
    meta = self.data.meta
    columns = meta.columns
    if isinstance(func, dict):
        entries = [(c, fs if isinstance(fs, (list, tuple)) else [fs]) for c, fs in func.items()]
    else:
        entries = [(c, list(func)) for c in columns]
    # one reduction per (function, set of columns): each a tree reduction of the columns
    by_func: dict = {}
    for c, fs in entries:
        for f in fs:
            by_func.setdefault(_func_key(f), (f, []))[1].append(c)
    parts, where = [], {}
    for fk, (f, cols) in by_func.items():
        pos = [columns.get_loc(c) for c in cols]
        sub = self if len(pos) == len(columns) and pos == list(range(len(columns))) else self.iloc[:, pos]
        where[fk] = len(parts)
        parts.append(_named(sub, f, args, kwargs))
    if isinstance(res, pd.Series):  # a dict of single functions: one value per column
        cells = {}
        for i, label in enumerate(res.index):
            f = dict(entries)[label][0]
            cells[i] = (where[_func_key(f)], label)
        return assemble(parts, _build_series, (cells, res.index, res.iloc[:0]), res.iloc[:0], len(res))
    rows = list(res.index)
    cells = {}
    for c, fs in entries:
        j = list(res.columns).index(c)
        for f in fs:
            cells[(rows.index(_func_label(f)), j)] = (where[_func_key(f)], c)
    return assemble(parts, _build_frame, (cells, res.index, res.columns, res.iloc[:0]), res.iloc[:0], len(res))


def _func_key(f):
    return f if isinstance(f, str) else ("callable", id(f))


def _series_agg(self, func, args, kwargs, res):
    if isinstance(func, dict):
        items = list(func.items())
    else:
        items = [(_func_label(f), f) for f in func]
    parts = [_named(self, f, args, kwargs) for _, f in items]
    cells = {i: (i, None) for i in range(len(items))}
    return assemble(parts, _build_series, (cells, res.index, res.iloc[:0]), res.iloc[:0], len(res))


def aggregate(self, func=None, axis=0, *args, **kwargs):
    """pandas' ``agg``: a function name, a list of them, a dict of column -> name(s), or a
    callable.  Names are tree reductions (``df.agg(["sum", "mean"])`` runs ``sum`` and
    ``mean`` chunked and puts the two results together); callables need whole columns and
    gather them; ``axis=1`` is row-wise, chunk by chunk."""
    if func is None:
        raise TypeError("Must provide 'func' or tuples of '(column, aggfunc).")
    is_frame = isinstance(self, DataFrame)
    if is_frame:
        axis = _check_axis(axis)
    elif axis not in (0, "index", None):
        raise ValueError(f"No axis named {axis!r} for object type {type(self).__name__}")
    else:
        axis = 0
    if isinstance(self, Index):
        return _index_agg(self, func, args, kwargs)
    res = _probe(self, lambda m: m.agg(func, axis, *args, **kwargs))
    if axis == 1:
        return map_rows(_agg_rows_kernel, self, func, tuple(args), dict(kwargs), meta=res.iloc[:0], name="agg-rows")
    if isinstance(func, str) or callable(func):
        return _named(self, func, args, kwargs)
    if isinstance(func, (list, tuple, dict)) and not func:
        raise ValueError("No objects to concatenate")
    if is_frame:
        return _frame_agg(self, func, args, kwargs, res)
    return _series_agg(self, func, args, kwargs, res)


register_method(DataFrame, Series, name="agg")(aggregate)
register_method(DataFrame, Series, name="aggregate")(aggregate)


def _index_agg(self, func, args, kwargs):
    """Mars's ``Index.agg``: the Index's own reductions (``min max any all`` ...) by name;
    a list gives a Series indexed by the names, as ``Series.agg`` does."""
    fs = func if isinstance(func, (list, tuple)) else [func]
    for f in fs:
        if not isinstance(f, str) or not callable(getattr(type(self), f, None)):
            raise AttributeError(f"'{_func_label(f)}' is not a valid function for 'Index' object")
    if not isinstance(func, (list, tuple)):
        return getattr(self, func)(*args, **kwargs)
    res = _probe(self, lambda m: pd.Series(m).agg(list(func), *args, **kwargs))
    res = res.rename(None)
    parts = [getattr(self, f)(*args, **kwargs) for f in func]
    cells = {i: (i, None) for i in range(len(func))}
    return assemble(parts, _build_series, (cells, res.index, res.iloc[:0]), res.iloc[:0], len(res))


register_method(Index, name="agg")(aggregate)
register_method(Index, name="aggregate")(aggregate)


# ---- memory_usage ---------------------------------------------------------------------------


class MemoryUsageReducer(Reducer):
    """Per-chunk memory usage minus that of the chunk emptied (the length-independent part:
    a categorical's categories, an Arrow array's first offset), which is counted once, from
    the first chunk; a default RangeIndex is pandas' fixed-size one."""

    def _usage(self, x):
        if self.kind == "frame":
            return x.memory_usage(index=False, deep=self.deep).to_numpy(dtype=np.int64)
        if self.kind == "series":
            return np.array([x.memory_usage(index=False, deep=self.deep)], dtype=np.int64)
        return np.array([x.memory_usage(deep=self.deep)], dtype=np.int64)

    def _index(self, x):
        return x.index.memory_usage(deep=self.deep) if self.index and self.kind != "index" else 0

    def map(self, x):
        e = x[:0]
        fixed = (self._usage(e), self._index(e))
        return len(x), self._usage(x) - fixed[0], self._index(x) - fixed[1], fixed

    def combine(self, parts):
        return (sum(p[0] for p in parts), sum(p[1] for p in parts), sum(p[2] for p in parts), parts[0][3])

    def finish(self, parts):
        n, cols, idx, (fcols, fidx) = self.combine(parts)
        cols = cols + fcols
        idx = int(pd.RangeIndex(n).memory_usage(deep=self.deep)) if self.range_index else int(idx + fidx)
        if self.kind != "frame":
            total = int(cols[0])
            if self.index and self.kind == "series":
                total += idx
            return total
        vals = list(cols)
        if self.index:
            vals = [idx] + vals
        return pd.Series(vals, index=self.labels, dtype=np.int64)


def _memory_usage(self, index, deep):
    _validate_bool("index", index)
    _validate_bool("deep", deep)
    kind = "frame" if isinstance(self, DataFrame) else "series" if isinstance(self, Series) else "index"
    if kind == "index":
        res = _probe(self, lambda m: m.memory_usage(deep=deep))
    else:
        res = _probe(self, lambda m: m.memory_usage(index=index, deep=deep))
    red = MemoryUsageReducer(kind=kind, index=index, deep=deep, range_index=self.data.range_index,
                             labels=res.index if kind == "frame" else None)
    if kind == "frame":
        return tree_reduce(self, red, res.iloc[:0], len(res), name="memory_usage")
    return tree_reduce(self, red, scalar_dtype=np.dtype(np.int64), name="memory_usage")


@register_method(DataFrame, Series, name="memory_usage")
def memory_usage(self, index=True, deep=False):
    """Bytes used by each column (and the index), as pandas counts them (a Series for a
    DataFrame, an int for a Series); summed over the chunks by the tree."""
    return _memory_usage(self, index, deep)


@register_method(Index, name="memory_usage")
def _index_memory_usage(self, deep=False):
    """Bytes used by the Index values, as pandas counts them (an int once fetched)."""
    return _memory_usage(self, False, deep)


# ---- correlations ------------------------------------------------------------------------------


def _tiny_m2(m2, n, mean):
    """A sum of squared deviations that is only rounding error (a constant column): 0."""
    return m2 <= n * (n * np.finfo(np.float64).eps * np.abs(mean)) ** 2


def pair_moments(X: np.ndarray, Y: np.ndarray) -> tuple:
    """For every pair (column i of X, column j of Y), over the rows where both are present:
    ``(n, mean_x, mean_y, M2_x, M2_y, C_xy)`` as (p, q) matrices.  The chunk's column means
    are subtracted first so the sums of products are well conditioned."""
    vx, vy = ~np.isnan(X), ~np.isnan(Y)
    fx, fy = vx.astype(np.float64), vy.astype(np.float64)
    cx = np.where(vx, X, 0.0).sum(axis=0) / np.maximum(fx.sum(axis=0), 1)
    cy = np.where(vy, Y, 0.0).sum(axis=0) / np.maximum(fy.sum(axis=0), 1)
    Xc, Yc = np.where(vx, X - cx, 0.0), np.where(vy, Y - cy, 0.0)
    n = fx.T @ fy
    sx, sy = Xc.T @ fy, fx.T @ Yc
    sxx, syy, sxy = (Xc * Xc).T @ fy, fx.T @ (Yc * Yc), Xc.T @ Yc
    safe = np.where(n > 0, n, 1)
    return (n, cx[:, None] + sx / safe, cy[None, :] + sy / safe, sxx - sx * sx / safe, syy - sy * sy / safe,
            sxy - sx * sy / safe)


def merge_pair_moments(A: tuple, B: tuple) -> tuple:
    """Chan et al.'s merge of two :func:`pair_moments` partials (sides with n == 0 ignored)."""
    na, nb = A[0], B[0]
    n = na + nb
    safe = np.where(n > 0, n, 1)
    dx, dy = B[1] - A[1], B[2] - A[2]
    f = na * nb / safe
    out = (n, A[1] + dx * nb / safe, A[2] + dy * nb / safe, A[3] + B[3] + dx * dx * f, A[4] + B[4] + dy * dy * f,
           A[5] + B[5] + dx * dy * f)
    ea, eb = na == 0, nb == 0
    return (n,) + tuple(np.where(ea, b, np.where(eb, a, m)) for a, b, m in zip(A[1:], B[1:], out[1:]))


def pearson(p: tuple, min_periods: int) -> np.ndarray:
    n, mx, my, m2x, m2y, cxy = p
    m2x = np.where(_tiny_m2(m2x, n, mx), 0.0, m2x)
    m2y = np.where(_tiny_m2(m2y, n, my), 0.0, m2y)
    div = np.sqrt(m2x * m2y)
    ok = (n >= max(min_periods, 1)) & (div > 0)
    return np.where(ok, np.clip(cxy / np.where(ok, div, 1.0), -1.0, 1.0), np.nan)


class PearsonReducer(Reducer):
    """Pairwise Pearson correlation: ``pairs="all"`` (the columns with each other, ``corr``),
    ``"last"`` (each column with the last one, ``corrwith``/``Series.corr``) or ``"halves"``
    (column i with column i + k of a frame of 2k columns, ``corrwith`` of two frames)."""

    def _xy(self, a):
        if self.pairs == "all":
            return a, a
        if self.pairs == "last":
            return a[:, :-1], a[:, -1:]
        k = a.shape[1] // 2
        return a[:, :k], a[:, k:]

    def map(self, x):
        x = _as_frame(x)
        if len(x) == 0:
            return None
        return pair_moments(*self._xy(_float_matrix(x)))

    def combine(self, parts):
        return fold_partials(parts, merge_pair_moments)

    def finish(self, parts):
        p = self.combine(parts)
        if p is None:
            return self.empty_result
        r = pearson(p, self.min_periods)
        if self.pairs == "halves":
            r = np.diag(r)
        elif self.pairs == "last":
            r = r[:, 0]
        if self.out == "scalar":
            v = r[0]
            return np.float64(v) if not np.isnan(v) else np.nan
        if self.out == "series":
            return pd.Series(r, index=self.labels, dtype=np.float64).reindex(self.result_index)
        return pd.DataFrame(r, index=self.labels, columns=self.labels)


_METHODS = ("pearson", "kendall", "spearman")


def _check_method(method):
    if method not in _METHODS and not callable(method):
        raise ValueError(f"method must be either 'pearson', 'spearman', 'kendall', or a callable, '{method}' was supplied")


def _check_min_periods(min_periods, default):
    if min_periods is None:
        return default
    if not isinstance(min_periods, (int, np.integer)) or isinstance(min_periods, bool):
        raise TypeError(f"min_periods must be an int, got {min_periods!r}")
    return int(min_periods)


@register_method(DataFrame)
def corr(self, method="pearson", min_periods=1, numeric_only=False):
    """Pairwise correlation of columns (pairwise-complete rows).  Pearson: chunked (pairwise
    moments merged up the tree); spearman/kendall/callables: the columns are gathered and
    pandas computes them (global ranks / all pairs of rows), as Mars does."""
    _check_method(method)
    _validate_bool("numeric_only", numeric_only)
    min_periods = _check_min_periods(min_periods, 1)
    kw = dict(method=method, min_periods=min_periods, numeric_only=numeric_only)
    res = _probe(self, lambda m: m.corr(**kw))
    sub = self.iloc[:, _numeric_positions(self.data.meta)] if numeric_only else self
    if method != "pearson":
        red = GatherReducer(cols=None, func=_call_method, args=("corr",), kw=kw)
        return tree_reduce(sub, red, res.iloc[:0], len(res), name="corr")
    empty = sub.data.meta.corr(min_periods=min_periods)
    red = PearsonReducer(pairs="all", min_periods=min_periods, out="frame", labels=res.columns, empty_result=empty)
    return tree_reduce(sub, red, res.iloc[:0], len(res), name="corr")


def _concat_columns(*objs):
    return pd.concat([_as_frame(o) for o in objs], axis=1, ignore_index=True)


def _aligned_pair(left, right):
    if aligned(left, right):
        return left, right
    from .arithmetic import align

    return align(left, right)


def _series_corr(self, other, method="pearson", min_periods=None):
    """Correlation with ``other`` over the labels both have (pandas' inner alignment: labels
    missing on one side count as missing values).  Pearson chunked; other methods gathered."""
    _check_method(method)
    if not (isinstance(other, Series)):
        raise TypeError(f"other must be a Series tileable, got {type(other).__name__}")
    mp = _check_min_periods(min_periods, 1)
    _probe(self, lambda m: m.corr(meta_nonempty(other.data.meta), method=method, min_periods=min_periods))
    if method != "pearson":
        red = GatherReducer(cols=None, func=_call_method, args=("corr",), kw=dict(method=method, min_periods=min_periods),
                            extra_kw=("other",))
        return tree_reduce(self, red, scalar_dtype=np.dtype(np.float64), name="corr", extra=(other,))
    left, right = _aligned_pair(self, other)
    both = map_rows(_concat_columns, left, right, name="corr-pair",
                    meta=pd.DataFrame({0: pd.Series(dtype=np.float64), 1: pd.Series(dtype=np.float64)}))
    red = PearsonReducer(pairs="last", min_periods=mp, out="scalar", empty_result=np.nan)
    return tree_reduce(both, red, scalar_dtype=np.dtype(np.float64), name="corr")


Series.corr = _series_corr


@register_method(Series)
def autocorr(self, lag=1):
    """Pearson correlation of the Series with itself shifted by ``lag`` (chunked)."""
    if not isinstance(lag, (int, np.integer)) or isinstance(lag, bool):
        raise TypeError(f"lag must be an integer, got {lag!r}")
    return _series_corr(self, self.shift(lag))


@register_method(DataFrame)
def corrwith(self, other, axis=0, drop=False, method="pearson", numeric_only=False, min_periods=None):
    """Correlation of each column (``axis=1``: row) with a Series or the same-named column
    of another frame, as pandas (labels missing on one side count as missing values; with
    ``drop=False`` labels of only one side give NaN).  Pearson chunked; other methods
    gathered."""
    _check_method(method)
    _validate_bool("drop", drop)
    _validate_bool("numeric_only", numeric_only)
    if not isinstance(other, (DataFrame, Series)):
        raise TypeError(f"other must be a DataFrame or Series tileable, got {type(other).__name__}")
    axis = _check_axis(axis)
    kw = dict(axis=axis, drop=drop, method=method, numeric_only=numeric_only, min_periods=min_periods)
    res = _probe(self, lambda m: m.corrwith(meta_nonempty(other.data.meta), **kw))
    meta = self.data.meta
    this = self.iloc[:, _numeric_positions(meta)] if numeric_only else self
    if axis == 1:
        left, right = _aligned_pair(this, other)
        return map_rows(_corrwith_rows_kernel, left, right, kw, meta=res.iloc[:0], name="corrwith-rows")
    if method != "pearson":
        red = GatherReducer(cols=None, func=_call_method, args=("corrwith",), kw=kw, extra_kw=("other",))
        return tree_reduce(this, red, res.iloc[:0], len(res), name="corrwith", extra=(other,))
    mp = _check_min_periods(min_periods, 1)
    left, right = _aligned_pair(this, other)
    tmeta = this.data.meta
    if isinstance(other, Series):
        labels = tmeta.columns
        both = map_rows(_concat_columns, left, right, name="corrwith-pair")
        pairs = "last"
    else:
        common = [c for c in tmeta.columns if c in set(other.columns)]
        labels = pd.Index(common, dtype=tmeta.columns.dtype) if common else tmeta.columns[:0]
        lpos = [tmeta.columns.get_loc(c) for c in common]
        rpos = [other.columns.get_loc(c) for c in common]
        both = map_rows(_pick_halves_kernel, left, right, lpos, rpos, name="corrwith-pair")
        pairs = "halves"
    red = PearsonReducer(pairs=pairs, min_periods=mp, out="series", labels=labels, result_index=res.index,
                         empty_result=pd.Series(np.nan, index=res.index, dtype=np.float64))
    return tree_reduce(both, red, res.iloc[:0], len(res), name="corrwith")


def _pick_halves_kernel(left, right, lpos, rpos):
    return pd.concat([left.iloc[:, lpos], right.iloc[:, rpos]], axis=1, ignore_index=True)


def _corrwith_rows_kernel(left, right, kw):
    return left.corrwith(right, **kw)


# ---- dot / @ ----------------------------------------------------------------------------------


@_quiet
def _rows_with_whole_kernel(chunk, other_spec, other_const, func, kw):
    other = _value_of(*other_spec) if other_spec is not None else other_const
    return func(chunk, other, **kw)


class RowsWithWhole(DataFrameOperand):
    """``func(row_chunk, other, **kw)`` for each row chunk, every task receiving the whole
    ``other`` (a small tileable, e.g. the right-hand side of ``df.dot``, with as many rows
    as the frame has columns; or quantile points), or a local constant."""

    _op_name = "rows-with"

    def tile(self):
        x = self.inputs[0]
        spec = None
        inputs_extra = []
        if len(self.inputs) > 1:
            o = self.inputs[1]
            spec = (self.other_cls._assemble, self.other_cls._assemble_meta(o), list(o.chunks))
            inputs_extra = list(o.chunks)
        out = self.output
        chunks = [self.new_chunk(i, c.shape[0], _rows_with_whole_kernel, (c, spec, self.other_const, self.func, self.kw),
                                 inputs=[c] + inputs_extra, meta=out.meta)
                  for i, c in enumerate(x.chunks)]
        return [(chunks, frame_nsplits(out.meta, tuple(c.shape[0] for c in chunks)))]


def rows_with_whole(func, obj, other, meta, **kw):
    """Row-wise ``func(chunk, other, **kw)``; ``other`` a tileable (whole in every task) or
    a local value.  The rows and their labels are kept."""
    if isinstance(other, Tileable):
        op = RowsWithWhole([obj.data, other.data], other_cls=type(other), other_const=None, func=func, kw=kw)
    else:
        op = RowsWithWhole([obj.data], other_cls=None, other_const=other, func=func, kw=kw)
    return op.new_output(meta, obj.shape[0], index_key=obj.data.index_key, range_index=obj.data.range_index)


def _dot_kernel(chunk, other):
    return chunk.dot(other)


def _mul_rows_kernel(a, b):
    return a.mul(b, axis=0) if isinstance(a, pd.DataFrame) else a * b


def _is_1d_array(x) -> bool:
    if isinstance(x, Tensor):
        return x.ndim == 1
    return isinstance(x, (np.ndarray, list)) and np.ndim(x) == 1


def _series_dot(self, other):
    if isinstance(other, (pd.Series, pd.DataFrame)):
        from .datasource import from_pandas

        other = from_pandas(other)
    elif _is_1d_array(other):
        from .arithmetic import positional_like

        other = positional_like(self, other)  # pandas: an array is matched by position
    if not isinstance(other, (Series, DataFrame)):
        raise TypeError(f"Series.dot with a {type(other).__name__}: pass a Series, a DataFrame (labels are matched) "
                        "or a 1-d array")
    om = other.data.meta
    _probe(self, lambda m: m.dot(_one_like(om, m.index)))
    left, right = _aligned_pair(self, other)
    if isinstance(other, Series):
        return map_rows(_mul_rows_kernel, left, right, name="dot-mul").sum(skipna=False)
    res = map_rows(_mul_rows_kernel, right, left, name="dot-mul").sum(skipna=False)
    meta = res.data.meta.rename(self.name)
    return map_rows(_rename_kernel, res, self.name, meta=meta, name="dot-name")  # pandas names it after self


def _rename_kernel(s, name):
    return s.rename(name)


def _one_like(meta, index):
    """A stand-in of ``meta``'s structure and dtypes with the given labels."""
    if isinstance(meta, pd.DataFrame):
        return pd.DataFrame({c: pd.Series(np.ones(len(index)), index=index).astype(dt) for c, dt in meta.dtypes.items()},
                            index=index, columns=meta.columns)
    return pd.Series(np.ones(len(index)), index=index, name=meta.name).astype(meta.dtype)


@register_method(DataFrame, Series)
def dot(self, other):
    """Matrix product with a Series, DataFrame, tensor or array (pandas' label checks).
    ``DataFrame @ x``: chunk by chunk over the rows, every task receiving the whole ``x``
    (as many rows as the frame has columns); ``Series @ Series``/``Series @ DataFrame``:
    per-chunk products summed by the tree (NaN propagates, as ``np.dot``)."""
    if isinstance(self, Series):
        return _series_dot(self, other)
    cols = self.data.meta.columns
    if isinstance(other, (DataFrame, Series)):
        stand = _one_like(other.data.meta, cols)
    elif isinstance(other, Tileable):  # a tensor
        stand = np.ones(tuple(len(cols) if i == 0 else (1 if np.isnan(d) else d) for i, d in enumerate(other.shape)),
                        dtype=other.dtype)
    else:
        stand = np.asarray(other) if isinstance(other, list) else other
    res = _probe(self, lambda m: m.dot(stand))
    return rows_with_whole(_dot_kernel, self, other if isinstance(other, Tileable) else stand, res.iloc[:0])


def _matmul(self, other):
    return dot(self, other)


DataFrame.__matmul__ = _matmul
Series.__matmul__ = _matmul


# ---- monotonicity --------------------------------------------------------------------------


class MonotonicReducer(Reducer):
    """Monotonic chunks whose boundary values are in order: partial ``(ok, first, last)``
    per run of non-empty chunks (the tree keeps the chunk order)."""

    def map(self, x):
        if isinstance(x, pd.DataFrame):
            x = x.iloc[:, 0]
        if len(x) == 0:
            return None
        if isinstance(x.dtype, pd.CategoricalDtype):
            x = pd.Index(np.asarray(x.cat.codes) if isinstance(x, pd.Series) else x.codes)
        idx = pd.Index(x) if not isinstance(x, pd.Index) else x
        ok = idx.is_monotonic_decreasing if self.decreasing else idx.is_monotonic_increasing
        if ok and self.strict:
            ok = idx.is_unique
        return bool(ok), idx[0], idx[-1]

    def _in_order(self, a, b):
        if self.decreasing:
            return a > b if self.strict else a >= b
        return a < b if self.strict else a <= b

    def combine(self, parts):
        acc = None
        for p in parts:
            if p is None:
                continue
            if acc is None:
                acc = p
                continue
            ok = acc[0] and p[0] and bool(self._in_order(acc[2], p[1]))
            acc = (ok, acc[1], p[2])
        return acc

    def finish(self, parts):
        p = self.combine(parts)
        return True if p is None else bool(p[0])


def check_monotonic(self, decreasing=False, strict=False):
    """Mars's ``check_monotonic``: are the values monotonic increasing (``decreasing``:
    decreasing; ``strict``: and unique)?  A tree over the chunks (each chunk monotonic, the
    boundary values in order); a Python bool once fetched."""
    _validate_bool("decreasing", decreasing)
    _validate_bool("strict", strict)
    red = MonotonicReducer(decreasing=decreasing, strict=strict)
    return tree_reduce(self, red, scalar_dtype=np.dtype(bool), name="check_monotonic")


register_method(Series, Index, name="check_monotonic")(check_monotonic)


def _is_monotonic_increasing(self):
    return check_monotonic(self, decreasing=False)


def _is_monotonic_decreasing(self):
    return check_monotonic(self, decreasing=True)


for _cls in (Series, Index):
    _cls.is_monotonic = property(_is_monotonic_increasing, doc="Mars's ``is_monotonic``: monotonic increasing.")
    _cls.is_monotonic_increasing = property(_is_monotonic_increasing,
                                            doc="Are the values monotonic increasing (a 0-d result)?")
    _cls.is_monotonic_decreasing = property(_is_monotonic_decreasing,
                                            doc="Are the values monotonic decreasing (a 0-d result)?")

del _cls
