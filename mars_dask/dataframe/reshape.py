"""Reshaping: ``pivot_table``, ``crosstab``, ``transpose``/``T``, ``stack``, ``explode``,
``append``; and the edits of a frame's axes: ``insert``, ``pop``, ``select_dtypes``,
``add_prefix``/``add_suffix``, ``set_axis``, ``rename_axis``.

Row-local reshapes (``stack``, ``explode``, the axis edits) run chunk by chunk with pandas'
own method.  ``transpose`` turns row labels into columns, which a DataFrame tileable must
know before execution: see :func:`transpose`.

``pivot_table``/``crosstab``:

The aggregation is distributed: every chunk computes partial aggregates per group of the
``index + columns`` keys (sum and count for ``mean``; ``sum``, ``count``, ``min``, ``max``,
``size``), a tree (``mars-dask.tensor.combine-size`` chunks per level) combines them into
one small chunk.  The result's *columns* are data values, and DataFrame tileables need
their columns before execution, so -- as Mars does for such operations -- the small
aggregated table is executed when ``pivot_table``/``crosstab`` is called (inside the current
session) and the pivoting (unstack, ``fill_value``, ``dropna``, normalisation) is pandas'
own, on the aggregated groups.  The result is a DataFrame over that local table.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pandas.api.extensions import no_default as _no_default

from .. import config
from .core import DataFrame, DataFrameOperand, Index, Series, frame_nsplits, nan, register_method
from .map import aligned, map_rows
from .methods import _call

__all__ = ["pivot_table", "crosstab"]

_AGGS = ("mean", "sum", "count", "min", "max", "size")
_PARTIALS = {"mean": ("sum", "count"), "sum": ("sum",), "count": ("count",), "min": ("min",), "max": ("max",)}
_COMBINE = {"sum": "sum", "count": "sum", "min": "min", "max": "max", "size": "sum"}


def _partial(df, keys, values, aggfunc):
    if isinstance(df, list):
        df = pd.concat(df)
    g = df.groupby(keys, observed=True, dropna=False, sort=False)
    if aggfunc == "size":
        return g.size().to_frame(("__size__", "size"))
    out = {}
    for v in values:
        for f in _PARTIALS[aggfunc]:
            out[(v, f)] = getattr(g[v], f)()
    return pd.DataFrame(out)


def _combine(parts, nkeys):
    df = pd.concat(parts)
    g = df.groupby(level=list(range(nkeys)), observed=True, dropna=False, sort=False)
    return g.agg({c: _COMBINE[c[1]] for c in df.columns})


class PivotPartialAgg(DataFrameOperand):
    """The grouped partial aggregates of a pivot table, tree-combined into one chunk."""

    _op_name = "pivot-agg"

    def tile(self):
        (inp,) = self.inputs
        size = max(2, int(config.get("tensor.combine-size")))
        meta = self.output.meta
        level = [
            self.new_chunk(i, nan, _partial, (c, self.keys, self.values, self.aggfunc), suffix="-partial-0")
            for i, c in enumerate(inp.chunks)
        ]
        depth = 0
        while len(level) > 1:
            depth += 1
            groups = [level[i : i + size] for i in range(0, len(level), size)]
            last = len(groups) == 1
            level = [
                self.new_chunk(i, nan, _combine, (g, len(self.keys)), suffix="" if last else f"-partial-{depth}")
                for i, g in enumerate(groups)
            ]
        if depth == 0:
            level = [self.new_chunk(0, nan, _combine, (level, len(self.keys)))]
        return [(level, frame_nsplits(meta, [nan]))]


def _agged(partials: pd.DataFrame, values, aggfunc) -> pd.DataFrame:
    """pandas' ``data.groupby(keys)[values].agg(aggfunc)`` from the combined partials."""
    if aggfunc == "size":
        return partials[("__size__", "size")].rename("__size__").to_frame()
    out = {}
    for v in values:
        if aggfunc == "mean":
            out[v] = partials[(v, "sum")] / partials[(v, "count")]
        else:
            out[v] = partials[(v, aggfunc)]
    return pd.DataFrame(out, index=partials.index)


