"""Changing chunk layout: ``rechunk`` and aligning several tensors' chunks for blockwise
operations (``unify_nsplits``)."""

from __future__ import annotations


import bisect

from ..tiling.core import ensure_known, has_unknown
from ..tiling.tile import tile
from .core import Tensor, TensorData, TensorOperand, astensor
from .utils import chunk_grid, chunk_shape_at, normalize_chunk_size, offsets

__all__ = ["rechunk"]


def _rechunk_kernel(parts, slices, grid):
    pieces = [p[s] for p, s in zip(parts, slices)]
    if len(pieces) == 1:
        return pieces[0].copy() if pieces[0].base is not None else pieces[0]
    from ..tiling.tileable import concatenate_grid

    return concatenate_grid(pieces, grid)


def plan_axis(old: tuple, new: tuple) -> list[list[tuple[int, slice]]]:
    """For each new chunk along one axis: the ``(old chunk index, slice in it)`` pieces."""
    old_off = offsets(old)
    new_off = offsets(new)
    plan = []
    for j in range(len(new)):
        start, stop = new_off[j], new_off[j + 1]
        pieces = []
        if stop == start:
            i = min(bisect.bisect_right(old_off, start) - 1, len(old) - 1)
            i = max(i, 0)
            pieces.append((i, slice(start - old_off[i], start - old_off[i])))
        else:
            i = bisect.bisect_right(old_off, start) - 1
            while i < len(old) and old_off[i] < stop:
                lo = max(start, old_off[i]) - old_off[i]
                hi = min(stop, old_off[i + 1]) - old_off[i]
                if hi > lo or old[i] == 0:
                    pieces.append((i, slice(lo, hi)))
                i += 1
        plan.append(pieces)
    return plan


class TensorRechunk(TensorOperand):
    _op_name = "rechunk"

    def tile(self):
        (inp,) = self.inputs
        if builtins_any_unknown(inp):
            yield from ensure_known(inp)
        new = normalize_chunk_size(inp.shape, _complete(self.chunk_size, inp), inp.dtype.itemsize)
        return [rechunk_chunks(self, inp, new)]


def _complete(chunk_size, inp: TensorData):
    """A dict ``{axis: size}`` keeps the current chunks of the axes it does not name."""
    if not isinstance(chunk_size, dict):
        return chunk_size
    return tuple(
        chunk_size.get(ax, chunk_size.get(ax - inp.ndim, inp.nsplits[ax])) for ax in range(inp.ndim)
    )


def builtins_any_unknown(t: TensorData) -> bool:
    return any(has_unknown(s) for s in t.nsplits)


def rechunk_chunks(op: TensorOperand, inp: TensorData, new: tuple, *, kernel=None, plans=None):
    """Chunks of ``op``'s output: ``inp`` re-cut to ``new`` nsplits (known shapes).

    ``plans[axis][j]`` lists the ``(input chunk position, slice)`` pieces output chunk ``j``
    is made of along ``axis`` (default: :func:`plan_axis`; ``roll`` passes its own);
    ``kernel(parts, slices, grid)`` joins them (default numpy's; sparse tensors pass theirs)."""
    if plans is None:
        plans = [plan_axis(o, n) for o, n in zip(inp.nsplits, new)]
    kernel = kernel or _rechunk_kernel
    chunks = []
    for idx in chunk_grid(new):
        per_axis = [plans[a][j] for a, j in enumerate(idx)]
        grid = tuple(len(p) for p in per_axis)
        parts, slices = [], []
        for combo in chunk_grid([tuple(range(g)) for g in grid]):
            pieces = [per_axis[a][k] for a, k in enumerate(combo)]
            parts.append(inp.chunk_at(tuple(p[0] for p in pieces)))
            slices.append(tuple(p[1] for p in pieces))
        shape = chunk_shape_at(new, idx)
        chunks.append(op.new_chunk(idx, shape, kernel, (parts, slices, grid), inputs=parts))
    return chunks, new


