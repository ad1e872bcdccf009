"""Tensor products: ``tensordot``, ``dot``, ``matmul`` (``@``), ``inner``, ``outer``,
``vdot`` and ``einsum``.

All of them are one operand, :class:`TensorContraction`, described einsum-style: every
input axis carries a label, labels shared by several axes are aligned, labels missing from
the output are summed over.  Tiling follows Mars/dask.array:

1. the chunks of all axes carrying the same label are unified (a common refinement of
   their chunk lengths, with rechunks tiled on the spot); axes of length 1 facing a longer
   axis are broadcast;
2. for every output block and every combination of contracted chunk indices, one
   *partial* chunk applies the numpy kernel (``np.tensordot``/``np.matmul``/``np.einsum``)
   to the aligned input blocks;
3. the partials of each output block are added by a tree of ``tensor.combine-size``-way
   sums (none when a single partial exists); with a sparse input, each output block's
   partials and their sum are one task instead (dask.array's choice for sparse).

For a general product on a 4x4 chunk grid that is 64 partial products plus 16 sums, the
same graph dask.array builds.  A symmetric product, ``x.T @ x`` or ``x @ x.T`` (however
written), computes only the blocks on and above the diagonal, from ``x``'s own blocks
(``a.T @ b``: no transposed copy), and mirrors the others: half the multiplications, and the
diagonal's partials are symmetric (numpy uses BLAS ``syrk``), as numpy does in one process.
"""

from __future__ import annotations

import itertools
import string

import numpy as np

from ...tiling.core import ensure_known, has_unknown
from .. import sparse as _sp
from ..core import Tensor, TensorOperand, astensor
from ..utils import broadcast_shape, chunk_grid, chunk_shape_at
from ._utils import common_splits, fmt_shape, nbytes, rechunked, same_dim, tree_sum

__all__ = ["dot", "matmul", "tensordot", "einsum", "inner", "outer", "vdot"]

_LABELS = string.ascii_letters


# ---- kernels ----------------------------------------------------------------------------


def _any_sparse(*blocks) -> bool:
    return any(not isinstance(b, np.ndarray) and _sp.is_sparse_value(b) for b in blocks)


def _tensordot_kernel(a, b, axes):
    if _any_sparse(a, b):
        return _sp.tensordot_blocks(a, b, axes)
    return np.tensordot(a, b, axes=axes)


def _matmul_kernel(a, b):
    if _any_sparse(a, b):
        return _sp.matmul_blocks(a, b)
    return np.matmul(a, b)


def _einsum_kernel(subscripts, dtype, *blocks):
    blocks = [_sp.as_dense(b) for b in blocks]
    return np.einsum(subscripts, *blocks, dtype=dtype, optimize=len(blocks) > 1)


class _SparseAware:
    """A product kernel whose partial results are made sparse (CSR) or dense: the output
    tensor's kind, whatever its blocks were."""

    __slots__ = ("kernel", "out_sparse")

    def __init__(self, kernel, out_sparse):
        self.kernel = kernel
        self.out_sparse = out_sparse

    def __reduce__(self):
        return (_SparseAware, (self.kernel, self.out_sparse))

    def __dask_tokenize__(self):
        return ("sparse-aware", self.kernel.__name__, self.out_sparse)

    def __call__(self, *args):
        return _sp.coerce(self.kernel(*args), self.out_sparse)


class _Summed:
    """``kernel`` applied to each consecutive group of ``n`` arguments, the results added:
    one output block's partial products and their sum in one task."""

    __slots__ = ("kernel", "n")

    def __init__(self, kernel, n):
        self.kernel = kernel
        self.n = n

    def __reduce__(self):
        return (_Summed, (self.kernel, self.n))

    def __dask_tokenize__(self):
        from dask.base import tokenize

        return ("summed", tokenize(self.kernel), self.n)

    def __call__(self, *args):
        n = self.n
        out = self.kernel(*args[:n])
        for i in range(n, len(args), n):
            out = _iadd(out, self.kernel(*args[i : i + n]))
        return out


