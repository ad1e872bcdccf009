"""Reductions of DataFrames and Series (``sum count mean min max std var sem skew kurt prod
any all nunique median quantile describe``, and the ``level=`` form of each) and the tree-reduction operand the other row-wise aggregations
(value_counts, unique, drop_duplicates, nlargest, ``statistics.py``...) share.

Tree reduction, as Mars (and ``mars_dask.tensor.reduction``): every row chunk is reduced on
its own to a small *partial*, groups of ``tensor.combine-size`` (or the call's Mars
``combine_size``) partials are *combined* level by level, and the last group is *finished*
into the result (one chunk).  A :class:`Reducer` says what a partial is:

- ``sum prod min max any all count``: a one-row frame holding each column's reduction made
  by pandas itself on the one-column frame (so every column keeps pandas' result dtype,
  extension dtypes included), re-reduced by the same pandas function (``count``: ``sum``);
  ``sum``/``prod`` carry the non-null counts too for ``min_count``;
- ``mean var std sem skew kurt``: ``(n, sum, M2[, M3, M4])`` per column (central power sums,
  two-pass within a chunk), merged with Chan et al.'s / Pébay's pairwise formulas;
- ``nunique``: each column's distinct values;
- ``median``/``quantile`` (exact) and ``mean`` of datetime columns: the selected columns
  themselves, concatenated by the tree and reduced by pandas in the finish step (one
  column-subset gathered on one worker; exact, memory = those columns).
- ``level=``: ``groupby(level=...).<name>()`` (what the pandas Mars followed meant; pandas 3
  removed the argument): per-chunk group partials of the same kinds, keyed by the group
  labels, re-reduced by key; groups sorted as ``groupby`` sorts them.

Empty chunks (after filters) give no partial; when every chunk is empty, the finish step
runs pandas on the empty ``meta`` so the result is pandas' own (``NaN`` for ``min``...).
``axis=1`` reductions are row-wise and blockwise (``map_rows``).  Series reductions return a
0-d tensor handle whose ``fetch()`` is pandas' scalar (``numpy.int64``, ``Timestamp``...).
A tileable argument of the finish step (quantile points given as a tensor) is an input of
the tree operand, not a constant pickled into the task.

Signatures follow Mars 0.10 (``axis=None`` meaning the rows, ``level``, ``numeric_only=None``
meaning False, ``combine_size``, ``method``); results follow pandas.  Output metadata comes
from running pandas on a non-empty stand-in (or on the empty meta when the input is known to
be empty), so pandas' TypeErrors (``mean`` of strings, ``min`` of an unordered
categorical...) are raised at build time.
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np
import pandas as pd
from dask.base import tokenize
from ._meta import meta_nonempty

from .. import config
from ..tensor.core import Tensor, TensorData
from ..tiling.core import Chunk
from ..tiling.tileable import Tileable
from .core import DataFrame, DataFrameOperand, Series, frame_nsplits, nan, register_method
from .map import map_rows

__all__ = ["unique"]


# ---- the scalar handle -----------------------------------------------------------------


class ScalarResult(Tensor):
    """A 0-d tensor whose value is a pandas scalar (``Series.sum()`` and friends); also the
    handle of ``Series.unique()`` (1-d, one chunk).  ``fetch()`` returns exactly what pandas
    returns (``numpy.int64``, ``str``, ``Timestamp``, an array for ``unique``)."""

    __slots__ = ()

    @staticmethod
    def _assemble_meta(data):
        return None

    @staticmethod
    def _assemble(meta, parts: list):
        return parts[0]


def _np_dtype(value) -> np.dtype:
    dt = getattr(value, "dtype", None)
    if isinstance(dt, np.dtype):
        return dt
    try:
        dt = np.asarray(value).dtype
    except Exception:  # noqa: BLE001 - not array-like in any way numpy accepts: object
        return np.dtype(object)
    return dt if dt.kind not in "OSU" else np.dtype(object)


# ---- reducers ------------------------------------------------------------------------------


class Reducer:
    """Three steps of one tree reduction: ``map(chunk) -> partial or None``,
    ``combine(partials) -> partial or None``, ``finish(partials) -> result``."""

    def __init__(self, **kw):
        self.__dict__.update(kw)

    def __dask_tokenize__(self):
        return (type(self).__name__, tokenize(sorted(self.__dict__.items(), key=lambda kv: kv[0])))

    def map(self, x):  # pragma: no cover - abstract
        raise NotImplementedError

    def combine(self, parts):  # pragma: no cover - abstract
        raise NotImplementedError

    def finish(self, parts):
        return self.combine(parts)


def _quiet(func):
    def wrapper(*args, **kwargs):
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            return func(*args, **kwargs)

    wrapper.__name__ = func.__name__
    wrapper.__qualname__ = func.__qualname__
    wrapper.__module__ = func.__module__
    return wrapper


@_quiet
def _map_kernel(x, red):
    return red.map(x)


@_quiet
def _combine_kernel(parts, red):
    return red.combine(parts)


@_quiet
def _finish_kernel(parts, red, extras=()):
    if not extras:
        return red.finish(parts)
    return red.finish(parts, *[assemble(meta, list(chunks)) for assemble, meta, chunks in extras])


def _keep1(df: pd.DataFrame, name: str, kw: dict) -> pd.DataFrame:
    """A one-row frame (columns by position) of each column's ``name`` reduction, made by
    pandas on the one-column frame so the per-column result dtype is pandas' own."""
    cols = {j: getattr(df.iloc[:, [j]], name)(**kw).reset_index(drop=True) for j in range(df.shape[1])}
    if not cols:
        return pd.DataFrame(index=pd.RangeIndex(1))
    return pd.DataFrame(cols)


def _as_frame(x):
    if isinstance(x, pd.Index):
        return x.to_frame(index=False)
    return x.to_frame() if isinstance(x, pd.Series) else x


def _result_series(values, labels, dtype):
    try:
        return pd.Series(values, index=labels, dtype=dtype)
    except (TypeError, ValueError):
        return pd.Series(values, index=labels)


class _ColumnReducer(Reducer):
    """Base of per-column reducers.  ``cols``: column positions to reduce (None: all);
    ``series``: the input is a Series and the result a scalar; ``empty``: the empty input
    (selected columns) used when every chunk is empty; ``labels``/``dtype``: the result."""

    def prep(self, x):
        x = _as_frame(x)
        if self.cols is not None:
            x = x.iloc[:, list(self.cols)]
        return x

    def finish(self, parts):
        p = self.combine(parts)
        if p is None:
            return getattr(self.empty, self.name)(**self.user_kw)
        values = self.values(p)
        if self.series:
            return values[0]
        return _result_series(values, self.labels, self.dtype)


