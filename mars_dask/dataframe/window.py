"""Window operations: ``rolling``, ``expanding``, ``ewm`` and ``shift``/``diff``/``pct_change``.

None of them gathers the data: every output chunk is computed from its own input chunk plus
what it needs from its neighbours, passed along by a *scan* over the chunks
(:class:`WindowScan`):

- **halos** (``rolling``, ``shift``, ``diff``, ``pct_change``): each chunk receives the last
  rows of the chunks before it (``window`` rows, or for time-based windows the rows within
  ``window`` of the last timestamp) and, for ``center=True`` or negative periods, the first
  rows of the chunks after it; pandas then runs on ``halo + chunk + halo`` and the chunk's own
  rows are kept.  A chunk whose length is known to cover the halo hands it on directly, so
  with known lengths the halos of all chunks are cut in parallel; unknown lengths (after a
  filter), short and empty chunks chain tiny "carry" tasks instead.
- **prefix states** (``expanding``, ``ewm``): each chunk is summarized in parallel (count,
  mean and central moments, sum, min, max; for ``ewm`` the decayed weights and weighted
  moments), the summaries are combined along the chain (Chan/Pebay formulas, with the
  exponential decay of the earlier state), and every chunk then computes its rows from the
  state of everything before it.  ``expanding`` aggregations without a bounded state
  (``median``, ``quantile``, callables) receive all earlier rows instead.

Results follow pandas (``float64`` results, NaN placement, ``min_periods``, column layout of
``agg`` with lists and dicts); floating-point sums can differ from pandas' in the last bits
because pandas accumulates through the whole column while chunks start from a carried state.
"""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import numpy as np
import pandas as pd
from pandas.api.types import is_list_like

from .core import DataFrame, DataFrameOperand, Series, frame_nsplits, infer_meta, nan, register_method
from .map import map_rows

__all__: list[str] = []

_no_default = pd.api.extensions.no_default


def _isnan(x):
    return isinstance(x, float) and math.isnan(x)


# ---- the scan operand ---------------------------------------------------------------------


class WindowScan(DataFrameOperand):
    """Output chunk ``i`` = ``final(prev_i, chunk_i, next_i, *fargs)``.

    ``back``/``fwd`` = ``(summarize, combine, sargs, enough)`` or None: ``summarize(chunk,
    *sargs)`` gives a chunk's edge (tail/head rows or a state summary), ``combine(carry, edge,
    *sargs)`` folds it into the carry of all chunks before (after) it (``carry`` may be None).
    ``enough``: a chunk known to have at least that many rows makes its edge the carry by
    itself (halos of ``enough`` rows), so known lengths need no chain.
    """

    _op_name = "window-scan"

    def _scan(self, chunks, spec, order, tag):
        carries = [None] * len(chunks)
        if spec is None:
            return carries
        summarize, combine, sargs, enough = spec
        meta = self.inputs[0].meta
        carry = None
        for k, i in enumerate(order[:-1]):
            c = chunks[i]
            edge = self.new_chunk(i, nan, summarize, (c, *sargs), suffix=f"-{tag}edge", meta=meta)
            edge.small = True  # runs where chunk i is: only the edge rows move
            rows = c.shape[0]
            if enough is not None and (carry is None or (not _isnan(rows) and rows >= enough)):
                carry = edge
            else:
                carry = self.new_chunk(i, nan, combine, (carry, edge, *sargs), suffix=f"-{tag}carry", meta=meta)
            carries[order[k + 1]] = carry
        return carries

    def tile(self):
        (t,) = self.inputs
        out = self.output
        chunks = t.chunks
        n = len(chunks)
        prev = self._scan(chunks, self.back, list(range(n)), "b")
        nxt = self._scan(chunks, self.fwd, list(range(n - 1, -1, -1)), "f")
        res = [
            self.new_chunk(i, chunks[i].shape[0], self.final, (prev[i], chunks[i], nxt[i], *self.fargs))
            for i in range(n)
        ]
        return [(res, frame_nsplits(out.meta, tuple(c.shape[0] for c in res)))]


def _scan_output(obj, meta, final, fargs, back=None, fwd=None):
    data = obj.data
    op = WindowScan([data], back=back, fwd=fwd, final=final, fargs=tuple(fargs))
    return op.new_output(meta, data.shape[0], index_key=data.index_key, range_index=data.range_index)


# ---- halos ----------------------------------------------------------------------------------


def _concat(parts):
    parts = [p for p in parts if p is not None]
    nonempty = [p for p in parts if len(p)]
    if not nonempty:
        return parts[0]
    if len(nonempty) == 1:
        return nonempty[0]
    return pd.concat(nonempty)


def _tail(obj, b):
    return obj.iloc[max(len(obj) - b, 0):]


def _tail_combine(carry, edge, b):
    return _tail(_concat([carry, edge]), b)


def _head(obj, a):
    return obj.iloc[:a]


def _head_combine(carry, edge, a):
    return _head(_concat([edge, carry]), a)


def _time_values(obj, on):
    v = obj.index if on is None else pd.Index(obj[on])
    if isinstance(v, pd.PeriodIndex):
        v = v.to_timestamp()
    return v


def _time_near(obj, on, width, last):
    """Rows of ``obj`` within ``width`` of its last (first) timestamp."""
    if len(obj) == 0:
        return obj
    v = _time_values(obj, on)
    ref = v[-1] if last else v[0]
    try:
        keep = np.asarray(abs(v - ref) <= width)
    except (TypeError, ValueError):  # not datetime-like: pandas raises in the final kernel
        return obj
    return obj.iloc[np.flatnonzero(keep)]


