"""Shape manipulation: transposes, reshapes, broadcasting, joining and splitting.

Most functions are thin layers over a few operands: :class:`TensorTranspose`,
:class:`TensorReshape` (blockwise after a rechunk that makes every output chunk come from
exactly one input chunk, dask's ``reshape_rechunk`` plan), :class:`TensorBroadcastTo`,
:class:`TensorConcatenate` (concatenates chunk lists, so unknown lengths along the axis
need no execution), :class:`TensorSplit` and :class:`TensorRepeat`; axis insertion,
removal and flips are basic indexing (:func:`~mars_dask.tensor.indexing.getitem`).
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ..tiling.core import ensure_known, has_unknown
from .core import Tensor, TensorOperand, astensor
from .indexing import basic_tile, getitem, rechunk_now
from .utils import chunk_grid, chunk_shape_at, nan, offsets, prod, validate_axes, validate_axis

__all__ = [
    "transpose", "swapaxes", "moveaxis", "reshape", "ravel", "squeeze", "expand_dims",
    "broadcast_to", "broadcast_arrays", "atleast_1d", "atleast_2d", "atleast_3d",
    "concatenate", "stack", "vstack", "hstack", "dstack", "column_stack", "split",
    "array_split", "hsplit", "vsplit", "flip", "fliplr", "flipud", "repeat", "tile",
    "append", "insert", "delete", "roll", "rollaxis", "dsplit", "diff", "ediff1d",
]


def _isnan(x) -> bool:
    return isinstance(x, float) and math.isnan(x)


def _any_unknown(t) -> bool:
    return any(has_unknown(s) for s in t.nsplits)


# ---- transpose -----------------------------------------------------------------------------


def _transpose_kernel(x, axes):
    return np.transpose(x, axes)


class TensorTranspose(TensorOperand):
    _op_name = "transpose"

    def tile(self):
        (x,) = self.inputs
        axes = self.axes
        out_nsplits = tuple(x.nsplits[a] for a in axes)
        chunks = []
        for idx in chunk_grid(out_nsplits):
            in_idx = [0] * len(axes)
            for o, a in enumerate(axes):
                in_idx[a] = idx[o]
            src = x.chunk_at(tuple(in_idx))
            chunks.append(
                self.new_chunk(idx, chunk_shape_at(out_nsplits, idx), _transpose_kernel, (src, axes), blockwise=True)
            )
        return [(chunks, out_nsplits)]


def transpose(a, axes=None) -> Tensor:
    a = astensor(a)
    if a.issparse():
        from .sparse import transpose as sparse_transpose

        return sparse_transpose(a, axes)
    if axes is None:
        axes = tuple(range(a.ndim))[::-1]
    else:
        axes = tuple(axes)
        if len(axes) != a.ndim:
            raise ValueError("axes don't match array")
        axes = tuple(validate_axis(a.ndim, ax, "axes") for ax in axes)
        if len(set(axes)) != len(axes):
            raise ValueError("repeated axis in transpose")
    if axes == tuple(range(a.ndim)):
        return a
    op = TensorTranspose([a.data], axes=axes)
    return op.new_tensor(tuple(a.shape[ax] for ax in axes), a.dtype)


def swapaxes(a, axis1, axis2) -> Tensor:
    a = astensor(a)
    axis1, axis2 = validate_axis(a.ndim, axis1, "axis1"), validate_axis(a.ndim, axis2, "axis2")
    axes = list(range(a.ndim))
    axes[axis1], axes[axis2] = axes[axis2], axes[axis1]
    return transpose(a, axes)


def moveaxis(a, source, destination) -> Tensor:
    a = astensor(a)
    src = [source] if isinstance(source, numbers.Integral) else list(source)
    dst = [destination] if isinstance(destination, numbers.Integral) else list(destination)
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of elements")
    src = [validate_axis(a.ndim, s, "source") for s in src]
    dst = [validate_axis(a.ndim, d, "destination") for d in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError("repeated axis in `source` or `destination` argument")
    order = [n for n in range(a.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(a, order)


# ---- reshape ------------------------------------------------------------------------------


def _reshape_kernel(x, shape):
    return np.reshape(x, shape)


def _resolve_shape(size, shape: tuple, in_shape: tuple) -> tuple:
    """``shape`` with its ``-1`` filled in; ValueError (numpy's message) if it cannot hold
    ``size`` elements.  With an unknown ``size`` the ``-1`` becomes ``nan``."""
    unknown = [i for i, s in enumerate(shape) if s == -1]
    if len(unknown) > 1:
        raise ValueError("can only specify one unknown dimension")
    if any(s < -1 for s in shape):
        raise ValueError(f"negative dimensions not allowed: {shape}")
    known = prod(s for s in shape if s != -1)
    if _isnan(size):
        return tuple(nan if s == -1 else s for s in shape)
    if unknown:
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape array of size {size} into shape {shape}")
        shape = tuple(size // known if s == -1 else s for s in shape)
    elif known != size:
        raise ValueError(f"cannot reshape array of size {size} into shape {shape}")
    return shape


def _reshape_plan(in_shape, out_shape, in_nsplits):
    """``(input nsplits, output nsplits)`` so that output chunk ``k`` (C order) is input
    chunk ``k`` reshaped; dask's plan, or one chunk when it does not apply."""
    single = (tuple((s,) for s in in_shape), tuple((s,) for s in out_shape))
    if prod(in_shape) == 0 or not in_shape or not out_shape:
        return single
    try:
        from dask.array.reshape import reshape_rechunk

        inchunks, outchunks = reshape_rechunk(in_shape, out_shape, in_nsplits)[:2]
    except Exception:  # noqa: BLE001 - dask's planner refused: fall back to one chunk  # pragma: no cover
        return single
    ins = [chunk_shape_at(inchunks, i) for i in chunk_grid(inchunks)]
    outs = [chunk_shape_at(outchunks, i) for i in chunk_grid(outchunks)]
    if len(ins) != len(outs) or any(prod(i) != prod(o) for i, o in zip(ins, outs)):  # pragma: no cover
        return single
    return tuple(tuple(c) for c in inchunks), tuple(tuple(c) for c in outchunks)


class TensorReshape(TensorOperand):
    _op_name = "reshape"

    def tile(self):
        (x,) = self.inputs
        if _any_unknown(x):
            yield from ensure_known(x)
        shape = _resolve_shape(prod(x.shape), tuple(self.newshape), x.shape)
        inchunks, outchunks = _reshape_plan(tuple(x.shape), shape, x.nsplits)
        x = rechunk_now(x, inchunks)
        chunks = []
        for src, idx in zip(x.chunks, chunk_grid(outchunks)):
            cshape = chunk_shape_at(outchunks, idx)
            chunks.append(self.new_chunk(idx, cshape, _reshape_kernel, (src, cshape), blockwise=True))
        return [(chunks, outchunks)]


def _as_shape(shape) -> tuple:
    if isinstance(shape, numbers.Integral):
        return (int(shape),)
    try:
        return tuple(int(s) for s in shape)
    except TypeError:
        raise TypeError(f"shape must be an int or a sequence of ints, got {shape!r}") from None


def reshape(a, shape, order="C") -> Tensor:
    a = astensor(a)
    if order not in ("C", "F", "A"):
        raise ValueError("order must be one of 'C', 'F', 'A'")
    shape = _as_shape(shape)
    out_shape = _resolve_shape(prod(a.shape), shape, a.shape)
    if order == "F":
        return transpose(reshape(transpose(a), shape[::-1]))
    if tuple(out_shape) == tuple(a.shape) and not has_unknown(a.shape):
        return a
    op = TensorReshape([a.data], newshape=shape)
    return op.new_tensor(out_shape, a.dtype)


def ravel(a, order="C") -> Tensor:
    return reshape(a, (-1,), order=order)


# ---- axes of length one -------------------------------------------------------------------


def squeeze(a, axis=None) -> Tensor:
    a = astensor(a)
    if axis is None:
        axes = tuple(i for i, s in enumerate(a.shape) if s == 1)
    else:
        axes = validate_axes(a.ndim, axis)
        for ax in axes:
            if a.shape[ax] != 1:
                raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    return getitem(a, tuple(0 if i in axes else slice(None) for i in range(a.ndim)))


def expand_dims(a, axis) -> Tensor:
    a = astensor(a)
    out_ndim = a.ndim + (1 if isinstance(axis, numbers.Integral) else len(tuple(axis)))
    axes = validate_axes(out_ndim, axis)
    return getitem(a, tuple(None if i in axes else slice(None) for i in range(out_ndim)))


def _atleast(nd, arys, make):
    res = []
    for x in arys:
        x = astensor(x)
        res.append(make(x) if x.ndim < nd else x)
    return res[0] if len(res) == 1 else res


def atleast_1d(*arys):
    return _atleast(1, arys, lambda x: getitem(x, (None,)))


def atleast_2d(*arys):
    return _atleast(2, arys, lambda x: getitem(x, (None,) * (2 - x.ndim)))


def atleast_3d(*arys):
    def make(x):
        if x.ndim == 0:
            return getitem(x, (None, None, None))
        if x.ndim == 1:
            return getitem(x, (None, slice(None), None))
        return getitem(x, (Ellipsis, None))

    return _atleast(3, arys, make)


# ---- broadcasting ------------------------------------------------------------------------------


def _broadcast_kernel(x, shape):
    return np.broadcast_to(x, shape)


def _check_broadcastable(in_shape: tuple, shape: tuple) -> None:
    off = len(shape) - len(in_shape)
    bad = off < 0 or any(
        not (_isnan(s) or s == 1 or s == shape[i + off]) for i, s in enumerate(in_shape)
    )
    if bad:
        raise ValueError(
            f"operands could not be broadcast together with remapped shapes "
            f"[original->remapped]: {tuple(in_shape)} and requested shape {tuple(shape)}"
        )


class TensorBroadcastTo(TensorOperand):
    """New and stretched axes are one chunk each (a read-only numpy broadcast view)."""

    _op_name = "broadcast-to"

    def tile(self):
        (x,) = self.inputs
        shape = tuple(self.shape)
        if _any_unknown(x):
            yield from ensure_known(x)
        _check_broadcastable(x.shape, shape)
        off = len(shape) - x.ndim
        stretched = [i < off or x.shape[i - off] != shape[i] for i in range(len(shape))]
        out_nsplits = tuple(
            (shape[i],) if stretched[i] else x.nsplits[i - off] for i in range(len(shape))
        )
        chunks = []
        for idx in chunk_grid(out_nsplits):
            src = x.chunk_at(tuple(0 if stretched[i + off] else idx[i + off] for i in range(x.ndim)))
            cshape = chunk_shape_at(out_nsplits, idx)
            chunks.append(self.new_chunk(idx, cshape, _broadcast_kernel, (src, cshape), blockwise=True))
        return [(chunks, out_nsplits)]


def broadcast_to(a, shape) -> Tensor:
    a = astensor(a)
    shape = _as_shape(shape)
    if any(s < 0 for s in shape):
        raise ValueError("all elements of broadcast shape must be non-negative")
    _check_broadcastable(a.shape, shape)
    if tuple(a.shape) == shape:
        return a
    op = TensorBroadcastTo([a.data], shape=shape)
    return op.new_tensor(shape, a.dtype)


def broadcast_arrays(*args) -> list:
    from .utils import broadcast_shape

    tensors = [astensor(a) for a in args]
    shape = broadcast_shape(*[t.shape for t in tensors])
    if has_unknown(shape):
        raise ValueError("broadcast_arrays needs known shapes")
    return [broadcast_to(t, shape) for t in tensors]


# ---- concatenate & friends ---------------------------------------------------------------------


def _astype_kernel(x, dtype):
    return x.astype(dtype)


def _align_axes(tensors, axes):
    """Re-cut ``tensors`` so that they share chunk boundaries on ``axes`` (lengths known)."""
    from .rechunk import _refine

    new = [list(t.nsplits) for t in tensors]
    for ax in axes:
        splits = [t.nsplits[ax] for t in tensors]
        if any(s != splits[0] for s in splits):
            target = _refine(splits)
            for n in new:
                n[ax] = target
    return [rechunk_now(t, n) for t, n in zip(tensors, new)]


def _same_on(tensors, axes) -> bool:
    for ax in axes:
        ref = tensors[0].nsplits[ax]
        for t in tensors[1:]:
            s = t.nsplits[ax]
            if s is not ref and (has_unknown(s) or has_unknown(ref) or s != ref):
                return False
    return True


class TensorConcatenate(TensorOperand):
    """Chunk lists joined along ``axis``; other axes are aligned first.  Input chunks are
    reused as they are unless a dtype cast is needed."""

    _op_name = "concatenate"

    def tile(self):
        inputs = list(self.inputs)
        axis = self.axis
        others = [a for a in range(inputs[0].ndim) if a != axis]
        if not _same_on(inputs, others):
            yield from ensure_known(*inputs)
            for t in inputs:
                if tuple(t.shape[a] for a in others) != tuple(inputs[0].shape[a] for a in others):
                    raise ValueError(
                        "all the input array dimensions except for the concatenation axis must match exactly"
                    )
            inputs = _align_axes(inputs, others)
        dtype = self.output.dtype if self.output is not None else inputs[0].dtype
        along = tuple(s for t in inputs for s in t.nsplits[axis])
        out_nsplits = tuple(along if a == axis else inputs[0].nsplits[a] for a in range(inputs[0].ndim))
        by_index = {}
        start = 0
        for t in inputs:
            for idx in t.chunk_grid():
                oidx = idx[:axis] + (idx[axis] + start,) + idx[axis + 1 :]
                c = t.chunk_at(idx)
                if t.dtype != dtype:
                    c = self.new_chunk(oidx, c.shape, _astype_kernel, (c, dtype), blockwise=True)
                by_index[oidx] = c
            start += len(t.nsplits[axis])
        return [([by_index[i] for i in chunk_grid(out_nsplits)], out_nsplits)]


def concatenate(tensors, axis=0) -> Tensor:
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError("concatenate needs a sequence of tensors")
    tensors = [astensor(t) for t in tensors]
    if not tensors:
        raise ValueError("need at least one array to concatenate")
    if axis is None:
        tensors = [ravel(t) for t in tensors]
        axis = 0
    ndim = tensors[0].ndim
    if ndim == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    for i, t in enumerate(tensors):
        if t.ndim != ndim:
            raise ValueError(
                "all the input arrays must have same number of dimensions, but the array at index 0 "
                f"has {ndim} dimension(s) and the array at index {i} has {t.ndim} dimension(s)"
            )
    axis = validate_axis(ndim, axis)
    shape = list(tensors[0].shape)
    for i, t in enumerate(tensors[1:], 1):
        for a in range(ndim):
            if a == axis:
                continue
            x, y = shape[a], t.shape[a]
            if not _isnan(x) and not _isnan(y) and x != y:
                raise ValueError(
                    "all the input array dimensions except for the concatenation axis must match exactly, "
                    f"but along dimension {a}, the array at index 0 has size {x} and the array at index "
                    f"{i} has size {y}"
                )
            if _isnan(x):
                shape[a] = y
    shape[axis] = sum(t.shape[axis] for t in tensors)
    dtype = np.result_type(*[t.dtype for t in tensors])
    if len(tensors) == 1:
        return tensors[0]
    op = TensorConcatenate([t.data for t in tensors], axis=axis)
    return op.new_tensor(tuple(shape), dtype)


def stack(tensors, axis=0) -> Tensor:
    tensors = [astensor(t) for t in tensors]
    if not tensors:
        raise ValueError("need at least one array to stack")
    shapes = {tuple(t.shape) for t in tensors}
    if len(shapes) != 1 and not any(has_unknown(s) for s in shapes):
        raise ValueError("all input arrays must have the same shape")
    axis = validate_axis(tensors[0].ndim + 1, axis)
    return concatenate([expand_dims(t, axis) for t in tensors], axis=axis)


def vstack(tup) -> Tensor:
    return concatenate([atleast_2d(t) for t in tup], axis=0)


def hstack(tup) -> Tensor:
    arrs = [atleast_1d(t) for t in tup]
    return concatenate(arrs, axis=0 if arrs and arrs[0].ndim == 1 else 1)


def dstack(tup) -> Tensor:
    return concatenate([atleast_3d(t) for t in tup], axis=2)


def column_stack(tup) -> Tensor:
    arrs = []
    for t in tup:
        t = astensor(t)
        arrs.append(getitem(t, (slice(None), None)) if t.ndim < 2 else t)
    return concatenate(arrs, axis=1)


# ---- split -----------------------------------------------------------------------------------------


def _split_bounds(n: int, indices_or_sections, equal: bool) -> list[tuple[int, int]]:
    if isinstance(indices_or_sections, numbers.Integral):
        k = int(indices_or_sections)
        if k <= 0:
            raise ValueError("number sections must be larger than 0.")
        if equal and n % k:
            raise ValueError("array split does not result in an equal division")
        q, r = divmod(n, k)
        sizes = [q + 1] * r + [q] * (k - r)
        offs = offsets(sizes)
        return [(offs[i], offs[i + 1]) for i in range(k)]
    cuts = [int(i) for i in indices_or_sections]
    edges = [0] + cuts + [n]
    out = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        lo = min(max(lo + n if lo < 0 else lo, 0), n)
        hi = min(max(hi + n if hi < 0 else hi, 0), n)
        out.append((lo, max(lo, hi)))
    return out


class TensorSplit(TensorOperand):
    """Several outputs, each a slice of the input along ``axis`` (the boundaries are
    computed at tile time, so the axis length may be unknown at build time)."""

    _op_name = "split"

    def tile(self):
        (x,) = self.inputs
        if has_unknown(x.nsplits[self.axis]):
            yield from ensure_known(x)
        bounds = _split_bounds(x.shape[self.axis], self.indices_or_sections, self.equal)
        results = []
        for i, (lo, hi) in enumerate(bounds):
            entries = [slice(None)] * x.ndim
            entries[self.axis] = slice(lo, hi)
            results.append(basic_tile(self, x, entries, out=i))
        return results


def _split(a, indices_or_sections, axis, equal):
    a = astensor(a)
    axis = validate_axis(a.ndim, axis)
    n = a.shape[axis]
    if isinstance(indices_or_sections, numbers.Integral):
        count = int(indices_or_sections)
    else:
        indices_or_sections = tuple(int(i) for i in indices_or_sections)
        count = len(indices_or_sections) + 1
    if _isnan(n):
        if isinstance(indices_or_sections, numbers.Integral) and count <= 0:
            raise ValueError("number sections must be larger than 0.")
        shapes = [a.shape[:axis] + (nan,) + a.shape[axis + 1 :]] * count
    else:
        bounds = _split_bounds(int(n), indices_or_sections, equal)
        shapes = [a.shape[:axis] + (hi - lo,) + a.shape[axis + 1 :] for lo, hi in bounds]
    op = TensorSplit([a.data], axis=axis, indices_or_sections=indices_or_sections, equal=equal)
    return op.new_tensors([(s, a.dtype) for s in shapes])


def split(a, indices_or_sections, axis=0) -> list:
    return _split(a, indices_or_sections, axis, equal=True)


def array_split(a, indices_or_sections, axis=0) -> list:
    return _split(a, indices_or_sections, axis, equal=False)


def hsplit(a, indices_or_sections) -> list:
    a = astensor(a)
    if a.ndim == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return split(a, indices_or_sections, axis=1 if a.ndim > 1 else 0)


def vsplit(a, indices_or_sections) -> list:
    a = astensor(a)
    if a.ndim < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(a, indices_or_sections, axis=0)


# ---- flips, repeat, tile -------------------------------------------------------------------------


def flip(m, axis=None) -> Tensor:
    m = astensor(m)
    axes = validate_axes(m.ndim, axis)
    return getitem(m, tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(m.ndim)))


