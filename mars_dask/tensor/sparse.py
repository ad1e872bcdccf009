"""Sparse tensors: 2-d tensors whose chunks are ``scipy.sparse`` CSR matrices (Mars's
``SparseNDArray`` wraps the same matrices).

- Creation: ``mt.tensor(scipy_matrix, chunk_size=)``, ``mt.tensor(ndarray, sparse=True)``,
  ``ones/zeros/full/empty/eye/identity/diag(..., sparse=True)``, ``t.tosparse(missing=)``;
  ``t.todense(fill_value=)`` goes back.  ``fetch()`` gives a ``scipy.sparse.csr_matrix``.
- Sparse in, sparse out where numpy/scipy keep zeros as zeros: element-wise functions with
  ``f(0, ...) == 0`` (``sin``, ``abs``, ``astype``, ``x * 2``, ``x + y`` of two sparse
  tensors, ``x * dense``: see :func:`output_is_sparse`), ``dot``/``matmul``/``tensordot`` of
  two sparse tensors, ``transpose`` and slicing.  Everything else gives a dense tensor, as
  scipy does (reductions, ``x + 1``, ``x + dense``, integer or fancy indexing).
- Kernels accept a chunk that arrives dense where a sparse one was expected (an operand that
  does not know sparse chunks re-cut it) and make it sparse again, so results never depend on
  the route a chunk took.

Only 2-d sparse tensors exist: Mars's 1-d ``SparseVector`` and n-d sparse arrays raise
``NotImplementedError``.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from ..tiling.core import ensure_known, has_unknown, new_key
from .core import Tensor, TensorData, TensorOperand, astensor
from .utils import chunk_grid, chunk_shape_at, normalize_chunk_size, offsets

__all__: list[str] = []


def _sps():
    import scipy.sparse as sps

    return sps


def is_sparse_value(x) -> bool:
    """Is ``x`` a ``scipy.sparse`` matrix or array (a sparse chunk)?"""
    if isinstance(x, np.ndarray) or np.isscalar(x):
        return False
    return _sps().issparse(x)


def _check_2d(ndim: int, what: str) -> None:
    if ndim != 2:
        raise NotImplementedError(
            f"{what}: sparse tensors of {ndim} dimension(s) (Mars's SparseVector / n-d SparseNDArray) "
            "are not supported; sparse tensors are 2-d"
        )


def _canonical(x):
    """``x`` as a CSR matrix in canonical form (sorted indices, no duplicates), without
    modifying ``x`` (its arrays may be read-only views of the store)."""
    sps = _sps()
    if isinstance(x, np.ndarray) or not sps.issparse(x):
        return sps.csr_matrix(np.asarray(x))
    m = x.tocsr() if x.format != "csr" else x
    if not isinstance(m, sps.csr_matrix):
        m = sps.csr_matrix(m)
    if not m.has_canonical_format:
        m = m.copy()
        m.sum_duplicates()
    return m


def as_sparse(x):
    """A chunk as a CSR matrix (dense chunks are converted)."""
    return _canonical(x)


def as_dense(x):
    """A chunk as an ndarray (sparse chunks are expanded)."""
    if isinstance(x, np.ndarray):
        return x
    if is_sparse_value(x):
        return x.toarray()
    return x


def _mark(t: Tensor, sparse: bool = True) -> Tensor:
    t.data.issparse = sparse
    return t


# ---- creation -------------------------------------------------------------------------------


def _sparse_part(part):
    return part


class SparseMatrixDataSource(TensorOperand):
    """A local ``scipy.sparse`` matrix cut into CSR chunks (each chunk's matrix travels in
    the graph, as ``ArrayDataSource``'s slices do)."""

    _op_name = "sparse-tensor"
    sparse_aware = True

    def __init__(self, matrix, chunk_size):
        super().__init__([], chunk_size=chunk_size)
        self.matrix = matrix

    def tile(self):
        out = self.output
        nsplits = normalize_chunk_size(out.shape, self.chunk_size, out.dtype.itemsize)
        r_offs, c_offs = (offsets(s) for s in nsplits)
        m = self.matrix
        chunks = []
        for i, j in chunk_grid(nsplits):
            part = m[r_offs[i]:r_offs[i + 1]][:, c_offs[j]:c_offs[j + 1]]
            chunks.append(self.new_chunk((i, j), chunk_shape_at(nsplits, (i, j)), _sparse_part, (part,)))
        return [(chunks, nsplits)]


def from_spmatrix(matrix, dtype=None, chunk_size=None) -> Tensor:
    """A sparse tensor from a ``scipy.sparse`` matrix (``mt.tensor`` calls this)."""
    m = _canonical(matrix)
    if dtype is not None and np.dtype(dtype) != m.dtype:
        m = m.astype(dtype)
    normalize_chunk_size(m.shape, chunk_size, m.dtype.itemsize)  # validate now
    op = SparseMatrixDataSource(m, chunk_size)
    key = new_key("sparse-tensor", m.data, m.indices, m.indptr, m.shape, str(m.dtype), chunk_size)
    return _mark(op.new_tensor(m.shape, m.dtype, key=key))


def _to_sparse_kernel(x, missing):
    sps = _sps()
    if is_sparse_value(x):
        return _canonical(x)
    x = np.asarray(x)
    if missing is None:
        return sps.csr_matrix(x)
    mask = _present_mask(x, missing)
    rows, cols = mask.nonzero()
    return sps.csr_matrix((x[mask], (rows, cols)), shape=x.shape, dtype=x.dtype)


def _present_mask(x, missing):
    """Mars's ``DenseToSparse`` mask: the elements that are not ``missing`` (NaN: not NaN;
    a list: none of them)."""
    if isinstance(missing, (list, tuple, set)):
        mask = np.ones(x.shape, dtype=bool)
        for m in missing:
            mask &= _present_mask(x, m)
        return mask
    if isinstance(missing, float) and math.isnan(missing):
        return ~np.isnan(x) if x.dtype.kind in "fc" else np.ones(x.shape, dtype=bool)
    return x != missing


def _to_dense_kernel(x, fill_value, order):
    if not is_sparse_value(x):
        return np.asarray(x, order=order)
    if fill_value is None:
        return np.asarray(x.toarray(order=order))
    coo = _canonical(x).tocoo()
    out = np.full(coo.shape, fill_value, dtype=coo.dtype, order=order)
    out[coo.row, coo.col] = coo.data
    return out


class TensorSparseConvert(TensorOperand):
    """``tosparse``/``todense``: ``kernel(chunk, *args)`` chunk by chunk."""

    _op_name = "sparse-convert"
    sparse_aware = True

    def tile(self):
        (x,) = self.inputs
        chunks = [self.new_chunk(idx, x.chunk_at(idx).shape, self.kernel, (x.chunk_at(idx), *self.args),
                                 blockwise=True)
                  for idx in x.chunk_grid()]
        return [(chunks, x.nsplits)]


def tosparse(t, missing=None) -> Tensor:
    """``t`` with CSR chunks (itself when already sparse).  ``missing``: the value(s) not
    stored (default: zeros; NaN or a list of values, as Mars)."""
    t = astensor(t)
    if t.issparse():
        return t
    _check_2d(t.ndim, "tosparse")
    op = TensorSparseConvert([t.data], kernel=_to_sparse_kernel, args=(missing,))
    return _mark(op.new_tensor(t.shape, t.dtype))


def todense(t, fill_value=None, order="C") -> Tensor:
    """``t`` with ndarray chunks (itself when already dense); ``fill_value`` replaces the
    elements that are not stored (default 0), as Mars's ``fromsparse``."""
    t = astensor(t)
    if not t.issparse():
        return t
    if order not in ("C", "F"):
        raise ValueError("only 'C' or 'F' order is permitted")
    op = TensorSparseConvert([t.data], kernel=_to_dense_kernel, args=(fill_value, order))
    out = op.new_tensor(t.shape, t.dtype)
    out.data.order = order
    return out


def densify(t):
    """A dense tensor for operands that do not know sparse chunks (tensors pass through
    :func:`todense`; anything else is returned as it is)."""
    if isinstance(t, TensorData):
        return todense(Tensor(t)).data if t.issparse else t
    if isinstance(t, Tensor):
        return todense(t)
    return t


def densify_inputs(op_cls, inputs):
    """``inputs`` of a new operand of class ``op_cls``: sparse tensors become dense unless
    the class says it knows sparse chunks (``sparse_aware = True``).  Called by
    ``TensorOperand.__init__``, so an operation written for ndarrays gives numpy's (dense)
    result on a sparse tensor instead of failing on scipy matrices."""
    if getattr(op_cls, "sparse_aware", False):
        return inputs
    return [todense(Tensor(i)).data if getattr(i, "issparse", False) is True else i for i in inputs]


def _sparse_zeros_kernel(shape, origin, dtype):
    return _sps().csr_matrix(tuple(shape), dtype=dtype)


def _sparse_eye_kernel(shape, origin, k, dtype):
    (r0, c0), (nr, nc) = origin, shape
    rows = np.arange(max(r0, c0 - k), min(r0 + nr, c0 + nc - k))
    data = np.ones(len(rows), dtype=dtype)
    return _sps().csr_matrix((data, (rows - r0, rows + k - c0)), shape=tuple(shape), dtype=dtype)


def generated_kernel(name: str):
    """The chunk kernel of ``datasource``'s generated sparse tensors."""
    return {"zeros": _sparse_zeros_kernel, "eye": _sparse_eye_kernel}[name]


def check_sparse_shape(shape, what: str) -> None:
    _check_2d(len(shape), what)


# ---- fetch ------------------------------------------------------------------------------------


def assemble(meta, parts):
    """The fetched value of a sparse tensor: one ``scipy.sparse.csr_matrix`` from its
    chunks (``meta`` is ``(chunk grid shape, dtype, shape)``)."""
    sps = _sps()
    chunk_shape, dtype, shape = meta
    mats = [as_sparse(p) for p in parts]
    if not mats:
        return sps.csr_matrix(tuple(0 if s != s else int(s) for s in shape), dtype=dtype)
    nr, nc = chunk_shape
    heights = [mats[i * nc].shape[0] for i in range(nr)]
    widths = [mats[j].shape[1] for j in range(nc)]
    r_offs, c_offs = offsets(heights), offsets(widths)
    rows, cols, data = [], [], []
    for k, m in enumerate(mats):
        i, j = divmod(k, nc)
        coo = m.tocoo()
        rows.append(coo.row.astype(np.int64) + r_offs[i])
        cols.append(coo.col.astype(np.int64) + c_offs[j])
        data.append(coo.data)
    total = (r_offs[-1], c_offs[-1])
    return sps.csr_matrix((np.concatenate(data).astype(dtype, copy=False),
                           (np.concatenate(rows), np.concatenate(cols))), shape=total, dtype=dtype)


# ---- element-wise ------------------------------------------------------------------------------

#: ufuncs for which ``f(0, anything) == 0``: sparse times dense stays sparse (as scipy's
#: ``multiply``; note that ``0 * inf`` is then 0 where numpy gives NaN, as in scipy)
_ANNIHILATING = (np.multiply, np.logical_and, np.bitwise_and)


def _decide(func, items, kwargs, out_shape) -> bool:
    """Is ``func``'s result sparse?  ``items``: per argument ``("s", dtype, shape)`` for a
    sparse input, ``("d", dtype, shape)`` for a dense one, ``("c", value)`` for a constant."""
    sparse = [it for it in items if it[0] == "s"]
    if not sparse:
        return False
    if len(out_shape) != 2 or any(tuple(it[2]) != tuple(out_shape) for it in sparse):
        return False  # a broadcast sparse operand: dense result
    dense = [it for it in items if it[0] == "d"]
    probe_args = []
    for it in items:
        if it[0] == "c":
            probe_args.append(it[1])
        elif it[0] == "s":
            probe_args.append(np.zeros(1, dtype=it[1]))
        else:
            probe_args.append(np.ones(1, dtype=it[1]))
    try:
        with np.errstate(all="ignore"):
            res = func(*probe_args, **kwargs)
    except Exception:  # noqa: BLE001 - the dense route raises the real error
        return False
    if isinstance(res, tuple) or np.asarray(res).dtype.kind not in "biufc":
        return False
    if dense:
        return func in _ANNIHILATING and len(items) == 2
    return np.count_nonzero(res) == 0


def output_is_sparse(func, args, kwargs=None) -> bool:
    """Is ``elementwise(func, *args, **kwargs)`` sparse?  ``args`` mixes Tensors and
    constants.  Sparse when every sparse operand has the output's 2-d shape and

    - no dense tensor takes part and ``func(0, ..., constants) == 0`` (``sin``, ``abs``,
      ``x * 2``, ``x / 2``, ``x > 0``, ``x + y`` and ``maximum(x, y)`` of sparse ``x, y``,
      ``astype``), or
    - ``func`` is ``multiply``/``logical_and``/``bitwise_and`` (zero times anything).

    Otherwise dense (``x + 1``, ``cos(x)``, ``x / y``, ``x + dense``), as numpy's values are.
    """
    items = []
    shapes = []
    for a in args:
        if isinstance(a, Tensor):
            items.append(("s" if a.issparse() else "d", a.dtype, a.shape))
            shapes.append(a.shape)
        else:
            items.append(("c", a))
    if not shapes or not any(it[0] == "s" for it in items):
        return False
    try:
        out_shape = np.broadcast_shapes(*[tuple(0 if s != s else s for s in sh) for sh in shapes])
    except ValueError:
        return False
    if any(has_unknown(sh) for sh in shapes):
        out_shape = max(shapes, key=len)
    return _decide(func, items, kwargs or {}, out_shape)


class _ElementwiseKernel:
    """``func`` over chunks of which some are sparse (see :func:`elementwise_kernel`)."""

    __slots__ = ("func", "flags", "out_sparse")

    def __init__(self, func, flags, out_sparse):
        self.func = func
        self.flags = tuple(flags)  # per argument: True (sparse tensor), False (dense), None (constant)
        self.out_sparse = out_sparse

    def __reduce__(self):
        return (_ElementwiseKernel, (self.func, self.flags, self.out_sparse))

    def __dask_tokenize__(self):
        return ("sparse-elementwise", getattr(self.func, "__name__", repr(self.func)), self.flags, self.out_sparse)

    def __call__(self, *args, **kwargs):
        args = [as_sparse(a) if f else a for a, f in zip(args, self.flags)]
        out_shape = _broadcast_chunk_shape(args, self.flags)
        out_sparse = self.out_sparse
        if out_sparse is None:
            items = [("c", a) if f is None else ("s" if f else "d", a.dtype, np.shape(a))
                     for a, f in zip(args, self.flags)]
            out_sparse = _decide(self.func, items, kwargs, out_shape)
        if not out_sparse:
            dense = [as_dense(a) for a in args]
            return self.func(*dense, **kwargs)
        return _sparse_apply(self.func, args, self.flags, kwargs, out_shape)


def _broadcast_chunk_shape(args, flags):
    return np.broadcast_shapes(*[np.shape(a) for a, f in zip(args, flags) if f is not None])


def _sparse_apply(func, args, flags, kwargs, out_shape):
    """``func`` evaluated on the union of the sparse operands' stored positions only (every
    other position is ``func(0, ...) == 0``); dense operands are read at those positions."""
    sps = _sps()
    mats = [a for a, f in zip(args, flags) if f]
    ncols = out_shape[1]
    if len(mats) == 1:
        coo = mats[0].tocoo()
        rows, cols = coo.row.astype(np.int64), coo.col.astype(np.int64)
        values = [coo.data]
    else:
        lins = []
        for m in mats:
            coo = m.tocoo()
            lins.append((coo.row.astype(np.int64) * ncols + coo.col, coo.data))
        union = np.unique(np.concatenate([lin for lin, _ in lins])) if lins else np.empty(0, np.int64)
        values = []
        for lin, data in lins:
            order = np.argsort(lin, kind="stable")
            lin, data = lin[order], data[order]
            pos = np.searchsorted(lin, union)
            pos_c = np.minimum(pos, max(len(lin) - 1, 0))
            hit = (pos < len(lin)) & (lin[pos_c] == union) if len(lin) else np.zeros(len(union), bool)
            vals = np.zeros(len(union), dtype=data.dtype)
            vals[hit] = data[pos_c[hit]]
            values.append(vals)
        rows, cols = union // ncols if ncols else union, union % ncols if ncols else union
    it = iter(values)
    call = []
    for a, f in zip(args, flags):
        if f:
            call.append(next(it))
        elif f is None:
            call.append(a)
        else:
            call.append(np.broadcast_to(np.asarray(a), out_shape)[rows, cols])
    data = np.asarray(func(*call, **kwargs))
    res = sps.csr_matrix((data, (rows, cols)), shape=tuple(out_shape), dtype=data.dtype)
    res.eliminate_zeros()
    return res


def elementwise_kernel(func, template, sparse_inputs, out_sparse=None):
    """The kernel an element-wise operand runs when some of its inputs are sparse.

    ``template``: the operand's ``args_spec`` (``("t", None)`` per tensor input, in order,
    ``("c", value)`` per constant); ``sparse_inputs``: per tensor input, is it sparse;
    ``out_sparse``: is the output sparse (the output tensor's ``issparse``; when ``None``
    each chunk decides with :func:`output_is_sparse`'s rule)."""
    flags = []
    it = iter(sparse_inputs)
    for kind, _ in template:
        flags.append(bool(next(it)) if kind == "t" else None)
    return _ElementwiseKernel(func, flags, out_sparse)


# ---- reductions ------------------------------------------------------------------------------


def _sum_dtype(x, dtype):
    return np.sum(np.zeros(1, dtype=x.dtype), dtype=dtype).dtype


def _keep(shape, axes):
    return tuple(1 if a in axes else s for a, s in enumerate(shape))


def reduce_partial(x, name, axes, kw):
    """A reduction's partial (keepdims ndarray) computed on sparse chunk ``x`` without
    expanding it, for ``sum``, ``mean`` (``(count, sum)``), ``max``/``min``, ``any``/``all``
    and ``count_nonzero``; ``NotImplemented`` for the others (the caller expands the chunk).
    """
    if not axes:
        return NotImplemented
    m = _canonical(x)
    shape = m.shape
    keep = _keep(shape, axes)
    axes = tuple(sorted(axes))
    coo = m.tocoo()
    if name in ("sum", "mean"):
        dt = kw.get("dtype")
        if name == "sum":
            out_dt = _sum_dtype(m, dt)
        else:
            out_dt = np.dtype(dt)
        s = _group_sum(coo, axes, shape, out_dt)
        if name == "sum":
            return s.reshape(keep)
        n = np.full(keep, _prod([shape[a] for a in axes]), dtype=np.int64)
        return n, s.reshape(keep)
    if name == "count_nonzero":
        nz = coo.data != 0
        return _group_count(coo, nz, axes, shape).astype(np.intp).reshape(keep)
    if name in ("any", "all"):
        nz = coo.data != 0
        cnt = _group_count(coo, nz, axes, shape)
        if name == "any":
            return (cnt > 0).reshape(keep)
        return (cnt == _prod([shape[a] for a in axes])).reshape(keep)
    if name in ("max", "min") and m.dtype.kind in "iuf":
        if _prod([shape[a] for a in axes]) == 0:
            return None
        res = m.max(axis=_scipy_axis(axes)) if name == "max" else m.min(axis=_scipy_axis(axes))
        res = as_dense(res) if not np.isscalar(res) else np.asarray(res)
        return np.asarray(res, dtype=m.dtype).reshape(keep)
    return NotImplemented


def _scipy_axis(axes):
    return None if len(axes) == 2 else axes[0]


def _prod(xs):
    p = 1
    for v in xs:
        p *= v
    return p


def _group_sum(coo, axes, shape, dtype):
    data = coo.data.astype(dtype, copy=False)
    if len(axes) == 2:
        return np.sum(data, dtype=dtype).reshape(())
    if len(axes) == 0:
        return np.asarray(coo.toarray(), dtype=dtype)
    idx = coo.col if axes[0] == 0 else coo.row
    out = np.zeros(shape[1 - axes[0]], dtype=dtype)
    np.add.at(out, idx, data)
    return out


def _group_count(coo, mask, axes, shape):
    if len(axes) == 2:
        return np.int64(np.count_nonzero(mask))
    if len(axes) == 0:
        out = np.zeros(shape, dtype=np.int64)
        out[coo.row[mask], coo.col[mask]] = 1
        return out
    idx = coo.col if axes[0] == 0 else coo.row
    return np.bincount(idx[mask], minlength=shape[1 - axes[0]]).astype(np.int64)


# ---- products --------------------------------------------------------------------------------


def _t(x):
    return x.T if is_sparse_value(x) else np.transpose(x)


def tensordot_blocks(a, b, axes):
    """``np.tensordot(a, b, axes)`` where ``a`` or ``b`` may be sparse: matrix products for
    2-d/1-d operands (scipy's), the dense product otherwise."""
    a_axes, b_axes = (list(v) for v in axes)
    if len(a_axes) == 1 and np.ndim(a) in (1, 2) and np.ndim(b) in (1, 2):
        if np.ndim(a) == 2 and a_axes[0] == 0:
            a = _t(a)
        if np.ndim(b) == 2 and b_axes[0] == 1:
            b = _t(b)
        return _matprod(a, b)
    if len(a_axes) == 2 and np.ndim(a) == 2 and np.ndim(b) == 2:
        if list(a_axes) != list(b_axes):
            b = _t(b)
        prod_ = a.multiply(b) if is_sparse_value(a) else (b.multiply(a) if is_sparse_value(b) else a * b)
        return np.asarray(prod_.sum()).reshape(()) if is_sparse_value(prod_) else np.asarray(np.sum(prod_))
    return np.tensordot(as_dense(a), as_dense(b), axes=axes)


def _matprod(a, b):
    res = a @ b
    if isinstance(res, np.matrix):
        res = np.asarray(res)
    return res


def matmul_blocks(a, b):
    if np.ndim(a) <= 2 and np.ndim(b) <= 2:
        return _matprod(a, b)
    return np.matmul(as_dense(a), as_dense(b))


def coerce(x, sparse: bool):
    """``x`` as a sparse (CSR) or dense chunk."""
    if sparse:
        return as_sparse(x)
    return as_dense(x)


# ---- transpose, slicing, rechunk -----------------------------------------------------------------


def _transpose_kernel(x):
    return as_sparse(x).T.tocsr()


class SparseTranspose(TensorOperand):
    _op_name = "sparse-transpose"
    sparse_aware = True

    def tile(self):
        (x,) = self.inputs
        chunks = []
        for i, j in chunk_grid((x.nsplits[1], x.nsplits[0])):
            c = x.chunk_at((j, i))
            chunks.append(self.new_chunk((i, j), c.shape[::-1], _transpose_kernel, (c,), blockwise=True))
        return [(chunks, (x.nsplits[1], x.nsplits[0]))]


def transpose(t, axes=None) -> Tensor:
    """``t.T`` of a sparse tensor (sparse); ``manipulation.transpose`` delegates here."""
    t = astensor(t)
    if axes is not None:
        axes = tuple(operator.index(a) % 2 if -2 <= operator.index(a) < 2 else a for a in axes)
        if len(axes) != 2 or sorted(axes) != [0, 1]:
            raise ValueError("axes don't match array")
        if axes == (0, 1):
            return t
    return _mark(SparseTranspose([t.data]).new_tensor(t.shape[::-1], t.dtype))


def _select_kernel(x, rows, cols):
    m = as_sparse(x)
    if not (isinstance(rows, slice) and rows == slice(None)):
        m = m[rows]
    if not (isinstance(cols, slice) and cols == slice(None)):
        m = m[:, cols]
    return _canonical(m)


def _axis_plan(splits, sl: slice):
    """For one axis: ``[(input chunk, local selection), ...]`` per output chunk, and the
    output lengths."""
    n = int(sum(splits))
    idx = np.arange(n)[sl]
    offs = offsets(splits)
    if len(idx) == 0:
        return [(0, np.empty(0, dtype=np.intp))], (0,)
    if len(idx) == n and (sl.step is None or sl.step == 1):
        return [(k, slice(None)) for k in range(len(splits))], tuple(splits)
    owner = np.searchsorted(offs, idx, side="right") - 1
    cuts = np.flatnonzero(np.diff(owner)) + 1
    plan, lengths = [], []
    for grp in np.split(np.arange(len(idx)), cuts):
        k = int(owner[grp[0]])
        local = idx[grp] - offs[k]
        step = int(sl.step or 1)
        start = int(local[0])
        stop = start + step * len(local)
        sel = slice(start, stop if stop >= 0 else None, step)
        plan.append((k, sel))
        lengths.append(len(local))
    return plan, tuple(lengths)


class SparseSlice(TensorOperand):
    _op_name = "sparse-slice"
    sparse_aware = True

    def tile(self):
        (x,) = self.inputs
        if any(has_unknown(s) for s in x.nsplits):
            yield from ensure_known(x)
        (rplan, rlen), (cplan, clen) = (_axis_plan(x.nsplits[a], self.index[a]) for a in range(2))
        chunks = []
        for i, j in chunk_grid((rlen, clen)):
            (ri, rsel), (cj, csel) = rplan[i], cplan[j]
            c = x.chunk_at((ri, cj))
            chunks.append(self.new_chunk((i, j), (rlen[i], clen[j]), _select_kernel, (c, rsel, csel)))
        return [(chunks, (rlen, clen))]


def getitem(t, item) -> Tensor:
    """``t[item]`` of a sparse tensor: sparse for slices (and ``...``), else the dense
    tensor's indexing (integers and arrays give dense results, as numpy's shapes say)."""
    t = astensor(t)
    entries = item if isinstance(item, tuple) else (item,)
    if all(isinstance(e, slice) or e is Ellipsis for e in entries) and sum(e is Ellipsis for e in entries) <= 1:
        sl = [e for e in entries if e is not Ellipsis]
        if len(sl) <= 2:
            if Ellipsis in entries:
                pos = entries.index(Ellipsis)
                sl = sl[:pos] + [slice(None)] * (2 - len(sl)) + sl[pos:]
            sl = sl + [slice(None)] * (2 - len(sl))
            if all(s == slice(None) for s in sl):
                return t
            shape = tuple(
                math.nan if has_unknown((n,)) else len(range(*s.indices(int(n)))) for n, s in zip(t.shape, sl)
            )
            op = SparseSlice([t.data], index=tuple(sl))
            return _mark(op.new_tensor(shape, t.dtype))
    return todense(t)[item]


def setitem(t, item, value):
    raise NotImplementedError("setitem on a sparse tensor (Mars's sparse tensors are read-only here); "
                              "use t.todense() first")


def _rechunk_kernel(parts, slices, grid):
    pieces = [as_sparse(p)[s[0]][:, s[1]] for p, s in zip(parts, slices)]
    if len(pieces) == 1:
        return _canonical(pieces[0])
    sps = _sps()
    nr, nc = grid
    rows = [sps.hstack(pieces[i * nc:(i + 1) * nc], format="csr") for i in range(nr)]
    return _canonical(sps.vstack(rows, format="csr"))


class SparseRechunk(TensorOperand):
    _op_name = "sparse-rechunk"
    sparse_aware = True

    def new_tensors(self, shapes_dtypes, *args, **kwargs):
        outs = super().new_tensors(shapes_dtypes, *args, **kwargs)
        for t in outs:
            t.data.issparse = True
        return outs

    def tile(self):
        from .rechunk import rechunk_chunks

        (inp,) = self.inputs
        if any(has_unknown(s) for s in inp.nsplits):
            yield from ensure_known(inp)
        new = normalize_chunk_size(inp.shape, self.chunk_size, inp.dtype.itemsize)
        return [rechunk_chunks(self, inp, new, kernel=_rechunk_kernel)]


def rechunk(t, chunk_size) -> Tensor:
    """A sparse tensor re-cut to ``chunk_size`` (``rechunk.rechunk`` delegates here)."""
    t = astensor(t)
    if not has_unknown(t.shape):
        new = normalize_chunk_size(t.shape, chunk_size, t.dtype.itemsize)
        if t.nsplits is not None and tuple(t.nsplits) == new:
            return t
        chunk_size = new
    return SparseRechunk([t.data], chunk_size=chunk_size).new_tensor(t.shape, t.dtype)


def rechunked_data(t: TensorData, nsplits) -> TensorData:
    """``t`` (sparse) re-cut to exactly ``nsplits``, tiled now (for operands' ``tile``)."""
    from .rechunk import rechunked_now

    return rechunked_now(t, nsplits, SparseRechunk)

