"""Conversions and chunk layout: tensors of a frame's values, ``type_name``, re-cutting rows
(``rechunk``, ``rebalance``), pairing chunks (``cartesian_chunk``) and random row samples.

- ``values``/``to_tensor``/``from_tensor`` are Mars's names for the tensor conversions that
  already exist (:func:`mars_dask.tensor.from_dataframe`, ``series_from_tensor``...).
- ``rechunk``/``rebalance`` re-cut the rows only: every chunk of a DataFrame holds all of its
  columns (see :mod:`.core`), so a column chunk size is accepted and has nothing to split.
  Each new chunk concatenates slices of the old ones, so labels and order never change.
- ``sample`` is chunked: the per-chunk counts of the sample are drawn first (multivariate
  hypergeometric without replacement, multinomial with replacement, over the chunk lengths or
  weight sums), then every chunk samples its own rows.  Weighted sampling without
  replacement uses exponential keys (Efraimidis-Spirakis: the ``n`` rows with the largest
  ``log(u) / w`` are a sample with pandas' distribution); only the ``n`` best keys of each
  chunk travel, never the rows.  The rows drawn cannot equal pandas' for the same
  ``random_state`` (pandas draws from the whole column at once), their distribution does.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import pandas as pd

from ..tiling.core import Chunk, ensure_known
from .arithmetic import _pieces
from .core import DataFrame, DataFrameOperand, Index, Series, frame_nsplits, nan, register_method
from .map import aligned, is_pandas_tileable, map_rows

__all__: list[str] = []


# ---- tensors and type names ---------------------------------------------------------------


@register_method(DataFrame, name="to_tensor")
def _df_to_tensor(self, dtype=None):
    """The frame's values as a 2-d tensor (``DataFrame.to_numpy``), chunk by chunk.  Mixed
    columns (strings, nullable or mixed dtypes) give an object tensor, as pandas' ``values``
    and Mars's ``to_tensor`` do (``mt.from_dataframe`` asks for a ``dtype`` instead)."""
    from ..tensor.datasource import TensorFromDataFrame, from_dataframe

    meta = self.data.meta
    if dtype is None and meta.to_numpy().dtype == object:
        op = TensorFromDataFrame([self.data], dtype=np.dtype(object))
        t = op.new_tensor((self.shape[0], len(meta.columns)), np.dtype(object))
        t.data.order = "F"
        return t
    return from_dataframe(self, dtype=dtype)


@register_method(Series, name="to_tensor")
def _series_to_tensor(self, dtype=None):
    """The Series' values as a 1-d tensor, chunk by chunk."""
    from .toplevel import _series_to_tensor as to_tensor

    t = to_tensor(self)
    return t if dtype is None else t.astype(dtype)


register_method(DataFrame, Series, name="values")(property(lambda self: self.to_tensor(), doc="The values as a mars tensor."))


def _df_from_tensor(in_tensor, index=None, columns=None):
    """Mars's ``DataFrame.from_tensor`` (static): ``md.dataframe_from_tensor``."""
    from .toplevel import dataframe_from_tensor

    return dataframe_from_tensor(in_tensor, index=index, columns=columns)


def _series_from_tensor(in_tensor, index=None, name=None):
    """Mars's ``Series.from_tensor`` (static): ``md.series_from_tensor``."""
    from .toplevel import series_from_tensor

    return series_from_tensor(in_tensor, index=index, name=name)


register_method(DataFrame, name="from_tensor")(staticmethod(_df_from_tensor))
register_method(Series, name="from_tensor")(staticmethod(_series_from_tensor))
for _cls in (DataFrame, Series, Index):  # Mars's class attribute
    register_method(_cls, name="type_name")(_cls.__name__)
del _cls


# ---- re-cutting rows ------------------------------------------------------------------------


def _take_rows(parts, meta):
    """Rows ``src[lo:hi]`` of each ``(src, lo, hi)`` concatenated (DataFrame, Series or Index)."""
    pieces = [src[lo:hi] if isinstance(src, pd.Index) else src.iloc[lo:hi] for src, lo, hi in parts]
    if not pieces:
        return meta
    if len(pieces) == 1:
        return pieces[0]
    return pieces[0].append(pieces[1:]) if isinstance(meta, pd.Index) else pd.concat(pieces)


