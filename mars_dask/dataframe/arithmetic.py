"""Arithmetic and comparisons between DataFrames, Series and scalars (pandas semantics),
with index alignment.

Objects with the same ``index_key`` (same labels in the same chunks) combine chunk by
chunk.  Otherwise :func:`align` brings both onto one row partitioning, as Mars does:

- labels known to be equal (both from the same local index, or both a default RangeIndex
  of the same length), possibly cut differently: one side is re-cut to the other's row
  splits (:func:`rechunk_rows`: slices of the source chunks concatenated), no shuffle;
- both default RangeIndexes of different lengths: the shorter one is re-cut to the longer
  one's splits and padded with missing rows (pandas' outer join of two ranges);
- otherwise, at tile time: if both sides have the same length, a cheap chunk-wise check
  whether the labels are equal (pandas then keeps the order unchanged) decides for a
  re-cut; else both sides are range-partitioned on the index (one task-based shuffle
  through :mod:`.shuffle`, boundaries from a sample of the labels), each pair of
  partitions is outer-joined locally and sorted, so the concatenated result is the sorted
  union of labels that pandas gives for non-equal indexes.  (A hash shuffle followed by a
  sort would need two shuffles; range partitioning gives pandas' order with one.)
  Unsortable labels fall back to a hash shuffle without the final order.

Row counts after a general alignment are unknown until executed.  Dtypes: a side that may
miss labels gets pandas' dtypes for missing rows (ints -> float64, bool -> object, ...),
decided at build time; when labels are known at build time (local sources, ranges) this is
exact, otherwise the upcast dtypes are used even if no label turns out to be missing.
"""

from __future__ import annotations

import math
import operator

import numpy as np
import pandas as pd
from ._meta import meta_nonempty
from pandas.api.types import is_list_like

from ..tiling.core import Chunk, ensure_known, new_key
from .core import (
    DataFrame, DataFrameOperand, Series, _PandasData, frame_nsplits, infer_meta, nan, register_method,
)
from .map import aligned, is_pandas_tileable, map_rows

__all__: list[str] = []  # (align and rechunk_rows are internal: Mars has no md.align)

_OPS = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
    "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow,
    "and": operator.and_, "or": operator.or_, "xor": operator.xor,
    "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
    "eq": operator.eq, "ne": operator.ne,
}
_COMPARISONS = {"lt", "le", "gt", "ge", "eq", "ne"}


def _isnan(x) -> bool:
    return isinstance(x, float) and math.isnan(x)


# ---- kernels --------------------------------------------------------------------------


def _binary_kernel(left, right, name):
    return _OPS[name](left, right)


def _flex_kernel(left, right, name, axis, fill_value):
    kw = {} if fill_value is None else {"fill_value": fill_value}
    if isinstance(left, pd.DataFrame):
        return getattr(left, name)(right, axis=axis, **kw)
    return getattr(left, name)(right, **kw)


def _unary_kernel(x, name):
    if name == "neg":
        return -x
    if name == "invert":
        return ~x
    if name == "abs":
        return abs(x)
    return +x


def _conform(obj, meta):
    """Cast ``obj`` to the dtypes of ``meta`` where they differ (categoricals kept)."""
    if isinstance(obj, pd.DataFrame):
        casts = {}
        for c, dt in meta.dtypes.items():
            if c in obj.columns and obj[c].dtype != dt and not isinstance(dt, pd.CategoricalDtype):
                casts[c] = dt
        return obj.astype(casts) if casts else obj
    if obj.dtype != meta.dtype and not isinstance(meta.dtype, pd.CategoricalDtype):
        return obj.astype(meta.dtype)
    return obj


def _concat_or_meta(parts, meta):
    parts = [p for p in parts]
    if not parts:
        return meta
    if len(parts) == 1:
        return parts[0]
    return pd.concat(parts)


