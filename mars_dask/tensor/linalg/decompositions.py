"""Matrix decompositions and solvers, with Mars's algorithms:

- ``qr``: TSQR (tall-and-skinny QR).  Columns are gathered into one chunk; every row block
  is factored on its own, the small R factors are stacked and factored again, and each
  block's Q is multiplied by its slice of the second Q.
- ``svd``: TSQR, then the SVD of the small R (one chunk), then ``U = Q @ U_R``.
- ``cholesky``: blocked right-looking Cholesky over a square chunk grid (Mars's default:
  the upper factor).
- ``solve_triangular``: blocked forward/backward substitution, column blocks in parallel.
- ``randomized_svd``: Mars's (scikit-learn's) randomized range finder on the operands above.
- ``lu``, ``solve``, ``inv``, ``det``, ``slogdet``: the LU factorization runs on a single
  chunk holding the whole matrix (documented limitation: the matrix must fit one worker);
  ``solve``/``inv`` then solve each column block of the right-hand side in parallel.
"""

from __future__ import annotations

import re

import numpy as np

from ...tiling.core import ensure_known, has_unknown
from ..core import TensorOperand, astensor
from ..utils import offsets
from ._utils import (
    LinAlgError, check_2d, check_square, common_splits, fmt_shape, linalg_dtype, nbytes, rechunked, same_dim,
)
from .products import matmul

__all__ = ["qr", "svd", "cholesky", "lu", "solve", "solve_triangular", "inv", "det", "slogdet", "randomized_svd"]


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


def cholesky(a, lower=False, *, upper=None):
    """Blocked Cholesky factor of a symmetric (Hermitian) positive-definite matrix.  As Mars
    (and ``scipy.linalg.cholesky``), the UPPER factor ``U`` with ``a = U.T.conj() @ U`` by
    default; ``lower=True`` gives numpy's lower ``L`` (``a = L @ L.T.conj()``).  numpy 2's
    ``upper=`` keyword is accepted too.  Not positive-definite raises LinAlgError when
    executed."""
    a = astensor(a)
    check_square(a, "cholesky")
    if upper is not None:
        if lower and upper:
            raise ValueError("cholesky: lower=True and upper=True contradict each other")
        want_upper = bool(upper)
    else:
        want_upper = not lower
    dtype = _float_dtype(np.linalg.cholesky, a.dtype)
    op = TensorCholesky([a.data], dtype=dtype, upper=want_upper)
    return op.new_tensor(a.shape, dtype)


def _solve_triangular_kernel(a_ii, b, prev_a, prev_x, lower, dtype, offset):
    """Block ``i`` of ``x``: ``solve(A_ii, b_i - sum_k A_ik x_k)`` over the blocks already
    solved (left of the diagonal for ``lower``, right of it otherwise)."""
    import scipy.linalg

    s = b.astype(dtype, copy=True)
    for aik, xk in zip(prev_a, prev_x):
        s -= aik @ xk
    try:
        x = scipy.linalg.solve_triangular(a_ii, s, lower=lower, check_finite=False)
    except LinAlgError as e:
        m = re.search(r"diagonal (\d+)", str(e))
        if m is None:
            raise
        raise LinAlgError(f"singular matrix: resolution failed at diagonal {int(m.group(1)) + offset}") from None
    return x.astype(dtype, copy=False)


class TensorSolveTriangular(TensorOperand):
    """Blocked substitution: ``a`` re-cut to a square grid whose boundaries ``b``'s rows
    follow; each column block of ``b`` is solved block row by block row (forward for
    ``lower``, backward otherwise), every block from the diagonal block of ``a`` and the
    blocks of ``x`` already solved.  Only ``a``'s triangle is read, as scipy's."""

    _op_name = "solve-triangular"

    def tile(self):
        a, b = self.inputs
        yield from _known(a)
        yield from _known(b)
        splits = common_splits([a.nsplits[0], a.nsplits[1], b.nsplits[0]])
        a = rechunked(a, (splits, splits))
        b = rechunked(b, (splits,) + tuple(b.nsplits[1:]))
        nb, lower, dtype = len(splits), self.lower, self.dtype
        offs = offsets(splits)
        rows = range(nb) if lower else range(nb - 1, -1, -1)
        col_blocks = [()] if b.ndim == 1 else [(j,) for j in range(len(b.nsplits[1]))]
        chunks = []
        for jidx in col_blocks:
            xs: dict = {}
            for i in rows:
                ks = range(i) if lower else range(i + 1, nb)
                prev_a = [a.chunk_at((i, k)) for k in ks]
                prev_x = [xs[k] for k in ks]
                bc = b.chunk_at((i, *jidx))
                mem = int(2 * nbytes([a.chunk_at((i, i)), bc, *prev_x]) + nbytes(prev_a[:1]) + 1)
                xs[i] = self.new_chunk(
                    (i, *jidx), bc.shape, _solve_triangular_kernel,
                    (a.chunk_at((i, i)), bc, prev_a, prev_x, lower, dtype, offs[i]), memory=mem,
                )
            chunks.extend(xs[i] for i in range(nb))
        if b.ndim == 2:  # chunks were made column block by column block: C order of the grid
            nc = len(col_blocks)
            chunks = [chunks[j * nb + i] for i in range(nb) for j in range(nc)]
        return [(chunks, (splits,) + tuple(b.nsplits[1:]))]


