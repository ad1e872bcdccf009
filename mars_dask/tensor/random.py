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

The other distributions (``gamma``, ``poisson``, ``binomial``, ...) transform an element's own
uniform streams with numpy's algorithms; rejection methods redraw a rejected element from
streams numbered by the attempt, so values stay a function of ``(key, position, parameters)``
and do not follow numpy's own stream (their distribution does).  Parameters may be scalars,
arrays or tensors broadcast against ``size``.  ``dirichlet``, ``multinomial`` and
``multivariate_normal`` add a trailing sample axis, chunked as one piece.
"""

from __future__ import annotations

import functools
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


# ---- per-element samplers -----------------------------------------------------------------
#
# A sampler maps a block of elements (their raw counters, as a ``_Src``) and the block's
# parameters (arrays of the block's length) to the block's values.  An element draws from its
# own streams only, and a rejection loop redraws a rejected element from streams numbered by
# the attempt: an element's value never depends on the other elements of its chunk, so the
# values do not depend on the chunking.  The algorithms are numpy's (legacy RandomState) where
# they are per-element already; inversion replaces numpy's sequential search loops.


@functools.lru_cache(maxsize=4096)
def _offset(ids: tuple) -> int:
    """Key offset of the stream named by the tuple of small ints ``ids``."""
    h = 0x243F6A8885A308D3  # a base apart from _STREAMS'
    for s in ids:
        h = _splitmix_scalar(h + (s + 1) * _GAMMA)
    return h


class _Src:
    """Independent uniform streams for a block of elements with raw counters ``x``."""

    __slots__ = ("x",)

    def __init__(self, x: np.ndarray):
        self.x = x

    def __len__(self) -> int:
        return self.x.size

    def sub(self, idx) -> _Src:
        """The streams of elements ``idx`` only."""
        return _Src(self.x[idx])

    def derive(self, *ids) -> _Src:
        """A whole new family of streams (for a sampler used inside another)."""
        return _Src(self.x + np.uint64(_offset(ids)))

    def bits(self, *ids) -> np.ndarray:
        y = self.x + np.uint64(_offset(ids))
        return _mix(y, np.empty_like(y))

    def u(self, *ids) -> np.ndarray:
        """Uniform in [0, 1), 53 bits."""
        return (self.bits(*ids) >> _S11).view(np.int64) * 2.0**-53

    def uo(self, *ids) -> np.ndarray:
        """Uniform in (0, 1): never 0 nor 1, so logs and ratios stay finite."""
        return ((self.bits(*ids) >> _S11).view(np.int64) + 0.5) * 2.0**-53

    def z(self, *ids) -> np.ndarray:
        """Standard normal (Box-Muller)."""
        return np.sqrt(-2.0 * np.log(self.uo(*ids, 0))) * np.cos(2.0 * np.pi * self.u(*ids, 1))

    def e(self, *ids) -> np.ndarray:
        """Standard exponential."""
        return -np.log(self.uo(*ids))


_MAX_ATTEMPTS = 1 << 20


def _reject(src: _Src, attempt, dtype=np.float64) -> np.ndarray:
    """Rejection sampling, element by element: ``attempt(idx, sub_src, a)`` proposes values
    for elements ``idx`` on attempt ``a`` and says which it accepts; the others try again."""
    out = np.empty(len(src), dtype=dtype)
    idx = np.arange(len(src))
    a = 0
    with np.errstate(all="ignore"):
        while idx.size:
            if a >= _MAX_ATTEMPTS:  # pragma: no cover - parameters are checked beforehand
                raise RuntimeError("random sampling did not converge")
            vals, ok = attempt(idx, src.sub(idx), a)
            out[idx[ok]] = vals[ok]
            idx = idx[~ok]
            a += 1
    return out


def _where(mask, src: _Src, *params):
    """Indices of ``mask`` with the matching streams and parameters."""
    idx = np.flatnonzero(mask)
    return idx, src.sub(idx), [p[idx] for p in params]


def _gammaln(x):
    from scipy.special import gammaln

    return gammaln(x)


# -- continuous --


def _marsaglia_tsang(src: _Src, k: np.ndarray) -> np.ndarray:
    """Standard gamma draws for finite shapes ``k >= 1``."""
    d = k - 1.0 / 3.0
    c = 1.0 / np.sqrt(9.0 * d)

    def attempt(idx, s, a):
        di, ci = d[idx], c[idx]
        z = s.z(a, 0)
        v = 1.0 + ci * z
        ok = v > 0
        v = v * v * v
        ok &= np.log(s.uo(a, 1)) < 0.5 * z * z + di - di * v + di * np.log(v)
        return di * v, ok

    return _reject(src, attempt)


def _log_std_gamma(src: _Src, k) -> np.ndarray:
    """``log`` of standard gamma draws; in logs, shapes far below 1 (whose draws underflow
    to 0) still give exact ratios (beta, dirichlet)."""
    k = np.broadcast_to(np.asarray(k, dtype=np.float64), (len(src),))
    with np.errstate(invalid="ignore"):
        out = np.where(k == 0, -np.inf, np.where(np.isfinite(k) & (k >= 0), 0.0, k))
    with np.errstate(invalid="ignore"):
        pos = np.isfinite(k) & (k > 0)
    idx, s, (kk,) = _where(pos, src, k)
    if idx.size:
        small = kk < 1
        lg = np.log(_marsaglia_tsang(s.derive(1), np.where(small, kk + 1.0, kk)))
        lg[small] += np.log(s.sub(small).uo(2)) / kk[small]  # G(k) = G(k + 1) * U**(1/k)
        out[idx] = lg
    return out


def _std_gamma(src, k):
    return np.exp(_log_std_gamma(src, k))


def _std_exponential(src):
    return src.e(0)


def _exponential(src, scale):
    return scale * src.e(0)


def _gamma(src, shape, scale):
    return _std_gamma(src, shape) * scale


def _beta(src, a, b):
    lx = _log_std_gamma(src.derive(1), a)
    ly = _log_std_gamma(src.derive(2), b)
    with np.errstate(over="ignore", invalid="ignore"):
        return 1.0 / (1.0 + np.exp(ly - lx))


def _chisquare(src, df):
    return 2.0 * _std_gamma(src, np.asarray(df, dtype=np.float64) / 2.0)


def _f(src, dfnum, dfden):
    return (_chisquare(src.derive(1), dfnum) / dfnum) / (_chisquare(src.derive(2), dfden) / dfden)


def _standard_t(src, df):
    g = _std_gamma(src.derive(2), np.asarray(df, dtype=np.float64) / 2.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sqrt(df / 2.0) * src.z(1) / np.sqrt(g)


def _standard_cauchy(src):
    return np.tan(np.pi * (src.uo(0) - 0.5))


def _gumbel(src, loc, scale):
    return loc - scale * np.log(src.e(0))


def _laplace(src, loc, scale):
    u = src.uo(0)
    return np.where(u < 0.5, loc + scale * np.log(2.0 * u), loc - scale * np.log(2.0 - 2.0 * u))


def _logistic(src, loc, scale):
    u = src.uo(0)
    return loc + scale * np.log(u / (1.0 - u))


def _lognormal(src, mean, sigma):
    return np.exp(mean + sigma * src.z(0))


def _pareto(src, a):
    return np.expm1(src.e(0) / a)


def _power(src, a):
    return np.power(-np.expm1(-src.e(0)), 1.0 / a)


def _rayleigh(src, scale):
    return scale * np.sqrt(2.0 * src.e(0))


def _weibull(src, a):
    with np.errstate(divide="ignore"):
        return np.where(a == 0, 0.0, np.power(src.e(0), 1.0 / a))


def _triangular(src, left, mode, right):
    base = right - left
    ratio = (mode - left) / base
    u = src.u(0)
    return np.where(u <= ratio, left + np.sqrt(u * (mode - left) * base),
                    right - np.sqrt((1.0 - u) * (right - mode) * base))


def _wald(src, mean, scale):
    y = src.z(0)
    y = mean * y * y
    x = mean + mean / (2.0 * scale) * (y - np.sqrt(4.0 * scale * y + y * y))
    return np.where(src.u(1) <= mean / (mean + x), x, mean * mean / x)


def _vonmises(src, mu, kappa):
    """Best-Fisher rejection (numpy's), a wrapped normal for kappa > 1e6, and a uniform
    angle (ignoring ``mu``, as numpy) for kappa < 1e-8."""
    n = len(src)
    mu = np.broadcast_to(mu, (n,))
    kappa = np.broadcast_to(kappa, (n,))
    out = np.full(n, np.nan)
    with np.errstate(invalid="ignore"):
        tiny, huge = kappa < 1e-8, kappa > 1e6
        mid = ~tiny & ~huge & ~np.isnan(kappa)
    out[tiny] = np.pi * (2.0 * src.sub(tiny).u(0) - 1.0)
    idx, s, (m, k) = _where(huge, src, mu, kappa)
    r = m + np.sqrt(1.0 / k) * s.z(1)
    out[idx] = np.where(r < -np.pi, r + 2 * np.pi, np.where(r > np.pi, r - 2 * np.pi, r))
    idx, s, (m, k) = _where(mid, src, mu, kappa)
    if idx.size:
        with np.errstate(divide="ignore", invalid="ignore"):
            r = 1.0 + np.sqrt(1.0 + 4.0 * k * k)
            rho = (r - np.sqrt(2.0 * r)) / (2.0 * k)
            sp = np.where(k < 1e-5, 1.0 / k + k, (1.0 + rho * rho) / (2.0 * rho))

        def attempt(i, ss, a):
            z = np.cos(np.pi * ss.u(a, 0))
            w = (1.0 + sp[i] * z) / (sp[i] + z)
            y = k[i] * (sp[i] - w)
            v = ss.u(a, 1)
            return w, (y * (2.0 - y) - v >= 0) | (np.log(y / v) + 1.0 - y >= 0)

        w = _reject(s.derive(3), attempt)
        res = np.arccos(w)
        res = np.where(s.u(4) < 0.5, -res, res) + m
        mod = np.fmod(np.abs(res) + np.pi, 2.0 * np.pi) - np.pi
        out[idx] = np.where(res < 0, -mod, mod)
    return out


def _noncentral_chisquare(src, df, nonc):
    n = len(src)
    df = np.broadcast_to(np.asarray(df, dtype=np.float64), (n,))
    nonc = np.broadcast_to(np.asarray(nonc, dtype=np.float64), (n,))
    out = np.empty(n)
    with np.errstate(invalid="ignore"):
        central = nonc == 0
        big = ~central & (df > 1)
        small = ~central & ~big
    idx, s, (d,) = _where(central, src, df)
    out[idx] = _chisquare(s.derive(1), d)
    idx, s, (d, nc) = _where(big, src, df, nonc)
    out[idx] = _chisquare(s.derive(2), d - 1.0) + (s.z(3) + np.sqrt(nc)) ** 2
    idx, s, (d, nc) = _where(small, src, df, nonc)
    if idx.size:
        i = _poisson(s.derive(4), nc / 2.0)
        out[idx] = _chisquare(s.derive(5), d + 2.0 * i)
    return out


def _noncentral_f(src, dfnum, dfden, nonc):
    t = _noncentral_chisquare(src.derive(1), dfnum, nonc) * dfden
    return t / (_chisquare(src.derive(2), dfden) * dfnum)


# -- discrete --

_INT64_MIN = np.iinfo(np.int64).min
_POISSON_LAM_MAX = np.iinfo(np.int64).max - np.sqrt(np.iinfo(np.int64).max) * 10


def _poisson(src, lam):
    """Inversion for lam < 10, Hormann's PTRS above (numpy's)."""
    n = len(src)
    lam = np.broadcast_to(np.asarray(lam, dtype=np.float64), (n,))
    out = np.zeros(n, dtype=np.int64)
    with np.errstate(invalid="ignore"):
        bad = ~(lam <= _POISSON_LAM_MAX)  # nan too: numpy's cast of nan
        small = (lam > 0) & (lam < 10)
        big = ~bad & (lam >= 10)
    out[bad] = _INT64_MIN
    idx, s, (lm,) = _where(small, src, lam)
    if idx.size:
        u = s.u(0)
        x = np.zeros(idx.size, dtype=np.int64)
        p = np.exp(-lm)
        cdf = p.copy()
        act = np.flatnonzero(u > cdf)
        j = 0
        while act.size and j < 400:  # P(X > 400 | lam < 10) is far below 2**-53
            j += 1
            x[act] = j
            p[act] *= lm[act] / j
            cdf[act] += p[act]
            act = act[u[act] > cdf[act]]
        out[idx] = x
    idx, s, (lm,) = _where(big, src, lam)
    if idx.size:
        out[idx] = _ptrs(s.derive(1), lm)
    return out


def _ptrs(src, lam):
    slam, loglam = np.sqrt(lam), np.log(lam)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    invalpha = 1.1239 + 1.1328 / (b - 3.4)
    vr = 0.9277 - 3.6224 / (b - 2)

    def attempt(idx, s, t):
        u = s.u(t, 0) - 0.5
        v = s.u(t, 1)
        us = 0.5 - np.abs(u)
        ai, bi = a[idx], b[idx]
        k = np.floor((2 * ai / us + bi) * u + lam[idx] + 0.43)
        ok = (us >= 0.07) & (v <= vr[idx])
        rest = ~ok & (k >= 0) & ~((us < 0.013) & (v > us))
        lhs = np.log(v) + np.log(invalpha[idx]) - np.log(ai / (us * us) + bi)
        rhs = -lam[idx] + k * loglam[idx] - _gammaln(k + 1)
        return k, ok | (rest & (lhs <= rhs))

    return _reject(src, attempt).astype(np.int64)


def _binomial(src, n, p):
    """Inversion for n*min(p, 1-p) < 10, Hormann's BTRS above."""
    size = len(src)
    n = np.broadcast_to(np.asarray(n).astype(np.int64), (size,))
    p = np.broadcast_to(np.asarray(p, dtype=np.float64), (size,))
    flip = p > 0.5
    pp = np.where(flip, 1.0 - p, p)
    nf = n.astype(np.float64)
    mean = nf * pp
    out = np.zeros(size, dtype=np.int64)
    live = (n > 0) & (pp > 0)
    idx, s, (ni, pi, mi) = _where(live & (mean < 10), src, nf, pp, mean)
    if idx.size:
        qi = 1.0 - pi
        qn = np.exp(ni * np.log(qi))
        bound = np.minimum(ni, mi + 10.0 * np.sqrt(mi * qi + 1.0))

        def attempt(i, ss, a):
            u = ss.u(a)
            x = np.zeros(i.size)
            px = qn[i].copy()
            ok = np.ones(i.size, dtype=bool)
            act = np.flatnonzero(u > px)
            j = 0
            while act.size:
                j += 1
                x[act] = j
                over = j > bound[i[act]]
                ok[act[over]] = False
                act = act[~over]
                u[act] -= px[act]
                ia = i[act]
                px[act] = (ni[ia] - j + 1) * pi[ia] * px[act] / (j * qi[ia])
                act = act[u[act] > px[act]]
            return x, ok

        out[idx] = _reject(s.derive(1), attempt)
    idx, s, (ni, pi) = _where(live & (mean >= 10), src, nf, pp)
    if idx.size:
        out[idx] = _btrs(s.derive(2), ni, pi)
    return np.where(flip, n - out, out)


