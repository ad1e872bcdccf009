"""``df.groupby(...)``: the lazy GroupBy handle and the operands behind it.

Aggregations made of decomposable functions (``sum count size min max first last prod mean
var std``) run as Mars does, with per-chunk partial aggregates (``mean`` = sum and count,
``var``/``std`` = count, sum and M2 merged with Chan et al.'s formula), followed by either

- a *tree* reduction (partials combined ``combine-size`` at a time, level by level; good
  when there are few groups), or
- a *shuffle*: the partials are hash-partitioned on the keys (``shuffle.shuffle_chunks``; the keys
  are hashed level by level, so missing keys are allowed),
  each partition combined and finished in parallel, then the groups put in pandas' order
  (good when there are many groups).

``method="auto"`` (the default, config ``mars-dask.dataframe.groupby-method``) computes the
partials of the first ``combine-size`` chunks first (iterative tiling: the chunks are run
and their lengths read back, they are reused afterwards) and picks the shuffle when those
partials keep more than ``groupby-shuffle-ratio`` of their input rows (many groups).

``sem`` is finished from the same partials as ``std`` (pandas' ``std / sqrt(count)``), and
``all``/``any`` combine their partials with ``all``/``any``.  Every reduction method takes
Mars's ``method=`` and ``combine_size=`` besides pandas' arguments.

Everything else (``nunique``, ``median``, ``skew``, ``kurt``, user functions in ``agg``, ``apply``,
``transform`` of functions) shuffles the raw rows so that each group is whole in one
partition, then runs pandas' groupby there.  ``sort=False`` order is pandas'
first-appearance order, restored from each group's first global row position.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from .._meta import meta_nonempty

from ... import config
from ...tiling.core import has_unknown
from ...tiling.tileable import Tileable
from ..core import DataFrame, DataFrameOperand, Series, frame_nsplits, nan
from ..map import DataFrameMap
from ..shuffle import shuffle_chunks
from . import kernels as K
from . import keys as GK

_DECOMPOSABLE = {"sum", "count", "size", "min", "max", "first", "last", "prod", "mean", "var", "std", "sem",
                 "all", "any"}
_NUMERIC_ONLY = {"sum", "prod", "mean", "var", "std", "sem"}


def _combine_size() -> int:
    return int(config.get("dataframe.combine-size") or config.get("tensor.combine-size") or 4)


def _default_method() -> str:
    return config.get("dataframe.groupby-method") or "auto"


def _shuffle_ratio() -> float:
    return float(config.get("dataframe.groupby-shuffle-ratio"))


def _empty_chunk_meta():
    return pd.DataFrame()


def _is_label(x) -> bool:
    try:
        hash(x)
    except TypeError:
        return False
    return not isinstance(x, (pd.Series, pd.Index, np.ndarray))


def _is_getitem_of(key: Series, df: DataFrame):
    """``df['a']`` used as a key: pandas treats it like the label ``'a'``."""
    op = key.data.op
    if isinstance(op, DataFrameMap) and len(op.inputs) == 1 and op.inputs[0] is df.data:
        from ..indexing import _getitem_kernel

        spec = op.args_spec
        if op.func is _getitem_kernel and len(spec) == 2 and spec[1][0] == "c":
            label = spec[1][1]
            if not isinstance(label, list) and label in df.columns:
                return True, label
    return False, None


class GroupBy:
    """A lazy ``DataFrameGroupBy`` / ``SeriesGroupBy``."""

    def __init__(self, obj, by, *, as_index=True, sort=True, dropna=True, observed=True, group_keys=True,
                 selection=None, method=None):
        self.obj = obj
        self.as_index = as_index
        self.sort = sort
        self.dropna = dropna
        self.observed = observed
        self.group_keys = group_keys
        self.selection = selection
        self.method = method
        self._by_in = by
        self._parse_by(by)

    # -- construction ------------------------------------------------------------------
    def _parse_by(self, by):
        obj = self.obj
        if by is None:
            raise TypeError("You have to supply one of 'by' and 'level'")
        items = by if isinstance(by, list) else [by]
        if not items:
            raise ValueError("No group keys passed!")
        if (isinstance(by, list) and len(by) == obj.shape[0] and not self._all_labels(by)
                and all(_is_label(x) and not callable(x) for x in by)):
            items = [np.asarray(by)]  # pandas: a list of values, one per row, is one key
        spec = []
        key_tileables = []

        def add_key(key):
            spec.append(("tmp", K.tmp_name(len(key_tileables)), key.name))
            key_tileables.append(key)

        for it in items:
            if isinstance(it, Tileable):
                if not isinstance(it, Series):
                    raise TypeError(f"groupby keys must be column labels or Series, got {type(it).__name__}")
                if isinstance(obj, DataFrame):
                    same, label = _is_getitem_of(it, obj)
                    if same:
                        spec.append(("col", label))
                        continue
                if it.data.index_key != obj.data.index_key:
                    raise ValueError(
                        "a Series used as a groupby key must have the same index and partitioning as the "
                        "object grouped (e.g. a column of it or computed from it)"
                    )
                add_key(it)
            elif isinstance(it, (np.ndarray, pd.Index, pd.api.extensions.ExtensionArray)):
                add_key(GK.array_key(obj, it))
            elif isinstance(it, (pd.Series, dict)) or callable(it):
                add_key(GK.map_key(obj, it))
            elif isinstance(obj, DataFrame) and _is_label(it) and it in obj.columns:
                spec.append(("col", it))
            elif _is_label(it) and it in obj.data.meta.index.names:
                add_key(GK.level_key(obj, it))  # pandas: a label naming an index level
            else:
                raise KeyError(it)
        self.spec = spec
        self.keys = key_tileables
        self.is_series_obj = isinstance(obj, Series)

    def _all_labels(self, items) -> bool:
        obj = self.obj
        names = set(n for n in obj.data.meta.index.names if n is not None)
        cols = set(obj.columns) if isinstance(obj, DataFrame) else set()
        return all(_is_label(x) and (x in cols or x in names) for x in items)

    def _copy(self, **kw):
        new = GroupBy.__new__(GroupBy)
        new.__dict__.update(self.__dict__)
        new.__dict__.update(kw)
        return new

    def __getitem__(self, item):
        if self.is_series_obj or self.selection is not None and not isinstance(self.selection, list):
            raise IndexError(f"Column(s) {item} already selected")
        labels = list(item) if isinstance(item, (list, tuple, pd.Index)) else [item]
        missing = [c for c in labels if c not in self.obj.columns]
        if missing:
            raise KeyError(f"Columns not found: {', '.join(map(str, missing))}" if len(missing) > 1 else missing[0])
        return self._copy(selection=labels if isinstance(item, (list, tuple, pd.Index)) else item)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        obj = self.__dict__.get("obj")
        if obj is not None and isinstance(obj, DataFrame) and self.__dict__.get("selection") is None and name in obj.columns:
            return self[name]
        raise AttributeError(f"'GroupBy' object has no attribute {name!r}")

    # -- helpers -------------------------------------------------------------------------
    @property
    def _series_like(self) -> bool:
        return self.is_series_obj or (self.selection is not None and not isinstance(self.selection, list))

    def _value_cols(self) -> list:
        """Columns (of the work frame) the aggregation reads, in pandas' output order."""
        if self.is_series_obj:
            return [K.VAL]
        if self.selection is not None:
            return list(self.selection) if isinstance(self.selection, list) else [self.selection]
        key_labels = {e[1] for e in self.spec if e[0] == "col"}
        return [c for c in self.obj.columns if c not in key_labels]

    def _ctx(self, cols=None, sort=None) -> K.Ctx:
        return K.Ctx(
            self.spec, cols, self.obj.name if self.is_series_obj else None, self.is_series_obj,
            self.selection, self.dropna, self.observed, self.sort if sort is None else sort,
        )

    def _needed_cols(self, value_cols) -> list | None:
        if self.is_series_obj:
            return None
        keys = [e[1] for e in self.spec if e[0] == "col"]
        want = set(keys) | set(value_cols)
        return [c for c in self.obj.columns if c in want]

    def _meta_work(self):
        """A non-empty work frame standing in for the data (for output metadata)."""
        obj_ne = meta_nonempty(self.obj.data.meta)
        keys_ne = [meta_nonempty(k.data.meta).set_axis(obj_ne.index) for k in self.keys]
        return K.work_frame(obj_ne, keys_ne, self._ctx())

    def _infer(self, call_spec, as_index=None):
        work = self._meta_work()
        g = K.pandas_groupby(work, self._ctx(), as_index=self.as_index if as_index is None else as_index,
                             group_keys=self.group_keys)
        res = K.call(g, call_spec)
        if not isinstance(res, (pd.DataFrame, pd.Series)):
            raise TypeError(f"groupby {call_spec[0]} returned {type(res).__name__}, expected a DataFrame or Series")
        return res.iloc[:0]

    def _has_categorical_key(self) -> bool:
        work = self._meta_work()
        _, by = K.split_work(work, self._ctx())
        for b in by:
            s = b if isinstance(b, pd.Series) else work[b]
            if isinstance(s.dtype, pd.CategoricalDtype):
                return True
        return False

    # -- aggregation ---------------------------------------------------------------------
    def _items(self, func, kwargs):
        """``[(column, func)]`` in output order, or None when the spec is not understood."""
        cols = self._value_cols()
        if func is None:
            if not kwargs:
                raise TypeError("Must provide 'func' or tuples of '(column, aggfunc).")
            if self._series_like:
                return [(cols[0], f) for f in kwargs.values()]
            out = []
            for v in kwargs.values():
                if not (isinstance(v, tuple) and len(v) == 2):
                    return None
                out.append(v)
            return out
        if isinstance(func, str):
            if func == "size":
                return [(None, "size")]
            return [(c, func) for c in cols]
        if callable(func):
            return [(c, func) for c in cols]
        if isinstance(func, (list, tuple)):
            return [(c, f) for c in cols for f in func]
        if isinstance(func, dict):
            out = []
            for c, fs in func.items():
                for f in (fs if isinstance(fs, (list, tuple)) else [fs]):
                    out.append((c, f))
            return out
        return None

    def _decomposable(self, items, fkw) -> bool:
        if items is None:
            return False
        extra = set(fkw) - {"ddof"}
        if extra:
            return False
        dtypes = self._work_dtypes()
        for col, f in items:
            if not isinstance(f, str) or f not in _DECOMPOSABLE:
                return False
            if f == "size":
                continue
            if col not in dtypes:
                return False
            dt = dtypes[col]
            if f in _NUMERIC_ONLY and not (pd.api.types.is_numeric_dtype(dt) and dt.kind != "c"
                                           and not isinstance(dt, pd.CategoricalDtype)):
                return False
        if "ddof" in fkw and not all(f in ("var", "std", "sem") for _, f in items):
            return False
        return True

    def _work_dtypes(self) -> dict:
        if self.is_series_obj:
            return {K.VAL: self.obj.dtype}
        return dict(self.obj.dtypes.items())

    def agg(self, func=None, method=None, combine_size=None, *args, **kwargs):
        """pandas' ``agg`` with Mars's ``method`` ("auto", "tree", "shuffle") and
        ``combine_size`` (partials combined per tree node)."""
        call_spec = ("agg", (func, *args), kwargs) if func is not None else ("agg", args, kwargs)
        named = kwargs if func is None else {}
        meta = self._infer(call_spec)
        items = self._items(func, named)
        fkw = {} if func is None else dict(kwargs)
        if args:
            items = None
        return self._aggregate(call_spec, meta, items, fkw, method, combine_size)

    aggregate = agg

    def _aggregate(self, call_spec, meta, items, fkw, method, combine_size=None):
        method = method or self.method or _default_method()
        if method not in ("auto", "tree", "shuffle"):
            raise ValueError(f"method must be 'auto', 'tree' or 'shuffle', got {method!r}")
        out_series = isinstance(meta, pd.Series) or (not self.as_index and items is not None and len(items) == 1 and items[0][1] == "size")
        nout = 1 if isinstance(meta, pd.Series) else len(meta.columns) - (0 if self.as_index else self._n_index_cols(meta))
        if items is not None and len(items) != nout:
            items = None
        if self._decomposable(items, fkw):
            ddof = fkw.get("ddof", 1)
            itemsd = [(c, f, ddof) for c, f in items]
            op = GroupByAgg(self, itemsd, method, meta, out_series, combine_size)
        else:
            op = GroupByRaw(self, call_spec, method, meta)
        return op.new_output(meta, nan, range_index=not self.as_index)

    def _n_index_cols(self, meta) -> int:
        return len(self.spec)

    def _method(self, name, method=None, combine_size=None, **kw):
        call_spec = (name, (), kw)
        meta = self._infer(call_spec)
        if name == "size":
            items = [(None, "size")]
        else:
            items = [(c, name) for c in self._value_cols()]
        return self._aggregate(call_spec, meta, items, kw, method, combine_size)

    # Mars's GroupBy reductions: pandas' arguments plus ``method=``/``combine_size=``

    def sum(self, **kw):
        return self._method("sum", **kw)

    def mean(self, **kw):
        return self._method("mean", **kw)

    def count(self, **kw):
        return self._method("count", **kw)

    def size(self, **kw):
        return self._method("size", **kw)

    def min(self, **kw):
        return self._method("min", **kw)

    def max(self, **kw):
        return self._method("max", **kw)

    def prod(self, **kw):
        return self._method("prod", **kw)

    def first(self, **kw):
        return self._method("first", **kw)

    def last(self, **kw):
        return self._method("last", **kw)

    def std(self, ddof=1, **kw):
        return self._method("std", ddof=ddof, **kw)

    def var(self, ddof=1, **kw):
        return self._method("var", ddof=ddof, **kw)

    def sem(self, ddof=1, **kw):
        return self._method("sem", ddof=ddof, **kw)

    def all(self, **kw):
        return self._method("all", **kw)

    def any(self, **kw):
        return self._method("any", **kw)

    def skew(self, **kw):
        return self._method("skew", **kw)

    def kurt(self, **kw):
        return self._method("kurt", **kw)

    kurtosis = kurt  # Mars's name (pandas' GroupBy only has kurt)

    def nunique(self, dropna=True, **kw):
        return self._method("nunique", dropna=dropna, **kw)

    def median(self, **kw):
        return self._method("median", **kw)

    # -- row-wise ------------------------------------------------------------------------
    def transform(self, func, *args, **kwargs):
        call_spec = ("transform", (func, *args), kwargs)
        meta = self._infer(call_spec)
        items = self._items(func, {}) if isinstance(func, str) and not args else None
        obj = self.obj
        if items is not None and func != "size" and self._decomposable(items, kwargs):
            agg = self._copy(as_index=True, sort=False, observed=True)
            agg_meta = agg._infer((func, (), kwargs))
            agg_t = agg._aggregate((func, (), kwargs), agg_meta, items, kwargs, None)
            op = GroupByBroadcast(self, agg_t, meta)
        else:
            op = GroupByTransform(self, call_spec, meta)
        return op.new_output(meta, obj.shape[0], index_key=obj.data.index_key, range_index=obj.data.range_index)

    def apply(self, func, *args, meta=None, **kwargs):
        call_spec = ("apply", (func, *args), kwargs)
        if meta is None:
            meta = self._infer(call_spec)
        op = GroupByApply(self, call_spec, meta)
        return op.new_output(meta, nan, range_index=False)

    def cumcount(self, ascending=True):
        meta = self._infer(("cumcount", (), {"ascending": ascending}))
        op = GroupByCumcount(self, ascending, meta)
        obj = self.obj
        return op.new_output(meta, obj.shape[0], index_key=obj.data.index_key, range_index=obj.data.range_index)

    def __repr__(self):
        return f"<mars_dask GroupBy by={self._by_in!r} selection={self.selection!r}>"