def _check_keys(df, labels, what):
    for lab in labels:
        if lab not in df.columns:
            raise KeyError(lab)


def _grouped_table(df, keys, values, aggfunc):
    """Execute the distributed partial aggregation and return the pandas ``agged`` frame
    (groups as index levels, one column per value)."""
    meta = df.data.meta
    stand = _partial(meta, keys, values, aggfunc)
    op = PivotPartialAgg([df.data], keys=list(keys), values=list(values), aggfunc=aggfunc)
    t = op.new_output(stand.iloc[:0], nan)
    t.execute()
    partials = t.fetch()
    return _agged(partials, values, aggfunc)


def _as_list(x):
    if x is None:
        return []
    return list(x) if isinstance(x, (list, tuple)) else [x]


@register_method(DataFrame, name="pivot_table")
def _df_pivot_table(self, values=None, index=None, columns=None, aggfunc="mean", fill_value=None,
                    margins=False, dropna=True, margins_name="All", observed=True, sort=True):
    return pivot_table(self, values=values, index=index, columns=columns, aggfunc=aggfunc, fill_value=fill_value,
                       margins=margins, dropna=dropna, margins_name=margins_name, observed=observed, sort=sort)


def pivot_table(data, values=None, index=None, columns=None, aggfunc="mean", fill_value=None, margins=False,
                dropna=True, margins_name="All", observed=True, sort=True):
    """``pandas.pivot_table`` for ``aggfunc`` in mean/sum/count/min/max (see the module
    notes: the small aggregated table is executed when this is called)."""
    if not isinstance(data, DataFrame):
        raise TypeError("pivot_table needs a DataFrame")
    if aggfunc not in _AGGS or aggfunc == "size":
        raise NotImplementedError(f"pivot_table supports aggfunc in {_AGGS[:-1]}, got {aggfunc!r}")
    if margins:
        raise NotImplementedError("pivot_table(margins=True) is not supported")
    if not observed:
        raise NotImplementedError("pivot_table(observed=False) is not supported")
    index_l, columns_l = _as_list(index), _as_list(columns)
    keys = index_l + columns_l
    if not keys:
        raise ValueError("No group keys passed!")
    _check_keys(data, keys, "key")
    meta = data.data.meta
    if values is None:
        vals = [c for c in meta.columns if c not in keys]
    else:
        vals = _as_list(values)
        _check_keys(data, vals, "value")
    # pandas validates the aggregation's dtypes on a stand-in before anything runs
    from ._meta import meta_nonempty

    pd.pivot_table(meta_nonempty(meta), values=values, index=index, columns=columns, aggfunc=aggfunc,
                   fill_value=fill_value, dropna=dropna, observed=observed, sort=sort)
    agged = _grouped_table(data[keys + vals] if len(keys + vals) < len(meta.columns) else data, keys, vals, aggfunc)
    frame = agged.reset_index()
    table = pd.pivot_table(frame, values=values if values is not None else vals, index=index, columns=columns,
                           aggfunc="first", fill_value=fill_value, dropna=dropna, observed=True, sort=sort)
    from .datasource import from_pandas

    return from_pandas(table, chunk_size=max(1, len(table)))


