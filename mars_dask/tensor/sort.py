"""Sorting: ``sort``, ``argsort``, ``partition``, ``argpartition``, ``unique`` and
``searchsorted``, ``topk`` and ``argtopk``.

When the sorted axis is one chunk, every chunk is sorted on its own.  Otherwise Mars's
PSRS (parallel sorting by regular sampling) runs over each *line* of chunks along the axis:

1. sort each chunk along the axis and take regular samples of it;
2. one small kernel sorts all samples of the line and picks ``P - 1`` pivots (per row);
3. every sorted chunk is cut by the pivots into ``P`` pieces (equal values always fall
   into the same piece, since every cut uses ``searchsorted(side="left")``);
4. output chunk ``j`` merges piece ``j`` of every chunk.

Kernels work on a *rows form*: the axis moved last and the other axes flattened into rows,
so one code path serves 1-d, n-d and flattened (``axis=None``) sorts.  After step 3 rows
have different lengths, so pieces are *ragged*: ``(values, payloads, counts)`` with the
rows' runs stored one after the other and ``counts`` the length of each row's run.
Payloads are arrays moving with the values (global indices for ``argsort``; first
indices and counts for ``unique``).

1-d results keep the ``P`` merged partitions as chunks (lengths ``nan`` until executed).
For n-d, rows differ in how many values each partition receives, so an extra *align*
shuffle re-cuts every row to the input's chunk lengths along the axis (as Mars's
``PSRSAlign``), which keeps the chunk grid rectangular.
"""

from __future__ import annotations

import numbers

import numpy as np

from .. import config
from ..tiling.core import ensure_known, has_unknown
from .core import Tensor, TensorOperand, astensor
from .utils import chunk_shape_at, nan, offsets, prod, validate_axis

__all__ = ["sort", "argsort", "partition", "argpartition", "unique", "searchsorted", "topk", "argtopk"]

_KINDS = (None, "quicksort", "mergesort", "heapsort", "stable")


# ---- kernels: rows form ---------------------------------------------------------------


def _getitem(x, i):
    return x[i]


def _to_rows(x, axis):
    """``x`` with ``axis`` moved last and the other axes flattened (``axis=None``: one row)."""
    if axis is None:
        return x.reshape(1, -1)
    moved = np.moveaxis(x, axis, -1)
    return moved.reshape(prod(moved.shape[:-1]), moved.shape[-1])


def _global_index(shape, index_info):
    """Flat C-order indices into the whole array of a chunk's elements (one row);
    ``index_info`` is ``(chunk offsets, whole shape)``."""
    chunk_offsets, full_shape = index_info
    grids = np.indices(shape, dtype=np.intp)
    coords = [g.ravel() + o for g, o in zip(grids, chunk_offsets)]
    if not coords:
        return np.zeros((1, 1), dtype=np.intp)
    return np.ravel_multi_index(coords, full_shape).reshape(1, -1)


def _sort_block(x, axis, kind, index_info):
    """Stage 1 of PSRS: the chunk sorted row by row, plus global indices when wanted."""
    rows = _to_rows(x, axis)
    if index_info is None:
        return np.sort(rows, axis=1, kind=kind), ()
    order = np.argsort(rows, axis=1, kind=kind)
    if axis is None:
        gidx = np.take_along_axis(_global_index(x.shape, index_info), order, axis=1)
    else:
        gidx = order + index_info
    return np.take_along_axis(rows, order, axis=1), (gidx,)


def _sample(block, n_parts):
    """Regular samples (``n_parts`` per row, fewer for short rows) of a sorted block."""
    vals = block[0]
    n = vals.shape[1]
    pos = np.unique(np.linspace(0, n, n_parts, endpoint=False).astype(np.intp)) if n else []
    return vals[:, pos]


