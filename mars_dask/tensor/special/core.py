"""scipy.special's functions as element-wise tensor operations (``mt.special``).

Each function applies the scipy.special function itself, block by block, through
:func:`mars_dask.tensor.arithmetic.elementwise`: values and result dtypes are scipy's
(found by asking scipy on one-element arrays), broadcasting is numpy's.  The ufunc keywords
``out=``, ``where=``, ``dtype=``, ``casting=`` and ``order=`` work as for numpy's ufuncs.
Functions with several outputs (``fresnel``, ``airy``, ...) return an executable tuple.
"""

from __future__ import annotations

import numpy as np

from ..core import Tensor, astensor
from ..lib._executable import ExecutableTuple

# Mars's names and argument names (mars/tensor/special/*.py)
_SIGNATURES = {
    # error functions and Fresnel integrals
    "erf": ("x",), "erfc": ("x",), "erfcx": ("x",), "erfi": ("x",), "erfinv": ("x",),
    "erfcinv": ("x",), "wofz": ("x",), "dawsn": ("x",), "fresnel": ("x",),
    "modfresnelp": ("x",), "modfresnelm": ("x",), "voigt_profile": ("x", "sigma", "gamma"),
    # gamma and related functions
    "gamma": ("x",), "gammaln": ("x",), "loggamma": ("x",), "gammasgn": ("x",),
    "gammainc": ("a", "b"), "gammaincinv": ("a", "b"), "gammaincc": ("a", "b"),
    "gammainccinv": ("a", "b"), "beta": ("a", "b"), "betaln": ("a", "b"),
    "betainc": ("a", "b", "x"), "betaincinv": ("a", "b", "y"), "psi": ("x",), "rgamma": ("x",),
    "polygamma": ("a", "b"), "multigammaln": ("a", "b"), "digamma": ("x",), "poch": ("a", "b"),
    # information theory
    "entr": ("x",), "rel_entr": ("x", "y"), "kl_div": ("x", "y"),
    # convenience
    "xlogy": ("x1", "x2"),
    # Bessel functions
    "jv": ("v", "z"), "jve": ("v", "z"), "yn": ("n", "x"), "yv": ("v", "z"), "yve": ("v", "z"),
    "kn": ("n", "x"), "kv": ("v", "z"), "kve": ("v", "z"), "iv": ("v", "z"), "ive": ("v", "z"),
    "hankel1": ("v", "z"), "hankel1e": ("v", "z"), "hankel2": ("v", "z"), "hankel2e": ("v", "z"),
    # hypergeometric functions
    "hyp2f1": ("a", "b", "c", "z"), "hyp1f1": ("a", "b", "x"), "hyperu": ("a", "b", "x"),
    "hyp0f1": ("v", "z"),
    # ellipsoidal harmonics
    "ellip_harm": ("h2", "k2", "n", "p", "s", "signm", "signn"),
    "ellip_harm_2": ("h2", "k2", "n", "p", "s"), "ellip_normal": ("h2", "k2", "n", "p"),
    # elliptic functions and integrals
    "ellipk": ("x",), "ellipkm1": ("x",), "ellipkinc": ("phi", "m"), "ellipe": ("x",),
    "ellipeinc": ("phi", "m"), "elliprc": ("x", "y"), "elliprd": ("x", "y", "z"),
    "elliprf": ("x", "y", "z"), "elliprg": ("x", "y", "z"), "elliprj": ("x", "y", "z", "p"),
    # Airy functions
    "airy": ("z",), "airye": ("z",), "itairy": ("x",),
}
_DEFAULTS = {"ellip_harm": {"signm": 1, "signn": 1}}
#: arguments scipy requires to be plain scalars (not broadcast element-wise)
_SCALAR_ARGS = {"multigammaln": (1,)}

__all__ = sorted(_SIGNATURES)

_UFUNC_KW = ("dtype", "casting", "order", "subok", "signature")


