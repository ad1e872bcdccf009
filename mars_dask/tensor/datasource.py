"""Tensor creation: from numpy data, constant fills, ranges, and conversion to/from dask."""

from __future__ import annotations

import numpy as np

from ..tiling.core import new_key, random_key
from .core import Tensor, TensorOperand
from .utils import chunk_grid, chunk_shape_at, normalize_chunk_size, offsets

__all__ = [
    "tensor", "array", "asarray", "full", "ones", "zeros", "empty", "full_like", "ones_like",
    "zeros_like", "empty_like", "from_dask",
]


def _slice_data(data, slices):
    return data[slices]


def _copy(x):
    return np.array(x, copy=True)


class ArrayDataSource(TensorOperand):
    """Local numpy data cut into chunks; each chunk's slice travels in the graph."""

    _op_name = "tensor"

    def __init__(self, data: np.ndarray, chunk_size):
        super().__init__([], chunk_size=chunk_size)
        self.data = data

    def tile(self):
        out = self.output
        nsplits = normalize_chunk_size(out.shape, self.chunk_size, out.dtype.itemsize)
        offs = [offsets(s) for s in nsplits]
        chunks = []
        for idx in chunk_grid(nsplits):
            sl = tuple(slice(o[i], o[i + 1]) for o, i in zip(offs, idx))
            part = np.ascontiguousarray(self.data[sl]) if self.data.ndim else self.data
            chunks.append(self.new_chunk(idx, chunk_shape_at(nsplits, idx), _copy, (part,)))
        return [(chunks, nsplits)]


def tensor(data=None, dtype=None, order="K", chunk_size=None, gpu=None, sparse=False) -> Tensor:
    """A tensor from array-like ``data`` (numpy array, nested lists, scalar, or Tensor)."""
    from .core import Tensor as _T

    if isinstance(data, _T):
        return data.astype(dtype) if dtype is not None and np.dtype(dtype) != data.dtype else data
    if hasattr(data, "__dask_graph__") and hasattr(data, "chunks") and hasattr(data, "dtype"):
        return from_dask(data)
    arr = np.array(data, dtype=dtype, order="C" if order in ("K", "A") else order)
    if arr.dtype == object:
        raise TypeError("object dtype tensors are not supported")
    normalize_chunk_size(arr.shape, chunk_size, arr.dtype.itemsize)  # validate now
    op = ArrayDataSource(arr, chunk_size)
    return op.new_tensor(arr.shape, arr.dtype, key=new_key("tensor", arr, chunk_size))


array = tensor


def asarray(x, dtype=None, order=None, chunk_size=None) -> Tensor:
    if isinstance(x, Tensor) and (dtype is None or np.dtype(dtype) == x.dtype):
        return x
    return tensor(x, dtype=dtype, chunk_size=chunk_size)


# ---- constant fills -------------------------------------------------------------------


def _full_kernel(shape, fill_value, dtype, order):
    return np.full(shape, fill_value, dtype=dtype, order=order)


def _empty_kernel(shape, dtype, order):
    return np.empty(shape, dtype=dtype, order=order)


class TensorFull(TensorOperand):
    _op_name = "full"

    def tile(self):
        out = self.output
        nsplits = normalize_chunk_size(out.shape, self.chunk_size, out.dtype.itemsize)
        chunks = []
        for idx in chunk_grid(nsplits):
            shape = chunk_shape_at(nsplits, idx)
            if self.fill_value is None:
                c = self.new_chunk(idx, shape, _empty_kernel, (shape, out.dtype, self.order))
            else:
                c = self.new_chunk(idx, shape, _full_kernel, (shape, self.fill_value, out.dtype, self.order))
            chunks.append(c)
        return [(chunks, nsplits)]


def _normalize_shape(shape) -> tuple:
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    try:
        shape = tuple(int(s) for s in shape)
    except TypeError:
        raise TypeError(f"shape must be an int or a sequence of ints, got {shape!r}") from None
    if any(s < 0 for s in shape):
        raise ValueError(f"negative dimensions are not allowed: {shape}")
    return shape


def full(shape, fill_value, dtype=None, chunk_size=None, order="C", gpu=None, sparse=False) -> Tensor:
    shape = _normalize_shape(shape)
    if dtype is None:
        dtype = np.array(fill_value).dtype
    dtype = np.dtype(dtype)
    normalize_chunk_size(shape, chunk_size, dtype.itemsize)
    op = TensorFull([], fill_value=fill_value, chunk_size=chunk_size, order=order)
    return op.new_tensor(shape, dtype)


