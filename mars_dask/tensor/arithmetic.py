"""Element-wise operations: every numpy ufunc (``mt.add``, operators, ``__array_ufunc__``),
plus ``where``, ``clip``, ``isclose``/``allclose``, ``around`` and ``astype``.

One operand, :class:`TensorElementwise`, serves them all: the kernel is the numpy function
itself, applied to aligned blocks of the broadcast inputs.  Output dtypes are found by
asking numpy (running the function on one-element arrays), so they follow numpy's rules
exactly, NEP 50 weak Python scalars included.
"""

from __future__ import annotations

import builtins
import itertools

import numpy as np

from ..tiling.core import Chunk, ensure_known, has_unknown
from .core import Tensor, TensorOperand, _NotSupported, astensor, is_scalar_like
from .rechunk import unify_nsplits
from .utils import broadcast_shape, chunk_grid


class TensorElementwise(TensorOperand):
    """``func(*args, **kwargs)`` block by block; ``args`` mixes tensors and constants."""

    _op_name = "elementwise"

    def __init__(self, func, args, kwargs, nout=1):
        tensors = [a for a in args if isinstance(a, Tensor)]
        super().__init__([t.data for t in tensors], func=func, args_spec=[
            ("t", None) if isinstance(a, Tensor) else ("c", a) for a in args
        ], kwargs=kwargs, nout=nout)

    def tile(self):
        inputs = self.inputs
        ndim = max(t.ndim for t in inputs)
        if len(inputs) > 1:
            if builtins.any(has_unknown(s) for t in inputs for s in t.nsplits) and not _same_splits(inputs, ndim):
                yield from ensure_known(*inputs)
            inputs = unify_nsplits(inputs, ndim)
        out_nsplits = []
        for ax in range(ndim):
            splits = (1,)
            for t in inputs:
                tax = ax - (ndim - t.ndim)
                if tax >= 0 and not (len(t.nsplits[tax]) == 1 and t.shape[tax] == 1):
                    splits = t.nsplits[tax]
                    break
            out_nsplits.append(tuple(splits))
        out_nsplits = tuple(out_nsplits)

        grid = list(chunk_grid(out_nsplits))
        out_grid = tuple(len(sp) for sp in out_nsplits)
        per_input = []
        for t in inputs:
            off = ndim - t.ndim
            if t.chunk_shape == out_grid[off:] and off == 0:
                per_input.append(t.chunks)
            else:
                bcast = [len(t.nsplits[a]) == 1 for a in range(t.ndim)]
                per_input.append([
                    t.chunk_at(tuple(0 if bcast[a] else idx[a + off] for a in range(t.ndim)))
                    for idx in grid
                ])
        template = self.args_spec
        func, kwargs = self.func, self.kwargs
        results = [[] for _ in range(self.nout)]
        dtypes = [o.dtype if o is not None else None for o in self.outputs]
        okey = self.output_key(0)
        itemsize = dtypes[0].itemsize if dtypes[0] is not None else 8
        for k, (idx, shape) in enumerate(zip(grid, itertools.product(*out_nsplits))):
            in_chunks = [seq[k] for seq in per_input]
            it = iter(in_chunks)
            args = tuple([next(it) if kind == "t" else val for kind, val in template])
            if self.nout == 1:
                n = 1
                for d in shape:
                    n *= d
                results[0].append(Chunk(
                    (okey, *idx), idx, shape, func, args, kwargs,
                    inputs=in_chunks, nbytes=float(n * itemsize), blockwise=True,
                ))
            else:
                multi = self.new_chunk(idx, shape, func, args, kwargs, inputs=in_chunks, blockwise=True)
                multi.key = (okey + "-multi", *idx)
                for i in range(self.nout):
                    results[i].append(
                        self.new_chunk(idx, shape, _getitem, (multi, i), out=i, dtype=dtypes[i], inputs=[multi], blockwise=True)
                    )
        return [(r, out_nsplits) for r in results]


def _getitem(x, i):
    return x[i]