def _pivots(samples, n_parts):
    """``n_parts - 1`` pivots per row chosen at regular positions of all sorted samples."""
    s = np.sort(np.concatenate(samples, axis=1), axis=1)
    if s.shape[1] == 0:
        return s
    return s[:, (np.arange(1, n_parts) * s.shape[1]) // n_parts]


def _ragged_from_rows(vals, payloads, lo, hi):
    """The ragged piece holding columns ``lo[r]:hi[r]`` of each row ``r``."""
    col = np.arange(vals.shape[1])
    mask = (col >= lo[:, None]) & (col < hi[:, None])
    return vals[mask], tuple(p[mask] for p in payloads), (hi - lo).astype(np.intp)


def _partition(block, pivots, n_parts):
    """Cut every row of a sorted block at the pivots: a tuple of ``n_parts`` ragged pieces."""
    vals, payloads = block
    nrows, n = vals.shape
    bounds = np.full((nrows, n_parts + 1), n, dtype=np.intp)
    bounds[:, 0] = 0
    for r in range(nrows if pivots.shape[1] else 0):
        bounds[r, 1 : pivots.shape[1] + 1] = np.searchsorted(vals[r], pivots[r], side="left")
    return tuple(
        _ragged_from_rows(vals, payloads, bounds[:, j], bounds[:, j + 1]) for j in range(n_parts)
    )


def _concat_ragged(pieces):
    """Concatenate ragged pieces; returns values, payloads, row ids and summed counts."""
    vals = np.concatenate([p[0] for p in pieces])
    npay = len(pieces[0][1])
    payloads = tuple(np.concatenate([p[1][i] for p in pieces]) for i in range(npay))
    nrows = len(pieces[0][2])
    rowids = np.concatenate([np.repeat(np.arange(nrows), p[2]) for p in pieces])
    counts = np.sum([p[2] for p in pieces], axis=0).astype(np.intp)
    return vals, payloads, rowids, counts


def _merge(pieces, tiebreak, want):
    """Stage 4: merge the pieces of one partition, row by row.

    ``tiebreak`` orders equal values by their global index (payload 0), which makes
    ``argsort`` stable whatever the chunk layout.  ``want`` is ``"values"`` or
    ``"indices"`` (a 1-d result) or ``"ragged"`` (input of the n-d align step).
    """
    vals, payloads, rowids, counts = _concat_ragged(pieces)
    keys = (payloads[0], vals, rowids) if tiebreak else (vals, rowids)
    order = np.lexsort(keys)
    vals = vals[order]
    payloads = tuple(p[order] for p in payloads)
    if want == "values":
        return vals
    if want == "indices":
        return payloads[0]
    return vals, payloads, counts


def _counts(ragged):
    return ragged[2]


def _split(ragged, previous_counts, bounds):
    """Align step: cut one merged partition by global position in its row into pieces
    matching the output chunks along the axis (``bounds``: their offsets)."""
    vals, payloads, counts = ragged
    start = np.sum(previous_counts, axis=0).astype(np.intp) if previous_counts else np.zeros_like(counts)
    row_begin = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.intp)
    rowids = np.repeat(np.arange(len(counts)), counts)
    pos = start[rowids] + np.arange(len(vals)) - row_begin[rowids]
    pieces = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        mask = (pos >= lo) & (pos < hi)
        pieces.append((vals[mask], tuple(p[mask] for p in payloads), np.bincount(rowids[mask], minlength=len(counts))))
    return tuple(pieces)


def _assemble(pieces, axis, block_shape, want):
    """Align step: concatenate the pieces of one output chunk row by row and restore the
    original axis order."""
    vals, payloads, rowids, _ = _concat_ragged(pieces)
    order = np.argsort(rowids, kind="stable")
    data = (vals if want == "values" else payloads[0])[order]
    moved = tuple(s for a, s in enumerate(block_shape) if a != axis) + (block_shape[axis],)
    return np.moveaxis(data.reshape(moved), -1, axis)


def _sort_single(x, axis, kind, want):
    func = np.sort if want == "values" else np.argsort
    return func(x, axis=axis, kind=kind)


# ---- PSRS graph construction -----------------------------------------------------------


def _mem(chunk, factor=3):
    nb = chunk.nbytes
    return None if nb is None or nb != nb else int(factor * nb)


def psrs_shuffle(op: TensorOperand, blocks: list, tag: tuple, memory: int | None = None) -> list[list]:
    """Steps 2-3 of PSRS over one line of sorted ``blocks`` (chunks holding
    ``(rows, payloads)``).  Returns, per output partition ``j``, the ``P`` piece chunks to
    merge.  ``tag`` makes the intermediate keys of this line unique; ``memory`` is the
    peak memory of cutting one block."""
    base = op.output_key(0)
    n = len(blocks)

    def chunk(suffix, idx, func, args, **kw):
        c = op.new_chunk(tag + idx, (nan,), func, args, **kw)
        c.key = (f"{base}-{suffix}", *tag, *idx)
        return c

    samples = [chunk("psrs-sample", (k,), _sample, (b, n)) for k, b in enumerate(blocks)]
    pivots = chunk("psrs-pivots", (), _pivots, (samples, n))
    parts = [
        chunk("psrs-part", (k,), _partition, (b, pivots, n), memory=memory)
        for k, b in enumerate(blocks)
    ]
    return [[chunk("psrs-piece", (k, j), _getitem, (parts[k], j)) for k in range(n)] for j in range(n)]


def _line_indices(nsplits, axis):
    """Chunk-grid indices of every line along ``axis`` (each a list of indices)."""
    others = [range(len(s)) if a != axis else range(1) for a, s in enumerate(nsplits)]
    lines = []
    for idx in np.ndindex(*[len(r) for r in others]):
        lines.append([idx[:axis] + (k,) + idx[axis + 1 :] for k in range(len(nsplits[axis]))])
    return lines