def _special_kernel(*args, sp_func, sp_kw):
    """One block: the scipy.special function (``sp_kw``: dtype=, casting=, ...)."""
    return sp_func(*args, **sp_kw)


def _where_kernel(cond, x, y):
    return np.where(cond, x, y)


def _operand(a):
    if isinstance(a, Tensor) or a is None:
        return a
    if np.ndim(a) == 0 and not isinstance(a, np.ndarray):
        return a  # a scalar stays a (weak, NEP 50) scalar, as numpy treats it
    return astensor(a)


def _scipy_function(name: str):
    """``scipy.special.<name>``, imported at the first call: scipy.special takes ~50 ms to
    import, which every process importing ``mars_dask.tensor`` paid (each worker at its first
    task) though few jobs use it."""
    import scipy.special

    func = getattr(scipy.special, name, None)
    if func is None:
        raise NotImplementedError(
            f"mt.special.{name} needs scipy.special.{name}, which the installed scipy does not have")
    return func


def _probe_multigammaln(args):
    a, d = args
    dt = a.dtype if isinstance(a, Tensor) else np.asarray(a).dtype
    return _scipy_function("multigammaln")(np.full((1,), d, dtype=dt), d).dtype  # validates d as scipy


def _assign(out, res, nout, name):
    outs = out if isinstance(out, tuple) else (out,)
    if len(outs) != nout:
        raise ValueError(f"{name}: out must be a tuple of {nout} tensors, got {len(outs)}")
    results = res if nout > 1 else (res,)
    for o, r in zip(outs, results):
        if not isinstance(o, Tensor):
            raise TypeError(f"{name}: out must be a mars_dask Tensor, got {type(o).__name__}")
        if tuple(o.shape) != tuple(r.shape):
            raise ValueError(f"{name}: out has shape {o.shape}, but the result has shape {r.shape}")
        o.data = r.astype(o.dtype).data
    return out


def _make(name: str):
    from ..arithmetic import elementwise

    params = _SIGNATURES[name]
    defaults = _DEFAULTS.get(name, {})
    scalar_pos = _SCALAR_ARGS.get(name, ())

    def special(*args, out=None, where=True, **kwargs):
        func = _scipy_function(name)
        nout = func.nout if isinstance(func, np.ufunc) else 1
        if len(args) > len(params):
            raise TypeError(f"{name}() takes {len(params)} positional arguments but {len(args)} were given")
        bound = list(args)
        for p in params[len(args):]:
            if p in kwargs:
                bound.append(kwargs.pop(p))
            elif p in defaults:
                bound.append(defaults[p])
            else:
                raise TypeError(f"{name}() missing required argument {p!r}")
        bad = set(kwargs) - set(_UFUNC_KW)
        if bad:
            raise TypeError(f"{name}() got unexpected keyword argument(s) {sorted(bad)}")
        func_kw = {k: v for k, v in kwargs.items() if k != "subok"}
        ops = [a if i in scalar_pos else _operand(a) for i, a in enumerate(bound)]
        extra = {}
        if name == "multigammaln":
            extra["dtype"] = _probe_multigammaln(ops)
        res = elementwise(_special_kernel, *ops, sp_func=func, sp_kw=func_kw, nout=nout, **extra)
        if where is not True and where is not None:
            if out is None:
                raise TypeError(f"{name}(): where= needs out= (as numpy, whose other values are undefined)")
            outs = out if isinstance(out, tuple) else (out,)
            results = res if nout > 1 else (res,)
            masked = tuple(elementwise(_where_kernel, _operand(where), r, o) for r, o in zip(results, outs))
            res = masked if nout > 1 else masked[0]
        if out is not None:
            return _assign(out, res, nout, name)
        return ExecutableTuple(res) if nout > 1 else res

    special.__name__ = special.__qualname__ = name
    special.__doc__ = (f"``scipy.special.{name}({', '.join(params)})`` element-wise on tensors "
                       f"(see scipy's documentation).")
    return special


_g = globals()
for _name in _SIGNATURES:
    _g[_name] = _make(_name)
del _g, _name