def _btrs(src, n, p):
    q = 1.0 - p
    spq = np.sqrt(n * p * q)
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * p
    c = n * p + 0.5
    vr = 0.92 - 4.2 / b
    alpha = (2.83 + 5.1 / b) * spq
    lpq = np.log(p / q)
    m = np.floor((n + 1) * p)
    h = _gammaln(m + 1) + _gammaln(n - m + 1)

    def attempt(idx, s, t):
        u = s.u(t, 0) - 0.5
        v = s.u(t, 1)
        us = 0.5 - np.abs(u)
        ai, bi, ni = a[idx], b[idx], n[idx]
        k = np.floor((2 * ai / us + bi) * u + c[idx])
        valid = (k >= 0) & (k <= ni)
        ok = valid & (us >= 0.07) & (v <= vr[idx])
        lv = np.log(v * alpha[idx] / (ai / (us * us) + bi))
        ub = h[idx] - _gammaln(k + 1) - _gammaln(ni - k + 1) + (k - m[idx]) * lpq[idx]
        return k, ok | (valid & (lv <= ub))

    return _reject(src, attempt).astype(np.int64)


def _negative_binomial(src, n, p):
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = _std_gamma(src.derive(1), n) * ((1.0 - p) / p)
    return _poisson(src.derive(2), lam)