def fliplr(m) -> Tensor:
    m = astensor(m)
    if m.ndim < 2:
        raise ValueError("Input must be >= 2-d.")
    return flip(m, 1)


def flipud(m) -> Tensor:
    m = astensor(m)
    if m.ndim < 1:
        raise ValueError("Input must be >= 1-d.")
    return flip(m, 0)


def _repeat_kernel(x, repeats, axis):
    return np.repeat(x, repeats, axis=axis)


class TensorRepeat(TensorOperand):
    """``np.repeat`` chunk by chunk along ``axis`` (per-element repeats are cut to match)."""

    _op_name = "repeat"

    def tile(self):
        (x,) = self.inputs
        axis, repeats = self.axis, self.repeats
        if _any_unknown(x):
            yield from ensure_known(x)
        splits = x.nsplits[axis]
        offs = offsets(splits)
        if np.ndim(repeats) == 0:
            parts = [int(repeats)] * len(splits)
            new = tuple(n * int(repeats) for n in splits)
        else:
            parts = [repeats[offs[i] : offs[i + 1]] for i in range(len(splits))]
            new = tuple(int(p.sum()) for p in parts)
        out_nsplits = tuple(new if a == axis else x.nsplits[a] for a in range(x.ndim))
        chunks = []
        for idx in chunk_grid(out_nsplits):
            src = x.chunk_at(idx)
            chunks.append(
                self.new_chunk(
                    idx, chunk_shape_at(out_nsplits, idx), _repeat_kernel, (src, parts[idx[axis]], axis), blockwise=True
                )
            )
        return [(chunks, out_nsplits)]