# ---- operands --------------------------------------------------------------------------


class _GroupByOp(DataFrameOperand):
    _op_name = "groupby"

    def __init__(self, gb: GroupBy, extra_inputs=(), **params):
        inputs = [gb.obj.data] + [k.data for k in gb.keys] + [t.data for t in extra_inputs]
        super().__init__(
            inputs,
            by=[e for e in gb.spec], as_index=gb.as_index, sort=gb.sort, dropna=gb.dropna, observed=gb.observed,
            group_keys=gb.group_keys, selection=gb.selection, **params,
        )
        self.gb = gb
        self.nkeyt = len(gb.keys)

    def _in_chunks(self):
        obj = self.inputs[0]
        keys = self.inputs[1 : 1 + self.nkeyt]
        n = len(obj.chunks)
        for k in keys:
            if len(k.chunks) != n:
                raise ValueError("groupby keys are not partitioned like the grouped object")
        return [(obj.chunks[i], [k.chunks[i] for k in keys]) for i in range(n)]

    def _ctx(self, cols, sort=None):
        return self.gb._ctx(cols, sort)

    def _single_output(self, func, args):
        meta = self.output.meta
        c = self.new_chunk(0, nan, func, args)
        return [([c], frame_nsplits(meta, (nan,)))]

    def _tree(self, parts, combine, args, suffix="combine"):
        cs = max(2, getattr(self, "combine_size", None) or _combine_size())
        level = 0
        while len(parts) > cs:
            parts = [
                self.new_chunk(j // cs, nan, combine, (parts[j : j + cs], *args), meta=_empty_chunk_meta(),
                               suffix=f"-{suffix}{level}")
                for j in range(0, len(parts), cs)
            ]
            level += 1
        return parts


