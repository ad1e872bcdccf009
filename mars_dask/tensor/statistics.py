"""Statistics: order statistics (``percentile``, ``quantile``, ``median``), histograms
(``histogram``, ``histogram_bin_edges``, ``digitize``, ``bincount``), moments
(``average``, ``cov``, ``corrcoef``), ``ptp`` and ``trapz``.

Quantiles over the whole array (``axis=None``) sort the flattened data with PSRS
(:func:`mars_dask.tensor.sort.sort`), learn the sorted chunks' lengths, fetch only the
order statistics they need by global position, and interpolate exactly as numpy does.
Along one axis the axis is re-cut into one chunk and numpy runs block by block.

Histograms compute, when no ``range`` is given, the data's min/max with a small reduction
inside the graph; the bin edges come from numpy on those two numbers (so they are exactly
numpy's), and per-chunk counts are summed.  numpy's string rules (``'auto'``, ``'fd'``,
...) gather the statistics their estimator reads chunk by chunk (count, min, max, central
moments, the quartiles through the PSRS sort, Stone's trial histograms) and apply numpy's
formulas to them; the number of bins is then known after execution.
``bincount`` counts per chunk and adds the partial counts as a tree.
"""

from __future__ import annotations

import math
import numbers
import operator
import warnings

import numpy as np

from .. import config
from ..tiling.core import ensure_known, has_unknown
from ..tiling.tile import tile
from .core import Tensor, TensorOperand, astensor
from .lib._executable import ExecutableTuple
from .rechunk import TensorRechunk, unify_nsplits
from .utils import nan, offsets, validate_axis

__all__ = [
    "percentile", "quantile", "median", "histogram", "histogram_bin_edges", "ptp", "average", "cov", "corrcoef",
    "trapz", "digitize", "bincount",
]

_METHODS = ("linear", "lower", "higher", "nearest", "midpoint")
_NUMPY_METHODS = (
    "inverted_cdf", "averaged_inverted_cdf", "closest_observation", "interpolated_inverted_cdf",
    "hazen", "weibull", "median_unbiased", "normal_unbiased",
) + _METHODS


# ---- quantile kernels ----------------------------------------------------------------


def _nan_full(shape, dtype):
    return np.full(shape, np.nan, dtype=dtype)


def _take(x, positions):
    return x[positions]


def _lerp(a, b, t):
    """numpy's ``_lerp`` (``numpy/lib/_function_base_impl.py``), so results match bit for bit."""
    diff_b_a = b - a
    lerp = np.add(a, diff_b_a * t, out=...)
    np.subtract(b, diff_b_a * (1 - t), out=lerp, where=t >= 0.5, casting="unsafe", dtype=type(lerp.dtype))
    return lerp


def _quantile_finish(parts, positions, plan, dtype, out_shape):
    """Interpolate the gathered order statistics (``parts`` hold the values at the sorted
    global ``positions``).  ``plan`` is ``(kind, prev, next, gamma, nan_check)``."""
    kind, prev, nxt, gamma, nan_check = plan
    vals = np.concatenate(parts) if parts else np.zeros(0, dtype)
    at = dict(zip(positions, vals))
    if kind == "median":
        res = np.mean(np.array([at[p] for p in prev], dtype=dtype)) if len(prev) else np.nan
    else:
        pv = np.array([at[p] for p in prev.ravel()]).reshape(prev.shape)
        if kind == "take":
            res = pv
        else:
            nv = np.array([at[p] for p in nxt.ravel()]).reshape(nxt.shape)
            res = _lerp(pv, nv, gamma)
    res = np.asarray(res)
    if nan_check is not None and np.isnan(at[nan_check]):
        res = np.full(res.shape, at[nan_check])
    return res.astype(dtype, copy=False).reshape(out_shape)