def _iadd(out, p):
    """``out + p``, in place where both are numpy arrays and ``out`` has the sum's dtype and
    shape (the first product is a fresh array no one else holds); sparse sums as scipy's."""
    if (isinstance(out, np.ndarray) and isinstance(p, np.ndarray) and np.result_type(out, p) == out.dtype
            and p.shape == out.shape):
        out += p
        return out
    return out + p


def _gram_partial(a, b, side):
    """One partial of ``x.T @ x`` (``side`` "T": ``a.T @ b``) or ``x @ x.T`` (``a @ b.T``)
    from two blocks of ``x``; the same block twice is a symmetric product, which numpy
    computes with BLAS ``syrk`` (half the work of ``gemm``)."""
    return a.T @ b if side == "T" else a @ b.T


def _mirrored(block):
    """Output block (j, i) of a symmetric product from block (i, j)."""
    return np.ascontiguousarray(block.T)


def _aligned(t, nsplits):
    """``t`` re-cut to ``nsplits`` (sparse tensors by a sparse rechunk)."""
    return _sp.rechunked_data(t, nsplits) if t.issparse else rechunked(t, nsplits)


# ---- the operand ------------------------------------------------------------------------


class TensorContraction(TensorOperand):
    """Blockwise contraction of ``inputs`` whose axes carry ``in_labels`` (one string per
    input) into ``out_labels``; ``kernel(*args)`` computes one partial block, where
    ``args`` is ``prefix + blocks + suffix`` (kernel parameters around the input blocks)."""

    _op_name = "contract"
    sparse_aware = True

    def tile(self):
        inputs = self.inputs
        if any(has_unknown(s) for t in inputs for s in t.nsplits):
            yield from ensure_known(*inputs)
        sizes = _label_sizes(inputs, self.in_labels)  # re-checked: shapes may just be known
        gram = self._gram()
        if gram is not None:
            return self._tile_gram(*gram)

        # 1. one chunk layout per label; broadcast (length-1) axes stay one chunk
        target = {}
        for lab, size in sizes.items():
            splits = [
                t.nsplits[ax]
                for t, labs in zip(inputs, self.in_labels)
                for ax, l in enumerate(labs)
                if l == lab and t.shape[ax] == size
            ]
            target[lab] = common_splits(splits)
        aligned = []
        for t, labs in zip(inputs, self.in_labels):
            new = [target[l] if t.shape[ax] == sizes[l] else (1,) for ax, l in enumerate(labs)]
            aligned.append(_aligned(t, new))

        # 2. partial products per (output block, contracted block) ...
        out_labels = self.out_labels
        summed = [l for l in dict.fromkeys("".join(self.in_labels)) if l not in out_labels]
        out_nsplits = tuple(target[l] for l in out_labels)
        k_grid = list(itertools.product(*(range(len(target[l])) for l in summed)))
        # sparse inputs: each output block sums its products in one task, as dask.array does
        # (a sparse product is cheap; moving its dense partial results between workers is not)
        in_one = len(k_grid) > 1 and any(t.issparse for t in aligned)
        chunks = []
        for idx in chunk_grid(out_nsplits):
            shape = chunk_shape_at(out_nsplits, idx)
            pos = dict(zip(out_labels, idx))
            partials = []
            for k in k_grid:
                pos.update(zip(summed, k))
                partials.append([
                    t.chunk_at(tuple(pos[l] if t.shape[ax] == sizes[l] else 0 for ax, l in enumerate(labs)))
                    for t, labs in zip(aligned, self.in_labels)
                ])
            out_bytes = _nbytes(shape, self.outputs[0])
            if in_one:
                blocks = [b for group in partials for b in group]
                args = tuple(a for group in partials for a in (*self.prefix, *group, *self.suffix))
                kernel = _Summed(self.kernel, len(self.prefix) + len(aligned) + len(self.suffix))
                memory = int(nbytes(list(dict.fromkeys(blocks))) + 2 * out_bytes)
                chunks.append(self.new_chunk(idx, shape, kernel, args, inputs=blocks, memory=memory))
                continue
            products = []
            for k, blocks in zip(k_grid, partials):
                args = (*self.prefix, *blocks, *self.suffix)
                memory = int(nbytes(blocks) + out_bytes)
                c = self.new_chunk(idx, shape, self.kernel, args, inputs=blocks, memory=memory)
                if len(k_grid) > 1:
                    c.key = (self.output_key(0) + "-partial", *idx, *k)
                products.append(c)
            # 3. ... added up by a tree
            chunks.append(tree_sum(self, idx, shape, products))
        return [(chunks, out_nsplits)]


    def _gram(self):
        """``(x, side)`` when this is ``x.T @ x`` (side "T") or ``x @ x.T`` (side "N") of a
        dense 2-d ``x`` written with a transpose (``dot``, ``matmul``, ``@``, ``tensordot``),
        else None."""
        from ..manipulation import TensorTranspose

        if len(self.inputs) != 2 or self.kernel not in (_tensordot_kernel, _matmul_kernel):
            return None
        a, b = self.inputs
        la, lb = self.in_labels
        if a.ndim != 2 or b.ndim != 2 or a.issparse or b.issparse or la[1] != lb[0] or self.out_labels != la[0] + lb[1]:
            return None
        for t, x, side in ((a, b, "T"), (b, a, "N")):
            op = t.op
            if isinstance(op, TensorTranspose) and tuple(op.axes) == (1, 0) and op.inputs[0] is x:
                return x, side
        return None

    def _tile_gram(self, x, side):
        """A symmetric product: the blocks on and above the diagonal as sums of partial
        products of ``x``'s own blocks (no transposed copy of ``x``; the diagonal's
        partials are symmetric, ``syrk``), those below as mirrors of those above.  Half the
        multiplications of the general tiling (numpy does the same in one process)."""
        ax = 1 if side == "T" else 0  # x's axis that becomes the output's rows and columns
        out_splits = x.nsplits[ax]
        out_nsplits = (out_splits, out_splits)
        nk = len(x.nsplits[1 - ax])

        def block(i, k):
            return x.chunk_at((k, i) if side == "T" else (i, k))

        chunks = {}
        for i, j in chunk_grid(out_nsplits):
            if i > j:
                continue
            shape = chunk_shape_at(out_nsplits, (i, j))
            partials = []
            for k in range(nk):
                blocks = [block(i, k), block(j, k)] if i != j else [block(i, k)]
                args = (blocks[0], blocks[-1], side)
                memory = int(nbytes(blocks) + _nbytes(shape, self.outputs[0]))
                c = self.new_chunk((i, j), shape, _gram_partial, args, inputs=blocks, memory=memory)
                if nk > 1:
                    c.key = (self.output_key(0) + "-partial", i, j, k)
                partials.append(c)
            chunks[i, j] = tree_sum(self, (i, j), shape, partials)
        out = []
        for i, j in chunk_grid(out_nsplits):
            if i > j:
                src = chunks[j, i]
                out.append(self.new_chunk((i, j), chunk_shape_at(out_nsplits, (i, j)), _mirrored, (src,),
                                          inputs=[src], memory=int(2 * nbytes([src]))))
            else:
                out.append(chunks[i, j])
        return [(out, out_nsplits)]


