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
"""

from __future__ import annotations

import math
import numbers
import operator

import numpy as np

from ..tiling.core import ensure_known, random_key
from .core import Tensor, TensorOperand, astensor, is_scalar_like
from .datasource import cast
from .utils import chunk_grid, chunk_shape_at, normalize_chunk_size, offsets, prod

__all__ = [
    "RandomState", "seed", "rand", "randn", "random", "random_sample", "ranf", "sample",
    "randint", "uniform", "normal", "standard_normal", "choice", "permutation", "shuffle",
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

    # -- floats --
    def random_sample(self, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        """Uniform floats in [0, 1)."""
        dtype = _float_dtype(dtype)
        return self._draw("uniform", _size_shape(size), dtype, chunk_size)

    random = ranf = sample = random_sample

    def rand(self, *dn, **kw) -> Tensor:
        """Uniform [0, 1) of shape ``dn`` (``rand(3, 4)``)."""
        if len(dn) == 1 and isinstance(dn[0], (tuple, list)):
            dn = tuple(dn[0])
        return self.random_sample(dn, **kw)

    def standard_normal(self, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        dtype = _float_dtype(dtype)
        return self._draw("normal", _size_shape(size), dtype, chunk_size)

    def randn(self, *dn, **kw) -> Tensor:
        if len(dn) == 1 and isinstance(dn[0], (tuple, list)):
            dn = tuple(dn[0])
        return self.standard_normal(dn, **kw)

    def uniform(self, low=0.0, high=1.0, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        """``low + (high - low) * random_sample()``; array/tensor bounds broadcast."""
        return self._affine("uniform", low, high, size, chunk_size, dtype)

    def normal(self, loc=0.0, scale=1.0, size=None, chunk_size=None, gpu=None, dtype=None) -> Tensor:
        if not isinstance(scale, Tensor) and np.any(np.asarray(scale) < 0):
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
        from .utils import broadcast_shape

        pshape = broadcast_shape(ta.shape, tb.shape)
        shape = pshape if size is None else _size_shape(size)
        if broadcast_shape(shape, pshape) != tuple(shape):
            raise ValueError(f"shape mismatch: parameters of shape {pshape} do not broadcast to size {shape}")
        t = self._draw(dist, shape, dtype, chunk_size)
        scale = tb - ta if dist == "uniform" else tb
        return cast(t * scale + ta, dtype)

    # -- integers --
    def randint(self, low, high=None, size=None, dtype=int, chunk_size=None, density=None, gpu=None) -> Tensor:
        """Integers in ``[low, high)`` (``[0, low)`` without ``high``)."""
        dtype = np.dtype(dtype)
        if dtype.kind not in "biu":
            raise TypeError(f"Unsupported dtype {dtype} for randint")
        if not (is_scalar_like(low) and (high is None or is_scalar_like(high))):
            raise NotImplementedError("randint supports scalar low/high only")
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

    # -- choice and permutations --
    def choice(self, a, size=None, replace=True, p=None, chunk_size=None, gpu=None) -> Tensor:
        """Samples from ``a`` (an int n for ``range(n)``, an array-like or a 1-d tensor)."""
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

    def permutation(self, x, chunk_size=None) -> Tensor:
        """A permuted ``range(x)`` (int ``x``) or a copy of ``x`` with axis 0 permuted."""
        if isinstance(x, numbers.Integral):
            if x < 0:
                raise ValueError(f"negative dimensions are not allowed: {x}")
            shape = (int(x),)
            normalize_chunk_size(shape, chunk_size, 8)
            op = TensorSelection([], n=int(x), p=None, key=self._next_key(), shape=shape, chunk_size=chunk_size,
                                 gather=False, pool=None)
            return self._new(op, shape, np.int64)
        x = astensor(x, chunk_size=chunk_size)
        if x.ndim == 0:
            raise ValueError("x must be an integer or at least 1-dimensional")
        op = TensorSelection([x.data], n=None, p=None, key=self._next_key(), chunk_size=None,
                             gather=True, pool=None)
        return self._new(op, x.shape, x.dtype)

    def shuffle(self, x) -> None:
        """Shuffle tensor ``x`` along axis 0 in place (the handle gets the shuffled data)."""
        if not isinstance(x, Tensor):
            raise TypeError("shuffle works in place on a mars_dask Tensor")
        x.data = self.permutation(x).data


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
random = _bind("random_sample")
random_sample = _bind("random_sample")
ranf = _bind("random_sample")
sample = _bind("random_sample")
standard_normal = _bind("standard_normal")
uniform = _bind("uniform")
normal = _bind("normal")
randint = _bind("randint")
choice = _bind("choice")
permutation = _bind("permutation")
shuffle = _bind("shuffle")
