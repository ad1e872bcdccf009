"""``norm``: vector and matrix norms as numpy.linalg.norm computes them.

Vector norms and the entry-wise/induced matrix norms are tree reductions: a per-chunk
kernel reduces each block over the reduced axes (keeping them as length 1), partials are
combined with ``tensor.combine-size``-way ``add``/``maximum``/``minimum`` steps, and a
finishing kernel takes the root (``sqrt``, ``**(1/p)``).  Induced norms chain two such
reductions (sum along one axis, max/min along the other); the 2-norm and nuclear norm use
the singular values from :func:`svd`.
"""

from __future__ import annotations

import functools
import itertools
import numbers

import numpy as np

from ..core import Tensor, TensorOperand, astensor
from ..utils import chunk_grid, validate_axis
from ._utils import tree_sum

__all__ = ["norm"]

_COMBINE = {"sumsq": np.add, "sumabs": np.add, "sump": np.add, "count": np.add, "max": np.maximum, "min": np.minimum}


def _norm_chunk_kernel(x, axes, how, p, dtype):
    if how == "count":
        return np.sum(x != 0, axis=axes, keepdims=True).astype(dtype)
    a = np.abs(x).astype(dtype, copy=False)
    if how == "sumsq":
        return np.sum(a * a, axis=axes, keepdims=True)
    if how == "sumabs":
        return np.sum(a, axis=axes, keepdims=True)
    if how == "sump":
        return np.sum(a**p, axis=axes, keepdims=True)
    return (np.max if how == "max" else np.min)(a, axis=axes, keepdims=True)


def _norm_combine_kernel(parts, how):
    return functools.reduce(_COMBINE[how], parts)


def _norm_finish_kernel(x, how, p, axes, keepdims):
    if how == "sumsq":
        x = np.sqrt(x)
    elif how == "sump":
        x = x ** (1.0 / p)
    return x if keepdims else np.squeeze(x, axis=axes)


class TensorNormReduce(TensorOperand):
    """One reduction step of a norm over ``axes`` (see the module docstring)."""

    _op_name = "norm-reduce"

    def tile(self):
        (x,) = self.inputs
        axes, how, p, dtype = self.axes, self.how, self.p, self.dtype
        keep_nsplits = tuple((1,) if ax in axes else s for ax, s in enumerate(x.nsplits))
        chunks = []
        for idx in chunk_grid(keep_nsplits):
            shape = tuple(1 if ax in axes else x.nsplits[ax][i] for ax, i in enumerate(idx))
            ranges = [range(len(x.nsplits[ax])) if ax in axes else (i,) for ax, i in enumerate(idx)]
            partials = []
            for src in itertools.product(*ranges):
                c = self.new_chunk(idx, shape, _norm_chunk_kernel, (x.chunk_at(src), axes, how, p, dtype))
                c.key = (self.output_key(0) + "-partial", *src)
                partials.append(c)
            root = tree_sum(self, idx, shape, partials, func=_norm_combine_kernel, args=(how,))
            if len(partials) > 1:
                root.key = (self.output_key(0) + "-root", *idx)
            out_idx = idx if self.keepdims else tuple(i for ax, i in enumerate(idx) if ax not in axes)
            out_shape = shape if self.keepdims else tuple(s for ax, s in enumerate(shape) if ax not in axes)
            chunks.append(
                self.new_chunk(out_idx, out_shape, _norm_finish_kernel, (root, how, p, axes, self.keepdims), blockwise=True)
            )
        nsplits = keep_nsplits if self.keepdims else tuple(s for ax, s in enumerate(keep_nsplits) if ax not in axes)
        return [(chunks, nsplits)]


def _reduce(x: Tensor, axes, how: str, dtype, keepdims: bool, p=None) -> Tensor:
    axes = tuple(sorted(axes))
    op = TensorNormReduce([x.data], axes=axes, how=how, p=p, dtype=np.dtype(dtype), keepdims=keepdims)
    shape = tuple(1 if ax in axes else s for ax, s in enumerate(x.shape))
    if not keepdims:
        shape = tuple(s for ax, s in enumerate(x.shape) if ax not in axes)
    return op.new_tensor(shape, dtype)


