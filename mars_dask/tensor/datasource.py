"""Tensor creation: from numpy data, constant fills, ranges, and conversion to/from dask."""

from __future__ import annotations

import bisect
import math
import operator

import numpy as np

from ..tiling.core import ensure_known, has_unknown, new_key, random_key
from .core import Tensor, TensorOperand
from .utils import chunk_grid, chunk_shape_at, normalize_chunk_size, offsets

__all__ = [
    "tensor", "array", "asarray", "full", "ones", "zeros", "empty", "full_like", "ones_like",
    "zeros_like", "empty_like", "from_dask", "arange", "linspace", "eye", "identity", "diag",
    "tril", "triu", "from_dataframe", "fromzarr", "from_zarr", "tozarr", "to_zarr", "fromhdf5", "from_hdf5",
    "tohdf5", "to_hdf5", "fromtiledb", "from_tiledb", "totiledb", "to_tiledb", "fromvineyard", "from_vineyard",
    "tovineyard", "to_vineyard", "imread",
]


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


def _cast_kernel(a, dtype_str):
    return a.astype(dtype_str)


def cast(t: Tensor, dtype) -> Tensor:
    """``t`` as ``dtype`` (itself if it already is).  Private stand-in for ``astype``,
    whose dtype argument the element-wise machinery does not accept as a constant yet."""
    dtype = np.dtype(dtype)
    if t.dtype == dtype:
        return t
    from .arithmetic import elementwise

    return elementwise(_cast_kernel, t, dtype.str, dtype=dtype)


def _is_spmatrix(data) -> bool:
    """A ``scipy.sparse`` matrix/array, or a 2-d pydata ``sparse`` array (converted)."""
    mod = type(data).__module__ or ""
    return mod.startswith("scipy.sparse") or (mod.startswith("sparse") and hasattr(data, "tocsr"))


def tensor(data=None, dtype=None, order="K", chunk_size=None, gpu=None, sparse=False) -> Tensor:
    """A tensor from array-like ``data`` (numpy array, nested lists, scalar, dask array or
    Tensor; a Tensor is cast to ``dtype`` and re-cut to ``chunk_size`` when given).  A
    ``scipy.sparse`` matrix, or ``sparse=True``, gives a sparse tensor (``tensor/sparse.py``)."""
    from . import sparse as _sparse

    if isinstance(data, Tensor):
        if dtype is not None:
            data = cast(data, dtype)
        if chunk_size is not None:
            from .rechunk import rechunk

            data = _sparse.rechunk(data, chunk_size) if data.issparse() else rechunk(data, chunk_size)
        return _sparse.tosparse(data) if sparse else data
    if _is_spmatrix(data):
        if not _sps_module(data):
            data = data.tocsr()
        return _sparse.from_spmatrix(data, dtype=dtype, chunk_size=chunk_size)
    if sparse:
        dense = tensor(data, dtype=dtype, order=order, chunk_size=chunk_size)
        return _sparse.tosparse(dense)
    if hasattr(data, "__dask_graph__") and hasattr(data, "chunks") and hasattr(data, "dtype"):
        return tensor(from_dask(data), dtype=dtype, chunk_size=chunk_size)
    _check_order(order, "CFKA")
    arr = np.array(data, dtype=dtype, order=order)  # "K"/"A" keep Fortran data Fortran, as Mars
    if arr.dtype == object:
        raise TypeError("object dtype tensors are not supported")
    normalize_chunk_size(arr.shape, chunk_size, arr.dtype.itemsize)  # validate now
    op = ArrayDataSource(arr, chunk_size)
    layout = "F" if arr.flags.f_contiguous and not arr.flags.c_contiguous else "C"
    return op.new_tensor(arr.shape, arr.dtype, key=new_key("tensor", arr, chunk_size, layout), order=layout)


def _sps_module(data) -> bool:
    return (type(data).__module__ or "").startswith("scipy.sparse")


array = tensor


def asarray(x, dtype=None, order=None, chunk_size=None) -> Tensor:
    if isinstance(x, Tensor) and (dtype is None or np.dtype(dtype) == x.dtype) and chunk_size is None:
        return x
    return tensor(x, dtype=dtype, chunk_size=chunk_size)


def _check_order(order, allowed="CF"):
    if order not in tuple(allowed):
        raise ValueError(f"order must be one of {', '.join(map(repr, allowed))}, got {order!r}")


