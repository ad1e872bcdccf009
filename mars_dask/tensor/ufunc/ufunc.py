"""numpy ufuncs called on tensors (Mars's ``mars.tensor.ufunc.ufunc``).

``UFUNC_TO_TENSOR_FUNCS`` maps numpy ufuncs to :class:`TensorUfuncDef`: the tensor function
(``__call__``), and for ``add``, ``multiply``, ``logaddexp`` and ``logaddexp2`` the
``reduce``/``accumulate`` methods, as Mars defines them; ``at`` updates the tensor in place (chunk by chunk, repeated indices applied once per
occurrence, as numpy).
:func:`_array_ufunc` is installed on :class:`~mars_dask.tensor.core.Tensor` by the package:
it asks the element-wise machinery first (every numpy ufunc, ``reduce``/``accumulate`` of the
common ones) and falls back to this table (``at``, ``logaddexp.reduce``, ...).
"""

from __future__ import annotations

from numbers import Number

import numpy as np

from ...tiling.core import ensure_known, has_unknown
from .. import arithmetic as arith
from .. import reduction
from ..core import Tensor, TensorOperand, astensor
from ..utils import offsets

__all__ = ["TensorUfuncDef", "UFUNC_TO_TENSOR_FUNCS"]


def _is_basic(indices) -> bool:
    parts = indices if isinstance(indices, tuple) else (indices,)
    return all(isinstance(p, (slice, int, np.integer)) or p is Ellipsis or p is None for p in parts)


def _at_kernel(block, idx, b, ufunc):
    out = block.copy()
    if b is None:
        ufunc.at(out, idx)
    else:
        ufunc.at(out, idx, b)
    return out


def _same(block):
    return block


class TensorUfuncAt(TensorOperand):
    """``ufunc.at(a, indices, b)`` for integer-array indices on the leading axes: every
    chunk applies ``ufunc.at`` to the index points that fall in it (repeated points are
    applied once per occurrence, as numpy)."""

    _op_name = "ufunc-at"

    def tile(self):
        (inp,) = self.inputs
        if any(has_unknown(s) for s in inp.nsplits):
            yield from ensure_known(inp)
        points = [p % int(n) if int(n) else p for p, n in zip(self.points, inp.shape)]
        k = len(points)
        b = self.b
        offs = [offsets(s) for s in inp.nsplits]
        chunks = []
        for idx in inp.chunk_grid():
            c = inp.chunk_at(idx)
            lo = [offs[a][idx[a]] for a in range(inp.ndim)]
            hi = [offs[a][idx[a] + 1] for a in range(inp.ndim)]
            mask = np.ones(len(points[0]), dtype=bool)
            for j in range(k):
                mask &= (points[j] >= lo[j]) & (points[j] < hi[j])
            if not mask.any():
                chunks.append(self.new_chunk(idx, c.shape, _same, (c,), inputs=[c]))
                continue
            local = tuple(points[j][mask] - lo[j] for j in range(k))
            part = None
            if b is not None:
                part = b[mask][(Ellipsis,) + tuple(slice(lo[a], hi[a]) for a in range(k, inp.ndim))] \
                    if b.ndim > 1 or inp.ndim > k else b[mask]
            chunks.append(self.new_chunk(idx, c.shape, _at_kernel, (c, local, part, self.ufunc), inputs=[c]))
        return [(chunks, tuple(tuple(s) for s in inp.nsplits))]


def _ufunc_at(ufunc, a: Tensor, indices, b):
    parts = indices if isinstance(indices, tuple) else (indices,)
    if isinstance(b, Tensor) or any(isinstance(p, Tensor) for p in parts):
        raise NotImplementedError("ufunc.at with tensor indices or values is not supported; pass numpy "
                                  "arrays or lists")
    arrays = [np.asarray(p) for p in parts]
    if any(x.dtype.kind not in "iu" for x in arrays) or len(arrays) > a.ndim:
        raise NotImplementedError("ufunc.at supports basic indices or integer arrays on the leading axes")
    pts = [x.ravel() for x in np.broadcast_arrays(*arrays)]
    for j, (p, n) in enumerate(zip(pts, a.shape)):
        if not has_unknown((n,)) and len(p) and (p.max() >= n or p.min() < -n):
            bad = p[(p >= n) | (p < -n)][0]
            raise IndexError(f"index {bad} is out of bounds for axis {j} with size {int(n)}")
    trailing = tuple(a.shape[len(pts):])
    bb = None
    if b is not None:
        if has_unknown(trailing):
            raise NotImplementedError("ufunc.at: the unindexed axes must have known lengths")
        bshape = np.broadcast_shapes(*[x.shape for x in arrays]) + tuple(int(n) for n in trailing)
        bb = np.broadcast_to(np.asarray(b), bshape).reshape((len(pts[0]),) + tuple(int(n) for n in trailing))
        probe = np.zeros(1, dtype=a.dtype)
        ufunc.at(probe, [0], bb.ravel()[:1])  # numpy's casting errors, now
    elif ufunc.nin != 1:
        raise TypeError(f"{ufunc.__name__}.at() needs a second operand")
    op = TensorUfuncAt([a.data], points=pts, b=bb, ufunc=ufunc)
    a.data = op.new_tensor(a.shape, a.dtype).data