def repeat(a, repeats, axis=None) -> Tensor:
    a = astensor(a)
    if axis is None:
        a, axis = ravel(a), 0
    axis = validate_axis(a.ndim, axis)
    if isinstance(repeats, Tensor):
        raise TypeError("repeats must be an int or a numpy array, not a tensor")
    rep = np.asarray(repeats)
    if rep.dtype.kind not in "iu":
        raise TypeError("repeats must be integers")
    if (rep < 0).any():
        raise ValueError("negative dimensions are not allowed")
    n = a.shape[axis]
    if rep.ndim == 1 and rep.size == 1:
        rep = rep.reshape(())
    if rep.ndim == 0:
        length = n * int(rep)
        rep = int(rep)
    else:
        if rep.ndim != 1 or (not _isnan(n) and rep.size != n):
            raise ValueError(f"operands could not be broadcast together with shape ({n},) ({rep.size},)")
        length = int(rep.sum())
    op = TensorRepeat([a.data], repeats=rep, axis=axis)
    return op.new_tensor(a.shape[:axis] + (length,) + a.shape[axis + 1 :], a.dtype)


def tile(A, reps) -> Tensor:
    """``np.tile``: copies joined with :func:`concatenate` (the chunks are shared, so no
    data is copied until a consumer needs it)."""
    A = astensor(A)
    reps = (int(reps),) if isinstance(reps, numbers.Integral) else tuple(int(r) for r in reps)
    if any(r < 0 for r in reps):
        raise ValueError("negative dimensions are not allowed")
    ndim = max(A.ndim, len(reps))
    reps = (1,) * (ndim - len(reps)) + reps
    if A.ndim < ndim:
        A = getitem(A, (None,) * (ndim - A.ndim))
    for ax, r in enumerate(reps):
        if r == 0:
            A = getitem(A, tuple(slice(0, 0) if a == ax else slice(None) for a in range(ndim)))
        elif r > 1:
            A = concatenate([A] * r, axis=ax)
    return A


