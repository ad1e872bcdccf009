"""Reductions (``sum``, ``mean``, ``var``, ``argmin``, the ``nan*`` forms, ...) and
cumulative reductions (``cumsum``, ``cumprod`` and their ``nan*`` forms).

Reductions follow Mars's tree algorithm.  Every input chunk is reduced on its own to a
small *partial* (the reduced axes kept with length 1), groups of partials along the reduced
axes are *combined* level by level (about ``tensor.combine-size`` partials per group), and
the last group is *aggregated* into an output chunk.  A :class:`_Reducer` says what a
partial is for one reduction: an array for ufunc reductions (``sum``: partial sums, combined
with ``np.add``), ``(count, sum)`` for ``mean``, ``(count, mean, M2)`` for ``var``/``std``
(combined with Chan et al.'s parallel formula, which is numerically stable), and
``(value, global index, all-nan flag)`` for ``argmin``/``argmax``.

Only ``argmin``/``argmax`` need chunk sizes (for global indices); every other reduction tiles
without them, so ``x[x > 0.5].sum()`` runs in one pass whatever the unknown lengths.

Cumulative reductions run the numpy function on each chunk and add (multiply) a *carry*:
the running total of the preceding chunks along the axis, a chain of small chunks.
"""

from __future__ import annotations

import functools
import itertools
import math
import warnings

import numpy as np

from .. import config
from ..tiling.core import ensure_known, has_unknown
from ..tiling.tile import tile as _tile_now
from . import sparse as _sparse
from .core import Tensor, TensorOperand, astensor
from .utils import offsets, validate_axes, validate_axis
from .utils import prod as _prod

__all__ = [
    "sum", "prod", "mean", "std", "var", "min", "max", "argmin", "argmax", "any", "all",
    "nansum", "nanprod", "nanmean", "nanstd", "nanvar", "nanmin", "nanmax",
    "nanargmin", "nanargmax", "count_nonzero",
    "cumsum", "cumprod", "nancumsum", "nancumprod",
]

_builtin_min = min
_builtin_max = max
_builtin_any = any