def crosstab(index, columns, values=None, rownames=None, colnames=None, aggfunc=None, margins=False,
             margins_name="All", dropna=True, normalize=False):
    """``pandas.crosstab`` of Series tileables sharing one index (counts, or ``values``
    aggregated by ``aggfunc`` in mean/sum/count/min/max; ``normalize`` as pandas)."""
    from pandas.core.reshape.pivot import _normalize

    idx_list, col_list = _as_list(index), _as_list(columns)
    if margins:
        raise NotImplementedError("crosstab(margins=True) is not supported")
    if (values is None) != (aggfunc is None):
        raise ValueError("values cannot be used without an aggfunc." if aggfunc is None else "aggfunc cannot be used without values.")
    if aggfunc is not None and aggfunc not in _AGGS[:-1]:
        raise NotImplementedError(f"crosstab supports aggfunc in {_AGGS[:-1]}, got {aggfunc!r}")
    if normalize not in (False, True, "all", "index", "columns", 0, 1):
        raise ValueError("Not a valid normalize argument")
    series = idx_list + col_list + ([values] if values is not None else [])
    if not series or not all(isinstance(s, Series) for s in series):
        raise TypeError("crosstab needs Series tileables for index, columns and values")
    if not aligned(*series):
        raise ValueError("crosstab: the Series have different indexes or row partitioning")
    rown = list(rownames) if rownames is not None else [s.name if s.name is not None else f"row_{i}" for i, s in enumerate(idx_list)]
    coln = list(colnames) if colnames is not None else [s.name if s.name is not None else f"col_{i}" for i, s in enumerate(col_list)]
    if len(rown) != len(idx_list) or len(coln) != len(col_list):
        raise ValueError("rownames/colnames must have one name per Series")
    names = [f"__k{i}__" for i in range(len(rown) + len(coln))]
    from .concat import concat

    parts = [s for s in idx_list + col_list]
    cols = list(names)
    if values is not None:
        parts.append(values)
        cols.append("__dummy__")
    frame = concat(parts, axis=1, keys=cols)
    keys = names
    if values is None:
        agged = _grouped_table(frame, keys, [], "size")
        agged = agged.rename(columns={"__size__": "__dummy__"})
        kwargs = dict(fill_value=0)
    else:
        agged = _grouped_table(frame, keys, ["__dummy__"], aggfunc)
        kwargs = {}
    table = pd.pivot_table(agged.reset_index(), values="__dummy__", index=names[: len(rown)], columns=names[len(rown):],
                           aggfunc="first", dropna=dropna, observed=True, **kwargs)
    if normalize is not False:
        table = _normalize(table, normalize=normalize, margins=False, margins_name=margins_name)
    table = table.rename_axis(index=dict(zip(names[: len(rown)], rown)), axis=0)
    table = table.rename_axis(columns=dict(zip(names[len(rown):], coln)), axis=1)
    from .datasource import from_pandas

    return from_pandas(table, chunk_size=max(1, len(table)))


# ---- transpose ------------------------------------------------------------------------------


def _index_of(part):
    return part.index


def _row_labels(df) -> pd.Index:
    """All row labels of ``df``: known without executing for a default RangeIndex of known
    length or labels straight from a local pandas object; otherwise ``df`` is executed (its
    data stays on the cluster for the transpose, only the labels come back)."""
    from .arithmetic import known_labels
    from .toplevel import _chunk_results

    data = df.data
    known = known_labels(data)
    if known is not None:
        return known.rename(data.meta.index.name) if not isinstance(known, pd.MultiIndex) else known

    parts = [p for p in _chunk_results(df, _index_of) if len(p)]
    if not parts:
        return data.meta.index
    return parts[0].append(parts[1:]) if len(parts) > 1 else parts[0]


def _transpose_meta(meta: pd.DataFrame, labels: pd.Index) -> pd.DataFrame:
    """pandas' ``df.T`` structure: one dtype for every column (the frame's common dtype,
    found by transposing a one-row stand-in), the columns' labels as index."""
    from ._meta import meta_nonempty

    one = meta_nonempty(meta).iloc[:1].T
    index = one.index[:0]
    if not len(labels):
        return pd.DataFrame(index=index, columns=labels)
    dt = one.dtypes.iloc[0] if len(one.columns) else np.dtype("float64")  # pandas' dtype of no values
    if isinstance(dt, np.dtype):
        out = pd.DataFrame(np.empty((0, len(labels)), dtype=dt), index=index)
    else:
        out = pd.DataFrame({i: pd.array([], dtype=dt) for i in range(len(labels))}, index=index)
    out.columns = labels
    return out


def _split_columns(part, offsets):
    return tuple(part.iloc[:, lo:hi] for lo, hi in zip(offsets[:-1], offsets[1:]))


def _transpose_kernel(parts, dtypes):
    block = pd.concat(parts) if len(parts) > 1 else parts[0]
    if len(dtypes) and any(d != dtypes[0] for d in block.dtypes):
        block = block.astype(dtypes[0])  # the whole frame's common dtype, not this slice's
    return block.T