def _nbytes(shape, out) -> float:
    n = 1
    for s in shape:
        n *= s
    return n * (out.dtype.itemsize if out is not None else 8)


def _label_sizes(inputs, in_labels, context: str = "einsum") -> dict:
    """Length of every label (numpy broadcasting: 1 stretches); raises ValueError on a
    mismatch.  Unknown (nan) lengths are accepted until they are known."""
    sizes: dict = {}
    for n, (t, labs) in enumerate(zip(inputs, in_labels)):
        own: dict = {}
        for ax, l in enumerate(labs):
            d = t.shape[ax]
            if l in own and not same_dim(own[l], d):
                raise ValueError(f"{context}: dimensions in operand {n} for collapsing index '{l}' don't match ({own[l]} != {d})")
            own[l] = d
            prev = sizes.get(l)
            if prev is None or prev == 1 or has_unknown((prev,)):
                sizes[l] = d if not (d == 1 and prev is not None) else prev
            elif d != 1 and not same_dim(prev, d):
                raise ValueError(
                    f"{context}: size of label '{l}' for operand {n} ({d}) does not match previous terms ({prev})"
                )
    return sizes


def _contract(tensors, in_labels, out_labels, dtype, kernel, prefix=(), suffix=(), out_sparse=None) -> Tensor:
    """``out_sparse``: Mars's ``sparse=`` (None: sparse when every input is; only 2-d
    outputs are sparse)."""
    sizes = _label_sizes([t.data for t in tensors], in_labels)
    if out_sparse is None:
        out_sparse = all(t.issparse() for t in tensors)
    out_sparse = bool(out_sparse) and len(out_labels) == 2
    if out_sparse or any(t.issparse() for t in tensors):
        kernel = _SparseAware(kernel, out_sparse)
    op = TensorContraction(
        [t.data for t in tensors],
        in_labels=list(in_labels),
        out_labels=out_labels,
        kernel=kernel,
        prefix=tuple(prefix),
        suffix=tuple(suffix),
    )
    out = op.new_tensor(tuple(sizes[l] for l in out_labels), dtype)
    out.data.issparse = out_sparse
    return out


