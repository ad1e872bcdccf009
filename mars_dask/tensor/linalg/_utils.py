"""Helpers shared by the linear-algebra operands: re-cutting inputs inside ``tile``,
summing partial products with a tree, and the build-time checks numpy.linalg makes."""

from __future__ import annotations

import math
import operator

import numpy as np

from ... import config
from ...tiling.core import Chunk, has_unknown
from ...tiling.tile import tile
from ..core import TensorData, TensorOperand
from ..rechunk import TensorRechunk
from ..utils import offsets

LinAlgError = np.linalg.LinAlgError


def rechunked(t: TensorData, nsplits) -> TensorData:
    """``t`` re-cut to exactly ``nsplits`` (tiled on the spot, as ``unify_nsplits`` does);
    ``t`` itself when it already has that layout."""
    nsplits = tuple(tuple(s) for s in nsplits)
    if tuple(tuple(s) for s in t.nsplits) == nsplits:
        return t
    r = TensorRechunk([t], chunk_size=nsplits).new_tensor(t.shape, t.dtype).data
    tile([r], None)
    return r


def common_splits(splits_list) -> tuple:
    """The coarsest chunk lengths whose boundaries include every boundary of
    ``splits_list`` (all of the same total length)."""
    first = tuple(splits_list[0])
    if all(tuple(s) == first for s in splits_list):
        return first
    bounds = sorted({b for s in splits_list for b in offsets(s)})
    out = tuple(bounds[i + 1] - bounds[i] for i in range(len(bounds) - 1))
    return out or (0,)


def _sum_partials(parts):
    """Sum of a list of same-shaped partial results (``+`` keeps numpy's dtype, bool
    included); the inputs are not mutated."""
    out = operator.add(parts[0], parts[1])
    for p in parts[2:]:
        out += p
    return out


def tree_sum(
    op: TensorOperand, index: tuple, shape: tuple, partials: list[Chunk], *, out: int = 0, func=_sum_partials, args=()
) -> Chunk:
    """The chunk ``index`` of output ``out`` as the sum of ``partials``: a tree whose
    nodes add ``tensor.combine-size`` partials each (Mars's combine step).  Intermediate
    nodes get ``-sum`` keys; the root gets the output key.  ``func(partials, *args)``
    replaces the sum for other combinations (maximum, minimum)."""
    combine = max(2, int(config.get("tensor.combine-size")))
    level = 0
    while len(partials) > combine:
        nxt = []
        for g in range(0, len(partials), combine):
            group = partials[g : g + combine]
            if len(group) == 1:
                nxt.append(group[0])
                continue
            c = op.new_chunk(index, shape, func, (group, *args), out=out, memory=_mem(group, shape, op, out))
            c.key = (op.output_key(out) + f"-sum{level}", *index, g // combine)
            nxt.append(c)
        partials = nxt
        level += 1
    if len(partials) == 1:
        return partials[0]
    return op.new_chunk(index, shape, func, (partials, *args), out=out, memory=_mem(partials, shape, op, out))


def _mem(inputs, shape, op, out) -> int:
    o = op.outputs[out]
    itemsize = o.dtype.itemsize if o is not None else 8
    return int(nbytes(inputs) + _prod(shape) * itemsize)


def _prod(shape) -> float:
    p = 1
    for s in shape:
        p *= s
    return p


def nbytes(chunks) -> float:
    """Total known bytes of ``chunks`` (unknown sizes count as 0)."""
    total = 0.0
    for c in chunks:
        if c.nbytes is not None and not math.isnan(c.nbytes):
            total += c.nbytes
    return total


def fmt_shape(shape) -> str:
    """A shape as numpy prints it in error messages: ``(3,4)``, ``(3,)``."""
    inner = ",".join(str(int(s)) if not (isinstance(s, float) and math.isnan(s)) else "nan" for s in shape)
    return f"({inner},)" if len(shape) == 1 else f"({inner})"


def same_dim(a, b) -> bool:
    """Lengths agree, or one is unknown (checked again after execution)."""
    return a == b or has_unknown((a,)) or has_unknown((b,))


def check_2d(a, name: str) -> None:
    """numpy.linalg's checks: at least 2-d (LinAlgError); stacks of matrices are not
    supported here (NotImplementedError names the limitation)."""
    if a.ndim < 2:
        raise LinAlgError(f"{a.ndim}-dimensional array given. Array must be at least two-dimensional")
    if a.ndim > 2:
        raise NotImplementedError(f"{name}: stacks of matrices ({a.ndim}-d input) are not supported; pass a 2-d tensor")


def check_square(a, name: str) -> None:
    check_2d(a, name)
    if not same_dim(a.shape[0], a.shape[1]):
        raise LinAlgError(f"Last 2 dimensions of the array must be square (got shape {fmt_shape(a.shape)} in {name})")


def linalg_dtype(func, *dtypes, out: int | None = None) -> np.dtype:
    """Result dtype of numpy ``func`` on tiny probe matrices of ``dtypes`` (raises the
    TypeError numpy raises, e.g. for float16)."""
    probes = [np.eye(2, dtype=dt) for dt in dtypes]
    res = func(*probes)
    if out is not None:
        res = res[out]
    return np.asarray(res).dtype