def _geometric(src, p):
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.ceil(np.log(src.uo(0)) / np.log1p(-p))
    x = np.where(p >= 1, 1.0, np.maximum(x, 1.0))
    return np.where(x >= 2.0**63, _INT64_MIN, x.astype(np.int64))  # numpy's overflow value


def _logseries(src, p):
    """Kemp's algorithm (numpy's)."""
    p = np.broadcast_to(np.asarray(p, dtype=np.float64), (len(src),))
    r = np.log1p(-p)

    def attempt(idx, s, a):
        v = s.u(a, 0)
        pi = p[idx]
        q = -np.expm1(r[idx] * s.u(a, 1))
        res = np.where(v >= pi, 1.0, np.where(v <= q * q, np.floor(1.0 + np.log(v) / np.log(q)),
                                              np.where(v >= q, 1.0, 2.0)))
        ok = (v >= pi) | (v > q * q) | ((res >= 1) & (v > 0))
        return res, ok

    return _reject(src, attempt).astype(np.int64)


def _zipf(src, a):
    """numpy's rejection algorithm."""
    a = np.broadcast_to(np.asarray(a, dtype=np.float64), (len(src),))
    am1 = a - 1.0
    b = np.power(2.0, am1)

    def attempt(idx, s, t):
        u = 1.0 - s.u(t, 0)
        v = s.u(t, 1)
        x = np.floor(np.power(u, -1.0 / am1[idx]))
        ok = (x < 2.0**63) & (x >= 1.0)
        tt = np.power(1.0 + 1.0 / x, am1[idx])
        ok &= v * x * (tt - 1.0) / (b[idx] - 1.0) <= tt / b[idx]
        return x, ok

    return _reject(src, attempt).astype(np.int64)


