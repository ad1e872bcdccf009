"""Indexing: ``t[...]`` (basic, integer-array and boolean indexing), ``t[...] = v``,
``nonzero``/``argwhere``/``flatnonzero``, ``take`` and ``compress``.

``getitem`` follows numpy's rules by splitting the index in two stages, as Mars does:

1. a *basic* stage (ints, slices, ``None``) that only touches the chunks it needs
   (:class:`TensorIndex`, one task per selected chunk);
2. an *advanced* stage on the axes that carry integer arrays or boolean masks:

   - a boolean mask tensor alone: :class:`TensorBoolMask`, chunk by chunk, with lengths
     unknown until execution (``nan``);
   - integer arrays known at build time (numpy arrays, lists, numpy masks via their
     ``nonzero``): :class:`TensorFancyIndex` selects, per touched input chunk, the points
     that fall into it, then puts them back in the requested order;
   - integer tensors (values unknown at build time): :class:`TensorFancyIndexTensor`,
     the same select + reorder, with output chunks following the index's chunks.

   Finally, as numpy does, the broadcast index dimensions move to the front when the
   advanced indices (ints included) are not adjacent in the index.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ..tiling.core import ensure_known, has_unknown
from ..tiling.tile import tile as _tile_now
from .arithmetic import _same_splits
from .core import Tensor, TensorData, TensorOperand, astensor, is_scalar_like
from .rechunk import unify_nsplits
from .utils import broadcast_shape, chunk_grid, chunk_shape_at, nan, offsets, prod, validate_axis

__all__ = ["take", "nonzero", "argwhere", "flatnonzero", "compress", "choose", "extract", "unravel_index"]

_BAD_INDEX = (
    "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or "
    "boolean arrays are valid indices"
)


def _isnan(x) -> bool:
    return isinstance(x, float) and math.isnan(x)


# ---- index normalisation ------------------------------------------------------------------


class _Mask:
    """A boolean mask entry (numpy array or bool Tensor) spanning ``ndim`` axes."""

    __slots__ = ("mask",)

    def __init__(self, mask):
        self.mask = mask

    @property
    def ndim(self) -> int:
        return self.mask.ndim


def _is_advanced(e) -> bool:
    return isinstance(e, (np.ndarray, Tensor, _Mask))


def _n_axes(e) -> int:
    """How many input axes an (already converted) index entry consumes."""
    if e is None:
        return 0
    if isinstance(e, _Mask):
        return e.ndim
    return 1


def _convert_entry(it):
    if it is None or it is Ellipsis:
        return it
    if isinstance(it, slice):
        for v in (it.start, it.stop, it.step):
            if v is not None and not isinstance(v, numbers.Integral):
                raise IndexError(_BAD_INDEX)
        if it.step == 0:
            raise ValueError("slice step cannot be zero")
        return slice(*(None if v is None else int(v) for v in (it.start, it.stop, it.step)))
    if isinstance(it, Tensor):
        if it.dtype == np.bool_:
            if it.ndim == 0:
                raise IndexError("0-d boolean indices are not supported")
            return _Mask(it)
        if it.dtype.kind not in "iu":
            raise IndexError(_BAD_INDEX)
        return it
    if isinstance(it, (bool, np.bool_)):
        raise IndexError("boolean scalar indices are not supported")
    if isinstance(it, numbers.Integral):
        return int(it)
    if isinstance(it, (list, tuple, np.ndarray)):
        arr = np.asarray(it)
        if arr.dtype == np.bool_:
            if arr.ndim == 0:
                raise IndexError("boolean scalar indices are not supported")
            return _Mask(arr)
        if arr.size == 0 and arr.dtype.kind == "f":
            arr = arr.astype(np.intp)
        if arr.dtype.kind not in "iu":
            raise IndexError("arrays used as indices must be of integer (or boolean) type")
        if arr.ndim == 0:  # numpy treats 0-d integer arrays as integers
            return int(arr)
        return arr.astype(np.intp)
    raise IndexError(_BAD_INDEX)


def _check_int(i: int, n, axis: int) -> int:
    if _isnan(n):
        return i
    if not -n <= i < n:
        raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
    return i % n if n else i


def _check_array(arr: np.ndarray, n, axis: int) -> np.ndarray:
    if _isnan(n) or arr.size == 0:
        return arr
    lo, hi = arr.min(), arr.max()
    if lo < -n or hi >= n:
        bad = lo if lo < -n else hi
        raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {n}")
    return np.where(arr < 0, arr + n, arr).astype(np.intp)


def _normalize_index(shape: tuple, item) -> list:
    """The index as a list of entries, one per input axis plus ``None``s: ``int``
    (non-negative when the length is known), ``slice``, ``None``, an ``np.ndarray`` of
    ``intp``, an integer :class:`Tensor` or a :class:`_Mask`.  Raises numpy's
    ``IndexError`` for bad or out-of-bounds indices (where lengths are known)."""
    if not isinstance(item, tuple):
        item = (item,)
    conv = [_convert_entry(it) for it in item]
    n_ell = sum(1 for e in conv if e is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    ndim = len(shape)
    used = sum(_n_axes(e) for e in conv if e is not Ellipsis)
    if used > ndim:
        raise IndexError(f"too many indices for array: array is {ndim}-dimensional, but {used} were indexed")
    fill = [slice(None)] * (ndim - used)
    if n_ell:
        pos = conv.index(Ellipsis)
        conv = conv[:pos] + fill + conv[pos + 1 :]
    else:
        conv = conv + fill
    out, ax = [], 0
    for e in conv:
        if isinstance(e, int):
            e = _check_int(e, shape[ax], ax)
        elif isinstance(e, np.ndarray):
            e = _check_array(e, shape[ax], ax)
        elif isinstance(e, _Mask):
            for k, (m, n) in enumerate(zip(e.mask.shape, shape[ax : ax + e.ndim])):
                if not _isnan(m) and not _isnan(n) and m != n:
                    raise IndexError(
                        f"boolean index did not match indexed array along axis {ax + k}; "
                        f"size of axis is {n} but size of corresponding boolean axis is {m}"
                    )
        out.append(e)
        ax += _n_axes(e)
    return out


def _is_full(e) -> bool:
    return isinstance(e, slice) and e == slice(None)


# ---- basic indexing: ints, slices, None ---------------------------------------------------


def _slice_len(s: slice, n) -> float:
    if _is_full(s) or not _isnan(n):
        return nan if _isnan(n) else len(range(*s.indices(n)))
    return nan


def _slice_plan(splits: tuple, s: slice) -> list[tuple[int, slice, int]]:
    """``(input chunk, local slice, length)`` for each output piece of ``s`` along an axis
    cut into ``splits`` (known lengths); only the chunks holding selected elements."""
    r = range(*s.indices(sum(splits)))
    offs = offsets(splits)
    step = r.step
    pieces = []
    for i in range(len(splits)):
        lo, hi = offs[i], offs[i + 1]
        if step > 0:
            j0 = max(0, -(-(lo - r.start) // step))
            j1 = min(len(r), max(0, -(-(hi - r.start) // step)))
        else:
            a = -step
            j0 = max(0, -(-(r.start - hi + 1) // a))
            j1 = min(len(r), max(0, (r.start - lo) // a + 1))
        if j0 < j1:
            sub = r[j0:j1]
            stop = sub[-1] - lo + step
            pieces.append((i, slice(sub[0] - lo, stop if stop >= 0 else None, step), len(sub)))
    if step < 0:
        pieces.reverse()
    return pieces or [(0, slice(0, 0), 0)]


def _int_plan(splits: tuple, i: int, axis: int) -> tuple[int, int]:
    n = sum(splits)
    i = _check_int(i, n, axis) % n
    offs = offsets(splits)
    c = int(np.searchsorted(offs[:-1], i, side="right")) - 1
    return c, i - offs[c]


def _getitem_kernel(x, index):
    return x[index]


def basic_tile(op: TensorOperand, inp: TensorData, entries: list, out: int = 0):
    """Chunks of output ``out`` of ``op``: ``inp[entries]`` with basic entries only.

    Needs known lengths on the axes where an entry is not a full slice (callers run
    ``ensure_known`` first, see :func:`needs_known`); full slices pass unknown lengths
    through unchanged."""
    plans, out_nsplits = [], []
    ax = 0
    for e in entries:
        if e is None:
            plans.append(("none",))
            out_nsplits.append((1,))
            continue
        splits = inp.nsplits[ax]
        if isinstance(e, int):
            plans.append(("int",) + _int_plan(splits, e, ax))
        elif _is_full(e):
            plans.append(("slice", [(i, slice(None)) for i in range(len(splits))]))
            out_nsplits.append(splits)
        else:
            pieces = _slice_plan(splits, e)
            plans.append(("slice", [(i, s) for i, s, _ in pieces]))
            out_nsplits.append(tuple(n for _, _, n in pieces))
        ax += 1
    out_nsplits = tuple(out_nsplits)
    chunks = []
    for idx in chunk_grid(out_nsplits):
        it = iter(idx)
        in_idx, local = [], []
        for p in plans:
            if p[0] == "none":
                next(it)
                local.append(None)
            elif p[0] == "int":
                in_idx.append(p[1])
                local.append(p[2])
            else:
                c, s = p[1][next(it)]
                in_idx.append(c)
                local.append(s)
        src = inp.chunk_at(tuple(in_idx))
        shape = chunk_shape_at(out_nsplits, idx)
        chunks.append(op.new_chunk(idx, shape, _getitem_kernel, (src, tuple(local)), out=out, blockwise=True))
    return chunks, out_nsplits


def needs_known(inp: TensorData, entries: list) -> bool:
    ax = 0
    for e in entries:
        if e is None:
            continue
        if not _is_full(e) and has_unknown(inp.nsplits[ax]):
            return True
        ax += 1
    return False


def basic_shape(shape: tuple, entries: list) -> tuple:
    out, ax = [], 0
    for e in entries:
        if e is None:
            out.append(1)
            continue
        if isinstance(e, slice):
            out.append(_slice_len(e, shape[ax]))
        ax += 1
    return tuple(out)


class TensorIndex(TensorOperand):
    """Basic indexing (ints, slices, ``None``)."""

    _op_name = "getitem"

    def tile(self):
        (inp,) = self.inputs
        entries = list(self.index)
        if needs_known(inp, entries):
            yield from ensure_known(inp)
        return [basic_tile(self, inp, entries)]


def _basic(t: Tensor, entries: list) -> Tensor:
    if all(_is_full(e) for e in entries):
        return t
    op = TensorIndex([t.data], index=tuple(entries))
    return op.new_tensor(basic_shape(t.shape, entries), t.dtype)


# ---- boolean mask tensors -------------------------------------------------------------------


def rechunk_now(t: TensorData, nsplits) -> TensorData:
    """``t`` re-cut to ``nsplits`` (known), tiled immediately (for use inside ``tile``)."""
    from .rechunk import TensorRechunk

    nsplits = tuple(tuple(s) for s in nsplits)
    if tuple(t.nsplits) == nsplits:
        return t
    r = TensorRechunk([t], chunk_size=nsplits).new_tensor(t.shape, t.dtype).data
    _tile_now([r], None)
    return r


def _mask_kernel(x, m, axis):
    return x[(slice(None),) * axis + (m,)]


class TensorBoolMask(TensorOperand):
    """``x[..., mask, ...]`` for a boolean mask tensor over axes ``axis .. axis+k-1``.

    Each output chunk is one input chunk filtered by the aligned mask chunk, so lengths
    are unknown (nan) until execution.  For a multi-dimensional mask the trailing mask
    axes are first merged into one chunk, so that chunk order is numpy's C order."""

    _op_name = "bool-mask"

    def tile(self):
        x, m = self.inputs
        p, k = self.axis, m.ndim
        want = list(m.nsplits)
        if any(len(s) > 1 for s in want[1:]) or any(
            x.nsplits[p + a] != want[a] or has_unknown(want[a]) and x.nsplits[p + a] is not want[a]
            for a in range(k)
        ):
            yield from ensure_known(x, m)
            if tuple(x.shape[p : p + k]) != tuple(m.shape):
                raise IndexError(f"boolean index shape {m.shape} does not match the indexed shape {x.shape[p:p + k]}")
            want = [x.nsplits[p]] + [(n,) for n in m.shape[1:]]
            m = rechunk_now(m, want)
            x = rechunk_now(x, x.nsplits[:p] + tuple(want) + x.nsplits[p + k :])
        out_nsplits = x.nsplits[:p] + ((nan,) * len(x.nsplits[p]),) + x.nsplits[p + k :]
        chunks = []
        for idx in chunk_grid(out_nsplits):
            j = idx[p]
            xc = x.chunk_at(idx[:p] + (j,) + (0,) * (k - 1) + idx[p + 1 :])
            mc = m.chunk_at((j,) + (0,) * (k - 1))
            chunks.append(
                self.new_chunk(idx, chunk_shape_at(out_nsplits, idx), _mask_kernel, (xc, mc, p), blockwise=True)
            )
        return [(chunks, out_nsplits)]


