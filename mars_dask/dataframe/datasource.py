"""DataFrame/Series/Index from local pandas or numpy data, and from mars tensors."""

from __future__ import annotations

import numbers

import numpy as np
import pandas as pd
from dask.utils import parse_bytes

from .. import config
from ..tiling.core import ensure_known, new_key
from .core import (
    DataFrame, DataFrameOperand, Index, Series, empty_like_meta, frame_nsplits, row_nbytes,
)

__all__: list[str] = []


def row_chunks(nrows: int, chunk_size, meta) -> tuple:
    """Row lengths for ``chunk_size`` (rows per chunk, an explicit tuple of lengths, or None
    for automatic: chunks of about ``mars-dask.tiling.chunk-store-limit`` bytes)."""
    if isinstance(chunk_size, tuple) and len(chunk_size) == 2 and not isinstance(chunk_size[0], tuple):
        chunk_size = chunk_size[0]  # Mars accepts (rows, cols); columns are never split here
    if isinstance(chunk_size, (tuple, list)):
        sizes = tuple(int(s) for s in (chunk_size[0] if isinstance(chunk_size[0], (tuple, list)) else chunk_size))
        if sum(sizes) != nrows or any(s < 0 for s in sizes):
            raise ValueError(f"chunk_size {chunk_size!r} does not add up to the {nrows} rows")
        return sizes
    if chunk_size is None:
        limit = parse_bytes(config.get("tiling.chunk-store-limit", "128MiB"))
        chunk_size = max(1, int(limit // max(1.0, row_nbytes(meta))))
    if not isinstance(chunk_size, numbers.Integral):
        raise TypeError(f"chunk_size must be an int, got {chunk_size!r}")
    if chunk_size <= 0:
        raise ValueError(f"chunk_size must be positive, got {chunk_size}")
    if nrows == 0:
        return (0,)
    n, rem = divmod(nrows, int(chunk_size))
    return (int(chunk_size),) * n + ((rem,) if rem else ())


def is_default_range(index: pd.Index) -> bool:
    return isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1


def _identity(x):
    return x


class PandasDataSource(DataFrameOperand):
    """Local pandas data cut into row chunks; each chunk's rows travel in the graph."""

    _op_name = "from-pandas"

    def __init__(self, data, rows):
        super().__init__([], rows=rows)
        self.data = data

    def tile(self):
        out = self.output
        offs = np.concatenate([[0], np.cumsum(self.rows)]).astype(int)
        chunks = []
        for i, n in enumerate(self.rows):
            part = self.data.iloc[offs[i] : offs[i + 1]] if not isinstance(self.data, pd.Index) else self.data[offs[i] : offs[i + 1]]
            chunks.append(self.new_chunk(i, n, _identity, (part,)))
        return [(chunks, frame_nsplits(out.meta, self.rows))]


def from_pandas(obj, chunk_size=None):
    """A DataFrame/Series/Index tileable over a local pandas object."""
    if not isinstance(obj, (pd.DataFrame, pd.Series, pd.Index)):
        raise TypeError(f"from_pandas needs a pandas DataFrame, Series or Index, got {type(obj).__name__}")
    meta = empty_like_meta(obj)
    rows = row_chunks(len(obj), chunk_size, meta)
    key = new_key("from-pandas", obj, rows)
    index = obj if isinstance(obj, pd.Index) else obj.index
    index_key = new_key("index", index, rows)
    op = PandasDataSource(obj, rows)
    return op.new_output(meta, len(obj), index_key=index_key, range_index=is_default_range(index), key=key)


# ---- from tensors -----------------------------------------------------------------------


def _tensor_to_frame(arr, start, columns, index_name, kind, dtype, name):
    index = pd.RangeIndex(start, start + len(arr), name=index_name)
    if kind == "series":
        return pd.Series(arr, index=index, name=name, dtype=dtype)
    if kind == "index":
        return pd.Index(arr, name=name, dtype=dtype)
    return pd.DataFrame(arr, index=index, columns=columns, dtype=dtype)


class FromTensor(DataFrameOperand):
    """Row chunks of a 1-d/2-d tensor as a DataFrame/Series/Index with a default
    RangeIndex (global offsets are needed, so row lengths must be known)."""

    _op_name = "from-tensor"

    def tile(self):
        from ..tensor.rechunk import TensorRechunk
        from ..tiling.tile import tile as tile_now

        (t,) = self.inputs
        yield from ensure_known(t)
        if t.ndim == 2 and len(t.nsplits[1]) != 1:
            op = TensorRechunk([t], chunk_size=(t.nsplits[0], (t.shape[1],)))
            t = op.new_tensor(t.shape, t.dtype).data
            tile_now([t], None)
        out = self.output
        rows = t.nsplits[0]
        chunks = []
        start = 0
        for i, n in enumerate(rows):
            src = t.chunk_at((i, 0) if t.ndim == 2 else (i,))
            chunks.append(self.new_chunk(
                i, n, _tensor_to_frame,
                (src, start, self.columns, None, self.kind, self.dtype, self.name),
            ))
            start += n
        return [(chunks, frame_nsplits(out.meta, rows))]


def from_tensor(t, kind: str, columns=None, dtype=None, name=None):
    if t.ndim not in ((1, 2) if kind == "frame" else (1,)):
        raise ValueError(f"a {kind} needs a {'1-d or 2-d' if kind == 'frame' else '1-d'} tensor, got {t.ndim}-d")
    ncols = 1 if t.ndim == 1 else t.shape[1]
    sample = np.zeros((1, ncols) if kind == "frame" else (1,), dtype=t.dtype)
    if kind == "frame" and t.ndim == 1:
        sample = sample[:, 0]
    meta = _tensor_to_frame(sample, 0, columns, None, kind, dtype, name).iloc[:0] if kind != "index" else _tensor_to_frame(sample, 0, None, None, kind, dtype, name)[:0]
    if kind == "frame":
        columns = meta.columns
    op = FromTensor([t.data], kind=kind, columns=columns, dtype=dtype, name=name)
    return op.new_output(meta, t.shape[0], range_index=kind != "index")


# ---- the constructors behind md.DataFrame(...), md.Series(...), md.Index(...) -------------


def from_pandas_like(cls, data=None, index=None, columns=None, dtype=None, copy=None, name=None, chunk_size=None, **kwargs):
    """Build a DataFrame/Series/Index tileable as pandas' constructor would build the object."""
    from ..tensor.core import Tensor

    kind = {DataFrame: "frame", Series: "series", Index: "index"}[cls]
    if isinstance(data, Tensor):
        if index is not None:
            raise NotImplementedError("index= with tensor data is not supported; set_index afterwards")
        return from_tensor(data, kind, columns=columns, dtype=dtype, name=name)
    if kind == "frame":
        obj = data if isinstance(data, pd.DataFrame) and index is None and columns is None and dtype is None else pd.DataFrame(data, index=index, columns=columns, dtype=dtype, copy=copy)
    elif kind == "series":
        obj = data if isinstance(data, pd.Series) and index is None and dtype is None and name is None else pd.Series(data, index=index, dtype=dtype, name=name, copy=copy)
    else:
        obj = data if isinstance(data, pd.Index) and dtype is None and name is None else pd.Index(data, dtype=dtype, name=name)
    return from_pandas(obj, chunk_size=chunk_size)