def _hypergeometric(src, good, bad, sample):
    """numpy's: an urn simulation for samples of at most 10, Stadlober's HRUA above."""
    size = len(src)
    good, bad, sample = (np.broadcast_to(np.asarray(v).astype(np.int64), (size,)).astype(np.float64)
                         for v in (good, bad, sample))
    out = np.zeros(size, dtype=np.int64)
    idx, s, (g, b, m) = _where(sample <= 10, src, good, bad, sample)
    if idx.size:
        d1 = b + g - m
        d2 = np.minimum(b, g)
        y = d2.copy()
        k = m.copy()
        act = np.flatnonzero((y > 0) & (k > 0))
        step = 0
        while act.size:
            y[act] -= np.floor(s.sub(act).u(0, step) + y[act] / (d1[act] + k[act]))
            k[act] -= 1
            act = act[(y[act] > 0) & (k[act] > 0)]
            step += 1
        z = d2 - y
        out[idx] = np.where(g > b, m - z, z)
    idx, s, (g, b, m) = _where(sample > 10, src, good, bad, sample)
    if idx.size:
        out[idx] = _hrua(s.derive(1), g, b, m)
    return out


def _hrua(src, good, bad, sample):
    d1c, d2c = 1.7155277699214135, 0.8989161620588988
    mingb = np.minimum(good, bad)
    maxgb = np.maximum(good, bad)
    pop = good + bad
    m = np.minimum(sample, pop - sample)
    d4 = mingb / pop
    d5 = 1.0 - d4
    d6 = m * d4 + 0.5
    d7 = np.sqrt((pop - m) * sample * d4 * d5 / (pop - 1) + 0.5)
    d8 = d1c * d7 + d2c
    d9 = np.floor((m + 1) * (mingb + 1) / (pop + 2))
    d10 = _gammaln(d9 + 1) + _gammaln(mingb - d9 + 1) + _gammaln(m - d9 + 1) + _gammaln(maxgb - m + d9 + 1)
    d11 = np.minimum(np.minimum(m, mingb) + 1.0, np.floor(d6 + 16 * d7))

    def attempt(idx, s, a):
        x = s.u(a, 0)
        y = s.u(a, 1)
        w = d6[idx] + d8[idx] * (y - 0.5) / x
        valid = (w >= 0.0) & (w < d11[idx])
        z = np.floor(np.where(valid, w, 0.0))
        mi, mg, mx = m[idx], mingb[idx], maxgb[idx]
        t = d10[idx] - (_gammaln(z + 1) + _gammaln(mg - z + 1) + _gammaln(mi - z + 1) + _gammaln(mx - mi + z + 1))
        ok = valid & ((x * (4.0 - x) - 3.0 <= t) | ((x * (x - t) < 1) & (2.0 * np.log(x) <= t)))
        return z, ok

    z = _reject(src, attempt)
    z = np.where(good > bad, m - z, z)
    z = np.where(m < sample, good - z, z)
    return z.astype(np.int64)