def _even_splits(total: int, parts: int) -> tuple:
    parts = max(1, min(parts, total))
    base, rem = divmod(total, parts)
    return tuple(base + (1 if i < rem else 0) for i in range(parts))


class RecutRows(DataFrameOperand):
    """New row chunks of a DataFrame, Series or Index: ``chunk_size`` (rows per chunk, or
    explicit lengths, as ``md.DataFrame(chunk_size=)``) or ``parts`` even chunks.  Unknown
    lengths are resolved first (iterative tiling)."""

    _op_name = "rechunk"

    def tile(self):
        from .datasource import row_chunks

        (src,) = self.inputs
        yield from ensure_known(src)
        rows = tuple(int(x) for x in src.nsplits[0])
        total = sum(rows)
        if self.parts is not None:
            target = _even_splits(total, self.parts)
        else:
            target = row_chunks(total, self.chunk_size, src.meta)
        if target == rows:
            return [(list(src.chunks), src.nsplits)]
        pieces = _pieces(rows, target, src.chunks) if total else [[] for _ in target]
        chunks = [self.new_chunk(i, n, _take_rows, (parts, src.meta)) for i, (n, parts) in enumerate(zip(target, pieces))]
        return [(chunks, frame_nsplits(src.meta, target))]


def _recut(obj, chunk_size=None, parts=None):
    from ..tiling.core import new_key

    data = obj.data
    op = RecutRows([data], chunk_size=chunk_size, parts=parts)
    return op.new_output(data.meta, data.shape[0], index_key=new_key("index", data.index_key, chunk_size, parts),
                         range_index=data.range_index)


def _row_chunk_size(obj, chunk_size):
    """The rows part of a Mars ``chunk_size`` (int, ``(rows, cols)``, ``{0: rows}``,
    ``((lengths...),)``); None if it leaves the rows as they are."""
    if isinstance(chunk_size, dict):
        bad = [k for k in chunk_size if k not in (0, 1, "index", "columns", "rows")]
        if bad or (obj.ndim == 1 and any(k in (1, "columns") for k in chunk_size)):
            raise ValueError(f"invalid axis in chunk_size {chunk_size!r}")
        chunk_size = chunk_size.get(0, chunk_size.get("index", chunk_size.get("rows")))
    elif isinstance(chunk_size, (tuple, list)):
        if not chunk_size or len(chunk_size) > obj.ndim:
            raise ValueError(f"chunk_size {chunk_size!r} has more axes than the object ({obj.ndim})")
        chunk_size = chunk_size[0]
    if chunk_size is None:
        return None
    if isinstance(chunk_size, (tuple, list)):
        sizes = tuple(chunk_size)
        if not all(isinstance(s, numbers.Integral) and s >= 0 for s in sizes):
            raise ValueError(f"invalid row chunk lengths {sizes!r}")
        n = obj.shape[0]
        if not math.isnan(n) and sum(sizes) != n:
            raise ValueError(f"chunk_size {sizes!r} does not add up to the {int(n)} rows")
        return (sizes,)
    if not isinstance(chunk_size, numbers.Integral) or isinstance(chunk_size, bool):
        raise TypeError(f"chunk_size must be an int, got {chunk_size!r}")
    if chunk_size <= 0:
        raise ValueError(f"chunk_size must be positive, got {chunk_size}")
    return int(chunk_size)


@register_method(DataFrame, Series, Index)
def rechunk(self, chunk_size, reassign_worker=False):
    """Mars's ``rechunk``: the same rows cut into chunks of ``chunk_size`` rows (an int,
    ``(rows, cols)``, ``{0: rows}`` or explicit lengths ``((3, 3, 4),)``).  Columns are
    never split (every chunk holds all of them), so a column size is accepted and ignored;
    ``reassign_worker`` is accepted for compatibility (Dask places the new chunks)."""
    rows = _row_chunk_size(self, chunk_size)
    if rows is None:
        return self
    data = self.data
    if data.is_tiled and not any(math.isnan(x) for x in data.nsplits[0]):
        from .datasource import row_chunks

        if row_chunks(int(sum(data.nsplits[0])), rows, data.meta) == tuple(data.nsplits[0]):
            return self
    return _recut(self, chunk_size=rows)


def _cluster_threads() -> int:
    try:
        from ..session import get_session

        return max(1, sum(get_session().client.nthreads().values()))
    except Exception:  # noqa: BLE001 - no cluster reachable: size for this machine
        import os

        return os.cpu_count() or 1


