"""Matrix decompositions and solvers, with Mars's algorithms:

- ``qr``: TSQR (tall-and-skinny QR).  Columns are gathered into one chunk; every row block
  is factored on its own, the small R factors are stacked and factored again, and each
  block's Q is multiplied by its slice of the second Q.
- ``svd``: TSQR, then the SVD of the small R (one chunk), then ``U = Q @ U_R``.
- ``cholesky``: blocked right-looking Cholesky over a square chunk grid.
- ``lu``, ``solve``, ``inv``, ``det``, ``slogdet``: the LU factorization runs on a single
  chunk holding the whole matrix (documented limitation: the matrix must fit one worker);
  ``solve``/``inv`` then solve each column block of the right-hand side in parallel.
"""

from __future__ import annotations

import numpy as np

from ...tiling.core import ensure_known, has_unknown
from ..core import TensorOperand, astensor
from ._utils import LinAlgError, check_2d, check_square, common_splits, linalg_dtype, nbytes, rechunked, same_dim
from .products import matmul

__all__ = ["qr", "svd", "cholesky", "lu", "solve", "inv", "det", "slogdet"]


# ---- kernels ----------------------------------------------------------------------------


def _getitem(x, i):
    return x[i]


def _qr_kernel(a, dtype):
    q, r = np.linalg.qr(a.astype(dtype, copy=False))
    return q, r


def _stack_qr_kernel(rs, dtype):
    """Second TSQR stage: QR of the stacked R factors of all row blocks."""
    q, r = np.linalg.qr(np.concatenate(rs, axis=0).astype(dtype, copy=False))
    return q, r


def _tsqr_q_kernel(q1, q2, lo, hi):
    return q1 @ q2[lo:hi]


def _svd_kernel(a, dtype):
    u, s, vh = np.linalg.svd(a.astype(dtype, copy=False), full_matrices=False)
    return u, s, vh


def _lu_kernel(a, dtype):
    import scipy.linalg

    return tuple(scipy.linalg.lu(a.astype(dtype, copy=False)))


def _lu_factor_kernel(a, dtype):
    import scipy.linalg

    return scipy.linalg.lu_factor(a.astype(dtype, copy=False), check_finite=False)


def _lu_solve_kernel(lu_piv, b, dtype):
    import scipy.linalg

    lu = lu_piv[0]
    if np.any(np.diag(lu) == 0):
        raise LinAlgError("Singular matrix")
    return scipy.linalg.lu_solve(lu_piv, b.astype(dtype, copy=False), check_finite=False)


def _lu_inv_kernel(lu_piv, lo, hi, dtype):
    """Columns ``lo:hi`` of the inverse: solve against those identity columns."""
    n = lu_piv[0].shape[0]
    eye = np.zeros((n, hi - lo), dtype=dtype)
    eye[np.arange(lo, hi), np.arange(hi - lo)] = 1
    return _lu_solve_kernel(lu_piv, eye, dtype)


def _det_kernel(a, dtype):
    return np.asarray(np.linalg.det(a.astype(dtype, copy=False)))


def _slogdet_kernel(a, dtype):
    sign, logdet = np.linalg.slogdet(a.astype(dtype, copy=False))
    return np.asarray(sign), np.asarray(logdet)


def _cholesky_diag_kernel(a, left, dtype):
    """Diagonal block: ``chol(A_jj - sum_k L_jk L_jk^T)``."""
    s = a.astype(dtype, copy=True)
    for l in left:
        s -= l @ l.T.conj()
    return np.linalg.cholesky(s)


def _cholesky_offdiag_kernel(a, l_jj, left_i, left_j, dtype):
    """Block below the diagonal: ``(A_ij - sum_k L_ik L_jk^T) L_jj^-T``."""
    import scipy.linalg

    s = a.astype(dtype, copy=True)
    for li, lj in zip(left_i, left_j):
        s -= li @ lj.T.conj()
    return scipy.linalg.solve_triangular(l_jj, s.T.conj(), lower=True, check_finite=False).T.conj()


def _zeros_kernel(shape, dtype):
    return np.zeros(shape, dtype=dtype)


def _transpose_kernel(x):
    return np.ascontiguousarray(x.T.conj())


# ---- operands ---------------------------------------------------------------------------


def _known(t):
    if any(has_unknown(s) for s in t.nsplits):
        yield from ensure_known(t)


