"""numpy's numeric helpers that Mars exposes at the top of ``mars.tensor``: the aliases
``amax``/``amin``/``product``/``innerproduct``, the element-wise ``nan_to_num``, ``fix``,
``i0``, ``sinc``, ``angle``, ``real``, ``imag``, ``iscomplex``, ``isreal``, the lazy
``array_equal`` and Mars's ``tree_add``/``tree_multiply``.

Element-wise functions run the numpy function itself block by block through
:func:`mars_dask.tensor.arithmetic.elementwise`, which also asks numpy for the result dtype.
``array_equal`` returns a lazy 0-d boolean tensor, as Mars does.
"""

from __future__ import annotations

import functools

import numpy as np

from .. import config
from ..tiling.core import ensure_known, has_unknown
from ..tiling.tile import tile as _tile_now
from .arithmetic import _assign_out, elementwise
from .core import Tensor, TensorOperand, astensor, is_scalar_like
from .linalg.products import inner
from .reduction import max as _max
from .reduction import min as _min
from .reduction import prod as _prod

__all__ = [
    "amax", "amin", "product", "innerproduct", "nan_to_num", "fix", "i0", "sinc", "angle",
    "real", "imag", "iscomplex", "isreal", "array_equal", "tree_add", "tree_multiply",
]

amax = _max
amin = _min
product = _prod
innerproduct = inner

#: Mars's element-wise functions accept these (GPU and sparse placement, memory layout and
#: casting rule of the output): ignored here
_IGNORED = ("gpu", "sparse", "order", "casting")


def _check_kwargs(name, kwargs, allowed=("dtype",)):
    bad = sorted(k for k in kwargs if k not in _IGNORED and k not in allowed)
    if bad:
        raise TypeError(f"{name}() got unexpected keyword argument(s) {bad}")


def _cast(res, kwargs):
    """``dtype=`` of Mars's element-wise functions: the result cast to it."""
    dtype = kwargs.get("dtype")
    if dtype is None or np.dtype(dtype) == res.dtype:
        return res
    return res.astype(dtype)


def _operand(x):
    return x if isinstance(x, Tensor) else astensor(x)


# ---- element-wise ----------------------------------------------------------------------


def _nan_to_num_kernel(x, nan, posinf, neginf):
    return np.nan_to_num(x, copy=True, nan=nan, posinf=posinf, neginf=neginf)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None, **kwargs):
    """``numpy.nan_to_num``: NaN to ``nan``, infinities to ``posinf``/``neginf`` (default:
    the dtype's largest finite values).  ``copy=False`` (a tensor ``x``) makes ``x`` itself
    hold the result, as Mars."""
    _check_kwargs("nan_to_num", kwargs)
    ret = _cast(elementwise(_nan_to_num_kernel, _operand(x), nan, posinf, neginf), kwargs)
    if copy:
        return ret
    if not isinstance(x, Tensor):
        raise ValueError(f"`x` must be a Tensor, got {type(x)} instead")
    x.data = ret.data
    return x


def _fix_kernel(x):
    return np.fix(x)


def fix(x, out=None, **kwargs):
    """``numpy.fix``: round towards zero."""
    _check_kwargs("fix", kwargs)
    return _assign_out(out, _cast(elementwise(_fix_kernel, _operand(x)), kwargs))


def _i0_kernel(x):
    return np.i0(x)


def i0(x, **kwargs):
    """``numpy.i0``: the modified Bessel function of the first kind, order 0."""
    _check_kwargs("i0", kwargs)
    x = _operand(x)
    if x.dtype.kind == "c":
        raise TypeError("i0 not supported for complex values")
    return _cast(elementwise(_i0_kernel, x), kwargs)


def _sinc_kernel(x):
    return np.sinc(x)


def sinc(x, **kwargs):
    """``numpy.sinc``: ``sin(pi x) / (pi x)`` (1 at 0)."""
    _check_kwargs("sinc", kwargs)
    return _cast(elementwise(_sinc_kernel, _operand(x)), kwargs)


def _angle_kernel(z, deg):
    return np.angle(z, deg=deg)


def angle(z, deg=False, **kwargs):
    """``numpy.angle``: the counterclockwise angle from the positive real axis (radians, or
    degrees with ``deg=True``)."""
    _check_kwargs("angle", kwargs)
    return _cast(elementwise(_angle_kernel, _operand(z), bool(deg)), kwargs)


def _real_kernel(x):
    return np.real(x).copy()


def _imag_kernel(x):
    return np.imag(x).copy()


def real(val, **kwargs):
    """``numpy.real``: the real part (the values themselves for real input)."""
    _check_kwargs("real", kwargs)
    return _cast(elementwise(_real_kernel, _operand(val)), kwargs)