def _time_tail(obj, on, width):
    return _time_near(obj, on, width, True)


def _time_tail_combine(carry, edge, on, width):
    return _time_near(_concat([carry, edge]), on, width, True)


def _time_head(obj, on, width):
    return _time_near(obj, on, width, False)


def _time_head_combine(carry, edge, on, width):
    return _time_near(_concat([edge, carry]), on, width, False)


def _conform(res, meta):
    from .arithmetic import _conform as conform

    return conform(res, meta)


def _halo_final(prev, chunk, nxt, func, fargs, meta):
    """``func`` on ``prev + chunk + nxt``, keeping the chunk's rows."""
    ext = _concat([prev, chunk, nxt])
    res = func(ext, *fargs)
    start = len(prev) if prev is not None else 0
    res = res.iloc[start:start + len(chunk)]
    return _conform(res, meta)


def _row_halo(before, after):
    back = (_tail, _tail_combine, (before,), before) if before > 0 else None
    fwd = (_head, _head_combine, (after,), after) if after > 0 else None
    return back, fwd


def _halo_map(obj, func, fargs, meta, before, after):
    """``func(ext, *fargs)`` on every chunk extended by ``before`` rows of the chunks before it
    and ``after`` rows of those after it (results keep the chunk's rows)."""
    if before <= 0 and after <= 0:
        return map_rows(_plain_final, obj, func, fargs, meta, meta=meta, name="window")
    back, fwd = _row_halo(before, after)
    return _scan_output(obj, meta, _halo_final, (func, fargs, meta), back=back, fwd=fwd)


def _plain_final(chunk, func, fargs, meta):
    return _conform(func(chunk, *fargs), meta)


# ---- shift / diff / pct_change ----------------------------------------------------------------


def _check_axis(obj, axis):
    if axis in (0, "index", "rows", None):
        return 0
    if axis in (1, "columns") and isinstance(obj, DataFrame):
        return 1
    raise ValueError(f"No axis named {axis} for object type {type(obj).__name__}")


def _call(obj, name, args, kwargs):
    return getattr(obj, name)(*args, **kwargs)


def _call_conformed(obj, name, args, kwargs, meta):
    """``obj.<name>(...)`` cast to the dtypes of ``meta`` (an empty chunk can give others)."""
    return _conform(getattr(obj, name)(*args, **kwargs), meta)


def _method_meta(obj_data, name, args, kw):
    """Output structure of ``obj.<name>(*args, **kw)``: from a non-empty stand-in, or from the
    empty object itself when the input is known to be empty (pandas then keeps the dtypes)."""
    if obj_data.shape[0] == 0:
        res = _call(obj_data.meta, name, args, kw)
        return res.iloc[:0]
    return infer_meta(_call, obj_data.meta, name, args, kw)


def _periods_extent(periods):
    ps = list(periods) if is_list_like(periods) else [periods]
    return max([p for p in ps if p > 0], default=0), max([-p for p in ps if p < 0], default=0)


@register_method(DataFrame, Series)
def shift(self, periods=1, freq=None, axis=0, fill_value=_no_default, suffix=None):
    """pandas' ``shift``: without ``freq`` each chunk takes the rows it needs from its
    neighbours; with ``freq`` only the labels move (chunk by chunk).  Mars's
    ``fill_value=None`` means the default missing value, as in pandas."""
    axis = _check_axis(self, axis)
    if fill_value is None:
        fill_value = _no_default
    kw = {"freq": freq, "axis": axis}
    if fill_value is not _no_default:
        kw["fill_value"] = fill_value
    if suffix is not None:
        kw["suffix"] = suffix
    meta = _method_meta(self.data, "shift", (periods,), kw)
    if axis == 1 or freq is not None:
        return map_rows(_call_conformed, self, "shift", (periods,), kw, meta, meta=meta, preserves_index=axis == 1,
                        name="shift")
    before, after = _periods_extent(periods)
    return _halo_map(self, _call, ("shift", (periods,), kw), meta, before, after)


@register_method(DataFrame, Series)
def tshift(self, periods=1, freq=None, axis=0):
    """Mars's ``tshift`` (removed from pandas): ``shift(periods, freq=freq)`` of the labels."""
    axis = _check_axis(self, axis)
    if axis == 1:
        raise NotImplementedError("tshift along the columns is not supported")
    if freq is None:
        freq = getattr(self.data.meta.index, "freq", None)
    if freq is None:
        raise ValueError("Freq was not given and was not set in the index")
    return shift(self, periods, freq=freq)


@register_method(DataFrame, Series)
def diff(self, periods=1, axis=0):
    """pandas' ``diff`` (each chunk takes ``|periods|`` rows from its neighbours)."""
    if isinstance(self, Series):
        if axis not in (0, "index", "rows"):
            raise ValueError(f"No axis named {axis} for object type Series")
        meta = _method_meta(self.data, "diff", (periods,), {})
        kw = {}
    else:
        axis = _check_axis(self, axis)
        kw = {"axis": axis}
        meta = _method_meta(self.data, "diff", (periods,), kw)
        if axis == 1:
            return map_rows(_call_conformed, self, "diff", (periods,), kw, meta, meta=meta, name="diff")
    before, after = _periods_extent(periods)
    return _halo_map(self, _call, ("diff", (periods,), kw), meta, before, after)