def _virtual_plan(n, q, method, weak_q):
    """numpy's index arithmetic for ``method``: which sorted positions are read and how
    they are combined (see ``numpy.lib._function_base_impl._quantile``)."""
    if method == "median":
        return "median", ([n // 2 - 1, n // 2] if n % 2 == 0 else [n // 2]) if n else [], None, None
    if method in ("lower", "higher", "nearest"):
        fn = {"lower": np.floor, "higher": np.ceil, "nearest": np.around}[method]
        return "take", fn((n - 1) * q).astype(np.intp), None, None
    if method == "linear":
        vi = np.asanyarray((n - 1) * q)
    else:  # midpoint
        vi = np.asanyarray(0.5 * (np.floor((n - 1) * q) + np.ceil((n - 1) * q)))
    prev = np.floor(vi, out=...)
    nxt = np.add(prev, 1, out=...)
    above = vi >= n - 1
    prev[above] = -1
    nxt[above] = -1
    prev[vi < 0] = 0
    nxt[vi < 0] = 0
    prev = prev.astype(np.intp)
    nxt = nxt.astype(np.intp)
    gamma = np.asanyarray(vi - prev)
    if method == "midpoint":
        g = np.full(gamma.shape, 0.5)
        np.copyto(g, 0.0, where=vi % 1 == 0, casting="unsafe")
        gamma = g
    gamma = np.asanyarray(gamma, dtype=vi.dtype)
    gamma = float(gamma) if weak_q else gamma
    return "lerp", prev, nxt, gamma


class TensorQuantile(TensorOperand):
    """Quantiles of a tensor; input 0 is the data (``axis`` given) or its flattened PSRS
    sort (``axis=None``)."""

    _op_name = "quantile"

    def tile(self):
        (inp,) = self.inputs
        if self.axis is None:
            return (yield from self._tile_sorted(inp))
        return (yield from self._tile_axis(inp))

    def _tile_sorted(self, s):
        if has_unknown(s.nsplits[0]):
            yield from ensure_known(s)
        n = int(s.shape[0])
        out = self.output
        if n == 0 and self.method != "median":
            if self.params.get("allow_empty"):  # histogram's 'fd' rule on no data: unused NaNs
                shape = out.shape
                return [([self.new_chunk((0,) * len(shape), shape, _nan_full, (shape, out.dtype))],
                         tuple((d,) for d in shape))]
            raise IndexError("index -1 is out of bounds for axis 0 with size 0")
        kind, prev, nxt, gamma = _virtual_plan(n, self.q, self.method, self.weak_q)
        prev = np.where(np.asarray(prev) < 0, n - 1, prev)
        nxt = None if nxt is None else np.where(nxt < 0, n - 1, nxt)
        nan_check = n - 1 if n and s.dtype.kind in "fmM" else None
        wanted = set(np.ravel(prev).tolist())
        if nxt is not None:
            wanted |= set(np.ravel(nxt).tolist())
        if nan_check is not None:
            wanted.add(nan_check)
        positions = sorted(wanted)
        bounds = offsets(s.nsplits[0])
        parts, got = [], []
        for k, c in enumerate(s.chunks):
            local = [p - bounds[k] for p in positions if bounds[k] <= p < bounds[k + 1]]
            if local:
                part = self.new_chunk((k,), (len(local),), _take, (c, np.array(local, dtype=np.intp)))
                part.key = (f"{self.output_key()}-take", k)
                parts.append(part)
                got.extend(p + bounds[k] for p in local)
        plan = (kind, np.asarray(prev), nxt, gamma, nan_check)
        shape = out.shape
        chunk = self.new_chunk((0,) * len(shape), shape, _quantile_finish, (parts, got, plan, out.dtype, shape))
        return [([chunk], tuple((d,) for d in shape))]

    def _tile_axis(self, inp):
        axis = self.axis
        if any(has_unknown(s) for s in inp.nsplits):
            yield from ensure_known(inp)
        inp = rechunk_single_axis(inp, axis)
        qshape = np.shape(self.q_arg)
        chunks = []
        for c in inp.chunks:
            idx = tuple(i for a, i in enumerate(c.index) if a != axis or self.keepdims)
            shape = tuple(s if a != axis else 1 for a, s in enumerate(c.shape) if a != axis or self.keepdims)
            chunks.append(
                self.new_chunk(
                    (0,) * len(qshape) + idx,
                    qshape + shape,
                    _quantile_block,
                    (c, self.q_arg, axis, self.method, self.keepdims, self.func_name),
                    memory=int(3 * c.nbytes) if c.nbytes else None,
                )
            )
        nsplits = tuple((d,) for d in qshape) + tuple(
            s if a != axis else (1,) for a, s in enumerate(inp.nsplits) if a != axis or self.keepdims
        )
        return [(chunks, nsplits)]


def _quantile_block(x, q, axis, method, keepdims, func_name):
    if func_name == "median":
        return np.asarray(np.median(x, axis=axis, keepdims=keepdims))
    return np.asarray(getattr(np, func_name)(x, q, axis=axis, method=method, keepdims=keepdims))


def rechunk_single_axis(t, axis):
    """``t`` (tiled, known shape) re-cut so that ``axis`` is one chunk; tiled on the spot."""
    if len(t.nsplits[axis]) == 1:
        return t
    new = tuple(s if a != axis else (int(t.shape[axis]),) for a, s in enumerate(t.nsplits))
    r = TensorRechunk([t], chunk_size=new).new_tensor(t.shape, t.dtype).data
    tile([r], None)
    return r


def _quantile(a, q, axis, method, keepdims, func_name):
    from .sort import sort

    a = astensor(a)
    if a.dtype.kind == "c":
        raise TypeError("a must be an array of real numbers")
    if method not in _NUMPY_METHODS:
        raise ValueError(f"{method!r} is not a valid method. Use one of: {_NUMPY_METHODS}")
    if method not in _METHODS and func_name != "median":
        raise NotImplementedError(f"method {method!r} is not supported; use one of {_METHODS}")
    if isinstance(q, Tensor):
        raise TypeError("q must be array-like (a tensor q is not supported)")
    weak_q = type(q) in (int, float)
    qarr = np.true_divide(q, 100) if func_name == "percentile" else np.asanyarray(q)
    if func_name != "median":
        if qarr.ndim > 2:
            raise ValueError("q must be a scalar or 1d")
        if qarr.size and not (qarr.min() >= 0 and qarr.max() <= 1):
            name = "Percentiles must be in the range [0, 100]" if func_name == "percentile" else "Quantiles must be in the range [0, 1]"
            raise ValueError(name)
    if axis is not None:
        if not isinstance(axis, numbers.Integral):
            raise NotImplementedError("axis must be None or an int")
        axis = validate_axis(a.ndim, axis)
    # result dtype: numpy's on a tiny probe
    probe = np.zeros((2,) * max(a.ndim, 1), dtype=a.dtype)
    if func_name == "median":
        dtype = np.asarray(np.median(probe)).dtype
    else:
        dtype = np.asarray(getattr(np, func_name)(probe, q, method=method)).dtype
    qshape = () if func_name == "median" else qarr.shape
    if axis is None:
        shape = qshape + ((1,) * a.ndim if keepdims else ())
        src = sort(a, axis=None)
        m = "median" if func_name == "median" else method
        op = TensorQuantile([src.data], axis=None, q=qarr, method=m, weak_q=weak_q, keepdims=keepdims)
    else:
        shape = qshape + tuple(1 if i == axis else s for i, s in enumerate(a.shape) if i != axis or keepdims)
        op = TensorQuantile([a.data], axis=axis, q_arg=q, method=method, keepdims=keepdims, func_name=func_name)
    return op.new_tensor(shape, dtype)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False):
    """``numpy.percentile`` (methods linear, lower, higher, nearest, midpoint)."""
    if out is not None:
        raise NotImplementedError("percentile: out= is not supported")
    return _quantile(a, q, axis, method, keepdims, "percentile")


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False):
    """``numpy.quantile`` (``q`` in [0, 1]; methods as :func:`percentile`)."""
    if out is not None:
        raise NotImplementedError("quantile: out= is not supported")
    return _quantile(a, q, axis, method, keepdims, "quantile")


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """``numpy.median`` (mean of the middle order statistics, NaN if any NaN)."""
    if out is not None:
        raise NotImplementedError("median: out= is not supported")
    return _quantile(a, 0.5, axis, "linear", keepdims, "median")