class TensorSort(TensorOperand):
    """``sort``/``argsort`` (``want`` = ``"values"``/``"indices"``) along ``axis``."""

    _op_name = "sort"

    def tile(self):
        (inp,) = self.inputs
        axis, want = self.axis, self.want
        if axis is None:
            if len(inp.chunks) == 1:
                c = inp.chunks[0]
                size = prod(c.shape)
                out = self.new_chunk((0,), (size,), _sort_single, (c, None, self.kind, want), memory=_mem(c))
                return [([out], ((size,),))]
            if want == "indices" and any(has_unknown(s) for s in inp.nsplits):
                yield from ensure_known(inp)
            return [self._tile_flat(inp)]
        if len(inp.nsplits[axis]) == 1:
            chunks = [
                self.new_chunk(c.index, c.shape, _sort_single, (c, axis, self.kind, want), memory=_mem(c), blockwise=True)
                for c in inp.chunks
            ]
            return [(chunks, inp.nsplits)]
        if inp.ndim > 1 or want == "indices":
            if any(has_unknown(s) for s in inp.nsplits):
                yield from ensure_known(inp)
        if inp.ndim == 1:
            return [self._tile_flat(inp)]
        return [self._tile_nd(inp)]

    def _sorted_blocks(self, inp, indices, axis):
        want_idx = self.want == "indices"
        offs = [offsets(s) for s in inp.nsplits] if want_idx else None
        blocks = []
        for idx in indices:
            c = inp.chunk_at(idx)
            if not want_idx:
                info = None
            elif axis is None:
                info = (tuple(o[i] for o, i in zip(offs, idx)), tuple(inp.shape))
            else:
                info = offs[axis][idx[axis]]
            b = self.new_chunk(idx, (nan,), _sort_block, (c, axis, self.kind, info), memory=_mem(c))
            b.key = (f"{self.output_key(0)}-psrs-sort", *idx)
            blocks.append(b)
        return blocks

    def _tile_flat(self, inp):
        """1-d or ``axis=None``: all chunks form one line; output = merged partitions."""
        axis = None if self.axis is None else 0
        blocks = self._sorted_blocks(inp, list(inp.chunk_grid()), axis)
        tiebreak = self.want == "indices"
        out = [
            self.new_chunk((j,), (nan,), _merge, (pieces, tiebreak, self.want), memory=_mem(inp.chunks[0]))
            for j, pieces in enumerate(psrs_shuffle(self, blocks, (), _mem(inp.chunks[0])))
        ]
        return out, ((nan,) * len(out),)

    def _tile_nd(self, inp):
        """n-d along a chunked axis: PSRS per line of chunks, then align each row to the
        input's chunk lengths along the axis."""
        axis, want = self.axis, self.want
        base = self.output_key(0)
        bounds = offsets(inp.nsplits[axis])
        tiebreak = want == "indices"
        out = {}
        for line in _line_indices(inp.nsplits, axis):
            tag = line[0]
            blocks = self._sorted_blocks(inp, line, axis)
            merged = []
            for j, pieces in enumerate(psrs_shuffle(self, blocks, tag, _mem(inp.chunk_at(tag)))):
                m = self.new_chunk(tag + (j,), (nan,), _merge, (pieces, tiebreak, "ragged"))
                m.key = (f"{base}-psrs-merge", *tag, j)
                merged.append(m)
            counts = []
            splits = []
            for j, m in enumerate(merged):
                s = self.new_chunk(tag + (j,), (nan,), _split, (m, list(counts), bounds))
                s.key = (f"{base}-psrs-split", *tag, j)
                splits.append(s)
                c = self.new_chunk(tag + (j,), (nan,), _counts, (m,))
                c.key = (f"{base}-psrs-counts", *tag, j)
                counts.append(c)
            for i, idx in enumerate(line):
                pieces = []
                for j, s in enumerate(splits):
                    p = self.new_chunk(idx + (j,), (nan,), _getitem, (s, i))
                    p.key = (f"{base}-psrs-align", *idx, j)
                    pieces.append(p)
                shape = chunk_shape_at(inp.nsplits, idx)
                out[idx] = self.new_chunk(idx, shape, _assemble, (pieces, axis, shape, want))
        return [out[idx] for idx in inp.chunk_grid()], inp.nsplits


def _validate_sort_args(a, axis, kind, order, name):
    if kind not in _KINDS:
        raise ValueError(f"{name}: kind must be one of {_KINDS[1:]}, got {kind!r}")
    if order is not None:
        raise ValueError("Cannot specify order when the array has no fields.")
    return None if axis is None else validate_axis(a.ndim, axis)


def _sort_op(a, axis, kind, order, want, name):
    a = astensor(a)
    axis = _validate_sort_args(a, axis, kind, order, name)
    dtype = a.dtype if want == "values" else np.dtype(np.intp)
    shape = (a.size,) if axis is None else a.shape
    op = TensorSort([a.data], axis=axis, kind=kind, want=want)
    return op.new_tensor(shape, dtype)


def sort(a, axis=-1, kind=None, order=None) -> Tensor:
    """A sorted copy of ``a`` along ``axis`` (``None``: the flattened array), as
    ``numpy.sort`` (NaN last).  Multi-chunk axes are sorted with PSRS."""
    return _sort_op(a, axis, kind, order, "values", "sort")


def argsort(a, axis=-1, kind=None, order=None) -> Tensor:
    """Indices that sort ``a`` along ``axis``, as ``numpy.argsort``.  Equal values keep
    their original order (every kind behaves as ``"stable"``)."""
    return _sort_op(a, axis, kind, order, "indices", "argsort")