_FILL_METHODS = {"pad": "ffill", "ffill": "ffill", "backfill": "bfill", "bfill": "bfill"}


@register_method(DataFrame, Series)
def pct_change(self, periods=1, fill_method=None, limit=None, freq=None, **kwargs):
    """pandas' ``pct_change`` (``self / self.shift(periods) - 1``; no NA filling, as in the
    installed pandas).  Mars's ``fill_method='pad'|'ffill'|'bfill'`` still fills missing
    values first (across chunks), with the FutureWarning pandas 2.x gave."""
    axis = _check_axis(self, kwargs.pop("axis", 0))
    if kwargs:
        raise TypeError(f"pct_change() got unexpected keyword arguments {sorted(kwargs)}")
    data = self
    if fill_method is not None or limit is not None:
        m = _FILL_METHODS.get(fill_method or "pad")
        if m is None:
            raise ValueError(f"Invalid fill method. Expecting pad (ffill) or backfill (bfill). Got {fill_method}")
        warnings.warn(
            f"The 'fill_method' keyword being not None and the 'limit' keyword in "
            f"{type(self).__name__}.pct_change are deprecated and will be removed in a future version. "
            "Either fill in any non-leading NA values prior to calling pct_change or specify "
            "'fill_method=None' to not fill NA values.",
            FutureWarning,
            stacklevel=2,
        )
        data = getattr(self, m)(limit=limit)
    kw = {"axis": axis} if isinstance(self, DataFrame) else {}
    if freq is not None:
        kw["freq"] = freq
    meta = _method_meta(data.data, "pct_change", (periods,), kw)
    if freq is not None:
        if axis == 1:
            raise NotImplementedError("pct_change(freq=...) along the columns is not supported")
        return _pct_change_freq(data, periods, freq, kw, meta)
    if axis == 1:
        return map_rows(_call_conformed, data, "pct_change", (periods,), kw, meta, meta=meta, name="pct_change")
    before, after = _periods_extent(periods)
    return _halo_map(data, _call, ("pct_change", (periods,), kw), meta, before, after)


def _pct_change_freq_kernel(ext, periods, kw):
    idx = ext.index
    if not (idx.is_monotonic_increasing or idx.is_monotonic_decreasing):
        raise ValueError("pct_change(freq=...) across chunks needs a monotonic index")
    return ext.pct_change(periods, **kw)


def _pct_change_freq(data, periods, freq, kw, meta):
    """``pct_change(periods, freq=freq)``: the labels ``periods * freq`` away are within a
    time halo of that width (a fixed frequency and a sorted index are needed)."""
    try:
        width = abs(periods) * _time_width(freq)
    except ValueError:
        raise NotImplementedError(f"pct_change with the non-fixed frequency {freq!r} is not supported") from None
    back = (_time_tail, _time_tail_combine, (None, width), None) if periods > 0 else None
    fwd = (_time_head, _time_head_combine, (None, width), None) if periods < 0 else None
    return _scan_output(data, meta, _halo_final, (_pct_change_freq_kernel, (periods, kw), meta), back=back, fwd=fwd)


# ---- aggregation plans ---------------------------------------------------------------------


def _func_name(f):
    if isinstance(f, str):
        return f
    return {np.sum: "sum", np.mean: "mean", np.std: "std", np.var: "var", np.min: "min", np.max: "max",
            np.median: "median", np.nansum: "sum", np.nanmean: "mean"}.get(f)


def _agg_plan(meta_in, func):
    """``[(column or None, function name)]`` in the order of pandas' result columns, or None
    when ``func`` holds something else than names."""
    if isinstance(meta_in, pd.Series):
        items = [(None, f) for f in (func if isinstance(func, list) else [func])]
    elif isinstance(func, dict):
        items = [(c, f) for c, fs in func.items() for f in (fs if isinstance(fs, list) else [fs])]
    else:
        items = [(c, f) for c in meta_in.columns for f in (func if isinstance(func, list) else [func])]
    out = []
    for c, f in items:
        name = _func_name(f)
        if name is None:
            return None
        out.append((c, name))
    return out


def _build(chunk, meta, plan, results):
    """The output chunk from ``results[(column, name)]`` arrays, shaped like ``meta``."""
    if isinstance(meta, pd.Series):
        return pd.Series(results[plan[0]], index=chunk.index, name=meta.name, dtype=meta.dtype)
    cols = {i: results[key] for i, key in enumerate(plan)}
    out = pd.DataFrame(cols, index=chunk.index)
    out.columns = meta.columns
    return _conform(out, meta)


def _columns_of(plan):
    seen = []
    for c, _ in plan:
        if c not in seen:
            seen.append(c)
    return seen


def _float_values(obj, cols):
    """2-d float64 values (rows x columns in ``cols``; a Series is one column)."""
    if isinstance(obj, pd.Series):
        return obj.to_numpy(dtype="float64", na_value=np.nan).reshape(-1, 1)
    return obj[list(cols)].to_numpy(dtype="float64", na_value=np.nan).reshape(len(obj), len(cols))


# ---- window objects ----------------------------------------------------------------------------