def imag(val, **kwargs):
    """``numpy.imag``: the imaginary part (zeros of the same dtype for real input)."""
    _check_kwargs("imag", kwargs)
    return _cast(elementwise(_imag_kernel, _operand(val)), kwargs)


def _iscomplex_kernel(x):
    return np.iscomplex(x)


def _isreal_kernel(x):
    return np.isreal(x)


def iscomplex(x, **kwargs):
    """``numpy.iscomplex``: True where the imaginary part is non-zero."""
    _check_kwargs("iscomplex", kwargs)
    return _cast(elementwise(_iscomplex_kernel, _operand(x)), kwargs)


def isreal(x, **kwargs):
    """``numpy.isreal``: True where the imaginary part is zero."""
    _check_kwargs("isreal", kwargs)
    return _cast(elementwise(_isreal_kernel, _operand(x)), kwargs)


# ---- array_equal -----------------------------------------------------------------------


def _false():
    return np.False_


def _equal_kernel(a, b, equal_nan):
    eq = a == b
    if equal_nan:
        eq |= np.isnan(a) & np.isnan(b)
    return eq


def _identity(x):
    return x


def _can_hold_nan(dtype) -> bool:
    return dtype.kind in "fcmM"


class TensorArrayEqual(TensorOperand):
    """``array_equal`` when a shape is only known after execution: learn the shapes, then
    either a constant ``False`` (they differ) or ``all(a1 == a2)``."""

    _op_name = "array-equal"

    def tile(self):
        a1, a2 = self.inputs
        yield from ensure_known(a1, a2)
        if tuple(a1.shape) != tuple(a2.shape):
            return [([self.new_chunk((), (), _false, ())], ())]
        r = _all_equal(Tensor(a1), Tensor(a2), self.equal_nan).data
        _tile_now([r], None)
        return [([self.new_chunk((), (), _identity, (r.chunks[0],))], ())]


def _all_equal(a1, a2, equal_nan):
    equal_nan = bool(equal_nan) and _can_hold_nan(a1.dtype) and _can_hold_nan(a2.dtype)
    return elementwise(_equal_kernel, a1, a2, equal_nan).all()


def array_equal(a1, a2, equal_nan=False):
    """True if two tensors have the same shape and elements (``numpy.array_equal``), as a
    lazy 0-d boolean tensor (Mars's result; ``.execute()`` it)."""
    from .datasource import tensor

    try:
        a1, a2 = astensor(a1), astensor(a2)
    except Exception:  # noqa: BLE001 - numpy's answer for what cannot be an array
        return tensor(False)
    if has_unknown(a1.shape) or has_unknown(a2.shape):
        if a1.ndim != a2.ndim:
            return tensor(False)
        op = TensorArrayEqual([a1.data, a2.data], equal_nan=bool(equal_nan))
        return op.new_tensor((), np.bool_)
    if tuple(a1.shape) != tuple(a2.shape):
        return tensor(False)
    return _all_equal(a1, a2, equal_nan)


# ---- tree_add / tree_multiply ----------------------------------------------------------


def _tree_kernel(ufunc_name, *xs):
    return functools.reduce(getattr(np, ufunc_name), xs)


def _tree(ufunc_name, name, args, combine_size, kwargs):
    _check_kwargs(name, kwargs)
    dtype = kwargs.get("dtype")
    if not args:
        raise TypeError(f"{name}() needs at least one tensor")
    if combine_size is None:
        combine_size = config.get("tensor.combine-size")
    if not isinstance(combine_size, int) or combine_size < 2:
        raise ValueError(f"combine_size must be an int >= 2, got {combine_size!r}")
    # Python scalars stay weak (NEP 50), as in ``a + b + 1``
    level = [a if isinstance(a, Tensor) or is_scalar_like(a) else astensor(a) for a in args]
    if len(level) == 1:
        level = [elementwise(_tree_kernel, ufunc_name, level[0])]
    while len(level) > 1:
        level = [
            elementwise(_tree_kernel, ufunc_name, *level[i : i + combine_size]) if len(level[i : i + combine_size]) > 1
            else level[i]
            for i in range(0, len(level), combine_size)
        ]
    (res,) = level
    return res if dtype is None else res.astype(dtype)


def tree_add(*args, combine_size=None, **kwargs):
    """The sum of all ``args`` (tensors or scalars, broadcast), added as a tree of
    ``combine_size`` operands per node (Mars's ``tree_add``)."""
    return _tree("add", "tree_add", args, combine_size, kwargs)


def tree_multiply(*args, combine_size=None, **kwargs):
    """The product of all ``args`` (tensors or scalars, broadcast), multiplied as a tree of
    ``combine_size`` operands per node (Mars's ``tree_multiply``)."""
    return _tree("multiply", "tree_multiply", args, combine_size, kwargs)