# ---- chunks computed from their position (nothing but parameters in the graph) ---------


class TensorGenerated(TensorOperand):
    """Chunks computed by ``kernel(shape, origin, *args)`` from their global offsets.

    With an input (``*_like``) the chunks copy that tensor's layout, waiting for its
    shape if unknown, but do not read its data."""

    _op_name = "generated"

    def tile(self):
        out = self.output
        if self.inputs:
            (like,) = self.inputs
            if any(has_unknown(s) for s in like.nsplits):
                yield from ensure_known(like)
            nsplits = like.nsplits
        else:
            nsplits = normalize_chunk_size(out.shape, self.chunk_size, out.dtype.itemsize)
        offs = [offsets(s) for s in nsplits]
        chunks = []
        for idx in chunk_grid(nsplits):
            shape = chunk_shape_at(nsplits, idx)
            origin = tuple(o[i] for o, i in zip(offs, idx))
            chunks.append(self.new_chunk(idx, shape, self.kernel, (shape, origin, *self.args), inputs=()))
        return [(chunks, nsplits)]


def _generated(kernel, shape, dtype, chunk_size, args=(), order="C", key=None, like=None) -> Tensor:
    """Validate ``chunk_size``/``order`` now and build a :class:`TensorGenerated` tensor
    (chunked like tensor ``like`` if given)."""
    dtype = np.dtype(dtype)
    _check_order(order)
    if like is None:
        normalize_chunk_size(shape, chunk_size, dtype.itemsize)
    op = TensorGenerated(
        [like.data] if like is not None else [],
        kernel=kernel, args=tuple(args), shape=tuple(shape), chunk_size=chunk_size, order=order,
    )
    t = op.new_tensor(shape, dtype, key=key)
    t.data.order = order
    return t


def _full_kernel(shape, origin, fill_value, dtype, order):
    if isinstance(fill_value, np.ndarray) and fill_value.ndim:
        # a broadcast fill: take this chunk's part (axes of length 1 broadcast)
        lead = len(shape) - fill_value.ndim
        fill_value = fill_value[tuple(
            slice(None) if g == 1 else slice(origin[lead + a], origin[lead + a] + shape[lead + a])
            for a, g in enumerate(fill_value.shape)
        )]
    return np.full(shape, fill_value, dtype=dtype, order=order)


def _empty_kernel(shape, origin, dtype, order):
    return np.empty(shape, dtype=dtype, order=order)


def _normalize_shape(shape) -> tuple:
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    try:
        shape = tuple(operator.index(s) for s in shape)
    except TypeError:
        raise TypeError(f"shape must be an int or a sequence of ints, got {shape!r}") from None
    if any(s < 0 for s in shape):
        raise ValueError(f"negative dimensions are not allowed: {shape}")
    return shape


def full(shape, fill_value, dtype=None, chunk_size=None, order="C", gpu=None, sparse=False) -> Tensor:
    """A tensor of ``shape`` filled with ``fill_value`` (a scalar, or an array that
    broadcasts to ``shape``)."""
    shape = _normalize_shape(shape)
    fill = np.asarray(fill_value)
    if dtype is None:
        dtype = fill.dtype
    if fill.ndim:
        if np.broadcast_shapes(fill.shape, shape) != shape:
            raise ValueError(f"could not broadcast fill_value of shape {fill.shape} into shape {shape}")
        fill_value = fill
    if sparse:
        if not fill.ndim and fill_value == 0:
            return _sparse_generated("zeros", shape, dtype, chunk_size, (np.dtype(dtype),), "full")
        return _to_sparse(full(shape, fill_value, dtype=dtype, chunk_size=chunk_size), "full")
    return _generated(_full_kernel, shape, dtype, chunk_size, (fill_value, np.dtype(dtype), order), order)


def _to_sparse(t: Tensor, what: str) -> Tensor:
    from . import sparse as _sparse

    _sparse.check_sparse_shape(t.shape, what)
    return _sparse.tosparse(t)


def _sparse_generated(name, shape, dtype, chunk_size, args, what) -> Tensor:
    """A sparse tensor whose CSR chunks ``sparse.generated_kernel(name)`` computes."""
    from . import sparse as _sparse

    _sparse.check_sparse_shape(shape, what)
    t = _generated(_sparse.generated_kernel(name), shape, dtype, chunk_size, args)
    t.data.issparse = True
    return t