@register_method(DataFrame, Series, Index)
def rebalance(self, factor=None, axis=0, num_partitions=None, reassign_worker=True):
    """Mars's ``rebalance``: the rows cut into ``num_partitions`` chunks of even length
    (default: the cluster's threads times ``factor``, 1.2), so work spreads evenly over the
    workers; Dask's scheduler places them (``reassign_worker`` is accepted for that)."""
    if axis not in (0, "index", "rows"):
        raise NotImplementedError("rebalance splits rows only (axis=0): every chunk holds all columns")
    if num_partitions is None:
        factor = 1.2 if factor is None else factor
        if factor <= 0:
            raise ValueError(f"factor must be positive, got {factor}")
        num_partitions = max(1, int(math.ceil(_cluster_threads() * factor)))
    elif not isinstance(num_partitions, numbers.Integral) or num_partitions <= 0:
        raise ValueError(f"num_partitions must be a positive int, got {num_partitions!r}")
    return _recut(self, parts=int(num_partitions))


# ---- cartesian_chunk ---------------------------------------------------------------------------


def _cartesian_kernel(left, right, func, args, kwargs):
    return func(left, right, *args, **kwargs)


class CartesianChunk(DataFrameOperand):
    """``func(left_chunk, right_chunk)`` for every pair of chunks (left-major order)."""

    _op_name = "cartesian-chunk"

    def tile(self):
        left, right = self.inputs
        chunks = []
        for lc in left.chunks:
            for rc in right.chunks:
                chunks.append(self.new_chunk(len(chunks), nan, _cartesian_kernel, (lc, rc, self.func, self.args, self.kwargs)))
        return [(chunks, frame_nsplits(self.output.meta, (nan,) * len(chunks)))]


@register_method(DataFrame, Series)
def cartesian_chunk(self, right, func, args=(), **kwargs):
    """Mars's ``cartesian_chunk``: ``func(left_chunk, right_chunk, *args, **kwargs)`` for
    every pair of a chunk of ``self`` and a chunk of ``right``; the results are the row
    chunks of the output.  The output's structure comes from running ``func`` on small
    stand-ins; when that fails, ``output_type="series"`` (object dtype) or
    ``output_type="dataframe"`` with ``dtypes=`` describe it.  ``index=`` gives the labels'
    type, ``memory_scale`` is accepted for compatibility."""
    from ._meta import meta_nonempty

    output_type = kwargs.pop("output_type", None)
    output_types = kwargs.pop("output_types", None)
    object_type = kwargs.pop("object_type", None)
    if output_type is None:
        output_type = (output_types or [object_type])[0]
    output_type = getattr(output_type, "value", output_type)
    index = kwargs.pop("index", None)
    dtypes = kwargs.pop("dtypes", None)
    kwargs.pop("memory_scale", None)
    if not is_pandas_tileable(right) or isinstance(right, Index):
        raise TypeError(f"cartesian_chunk needs a DataFrame or Series as right, got {type(right).__name__}")
    args = tuple(args)
    try:
        with np.errstate(all="ignore"):
            obj = func(meta_nonempty(self.data.meta), meta_nonempty(right.data.meta), *args, **kwargs)
    except Exception:  # noqa: BLE001 - the user's function may fail on stand-ins
        obj = None
    if output_type == "series" and (obj is None or getattr(obj, "ndim", 0) != 1):
        obj = pd.Series([], dtype=np.dtype(object))
    elif dtypes is not None and (output_type == "dataframe" or obj is None or getattr(obj, "ndim", 0) == 2):
        dtypes = pd.Series(dtypes)
        obj = pd.DataFrame({k: pd.Series([], dtype=v) for k, v in dtypes.items()}, columns=dtypes.index)
    if not isinstance(obj, (pd.DataFrame, pd.Series)):
        raise TypeError(
            "Cannot determine `output_type`, you have to specify it as `dataframe` or `series`, "
            "for dataframe, `dtypes` is required as well if output_type='dataframe'"
        )
    meta = obj.iloc[:0]
    if index is not None:
        meta = meta.set_axis(pd.Index(index)[:0], axis=0)
    op = CartesianChunk([self.data, right.data], func=func, args=args, kwargs=kwargs)
    return op.new_output(meta, nan)


# ---- sample ---------------------------------------------------------------------------------