def _check_kth(a, kth, axis):
    n = a.size if axis is None else a.shape[axis]
    for k in np.atleast_1d(kth):
        if not isinstance(k, numbers.Integral):
            raise TypeError("Partition index must be integer")
        if not has_unknown((n,)) and not -n <= k < n:
            raise ValueError(f"kth(={k}) out of bounds ({n})")


def partition(a, kth, axis=-1, kind="introselect", order=None) -> Tensor:
    """``numpy.partition``.  A full sort is a valid partition for every ``kth`` (and the
    sort is PSRS, so no data needs to be in one place); the order within the two sides is
    not specified by numpy either."""
    a = astensor(a)
    _check_kth(a, kth, None if axis is None else validate_axis(a.ndim, axis))
    return sort(a, axis=axis, order=order)


def argpartition(a, kth, axis=-1, kind="introselect", order=None) -> Tensor:
    """``numpy.argpartition`` (via :func:`argsort`, see :func:`partition`)."""
    a = astensor(a)
    _check_kth(a, kth, None if axis is None else validate_axis(a.ndim, axis))
    return argsort(a, axis=axis, order=order)


# ---- unique ------------------------------------------------------------------------------


def _unique_single(x, flags):
    ri, rv, rc = flags
    res = np.unique(x, return_index=ri, return_inverse=rv, return_counts=rc)
    return res if isinstance(res, tuple) else (res,)


def _unique_block(x, index_info):
    """Stage 1 of the unique PSRS: a chunk's unique values (one row) with payloads
    (first global index if wanted, then counts)."""
    vals, first, counts = np.unique(x.ravel(), return_index=True, return_counts=True)
    payloads = (counts.astype(np.intp),)
    if index_info is not None:
        gidx = _global_index(x.shape, index_info).ravel()
        payloads = (gidx[first],) + payloads
    return vals.reshape(1, -1), tuple(p.reshape(1, -1) for p in payloads)


def _unique_merge(pieces, with_index):
    """Unique values of one partition with summed counts and minimal first indices."""
    vals, payloads, _, _ = _concat_ragged(pieces)
    order = np.argsort(vals, kind="stable")
    vals = vals[order]
    payloads = [p[order] for p in payloads]
    uniq, starts = np.unique(vals, return_index=True)
    out = [uniq]
    if with_index:
        out.append(np.minimum.reduceat(payloads[0], starts) if len(vals) else np.zeros(0, np.intp))
    out.append(np.add.reduceat(payloads[-1], starts) if len(vals) else np.zeros(0, np.intp))
    return tuple(out)


def _unique_inverse(x, uniques):
    return np.searchsorted(np.concatenate(uniques), x).astype(np.intp)


class TensorUnique(TensorOperand):
    """``np.unique`` of the flattened tensor: per-chunk unique, then a PSRS shuffle by value
    ranges (each value lands in exactly one partition), then unique per partition."""

    _op_name = "unique"

    def tile(self):
        (inp,) = self.inputs
        ri, rv, rc = self.flags
        if len(inp.chunks) == 1:
            return self._tile_single(inp)
        if ri and any(has_unknown(s) for s in inp.nsplits):
            yield from ensure_known(inp)
        base = self.output_key(0)
        offs = [offsets(s) for s in inp.nsplits] if ri else None
        blocks = []
        for idx in inp.chunk_grid():
            info = (tuple(o[i] for o, i in zip(offs, idx)), tuple(inp.shape)) if ri else None
            b = self.new_chunk(idx, (nan,), _unique_block, (inp.chunk_at(idx), info))
            b.key = (f"{base}-unique-map", *idx)
            blocks.append(b)
        merged = []
        for j, pieces in enumerate(psrs_shuffle(self, blocks, ())):
            m = self.new_chunk((j,), (nan,), _unique_merge, (pieces, ri))
            m.key = (f"{base}-unique-merge", j)
            merged.append(m)
        n = len(merged)
        nsplits = ((nan,) * n,)
        values = [self.new_chunk((j,), (nan,), _getitem, (m, 0), out=0) for j, m in enumerate(merged)]
        results = [(values, nsplits)]
        out = 1
        if ri:
            results.append(([self.new_chunk((j,), (nan,), _getitem, (m, 1), out=out) for j, m in enumerate(merged)], nsplits))
            out += 1
        if rv:
            inv = [
                self.new_chunk(c.index, c.shape, _unique_inverse, (c, values), out=out)
                for c in inp.chunks
            ]
            results.append((inv, inp.nsplits))
            out += 1
        if rc:
            results.append(([self.new_chunk((j,), (nan,), _getitem, (m, -1), out=out) for j, m in enumerate(merged)], nsplits))
        return results

    def _tile_single(self, inp):
        c = inp.chunks[0]
        multi = self.new_chunk((0,), (nan,), _unique_single, (c, self.flags), memory=_mem(c))
        multi.key = (f"{self.output_key(0)}-unique-single", 0)
        ri, rv, rc = self.flags
        results = []
        for i, is_inverse in enumerate([False] * (1 + ri) + [True] * rv + [False] * rc):
            shape = c.shape if is_inverse else (nan,)
            nsplits = inp.nsplits if is_inverse else ((nan,),)
            chunk = self.new_chunk(c.index if is_inverse else (0,), shape, _getitem, (multi, i), out=i)
            results.append(([chunk], nsplits))
        return results


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None):
    """``numpy.unique`` (flattened; ``axis`` must be ``None``).  Returns the sorted unique
    values and, as numpy, a tuple with the requested index/inverse/counts tensors.  Lengths
    are unknown (``nan``) until executed; the inverse has ``ar``'s shape."""
    ar = astensor(ar)
    if axis is not None:
        raise NotImplementedError("unique only supports axis=None")
    flags = (bool(return_index), bool(return_inverse), bool(return_counts))
    specs = [((nan,), ar.dtype)]
    if flags[0]:
        specs.append(((nan,), np.dtype(np.intp)))
    if flags[1]:
        specs.append((ar.shape, np.dtype(np.intp)))
    if flags[2]:
        specs.append(((nan,), np.dtype(np.intp)))
    op = TensorUnique([ar.data], flags=flags)
    outs = op.new_tensors(specs)
    return outs[0] if len(outs) == 1 else tuple(outs)


