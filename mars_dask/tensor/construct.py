"""Building tensors from others or from index expressions: grids (``meshgrid``, ``mgrid``,
``ogrid``, ``indices``), the ``r_``/``c_`` concatenators, ``block``, ``diagflat``,
``fill_diagonal``, copies and memory order (``copy``, ``copyto``, ``ascontiguousarray``,
``asfortranarray``), and ``shape``/``ndim``.

Grids are computed chunk by chunk from their positions (:class:`TensorGrid` for
``meshgrid``, the generated-chunk operand of :mod:`.datasource` for ``mgrid``/``indices``),
so nothing large travels in the graph.
"""

from __future__ import annotations

import math
import numbers
import operator

import numpy as np

from ..tiling.core import ensure_known, has_unknown
from .arithmetic import TensorElementwise, elementwise
from .core import Tensor, TensorOperand, astensor
from .datasource import _generated, arange, diag, linspace, tensor
from .indexing import _check_broadcast, _strip_leading_ones, getitem
from .manipulation import concatenate, ravel, swapaxes, transpose
from .utils import _auto_splits, chunk_grid, chunk_shape_at, offsets

__all__ = [
    "meshgrid", "mgrid", "ogrid", "indices", "r_", "c_", "block", "diagflat", "fill_diagonal",
    "copy", "copyto", "ascontiguousarray", "asfortranarray", "shape", "ndim",
]


def _isnan(x) -> bool:
    return isinstance(x, float) and math.isnan(x)


# ---- meshgrid --------------------------------------------------------------------------------


def _grid_kernel(x, local, pos, shape):
    part = x[local]
    view = [1] * len(shape)
    view[pos] = part.shape[0]
    return np.broadcast_to(part.reshape(view), shape).copy()


def _cut(splits: tuple, limit: int) -> list[tuple[int, int, int]]:
    """``(chunk, start, stop)`` pieces: each chunk of ``splits`` cut into pieces of at most
    ``limit`` elements."""
    out = []
    for i, n in enumerate(splits):
        if n == 0:
            out.append((i, 0, 0))
        for lo in range(0, n, limit):
            out.append((i, lo, min(n, lo + limit)))
    return out or [(0, 0, 0)]


class TensorGrid(TensorOperand):
    """Output ``out`` of ``meshgrid``: input ``src`` (1-d) broadcast along output axis
    ``pos``; output axis ``a`` is chunked like input ``perm[a]`` (cut further so that a
    chunk stays within the chunk-size limit).  Each chunk reads one input chunk."""

    _op_name = "meshgrid"

    def tile(self):
        inputs = self.inputs
        if any(has_unknown(t.nsplits[0]) for t in inputs):
            yield from ensure_known(*inputs)
        shape = tuple(int(inputs[p].shape[0]) for p in self.perm)
        limits = _auto_splits(shape, self.output.dtype.itemsize)
        pieces = [_cut(inputs[p].nsplits[0], lim) for p, lim in zip(self.perm, limits)]
        out_nsplits = tuple(tuple(hi - lo for _, lo, hi in ps) for ps in pieces)
        x = inputs[self.src]
        chunks = []
        for idx in chunk_grid(out_nsplits):
            c, lo, hi = pieces[self.pos][idx[self.pos]]
            cshape = chunk_shape_at(out_nsplits, idx)
            args = (x.chunk_at((c,)), slice(lo, hi), self.pos, cshape)
            chunks.append(self.new_chunk(idx, cshape, _grid_kernel, args))
        return [(chunks, out_nsplits)]