def _recut_kernel(parts, meta, pad=None, adopt=None, cast=None):
    """Rows ``src.iloc[lo:hi]`` of each ``(src, lo, hi)`` in ``parts`` concatenated; ``pad``
    = ``(start, stop)`` reindexes onto that range (missing rows); ``adopt`` = a chunk whose
    index the values take positionally; ``cast`` = a meta to conform dtypes to."""
    out = _concat_or_meta([src.iloc[lo:hi] for src, lo, hi in parts], meta)
    if pad is not None:
        out = out.reindex(pd.RangeIndex(pad[0], pad[1]))
        out.index.name = meta.index.name
    if adopt is not None:
        out = out.set_axis(adopt.index, axis=0)
    if cast is not None:
        out = _conform(out, cast)
    return out


def _labels_equal_flag(left, parts, meta):
    """``np.empty(1)`` if ``left``'s labels equal those of the concatenated parts, else
    ``np.empty(0)`` (the answer travels back as the chunk's shape)."""
    right = _concat_or_meta([src.iloc[lo:hi] for src, lo, hi in parts], meta)
    return np.empty(1 if left.index.equals(right.index) else 0)


def _index_sample(obj, k):
    idx = obj.index
    idx = idx[~idx.isna()] if idx.hasnans else idx
    if len(idx) == 0:
        return idx[:0]
    u = idx.unique().sort_values()
    if len(u) <= k:
        return u
    pos = np.linspace(0, len(u) - 1, k).round().astype(int)
    return u[pos]


def _align_pair(lpieces, rpieces, lmeta, rmeta, sort):
    left = _concat_or_meta(lpieces, lmeta)
    right = _concat_or_meta(rpieces, rmeta)
    if len(left) == 0 and len(right) == 0:
        la, ra = left, right
    else:
        la, ra = left.align(right, join="outer", axis=0)
    if sort and len(la) and not la.index.is_monotonic_increasing:
        order = la.index.argsort(kind="stable")
        la, ra = la.take(order), ra.take(order)
    return _conform(la, lmeta), _conform(ra, rmeta)


def _take(tup, i):
    return tup[i]


# ---- helpers ----------------------------------------------------------------------------


def known_labels(data: _PandasData):
    """The row labels of ``data`` if they are known without executing anything (a default
    RangeIndex of known length, or an index coming unchanged from a local pandas source)."""
    from .datasource import PandasDataSource

    key = data.index_key
    seen = 0
    while data is not None and seen < 10000:
        seen += 1
        if data.range_index and not _isnan(data.shape[0]):
            return pd.RangeIndex(int(data.shape[0]))
        op = data.op
        if op is None:
            return None
        if isinstance(op, PandasDataSource):
            obj = op.data
            return obj if isinstance(obj, pd.Index) else obj.index
        nxt = None
        for inp in op.inputs:
            if isinstance(inp, _PandasData) and inp.index_key == key:
                nxt = inp
                break
        data = nxt
    return None


def upcast_meta(meta, index_meta=None):
    """pandas' dtypes for ``meta`` after reindexing with missing labels."""
    ne = meta_nonempty(meta)
    up = ne.iloc[:1].reset_index(drop=True).reindex([0, 1]).iloc[:0]
    if isinstance(up, pd.Series):
        up.name = meta.name
    return up.set_axis(meta.index if index_meta is None else index_meta, axis=0)


def _union_index_meta(lmeta, rmeta):
    li, ri = meta_nonempty(lmeta).index, meta_nonempty(rmeta).index
    try:
        joined = li.join(ri, how="outer")
    except Exception:  # noqa: BLE001 - pandas refuses some index joins: keep the left index
        joined = li
    out = joined[:0]
    if lmeta.index.name == rmeta.index.name:
        out = out.rename(lmeta.index.name)
    else:
        out = out.rename(None)
    return out