def ones(shape, dtype=None, chunk_size=None, order="C", gpu=None, sparse=False) -> Tensor:
    return full(shape, 1, dtype=dtype or np.float64, chunk_size=chunk_size, order=order, sparse=sparse)


def zeros(shape, dtype=None, chunk_size=None, order="C", gpu=None, sparse=False) -> Tensor:
    return full(shape, 0, dtype=dtype or np.float64, chunk_size=chunk_size, order=order, sparse=sparse)


def empty(shape, dtype=None, chunk_size=None, order="C", gpu=None, sparse=False) -> Tensor:
    """Uninitialised values: a random key, so two ``empty`` tensors never share data (a
    sparse ``empty`` stores nothing: zeros)."""
    shape = _normalize_shape(shape)
    dtype = np.dtype(dtype or np.float64)
    if sparse:
        return _sparse_generated("zeros", shape, dtype, chunk_size, (dtype,), "empty")
    return _generated(_empty_kernel, shape, dtype, chunk_size, (dtype, order), order, key=random_key("empty"))


def _like(a, fill_value, dtype, chunk_size, shape, order):
    """``*_like``: a new tensor with ``a``'s shape, dtype and (for a tensor) chunk layout,
    also when ``a``'s shape is only known after execution."""
    if not isinstance(a, Tensor):
        a = np.asarray(a)
    dtype = a.dtype if dtype is None else np.dtype(dtype)
    if order in ("K", "A", None):
        order = "F" if isinstance(a, Tensor) and a.order == "F" else "C"
    if np.ndim(fill_value) and not has_unknown(a.shape if shape is None else _normalize_shape(shape)):
        target = a.shape if shape is None else _normalize_shape(shape)
        if np.broadcast_shapes(np.shape(fill_value), target) != target:
            raise ValueError(f"could not broadcast fill_value of shape {np.shape(fill_value)} into shape {target}")
    if isinstance(a, Tensor) and chunk_size is None and (shape is None or _normalize_shape(shape) == a.shape):
        if fill_value is None:
            kernel, args, key = _empty_kernel, (dtype, order), random_key("empty")
        else:
            kernel, args, key = _full_kernel, (np.asarray(fill_value), dtype, order), None
        return _generated(kernel, a.shape, dtype, None, args, order, key=key, like=a)
    shape = a.shape if shape is None else _normalize_shape(shape)
    if fill_value is None:
        return empty(shape, dtype=dtype, chunk_size=chunk_size, order=order)
    return full(shape, fill_value, dtype=dtype, chunk_size=chunk_size, order=order)


def _like_sparse(a, out: Tensor) -> Tensor:
    """``*_like`` of a sparse tensor is sparse (Mars)."""
    if isinstance(a, Tensor) and a.issparse() and out.ndim == 2:
        from .sparse import tosparse

        return tosparse(out)
    return out


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, chunk_size=None, **kw) -> Tensor:
    return _like_sparse(a, _like(a, fill_value, dtype, chunk_size, shape, order))


def ones_like(a, dtype=None, order="K", subok=True, shape=None, chunk_size=None, **kw) -> Tensor:
    return _like_sparse(a, _like(a, 1, dtype, chunk_size, shape, order))


def zeros_like(a, dtype=None, order="K", subok=True, shape=None, chunk_size=None, **kw) -> Tensor:
    return _like_sparse(a, _like(a, 0, dtype, chunk_size, shape, order))


def empty_like(a, dtype=None, order="K", subok=True, shape=None, chunk_size=None, **kw) -> Tensor:
    return _like_sparse(a, _like(a, None, dtype, chunk_size, shape, order))


# ---- ranges -------------------------------------------------------------------------------


def _arange_kernel(shape, origin, first, delta, dtype):
    # numpy's fill: value i = first + i * delta, evaluated in the output dtype
    i = np.arange(origin[0], origin[0] + shape[0]).astype(dtype)
    with np.errstate(over="ignore"):
        return (i * delta + first).astype(dtype, copy=False)