def _bool_mask(x: Tensor, mask: Tensor, axis: int) -> Tensor:
    op = TensorBoolMask([x.data, mask.data], axis=axis)
    shape = x.shape[:axis] + (nan,) + x.shape[axis + mask.ndim :]
    return op.new_tensor(shape, x.dtype)


# ---- integer array indexing -------------------------------------------------------------------


def _take_points(x, positions, axes):
    """``x`` indexed by the integer arrays ``positions`` on ``axes``; the broadcast index
    dimensions land at ``axes[0]`` (the first fancy axis), the other axes keep their order."""
    a1 = axes[0]
    if list(axes) != list(range(a1, a1 + len(axes))):
        perm = list(range(a1)) + list(axes) + [a for a in range(a1, x.ndim) if a not in axes]
        x = x.transpose(perm)
    return x[(slice(None),) * a1 + tuple(positions)]


def _assemble_points(pieces, cells, cellid, a1):
    """Put the per-chunk selections back in index order: piece ``i`` holds, in C order,
    the points whose chunk id ``cellid`` equals ``cells[i]``."""
    first = pieces[0]
    out = np.empty(first.shape[:a1] + cellid.shape + first.shape[a1 + 1 :], dtype=first.dtype)
    for piece, c in zip(pieces, cells):
        out[(slice(None),) * a1 + (cellid == c,)] = piece
    return out