# ---- searchsorted ----------------------------------------------------------------------


def _searchsorted_count(a, v, side):
    return np.searchsorted(a, v, side=side).astype(np.intp)


def _sum_parts(parts):
    return np.sum(parts, axis=0).astype(np.intp)


class TensorSearchsorted(TensorOperand):
    """``searchsorted`` of a sorted 1-d tensor: the position of ``v`` in the whole array is
    the sum of its positions within each (contiguous, sorted) chunk of ``a``."""

    _op_name = "searchsorted"

    def tile(self):
        a, v = self.inputs
        out = []
        base = self.output_key(0)
        for vc in v.chunks:
            parts = []
            for k, ac in enumerate(a.chunks):
                p = self.new_chunk(vc.index + (k,), vc.shape, _searchsorted_count, (ac, vc, self.side))
                p.key = (f"{base}-partial", *vc.index, k)
                parts.append(p)
            out.append(self.new_chunk(vc.index, vc.shape, _sum_parts, (parts,)))
        return [(out, v.nsplits)]


def searchsorted(a, v, side="left", sorter=None):
    """``numpy.searchsorted`` of ``v`` in the sorted 1-d tensor ``a`` (``sorter`` must be
    ``None``: sort first)."""
    a = astensor(a)
    if a.ndim != 1:
        raise ValueError("object too deep for desired array" if a.ndim > 1 else "object of too small depth for desired array")
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right' (got {side!r})")
    if sorter is not None:
        raise NotImplementedError("searchsorted: sorter is not supported; sort a first")
    vt = astensor(v)
    op = TensorSearchsorted([a.data, vt.data], side=side)
    return op.new_tensor(vt.shape, np.intp)


# ---- topk / argtopk ----------------------------------------------------------------------
#
# A tree, as Mars's ``parallel_kind="tree"``: every chunk keeps its own top ``k`` along the
# axis (``np.partition``/``np.argpartition``, O(n)), groups of ``tensor.combine-size``
# consecutive partials are concatenated and cut to ``k`` again, level by level, and the last
# node sorts its ``k`` survivors.  No node ever holds more than ``combine_size * k`` values of
# a line, so the input is never gathered.
#
# Ties (``argtopk``): among equal values the smallest index wins and comes first, i.e. the
# result is the first ``k`` of a *stable* sort in the requested direction (for
# ``largest=True``: ``np.argsort(a[::-1], kind="stable")`` read backwards).  Every partial
# keeps its survivors in ascending index order, so "first by position" is "first by index"
# at every level of the tree.  NaN sorts above every number (as in ``np.sort``): first for
# ``largest=True``, last for ``largest=False``.

_PARALLEL_KINDS = ("auto", "tree", "psrs")
_PSRS_KINDS = ("QUICKSORT", "MERGESORT", "HEAPSORT", "STABLE")
#: dtype kinds whose tie handling uses comparison masks (others fall back to a stable sort)
_MASKABLE = "biufmMUS"


def _isnan(v):
    if v.dtype.kind in "f":
        return np.isnan(v)
    if v.dtype.kind in "mM":
        return np.isnat(v)
    return None


def _eq(v, t):
    """``v == t`` in sort order (NaN equals NaN); ``t`` has one column per row of ``v``."""
    e = v == t
    nv = _isnan(v)
    if nv is not None:
        e |= nv & _isnan(t)
    return e


def _better(v, t, largest):
    """``v`` ranks strictly before ``t`` (NaN is the largest value, as in ``np.sort``)."""
    nv = _isnan(v)
    if largest:
        b = v > t
        if nv is not None:
            b |= nv & ~_isnan(t)
    else:
        b = v < t
        if nv is not None:
            b |= ~nv & _isnan(t)
    return b