def arange(*args, dtype=None, chunk_size=None, gpu=None, **kwargs) -> Tensor:
    """``numpy.arange([start,] stop[, step])`` as a tensor; chunks compute their values."""
    names = ("start", "stop", "step")
    if len(args) > 3:
        raise TypeError(f"arange() takes at most 3 positional arguments ({len(args)} given)")
    params = dict(zip(("stop",) if len(args) == 1 else names, args))
    for k, v in kwargs.items():
        if k not in names or k in params:
            raise TypeError(f"arange() got an unexpected or repeated argument {k!r}")
        params[k] = v
    if "stop" not in params:
        if "start" not in params:
            raise TypeError("arange() requires stop to be specified")
        params["stop"] = params.pop("start")
    start, stop, step = params.get("start", 0), params["stop"], params.get("step", 1)
    if any(np.ndim(v) != 0 for v in (start, stop, step)):
        raise TypeError("arange() arguments must be scalars")
    if step == 0:
        raise ZeroDivisionError("arange(): step must not be zero")
    span = (stop - start) / step
    if not np.isfinite(span):
        raise ValueError("arange(): cannot compute the length (non-finite bounds or step)")
    length = max(0, int(math.ceil(span)))
    if dtype is None:
        dtype = np.result_type(*(np.asarray(v).dtype for v in (start, stop, step)))
    dtype = np.dtype(dtype)
    two = np.empty(2, dtype=dtype)  # numpy casts start and start + step, then fills
    two[0] = start
    two[1] = start + step
    with np.errstate(over="ignore"):
        delta = two[1] - two[0]
    return _generated(_arange_kernel, (length,), dtype, chunk_size, (two[0], delta, dtype))


def _linspace_kernel(shape, origin, dt, num, div, step, delta, start, stop, endpoint, dtype):
    # numpy.linspace's arithmetic, restricted to this chunk's indices
    y = np.arange(origin[0], origin[0] + shape[0], dtype=dt)
    if div > 0:
        if step == 0:
            y /= div
            y *= delta
        else:
            y *= step
    else:
        y = y * delta
    y += start
    if endpoint and num > 1 and origin[0] + shape[0] == num:
        y[-1] = stop
    if np.issubdtype(dtype, np.integer):
        np.floor(y, out=y)
    return y.astype(dtype, copy=False)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, chunk_size=None, gpu=None):
    """``num`` evenly spaced samples over ``[start, stop]`` (scalar bounds), computed as
    numpy computes them, so values match ``numpy.linspace`` bit for bit."""
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    if np.ndim(start) or np.ndim(stop):
        raise NotImplementedError("linspace supports scalar start and stop only")
    if axis not in (0, -1):
        raise np.exceptions.AxisError(f"axis {axis} is out of bounds for array of dimension 1")
    start_a, stop_a = np.asarray(start), np.asarray(stop)
    dt = np.linspace(start, stop, 0).dtype  # numpy's inexact result type of the bounds
    div = (num - 1) if endpoint else num
    delta = np.subtract(stop_a, start_a, dtype=type(dt))
    step = delta / div if div > 0 else np.nan
    out_dtype = dt if dtype is None else np.dtype(dtype)
    t = _generated(
        _linspace_kernel, (num,), out_dtype, chunk_size,
        (dt, num, div, step, delta, start_a, stop_a, endpoint, out_dtype),
    )
    return (t, step) if retstep else t


def _eye_kernel(shape, origin, k, dtype, order):
    out = np.zeros(shape, dtype=dtype, order=order)
    (r0, c0), (nr, nc) = origin, shape
    rows = np.arange(max(r0, c0 - k), min(r0 + nr, c0 + nc - k))
    out[rows - r0, rows + k - c0] = 1
    return out


def eye(N, M=None, k=0, dtype=None, chunk_size=None, order="C", gpu=None, sparse=False) -> Tensor:
    """A 2-d tensor with ones on diagonal ``k`` and zeros elsewhere."""
    N = operator.index(N)
    M = N if M is None else operator.index(M)
    k = operator.index(k)
    shape = _normalize_shape((N, M))
    dtype = np.dtype(np.float64 if dtype is None else dtype)
    if sparse:
        return _sparse_generated("eye", shape, dtype, chunk_size, (k, dtype), "eye")
    return _generated(_eye_kernel, shape, dtype, chunk_size, (k, dtype, order), order)


def identity(n, dtype=None, chunk_size=None, gpu=None, sparse=False) -> Tensor:
    return eye(n, dtype=dtype, chunk_size=chunk_size, sparse=sparse)


# ---- diagonals and triangles --------------------------------------------------------------