class GroupByAgg(_GroupByOp):
    """Decomposable aggregation: partials, then tree or shuffle."""

    _op_name = "groupby-agg"

    def __init__(self, gb, items, method, meta, out_series, combine_size=None):
        super().__init__(gb, items=items, method=method, combine_size=combine_size)
        self.items = items
        self.method = method
        self.out_series = out_series
        self.combine_size = combine_size

    def _pcols(self, need_pos):
        pcols = []

        def add(p):
            if p not in pcols:
                pcols.append(p)

        for col, f, _ in self.items:
            if f == "size":
                add((None, "size"))
            elif f == "mean":
                add((col, "sum"))
                add((col, "count"))
            elif f in ("var", "std", "sem"):
                add((col, "count"))
                add((col, "sum"))
                add((col, "m2"))
            else:
                add((col, f))
        if need_pos:
            add((None, "pos"))
        return pcols

    def tile(self):
        gb = self.gb
        meta = self.output.meta
        in_chunks = self._in_chunks()
        n = len(in_chunks)
        method = self.method
        if gb.observed is False and gb._has_categorical_key():
            method = "tree"  # unobserved categories appear once, in the final groupby
        cols = gb._needed_cols([c for c, _, _ in self.items if c is not None])
        ctx = self._ctx(cols)
        need_pos = method != "tree" and not gb.sort
        pcols = self._pcols(need_pos=True if method == "auto" and not gb.sort else need_pos)
        partials = [
            self.new_chunk(i, nan, K.partial_agg, (oc, kc, ctx, pcols, i, (None, "pos") in pcols),
                           meta=_empty_chunk_meta(), suffix="-partial")
            for i, (oc, kc) in enumerate(in_chunks)
        ]
        if method == "auto":
            if n <= 1:
                method = "tree"
            else:
                k = min(n, max(2, self.combine_size or _combine_size()))
                sample_in = [in_chunks[i][0] for i in range(k)]
                req = [c for c in sample_in if has_unknown(c.shape)] + partials[:k]
                yield req
                rows = sum(c.shape[0] for c in sample_in)
                groups = sum(p.shape[0] for p in partials[:k])
                method = "shuffle" if rows > 0 and groups > rows * _shuffle_ratio() else "tree"
        as_index = gb.as_index
        if method == "tree" or n <= 1:
            parts = self._tree(partials, K.combine_partials, (ctx, pcols))
            c = self.new_chunk(0, nan, K.finish_tree, (parts, ctx, pcols, self.items, meta, self.out_series, as_index))
            return [([c], frame_nsplits(meta, (nan,)))]
        # shuffle the partials on the group keys (the index), reduce each partition in parallel
        need_pos = (None, "pos") in pcols
        per_out = shuffle_chunks(self, partials, n, K.split_by_keys, (n, len(gb.spec), None))
        reduced = [
            self.new_chunk(j, nan, K.reduce_shuffled, (pieces, ctx, pcols, self.items, meta, self.out_series, need_pos),
                           meta=_empty_chunk_meta(), suffix="-reduce")
            for j, pieces in enumerate(per_out)
        ]
        c = self.new_chunk(0, nan, K.gather_ordered, (reduced, ctx, meta, as_index))
        return [([c], frame_nsplits(meta, (nan,)))]


