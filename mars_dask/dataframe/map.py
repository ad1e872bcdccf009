"""Row-chunk-wise operations: the engine behind column selection, arithmetic between
aligned objects, ``map_chunk``, filters and most element-wise methods.

:class:`DataFrameMap` applies ``func`` to the aligned row chunks of its tileable inputs
(all sharing one ``index_key``: same labels in the same chunks) together with constant
arguments.  Output metadata comes from running ``func`` on non-empty stand-ins.
"""

from __future__ import annotations

from ..tiling.tileable import Tileable
from .core import DataFrameOperand, _PandasData, frame_nsplits, infer_meta, nan

__all__ = ["map_chunk"]


class DataFrameMap(DataFrameOperand):
    """``func(*args, **kwargs)`` chunk by chunk over row-aligned tileable arguments.

    ``rows``: ``"same"`` (the output has the inputs' row lengths) or ``"unknown"`` (a filter:
    lengths are only known after execution).
    """

    _op_name = "map-chunk"

    def __init__(self, func, args, kwargs, rows="same"):
        tileables = [a.data for a in args if isinstance(a, Tileable)]
        spec = [("t", None) if isinstance(a, Tileable) else ("c", a) for a in args]
        super().__init__(tileables, func=func, args_spec=spec, kwargs=kwargs or {}, rows=rows)

    def tile(self):
        inputs = self.inputs
        first = inputs[0]
        n = len(first.chunks)
        for t in inputs[1:]:
            if len(t.chunks) != n:
                raise ValueError("row-aligned inputs have different numbers of chunks")
        out = self.output
        meta = out.meta if out is not None else None
        chunks = []
        for i in range(n):
            in_chunks = [t.chunks[i] for t in inputs]
            it = iter(in_chunks)
            args = [next(it) if kind == "t" else val for kind, val in self.args_spec]
            nrows = in_chunks[0].shape[0] if self.rows == "same" else nan
            chunks.append(self.new_chunk(i, nrows, self.func, args, self.kwargs, inputs=in_chunks, blockwise=True, meta=meta))
        rows = tuple(c.shape[0] for c in chunks)
        return [(chunks, frame_nsplits(meta, rows))]


def aligned(*tileables) -> bool:
    """Do these tileables have the same labels in the same row chunks?"""
    keys = {t.data.index_key for t in tileables}
    return len(keys) == 1


def infer_meta_of(func, *args, **kwargs):
    """Metadata of ``func(*args, **kwargs)`` where the tileables among the arguments are
    replaced by non-empty stand-ins of their metas; local pandas constants are used as they
    are (their labels matter, e.g. for alignment)."""
    pos = [i for i, a in enumerate(args) if is_pandas_tileable(a)]
    kpos = [k for k, v in kwargs.items() if is_pandas_tileable(v)]

    def run(*metas):
        full = list(args)
        for i, m in zip(pos, metas):
            full[i] = m
        kw = dict(kwargs)
        for k, m in zip(kpos, metas[len(pos):]):
            kw[k] = m
        return func(*full, **kw)

    return infer_meta(run, *[args[i].data.meta for i in pos], *[kwargs[k].data.meta for k in kpos])


def map_rows(func, *args, meta=None, kwargs=None, rows="same", preserves_index=True, index_key=None, name="map-chunk"):
    """Apply ``func`` to row-aligned chunks of the tileables among ``args`` (all must share
    one ``index_key``); constants are passed through.  Returns the output handle."""
    tileables = [a for a in args if isinstance(a, Tileable)]
    if not tileables:
        raise TypeError("map_rows needs at least one DataFrame, Series or Index argument")
    if not aligned(*tileables):
        raise ValueError(
            "these objects have different indexes or row partitioning; align them first "
            "(arithmetic between such objects goes through mars_dask.dataframe.arithmetic)"
        )
    if meta is None:
        meta = infer_meta_of(func, *args, **(kwargs or {}))
    first = tileables[0].data
    op = DataFrameMap(func, args, kwargs, rows=rows)
    op._op_name = name
    nrows = first.shape[0] if rows == "same" else nan
    keep = preserves_index and rows == "same"
    return op.new_output(
        meta,
        nrows,
        index_key=first.index_key if keep else index_key,
        range_index=first.range_index if keep else False,
    )


def map_chunk(func, *args, kwargs=None, meta=None, preserves_index=False):
    """Mars's ``map_chunk``: ``func(chunk, *args, **kwargs)`` on each row chunk.

    ``meta`` (an empty pandas object) skips running ``func`` on a stand-in to learn the
    output's structure.  With ``preserves_index=True`` the caller promises ``func`` keeps the
    rows and their labels, so the result stays aligned with its input.
    """
    return map_rows(
        func,
        *args,
        meta=meta,
        kwargs=kwargs,
        rows="same" if preserves_index else "unknown",
        preserves_index=preserves_index,
    )


def _filter_kernel(df, mask):
    return df[mask]


def boolean_filter(obj, mask):
    """``obj[mask]`` for a boolean Series ``mask`` aligned with ``obj``: row lengths become
    unknown until executed (iterative tiling resolves them when needed)."""
    return map_rows(_filter_kernel, obj, mask, meta=obj.data.meta, rows="unknown", preserves_index=False, name="filter")


def is_pandas_tileable(x) -> bool:
    return isinstance(x, Tileable) and isinstance(x.data, _PandasData)