# ---- histogram ---------------------------------------------------------------------------


def _minmax(x):
    """A chunk's (min, max) as a 0-2 element array (empty chunks give nothing)."""
    if x.size == 0:
        return x.ravel()[:0]
    return np.array([x.min(), x.max()], dtype=x.dtype)


def _edges(minmaxes, bins, range_, dtype):
    data = np.concatenate(minmaxes) if minmaxes else np.zeros(0, dtype)
    if data.size:
        data = np.array([data.min(), data.max()], dtype=dtype)
    return np.histogram_bin_edges(data.astype(dtype, copy=False), bins, range_)


def _concat_edges(parts):
    return np.concatenate(parts)


def _hist_chunk(x, edges, w):
    return np.histogram(x, bins=edges, weights=w)[0]


def _hist_finish(parts, edges, density, dtype):
    n = np.sum(parts, axis=0).astype(dtype, copy=False) if len(parts) else np.zeros(len(edges) - 1, dtype)
    if density:
        db = np.diff(edges).astype(float)
        return n / db / n.sum()
    return n


# string bin rules: the statistics numpy's estimators read, gathered chunk by chunk, then
# numpy's formulas (``numpy/lib/_histograms_impl.py``) on them


def _trim(x, range_):
    x = x.ravel()
    if range_ is not None:
        x = x[(x >= range_[0]) & (x <= range_[1])]
    return x


def _rule_stats(x, range_):
    """``(count, min, max, sum)`` of a chunk's values inside ``range_`` (min/max None when
    there are none)."""
    x = _trim(x, range_)
    if x.size == 0:
        return 0, None, None, 0.0
    return x.size, x.min(), x.max(), float(np.sum(x, dtype=np.float64))


def _rule_stats_combine(parts):
    n = sum(p[0] for p in parts)
    got = [p for p in parts if p[0]]
    if not got:
        return 0, None, None, 0.0
    return n, min(p[1] for p in got), max(p[2] for p in got), math.fsum(p[3] for p in got)


def _rule_moments(x, stats, range_):
    """Sums of the 2nd and 3rd powers of the deviations from the global mean."""
    x = _trim(x, range_)
    n, _, _, total = stats
    if x.size == 0:
        return 0.0, 0.0
    d = x.astype(np.float64) - total / n
    d2 = d * d
    return float(d2.sum()), float((d2 * d).sum())


def _sum_pairs(parts):
    return tuple(math.fsum(p[i] for p in parts) for i in range(2))


def _unsigned_subtract(a, b):
    """numpy's: ``a - b`` for ``a >= b`` without signed-integer overflow."""
    signed_to_unsigned = {np.byte: np.ubyte, np.short: np.ushort, np.intc: np.uintc,
                          np.int_: np.uint, np.longlong: np.ulonglong}
    dt = np.result_type(a, b)
    try:
        unsigned_dt = signed_to_unsigned[dt.type]
    except KeyError:
        return np.subtract(a, b, dtype=dt)
    return np.subtract(np.asarray(a, dtype=dt), np.asarray(b, dtype=dt), casting="unsafe", dtype=unsigned_dt)


def _outer_edges(stats, range_):
    """numpy's ``_get_outer_edges`` from the global statistics."""
    if range_ is not None:
        first, last = range_
    elif stats[0] == 0:
        first, last = 0, 1
    else:
        first, last = stats[1], stats[2]
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"autodetected range of [{first}, {last}] is not finite")
    if first == last:
        first = first - 0.5
        last = last + 0.5
    return first, last