def _diag_block(shape, dtype, parts, slices, t0, rows0, cols0):
    """A block of ``diag(v, k)``: zeros with ``v[t0 : t0 + n]`` on the diagonal that
    starts at local position ``(rows0, cols0)``."""
    out = np.zeros(shape, dtype=dtype)
    if parts:
        vals = np.concatenate([p[s] for p, s in zip(parts, slices)])
        i = np.arange(len(vals))
        out[rows0 + i, cols0 + i] = vals
    return out


def _diag_extract(block, r, c, n):
    return np.diagonal(block[r : r + n, c : c + n]).copy()


class TensorDiag(TensorOperand):
    """``diag(v, k)``: 1-d -> 2-d (a diagonal matrix) or 2-d -> 1-d (extraction)."""

    _op_name = "diag"

    def tile(self):
        (v,) = self.inputs
        if any(has_unknown(s) for s in v.nsplits):
            yield from ensure_known(v)
        rs, cs = max(0, -self.k), max(0, self.k)  # the diagonal starts at (rs, cs)
        return [self._tile_matrix(v, rs, cs) if v.ndim == 1 else self._tile_extract(v, rs, cs)]

    def _tile_matrix(self, v, rs, cs):
        """Row/column chunks follow ``v``'s chunks (shifted by |k|), so the diagonal blocks
        each hold one chunk of ``v``; the other blocks are zeros without inputs."""
        rows = tuple(s for s in (rs, *v.nsplits[0], cs) if s) or (0,)
        cols = tuple(s for s in (cs, *v.nsplits[0], rs) if s) or (0,)
        v_offs, r_offs, c_offs = offsets(v.nsplits[0]), offsets(rows), offsets(cols)
        chunks = []
        for i, j in chunk_grid((rows, cols)):
            t0 = max(r_offs[i] - rs, c_offs[j] - cs, 0)
            t1 = min(r_offs[i + 1] - rs, c_offs[j + 1] - cs, v_offs[-1])
            parts, slices = [], []
            for b in range(len(v.nsplits[0])):
                lo, hi = max(t0, v_offs[b]), min(t1, v_offs[b + 1])
                if hi > lo:
                    parts.append(v.chunk_at((b,)))
                    slices.append(slice(lo - v_offs[b], hi - v_offs[b]))
            shape = (rows[i], cols[j])
            args = (shape, v.dtype, parts, slices, t0, t0 + rs - r_offs[i], t0 + cs - c_offs[j])
            chunks.append(self.new_chunk((i, j), shape, _diag_block, args, inputs=parts))
        return chunks, (rows, cols)

    def _tile_extract(self, m, rs, cs):
        """One output chunk per input block the diagonal crosses."""
        R, C = (int(s) for s in m.shape)
        length = max(0, min(R - rs, C - cs))
        if length == 0:
            return [self.new_chunk((0,), (0,), _diag_extract, (m.chunks[0], 0, 0, 0))], ((0,),)
        r_offs, c_offs = offsets(m.nsplits[0]), offsets(m.nsplits[1])
        cuts = sorted({0, length} | {o - rs for o in r_offs if 0 < o - rs < length}
                      | {o - cs for o in c_offs if 0 < o - cs < length})
        chunks = []
        for n, (t0, t1) in enumerate(zip(cuts[:-1], cuts[1:])):
            i = bisect.bisect_right(r_offs, t0 + rs) - 1
            j = bisect.bisect_right(c_offs, t0 + cs) - 1
            args = (m.chunk_at((i, j)), t0 + rs - r_offs[i], t0 + cs - c_offs[j], t1 - t0)
            chunks.append(self.new_chunk((n,), (t1 - t0,), _diag_extract, args))
        return chunks, (tuple(b - a for a, b in zip(cuts[:-1], cuts[1:])),)


def diag(v, k=0, sparse=None, gpu=None, chunk_size=None) -> Tensor:
    """The ``k``-th diagonal of a 2-d tensor, or a 2-d tensor with 1-d ``v`` on it."""
    v = v if isinstance(v, Tensor) else tensor(v, chunk_size=chunk_size)
    k = operator.index(k)
    if v.ndim == 1:
        n = v.shape[0] + abs(k)
        shape = (n, n)
    elif v.ndim == 2:
        R, C = v.shape
        shape = (max(0, min(R - max(0, -k), C - max(0, k))),) if not has_unknown(v.shape) else (math.nan,)
    else:
        raise ValueError("Input must be 1- or 2-d.")
    if v.issparse():
        from .sparse import todense

        v = todense(v)
    out = TensorDiag([v.data], k=k).new_tensor(shape, v.dtype)
    return _to_sparse(out, "diag") if sparse and out.ndim == 2 else out


