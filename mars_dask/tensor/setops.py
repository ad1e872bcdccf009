"""Set routines: ``isin``, ``in1d``, ``setdiff1d`` and ``union1d``.

``isin`` works chunk by chunk on ``element``: each chunk is tested against the whole
``test_elements`` (usually small), gathered once into one chunk that every element chunk
reads.  When ``test_elements`` spans many chunks and is large (its size learnt first when
unknown), every element chunk is instead tested against each test chunk and the answers are
OR-ed, so no big array is ever gathered.  ``setdiff1d`` and ``union1d`` build on :func:`mars_dask.tensor.sort.unique`
(a PSRS shuffle by value: globally sorted, lengths known after execution).
"""

from __future__ import annotations

import numpy as np
from dask.utils import parse_bytes

from .. import config
from ..tiling.core import ensure_known, has_unknown
from .core import TensorOperand, astensor
from .manipulation import concatenate, ravel
from .sort import unique

__all__ = ["isin", "in1d", "setdiff1d", "union1d"]


def _concat_flat(parts):
    return np.concatenate([np.ravel(p) for p in parts]) if len(parts) > 1 else np.ravel(parts[0])


def _isin_kernel(x, test, assume_unique, invert):
    return np.isin(x, test, assume_unique=assume_unique, invert=invert)


def _or_parts(parts, invert):
    out = parts[0].copy()
    for p in parts[1:]:
        out |= p
    return ~out if invert else out


class TensorIsIn(TensorOperand):
    """``np.isin`` of each chunk of ``element`` against the whole of ``test_elements``."""

    _op_name = "isin"

    def tile(self):
        element, test = self.inputs
        base = self.output_key()
        if len(test.chunks) > 1 and has_unknown(test.shape):
            yield from ensure_known(test)  # e.g. the output of ``unique``: how big is it?
        mem_limit = parse_bytes(config.get("tiling.chunk-store-limit"))
        whole = len(test.chunks) == 1 or test.nbytes <= mem_limit
        out = []
        if whole:
            if len(test.chunks) == 1:
                tc = test.chunks[0]
            else:
                tc = self.new_chunk((0,), (test.shape[0],), _concat_flat, (list(test.chunks),), dtype=test.dtype)
                tc.key = (f"{base}-test", 0)
            for c in element.chunks:
                out.append(self.new_chunk(c.index, c.shape, _isin_kernel, (c, tc, self.assume_unique, self.invert)))
            return [(out, element.nsplits)]
        for c in element.chunks:
            parts = []
            for k, tc in enumerate(test.chunks):
                p = self.new_chunk(c.index + (k,), c.shape, _isin_kernel, (c, tc, self.assume_unique, False))
                p.key = (f"{base}-partial", *c.index, k)
                parts.append(p)
            out.append(self.new_chunk(c.index, c.shape, _or_parts, (parts, self.invert)))
        return [(out, element.nsplits)]


def isin(element, test_elements, assume_unique=False, invert=False):
    """``numpy.isin``: a boolean tensor of ``element``'s shape, True where the value is in
    ``test_elements`` (flattened); ``invert=True`` gives the opposite."""
    element = astensor(element)
    test = astensor(test_elements)
    if test.ndim != 1:
        test = ravel(test)
    # numpy's own validation and errors (e.g. comparing strings with numbers)
    np.isin(np.zeros(1, element.dtype), np.zeros(1, test.dtype))
    op = TensorIsIn([element.data, test.data], assume_unique=bool(assume_unique), invert=bool(invert))
    return op.new_tensor(element.shape, np.bool_)


def in1d(ar1, ar2, assume_unique=False, invert=False):
    """``numpy.in1d``: :func:`isin` of the flattened ``ar1`` (a 1-d boolean tensor)."""
    ar1 = astensor(ar1)
    if ar1.ndim != 1:
        ar1 = ravel(ar1)
    return isin(ar1, ar2, assume_unique=assume_unique, invert=invert)


def setdiff1d(ar1, ar2, assume_unique=False):
    """``numpy.setdiff1d``: the unique values of ``ar1`` not in ``ar2`` (sorted unless
    ``assume_unique``, where ``ar1``'s order is kept).  The length is known after
    execution."""
    if assume_unique:
        ar1 = astensor(ar1)
        if ar1.ndim != 1:
            ar1 = ravel(ar1)
    else:
        ar1 = unique(ar1)
        ar2 = unique(ar2)
    return ar1[in1d(ar1, ar2, assume_unique=True, invert=True)]


def union1d(ar1, ar2, aggregate_size=None):
    """``numpy.union1d``: the sorted unique values found in either input (flattened).
    ``aggregate_size`` (Mars's) is accepted; the result is always fully sorted."""
    ar1, ar2 = astensor(ar1), astensor(ar2)
    return unique(concatenate([ar1, ar2], axis=None))