class _Window:
    """Shared by Rolling/Expanding/EWM: the input, column selection and method plumbing."""

    def __init__(self, obj, selection=None, **params):
        self._obj = obj
        self._selection = selection
        self._params = params

    def _pandas_params(self):
        return {k: v for k, v in self._params.items() if k != "axis"}

    def __repr__(self):
        kvs = [f"{k}={v}" for k, v in self._params.items() if v is not None]
        return f"{type(self).__name__} [{','.join(kvs)}]"

    def __getitem__(self, item):
        obj = self._obj
        if not isinstance(obj, DataFrame):
            raise KeyError(f"Column not found: {item}")
        cols = list(item) if isinstance(item, (list, tuple)) else [item]
        for c in cols:
            if c not in obj.columns:
                raise KeyError(f"Column not found: {c}")
        return type(self)(obj, selection=list(item) if isinstance(item, (list, tuple)) else item, **self._params)

    def __getattr__(self, item):
        if item.startswith("_"):
            raise AttributeError(item)
        params = self.__dict__.get("_params", {})
        if item in params:  # r.window, r.min_periods, e.adjust... as in Mars and pandas
            return params[item]
        obj = self.__dict__.get("_obj")
        if isinstance(obj, DataFrame) and self._selection is None and item in obj.columns:
            return self[item]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute {item!r}")

    def __dir__(self):
        extra = []
        if isinstance(self._obj, DataFrame) and self._selection is None:
            extra = [c for c in self._obj.columns if isinstance(c, str) and c.isidentifier()]
        return sorted(set(super().__dir__()) | set(extra))

    def _projected(self, keep=()):
        """The input restricted to the selected columns, and the selection still to apply
        inside the kernel (only when columns in ``keep``, e.g. ``on=``, must come along)."""
        obj, sel = self._obj, self._selection
        if sel is None:
            return obj, None
        cols = list(sel) if isinstance(sel, list) else [sel]
        extra = [k for k in keep if k is not None and k not in cols]
        if not extra:
            return obj[sel], None
        return obj[cols + extra], sel

    def agg(self, func, *args, **kwargs):
        return self.aggregate(func, *args, **kwargs)


def _window_call(obj, kind, params, sel, how, args, kwargs):
    w = getattr(obj, kind)(**params)
    if sel is not None:
        w = w[sel]
    return getattr(w, how)(*args, **kwargs)


# ---- rolling ------------------------------------------------------------------------------------


def _time_width(window):
    from pandas.tseries.frequencies import to_offset

    if isinstance(window, (pd.Timedelta, np.timedelta64)) or hasattr(window, "total_seconds"):
        return pd.Timedelta(window)
    off = to_offset(window)
    return pd.Timedelta(off.nanos, unit="ns")


class _RowAggregations(_Window):
    """The aggregations ``rolling`` and ``expanding`` share (``ewm`` has its own few):
    each is ``self._apply(name, args, kwargs)``."""

    def count(self, **kwargs):
        return self._apply("count", (), kwargs)

    def sum(self, *args, **kwargs):
        return self._apply("sum", args, kwargs)

    def mean(self, *args, **kwargs):
        return self._apply("mean", args, kwargs)

    def median(self, **kwargs):
        return self._apply("median", (), kwargs)

    def var(self, ddof=1, *args, **kwargs):
        return self._apply("var", (), {"ddof": ddof, **kwargs})

    def std(self, ddof=1, *args, **kwargs):
        return self._apply("std", (), {"ddof": ddof, **kwargs})

    def min(self, *args, **kwargs):
        return self._apply("min", args, kwargs)

    def max(self, *args, **kwargs):
        return self._apply("max", args, kwargs)

    def skew(self, **kwargs):
        return self._apply("skew", (), kwargs)

    def kurt(self, **kwargs):
        return self._apply("kurt", (), kwargs)

    def sem(self, ddof=1, **kwargs):
        return self._apply("sem", (), {"ddof": ddof, **kwargs})

    def quantile(self, q, interpolation="linear", **kwargs):
        return self._apply("quantile", (q,), {"interpolation": interpolation, **kwargs})

    def apply(self, func, raw=False, engine=None, engine_kwargs=None, args=None, kwargs=None):
        return self._apply("apply", (func,), {"raw": raw, "args": args, "kwargs": kwargs})


class Rolling(_RowAggregations):
    """``obj.rolling(...)``: every chunk gets the preceding rows its windows reach (and the
    following ones with ``center=True``) and pandas computes the windows."""

    def _halos(self):
        p = self._params
        window, center, on = p["window"], p["center"], p["on"]
        if isinstance(window, (int, np.integer)):
            w = int(window)
            before = w
            after = (w - 1) // 2 + 1 if center else 0
            return _row_halo(before, after)
        if is_list_like(window) or hasattr(window, "get_window_bounds"):
            raise NotImplementedError("rolling with a window array or BaseIndexer is not supported")
        width = _time_width(window)
        back = (_time_tail, _time_tail_combine, (on, width), None)
        fwd = (_time_head, _time_head_combine, (on, width), None) if center else None
        return back, fwd

    def aggregate(self, func, *args, **kwargs):
        return self._apply("aggregate", (func, *args), kwargs)

    def _apply(self, how, args=(), kwargs=None):
        kwargs = kwargs or {}
        obj, sel = self._projected(keep=(self._params.get("on"),))
        params = self._pandas_params()
        fargs = ("rolling", params, sel, how, tuple(args), kwargs)
        meta = infer_meta(_window_call, obj.data.meta, *fargs)
        back, fwd = self._halos()
        return _scan_output(obj, meta, _halo_final, (_window_call, fargs, meta), back=back, fwd=fwd)


def _validate(obj, kind, params):
    """pandas validates the window arguments (its own errors) on a non-empty stand-in."""
    from ._meta import meta_nonempty

    getattr(meta_nonempty(obj.data.meta), kind)(**params)


