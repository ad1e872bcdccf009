"""``align``, ``reindex``, ``reindex_like`` and the ``pad``/``backfill`` aliases (Mars 0.10's
signatures, pandas' results).

Rows are looked up by label with :class:`LookupRows`: the result has the *target's* labels,
order and row partitioning (so it stays chunk-aligned with the target), the values come from
the source.  Both sides are hash-partitioned on the labels (one task shuffle, the target
carrying each label's position); each bucket is reindexed locally with pandas, and every
output chunk gathers its labels' rows from the buckets and puts them back in the target's
order.  Nothing is gathered onto one worker.

- ``reindex(labels)`` looks the labels up (a local list, or a md Index/Series/tensor).
- ``align(join="left")`` keeps the left object and looks the right one up on its labels
  (``"right"`` mirrors it); ``"inner"`` first keeps the left rows whose label the right side
  has (pandas' inner join keeps the left order); ``"outer"`` is the outer alignment the
  arithmetic uses (:func:`.arithmetic.align`: order unchanged when the labels are equal,
  else their sorted union).
- Columns are known at build time, so aligning or reindexing columns is chunk-wise.

dtypes: a side that may miss labels gets pandas' dtypes for missing values (ints to float64,
...) unless both sides' labels are known at build time and none is missing.  Duplicate labels
in the looked-up side raise pandas' "cannot reindex on an axis with duplicate labels" (pandas'
align would join them instead).

``reindex(method="ffill"/"bfill", limit=)`` needs the source's labels sorted (pandas: monotonic):
the first and last label of every source chunk are computed first, and each target label is
sent to the one source chunk whose range holds its match instead of hashing (the source is
not moved); a decreasing source index is refused (pandas accepts it).  As in Mars,
``method="nearest"``, ``tolerance`` and ``level`` raise NotImplementedError; so does ``align``'s
``broadcast_axis`` (pandas removed it).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from ._meta import meta_nonempty

from ..tiling.core import Chunk, ensure_known
from .arithmetic import _conform, align as outer_align, known_labels, upcast_meta
from .core import DataFrame, DataFrameOperand, Index, Series, frame_nsplits, nan, register_method
from .map import boolean_filter, is_pandas_tileable, map_rows
from .shuffle import concat_pieces, hash_codes, hash_shuffle, split_by_codes

__all__: list[str] = []

_POS = "__mars_pos__"


# ---- kernels ------------------------------------------------------------------------------


def _labels_of(chunk):
    return chunk if isinstance(chunk, pd.Index) else chunk.index


def _split_target(chunk, n):
    """The target chunk's labels with their positions, split into ``n`` hash buckets."""
    labels = _labels_of(chunk)
    pos = pd.DataFrame({_POS: np.arange(len(labels))}, index=labels)
    return split_by_codes(pos, hash_codes(pos, None, n), n)


def _split_target_range(chunk, edges, side):
    """The target chunk's labels with their positions, split by the source chunk whose label
    range holds them (``reindex(method=...)`` on a sorted source)."""
    labels = _labels_of(chunk)
    pos = pd.DataFrame({_POS: np.arange(len(labels))}, index=labels)
    codes = np.searchsorted(np.asarray(edges), np.asarray(labels), side=side).astype(np.intp)
    return split_by_codes(pos, codes, len(edges) + 1)


def _label_bounds(chunk):
    """``(first, last, sorted)`` of a source chunk's labels, None if it has no rows."""
    idx = _labels_of(chunk)
    if len(idx) == 0:
        return None
    return idx[0], idx[-1], bool(idx.is_monotonic_increasing and idx.is_unique)


def _lookup_bucket(src_pieces, tgt_pieces, src_meta, fill_value, method=None, limit=None):
    """Source bucket reindexed onto each target chunk's labels of this bucket."""
    src = concat_pieces(src_pieces) if src_pieces else src_meta
    kw = {} if fill_value is None else {"fill_value": fill_value}
    if method is not None:
        kw.update(method=method, limit=limit)
    out = []
    for tgt in tgt_pieces:
        got = src.reindex(tgt.index, **kw)
        if isinstance(got, pd.Series):
            got = got.to_frame("__value__")
        out.append(got.assign(**{_POS: tgt[_POS].to_numpy()}))
    return out


def _assemble_chunk(parts, target, meta):
    """Output chunk: the rows for the target chunk's labels, in its order, as ``meta``."""
    labels = _labels_of(target)
    res = pd.concat(parts) if len(parts) > 1 else parts[0]
    res = res.sort_values(_POS, kind="stable").drop(columns=_POS)
    if isinstance(meta, pd.Series):
        res = res["__value__"].rename(meta.name)
    res.index = labels
    return _conform(res, meta)


def _pick(lst, i):
    return lst[i]


# ---- looking rows up by label -----------------------------------------------------------