def _stone_hists(x, stats, range_):
    """The counts of a chunk for every number of bins Stone's rule tries (concatenated)."""
    n = stats[0]
    if n <= 1 or _unsigned_subtract(stats[2], stats[1]) == 0:
        return np.zeros(0, np.intp)
    edges = _outer_edges(stats, range_)
    x = _trim(x, range_)
    top = max(100, int(np.sqrt(n)))
    return np.concatenate([np.histogram(x, bins=k, range=edges)[0] for k in range(1, top + 1)])


def _add_arrays(parts):
    out = parts[0].copy()
    for p in parts[1:]:
        out += p
    return out


def _rule_width(rule, stats, moments, iqr, stone, edges, a_dtype):
    """The bin width numpy's estimator ``rule`` gives for the (trimmed) data."""
    n, mn, mx, _ = stats
    ptp = _unsigned_subtract(mx, mn)
    std_dtype = np.std(np.zeros(2, a_dtype)).dtype
    std = std_dtype.type(np.sqrt(moments[0] / n)) if moments is not None else None

    def sqrt_():
        return ptp / np.sqrt(n)

    def sturges():
        return ptp / (np.log2(n) + 1.0)

    def fd():
        return 2.0 * np.subtract(iqr[0], iqr[1]) * n ** (-1.0 / 3.0)

    if rule == "sqrt":
        return sqrt_()
    if rule == "sturges":
        return sturges()
    if rule == "rice":
        return ptp / (2.0 * n ** (1.0 / 3))
    if rule == "scott":
        return (24.0 * np.pi**0.5 / n) ** (1.0 / 3.0) * std
    if rule == "fd":
        return fd()
    if rule == "auto":
        return min(max(fd(), sqrt_() / 2), sturges())
    if rule == "doane":
        if n > 2:
            sg1 = np.sqrt(6.0 * (n - 2) / ((n + 1.0) * (n + 3)))
            if std > 0.0:
                g1 = std_dtype.type(moments[1] / n / float(std) ** 3)
                return ptp / (1.0 + np.log2(n) + np.log2(1.0 + np.absolute(g1) / sg1))
        return 0.0
    # stone
    if n <= 1 or ptp == 0:
        return 0
    top = max(100, int(np.sqrt(n)))
    best, best_j = None, None
    pos = 0
    for k in range(1, top + 1):
        p_k = stone[pos : pos + k] / n
        pos += k
        j = (2 - (n + 1) * p_k.dot(p_k)) / (ptp / k)
        if best_j is None or j < best_j:
            best, best_j = k, j
    return ptp / best


def _rule_edges(rule, stats, moments, iqr, stone, range_, a_dtype):
    """numpy's ``_get_bin_edges`` for a string ``bins``."""
    first, last = _outer_edges(stats, range_)
    if stats[0] == 0:
        n_bins = 1
    else:
        width = _rule_width(rule, stats, moments, iqr, stone, (first, last), a_dtype)
        if width:
            if np.issubdtype(a_dtype, np.integer) and width < 1:
                width = 1
            n_bins = int(np.ceil(_unsigned_subtract(last, first) / width))
        else:
            n_bins = 1
    bin_type = np.result_type(first, last, np.empty(0, a_dtype))
    if np.issubdtype(bin_type, np.integer):
        bin_type = np.result_type(bin_type, float)
    edges = np.linspace(first, last, n_bins + 1, endpoint=True, dtype=bin_type)
    if np.any(edges[:-1] >= edges[1:]):
        raise ValueError(f"Too many bins for data range. Cannot create {n_bins} finite-sized bins.")
    return edges


class TensorHistogram(TensorOperand):
    """Outputs: ``hist`` (0) and ``bin_edges`` (1), each one chunk."""

    _op_name = "histogram"

    def tile(self):
        a = self.inputs[0]
        w = self.inputs[1] if self.has_weights else None
        base = self.output_key(0)
        edges_t = self.inputs[-1] if self.bins_tensor else None
        out_edges = self.outputs[1]
        n_edges = self.n_edges
        if self.rule is not None:
            edges = self._rule_edges_chunk(a)
        elif edges_t is not None:
            edges = self.new_chunk((0,), (n_edges,), _concat_edges, (list(edges_t.chunks),), out=1)
        elif self.bins_array is not None:
            edges = self.new_chunk((0,), (n_edges,), np.asarray, (self.bins_array,), out=1)
        else:
            mms = []
            if self.range is None:
                for c in a.chunks:
                    m = self.new_chunk(c.index, (2,), _minmax, (c,))
                    m.key = (f"{base}-minmax", *c.index)
                    mms.append(m)
            dtype = out_edges.dtype if out_edges is not None else np.float64
            edges = self.new_chunk((0,), (n_edges,), _edges, (mms, self.bins, self.range, a.dtype), out=1, dtype=dtype)
        if w is not None:
            if any(has_unknown(s) for t in (a, w) for s in t.nsplits) and a.nsplits != w.nsplits:
                yield from ensure_known(a, w)
            a, w = unify_nsplits([a, w])
        nb = n_edges - 1
        parts = []
        for c in a.chunks:
            p = self.new_chunk(c.index, (nb,), _hist_chunk, (c, edges, w.chunk_at(c.index) if w is not None else None))
            p.key = (f"{base}-partial", *c.index)
            parts.append(p)
        hist = self.new_chunk((0,), (nb,), _hist_finish, (parts, edges, self.density, self.count_dtype))
        return [([hist], ((nb,),)), ([edges], ((n_edges,),))]

    def _rule_edges_chunk(self, a):
        """The edges chunk of a string rule: statistics chunk by chunk, then numpy's formula."""
        base, rule, range_ = self.output_key(0), self.rule, self.range

        def stage(name, idx, func, args):
            c = self.new_chunk(idx, (nan,), func, args)
            c.key = (f"{base}-{name}", *idx)
            return c

        stats = stage("stats", (), _rule_stats_combine,
                      ([stage("stats-map", c.index, _rule_stats, (c, range_)) for c in a.chunks],))
        moments = iqr = stone = None
        if rule in ("scott", "doane"):
            moments = stage("moments", (), _sum_pairs,
                            ([stage("moments-map", c.index, _rule_moments, (c, stats, range_)) for c in a.chunks],))
        if rule in ("fd", "auto"):
            iqr = self.inputs[-1].chunks[0]
        if rule == "stone":
            stone = stage("stone", (), _add_arrays,
                          ([stage("stone-map", c.index, _stone_hists, (c, stats, range_)) for c in a.chunks],))
        return self.new_chunk((0,), (nan,), _rule_edges, (rule, stats, moments, iqr, stone, range_, a.dtype), out=1)