# ---- expressions that need the input's lengths --------------------------------------------------


class TensorDeferred(TensorOperand):
    """``builder(x, *args)`` built at tile time, once ``x``'s lengths are known, and tiled on
    the spot: its chunks become this operand's (for expressions whose plan depends on
    lengths that may be unknown at build time, e.g. ``roll`` after a boolean filter)."""

    _op_name = "deferred"

    def tile(self):
        from ..tiling.tile import tile as _tile_now

        (x,) = self.inputs
        if _any_unknown(x):
            yield from ensure_known(x)
        res = astensor(self.builder(Tensor(x), *self.args)).data
        if not res.is_tiled:
            _tile_now([res], None)
        return [(res.chunks, res.nsplits)]


def _deferred(builder, a: Tensor, args: tuple, shape, dtype) -> Tensor:
    op = TensorDeferred([a.data], builder=builder, args=tuple(args))
    return op.new_tensor(shape, dtype)


# ---- append, insert, delete ------------------------------------------------------------------------


def append(arr, values, axis=None) -> Tensor:
    """``arr`` with ``values`` appended along ``axis`` (both flattened if ``axis`` is None)."""
    arr = astensor(arr)
    values = astensor(values)
    if axis is None:
        if arr.ndim != 1:
            arr = ravel(arr)
        values = ravel(values)
        axis = arr.ndim - 1
    return concatenate((arr, values), axis=axis)