class GroupByRaw(_GroupByOp):
    """Any aggregation: shuffle the rows so each group is whole, then pandas per partition."""

    _op_name = "groupby-raw"

    def __init__(self, gb, call_spec, method, meta):
        super().__init__(gb, call=call_spec, method=method)
        self.call_spec = call_spec
        self.method = method

    def _works(self, ctx, need_pos):
        return [
            self.new_chunk(i, nan, K.raw_map, (oc, kc, ctx, i, need_pos), meta=_empty_chunk_meta(), suffix="-work",
                           blockwise=True)
            for i, (oc, kc) in enumerate(self._in_chunks())
        ]

    def _single(self):
        gb = self.gb
        meta = self.output.meta
        ctx = self._ctx(None)
        works = self._works(ctx, False)
        return self._single_output(K.raw_single, (works, ctx, self.call_spec, gb.as_index, gb.group_keys, meta))

    def tile(self):
        gb = self.gb
        n = len(self.inputs[0].chunks)
        if n <= 1 or self.method == "tree" or (gb.observed is False and gb._has_categorical_key()):
            return self._single()
        meta = self.output.meta
        ctx = self._ctx(None)
        need_pos = not gb.sort
        works = self._works(ctx, need_pos)
        per_out = shuffle_chunks(self, works, n, K.split_by_keys, (n, None, K.key_columns(ctx)))
        reduced = [
            self.new_chunk(j, nan, K.raw_reduce, (pieces, ctx, self.call_spec, need_pos),
                           meta=_empty_chunk_meta(), suffix="-reduce")
            for j, pieces in enumerate(per_out)
        ]
        return self._single_output(K.gather_ordered, (reduced, ctx, meta, gb.as_index))