class Transpose(DataFrameOperand):
    """Output row chunk ``j`` holds the original columns ``splits[j]``: each input chunk is
    cut into those column groups (as a shuffle's map step), and output chunk ``j`` stacks
    group ``j`` of every input chunk, so no task holds more than its share of the data."""

    _op_name = "transpose"

    def tile(self):
        from .shuffle import shuffle_chunks

        (src,) = self.inputs
        out = self.output
        dtypes = list(out.meta.dtypes[:1])
        if len(self.splits) == 1:
            per_output = [list(src.chunks)]
        else:
            offsets = tuple(int(x) for x in np.concatenate([[0], np.cumsum(self.splits)]))
            per_output = shuffle_chunks(self, src.chunks, len(self.splits), _split_columns, (offsets,), name="columns")
        chunks = [self.new_chunk(j, n, _transpose_kernel, (parts, dtypes)) for j, (n, parts) in enumerate(zip(self.splits, per_output))]
        return [(chunks, frame_nsplits(out.meta, self.splits))]


@register_method(DataFrame)
def transpose(self, *args):
    """pandas' ``transpose``: rows become columns.  The result's columns are the row labels,
    which must be known before execution (a DataFrame knows its columns): for a default
    RangeIndex of known length they are; otherwise ``self`` is executed first and only its
    labels are fetched (Mars executes them during tiling; here the result's columns are then
    right from the start, so operations on the result see pandas' own structure).  The
    result is cut into row chunks of about the usual chunk size (see :class:`Transpose`)."""
    from .datasource import row_chunks

    meta = self.data.meta
    labels = _row_labels(self)
    out_meta = _transpose_meta(meta, labels)
    splits = row_chunks(len(meta.columns), None, out_meta)
    op = Transpose([self.data], splits=tuple(splits), nlabels=len(labels))
    return op.new_output(out_meta, len(meta.columns))


register_method(DataFrame, name="T")(property(lambda self: self.transpose()))
register_method(Series, name="T")(property(lambda self: self))


# ---- stack / explode ----------------------------------------------------------------------


def _stack_kernel(df, level, dropna):
    out = df.stack(level=level)
    if dropna is True:
        out = out.dropna() if isinstance(out, pd.Series) else out.dropna(how="all")
    return out


@register_method(DataFrame)
def stack(self, level=-1, dropna=_no_default):
    """pandas' ``stack``, chunk by chunk (every row stacks on its own).  Without ``dropna``
    the result is the installed pandas' ``df.stack(level)``; ``dropna`` (Mars's argument,
    which pandas 3 no longer takes) follows the pandas 1 meaning: ``True`` drops the result
    rows that are all missing, ``False`` keeps them."""
    if dropna is not _no_default and not isinstance(dropna, bool):
        raise TypeError(f"dropna must be a bool, got {dropna!r}")
    return map_rows(_stack_kernel, self, level, dropna, rows="unknown", preserves_index=False, name="stack")


@register_method(DataFrame, name="explode")
def _df_explode(self, column, ignore_index=False):
    """pandas' ``explode`` chunk by chunk; ``ignore_index`` gives one RangeIndex across chunks."""
    out = map_rows(_call, self, "explode", (column,), {}, rows="unknown", preserves_index=False, name="explode")
    return out.reset_index(drop=True) if ignore_index else out


@register_method(Series, name="explode")
def _series_explode(self, ignore_index=False):
    """pandas' ``explode`` chunk by chunk; ``ignore_index`` gives one RangeIndex across chunks."""
    out = map_rows(_call, self, "explode", (), {}, rows="unknown", preserves_index=False, name="explode")
    return out.reset_index(drop=True) if ignore_index else out


# ---- append -----------------------------------------------------------------------------------


def _duplicated_labels(indexes):
    labels = indexes[0].append(list(indexes[1:])) if len(indexes) > 1 else indexes[0]
    overlap = labels[labels.duplicated()].unique()
    if len(overlap):
        raise ValueError(f"Indexes have overlapping values: {overlap}")
    return True


def _after(part, check):
    return part