def _same_splits(tensors, ndim) -> bool:
    """Do all tensors (right-aligned, ignoring broadcast axes) share the very same chunk
    lengths?  Unknown (nan) lengths only match when they are the same tuple object, i.e.
    come from the same tiling, as in ``x[m] + x[m] * 2``."""
    for ax in range(ndim):
        ref = None
        for t in tensors:
            tax = ax - (ndim - t.ndim)
            if tax < 0 or t.shape[tax] == 1:
                continue
            s = t.nsplits[tax]
            if ref is None:
                ref = s
            elif s is not ref and (has_unknown(s) or s != ref):
                return False
    return True


def _probe(x):
    """A one-element stand-in for ``x`` used to ask numpy for result dtypes."""
    if isinstance(x, Tensor):
        return np.ones((1,), dtype=x.dtype) if x.dtype.kind not in "mM" else np.array([0], dtype=x.dtype)
    return x


def elementwise(func, *args, dtype=None, nout=1, name=None, **kwargs):
    """Apply numpy ``func`` element-wise to tensors/array-likes/scalars with broadcasting."""
    targs = []
    for a in args:
        if isinstance(a, Tensor) or is_scalar_like(a) or a is None or isinstance(a, (np.dtype, type)):
            targs.append(a)
        elif isinstance(a, (np.ndarray, list, tuple)):
            targs.append(astensor(a))
        else:
            raise _NotSupported(f"unsupported operand type {type(a).__name__}")
    tensors = [a for a in targs if isinstance(a, Tensor)]
    if not tensors:
        targs[0] = astensor(targs[0])
        tensors = [targs[0]]
    shape = broadcast_shape(*[t.shape for t in tensors])
    if dtype is None or nout > 1:
        with np.errstate(all="ignore"):
            probe = func(*[_probe(a) for a in targs], **kwargs)
        probes = probe if nout > 1 else (probe,)
        dtypes = [np.asarray(p).dtype for p in probes]
        if dtype is not None:
            dtypes = [np.dtype(dtype)] * nout
    else:
        dtypes = [np.dtype(dtype)]
    op = TensorElementwise(func, targs, kwargs, nout=nout)
    outs = op.new_tensors([(shape, dt) for dt in dtypes])
    return outs[0] if nout == 1 else tuple(outs)


def _check_kwargs(name, kwargs):
    out = kwargs.pop("out", None)
    where = kwargs.pop("where", True)
    bad = set(kwargs) - {"dtype", "casting", "order", "subok"}
    if bad:
        raise TypeError(f"{name}() got unexpected keyword argument(s) {sorted(bad)}")
    return out, where


def _assign_out(out, result):
    if out is None:
        return result
    if isinstance(out, tuple):
        if len(out) != 1:
            raise TypeError("out must be a single tensor")
        out = out[0]
    if not isinstance(out, Tensor):
        raise TypeError("out must be a mars_dask Tensor")
    if tuple(out.shape) != tuple(result.shape):
        raise ValueError(f"out has shape {out.shape}, but the result has shape {result.shape}")
    out.data = result.astype(out.dtype).data
    return out


def _make_ufunc(uf: np.ufunc):
    name = uf.__name__

    def func(*args, **kwargs):
        if len(args) != uf.nin:
            raise TypeError(f"{name}() takes {uf.nin} positional argument(s), got {len(args)}")
        out, where = _check_kwargs(name, kwargs)
        dtype = kwargs.pop("dtype", None)
        kwargs.pop("subok", None)
        kw = {k: v for k, v in kwargs.items() if k in ("casting", "order")}
        if dtype is not None:
            kw["dtype"] = dtype
        if where is not True:
            if uf.nout != 1:
                raise TypeError(f"{name}(): where= is not supported for multi-output ufuncs")
            base = out if out is not None else None
            res = elementwise(uf, *args, nout=1, **kw)
            if base is None:
                raise TypeError(f"{name}(): where= needs out= (as numpy, whose other values are undefined)")
            res = where_(where, res, base)
            return _assign_out(out, res)
        res = elementwise(uf, *args, nout=uf.nout, **kw)
        return _assign_out(out, res) if uf.nout == 1 else res

    func.__name__ = name
    func.__qualname__ = name
    func.__doc__ = f"Element-wise ``numpy.{name}`` on tensors (see numpy's documentation)."
    return func