def _vector_norm(x, axis, ord, dtype, keepdims):  # noqa: A002 - numpy's name
    axes = (axis,) if isinstance(axis, int) else axis
    if ord is None or ord == 2:
        return _reduce(x, axes, "sumsq", dtype, keepdims)
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    if ord == np.inf:
        return _reduce(x, axes, "max", dtype, keepdims)
    if ord == -np.inf:
        return _reduce(x, axes, "min", dtype, keepdims)
    if ord == 0:
        return _reduce(x, axes, "count", dtype, keepdims)
    if ord == 1:
        return _reduce(x, axes, "sumabs", dtype, keepdims)
    return _reduce(x, axes, "sump", dtype, keepdims, p=float(ord))


def _matrix_norm(x, row, col, ord, dtype, keepdims):  # noqa: A002 - numpy's name
    if ord is None or ord == "fro":
        return _reduce(x, (row, col), "sumsq", dtype, keepdims)
    if ord in (1, -1, np.inf, -np.inf):
        inner, outer = (row, col) if ord in (1, -1) else (col, row)
        sums = _reduce(x, (inner,), "sumabs", dtype, True)
        res = _reduce(sums, (outer,), "max" if ord > 0 else "min", dtype, True)
        return res if keepdims else _reduce(res, (row, col), "max", dtype, False)
    if ord in (2, -2, "nuc"):
        if x.ndim != 2:
            raise NotImplementedError(f"norm: ord={ord!r} is only supported for 2-d tensors")
        from .decompositions import svd

        a = x if (row, col) == (0, 1) else _transpose_2d(x)
        s = svd(a, compute_uv=False)
        res = _reduce(s, (0,), {2: "max", -2: "min", "nuc": "sumabs"}[ord], dtype, False)
        if keepdims:
            from .products import einsum

            return einsum(",ij->ij", res, np.ones((1, 1), dtype=dtype))
        return res
    raise ValueError("Invalid norm order for matrices.")


def _transpose_2d(x):
    from .products import einsum

    return einsum("ij->ji", x)


def norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002 - numpy's name
    """``numpy.linalg.norm``: vector norms (None/2, inf, -inf, 0, 1, any p) and matrix
    norms (None/'fro', 'nuc', inf, -inf, 1, -1, 2, -2)."""
    x = astensor(x)
    probe_shape = (1,) * x.ndim
    try:
        dtype = np.linalg.norm(np.ones(probe_shape or (), dtype=x.dtype)).dtype
    except TypeError as e:
        raise TypeError(f"norm: unsupported dtype {x.dtype}: {e}") from None
    if dtype.kind != "f":
        dtype = np.dtype(np.float64)
    if axis is None:
        if ord is None:
            return _reduce(x, tuple(range(x.ndim)), "sumsq", dtype, keepdims)
        if x.ndim == 1:
            return _vector_norm(x, (0,), ord, dtype, keepdims)
        if x.ndim == 2:
            return _matrix_norm(x, 0, 1, ord, dtype, keepdims)
        raise ValueError("Improper number of dimensions to norm.")
    if isinstance(axis, numbers.Integral):
        return _vector_norm(x, (validate_axis(x.ndim, axis),), ord, dtype, keepdims)
    axis = tuple(axis)
    if len(axis) == 1:
        return _vector_norm(x, (validate_axis(x.ndim, axis[0]),), ord, dtype, keepdims)
    if len(axis) == 2:
        row, col = (validate_axis(x.ndim, a) for a in axis)
        if row == col:
            raise ValueError("Duplicate axes given.")
        return _matrix_norm(x, row, col, ord, dtype, keepdims)
    raise ValueError("Improper number of dimensions to norm.")