def rechunked_now(t: TensorData, nsplits, op_cls=None) -> TensorData:
    """``t`` re-cut to exactly ``nsplits`` and tiled on the spot (for an operand's ``tile``);
    ``t`` itself when it already has them. ``op_cls``: the rechunk operand (sparse has its own)."""
    nsplits = tuple(tuple(s) for s in nsplits)
    if tuple(tuple(s) for s in t.nsplits) == nsplits:
        return t
    r = (op_cls or TensorRechunk)([t], chunk_size=nsplits).new_tensor(t.shape, t.dtype).data
    tile([r], None)
    return r


def rechunk(tensor, chunk_size, threshold=None, chunk_size_limit=None, reassign_worker=False) -> Tensor:
    """Re-cut ``tensor`` into chunks of ``chunk_size`` (same forms as at creation)."""
    tensor = astensor(tensor)
    if tensor.issparse():
        from .sparse import rechunk as sparse_rechunk

        return sparse_rechunk(tensor, chunk_size)
    if isinstance(chunk_size, dict):
        for ax in chunk_size:  # validate the axes now
            if not -tensor.ndim <= ax < tensor.ndim:
                raise ValueError(f"rechunk: axis {ax} is out of bounds for a {tensor.ndim}-d tensor")
        if tensor.nsplits is not None:
            chunk_size = _complete(chunk_size, tensor.data)
    if not has_unknown(tensor.shape) and not isinstance(chunk_size, dict):
        new = normalize_chunk_size(tensor.shape, chunk_size, tensor.dtype.itemsize)
        if tensor.nsplits is not None and tuple(tensor.nsplits) == new:
            return tensor
        chunk_size = new
    op = TensorRechunk([tensor.data], chunk_size=chunk_size)
    return op.new_tensor(tensor.shape, tensor.dtype)


def _refine(splits_list: list[tuple]) -> tuple:
    bounds = set()
    total = None
    for s in splits_list:
        off = offsets(s)
        bounds.update(off)
        total = off[-1]
    b = sorted(bounds)
    out = tuple(b[i + 1] - b[i] for i in range(len(b) - 1))
    return out if out else ((0,) if total == 0 else out)


def unify_nsplits(inputs: list[TensorData], ndim: int | None = None) -> list[TensorData]:
    """Re-cut tensors (right-aligned for broadcasting) so that they share chunk boundaries
    on every axis where they are not broadcast.  Shapes must be known (or already equal).
    Tensors that already fit are returned as they are; the others get a rechunk that is
    tiled on the spot."""
    if ndim is None:
        ndim = max(t.ndim for t in inputs)
    targets: list[tuple | None] = []
    for ax in range(ndim):
        splits = []
        for t in inputs:
            tax = ax - (ndim - t.ndim)
            if tax >= 0 and t.shape[tax] != 1:
                splits.append(t.nsplits[tax])
        if not splits or all(s is splits[0] or s == splits[0] for s in splits):
            targets.append(None)
        else:
            targets.append(_refine(splits))
    out = []
    for t in inputs:
        off = ndim - t.ndim
        new = list(t.nsplits)
        changed = False
        for tax in range(t.ndim):
            tgt = targets[tax + off]
            if tgt is not None and t.shape[tax] != 1 and tuple(t.nsplits[tax]) != tgt:
                new[tax] = tgt
                changed = True
        if t.ndim and any(t.shape[a] == 1 and len(t.nsplits[a]) != 1 for a in range(t.ndim)):
            new = [(1,) if t.shape[a] == 1 else new[a] for a in range(t.ndim)]
            changed = True
        if changed:
            if t.issparse:
                from .sparse import rechunked_data

                out.append(rechunked_data(t, tuple(new)))
                continue
            op = TensorRechunk([t], chunk_size=tuple(new))
            r = op.new_tensor(t.shape, t.dtype).data
            tile([r], None)
            out.append(r)
        else:
            out.append(t)
    return out