class VerifiedRows(DataFrameOperand):
    """The rows of the input, released only once all of its labels were found unique
    (only the labels meet in one task, never the rows)."""

    _op_name = "verify-integrity"

    def tile(self):
        (src,) = self.inputs
        labels = [self.new_chunk(i, nan, _index_of, (c,), suffix="-labels", meta=src.meta.index)
                  for i, c in enumerate(src.chunks)]
        check = self.new_chunk(0, nan, _duplicated_labels, (labels,), suffix="-check", meta=src.meta.index)
        chunks = [self.new_chunk(i, c.shape[0], _after, (c, check), inputs=[c, check], blockwise=False)
                  for i, c in enumerate(src.chunks)]
        return [(chunks, src.nsplits)]


def _row_frame(other, like_meta, ignore_index):
    """pandas 1's ``DataFrame.append`` of a Series or dict: one row (named by the Series)."""
    if isinstance(other, dict):
        if not ignore_index:
            raise TypeError("Can only append a dict if ignore_index=True")
        other = pd.Series(other)
    if other.name is None and not ignore_index:
        raise TypeError("Can only append a Series if ignore_index=True or if the Series has a name")
    index = pd.Index([other.name], name=like_meta.index.name)
    return other.to_frame().T.infer_objects().rename_axis(index.names).set_axis(index, axis=0)


def _append(self, other, ignore_index, verify_integrity, sort):
    from .concat import concat

    if isinstance(other, (list, tuple)):
        others = list(other)
    else:
        others = [other]
    if isinstance(self, DataFrame):
        others = [_row_frame(o, self.data.meta, ignore_index) if isinstance(o, (pd.Series, dict)) else o
                  for o in others]
        if any(isinstance(o, Series) for o in others):
            raise NotImplementedError("DataFrame.append of a lazy Series (a row): fetch it, or use md.concat")
    out = concat([self, *others], ignore_index=ignore_index, sort=sort)
    if verify_integrity:
        op = VerifiedRows([out.data])
        out = op.new_output(out.data.meta, out.shape[0], index_key=out.data.index_key, range_index=out.data.range_index)
    return out


@register_method(DataFrame, name="append")
def _df_append(self, other, ignore_index=False, verify_integrity=False, sort=False):
    """pandas 1's ``DataFrame.append`` (removed in pandas 2): ``md.concat`` of the frames;
    a local Series or dict is one row.  ``verify_integrity`` checks the labels are unique
    (at execution)."""
    return _append(self, other, ignore_index, verify_integrity, sort)


@register_method(Series, name="append")
def _series_append(self, to_append, ignore_index=False, verify_integrity=False):
    """pandas 1's ``Series.append`` (removed in pandas 2): ``md.concat`` of the Series."""
    return _append(self, to_append, ignore_index, verify_integrity, False)


# ---- axis edits ---------------------------------------------------------------------------


def _inplace(self, out, inplace):
    if inplace:
        self.data = out.data
        return None
    return out


def _insert_kernel(df, tmp, loc, column, allow_duplicates, columns):
    value = df[tmp]
    df = df.drop(columns=tmp)
    df.insert(loc, column, value, allow_duplicates=allow_duplicates)
    df.columns = columns
    return df


@register_method(DataFrame)
def insert(self, loc, column, value, allow_duplicates=False):
    """pandas' ``insert`` (in place, returns None).  ``value``: a scalar, an aligned Series,
    a list/array/tensor of the frame's length (all that ``df[c] = value`` takes)."""
    import uuid

    from ._meta import meta_nonempty

    from .indexing import setitem

    probe = meta_nonempty(self.data.meta)
    probe.insert(loc, column, value if pd.api.types.is_scalar(value) else 0, allow_duplicates=allow_duplicates)
    tmp = f"__mars_dask_insert_{uuid.uuid4().hex}"
    with_value = DataFrame(self.data)
    setitem(with_value, tmp, value)
    out = map_rows(_insert_kernel, with_value, tmp, loc, column, allow_duplicates, probe.columns, name="insert")
    self.data = out.data


@register_method(DataFrame)
def pop(self, item):
    """pandas' ``pop``: returns the column, which leaves the frame (in place)."""
    res = self[item]
    self.data = self.drop(columns=[item]).data
    return res


