"""Row-chunk-wise operations: the engine behind column selection, arithmetic between
aligned objects, ``map_chunk``, filters and most element-wise methods.

:class:`DataFrameMap` applies ``func`` to the aligned row chunks of its tileable inputs
(all sharing one ``index_key``: same labels in the same chunks) together with constant
arguments.  Output metadata comes from running ``func`` on non-empty stand-ins.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..tiling.tileable import Tileable
from .core import DataFrame, DataFrameOperand, Series, _PandasData, frame_nsplits, infer_meta, nan, register_method

__all__: list[str] = []


class DataFrameMap(DataFrameOperand):
    """``func(*args, **kwargs)`` chunk by chunk over row-aligned tileable arguments.

    ``rows``: ``"same"`` (the output has the inputs' row lengths) or ``"unknown"`` (a filter:
    lengths are only known after execution).
    """

    _op_name = "map-chunk"

    def __init__(self, func, args, kwargs, rows="same", chunk_index=False):
        tileables = [a.tileable.data if isinstance(a, AllChunks) else a.data for a in args
                     if isinstance(a, (Tileable, AllChunks))]
        spec = [
            ("a", None) if isinstance(a, AllChunks) else ("s", None) if is_scalar_tileable(a)
            else ("t", None) if isinstance(a, Tileable) else ("c", a)
            for a in args
        ]
        super().__init__(tileables, func=func, args_spec=spec, kwargs=kwargs or {}, rows=rows,
                         chunk_index=chunk_index)

    def tile(self):
        inputs = self.inputs
        kinds = [k for k, _ in self.args_spec if k != "c"]
        rowwise = [t for t, k in zip(inputs, kinds) if k == "t"]
        n = len(rowwise[0].chunks)
        for t in rowwise[1:]:
            if len(t.chunks) != n:
                raise ValueError("row-aligned inputs have different numbers of chunks")
        out = self.output
        meta = out.meta if out is not None else None
        scalars = [i for i, (k, _) in enumerate(self.args_spec) if k == "s"]
        func = self.func
        if scalars:  # 0-d tileables: their one chunk goes to every row chunk, as a scalar
            func = _ScalarArgs(func, scalars)
        chunks = []
        for i in range(n):
            per_input = [t.chunks[i] if k == "t" else list(t.chunks) if k == "a" else t.chunks[0]
                         for t, k in zip(inputs, kinds)]
            it = iter(per_input)
            args = [next(it) if kind != "c" else val for kind, val in self.args_spec]
            in_chunks = [c for p in per_input for c in (p if isinstance(p, list) else [p])]
            first = next(c for c, k in zip(per_input, kinds) if k == "t")
            nrows = first.shape[0] if self.rows == "same" else nan
            kwargs = self.kwargs
            if self.chunk_index:
                kwargs = {**kwargs, "chunk_index": (i, 0) if isinstance(rowwise[0].meta, pd.DataFrame) else (i,)}
            chunks.append(self.new_chunk(i, nrows, func, args, kwargs, inputs=in_chunks, blockwise=True, meta=meta))
        rows = tuple(c.shape[0] for c in chunks)
        return [(chunks, frame_nsplits(meta, rows))]


class AllChunks:
    """Marks a map_rows argument whose chunks (all of them, as a list of their results) go
    to every row chunk: a small tileable of values (``isin`` values, labels to drop), of
    any kind and partitioning, never gathered into one object on the client."""

    __slots__ = ("tileable",)

    def __init__(self, tileable):
        self.tileable = tileable

    def sample(self):
        meta = getattr(self.tileable.data, "meta", None)
        if meta is not None:
            from ._meta import meta_nonempty

            return [meta_nonempty(meta)]
        return [np.ones(1, dtype=getattr(self.tileable, "dtype", None) or object)]


class _ScalarArgs:
    """``func`` with the 0-d arrays at ``positions`` of its arguments turned into numpy
    scalars (what pandas takes as a fill value, a bound, a new column's value...)."""

    __slots__ = ("func", "positions")

    def __init__(self, func, positions):
        self.func = func
        self.positions = positions

    def __call__(self, *args, **kwargs):
        args = list(args)
        for i in self.positions:
            args[i] = as_scalar(args[i])
        return self.func(*args, **kwargs)

    def __reduce__(self):
        return (_ScalarArgs, (self.func, self.positions))


def as_scalar(x):
    """The scalar held by a 0-d tileable's chunk result (a 0-d array or already a scalar)."""
    if isinstance(x, np.ndarray) and x.ndim == 0:
        return x[()]
    return x


def is_scalar_tileable(x) -> bool:
    """A 0-d tileable (``df["a"].mean()``, ``mt.tensor(3)``): an operand input whose one
    chunk is passed to every row chunk."""
    return isinstance(x, Tileable) and not isinstance(x.data, _PandasData) and len(x.shape) == 0


def _sample_scalar(t):
    """A stand-in value of a 0-d tileable's dtype, for metadata inference."""
    dt = np.dtype(getattr(t, "dtype", None) or object)
    if dt.kind in "biufc":
        return np.ones((), dt)[()]
    if dt.kind in "mM":
        return np.zeros((), dt)[()]
    return np.zeros((), dt)[()] if dt.kind != "O" else 1


def aligned(*tileables) -> bool:
    """Do these tileables have the same labels in the same row chunks?"""
    keys = {t.data.index_key for t in tileables}
    return len(keys) == 1


def infer_meta_of(func, *args, _empty_fallback=True, **kwargs):
    """Metadata of ``func(*args, **kwargs)`` where the tileables among the arguments are
    replaced by non-empty stand-ins of their metas (0-d tileables by a value of their
    dtype); local pandas constants are used as they are (their labels matter, e.g. for
    alignment)."""
    pos = [i for i, a in enumerate(args) if is_pandas_tileable(a)]
    kpos = [k for k, v in kwargs.items() if is_pandas_tileable(v)]
    args = [_sample_scalar(a) if is_scalar_tileable(a) else a.sample() if isinstance(a, AllChunks) else a
            for a in args]

    def run(*metas):
        full = list(args)
        for i, m in zip(pos, metas):
            full[i] = m
        kw = dict(kwargs)
        for k, m in zip(kpos, metas[len(pos):]):
            kw[k] = m
        return func(*full, **kw)

    return infer_meta(run, *[args[i].data.meta for i in pos], *[kwargs[k].data.meta for k in kpos],
                      _empty_fallback=_empty_fallback)


def map_rows(func, *args, meta=None, kwargs=None, rows="same", preserves_index=True, index_key=None, name="map-chunk",
             chunk_index=False):
    """Apply ``func`` to row-aligned chunks of the tileables among ``args`` (all must share
    one ``index_key``); 0-d tileables are passed to every chunk as scalars, constants are
    passed through.  ``chunk_index``: ``func`` also gets ``chunk_index=`` (the chunk's
    grid index).  Returns the output handle."""
    tileables = [a for a in args if isinstance(a, Tileable) and not is_scalar_tileable(a)]
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
    op = DataFrameMap(func, args, kwargs, rows=rows, chunk_index=chunk_index)
    op._op_name = name
    nrows = first.shape[0] if rows == "same" else nan
    keep = preserves_index and rows == "same"
    return op.new_output(
        meta,
        nrows,
        index_key=first.index_key if keep else index_key,
        range_index=first.range_index if keep else False,
    )


def _output_meta(obj, output_type, dtypes, index):
    """Mars's ``output_type=``/``dtypes=``/``index=`` as an empty pandas object."""
    idx = obj.data.meta.index[:0] if index is None else pd.Index(index)[:0]
    if output_type in ("dataframe", "df"):
        if dtypes is None:
            raise TypeError("map_chunk(output_type='dataframe') needs dtypes= as well")
        dtypes = pd.Series(dtypes) if not isinstance(dtypes, pd.Series) else dtypes
        return pd.DataFrame({c: pd.Series([], dtype=dt) for c, dt in dtypes.items()}, index=idx,
                            columns=dtypes.index)
    if output_type == "series":
        if isinstance(dtypes, pd.Series):
            dtype, name = dtypes.iloc[0], dtypes.name
        else:
            dtype, name = (object if dtypes is None else dtypes), None
        return pd.Series([], dtype=dtype, name=name, index=idx)
    raise ValueError(f"output_type must be 'dataframe' or 'series', got {output_type!r}")


class _ChunkCall:
    """``func(chunk, *args, **kwargs)``; an empty chunk gives ``meta`` without calling
    ``func`` (Mars's rule: user functions are not asked to handle empty chunks)."""

    __slots__ = ("func", "meta")

    def __init__(self, func, meta):
        self.func = func
        self.meta = meta

    def __call__(self, chunk, *args, **kwargs):
        if self.meta is not None and len(chunk) == 0:
            return self.meta.iloc[:0] if not isinstance(self.meta, pd.Index) else self.meta[:0]
        return self.func(chunk, *args, **kwargs)

    def __reduce__(self):
        return (_ChunkCall, (self.func, self.meta))


@register_method(DataFrame, Series)
def map_chunk(self, func, args=(), *, output_type=None, output_types=None, index=None, dtypes=None,
              with_chunk_index=False, meta=None, preserves_index=False, **kwargs):
    """Mars's ``map_chunk``: ``func(chunk, *args, **kwargs)`` on each row chunk.

    The output structure comes from running ``func`` on a small stand-in, or from Mars's
    ``output_type=`` (``"dataframe"``/``"series"``) with ``dtypes=`` (a Series of column
    dtypes for a frame; a dtype, or a one-element Series whose name is the result's name,
    for a Series) and ``index=`` (the output's index type), or from ``meta=`` (an empty
    pandas object).  ``with_chunk_index=True`` passes ``chunk_index=`` (the chunk's grid
    index) to ``func``.  Empty chunks give an empty result without calling ``func``, as in
    Mars.  Row counts are unknown until executed unless ``preserves_index=True``: the
    caller promises ``func`` keeps the rows and their labels, so the result stays aligned
    with its input.  ``kwargs=`` (a dict) is accepted as well as keyword arguments.
    """
    if output_types:
        output_type = output_types[0]
    kwargs = {**(kwargs.pop("kwargs", None) or {}), **kwargs}
    if isinstance(args, (list, tuple)):
        args = tuple(args)
    else:
        args = (args,)
    if meta is None and (output_type is not None and (dtypes is not None or output_type == "series")):
        meta = _output_meta(self, output_type, dtypes, index)
    if meta is None:
        kw = {**kwargs, "chunk_index": (0, 0) if isinstance(self, DataFrame) else (0,)} if with_chunk_index else kwargs
        try:
            meta = infer_meta_of(func, self, *args, _empty_fallback=False, **kw)
        except Exception:  # noqa: BLE001 - the user function may raise anything on sample data
            if output_type is None and isinstance(self, DataFrame):
                raise TypeError(
                    "Cannot determine `output_type`, you have to specify it as `dataframe` or `series`, "
                    "for dataframe, `dtypes` is required as well if output_type='dataframe'"
                ) from None
            meta = _output_meta(self, "series", None, index)
        if index is not None and isinstance(meta, (pd.DataFrame, pd.Series)):
            meta = meta.set_axis(pd.Index(index)[:0], axis=0)
    return map_rows(
        _ChunkCall(func, meta), self, *args, meta=meta, kwargs=kwargs,
        rows="same" if preserves_index else "unknown", preserves_index=preserves_index,
        chunk_index=with_chunk_index, name="map-chunk",
    )


def _filter_kernel(df, mask):
    return df[mask]


def boolean_filter(obj, mask):
    """``obj[mask]`` for a boolean Series ``mask`` aligned with ``obj``: row lengths become
    unknown until executed (iterative tiling resolves them when needed)."""
    return map_rows(_filter_kernel, obj, mask, meta=obj.data.meta, rows="unknown", preserves_index=False, name="filter")


def is_pandas_tileable(x) -> bool:
    return isinstance(x, Tileable) and isinstance(x.data, _PandasData)