def _axis_prepare(arr: Tensor, axis):
    if axis is None:
        if arr.ndim != 1:
            arr = ravel(arr)
        return arr, 0
    return arr, validate_axis(arr.ndim, axis)


def _take_along(v, ks, axis):
    return np.take(v, ks, axis=axis)


def _merge_insert(x, idx, vals, axis):
    """numpy's insert of ``vals`` (slabs along ``axis``) before the positions ``idx`` (local,
    in the order given) of the block ``x``."""
    m = len(idx)
    if m == 0:
        return x
    order = np.argsort(idx, kind="mergesort")
    pos = np.empty(m, dtype=np.intp)
    pos[order] = idx[order] + np.arange(m)
    shape = list(x.shape)
    shape[axis] += m
    out = np.empty(shape, dtype=x.dtype)
    keep = np.ones(shape[axis], dtype=bool)
    keep[pos] = False
    pre = (slice(None),) * axis
    out[pre + (pos,)] = vals
    out[pre + (keep,)] = x
    return out


def _insert_tensor_kernel(x, obj, vals, lo, hi, n, last, numnew, axis):
    idx = np.asarray(obj).ravel().astype(np.intp)
    if idx.size == 1 and numnew != 1:
        idx = np.repeat(idx, numnew)
    if idx.size and (idx.min() < -n or idx.max() > n):
        bad = idx.min() if idx.min() < -n else idx.max()
        raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {n}")
    idx = np.where(idx < 0, idx + n, idx)
    sel = (idx >= lo) & ((idx < hi) | (last and idx == hi))
    return _merge_insert(x, idx[sel] - lo, np.take(vals, np.flatnonzero(sel), axis=axis), axis)


def _insert_indices(obj, n, axis):
    """numpy's insert indices: ``(index array, single)``; ``single`` for one index, which
    inserts ``values`` as a block (moved to ``axis`` when the index is a scalar)."""
    if isinstance(obj, slice):
        idx = np.arange(*obj.indices(n), dtype=np.intp)
    else:
        idx = np.array(obj)
        if idx.dtype == bool:
            if idx.ndim != 1:
                raise ValueError("boolean array argument obj to insert must be one dimensional")
            idx = np.flatnonzero(idx)
        elif idx.ndim > 1:
            raise ValueError("index array argument obj to insert must be one dimensional or scalar")
        if idx.size == 0:
            idx = idx.astype(np.intp)
        elif idx.dtype.kind not in "iu":
            raise IndexError("arrays used as indices must be of integer (or boolean) type")
    if idx.size == 1:
        index = int(idx.item())
        if index < -n or index > n:
            raise IndexError(f"index {obj} is out of bounds for axis {axis} with size {n}")
        return np.array([index + n if index < 0 else index], dtype=np.intp), True
    idx = idx.astype(np.intp)
    if idx.size and (idx.min() < -n or idx.max() > n):
        bad = idx.min() if idx.min() < -n else idx.max()
        raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {n}")
    return np.where(idx < 0, idx + n, idx), False


def _insert_values(values, arr: Tensor, axis: int, single: bool, scalar_index: bool, numnew):
    """The inserted slabs, broadcast to ``arr``'s shape with ``numnew`` along ``axis``:
    ``(numpy array or Tensor, numnew)``."""
    ndim = arr.ndim
    if isinstance(values, Tensor):
        v = values.astype(arr.dtype) if values.dtype != arr.dtype else values
    else:
        v = np.array(values, dtype=arr.dtype)
    if single:
        if v.ndim < ndim:
            v = v[(None,) * (ndim - v.ndim)] if isinstance(v, np.ndarray) else getitem(v, (None,) * (ndim - v.ndim))
        if scalar_index:
            v = np.moveaxis(v, 0, axis) if isinstance(v, np.ndarray) else moveaxis(v, 0, axis)
        numnew = v.shape[axis]
    target = tuple(numnew if a == axis else arr.shape[a] for a in range(ndim))
    vshape = tuple(v.shape)
    while len(vshape) > ndim and vshape[0] == 1:
        vshape = vshape[1:]
    bad = len(vshape) > ndim or any(
        not (_isnan(s) or _isnan(t) or s == 1 or s == t) for s, t in zip(vshape[::-1], target[::-1])
    )
    if bad:
        raise ValueError(f"could not broadcast input array from shape {tuple(v.shape)} into shape {target}")
    if isinstance(v, np.ndarray):
        return v.reshape(vshape), numnew
    if tuple(vshape) != tuple(v.shape):
        v = reshape(v, vshape)
    return v, numnew