def meshgrid(*xi, **kwargs):
    """Coordinate tensors from coordinate vectors (``numpy.meshgrid``): a tuple of tensors,
    ``indexing='xy'`` (default) or ``'ij'``, ``sparse=True`` for an open grid."""
    indexing = kwargs.pop("indexing", "xy")
    sparse = kwargs.pop("sparse", False)
    kwargs.pop("copy", True)
    if kwargs:
        raise TypeError(f"meshgrid() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    xs = [ravel(astensor(x)) for x in xi]
    n = len(xs)
    perm = list(range(n))  # output axis -> input
    if indexing == "xy" and n > 1:
        perm[0], perm[1] = 1, 0
    shape = tuple(xs[p].shape[0] for p in perm)
    out = []
    for i, x in enumerate(xs):
        pos = perm.index(i)
        if sparse or n == 1:
            r = getitem(x, tuple(slice(None) if a == pos else None for a in range(n)))
            if n == 1:
                r = Tensor(r.data)
        else:
            op = TensorGrid([t.data for t in xs], src=i, pos=pos, perm=tuple(perm))
            r = op.new_tensor(shape, x.dtype)
        out.append(r)
    return tuple(out)


# ---- indices, mgrid, ogrid ---------------------------------------------------------------------


def _indices_kernel(shape, origin, dtype, affine):
    """A chunk of ``indices(dims)`` (axis 0 picks the dimension), values then mapped
    through ``v * step + start`` per dimension when ``affine`` is given (``mgrid``)."""
    out = np.empty(shape, dtype=dtype)
    ndim = len(shape) - 1
    for j in range(shape[0]):
        k = origin[0] + j
        v = np.arange(origin[k + 1], origin[k + 1] + shape[k + 1], dtype=dtype)
        if affine is not None:
            step, start = affine[k]
            v = (v * step + start).astype(dtype, copy=False)
        view = [1] * ndim
        view[k] = v.shape[0]
        out[j] = v.reshape(view)
    return out


def _sparse_chunk_size(chunk_size, k, ndim):
    if chunk_size is None or isinstance(chunk_size, numbers.Integral):
        return chunk_size
    if isinstance(chunk_size, (tuple, list)) and len(chunk_size) == ndim + 1:
        return tuple(chunk_size[k + 1] if a == k else 1 for a in range(ndim))
    return chunk_size


def indices(dimensions, dtype=int, sparse=False, chunk_size=None):
    """The indices of a grid (``numpy.indices``): a tensor of shape ``(N, *dimensions)``,
    or with ``sparse=True`` a tuple of tensors with one non-unit axis each."""
    dimensions = tuple(operator.index(d) for d in dimensions)
    if any(d < 0 for d in dimensions):
        raise ValueError("negative dimensions are not allowed")
    dtype = np.dtype(dtype)
    n = len(dimensions)
    if sparse:
        res = []
        for k, d in enumerate(dimensions):
            shape = tuple(d if a == k else 1 for a in range(n))
            cs = _sparse_chunk_size(chunk_size, k, n)
            res.append(_generated(_sparse_kernel, shape, dtype, cs, (k, dtype, None)))
        return tuple(res)
    return _generated(_indices_kernel, (n,) + dimensions, dtype, chunk_size, (dtype, None))


def _sparse_kernel(shape, origin, k, dtype, affine):
    v = np.arange(origin[k], origin[k] + shape[k], dtype=dtype)
    if affine is not None:
        step, start = affine
        v = v * step + start
    return v.reshape(shape)


class nd_grid:  # noqa: N801 - numpy's and Mars's name
    """``mgrid`` (dense) and ``ogrid`` (open, ``sparse=True``): index with slices, a complex
    step ``5j`` meaning "5 points, stop inclusive", as ``numpy.mgrid``/``numpy.ogrid``."""

    __slots__ = ("sparse",)

    def __init__(self, sparse=False):
        self.sparse = sparse

    def __getitem__(self, key):
        if isinstance(key, slice):
            return self._one(key)
        if not isinstance(key, tuple) or not all(isinstance(k, slice) for k in key):
            raise TypeError("mgrid/ogrid must be indexed with slices")
        size, num_list, affine = [], [0], []
        for k in key:
            start = 0 if k.start is None else k.start
            step = 1 if k.step is None else k.step
            if isinstance(step, (complex, np.complexfloating)):
                step = abs(step)
                size.append(int(step))
            else:
                size.append(math.ceil((k.stop - start) / step))
            num_list += [start, k.stop, step]
        typ = np.result_type(*num_list)
        for k in key:
            start = 0 if k.start is None else k.start
            step = 1 if k.step is None else k.step
            if isinstance(step, (complex, np.complexfloating)):
                step = int(abs(step))
                if step != 1:
                    step = (k.stop - start) / float(step - 1)
            affine.append((step, start))
        if any(s < 0 for s in size):
            raise ValueError("negative dimensions are not allowed")
        n = len(size)
        if self.sparse:
            out = []
            for k, (s, aff) in enumerate(zip(size, affine)):
                shape = tuple(s if a == k else 1 for a in range(n))
                probe = np.arange(1, dtype=typ) * aff[0] + aff[1]
                out.append(_generated(_sparse_kernel, shape, probe.dtype, None, (k, typ, aff)))
            return tuple(out)
        return _generated(_indices_kernel, (n, *size), typ, None, (typ, tuple(affine)))

    @staticmethod
    def _one(key: slice):
        start = 0 if key.start is None else key.start
        step, stop = key.step, key.stop
        if isinstance(step, (complex, np.complexfloating)):
            step_float = abs(step)
            step = length = int(step_float)
            if step != 1:
                step = (key.stop - start) / float(step - 1)
            typ = np.result_type(start, stop, step_float)
            return arange(0, length, 1, dtype=typ) * step + start
        if step is None:
            return arange(start, stop)
        return arange(start, stop, step)

    def __len__(self):
        return 0


mgrid = nd_grid(sparse=False)
ogrid = nd_grid(sparse=True)


# ---- r_ and c_ ------------------------------------------------------------------------------------


def _ndmin(t: Tensor, ndmin: int) -> Tensor:
    return getitem(t, (None,) * (ndmin - t.ndim)) if t.ndim < ndmin else t


def _matrix_unsupported():
    return NotImplementedError("r_/c_ matrix output ('r'/'c' directives, np.matrix) is not supported by Mars")


class AxisConcatenator:
    """Translates slices, scalars and tensors to one concatenated tensor (``r_``/``c_``),
    as numpy's ``AxisConcatenator``; matrix directives are not supported (as in Mars)."""

    __slots__ = ("axis", "matrix", "ndmin", "trans1d")

    def __init__(self, axis=0, matrix=False, ndmin=1, trans1d=-1):
        self.axis = axis
        self.matrix = matrix
        self.trans1d = trans1d
        self.ndmin = ndmin

    def __getitem__(self, key):
        if isinstance(key, str):
            raise _matrix_unsupported()
        if not isinstance(key, tuple):
            key = (key,)
        trans1d, ndmin, axis = self.trans1d, self.ndmin, self.axis
        objs, rtypes = [], []
        for k, item in enumerate(key):
            scalar = False
            if isinstance(item, slice):
                start = 0 if item.start is None else item.start
                step = 1 if item.step is None else item.step
                if isinstance(step, (complex, np.complexfloating)):
                    newobj = linspace(start, item.stop, num=int(abs(step)))
                else:
                    newobj = arange(start, item.stop, step)
                if ndmin > 1:
                    newobj = _ndmin(newobj, ndmin)
                    if trans1d != -1:
                        newobj = swapaxes(newobj, -1, trans1d)
            elif isinstance(item, str):
                if k != 0:
                    raise ValueError("special directives must be the first entry.")
                if item in ("r", "c"):
                    raise _matrix_unsupported()
                if "," in item:
                    vec = item.split(",")
                    try:
                        axis, ndmin = [int(x) for x in vec[:2]]
                        if len(vec) == 3:
                            trans1d = int(vec[2])
                        continue
                    except Exception as e:
                        raise ValueError(f"unknown special directive {item!r}") from e
                try:
                    axis = int(item)
                    continue
                except (ValueError, TypeError) as e:
                    raise ValueError("unknown special directive") from e
            elif type(item) in np.ScalarType:
                scalar = True
                newobj = item
            else:
                t = astensor(item)
                item_ndim = t.ndim
                newobj = _ndmin(t, ndmin)
                if trans1d != -1 and item_ndim < ndmin:
                    k2 = ndmin - item_ndim
                    k1 = trans1d
                    if k1 < 0:
                        k1 += k2 + 1
                    defaxes = list(range(ndmin))
                    newobj = transpose(newobj, defaxes[:k1] + defaxes[k2:] + defaxes[k1:k2])
            objs.append(newobj)
            rtypes.append(item if scalar else newobj.dtype)
        if rtypes:
            final = np.result_type(*rtypes)
            objs = [
                _ndmin(tensor(np.array(o, dtype=final)), ndmin) if not isinstance(o, Tensor)
                else (o if o.dtype == final else o.astype(final))
                for o in objs
            ]
        return concatenate(tuple(objs), axis=axis)

    def __len__(self):
        return 0


class RClass(AxisConcatenator):
    """``r_[...]``: concatenation along the first axis (see numpy's ``r_``)."""

    __slots__ = ()

    def __init__(self):
        AxisConcatenator.__init__(self, 0)


class CClass(AxisConcatenator):
    """``c_[...]``: ``r_['-1,2,0', ...]``, stacking along the last axis as columns."""

    __slots__ = ()

    def __init__(self):
        AxisConcatenator.__init__(self, -1, ndmin=2, trans1d=0)


r_ = RClass()
c_ = CClass()


# ---- block -----------------------------------------------------------------------------------------


def _block_format_index(index):
    return "arrays" + "".join(f"[{i}]" for i in index if i is not None)


def _block_check_depths_match(arrays, parent_index=()):
    """numpy's check: ``(index of a bottom element, max ndim)``, errors as numpy's."""
    parent_index = list(parent_index)
    if isinstance(arrays, tuple):
        raise TypeError(
            f"{_block_format_index(parent_index)} is a tuple. Only lists can be used to arrange blocks, "
            "and np.block does not allow implicit conversion from tuple to ndarray."
        )
    if isinstance(arrays, list) and arrays:
        results = [_block_check_depths_match(a, parent_index + [i]) for i, a in enumerate(arrays)]
        first_index, max_ndim = results[0]
        for index, nd in results[1:]:
            max_ndim = max(max_ndim, nd)
            if len(index) != len(first_index):
                raise ValueError(
                    f"List depths are mismatched. First element was at depth {len(first_index)}, "
                    f"but there is an element at depth {len(index)} ({_block_format_index(index)})"
                )
            if index[-1] is None:
                first_index = index
        return first_index, max_ndim
    if isinstance(arrays, list):
        return parent_index + [None], 0
    return parent_index, np.ndim(arrays) if not isinstance(arrays, Tensor) else arrays.ndim


def _block(arrays, max_depth, result_ndim, depth=0):
    if depth < max_depth:
        arrs = [_block(a, max_depth, result_ndim, depth + 1) for a in arrays]
        return concatenate(arrs, axis=-(max_depth - depth))
    return _ndmin(astensor(arrays), result_ndim)


def block(arrays):
    """Assemble a tensor from nested lists of blocks (``numpy.block``)."""
    bottom, arr_ndim = _block_check_depths_match(arrays)
    list_ndim = len(bottom)
    if bottom and bottom[-1] is None:
        raise ValueError(f"List at {_block_format_index(bottom)} cannot be empty")
    result = _block(arrays, list_ndim, max(arr_ndim, list_ndim))
    return Tensor(result.data) if result is arrays else result


# ---- diagonals --------------------------------------------------------------------------------------


def diagflat(v, k=0, sparse=None, gpu=None, chunk_size=None):
    """A 2-d tensor with the flattened input on diagonal ``k`` (``numpy.diagflat``)."""
    v = v if isinstance(v, Tensor) else tensor(v, chunk_size=chunk_size)
    return diag(ravel(v), k=k)


def _diag_hits(r0, nr, c0, nc, ncols, count):
    """2-d ``fill_diagonal``: the ``j``-th value goes to flat position ``j * (ncols + 1)``,
    i.e. row ``j + j // ncols``, column ``j % ncols``.  Returns ``(j, row, col)`` of the
    positions inside the block at ``(r0, c0)`` of shape ``(nr, nc)``."""
    empty = np.empty(0, dtype=np.intp)
    if nr == 0 or nc == 0 or count == 0 or ncols == 0:
        return empty, empty, empty
    # row(j) is non-decreasing with j * (ncols + 1) / ncols - 1 < row(j) <= j * (ncols + 1) / ncols
    lo = max(0, (r0 * ncols) // (ncols + 1) - 1)
    hi = min(count, (r0 + nr + 1) * ncols // (ncols + 1) + 2)
    j = np.arange(lo, max(lo, hi))
    r, c = j + j // ncols, j % ncols
    sel = (r >= r0) & (r < r0 + nr) & (c >= c0) & (c < c0 + nc)
    return j[sel], r[sel], c[sel]


def _fill_diag_kernel(x, r0, c0, ncols, count, val):
    x = x.copy()
    j, r, c = _diag_hits(r0, x.shape[0], c0, x.shape[1], ncols, count)
    val = np.asarray(val).ravel()
    if j.size and val.size:
        x[r - r0, c - c0] = val[j % val.size]
    return x


def _fill_diag_nd_kernel(x, origin, val):
    x = x.copy()
    lo = max(origin)
    hi = min(o + s for o, s in zip(origin, x.shape))
    val = np.asarray(val).ravel()
    if hi > lo and val.size:
        i = np.arange(lo, hi)
        x[tuple(i - o for o in origin)] = val[i % val.size]
    return x


class TensorFillDiagonal(TensorOperand):
    """``fill_diagonal``: only the chunks the diagonal crosses get a task (a copy with the
    values set); the others are reused as they are."""

    _op_name = "fill-diagonal"

    def tile(self):
        x = self.inputs[0]
        val = self.val
        if len(self.inputs) > 1:
            v = self.inputs[1]
            if any(has_unknown(s) for s in v.nsplits):
                yield from ensure_known(v)
            from .indexing import rechunk_now

            val = rechunk_now(v, tuple((int(n),) for n in v.shape)).chunks[0]
        if any(has_unknown(s) for s in x.nsplits):
            yield from ensure_known(x)
        shape = tuple(int(s) for s in x.shape)
        if x.ndim > 2 and len(set(shape)) != 1:
            raise ValueError("All dimensions of input must be of equal length")
        offs = [offsets(s) for s in x.nsplits]
        if x.ndim == 2:
            nrows, ncols = shape
            limit = nrows * ncols if self.wrap else min(nrows * ncols, ncols * ncols)
            count = (limit + ncols) // (ncols + 1) if ncols else 0
        chunks = []
        for idx in x.chunk_grid():
            c = x.chunk_at(idx)
            origin = tuple(o[i] for o, i in zip(offs, idx))
            cshape = chunk_shape_at(x.nsplits, idx)
            if x.ndim == 2:
                hit = _diag_hits(origin[0], cshape[0], origin[1], cshape[1], ncols, count)[0].size > 0
                func, args = _fill_diag_kernel, (c, origin[0], origin[1], ncols, count, val)
            else:
                hit = min(o + s for o, s in zip(origin, cshape)) > max(origin)
                func, args = _fill_diag_nd_kernel, (c, origin, val)
            if hit:
                c = self.new_chunk(idx, cshape, func, args)
            chunks.append(c)
        return [(chunks, x.nsplits)]


def fill_diagonal(a, val, wrap=False):
    """Fill the main diagonal of ``a`` in place (``numpy.fill_diagonal``; Mars semantics:
    ``a`` now refers to the new lazy result).  Returns None."""
    if not isinstance(a, Tensor):
        raise TypeError(f"`a` should be a tensor, got {type(a)}")
    if a.ndim < 2:
        raise ValueError("array must be at least 2-d")
    if a.ndim > 2 and not has_unknown(a.shape) and len(set(a.shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    inputs = [a.data]
    if isinstance(val, Tensor):
        inputs.append(ravel(val).data)
        val = None
    else:
        val = np.asarray(val).ravel().astype(a.dtype)  # numpy's flat assignment casts so
    op = TensorFillDiagonal(inputs, val=val, wrap=bool(wrap))
    t = op.new_tensor(a.shape, a.dtype)
    t.data.order = a.order
    a.data = t.data


# ---- copies and memory order ----------------------------------------------------------------------


def _layout_kernel(x, order):
    return np.array(x, order=order, copy=True)


def _with_order(a: Tensor, order: str) -> Tensor:
    """``a`` laid out in ``order`` ("C"/"F"): a new handle on the same data if the order
    already matches, else chunks copied in that layout."""
    if a.order == order:
        return Tensor(a.data)
    out = elementwise(_layout_kernel, a, order, dtype=a.dtype)
    out.data.order = order
    return out


def copy(a, order="K"):
    """A copy of ``a`` (``numpy.copy``): a new tensor that later in-place changes of ``a``
    (``a[...] = v``) do not affect; ``order`` sets the result's memory order."""
    if order not in ("C", "F", "A", "K"):
        raise ValueError("order must be one of 'C', 'F', 'A', or 'K'")
    if isinstance(a, Tensor):
        want = a.order if order in ("K", "A") else order
        return _with_order(a, want)
    arr = np.array(a, order=order, copy=True)
    t = tensor(arr)
    if arr.flags.f_contiguous and not arr.flags.c_contiguous:
        t.data.order = "F"
    return t


def _copyto_kernel(d, s, w):
    out = d.copy()
    np.copyto(out, s, casting="unsafe", where=w)
    return out


def copyto(dst, src, casting="same_kind", where=True):
    """Copy ``src`` into ``dst`` (broadcasting) where ``where`` is true (``numpy.copyto``);
    ``dst`` now refers to the new lazy result (Mars semantics).  Returns None."""
    if not isinstance(dst, Tensor):
        raise TypeError("dst has to be a Tensor")
    if isinstance(src, Tensor):
        probe = np.empty((), dtype=src.dtype)
    elif isinstance(src, (numbers.Number, np.generic)):
        probe = src  # python scalars are weakly typed, as in numpy
    else:
        src = np.asarray(src)
        probe = np.empty((), dtype=src.dtype)
    np.copyto(np.empty((), dtype=dst.dtype), probe, casting=casting)  # numpy's casting errors
    sshape = _strip_leading_ones(np.shape(src) if not isinstance(src, Tensor) else src.shape, dst.ndim)
    _check_broadcast(sshape, dst.shape)
    if isinstance(src, np.ndarray):
        src = tensor(src.reshape(sshape)) if src.ndim else src
    elif isinstance(src, Tensor) and tuple(sshape) != tuple(src.shape):
        src = src.reshape(sshape)
    if isinstance(where, (Tensor, np.ndarray, list, tuple)):
        w = astensor(where)
        if w.dtype != np.bool_:
            raise TypeError(f"Cannot cast array data from {w.dtype!r} to dtype('bool') according to the rule 'safe'")
        wshape = _strip_leading_ones(w.shape, dst.ndim)
        try:
            _check_broadcast(wshape, dst.shape)
        except ValueError:
            raise ValueError(
                f"could not broadcast where mask from shape {tuple(w.shape)} into shape {tuple(dst.shape)}"
            ) from None
        where = w if tuple(wshape) == tuple(w.shape) else w.reshape(wshape)
    elif not where:
        return
    else:
        where = True
    op = TensorElementwise(_copyto_kernel, [dst, src, where], {})
    out = op.new_tensor(dst.shape, dst.dtype)
    out.data.order = dst.order
    dst.data = out.data


def _as_order(a, dtype, chunk_size, order):
    t = astensor(a, dtype=dtype)
    if chunk_size is not None:
        t = t.rechunk(chunk_size)
    if t.ndim == 0:
        t = getitem(t, (None,))
    return _with_order(t, order)


def ascontiguousarray(a, dtype=None, chunk_size=None):
    """``a`` in C order, at least 1-d (``numpy.ascontiguousarray``)."""
    return _as_order(a, dtype, chunk_size, "C")


def asfortranarray(a, dtype=None, chunk_size=None):
    """``a`` in Fortran order, at least 1-d (``numpy.asfortranarray``)."""
    return _as_order(a, dtype, chunk_size, "F")


# ---- shape, ndim --------------------------------------------------------------------------------------


class ShapeTuple(tuple):
    """``shape(a)``: a tuple of ints (0-d tensors when lengths are known only after
    execution), with Mars's ``execute()``/``fetch()``."""

    def execute(self, session=None, **kw):
        tensors = [t for t in self if isinstance(t, Tensor)]
        if tensors:
            from ..session import execute

            execute(*tensors, session=session, **kw)
        return self

    def fetch(self, session=None):
        return tuple(int(t.fetch(session=session)) if isinstance(t, Tensor) else t for t in self)


def _length_kernel(n):
    return np.intc(n)


class TensorGetShape(TensorOperand):
    """The length of axis ``axis`` of the input, known once the input was executed."""

    _op_name = "get-shape"

    def tile(self):
        (a,) = self.inputs
        if has_unknown(a.nsplits[self.axis]):
            yield from ensure_known(a)
        n = int(sum(a.nsplits[self.axis]))
        return [([self.new_chunk((), (), _length_kernel, (n,), inputs=[])], ())]


def shape(a):
    """The shape of a tensor (``numpy.shape``); Mars's ``execute()``/``fetch()`` work on it."""
    if not isinstance(a, Tensor):
        return ShapeTuple(np.shape(a))
    if not has_unknown(a.shape):
        return ShapeTuple(int(s) for s in a.shape)
    return ShapeTuple(
        TensorGetShape([a.data], axis=i).new_tensor((), np.intc) if _isnan(s) else int(s)
        for i, s in enumerate(a.shape)
    )


def ndim(a):
    """The number of dimensions of ``a`` (``numpy.ndim``)."""
    if isinstance(a, Tensor):
        return a.ndim
    return np.ndim(a)