class GroupByApply(GroupByRaw):
    _op_name = "groupby-apply"

    def __init__(self, gb, call_spec, meta):
        super().__init__(gb, call_spec, None, meta)

    def tile(self):
        gb = self.gb
        n = len(self.inputs[0].chunks)
        if n <= 1 or not gb.as_index or not gb.group_keys or (gb.observed is False and gb._has_categorical_key()):
            ctx = self._ctx(None)
            works = self._works(ctx, False)
            return self._single_output(K.apply_single, (works, ctx, self.call_spec, gb.as_index, gb.group_keys))
        ctx = self._ctx(None)
        need_pos = not gb.sort
        works = self._works(ctx, need_pos)
        per_out = shuffle_chunks(self, works, n, K.split_by_keys, (n, None, K.key_columns(ctx)))
        reduced = [
            self.new_chunk(j, nan, K.raw_reduce, (pieces, ctx, self.call_spec, need_pos, True),
                           meta=_empty_chunk_meta(), suffix="-reduce")
            for j, pieces in enumerate(per_out)
        ]
        return self._single_output(K.gather_apply, (reduced, ctx, self.output.meta))


class GroupByTransform(_GroupByOp):
    """transform(func): shuffle rows by key, transform, shuffle back by origin chunk."""

    _op_name = "groupby-transform"

    def __init__(self, gb, call_spec, meta):
        super().__init__(gb, call=call_spec)
        self.call_spec = call_spec

    def tile(self):
        meta = self.output.meta
        obj = self.inputs[0]
        ctx = self._ctx(None)
        in_chunks = self._in_chunks()
        n = len(in_chunks)
        works = [
            self.new_chunk(i, nan, K.raw_map, (oc, kc, ctx, i, True), meta=_empty_chunk_meta(), suffix="-work",
                           blockwise=True)
            for i, (oc, kc) in enumerate(in_chunks)
        ]
        per_out = shuffle_chunks(self, works, n, K.split_by_keys, (n, None, K.key_columns(ctx)))
        reduced = [
            self.new_chunk(j, nan, K.transform_reduce, (pieces, ctx, self.call_spec, meta), meta=_empty_chunk_meta(),
                           suffix="-reduce")
            for j, pieces in enumerate(per_out)
        ]
        back = shuffle_chunks(self, reduced, n, K.split_by_chunk, (n,), name="back")
        chunks = [
            self.new_chunk(i, obj.chunks[i].shape[0], K.transform_restore, (pieces, meta))
            for i, pieces in enumerate(back)
        ]
        return [(chunks, frame_nsplits(meta, [c.shape[0] for c in chunks]))]