class TensorUfuncDef:
    def __init__(self, method, aggregator=None, accumulator=None, pre_agg=None, post_agg=None, ufunc=None):
        self._ufunc = ufunc
        self._method = method
        self._aggregator = aggregator
        self._accumulator = accumulator
        self._pre_agg = pre_agg
        self._post_agg = post_agg

    def __call__(self, *args, **kwargs):
        return self._method(*args, **kwargs)

    def at(self, a, indices, b=None):
        if not isinstance(a, Tensor):
            raise TypeError("ufunc.at: the first argument must be a tensor to update in place")
        if self._ufunc is not None and not _is_basic(indices):
            return _ufunc_at(self._ufunc, a, indices, b)
        # basic indices select every element once: Mars's way
        if b is None:
            a[indices] = self(a[indices])
        else:
            a[indices] = self(a[indices], b)

    def accumulate(self, array, axis=0, dtype=None, out=None):
        if self._accumulator is None:
            raise NotImplementedError
        data = array if self._pre_agg is None else self._pre_agg(array)
        result = self._accumulator(data, axis=axis, dtype=dtype)
        result = result if self._post_agg is None else self._post_agg(result)
        if out is not None:
            out[0].data = result.data
            return out[0]
        return result

    def reduce(self, array, axis=0, dtype=None, out=None, keepdims=False):
        if self._aggregator is None:
            raise NotImplementedError
        data = array if self._pre_agg is None else self._pre_agg(array)
        result = self._aggregator(data, axis=axis, dtype=dtype, keepdims=keepdims)
        result = result if self._post_agg is None else self._post_agg(result)
        if out is not None:
            out[0].data = result.data
            return out[0]
        return result


def _pow2(x):
    return arith.power(2, x)


_AGG = {
    np.add: dict(accumulator=reduction.cumsum, aggregator=reduction.sum),
    np.multiply: dict(accumulator=reduction.cumprod, aggregator=reduction.prod),
    np.logaddexp: dict(accumulator=reduction.cumsum, aggregator=reduction.sum, pre_agg=arith.exp,
                       post_agg=arith.log),
    np.logaddexp2: dict(accumulator=reduction.cumsum, aggregator=reduction.sum, pre_agg=_pow2,
                        post_agg=arith.log2),
}

_MARS_UFUNCS = [
    np.add, np.subtract, np.multiply, np.divide, np.logaddexp, np.logaddexp2, np.true_divide,
    np.floor_divide, np.negative, np.power, np.float_power, np.remainder, np.mod, np.fmod, np.conj,
    np.conjugate, np.exp, np.exp2, np.log, np.log2, np.log10, np.log1p, np.expm1, np.sqrt, np.square,
    np.cbrt, np.reciprocal, np.sin, np.cos, np.tan, np.arcsin, np.arccos, np.arctan, np.arctan2, np.hypot,
    np.sinh, np.cosh, np.tanh, np.arcsinh, np.arccosh, np.arctanh, np.deg2rad, np.rad2deg, np.greater,
    np.greater_equal, np.less, np.less_equal, np.not_equal, np.equal, np.logical_and, np.logical_or,
    np.logical_xor, np.logical_not, np.maximum, np.minimum, np.fmax, np.fmin, np.isfinite, np.isinf,
    np.isnan, np.signbit, np.copysign, np.nextafter, np.spacing, np.modf, np.ldexp, np.frexp, np.floor,
    np.ceil, np.trunc, np.degrees, np.radians, np.rint, np.fabs, np.sign, np.absolute,
]

UFUNC_TO_TENSOR_FUNCS = {
    uf: TensorUfuncDef(getattr(arith, uf.__name__), ufunc=uf, **_AGG.get(uf, {})) for uf in _MARS_UFUNCS
}


def _check_arg(arg) -> bool:
    if isinstance(arg, (Number, Tensor)):
        return True
    try:
        astensor(arg)
        return True
    except (ValueError, TypeError):
        return False


def _mars_array_ufunc(ufunc, method, *inputs, **kwargs):
    """Mars's ``__array_ufunc__``: the table above, ``NotImplemented`` otherwise."""
    out = kwargs.get("out", ())
    if not isinstance(out, tuple):
        out = (out,)
    checked = inputs[:1] + inputs[2:] if method == "at" else inputs  # at's 2nd argument: the indices
    for x in checked + out:
        if not _check_arg(x):
            return NotImplemented
    if ufunc.signature is not None or ufunc not in UFUNC_TO_TENSOR_FUNCS:
        return NotImplemented
    try:
        tensor_func = getattr(UFUNC_TO_TENSOR_FUNCS[ufunc], method)
    except AttributeError:
        return NotImplemented
    try:
        return tensor_func(*inputs, **kwargs)
    except NotImplementedError:
        if method == "at":
            raise
        return NotImplemented


def make_array_ufunc(base):
    """``Tensor.__array_ufunc__``: ``base`` (the element-wise machinery's hook) first,
    then Mars's table for what it leaves (``at``, ``logaddexp.reduce``, ...)."""

    def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
        res = NotImplemented
        if base is not None and method != "at":
            res = base(self, ufunc, method, *inputs, **kwargs)
        if res is NotImplemented:
            res = _mars_array_ufunc(ufunc, method, *inputs, **kwargs)
        return res

    _array_ufunc._mars_dask_ufunc_hook = True
    return _array_ufunc