def _validate_axis(obj, axis, what):
    if axis in (0, "index", "rows", None):
        return 0
    if axis in (1, "columns") and isinstance(obj, DataFrame):
        raise NotImplementedError(f"{what} along the columns (axis=1) is not supported")
    raise ValueError(f"No axis named {axis} for object type {type(obj).__name__}")


@register_method(DataFrame, Series)
def rolling(self, window, min_periods=None, center=False, win_type=None, on=None, axis=0, closed=None):
    """Mars's ``rolling`` (pandas' windows: integer sizes, time offsets on a DatetimeIndex or
    ``on=`` column, ``win_type`` weights, ``closed``), computed chunk by chunk with the rows
    each chunk needs from its neighbours."""
    axis = _validate_axis(self, axis, "rolling")
    params = dict(window=window, min_periods=min_periods, center=center, win_type=win_type, on=on, closed=closed)
    _validate(self, "rolling", params)
    return Rolling(self, **params, axis=axis)


# ---- expanding ----------------------------------------------------------------------------------

_EXPANDING_STREAMING = frozenset({"count", "sum", "mean", "var", "std", "min", "max", "skew", "kurt"})


def _moments_summary(chunk, cols):
    """Per-column summary of a chunk: rows, count, mean, central moments M2..M4, sum, min, max."""
    x = _float_values(chunk, cols)
    obs = ~np.isnan(x)
    n = obs.sum(axis=0).astype("float64")
    with np.errstate(invalid="ignore", divide="ignore"):
        s = np.where(obs, x, 0.0).sum(axis=0)
        mean = np.where(n > 0, s / np.where(n > 0, n, 1), 0.0)
        d = np.where(obs, x - mean, 0.0)
        m2, m3, m4 = (d ** 2).sum(axis=0), (d ** 3).sum(axis=0), (d ** 4).sum(axis=0)
        mn = np.where(n > 0, np.fmin.reduce(x, axis=0) if len(x) else np.nan, np.nan)
        mx = np.where(n > 0, np.fmax.reduce(x, axis=0) if len(x) else np.nan, np.nan)
    return {"rows": float(len(x)), "n": n, "mean": mean, "m2": m2, "m3": m3, "m4": m4, "sum": s, "min": mn, "max": mx}


def _moments_combine(a, b, cols=None):
    """Pebay's pairwise combination of two moment summaries (``a`` before ``b``)."""
    if a is None:
        return b
    na, nb = a["n"], b["n"]
    n = na + nb
    with np.errstate(invalid="ignore", divide="ignore"):
        safe = np.where(n > 0, n, 1.0)
        delta = b["mean"] - a["mean"]
        mean = np.where(n > 0, a["mean"] + delta * nb / safe, 0.0)
        m2 = a["m2"] + b["m2"] + delta ** 2 * na * nb / safe
        m3 = (a["m3"] + b["m3"] + delta ** 3 * na * nb * (na - nb) / safe ** 2
              + 3 * delta * (na * b["m2"] - nb * a["m2"]) / safe)
        m4 = (a["m4"] + b["m4"] + delta ** 4 * na * nb * (na * na - na * nb + nb * nb) / safe ** 3
              + 6 * delta ** 2 * (na * na * b["m2"] + nb * nb * a["m2"]) / safe ** 2
              + 4 * delta * (na * b["m3"] - nb * a["m3"]) / safe)
        out = {"rows": a["rows"] + b["rows"], "n": n}
        for k, v in (("mean", mean), ("m2", m2), ("m3", m3), ("m4", m4)):
            out[k] = np.where(na == 0, b[k], np.where(nb == 0, a[k], v))
    out["sum"] = a["sum"] + b["sum"]
    out["min"] = np.fmin(a["min"], b["min"])
    out["max"] = np.fmax(a["max"], b["max"])
    return out