class SimpleReducer(_ColumnReducer):
    """``sum prod min max any all count``."""

    _COMBINE = {"count": "sum"}

    def map(self, x):
        x = self.prep(x)
        if len(x) == 0:
            return None
        v = _keep1(x, self.name, self.kw)
        n = x.count().to_numpy() if self.min_count else None
        return v, n

    def combine(self, parts):
        parts = [p for p in parts if p is not None]
        if not parts:
            return None
        if len(parts) == 1:
            return parts[0]
        v = pd.concat([p[0] for p in parts], ignore_index=True)
        name = self._COMBINE.get(self.name, self.name)
        kw = {} if self.name == "count" else self.kw
        n = sum(p[1] for p in parts) if self.min_count else None
        return _keep1(v, name, kw), n

    def values(self, p):
        v, n = p
        vals = [v.iloc[0, j] for j in range(v.shape[1])]
        if self.min_count:
            vals = [np.nan if c < self.min_count else val for val, c in zip(vals, n)]
        return vals


def _float_values(col: pd.Series) -> np.ndarray:
    return col.to_numpy(dtype="float64", na_value=np.nan)


def _float_matrix(x: pd.DataFrame) -> np.ndarray:
    if not x.shape[1]:
        return np.empty((len(x), 0))
    return np.column_stack([_float_values(x.iloc[:, j]) for j in range(x.shape[1])])


_MOMENT_ORDER = {"mean": 1, "var": 2, "std": 2, "sem": 2, "skew": 3, "kurt": 4}


def _group_sum(v: np.ndarray, codes, ngroups: int) -> np.ndarray:
    """Column sums of ``v`` (rows, cols) per group (``codes``: each row's group) -> (g, cols)."""
    if codes is None:
        return v.sum(axis=0, keepdims=True)
    return np.stack([np.bincount(codes, weights=v[:, j], minlength=ngroups) for j in range(v.shape[1])], axis=1) \
        if v.shape[1] else np.empty((ngroups, 0))


def chunk_moments(a: np.ndarray, order: int, skipna: bool, codes=None, ngroups: int = 1) -> tuple:
    """``(n, sum, M2, M3, M4)`` (central power sums up to ``order``) per group and column of
    the float matrix ``a``, two-pass within the chunk (accurate); ``codes`` (``None``: one
    group) maps rows to groups.  Without ``skipna`` a NaN poisons its group's sums, so every
    statistic of that group is NaN, as pandas gives."""
    isnan = np.isnan(a)
    valid = ~isnan if skipna else np.ones_like(isnan)
    a0 = np.where(isnan, 0.0, a) if skipna else a
    n = _group_sum(valid.astype(np.float64), codes, ngroups)
    s = _group_sum(a0, codes, ngroups)
    out = [n, s]
    if order >= 2:
        mu = s / np.where(n > 0, n, 1)
        d = a0 - (mu if codes is None else mu[codes])
        if skipna:
            d = np.where(valid, d, 0.0)
        p = d * d
        out.append(_group_sum(p, codes, ngroups))
        for _ in range(3, order + 1):
            p = p * d
            out.append(_group_sum(p, codes, ngroups))
    return tuple(out)


def merge_moments(A: tuple, B: tuple) -> tuple:
    """Chan et al./Pébay's pairwise update of ``(n, sum, M2, M3, M4)`` (any order up to 4,
    arrays of one shape); a side with ``n == 0`` contributes nothing."""
    na, nb = A[0], B[0]
    n = na + nb
    out = [n, A[1] + B[1]]
    if len(A) > 2:
        safe = np.where(n > 0, n, 1)
        delta = B[1] / np.where(nb > 0, nb, 1) - A[1] / np.where(na > 0, na, 1)
        m2 = A[2] + B[2] + delta * delta * na * nb / safe
        out.append(m2)
        if len(A) > 3:
            out.append(A[3] + B[3] + delta ** 3 * na * nb * (na - nb) / safe ** 2
                       + 3 * delta * (na * B[2] - nb * A[2]) / safe)
        if len(A) > 4:
            out.append(A[4] + B[4] + delta ** 4 * na * nb * (na * na - na * nb + nb * nb) / safe ** 3
                       + 6 * delta * delta * (na * na * B[2] + nb * nb * A[2]) / safe ** 2
                       + 4 * delta * (na * B[3] - nb * A[3]) / safe)
        empty_a, empty_b = na == 0, nb == 0
        out = out[:2] + [np.where(empty_a, b, np.where(empty_b, a, m)) for a, b, m in zip(A[2:], B[2:], out[2:])]
    return tuple(out)


def moment_statistic(p: tuple, name: str, ddof=1, bias=False, fisher=True) -> np.ndarray:
    """pandas' ``mean var std sem skew kurt`` from ``(n, sum, M2, M3, M4)``.  skew/kurt follow
    pandas 3 (NaN under 3/4 values or for a constant column); ``bias``/``fisher`` are Mars's
    options (population moments; Pearson's kurtosis, i.e. ``+3``)."""
    n, s = p[0], p[1]
    pos = n > 0
    mean = np.where(pos, s / np.where(pos, n, 1), np.nan)
    if name == "mean":
        return mean
    m2 = p[2]
    if name in ("var", "std", "sem"):
        dof = n - ddof
        var = np.where(dof > 0, m2 / np.where(dof > 0, dof, 1), np.nan)
        if name == "var":
            return var
        if name == "std":
            return np.sqrt(var)
        return np.where(pos, np.sqrt(var) / np.sqrt(np.where(pos, n, 1)), np.nan)
    # rounding makes a constant column's M2 tiny instead of 0 (pandas' one-pass sums give 0)
    const = m2 <= n * (n * np.finfo(np.float64).eps * np.abs(mean)) ** 2
    m2 = np.where(const, 0.0, m2)
    if name == "skew":
        m3 = np.where(const, 0.0, p[3])
        if bias:
            res = np.sqrt(n) * m3 / (m2 * np.sqrt(m2))
            return np.where(n >= 1, res, np.nan)
        res = m3 / (m2 * np.sqrt(m2)) * (n * np.sqrt(n - 1.0)) / (n - 2.0)
        return np.where(n >= 3, res, np.nan)
    m4 = np.where(const, 0.0, p[4])
    if bias:
        res = n * m4 / (m2 * m2) - 3.0
        res = np.where(n >= 1, res, np.nan)
    else:
        res = (n - 1.0) / ((n - 2.0) * (n - 3.0)) * (n * (n + 1.0) * m4 / (m2 * m2) - 3.0 * (n - 1.0))
        res = np.where(n >= 4, res, np.nan)
    return res if fisher else res + 3.0