def _stable_order(rows, largest, order):
    """Column order of each row: values best first, equal values by ascending position."""
    kw = {} if order is None else {"order": order}
    if not largest:
        return np.argsort(rows, axis=1, kind="stable", **kw)
    n = rows.shape[1]
    return (n - 1 - np.argsort(rows[:, ::-1], axis=1, kind="stable", **kw))[:, ::-1]


def _select_pos(rows, k, largest, order):
    """Positions (ascending, per row) of the top ``k`` of each row; ties go to the smallest
    positions."""
    r, n = rows.shape
    if k >= n:
        return np.broadcast_to(np.arange(n, dtype=np.int64), (r, n)).copy()
    if rows.dtype.kind not in _MASKABLE or rows.dtype.names is not None or order is not None:
        return np.sort(_stable_order(rows, largest, order)[:, :k], axis=1)
    kth = n - k if largest else k - 1
    p = np.argpartition(rows, kth, axis=1)
    sel = p[:, kth:] if largest else p[:, :k]
    t = np.take_along_axis(rows, p[:, kth : kth + 1], axis=1)
    # the partition's choice among values equal to the k-th is arbitrary: when some of them
    # were left out, take exactly the ones at the smallest positions
    bad = np.flatnonzero(_eq(rows, t).sum(axis=1) != _eq(np.take_along_axis(rows, sel, axis=1), t).sum(axis=1))
    if len(bad):
        vb, tb = rows[bad], t[bad]
        better = _better(vb, tb, largest)
        eq = _eq(vb, tb)
        need = k - better.sum(axis=1)
        mask = better | (eq & (np.cumsum(eq, axis=1) <= need[:, None]))
        sel[bad] = np.nonzero(mask)[1].reshape(len(bad), k)
    sel = np.sort(sel, axis=1)
    return sel.astype(np.int64, copy=False)


#: elements per block of :func:`_stream_top_vals`
_STREAM_BLOCK = 1 << 18


def _stream_top_vals(v, k, largest):
    """The top ``k`` values of the 1-d numeric ``v`` (no particular order), read block by
    block, or None where the plain ``np.partition`` is the way.

    Why: ``np.partition`` copies its input first, and a fresh copy of a chunk (80 MB for
    1e7 float64) is paid in page faults: profiled, the copy was 93% of a topk map task and
    the selection itself 7%. Here a block's values that beat the current ``k``-th best are
    found with one comparison into a reused mask (a handful after the first blocks of data
    in no particular order; a whole block each time for data sorted the worst way, which
    costs about what ``np.partition`` costs), and only those are merged into the running
    top ``k``. NaN ranks above every number, as in ``np.sort``."""
    n = v.shape[0]
    b = max(_STREAM_BLOCK, 4 * k)
    if n < 4 * b or v.dtype.kind not in "iuf":
        return None
    kth = b - k if largest else k - 1
    top = np.partition(v[:b], kth)
    top = top[kth:] if largest else top[: k]
    thr = top[0] if largest else top[-1]  # (partition puts the k-th best at kth)
    nan = v.dtype.kind == "f"
    if nan and np.isnan(thr):
        return None if not largest else top  # (largest: k NaN already; otherwise rare: plain path)
    cmp = np.greater if largest else np.less
    mask = np.empty(b, dtype=bool)
    isnan = np.empty(b, dtype=bool) if nan and largest else None
    for start in range(b, n, b):
        block = v[start : start + b]
        m = cmp(block, thr, out=mask[: len(block)])
        if isnan is not None:
            m |= np.isnan(block, out=isnan[: len(block)])
        if not m.any():
            continue
        cand = np.concatenate([top, block[m]])
        kth = len(cand) - k if largest else k - 1
        cand = np.partition(cand, kth)
        top = cand[kth:] if largest else cand[:k]
        thr = top[0] if largest else top[-1]
        if nan and largest and np.isnan(thr):
            break  # k NaN: nothing ranks above them
    return top


def _select_vals(rows, k, largest, order):
    """The top ``k`` values of each row, in no particular order."""
    n = rows.shape[1]
    if k >= n:
        return rows
    if rows.shape[0] == 1 and order is None:
        top = _stream_top_vals(rows[0], k, largest)
        if top is not None:
            return top.reshape(1, -1)
    kw = {} if order is None else {"order": order}
    if largest:
        return np.partition(rows, n - k, axis=1, **kw)[:, n - k :]
    return np.partition(rows, k - 1, axis=1, **kw)[:, :k]


def _from_rows(r, lead, axis):
    """Inverse of :func:`_to_rows` for a result of ``r.shape[1]`` values per row."""
    if axis is None:
        return r.reshape(-1)
    return np.moveaxis(r.reshape(tuple(lead) + (r.shape[1],)), -1, axis)


def _lead(shape, axis):
    return () if axis is None else tuple(shape[:axis]) + tuple(shape[axis + 1 :])