class GroupByBroadcast(_GroupByOp):
    """transform of a reduction: aggregate, then look each row's group up."""

    _op_name = "groupby-broadcast"

    def __init__(self, gb, agg_t, meta):
        super().__init__(gb, extra_inputs=[agg_t])
        self.nagg = 1

    def tile(self):
        meta = self.output.meta
        agg = self.inputs[-1]
        (agg_chunk,) = agg.chunks
        ctx = self._ctx(None)
        chunks = [
            self.new_chunk(i, oc.shape[0], K.broadcast, (oc, kc, agg_chunk, ctx, meta))
            for i, (oc, kc) in enumerate(self._in_chunks())
        ]
        return [(chunks, frame_nsplits(meta, [c.shape[0] for c in chunks]))]


class GroupByCumcount(_GroupByOp):
    """cumcount: per-chunk counts, offsets of the preceding chunks by a chain of adds
    (:class:`~.scan.GroupByHead` reuses the chain with another last step)."""

    _op_name = "groupby-cumcount"

    def __init__(self, gb, ascending, meta, **params):
        super().__init__(gb, ascending=ascending, **params)
        self.ascending = ascending

    def _final_chunk(self, i, oc, kc, offset, ctx):
        meta = self.output.meta
        return self.new_chunk(i, oc.shape[0], K.cumcount_chunk, (oc, kc, offset, ctx, self.ascending, meta))

    def tile(self):
        meta = self.output.meta
        ctx = self._ctx(None)
        in_chunks = self._in_chunks()
        n = len(in_chunks)
        size_meta = pd.Series([], dtype=np.int64)
        sizes = [
            self.new_chunk(i, nan, K.group_sizes, (oc, kc, ctx), meta=size_meta, suffix="-sizes")
            for i, (oc, kc) in enumerate(in_chunks)
        ]
        order = range(n) if self.ascending else range(n - 1, -1, -1)
        offsets = [None] * n
        carry = None
        for step, i in enumerate(order):
            offsets[i] = carry
            if step < n - 1:
                carry = self.new_chunk(step, nan, K.add_sizes, (carry, sizes[i]), meta=size_meta, suffix="-carry")
        chunks = [self._final_chunk(i, oc, kc, offsets[i], ctx) for i, (oc, kc) in enumerate(in_chunks)]
        return [(chunks, frame_nsplits(meta, [c.shape[0] for c in chunks]))]