# generalized ufuncs (matmul, vecdot, ...) have core dimensions: they are not element-wise
UFUNCS = {
    n: getattr(np, n)
    for n in dir(np)
    if isinstance(getattr(np, n, None), np.ufunc) and getattr(np, n).signature is None
}
_g = globals()
for _n, _uf in UFUNCS.items():
    _g[_n] = _make_ufunc(_uf)
# numpy aliases that are not ufunc objects under their own name
abs = _g["absolute"]  # noqa: A001
round_ = None  # defined below
mod = _g["remainder"]
true_divide = _g["divide"]
divmod = _g["divmod"]  # noqa: A001


def array_ufunc(ufunc, method, *inputs, **kwargs):
    """``Tensor.__array_ufunc__``: numpy ufuncs called on tensors stay lazy."""
    if ufunc is np.matmul and method == "__call__":
        from .linalg import matmul as _matmul

        return _matmul(*inputs, **kwargs)
    if method == "__call__":
        return _g[ufunc.__name__](*inputs, **kwargs)
    if method == "reduce":
        from . import reduction

        mapping = {
            "add": "sum", "multiply": "prod", "minimum": "min", "maximum": "max",
            "logical_and": "all", "logical_or": "any",
        }
        if ufunc.__name__ in mapping:
            kwargs.setdefault("axis", 0)  # numpy's default for ufunc.reduce
            if isinstance(kwargs.get("out"), tuple):
                (kwargs["out"],) = kwargs["out"]
            return getattr(reduction, mapping[ufunc.__name__])(*inputs, **kwargs)
    if method == "accumulate" and ufunc.__name__ in ("add", "multiply"):
        from . import reduction

        kwargs.setdefault("axis", 0)
        return getattr(reduction, "cumsum" if ufunc.__name__ == "add" else "cumprod")(*inputs, **kwargs)
    return NotImplemented


# ---- non-ufunc element-wise functions ---------------------------------------------------


def where_(condition, x=None, y=None):
    if x is None and y is None:
        from .indexing import nonzero

        return nonzero(condition)
    if x is None or y is None:
        raise ValueError("either both or neither of x and y should be given")
    return elementwise(np.where, condition, x, y)


def _clip_kernel(a, a_min, a_max):
    return np.clip(a, a_min, a_max)


def clip(a, a_min=None, a_max=None, out=None):
    if a_min is None and a_max is None:
        raise ValueError("clip: one of a_min or a_max must be given")
    return _assign_out(out, elementwise(_clip_kernel, astensor(a), a_min, a_max))


def _around_kernel(a, decimals):
    return np.around(a, decimals)


def around(a, decimals=0, out=None):
    return _assign_out(out, elementwise(_around_kernel, astensor(a), decimals))


round_ = around
round = around  # noqa: A001


def _isclose_kernel(a, b, rtol, atol, equal_nan):
    return np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return elementwise(_isclose_kernel, a if is_scalar_like(a) else astensor(a),
                       b if is_scalar_like(b) else astensor(b), rtol, atol, equal_nan)


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """A 0-d boolean tensor (lazy, like Mars): ``isclose(...).all()``."""
    return isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan).all()


def _astype_kernel(a, dtype, casting):
    return a.astype(dtype, casting=casting)


def astype(a, dtype, casting="unsafe", copy=True):
    a = astensor(a)
    dtype = np.dtype(dtype)
    if not np.can_cast(a.dtype, dtype, casting=casting):
        raise TypeError(f"Cannot cast tensor from {a.dtype!r} to {dtype!r} according to the rule {casting!r}")
    if dtype == a.dtype and not copy:
        return a
    return elementwise(_astype_kernel, a, dtype, casting, dtype=dtype)