def _tri_kernel(block, k, lower):
    return np.tril(block, k) if lower else np.triu(block, k)


class TensorTri(TensorOperand):
    """``tril``/``triu``: each chunk keeps its part of the triangle, ``k`` shifted by the
    chunk's offsets."""

    _op_name = "tri"

    def tile(self):
        (m,) = self.inputs
        if any(has_unknown(s) for s in m.nsplits[-2:]):
            yield from ensure_known(m)
        r_offs, c_offs = offsets(m.nsplits[-2]), offsets(m.nsplits[-1])
        chunks = []
        for idx in m.chunk_grid():
            c = m.chunk_at(idx)
            shift = self.k + r_offs[idx[-2]] - c_offs[idx[-1]]
            chunks.append(self.new_chunk(idx, c.shape, _tri_kernel, (c, shift, self.lower), blockwise=True))
        return [(chunks, m.nsplits)]


def _tri(m, k, lower):
    m = m if isinstance(m, Tensor) else tensor(m)
    if m.ndim < 2:
        raise ValueError(f"{'tril' if lower else 'triu'} needs an input of at least 2 dimensions, got {m.ndim}")
    return TensorTri([m.data], k=operator.index(k), lower=lower).new_tensor(m.shape, m.dtype)


def tril(m, k=0) -> Tensor:
    """Lower triangle (elements above diagonal ``k`` zeroed) over the last two axes."""
    return _tri(m, k, True)


def triu(m, k=0) -> Tensor:
    """Upper triangle (elements below diagonal ``k`` zeroed) over the last two axes."""
    return _tri(m, k, False)


# ---- dask interop ---------------------------------------------------------------------


class FromDask(TensorOperand):
    """Chunks taken from a ``dask.array.Array``: its graph is merged into ours."""

    _op_name = "from-dask"

    def __init__(self, darr):
        super().__init__([])
        self.darr = darr

    def tile(self):
        from .._dask_internals import convert_legacy_graph

        darr = self.darr
        nsplits = darr.chunks
        dsk = convert_legacy_graph(dict(darr.__dask_graph__()))
        # one chunk per dask key: an identity over the dask task (inlined by the emitter)
        from ..tiling.core import Chunk

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
    if any(math.isnan(c) for cs in x.chunks for c in cs):
        raise ValueError("from_dask needs known chunk sizes; call x.compute_chunk_sizes() first")
    op = FromDask(x)
    return op.new_tensor(x.shape, x.dtype, key=new_key("from-dask", x.name))


def to_dask(t: Tensor):
    """A ``dask.array.Array`` over the tensor's chunks (its graph is our emitted graph)."""
    import dask.array as da

    t._ensure_tiled()
    if any(math.isnan(s) for ss in t.nsplits for s in ss):
        raise ValueError("to_dask needs known chunk sizes; execute() the tensor first")
    from .._dask_internals import Task, TaskRef
    from dask.highlevelgraph import HighLevelGraph, MaterializedLayer

    graph = t.__dask_graph__()
    # chunks reused from other tensors (setitem, concatenate) get dask.array-style keys
    aliases = {}
    for idx, c in zip(t.data.chunk_grid(), t.chunks):
        want = (t.key, *idx)
        if c.key != want:
            aliases[want] = Task(want, _identity, TaskRef(c.key))
    if aliases:
        layers = dict(graph.layers)
        deps = {k: set(v) for k, v in graph.dependencies.items()}
        if t.key in layers:
            layers[t.key] = MaterializedLayer({**layers[t.key].mapping, **aliases})
        else:
            layers[t.key] = MaterializedLayer(aliases)
            deps[t.key] = set()
        deps[t.key] |= {c.key[0] for c in t.chunks if c.key[0] != t.key and c.key[0] in layers}
        graph = HighLevelGraph(layers, deps)
    return da.Array(graph, t.key, chunks=t.nsplits, dtype=t.dtype)


# ---- DataFrames -----------------------------------------------------------------------------