def _expanding_results(chunk, state, plan, minp, kwargs):
    """Per-row expanding aggregations of ``chunk`` given the summary of all earlier rows."""
    cols = _columns_of(plan)
    x = _float_values(chunk, cols)
    k = x.shape[1]
    if state is None:
        z = np.zeros(k)
        state = {"rows": 0.0, "n": z, "mean": z, "m2": z, "m3": z, "m4": z, "sum": z,
                 "min": np.full(k, np.nan), "max": np.full(k, np.nan)}
    obs = ~np.isnan(x)
    rows = state["rows"] + np.arange(1, len(x) + 1, dtype="float64")[:, None]
    n = state["n"] + np.cumsum(obs, axis=0)
    # centre: the mean of the earlier rows (their raw sums about it are their central moments)
    first = np.where(obs.any(axis=0), x[np.argmax(obs, axis=0), np.arange(k)] if len(x) else 0.0, 0.0)
    c = np.where(state["n"] > 0, state["mean"], first)
    d = np.where(obs, x - c, 0.0)
    s1 = np.cumsum(d, axis=0)
    s2 = state["m2"] + np.cumsum(d * d, axis=0)
    names = {name for _, name in plan}
    s3 = state["m3"] + np.cumsum(d ** 3, axis=0) if names & {"skew", "kurt"} else None
    s4 = state["m4"] + np.cumsum(d ** 4, axis=0) if "kurt" in names else None
    res = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        for j, col in enumerate(cols):
            nj = n[:, j]
            for cc, name in plan:
                if cc != col:
                    continue
                if name == "count":
                    v = np.where(rows[:, 0] >= minp, nj, np.nan)
                elif name == "sum":
                    v = state["sum"][j] + np.cumsum(np.where(obs[:, j], x[:, j], 0.0))
                    v = np.where(nj >= minp, v, np.nan)
                    v = np.where((nj == 0) & (minp == 0), 0.0, v)
                elif name == "mean":
                    v = np.where((nj >= minp) & (nj > 0), c[j] + s1[:, j] / nj, np.nan)
                elif name in ("var", "std"):
                    ddof = kwargs.get("ddof", 1)
                    m2 = np.maximum(s2[:, j] - s1[:, j] ** 2 / nj, 0.0)
                    v = np.where((nj >= max(minp, 1)) & (nj > ddof), np.where(nj == 1, 0.0, m2 / (nj - ddof)), np.nan)
                    if name == "std":
                        v = np.sqrt(v)
                elif name in ("min", "max"):
                    acc = np.fmin if name == "min" else np.fmax
                    v = acc(state[name][j], acc.accumulate(x[:, j])) if len(x) else x[:, j]
                    v = np.where((nj >= minp) & (nj > 0), v, np.nan)
                elif name == "skew":
                    a = s1[:, j] / nj
                    b = s2[:, j] / nj - a * a
                    cm = s3[:, j] / nj - a ** 3 - 3 * a * b
                    v = np.sqrt(nj * (nj - 1)) * cm / ((nj - 2) * b ** 1.5)
                    v = np.where((nj >= max(minp, 3)) & (nj >= 3) & (b > 1e-14), v, np.nan)
                else:  # kurt
                    a = s1[:, j] / nj
                    r = a * a
                    b = s2[:, j] / nj - r
                    r = r * a
                    cm = s3[:, j] / nj - r - 3 * a * b
                    r = r * a
                    dm = s4[:, j] / nj - r - 6 * b * a * a - 4 * cm * a
                    kk = (nj * nj - 1.0) * dm / (b * b) - 3 * (nj - 1.0) ** 2
                    v = kk / ((nj - 2.0) * (nj - 3.0))
                    v = np.where((nj >= max(minp, 4)) & (nj >= 4) & (b > 1e-14), v, np.nan)
                res[(cc, name)] = v
    return res


def _expanding_final(prev, chunk, nxt, meta, plan, minp, kwargs):
    return _build(chunk, meta, plan, _expanding_results(chunk, prev, plan, minp, kwargs))


def _identity(obj, *_):
    return obj


def _concat_carry(carry, edge, *_):
    return _concat([carry, edge])


class Expanding(_RowAggregations):
    """``obj.expanding(...)``: a chain of per-chunk summaries (count, mean, central moments,
    sum, min, max) gives every chunk the state of all rows before it.  ``median``,
    ``quantile`` and callables have no bounded state: each chunk then receives all earlier
    rows (cost grows with the square of the number of chunks)."""

    def aggregate(self, func, *args, **kwargs):
        return self._apply("aggregate", (func, *args), kwargs)

    def _apply(self, how, args=(), kwargs=None):
        kwargs = kwargs or {}
        obj, sel = self._projected()
        params = self._pandas_params()
        fargs = ("expanding", params, sel, how, tuple(args), kwargs)
        meta = infer_meta(_window_call, obj.data.meta, *fargs)
        func = args[0] if how == "aggregate" else how
        if how == "aggregate" and len(args) > 1:
            func = None
        plan = _agg_plan(obj.data.meta, func) if isinstance(func, (str, list, dict)) else None
        extra = set(kwargs) - {"ddof"}
        if plan is not None and all(name in _EXPANDING_STREAMING for _, name in plan) and not extra:
            cols = _columns_of(plan)
            back = (_moments_summary, _moments_combine, (cols,), None)
            minp = params.get("min_periods", 1)
            minp = 1 if minp is None else minp
            return _scan_output(obj, meta, _expanding_final, (meta, plan, minp, kwargs), back=back)
        back = (_identity, _concat_carry, (), None)
        return _scan_output(obj, meta, _halo_final, (_window_call, fargs, meta), back=back)


@register_method(DataFrame, Series)
def expanding(self, min_periods=1, center=False, axis=0):
    """Mars's ``expanding``: running aggregations with the state of all earlier chunks
    carried forward (``center=True`` is not supported, as in Mars)."""
    if center:
        raise NotImplementedError("center == True is not supported")
    axis = _validate_axis(self, axis, "expanding")
    params = dict(min_periods=min_periods)
    _validate(self, "expanding", params)
    return Expanding(self, **params, axis=axis)


# ---- ewm ---------------------------------------------------------------------------------------

_EWM_FUNCS = frozenset({"mean", "var", "std", "sum"})


def _lfilter(u, r, z):
    """``y[t] = u[t] + r * y[t-1]`` with ``y[-1] = z`` (along axis 0)."""
    from scipy.signal import lfilter

    if len(u) == 0:
        return u
    return lfilter([1.0], [1.0, -r], u, zi=[r * z])[0]


def _ewm_sequence(x, prefix, r, new_wt, fresh_first=True):
    """Weighted sums after every element of ``x`` (all observations; NaN rows mean decay
    only), from the state ``prefix = (n, W, W2, mu, M2)`` of the rows before.  Returns
    ``(n, W, W2, S1, S2, c)``: count, sum of weights and of squared weights, and the weighted
    sums of ``x - c`` and ``(x - c)**2``."""
    n_p, w_p, w2_p, mu_p, m2_p = prefix
    obs = ~np.isnan(x)
    cw = np.where(obs, new_wt, 0.0)
    has = obs.any()
    first = int(np.argmax(obs)) if has else 0
    if n_p == 0 and has and fresh_first:
        cw[first] = 1.0
    c = mu_p if n_p > 0 else (x[first] if has else 0.0)
    d = np.where(obs, x - c, 0.0)
    w = _lfilter(cw, r, w_p)
    w2 = _lfilter(cw * cw, r * r, w2_p)
    s1 = _lfilter(cw * d, r, 0.0)
    s2 = _lfilter(cw * d * d, r, m2_p)
    n = n_p + np.cumsum(obs)
    return n, w, w2, s1, s2, c


