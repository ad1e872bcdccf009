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