def _locate(indices, dims, offs):
    """For integer index arrays (one per fancy axis): the chunk id of every point in the
    grid of chunks along the fancy axes, and the point's position inside its chunk."""
    coords, local = [], []
    for axis, (i, n, o) in enumerate(zip(indices, dims, offs)):
        i = np.asarray(i, dtype=np.intp)
        if i.size and (i.min() < -n or i.max() >= n):
            bad = i.min() if i.min() < -n else i.max()
            raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {n}")
        i = np.where(i < 0, i + n, i)
        o = np.asarray(o)
        c = np.searchsorted(o[:-1], i, side="right") - 1
        coords.append(c)
        local.append((i - o[c]).astype(np.intp))
    grid = tuple(len(o) - 1 for o in offs)
    cellid = np.ravel_multi_index(coords, grid) if coords[0].size else np.zeros(coords[0].shape, np.intp)
    return cellid, local


def _select_by_tensor(x, index_chunks, cell, dims, offs, axes):
    index_chunks = np.broadcast_arrays(*index_chunks)
    cellid, local = _locate(index_chunks, dims, offs)
    sel = cellid == cell
    return _take_points(x, [p[sel] for p in local], axes)


def _assemble_by_tensor(pieces, cells, index_chunks, dims, offs, a1):
    index_chunks = np.broadcast_arrays(*index_chunks)
    cellid, _ = _locate(index_chunks, dims, offs)
    return _assemble_points(pieces, cells, cellid, a1)