def fold_partials(parts, merge):
    """The non-empty partials (None: an empty chunk) merged pairwise, or None."""
    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    acc = parts[0]
    for b in parts[1:]:
        acc = merge(acc, b)
    return acc


class MomentReducer(_ColumnReducer):
    """``mean var std sem skew kurt``: partial ``(n, sum, M2[, M3, M4])`` per column (see
    :func:`chunk_moments`), merged with :func:`merge_moments`."""

    def map(self, x):
        x = self.prep(x)
        if len(x) == 0:
            return None
        return chunk_moments(_float_matrix(x), _MOMENT_ORDER[self.name], self.skipna)

    def combine(self, parts):
        return fold_partials(parts, merge_moments)

    def values(self, p):
        res = moment_statistic(p, self.name, self.ddof, self.bias, self.fisher)[0]
        if self.series:
            return [self.scalar_type(res[0])]
        return list(res)


class NuniqueReducer(_ColumnReducer):
    """``nunique``: each column's distinct values, tree-combined."""

    def map(self, x):
        x = self.prep(x)
        return [x.iloc[:, j].drop_duplicates() for j in range(x.shape[1])]

    def combine(self, parts):
        if len(parts) == 1:
            return parts[0]
        return [pd.concat([p[j] for p in parts], ignore_index=True).drop_duplicates() for j in range(len(parts[0]))]

    def finish(self, parts):
        p = self.combine(parts)
        vals = [int(s.nunique(dropna=self.dropna)) for s in p]
        if self.series:
            return vals[0]
        return _result_series(vals, self.labels, self.dtype)


class GatherReducer(Reducer):
    """The selected columns concatenated by the tree; pandas reduces them at the end
    (exact ``median``/``quantile``; ``mean`` of datetimes).  ``func(obj, *args, **kw)``."""

    def map(self, x):
        if self.cols is not None:
            x = x.iloc[:, list(self.cols)]
        return x

    def combine(self, parts):
        parts = [p for p in parts]
        nonempty = [p for p in parts if len(p)]
        if not nonempty:
            return parts[0]
        return nonempty[0] if len(nonempty) == 1 else pd.concat(nonempty)

    def finish(self, parts, *extra):
        # ``extra_kw``: keyword arguments whose values arrive as extra tree inputs (tileables)
        kw = dict(self.kw, **dict(zip(getattr(self, "extra_kw", ()), extra)))
        return self.func(self.combine(parts), *self.args, **kw)


# ---- the tree operand -----------------------------------------------------------------------


def combine_size() -> int:
    n = config.get("tensor.combine-size")
    return max(int(n), 2)