class TensorInsert(TensorOperand):
    """``insert`` along ``axis`` chunk by chunk: each input chunk gets the slabs whose index
    falls into it (index ``N`` goes to the last chunk); chunks without any are reused."""

    _op_name = "insert"

    def tile(self):
        x = self.inputs[0]
        axis = self.axis
        rest = list(self.inputs[1:])
        vt = rest.pop(0) if self.values_is_tensor else None
        ot = rest.pop(0) if rest else None
        if _any_unknown(x) or (vt is not None and any(has_unknown(s) for s in vt.nsplits)):
            yield from ensure_known(*([x] + ([vt] if vt is not None else [])))
        n = int(x.shape[axis])
        splits = x.nsplits[axis]
        offs = offsets(splits)
        vals = self.values
        target = tuple(self.numnew if a == axis else int(x.shape[a]) for a in range(x.ndim))
        if vt is not None:
            from ..tiling.tile import tile as _tile_now

            b = broadcast_to(Tensor(vt), target).data
            if not b.is_tiled:
                _tile_now([b], None)
            vt = rechunk_now(b, tuple((self.numnew,) if a == axis else x.nsplits[a] for a in range(x.ndim)))
        else:
            vals = np.broadcast_to(vals, target)
        other = [a for a in range(x.ndim) if a != axis]
        ooffs = {a: offsets(x.nsplits[a]) for a in other}
        if ot is not None:
            ochunk = rechunk_now_all(ot)
            along = (nan,) * len(splits)
        else:
            idx, single = _insert_indices(self.obj, n, axis)
            if single:
                idx = np.repeat(idx, self.numnew)
            per = []
            for i in range(len(splits)):
                last = i == len(splits) - 1
                sel = (idx >= offs[i]) & ((idx < offs[i + 1]) | (last & (idx == offs[i + 1])))
                per.append(np.flatnonzero(sel))
            along = tuple(s + len(k) for s, k in zip(splits, per))
        out_nsplits = tuple(along if a == axis else x.nsplits[a] for a in range(x.ndim))
        chunks = []
        for cidx in x.chunk_grid():
            c = x.chunk_at(cidx)
            i = cidx[axis]
            cshape = chunk_shape_at(out_nsplits, cidx)
            if vt is not None:
                vpart = vt.chunk_at(tuple(0 if a == axis else cidx[a] for a in range(x.ndim)))
            else:
                sl = tuple(
                    slice(None) if a == axis else slice(ooffs[a][cidx[a]], ooffs[a][cidx[a] + 1])
                    for a in range(x.ndim)
                )
                vpart = vals[sl]
            if ot is not None:
                args = (c, ochunk, vpart, offs[i], offs[i + 1], n, i == len(splits) - 1, self.numnew, axis)
                chunks.append(self.new_chunk(cidx, cshape, _insert_tensor_kernel, args))
                continue
            ks = per[i]
            if not len(ks):
                chunks.append(c)
                continue
            if vt is not None:
                vpart = self.new_chunk(cidx, cshape, _take_along, (vpart, ks, axis))
                vpart.key = (self.output_key(0) + "-values", *cidx)
            else:
                vpart = np.ascontiguousarray(np.take(vpart, ks, axis=axis))
            args = (c, idx[ks] - offs[i], vpart, axis)
            chunks.append(self.new_chunk(cidx, cshape, _merge_insert, args))
        return [(chunks, out_nsplits)]


def rechunk_now_all(t):
    """``t`` as one chunk (tiled now; for small index tensors)."""
    from .indexing import rechunk_now

    return rechunk_now(t, tuple((int(s),) for s in t.shape)).chunks[0]


def insert(arr, obj, values, axis=None) -> Tensor:
    """``values`` inserted along ``axis`` before the indices ``obj`` (``numpy.insert``):
    ``obj`` an int, a slice, a sequence of ints (or booleans) or an integer tensor."""
    arr, axis = _axis_prepare(astensor(arr), axis)
    n = arr.shape[axis]
    inputs = [arr.data]
    if isinstance(obj, Tensor):
        if obj.dtype == np.bool_:
            raise NotImplementedError("insert with a boolean tensor as obj is not supported; pass its nonzero()")
        if obj.dtype.kind not in "iu":
            raise IndexError("arrays used as indices must be of integer (or boolean) type")
        if obj.ndim > 1:
            raise ValueError("index array argument obj to insert must be one dimensional or scalar")
        if has_unknown(obj.shape):
            raise NotImplementedError("insert with an index tensor of unknown length is not supported")
        single, scalar_index, numnew = obj.size == 1, obj.ndim == 0, int(obj.size)
    elif _isnan(n):
        if isinstance(obj, slice):
            raise NotImplementedError("insert with a slice on an axis of unknown length is not supported")
        idx, single = _insert_indices(obj, 1 << 62, axis)
        scalar_index, numnew = np.ndim(obj) == 0, len(idx)
    else:
        idx, single = _insert_indices(obj, int(n), axis)
        scalar_index, numnew = single and np.ndim(obj) == 0 and not isinstance(obj, slice), len(idx)
    vals, numnew = _insert_values(values, arr, axis, single, scalar_index, numnew)
    if isinstance(vals, Tensor):
        inputs.append(vals.data)
        vals_param = None
    else:
        vals_param = vals
    if isinstance(obj, Tensor):
        inputs.append(obj.data)
        obj = None
    op = TensorInsert(inputs, axis=axis, obj=obj, values=vals_param, values_is_tensor=vals_param is None,
                      numnew=numnew)
    t = op.new_tensor(tuple(n + numnew if a == axis else arr.shape[a] for a in range(arr.ndim)), arr.dtype)
    t.data.order = arr.order
    return t


def _delete_plan(obj, n: int, axis: int):
    """The deleted positions along an axis of length ``n`` (numpy's ``delete`` rules and
    errors): a ``range`` for a slice, else a sorted unique index array."""
    if isinstance(obj, slice):
        r = range(*obj.indices(n))
        return r[::-1] if r.step < 0 else r
    if isinstance(obj, (numbers.Integral, np.integer)) and not isinstance(obj, (bool, np.bool_)):
        o = int(obj)
        if o < -n or o >= n:
            raise IndexError(f"index {o} is out of bounds for axis {axis} with size {n}")
        return np.array([o % n], dtype=np.intp)
    arr = np.asarray(obj)
    if arr.size == 0 and not isinstance(obj, np.ndarray):
        arr = arr.astype(np.intp)
    if arr.dtype == bool:
        if arr.shape != (n,):
            raise ValueError(
                "boolean array argument obj to delete must be one dimensional and match the axis "
                f"length of {n}"
            )
        return np.flatnonzero(arr)
    if arr.dtype.kind not in "iu":
        raise IndexError("arrays used as indices must be of integer (or boolean) type")
    arr = arr.ravel().astype(np.intp)
    if arr.size and (arr.min() < -n or arr.max() >= n):
        bad = arr.min() if arr.min() < -n else arr.max()
        raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {n}")
    return np.unique(np.where(arr < 0, arr + n, arr))