_RULES = ("auto", "fd", "doane", "scott", "stone", "rice", "sturges", "sqrt")


def _histogram_rule(a, bins, range, weights, density):  # noqa: A002
    """``histogram`` with a string ``bins`` (numpy's estimators): the number of bins is only
    known after execution."""
    if a.dtype == np.bool_:
        warnings.warn(f"Converting input from {a.dtype} to {np.uint8} for compatibility.", RuntimeWarning, stacklevel=3)
        a = a.astype(np.uint8)
    probe_w = None if weights is None else np.zeros(0)
    # numpy's validation (rule name, weights, range) and the edges' dtype
    edges_dtype = np.histogram_bin_edges(np.zeros(0, a.dtype), bins, range, probe_w).dtype
    inputs = [a.data]
    if bins in ("fd", "auto"):
        flat = a.ravel() if a.ndim != 1 else a
        if range is not None:
            flat = flat[(flat >= range[0]) & (flat <= range[1])]
        from .sort import sort

        qdtype = np.percentile(np.zeros(2, a.dtype), [75, 25]).dtype
        q = TensorQuantile([sort(flat, axis=None).data], axis=None, q=np.array([0.75, 0.25]), method="linear",
                           weak_q=False, keepdims=False, allow_empty=True).new_tensor((2,), qdtype)
        inputs.append(q.data)
    op = TensorHistogram(
        inputs, rule=bins, bins=None, bins_array=None, bins_tensor=False, has_weights=False,
        range=None if range is None else tuple(range), density=bool(density), n_edges=nan,
        count_dtype=np.dtype(np.intp),
    )
    hist_dtype = np.dtype(np.float64) if density else np.dtype(np.intp)
    return ExecutableTuple(op.new_tensors([((nan,), hist_dtype), ((nan,), edges_dtype)]))


def histogram(a, bins=10, range=None, weights=None, density=None):  # noqa: A002
    """``numpy.histogram`` (Mars's argument order: ``weights`` before ``density``): returns
    ``(hist, bin_edges)`` tensors.  ``bins`` is an int, a monotonically increasing sequence,
    a 1-d tensor of edges, or one of numpy's rules (``'auto'``, ``'fd'``, ``'doane'``,
    ``'scott'``, ``'stone'``, ``'rice'``, ``'sturges'``, ``'sqrt'``: the edges are numpy's,
    their number known after execution)."""
    a = astensor(a)
    if isinstance(bins, str):
        return _histogram_rule(a, bins, range, weights, density)
    w = None
    if weights is not None:
        w = astensor(weights)
        if not has_unknown(a.shape) and not has_unknown(w.shape) and tuple(w.shape) != tuple(a.shape):
            raise ValueError("weights should have the same shape as a.")
    inputs = [a.data] + ([w.data] if w is not None else [])
    bins_tensor = isinstance(bins, Tensor)
    bins_array = None
    probe_a = np.zeros(1, dtype=a.dtype)
    probe_w = None if w is None else np.ones(1, dtype=w.dtype)
    if bins_tensor:
        if bins.ndim != 1:
            raise ValueError("`bins` must be 1d, when an array")
        if has_unknown(bins.shape):
            raise ValueError("histogram: bins tensor must have a known length")
        n_edges = int(bins.shape[0])
        edges_dtype = bins.dtype
        probe_bins = np.arange(max(n_edges, 2), dtype=bins.dtype)
        inputs.append(bins.data)
    elif isinstance(bins, numbers.Integral):
        np.histogram_bin_edges(np.zeros(0, dtype=a.dtype), bins, range)  # numpy's validation
        n_edges = int(bins) + 1
        edges_dtype = np.histogram_bin_edges(probe_a, bins, range).dtype
        probe_bins = bins
    else:
        bins_array = np.asarray(bins)
        np.histogram_bin_edges(np.zeros(0, dtype=a.dtype), bins_array, range)  # numpy's validation
        n_edges = bins_array.shape[0]
        edges_dtype = bins_array.dtype
        probe_bins = bins_array
    count_dtype = np.histogram(probe_a, bins=probe_bins, range=range, weights=probe_w)[0].dtype
    hist_dtype = np.dtype(np.float64) if density else count_dtype
    op = TensorHistogram(
        inputs, rule=None, bins=None if bins_tensor or bins_array is not None else int(bins),
        bins_array=bins_array, bins_tensor=bins_tensor, range=None if range is None else tuple(range),
        density=bool(density), has_weights=w is not None, n_edges=n_edges, count_dtype=count_dtype,
    )
    return ExecutableTuple(op.new_tensors([((n_edges - 1,), hist_dtype), ((n_edges,), edges_dtype)]))