def _topk_map(x, spec, info):
    """Top ``k`` of one chunk: values, or ``(values, global indices)`` in index order.
    ``info``: the chunk's offset along the axis, or ``(chunk offsets, whole shape)`` for
    ``axis=None`` (global indices into the flattened tensor)."""
    axis, k, largest, order, want = spec[:5]
    rows = _to_rows(x, axis)
    lead = _lead(x.shape, axis)
    if want == "values":
        return _from_rows(_select_vals(rows, k, largest, order), lead, axis)
    pos = _select_pos(rows, k, largest, order)
    vals = np.take_along_axis(rows, pos, axis=1)
    if axis is None:
        offs, full = info
        coords = np.unravel_index(pos[0], x.shape)
        gidx = np.ravel_multi_index(tuple(c + o for c, o in zip(coords, offs)), full).astype(np.int64)
        return vals.reshape(-1), gidx
    return _from_rows(vals, lead, axis), _from_rows(pos + info, lead, axis)


def _topk_combine(parts, spec, last):
    """Concatenate partials (in line order) and keep the top ``k``; the last node also sorts
    (``sorted=True``) and returns what was asked for."""
    axis, k, largest, order, want, to_sort = spec
    ax = 0 if axis is None else axis
    if want == "values":
        v = np.concatenate(parts, axis=ax) if len(parts) > 1 else parts[0]
        lead = _lead(v.shape, ax)
        rows = _select_vals(_to_rows(v, ax), k, largest, order)
        if last and to_sort:
            rows = np.sort(rows, axis=1, **({} if order is None else {"order": order}))
            if largest:
                rows = rows[:, ::-1]
        return np.array(_from_rows(rows, lead, ax), order="C")  # a copy: never a view of the input
    v = np.concatenate([p[0] for p in parts], axis=ax) if len(parts) > 1 else parts[0][0]
    g = np.concatenate([p[1] for p in parts], axis=ax) if len(parts) > 1 else parts[0][1]
    if axis is None and len(parts) > 1:
        # flattened chunks of an n-d grid are not in index order: restore it
        o = np.argsort(g, kind="stable")
        v, g = v[o], g[o]
    lead = _lead(v.shape, ax)
    vr, gr = _to_rows(v, ax), _to_rows(g, ax)
    pos = _select_pos(vr, k, largest, order)
    if last and to_sort:
        pos = np.take_along_axis(pos, _stable_order(np.take_along_axis(vr, pos, axis=1), largest, order), axis=1)
    vals = np.ascontiguousarray(_from_rows(np.take_along_axis(vr, pos, axis=1), lead, ax))
    idx = np.ascontiguousarray(_from_rows(np.take_along_axis(gr, pos, axis=1), lead, ax))
    if not last:
        return vals, idx
    if want == "indices":
        return idx
    return vals, idx


def _topk_single(x, spec, info):
    """A line of one chunk: its top ``k`` straight away."""
    return _topk_combine([_topk_map(x, spec, info)], spec, True)


def _kmin(n, k):
    return n if n != n else min(n, k)


class TensorTopk(TensorOperand):
    """``topk``/``argtopk`` along ``axis`` (``None``: the flattened tensor) by a tree of
    per-chunk top ``k`` selections (see the comment above)."""

    _op_name = "topk"

    def tile(self):
        (inp,) = self.inputs
        axis, k, want = self.axis, self.k, self.want
        if want != "values":
            along = [s for a, s in enumerate(inp.nsplits) if axis is None or a == axis]
            if any(has_unknown(s) for s in along):
                yield from ensure_known(inp)
        spec = (axis, k, self.largest, self.order, want, self.sorted)
        base = self.output_key(0)
        cs = self.combine_size
        if axis is None:
            offs = [offsets(s) for s in inp.nsplits]
            lines = [list(inp.chunk_grid())]
            infos = {idx: (tuple(o[i] for o, i in zip(offs, idx)), tuple(inp.shape)) for idx in lines[0]}
        else:
            offs = offsets(inp.nsplits[axis])
            lines = _line_indices(inp.nsplits, axis)
            infos = {idx: offs[idx[axis]] for line in lines for idx in line}
        finals = []
        for line in lines:
            tag = (0,) if axis is None else line[0]
            ax = 0 if axis is None else axis

            def shape_of(length, template=inp.chunk_at(line[0]).shape):
                if axis is None:
                    return (length,)
                return tuple(length if a == axis else s for a, s in enumerate(template))

            if len(line) == 1:
                c = inp.chunk_at(line[0])
                n = prod(c.shape) if axis is None else c.shape[axis]
                f = self.new_chunk(tag, shape_of(_kmin(n, k)), _topk_single, (c, spec, infos[line[0]]), memory=_mem(c))
            else:
                parts = []
                for j, idx in enumerate(line):
                    c = inp.chunk_at(idx)
                    n = prod(c.shape) if axis is None else c.shape[axis]
                    p = self.new_chunk(tag + (j,), shape_of(_kmin(n, k)), _topk_map, (c, spec, infos[idx]), memory=_mem(c))
                    p.key = (f"{base}-topk-map", *tag, j)
                    parts.append(p)
                level = 0
                while len(parts) > cs:
                    groups = [parts[i : i + cs] for i in range(0, len(parts), cs)]
                    parts = []
                    for j, g in enumerate(groups):
                        n = sum(m.shape[ax] for m in g)
                        p = self.new_chunk(tag + (j,), shape_of(_kmin(n, k)), _topk_combine, (g, spec, False))
                        p.key = (f"{base}-topk-combine{level}", *tag, j)
                        parts.append(p)
                    level += 1
                n = sum(m.shape[ax] for m in parts)
                f = self.new_chunk(tag, shape_of(_kmin(n, k)), _topk_combine, (parts, spec, True))
            finals.append(f)

        n_axis = _kmin(inp.size if axis is None else inp.shape[axis], k)
        if axis is None:
            nsplits = ((n_axis,),)
        else:
            nsplits = tuple((n_axis,) if a == axis else tuple(s) for a, s in enumerate(inp.nsplits))
        if want != "both":
            return [(finals, nsplits)]
        for f in finals:
            f.key = (f"{base}-topk-both", *f.index)
        return [([self.new_chunk(f.index, f.shape, _getitem, (f, i), out=i) for f in finals], nsplits) for i in range(2)]