def ones(shape, dtype=None, chunk_size=None, order="C", gpu=None, sparse=False) -> Tensor:
    return full(shape, 1, dtype=dtype or np.float64, chunk_size=chunk_size, order=order)


def zeros(shape, dtype=None, chunk_size=None, order="C", gpu=None, sparse=False) -> Tensor:
    return full(shape, 0, dtype=dtype or np.float64, chunk_size=chunk_size, order=order)


def empty(shape, dtype=None, chunk_size=None, order="C", gpu=None, sparse=False) -> Tensor:
    shape = _normalize_shape(shape)
    dtype = np.dtype(dtype or np.float64)
    normalize_chunk_size(shape, chunk_size, dtype.itemsize)
    op = TensorFull([], fill_value=None, chunk_size=chunk_size, order=order)
    return op.new_tensor(shape, dtype, key=random_key("empty"))


def _like_args(a, dtype, shape, chunk_size):
    shape = a.shape if shape is None else shape
    dtype = a.dtype if dtype is None else dtype
    if chunk_size is None and isinstance(a, Tensor) and a.nsplits is not None and tuple(shape) == tuple(a.shape):
        chunk_size = a.nsplits
    return shape, dtype, chunk_size


def full_like(a, fill_value, dtype=None, chunk_size=None, shape=None, **kw) -> Tensor:
    shape, dtype, chunk_size = _like_args(a, dtype, shape, chunk_size)
    return full(shape, fill_value, dtype=dtype, chunk_size=chunk_size)


def ones_like(a, dtype=None, chunk_size=None, shape=None, **kw) -> Tensor:
    return full_like(a, 1, dtype=dtype, chunk_size=chunk_size, shape=shape)


def zeros_like(a, dtype=None, chunk_size=None, shape=None, **kw) -> Tensor:
    return full_like(a, 0, dtype=dtype, chunk_size=chunk_size, shape=shape)


def empty_like(a, dtype=None, chunk_size=None, shape=None, **kw) -> Tensor:
    shape, dtype, chunk_size = _like_args(a, dtype, shape, chunk_size)
    return empty(shape, dtype=dtype, chunk_size=chunk_size)


# ---- dask interop ---------------------------------------------------------------------


class FromDask(TensorOperand):
    """Chunks taken from a ``dask.array.Array``: its graph is merged into ours."""

    _op_name = "from-dask"

    def __init__(self, darr):
        super().__init__([])
        self.darr = darr

    def tile(self):
        from dask._task_spec import convert_legacy_graph

        darr = self.darr
        nsplits = darr.chunks
        dsk = convert_legacy_graph(dict(darr.__dask_graph__()))
        # one chunk per dask key: an identity over the dask task (inlined by the emitter)
        from ..tiling.core import Chunk
        from .utils import nbytes_of

        nodes: dict = {}

        def node(key):
            if key not in nodes:
                task = dsk[key]
                deps = [node(d) for d in task.dependencies]
                nodes[key] = Chunk(
                    key, (), (float("nan"),), _run_task, ((task,), deps, list(task.dependencies)), inputs=deps
                )
            return nodes[key]

        chunks = []
        for idx in chunk_grid(nsplits):
            shape = chunk_shape_at(nsplits, idx)
            src = node((darr.name, *idx))
            chunks.append(self.new_chunk(idx, shape, _identity, (src,), inputs=[src]))
        return [(chunks, nsplits)]


def _identity(x):
    return x


def _run_task(boxed_task, dep_values, dep_keys):
    # the dask Task travels boxed in a tuple so that it is not run inline as a nested task
    return boxed_task[0](dict(zip(dep_keys, dep_values)))


def from_dask(x) -> Tensor:
    """A tensor computing the chunks of the dask array ``x`` (shapes must be known)."""
    import math

    if any(math.isnan(c) for cs in x.chunks for c in cs):
        raise ValueError("from_dask needs known chunk sizes; call x.compute_chunk_sizes() first")
    op = FromDask(x)
    return op.new_tensor(x.shape, x.dtype, key=new_key("from-dask", x.name))


def to_dask(t: Tensor):
    """A ``dask.array.Array`` over the tensor's chunks (its graph is our emitted graph)."""
    import math

    import dask.array as da

    t._ensure_tiled()
    if any(math.isnan(s) for ss in t.nsplits for s in ss):
        raise ValueError("to_dask needs known chunk sizes; execute() the tensor first")
    graph = t.__dask_graph__()
    return da.Array(graph, t.key, chunks=t.nsplits, dtype=t.dtype)