def histogram_bin_edges(a, bins=10, range=None, weights=None):  # noqa: A002
    """``numpy.histogram_bin_edges`` (lazy min/max when ``range`` is None; string rules as
    :func:`histogram`)."""
    return histogram(a, bins=bins, range=range, weights=weights)[1]


# ---- ptp, average, cov, corrcoef, trapz ------------------------------------------------


def ptp(a, axis=None, out=None, keepdims=None):
    """``numpy.ptp``: ``max - min`` along ``axis`` (the input's dtype, wrapping for ints as
    numpy's)."""
    from .arithmetic import _assign_out, subtract
    from .reduction import max as _max
    from .reduction import min as _min

    a = astensor(a)
    kd = bool(keepdims) if keepdims is not None else False
    return _assign_out(out, subtract(_max(a, axis=axis, keepdims=kd), _min(a, axis=axis, keepdims=kd)))


def _fill_like(x, value):
    return np.full(x.shape, value, dtype=x.dtype)


def _ones_f8(x):
    return np.ones(x.shape, dtype=np.float64)


def _weighted_mean(num, scl):
    if np.any(scl == 0.0):
        raise ZeroDivisionError("Weights sum to zero, can't be normalized")
    return num / scl


def _same_shape(s1, s2) -> bool:
    return len(s1) == len(s2) and all(x == y or x != x or y != y for x, y in zip(s1, s2))


def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """``numpy.average``: the (weighted) mean along ``axis``; ``returned=True`` also gives
    the sum of the weights (a tensor of the average's shape).  Weights summing to zero raise
    ``ZeroDivisionError`` when executed."""
    from .arithmetic import elementwise, multiply
    from .manipulation import broadcast_to, transpose
    from .reduction import mean
    from .reduction import sum as _sum
    from .utils import validate_axes

    a = astensor(a)
    axes = None if axis is None else validate_axes(a.ndim, axis)
    # numpy's normalized axes, in the caller's order (weights' axes follow it)
    user_axes = None if axis is None else tuple(
        validate_axis(a.ndim, ax) for ax in ((axis,) if isinstance(axis, numbers.Integral) else axis))
    if weights is None:
        avg = mean(a, axis=axes, keepdims=keepdims)
        if not returned:
            return avg
        if has_unknown(a.shape):
            scl = astensor(_sum(elementwise(_ones_f8, a), axis=axes, keepdims=keepdims), dtype=avg.dtype)
        else:
            n_avg = 1
            for s in avg.shape:
                n_avg *= s
            size = 1
            for s in a.shape:
                size *= s
            scl = elementwise(_fill_like, avg, avg.dtype.type(size / n_avg))
        return ExecutableTuple([avg, scl])
    wgt = astensor(weights)
    if a.dtype.kind in "biu":
        result_dtype = np.result_type(a.dtype, wgt.dtype, "f8")
    else:
        result_dtype = np.result_type(a.dtype, wgt.dtype)
    if not _same_shape(a.shape, wgt.shape):
        if axes is None:
            raise TypeError("Axis must be specified when shapes of a and weights differ.")
        if not _same_shape(wgt.shape, tuple(a.shape[ax] for ax in user_axes)):
            raise ValueError("Shape of weights must be consistent with shape of a along specified axis.")
        if wgt.ndim > 1:
            wgt = transpose(wgt, tuple(int(i) for i in np.argsort(user_axes)))
        wgt = wgt[tuple(slice(None) if ax in axes else None for ax in range(a.ndim))]
    scl = _sum(wgt, axis=axes, dtype=result_dtype, keepdims=keepdims)
    num = _sum(multiply(astensor(a, dtype=result_dtype), astensor(wgt, dtype=result_dtype)), axis=axes,
               keepdims=keepdims)
    avg = elementwise(_weighted_mean, num, scl)
    if not returned:
        return avg
    if tuple(scl.shape) != tuple(avg.shape):
        scl = broadcast_to(scl, avg.shape)
    return ExecutableTuple([avg, scl])


def _check_cov_weights_kernel(w, name, integer):
    if integer and not np.all(w == np.around(w)):
        raise TypeError(f"{name} must be integer")
    if np.any(w < 0):
        raise ValueError(f"{name} cannot be negative")
    return w