def _pieces(src_splits, target_splits, chunks):
    """For each target chunk, the ``(src_chunk, lo, hi)`` slices that make it up."""
    src_off = np.concatenate([[0], np.cumsum(src_splits)]).astype(np.int64)
    out = []
    start = 0
    for n in target_splits:
        stop = start + int(n)
        parts = []
        if stop > start:
            first = int(np.searchsorted(src_off, start, side="right") - 1)
            j = first
            while j < len(src_splits) and src_off[j] < stop:
                lo = max(start, src_off[j]) - src_off[j]
                hi = min(stop, src_off[j + 1]) - src_off[j]
                if hi > lo:
                    parts.append((chunks[j], int(lo), int(hi)))
                j += 1
        out.append(parts)
        start = stop
    return out


def _rows(data):
    return tuple(int(x) for x in data.nsplits[0])


# ---- re-cutting rows ----------------------------------------------------------------------


class RechunkRows(DataFrameOperand):
    """Re-cut the rows of ``inputs[0]``: to explicit ``splits``, or to the row splits of
    ``inputs[1]`` (``like``), optionally padding onto a longer RangeIndex (``pad``), taking
    the like-chunks' labels positionally (``adopt``) and casting dtypes to the output meta."""

    _op_name = "rechunk-rows"

    def tile(self):
        src = self.inputs[0]
        like = self.inputs[1] if len(self.inputs) > 1 else None
        yield from ensure_known(*([src, like] if like is not None else [src]))
        src_rows = _rows(src)
        total = sum(src_rows)
        if like is not None:
            target = _rows(like)
        else:
            target = tuple(int(s) for s in self.splits)
        ttotal = sum(target)
        out = self.output
        if self.adopt or (like is None):
            if ttotal != total:
                if self.adopt:
                    raise ValueError(f"Length of values ({total}) does not match length of index ({ttotal})")
                raise ValueError(f"new row splits add up to {ttotal} rows, the object has {total}")
        elif not self.pad and ttotal != total:
            raise ValueError(
                "Can only compare identically-labeled (both index and columns) objects"
                if self.require_equal else f"cannot re-cut {total} rows to {ttotal}"
            )
        pieces = _pieces(src_rows, target, src.chunks) if total else [[] for _ in target]
        cast = out.meta if self.cast else None
        chunks = []
        start = 0
        for i, (n, parts) in enumerate(zip(target, pieces)):
            pad = (start, start + n) if self.pad else None
            adopt = like.chunks[i] if self.adopt else None
            chunks.append(self.new_chunk(
                i, n, _recut_kernel, (parts, src.meta, pad, adopt, cast),
                blockwise=False,
            ))
            start += n
        return [(chunks, frame_nsplits(out.meta, target))]


def rechunk_rows(obj, new_splits):
    """``obj`` with its rows re-cut into chunks of the lengths ``new_splits`` (labels and
    order unchanged): each new chunk concatenates slices of the old ones.  Unknown row
    lengths of ``obj`` are resolved first (iterative tiling)."""
    if not is_pandas_tileable(obj):
        raise TypeError(f"rechunk_rows needs a DataFrame, Series or Index, got {type(obj).__name__}")
    new_splits = tuple(int(s) for s in new_splits)
    if any(s < 0 for s in new_splits) or not new_splits:
        raise ValueError(f"invalid row splits {new_splits!r}")
    n = obj.shape[0]
    if not _isnan(n) and sum(new_splits) != n:
        raise ValueError(f"new row splits add up to {sum(new_splits)} rows, the object has {n}")
    data = obj.data
    op = RechunkRows([data], splits=new_splits, adopt=False, pad=False, cast=False, require_equal=False)
    return op.new_output(
        data.meta, sum(new_splits), index_key=new_key("index", data.index_key, new_splits),
        range_index=data.range_index,
    )


def _recut_like(value, like, *, index_key, meta=None, pad=False, adopt=False, require_equal=False, nrows=None):
    meta = value.data.meta if meta is None else meta
    op = RechunkRows(
        [value.data, like.data], adopt=adopt, pad=pad, cast=meta is not value.data.meta,
        require_equal=require_equal,
    )
    return op.new_output(
        meta, like.shape[0] if nrows is None else nrows, index_key=index_key,
        range_index=like.data.range_index,
    )


