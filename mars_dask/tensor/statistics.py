"""Order statistics and histograms: ``percentile``, ``quantile``, ``median``,
``histogram`` and ``histogram_bin_edges``.

Quantiles over the whole array (``axis=None``) sort the flattened data with PSRS
(:func:`mars_dask.tensor.sort.sort`), learn the sorted chunks' lengths, fetch only the
order statistics they need by global position, and interpolate exactly as numpy does.
Along one axis the axis is re-cut into one chunk and numpy runs block by block.

Histograms compute, when no ``range`` is given, the data's min/max with a small reduction
inside the graph; the bin edges come from numpy on those two numbers (so they are exactly
numpy's), and per-chunk counts are summed.
"""

from __future__ import annotations

import numbers

import numpy as np

from ..tiling.core import ensure_known, has_unknown
from ..tiling.tile import tile
from .core import Tensor, TensorOperand, astensor
from .rechunk import TensorRechunk, unify_nsplits
from .utils import offsets, validate_axis

__all__ = ["percentile", "quantile", "median", "histogram", "histogram_bin_edges"]

_METHODS = ("linear", "lower", "higher", "nearest", "midpoint")
_NUMPY_METHODS = (
    "inverted_cdf", "averaged_inverted_cdf", "closest_observation", "interpolated_inverted_cdf",
    "hazen", "weibull", "median_unbiased", "normal_unbiased",
) + _METHODS


# ---- quantile kernels ----------------------------------------------------------------


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
        kind, prev, nxt, gamma = _virtual_plan(n, self.q, self.method, self.weak_q)
        if n == 0 and self.method != "median":
            raise IndexError("index -1 is out of bounds for axis 0 with size 0")
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
    n = np.sum(parts, axis=0).astype(dtype, copy=False)
    if density:
        db = np.diff(edges).astype(float)
        return n / db / n.sum()
    return n


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
        if edges_t is not None:
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


def histogram(a, bins=10, range=None, density=None, weights=None):  # noqa: A002
    """``numpy.histogram``: returns ``(hist, bin_edges)`` tensors.  ``bins`` is an int, a
    monotonically increasing sequence, or a 1-d tensor of edges (string rules are not
    supported)."""
    a = astensor(a)
    if isinstance(bins, str):
        raise NotImplementedError("histogram: string bin rules are not supported; pass an int or edges")
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
        inputs, bins=None if bins_tensor or bins_array is not None else int(bins),
        bins_array=bins_array, bins_tensor=bins_tensor, range=None if range is None else tuple(range),
        density=bool(density), has_weights=w is not None, n_edges=n_edges, count_dtype=count_dtype,
    )
    hist, edges = op.new_tensors([((n_edges - 1,), hist_dtype), ((n_edges,), edges_dtype)])
    return hist, edges


def histogram_bin_edges(a, bins=10, range=None, weights=None):  # noqa: A002
    """``numpy.histogram_bin_edges`` (lazy min/max when ``range`` is None)."""
    return histogram(a, bins=bins, range=range, weights=weights)[1]
