"""Element-wise operations: every numpy ufunc (``mt.add``, operators, ``__array_ufunc__``),
plus ``where``, ``clip``, ``isclose``/``allclose``, ``around`` and ``astype``.

One operand, :class:`TensorElementwise`, serves them all: the kernel is the numpy function
itself, applied to aligned blocks of the broadcast inputs.  Output dtypes are found by
asking numpy (running the function on one-element arrays), so they follow numpy's rules
exactly, NEP 50 weak Python scalars included.
"""

from __future__ import annotations

import builtins
import functools
import itertools
import warnings

import numpy as np

from ..tiling.core import Chunk, ensure_known, has_unknown
from .core import Tensor, TensorOperand, _NotSupported, astensor, is_scalar_like
from .rechunk import unify_nsplits
from .utils import broadcast_shape, chunk_grid


class TensorElementwise(TensorOperand):
    """``func(*args, **kwargs)`` block by block; ``args`` mixes tensors and constants."""

    _op_name = "elementwise"
    sparse_aware = True  # its kernel is wrapped for sparse chunks in ``tile``

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
        if builtins.any(t.issparse for t in self.inputs):
            from .sparse import elementwise_kernel

            out0 = self.outputs[0]
            func = elementwise_kernel(func, template, [t.issparse for t in self.inputs],
                                      out_sparse=out0.issparse if out0 is not None else None)
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


def _layout(t: Tensor) -> str:
    """"CF" when at most one axis is longer than 1 (both contiguous, as numpy's flags say),
    else the tensor's order."""
    if builtins.sum(1 for s in t.shape if s != 1) <= 1:
        return "CF"
    return "F" if t.order == "F" else "C"


def keep_order(tensors) -> str:
    """The layout numpy's ``order="K"`` gives an element-wise result of ``tensors``:
    Fortran when every input is Fortran-contiguous (broadcast rows/columns and 1-d inputs
    are both) and at least one is only that, else C."""
    lays = [_layout(t) for t in tensors if isinstance(t, Tensor)]
    if "C" in lays:
        return "C"
    return "F" if "F" in lays else "C"


def _operands(args) -> list:
    targs = []
    for a in args:
        if isinstance(a, Tensor) or is_scalar_like(a) or a is None or isinstance(a, (np.dtype, type)):
            targs.append(a)
        elif isinstance(a, (np.ndarray, list, tuple)):
            targs.append(astensor(a))
        else:
            raise _NotSupported(f"unsupported operand type {type(a).__name__}")
    if not builtins.any(isinstance(a, Tensor) for a in targs):
        targs[0] = astensor(targs[0])
    return targs


def _new_elementwise(func, targs, kwargs, dtypes, shape, order=None):
    op = TensorElementwise(func, targs, kwargs, nout=len(dtypes))
    order = order or keep_order(targs)
    outs = op.new_tensors([(shape, dt) for dt in dtypes], order=order)
    if len(dtypes) == 1 and builtins.any(t.issparse() for t in targs if isinstance(t, Tensor)):
        from .sparse import output_is_sparse

        outs[0].data.issparse = output_is_sparse(func, targs, kwargs)
    return outs[0] if len(dtypes) == 1 else tuple(outs)


def elementwise(func, *args, dtype=None, nout=1, name=None, **kwargs):
    """Apply numpy ``func`` element-wise to tensors/array-likes/scalars with broadcasting.
    The result keeps the inputs' memory order as numpy's ``order="K"``."""
    targs = _operands(args)
    tensors = [a for a in targs if isinstance(a, Tensor)]
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
    return _new_elementwise(func, targs, kwargs, dtypes, shape)


# ---- ufuncs with numpy's keywords (out=, where=, dtype=, casting=, order=) --------------

_UFUNC_KWARGS = {"out", "where", "dtype", "casting", "order", "subok", "signature"}


def _ufunc_kernel(uf, kw, nin, out_given, has_where, dtypes, *arrays):
    """``uf(*inputs, out=..., where=..., **kw)`` on one block.  ``out`` blocks are copied
    (stored chunks are never written to); outputs not given are fresh zeros when ``where``
    is given (numpy leaves them uninitialized)."""
    ins, rest = arrays[:nin], list(arrays[nin:])
    where = rest.pop() if has_where else True
    shape = np.broadcast_shapes(*[np.shape(a) for a in arrays])
    outs, it = [], iter(rest)
    for given, dt in zip(out_given, dtypes):
        if given:
            outs.append(np.array(next(it), dtype=dt, copy=True))
        elif has_where:
            outs.append(np.zeros(shape, dtype=dt))
        else:
            outs.append(None)
    res = uf(*ins, out=tuple(outs), where=where, **kw)
    return tuple(res) if isinstance(res, tuple) else res


def _normalize_out(name, out, nout):
    if out is None:
        return [None] * nout
    outs = list(out) if isinstance(out, tuple) else [out]
    if len(outs) != nout:
        raise ValueError(f"The 'out' tuple must have exactly {nout} entries: one per ufunc output")
    for o in outs:
        if o is not None and not isinstance(o, Tensor):
            raise TypeError(f"{name}(): out should be a Tensor, got {type(o).__name__}")
    return outs