def _frame_to_numpy(df, dtype):
    return np.asarray(df.to_numpy(dtype=dtype), order="F")


class TensorFromDataFrame(TensorOperand):
    """One tensor chunk per row chunk of a DataFrame (Mars's ``from_dataframe``)."""

    _op_name = "from-dataframe"

    def tile(self):
        (df,) = self.inputs
        ncols = self.output.shape[1]
        chunks = []
        for i, c in enumerate(df.chunks):
            chunks.append(self.new_chunk((i, 0), (c.shape[0], ncols), _frame_to_numpy, (c, self.dtype),
                                         blockwise=True))
        return [(chunks, (tuple(df.nsplits[0]), (ncols,)))]


def from_dataframe(in_df, dtype=None) -> Tensor:
    """A 2-d tensor of a DataFrame's values (``DataFrame.to_numpy``), F-ordered as Mars's;
    ``dtype`` defaults to pandas' common dtype of the columns."""
    import pandas as pd

    if isinstance(in_df, pd.DataFrame):
        return tensor(in_df.to_numpy(dtype=dtype))
    meta = getattr(getattr(in_df, "data", None), "meta", None)
    if not isinstance(meta, pd.DataFrame):
        raise TypeError(f"from_dataframe expects a DataFrame, got {type(in_df).__name__}")
    dtype = np.dtype(meta.to_numpy().dtype if dtype is None else dtype)
    if dtype.kind == "O":
        raise TypeError("object dtype tensors are not supported (the DataFrame's columns have no common "
                        "numeric dtype); pass dtype=")
    op = TensorFromDataFrame([in_df.data], dtype=dtype)
    t = op.new_tensor((in_df.data.shape[0], len(meta.columns)), dtype)
    t.data.order = "F"
    return t


# ---- optional readers and writers (zarr, HDF5) and integrations not shipped ----------------------