@register_method(DataFrame)
def select_dtypes(self, include=None, exclude=None):
    """pandas' ``select_dtypes`` (the columns are chosen from the metadata)."""
    return map_rows(_call, self, "select_dtypes", (), {"include": include, "exclude": exclude}, name="select-dtypes")


def _affix(self, how, affix, axis):
    if isinstance(self, Series) and axis not in (None, 0, "index", "rows"):
        raise ValueError(f"No axis named {axis} for object type Series")
    kwargs = {} if axis is None else {"axis": axis}
    on_rows = isinstance(self, Series) or axis in (0, "index", "rows")
    return map_rows(_call, self, how, (affix,), kwargs, preserves_index=not on_rows, name=how.replace("_", "-"))


@register_method(DataFrame, Series)
def add_prefix(self, prefix, axis=None):
    """pandas' ``add_prefix`` (row labels of a Series, column labels of a DataFrame by default)."""
    return _affix(self, "add_prefix", prefix, axis)


@register_method(DataFrame, Series)
def add_suffix(self, suffix, axis=None):
    """pandas' ``add_suffix`` (row labels of a Series, column labels of a DataFrame by default)."""
    return _affix(self, "add_suffix", suffix, axis)


def _set_row_labels(part, labels, like):
    if isinstance(like, pd.MultiIndex):
        index = pd.MultiIndex.from_tuples(list(labels), names=like.names)
    else:
        index = pd.Index(labels.array, dtype=like.dtype, name=like.name)
    return part.set_axis(index, axis=0)


@register_method(DataFrame, Series)
def set_axis(self, labels, axis=0, inplace=False):
    """pandas' ``set_axis`` (and Mars's ``inplace``).  New row labels (a list-like, a local
    or lazy Index or Series, a tensor) are taken positionally, chunk by chunk."""
    from ..tensor.core import Tensor
    from .arithmetic import positional_like

    axis_n = {0: 0, "index": 0, "rows": 0, 1: 1, "columns": 1}.get(axis, -1)
    if axis_n == -1 or (axis_n == 1 and isinstance(self, Series)):
        raise ValueError(f"No axis named {axis} for object type {type(self).__name__}")
    if axis_n == 1:
        out = map_rows(_call, self, "set_axis", (pd.Index(labels),), {"axis": 1}, name="set-axis")
        return _inplace(self, out, inplace)
    if isinstance(labels, Index):
        from .toplevel import series_from_index

        like, values = labels.data.meta, series_from_index(labels)
    elif isinstance(labels, Series):
        like, values = pd.Index(labels.data.meta), labels
    elif isinstance(labels, Tensor):
        like, values = pd.Index(np.empty(0, dtype=labels.dtype)), labels
    else:
        local = labels if isinstance(labels, pd.Index) else pd.Index(labels)
        n = self.shape[0]
        if n == n and len(local) != n:
            raise ValueError(f"Length mismatch: Expected axis has {int(n)} elements, new values have {len(local)} elements")
        like = local[:0]
        values = local.to_flat_index() if isinstance(local, pd.MultiIndex) else local
    holder = positional_like(self, values)
    meta = self.data.meta.set_axis(like, axis=0)
    out = map_rows(_set_row_labels, self, holder, like, meta=meta, preserves_index=False, name="set-axis")
    return _inplace(self, out, inplace)


@register_method(DataFrame, Series)
def rename_axis(self, mapper=None, index=None, columns=None, axis=0, copy=True, inplace=False):
    """pandas' ``rename_axis`` (names of the row/column axes; Mars's ``inplace``).  Called
    with nothing to set, the ``axis`` name is removed (pandas' ``rename_axis(None)``)."""
    kwargs = {}
    if mapper is not None or (index is None and columns is None):
        kwargs.update(mapper=mapper, axis=axis)
    if index is not None:
        kwargs["index"] = index
    if columns is not None:
        kwargs["columns"] = columns
    out = map_rows(_call, self, "rename_axis", (), kwargs, name="rename-axis")
    return _inplace(self, out, inplace)