class TensorQR(TensorOperand):
    """TSQR; outputs ``q`` (rows chunked like the input, one column chunk) and ``r``."""

    _op_name = "qr"

    def tile(self):
        (a,) = self.inputs
        yield from _known(a)
        a = rechunked(a, (a.nsplits[0], (a.shape[1],)))
        dtype = self.dtype
        m, n = a.shape
        k = min(m, n)
        q_key = self.output_key(0)
        isz = np.dtype(dtype).itemsize
        if len(a.chunks) == 1:
            both = self.new_chunk((0, 0), (m, n), _qr_kernel, (a.chunks[0], dtype), memory=int(3 * m * n * isz))
            both.key = (q_key + "-qr", 0)
            q = self.new_chunk((0, 0), (m, k), _getitem, (both, 0), out=0)
            r = self.new_chunk((0, 0), (k, n), _getitem, (both, 1), out=1)
            return [([q], ((m,), (k,))), ([r], ((k,), (n,)))]
        # stage 1: QR of every row block
        q1, r1 = [], []
        for i, c in enumerate(a.chunks):
            mi, ki = c.shape[0], min(c.shape[0], n)
            both = self.new_chunk((i, 0), c.shape, _qr_kernel, (c, dtype), memory=int(3 * mi * n * isz))
            both.key = (q_key + "-qr1", i)
            qc = self.new_chunk((i, 0), (mi, ki), _getitem, (both, 0), out=0)
            qc.key = (q_key + "-q1", i)
            rc = self.new_chunk((i, 0), (ki, n), _getitem, (both, 1), out=1)
            rc.key = (q_key + "-r1", i)
            q1.append(qc)
            r1.append(rc)
        # stage 2: QR of the stacked R factors
        s = sum(c.shape[0] for c in r1)
        both = self.new_chunk((0, 0), (s, n), _stack_qr_kernel, (r1, dtype), memory=int(4 * s * n * isz))
        both.key = (q_key + "-qr2", 0)
        q2 = self.new_chunk((0, 0), (s, k), _getitem, (both, 0), out=0)
        q2.key = (q_key + "-q2", 0)
        r = self.new_chunk((0, 0), (k, n), _getitem, (both, 1), out=1)
        # stage 3: Q_i @ Q2[rows of block i]
        qs, lo = [], 0
        for i, (qc, rc) in enumerate(zip(q1, r1)):
            hi = lo + rc.shape[0]
            qs.append(self.new_chunk((i, 0), (qc.shape[0], k), _tsqr_q_kernel, (qc, q2, lo, hi), out=0))
            lo = hi
        return [(qs, (a.nsplits[0], (k,))), ([r], ((k,), (n,)))]


class TensorSingleChunk(TensorOperand):
    """``kernel(*inputs, dtype)`` on inputs gathered into one chunk each; the kernel
    returns a tuple when there are several outputs (``shape_fn(*input_shapes)`` gives
    their shapes).  For factorizations whose blocked form is not implemented (LU) and for
    small matrices (the R of TSQR)."""

    _op_name = "linalg-single"

    def tile(self):
        inputs = []
        for t in self.inputs:
            yield from _known(t)
            inputs.append(rechunked(t, tuple((int(s),) for s in t.shape)))
        chunks = [t.chunks[0] for t in inputs]
        shapes = self.shape_fn(*(t.shape for t in inputs))
        memory = int(self.mem_factor * nbytes(chunks)) + 1
        main = self.new_chunk((0,) * len(shapes[0]), shapes[0], self.kernel, (*chunks, self.dtype), memory=memory)
        if len(shapes) == 1:
            return [([main], tuple((s,) for s in shapes[0]))]
        main.key = (self.output_key(0) + "-all",)
        result = []
        for i, shape in enumerate(shapes):
            c = self.new_chunk((0,) * len(shape), shape, _getitem, (main, i), out=i)
            result.append(([c], tuple((s,) for s in shape)))
        return result


def _single(inputs, kernel, shape_fn, dtypes, dtype, mem_factor=3.0):
    op = TensorSingleChunk(
        [t.data for t in inputs], kernel=kernel, shape_fn=shape_fn, dtype=np.dtype(dtype), mem_factor=mem_factor
    )
    shapes = shape_fn(*(t.shape for t in inputs))
    outs = op.new_tensors(list(zip(shapes, dtypes)))
    return outs[0] if len(outs) == 1 else tuple(outs)


def _min(a, b):
    """``min`` that stays unknown (nan) when either length is."""
    return float("nan") if has_unknown((a, b)) else min(a, b)


def _svd_shapes(r_shape):
    k, n = r_shape
    return [(k, k), (k,), (k, n)]


def _lu_shapes(a_shape):
    m, n = a_shape
    k = _min(m, n)
    return [(m, m), (m, k), (k, n)]


