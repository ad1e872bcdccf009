"""Random tensors (``mt.random``): numpy's ``RandomState`` API with ``chunk_size=``.

Values are *counter-based*: element ``i`` (its flat C-order index in the whole tensor) of
a draw with 64-bit key ``k`` is ``splitmix64(k + i * GAMMA)``, a pure function of
``(k, i)``.  So every chunk computes its values from its global offsets alone (no state
travels between chunks, nothing but a few integers travels in the graph) and, for a given
seed, the result is the same whatever the chunking.  Distributions needing several
independent draws per element (Box-Muller's normal) read further *streams*: the same
counter with a constant added to the key.

``RandomState(seed)`` turns its seed into one fresh 64-bit key per call (as Mars draws one
op seed per call from numpy's RandomState), so successive calls differ and re-seeding
repeats them.  A seeded state gives deterministic tensor keys; an unseeded one gets
random keys (:func:`~mars_dask.tiling.core.random_key`).

Kernels work through each chunk in blocks of ``_BLOCK`` elements so that the ~10 numpy
passes of the hash stay in cache: ``rand`` runs within ~1.3x of
``numpy.random.default_rng().random`` per element.

The other distributions (``gamma``, ``poisson``, ``binomial``, ...) are numpy's own
vectorized samplers (``np.random.Generator``, within ~1x of numpy per element) over a fixed
grid of virtual *tiles* of at most 2**16 elements, chosen from the tensor's shape alone
(:func:`_tile_shape`; edges dividing the shape where possible, e.g. 250 x 250 for 8000 x 8000,
so round chunk sizes cut no tile).  Tile ``t`` is drawn by ``Generator(PCG64(SeedSequence((key,
t))))`` with the tile's own parameters, so a tile is the same whichever chunk draws it; a chunk
draws the tiles it overlaps (only their rows up to its last one) and keeps its part.  So
values are a function of ``(key, shape, parameters)``, not of the chunking; they follow the
distributions, not numpy's own stream.  Parameters may be scalars, arrays or tensors broadcast
against ``size``: a chunk receives the parameter pieces covering its tiles.  ``dirichlet``,
``multinomial`` and ``multivariate_normal`` add a trailing sample axis, chunked as one piece
and tiled over the leading axes only.
"""

from __future__ import annotations

import functools
import itertools
import math
import numbers
import operator
import warnings

import numpy as np

from ..tiling.core import ensure_known, has_unknown, random_key
from ..tiling.tile import tile as _tile
from .core import Tensor, TensorData, TensorOperand, astensor, is_scalar_like
from .datasource import cast
from .rechunk import TensorRechunk
from .utils import (
    broadcast_shape, chunk_grid, chunk_shape_at, normalize_chunk_size, offsets, prod, validate_axis,
)

__all__ = [
    "RandomState", "seed", "rand", "randn", "randint", "random_integers", "random_sample", "random",
    "ranf", "sample", "choice", "bytes", "permutation", "shuffle",
    "beta", "binomial", "chisquare", "dirichlet", "exponential", "f", "gamma", "geometric", "gumbel",
    "hypergeometric", "laplace", "logistic", "lognormal", "logseries", "multinomial", "multivariate_normal",
    "negative_binomial", "noncentral_chisquare", "noncentral_f", "normal", "pareto", "poisson", "power",
    "rayleigh", "standard_cauchy", "standard_exponential", "standard_gamma", "standard_normal", "standard_t",
    "triangular", "uniform", "vonmises", "wald", "weibull", "zipf",
]

_M64 = (1 << 64) - 1
_GAMMA = 0x9E3779B97F4A7C15
_MUL1 = np.uint64(0xBF58476D1CE4E5B9)
_MUL2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S32, _S11, _S40 = (np.uint64(s) for s in (30, 27, 31, 32, 11, 40))
_LOW32 = np.uint64(0xFFFFFFFF)
_BLOCK = 1 << 16


def _splitmix_scalar(x: int) -> int:
    """splitmix64's finalizer on one Python int (for deriving keys)."""
    x &= _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


# key offset of stream s (stream 0 is the key itself)
_STREAMS = [0] + [_splitmix_scalar(0x5EED + s) for s in range(1, 4)]


# ---- kernels ------------------------------------------------------------------------------


