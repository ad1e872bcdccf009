"""Row selection: ``head``, ``tail``, ``iloc``, ``loc``, ``df[slice]`` and ``Series[...]``.

- ``head(n)``/``tail(n)`` read only the chunks they need: unknown chunk lengths (after a
  filter) are resolved one chunk at a time from the start (the end), by iterative tiling,
  until ``n`` rows are covered.
- ``iloc`` (an int, a slice with any step, a list/array of ints, a boolean array; plus
  column positions) makes the row lengths known (``ensure_known``) and cuts each touched
  chunk locally; the output keeps the input's partitioning (a list of increasing positions
  keeps one chunk per touched chunk; an unordered list is gathered into one chunk).
- ``loc``: on a default RangeIndex labels are positions (``iloc``, with pandas' KeyError for
  missing labels at build time).  On other indexes: a boolean Series aligned with the frame
  filters chunk by chunk; label slices cut each chunk with ``chunk.loc[a:b]`` (pandas'
  semantics for a monotonic, i.e. sorted, index); labels and label lists select the matching
  rows of every chunk and pandas orders them (``.loc[labels]`` on the gathered rows), so
  missing labels raise pandas' KeyError.
- ``df[slice]``/``Series[int slice]`` are positional (pandas 3), other slices by label.
- ``obj.iloc[...] = value`` / ``obj.loc[...] = value``: the selection above, applied to a
  Series of global row numbers, says which rows are set (in selection order); that small
  Series is gathered and every chunk sets its own rows (see :func:`set_rows`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from ._meta import meta_nonempty

from ..tiling.core import Chunk, ensure_known
from ..tiling.tileable import Tileable
from .core import DataFrame, DataFrameOperand, Series, frame_nsplits, nan, register_method
from .map import aligned, boolean_filter, is_pandas_tileable, map_rows

__all__: list[str] = []


def _known(n) -> bool:
    return not (isinstance(n, float) and math.isnan(n))


def _offsets(lengths) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


def _ensure_lengths(x):
    """``ensure_known`` plus a refresh when the chunks' shapes were learnt earlier (e.g. by
    ``head``) but ``nsplits`` still says nan."""
    yield from ensure_known(x)
    if any(not _known(n) for n in x.nsplits[0]):
        x.refresh_nsplits()


# ---- kernels --------------------------------------------------------------------------------


def _iloc_kernel(x, rows, cols):
    if cols is None:
        return x.iloc[rows]
    return x.iloc[rows, cols]


def _take_reorder(parts, perm, cols):
    parts = list(parts)
    cat = parts[0] if len(parts) == 1 else pd.concat(parts)
    cat = cat.iloc[perm]
    return cat if cols is None else cat.iloc[:, cols]


def _isin_kernel(x, labels):
    return x[x.index.isin(labels)]


def _loc_gather(parts, labels, cols):
    parts = list(parts)
    cat = parts[0] if len(parts) == 1 else pd.concat(parts)
    res = cat.loc[labels]
    if cols is None:
        return res
    if isinstance(res, pd.DataFrame):
        return res.iloc[:, cols]
    return res.iloc[cols]


def _loc_slice_kernel(x, sl, cols):
    res = x.loc[sl]
    return res if cols is None else res.iloc[:, cols]


def _column_kernel(x, cols):
    return x.iloc[:, cols]


# ---- the positional selection operand ----------------------------------------------------------


class RowSelect(DataFrameOperand):
    """Positional row selection ``kind`` in ``head tail slice list bool int`` (+ columns)."""

    _op_name = "iloc"

    def tile(self):
        (x,) = self.inputs
        kind = self.kind
        if kind in ("head", "tail") and self.n >= 0:
            return (yield from self._tile_head_tail(x))
        yield from _ensure_lengths(x)
        lengths = [int(n) for n in x.nsplits[0]]
        total = sum(lengths)
        offs = _offsets(lengths)
        if kind == "head":
            kind, sel = "slice", slice(0, max(total + self.n, 0), 1)
        elif kind == "tail":
            kind, sel = "slice", slice(min(-self.n, total), total, 1)
        else:
            sel = self.sel
        if kind == "slice":
            plan = _slice_plan(sel, offs, total)
        elif kind == "bool":
            mask = np.asarray(sel, dtype=bool)
            if len(mask) != total:
                raise IndexError(f"Boolean index has wrong length: {len(mask)} instead of {total}")
            plan = [(j, mask[offs[j] : offs[j + 1]]) for j in range(len(lengths))]
        elif kind == "int":
            pos = _normalize_positions(np.asarray([sel]), total, single=True)[0]
            j = int(np.searchsorted(offs, pos, side="right") - 1)
            chunk = x.chunks[j]
            return [self._scalar_or_row(chunk, int(pos - offs[j]))]
        else:  # list
            pos = _normalize_positions(np.asarray(sel, dtype=np.int64), total)
            cids = np.searchsorted(offs, pos, side="right") - 1 if len(pos) else np.empty(0, dtype=np.int64)
            if len(pos) == 0 or np.all(np.diff(cids) >= 0):
                plan = []
                for j in np.unique(cids):
                    m = cids == j
                    plan.append((int(j), pos[m] - offs[j]))
                if not plan:
                    plan = [(0, np.empty(0, dtype=np.int64))]
            else:
                return [self._gather_list(x, pos, cids, offs)]
        return [self._emit(x, plan)]

    def _emit(self, x, plan):
        out = self.output
        chunks = []
        for i, (j, rows) in enumerate(plan):
            c = x.chunks[j]
            n = _sel_len(rows, c.shape[0])
            chunks.append(self.new_chunk(i, n, _iloc_kernel, (c, rows, self.cols), meta=out.meta, blockwise=True))
        return chunks, frame_nsplits(out.meta, tuple(c.shape[0] for c in chunks))

    def _gather_list(self, x, pos, cids, offs):
        out = self.output
        order = np.argsort(cids, kind="stable")
        perm = np.empty_like(order)
        perm[order] = np.arange(len(order))
        takes = []
        for j in np.unique(cids):
            local = pos[cids == j] - offs[j]
            takes.append(Chunk((f"{self.output_key()}-take", int(j)), (int(j),), (len(local),), _iloc_kernel,
                               (x.chunks[j], local, None)))
        c = self.new_chunk(0, len(pos), _take_reorder, (takes, perm, self.cols), meta=out.meta)
        return [c], frame_nsplits(out.meta, (len(pos),))

    def _scalar_or_row(self, chunk, local):
        out = self.output
        if self.scalar:
            c = Chunk((self.output_key(),), (), (), _iloc_kernel, (chunk, local, self.cols), inputs=[chunk])
            return [c], ()
        n = out.shape[0]
        c = self.new_chunk(0, n, _iloc_kernel, (chunk, local, self.cols), meta=out.meta)
        return [c], frame_nsplits(out.meta, (n,))

    def _tile_head_tail(self, x):
        """Chunks from the start (head) or end (tail) until ``n`` rows are covered; unknown
        lengths are learnt one chunk at a time."""
        n = self.n
        order = range(len(x.chunks)) if self.kind == "head" else range(len(x.chunks) - 1, -1, -1)
        picked = []
        covered = 0
        for j in order:
            if covered >= n:
                break
            c = x.chunks[j]
            if not _known(c.shape[0]):
                yield [c]
            length = int(c.shape[0])
            take = min(length, n - covered)
            covered += take
            if take == length:
                rows = slice(None)
            else:
                rows = slice(0, take) if self.kind == "head" else slice(length - take, length)
            picked.append((j, rows))
        if self.kind == "tail":
            picked.reverse()
        if not picked:
            picked = [(0, slice(0, 0))]
        return [self._emit(x, picked)]


def _sel_len(rows, n):
    if isinstance(rows, slice):
        return len(range(*rows.indices(int(n)))) if _known(n) else nan
    rows = np.asarray(rows)
    if rows.dtype == bool:
        return int(rows.sum())
    return len(rows)


def _normalize_positions(pos: np.ndarray, total: int, single=False) -> np.ndarray:
    pos = pos.astype(np.int64)
    pos = np.where(pos < 0, pos + total, pos)
    if len(pos) and (pos.min() < 0 or pos.max() >= total):
        raise IndexError("single positional indexer is out-of-bounds" if single else "positional indexers are out-of-bounds")
    return pos


def _slice_plan(sel: slice, offs: np.ndarray, total: int):
    """Per touched chunk, the local slice of global ``sel`` (in output order)."""
    start, stop, step = sel.indices(total)
    plan = []
    nchunks = len(offs) - 1
    if step > 0:
        for j in range(nchunks):
            a, b = int(offs[j]), int(offs[j + 1])
            hi = min(b, stop)
            if hi <= a or start >= hi:
                continue
            k = max(0, -(-(a - start) // step))
            p0 = start + k * step
            if p0 < hi:
                plan.append((j, slice(p0 - a, hi - a, step)))
    else:
        st = -step
        for j in range(nchunks - 1, -1, -1):
            a, b = int(offs[j]), int(offs[j + 1])
            if b <= a:
                continue
            top = min(start, b - 1)
            if top < a or top <= stop:
                continue
            p0 = start - (-(-(start - top) // st)) * st
            if p0 < a or p0 <= stop:
                continue
            local_stop = stop - a if stop >= a else None
            plan.append((j, slice(p0 - a, local_stop, step)))
    if not plan:
        plan = [(0, slice(0, 0))]
    return plan


def _row_select(obj, kind, sel=None, n=None, cols=None):
    """Build the RowSelect output (metadata and, when lengths are known, its length)."""
    meta = obj.data.meta
    total = obj.shape[0]
    out_meta = meta if cols is None else meta.iloc[:, cols]
    scalar = False
    nrows = nan
    if kind == "int":
        if _known(total):
            _normalize_positions(np.asarray([sel]), int(total), single=True)
        if isinstance(obj, Series) or not isinstance(cols, (list, np.ndarray)) and cols is not None:
            scalar = True
        else:
            row = meta_nonempty(out_meta).iloc[0]
            name = (sel + int(total) if sel < 0 else sel) if obj.data.range_index and _known(total) else None
            out_meta = row.iloc[:0].rename(name)
            nrows = len(row)
    elif _known(total):
        total = int(total)
        if kind == "slice":
            nrows = len(range(*sel.indices(total)))
        elif kind == "bool":
            if len(sel) != total:
                raise IndexError(f"Boolean index has wrong length: {len(sel)} instead of {total}")
            nrows = int(np.asarray(sel, dtype=bool).sum())
        elif kind == "list":
            nrows = len(_normalize_positions(np.asarray(sel, dtype=np.int64), total))
        elif kind == "head":
            nrows = min(n, total) if n >= 0 else max(total + n, 0)
        elif kind == "tail":
            nrows = min(n, total) if n >= 0 else max(total + n, 0)
    op = RowSelect([obj.data], kind=kind, sel=sel, n=n, cols=cols, scalar=scalar)
    op._op_name = kind if kind in ("head", "tail") else "iloc"
    if scalar:
        from ..tensor.core import TensorData
        from .reduction import ScalarResult, _np_dtype

        dt = out_meta.dtype if isinstance(out_meta, pd.Series) else (
            meta.dtype if isinstance(obj, Series) else np.dtype(object))
        data = TensorData(op, (), _np_dtype(pd.Series([], dtype=dt)) if not isinstance(dt, np.dtype) else dt, op.make_key())
        op.add_output(data)
        return ScalarResult(data)
    # the first rows of a default RangeIndex are still a default RangeIndex
    return op.new_output(out_meta, nrows, range_index=obj.data.range_index and kind == "head")


# ---- indexer parsing ------------------------------------------------------------------------


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _parse_rows(item):
    """iloc row indexer -> (kind, sel)."""
    if isinstance(item, slice):
        for v in (item.start, item.stop, item.step):
            if v is not None and not _is_int(v):
                raise TypeError(f"cannot do positional indexing with these indexers [{v!r}] of type {type(v).__name__}")
        if item.step == 0:
            raise ValueError("slice step cannot be zero")
        return "slice", item
    if _is_int(item):
        return "int", int(item)
    if is_pandas_tileable(item) or isinstance(item, Tileable):
        raise NotImplementedError("iloc with a lazy indexer: use a boolean Series with loc/[] instead")
    if isinstance(item, (pd.Series, pd.Index)):
        if isinstance(item, pd.Series) and pd.api.types.is_bool_dtype(item.dtype):
            raise ValueError("iLocation based boolean indexing cannot use an indexable as a mask")
        item = item.to_numpy()
    if isinstance(item, (list, tuple, np.ndarray, range)):
        arr = np.asarray(item)
        if arr.ndim != 1:
            raise IndexError("iloc takes 1-d row indexers")
        if arr.dtype == bool:
            return "bool", arr
        if len(arr) == 0:
            return "list", np.empty(0, dtype=np.int64)
        if arr.dtype.kind not in "iu":
            raise IndexError(".iloc requires numeric indexers, got " + repr(list(arr[:3])))
        return "list", arr.astype(np.int64)
    raise TypeError(f"Cannot index by location index with a non-integer key {item!r}")


def _parse_cols(df: DataFrame, item):
    """iloc column indexer -> positions (list, or an int for a single column)."""
    ncols = len(df.columns)
    if isinstance(item, slice) and item == slice(None):
        return None
    if _is_int(item):
        if not -ncols <= item < ncols:
            raise IndexError("single positional indexer is out-of-bounds")
        return int(item) % ncols
    pos = np.arange(ncols)[item]  # numpy's positional semantics (slices, lists, bool masks)
    if isinstance(item, (list, np.ndarray)) and np.asarray(item).dtype != bool and len(item) and (
        max(item) >= ncols or min(item) < -ncols
    ):
        raise IndexError("positional indexers are out-of-bounds")
    return [int(p) for p in np.atleast_1d(pos)]


def iloc_select(obj, item):
    if isinstance(item, tuple):
        if isinstance(obj, Series):
            if len(item) != 1:
                raise IndexError("Too many indexers")
            item = item[0]
            cols = None
        else:
            if len(item) > 2:
                raise IndexError("Too many indexers")
            rows, citem = item if len(item) == 2 else (item[0], slice(None))
            cols = _parse_cols(obj, citem)
            item = rows
    else:
        cols = None
    if isinstance(item, slice) and item == slice(None):
        if cols is None:
            return obj
        return _columns_only(obj, cols)
    kind, sel = _parse_rows(item)
    if kind == "int" and _is_int(cols):
        return _row_select(obj, "int", sel, cols=cols)
    if isinstance(cols, (int, np.integer)):
        # rows of a single column: a Series
        col = _columns_only(obj, cols)
        return _row_select(col, kind, sel)
    return _row_select(obj, kind, sel, cols=cols)


def _columns_only(df, cols):
    meta = df.data.meta.iloc[:, cols]
    return map_rows(_column_kernel, df, cols, meta=meta, name="iloc-columns")


class _ILocIndexer:
    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __getitem__(self, item):
        return iloc_select(self.obj, item)

    def __setitem__(self, item, value):
        set_rows(self.obj, "iloc", item, value)


class _LocIndexer:
    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __getitem__(self, item):
        return loc_select(self.obj, item)

    def __setitem__(self, item, value):
        set_rows(self.obj, "loc", item, value)


@register_method(DataFrame, Series, name="iloc")
@property
def iloc(self):
    """Positional selection: ``obj.iloc[rows]`` / ``df.iloc[rows, cols]``."""
    return _ILocIndexer(self)


@register_method(DataFrame, Series, name="loc")
@property
def loc(self):
    """Label selection: ``obj.loc[rows]`` / ``df.loc[rows, cols]``."""
    return _LocIndexer(self)


@register_method(DataFrame, Series)
def head(self, n=5):
    """The first ``n`` rows (only the chunks needed are computed)."""
    if not _is_int(n):
        raise TypeError(f"n must be an integer, got {n!r}")
    return _row_select(self, "head", n=int(n))


@register_method(DataFrame, Series)
def tail(self, n=5):
    """The last ``n`` rows (only the chunks needed are computed)."""
    if not _is_int(n):
        raise TypeError(f"n must be an integer, got {n!r}")
    return _row_select(self, "tail", n=int(n))


# ---- loc --------------------------------------------------------------------------------------


def _loc_columns(df: DataFrame, citem):
    """Column positions (list) or a single position (int) for a loc column indexer."""
    meta = df.data.meta
    if isinstance(citem, slice) and citem == slice(None):
        return None
    if is_pandas_tileable(citem):
        raise NotImplementedError("loc with a lazy column indexer")
    sel = meta.loc[:, citem]  # pandas' KeyError for missing labels
    idx = pd.Series(np.arange(len(meta.columns)), index=meta.columns)
    pos = idx.loc[citem]
    if isinstance(sel, pd.Series):
        return int(pos)
    return [int(p) for p in np.atleast_1d(np.asarray(pos))]


def loc_select(obj, item):
    if isinstance(obj, DataFrame) and isinstance(item, tuple) and len(item) == 2:
        rows, citem = item
        cols = _loc_columns(obj, citem)
    elif isinstance(item, tuple) and isinstance(obj, Series) and len(item) == 1:
        rows, cols = item[0], None
    else:
        rows, cols = item, None
    single_col = _is_int(cols)
    if isinstance(rows, slice) and rows == slice(None):
        if cols is None:
            return obj
        return _columns_only(obj, cols)
    # boolean masks
    if is_pandas_tileable(rows):
        if not (isinstance(rows, Series) and pd.api.types.is_bool_dtype(rows.dtype)):
            raise KeyError("loc with a lazy indexer needs a boolean Series")
        if not aligned(obj, rows):
            raise ValueError("the boolean mask has a different index than the object it filters")
        res = boolean_filter(obj, rows)
        return res if cols is None else _columns_only(res, cols)
    if isinstance(rows, (list, np.ndarray, pd.Series, pd.Index)) and np.asarray(rows).dtype == bool:
        mask = np.asarray(rows)
        return iloc_select(obj, (mask, cols if cols is not None else slice(None))) if isinstance(obj, DataFrame) else iloc_select(obj, mask)
    meta = obj.data.meta
    total = obj.shape[0]
    # default RangeIndex with known length: labels are positions
    if obj.data.range_index and _known(total):
        total = int(total)
        pos = _range_positions(rows, total, meta.index.dtype)
        if pos is not None:
            citem = cols if cols is not None else slice(None)
            return iloc_select(obj, (pos, citem)) if isinstance(obj, DataFrame) else iloc_select(obj, pos)
    # general index
    if isinstance(rows, slice):
        out_meta = meta if cols is None else meta.iloc[:, cols]
        if single_col:
            return _loc_slice(_columns_only(obj, cols), rows, None)
        return _loc_slice(obj, rows, cols, out_meta)
    scalar_label = not isinstance(rows, (list, np.ndarray, pd.Index, pd.Series, tuple)) or (
        isinstance(rows, tuple) and isinstance(meta.index, pd.MultiIndex)
    )
    labels = [rows] if scalar_label else list(rows)
    return _loc_labels(obj, rows, labels, cols, scalar_label)


def _range_positions(rows, total, index_dtype):
    """Positions for label indexer ``rows`` on RangeIndex(total), or None if not plain ints."""
    if _is_int(rows):
        if not 0 <= rows < total:
            raise KeyError(rows)
        return int(rows)
    if isinstance(rows, slice):
        if rows.step is not None and not _is_int(rows.step):
            return None
        for v in (rows.start, rows.stop):
            if v is not None and not _is_int(v):
                raise TypeError(f"cannot do slice indexing on RangeIndex with these indexers [{v!r}] of type {type(v).__name__}")
        step = rows.step or 1
        if step > 0:
            start = 0 if rows.start is None else min(max(rows.start, 0), total)
            stop = total if rows.stop is None else min(max(rows.stop + 1, 0), total)
            return slice(start, stop, step)
        start = total - 1 if rows.start is None else min(rows.start, total - 1)
        if start < 0:
            return slice(0, 0)
        if rows.stop is None or rows.stop - 1 < 0:
            return slice(start, None, step)
        return slice(start, rows.stop - 1, step)
    if isinstance(rows, (list, np.ndarray, pd.Index, pd.Series, range)):
        arr = np.asarray(rows)
        if len(arr) == 0:
            return np.empty(0, dtype=np.int64)
        if arr.dtype.kind not in "iu":
            missing = list(arr)
            raise KeyError(f"None of [Index({missing!r}, dtype='{arr.dtype}')] are in the [index]")
        bad = arr[(arr < 0) | (arr >= total)]
        if len(bad) == len(arr):
            raise KeyError(f"None of [Index({list(arr)!r}, dtype='int64')] are in the [index]")
        if len(bad):
            raise KeyError(f"{list(bad)!r} not in index")
        return arr.astype(np.int64)
    return None


class LocLabels(DataFrameOperand):
    """Rows with the given labels: every chunk's matching rows, then pandas' ``.loc`` on them
    (label order, duplicates and KeyErrors as pandas)."""

    _op_name = "loc"

    def tile(self):
        (x,) = self.inputs
        okey = self.output_key()
        parts = [Chunk((f"{okey}-isin", i), (i,), (nan,), _isin_kernel, (c, self.labels_arr), inputs=[c], blockwise=True)
                 for i, c in enumerate(x.chunks)]
        out = self.output
        if self.scalar:
            c = Chunk((okey,), (), (), _loc_gather, (parts, self.key, self.cols), inputs=parts)
            return [([c], ())]
        n = out.shape[0]
        c = self.new_chunk(0, n, _loc_gather, (parts, self.key, self.cols), meta=out.meta, inputs=parts)
        return [([c], frame_nsplits(out.meta, (n,)))]


def _loc_labels(obj, key, labels, cols, scalar_label):
    meta = obj.data.meta
    is_frame = isinstance(obj, DataFrame)
    scalar = False
    if scalar_label:
        if not is_frame or _is_int(cols):
            scalar = True
            out_meta = None
        else:
            m = meta if cols is None else meta.iloc[:, cols]
            out_meta = meta_nonempty(m).iloc[0].iloc[:0].rename(key)
            nrows = len(m.columns)
    else:
        out_meta = meta if cols is None else (meta.iloc[:, cols] if is_frame else meta)
        if _is_int(cols):
            out_meta = meta.iloc[:, cols]
        nrows = nan
    if isinstance(key, (list, pd.Index, pd.Series, np.ndarray)):
        key = list(key)
    op = LocLabels([obj.data], labels_arr=list(labels), key=key, cols=cols, scalar=scalar)
    if scalar:
        from ..tensor.core import TensorData
        from .reduction import ScalarResult

        dt = (meta.dtype if not is_frame else meta.dtypes.iloc[cols])
        data = TensorData(op, (), dt if isinstance(dt, np.dtype) else np.dtype(object), op.make_key())
        op.add_output(data)
        return ScalarResult(data)
    return op.new_output(out_meta, nrows)


class LocSlice(DataFrameOperand):
    """``chunk.loc[a:b]`` per chunk (pandas' semantics on a monotonic index)."""

    _op_name = "loc-slice"

    def tile(self):
        (x,) = self.inputs
        out = self.output
        sl = self.sl
        chunks = [self.new_chunk(i, nan, _loc_slice_kernel, (c, sl, self.cols), meta=out.meta, blockwise=True)
                  for i, c in enumerate(x.chunks)]
        if sl.step is not None and sl.step < 0:
            chunks = [self.new_chunk(i, nan, _loc_slice_kernel, (c, sl, self.cols), meta=out.meta, blockwise=True)
                      for i, c in enumerate(reversed(x.chunks))]
        return [(chunks, frame_nsplits(out.meta, tuple(c.shape[0] for c in chunks)))]


def _loc_slice(obj, sl, cols, out_meta=None):
    meta = obj.data.meta
    if out_meta is None:
        out_meta = meta
    # pandas' TypeErrors for slice bounds of the wrong type, on a stand-in
    try:
        meta_nonempty(meta).sort_index().loc[sl]
    except KeyError:
        pass
    op = LocSlice([obj.data], sl=sl, cols=cols)
    return op.new_output(out_meta, nan)


# ---- df[slice] and Series[...] (called by indexing.getitem) -------------------------------------


def slice_rows(df, sl: slice):
    """``df[a:b]``: positional for integer (or None) bounds, as pandas 3; by label otherwise."""
    if all(v is None or _is_int(v) for v in (sl.start, sl.stop, sl.step)):
        return iloc_select(df, sl)
    return loc_select(df, sl)


def series_getitem(s, item):
    """``s[item]``: int slices and boolean arrays by position, everything else by label."""
    if isinstance(item, slice):
        return slice_rows(s, item)
    if isinstance(item, (list, np.ndarray, pd.Index)) and len(item) and np.asarray(item).dtype == bool:
        return iloc_select(s, np.asarray(item))
    return loc_select(s, item)


# ---- iloc[...] = value, loc[...] = value --------------------------------------------------------


def _row_numbers_kernel(x, start):
    return pd.Series(np.arange(start, start + len(x), dtype=np.int64), index=x.index)


class RowNumbers(DataFrameOperand):
    """The global position of every row, as a Series with the object's labels and chunks."""

    _op_name = "row-numbers"

    def tile(self):
        (t,) = self.inputs
        yield from _ensure_lengths(t)
        rows = [int(n) for n in t.nsplits[0]]
        offs = _offsets(rows)
        chunks = [self.new_chunk(i, n, _row_numbers_kernel, (c, int(offs[i]))) for i, (c, n) in enumerate(zip(t.chunks, rows))]
        return [(chunks, frame_nsplits(self.output.meta, rows))]


def _row_numbers(obj):
    meta = pd.Series([], dtype=np.int64, index=obj.data.meta.index)
    op = RowNumbers([obj.data])
    return op.new_output(meta, obj.shape[0], index_key=obj.data.index_key, range_index=obj.data.range_index)


def _set_kernel(x, rownos, selected, value, cols, kind):
    from .map import as_scalar

    order = selected.to_numpy()
    if kind == "positional":
        arr = value if isinstance(value, (np.ndarray, pd.Series, pd.DataFrame)) else np.asarray(value, dtype=object)
        arr = np.asarray(arr)
        if arr.ndim == 1 and isinstance(x, pd.DataFrame) and not _is_int(cols) and (
                len(x.columns) if cols is None else len(cols)) > 1:
            kind = "as-is"  # one value per column, the same for every selected row
        elif len(arr) != len(order):
            raise ValueError("Must have equal len keys and value when setting with an iterable")
    rn = rownos.to_numpy()
    pos = np.flatnonzero(np.isin(rn, order))
    if len(pos) == 0:
        return x
    if kind == "scalar":
        value = as_scalar(value)
    elif kind == "positional":  # the value of a row is at its place in the selection (the last one)
        k = pd.Series(np.arange(len(order))).groupby(order).last().reindex(rn[pos]).to_numpy()
        value = arr[k]
    elif kind == "labels":  # loc aligns a Series/DataFrame value with the rows (and columns) it sets
        labels = x.index[pos]
        if isinstance(value, pd.DataFrame) and isinstance(x, pd.DataFrame):
            targets = x.columns if cols is None else x.columns[cols]
            value = value.reindex(index=labels, columns=pd.Index(np.atleast_1d(targets))).to_numpy()
        else:
            value = value.reindex(labels).to_numpy()
    x = x.copy()
    if isinstance(x, pd.Series):
        x.iloc[pos] = value
    else:
        x.iloc[pos, slice(None) if cols is None else cols] = value
    return x


class SetRows(DataFrameOperand):
    """Every chunk sets its selected rows: inputs are the object, its row numbers, the
    selected row numbers (one chunk) and, when the value is a tileable, its one chunk."""

    _op_name = "set-rows"

    def tile(self):
        t, rownos, selected = self.inputs[:3]
        value = self.inputs[3].chunks[0] if len(self.inputs) > 3 else self.value
        sel = selected.chunks[0]
        chunks = []
        for i, (c, r) in enumerate(zip(t.chunks, rownos.chunks)):
            ins = [c, r, sel] + ([value] if len(self.inputs) > 3 else [])
            chunks.append(self.new_chunk(i, c.shape[0], _set_kernel, (c, r, sel, value, self.cols, self.kind), inputs=ins))
        return [(chunks, frame_nsplits(self.output.meta, tuple(c.shape[0] for c in chunks)))]


def _split_setter(obj, kind, item):
    """(row indexer, column positions or None) of an iloc/loc setter key."""
    if isinstance(item, tuple) and isinstance(obj, DataFrame):
        if len(item) > 2:
            raise IndexError("Too many indexers")
        rows, citem = item if len(item) == 2 else (item[0], slice(None))
        if kind == "iloc":
            cols = _parse_cols(obj, citem)
        else:
            if not (isinstance(citem, slice) and citem == slice(None)) and not is_pandas_tileable(citem):
                labels = citem if isinstance(citem, (list, np.ndarray, pd.Index, slice)) else [citem]
                if not isinstance(labels, slice):
                    new = [c for c in labels if c not in obj.columns]
                    if new:
                        raise NotImplementedError(
                            f"loc[...] = value adding the new column(s) {new} is not supported: "
                            "assign the column first (df[col] = ...)")
            cols = _loc_columns(obj, citem)
        return rows, cols
    if isinstance(item, tuple) and isinstance(obj, Series) and len(item) == 1:
        item = item[0]
    return item, None


def set_rows(obj, kind, item, value):
    """``obj.iloc[item] = value`` / ``obj.loc[item] = value``; the handle then points at the
    result (Mars semantics).  Rows are chosen exactly as ``obj.iloc[rows]``/``obj.loc[rows]``
    choose them (pandas' errors for bad positions or missing labels); ``value`` is a scalar
    (or 0-d tileable), a list/array with one value (row) per selected row in selection
    order, or a Series/DataFrame (local or a tileable), aligned by label as pandas does.
    Setting a value of another dtype follows pandas: an incompatible value raises pandas'
    TypeError.  New rows or columns (pandas' setting with enlargement) are not supported."""
    from .map import is_scalar_tileable

    rows, cols = _split_setter(obj, kind, item)
    rownos = _row_numbers(obj)
    if kind == "iloc":
        sel_rows = [int(rows)] if _is_int(rows) else rows
        selected = iloc_select(rownos, sel_rows)
    else:
        scalar = not isinstance(rows, (list, np.ndarray, pd.Index, pd.Series, slice, Tileable)) and not (
            isinstance(rows, tuple) and isinstance(obj.data.meta.index, pd.MultiIndex))
        selected = loc_select(rownos, [rows] if scalar else rows)
    if not isinstance(selected, Series):
        raise TypeError(f"cannot set with the indexer {item!r}")
    from .methods import gather

    selected = gather(selected)
    inputs = [obj.data, rownos.data, selected.data]
    if is_scalar_tileable(value):
        kind_v, const = "scalar", None
        inputs.append(value.data)
    elif is_pandas_tileable(value):  # iloc takes a Series' values by position, loc by label
        kind_v, const = ("labels" if kind == "loc" else "positional"), None
        inputs.append(gather(value).data)
    elif isinstance(value, Tileable):  # a tensor: positional values
        from .datasource import from_tensor

        kind_v, const = "positional", None
        inputs.append(gather(from_tensor(value, "series" if value.ndim == 1 else "frame")).data)
    elif isinstance(value, (pd.Series, pd.DataFrame)):
        kind_v, const = ("labels" if kind == "loc" else "positional"), value
    elif isinstance(value, (list, tuple, np.ndarray, pd.api.extensions.ExtensionArray, range)):
        kind_v, const = "positional", list(value) if isinstance(value, (tuple, range)) else value
    else:
        kind_v, const = "scalar", value
    op = SetRows(inputs, value=const, cols=cols, kind=kind_v)
    data = obj.data
    out = op.new_output(data.meta, data.shape[0], index_key=data.index_key, range_index=data.range_index)
    obj.data = out.data