def positional_like(target, values, name=None):
    """A Series/DataFrame holding ``values`` (a list, array, tensor or tileable) positionally,
    with ``target``'s labels and partitioning (pandas' rule for array-likes)."""
    from ..tensor.core import Tensor
    from .datasource import from_pandas, from_tensor

    if isinstance(values, Tensor):
        v = from_tensor(values, "series" if values.ndim == 1 else "frame")
    elif is_pandas_tileable(values):
        v = values
    else:
        arr = values if isinstance(values, np.ndarray) else np.asarray(values, dtype=None)
        if not isinstance(values, np.ndarray) and not isinstance(values, (pd.Index, pd.api.extensions.ExtensionArray)):
            local = pd.Series(list(values), name=name) if arr.ndim == 1 else pd.DataFrame(arr)
        elif arr.ndim == 1:
            local = pd.Series(values, name=name)
        else:
            local = pd.DataFrame(arr)
        n = target.shape[0]
        if not _isnan(n) and len(local) != n:
            raise ValueError(f"Length of values ({len(local)}) does not match length of index ({int(n)})")
        v = from_pandas(local, chunk_size=max(1, len(local)))
    n, m = target.shape[0], v.shape[0]
    if not _isnan(n) and not _isnan(m) and n != m:
        raise ValueError(f"Length of values ({int(m)}) does not match length of index ({int(n)})")
    meta = v.data.meta.set_axis(target.data.meta.index, axis=0)
    return _recut_like(v, target, index_key=target.data.index_key, meta=meta, adopt=True)


# ---- alignment --------------------------------------------------------------------------


class AlignRows(DataFrameOperand):
    """Outer alignment of two tileables on the row labels; two outputs."""

    _op_name = "align"

    def tile(self):
        left, right = self.inputs
        yield from ensure_known(left, right)
        lrows, rrows = _rows(left), _rows(right)
        nl, nr = sum(lrows), sum(rrows)
        if left.range_index and right.range_index:
            long_, rows = (left, lrows) if nl >= nr else (right, rrows)
            return self._recut_result(left, right, long_, rows, pad=True)
        if nl == nr:
            pieces = _pieces(rrows, lrows, right.chunks) if nl else [[] for _ in lrows]
            checks = [
                Chunk(
                    (self.output_key(0) + "-eqcheck", i), (i,), (nan,), _labels_equal_flag,
                    (left.chunks[i], parts, right.meta),
                )
                for i, parts in enumerate(pieces)
            ]
            yield checks
            if all(c.shape[0] == 1 for c in checks):
                return self._recut_result(left, right, left, lrows, pad=False)
        if self.require_equal:
            raise ValueError("Can only compare identically-labeled (both index and columns) objects")
        n = max(len(left.chunks), len(right.chunks))
        k = max(2, 4 * n)
        samples = [
            Chunk((self.output_key(0) + "-sample", i), (i,), (nan,), _index_sample, (c, k))
            for i, c in enumerate([*left.chunks, *right.chunks])
        ]
        yield samples  # executed by iterative tiling; the samples are small
        bounds = _sampled_boundaries([c.future.result() for c in samples], n)
        return self._shuffle_result(left, right, bounds, n)

    def _recut_result(self, left, right, long_, rows, pad):
        res = []
        for out, src in ((0, left), (1, right)):
            meta = self.lmeta if out == 0 else self.rmeta
            src_rows = _rows(src)
            total = sum(src_rows)
            if total:
                padded = rows if not pad or src is long_ else _pad_rows(rows, total)
                pieces = _pieces(src_rows, padded, src.chunks)
            else:
                pieces = [[] for _ in rows]
            chunks = []
            start = 0
            for i, (n, parts) in enumerate(zip(rows, pieces)):
                p = (start, start + n) if pad and src is not long_ else None
                chunks.append(self.new_chunk(i, n, _recut_kernel, (parts, src.meta, p, None, meta), out=out, meta=meta))
                start += n
            res.append((chunks, frame_nsplits(meta, rows)))
        return res

    def _shuffle_result(self, left, right, bounds, n):
        from .shuffle import hash_shuffle, range_shuffle

        lmeta, rmeta = self.lmeta, self.rmeta
        sort = bounds is not None
        if sort:
            lp = range_shuffle(self, left.chunks, None, bounds, name="align-l")
            rp = range_shuffle(self, right.chunks, None, bounds, name="align-r")
        else:
            lp = hash_shuffle(self, left.chunks, None, n, name="align-l")
            rp = hash_shuffle(self, right.chunks, None, n, name="align-r")
        louts, routs = [], []
        for j in range(len(lp)):
            pair = self.new_chunk(j, nan, _align_pair, (lp[j], rp[j], lmeta, rmeta, sort), meta=lmeta, suffix="-pair")
            louts.append(self.new_chunk(j, nan, _take, (pair, 0), out=0, meta=lmeta))
            routs.append(self.new_chunk(j, nan, _take, (pair, 1), out=1, meta=rmeta))
        rows = (nan,) * len(louts)
        return [(louts, frame_nsplits(lmeta, rows)), (routs, frame_nsplits(rmeta, rows))]