def _rng(seed, i):
    return np.random.default_rng([seed, i])


class _ByLabel:
    """A local pandas Series of weights, taken by label (pandas reindexes it to the rows)."""

    def __init__(self, series):
        self.series = series


def _weights_array(obj, w):
    """pandas' ``preprocess_weights`` for one chunk: ``w`` is the aligned chunk of the
    weights or a local Series (:class:`_ByLabel`) reindexed to the chunk's labels."""
    if isinstance(w, _ByLabel):
        w = w.series.reindex(obj.index)
    if isinstance(w, pd.DataFrame):
        raise ValueError("Weights and axis to be sampled must be of same length")
    arr = np.asarray(pd.Series(w, dtype="float64")._values, dtype=np.float64)
    if len(arr) != len(obj):
        raise ValueError("Weights and axis to be sampled must be of same length")
    if np.isinf(arr).any():
        raise ValueError("weights vector may not include `inf` values")
    if (arr < 0).any():
        raise ValueError("weights vector may not include negative values")
    return np.where(np.isnan(arr), 0.0, arr)


def _keys(obj, w, seed, i):
    """Exponential keys ``log(u) / w`` (``-inf`` where the weight is 0)."""
    u = _rng(seed, i).random(len(obj))
    with np.errstate(divide="ignore"):
        return np.log(u) / w


def _weight_stats(obj, w, seed, i, k):
    """Sum and max of a chunk's weights, and (``k`` not None) its ``k`` largest keys."""
    arr = _weights_array(obj, w)
    top = None
    if k is not None:
        keys = _keys(obj, arr, seed, i)
        top = np.sort(keys)[::-1][:k] if len(keys) else keys
    return float(arr.sum()), float(arr.max()) if len(arr) else 0.0, top


def _sample_counted(obj, k, replace, w, seed, i):
    if k == 0:
        return obj.iloc[:0]
    p = None
    if w is not None:
        p = _weights_array(obj, w)
        p = p / p.sum()
    pos = _rng(seed, i).choice(len(obj), size=k, replace=replace, p=p)
    return obj.iloc[pos]


def _sample_by_keys(obj, w, seed, i, threshold):
    keys = _keys(obj, _weights_array(obj, w), seed, i)
    pos = np.flatnonzero(keys >= threshold)
    return obj.iloc[pos[np.argsort(-keys[pos], kind="stable")]]


class SampleRows(DataFrameOperand):
    """Chunked random sample of rows (see the module notes)."""

    _op_name = "sample"

    def tile(self):
        src = self.inputs[0]
        weights = self.inputs[1] if len(self.inputs) > 1 else None
        yield from ensure_known(src)
        rows = tuple(int(x) for x in src.nsplits[0])
        total = sum(rows)
        size = self.n if self.n is not None else int(round(self.frac * total))
        if not self.replace and size > total:
            raise ValueError("Cannot take a larger sample than population when 'replace=False'")
        seed = self.seed
        rng = np.random.default_rng([seed, len(rows)])
        wchunks = [None] * len(rows)
        if weights is not None:
            wchunks = list(weights.chunks)
        elif self.local_weights is not None:
            wchunks = [_ByLabel(self.local_weights)] * len(rows)
        if weights is None and self.local_weights is None:
            if total == 0 and size > 0:
                raise ValueError("a cannot be empty unless no samples are taken")
            counts = (rng.multivariate_hypergeometric(np.array(rows, dtype=np.int64), size) if not self.replace
                      else rng.multinomial(size, np.array(rows) / total) if total else np.zeros(len(rows), dtype=int))
            return self._counted(src, counts, [None] * len(rows), seed)
        k = None if self.replace else size
        stats = [Chunk((self.output_key() + "-wstats", i), (i,), (nan,), _weight_stats, (c, wchunks[i], seed, i, k))
                 for i, c in enumerate(src.chunks)]
        yield stats
        results = [c.future.result() for c in stats]
        wsum = sum(r[0] for r in results)
        wmax = max((r[1] for r in results), default=0.0)
        if wsum == 0:
            raise ValueError("Invalid weights: weights sum to zero")
        if not self.replace and size * (wmax / wsum) > 1:
            raise ValueError(
                "Weighted sampling cannot be achieved with replace=False. Either set replace=True or use smaller "
                "weights. See the docstring of sample for details."
            )
        if self.replace:
            counts = rng.multinomial(size, np.array([r[0] for r in results]) / wsum)
            return self._counted(src, counts, wchunks, seed)
        if size == 0:
            return self._counted(src, np.zeros(len(rows), dtype=int), wchunks, seed)
        allkeys = np.concatenate([r[2] for r in results])
        threshold = np.sort(allkeys)[::-1][size - 1]
        counts = [int((r[2] >= threshold).sum()) for r in results]
        chunks = [self.new_chunk(i, counts[i], _sample_by_keys, (c, wchunks[i], seed, i, threshold))
                  for i, c in enumerate(src.chunks)]
        return [(chunks, frame_nsplits(self.output.meta, counts))]

    def _counted(self, src, counts, wchunks, seed):
        counts = [int(c) for c in counts]
        chunks = [self.new_chunk(i, counts[i], _sample_counted, (c, counts[i], self.replace, wchunks[i], seed, i))
                  for i, c in enumerate(src.chunks)]
        return [(chunks, frame_nsplits(self.output.meta, counts))]