def groupby(obj, by=None, level=None, as_index=True, sort=True, group_keys=True, observed=True, dropna=True,
            method=None):
    """``df.groupby(by, level=, as_index=, sort=, dropna=, observed=)`` (pandas 3's defaults),
    with Mars's ``method=`` ("auto", "tree" or "shuffle") for aggregations.

    ``by`` takes what pandas takes: column labels, index level names, aligned Series,
    functions and mappings of the index labels, arrays with one key per row, or a list
    mixing them; ``level=`` groups by index levels."""
    if level is not None:
        if by is not None:
            raise TypeError("groupby: pass either 'by' or 'level', not both")
        levels = level if isinstance(level, (list, tuple)) else [level]
        if not levels:
            raise ValueError("No group keys passed!")
        by = [GK.level_key(obj, lv) for lv in levels]
        by = by if isinstance(level, (list, tuple)) else by[0]
    if method is not None and method not in ("auto", "tree", "shuffle"):
        raise ValueError(f"method must be 'auto', 'tree' or 'shuffle', got {method!r}")
    if not isinstance(as_index, bool) or not isinstance(sort, bool) or not isinstance(dropna, bool):
        raise TypeError("as_index, sort and dropna must be booleans")
    if isinstance(obj, Series) and not as_index:
        raise TypeError("as_index=False only valid with DataFrame")
    return GroupBy(obj, by, as_index=as_index, sort=sort, dropna=dropna, observed=observed,
                   group_keys=group_keys, method=method)