def _pad_rows(rows, total):
    """Target splits clipped to the first ``total`` rows (the rest is padding)."""
    out, start = [], 0
    for n in rows:
        out.append(max(0, min(n, total - start)))
        start += n
    return out


def _sampled_boundaries(values: list, n: int):
    """``n - 1`` sorted boundaries from the label samples, or None if unsortable."""
    try:
        idx = values[0].append(list(values[1:])) if len(values) > 1 else values[0]
        idx = idx[~idx.isna()] if idx.hasnans else idx
        if len(idx) == 0 or n <= 1:
            return ()
        u = idx.unique().sort_values()
        pos = np.linspace(0, len(u), n + 1)[1:-1].astype(int)
        pos = np.unique(np.minimum(pos, len(u) - 1))
        arr = np.asarray(u[pos])
        np.searchsorted(arr, np.asarray(idx[:1]))  # must be comparable
        return tuple(arr)
    except TypeError:
        return None


def _align_metas(left, right):
    """Output metas and whether labels are known equal."""
    ll, rl = known_labels(left.data), known_labels(right.data)
    index_meta = _union_index_meta(left.data.meta, right.data.meta)
    if ll is not None and rl is not None:
        if ll.equals(rl):
            return left.data.meta, right.data.meta, True
        try:
            union = ll.join(rl, how="outer")
        except Exception:  # noqa: BLE001 - pandas refuses some label joins: append instead
            union = ll.append(rl)
        lmeta = left.data.meta if union.isin(ll).all() else upcast_meta(left.data.meta)
        rmeta = right.data.meta if union.isin(rl).all() else upcast_meta(right.data.meta)
        return lmeta.set_axis(index_meta, axis=0), rmeta.set_axis(index_meta, axis=0), False
    return upcast_meta(left.data.meta, index_meta), upcast_meta(right.data.meta, index_meta), False


def align(left, right, *, require_equal=False):
    """Bring two objects with different indexes or row partitioning onto one row
    partitioning with the same labels (pandas' outer alignment on the rows; columns are
    left alone).  Returns the aligned pair.  ``require_equal``: pandas' rule for
    comparison operators (the labels must be identical, else ValueError)."""
    if not (is_pandas_tileable(left) and is_pandas_tileable(right)):
        raise TypeError("align needs two DataFrame/Series tileables")
    if aligned(left, right):
        return left, right
    lmeta, rmeta, equal = _align_metas(left, right)
    if equal:
        return left, _recut_like(right, left, index_key=left.data.index_key, require_equal=True)
    if require_equal and known_labels(left.data) is not None and known_labels(right.data) is not None:
        raise ValueError("Can only compare identically-labeled (both index and columns) objects")
    op = AlignRows([left.data, right.data], lmeta=lmeta, rmeta=rmeta, require_equal=require_equal)
    op._bounds = None
    key = op.make_key()
    index_key = new_key("index", key)
    ll, rl = known_labels(left.data), known_labels(right.data)
    nrows = nan
    if left.data.range_index and right.data.range_index and ll is not None and rl is not None:
        nrows = max(len(ll), len(rl))
    outs = op.new_outputs(
        [
            dict(meta=lmeta, nrows=nrows, index_key=index_key, range_index=False),
            dict(meta=rmeta, nrows=nrows, index_key=index_key, range_index=False),
        ],
        key=key,
    )
    return outs[0], outs[1]