def _seed_from(random_state) -> int:
    import pandas.core.common as com

    rs = com.random_state(random_state)
    if isinstance(rs, np.random.Generator):
        return int(rs.integers(0, 2**63 - 1))
    return int(rs.randint(0, 2**31 - 1))


def _sample_columns(self, n, frac, replace, weights, random_state):
    """``axis=1``: the columns are known, so pandas samples them here; chunks take them."""
    cols = pd.Series(np.arange(len(self.columns)), index=self.columns)
    pos = cols.sample(n=n, frac=frac, replace=replace, weights=weights, random_state=random_state).to_numpy()
    return map_rows(_iloc_columns, self, pos, name="sample-columns")


def _iloc_columns(df, pos):
    return df.iloc[:, pos]


@register_method(DataFrame, Series)
def sample(self, n=None, frac=None, replace=False, weights=None, random_state=None, axis=None,
           always_multinomial=False, ignore_index=False):
    """pandas' ``sample`` of rows, chunked (module notes); ``axis=1`` samples columns.
    ``weights``: a column name, an aligned Series, or a list/array (positional) or local
    Series (by label) as pandas takes them.  ``always_multinomial`` is Mars's switch
    between two ways of drawing the per-chunk counts; both draw from the same
    distribution, accepted for compatibility."""
    from pandas.core.sample import process_sampling_size

    axis_n = {None: 0, 0: 0, "index": 0, "rows": 0, 1: 1, "columns": 1}.get(axis, -1)
    if axis_n == -1 or (axis_n == 1 and isinstance(self, Series)):
        raise ValueError(f"No axis named {axis} for object type {type(self).__name__}")
    size = process_sampling_size(n, frac, replace)
    size = int(size) if size is not None else None
    if n is None and frac is None:
        n = 1
    if axis_n == 1:
        return _sample_columns(self, n, frac, replace, weights, random_state)
    inputs = [self.data]
    local = None
    if weights is not None:
        if isinstance(weights, str):
            if not isinstance(self, DataFrame):
                raise ValueError("Strings cannot be passed as weights when sampling from a Series.")
            if weights not in self.columns:
                raise KeyError("String passed to weights not a valid column")
            weights = self[weights]
        if isinstance(weights, pd.Series):
            local = weights
        elif is_pandas_tileable(weights):
            if not aligned(self, weights):
                from .methods import _with_labels_like

                w = _with_labels_like(self, weights)
                if w is None:
                    raise NotImplementedError("sample(weights=) with a Series of other labels: reindex it first")
                weights = w
            inputs.append(weights.data)
        else:
            from .arithmetic import positional_like

            arr = np.asarray(weights, dtype=np.float64) if not hasattr(weights, "ndim") else weights
            if isinstance(arr, np.ndarray) and not math.isnan(self.shape[0]) and len(arr) != self.shape[0]:
                raise ValueError("Weights and axis to be sampled must be of same length")
            inputs.append(positional_like(self, arr).data)
    seed = _seed_from(random_state)
    op = SampleRows(inputs, n=size, frac=frac, replace=bool(replace), seed=seed, local_weights=local,
                    always_multinomial=always_multinomial)
    out = op.new_output(self.data.meta, size if size is not None else nan)
    if ignore_index:
        out = out.reset_index(drop=True)
    return out
