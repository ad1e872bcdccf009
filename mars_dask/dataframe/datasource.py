"""DataFrame/Series/Index from local pandas or numpy data, and from mars tensors."""

from __future__ import annotations

import numbers

import numpy as np
import pandas as pd
from dask.utils import parse_bytes

from .. import config
from ..tiling.core import ensure_known, new_key
from ..tiling.tileable import Tileable
from .core import (
    DataFrame, DataFrameOperand, Index, Series, empty_like_meta, frame_nsplits, row_nbytes,
)

__all__: list[str] = []


def row_chunks(nrows: int, chunk_size, meta) -> tuple:
    """Row lengths for ``chunk_size`` (rows per chunk, an explicit tuple of lengths, or None
    for automatic: chunks of about ``mars-dask.tiling.chunk-store-limit`` bytes)."""
    if isinstance(chunk_size, tuple) and len(chunk_size) == 2 and not isinstance(chunk_size[0], tuple):
        chunk_size = chunk_size[0]  # Mars accepts (rows, cols); columns are never split here
    if isinstance(chunk_size, (tuple, list)):
        sizes = tuple(int(s) for s in (chunk_size[0] if isinstance(chunk_size[0], (tuple, list)) else chunk_size))
        if sum(sizes) != nrows or any(s < 0 for s in sizes):
            raise ValueError(f"chunk_size {chunk_size!r} does not add up to the {nrows} rows")
        return sizes
    if chunk_size is None:
        limit = parse_bytes(config.get("tiling.chunk-store-limit"))
        chunk_size = max(1, int(limit // max(1.0, row_nbytes(meta))))
    if not isinstance(chunk_size, numbers.Integral):
        raise TypeError(f"chunk_size must be an int, got {chunk_size!r}")
    if chunk_size <= 0:
        raise ValueError(f"chunk_size must be positive, got {chunk_size}")
    if nrows == 0:
        return (0,)
    n, rem = divmod(nrows, int(chunk_size))
    return (int(chunk_size),) * n + ((rem,) if rem else ())


def is_default_range(index: pd.Index) -> bool:
    return isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1


def _identity(x):
    return x


class PandasDataSource(DataFrameOperand):
    """Local pandas data cut into row chunks; each chunk's rows travel in the graph."""

    _op_name = "from-pandas"

    def __init__(self, data, rows):
        super().__init__([], rows=rows)
        self.data = data

    def tile(self):
        out = self.output
        offs = np.concatenate([[0], np.cumsum(self.rows)]).astype(int)
        chunks = []
        for i, n in enumerate(self.rows):
            part = self.data.iloc[offs[i] : offs[i + 1]] if not isinstance(self.data, pd.Index) else self.data[offs[i] : offs[i + 1]]
            chunks.append(self.new_chunk(i, n, _identity, (part,)))
        return [(chunks, frame_nsplits(out.meta, self.rows))]


def from_pandas(obj, chunk_size=None):
    """A DataFrame/Series/Index tileable over a local pandas object."""
    if not isinstance(obj, (pd.DataFrame, pd.Series, pd.Index)):
        raise TypeError(f"from_pandas needs a pandas DataFrame, Series or Index, got {type(obj).__name__}")
    meta = obj[:0] if isinstance(obj, pd.Index) else empty_like_meta(obj)  # keeps a MultiIndex
    rows = row_chunks(len(obj), chunk_size, meta)
    key = new_key("from-pandas", obj, rows)
    index = obj if isinstance(obj, pd.Index) else obj.index
    index_key = new_key("index", index, rows)
    op = PandasDataSource(obj, rows)
    return op.new_output(meta, len(obj), index_key=index_key, range_index=is_default_range(index), key=key)


# ---- from tensors -----------------------------------------------------------------------


def _tensor_to_frame(arr, start, columns, index_name, kind, dtype, name):
    index = pd.RangeIndex(start, start + len(arr), name=index_name)
    if kind == "series":
        return pd.Series(arr, index=index, name=name, dtype=dtype)
    if kind == "index":
        return pd.Index(arr, name=name, dtype=dtype)
    return pd.DataFrame(arr, index=index, columns=columns, dtype=dtype)


class FromTensor(DataFrameOperand):
    """Row chunks of a 1-d/2-d tensor as a DataFrame/Series/Index with a default
    RangeIndex (global offsets are needed, so row lengths must be known)."""

    _op_name = "from-tensor"

    def tile(self):
        from ..tensor.rechunk import TensorRechunk
        from ..tiling.tile import tile as tile_now

        (t,) = self.inputs
        yield from ensure_known(t)
        if t.ndim == 2 and len(t.nsplits[1]) != 1:
            op = TensorRechunk([t], chunk_size=(t.nsplits[0], (t.shape[1],)))
            t = op.new_tensor(t.shape, t.dtype).data
            tile_now([t], None)
        out = self.output
        rows = t.nsplits[0]
        chunks = []
        start = 0
        for i, n in enumerate(rows):
            src = t.chunk_at((i, 0) if t.ndim == 2 else (i,))
            chunks.append(self.new_chunk(
                i, n, _tensor_to_frame,
                (src, start, self.columns, None, self.kind, self.dtype, self.name),
            ))
            start += n
        return [(chunks, frame_nsplits(out.meta, rows))]


def from_tensor(t, kind: str, columns=None, dtype=None, name=None):
    if t.ndim not in ((1, 2) if kind == "frame" else (1,)):
        raise ValueError(f"a {kind} needs a {'1-d or 2-d' if kind == 'frame' else '1-d'} tensor, got {t.ndim}-d")
    ncols = 1 if t.ndim == 1 else t.shape[1]
    sample = np.zeros((1, ncols) if kind == "frame" else (1,), dtype=t.dtype)
    if kind == "frame" and t.ndim == 1:
        sample = sample[:, 0]
    meta = _tensor_to_frame(sample, 0, columns, None, kind, dtype, name).iloc[:0] if kind != "index" else _tensor_to_frame(sample, 0, None, None, kind, dtype, name)[:0]
    if kind == "frame":
        columns = meta.columns
    op = FromTensor([t.data], kind=kind, columns=columns, dtype=dtype, name=name)
    return op.new_output(meta, t.shape[0], range_index=kind != "index")


# ---- the constructors behind md.DataFrame(...), md.Series(...), md.Index(...) -------------


def from_pandas_like(cls, data=None, *args, **kwargs):
    """Build a DataFrame/Series/Index tileable as pandas' constructor would build the object
    (each kind with Mars 0.10's constructor signature)."""
    if cls is DataFrame:
        return _frame_like(data, *args, **kwargs)
    if cls is Series:
        return _series_like(data, *args, **kwargs)
    return _index_like(data, *args, **kwargs)


def _no_gpu(gpu):
    if gpu:
        raise NotImplementedError("GPU DataFrames (gpu=True) are not supported by mars_dask")


def _chunk_size_for(n, chunk_size, num_partitions):
    """Mars's ``num_partitions``: that many row chunks of about equal length."""
    if num_partitions is None:
        return chunk_size
    if not isinstance(num_partitions, numbers.Integral) or num_partitions <= 0:
        raise ValueError(f"num_partitions must be a positive int, got {num_partitions!r}")
    return max(1, -(-n // int(num_partitions)))


def _is_lazy(x) -> bool:
    from ..tensor.core import Tensor
    from .map import is_pandas_tileable

    return isinstance(x, Tensor) or is_pandas_tileable(x)


def _is_labelled(data, kind) -> bool:
    """Would pandas align ``data`` on ``index`` by label (a reindex) rather than take its
    values positionally?"""
    if isinstance(data, (pd.Series, pd.DataFrame, Series, DataFrame)):
        return True
    if isinstance(data, dict):
        return kind == "series" or any(isinstance(v, (pd.Series, pd.DataFrame, Series, DataFrame)) for v in data.values())
    return False


def _needs_index_length(data) -> bool:
    """Data pandas broadcasts to the index's length (None, a scalar, a dict of scalars)."""
    from pandas.api.types import is_list_like

    if data is None or not is_list_like(data):
        return True
    return isinstance(data, dict) and len(data) > 0 and not any(is_list_like(v) for v in data.values())


def _ctor_kernel(index, kind, data, kwargs, meta):
    from .arithmetic import _conform

    ctor = pd.DataFrame if kind == "frame" else pd.Series
    # an empty chunk would get pandas' dtypes of an empty object (``Series(None)``: object)
    return _conform(ctor(data, index=index, **kwargs), meta)


def _with_lazy_index(kind, data, index, kwargs):
    """``pd.DataFrame/Series(data, index=index, **kwargs)`` where ``index`` or ``data`` is
    lazy (a tileable or a tensor): array-like values take the index positionally and its row
    chunks; labelled data (Series, DataFrame, dicts of them) is reindexed by it, as pandas."""
    from ..tensor.core import Tensor
    from .index import as_index, relabel
    from .map import map_rows

    idx = as_index(index)
    if _is_labelled(data, kind):
        # pandas reindexes labelled data by the index: so do we (a join on the labels)
        if isinstance(data, (DataFrame, Series)):
            values = data if kwargs.get("dtype") is None else data.astype(kwargs["dtype"])
        else:
            values = _frame_like(data, columns=kwargs.get("columns"), dtype=kwargs.get("dtype")) if kind == "frame" \
                else _series_like(data, dtype=kwargs.get("dtype"), name=kwargs.get("name"))
        if not hasattr(values, "reindex"):
            raise NotImplementedError("labelled data with a lazy index= needs reindex, which is not available")
        out = values.reindex(index=idx)
        if kind == "series" and isinstance(data, Series) and kwargs.get("name") is not None:
            out = out.rename(kwargs["name"])
        return out
    if isinstance(data, Tensor):
        values = from_tensor(data, kind, columns=kwargs.get("columns"), dtype=kwargs.get("dtype"), name=kwargs.get("name"))
        return relabel(values, idx)
    if isinstance(data, Index):
        values = _series_of_index(data, kwargs.get("dtype"), kwargs.get("name"))
        if kind == "frame":
            values = _frame_like(values, columns=kwargs.get("columns"))
        return relabel(values, idx)
    if _needs_index_length(data):
        from ._meta import meta_nonempty

        ctor = pd.DataFrame if kind == "frame" else pd.Series
        meta = ctor(data, index=meta_nonempty(idx.data.meta), **kwargs).iloc[:0]  # dtypes of non-empty data
        return map_rows(_ctor_kernel, idx, kind, data, kwargs, meta, meta=meta, name=f"{kind}-on-index")
    ctor = pd.DataFrame if kind == "frame" else pd.Series
    local = ctor(data, **kwargs)
    n = idx.shape[0]
    if not (isinstance(n, float) and n != n) and len(local) != n:
        ctor(data, index=pd.RangeIndex(int(n)), **kwargs)  # pandas' own error
        raise ValueError(f"Length of values ({len(local)}) does not match length of index ({int(n)})")
    return relabel(from_pandas(local, chunk_size=max(1, len(local))), idx)


def _frame_like(data=None, index=None, columns=None, dtype=None, copy=None, chunk_size=None, gpu=None,
                sparse=None, num_partitions=None):
    from ..tensor.core import Tensor

    _no_gpu(gpu)
    if index is not None and (_is_lazy(index) or _is_lazy(data)):
        return _with_lazy_index("frame", data, index, {"columns": columns, "dtype": dtype})
    if isinstance(data, Tensor):
        return from_tensor(data, "frame", columns=columns, dtype=dtype)
    if isinstance(data, DataFrame) and index is None and columns is None and dtype is None:
        return data
    if isinstance(data, Series) and index is None and columns is None and dtype is None:
        from .map import map_rows

        return map_rows(_to_frame_kernel, data, name="to-frame")
    if isinstance(data, pd.DataFrame) and index is None and columns is None and dtype is None:
        obj = data
    else:
        obj = pd.DataFrame(data, index=index, columns=columns, dtype=dtype, copy=copy)
    return from_pandas(obj, chunk_size=_chunk_size_for(len(obj), chunk_size, num_partitions))


def _to_frame_kernel(s):
    return s.to_frame()


def _series_like(data=None, index=None, dtype=None, name=None, copy=None, chunk_size=None, gpu=None,
                 sparse=None, num_partitions=None):
    from ..tensor.core import Tensor

    _no_gpu(gpu)
    if index is not None and (_is_lazy(index) or _is_lazy(data)):
        return _with_lazy_index("series", data, index, {"dtype": dtype, "name": name})
    if isinstance(data, Tensor):
        return from_tensor(data, "series", dtype=dtype, name=name)
    if isinstance(data, Index):
        return _series_of_index(data, dtype, name)
    if isinstance(data, Series) and index is None and dtype is None and name is None:
        return data
    if isinstance(data, pd.Series) and index is None and dtype is None and name is None:
        obj = data
    else:
        obj = pd.Series(data, index=index, dtype=dtype, name=name, copy=copy)
    return from_pandas(obj, chunk_size=_chunk_size_for(len(obj), chunk_size, num_partitions))


def _series_of_index_kernel(index, dtype, name):
    return pd.Series(index, dtype=dtype, name=name)


def _series_of_index(data, dtype, name):
    """``pd.Series(index)``: the values with a new default RangeIndex (global offsets)."""
    from .map import map_rows

    meta = pd.Series(data.data.meta, dtype=dtype, name=name)
    values = map_rows(_series_of_index_kernel, data, dtype, name, meta=meta, preserves_index=False,
                      name="series-from-index")
    return values.reset_index(drop=True)


def _index_like(data=None, dtype=None, copy=False, name=None, tupleize_cols=True, chunk_size=None, gpu=None,
                sparse=None, names=None, num_partitions=None, store_data=False):
    """``md.Index(...)`` (Mars's signature): local labels as ``pd.Index`` makes them, or a
    tensor / Series tileable's values; ``names`` names the levels (MultiIndex)."""
    from ..tensor.core import Tensor
    from .index import as_index

    _no_gpu(gpu)
    if name is not None and names is not None:
        raise TypeError("Can only provide one of `names` and `name`")
    if isinstance(data, (Index, Series, Tensor)):
        out = as_index(data, dtype=dtype) if not isinstance(data, Tensor) else from_tensor(data, "index", dtype=dtype)
        if name is not None or names is not None:
            out = out.set_names(names if names is not None else name)
        return out
    if isinstance(data, Tileable):
        raise TypeError(f"cannot make an Index from a {type(data).__name__}")
    if isinstance(data, pd.Index):  # as Mars: kept as it is (pd.Index(MultiIndex) would flatten it)
        obj = data if dtype is None else data.astype(dtype)
        obj = obj if name is None else obj.rename(name)
    else:
        obj = pd.Index(data, dtype=dtype, copy=copy, name=name, tupleize_cols=tupleize_cols)
    if names is not None:
        obj = obj.set_names(names)
    return from_pandas(obj, chunk_size=_chunk_size_for(len(obj), chunk_size, num_partitions))



# ---- date_range ------------------------------------------------------------------------


def _dr_regular(first, count, freq, tz, name, unit):
    """Chunk of a fixed-step range: ``count`` stamps from ``first`` (pandas generates it)."""
    if count == 0:
        return pd.DatetimeIndex([], dtype=_dt_dtype(tz, unit), name=name, freq=freq)
    return pd.date_range(start=first, periods=count, freq=freq, tz=tz if first.tzinfo is None else None, name=name, unit=unit)


def _dr_between(first, last, freq, name, unit):
    """Chunk of a calendar range: the stamps from ``first`` to ``last`` (both on offset)."""
    return pd.date_range(start=first, end=last, freq=freq, name=name, unit=unit)


def _dr_linspace(s_i8, span, periods, lo, hi, tz, name, unit):
    """Positions ``[lo, hi)`` of ``numpy.linspace(0, span, periods, dtype=int64) + s_i8``
    (numpy's own arithmetic, so the values are identical), as pandas' freq=None range."""
    if span == 0 or periods <= 1:
        y = np.zeros(hi - lo)
    else:
        y = np.arange(lo, hi, dtype=np.float64) * (span / (periods - 1))
    if hi == periods and periods > 1 and hi > lo:
        y[-1] = span
    i8 = np.floor(y).astype(np.int64) + s_i8
    idx = pd.DatetimeIndex(i8.view(f"M8[{unit}]"), name=name)
    return idx.tz_localize("UTC").tz_convert(tz) if tz is not None else idx


def _dt_dtype(tz, unit):
    return pd.DatetimeTZDtype(unit=unit, tz=tz) if tz is not None else np.dtype(f"M8[{unit}]")


class DateRange(DataFrameOperand):
    """``md.date_range``: each chunk generates its own stamps from its first one (or first
    and last), so no data travels in the graph."""

    _op_name = "date-range"

    def __init__(self, specs):
        super().__init__([], specs=specs)

    def tile(self):
        chunks = []
        for i, (n, func, args) in enumerate(self.specs):
            chunks.append(self.new_chunk(i, n, func, args))
        return [(chunks, (tuple(s[0] for s in self.specs),))]


def date_range(start=None, end=None, periods=None, freq=None, tz=None, normalize=False, name=None,
               inclusive="both", *, unit=None, chunk_size=None, **kwargs):
    """A DatetimeIndex as ``pandas.date_range`` makes it, cut into chunks of ``chunk_size``.

    Fixed frequencies (``s``, ``h``, ``D``...) and ``freq=None`` (evenly spaced) are computed
    chunk by chunk from their position alone; calendar frequencies (``ME``, ``B``, ``W``...)
    are enumerated once on the client (they are short) and each chunk regenerates its part
    from its first and last stamps.
    """
    from pandas._libs.tslibs.offsets import Day, Tick
    from pandas.tseries.frequencies import to_offset

    if kwargs:
        raise TypeError(f"date_range() got unexpected keyword arguments {sorted(kwargs)}")
    if freq is None and any(x is None for x in (start, end, periods)):
        freq = "D"
    given = sum(x is not None for x in (start, end, periods, freq))
    if given != 3:
        raise ValueError("Of the four parameters: start, end, periods, and freq, exactly three must be specified")
    if periods is not None:
        if not isinstance(periods, numbers.Integral) or isinstance(periods, bool):
            raise TypeError(f"periods must be an integer, got {periods!r}")
        if periods < 0:
            raise ValueError(f"Number of samples, {periods}, must be non-negative.")
        periods = int(periods)
    if inclusive not in ("both", "neither", "left", "right"):
        raise ValueError("Inclusive has to be either 'both', 'neither', 'left' or 'right'")
    left_in, right_in = inclusive in ("both", "left"), inclusive in ("both", "right")
    common = dict(tz=tz, normalize=normalize, unit=unit)
    off = to_offset(freq) if freq is not None else None

    def probe(point):  # the localized / normalized endpoint as pandas resolves it
        return pd.date_range(start=point, periods=1, freq=off if off is not None else "D", **common)[0]

    specs = []  # (n, func, args) per chunk
    if off is not None and isinstance(off, (Tick, Day)) and off.n > 0:
        s = probe(start) if start is not None else None
        e = probe(end) if end is not None else None
        ref = s if s is not None else e
        out_tz, out_unit = ref.tz, ref.unit
        day = isinstance(off, Day)
        td = pd.Timedelta(days=off.n) if day else pd.Timedelta(off)

        def gen(x):
            return x.tz_localize(None) if (day and x is not None and x.tzinfo is not None) else x

        gs, ge = gen(s), gen(e)
        if periods is None:
            n = (ge - gs) // td + 1 if ge >= gs else 0
            first = gs
        elif gs is not None:
            n, first = periods, gs
        else:
            n, first = periods, ge - (periods - 1) * td
        lo, hi = 0, n
        if s is not None and e is not None and s == e:
            if not (left_in and right_in):
                lo, hi = 1, max(1, n - 1)
        else:
            if not left_in and n:
                lo = 1
            last_is_end = e is None or (n and first + (n - 1) * td == ge)
            if not right_in and n and last_is_end and hi > lo:
                hi = n - 1
        n_out = max(0, hi - lo)
        meta = pd.DatetimeIndex([], dtype=_dt_dtype(out_tz, out_unit), name=name)
        sizes = row_chunks(n_out, chunk_size, meta)
        pos = lo
        for k in sizes:
            specs.append((k, _dr_regular, (first + pos * td, k, off, out_tz, name, out_unit)))
            pos += k
    elif off is None:
        ends = pd.date_range(start=start, end=end, periods=2, **common)
        s, e = ends[0], ends[-1]
        out_tz, out_unit = s.tz, s.unit
        span = e._value - s._value
        lo, hi = 0, periods
        if s == e:
            if not (left_in and right_in):
                lo, hi = 1, max(1, periods - 1)
        else:
            if not left_in and periods:
                lo = 1
            if not right_in and hi > lo:
                hi = periods - 1
        n_out = max(0, hi - lo)
        meta = pd.DatetimeIndex([], dtype=_dt_dtype(out_tz, out_unit), name=name)
        sizes = row_chunks(n_out, chunk_size, meta)
        pos = lo
        for k in sizes:
            specs.append((k, _dr_linspace, (s._value, span, periods, pos, pos + k, out_tz, name, out_unit)))
            pos += k
    else:
        full = pd.date_range(start=start, end=end, periods=periods, freq=off, name=name, inclusive=inclusive, **common)
        meta = full[:0]
        sizes = row_chunks(len(full), chunk_size, meta)
        pos = 0
        for k in sizes:
            if k == 0:
                specs.append((0, _identity, (meta,)))
            else:
                specs.append((k, _dr_between, (full[pos], full[pos + k - 1], off, name, full.unit)))
            pos += k
    nrows = sum(s[0] for s in specs)
    key = new_key("date-range", start, end, periods, str(off), tz, normalize, name, inclusive, unit, tuple(s[0] for s in specs))
    op = DateRange(specs)
    return op.new_output(meta, nrows, key=key)


# ---- DataFrame.from_dict / from_records ----------------------------------------------------


def _from_dict(cls, data, orient="columns", dtype=None, columns=None, *, chunk_size=None):
    """``md.DataFrame.from_dict``: pandas' ``DataFrame.from_dict``, then cut into chunks."""
    return from_pandas(pd.DataFrame.from_dict(data, orient=orient, dtype=dtype, columns=columns), chunk_size=chunk_size)


def _from_records(cls, data, index=None, exclude=None, columns=None, coerce_float=False, nrows=None, *, chunk_size=None):
    """``md.DataFrame.from_records``: pandas' ``DataFrame.from_records``, then cut into chunks."""
    return from_pandas(
        pd.DataFrame.from_records(data, index=index, exclude=exclude, columns=columns, coerce_float=coerce_float, nrows=nrows),
        chunk_size=chunk_size,
    )


DataFrame.from_dict = classmethod(_from_dict)
DataFrame.from_records = classmethod(_from_records)

__all__ += ["date_range", "from_pandas"]