def _take_by_tensor(x, index_chunks, dims, offs, axes):
    index_chunks = np.broadcast_arrays(*index_chunks)
    _, local = _locate(index_chunks, dims, offs)
    return _take_points(x, local, axes)


class _FancyBase(TensorOperand):
    """Shared layout of the two integer-array indexing operands."""

    def _layout(self, x: TensorData):
        axes = list(self.axes)
        rest = [a for a in range(x.ndim) if a not in axes]
        pre = [a for a in rest if a < axes[0]]
        post = [a for a in rest if a > axes[0]]
        offs = [offsets(x.nsplits[a]) for a in axes]
        dims = [o[-1] for o in offs]
        grid = tuple(len(x.nsplits[a]) for a in axes)
        return axes, pre, post, offs, dims, grid

    @staticmethod
    def _in_index(axes, pre, post, fancy_coords, pre_idx, post_idx):
        idx = {}
        idx.update(zip(pre, pre_idx))
        idx.update(zip(post, post_idx))
        idx.update(zip(axes, fancy_coords))
        return tuple(idx[a] for a in range(len(idx)))


class TensorFancyIndex(_FancyBase):
    """Integer arrays known at build time on ``axes`` of the input (broadcast together).

    For each output block of the index, the points are grouped by the input chunk they
    fall into: one select task per touched chunk, plus one task restoring the requested
    order when a block touches several chunks."""

    _op_name = "fancy-index"

    def tile(self):
        (x,) = self.inputs
        if any(has_unknown(x.nsplits[a]) for a in self.axes):
            yield from ensure_known(x)
        axes, pre, post, offs, dims, grid = self._layout(x)
        cellid, local = _locate(self.indices, dims, offs)
        bshape = cellid.shape
        bsplits = _point_splits(bshape, max(max(x.nsplits[axes[0]]), 1))
        out_nsplits = tuple(x.nsplits[a] for a in pre) + bsplits + tuple(x.nsplits[a] for a in post)
        npre, nb = len(pre), len(bshape)
        boffs = [offsets(s) for s in bsplits]
        chunks = []
        for idx in chunk_grid(out_nsplits):
            bidx = idx[npre : npre + nb]
            blk = tuple(slice(o[i], o[i + 1]) for o, i in zip(boffs, bidx))
            bcell = cellid[blk]
            cells = [int(c) for c in np.unique(bcell)] or [0]
            shape = chunk_shape_at(out_nsplits, idx)
            srcs = [
                x.chunk_at(self._in_index(axes, pre, post, np.unravel_index(c, grid), idx[:npre], idx[npre + nb :]))
                for c in cells
            ]
            if len(cells) == 1:
                pos = [p[blk] for p in local]
                chunks.append(self.new_chunk(idx, shape, _take_points, (srcs[0], pos, axes)))
                continue
            pieces = []
            for c, src in zip(cells, srcs):
                sel = bcell == c
                pos = [p[blk][sel] for p in local]
                pshape = shape[:npre] + (int(sel.sum()),) + shape[npre + nb :]
                piece = self.new_chunk(idx, pshape, _take_points, (src, pos, axes))
                piece.key = (self.output_key(0) + "-sel", *idx, c)
                pieces.append(piece)
            chunks.append(self.new_chunk(idx, shape, _assemble_points, (pieces, cells, bcell, npre)))
        return [(chunks, out_nsplits)]