class TreeReduce(DataFrameOperand):
    """Tree reduction of one DataFrame/Series/Index with ``reducer`` into one chunk: a
    DataFrame/Series (``kind="pandas"``, ``meta`` given) or a scalar/array (``kind="scalar"``).

    Further inputs (``extra``: their handle classes) are arguments of the finish step (e.g.
    quantile points given as a tensor): they are inputs of the graph, assembled from their
    chunks on the worker and passed to ``reducer.finish(parts, *values)``, never pickled
    into the task.  ``csize``: partials per combine node (Mars's ``combine_size``)."""

    _op_name = "df-reduce"

    def tile(self):
        x, *extras = self.inputs
        red = self.reducer
        okey = self.output_key()
        parts = []
        for i, c in enumerate(x.chunks):
            parts.append(Chunk((f"{okey}-map", i), (i,), (nan,), _map_kernel, (c, red), inputs=[c]))
        size = self.params.get("csize") or combine_size()
        level = 0
        while len(parts) > size:
            new = []
            for j in range(0, len(parts), size):
                group = parts[j : j + size]
                new.append(Chunk((f"{okey}-combine{level}", j // size), (j // size,), (nan,), _combine_kernel, (group, red), inputs=group))
            parts, level = new, level + 1
        args = (parts, red)
        inputs = list(parts)
        if extras:
            specs = [(cls._assemble, cls._assemble_meta(e), list(e.chunks)) for cls, e in zip(self.extra, extras)]
            args = (parts, red, specs)
            inputs += [c for _, _, cs in specs for c in cs]
        out = self.output
        if self.kind == "scalar":
            shape = out.shape if out is not None else ()
            idx = (0,) * len(shape)
            chunk = Chunk((okey, *idx), idx, shape, _finish_kernel, args, inputs=inputs)
            return [([chunk], tuple((s,) for s in shape))]
        meta = out.meta
        nrows = self.nrows
        chunk = self.new_chunk(0, nrows, _finish_kernel, args, inputs=inputs, meta=meta)
        return [([chunk], frame_nsplits(meta, (nrows,)))]


def tree_reduce(obj, reducer, meta=None, nrows=nan, *, scalar_dtype=None, scalar_shape=(), name="df-reduce",
                extra=(), combine_size=None):
    """Reduce ``obj`` with ``reducer``; returns a Series/DataFrame with ``meta`` (one chunk,
    ``nrows`` rows) or, when ``meta`` is None, a :class:`ScalarResult` of ``scalar_dtype``.
    ``extra``: tileables whose values ``reducer.finish`` receives after the partials."""
    inputs = [obj.data] + [e.data for e in extra]
    params = dict(reducer=reducer, extra=tuple(type(e) for e in extra), csize=combine_size)
    if meta is None:
        op = TreeReduce(inputs, kind="scalar", nrows=None, **params)
        op._op_name = name
        data = TensorData(op, tuple(scalar_shape), scalar_dtype if scalar_dtype is not None else np.dtype(object), op.make_key())
        op.add_output(data)
        return ScalarResult(data)
    if isinstance(nrows, float) and math.isnan(nrows):
        nrows = nan
    op = TreeReduce(inputs, kind="pandas", nrows=nrows, **params)
    op._op_name = name
    return op.new_output(meta, nrows)


# ---- build-time helpers ---------------------------------------------------------------------


def _known_empty(obj) -> bool:
    n = obj.shape[0]
    return not (isinstance(n, float) and math.isnan(n)) and n == 0


def _probe(obj, func, one_row=False):
    """``func`` on a stand-in of ``obj``'s meta (non-empty, or the real empty meta when the
    input is known to be empty): raises pandas' own errors at build time.  ``one_row``: only
    the stand-in's first row (no missing values: pandas' quantile dtypes depend on them)."""
    meta = obj.data.meta
    stand_in = meta if _known_empty(obj) else meta_nonempty(meta)
    if one_row and not _known_empty(obj):
        stand_in = stand_in.iloc[:1]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return func(stand_in)


def _check_axis(axis, allow_none=False) -> int | None:
    if axis is None and allow_none:
        return None
    if axis in (0, "index", "rows", None):
        return 0
    if axis in (1, "columns"):
        return 1
    raise ValueError(f"No axis named {axis!r} for object type DataFrame")


def _axis1_kernel(df, name, args, kw):
    return getattr(df, name)(*args, axis=1, **kw)


def _numeric_positions(meta: pd.DataFrame) -> list[int]:
    return [i for i, dt in enumerate(meta.dtypes) if pd.api.types.is_numeric_dtype(dt)]


def _selected(meta: pd.DataFrame, numeric_only: bool):
    if not numeric_only:
        return None, meta.columns
    pos = _numeric_positions(meta)
    return pos, meta.columns[pos]


def _validate_bool(name, value):
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f'For argument "{name}" expected type bool, received type {type(value).__name__}.')


def _check_options(combine_size, method):
    """Mars's ``combine_size`` (partials per tree node) and ``method`` (how level reductions
    group: ours always use the tree, so every Mars value is accepted and means the same)."""
    if combine_size is not None and (
        not isinstance(combine_size, (int, np.integer)) or isinstance(combine_size, bool) or combine_size < 2
    ):
        raise ValueError(f"combine_size must be an integer >= 2, got {combine_size!r}")
    if method not in (None, "tree", "shuffle", "auto"):
        raise ValueError(f"method must be one of 'tree', 'shuffle', 'auto' or None, got {method!r}")


def _reduce(obj, name, axis=0, skipna=True, numeric_only=False, *, level=None, combine_size=None, method=None,
            bias=False, fisher=True, **kw):
    """Build ``obj.<name>(axis=..., skipna=..., numeric_only=..., **kw)``; ``level``: the
    reduction per index level (:func:`_reduce_level`); ``bias``/``fisher``: Mars's skew/kurt
    options."""
    is_frame = isinstance(obj, DataFrame)
    if numeric_only is None:
        numeric_only = False  # Mars's default; pandas 3 has no "try, then drop nuisance columns"
    if name not in ("count", "nunique"):
        _validate_bool("skipna", skipna)
    _validate_bool("numeric_only", numeric_only)
    _validate_bool("bias", bias)
    _validate_bool("fisher", fisher)
    _check_options(combine_size, method)
    user_kw = dict(kw)
    if name not in ("count", "nunique"):
        user_kw["skipna"] = skipna
    if name != "nunique" and (is_frame or name != "count"):
        user_kw["numeric_only"] = numeric_only
    if is_frame:
        axis = _check_axis(axis)
    elif axis not in (0, "index", None):
        raise ValueError(f"No axis named {axis!r} for object type {type(obj).__name__}")
    else:
        axis = 0
    if level is not None:
        return _reduce_level(obj, name, level, axis, skipna, numeric_only, combine_size, user_kw,
                             dict(bias=bias, fisher=fisher))
    mars_opts = bias or not fisher
    if axis == 1:
        meta_res = _probe(obj, lambda m: getattr(m, name)(axis=1, **user_kw))
        if mars_opts:
            return map_rows(_moments_rows_kernel, obj, name, skipna, numeric_only, bias, fisher,
                            meta=meta_res.iloc[:0].astype(np.float64), name=f"{name}-rows")
        return map_rows(_axis1_kernel, obj, name, (), user_kw, meta=meta_res.iloc[:0], name=f"{name}-rows")
    res = _probe(obj, lambda m: getattr(m, name)(**user_kw), one_row=name == "median")
    meta = obj.data.meta
    if is_frame:
        cols, labels = _selected(meta, numeric_only)
        empty = meta if cols is None else meta.iloc[:, cols]
        series_kw = {k: v for k, v in user_kw.items() if k != "numeric_only"}
        common = dict(cols=cols, series=False, empty=empty, labels=labels, dtype=res.dtype, user_kw=series_kw, name=name)
    else:
        if numeric_only and not pd.api.types.is_numeric_dtype(meta.dtype):
            raise TypeError(f"Series.{name} does not allow numeric_only=True with non-numeric dtypes.")
        series_kw = {k: v for k, v in user_kw.items() if k != "numeric_only"}
        common = dict(cols=None, series=True, empty=meta, labels=None, dtype=None, user_kw=series_kw, name=name)
    src = empty if is_frame else meta
    dtypes = list(src.dtypes) if is_frame else [src.dtype]
    if name in ("sum", "prod", "min", "max", "any", "all", "count"):
        kw2 = {k: v for k, v in series_kw.items() if k != "min_count"}
        if name in ("sum", "prod"):
            kw2["min_count"] = 0
        red = SimpleReducer(kw=kw2, min_count=series_kw.get("min_count", 0), **common)
    elif name == "nunique":
        red = NuniqueReducer(dropna=kw.get("dropna", True), **common)
    elif name in _MOMENT_ORDER and not any(
        pd.api.types.is_datetime64_any_dtype(d) or pd.api.types.is_timedelta64_dtype(d) for d in dtypes
    ):
        red = MomentReducer(skipna=skipna, ddof=kw.get("ddof", 1), bias=bias, fisher=fisher,
                            scalar_type=_np_dtype(res).type if not is_frame else None, **common)
    else:
        gather_kw = series_kw if not is_frame else user_kw
        red = GatherReducer(cols=None, func=_call_method, args=(name,), kw=gather_kw)
    if is_frame:
        return tree_reduce(obj, red, res.iloc[:0], len(res), name=name, combine_size=combine_size)
    return tree_reduce(obj, red, scalar_dtype=_np_dtype(res), name=name, combine_size=combine_size)


def _call_method(obj, name, **kw):
    return getattr(obj, name)(**kw)


@_quiet
def _moments_rows_kernel(df, name, skipna, numeric_only, bias, fisher):
    """Row-wise skew/kurt with Mars's ``bias``/``fisher`` options (pandas has neither)."""
    x = df.iloc[:, _numeric_positions(df)] if numeric_only else df
    p = chunk_moments(_float_matrix(x).T, _MOMENT_ORDER[name], skipna)
    vals = moment_statistic(p, name, bias=bias, fisher=fisher)[0]
    return pd.Series(vals, index=df.index, dtype=np.float64)


# ---- level= : the reduction per index level -------------------------------------------------

# what a partial of each decomposable reduction is re-reduced with
_LEVEL_COMBINE = {"count": "sum"}


def _regroup(v, name, kw, sort):
    """Re-reduce partial results (indexed by the group keys) by their keys."""
    lv = 0 if v.index.nlevels == 1 else list(range(v.index.nlevels))
    return getattr(v.groupby(level=lv, sort=sort), name)(**kw)


def _scatter(arr, pos, n):
    out = np.zeros((n, arr.shape[1]))
    out[pos] = arr
    return out


def _cast_like(res: pd.DataFrame, meta: pd.DataFrame) -> pd.DataFrame:
    """Give ``res`` the dtypes of ``meta`` where the values allow it (NaN kept in floats)."""
    for j, dt in enumerate(meta.dtypes):
        col = res.iloc[:, j]
        if col.dtype != dt:
            try:
                res.isetitem(j, col.astype(dt))
            except (TypeError, ValueError):
                try:  # pd.NA (from a nullable intermediate) where numpy wants NaN
                    res.isetitem(j, col.astype(object).where(col.notna(), np.nan).astype(dt))
                except (TypeError, ValueError):
                    pass
    return res


class LevelReducer(Reducer):
    """``groupby(level=...).<name>()`` as a tree (what ``obj.<name>(level=...)`` meant in the
    pandas Mars followed; pandas 3 removed the argument).  Partials are per-group results of
    each chunk: pandas' own groupby reduction for ``sum prod min max count any all`` (re-reduced
    by key, ``count`` by ``sum``, with counts for ``min_count``), per-group moments
    ``(n, sum, M2..)`` for ``mean var std sem skew kurt`` (merged with :func:`merge_moments`).
    The finish step sorts the groups as ``groupby(sort=True)``."""

    def prep(self, x):
        x = _as_frame(x)
        return x if self.cols is None else x.iloc[:, list(self.cols)]

    def map(self, x):
        x = self.prep(x)
        if len(x) == 0:
            return None
        g = x.groupby(level=self.level, sort=False)
        if self.order:
            ids = g.ngroup().to_numpy(dtype=np.float64)
            keys = g.size().index
            a = _float_matrix(x)
            keep = ~np.isnan(ids)
            if not keep.all():
                a, ids = a[keep], ids[keep]
            return keys, chunk_moments(a, self.order, self.skipna, ids.astype(np.intp), len(keys))
        return getattr(g, self.name)(**self.kw), (g.count() if self.min_count else None)

    def combine(self, parts):
        parts = [p for p in parts if p is not None]
        if len(parts) <= 1:
            return parts[0] if parts else None
        if self.order:
            keys = parts[0][0].append([p[0] for p in parts[1:]]).unique()
            acc = None
            for k, m in parts:
                pos = keys.get_indexer(k)
                full = tuple(_scatter(arr, pos, len(keys)) for arr in m)
                acc = full if acc is None else merge_moments(acc, full)
            return keys, acc
        cname = _LEVEL_COMBINE.get(self.name, self.name)
        v = _regroup(pd.concat([p[0] for p in parts]), cname, self.ckw, sort=False)
        c = _regroup(pd.concat([p[1] for p in parts]), "sum", {}, sort=False) if self.min_count else None
        return v, c

    def finish(self, parts):
        p = self.combine(parts)
        if p is None:
            return self.pandas(self.empty)
        meta = _as_frame(self.meta)
        if self.order:
            keys, m = p
            vals = moment_statistic(m, self.name, self.ddof, self.bias, self.fisher)
            res = pd.DataFrame(vals, index=keys, columns=meta.columns).sort_index()
        else:
            v, c = p
            res = _regroup(v, _LEVEL_COMBINE.get(self.name, self.name), self.ckw, sort=True)
            if self.min_count:
                res = res.where(_regroup(c, "sum", {}, sort=True) >= self.min_count)
        res = _cast_like(res, meta)
        if isinstance(self.meta, pd.Series):
            res = res.iloc[:, 0].rename(self.meta.name)
        return res


def _groupby_level(obj, name, level, kw):
    return getattr(obj.groupby(level=level), name)(**kw)


def _level_rows_kernel(df, name, level, kw):
    return _groupby_level(df.T, name, level, kw).T


def _reduce_level(obj, name, level, axis, skipna, numeric_only, combine_size, user_kw, opts):
    """``obj.<name>(level=level)``: pandas' ``obj.groupby(level=level).<name>()`` (sorted
    groups, NaN keys dropped), a tree of per-chunk group partials (never a gather)."""
    is_frame = isinstance(obj, DataFrame)
    # pandas' groupby reductions take these keyword arguments (count none; no numeric_only for
    # all/any)
    gb_kw = {k: v for k, v in user_kw.items() if k in ("skipna", "min_count", "ddof", "numeric_only")}
    if name == "count":
        gb_kw = {}
    elif name in ("all", "any"):
        gb_kw.pop("numeric_only", None)
    meta = obj.data.meta
    cols = None
    if is_frame and numeric_only:
        cols = _numeric_positions(meta)
    if axis == 1:
        res = _probe(obj, lambda m: _level_rows_kernel(m if cols is None else m.iloc[:, cols], name, level, gb_kw))
        src = obj if cols is None else obj.iloc[:, cols]
        return map_rows(_level_rows_kernel, src, name, level, gb_kw, meta=res.iloc[:0], name=f"{name}-level-rows")
    # ``min_count`` makes pandas' dtype depend on the data (float when a group falls short):
    # the meta is the usual case's, the result pandas' own
    probe_kw = dict(gb_kw, min_count=0) if "min_count" in gb_kw else gb_kw
    if name == "count" and cols is not None:
        res = _probe(obj, lambda m: _groupby_level(m.iloc[:, cols], name, level, probe_kw))
    else:
        res = _probe(obj, lambda m: _groupby_level(m, name, level, probe_kw))
    sel_kw = {k: v for k, v in gb_kw.items() if k != "numeric_only"}
    order = _MOMENT_ORDER.get(name, 0)
    min_count = sel_kw.pop("min_count", 0) if name in ("sum", "prod") else 0
    if name in ("sum", "prod"):
        sel_kw["min_count"] = 0
    out_meta = res.iloc[:0]
    empty = meta if cols is None else meta.iloc[:, cols]
    red = LevelReducer(level=level, name=name, kw=sel_kw, ckw=sel_kw, cols=cols, order=order, skipna=skipna,
                       ddof=user_kw.get("ddof", 1), min_count=min_count, meta=out_meta, empty=empty,
                       pandas=functools.partial(_groupby_level, name=name, level=level, kw=gb_kw), **opts)
    return tree_reduce(obj, red, out_meta, nan, name=f"{name}-level", combine_size=combine_size)


# ---- the methods -------------------------------------------------------------------------


def _check_min_count(min_count):
    if not isinstance(min_count, (int, np.integer)) or isinstance(min_count, bool):
        raise TypeError(f"min_count must be an int, got {min_count!r}")
    return int(min_count)


def _check_ddof(ddof):
    if not isinstance(ddof, (int, np.integer, float, np.floating)) or isinstance(ddof, bool):
        raise TypeError(f"ddof must be a number, got {ddof!r}")
    return ddof


def _make(name, has_min_count=False, has_ddof=False):
    """A reduction method with Mars 0.10's signature (``axis=None`` means rows; ``level``,
    ``combine_size`` and ``method`` as Mars), pandas' results."""
    if has_min_count:
        def method(self, axis=None, skipna=True, level=None, min_count=0, numeric_only=None, combine_size=None,
                   method=None):
            return _reduce(self, name, axis, skipna, numeric_only, level=level, combine_size=combine_size,
                           method=method, min_count=_check_min_count(min_count))
    elif has_ddof:
        def method(self, axis=None, skipna=True, level=None, ddof=1, numeric_only=None, combine_size=None,
                   method=None):
            return _reduce(self, name, axis, skipna, numeric_only, level=level, combine_size=combine_size,
                           method=method, ddof=_check_ddof(ddof))
    else:
        def method(self, axis=None, skipna=True, level=None, numeric_only=None, combine_size=None, method=None):
            return _reduce(self, name, axis, skipna, numeric_only, level=level, combine_size=combine_size,
                           method=method)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = (f"pandas' ``{name}`` as a tree reduction over the row chunks (``axis=1``: row-wise; "
                      f"``level``: ``groupby(level=level).{name}()``).")
    return method


for _n in ("sum", "prod"):
    register_method(DataFrame, Series, name=_n)(_make(_n, has_min_count=True))
for _n in ("min", "max", "mean"):
    register_method(DataFrame, Series, name=_n)(_make(_n))
for _n in ("var", "std", "sem"):
    register_method(DataFrame, Series, name=_n)(_make(_n, has_ddof=True))
register_method(DataFrame, Series, name="product")(_make("prod", has_min_count=True))


@register_method(DataFrame, Series)
def median(self, axis=0, skipna=True, numeric_only=False):
    """pandas' exact ``median`` (the selected columns are gathered by the tree)."""
    return _reduce(self, "median", axis, skipna, numeric_only)


@register_method(DataFrame, Series)
def skew(self, axis=None, skipna=True, level=None, numeric_only=None, combine_size=None, bias=False, method=None):
    """pandas' unbiased skewness (``bias=True``: Mars's population skewness) from per-chunk
    central moments merged up the tree."""
    return _reduce(self, "skew", axis, skipna, numeric_only, level=level, combine_size=combine_size,
                   method=method, bias=bias)


def _kurt(self, axis=None, skipna=True, level=None, numeric_only=None, combine_size=None, bias=False, fisher=True,
          method=None):
    """pandas' unbiased excess kurtosis (Mars's ``bias``; ``fisher=False``: Pearson's, +3)
    from per-chunk central moments merged up the tree."""
    return _reduce(self, "kurt", axis, skipna, numeric_only, level=level, combine_size=combine_size,
                   method=method, bias=bias, fisher=fisher)


register_method(DataFrame, Series, name="kurt")(_kurt)
register_method(DataFrame, Series, name="kurtosis")(_kurt)


def _any_all(name):
    def method(self, axis=None, bool_only=None, skipna=True, level=None, combine_size=None, method=None):
        if bool_only is None:
            bool_only = False
        _validate_bool("bool_only", bool_only)
        if isinstance(self, DataFrame) and bool_only:
            pos = [i for i, dt in enumerate(self.dtypes) if pd.api.types.is_bool_dtype(dt)]
            self = self.iloc[:, pos]
        elif bool_only and not pd.api.types.is_bool_dtype(self.dtype):
            raise TypeError(f"Series.{name} does not allow bool_only=True with non-bool dtypes.")
        if level is not None:
            return _reduce(self, name, axis, skipna, False, level=level, combine_size=combine_size, method=method)
        _check_options(combine_size, method)
        return _reduce_anyall(self, name, axis, skipna, combine_size)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"pandas' ``{name}`` as a tree reduction (``level``: ``groupby(level=level).{name}()``)."
    return method


def _reduce_anyall(obj, name, axis, skipna, combine_size=None):
    # pandas' any/all take no numeric_only
    _validate_bool("skipna", skipna)
    is_frame = isinstance(obj, DataFrame)
    axis = _check_axis(axis) if is_frame else 0
    kw = {"skipna": skipna}
    if axis == 1:
        meta_res = _probe(obj, lambda m: getattr(m, name)(axis=1, **kw))
        return map_rows(_axis1_kernel, obj, name, (), kw, meta=meta_res.iloc[:0], name=f"{name}-rows")
    res = _probe(obj, lambda m: getattr(m, name)(**kw))
    meta = obj.data.meta
    common = dict(cols=None, series=not is_frame, empty=meta, labels=meta.columns if is_frame else None,
                  dtype=res.dtype if is_frame else None, user_kw=kw, name=name)
    red = SimpleReducer(kw=kw, min_count=0, **common)
    if is_frame:
        return tree_reduce(obj, red, res.iloc[:0], len(res), name=name, combine_size=combine_size)
    return tree_reduce(obj, red, scalar_dtype=np.dtype(bool), name=name, combine_size=combine_size)


register_method(DataFrame, Series, name="any")(_any_all("any"))
register_method(DataFrame, Series, name="all")(_any_all("all"))


@register_method(DataFrame)
def count(self, axis=0, level=None, numeric_only=False, combine_size=None, method=None):
    """Non-null values per column (``axis=1``: per row; ``level``: per index-level group)."""
    return _reduce(self, "count", axis, True, numeric_only, level=level, combine_size=combine_size, method=method)


def _series_count(self, level=None, combine_size=None, method=None):
    """Non-null values of the Series (``level``: per index-level group)."""
    return _reduce(self, "count", 0, True, False, level=level, combine_size=combine_size, method=method)


Series.count = _series_count


@register_method(DataFrame)
def nunique(self, axis=0, dropna=True):
    """Distinct values per column (tree of per-chunk distinct values)."""
    _validate_bool("dropna", dropna)
    axis = _check_axis(axis)
    if axis == 1:
        res = _probe(self, lambda m: m.nunique(axis=1, dropna=dropna))
        return map_rows(_axis1_kernel, self, "nunique", (), {"dropna": dropna}, meta=res.iloc[:0], name="nunique-rows")
    return _reduce(self, "nunique", 0, True, False, dropna=dropna)


def _series_nunique(self, dropna=True):
    """Distinct values of the Series (a python int once fetched)."""
    _validate_bool("dropna", dropna)
    red = NuniqueReducer(dropna=dropna, cols=None, series=True, empty=self.data.meta, labels=None, dtype=None,
                         user_kw={"dropna": dropna}, name="nunique")
    return tree_reduce(self, red, scalar_dtype=np.dtype(np.int64), name="nunique")


Series.nunique = _series_nunique


def _check_q(q):
    qs = np.atleast_1d(np.asarray(q, dtype=float)) if not isinstance(q, (pd.Series, pd.Index)) else np.asarray(q, dtype=float)
    if np.any(qs < 0) or np.any(qs > 1) or np.any(np.isnan(qs)):
        raise ValueError("percentiles should all be in the interval [0, 1].")


def _quantile_rows_kernel(df, q, **kw):
    return df.quantile(q, axis=1, **kw)


def _q_stand_in(q):
    """Quantile points standing in for a tileable ``q`` at build time (its values are only
    known once executed)."""
    if q.ndim == 0:
        return 0.5
    if q.ndim != 1:
        raise ValueError(f"q must be a scalar or 1-d, got a {q.ndim}-d {type(q).__name__}")
    n = q.shape[0]
    return [0.5] * (2 if isinstance(n, float) and math.isnan(n) or n == 0 else int(n))


@register_method(DataFrame, Series)
def quantile(self, q=0.5, axis=0, numeric_only=True, interpolation="linear", method="single"):
    """Exact quantiles: the (selected) columns are gathered by the tree and pandas computes
    them in the finish step.  ``q`` may be a tensor or Series tileable: it becomes an input of
    the reduction (its values reach the finish step), and pandas checks its values there; with
    one point (0-d) the result's name, which pandas takes from the point, is only right once
    executed.  ``numeric_only`` defaults to True as in Mars (and the pandas it followed)."""
    q_t = q if isinstance(q, Tileable) else None
    if q_t is not None:
        q = _q_stand_in(q_t)
    else:
        _check_q(q)
    if interpolation not in ("linear", "lower", "higher", "midpoint", "nearest"):
        raise ValueError(f"interpolation={interpolation!r} is not one of linear, lower, higher, midpoint, nearest")
    is_frame = isinstance(self, DataFrame)
    if is_frame:
        _validate_bool("numeric_only", numeric_only)
        axis = _check_axis(axis)
        kw = dict(q=q, numeric_only=numeric_only, interpolation=interpolation, method=method)
        if axis == 1:
            res = _probe(self, lambda m: m.quantile(axis=1, **kw))
            if q_t is not None:  # every row chunk receives the point
                if q_t.ndim:
                    raise ValueError("quantile(axis=1) with a tileable q takes one point (a 0-d tensor): several "
                                     "points make one column per row")
                from .statistics import rows_with_whole

                kw.pop("q")
                return rows_with_whole(_quantile_rows_kernel, self, q_t, res.iloc[:0], **kw)
            return map_rows(_axis1_kernel, self, "quantile", (), kw, meta=res.iloc[:0], name="quantile-rows")
    else:
        kw = dict(q=q, interpolation=interpolation)
    res = _probe(self, lambda m: m.quantile(**kw), one_row=True)
    cols = None
    if is_frame and numeric_only:
        cols = _numeric_positions(self.data.meta)
    extra = ()
    if q_t is not None:
        kw = {k: v for k, v in kw.items() if k != "q"}
        extra = (q_t,)
    red = GatherReducer(cols=cols, func=_call_method, args=("quantile",), kw=kw, extra_kw=("q",) if extra else ())
    if isinstance(res, (pd.Series, pd.DataFrame)):
        nrows = q_t.shape[0] if q_t is not None and q_t.ndim == 1 else len(res)
        return tree_reduce(self, red, res.iloc[:0], nrows, name="quantile", extra=extra)
    return tree_reduce(self, red, scalar_dtype=_np_dtype(res), name="quantile", extra=extra)


# ---- describe -------------------------------------------------------------------------


class DescribeReducer(Reducer):
    """``describe``: numeric/datetime columns gathered (pandas describes them exactly);
    the other columns reduced to value counts (tree), from which count/unique/top/freq
    follow as pandas computes them."""

    def map(self, x):
        x = _as_frame(x)
        num = x.iloc[:, list(self.num)]
        vcs = [x.iloc[:, j].value_counts(sort=False) for j in self.obj]
        cnt = [int(x.iloc[:, j].count()) for j in self.obj]
        return num, vcs, cnt

    def combine(self, parts):
        if len(parts) == 1:
            return parts[0]
        nums = [p[0] for p in parts]
        nonempty = [n for n in nums if len(n)] or nums[:1]
        num = pd.concat(nonempty) if len(nonempty) > 1 else nonempty[0]
        vcs = [_combine_counts([p[1][k] for p in parts]) for k in range(len(self.obj))]
        cnt = [sum(p[2][k] for p in parts) for k in range(len(self.obj))]
        return num, vcs, cnt

    def finish(self, parts):
        num, vcs, cnt = self.combine(parts)
        per_col = {}
        for k, j in enumerate(self.num):
            s = num.iloc[:, k]
            per_col[j] = s.describe(percentiles=self.percentiles)
        for k, j in enumerate(self.obj):
            vc = vcs[k]
            vc = vc.sort_values(ascending=False, kind="stable")
            nonzero = vc[vc != 0]
            if len(nonzero) > 0:
                top, freq, dtype = vc.index[0], vc.iloc[0], None
            else:
                top, freq, dtype = np.nan, np.nan, "object"
            per_col[j] = pd.Series([cnt[k], len(nonzero), top, freq], index=["count", "unique", "top", "freq"], dtype=dtype)
        order = sorted(per_col)
        ldesc = [per_col[j] for j in order]
        if self.series:
            res = ldesc[0]
            res.name = self.sname
            return res
        names: list = []
        seen: set = set()
        for idx in sorted((d.index for d in ldesc), key=len):  # pandas' reorder_columns
            for n in idx:
                if n not in seen:
                    seen.add(n)
                    names.append(n)
        out = pd.concat([d.reindex(names) for d in ldesc], axis=1, sort=False)
        out.columns = self.columns
        return out


def _combine_counts(vcs):
    vcs = [v for v in vcs]
    if len(vcs) == 1:
        return vcs[0]
    cat = pd.concat(vcs)
    res = cat.groupby(level=0, sort=False, dropna=False, observed=True).sum()
    res.index.name = vcs[0].index.name
    res.name = vcs[0].name
    return res


def _is_numeric_like(dt) -> bool:
    return (
        (pd.api.types.is_numeric_dtype(dt) and not pd.api.types.is_bool_dtype(dt))
        or pd.api.types.is_datetime64_any_dtype(dt)
        or pd.api.types.is_timedelta64_dtype(dt)
    )


@register_method(DataFrame, Series)
def describe(self, percentiles=None, include=None, exclude=None):
    """pandas' ``describe``: numeric columns exactly (gathered), others through value counts."""
    meta = self.data.meta
    res = _probe(self, lambda m: m.describe(percentiles=percentiles, include=include, exclude=exclude), one_row=True)
    if percentiles is not None:
        _check_q(percentiles)
    if isinstance(self, DataFrame):
        # pandas' column selection, on the meta
        if include is None and exclude is None:
            data = meta.select_dtypes(include=[np.number, "datetime"])
            if len(data.columns) == 0:
                data = meta
        elif include == "all":
            if exclude is not None:
                raise ValueError("exclude must be None when include is 'all'")
            data = meta
        else:
            data = meta.select_dtypes(include=include, exclude=exclude)
        pos = [i for i, c in enumerate(meta.columns) if c in set(data.columns)] if not data.columns.has_duplicates else list(range(len(meta.columns)))
        sub = self.iloc[:, pos] if len(pos) != len(meta.columns) else self
        dts = list(sub.data.meta.dtypes)
        num = [j for j, d in enumerate(dts) if _is_numeric_like(d)]
        obj = [j for j, d in enumerate(dts) if not _is_numeric_like(d)]
        red = DescribeReducer(num=num, obj=obj, percentiles=percentiles, series=False, sname=None,
                              columns=sub.data.meta.columns)
        target = sub
    else:
        isnum = _is_numeric_like(meta.dtype)
        red = DescribeReducer(num=[0] if isnum else [], obj=[] if isnum else [0], percentiles=percentiles,
                              series=True, sname=meta.name, columns=None)
        target = self
    return tree_reduce(target, red, res.iloc[:0], len(res), name="describe")


# ---- cumulative reductions ----------------------------------------------------------------


_CUM_TOTAL = {"cumsum": "sum", "cumprod": "prod", "cummax": "max", "cummin": "min"}


def _cum_total(x, name, skipna):
    """The chunk's contribution to the carry (None for an empty chunk)."""
    if len(x) == 0:
        return None
    return getattr(x, _CUM_TOTAL[name])(skipna=skipna)


def _isna(v):
    return v.isna() if isinstance(v, pd.Series) else pd.isna(v)


@_quiet
def _cum_fold(carry, total, name, skipna):
    if carry is None:
        return total
    if total is None:
        return carry
    if name == "cumsum":
        return carry + total
    if name == "cumprod":
        return carry * total
    better = total > carry if name == "cummax" else total < carry
    if skipna:
        take = _isna(carry) | (~_isna(total) & better)
    else:
        take = ~_isna(carry) & (_isna(total) | better)
    if isinstance(carry, pd.Series):
        return carry.where(~take, total)
    return total if take else carry


@_quiet
def _cum_apply(x, carry, name, skipna):
    c = getattr(x, name)(skipna=skipna)
    if carry is None or len(x) == 0:
        return c
    res = _cum_join(c, carry, name, skipna)
    if isinstance(res, pd.DataFrame):
        # a frame's carry is one Series (a common dtype): give each column its own back
        changed = {k: v for k, v in c.dtypes.items() if res.dtypes[k] != v}
        if changed:
            res = res.astype(changed)
    return res


def _cum_join(c, carry, name, skipna):
    if name == "cumsum":
        return c + carry
    if name == "cumprod":
        return c * carry
    cna = c.isna()
    keep = cna | ((c >= carry) if name == "cummax" else (c <= carry))
    if skipna:
        keep = keep | (carry.isna() if isinstance(carry, pd.Series) else pd.isna(carry))
    return c.where(keep, carry) if isinstance(c, pd.Series) or not isinstance(carry, pd.Series) else c.where(keep, carry, axis=1)


class CumReduce(DataFrameOperand):
    """Per-chunk cumulative op joined with the carry of the preceding chunks (a chain of
    small per-column totals), as the tensor cumulative reductions."""

    _op_name = "cumreduce"

    def tile(self):
        (x,) = self.inputs
        okey = self.output_key()
        out = self.output
        name, skipna = self.name, self.skipna
        chunks, carry = [], None
        for i, c in enumerate(x.chunks):
            chunks.append(self.new_chunk(i, c.shape[0], _cum_apply, (c, carry, name, skipna), meta=out.meta))
            total = Chunk((f"{okey}-total", i), (i,), (), _cum_total, (c, name, skipna), inputs=[c])
            if carry is None:
                carry = total
            else:
                carry = Chunk((f"{okey}-carry", i), (i,), (), _cum_fold, (carry, total, name, skipna), inputs=[carry, total])
        return [(chunks, frame_nsplits(out.meta, tuple(c.shape[0] for c in chunks)))]


def _cum_method(name):
    def method(self, axis=None, skipna=True):
        _validate_bool("skipna", skipna)
        if isinstance(self, DataFrame):
            axis = _check_axis(axis if axis is not None else 0)
        elif axis not in (0, "index", None):
            raise ValueError(f"No axis named {axis!r} for object type Series")
        else:
            axis = 0
        res = _probe(self, lambda m: getattr(m, name)(axis=axis, skipna=skipna))
        if axis == 1:
            return map_rows(_axis1_kernel, self, name, (), {"skipna": skipna}, meta=res.iloc[:0], name=f"{name}-rows")
        op = CumReduce([self.data], name=name, skipna=skipna)
        return op.new_output(res.iloc[:0], self.shape[0], index_key=self.data.index_key, range_index=self.data.range_index)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"pandas' ``{name}``: per-chunk {name} joined with the carried totals of earlier chunks."
    return method


for _n in ("cumsum", "cumprod", "cummax", "cummin"):
    register_method(DataFrame, Series, name=_n)(_cum_method(_n))


# the other tree-reduced aggregations live in unique.py (value_counts, drop_duplicates,
# duplicated, unique, nlargest/nsmallest); importing it registers their methods.
from . import unique as _unique  # noqa: E402

unique = _unique.unique  # md.unique (the function, not the module of the same name)