class _EwmParams(NamedTuple):
    """Decay parameters (computed as pandas does: ``alpha = 1 / (1 + com)``)."""

    alpha: float
    r: float
    new_wt: float
    adjust: bool
    ignore_na: bool
    minp: int

    @classmethod
    def make(cls, com, adjust, ignore_na, minp):
        alpha = 1.0 / (1.0 + com)
        return cls(alpha, 1.0 - alpha, 1.0 if adjust else alpha, bool(adjust), bool(ignore_na), int(minp))


def _moments_of(seq):
    """``(n, W, W2, S1, S2, c)`` rows as ``(n, W, W2, mean, M2)`` rows."""
    n, w, w2, s1, s2, c = seq
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = c + s1 / w
        m2 = np.where(w > 0, np.maximum(s2 - s1 * s1 / w, 0.0), s2)
    return n, w, w2, mean, m2


def _ewm_exact_rows(x, prefix, p: _EwmParams, return_state=False):
    """``adjust=False, ignore_na=False``: pandas renormalizes the weights after every
    observation, which only matters after missing values (a run of consecutive observations
    keeps the total weight at 1).  So the column is cut after every observation that follows
    a gap, and each piece runs from the renormalized state of the one before."""
    obs = ~np.isnan(x)
    k = np.flatnonzero(obs[1:] & ~obs[:-1]) + 2  # cut after an observation preceded by NaN
    first = np.flatnonzero(obs[:1]) + 1  # and after the chunk's first row if observed
    cuts = np.unique(np.concatenate([[0], first, k, [len(x)]])).astype(int)
    state = prefix
    parts = []
    for a, b in zip(cuts[:-1], cuts[1:]):
        seq = _ewm_sequence(x[a:b], state, p.r, p.new_wt)
        rows = _moments_of(seq)
        parts.append(rows)
        n, w, w2, mean, m2 = (float(v[-1]) for v in rows)
        if obs[b - 1] and w > 0:  # renormalized after the observation
            state = (n, 1.0, w2 / (w * w), mean, m2 / w)
        elif n == 0:
            state = prefix
        else:
            state = (n, w, w2, mean if w > 0 else state[3], m2)
    if return_state:
        return state
    if not parts:
        z = np.zeros(0)
        return z, z, z, z, z
    return tuple(np.concatenate([pt[i] for pt in parts]) for i in range(5))


def _ewm_column_rows(x, prefix, p: _EwmParams):
    """Per-row ``(n, W, W2, mean, M2)`` of one column given the state of the rows before."""
    if not p.ignore_na:
        if not p.adjust:
            return _ewm_exact_rows(x, prefix, p)
        return _moments_of(_ewm_sequence(x, prefix, p.r, p.new_wt))
    obs = ~np.isnan(x)
    n, w, w2, mean, m2 = _moments_of(_ewm_sequence(x[obs], prefix, p.r, p.new_wt))
    pos = np.cumsum(obs)  # 0: no observation yet in the chunk -> the prefix state
    n_p, w_p, w2_p, mu_p, m2_p = prefix

    def ex(a, a0):
        return np.concatenate([[a0], a])[pos]

    return ex(n, n_p), ex(w, w_p), ex(w2, w2_p), ex(mean, mu_p if n_p else np.nan), ex(m2, m2_p)


def _ewm_state_of(rows, prefix):
    n, w, w2, mean, m2 = rows
    if len(n) == 0:
        return prefix
    nn, ww = float(n[-1]), float(w[-1])
    if nn == 0:
        return prefix
    if ww == 0:
        return (nn, ww, float(w2[-1]), prefix[3], float(m2[-1]))
    return (nn, ww, float(w2[-1]), float(mean[-1]), float(m2[-1]))


_EMPTY_EWM = (0.0, 0.0, 0.0, 0.0, 0.0)


def _ewm_summary(chunk, cols, p):
    """Per column: steps of decay in the chunk and its own state, starting fresh (first
    observation weighted 1) and continuing an earlier state (first weighted like the rest)."""
    x = _float_values(chunk, cols)
    out = []
    for j in range(x.shape[1]):
        col = x[:, j]
        obs = ~np.isnan(col)
        steps = float(obs.sum()) if p.ignore_na else float(len(col))
        seq = col[obs] if p.ignore_na else col
        fresh = _ewm_state_of(_moments_of(_ewm_sequence(seq, _EMPTY_EWM, p.r, p.new_wt, True)), _EMPTY_EWM)
        cont = fresh if p.adjust else _ewm_state_of(
            _moments_of(_ewm_sequence(seq, _EMPTY_EWM, p.r, p.new_wt, False)), _EMPTY_EWM)
        out.append((steps, fresh, cont))
    return out


