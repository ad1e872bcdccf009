"""Helpers shared by tensor operands: chunk sizes, axes, broadcasting, chunk grids."""

from __future__ import annotations

import itertools
import math
import numbers
from typing import Sequence

import numpy as np

from .. import config
from ..tiling.core import has_unknown

nan = float("nan")


def prod(xs) -> float:
    p = 1
    for x in xs:
        p *= x
    return p


def _auto_splits(shape: tuple, itemsize: int, limit: int | None = None) -> tuple[int, ...]:
    """Chunk lengths for ``chunk_size=None``: near-cubic chunks of at most ``limit`` bytes."""
    if limit is None:
        from dask.utils import parse_bytes

        limit = parse_bytes(config.get("tiling.chunk-store-limit"))
    nelem = max(1, limit // max(1, itemsize))
    ndim = len(shape)
    if ndim == 0:
        return ()
    dims = [max(1, s) for s in shape]
    # largest cube-ish block within nelem, clipped to the shape
    out = list(dims)
    while prod(out) > nelem:
        i = int(np.argmax(out))
        out[i] = max(1, out[i] // 2)
    return tuple(out)


def _auto_rest(shape: tuple, given: list, itemsize: int) -> list:
    """Chunk lengths for the axes after ``len(given)`` when the leading ones are chunked as
    ``given``: Mars's ``decide_chunk_sizes`` (the largest given chunks count against the
    chunk store limit; the other axes get equal lengths filling the rest)."""
    from dask.utils import parse_bytes

    limit = parse_bytes(config.get("tiling.chunk-store-limit"))
    occupied = float(max(1, itemsize))
    for dim, size in zip(shape, given):
        if isinstance(size, (tuple, list)):
            size = max((s for s in size if s == s), default=1)
        elif size is None or size == -1 or (isinstance(size, float) and math.isnan(size)):
            size = dim
        elif dim == dim:
            size = min(size, dim)
        occupied *= max(1, size) if size == size else 1
    rest = list(range(len(given), len(shape)))
    out: dict = {j: (nan,) for j in rest if has_unknown((shape[j],))}
    left = {j: [] for j in rest if j not in out}
    unsplit = {j: int(shape[j]) for j in left}
    while left:
        dim_size = max(int((limit / occupied) ** (1 / len(left))), 1)
        for j, ns in list(left.items()):
            ns.append(min(unsplit[j], dim_size))
            unsplit[j] -= ns[-1]
            if unsplit[j] <= 0:
                out[j] = tuple(ns)
                occupied *= max(1, max(ns))
                del left[j]
    return [out[j] for j in rest]


def normalize_chunk_size(shape: Sequence, chunk_size=None, itemsize: int = 8) -> tuple[tuple, ...]:
    """``nsplits`` (chunk lengths per axis) from a Mars/dask-style ``chunk_size``.

    Accepts an int (every axis), a tuple with one int/tuple per axis (a tuple lists the
    exact chunk lengths), ``None`` (automatic), or a dict ``{axis: size}``.  Raises
    ``ValueError`` naming the problem for non-positive sizes, wrong lengths, or explicit
    chunk lengths that do not add up to the shape.
    """
    shape = tuple(shape)
    ndim = len(shape)
    if chunk_size is None or chunk_size == "auto":
        sizes: list = list(_auto_splits(shape, itemsize))
    elif isinstance(chunk_size, dict):
        auto = _auto_splits(shape, itemsize)
        sizes = [chunk_size.get(i, chunk_size.get(i - ndim, auto[i])) for i in range(ndim)]
    elif isinstance(chunk_size, numbers.Integral):
        sizes = [int(chunk_size)] * ndim
    elif isinstance(chunk_size, (tuple, list)):
        if len(chunk_size) > ndim:
            raise ValueError(
                f"chunks have more dimensions than input tensor: chunk_size {chunk_size!r} has "
                f"{len(chunk_size)} entries but the tensor has {ndim} dimensions"
            )
        sizes = list(chunk_size)
        if len(sizes) < ndim:
            # Mars (decide_chunk_sizes): the leading axes as given, the others automatic
            # within the chunk store limit left by the given ones
            sizes += _auto_rest(shape, sizes, itemsize)
    else:
        raise TypeError(f"chunk_size must be an int, a tuple or None, got {type(chunk_size).__name__}")

    nsplits = []
    for ax, (dim, size) in enumerate(zip(shape, sizes)):
        if isinstance(size, (tuple, list)):
            size = tuple(size)
            if any((not isinstance(s, numbers.Integral) and not (isinstance(s, float) and math.isnan(s))) or s < 0 for s in size):
                raise ValueError(f"chunk_size along axis {ax} must hold non-negative ints, got {size!r}")
            if not has_unknown((dim,)) and not has_unknown(size) and sum(size) != dim:
                raise ValueError(
                    f"chunk_size along axis {ax} sums to {sum(size)}, but the shape there is {dim}"
                )
            nsplits.append(size)
            continue
        if size is None or size == -1:
            size = dim if not has_unknown((dim,)) else nan
        if isinstance(size, float) and not math.isnan(size) and size.is_integer():
            size = int(size)
        if not isinstance(size, numbers.Integral):
            raise TypeError(f"chunk_size along axis {ax} must be an int, got {size!r}")
        if size <= 0:
            raise ValueError(f"chunk_size must be positive, got {size} along axis {ax}")
        dim = int(dim)
        if dim == 0:
            nsplits.append((0,))
            continue
        n, rem = divmod(dim, size)
        nsplits.append((int(size),) * n + ((rem,) if rem else ()))
    return tuple(nsplits)


def validate_axis(ndim: int, axis, argname: str = "axis") -> int:
    if not isinstance(axis, numbers.Integral):
        raise TypeError(f"{argname} must be an integer, got {axis!r}")
    if axis < -ndim or axis >= ndim:
        raise np.exceptions.AxisError(f"{argname} {axis} is out of bounds for array of dimension {ndim}")
    return int(axis) % ndim if ndim else 0


def validate_axes(ndim: int, axis, argname: str = "axis") -> tuple[int, ...]:
    """Normalize ``None`` / int / tuple axes to a sorted tuple of non-negative ints."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, numbers.Integral):
        axis = (axis,)
    axes = tuple(validate_axis(ndim, a, argname) for a in axis)
    if len(set(axes)) != len(axes):
        raise ValueError(f"duplicate value in '{argname}': {axis!r}")
    return tuple(sorted(axes))


def broadcast_shape(*shapes) -> tuple:
    """numpy's broadcasting rules, tolerating ``nan`` (unknown) lengths."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(ndim):
        dims = [s[len(s) - ndim + i] for s in shapes if len(s) - ndim + i >= 0]
        known = {d for d in dims if not (isinstance(d, float) and math.isnan(d)) and d != 1}
        if len(known) > 1:
            raise ValueError(
                "operands could not be broadcast together with shapes "
                + " ".join(str(tuple(s)) for s in shapes)
            )
        if known:
            out.append(known.pop())
        elif any(isinstance(d, float) and math.isnan(d) for d in dims):
            out.append(nan)
        else:
            out.append(1)
    return tuple(out)


def offsets(splits: Sequence) -> list:
    """Start offsets of chunks given their lengths (cumulative sums starting at 0)."""
    out = [0]
    for s in splits:
        out.append(out[-1] + s)
    return out


def chunk_grid(nsplits) -> list[tuple]:
    return list(itertools.product(*(range(len(s)) for s in nsplits)))


def chunk_shape_at(nsplits, index) -> tuple:
    return tuple(s[i] for s, i in zip(nsplits, index))


def nbytes_of(shape, dtype) -> float:
    n = prod(shape)
    return float(n) * np.dtype(dtype).itemsize if dtype is not None else nan