# -- distributions with a trailing axis (whole rows per chunk) --


def _dirichlet_rows(src, rows, alpha):
    k = len(alpha)
    lg = _log_std_gamma(src, np.tile(alpha, rows)).reshape(rows, k)
    if k == 0:
        return lg
    with np.errstate(invalid="ignore"):
        lg -= lg.max(axis=1, keepdims=True)
        e = np.exp(lg)
        return e / e.sum(axis=1, keepdims=True)


def _multinomial_rows(src, rows, n, pvals):
    k = len(pvals)
    out = np.zeros((rows, k), dtype=np.int64)
    if k == 0:
        return out
    cols = np.arange(rows) * k
    remaining = np.full(rows, n, dtype=np.int64)
    rem_p = 1.0
    for j in range(k - 1):
        pj = min(max(pvals[j] / rem_p, 0.0), 1.0) if rem_p > 0 else 0.0
        out[:, j] = _binomial(src.sub(cols + j), remaining, pj)
        remaining -= out[:, j]
        rem_p -= pvals[j]
    out[:, k - 1] = remaining
    return out


def _mvn_rows(src, rows, mean, factor):
    k = len(mean)
    z = src.z(0).reshape(rows, k)
    return z @ factor + mean


#: name -> (sampler, dtype numpy's RandomState gives)
_SAMPLERS = {
    "standard_exponential": (_std_exponential, np.float64),
    "exponential": (_exponential, np.float64),
    "standard_gamma": (_std_gamma, np.float64),
    "gamma": (_gamma, np.float64),
    "beta": (_beta, np.float64),
    "chisquare": (_chisquare, np.float64),
    "f": (_f, np.float64),
    "standard_t": (_standard_t, np.float64),
    "standard_cauchy": (_standard_cauchy, np.float64),
    "gumbel": (_gumbel, np.float64),
    "laplace": (_laplace, np.float64),
    "logistic": (_logistic, np.float64),
    "lognormal": (_lognormal, np.float64),
    "pareto": (_pareto, np.float64),
    "power": (_power, np.float64),
    "rayleigh": (_rayleigh, np.float64),
    "weibull": (_weibull, np.float64),
    "triangular": (_triangular, np.float64),
    "wald": (_wald, np.float64),
    "vonmises": (_vonmises, np.float64),
    "noncentral_chisquare": (_noncentral_chisquare, np.float64),
    "noncentral_f": (_noncentral_f, np.float64),
    "poisson": (_poisson, np.int64),
    "binomial": (_binomial, np.int64),
    "negative_binomial": (_negative_binomial, np.int64),
    "geometric": (_geometric, np.int64),
    "logseries": (_logseries, np.int64),
    "zipf": (_zipf, np.int64),
    "hypergeometric": (_hypergeometric, np.int64),
}

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