def _scalar_shapes(a_shape, nout=1):
    return [()] * nout


def _slogdet_shapes(a_shape):
    return [(), ()]


class TensorCholesky(TensorOperand):
    """Blocked Cholesky: block column by block column, each diagonal block factored after
    subtracting the products of the blocks left of it, then the blocks below solved
    against it."""

    _op_name = "cholesky"

    def tile(self):
        (a,) = self.inputs
        yield from _known(a)
        splits = common_splits([a.nsplits[0], a.nsplits[1]])
        a = rechunked(a, (splits, splits))
        dtype, nb = self.dtype, len(splits)
        key = self.output_key(0)
        L: dict = {}
        for j in range(nb):
            left_j = [L[j, k] for k in range(j)]
            c = self.new_chunk(
                (j, j), (splits[j], splits[j]), _cholesky_diag_kernel, (a.chunk_at((j, j)), left_j, dtype),
                memory=int(nbytes([a.chunk_at((j, j)), *left_j]) * 2 + 1),
            )
            L[j, j] = c
            for i in range(j + 1, nb):
                left_i = [L[i, k] for k in range(j)]
                ins = [a.chunk_at((i, j)), c, *left_i, *left_j]
                L[i, j] = self.new_chunk(
                    (i, j), (splits[i], splits[j]), _cholesky_offdiag_kernel,
                    (a.chunk_at((i, j)), c, left_i, left_j, dtype), memory=int(nbytes(ins) * 2 + 1),
                )
        chunks = []
        for i in range(nb):
            for j in range(nb):
                shape = (splits[i], splits[j])
                src = (i, j) if not self.upper else (j, i)
                if src[0] < src[1]:
                    chunks.append(self.new_chunk((i, j), shape, _zeros_kernel, (shape, dtype)))
                elif self.upper:
                    L[src].key = (key + "-L", *src)
                    chunks.append(self.new_chunk((i, j), shape, _transpose_kernel, (L[src],)))
                else:
                    chunks.append(L[src])
        return [(chunks, (splits, splits))]


class TensorLUSolve(TensorOperand):
    """``x = A^-1 b`` per column block of ``b`` from one LU factorization of ``A``
    (``b`` None: the inverse, column blocks following ``A``'s column chunks)."""

    _op_name = "lu-solve"

    def tile(self):
        a = self.inputs[0]
        yield from _known(a)
        n = a.shape[0]
        a1 = rechunked(a, ((n,), (n,)))
        dtype = self.dtype
        isz = np.dtype(dtype).itemsize
        fac = self.new_chunk((0, 0), (n, n), _lu_factor_kernel, (a1.chunks[0], dtype), memory=int(3 * n * n * isz) + 1)
        fac.key = (self.output_key(0) + "-lu", 0)
        if len(self.inputs) == 1:  # inverse
            col_splits = a.nsplits[1]
            chunks, lo = [], 0
            for j, w in enumerate(col_splits):
                chunks.append(
                    self.new_chunk((0, j), (n, w), _lu_inv_kernel, (fac, lo, lo + w, dtype), memory=int((n * n + 2 * n * w) * isz) + 1)
                )
                lo += w
            return [(chunks, ((n,), col_splits))]
        b = self.inputs[1]
        yield from _known(b)
        b = rechunked(b, ((n,),) + tuple(b.nsplits[1:]))
        chunks = []
        for c in b.chunks:
            mem = int(n * n * isz + 2 * c.nbytes * max(1, isz / b.dtype.itemsize)) + 1
            chunks.append(self.new_chunk(c.index, c.shape, _lu_solve_kernel, (fac, c, dtype), memory=mem))
        return [(chunks, b.nsplits)]


# ---- public functions -------------------------------------------------------------------


def _float_dtype(func, *dtypes, out=None):
    try:
        return linalg_dtype(func, *dtypes, out=out)
    except TypeError as e:
        raise TypeError(f"{e} (dtypes {', '.join(str(np.dtype(d)) for d in dtypes)})") from None


def qr(a, mode="reduced", method="tsqr"):
    """QR factorization (TSQR) of a 2-d tensor: ``q, r = qr(a)``; ``mode="r"`` returns
    only ``r``.  ``q`` keeps ``a``'s row chunks and has one column chunk."""
    a = astensor(a)
    check_2d(a, "qr")
    if mode not in ("reduced", "r"):
        raise NotImplementedError(f"qr: mode={mode!r} is not supported (use 'reduced' or 'r')")
    if method != "tsqr":
        raise NotImplementedError(f"qr: method={method!r} is not supported (only 'tsqr')")
    dtype = _float_dtype(np.linalg.qr, a.dtype, out=0)
    m, n = a.shape
    k = _min(m, n)
    op = TensorQR([a.data], dtype=dtype)
    q, r = op.new_tensors([((m, k), dtype), ((k, n), dtype)])
    return r if mode == "r" else (q, r)