def _cov_weights(weights, name, n_obs, integer):
    """``fweights``/``aweights`` as float64, validated as numpy does (values of a tensor when
    executed)."""
    from .arithmetic import elementwise

    if isinstance(weights, Tensor):
        w = weights.astype(np.float64)
        if w.ndim > 1:
            raise RuntimeError(f"cannot handle multidimensional {name}")
        if w.ndim == 0 or (not has_unknown((n_obs, w.shape[0])) and w.shape[0] != n_obs):
            raise RuntimeError(f"incompatible numbers of samples and {name}")
        return elementwise(_check_cov_weights_kernel, w, name, integer)
    w = np.asarray(weights, dtype=float)
    if integer and not np.all(w == np.around(w)):
        raise TypeError(f"{name} must be integer")
    if w.ndim > 1:
        raise RuntimeError(f"cannot handle multidimensional {name}")
    if w.ndim == 0 or (not has_unknown((n_obs,)) and w.shape[0] != n_obs):
        raise RuntimeError(f"incompatible numbers of samples and {name}")
    if np.any(w < 0):
        raise ValueError(f"{name} cannot be negative")
    return astensor(w)


def _cov_scale(w_sum, ddof, waw):
    """``1 / fact`` with numpy's normalization ``fact`` (0 when the degrees of freedom are
    not positive, giving inf/nan as numpy)."""
    if waw is None:
        fact = w_sum - ddof if ddof else w_sum
    else:
        fact = w_sum - ddof * waw / w_sum if ddof else w_sum
    if fact <= 0:
        fact = 0.0
    with np.errstate(divide="ignore"):
        return np.asarray(np.true_divide(1, fact))


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None):
    """``numpy.cov``: the covariance matrix of the variables (rows, or columns with
    ``rowvar=False``), with frequency and analytic weights; 0-d for one variable."""
    from .arithmetic import conjugate, elementwise, multiply, subtract
    from .datasource import tensor
    from .linalg import dot
    from .manipulation import atleast_2d, concatenate, squeeze
    from .reduction import sum as _sum

    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    m = astensor(m)
    if m.ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    if y is not None:
        y = astensor(y)
        if y.ndim > 2:
            raise ValueError("y has more than 2 dimensions")
    if dtype is None:
        dtype = np.result_type(m.dtype, np.float64) if y is None else np.result_type(m.dtype, y.dtype, np.float64)
    dtype = np.dtype(dtype)
    X = atleast_2d(astensor(m, dtype=dtype))
    if not rowvar and m.ndim != 1:
        X = X.T
    if X.shape[0] == 0:
        return tensor(np.array([]).reshape(0, 0))
    if y is not None:
        Y = atleast_2d(astensor(y, dtype=dtype))
        if not rowvar and Y.shape[0] != 1:
            Y = Y.T
        X = concatenate([X, Y], axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    ddof = int(ddof)
    n_obs = X.shape[1]
    w = aw = None
    if fweights is not None:
        w = _cov_weights(fweights, "fweights", n_obs, True)
    if aweights is not None:
        aw = _cov_weights(aweights, "aweights", n_obs, False)
        w = aw if w is None else multiply(w, aw)
    avg, w_sum = average(X, axis=1, weights=w, returned=True)
    if w is None and not has_unknown((n_obs,)):
        fact = n_obs - ddof
        if fact <= 0:
            warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=2)
            fact = 0.0
        with np.errstate(divide="ignore"):
            scale = np.true_divide(1, fact)
    else:
        waw = _sum(multiply(w, aw)) if (w is not None and aw is not None and ddof) else None
        scale = elementwise(_cov_scale, w_sum[0], ddof, waw) if waw is not None else \
            elementwise(_cov_scale, w_sum[0], ddof, None)
    X = subtract(X, avg[:, None])
    X_T = X.T if w is None else multiply(X, w).T
    if X_T.dtype.kind == "c":
        X_T = conjugate(X_T)
    c = dot(X, X_T)
    res = multiply(c, scale)
    if res.dtype != c.dtype:
        res = res.astype(c.dtype)
    return squeeze(res)


def _clip_corr(c):
    c = c.copy()
    np.clip(c.real, -1, 1, out=c.real)
    if np.iscomplexobj(c):
        np.clip(c.imag, -1, 1, out=c.imag)
    return c


def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    """``numpy.corrcoef``: Pearson correlation coefficients (clipped to [-1, 1] as numpy)."""
    from .arithmetic import elementwise, sqrt, true_divide
    from .datasource import diag
    from .numeric import real

    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim != 2:
        return true_divide(c, c)
    stddev = sqrt(real(diag(c)))
    dtype = c.dtype
    c = astensor(true_divide(c, stddev[:, None]), dtype=dtype)
    c = astensor(true_divide(c, stddev[None, :]), dtype=dtype)
    return elementwise(_clip_corr, c)


def trapz(y, x=None, dx=1.0, axis=-1):
    """``numpy.trapezoid`` (Mars's ``trapz``): the integral of ``y`` along ``axis`` by the
    trapezoidal rule, with sample points ``x`` or spacing ``dx``."""
    from .arithmetic import add, multiply, subtract, true_divide
    from .reduction import sum as _sum

    y = astensor(y)
    axis = validate_axis(y.ndim, axis)
    nd = y.ndim
    hi = tuple(slice(1, None) if i == axis else slice(None) for i in range(nd))
    lo = tuple(slice(None, -1) if i == axis else slice(None) for i in range(nd))
    if x is None:
        d = dx
    else:
        x = astensor(x)
        if x.ndim == 1:
            d = subtract(x[1:], x[:-1])
            d = d[tuple(slice(None) if i == axis else None for i in range(nd))]
        else:
            d = subtract(x[hi], x[lo])
    return _sum(true_divide(multiply(d, add(y[hi], y[lo])), 2.0), axis=axis)