def _dist_kernel(shape, offs, gshape, key, dist, spec, dtype, *tensors):
    """One chunk of distribution ``dist``: ``spec`` lists the parameters, constants or
    (``None``) the next of ``tensors`` (chunks aligned with this one, or broadcast)."""
    sampler, natural = _SAMPLERS[dist]
    it = iter(tensors)
    params = [next(it) if v is None else v for v in spec]
    if tensors:  # values only known now
        _check_params(dist, params)
    out = np.empty(shape, dtype=natural)
    if out.size:
        ncols = shape[-1] if shape else 1
        view = out.reshape(-1, ncols)
        pviews = [np.asarray(p, dtype=np.float64) if np.ndim(p) == 0
                  else np.broadcast_to(p, shape).reshape(-1, ncols) for p in params]
        for where, x in _counter_blocks(tuple(shape), tuple(offs), tuple(gshape), key):
            n = x.size
            ps = [np.broadcast_to(p, (n,)) if p.ndim == 0 else p[where].reshape(n) for p in pviews]
            with np.errstate(all="ignore"):
                view[where] = sampler(_Src(x.reshape(n)), *ps).reshape(view[where].shape)
    return out if out.dtype == dtype else out.astype(dtype)


def _rows_kernel(shape, offs, gshape, key, dist, args, dtype):
    """One chunk of a distribution with a trailing axis (``shape[-1]`` is whole)."""
    sampler, natural = _ROW_SAMPLERS[dist]
    k = shape[-1]
    rows = int(prod(shape[:-1]))
    x = np.empty(rows * k, dtype=np.uint64)
    if x.size:
        view = x.reshape(-1, k)
        for where, block in _counter_blocks(tuple(shape), tuple(offs), tuple(gshape), key):
            view[where] = block
    with np.errstate(all="ignore"):
        out = np.asarray(sampler(_Src(x), rows, *args), dtype=natural).reshape(shape)
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