def svd(a, full_matrices=False, compute_uv=True, hermitian=False, method="tsqr"):
    """Reduced SVD via TSQR (Mars's tall-and-skinny SVD): ``u, s, vh = svd(a)`` with
    ``u`` (M, K), ``s`` (K,), ``vh`` (K, N), K = min(M, N).  Efficient when N is small;
    a wide matrix works but its R factor is as large as ``a``."""
    a = astensor(a)
    check_2d(a, "svd")
    if full_matrices and not (a.shape[0] == a.shape[1]):
        raise NotImplementedError("svd: full_matrices=True is not supported for non-square input; pass full_matrices=False")
    dtype = _float_dtype(np.linalg.svd, a.dtype, out=0)
    q, r = qr(a)
    ur, s, vh = _single([r], _svd_kernel, _svd_shapes, [dtype] * 3, dtype)
    if not compute_uv:
        return s
    return matmul(q, ur), s, vh


def cholesky(a, lower=True, upper=False):
    """Blocked Cholesky factor of a symmetric (Hermitian) positive-definite matrix: the
    lower ``L`` with ``a = L @ L.T`` as numpy; ``upper=True`` (or ``lower=False``, Mars's
    keyword) gives ``L.T``.  Not positive-definite raises LinAlgError when executed."""
    a = astensor(a)
    check_square(a, "cholesky")
    dtype = _float_dtype(np.linalg.cholesky, a.dtype)
    op = TensorCholesky([a.data], dtype=dtype, upper=bool(upper or not lower))
    return op.new_tensor(a.shape, dtype)


def lu(a):
    """``p, l, u = lu(a)`` like ``scipy.linalg.lu`` (``a = p @ l @ u``).  Computed on one
    chunk holding the whole matrix."""
    import scipy.linalg

    a = astensor(a)
    check_2d(a, "lu")
    dtype = _float_dtype(scipy.linalg.lu, a.dtype, out=1)
    return _single([a], _lu_kernel, _lu_shapes, [dtype] * 3, dtype)


def solve(a, b, sym_pos=False, sparse=False):
    """``x`` with ``a @ x == b`` (``b`` 1-d or 2-d), from one LU factorization of ``a``;
    the column blocks of ``b`` are solved in parallel."""
    a, b = astensor(a), astensor(b)
    check_square(a, "solve")
    if b.ndim not in (1, 2):
        raise NotImplementedError(f"solve: b must be 1-d or 2-d, got {b.ndim}-d")
    if not same_dim(a.shape[0], b.shape[0]):
        sig = "(m,m),(m)->(m)" if b.ndim == 1 else "(m,m),(m,n)->(m,n)"
        raise ValueError(
            f"solve{'1' if b.ndim == 1 else ''}: Input operand 1 has a mismatch in its core dimension 0, "
            f"with gufunc signature {sig} (size {b.shape[0]} is different from {a.shape[0]})"
        )
    dtype = _float_dtype(np.linalg.solve, a.dtype, b.dtype)
    op = TensorLUSolve([a.data, b.data], dtype=dtype)
    return op.new_tensor(b.shape, dtype)


def inv(a, sparse=False):
    """Inverse of a square matrix (LU on one chunk, then the column blocks of the inverse
    in parallel, chunked like ``a``'s columns).  Singular raises LinAlgError when run."""
    a = astensor(a)
    check_square(a, "inv")
    dtype = _float_dtype(np.linalg.inv, a.dtype)
    op = TensorLUSolve([a.data], dtype=dtype)
    return op.new_tensor(a.shape, dtype)


def det(a):
    """Determinant of a square matrix (0-d tensor; computed on one chunk)."""
    a = astensor(a)
    check_square(a, "det")
    dtype = _float_dtype(np.linalg.det, a.dtype)
    return _single([a], _det_kernel, _scalar_shapes, [dtype], dtype)


def slogdet(a):
    """``sign, logabsdet`` of a square matrix (0-d tensors; computed on one chunk)."""
    a = astensor(a)
    check_square(a, "slogdet")
    dtype = _float_dtype(np.linalg.slogdet, a.dtype, out=1)
    sdtype = _float_dtype(np.linalg.slogdet, a.dtype, out=0)
    return _single([a], _slogdet_kernel, _slogdet_shapes, [sdtype, dtype], dtype)