def _dot_dtype(a: Tensor, b: Tensor) -> np.dtype:
    return np.dot(np.ones((1, 1), dtype=a.dtype), np.ones((1, 1), dtype=b.dtype)).dtype


def _tensordot(a: Tensor, b: Tensor, a_axes, b_axes, sparse=None) -> Tensor:
    """``np.tensordot(a, b, (a_axes, b_axes))`` on normalized, validated axes."""
    a_labs = list(_LABELS[: a.ndim])
    b_labs = list(_LABELS[a.ndim : a.ndim + b.ndim])
    for i, j in zip(a_axes, b_axes):
        b_labs[j] = a_labs[i]
    out = "".join(l for ax, l in enumerate(a_labs) if ax not in a_axes) + "".join(
        l for ax, l in enumerate(b_labs) if ax not in b_axes
    )
    axes = (list(a_axes), list(b_axes))
    return _contract([a, b], ["".join(a_labs), "".join(b_labs)], out, _dot_dtype(a, b), _tensordot_kernel,
                     suffix=(axes,), out_sparse=sparse)


def _norm_axes(axes, ndim: int) -> list[int]:
    if isinstance(axes, (int, np.integer)):
        axes = [axes]
    out = []
    for ax in axes:
        if not -ndim <= ax < ndim:
            raise np.exceptions.AxisError(f"axis {ax} is out of bounds for array of dimension {ndim}")
        out.append(int(ax) % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in tensordot axes {list(axes)}")
    return out


# ---- public functions -------------------------------------------------------------------


def tensordot(a, b, axes=2, sparse=None) -> Tensor:
    """``numpy.tensordot``: sum products over ``axes`` (an int N: the last N axes of ``a``
    with the first N of ``b``; or a pair of axis sequences)."""
    a, b = astensor(a), astensor(b)
    if isinstance(axes, (int, np.integer)):
        if axes < 0 or axes > min(a.ndim, b.ndim):
            raise ValueError(f"tensordot: axes={axes} must be between 0 and the inputs' dimensions ({a.ndim}, {b.ndim})")
        a_axes, b_axes = list(range(a.ndim - axes, a.ndim)), list(range(axes))
    else:
        try:
            a_axes, b_axes = axes
        except (TypeError, ValueError):
            raise TypeError("tensordot: axes must be an int or a pair of axis sequences") from None
        a_axes, b_axes = _norm_axes(a_axes, a.ndim), _norm_axes(b_axes, b.ndim)
    if len(a_axes) != len(b_axes) or any(not same_dim(a.shape[i], b.shape[j]) for i, j in zip(a_axes, b_axes)):
        raise ValueError("shape-mismatch for sum")
    return _tensordot(a, b, a_axes, b_axes, sparse)


def _scalar_product(a: Tensor, b: Tensor) -> Tensor:
    from ..arithmetic import multiply

    return multiply(a, b)


def dot(a, b, out=None, sparse=None) -> Tensor:
    """``numpy.dot``: 0-d operands multiply; 1-d·1-d is the inner product; otherwise the
    last axis of ``a`` meets the second-to-last of ``b`` (its only axis when 1-d)."""
    if out is not None:
        raise NotImplementedError("dot: out= is not supported")
    a, b = astensor(a), astensor(b)
    if a.ndim == 0 or b.ndim == 0:
        return _scalar_product(a, b)
    ia, ib = a.ndim - 1, max(b.ndim - 2, 0)
    if not same_dim(a.shape[ia], b.shape[ib]):
        raise ValueError(
            f"shapes {fmt_shape(a.shape)} and {fmt_shape(b.shape)} not aligned: "
            f"{a.shape[ia]} (dim {ia}) != {b.shape[ib]} (dim {ib})"
        )
    return _tensordot(a, b, [ia], [ib], sparse)


def inner(a, b, sparse=None) -> Tensor:
    """``numpy.inner``: sum over the last axes of both operands."""
    a, b = astensor(a), astensor(b)
    if a.ndim == 0 or b.ndim == 0:
        return _scalar_product(a, b)
    ia, ib = a.ndim - 1, b.ndim - 1
    if not same_dim(a.shape[ia], b.shape[ib]):
        raise ValueError(
            f"shapes {fmt_shape(a.shape)} and {fmt_shape(b.shape)} not aligned: "
            f"{a.shape[ia]} (dim {ia}) != {b.shape[ib]} (dim {ib})"
        )
    return _tensordot(a, b, [ia], [ib], sparse)


def outer(a, b, out=None) -> Tensor:
    """``numpy.outer``: every element of (flattened) ``a`` times every element of ``b``."""
    if out is not None:
        raise NotImplementedError("outer: out= is not supported")
    a, b = astensor(a), astensor(b)
    a = a if a.ndim == 1 else a.ravel()
    b = b if b.ndim == 1 else b.ravel()
    return _tensordot(a, b, [], [])


def vdot(a, b) -> Tensor:
    """``numpy.vdot``: the dot product of the flattened operands, ``a`` conjugated."""
    a, b = astensor(a), astensor(b)
    if a.dtype.kind == "c":
        from ..arithmetic import conjugate

        a = conjugate(a)
    if a.ndim != b.ndim or any(not same_dim(x, y) for x, y in zip(a.shape, b.shape)):
        a, b = a.ravel(), b.ravel()
        if not same_dim(a.shape[0], b.shape[0]):
            raise ValueError(f"vdot: cannot take the dot product of vectors of sizes {a.shape[0]} and {b.shape[0]}")
    if a.ndim == 0:
        return _scalar_product(a, b)
    axes = list(range(a.ndim))
    return _tensordot(a, b, axes, axes)


def matmul(a, b, sparse=None, out=None, **kwargs) -> Tensor:
    """``numpy.matmul`` / ``@``: matrix products over the last two axes, broadcasting the
    leading (batch) axes; a 1-d operand is a vector (its axis is dropped from the result)."""
    if out is not None or kwargs:
        raise NotImplementedError("matmul: out= and ufunc keyword arguments are not supported")
    a, b = astensor(a), astensor(b)
    sig = "(n?,k),(k,m?)->(n?,m?)"
    for n, t in enumerate((a, b)):
        if t.ndim == 0:
            raise ValueError(
                f"matmul: Input operand {n} does not have enough dimensions (has 0, gufunc core with signature {sig} requires 1)"
            )
    ka, kb = a.shape[-1], b.shape[0] if b.ndim == 1 else b.shape[-2]
    if not same_dim(ka, kb):
        raise ValueError(
            f"matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature {sig} (size {kb} is different from {ka})"
        )
    nb_a, nb_b = max(a.ndim - 2, 0), max(b.ndim - 2, 0)
    broadcast_shape(a.shape[:nb_a], b.shape[:nb_b])  # raises numpy's ValueError
    nbatch = max(nb_a, nb_b)
    batch = _LABELS[:nbatch]
    i, k, j = _LABELS[nbatch : nbatch + 3]
    a_labs = batch[nbatch - nb_a :] + (i if a.ndim > 1 else "") + k
    b_labs = batch[nbatch - nb_b :] + k + (j if b.ndim > 1 else "")
    out_labs = batch + (i if a.ndim > 1 else "") + (j if b.ndim > 1 else "")
    dtype = np.matmul(np.ones((1, 1), dtype=a.dtype), np.ones((1, 1), dtype=b.dtype)).dtype
    return _contract([a, b], [a_labs, b_labs], out_labs, dtype, _matmul_kernel, out_sparse=sparse)


def _parse_einsum(subscripts: str, ndims: list[int]) -> tuple[list[str], str]:
    """Input label strings and the output labels of an einsum expression, with ``...``
    expanded to labels not used elsewhere (right-aligned, as numpy broadcasts)."""
    subscripts = subscripts.replace(" ", "")
    if "->" in subscripts:
        lhs, rhs = subscripts.split("->", 1)
        if "->" in rhs:
            raise ValueError("einsum(): subscripts may contain '->' only once")
    else:
        lhs, rhs = subscripts, None
    terms = lhs.split(",")
    if len(terms) != len(ndims):
        raise ValueError(f"einsum(): {len(terms)} operand subscripts given for {len(ndims)} operands")
    used = set(subscripts) - set(".,->")
    bad = [c for c in used if c not in _LABELS]
    if bad:
        raise ValueError(f"einsum(): invalid subscript {bad[0]!r} (only letters and '...')")
    spare = [c for c in _LABELS if c not in used]
    n_ell = 0
    for term, nd in zip(terms, ndims):
        n = nd - len(term.replace("...", ""))
        if "..." in term:
            n_ell = max(n_ell, n)
    ell = "".join(spare[:n_ell])
    in_labels = []
    for n, (term, nd) in enumerate(zip(terms, ndims)):
        if "..." in term:
            k = nd - len(term.replace("...", ""))
            term = term.replace("...", ell[n_ell - k :] if k else "")
        if "." in term or len(term) != nd:
            raise ValueError(f"einsum(): operand {n} has {nd} dimensions but subscripts {terms[n]!r} name {len(term)}")
        in_labels.append(term)
    if rhs is None:
        counts = "".join(terms).replace("...", "")
        out = ell + "".join(sorted(c for c in set(counts) if counts.count(c) == 1))
    else:
        out = rhs.replace("...", ell)
        for c in out:
            if c == ".":
                raise ValueError("einsum(): output subscript '...' without '...' in the inputs")
            if c not in "".join(in_labels):
                raise ValueError(f"einsum(): output subscript {c!r} never appeared in an input")
        if len(set(out)) != len(out):
            raise ValueError(f"einsum(): output subscript string {rhs!r} contains a repeated label")
    return in_labels, out


def einsum(subscripts, *operands, dtype=None, order="K", casting="safe", optimize=False) -> Tensor:
    """``numpy.einsum`` with explicit (``->``) or implicit output, ``...`` broadcasting
    and repeated labels (diagonals, traces)."""
    if not isinstance(subscripts, str):
        raise TypeError("einsum(): only the subscripts-string form is supported")
    if not operands:
        raise ValueError("einsum(): no operands given")
    tensors = [astensor(o) for o in operands]
    in_labels, out = _parse_einsum(subscripts, [t.ndim for t in tensors])
    expr = ",".join(in_labels) + "->" + out
    probes = [np.ones((1,) * t.ndim, dtype=t.dtype) for t in tensors]
    res_dtype = np.einsum(expr, *probes, dtype=dtype, casting=casting).dtype
    return _contract(tensors, in_labels, out, res_dtype, _einsum_kernel, prefix=(expr, res_dtype), out_sparse=False)