def solve_triangular(a, b, lower=False, sparse=None):
    """``x`` with ``a @ x == b`` for a triangular ``a`` (``scipy.linalg.solve_triangular``:
    only the upper triangle of ``a`` is read, the lower one with ``lower=True``); ``b`` is
    1-d or 2-d.  A zero on the diagonal raises LinAlgError when executed."""
    import scipy.linalg

    a, b = astensor(a), astensor(b)
    if sparse:
        raise NotImplementedError("solve_triangular: sparse=True (Mars's sparse tensors) is not supported")
    if a.ndim != 2:
        raise LinAlgError("a must be 2 dimensional")
    if not same_dim(a.shape[0], a.shape[1]):
        raise LinAlgError(f"expected square matrix, got shape {fmt_shape(a.shape)}")
    if b.ndim not in (1, 2):
        raise LinAlgError("b must be 1 or 2 dimensional")
    if not same_dim(a.shape[1], b.shape[0]):
        raise LinAlgError(f"shapes of a {fmt_shape(a.shape)} and b {fmt_shape(b.shape)} are incompatible")
    try:
        dtype = scipy.linalg.solve_triangular(
            np.array([[2, 0], [2, 1]], dtype=a.dtype), np.array([[2], [3]], dtype=b.dtype), lower=True
        ).dtype
    except (TypeError, ValueError) as e:
        raise TypeError(f"solve_triangular: unsupported dtypes {a.dtype}, {b.dtype}: {e}") from None
    op = TensorSolveTriangular([a.data, b.data], dtype=dtype, lower=bool(lower))
    return op.new_tensor(b.shape, dtype)


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


def _svd_flip(u, v, u_based_decision=True):
    """Signs making the largest-magnitude entry of each column of ``u`` (each row of ``v``
    with ``u_based_decision=False``) positive, as Mars's/scikit-learn's ``svd_flip``."""
    from ..datasource import arange
    from ..reduction import argmax

    if u_based_decision:
        k = u.shape[1]
        signs = np.sign(u[argmax(abs(u), axis=0), arange(k)])
    else:
        k = v.shape[0]
        signs = np.sign(v[arange(k), argmax(abs(v), axis=1)])
    return u * signs, v * signs[:, None]


def randomized_svd(M, n_components, n_oversamples=10, n_iter="auto", power_iteration_normalizer="auto",
                   transpose="auto", flip_sign=True, random_state=0):
    """Truncated randomized SVD (Halko et al.), Mars's ``randomized_svd``: ``u, s, vh`` with
    ``n_components`` singular triplets; the random projection comes from
    ``mt.random.RandomState(random_state)``."""
    from .. import random as mt_random

    M = astensor(M)
    check_2d(M, "randomized_svd")
    if power_iteration_normalizer not in ("auto", "QR", "LU", "none"):
        raise ValueError(f"randomized_svd: unknown power_iteration_normalizer {power_iteration_normalizer!r}")
    rs = random_state if isinstance(random_state, mt_random.RandomState) else mt_random.RandomState(random_state)
    n_random = n_components + n_oversamples
    n_samples, n_features = M.shape
    if n_iter == "auto":
        n_iter = 7 if n_components < 0.1 * min(M.shape) else 4
    if transpose == "auto":
        transpose = n_samples < n_features
    if transpose:
        M = M.T
    # the range finder (Algorithm 4.3 of Halko et al.)
    Q = rs.normal(size=(M.shape[1], n_random))
    if M.dtype.kind == "f":
        Q = Q.astype(M.dtype, copy=False)
    normalizer = power_iteration_normalizer
    if normalizer == "auto":
        normalizer = "none" if n_iter <= 2 else "LU"
    for _ in range(n_iter):
        if normalizer == "none":
            Q = matmul(M.T, matmul(M, Q))
        elif normalizer == "LU":
            p, l, _ = lu(matmul(M, Q))
            Q = matmul(p, l)
            p, l, _ = lu(matmul(M.T, Q))
            Q = matmul(p, l)
        else:
            Q, _ = qr(matmul(M, Q))
            Q, _ = qr(matmul(M.T, Q))
    Q, _ = qr(matmul(M, Q))
    B = matmul(Q.T, M)
    Uhat, s, V = svd(B)
    U = matmul(Q, Uhat)
    if flip_sign:
        U, V = _svd_flip(U, V, u_based_decision=not transpose)
    if transpose:
        return V[:n_components, :].T, s[:n_components], U[:, :n_components].T
    return U[:, :n_components], s[:n_components], V[:n_components, :]