# ---- digitize, bincount ------------------------------------------------------------------


def _digitize_kernel(x, bins, right):
    if isinstance(bins, list):
        bins = np.concatenate(bins)
    return np.digitize(x, bins, right=right)


class TensorDigitize(TensorOperand):
    """``np.digitize`` of each chunk of ``x`` against all the (few) chunks of ``bins``."""

    _op_name = "digitize"

    def tile(self):
        x, bins = self.inputs
        parts = list(bins.chunks)
        chunks = [self.new_chunk(c.index, c.shape, _digitize_kernel, (c, parts, self.right)) for c in x.chunks]
        return [(chunks, x.nsplits)]


def digitize(x, bins, right=False):
    """``numpy.digitize``: the index of the bin each value of ``x`` falls in (``bins``
    monotonically increasing or decreasing; a tensor of bins is checked when executed)."""
    from .arithmetic import elementwise

    x = astensor(x)
    if x.dtype.kind == "c":
        raise TypeError("x may not be complex")
    if isinstance(bins, Tensor):
        if bins.ndim != 1:
            raise ValueError("object too deep for desired array" if bins.ndim > 1 else
                             "object of too small depth for desired array")
        np.digitize(np.zeros(1, x.dtype), np.zeros(2, bins.dtype), right=right)  # numpy's dtype checks
        op = TensorDigitize([x.data, bins.data], right=bool(right))
        return op.new_tensor(x.shape, np.intp)
    bins = np.asarray(bins)
    np.digitize(np.zeros(1, x.dtype), bins, right=right)  # numpy's validation
    return elementwise(_digitize_kernel, x, bins=bins, right=bool(right), dtype=np.intp)


def _bincount_chunk(x, w):
    return np.bincount(x, weights=w)


def _bincount_sum(parts, minlength):
    n = max([len(p) for p in parts] + [minlength])
    out = np.zeros(n, dtype=parts[0].dtype)
    for p in parts:
        out[: len(p)] += p
    return out


class TensorBincount(TensorOperand):
    """``np.bincount`` per chunk, the partial counts (of different lengths) added as a tree."""

    _op_name = "bincount"

    def tile(self):
        x = self.inputs[0]
        w = self.inputs[1] if len(self.inputs) > 1 else None
        if w is not None:
            if x.nsplits != w.nsplits:
                if any(has_unknown(s) for t in (x, w) for s in t.nsplits):
                    yield from ensure_known(x, w)
                if tuple(x.shape) != tuple(w.shape):
                    raise ValueError("The weights and list don't have the same length.")
                x, w = unify_nsplits([x, w])
        base = self.output_key()
        parts = []
        for c in x.chunks:
            p = self.new_chunk(c.index, (nan,), _bincount_chunk, (c, w.chunk_at(c.index) if w is not None else None))
            p.key = (f"{base}-map", *c.index)
            parts.append(p)
        combine = max(2, int(config.get("tensor.combine-size")))
        level = 0
        while len(parts) > combine:
            nxt = []
            for g in range(0, len(parts), combine):
                group = parts[g : g + combine]
                if len(group) == 1:
                    nxt.append(group[0])
                    continue
                c = self.new_chunk((g // combine,), (nan,), _bincount_sum, (group, 0))
                c.key = (f"{base}-sum{level}", g // combine)
                nxt.append(c)
            parts = nxt
            level += 1
        out = self.new_chunk((0,), (nan,), _bincount_sum, (parts, self.minlength))
        return [([out], ((nan,),))]


def bincount(x, weights=None, minlength=0, chunk_size_limit=None):
    """``numpy.bincount`` of a 1-d tensor of non-negative ints (``int64``, or ``float64``
    with ``weights``).  The length, ``max(x) + 1`` or ``minlength``, is known after
    execution.  ``chunk_size_limit`` (Mars's) is accepted: the counts come as one chunk."""
    x = astensor(x)
    inputs = [x.data]
    probe_w = None
    if weights is not None:
        w = astensor(weights)
        if not has_unknown(x.shape) and not has_unknown(w.shape) and tuple(w.shape) != tuple(x.shape):
            raise ValueError("The weights and list don't have the same length.")
        probe_w = np.zeros(0 if not has_unknown(x.shape) and x.size == 0 else 1, dtype=w.dtype)
        inputs.append(w.data)
    probe = np.zeros((0 if not has_unknown(x.shape) and x.size == 0 else 1,) * max(x.ndim, 1), dtype=x.dtype)
    if x.ndim == 0:
        probe = probe.reshape(())
    if probe_w is not None:
        probe_w = probe_w.reshape(probe.shape)
    dtype = np.bincount(probe, weights=probe_w, minlength=minlength).dtype  # numpy's validation
    op = TensorBincount(inputs, minlength=operator.index(minlength))
    return op.new_tensor((nan,), dtype)