# ---- a frame with something matched with its columns -------------------------------------


def _whole(parts):
    """One object from the chunks of a small Series or 1-d tensor."""
    if len(parts) == 1:
        return parts[0]
    if isinstance(parts[0], (pd.Series, pd.DataFrame)):
        return pd.concat(parts)
    return np.concatenate(parts)


def _columns_kernel(frame, parts, name, method, fill_value, other_left):
    other = _whole(parts)
    if method is not None:
        return _flex_kernel(frame, other, method, "columns", fill_value)
    return _OPS[name](other, frame) if other_left else _OPS[name](frame, other)


class ColumnsOp(DataFrameOperand):
    """``frame <op> other`` where pandas matches ``other`` (a Series tileable's labels, or a
    1-d tensor positionally) with the frame's columns.  ``other`` has about one value per
    column, so all of it goes to every row chunk of the frame (no shuffle, the frame's rows
    stay where they are)."""

    _op_name = "columns-op"

    def tile(self):
        frame, other = self.inputs
        parts = list(other.chunks)
        meta = self.output.meta
        chunks = [
            self.new_chunk(
                i, c.shape[0], _columns_kernel,
                (c, parts, self.name, self.method, self.fill_value, self.other_left),
            )
            for i, c in enumerate(frame.chunks)
        ]
        return [(chunks, frame_nsplits(meta, [c.shape[0] for c in chunks]))]


def _columnwise(left, right) -> bool:
    """Is this a DataFrame tileable with a Series tileable or a 1-d tensor (matched with the
    columns, pandas' default ``axis="columns"``)?"""
    from ..tensor.core import Tensor

    def other_kind(x):
        return isinstance(x, Series) or isinstance(x, Tensor) and x.ndim == 1

    return (isinstance(left, DataFrame) and other_kind(right)) or (isinstance(right, DataFrame) and other_kind(left))


def _stand_in_other(other):
    """A local stand-in for ``other`` with its real labels (they decide the result's columns),
    or None when they are unknown before execution."""
    if isinstance(other, Series):
        labels = known_labels(other.data)
        if labels is None:
            return None
        ne = meta_nonempty(other.data.meta)
        return ne.iloc[np.zeros(len(labels), dtype=np.intp)].set_axis(labels, axis=0)
    n = other.shape[0]
    if _isnan(n):
        return None
    return np.ones(int(n), dtype=other.dtype)


def _columns_op(name, left, right, *, flex, fill_value, reverse):
    other_left = not isinstance(left, DataFrame)
    frame, other = (right, left) if other_left else (left, right)
    stand_in = _stand_in_other(other)
    if stand_in is None:
        # The other side's labels decide which columns the result has, and the structure of
        # a result is fixed when it is built: execute that (small) side first, as Mars does
        # for labels it needs (e.g. ``reindex(columns=<tileable>)``).
        local = other.execute().fetch()
        args = (local, frame) if other_left else (frame, local)
        return binary_op(name, *args, flex=flex, axis="columns", fill_value=fill_value, reverse=reverse)
    method = (("r" + name) if reverse else name) if flex else None
    meta = infer_meta(lambda f: _columns_kernel(f, [stand_in], name, method, fill_value, other_left), frame.data.meta)
    op = ColumnsOp(
        [frame.data, other.data], name=name, method=method, fill_value=fill_value, other_left=other_left,
    )
    op._op_name = method or name
    return op.new_output(meta, frame.shape[0], index_key=frame.data.index_key, range_index=frame.data.range_index)


# ---- binary operations ------------------------------------------------------------------