def _mix(x: np.ndarray, tmp: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer, in place over a uint64 array (numpy's uint64 ops wrap)."""
    np.right_shift(x, _S30, out=tmp)
    np.bitwise_xor(x, tmp, out=x)
    np.multiply(x, _MUL1, out=x)
    np.right_shift(x, _S27, out=tmp)
    np.bitwise_xor(x, tmp, out=x)
    np.multiply(x, _MUL2, out=x)
    np.right_shift(x, _S31, out=tmp)
    np.bitwise_xor(x, tmp, out=x)
    return x


def _stream_bits(x: np.ndarray, stream: int) -> np.ndarray:
    """Random bits of ``stream`` for the raw counters ``x`` (a new array; ``x`` intact)."""
    y = x + np.uint64(_STREAMS[stream])
    return _mix(y, np.empty_like(y))


def _unit(bits: np.ndarray, dest: np.ndarray) -> np.ndarray:
    """Uniform [0, 1) floats into ``dest`` from the top 53 (float32: 24) bits."""
    if dest.dtype == np.float32:
        np.right_shift(bits, _S40, out=bits)
        np.copyto(dest, bits.view(np.int64), casting="unsafe")
        np.multiply(dest, np.float32(2.0**-24), out=dest)
    else:
        np.right_shift(bits, _S11, out=bits)
        np.copyto(dest, bits.view(np.int64), casting="unsafe")  # int64 -> float is fast
        np.multiply(dest, 2.0**-53, out=dest)
    return dest


def _mulhi(bits: np.ndarray, r: int) -> np.ndarray:
    """``floor(bits * r / 2**64)`` exactly, for uint64 ``bits`` and ``0 < r < 2**64``:
    Lemire's multiply-shift range reduction (bias <= r / 2**64), with the 128-bit product
    assembled from 32-bit halves."""
    rl, rh = np.uint64(r & 0xFFFFFFFF), np.uint64(r >> 32)
    xl = bits & _LOW32
    xh = bits >> _S32
    lo_lo = xl * rl
    hi_lo = xh * rl
    cross = (lo_lo >> _S32) + (hi_lo & _LOW32) + xl * rh  # cannot overflow
    return xh * rh + (hi_lo >> _S32) + (cross >> _S32)


def _fill_uniform(dest, x, tmp, args):
    _unit(_mix(x, tmp), dest)


def _fill_normal(dest, x, tmp, args):
    """Box-Muller (cosine branch) from streams 0 and 1."""
    u1 = _unit(_stream_bits(x, 0), np.empty(x.shape))
    u2 = _unit(_stream_bits(x, 1), np.empty(x.shape))
    r = np.sqrt(-2.0 * np.log1p(-u1))  # 1 - u1 in (0, 1]: finite
    np.multiply(r, np.cos(2.0 * np.pi * u2), out=dest, casting="unsafe")


def _fill_randint(dest, x, tmp, args):
    low, span = args
    bits = _mix(x, tmp)
    v = bits if span == 1 << 64 else _mulhi(bits, span)
    v += np.uint64(low & _M64)  # wraps: the two's complement of low + offset
    np.copyto(dest, v.view(np.int64), casting="unsafe")


def _fill_cdf_index(dest, x, tmp, args):
    (cdf,) = args
    u = _unit(_mix(x, tmp), np.empty(x.shape))
    idx = np.searchsorted(cdf, u, side="right")
    np.minimum(idx, len(cdf) - 1, out=idx)
    dest[...] = idx


def _fill_bits(dest, x, tmp, args):
    dest[...] = _mix(x, tmp)


_FILLS = {
    "uniform": _fill_uniform,
    "normal": _fill_normal,
    "randint": _fill_randint,
    "cdf_index": _fill_cdf_index,
    "bits": _fill_bits,
}


def _counter_blocks(shape: tuple, offs: tuple, gshape: tuple, key: int):
    """Yield ``(where, x)``: for blocks of a chunk (viewed as rows x last axis), the index
    into that 2-d view and the raw counters ``key + flat_index * GAMMA`` of its elements.

    Counters are affine in the flat index, so a block is one broadcast add of a per-row
    term and a per-column term (``(r*W + c)*G = r*W*G + c*G`` modulo 2**64).
    """
    ndim = len(shape)
    if ndim == 0:
        shape, offs, gshape = (1,), (0,), (1,)
        ndim = 1
    if prod(shape) == 0:
        return
    strides = [int(prod(gshape[a + 1 :])) for a in range(ndim)]
    rows = np.full((), (key + offs[-1] * _GAMMA) & _M64, dtype=np.uint64)
    for a in range(ndim - 1):
        term = np.arange(offs[a], offs[a] + shape[a], dtype=np.uint64) * np.uint64(strides[a] * _GAMMA & _M64)
        rows = rows[..., None] + term
    rows = rows.ravel()
    ncols = shape[-1]
    width = min(ncols, _BLOCK)
    cols = np.arange(width, dtype=np.uint64) * np.uint64(_GAMMA)
    buf = np.empty(max(width, (_BLOCK // width) * width), dtype=np.uint64)  # reused
    if ncols >= _BLOCK:
        for r in range(len(rows)):
            for c0 in range(0, ncols, _BLOCK):
                w = min(_BLOCK, ncols - c0)
                start = np.uint64((int(rows[r]) + c0 * _GAMMA) & _M64)
                yield (r, slice(c0, c0 + w)), np.add(cols[:w], start, out=buf[:w])
    else:
        step = max(1, _BLOCK // ncols)
        for r0 in range(0, len(rows), step):
            part = rows[r0 : r0 + step, None]
            x = buf[: len(part) * ncols].reshape(len(part), ncols)
            yield slice(r0, r0 + step), np.add(part, cols, out=x)


def _sample_kernel(shape, offs, gshape, key, dist, args, dtype, pool=None):
    """One chunk of a draw: ``dist``'s values for the elements at ``offs`` of ``gshape``.
    ``pool`` (an array, or a list of the chunks of one) maps drawn indices to values."""
    out = np.empty(shape, dtype=dtype)
    if out.size == 0:
        return _take_pool(out, pool)
    view = out.reshape(-1, shape[-1] if shape else 1)
    fill = _FILLS[dist]
    tmp = np.empty(min(out.size, 2 * _BLOCK), dtype=np.uint64)  # scratch, reused
    for where, x in _counter_blocks(tuple(shape), tuple(offs), tuple(gshape), key):
        fill(view[where], x, tmp[: x.size].reshape(x.shape), args)
    return _take_pool(out, pool)


def _take_pool(idx, pool):
    if pool is None:
        return idx
    if isinstance(pool, list):
        pool = np.concatenate(pool) if pool else np.empty(0)
    return pool[idx]


def _selection_kernel(n, m, key, p):
    """The first ``m`` of a random ordering of ``range(n)`` (all ``n`` if ``m == n``).

    Without weights: sort by hashed keys.  With weights ``p``: Efraimidis-Spirakis, sort by
    ``Exp(1) / p`` (the order of successive weighted draws without replacement).
    """
    keys = _sample_kernel((n,), (0,), (n,), key, "bits", (), np.uint64)
    if p is not None:
        u = _unit(keys, np.empty(n))
        with np.errstate(divide="ignore"):
            keys = -np.log1p(-u) / p
    if m < n:
        sel = np.argpartition(keys, m - 1)[:m] if m else np.empty(0, dtype=np.intp)
        return sel[np.argsort(keys[sel], kind="stable")].astype(np.int64)
    return np.argsort(keys, kind="stable").astype(np.int64)


def _take_selection(sel, out_shape, slices, pool):
    return _take_pool(sel.reshape(out_shape)[slices], pool)


def _gather_rows(sel, lo, hi, parts, row_offsets):
    """Rows ``sel[lo:hi]`` of the tensor whose axis-0 chunks are ``parts``."""
    rows = sel[lo:hi]
    out = np.empty((len(rows),) + parts[0].shape[1:], dtype=parts[0].dtype)
    which = np.searchsorted(row_offsets, rows, side="right") - 1
    for k, part in enumerate(parts):
        m = which == k
        if m.any():
            out[m] = part[rows[m] - row_offsets[k]]
    return out


# ---- tiled samplers (the distributions) ---------------------------------------------------
#
# Each distribution is numpy's own vectorized sampler (``np.random.Generator``) drawn over a
# fixed grid of virtual *tiles* that depends on the tensor's shape alone (never on the
# chunks): tile ``t`` holds ``Generator(PCG64(SeedSequence((key, t))))``'s draw of the tile's
# shape with the tile's own parameters, so a tile is the same whichever chunk draws it.  A
# chunk draws the tiles it overlaps and keeps its part; numpy fills a draw in C order, one
# element after the other, so a chunk draws a tile's leading rows only up to its last one.

_TILE = 1 << 16  # elements of a tile, at most
_POISSON_LAM_MAX = np.iinfo(np.int64).max - np.sqrt(np.iinfo(np.int64).max) * 10


@functools.lru_cache(maxsize=1024)
def _nice_edge(dim: int, target: int) -> int:
    """A tile edge for an axis of length ``dim > target``: the largest divisor of ``dim`` in
    ``(target / 2, target]`` (tiles then align with round chunk sizes: 250 for 8000 or 10000,
    256 for 4096), else ``target``."""
    for e in range(target, target // 2, -1):
        if dim % e == 0:
            return e
    return target


@functools.lru_cache(maxsize=1024)
def _tile_shape(shape: tuple, budget: int = _TILE) -> tuple:
    """The tile shape for a draw of ``shape``: at most ``budget`` elements, near-cubic,
    clipped to the shape (short axes whole, their share of the budget going to the others)."""
    nd = len(shape)
    edges = [1] * nd
    for j, a in enumerate(sorted(range(nd), key=lambda i: shape[i])):
        target = max(1, int(budget ** (1.0 / (nd - j)) + 1e-9))
        d = int(shape[a])
        edges[a] = max(1, d) if d <= target else _nice_edge(d, target)
        budget = max(1, budget // edges[a])
    return tuple(edges)


def _tile_gen(key: int, t: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence((key & _M64, t))))


def _tiled(out, offs, gshape, tshape, key, draw) -> np.ndarray:
    """Fill chunk ``out`` (at ``offs`` of a draw of leading shape ``gshape``; trailing axes of
    ``out`` beyond ``len(gshape)`` are whole) from the tiles it overlaps:
    ``draw(gen, lo, size)`` gives the values of the tile at ``lo`` (its first ``size[0]``
    rows when ``size`` is shorter than the tile)."""
    nd = len(gshape)
    shape = out.shape[:nd]
    if out.size == 0:
        return out
    grid = [-(-g // t) for g, t in zip(gshape, tshape)]
    ranges = [range(o // t, -(-(o + s) // t)) for o, s, t in zip(offs, shape, tshape)]
    for tidx in itertools.product(*ranges):
        flat = 0
        for i, g in zip(tidx, grid):
            flat = flat * g + i
        lo = [i * t for i, t in zip(tidx, tshape)]
        hi = [min(v + t, g) for v, t, g in zip(lo, tshape, gshape)]
        a = [max(v, o) for v, o in zip(lo, offs)]
        b = [min(h, o + s) for h, o, s in zip(hi, offs, shape)]
        size = ((b[0] - lo[0],) + tuple(h - v for h, v in zip(hi[1:], lo[1:]))) if nd else ()
        vals = draw(_tile_gen(key, flat), lo, size)
        dst = tuple(slice(x - o, y - o) for x, y, o in zip(a, b, offs))
        src = tuple(slice(x - v, y - v) for x, y, v in zip(a, b, lo))
        out[dst] = vals[src]
    return out


def _as_int(v):
    return np.asarray(v).astype(np.int64) if np.ndim(v) else int(v)


def _negative_binomial(gen, size, n, p):
    if np.any(np.asarray(p) == 0):  # numpy's RandomState accepts p = 0 (Generator does not)
        return np.random.RandomState(gen.bit_generator).negative_binomial(n, p, size=size)
    return gen.negative_binomial(n, p, size=size)


def _binomial(gen, size, n, p):
    return gen.binomial(_as_int(n), p, size=size)


def _hypergeometric(gen, size, good, bad, sample):
    good, bad, sample = _as_int(good), _as_int(bad), _as_int(sample)
    if np.any(np.asarray(good) >= 10**9) or np.any(np.asarray(bad) >= 10**9):  # beyond Generator's range
        return np.random.RandomState(gen.bit_generator).hypergeometric(good, bad, sample, size=size)
    return gen.hypergeometric(good, bad, sample, size=size)


def _method(name):
    def sample(gen, size, *params):
        return getattr(gen, name)(*params, size=size)

    return sample


_FLOAT_DISTS = ["standard_exponential", "exponential", "standard_gamma", "gamma", "beta", "chisquare", "f",
                "standard_t", "standard_cauchy", "gumbel", "laplace", "logistic", "lognormal", "pareto", "power",
                "rayleigh", "weibull", "triangular", "wald", "vonmises", "noncentral_chisquare", "noncentral_f"]

#: name -> (sampler(gen, size, *params), dtype numpy's RandomState gives)
_SAMPLERS = {name: (_method(name), np.float64) for name in _FLOAT_DISTS}
_SAMPLERS.update({
    "poisson": (_method("poisson"), np.int64),
    "binomial": (_binomial, np.int64),
    "negative_binomial": (_negative_binomial, np.int64),
    "geometric": (_method("geometric"), np.int64),
    "logseries": (_method("logseries"), np.int64),
    "zipf": (_method("zipf"), np.int64),
    "hypergeometric": (_hypergeometric, np.int64),
})


# -- distributions with a trailing axis (whole rows per chunk) --


def _dirichlet_rows(gen, size, alpha):
    if len(alpha) == 0:
        return np.empty(tuple(size) + (0,))
    return gen.dirichlet(alpha, size=size)


def _multinomial_rows(gen, size, n, pvals):
    if len(pvals) == 0:
        return np.zeros(tuple(size) + (0,), dtype=np.int64)
    return gen.multinomial(n, pvals, size=size)


def _mvn_rows(gen, size, mean, factor):
    return gen.standard_normal(tuple(size) + (len(mean),)) @ factor + mean


_ROW_SAMPLERS = {
    "dirichlet": (_dirichlet_rows, np.float64),
    "multinomial": (_multinomial_rows, np.int64),
    "multivariate_normal": (_mvn_rows, np.float64),
}


def _nan_lt(x, v):
    with np.errstate(invalid="ignore"):
        return np.any(np.asarray(x) < v)


def _nan_le(x, v):
    with np.errstate(invalid="ignore"):
        return np.any(np.asarray(x) <= v)


def _not(cond):
    """True where ``cond`` fails, nan included."""
    with np.errstate(invalid="ignore"):
        return np.any(~np.asarray(cond))


def _pos_bad(x):
    """``x <= 0`` anywhere (nan passes, as in numpy)."""
    return _nan_le(x, 0)


def _neg_bad(x):
    return _nan_lt(x, 0)


def _prob_bad(p):
    """Not in [0, 1], nan included."""
    p = np.asarray(p)
    return _not((p >= 0) & (p <= 1))


#: name -> checks of its parameters, numpy's messages: (parameter positions, is-invalid, message)
_CHECKS = {
    "exponential": [((0,), _neg_bad, "scale < 0")],
    "standard_gamma": [((0,), _neg_bad, "shape < 0")],
    "gamma": [((0,), _neg_bad, "shape < 0"), ((1,), _neg_bad, "scale < 0")],
    "beta": [((0,), _pos_bad, "a <= 0"), ((1,), _pos_bad, "b <= 0")],
    "chisquare": [((0,), _pos_bad, "df <= 0")],
    "f": [((0,), _pos_bad, "dfnum <= 0"), ((1,), _pos_bad, "dfden <= 0")],
    "standard_t": [((0,), _pos_bad, "df <= 0")],
    "gumbel": [((1,), _neg_bad, "scale < 0")],
    "laplace": [((1,), _neg_bad, "scale < 0")],
    "logistic": [((1,), _neg_bad, "scale < 0")],
    "lognormal": [((1,), _neg_bad, "sigma < 0")],
    "pareto": [((0,), _pos_bad, "a <= 0")],
    "power": [((0,), _pos_bad, "a <= 0")],
    "rayleigh": [((0,), _neg_bad, "scale < 0")],
    "weibull": [((0,), _neg_bad, "a < 0")],
    "triangular": [((0, 1), lambda lo, mo: _nan_lt(np.subtract(mo, lo), 0), "left > mode"),
                   ((1, 2), lambda mo, hi: _nan_lt(np.subtract(hi, mo), 0), "mode > right"),
                   ((0, 2), lambda lo, hi: np.any(np.equal(lo, hi)), "left == right")],
    "wald": [((0,), _pos_bad, "mean <= 0"), ((1,), _pos_bad, "scale <= 0")],
    "vonmises": [((1,), _neg_bad, "kappa < 0")],
    "noncentral_chisquare": [((0,), _pos_bad, "df <= 0"), ((1,), _neg_bad, "nonc < 0")],
    "noncentral_f": [((0,), _pos_bad, "dfnum <= 0"), ((1,), _pos_bad, "dfden <= 0"), ((2,), _neg_bad, "nonc < 0")],
    "poisson": [((0,), lambda lam: _not(np.asarray(lam) >= 0), "lam < 0 or lam is NaN"),
                ((0,), lambda lam: _nan_lt(_POISSON_LAM_MAX, lam), "lam value too large")],
    "binomial": [((0,), _neg_bad, "n < 0"), ((1,), _prob_bad, "p < 0, p > 1 or p is NaN")],
    "negative_binomial": [((0,), _pos_bad, "n <= 0"), ((1,), _prob_bad, "p < 0, p > 1 or p is NaN")],
    "geometric": [((0,), lambda p: _not((np.asarray(p) > 0) & (np.asarray(p) <= 1)),
                   "p <= 0, p > 1 or p contains NaNs")],
    "logseries": [((0,), lambda p: _not((np.asarray(p) >= 0) & (np.asarray(p) < 1)), "p < 0, p >= 1 or p is NaN")],
    "zipf": [((0,), lambda a: _not(np.asarray(a) > 1), "a <= 1 or a is NaN")],
    "hypergeometric": [((0, 1, 2), lambda g, b, m: _nan_lt(np.add(g, b) - np.asarray(m), 0), "ngood + nbad < nsample"),
                       ((0,), _neg_bad, "ngood < 0"),
                       ((1,), _neg_bad, "nbad < 0"),
                       ((2,), lambda m: _not(np.asarray(m) >= 1), "nsample < 1 or nsample is NaN")],
}


def _check_params(dist, params) -> None:
    """Raise numpy's ValueError for invalid parameter values (all known)."""
    for idx, bad, msg in _CHECKS.get(dist, ()):
        if bad(*(params[i] for i in idx)):
            raise ValueError(msg)


def _assemble(pieces, grid):
    """One array from the chunks ``pieces`` of a block grid ``grid`` (C order)."""
    if len(pieces) == 1:
        return np.asarray(pieces[0])
    cells = np.empty(len(pieces), dtype=object)
    for i, p in enumerate(pieces):
        cells[i] = p
    return np.block(cells.reshape(grid).tolist())


def _gamma_into(gen, out, shape, scale=1.0):
    gen.standard_gamma(shape, size=out.shape, out=out)
    if scale != 1.0:
        np.multiply(out, scale, out=out)


def _exponential_into(gen, out, scale=1.0):
    gen.standard_exponential(size=out.shape, out=out)
    if scale != 1.0:
        np.multiply(out, scale, out=out)


#: distributions drawn into a reused buffer (numpy's ``out=``) when their parameters are
#: scalars: numpy computes ``gamma(k, s)`` as ``s * standard_gamma(k)`` and ``exponential(s)``
#: as ``s * standard_exponential()``, so the values are the same bit for bit.  A fresh array
#: per tile costs page faults in a worker (dask sets ``MALLOC_TRIM_THRESHOLD_``, so each
#: tile-sized array is mapped and unmapped again): about 10% of a gamma draw.
_INTO = {
    "standard_gamma": _gamma_into,
    "gamma": _gamma_into,
    "standard_exponential": _exponential_into,
    "exponential": _exponential_into,
}


def _dist_kernel(shape, offs, gshape, tshape, key, dist, spec, dtype, *tensors):
    """One chunk of distribution ``dist``: ``spec`` lists the parameters, constants or
    (``None``) the next of ``tensors``: ``(pieces, grid, starts)``, the chunks of a parameter
    covering the tiles this chunk overlaps and, per parameter axis, the output position of
    their first element (``None`` where the parameter broadcasts)."""
    sampler, natural = _SAMPLERS[dist]
    blocks = [(_assemble(pieces, grid), starts) for pieces, grid, starts in tensors]
    it = iter(blocks)
    params = [next(it) if v is None else v for v in spec]
    if tensors:  # values only known now
        _check_params(dist, [p[0] if isinstance(p, tuple) else p for p in params])
    nd = len(gshape)
    into = _INTO.get(dist) if not tensors and all(np.ndim(p) == 0 for p in params) else None
    scratch = []

    def draw(gen, lo, size):
        if into is not None:
            if not scratch:
                scratch.append(np.empty(int(np.prod(tshape)), dtype=natural))
            buf = scratch[0][: int(np.prod(size))].reshape(size)
            into(gen, buf, *params)
            return buf
        ps = []
        for p in params:
            if isinstance(p, tuple):
                block, starts = p
                off = nd - block.ndim
                p = block[tuple(slice(0, 1) if s is None else slice(lo[i + off] - s, lo[i + off] - s + size[i + off])
                                for i, s in enumerate(starts))]
            ps.append(p)
        return np.asarray(sampler(gen, size, *ps), dtype=natural).reshape(size)

    with np.errstate(all="ignore"):
        out = _tiled(np.empty(shape, dtype=natural), offs, gshape, tshape, key, draw)
    return out if out.dtype == dtype else out.astype(dtype)


def _rows_kernel(shape, offs, gshape, tshape, key, dist, args, dtype):
    """One chunk of a distribution with a trailing axis (``shape[-1]`` is whole); tiles
    cover the leading axes (``offs``, ``gshape``, ``tshape``)."""
    sampler, natural = _ROW_SAMPLERS[dist]
    k = shape[-1]

    def draw(gen, lo, size):
        return np.asarray(sampler(gen, size, *args), dtype=natural).reshape(tuple(size) + (k,))

    with np.errstate(all="ignore"):
        out = _tiled(np.empty(shape, dtype=natural), offs, gshape, tshape, key, draw)
    return out if out.dtype == dtype else out.astype(dtype)



# ---- operands -----------------------------------------------------------------------------


def _chunk_offsets(nsplits, idx):
    return tuple(offsets(s)[i] for s, i in zip(nsplits, idx))


def _pool_arg(pool):
    """The pool as a kernel argument: a numpy array, or the chunks of a tiled tensor."""
    return list(pool.chunks) if pool is not None and not isinstance(pool, np.ndarray) else pool


class TensorRandom(TensorOperand):
    """A draw of distribution ``dist`` (a key of ``_FILLS``); each chunk hashes its own
    global indices.  ``pool`` optionally maps the drawn indices to values (choice)."""

    _op_name = "random"

    def tile(self):
        out = self.output
        nsplits = normalize_chunk_size(out.shape, self.chunk_size, out.dtype.itemsize)
        pool = self.inputs[0] if self.inputs else self.pool
        chunks = []
        for idx in chunk_grid(nsplits):
            shape = chunk_shape_at(nsplits, idx)
            args = (shape, _chunk_offsets(nsplits, idx), out.shape, self.key, self.dist, self.args, self.draw_dtype)
            chunks.append(self.new_chunk(idx, shape, _sample_kernel, args, {"pool": _pool_arg(pool)}))
        return [(chunks, nsplits)]


class TensorSelection(TensorOperand):
    """Draws needing a random ordering of a population (``permutation``, ``choice``
    without replacement): one kernel orders the population, output chunks slice it."""

    _op_name = "random-select"

    def tile(self):
        out = self.output
        x = self.inputs[0] if self.inputs else None
        if self.gather:
            if any(math.isnan(s) for ss in x.nsplits for s in ss):
                yield from ensure_known(x)
            n = m = int(x.shape[0])
            nsplits = (x.nsplits[0],) + tuple(x.nsplits[1:])
        else:
            n, m = self.n, int(prod(out.shape))
            nsplits = normalize_chunk_size(out.shape, self.chunk_size, out.dtype.itemsize)
        sel = self.new_chunk((), (m,), _selection_kernel, (n, m, self.key, self.p), dtype=np.int64,
                             memory=n * 24)
        sel.key = (self.output_key(0) + "-order",)
        chunks = []
        for idx in chunk_grid(nsplits):
            shape = chunk_shape_at(nsplits, idx)
            offs = _chunk_offsets(nsplits, idx)
            if self.gather:
                parts = [x.chunk_at((i,) + idx[1:]) for i in range(len(nsplits[0]))]
                row_offs = np.array(offsets(nsplits[0])[:-1], dtype=np.int64)
                args = (sel, offs[0], offs[0] + shape[0], parts, row_offs)
                c = self.new_chunk(idx, shape, _gather_rows, args)
            else:
                slices = tuple(slice(o, o + s) for o, s in zip(offs, shape))
                pool = _pool_arg(x if x is not None else self.pool)
                c = self.new_chunk(idx, shape, _take_selection, (sel, out.shape, slices, pool))
            chunks.append(c)
        return [(chunks, nsplits)]


def _param_splits(bounds: tuple, dim: int, t: int) -> tuple:
    """Chunk lengths for a parameter axis of length ``dim`` against output chunk boundaries
    ``bounds`` and tile edge ``t``: the output boundaries moved down to a tile boundary, so an
    output chunk's tiles are covered by at most two pieces per axis (one when aligned)."""
    cuts = sorted({(b // t) * t for b in bounds[:-1]} | {dim})
    return tuple(b - a for a, b in zip(cuts, cuts[1:]) if b > a) or (0,)


def _param_pieces(p: TensorData, shape: tuple, nsplits: tuple, tshape: tuple):
    """Parameter tensor ``p`` (right-aligned against ``shape``) re-cut by
    :func:`_param_splits` on every axis where it is not broadcast; returns it with, per axis,
    the boundaries of its pieces (``None`` where it broadcasts)."""
    off = len(shape) - p.ndim
    new, cuts = [], []
    for a in range(p.ndim):
        if p.shape[a] == 1:
            new.append((1,))
            cuts.append(None)
        else:
            ax = a + off
            splits = _param_splits(offsets(nsplits[ax]), int(shape[ax]), tshape[ax])
            new.append(splits)
            cuts.append(offsets(splits))
    new = tuple(new)
    if tuple(tuple(s) for s in p.nsplits) != new:
        p = TensorRechunk([p], chunk_size=new).new_tensor(p.shape, p.dtype).data
        _tile([p], None)
    return p, cuts


def _covering(p: TensorData, cuts: list, offs: tuple, cshape: tuple, gshape: tuple, tshape: tuple):
    """The kernel argument of parameter ``p`` for the output chunk at ``offs``: the pieces
    covering the tiles the chunk overlaps, their grid and their start positions."""
    off = len(gshape) - p.ndim
    ranges, starts = [], []
    for a, c in enumerate(cuts):
        if c is None:
            ranges.append(range(1))
            starts.append(None)
            continue
        ax = a + off
        t = tshape[ax]
        lo = (offs[ax] // t) * t
        hi = min(int(gshape[ax]), -(-(offs[ax] + cshape[ax]) // t) * t)
        j0 = min(int(np.searchsorted(c, lo, side="right")) - 1, len(c) - 2)
        j1 = max(j0 + 1, int(np.searchsorted(c, hi, side="left")))  # one piece for an empty chunk
        ranges.append(range(j0, j1))
        starts.append(int(c[j0]))
    pieces = [p.chunk_at(idx) for idx in itertools.product(*ranges)]
    return pieces, tuple(len(r) for r in ranges), tuple(starts)


class TensorDistribution(TensorOperand):
    """A draw of distribution ``dist`` (a key of ``_SAMPLERS``); ``spec`` holds each
    parameter's constant value, or ``None`` for the next input tensor (broadcast against the
    output).  Chunks draw the tiles of :func:`_tile_shape` they overlap."""

    _op_name = "random-dist"

    def tile(self):
        out = self.output
        params = list(self.inputs)
        if any(has_unknown(s) for p in params for s in p.nsplits):
            yield from ensure_known(*params)
        shape = tuple(out.shape)
        pshape = broadcast_shape(*[p.shape for p in params]) if params else ()
        if has_unknown(shape):
            shape = pshape
        elif broadcast_shape(shape, pshape) != shape:
            raise ValueError(f"shape mismatch: parameters of shape {pshape} do not broadcast to size {shape}")
        shape = tuple(int(s) for s in shape)
        nsplits = None
        if self.chunk_size is None:  # follow a parameter of the output's shape
            nsplits = next((p.nsplits for p in params if tuple(p.shape) == shape), None)
        if nsplits is None:
            nsplits = normalize_chunk_size(shape, self.chunk_size, out.dtype.itemsize)
        tshape = _tile_shape(shape)
        cut = [_param_pieces(p, shape, nsplits, tshape) for p in params]
        chunks = []
        for idx in chunk_grid(nsplits):
            cshape = chunk_shape_at(nsplits, idx)
            offs = _chunk_offsets(nsplits, idx)
            pargs = [_covering(p, c, offs, cshape, shape, tshape) for p, c in cut]
            args = (cshape, offs, shape, tshape, self.key, self.dist, self.spec, out.dtype, *pargs)
            chunks.append(self.new_chunk(idx, cshape, _dist_kernel, args))
        return [(chunks, nsplits)]


class TensorRowDistribution(TensorOperand):
    """A draw whose last axis is one sample (dirichlet, multinomial, multivariate_normal):
    chunked, and tiled, along the leading axes only."""

    _op_name = "random-rows"

    def tile(self):
        out = self.output
        k = out.shape[-1]
        lead_shape = tuple(out.shape[:-1])
        lead = normalize_chunk_size(lead_shape, self.chunk_size, out.dtype.itemsize * max(1, k))
        nsplits = lead + ((k,),)
        tshape = _tile_shape(lead_shape, max(1, _TILE // max(1, k)))
        chunks = []
        for idx in chunk_grid(nsplits):
            cshape = chunk_shape_at(nsplits, idx)
            args = (cshape, _chunk_offsets(lead, idx[:-1]), lead_shape, tshape, self.key, self.dist, self.args,
                    out.dtype)
            chunks.append(self.new_chunk(idx, cshape, _rows_kernel, args))
        return [(chunks, nsplits)]



# ---- argument checks --------------------------------------------------------------------


def _size_shape(size) -> tuple:
    if size is None:
        return ()
    if isinstance(size, numbers.Integral):
        size = (size,)
    try:
        shape = tuple(operator.index(s) for s in size)
    except TypeError:
        raise TypeError(f"size must be an int or a tuple of ints, got {size!r}") from None
    if any(s < 0 for s in shape):
        raise ValueError(f"negative dimensions are not allowed: {shape}")
    return shape


def _float_dtype(dtype):
    dtype = np.dtype(np.float64 if dtype is None else dtype)
    if dtype not in (np.float64, np.float32):
        raise TypeError(f"Unsupported dtype {dtype} for random floats (use float32 or float64)")
    return dtype


def _population(a):
    """``(n, pool)`` for choice/permutation: ``a`` an int, an array-like or a 1-d tensor."""
    if isinstance(a, Tensor):
        if a.ndim != 1:
            raise ValueError("a must be 1-dimensional")
        return a.shape[0], a
    if isinstance(a, numbers.Integral) or (isinstance(a, np.ndarray) and a.ndim == 0 and a.dtype.kind in "iu"):
        return int(a), None
    arr = np.asarray(a)
    if arr.ndim != 1:
        raise ValueError("a must be 1-dimensional or an integer")
    return len(arr), arr


def _check_p(p, n):
    if p is None:
        return None
    p = np.asarray(p, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError("p must be 1-dimensional")
    if len(p) != n:
        raise ValueError("a and p must have same size")
    if np.any(p < 0) or not np.all(np.isfinite(p)):
        raise ValueError("probabilities are not non-negative")
    if abs(p.sum() - 1.0) > math.sqrt(np.finfo(np.float64).eps):
        raise ValueError("probabilities do not sum to 1")
    return p


# ---- RandomState ----------------------------------------------------------------------------


def _no_gpu(gpu) -> None:
    if gpu:
        raise NotImplementedError("gpu=True: Mars's GPU (CuPy) backend is not supported by mars_dask")


def _leading_chunk_size(chunk_size, ndim_lead):
    """Mars chunks row distributions along the leading axes only; a chunk size given for
    every axis (trailing one included) is accepted too."""
    if isinstance(chunk_size, (tuple, list)) and len(chunk_size) == ndim_lead + 1:
        return tuple(chunk_size[:-1])
    return chunk_size


class RandomState:
    """numpy's ``RandomState`` API over lazy tensors.  Each call takes one fresh 64-bit key
    from a numpy generator seeded with ``seed``; values depend only on that key and the
    element positions, never on ``chunk_size``."""

    def __init__(self, seed=None):
        self.seed(seed)

    def seed(self, seed=None) -> None:
        if isinstance(seed, float) or isinstance(seed, str):
            raise TypeError(f"seed must be an int, a sequence of ints or None, got {seed!r}")
        self._seeded = seed is not None
        self._gen = np.random.Generator(np.random.PCG64(seed))

    def _next_key(self) -> int:
        return int(self._gen.integers(0, 1 << 64, dtype=np.uint64))

    def _new(self, op: TensorOperand, shape, dtype) -> Tensor:
        key = None if self._seeded else random_key(op._op_name)
        return op.new_tensor(shape, dtype, key=key)

    def _draw(self, dist, shape, dtype, chunk_size, args=(), draw_dtype=None, pool=None) -> Tensor:
        dtype = np.dtype(dtype)
        normalize_chunk_size(shape, chunk_size, dtype.itemsize)  # validate now
        inputs = [pool.data] if isinstance(pool, Tensor) else []
        op = TensorRandom(inputs, dist=dist, args=args, key=self._next_key(), shape=shape, chunk_size=chunk_size,
                          draw_dtype=np.dtype(draw_dtype or dtype),
                          pool=pool if isinstance(pool, np.ndarray) else None)
        return self._new(op, shape, dtype)

    def _dist(self, dist, params, size, chunk_size, gpu, dtype) -> Tensor:
        """A draw of ``dist`` with parameters ``params`` (scalars, array-likes or tensors,
        broadcast against ``size``), checked now where their values are known."""
        _no_gpu(gpu)
        spec, tensors, known = [], [], {}
        for i, p in enumerate(params):
            if not isinstance(p, Tensor):
                arr = np.asarray(p)
                if arr.dtype.kind not in "biuf":
                    raise TypeError(f"{dist}: parameters must be real numbers, got {arr.dtype}")
                known[i] = arr
                if arr.ndim == 0:
                    spec.append(arr.item())
                    continue
                p = astensor(arr)
            elif p.dtype.kind not in "biuf":
                raise TypeError(f"{dist}: parameters must be real numbers, got {p.dtype}")
            spec.append(None)
            tensors.append(p)
        for idx, bad, msg in _CHECKS.get(dist, ()):
            if all(i in known for i in idx) and bad(*(known[i] for i in idx)):
                raise ValueError(msg)
        pshape = broadcast_shape(*[t.shape for t in tensors]) if tensors else ()
        if size is None:
            shape = pshape
        else:
            shape = _size_shape(size)
            if broadcast_shape(shape, pshape) != shape:
                raise ValueError(
                    f"shape mismatch: objects cannot be broadcast to a single shape: parameters of "
                    f"shape {pshape} against size {shape}")
        dtype = np.dtype(_SAMPLERS[dist][1] if dtype is None else dtype)
        if not has_unknown(shape):
            normalize_chunk_size(shape, chunk_size, dtype.itemsize)  # validate now
        op = TensorDistribution([t.data for t in tensors], dist=dist, spec=tuple(spec), key=self._next_key(),
                                chunk_size=chunk_size)
        return self._new(op, shape, dtype)

    def _rows(self, dist, args, size, k, chunk_size, gpu, dtype) -> Tensor:
        _no_gpu(gpu)
        lead = _size_shape(size)
        dtype = np.dtype(_ROW_SAMPLERS[dist][1] if dtype is None else dtype)
        chunk_size = _leading_chunk_size(chunk_size, len(lead))
        normalize_chunk_size(lead, chunk_size, dtype.itemsize * max(1, k))  # validate now
        op = TensorRowDistribution([], dist=dist, args=args, key=self._next_key(), chunk_size=chunk_size)
        return self._new(op, lead + (k,), dtype)

    # -- floats --
    def random_sample(self, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        """Uniform floats in [0, 1)."""
        _no_gpu(gpu)
        dtype = _float_dtype(dtype)
        return self._draw("uniform", _size_shape(size), dtype, chunk_size)

    random = ranf = sample = random_sample

    def rand(self, *dn, **kw) -> Tensor:
        """Uniform [0, 1) of shape ``dn`` (``rand(3, 4)``)."""
        if len(dn) == 1 and isinstance(dn[0], (tuple, list)):
            dn = tuple(dn[0])
        return self.random_sample(dn, **kw)

    def standard_normal(self, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        _no_gpu(gpu)
        dtype = _float_dtype(dtype)
        return self._draw("normal", _size_shape(size), dtype, chunk_size)

    def randn(self, *dn, **kw) -> Tensor:
        if len(dn) == 1 and isinstance(dn[0], (tuple, list)):
            dn = tuple(dn[0])
        return self.standard_normal(dn, **kw)

    def uniform(self, low=0.0, high=1.0, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        """``low + (high - low) * random_sample()``; array/tensor bounds broadcast."""
        _no_gpu(gpu)
        return self._affine("uniform", low, high, size, chunk_size, dtype)

    def normal(self, loc=0.0, scale=1.0, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        _no_gpu(gpu)
        if not isinstance(scale, Tensor) and _nan_lt(scale, 0):
            raise ValueError("scale < 0")
        return self._affine("normal", loc, scale, size, chunk_size, dtype)

    def _affine(self, dist, a, b, size, chunk_size, dtype) -> Tensor:
        """A standard draw shifted/scaled by the parameters (``uniform``: ``a + (b-a)*u``,
        ``normal``: ``a + b*z``).  Scalars are folded into the kernel; arrays and tensors
        go through element-wise arithmetic (and broadcasting) afterwards."""
        dtype = _float_dtype(dtype)
        if is_scalar_like(a) and is_scalar_like(b):
            shape = _size_shape(size)
            a, b = float(a), float(b)
            t = self._draw(dist, shape, dtype, chunk_size)
            if (a, b) == (0.0, 1.0):
                return t
            scale = b - a if dist == "uniform" else b
            return cast(t * scale + a, dtype)
        ta, tb = astensor(a), astensor(b)
        pshape = broadcast_shape(ta.shape, tb.shape)
        shape = pshape if size is None else _size_shape(size)
        if broadcast_shape(shape, pshape) != tuple(shape):
            raise ValueError(f"shape mismatch: parameters of shape {pshape} do not broadcast to size {shape}")
        t = self._draw(dist, shape, dtype, chunk_size)
        scale = tb - ta if dist == "uniform" else tb
        return cast(t * scale + ta, dtype)

    def standard_exponential(self, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        return self._dist("standard_exponential", (), size, chunk_size, gpu, dtype)

    def exponential(self, scale=1.0, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        return self._dist("exponential", (scale,), size, chunk_size, gpu, dtype)

    def standard_gamma(self, shape, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        return self._dist("standard_gamma", (shape,), size, chunk_size, gpu, dtype)

    def gamma(self, shape, scale=1.0, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        return self._dist("gamma", (shape, scale), size, chunk_size, gpu, dtype)

    def beta(self, a, b, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        return self._dist("beta", (a, b), size, chunk_size, gpu, dtype)

    def chisquare(self, df, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        return self._dist("chisquare", (df,), size, chunk_size, gpu, dtype)

    def noncentral_chisquare(self, df, nonc, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        return self._dist("noncentral_chisquare", (df, nonc), size, chunk_size, gpu, dtype)

    def f(self, dfnum, dfden, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        return self._dist("f", (dfnum, dfden), size, chunk_size, gpu, dtype)

    def noncentral_f(self, dfnum, dfden, nonc, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        return self._dist("noncentral_f", (dfnum, dfden, nonc), size, chunk_size, gpu, dtype)

    def standard_t(self, df, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        return self._dist("standard_t", (df,), size, chunk_size, gpu, dtype)

    def standard_cauchy(self, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        return self._dist("standard_cauchy", (), size, chunk_size, gpu, dtype)

    def gumbel(self, loc=0.0, scale=1.0, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        return self._dist("gumbel", (loc, scale), size, chunk_size, gpu, dtype)

    def laplace(self, loc=0.0, scale=1.0, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        return self._dist("laplace", (loc, scale), size, chunk_size, gpu, dtype)

    def logistic(self, loc=0.0, scale=1.0, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        return self._dist("logistic", (loc, scale), size, chunk_size, gpu, dtype)

    def lognormal(self, mean=0.0, sigma=1.0, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        return self._dist("lognormal", (mean, sigma), size, chunk_size, gpu, dtype)

    def pareto(self, a, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        return self._dist("pareto", (a,), size, chunk_size, gpu, dtype)

    def power(self, a, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        return self._dist("power", (a,), size, chunk_size, gpu, dtype)

    def rayleigh(self, scale=1.0, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        return self._dist("rayleigh", (scale,), size, chunk_size, gpu, dtype)

    def weibull(self, a, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        return self._dist("weibull", (a,), size, chunk_size, gpu, dtype)

    def triangular(self, left, mode, right, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        return self._dist("triangular", (left, mode, right), size, chunk_size, gpu, dtype)

    def vonmises(self, mu, kappa, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        return self._dist("vonmises", (mu, kappa), size, chunk_size, gpu, dtype)

    def wald(self, mean, scale, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        return self._dist("wald", (mean, scale), size, chunk_size, gpu, dtype)

    # -- discrete --
    def poisson(self, lam=1.0, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        return self._dist("poisson", (lam,), size, chunk_size, gpu, dtype)

    def binomial(self, n, p, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        return self._dist("binomial", (n, p), size, chunk_size, gpu, dtype)

    def negative_binomial(self, n, p, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        return self._dist("negative_binomial", (n, p), size, chunk_size, gpu, dtype)

    def geometric(self, p, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        return self._dist("geometric", (p,), size, chunk_size, gpu, dtype)

    def hypergeometric(self, ngood, nbad, nsample, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        return self._dist("hypergeometric", (ngood, nbad, nsample), size, chunk_size, gpu, dtype)

    def logseries(self, p, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        return self._dist("logseries", (p,), size, chunk_size, gpu, dtype)

    def zipf(self, a, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        return self._dist("zipf", (a,), size, chunk_size, gpu, dtype)

    # -- with a trailing sample axis --
    def dirichlet(self, alpha, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        """Samples of shape ``size + (len(alpha),)``, chunked along ``size``'s axes."""
        if isinstance(alpha, numbers.Number):
            raise TypeError("`alpha` should be an array")
        alpha = np.asarray(alpha, dtype=np.float64)
        if alpha.ndim != 1:
            raise ValueError("alpha must be a 1-dimensional sequence")
        if _nan_le(alpha, 0):
            raise ValueError("alpha <= 0")
        return self._rows("dirichlet", (alpha,), size, len(alpha), chunk_size, gpu, dtype)

    def multinomial(self, n, pvals, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        """Counts of shape ``size + (len(pvals),)``, chunked along ``size``'s axes."""
        n = operator.index(n)
        if n < 0:
            raise ValueError("n < 0")
        pvals = np.asarray(pvals, dtype=np.float64)
        if pvals.ndim != 1:
            raise ValueError("pvals must be a 1-d sequence")
        if _not((pvals >= 0) & (pvals <= 1)):
            raise ValueError("pvals < 0, pvals > 1 or pvals contains NaNs")
        if pvals[:-1].sum() > 1.0 + 1e-12:
            raise ValueError("sum(pvals[:-1]) > 1.0")
        return self._rows("multinomial", (n, pvals), size, len(pvals), chunk_size, gpu, dtype)

    def multivariate_normal(self, mean, cov, size=None, check_valid=None, tol=None, chunk_size=None, gpu=None,
                            dtype=None) -> Tensor:
        """Samples of shape ``size + (len(mean),)`` (numpy's SVD factor of ``cov``), chunked
        along ``size``'s axes."""
        mean = np.asarray(mean, dtype=np.float64)
        cov = np.asarray(cov, dtype=np.float64)
        if mean.ndim != 1:
            raise ValueError("mean must be 1 dimensional")
        if cov.ndim != 2 or cov.shape[0] != cov.shape[1]:
            raise ValueError("cov must be 2 dimensional and square")
        if mean.shape[0] != cov.shape[0]:
            raise ValueError("mean and cov must have same length")
        check_valid = "warn" if check_valid is None else check_valid
        tol = 1e-8 if tol is None else tol
        _u, s, v = np.linalg.svd(cov)
        if check_valid != "ignore":
            if check_valid not in ("warn", "raise"):
                raise ValueError("check_valid must equal 'warn', 'raise', or 'ignore'")
            if not np.allclose(np.dot(v.T * s, v), cov, rtol=tol, atol=tol):
                if check_valid == "warn":
                    warnings.warn("covariance is not symmetric positive-semidefinite.", RuntimeWarning, stacklevel=2)
                else:
                    raise ValueError("covariance is not symmetric positive-semidefinite.")
        factor = np.sqrt(s)[:, None] * v
        return self._rows("multivariate_normal", (mean, factor), size, len(mean), chunk_size, gpu, dtype)

    # -- integers --
    def randint(self, low, high=None, size=None, dtype=int, chunk_size=None, density=None, gpu=None) -> Tensor:
        """Integers in ``[low, high)`` (``[0, low)`` without ``high``)."""
        _no_gpu(gpu)
        dtype = np.dtype(dtype)
        if dtype.kind not in "biu":
            raise TypeError(f"Unsupported dtype {dtype} for randint")
        if not (is_scalar_like(low) and (high is None or is_scalar_like(high))):
            raise NotImplementedError("randint supports scalar low/high only (as Mars)")
        if high is None:
            low, high = 0, low
        low, high = operator.index(low), operator.index(high)
        info = np.iinfo(dtype) if dtype.kind != "b" else None
        lo_min, hi_max = (0, 2) if info is None else (info.min, info.max + 1)
        if low < lo_min:
            raise ValueError(f"low is out of bounds for {dtype}")
        if high > hi_max:
            raise ValueError(f"high is out of bounds for {dtype}")
        if low >= high:
            raise ValueError("low >= high")
        return self._draw("randint", _size_shape(size), dtype, chunk_size, args=(low, high - low))

    def random_integers(self, low, high=None, size=None, chunk_size=None, gpu=None) -> Tensor:
        """Integers in ``[low, high]`` (``[1, low]`` without ``high``), numpy's int."""
        if high is None:
            low, high = 1, low
        if not (is_scalar_like(low) and is_scalar_like(high)):
            raise NotImplementedError("random_integers supports scalar low/high only (as Mars)")
        return self.randint(low, operator.index(high) + 1, size=size, dtype=int, chunk_size=chunk_size, gpu=gpu)

    def bytes(self, length) -> bytes:
        """``length`` random bytes (computed now, as in Mars)."""
        return self._gen.bytes(length)

    # -- choice and permutations --
    def choice(self, a, size=None, replace=True, p=None, chunk_size=None, gpu=None) -> Tensor:
        """Samples from ``a`` (an int n for ``range(n)``, an array-like or a 1-d tensor)."""
        _no_gpu(gpu)
        n, pool = _population(a)
        shape = _size_shape(size)
        m = prod(shape)
        if isinstance(n, float):
            raise ValueError("choice needs a population of known size; execute() it first")
        if n < 0 or (n == 0 and m > 0):
            raise ValueError("a cannot be empty unless no samples are taken")
        p = _check_p(p, n)
        dtype = np.dtype(np.int64) if pool is None else pool.dtype
        normalize_chunk_size(shape, chunk_size, dtype.itemsize)
        if replace:
            if p is None:
                return self._draw("randint", shape, dtype, chunk_size, args=(0, n), draw_dtype=np.int64, pool=pool)
            cdf = np.cumsum(p)
            cdf /= cdf[-1]
            return self._draw("cdf_index", shape, dtype, chunk_size, args=(cdf,), draw_dtype=np.int64, pool=pool)
        if m > n:
            raise ValueError("Cannot take a larger sample than population when 'replace=False'")
        if p is not None and np.count_nonzero(p) < m:
            raise ValueError("Fewer non-zero entries in p than size")
        inputs = [pool.data] if isinstance(pool, Tensor) else []
        op = TensorSelection(inputs, n=n, p=p, key=self._next_key(), shape=shape, chunk_size=chunk_size, gather=False,
                             pool=pool if isinstance(pool, np.ndarray) else None)
        return self._new(op, shape, dtype)

    def permutation(self, x, axis=0, chunk_size=None) -> Tensor:
        """A permuted ``range(x)`` (int ``x``) or a copy of ``x`` permuted along ``axis``."""
        if isinstance(x, numbers.Integral):
            validate_axis(1, axis)
            if x < 0:
                raise ValueError(f"negative dimensions are not allowed: {x}")
            shape = (int(x),)
            normalize_chunk_size(shape, chunk_size, 8)
            op = TensorSelection([], n=int(x), p=None, key=self._next_key(), shape=shape, chunk_size=chunk_size,
                                 gather=False, pool=None)
            return self._new(op, shape, np.int64)
        x = astensor(x, chunk_size=chunk_size)
        if x.ndim == 0:
            raise np.exceptions.AxisError("x must be an integer or at least 1-dimensional")
        axis = validate_axis(x.ndim, axis)
        if axis:
            from .manipulation import swapaxes

            return swapaxes(self.permutation(swapaxes(x, 0, axis)), 0, axis)
        op = TensorSelection([x.data], n=None, p=None, key=self._next_key(), chunk_size=None,
                             gather=True, pool=None)
        return self._new(op, x.shape, x.dtype)

    def shuffle(self, x, axis=0) -> None:
        """Shuffle ``x`` along ``axis`` in place: a tensor's handle gets the shuffled data (as
        Mars); a numpy array or a list is shuffled now (as numpy)."""
        if isinstance(x, Tensor):
            x.data = self.permutation(x, axis=axis).data
        elif isinstance(x, np.ndarray):
            x[...] = self.permutation(x, axis=axis).to_numpy()
        elif isinstance(x, list):
            validate_axis(1, axis)
            order = self.permutation(len(x)).to_numpy()
            x[:] = [x[i] for i in order]
        else:
            raise TypeError("x should be list, numpy ndarray or tensor")


_global_state = RandomState()


def _bind(name):
    def func(*args, **kwargs):
        return getattr(_global_state, name)(*args, **kwargs)

    func.__name__ = func.__qualname__ = name
    func.__doc__ = getattr(RandomState, name).__doc__
    return func


seed = _bind("seed")
rand = _bind("rand")
randn = _bind("randn")
randint = _bind("randint")
random_integers = _bind("random_integers")
random_sample = _bind("random_sample")
random = _bind("random_sample")
ranf = _bind("random_sample")
sample = _bind("random_sample")
choice = _bind("choice")
bytes = _bind("bytes")  # noqa: A001 - numpy's name
permutation = _bind("permutation")
shuffle = _bind("shuffle")
beta = _bind("beta")
binomial = _bind("binomial")
chisquare = _bind("chisquare")
dirichlet = _bind("dirichlet")
exponential = _bind("exponential")
f = _bind("f")
gamma = _bind("gamma")
geometric = _bind("geometric")
gumbel = _bind("gumbel")
hypergeometric = _bind("hypergeometric")
laplace = _bind("laplace")
logistic = _bind("logistic")
lognormal = _bind("lognormal")
logseries = _bind("logseries")
multinomial = _bind("multinomial")
multivariate_normal = _bind("multivariate_normal")
negative_binomial = _bind("negative_binomial")
noncentral_chisquare = _bind("noncentral_chisquare")
noncentral_f = _bind("noncentral_f")
normal = _bind("normal")
pareto = _bind("pareto")
poisson = _bind("poisson")
power = _bind("power")
rayleigh = _bind("rayleigh")
standard_cauchy = _bind("standard_cauchy")
standard_exponential = _bind("standard_exponential")
standard_gamma = _bind("standard_gamma")
standard_normal = _bind("standard_normal")
standard_t = _bind("standard_t")
triangular = _bind("triangular")
uniform = _bind("uniform")
vonmises = _bind("vonmises")
wald = _bind("wald")
weibull = _bind("weibull")
zipf = _bind("zipf")