def _point_splits(bshape: tuple, size: int) -> tuple:
    """Chunking of the broadcast index shape: about ``size`` points per chunk, split along
    the first index dimension."""
    if not bshape:
        return ()
    inner = max(1, prod(bshape[1:]))
    step = max(1, size // inner)
    n = bshape[0]
    first = (step,) * (n // step) + ((n % step,) if n % step else ()) or (0,)
    return (first,) + tuple((s,) for s in bshape[1:])


def _broadcast_splits(tensors: list[TensorData], ndim: int) -> tuple:
    """Chunks of the broadcast shape of (aligned) index tensors, right-aligned."""
    out = []
    for ax in range(ndim):
        splits = (1,)
        for t in tensors:
            tax = ax - (ndim - t.ndim)
            if tax >= 0 and t.shape[tax] != 1:
                splits = t.nsplits[tax]
                break
        out.append(splits)
    return tuple(out)


def _bcast_index(t: TensorData, bidx: tuple) -> tuple:
    off = len(bidx) - t.ndim
    return tuple(0 if t.shape[a] == 1 else bidx[a + off] for a in range(t.ndim))


class TensorFancyIndexTensor(_FancyBase):
    """Integer index tensors (broadcast together) on ``axes``: per index chunk and
    input chunk, select the points falling into that chunk, then reorder them (Mars's
    distribute / select / concat).  Output chunks follow the index's chunks."""

    _op_name = "fancy-index-tensor"

    def tile(self):
        x, *idxs = self.inputs
        if any(has_unknown(x.nsplits[a]) for a in self.axes):
            yield from ensure_known(x)
        nb = max(t.ndim for t in idxs)
        if len(idxs) > 1 and not _same_splits(idxs, nb):
            yield from ensure_known(*idxs)
            idxs = unify_nsplits(idxs, nb)
        axes, pre, post, offs, dims, grid = self._layout(x)
        bsplits = _broadcast_splits(idxs, nb)
        out_nsplits = tuple(x.nsplits[a] for a in pre) + bsplits + tuple(x.nsplits[a] for a in post)
        npre = len(pre)
        cells = list(range(prod(grid)))
        chunks = []
        for idx in chunk_grid(out_nsplits):
            bidx = idx[npre : npre + nb]
            ichunks = [t.chunk_at(_bcast_index(t, bidx)) for t in idxs]
            shape = chunk_shape_at(out_nsplits, idx)
            srcs = [
                x.chunk_at(self._in_index(axes, pre, post, np.unravel_index(c, grid), idx[:npre], idx[npre + nb :]))
                for c in cells
            ]
            if len(cells) == 1:
                chunks.append(self.new_chunk(idx, shape, _take_by_tensor, (srcs[0], ichunks, dims, offs, axes)))
                continue
            pieces = []
            for c, src in zip(cells, srcs):
                pshape = shape[:npre] + (nan,) + shape[npre + nb :]
                piece = self.new_chunk(idx, pshape, _select_by_tensor, (src, ichunks, c, dims, offs, axes))
                piece.key = (self.output_key(0) + "-sel", *idx, c)
                pieces.append(piece)
            chunks.append(
                self.new_chunk(idx, shape, _assemble_by_tensor, (pieces, cells, ichunks, dims, offs, npre))
            )
        return [(chunks, out_nsplits)]


def _fancy(x: Tensor, axes: list[int], indices: list) -> Tensor:
    """``x`` indexed by integer arrays/tensors on ``axes``; the broadcast index dimensions
    replace the fancy axes at ``axes[0]``."""
    rest = [x.shape[a] for a in range(x.ndim) if a not in axes]
    a1 = axes[0]
    if any(isinstance(i, Tensor) for i in indices):
        tensors = [astensor(i) for i in indices]
        bshape = broadcast_shape(*[t.shape for t in tensors])
        op = TensorFancyIndexTensor([x.data] + [t.data for t in tensors], axes=tuple(axes))
    else:
        arrays = np.broadcast_arrays(*indices)
        bshape = arrays[0].shape
        arrays = tuple(np.ascontiguousarray(a) for a in arrays)
        op = TensorFancyIndex([x.data], axes=tuple(axes), indices=arrays)
    shape = tuple(rest[:a1]) + tuple(bshape) + tuple(rest[a1:])
    return op.new_tensor(shape, x.dtype)


# ---- getitem ---------------------------------------------------------------------------------


def _adjacent(entries: list) -> bool:
    """numpy's rule: are the advanced indices (ints count as such) next to each other?"""
    pos = [i for i, e in enumerate(entries) if _is_advanced(e) or isinstance(e, int)]
    return pos[-1] - pos[0] + 1 == len(pos)


def getitem(t, item) -> Tensor:
    """``t[item]`` with numpy's semantics (see the module docstring for the stages)."""
    t = astensor(t)
    if t.issparse():
        from .sparse import getitem as sparse_getitem

        return sparse_getitem(t, item)
    entries = _normalize_index(t.shape, item)
    if not any(_is_advanced(e) for e in entries):
        return _basic(t, entries)
    basic, axes, advs = [], [], []
    ax = 0
    for e in entries:
        if _is_advanced(e):
            axes.append(ax)
            advs.append(e)
            k = _n_axes(e)
            basic.extend([slice(None)] * k)
            ax += k
        else:
            basic.append(e)
            ax += 0 if isinstance(e, int) else 1
    inter = _basic(t, basic)
    if len(advs) == 1 and isinstance(advs[0], _Mask) and isinstance(advs[0].mask, Tensor):
        out, nb = _bool_mask(inter, advs[0].mask, axes[0]), 1
    else:
        fax, fidx = [], []
        for a, e in zip(axes, advs):
            if isinstance(e, _Mask):
                parts = nonzero(e.mask) if isinstance(e.mask, Tensor) else np.nonzero(e.mask)
                fax.extend(range(a, a + e.ndim))
                fidx.extend(parts)
            else:
                fax.append(a)
                fidx.append(e)
        out = _fancy(inter, fax, fidx)
        nb = out.ndim - (inter.ndim - len(fax))
    a1 = axes[0]
    if a1 and not _adjacent(entries):
        from .manipulation import transpose

        perm = list(range(a1, a1 + nb)) + list(range(a1)) + list(range(a1 + nb, out.ndim))
        out = transpose(out, perm)
    return out


# ---- setitem ---------------------------------------------------------------------------------


def _setitem_kernel(x, index, value):
    x = x.copy()
    x[index] = value
    return x


class TensorSetItem(TensorOperand):
    """``x[basic index] = value``: the chunks the region touches get a copy with the
    value assigned; the others are reused as they are (no task)."""

    _op_name = "setitem"

    def tile(self):
        x = self.inputs[0]
        entries = list(self.index)
        if needs_known(x, entries):
            yield from ensure_known(x)
        # the chunks of x[index] tell, per touched input chunk, its local index (they are
        # only read here, never emitted)
        region, rsplits = basic_tile(self, x, entries)
        rshape = tuple(sum(s) for s in rsplits)
        vchunks = None
        if len(self.inputs) > 1:
            v = self.inputs[1]
            if has_unknown(v.shape):
                yield from ensure_known(v)
            vshape = _strip_leading_ones(v.shape, len(rshape))
            _check_broadcast(vshape, rshape)
            from .manipulation import broadcast_to

            vt = Tensor(v)
            if vshape != v.shape:
                vt = vt.reshape(vshape)
            vb = broadcast_to(vt, rshape).data
            _tile_now([vb], None)
            vchunks = rechunk_now(vb, rsplits)
        elif isinstance(self.value, np.ndarray) and self.value.ndim:
            vfull = np.broadcast_to(self.value, rshape)
            roffs = [offsets(s) for s in rsplits]
        touched = {}
        for rc in region:
            src, local = rc.args
            if vchunks is not None:
                val = vchunks.chunk_at(rc.index)
            elif isinstance(self.value, np.ndarray) and self.value.ndim:
                sl = tuple(slice(o[i], o[i + 1]) for o, i in zip(roffs, rc.index))
                val = np.ascontiguousarray(vfull[sl])
            else:
                val = self.value
            touched[src.key] = (local, val)
        chunks = []
        for idx in x.chunk_grid():
            c = x.chunk_at(idx)
            if c.key in touched:
                local, val = touched[c.key]
                c = self.new_chunk(idx, c.shape, _setitem_kernel, (c, local, val), blockwise=True)
            chunks.append(c)
        return [(chunks, x.nsplits)]


def _setmask_kernel(x, m, axis, value):
    x = x.copy()
    x[(slice(None),) * axis + (m,)] = value
    return x


class TensorSetMask(TensorOperand):
    """``x[..., mask, ...] = scalar`` chunk by chunk (mask re-cut to ``x``'s chunks)."""

    _op_name = "setitem-mask"

    def tile(self):
        x, m = self.inputs[:2]
        p, k = self.axis, m.ndim
        want = x.nsplits[p : p + k]
        if any(m.nsplits[a] is not want[a] and (has_unknown(want[a]) or m.nsplits[a] != want[a]) for a in range(k)):
            yield from ensure_known(x, m)
            if tuple(x.shape[p : p + k]) != tuple(m.shape):
                raise IndexError(f"boolean index shape {m.shape} does not match the indexed shape {x.shape[p:p + k]}")
            m = rechunk_now(m, x.nsplits[p : p + k])
        value = self.inputs[2].chunks[0] if len(self.inputs) > 2 else self.value
        chunks = []
        for idx in x.chunk_grid():
            c = x.chunk_at(idx)
            mc = m.chunk_at(idx[p : p + k])
            chunks.append(self.new_chunk(idx, c.shape, _setmask_kernel, (c, mc, p, value), blockwise=True))
        return [(chunks, x.nsplits)]


def _strip_leading_ones(shape: tuple, ndim: int) -> tuple:
    """numpy drops leading length-1 axes of an assigned value with too many dims."""
    shape = tuple(shape)
    while len(shape) > ndim and shape[0] == 1:
        shape = shape[1:]
    return shape


def _check_broadcast(vshape: tuple, rshape: tuple) -> None:
    ok = len(vshape) <= len(rshape)
    if ok:
        for v, r in zip(vshape[::-1], rshape[::-1]):
            if not (_isnan(v) or _isnan(r) or v == 1 or v == r):
                ok = False
    if not ok:
        raise ValueError(f"could not broadcast input array from shape {tuple(vshape)} into shape {tuple(rshape)}")


def _scalar_value(value, dtype):
    """A 0-d numpy value cast as numpy's assignment would (errors like numpy's)."""
    probe = np.empty((), dtype=dtype)
    probe[()] = value
    return probe


def setitem(t: Tensor, item, value) -> None:
    """``t[item] = value`` (Mars semantics: ``t`` now refers to a new tensor; other handles
    to the old data keep the old values).  Supports basic indices (ints, slices,
    ``Ellipsis``, ``None``) with a scalar, array or tensor value, and one boolean mask
    (numpy or tensor, other entries full slices) with a scalar value."""
    if not isinstance(t, Tensor):
        raise TypeError("setitem needs a Tensor")
    if t.issparse():
        from .sparse import setitem as sparse_setitem

        return sparse_setitem(t, item, value)
    entries = _normalize_index(t.shape, item)
    advs = [e for e in entries if _is_advanced(e)]
    vt = value if isinstance(value, Tensor) else None
    if vt is None and not is_scalar_like(value):
        value = np.asarray(value)
        if value.dtype == object:
            raise TypeError(f"cannot assign a value of type {type(value).__name__}")
    if not advs:
        rshape = basic_shape(t.shape, entries)
        inputs = [t.data]
        if vt is not None:
            _check_broadcast(_strip_leading_ones(vt.shape, len(rshape)), rshape)
            inputs.append(vt.data)
            val = None
        elif np.ndim(value) == 0:
            val = _scalar_value(value, t.dtype)
        else:
            _check_broadcast(_strip_leading_ones(value.shape, len(rshape)), rshape)
            val = np.asarray(value).reshape(_strip_leading_ones(value.shape, len(rshape)))
        op = TensorSetItem(inputs, index=tuple(entries), value=val)
    else:
        if len(advs) != 1 or not isinstance(advs[0], _Mask) or any(
            not _is_full(e) for e in entries if not _is_advanced(e)
        ):
            raise NotImplementedError(
                "setitem supports basic indices, or one boolean mask with full slices elsewhere"
            )
        axis = sum(1 for e in entries[: entries.index(advs[0])] if e is not None)
        if any(e is None for e in entries):
            raise NotImplementedError("setitem with a boolean mask and newaxis is not supported")
        mask = astensor(advs[0].mask)
        inputs = [t.data, mask.data]
        val = None
        if vt is not None:
            if vt.ndim != 0:
                raise NotImplementedError("setitem with a boolean mask needs a scalar value")
            inputs.append(vt.data)
        elif np.ndim(value) != 0:
            raise NotImplementedError("setitem with a boolean mask needs a scalar value")
        else:
            val = _scalar_value(value, t.dtype)
        op = TensorSetMask(inputs, axis=axis, value=val)
    t.data = op.new_tensor(t.shape, t.dtype).data


# ---- nonzero & friends ------------------------------------------------------------------------


def _argwhere_kernel(x, offset):
    out = np.argwhere(x)
    if out.shape[1]:
        out[:, 0] += offset
    return out


class TensorArgwhere(TensorOperand):
    """Indices of non-zero elements, chunk by chunk along axis 0 (other axes merged into
    one chunk so that chunk order is C order); output lengths unknown until executed."""

    _op_name = "argwhere"

    def tile(self):
        (x,) = self.inputs
        if any(has_unknown(s) for s in x.nsplits):
            yield from ensure_known(x)
        if x.ndim > 1:
            x = rechunk_now(x, (x.nsplits[0],) + tuple((n,) for n in x.shape[1:]))
        splits0 = x.nsplits[0] if x.ndim else (1,)
        offs = offsets(splits0)
        out_nsplits = ((nan,) * len(splits0), (x.ndim,))
        chunks = []
        for i in range(len(splits0)):
            src = x.chunk_at((i,) + (0,) * (x.ndim - 1)) if x.ndim else x.chunks[0]
            chunks.append(self.new_chunk((i, 0), (nan, x.ndim), _argwhere_kernel, (src, offs[i]), blockwise=True))
        return [(chunks, out_nsplits)]


def argwhere(a) -> Tensor:
    """Indices of the non-zero elements, one row per element (shape ``(nan, ndim)``)."""
    a = astensor(a)
    op = TensorArgwhere([a.data])
    t = op.new_tensor((nan, a.ndim), np.intp)
    t.data.order = "F"  # numpy's argwhere is the transpose of a C-ordered nonzero() stack
    return t


def nonzero(a) -> tuple:
    """Indices of the non-zero elements, one 1-d tensor per axis (lengths unknown until
    execution)."""
    a = astensor(a)
    if a.ndim == 0:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use np.atleast_1d(scalar).nonzero() instead.")
    aw = argwhere(a)
    return tuple(aw[:, i] for i in range(a.ndim))


def flatnonzero(a) -> Tensor:
    from .manipulation import ravel

    return nonzero(ravel(astensor(a)))[0]


def take(a, indices, axis=None) -> Tensor:
    """Elements of ``a`` at ``indices`` along ``axis`` (flattened ``a`` if ``axis`` is None)."""
    a = astensor(a)
    if axis is None:
        from .manipulation import ravel

        a, axis = ravel(a), 0
    axis = validate_axis(a.ndim, axis)
    if not isinstance(indices, Tensor):
        indices = np.asarray(indices)
        if indices.dtype.kind not in "iu" and not (indices.size == 0):
            raise IndexError("indices must be integers")
        if indices.ndim == 0:
            return getitem(a, (slice(None),) * axis + (int(indices),))
    elif indices.dtype.kind not in "iu":
        raise IndexError("indices must be an integer tensor")
    return getitem(a, (slice(None),) * axis + (indices,))


def compress(condition, a, axis=None) -> Tensor:
    """Slices of ``a`` along ``axis`` where the 1-d boolean ``condition`` is true (a numpy
    condition shorter than the axis leaves the rest out, as numpy does)."""
    a = astensor(a)
    if axis is None:
        from .manipulation import ravel

        a, axis = ravel(a), 0
    axis = validate_axis(a.ndim, axis)
    if isinstance(condition, Tensor):
        if condition.ndim != 1:
            raise ValueError("condition must be a 1-d array")
        cond = condition if condition.dtype == np.bool_ else condition != 0
        return getitem(a, (slice(None),) * axis + (cond,))
    cond = np.asarray(condition).astype(bool)
    if cond.ndim != 1:
        raise ValueError("condition must be a 1-d array")
    n = a.shape[axis]
    if not _isnan(n) and cond.size > n:
        if cond[n:].any():
            raise IndexError(f"index {n} is out of bounds for axis {axis} with size {n}")
        cond = cond[:n]
    return getitem(a, (slice(None),) * axis + (np.nonzero(cond)[0],))


# ---- choose, extract, unravel_index -------------------------------------------------------------


def _choose_kernel(a, *choices, mode):
    return np.choose(a, choices, mode=mode)


def choose(a, choices, out=None, mode="raise") -> Tensor:
    """``choices[a[i]][i]`` element-wise with broadcasting (``numpy.choose``); ``mode``
    ``'raise'`` (an out-of-range index fails at execution), ``'wrap'`` or ``'clip'``."""
    from .arithmetic import TensorElementwise, _assign_out

    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    a = astensor(a)
    if a.dtype.kind not in "iub":
        raise TypeError(f"Cannot cast array data from {a.dtype!r} to dtype('int64') according to the rule 'safe'")
    if isinstance(choices, Tensor):
        if choices.ndim == 0 or _isnan(choices.shape[0]):
            raise ValueError("choices must be a sequence (a tensor with a known first axis)")
        choices = [getitem(choices, i) for i in range(int(choices.shape[0]))]
    choices = [c if isinstance(c, Tensor) or is_scalar_like(c) else astensor(c) for c in choices]
    if not choices:
        raise ValueError("0-length sequence.")
    probes = [np.zeros(1, dtype=c.dtype) if isinstance(c, Tensor) else c for c in choices]
    dtype = np.choose(np.zeros(1, dtype=np.intp), probes, mode="clip").dtype
    shape = broadcast_shape(a.shape, *[c.shape for c in choices if isinstance(c, Tensor)])
    op = TensorElementwise(_choose_kernel, [a, *choices], {"mode": mode})
    return _assign_out(out, op.new_tensor(shape, dtype))


def extract(condition, arr) -> Tensor:
    """The elements of ``arr`` (flattened) where ``condition`` (flattened) is true
    (``numpy.extract``), chunk by chunk; the length is known after execution."""
    from .manipulation import ravel

    arr = ravel(astensor(arr))
    cond = ravel(astensor(condition))
    if cond.dtype != np.bool_:
        cond = cond != 0
    n, m = arr.shape[0], cond.shape[0]
    if not _isnan(n) and not _isnan(m) and n != m:
        if m > n:
            raise IndexError(f"index {n} is out of bounds for axis 0 with size {n}")
        from .manipulation import concatenate
        from .datasource import zeros

        cond = concatenate([cond, zeros(n - m, dtype=bool)])
    return getitem(arr, cond)


def _unravel_kernel(indices, dims, order):
    res = np.unravel_index(indices, dims, order=order)
    return res[0] if len(dims) == 1 else res  # one output: the chunk is the array itself


def unravel_index(indices, dims, order="C") -> tuple:
    """Flat indices to a tuple of coordinate tensors for ``dims`` (``numpy.unravel_index``);
    out-of-range indices fail at execution, as numpy's ``ValueError``."""
    from .arithmetic import TensorElementwise

    if order not in ("C", "F"):
        raise ValueError("only 'C' or 'F' order is permitted")
    dims = (int(dims),) if isinstance(dims, numbers.Integral) else tuple(int(d) for d in dims)
    if any(d < 0 for d in dims):
        raise ValueError("dimensions must be non-negative")
    indices = astensor(indices)
    if indices.dtype.kind not in "iu":
        raise TypeError(f"Cannot cast array data from {indices.dtype!r} to dtype('int64') according to the rule 'safe'")
    if not dims:
        raise ValueError("dims must have at least one value")
    op = TensorElementwise(_unravel_kernel, [indices, dims, order], {}, nout=len(dims))
    return tuple(op.new_tensors([(indices.shape, np.intp)] * len(dims)))