def _align(p: TensorData, shape: tuple, nsplits: tuple) -> TensorData:
    """Parameter tensor ``p`` (right-aligned against ``shape``) re-cut so that its chunks
    match ``nsplits`` on every axis where it is not broadcast."""
    off = len(shape) - p.ndim
    new = tuple((1,) if p.shape[a] == 1 else tuple(nsplits[a + off]) for a in range(p.ndim))
    if tuple(tuple(s) for s in p.nsplits) == new:
        return p
    r = TensorRechunk([p], chunk_size=new).new_tensor(p.shape, p.dtype).data
    _tile([r], None)
    return r


class TensorDistribution(TensorOperand):
    """A draw of distribution ``dist`` (a key of ``_SAMPLERS``); ``spec`` holds each
    parameter's constant value, or ``None`` for the next input tensor (broadcast against the
    output).  Each chunk hashes its own global indices."""

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
        nsplits = None
        if self.chunk_size is None:  # follow a parameter of the output's shape: no rechunk
            nsplits = next((p.nsplits for p in params if tuple(p.shape) == shape), None)
        if nsplits is None:
            nsplits = normalize_chunk_size(shape, self.chunk_size, out.dtype.itemsize)
        aligned = [_align(p, shape, nsplits) for p in params]
        ndim = len(shape)
        chunks = []
        for idx in chunk_grid(nsplits):
            cshape = chunk_shape_at(nsplits, idx)
            pchunks = [
                p.chunk_at(tuple(0 if p.shape[a] == 1 else idx[a + ndim - p.ndim] for a in range(p.ndim)))
                for p in aligned
            ]
            args = (cshape, _chunk_offsets(nsplits, idx), shape, self.key, self.dist, self.spec, out.dtype, *pchunks)
            chunks.append(self.new_chunk(idx, cshape, _dist_kernel, args, inputs=pchunks))
        return [(chunks, nsplits)]


class TensorRowDistribution(TensorOperand):
    """A draw whose last axis is one sample (dirichlet, multinomial, multivariate_normal):
    chunked along the leading axes only."""

    _op_name = "random-rows"

    def tile(self):
        out = self.output
        k = out.shape[-1]
        lead = normalize_chunk_size(out.shape[:-1], self.chunk_size, out.dtype.itemsize * max(1, k))
        nsplits = lead + ((k,),)
        chunks = []
        for idx in chunk_grid(nsplits):
            cshape = chunk_shape_at(nsplits, idx)
            args = (cshape, _chunk_offsets(nsplits, idx), out.shape, self.key, self.dist, self.args, out.dtype)
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