class LookupRows(DataFrameOperand):
    """``source.reindex(labels of target)`` with the target's row partitioning."""

    _op_name = "lookup-rows"

    def tile(self):
        src, tgt = self.inputs
        yield from ensure_known(tgt)
        okey = self.output_key(0)
        if self.method is None:
            n = max(len(src.chunks), len(tgt.chunks))
            sources = hash_shuffle(self, src.chunks, None, n, name="src")
            split = (_split_target, (n,))
        else:
            sources, split = yield from self._range_plan(src, okey)
        tsplit = [
            Chunk((f"{okey}-tgt-map", i), (i,), (nan,), split[0], (c, *split[1])) for i, c in enumerate(tgt.chunks)
        ]
        for c in tsplit:
            c.boundary = "shuffle"
        buckets = []
        for j, src_pieces in enumerate(sources):
            tp = [Chunk((f"{okey}-tgt-piece", i, j), (i, j), (nan,), _pick, (m, j)) for i, m in enumerate(tsplit)]
            buckets.append(Chunk(
                (f"{okey}-bucket", j), (j,), (nan,), _lookup_bucket,
                (src_pieces, tp, src.meta, self.fill_value, self.method, self.limit),
            ))
        meta = self.output.meta
        chunks = []
        for i, t in enumerate(tgt.chunks):
            parts = [Chunk((f"{okey}-part", j, i), (j, i), (nan,), _pick, (b, i)) for j, b in enumerate(buckets)]
            chunks.append(self.new_chunk(i, t.shape[0], _assemble_chunk, (parts, t, meta)))
        return [(chunks, frame_nsplits(meta, [c.shape[0] for c in chunks]))]

    def _range_plan(self, src, okey):
        """``method="ffill"/"bfill"`` needs the source sorted: each target label goes to the
        source chunk whose label range holds its match (the source is not moved)."""
        bounds = [Chunk((f"{okey}-bounds", i), (i,), (nan,), _label_bounds, (c,)) for i, c in enumerate(src.chunks)]
        yield bounds  # executed by iterative tiling: two labels per chunk
        info = [(i, b) for i, b in enumerate(c.future.result() for c in bounds) if b is not None]
        if not all(b[2] for _, b in info) or any(a[1] >= b[0] for (_, a), (_, b) in zip(info, info[1:])):
            raise ValueError("index must be monotonic increasing or decreasing (here: increasing and unique) "
                             "to reindex with a method")
        if not info:
            return [[]], (_split_target_range, ((), "right"))
        if self.method == "ffill":
            edges, side = [b[0] for _, b in info[1:]], "right"
        else:
            edges, side = [b[1] for _, b in info[:-1]], "left"
        return [[src.chunks[i]] for i, _ in info], (_split_target_range, (tuple(edges), side))


def _missing_meta(meta, fill_value):
    """pandas' dtypes of ``meta`` after reindexing with missing labels (and ``fill_value``)."""
    if fill_value is None:
        return upcast_meta(meta)
    ne = meta_nonempty(meta).iloc[:1].reset_index(drop=True)
    up = ne.reindex([0, 1], fill_value=fill_value).iloc[:0]
    if isinstance(up, pd.Series):
        up.name = meta.name
    return up.set_axis(meta.index, axis=0)


def lookup(source, target, fill_value=None, complete=False, method=None, limit=None):
    """``source`` reindexed on the labels of the tileable ``target`` (same partitioning);
    ``complete``: the caller knows ``source`` has every label (no missing values);
    ``method``: ``"ffill"``/``"bfill"`` (a sorted source) with ``limit``."""
    smeta = source.data.meta
    sl, tl = known_labels(source.data), known_labels(target.data)
    if complete or sl is not None and tl is not None and tl.isin(sl).all():
        meta = smeta
    else:
        meta = _missing_meta(smeta, fill_value)
    tmeta = target.data.meta
    index_meta = tmeta if isinstance(tmeta, pd.Index) else tmeta.index
    meta = meta.set_axis(index_meta[:0], axis=0)
    op = LookupRows([source.data, target.data], fill_value=fill_value, method=method, limit=limit)
    return op.new_output(
        meta, target.shape[0], index_key=target.data.index_key,
        range_index=target.data.range_index,
    )