def _is_columns_axis(axis):
    return axis in ("columns", 1, None)


def _prepare_local(t, other, axis):
    """Turn a local operand of ``t`` into what the chunk kernels need."""
    from .datasource import from_pandas

    if isinstance(other, (pd.Series, pd.DataFrame)):
        if isinstance(t, DataFrame) and isinstance(other, pd.Series) and _is_columns_axis(axis):
            return other  # broadcast across the columns: whole to each chunk
        return from_pandas(other, chunk_size=max(1, len(other)))
    if isinstance(other, pd.Index):
        other = np.asarray(other)
    if isinstance(other, (list, tuple, np.ndarray, pd.api.extensions.ExtensionArray)) or is_list_like(other) and not isinstance(other, (dict, set)):
        from ..tensor.core import Tensor

        if isinstance(other, Tensor):
            if isinstance(t, DataFrame) and other.ndim == 1 and _is_columns_axis(axis):
                return other  # matched with the columns: see ColumnsOp
            return positional_like(t, other)
        arr = np.asarray(other)
        if arr.ndim == 0:
            return arr.item()
        if isinstance(t, DataFrame) and arr.ndim == 1:
            if not _is_columns_axis(axis):
                # pandas matches a 1-d array with the rows (positionally) for axis=0
                n = t.shape[0]
                if not _isnan(n) and len(arr) != n:
                    raise ValueError(f"Unable to coerce to Series, length must be {int(n)}: given {len(arr)}")
                return positional_like(t, other if isinstance(other, np.ndarray) else list(other))
            return arr  # pandas: a 1-d array broadcasts across the columns
        if isinstance(t, DataFrame):
            local = pd.DataFrame(arr, columns=t.columns)
            v = from_pandas(local, chunk_size=max(1, len(local)))
            meta = v.data.meta.set_axis(t.data.meta.index, axis=0)
            return _recut_like(v, t, index_key=t.data.index_key, meta=meta, adopt=True)
        return positional_like(t, other, name=t.name)
    return other


def binary_op(name, left, right, *, flex=False, axis="columns", fill_value=None, reverse=False):
    """``left <op> right`` where either side is a tileable, a scalar or a local
    pandas/numpy value.  ``flex``: pandas' method form (``add``, ``eq``...) with ``axis``
    and ``fill_value``; ``reverse`` calls the reflected method (``radd``...)."""
    if name not in _OPS:
        raise ValueError(f"unknown operator {name!r}")
    lt, rt = is_pandas_tileable(left), is_pandas_tileable(right)
    if lt and not rt:
        right = _prepare_local(left, right, axis)
    elif rt and not lt:
        left = _prepare_local(right, left, axis)
    lt, rt = is_pandas_tileable(left), is_pandas_tileable(right)
    if _is_columns_axis(axis) and _columnwise(left, right):
        return _columns_op(name, left, right, flex=flex, fill_value=fill_value, reverse=reverse)
    if lt and rt:
        if not aligned(left, right):
            cmp_strict = name in _COMPARISONS and not flex
            left, right = align(left, right, require_equal=cmp_strict)
    if flex:
        method = ("r" + name) if reverse else name
        if name in ("and", "or", "xor"):
            raise ValueError(name)
        return map_rows(_flex_kernel, left, right, method, axis, fill_value, name=method)
    return map_rows(_binary_kernel, left, right, name, name=name)


def unary_op(name, obj):
    return map_rows(_unary_kernel, obj, name, name=name)


def _flex(name, reverse=False):
    def method(self, other, axis="columns", level=None, fill_value=None):
        if fill_value is not None and name in _COMPARISONS and isinstance(self, DataFrame):
            raise TypeError(f"DataFrame.{name}() got an unexpected keyword argument 'fill_value'")
        if level is not None:
            raise NotImplementedError("level= is not supported")
        if isinstance(self, Series):
            if axis not in (0, "index", "columns"):
                raise ValueError(f"No axis named {axis} for object type Series")
            axis = "index"
        else:
            if axis not in (0, 1, "index", "columns", "rows"):
                raise ValueError(f"No axis named {axis} for object type DataFrame")
            axis = "index" if axis in (0, "index", "rows") else "columns"
        return binary_op(name, self, other, flex=True, axis=axis, fill_value=fill_value, reverse=reverse)

    method.__name__ = ("r" if reverse else "") + name
    method.__doc__ = f"pandas' ``{method.__name__}`` with index alignment, ``axis`` and ``fill_value``."
    return method


