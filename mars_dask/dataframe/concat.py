"""``md.concat`` of DataFrames and Series along rows (axis 0) or columns (axis 1).

Axis 0 concatenates the chunk lists (lengths may be unknown); every chunk is conformed to
the result's columns and dtypes (pandas' ``join``/upcasting), ``keys=`` adds the outer
index level chunk by chunk, ``ignore_index=True`` gives one ``RangeIndex`` across chunks.

Axis 1 needs row-aligned inputs: objects sharing one partitioning are concatenated chunk by
chunk; otherwise their lengths are made known, every object is re-cut to the first one's
row chunks, and each chunk checks that the row labels are equal (pandas would align
different labels with an outer join; that case raises a ``ValueError`` at execution -
use :func:`merge` with ``left_index=True, right_index=True``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..tiling.core import ensure_known
from ..tiling.tileable import Tileable
from .core import DataFrame, DataFrameOperand, Series, frame_nsplits, infer_meta
from .map import is_pandas_tileable
from .shuffle import relabel_range

__all__ = ["concat"]


def _cast_like(obj, meta):
    from .merge import cast_like

    return cast_like(obj, meta)


def _conform(chunk, meta, key, names):
    """One chunk of an axis-0 concat, shaped and typed as the result ``meta``."""
    if isinstance(meta, pd.DataFrame):
        if isinstance(chunk, pd.Series):
            chunk = chunk.to_frame(0 if chunk.name is None else chunk.name)
        if key is not None:
            chunk = pd.concat([chunk], keys=[key], names=names)
        if list(chunk.columns) != list(meta.columns):
            chunk = chunk.reindex(columns=meta.columns)
        return _cast_like(chunk, meta)
    if key is not None:
        chunk = pd.concat([chunk], keys=[key], names=names)
    if chunk.dtype != meta.dtype:
        chunk = chunk.astype(meta.dtype)
    if chunk.name != meta.name:
        chunk = chunk.rename(meta.name)
    if not isinstance(meta.index, pd.MultiIndex) and chunk.index.dtype != meta.index.dtype:
        chunk = chunk.copy(deep=False)
        chunk.index = chunk.index.astype(meta.index.dtype)
    return chunk


def _slice_concat(parts):
    """Rows ``start:stop`` of each part, concatenated (a re-cut row chunk)."""
    pieces = [p.iloc[a:b] for p, a, b in parts]
    return pieces[0] if len(pieces) == 1 else pd.concat(pieces)


def _concat_columns(parts, kwargs):
    first = parts[0].index
    for p in parts[1:]:
        if not p.index.equals(first):
            raise ValueError(
                "concat(axis=1) of objects whose row labels differ is not supported "
                "(pandas would outer-join them); use merge(left_index=True, right_index=True)"
            )
    return pd.concat(parts, axis=1, **kwargs)


def recut_rows(op, data, target, tag: str) -> list:
    """Chunks of ``data`` (known row lengths) re-cut to the row lengths ``target``."""
    src = np.concatenate([[0], np.cumsum(data.nsplits[0])]).astype(int)
    if tuple(data.nsplits[0]) == tuple(target):
        return list(data.chunks)
    out = []
    start = 0
    for i, n in enumerate(target):
        stop = start + n
        parts = []
        for k, c in enumerate(data.chunks):
            lo, hi = max(start, src[k]), min(stop, src[k + 1])
            if lo < hi:
                parts.append((c, int(lo - src[k]), int(hi - src[k])))
        if not parts:
            parts = [(data.chunks[0], 0, 0)]
        out.append(op.new_chunk(i, n, _slice_concat, (parts,), meta=data.meta, suffix=f"-recut-{tag}"))
        start = stop
    return out


class DataFrameConcat(DataFrameOperand):
    _op_name = "concat"

    def tile(self):
        meta = self.output.meta
        if self.axis == 0:
            chunks = []
            for k, t in enumerate(self.inputs):
                key = self.keys[k] if self.keys is not None else None
                for c in t.chunks:
                    i = len(chunks)
                    suffix = "-partial" if self.ignore_index else ""
                    chunks.append(self.new_chunk(i, c.shape[0], _conform, (c, meta, key, self.names), blockwise=True, suffix=suffix))
            if self.ignore_index:
                chunks = relabel_range(self, chunks)
            return [(chunks, frame_nsplits(meta, [c.shape[0] for c in chunks]))]
        inputs = self.inputs
        if len({t.index_key for t in inputs}) == 1:
            per_input = [list(t.chunks) for t in inputs]
            rows = inputs[0].nsplits[0]
        else:
            yield from ensure_known(*inputs)
            lengths = {t.shape[0] for t in inputs}
            if len(lengths) != 1:
                raise ValueError(
                    f"concat(axis=1) of objects with different lengths {sorted(lengths)} is not supported "
                    "(pandas would outer-join their labels); use merge(left_index=True, right_index=True)"
                )
            rows = inputs[0].nsplits[0]
            per_input = [recut_rows(self, t, rows, str(k)) for k, t in enumerate(inputs)]
        chunks = [
            self.new_chunk(i, rows[i], _concat_columns, ([p[i] for p in per_input], self.kwargs), blockwise=True)
            for i in range(len(rows))
        ]
        return [(chunks, frame_nsplits(meta, rows))]


def _to_tileable(o):
    if is_pandas_tileable(o) and isinstance(o, (DataFrame, Series)):
        return o
    if isinstance(o, (pd.DataFrame, pd.Series)):
        from .datasource import from_pandas

        return from_pandas(o, chunk_size=max(1, len(o)))
    raise TypeError(f"cannot concatenate object of type '{type(o).__name__}'; only Series and DataFrame objs are valid")


def concat(objs, *, axis=0, join="outer", ignore_index=False, keys=None, levels=None, names=None,
           verify_integrity=False, sort=False, copy=None):
    """``pandas.concat`` for DataFrames and Series (module notes: axis 1 needs equal row labels)."""
    if isinstance(objs, (pd.DataFrame, pd.Series, Tileable)) or isinstance(objs, str):
        raise TypeError(
            "first argument must be an iterable of pandas objects, you passed an object of type "
            f'"{type(objs).__name__}"'
        )
    if isinstance(objs, dict):
        if keys is None:
            keys = list(objs.keys())
        objs = [objs[k] for k in keys]
    objs = list(objs)
    if keys is not None:
        keys = list(keys)
        pairs = [(k, o) for k, o in zip(keys, objs) if o is not None]
        keys = [k for k, _ in pairs]
        objs = [o for _, o in pairs]
    else:
        objs = [o for o in objs if o is not None]
    if not objs:
        raise ValueError("No objects to concatenate")
    if axis not in (0, 1, "index", "columns", "rows"):
        raise ValueError(f"No axis named {axis!r}")
    axis = 0 if axis in (0, "index", "rows") else 1
    if join not in ("inner", "outer"):
        raise ValueError("Only can inner (intersect) or outer (union) join the other axis")
    if verify_integrity:
        raise NotImplementedError("concat(verify_integrity=True) is not supported")
    if levels is not None:
        raise NotImplementedError("concat(levels=) is not supported")
    objs = [_to_tileable(o) for o in objs]
    metas = [o.data.meta for o in objs]
    kwargs = dict(axis=axis, join=join, ignore_index=ignore_index, keys=keys, names=names, sort=sort)
    if axis == 0:
        meta = infer_meta(lambda *ms: pd.concat(list(ms), **kwargs), *metas)
    else:  # rows are aligned by label: stand-ins with one shared index
        from ._meta import meta_nonempty

        ne = [meta_nonempty(m) for m in metas]
        n = min(len(x) for x in ne)
        ne = [x.iloc[:n].set_axis(ne[0].index[:n], axis=0) for x in ne]
        meta = pd.concat(ne, **kwargs).iloc[:0]
    if axis == 0:
        op = DataFrameConcat([o.data for o in objs], axis=0, keys=keys, names=names, ignore_index=bool(ignore_index), join=join, sort=sort)
        nrows = sum(o.shape[0] for o in objs)
        return op.new_output(meta, nrows, range_index=bool(ignore_index))
    ckw = dict(join=join, ignore_index=ignore_index, keys=keys, names=names, sort=sort)
    op = DataFrameConcat([o.data for o in objs], axis=1, kwargs=ckw)
    first = objs[0].data
    return op.new_output(meta, first.shape[0], index_key=first.index_key, range_index=first.range_index)