def _delete_local(plan, lo: int, hi: int):
    """Local positions (a slice or an index array) of ``plan`` inside ``[lo, hi)`` and
    how many there are."""
    if isinstance(plan, range):
        if not len(plan) or hi <= lo:
            return slice(0, 0), 0
        step = plan.step
        first = max(plan.start, plan.start + -(-(lo - plan.start) // step) * step)
        last = min(plan[-1] + 1, hi)
        if first >= last:
            return slice(0, 0), 0
        cnt = len(range(first, last, step))
        return slice(first - lo, last - lo, step), cnt
    sel = plan[(plan >= lo) & (plan < hi)] - lo
    return sel, len(sel)


def _delete_kernel(x, local, axis):
    return np.delete(x, local, axis=axis)


def _delete_tensor_kernel(x, obj, lo, hi, n, axis):
    plan = _delete_plan(np.asarray(obj), n, axis)
    return np.delete(x, _delete_local(plan, lo, hi)[0], axis=axis)


class TensorDelete(TensorOperand):
    """``delete`` chunk by chunk along ``axis``: each chunk drops its own deleted positions
    (chunks without any are reused); an index tensor makes the lengths unknown."""

    _op_name = "delete"

    def tile(self):
        x = self.inputs[0]
        axis = self.axis
        if _any_unknown(x):
            yield from ensure_known(x)
        n = int(x.shape[axis])
        splits = x.nsplits[axis]
        offs = offsets(splits)
        if len(self.inputs) > 1:
            ochunk = rechunk_now_all(self.inputs[1])
            out_nsplits = tuple((nan,) * len(splits) if a == axis else x.nsplits[a] for a in range(x.ndim))
            chunks = []
            for cidx in x.chunk_grid():
                i = cidx[axis]
                args = (x.chunk_at(cidx), ochunk, offs[i], offs[i + 1], n, axis)
                chunks.append(
                    self.new_chunk(cidx, chunk_shape_at(out_nsplits, cidx), _delete_tensor_kernel, args)
                )
            return [(chunks, out_nsplits)]
        plan = _delete_plan(self.obj, n, axis)
        locs = [_delete_local(plan, offs[i], offs[i + 1]) for i in range(len(splits))]
        along = tuple(s - cnt for s, (_, cnt) in zip(splits, locs))
        out_nsplits = tuple(along if a == axis else x.nsplits[a] for a in range(x.ndim))
        chunks = []
        for cidx in x.chunk_grid():
            c = x.chunk_at(cidx)
            local, cnt = locs[cidx[axis]]
            if cnt:
                c = self.new_chunk(cidx, chunk_shape_at(out_nsplits, cidx), _delete_kernel, (c, local, axis))
            chunks.append(c)
        return [(chunks, out_nsplits)]


def delete(arr, obj, axis=None) -> Tensor:
    """``arr`` without the entries ``obj`` along ``axis`` (``numpy.delete``): ``obj`` an int,
    a slice, a sequence of ints, a boolean mask, or an integer or boolean tensor."""
    arr, axis = _axis_prepare(astensor(arr), axis)
    n = arr.shape[axis]
    if isinstance(obj, Tensor):
        if obj.dtype == np.bool_:
            if obj.ndim != 1 or (not _isnan(n) and not _isnan(obj.shape[0]) and obj.shape[0] != n):
                raise ValueError(
                    "boolean array argument obj to delete must be one dimensional and match the axis "
                    f"length of {n}"
                )
            from .arithmetic import logical_not

            return getitem(arr, (slice(None),) * axis + (logical_not(obj),))
        if obj.dtype.kind not in "iu":
            raise IndexError("arrays used as indices must be of integer (or boolean) type")
        op = TensorDelete([arr.data, ravel(obj).data], axis=axis, obj=None)
        shape = tuple(nan if a == axis else arr.shape[a] for a in range(arr.ndim))
    else:
        if isinstance(obj, (list, tuple)):
            obj = np.asarray(obj) if len(obj) else np.asarray(obj, dtype=np.intp)
        if _isnan(n):
            length = nan
        else:
            plan = _delete_plan(obj, int(n), axis)
            length = int(n) - len(plan)
        op = TensorDelete([arr.data], axis=axis, obj=obj)
        shape = tuple(length if a == axis else arr.shape[a] for a in range(arr.ndim))
    t = op.new_tensor(shape, arr.dtype)
    t.data.order = arr.order
    return t


# ---- roll, rollaxis, dsplit ---------------------------------------------------------------------


def _roll_known(a: Tensor, shifts: dict) -> Tensor:
    for ax, sh in shifts.items():
        n = int(a.shape[ax])
        if n == 0:
            continue
        s = sh % n
        if not s:
            continue
        pre = (slice(None),) * ax
        a = concatenate([getitem(a, pre + (slice(n - s, None),)), getitem(a, pre + (slice(0, n - s),))], axis=ax)
    return a


def roll(a, shift, axis=None) -> Tensor:
    """Elements rolled along ``axis`` (``numpy.roll``; ``shift``/``axis`` may be tuples,
    ``axis=None`` rolls the flattened tensor).  Chunks are sliced and re-joined, never
    gathered."""
    a = astensor(a)
    if axis is None:
        if a.ndim == 1:
            return roll(a, shift, 0)
        if has_unknown(a.shape):
            return _deferred(_roll_flat, a, (shift,), a.shape, a.dtype)
        return reshape(roll(ravel(a), shift, 0), a.shape)
    b = np.broadcast(np.asarray(shift), np.asarray(axis))
    if b.ndim > 1:
        raise ValueError("'shift' and 'axis' should be scalars or 1D sequences")
    shifts = {ax: 0 for ax in range(a.ndim)}
    for sh, ax in b:
        shifts[validate_axis(a.ndim, int(ax))] += int(sh)
    shifts = {ax: s for ax, s in shifts.items() if s}
    if any(_isnan(a.shape[ax]) for ax in shifts):
        return _deferred(_roll_known, a, (shifts,), a.shape, a.dtype)
    out = _roll_known(a, shifts)
    return Tensor(out.data) if out is a else out


def _roll_flat(a: Tensor, shift) -> Tensor:
    return reshape(roll(ravel(a), shift, 0), a.shape)


def rollaxis(a, axis, start=0) -> Tensor:
    """Roll ``axis`` backwards until it lies before ``start`` (``numpy.rollaxis``)."""
    a = astensor(a)
    n = a.ndim
    axis = validate_axis(n, axis)
    if not isinstance(start, numbers.Integral):
        raise TypeError(f"start must be an integer, got {start!r}")
    if start < 0:
        start += n
    if not 0 <= start < n + 1:
        raise np.exceptions.AxisError(f"'start' arg requires {-n} <= start < {n + 1}, but {start} was passed in")
    if axis < start:
        start -= 1
    if axis == start:
        return a
    axes = list(range(n))
    axes.remove(axis)
    axes.insert(start, axis)
    return transpose(a, axes)


def dsplit(a, indices_or_sections) -> list:
    """Split along the third axis (``numpy.dsplit``)."""
    a = astensor(a)
    if a.ndim < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(a, indices_or_sections, axis=2)


# ---- diff, ediff1d -----------------------------------------------------------------------------------


def _diff_kernel(x, heads, n, axis):
    if heads:
        x = np.concatenate([x, *heads], axis=axis)
    return np.diff(x, n=n, axis=axis)


class TensorDiff(TensorOperand):
    """``n``-th difference along ``axis``, chunk by chunk: output chunk ``i`` needs the
    first ``n`` elements after input chunk ``i``, taken from the next chunks by small
    slicing tasks (only those elements travel)."""

    _op_name = "diff"

    def tile(self):
        from .indexing import _getitem_kernel

        (x,) = self.inputs
        axis, n = self.axis, self.n
        if _any_unknown(x):
            yield from ensure_known(x)
        splits = x.nsplits[axis]
        offs = offsets(splits)
        total = offs[-1]
        out_len = max(0, total - n)
        keep = [i for i in range(len(splits)) if min(offs[i + 1], out_len) > offs[i]]
        along = tuple(min(offs[i + 1], out_len) - offs[i] for i in keep) or (0,)
        out_nsplits = tuple(along if a == axis else x.nsplits[a] for a in range(x.ndim))
        pre = (slice(None),) * axis
        chunks = []
        for oidx in chunk_grid(out_nsplits):
            cshape = chunk_shape_at(out_nsplits, oidx)
            if not keep:
                src = x.chunk_at(tuple(0 if a == axis else oidx[a] for a in range(x.ndim)))
                chunks.append(self.new_chunk(oidx, cshape, _diff_kernel, (src, [], n, axis)))
                continue
            i = keep[oidx[axis]]
            src = x.chunk_at(oidx[:axis] + (i,) + oidx[axis + 1 :])
            # elements offs[i] .. offs[i] + length + n are needed; those past the chunk come from the next ones
            need = min(offs[i] + cshape[axis] + n, total) - offs[i + 1]
            heads = []
            j = i + 1
            while need > 0:
                take = min(need, splits[j])
                nb = x.chunk_at(oidx[:axis] + (j,) + oidx[axis + 1 :])
                if take == splits[j]:
                    heads.append(nb)
                else:
                    hshape = tuple(take if a == axis else nb.shape[a] for a in range(x.ndim))
                    h = self.new_chunk(oidx, hshape, _getitem_kernel, (nb, pre + (slice(0, take),)), dtype=x.dtype)
                    h.key = (self.output_key(0) + "-head", *oidx, j)
                    heads.append(h)
                need -= take
                j += 1
            chunks.append(self.new_chunk(oidx, cshape, _diff_kernel, (src, heads, n, axis)))
        return [(chunks, out_nsplits)]


def _diff_dtype(dtype, n):
    return np.diff(np.zeros(n + 1, dtype=dtype), n=n).dtype if n else np.dtype(dtype)


def diff(a, n=1, axis=-1, prepend=np._NoValue, append=np._NoValue) -> Tensor:
    """The ``n``-th discrete difference along ``axis`` (``numpy.diff``, with ``prepend``
    and ``append``), computed chunk by chunk."""
    a = astensor(a)
    n = operator_index(n)
    if n == 0:
        return a
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n!r}")
    if a.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = validate_axis(a.ndim, axis)
    parts = []
    for extra in (prepend, append):
        if extra is np._NoValue:
            parts.append(None)
            continue
        e = astensor(extra)
        if e.ndim == 0:
            shape = tuple(1 if ax == axis else a.shape[ax] for ax in range(a.ndim))
            if has_unknown(shape):
                raise NotImplementedError("diff with a scalar prepend/append needs the other lengths known")
            e = broadcast_to(e, shape)
        parts.append(e)
    if parts[0] is not None or parts[1] is not None:
        a = concatenate([p for p in (parts[0], a, parts[1]) if p is not None], axis=axis)
    length = nan if _isnan(a.shape[axis]) else max(0, int(a.shape[axis]) - n)
    op = TensorDiff([a.data], n=n, axis=axis)
    return op.new_tensor(a.shape[:axis] + (length,) + a.shape[axis + 1 :], _diff_dtype(a.dtype, n))


def operator_index(n) -> int:
    import operator

    return operator.index(n)


def ediff1d(ary, to_end=None, to_begin=None) -> Tensor:
    """Differences between consecutive elements of the flattened ``ary``, with ``to_begin``
    and ``to_end`` around them (``numpy.ediff1d``)."""
    ary = ravel(astensor(ary))
    dtype = ary.dtype
    if dtype == np.bool_:
        raise TypeError(
            "numpy boolean subtract, the `-` operator, is not supported, use the bitwise_xor, the `^` "
            "operator, or the logical_xor function instead."
        )
    pieces = []
    for extra, name in ((to_begin, "to_begin"), (to_end, "to_end")):
        if extra is None:
            pieces.append(None)
            continue
        e = extra if isinstance(extra, Tensor) else np.asanyarray(extra)
        if not np.can_cast(e.dtype if isinstance(e, Tensor) else e, dtype, casting="same_kind"):
            raise TypeError(f"dtype of `{name}` must be compatible with input `ary` under the `same_kind` rule.")
        e = ravel(astensor(e))
        pieces.append(e.astype(dtype) if e.dtype != dtype else e)
    d = diff(ary) if ary.dtype == _diff_dtype(dtype, 1) else diff(ary).astype(dtype)
    parts = [p for p in (pieces[0], d, pieces[1]) if p is not None]
    return concatenate(parts) if len(parts) > 1 else d