def _quiet(func):
    """Kernels run numpy quietly: all-NaN slices, 0/0 means, ... warn on the driver in
    numpy but would only spam worker logs here (the values are numpy's all the same)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            return func(*args, **kwargs)

    return wrapper


def _reduced_size(shape, axes) -> int:
    return _prod(shape[a] for a in axes)


def _keep_shape(shape, axes) -> tuple:
    return tuple(1 if a in axes else s for a, s in enumerate(shape))


def _isnan(v):
    return np.isnan(v) if v.dtype.kind in "fc" else np.zeros(v.shape, dtype=bool)


# ---- reducers: what a partial is and how partials combine -------------------------------


class _Reducer:
    """One reduction's three steps.  ``map`` turns a chunk into a partial (keepdims over
    ``axes``), or ``None`` when the chunk has no element along ``axes`` and the reduction
    has no identity; ``combine`` folds a list of partials (``None``s allowed) into one;
    ``finish`` turns the last partial into the result (still keepdims)."""

    needs_offsets = False  # map needs each chunk's global position (argmin/argmax)
    temp_factor = 1  # peak temporaries of map, in multiples of the chunk's bytes

    def map(self, x, axes, kw, extra):  # pragma: no cover - abstract
        raise NotImplementedError

    def fold(self, a, b, kw):  # pragma: no cover - abstract
        raise NotImplementedError

    def combine(self, parts, kw):
        parts = [p for p in parts if p is not None]
        if not parts:
            return None
        return functools.reduce(lambda a, b: self.fold(a, b, kw), parts)

    def finish(self, p, kw):  # pragma: no cover - abstract
        raise NotImplementedError


class _UfuncReducer(_Reducer):
    """Reductions whose partials are arrays combined by a binary ufunc (``sum``: add)."""

    def __init__(self, func, ufunc, identity=True, temp_factor=1):
        self.func = func
        self.ufunc = ufunc
        self.identity = identity
        self.temp_factor = temp_factor

    def map(self, x, axes, kw, extra):
        if not self.identity and _reduced_size(x.shape, axes) == 0:
            return None
        return self.func(x, axis=axes, keepdims=True, **kw)

    def fold(self, a, b, kw):
        return self.ufunc(a, b)

    def finish(self, p, kw):
        if p is None:
            raise ValueError(
                f"zero-size array to reduction operation {self.ufunc.__name__} which has no identity"
            )
        return p


def _abs2(d):
    return (d * np.conj(d)).real if d.dtype.kind == "c" else d * d


class _MomentReducer(_Reducer):
    """``mean`` (partial ``(n, sum)``) and ``var``/``std`` (partial ``(n, mean, M2)``,
    combined with Chan et al.'s pairwise update).  ``kw["dtype"]`` is the accumulation
    dtype; ``skipna`` ignores NaNs (the ``nan*`` forms)."""

    temp_factor = 3

    def __init__(self, order, skipna, root=False):
        self.order = order
        self.skipna = skipna
        self.root = root

    def map(self, x, axes, kw, extra):
        dt = kw["dtype"]
        if self.skipna and x.dtype.kind in "fc":
            mask = np.isnan(x)
            n = np.sum(~mask, axis=axes, keepdims=True, dtype=np.int64)
            x = np.where(mask, 0, x)
        else:
            mask = None
            n = np.full(_keep_shape(x.shape, axes), _reduced_size(x.shape, axes), dtype=np.int64)
        s = np.sum(x, axis=axes, keepdims=True, dtype=dt)
        if self.order == 1:
            return n, s
        mu = s / n
        d = x - mu
        if mask is not None:
            d = np.where(mask, 0, d)
        return n, mu, np.sum(_abs2(d), axis=axes, keepdims=True)

    def fold(self, a, b, kw):
        if self.order == 1:
            return a[0] + b[0], a[1] + b[1]
        na, mua, m2a = a
        nb, mub, m2b = b
        n = na + nb
        w = nb / np.maximum(n, 1)  # weight of b in the merged mean
        delta = mub - mua
        either_empty = (na == 0) | (nb == 0)
        mu = np.where(na == 0, mub, np.where(nb == 0, mua, mua + delta * w))
        m2 = m2a + m2b + np.where(either_empty, 0, _abs2(delta) * na * w)
        return n, mu, m2

    def finish(self, p, kw):
        if self.order == 1:
            n, s = p
            return s / n
        n, _, m2 = p
        dof = n - kw["ddof"]
        v = m2 / np.maximum(dof, 0)
        if self.skipna:  # numpy's nanvar gives NaN (not inf) when dof <= 0
            v = np.where(dof > 0, v, np.nan)
        return np.sqrt(v) if self.root else v


class _ArgReducer(_Reducer):
    """``argmin``/``argmax``: partial ``(value, global index, all-NaN flag or None)``.

    The ``nan*`` forms do what numpy does: NaNs become +inf (-inf for max) before the
    plain arg-reduction, and a slice that was all NaN raises.  Ties go to the smallest
    global index, so the first occurrence wins as in numpy whatever the combine order.
    """

    needs_offsets = True
    temp_factor = 2

    def __init__(self, kind, skipna):
        self.kind = kind
        self.skipna = skipna

    def map(self, x, axes, kw, extra):
        if _reduced_size(x.shape, axes) == 0:
            return None
        flag = None
        if self.skipna and x.dtype.kind in "fc":
            mask = np.isnan(x)
            flag = mask.all(axis=axes, keepdims=True)
            x = np.where(mask, np.inf if self.kind == "min" else -np.inf, x)
        argf = np.argmin if self.kind == "min" else np.argmax
        offset, gshape = extra["offset"], extra["shape"]
        if x.ndim == 0:
            return x.reshape(()), np.zeros((), dtype=np.intp), flag
        if kw["axis"] is None:
            local = argf(x)
            pos = np.unravel_index(local, x.shape)
            gidx = np.ravel_multi_index(tuple(int(p) + o for p, o in zip(pos, offset)), gshape)
            keep = (1,) * x.ndim
            return x.reshape(-1)[local].reshape(keep), np.full(keep, gidx, dtype=np.intp), flag
        ax = kw["axis"]
        local = argf(x, axis=ax, keepdims=True)
        return np.take_along_axis(x, local, ax), (local + offset[ax]).astype(np.intp), flag

    def fold(self, a, b, kw):
        av, ai, af = a
        bv, bi, bf = b
        an, bn = _isnan(av), _isnan(bv)
        strictly = bv < av if self.kind == "min" else bv > av
        tie = (bv == av) | (an & bn)
        better = strictly | (bn & ~an) | (tie & (bi < ai))  # NaN wins, as in numpy's argmin
        flag = None if af is None else af & bf
        return np.where(better, bv, av), np.where(better, bi, ai), flag

    def finish(self, p, kw):
        if p is None:
            raise ValueError(f"attempt to get arg{self.kind} of an empty sequence")
        if p[2] is not None and p[2].any():
            raise ValueError("All-NaN slice encountered")
        return p[1]


def _count_nonzero_keep(x, axis, keepdims):
    return np.count_nonzero(x, axis=axis, keepdims=keepdims)


_REDUCERS: dict[str, _Reducer] = {
    "sum": _UfuncReducer(np.sum, np.add),
    "prod": _UfuncReducer(np.prod, np.multiply),
    "min": _UfuncReducer(np.min, np.minimum, identity=False),
    "max": _UfuncReducer(np.max, np.maximum, identity=False),
    "any": _UfuncReducer(np.any, np.logical_or),
    "all": _UfuncReducer(np.all, np.logical_and),
    "nansum": _UfuncReducer(np.nansum, np.add, temp_factor=2),
    "nanprod": _UfuncReducer(np.nanprod, np.multiply, temp_factor=2),
    "nanmin": _UfuncReducer(np.nanmin, np.fmin, identity=False, temp_factor=2),
    "nanmax": _UfuncReducer(np.nanmax, np.fmax, identity=False, temp_factor=2),
    "count_nonzero": _UfuncReducer(_count_nonzero_keep, np.add, temp_factor=2),
    "mean": _MomentReducer(1, False),
    "nanmean": _MomentReducer(1, True),
    "var": _MomentReducer(2, False),
    "nanvar": _MomentReducer(2, True),
    "std": _MomentReducer(2, False, root=True),
    "nanstd": _MomentReducer(2, True, root=True),
    "argmin": _ArgReducer("min", False),
    "argmax": _ArgReducer("max", False),
    "nanargmin": _ArgReducer("min", True),
    "nanargmax": _ArgReducer("max", True),
}


# ---- kernels (module level: they pickle by reference) -------------------------------------


def _is_sparse(x) -> bool:
    return not isinstance(x, np.ndarray) and _sparse.is_sparse_value(x)


@_quiet
def _map_kernel(x, name, axes, kw, extra):
    if _is_sparse(x):  # a sparse chunk: scipy's partial where cheap, else expand it
        part = _sparse.reduce_partial(x, name, axes, kw)
        if part is not NotImplemented:
            return part
        x = x.toarray()
    return _REDUCERS[name].map(x, axes, kw, extra)


@_quiet
def _combine_kernel(parts, name, kw):
    return _REDUCERS[name].combine(parts, kw)


@_quiet
def _agg_kernel(parts, name, axes, keepdims, dtype, kw):
    r = _REDUCERS[name]
    res = np.asarray(r.finish(r.combine(parts, kw), kw)).astype(dtype, copy=False)
    return res if keepdims else res.reshape(tuple(s for a, s in enumerate(res.shape) if a not in axes))


# ---- the tree-reduction operand ------------------------------------------------------------


class TensorReduction(TensorOperand):
    """Tree reduction of one tensor over ``axes`` with the reducer ``name`` (sparse chunks
    are reduced by scipy where cheap; the result is dense, as scipy's)."""

    _op_name = "reduce"
    sparse_aware = True

    def tile(self):
        (x,) = self.inputs
        r = _REDUCERS[self.name]
        if r.needs_offsets:
            yield from ensure_known(x)
        axes, key = self.axes, self.output_key()
        offs = [offsets(s) for s in x.nsplits] if r.needs_offsets else None

        sources = self._masked_sources(x, r)
        if sources is None:
            sources, grid = [(idx, x.chunk_at(idx)) for idx in x.chunk_grid()], list(x.chunk_shape)
        else:
            grid = [len(sources)]
        parts = {}
        for idx, c in sources:
            extra = None
            if offs is not None:
                extra = {"offset": tuple(o[i] for o, i in zip(offs, idx)), "shape": tuple(x.shape)}
            mem = None if c.nbytes is None or math.isnan(c.nbytes) else int(c.nbytes * (1 + r.temp_factor))
            p = self.new_chunk(idx, _keep_shape(c.shape, axes), _map_kernel,
                               (c, self.name, axes, self.kw, extra), memory=mem)
            p.key = (f"{key}-map", *idx)
            parts[idx] = p

        # Mars: about combine_size partials per combine, spread evenly over the reduced axes
        per_axis = _builtin_max(int(self.combine_size ** (1.0 / len(axes))), 2) if axes else 1
        level = 0
        while _builtin_any(grid[a] > per_axis for a in axes):
            new_grid = [-(-g // per_axis) if a in axes else g for a, g in enumerate(grid)]
            new_parts = {}
            for idx in itertools.product(*(range(g) for g in new_grid)):
                members = [parts[m] for m in _group(idx, axes, per_axis, grid)]
                c = self.new_chunk(idx, members[0].shape, _combine_kernel, (members, self.name, self.kw))
                c.key = (f"{key}-combine{level}", *idx)
                new_parts[idx] = c
            parts, grid, level = new_parts, new_grid, level + 1

        out_chunks = []
        out_grid = [1 if a in axes else g for a, g in enumerate(grid)]
        for idx in itertools.product(*(range(g) for g in out_grid)):
            members = [parts[m] for m in _group(idx, axes, per_axis, grid)]
            shape = members[0].shape
            if not self.keepdims:
                idx = tuple(i for a, i in enumerate(idx) if a not in axes)
                shape = tuple(s for a, s in enumerate(shape) if a not in axes)
            out_chunks.append(self.new_chunk(
                idx, shape, _agg_kernel,
                (members, self.name, axes, self.keepdims, self.output.dtype, self.kw),
            ))
        nsplits = [(1,) if a in axes else tuple(s) for a, s in enumerate(x.nsplits)]
        if not self.keepdims:
            nsplits = [s for a, s in enumerate(nsplits) if a not in axes]
        return [(out_chunks, tuple(nsplits))]


    def _masked_sources(self, x, r):
        """``[(index, chunk)]``: the per-chunk selections of ``x = a[mask]`` when this
        reduction of all of ``x`` does not depend on the order of its elements, else None.

        A mask over two or more axes gives numpy's C order only if each row of chunks is
        first joined into one chunk, which moves most of ``a`` between workers; a sum, a
        min or a mean of the selection does not need that order, so each chunk of ``a``
        is filtered and reduced where it is (as ``x[x > 0.5].sum()`` needs)."""
        from .indexing import TensorBoolMask, _mask_kernel, rechunk_now

        op = x.op
        if r.needs_offsets or not isinstance(op, TensorBoolMask) or op.axis != 0 or tuple(self.axes) != (0,):
            return None
        if _builtin_any(c.future is not None for c in x.chunks):  # executed: reduce what exists
            return None
        a, m = op.inputs
        if m.ndim < 2 or m.ndim != a.ndim or a.issparse or m.issparse:
            return None
        if _builtin_any(has_unknown(s) for t in (a, m) for s in t.nsplits) or tuple(a.shape) != tuple(m.shape):
            return None
        if tuple(m.nsplits) != tuple(a.nsplits):
            m = rechunk_now(m, a.nsplits)
        out = []
        for n, idx in enumerate(a.chunk_grid()):
            c = self.new_chunk((n,), (math.nan,), _mask_kernel, (a.chunk_at(idx), m.chunk_at(idx), 0), blockwise=True)
            c.key = (f"{self.output_key()}-select", n)
            out.append(((n,), c))
        return out


def _group(idx, axes, size, grid):
    """Grid positions of the partials combined into position ``idx`` of the next level:
    ``size`` consecutive partials along each reduced axis, the same position elsewhere."""
    ranges = [
        range(i * size, _builtin_min((i + 1) * size, grid[a])) if a in axes else (i,)
        for a, i in enumerate(idx)
    ]
    return itertools.product(*ranges)


# ---- build time ------------------------------------------------------------------------


def _probe(a: Tensor, np_name: str, **kwargs):
    """Ask numpy for the result dtype (and errors) on a tiny stand-in: the real empty array
    when ``a`` is known to be empty (so ``min`` of nothing raises now, as numpy does)."""
    if not has_unknown(a.shape) and _prod(a.shape) == 0:
        stand_in = np.empty(a.shape, dtype=a.dtype)
    else:
        stand_in = np.zeros((1,) * a.ndim, dtype=a.dtype)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.asarray(getattr(np, np_name)(stand_in, **kwargs)).dtype


def _moment_dtype(a: Tensor, dtype) -> np.dtype:
    """Accumulation dtype of mean/var, as numpy's: float64 for ints and bools, float32
    for float16 (numpy sums float16 in float32 too), else the input's or the given one."""
    if dtype is not None:
        return np.dtype(dtype)
    if a.dtype.kind in "biu":
        return np.dtype(np.float64)
    if a.dtype == np.float16:
        return np.dtype(np.float32)
    return a.dtype


def _finish_out(result: Tensor, out) -> Tensor:
    """numpy's ``out=``: ``out`` (a Tensor of the result's shape) now holds the result."""
    if out is None:
        return result
    from .arithmetic import _assign_out

    return _assign_out(out, result)


def _reduce(name, a, axis, keepdims, out, combine_size, probe_kw=None, kw=None, axes=None):
    """Validate, ask numpy for the dtype, and build the :class:`TensorReduction`."""
    a = astensor(a)
    if axes is None:
        axes = validate_axes(a.ndim, axis)
    dtype = _probe(a, name, axis=axis, keepdims=keepdims, **(probe_kw or {}))
    if combine_size is None:
        combine_size = config.get("tensor.combine-size")
    if not isinstance(combine_size, int) or combine_size < 2:
        raise ValueError(f"combine_size must be an int >= 2, got {combine_size!r}")
    op = TensorReduction([a.data], name=name, axes=tuple(axes), keepdims=bool(keepdims),
                         kw=kw or {}, combine_size=combine_size)
    shape = [1 if i in axes else s for i, s in enumerate(a.shape)]
    if not keepdims:
        shape = [s for i, s in enumerate(shape) if i not in axes]
    return _finish_out(op.new_tensor(tuple(shape), dtype), out)


def _ufunc_reduction(name, has_dtype):
    if has_dtype:
        def func(a, axis=None, dtype=None, out=None, keepdims=False, *, combine_size=None):
            dt = {"dtype": np.dtype(dtype) if dtype is not None else None}
            return _reduce(name, a, axis, keepdims, out, combine_size, probe_kw=dt, kw=dt)
    else:
        def func(a, axis=None, out=None, keepdims=False, *, combine_size=None):
            return _reduce(name, a, axis, keepdims, out, combine_size)
    func.__name__ = func.__qualname__ = name
    func.__doc__ = f"``numpy.{name}`` as a tree reduction (see numpy's documentation)."
    return func


sum = _ufunc_reduction("sum", True)  # noqa: A001
prod = _ufunc_reduction("prod", True)
nansum = _ufunc_reduction("nansum", True)
nanprod = _ufunc_reduction("nanprod", True)
min = _ufunc_reduction("min", False)  # noqa: A001
max = _ufunc_reduction("max", False)  # noqa: A001
nanmin = _ufunc_reduction("nanmin", False)
nanmax = _ufunc_reduction("nanmax", False)
any = _ufunc_reduction("any", False)  # noqa: A001
all = _ufunc_reduction("all", False)  # noqa: A001


def count_nonzero(a, axis=None, *, keepdims=False, combine_size=None):
    """``numpy.count_nonzero`` (an ``intp`` tensor, 0-d for ``axis=None``)."""
    a = astensor(a)
    axes = validate_axes(a.ndim, axis)
    return _reduce("count_nonzero", a, axes, keepdims, None, combine_size, axes=axes)


def _mean_reduction(name):
    def func(a, axis=None, dtype=None, out=None, keepdims=False, *, combine_size=None):
        a = astensor(a)
        dt = np.dtype(dtype) if dtype is not None else None
        kw = {"dtype": _moment_dtype(a, dt)}
        return _reduce(name, a, axis, keepdims, out, combine_size, probe_kw={"dtype": dt}, kw=kw)

    func.__name__ = func.__qualname__ = name
    func.__doc__ = f"``numpy.{name}``: partial (count, sum) per chunk, tree-combined."
    return func


def _var_reduction(name):
    def func(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, combine_size=None):
        a = astensor(a)
        if not isinstance(ddof, (int, np.integer, float, np.floating)) or isinstance(ddof, bool):
            raise TypeError(f"{name}(): ddof must be a number, got {ddof!r}")
        dt = np.dtype(dtype) if dtype is not None else None
        kw = {"dtype": _moment_dtype(a, dt), "ddof": ddof}
        return _reduce(name, a, axis, keepdims, out, combine_size,
                       probe_kw={"dtype": dt, "ddof": ddof}, kw=kw)

    func.__name__ = func.__qualname__ = name
    func.__doc__ = (f"``numpy.{name}``: partial (count, mean, M2) per chunk, combined with "
                    "Chan et al.'s parallel formula.")
    return func


mean = _mean_reduction("mean")
nanmean = _mean_reduction("nanmean")
var = _var_reduction("var")
nanvar = _var_reduction("nanvar")
std = _var_reduction("std")
nanstd = _var_reduction("nanstd")


def _arg_reduction(name):
    def func(a, axis=None, out=None, *, keepdims=False, combine_size=None):
        a = astensor(a)
        if axis is not None:
            axis = validate_axis(a.ndim, axis)
        axes = tuple(range(a.ndim)) if axis is None else (axis,)
        return _reduce(name, a, axis, keepdims, out, combine_size, kw={"axis": axis}, axes=axes)

    func.__name__ = func.__qualname__ = name
    func.__doc__ = (f"``numpy.{name}``: per-chunk candidates with global indices (chunk sizes "
                    "are made known first), tree-combined; ties go to the first occurrence.")
    return func


argmin = _arg_reduction("argmin")
argmax = _arg_reduction("argmax")
nanargmin = _arg_reduction("nanargmin")
nanargmax = _arg_reduction("nanargmax")


# ---- cumulative reductions -------------------------------------------------------------------

# name -> (numpy cumulative function, ufunc joining a chunk with its carry, identity)
_CUM = {
    "cumsum": (np.cumsum, np.add, 0),
    "cumprod": (np.cumprod, np.multiply, 1),
    "nancumsum": (np.nancumsum, np.add, 0),
    "nancumprod": (np.nancumprod, np.multiply, 1),
}


@_quiet
def _cum_map(x, name, axis, dtype):
    """The chunk's own cumulative result and its total along ``axis`` (keepdims)."""
    c = _CUM[name][0](x, axis=axis, dtype=dtype)
    if c.shape[axis]:
        total = np.take(c, [-1], axis=axis)
    else:
        total = np.full(_keep_shape(c.shape, (axis,)), _CUM[name][2], dtype=c.dtype)
    return c, total


def _cum_first(mapped):
    return mapped[0]


def _cum_first_carry(mapped):
    return mapped[1]


@_quiet
def _cum_next_carry(carry, mapped, name):
    return _CUM[name][1](carry, mapped[1])


@_quiet
def _cum_apply(mapped, carry, name):
    return _CUM[name][1](mapped[0], carry)


class TensorCumReduction(TensorOperand):
    """Per-chunk cumulative op; chunk ``j`` along the axis then joins the carry of chunks
    ``0..j-1`` (a sequential chain of keepdims totals, like dask's cumreduction)."""

    _op_name = "cumreduce"

    def tile(self):
        (x,) = self.inputs
        axis, name, key = self.axis, self.name, self.output_key()
        dtype = self.output.dtype
        chunks = {}
        for idx in x.chunk_grid():
            c = x.chunk_at(idx)
            m = self.new_chunk(idx, c.shape, _cum_map, (c, name, axis, dtype))
            m.key = (f"{key}-map", *idx)
            chunks[idx] = m
        out = []
        carries = {}
        for idx in x.chunk_grid():
            m = chunks[idx]
            j = idx[axis]
            if j == 0:
                out.append(self.new_chunk(idx, m.shape, _cum_first, (m,)))
                continue
            prev = chunks[idx[:axis] + (j - 1,) + idx[axis + 1:]]
            pidx = idx[:axis] + (j - 1,) + idx[axis + 1:]
            cshape = _keep_shape(m.shape, (axis,))
            if j == 1:
                carry = self.new_chunk(idx, cshape, _cum_first_carry, (prev,))
            else:
                carry = self.new_chunk(idx, cshape, _cum_next_carry, (carries[pidx], prev, name))
            carry.key = (f"{key}-carry", *idx)
            carries[idx] = carry
            out.append(self.new_chunk(idx, m.shape, _cum_apply, (m, carry, name)))
        return [(out, x.nsplits)]


def _ravel(a: Tensor) -> Tensor:
    """``a`` flattened in C order: ``manipulation.ravel`` when it exists, else a private
    one (rows of chunks spanning every trailing axis, each reshaped to 1-d)."""
    from . import manipulation

    if a.ndim == 1:
        return a
    public = getattr(manipulation, "ravel", None)
    if public is not None:
        return public(a)
    size = _prod(a.shape) if a.ndim else 1
    return _PrivateRavel([a.data]).new_tensor((size,), a.dtype)


def _ravel_kernel(x):
    return x.reshape(-1)


class _PrivateRavel(TensorOperand):
    _op_name = "ravel-rows"

    def tile(self):
        from .rechunk import TensorRechunk

        (x,) = self.inputs
        yield from ensure_known(x)
        if x.ndim == 0:
            rows = x
            first = (1,)
        else:
            target = (tuple(x.nsplits[0]), *[(int(s),) for s in x.shape[1:]])
            if tuple(x.nsplits) != target:
                rows = TensorRechunk([x], chunk_size=target).new_tensor(x.shape, x.dtype).data
                _tile_now([rows], None)
            else:
                rows = x
            rest = _prod(x.shape[1:])
            first = tuple(int(n) * rest for n in x.nsplits[0])
        chunks = [
            self.new_chunk((i,), (n,), _ravel_kernel, (c,), blockwise=True)
            for i, (c, n) in enumerate(zip(rows.chunks, first))
        ]
        return [(chunks, (first,))]


def _cum_reduction(name):
    def func(a, axis=None, dtype=None, out=None):
        a = _sparse.densify(astensor(a))
        dt = np.dtype(dtype) if dtype is not None else None
        if axis is None:
            res_dtype = _probe(a, name, axis=None, dtype=dt)
            a = _ravel(a)
            axis = 0
        else:
            axis = validate_axis(a.ndim, axis)
            res_dtype = _probe(a, name, axis=axis, dtype=dt)
        op = TensorCumReduction([a.data], name=name, axis=axis)
        return _finish_out(op.new_tensor(a.shape, res_dtype), out)

    func.__name__ = func.__qualname__ = name
    func.__doc__ = f"``numpy.{name}``: per-chunk {name} plus the carried totals of earlier chunks."
    return func


cumsum = _cum_reduction("cumsum")
cumprod = _cum_reduction("cumprod")
nancumsum = _cum_reduction("nancumsum")
nancumprod = _cum_reduction("nancumprod")