def _validate_order(dtype, order):
    """Mars's ``validate_order``: ``order`` only for structured dtypes, as a list of fields."""
    if dtype.names is None:
        if order is not None:
            raise ValueError("Cannot specify order when the array has no fields")
        return None
    if order is None:
        return None
    order = list(order) if isinstance(order, (list, tuple)) else [order]
    for o in order:
        if o not in dtype.names:
            raise ValueError(f"unknown field name: {o}")
    return order


def _validate_psrs_kinds(psrs_kinds):
    if psrs_kinds is None:
        return None
    if not isinstance(psrs_kinds, (list, tuple)):
        raise TypeError("psrs_kinds should be list or tuple")
    if len(psrs_kinds) != 3:
        raise ValueError("psrs_kinds should have 3 elements")
    for i, kind in enumerate(psrs_kinds):
        if kind is None:
            if i < 2:
                continue
            raise ValueError("3rd element of psrs_kinds should be specified")
        if str(kind).upper() not in _PSRS_KINDS:
            raise ValueError(f"{kind} is an unrecognized kind in psrs_kinds")
    return list(psrs_kinds)


def _topk_op(a, k, axis, largest, to_sort, order, parallel_kind, psrs_kinds, want):
    a = astensor(a)
    if axis is None:
        if a.ndim == 0:
            a = a.reshape(-1)
        if a.ndim == 1:
            axis = 0
    else:
        axis = validate_axis(a.ndim, axis)
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError(f"k must be an integer, got {k!r}")
    if k < 1:
        raise ValueError(f"k must be a positive integer, got {k}")
    order = _validate_order(a.dtype, order)
    if not isinstance(parallel_kind, str) or parallel_kind.lower() not in _PARALLEL_KINDS:
        raise ValueError("`parallel_kind` could only be `auto`, `tree`, or `psrs`")
    _validate_psrs_kinds(psrs_kinds)
    combine_size = config.get("tensor.combine-size")
    n = a.size if axis is None else a.shape[axis]
    length = _kmin(n, int(k))
    shape = (length,) if axis is None else tuple(length if i == axis else s for i, s in enumerate(a.shape))
    op = TensorTopk([a.data], axis=axis, k=int(k), largest=bool(largest), sorted=bool(to_sort), order=order,
                    want=want, combine_size=max(int(combine_size), 2))
    if want == "values":
        return op.new_tensor(shape, a.dtype)
    if want == "indices":
        return op.new_tensor(shape, np.int64)
    return tuple(op.new_tensors([(shape, a.dtype), (shape, np.int64)]))


def topk(a, k, axis=-1, largest=True, sorted=True, order=None, parallel_kind="auto", psrs_kinds=None,  # noqa: A002
         return_index=False):
    """The ``k`` largest (``largest=False``: smallest) values along ``axis`` (``None``: of
    the flattened tensor), as Mars's ``topk``: best first when ``sorted`` (NaN counts as the
    largest value, as in ``np.sort``), in no particular order otherwise.  ``k`` larger than
    the axis gives the whole axis.  ``return_index=True`` also returns the indices (see
    :func:`argtopk`).  ``order`` names the fields of a structured dtype to compare first.

    Computed by a tree of per-chunk selections whatever ``parallel_kind`` says (``"psrs"``
    and ``psrs_kinds`` are accepted and validated for Mars compatibility): a node never holds
    more than ``tensor.combine-size * k`` values per line.
    """
    want = "both" if return_index else "values"
    return _topk_op(a, k, axis, largest, sorted, order, parallel_kind, psrs_kinds, want)


def argtopk(a, k, axis=-1, largest=True, sorted=True, order=None, parallel_kind="auto", psrs_kinds=None):  # noqa: A002
    """Indices (int64) of :func:`topk`'s values.  Ties are deterministic: among equal values
    the smallest index is chosen and listed first, so the result is the first ``k`` of a
    stable sort in the requested direction (``largest=True``: ``(n - 1 -
    np.argsort(a[::-1], kind="stable"))[::-1][:k]`` for 1-d ``a``).  With ``sorted=False``
    the indices come in ascending order along the axis."""
    return _topk_op(a, k, axis, largest, sorted, order, parallel_kind, psrs_kinds, "indices")