def _require(module: str, what: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise ImportError(f"{what} needs the {module!r} package, which is not installed: pip install {module}") from None


def _read_block(opener, path, key, sl):
    with opener(path) as ds:
        return np.asarray(ds[key][sl] if key is not None else ds[sl])


def _open_zarr(path):
    import contextlib

    import zarr

    return contextlib.nullcontext(zarr.open(path, mode="r"))


def _open_hdf5(path):
    import h5py

    return h5py.File(path, "r")


class TensorFromStore(TensorOperand):
    """Blocks of a zarr/HDF5 array, read by each chunk's task."""

    _op_name = "from-store"

    def tile(self):
        out = self.output
        nsplits = normalize_chunk_size(out.shape, self.chunk_size, out.dtype.itemsize)
        offs = [offsets(s) for s in nsplits]
        chunks = []
        for idx in chunk_grid(nsplits):
            sl = tuple(slice(o[i], o[i + 1]) for o, i in zip(offs, idx))
            chunks.append(self.new_chunk(idx, chunk_shape_at(nsplits, idx), _read_block,
                                         (self.opener, self.path, self.dataset, sl)))
        return [(chunks, nsplits)]


def _dataset_path(group, dataset):
    if dataset is None:
        return group
    return f"{group.rstrip('/')}/{dataset}" if group else dataset


def fromzarr(path, group=None, dataset=None, chunk_size=None) -> Tensor:
    """A tensor reading a zarr array (``path`` a store path or a ``zarr.Array``)."""
    zarr = _require("zarr", "fromzarr")
    if isinstance(path, zarr.Array):
        arr = path
        path, key = arr.store, (getattr(arr, "path", "") or None)
    else:
        key = _dataset_path(group, dataset)
        root = zarr.open(path, mode="r")
        arr = root[key] if key else root
    chunk_size = chunk_size if chunk_size is not None else arr.chunks
    op = TensorFromStore([], opener=_open_zarr, path=path, dataset=key, chunk_size=chunk_size)
    return op.new_tensor(arr.shape, arr.dtype)


def fromhdf5(hdf5_file, group=None, dataset=None, chunk_size=None) -> Tensor:
    """A tensor reading an HDF5 dataset (``hdf5_file`` a file name or an ``h5py.Dataset``)."""
    h5py = _require("h5py", "fromhdf5")
    if isinstance(hdf5_file, h5py.Dataset):
        filename, key = hdf5_file.file.filename, hdf5_file.name
    else:
        filename, key = hdf5_file, _dataset_path(group, dataset)
        if key is None:
            raise ValueError("`dataset` should be provided")
    with h5py.File(filename, "r") as f:
        ds = f[key]
        shape, dtype = ds.shape, ds.dtype
        chunk_size = chunk_size if chunk_size is not None else ds.chunks
    op = TensorFromStore([], opener=_open_hdf5, path=filename, dataset=key, chunk_size=chunk_size)
    return op.new_tensor(shape, dtype)


def _write_zarr(path, key, options, value):
    import zarr

    if hasattr(path, "shape") and hasattr(path, "store"):  # a zarr.Array
        path[...] = value
        return
    if key:
        root = zarr.open_group(path, mode="a")
        arr = root.create_dataset(key, shape=value.shape, dtype=value.dtype, overwrite=True, **options)
    else:
        arr = zarr.open(path, mode="w", shape=value.shape, dtype=value.dtype, **options)
    arr[...] = value


def _write_hdf5(path, key, options, value):
    import h5py

    with h5py.File(path, "a") as f:
        if key in f:
            del f[key]
        f.create_dataset(key, data=value, **options)


def _write_kernel(writer, path, key, options, grid, *parts):
    from ..tiling.tileable import concatenate_grid
    from .sparse import as_dense

    parts = [as_dense(p) for p in parts]
    value = concatenate_grid(parts, grid) if len(parts) > 1 else np.asarray(parts[0])
    writer(path, key, options, value)
    return np.empty((0,) * value.ndim, dtype=value.dtype)


class TensorStoreWrite(TensorOperand):
    """Writes its input to a zarr array / HDF5 dataset when executed (one writer task: the
    formats' files do not take concurrent writers of unaligned regions); the result is an
    empty tensor, as Mars's."""

    _op_name = "store-write"

    def tile(self):
        (x,) = self.inputs
        grid = x.chunk_shape
        args = (self.writer, self.path, self.dataset, self.options, grid, *x.chunks)
        chunk = self.new_chunk((0,) * x.ndim, (0,) * x.ndim, _write_kernel, args, inputs=list(x.chunks))
        return [([chunk], tuple((0,) for _ in range(x.ndim)))]


def _store_write(writer, path, x, key, options) -> Tensor:
    from .core import astensor

    x = astensor(x)
    op = TensorStoreWrite([x.data], writer=writer, path=path, dataset=key, options=dict(options))
    return op.new_tensor((0,) * x.ndim, x.dtype)


def tozarr(path, x, group=None, dataset=None, **zarr_options) -> Tensor:
    """A lazy write of tensor ``x`` to a zarr array (``path`` a store path or a
    ``zarr.Array``): ``.execute()`` it, as in Mars."""
    _require("zarr", "tozarr")
    return _store_write(_write_zarr, path, x, _dataset_path(group, dataset), zarr_options)


def tohdf5(hdf5_file, x, group=None, dataset=None, **kwds) -> Tensor:
    """A lazy write of tensor ``x`` to dataset ``group/dataset`` of an HDF5 file:
    ``.execute()`` it, as in Mars."""
    h5py = _require("h5py", "tohdf5")
    if isinstance(hdf5_file, h5py.Dataset):
        filename, key = hdf5_file.file.filename, hdf5_file.name
    else:
        filename, key = hdf5_file, _dataset_path(group, dataset)
    if not key:
        raise ValueError("`dataset` should be provided")
    return _store_write(_write_hdf5, filename, x, key, kwds)


from_zarr, to_zarr, from_hdf5, to_hdf5 = fromzarr, tozarr, fromhdf5, tohdf5


def _not_shipped(name: str, integration: str):
    def func(*args, **kwargs):
        raise NotImplementedError(f"{name}: the {integration} integration of Mars is not shipped with mars_dask")

    func.__name__ = func.__qualname__ = name
    func.__doc__ = f"Mars's {integration} integration: not shipped (raises NotImplementedError)."
    return func


fromtiledb = from_tiledb = _not_shipped("fromtiledb", "TileDB")
totiledb = to_tiledb = _not_shipped("totiledb", "TileDB")
fromvineyard = from_vineyard = _not_shipped("fromvineyard", "Vineyard")
tovineyard = to_vineyard = _not_shipped("tovineyard", "Vineyard")
imread = _not_shipped("imread", "image reading (mt.imread, Pillow-based)")