for _n in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow"):
    register_method(DataFrame, Series, name=_n)(_flex(_n))
    register_method(DataFrame, Series, name="r" + _n)(_flex(_n, True))
for _alias, _n in (("div", "truediv"), ("divide", "truediv"), ("multiply", "mul"), ("subtract", "sub"), ("rdiv", None)):
    if _n is None:
        register_method(DataFrame, Series, name=_alias)(_flex("truediv", True))
    else:
        register_method(DataFrame, Series, name=_alias)(_flex(_n))
for _n in ("lt", "le", "gt", "ge", "eq", "ne"):
    register_method(DataFrame, Series, name=_n)(_flex(_n))
del _n, _alias


# ---- pandas and numpy on the other side -------------------------------------------------

#: numpy ufuncs that pandas itself dispatches to its operators (with alignment)
_UFUNC_OPS = {
    np.add: "add", np.subtract: "sub", np.multiply: "mul", np.true_divide: "truediv",
    np.floor_divide: "floordiv", np.remainder: "mod", np.power: "pow",
    np.bitwise_and: "and", np.bitwise_or: "or", np.bitwise_xor: "xor",
    np.less: "lt", np.less_equal: "le", np.greater: "gt", np.greater_equal: "ge",
    np.equal: "eq", np.not_equal: "ne",
}


def _ufunc_kernel(ufunc, kwargs, out_index, *xs):
    res = ufunc(*xs, **kwargs)
    return res if out_index is None else res[out_index]


def array_ufunc(self, ufunc, method, *inputs, **kwargs):
    """numpy's protocol: ``np.log(s)``, ``np.add(df, 1)``, ``ndarray + df`` give md objects,
    computed chunk by chunk with pandas' own ufunc handling (operands aligned on the row
    labels first, as pandas aligns them)."""
    if method != "__call__" or kwargs.get("out") is not None:
        return NotImplemented
    from ..tensor.core import Tensor

    if any(isinstance(x, Tensor) for x in inputs):
        return NotImplemented
    name = _UFUNC_OPS.get(ufunc)
    if name is not None and len(inputs) == 2 and not kwargs:
        return binary_op(name, *inputs)
    first = next(x for x in inputs if is_pandas_tileable(x))
    args = [x if is_pandas_tileable(x) else _prepare_local(first, x, "columns") for x in inputs]
    tiles = [x for x in args if is_pandas_tileable(x)]
    if len(tiles) > 2 or len(tiles) == 2 and isinstance(tiles[0], DataFrame) != isinstance(tiles[1], DataFrame):
        raise NotImplementedError(f"numpy ufunc {ufunc.__name__} on these {len(tiles)} md objects")
    if len(tiles) == 2 and not aligned(*tiles):
        a, b = align(*tiles)
        args = [a if x is tiles[0] else b if x is tiles[1] else x for x in args]
    outs = [None] if ufunc.nout == 1 else list(range(ufunc.nout))
    res = tuple(map_rows(_ufunc_kernel, ufunc, kwargs, k, *args, name=ufunc.__name__) for k in outs)
    return res[0] if ufunc.nout == 1 else res


for _cls in (DataFrame, Series):
    # pandas (>= 2.1) returns NotImplemented from its operators when the other operand has a
    # higher ``__pandas_priority__`` (DataFrame 4000), so ``pd_df + md_df`` runs md's
    # reflected operator; numpy defers to ``__array_ufunc__``
    _cls.__pandas_priority__ = 5000
    _cls.__array_priority__ = 1000
    _cls.__array_ufunc__ = array_ufunc
del _cls