def _as_labels_tileable(labels, like):
    """A md Index (or Series/DataFrame whose index counts) holding the target labels."""
    from ..tensor.core import Tensor
    from .datasource import from_pandas, from_tensor

    if is_pandas_tileable(labels):
        return labels
    if isinstance(labels, Tensor):
        return from_tensor(labels, "index")
    idx = labels if isinstance(labels, pd.Index) else pd.Index(labels)
    if not like.data.is_tiled:
        return from_pandas(idx)  # the default chunking
    return from_pandas(idx, chunk_size=max(1, -(-len(idx) // len(like.chunks))))  # as many chunks as ``like``


# ---- reindex ------------------------------------------------------------------------------


def _reindex_columns(df, columns, fill_value):
    kw = {} if fill_value is None else {"fill_value": fill_value}
    return df.reindex(columns=columns, **kw)


def _parse_axes(obj, labels, index, columns, axis):
    if labels is not None:
        if index is not None or columns is not None:
            raise TypeError("Cannot specify both 'labels' and 'index'/'columns'")
        if axis in (None, 0, "index", "rows"):
            index = labels
        elif axis in (1, "columns") and isinstance(obj, DataFrame):
            columns = labels
        else:
            raise ValueError(f"No axis named {axis} for object type {type(obj).__name__}")
    if columns is not None and not isinstance(obj, DataFrame):
        raise TypeError("reindex() got an unexpected keyword argument 'columns'")
    return index, columns


@register_method(DataFrame, Series)
def reindex(self, labels=None, index=None, columns=None, axis=None, method=None, copy=True, level=None,
            fill_value=None, limit=None, tolerance=None, enable_sparse=None):
    """pandas' ``reindex`` (Mars's signature): conform to new row labels (a list or a md
    Index/Series/tensor) and/or columns, missing ones filled with NaN or ``fill_value``."""
    if tolerance is not None:
        raise NotImplementedError("`tolerance` is not supported yet")
    if method == "nearest":
        raise NotImplementedError("method=nearest is not supported yet")
    if method is not None:
        fill = {"ffill": "ffill", "pad": "ffill", "bfill": "bfill", "backfill": "bfill"}.get(method)
        if fill is None:
            raise ValueError(f"Invalid fill method. Expecting pad (ffill), backfill (bfill) or nearest. Got {method}")
        method = fill
    elif limit is not None:
        raise ValueError("limit argument only valid if doing pad, backfill or nearest reindexing")
    if level is not None:
        raise NotImplementedError("Argument `level` not supported")
    if is_pandas_tileable(fill_value) or (fill_value is not None and not pd.api.types.is_scalar(fill_value)):
        raise ValueError("fill_value must be a scalar")
    index, columns = _parse_axes(self, labels, index, columns, axis)
    out = self
    if columns is not None:
        if is_pandas_tileable(columns):
            columns = columns.execute().fetch()
        columns = columns if isinstance(columns, pd.Index) else pd.Index(columns)
        out = map_rows(_reindex_columns, out, columns, fill_value, name="reindex-columns")
    if index is not None:
        from ..tensor.core import Tensor

        if not (is_pandas_tileable(index) or isinstance(index, (Tensor, pd.Index, pd.Series))):
            # a list: pandas keeps the index name (and its dtype for an empty list)
            index = pd.Index(index, name=self.data.meta.index.name) if len(index) else self.data.meta.index[:0]
        out = lookup(out, _as_labels_tileable(index, out), fill_value, method=method, limit=limit)
    return out


@register_method(DataFrame, Series)
def reindex_like(self, other, method=None, copy=True, limit=None, tolerance=None):
    """``reindex`` on ``other``'s row labels (and columns, for DataFrames); the result is
    chunk-aligned with ``other``."""
    kw = dict(method=method, copy=copy, limit=limit, tolerance=tolerance)
    if not is_pandas_tileable(other):
        if isinstance(self, DataFrame):
            return self.reindex(index=other.index, columns=other.columns, **kw)
        return self.reindex(index=other.index, **kw)
    cols = other.dtypes.index if isinstance(self, DataFrame) and isinstance(other, DataFrame) else None
    return self.reindex(index=other, columns=cols, **kw)


# ---- align --------------------------------------------------------------------------------


def _axis_number(axis, obj):
    if axis is None:
        return None
    if axis in (0, "index", "rows"):
        return 0
    if axis in (1, "columns") and isinstance(obj, DataFrame):
        return 1
    raise ValueError(f"No axis named {axis} for object type {type(obj).__name__}")


def _has_labels_mask(left, right):
    """Boolean Series aligned with ``left``: does ``right`` have the row's label?"""
    marker = map_rows(_marker, right, meta=pd.Series([], dtype=bool, index=right.data.meta.index[:0]), name="marker")
    return lookup(marker, left, fill_value=False)


def _marker(x):
    return pd.Series(True, index=_labels_of(x), dtype=bool)


def _align_rows(left, right, join, fill_value):
    if join == "outer":
        la, ra = outer_align(left, right)
        if fill_value is not None:  # fill only the missing rows, not the NaNs in the data
            la, ra = lookup(left, la, fill_value), lookup(right, la, fill_value)
        return la, ra
    if join == "right":
        ra, la = _align_rows(right, left, "left", fill_value)
        return la, ra
    if join == "inner":
        left = boolean_filter(left, _has_labels_mask(left, right))
    if join in ("left", "inner"):
        return left, lookup(right, left, fill_value, complete=join == "inner")
    raise ValueError(f"join must be one of 'outer', 'inner', 'left', 'right', got {join!r}")


def _align_columns(left, right, join, fill_value):
    lcols, rcols = left.dtypes.index, right.dtypes.index
    if lcols.equals(rcols):
        return left, right
    lm, _ = pd.DataFrame(columns=lcols).align(pd.DataFrame(columns=rcols), join=join, axis=1)
    cols = lm.columns
    return (
        map_rows(_reindex_columns, left, cols, fill_value, name="reindex-columns"),
        map_rows(_reindex_columns, right, cols, fill_value, name="reindex-columns"),
    )


@register_method(DataFrame, Series)
def align(self, other, join="outer", axis=None, level=None, copy=True, fill_value=None, method=None, limit=None,
          fill_axis=0, broadcast_axis=None):
    """pandas' ``align``: both objects on the joined row labels (and columns), as a tuple."""
    if level is not None:
        raise NotImplementedError("Argument `level` not supported")
    if broadcast_axis is not None:
        raise NotImplementedError("broadcast_axis is not supported (pandas removed it)")
    if join not in ("outer", "inner", "left", "right"):
        raise ValueError(f"join must be one of 'outer', 'inner', 'left', 'right', got {join!r}")
    if not is_pandas_tileable(other):
        if not isinstance(other, (pd.DataFrame, pd.Series)):
            raise TypeError(f"unsupported type: {type(other)}")
        from .datasource import from_pandas

        other = from_pandas(other, chunk_size=max(1, len(other)))
    if isinstance(other, Index):
        raise TypeError(f"unsupported type: {type(other)}")
    ax = _axis_number(axis, self if isinstance(self, DataFrame) else other)
    mixed = isinstance(self, DataFrame) != isinstance(other, DataFrame)
    if mixed and ax is None:
        raise ValueError("Must specify axis=0 or 1")
    left, right = self, other
    # pandas aligning with a Series reindexes without the fill value and then fills every
    # NaN of both results (ints become float64 first); with a DataFrame only new rows are filled
    fillna_after = isinstance(other, Series) and fill_value is not None
    reindex_fill = None if fillna_after else fill_value
    if mixed and ax == 1:
        left, right = _align_frame_series_columns(left, right, join, reindex_fill)
    else:
        if ax in (None, 1) and isinstance(left, DataFrame):
            left, right = _align_columns(left, right, join, reindex_fill)
        if ax in (None, 0):
            left, right = _align_rows(left, right, join, reindex_fill)
    if fillna_after:
        left, right = left.fillna(fill_value), right.fillna(fill_value)
    if method is not None:
        fill = {"ffill": "ffill", "pad": "ffill", "bfill": "bfill", "backfill": "bfill"}.get(method)
        if fill is None:
            raise ValueError(f"Invalid fill method. Expecting pad (ffill) or backfill (bfill). Got {method}")
        left = getattr(left, fill)(axis=fill_axis, limit=limit)
        right = getattr(right, fill)(axis=fill_axis, limit=limit)
    return left, right


def _align_frame_series_columns(left, right, join, fill_value):
    """A DataFrame and a Series whose labels pandas matches with the columns; the Series is
    small (one value per column) and is executed first if its labels are not known."""
    from .datasource import from_pandas

    frame, s, swap = (left, right, False) if isinstance(left, DataFrame) else (right, left, True)
    local_s = s.execute().fetch()
    if swap:
        join = {"left": "right", "right": "left"}.get(join, join)
    fa, sa = pd.DataFrame(columns=frame.dtypes.index).align(local_s, join=join, axis=1)
    new_frame = map_rows(_reindex_columns, frame, fa.columns, fill_value, name="reindex-columns")
    kw = {} if fill_value is None else {"fill_value": fill_value}
    new_s = from_pandas(local_s.reindex(fa.columns, **kw), chunk_size=max(1, len(fa.columns)))
    return (new_s, new_frame) if swap else (new_frame, new_s)


# ---- pad / backfill -----------------------------------------------------------------------


@register_method(DataFrame, Series)
def pad(self, axis=None, inplace=False, limit=None, downcast=None):
    """Mars's alias of ``ffill``."""
    if downcast is not None:
        raise NotImplementedError("downcast is not supported (pandas removed it)")
    return self.ffill(axis=axis, inplace=inplace, limit=limit)


@register_method(DataFrame, Series)
def backfill(self, axis=None, inplace=False, limit=None, downcast=None):
    """Mars's alias of ``bfill``."""
    if downcast is not None:
        raise NotImplementedError("downcast is not supported (pandas removed it)")
    return self.bfill(axis=axis, inplace=inplace, limit=limit)