def _ewm_combine(state, summary, cols, p):
    if state is None:
        state = [_EMPTY_EWM] * len(summary)
    out = []
    for (n_a, w_a, w2_a, mu_a, m2_a), (steps, fresh, cont) in zip(state, summary):
        if n_a == 0:
            out.append(fresh)
            continue
        n_b, w_b, w2_b, mu_b, m2_b = cont
        dec = p.r ** steps
        w_a, w2_a, m2_a = w_a * dec, w2_a * (p.r * p.r) ** steps, m2_a * dec
        w = w_a + w_b
        if n_b == 0 or w_b == 0:
            out.append((n_a + n_b, w, w2_a + w2_b, mu_a, m2_a))
            continue
        if w == 0:
            out.append((n_a + n_b, w, w2_a + w2_b, mu_b, m2_b))
            continue
        delta = mu_b - mu_a
        mu = mu_a + delta * w_b / w
        m2 = m2_a + m2_b + delta * delta * w_a * w_b / w
        out.append((n_a + n_b, w, w2_a + w2_b, mu, m2))
    return out


def _ewm_exact_combine(state, chunk, cols, p):
    """The state after ``chunk`` (sequential: ``adjust=False, ignore_na=False``)."""
    x = _float_values(chunk, cols)
    if state is None:
        state = [_EMPTY_EWM] * x.shape[1]
    return [_ewm_exact_rows(x[:, j], state[j], p, return_state=True) for j in range(x.shape[1])]


def _ewm_final(prev, chunk, nxt, meta, plan, p, kwargs):
    cols = _columns_of(plan)
    x = _float_values(chunk, cols)
    res = {}
    for j, col in enumerate(cols):
        prefix = prev[j] if prev is not None else _EMPTY_EWM
        n, w, w2, mean, m2 = _ewm_column_rows(x[:, j], prefix, p)
        with np.errstate(invalid="ignore", divide="ignore"):
            ok = (n >= p.minp) & (n > 0) & (w > 0)
            bias_var = m2 / w
            den = w * w - w2
            unbiased = np.where((den > 0) & (n > 1), bias_var * (w * w) / den, np.nan)
        for cc, name in plan:
            if cc != col:
                continue
            if name == "mean":
                v = mean
            elif name == "sum":
                v = mean * w
            else:
                v = bias_var if kwargs.get("bias", False) else unbiased
                if name == "std":
                    v = np.sqrt(v)
            res[(cc, name)] = np.where(ok, v, np.nan)
    return _build(chunk, meta, plan, res)


def _get_com(com, span, halflife, alpha):
    if com is not None:
        return float(com)
    if span is not None:
        return (span - 1) / 2
    if halflife is not None:
        decay = 1 - np.exp(np.log(0.5) / halflife)
        return 1 / decay - 1
    return (1 - alpha) / alpha


class EWM(_Window):
    """``obj.ewm(...)``: the exponentially weighted state (weights, weighted mean and squared
    deviations) of all earlier chunks is decayed and carried into each chunk."""

    def aggregate(self, func, *args, **kwargs):
        return self._apply("aggregate", (func, *args), kwargs)

    def _apply(self, how, args=(), kwargs=None):
        kwargs = kwargs or {}
        obj, sel = self._projected()
        params = self._pandas_params()
        fargs = ("ewm", params, sel, how, tuple(args), kwargs)
        meta = infer_meta(_window_call, obj.data.meta, *fargs)
        func = args[0] if how == "aggregate" else how
        plan = _agg_plan(obj.data.meta, func) if isinstance(func, (str, list, dict)) else None
        extra = set(kwargs) - {"bias"}
        if plan is None or extra or (how == "aggregate" and len(args) > 1) or not all(
                name in _EWM_FUNCS for _, name in plan):
            raise NotImplementedError(f"ewm aggregation {func!r} is not supported (mean, var, std, sum are)")
        cols = _columns_of(plan)
        pr = params
        com = _get_com(pr["com"], pr["span"], pr["halflife"], pr["alpha"])
        minp = max(int(pr["min_periods"] or 0), 1)
        p = _EwmParams.make(com, pr["adjust"], pr["ignore_na"], minp)
        if not p.adjust and not p.ignore_na:
            back = (_identity, _ewm_exact_combine, (cols, p), None)
        else:
            back = (_ewm_summary, _ewm_combine, (cols, p), None)
        return _scan_output(obj, meta, _ewm_final, (meta, plan, p, kwargs), back=back)

    def mean(self, *args, **kwargs):
        return self._apply("mean", args, kwargs)

    def sum(self, *args, **kwargs):
        return self._apply("sum", args, kwargs)

    def var(self, bias=False, *args, **kwargs):
        return self._apply("var", (), {"bias": bias, **kwargs})

    def std(self, bias=False, *args, **kwargs):
        return self._apply("std", (), {"bias": bias, **kwargs})


@register_method(DataFrame, Series)
def ewm(self, com=None, span=None, halflife=None, alpha=None, min_periods=0, adjust=True, ignore_na=False, axis=0):
    """Mars's ``ewm`` with pandas' ``mean``/``var``/``std``/``sum`` (every ``adjust`` and
    ``ignore_na``), the weighted state carried across chunks."""
    axis = _validate_axis(self, axis, "ewm")
    params = dict(com=com, span=span, halflife=halflife, alpha=alpha, min_periods=min_periods, adjust=adjust,
                  ignore_na=ignore_na)
    _validate(self, "ewm", params)
    if isinstance(halflife, (str, pd.Timedelta)) or hasattr(halflife, "total_seconds"):
        raise NotImplementedError("ewm with a time halflife (times=) is not supported")
    return EWM(self, **params, axis=axis)