def call_ufunc(uf: np.ufunc, args, kwargs):
    """``uf(*args, **kwargs)`` lazily, with numpy's keywords and semantics: the result dtype,
    the casting checks (``UFuncTypeError``) and the broadcasting against ``out`` are numpy's
    own (asked on one-element probes); ``out=`` tensors (or a tuple, one per output, None
    allowed) take the results' data and are returned, as Mars does."""
    name = uf.__name__
    if len(args) != uf.nin:
        if len(args) == uf.nin + uf.nout and "out" not in kwargs:  # numpy: outputs positional
            args, kwargs = args[: uf.nin], {**kwargs, "out": tuple(args[uf.nin:])}
        else:
            raise TypeError(f"{name}() takes from {uf.nin} to {uf.nin + uf.nout} positional arguments "
                            f"but {len(args)} were given")
    bad = set(kwargs) - _UFUNC_KWARGS
    if bad:
        raise TypeError(f"{name}() got an unexpected keyword argument {sorted(bad)[0]!r}")
    kwargs = dict(kwargs)
    outs = _normalize_out(name, kwargs.pop("out", None), uf.nout)
    where = kwargs.pop("where", True)
    kwargs.pop("subok", None)
    order = kwargs.get("order", "K")
    if not builtins.any(o is not None for o in outs) and (where is True) and not kwargs:
        return elementwise(uf, *args, nout=uf.nout)  # the plain call (sparse inputs welcome)
    targs = _operands(args)
    has_where = where is not True
    if has_where and not is_scalar_like(where):
        where = astensor(where)
    tensors = [a for a in targs if isinstance(a, Tensor)]
    shape = broadcast_shape(*[t.shape for t in tensors], *([where.shape] if isinstance(where, Tensor) else []))
    for o in outs:
        if o is not None and broadcast_shape(shape, o.shape) != tuple(o.shape):
            raise ValueError(f"non-broadcastable output operand with shape {tuple(o.shape)} doesn't match "
                             f"the broadcast shape {tuple(shape)}")
        if o is not None:
            shape = tuple(o.shape)
    # numpy checks the dtypes, casting rules and keywords on one-element probes
    probe_outs = tuple(np.empty((1,), dtype=o.dtype) if o is not None else None for o in outs)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = uf(*[_probe(a) for a in targs], out=probe_outs, where=_probe(where) if has_where else True, **kwargs)
    res = res if isinstance(res, tuple) else (res,)
    dtypes = [np.asarray(r).dtype for r in res]
    out_given = tuple(o is not None for o in outs)
    kernel = functools.partial(_ufunc_kernel, uf, kwargs, len(targs), out_given, has_where, tuple(dtypes))
    operands = [*targs, *[o for o in outs if o is not None], *([where] if has_where else [])]
    if order in ("C", "F"):
        layout = order
    elif order == "A":
        layout = "F" if tensors and all(_layout(t) != "C" for t in tensors) and keep_order(tensors) == "F" else "C"
    else:
        layout = keep_order(tensors)
    results = _new_elementwise(kernel, operands, {}, dtypes, shape, order=layout)
    results = results if isinstance(results, tuple) else (results,)
    final = []
    for o, r in zip(outs, results):
        if o is None:
            final.append(r)
            continue
        r.data.order = o.order
        o.data = r.data
        final.append(o)
    return final[0] if uf.nout == 1 else tuple(final)


def _make_ufunc(uf: np.ufunc):
    name = uf.__name__

    def func(*args, **kwargs):
        return call_ufunc(uf, args, kwargs)

    func.__name__ = name
    func.__qualname__ = name
    func.__doc__ = (f"Element-wise ``numpy.{name}`` on tensors, with numpy's keywords (``out``, ``where``, "
                    "``dtype``, ``casting``, ``order``): see numpy's documentation.")
    return func


def _assign_out(out, result):
    """Mars's ``out=`` for the non-ufunc element-wise functions: ``out`` takes the result
    cast to its dtype (numpy's "same_kind" rule checked)."""
    if out is None:
        return result
    if isinstance(out, tuple):
        if len(out) != 1:
            raise TypeError("out must be a single tensor")
        out = out[0]
    if not isinstance(out, Tensor):
        raise TypeError("out must be a mars_dask Tensor")
    if broadcast_shape(result.shape, out.shape) != tuple(out.shape):
        raise ValueError(f"non-broadcastable output operand with shape {tuple(out.shape)} doesn't match "
                         f"the broadcast shape {tuple(result.shape)}")
    if not np.can_cast(result.dtype, out.dtype, "same_kind"):
        raise TypeError(f"Cannot cast output from {result.dtype!r} to {out.dtype!r} with casting rule 'same_kind'")
    order = out.order
    if tuple(out.shape) != tuple(result.shape):
        from .manipulation import broadcast_to

        result = broadcast_to(result, out.shape)
    result = result.astype(out.dtype, copy=False)
    if result.data is not out.data:
        result.data.order = order
    out.data = result.data
    return out


# generalized ufuncs (matmul, vecdot, ...) have core dimensions: they are not element-wise.
# (vars, not dir + getattr: getattr(np, "f2py"), "ma", "testing", ... import those lazy
# submodules, 40 ms that every process importing mars_dask.tensor paid)
UFUNCS = {n: f for n, f in vars(np).items() if isinstance(f, np.ufunc) and f.signature is None}
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


def astype(a, dtype, casting="unsafe", copy=True, order="K"):
    a = astensor(a)
    dtype = np.dtype(dtype)
    if order not in ("K", "A", "C", "F"):
        raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    if not np.can_cast(a.dtype, dtype, casting=casting):
        raise TypeError(f"Cannot cast tensor from {a.dtype!r} to {dtype!r} according to the rule {casting!r}")
    want = keep_order([a]) if order in ("K", "A") else order
    if dtype == a.dtype and not copy and (want == a.order or _layout(a) == "CF"):
        return a
    res = elementwise(_astype_kernel, a, dtype, casting, dtype=dtype)
    res.data.order = want
    return res
