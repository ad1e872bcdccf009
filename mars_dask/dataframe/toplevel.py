"""Mars's ``md`` top-level functions: conversions (``to_datetime``, ``to_numeric``), encoding
and binning (``get_dummies``, ``cut``, ``qcut``), ``isna`` and friends, ``melt``, ``eval``,
constructors from records/tensors/indexes, ``read_sql*``, Mars's Arrow dtypes, and the pandas
scalars and helpers Mars re-exports (``Timestamp``, ``NaT``, ``NamedAgg``...).

Conventions:

- Everything runs chunk by chunk.  Where pandas' result depends on all the data (the dummy
  columns of ``get_dummies``, the bin edges of ``cut(bins=int)``/``qcut``), that small summary
  (categories, min/max, quantiles) is computed first over all chunks, executed, and every chunk
  is then converted with the same summary, so all chunks agree.
- Where pandas' output dtype depends on the values (``to_numeric`` of strings or with
  ``downcast=``, ``to_datetime`` of strings, whose unit and offset come from the data,
  ``cut(labels=False)``: int64 or float64 if a value falls outside), the conversion is executed
  chunk by chunk, the chunks' dtypes are gathered (not the data) and their common dtype
  (pandas' ``find_common_type``, what concatenating the chunks gives) is applied to every
  chunk: the same dtype pandas finds on the whole column.
- Local input (lists, arrays, pandas objects) is cut into chunks first; scalars are converted
  by pandas directly (Mars returns a 0-d tileable; here the pandas scalar).  Where Mars returns
  a ``Categorical`` (``cut``/``qcut`` of a list or tensor), the result here is an ``md.Index``
  (a ``CategoricalIndex`` once fetched; integer codes for ``labels=False``); ``isna``/``notna``
  of an ``md.Index`` give an ``md.Index`` of bools (pandas: an ndarray).
- These summaries are executed when the function is called (as Mars executes them while
  tiling): ``get_dummies`` (non-categorical columns), ``cut(bins=int)``, ``qcut``, the
  data-dependent dtypes above, ``to_datetime`` of strings without ``format=`` (pandas guesses
  the format from the first non-null string of the whole input, so the first one over all
  chunks is looked up), and ``read_sql*`` (row counts, a sample, the chunks' dtypes).

Arrow dtypes: Mars 0.10 had its own Arrow-backed extension types; they map onto pandas'
``ArrowDtype``: ``ArrowStringDtype()`` is ``pd.ArrowDtype(pa.string())`` (pandas'
``"string[pyarrow]"`` ArrowDtype), ``ArrowListDtype(t)`` is ``pd.ArrowDtype(pa.list_(t))``,
``ArrowStringArray``/``ArrowListArray`` build ``pd.arrays.ArrowExtensionArray`` s of those
types, and ``isinstance`` against the Mars names checks the Arrow type.  The dtype strings
``"Arrow[string]"`` (Mars's name) and ``"Arrow[<type>]"`` for any Arrow type pandas can name
(``"Arrow[int64]"``, ``"Arrow[double]"``...) are understood by ``pandas.api.types.pandas_dtype``
once ``mars_dask.dataframe`` is imported, so ``astype("Arrow[string]")`` and
``md.Series(..., dtype="Arrow[string]")`` work.
"""

from __future__ import annotations

import ast
import numbers
import sys
import textwrap
import tokenize
from functools import reduce
from io import StringIO

import numpy as np
import pandas as pd
import pyarrow as pa
from pandas import NA, DateOffset, Interval, NamedAgg, NaT, Timedelta, Timestamp, offsets  # noqa: F401

from .core import DataFrame, Index, Series, register_method
from .datasource import from_pandas, from_tensor
from .io import sql as sql_io
from .map import is_pandas_tileable, map_rows

__all__ = [
    "NA", "DateOffset", "Interval", "NamedAgg", "NaT", "Timedelta", "Timestamp", "offsets",
    "isna", "isnull", "notna", "notnull", "to_datetime", "to_numeric", "get_dummies", "cut", "qcut",
    "melt", "eval", "from_records", "dataframe_from_tensor", "series_from_tensor", "series_from_index",
    "read_sql", "read_sql_query", "read_sql_table",
    "ArrowStringDtype", "ArrowStringArray", "ArrowListDtype", "ArrowListArray",
]


# ---- helpers ----------------------------------------------------------------------------


def _is_tensor(x) -> bool:
    from ..tensor.core import Tensor

    return isinstance(x, Tensor)


def _chunk_results(t, func) -> list:
    """Execute ``t`` and return ``func(chunk)`` of every chunk (small values only)."""
    from ..session import get_session

    t.execute()
    client = get_session().client
    return client.gather(client.map(func, [c.future for c in t.data.chunks], pure=False))


def _dtype_and_len(part):
    return part.dtype if not isinstance(part, pd.DataFrame) else part.dtypes, len(part)


def _dtype_and_valid(part):
    return part.dtype, int(part.notna().sum())


def _common_dtype(dtypes):
    from pandas.core.dtypes.cast import find_common_type

    return find_common_type(list(dtypes))


def _astype_kernel(part, dtype):
    if part.dtype == dtype:
        return part
    if not part.notna().any():  # all NaT: any datetime dtype holds it (naive -> aware included)
        values = pd.array([None] * len(part), dtype=dtype)
        return pd.Index(values, name=part.name) if isinstance(part, pd.Index) else \
            pd.Series(values, index=part.index, name=part.name)
    return part.astype(dtype)


def _astype_frame_kernel(part, dtypes):
    diff = {c: d for c, d in dtypes.items() if part[c].dtype != d}
    if not diff:
        return part
    part = part.copy()
    for c, d in diff.items():
        part[c] = _astype_kernel(part[c], d)
    return part


def _frame_dtypes_and_valid(part):
    return part.dtypes, part.notna().sum(), len(part)


def _empty_with_dtype(meta, dtype):
    if isinstance(meta, pd.Index):
        return pd.Index(pd.array([], dtype=dtype), name=meta.name)
    return pd.Series(pd.array([], dtype=dtype), index=meta.index[:0], name=meta.name)


def _unified(t, kind="series", skip_null_chunks=False):
    """``t`` (executed chunk by chunk) with every chunk cast to the common dtype of the
    non-empty chunks (with ``skip_null_chunks``, of the chunks holding a non-null value: an
    all-NaT chunk does not decide a datetime's unit or zone): what pandas gives on the whole
    data."""
    meta = t.data.meta
    if kind == "frame":  # per column: a chunk where the column is all null does not vote
        infos = _chunk_results(t, _frame_dtypes_and_valid)
        dtypes = {}
        for j, c in enumerate(meta.columns):
            used = [d.iloc[j] for d, n, _ in infos if n.iloc[j]] or [infos[0][0].iloc[j]]
            dt = _common_dtype(used)
            if any(k and not n.iloc[j] for _, n, k in infos) and isinstance(dt, np.dtype) and dt.kind in "iub":
                dt = np.dtype(np.float64) if dt.kind != "b" else np.dtype(object)  # the nulls of other chunks
            dtypes[c] = dt
        new_meta = pd.DataFrame({j: _empty_with_dtype(meta.iloc[:, j], dtypes[c]) for j, c in enumerate(meta.columns)},
                                index=meta.index[:0])
        new_meta.columns = meta.columns
        return map_rows(_astype_frame_kernel, t, kwargs=dict(dtypes=dtypes), meta=new_meta, name="astype")
    infos = _chunk_results(t, _dtype_and_valid if skip_null_chunks else _dtype_and_len)
    used = [d for d, n in infos if n] or [infos[0][0]]
    dtype = _common_dtype(used)
    new_meta = _empty_with_dtype(meta, dtype)
    return map_rows(_astype_kernel, t, kwargs=dict(dtype=dtype), meta=new_meta, name="astype")


def _local_to_tileable(arg):
    """Lists, arrays and pandas objects as md tileables (``None`` for scalars)."""
    if is_pandas_tileable(arg):
        return arg
    if _is_tensor(arg):
        return from_tensor(arg, "index") if arg.ndim == 1 else from_tensor(arg, "frame")
    if isinstance(arg, (pd.DataFrame, pd.Series, pd.Index)):
        return from_pandas(arg)
    if isinstance(arg, (list, tuple, np.ndarray, pd.api.extensions.ExtensionArray)):
        if np.ndim(arg) != 1:
            return None
        return from_pandas(pd.Index(arg, tupleize_cols=False))
    return None


def _is_numeric_like(dtype) -> bool:
    return pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype)


# ---- isna / notna ------------------------------------------------------------------------


def _index_na_kernel(idx, pd_func):
    return pd.Index(pd_func(idx))


def _na(obj, method, pd_func):
    if is_pandas_tileable(obj):
        if isinstance(obj, Index):  # pandas gives an ndarray; here an md.Index of bools
            return map_rows(_index_na_kernel, obj, kwargs=dict(pd_func=pd_func), name=method)
        return getattr(obj, method)()
    if _is_tensor(obj):
        from ..tensor.arithmetic import elementwise

        return elementwise(pd_func, obj, dtype=np.dtype(bool))
    return pd_func(obj)


def isna(obj):
    """pandas' ``isna`` on md objects (chunk by chunk), tensors, or local values."""
    return _na(obj, "isna", pd.isna)


def notna(obj):
    """pandas' ``notna`` on md objects (chunk by chunk), tensors, or local values."""
    return _na(obj, "notna", pd.notna)


isnull = isna
notnull = notna


# ---- to_datetime / to_numeric ------------------------------------------------------------


def _to_datetime_kernel(x, kwargs):
    res = pd.to_datetime(x, **kwargs)
    if isinstance(x, pd.Index) and not isinstance(res, pd.Index):
        res = pd.Index(res, name=x.name)
    return res


def _first_non_null(part):
    from pandas._libs import tslib

    arr = np.asarray(part, dtype=object)
    i = tslib.first_non_null(arr)
    return (True, arr[i]) if i != -1 else (False, None)


def _guess_format(t, dayfirst):
    from pandas._libs.tslibs.parsing import guess_datetime_format

    for found, value in _chunk_results(t, _first_non_null):
        if found:
            return guess_datetime_format(value, dayfirst=dayfirst) if type(value) is str else None
    return None


def to_datetime(arg, errors="raise", dayfirst=False, yearfirst=False, utc=None, format=None, exact=True,  # noqa: A002
                unit=None, infer_datetime_format=False, origin="unix", cache=True):
    """``pandas.to_datetime`` chunk by chunk (Mars's signature).

    A Series gives a Series, an Index or a list-like an Index, a DataFrame (year, month, day...
    columns) a Series, a scalar pandas' scalar.  When the result's dtype depends on the values
    (strings: the unit and the UTC offset come from the data) the chunks' dtypes are unified
    after conversion, so the dtype is pandas' for the whole input.  ``infer_datetime_format``
    is accepted for Mars compatibility (pandas >= 2 always infers).
    """
    kwargs = dict(errors=errors, dayfirst=dayfirst, yearfirst=yearfirst, utc=utc, format=format,
                  unit=unit, origin=origin, cache=cache)
    if exact is not True:  # pandas refuses exact= with format "ISO8601"/"mixed", even True
        kwargs["exact"] = exact
    t = _local_to_tileable(arg)
    if t is None:
        return pd.to_datetime(arg, **kwargs)
    meta = t.data.meta
    if isinstance(meta, pd.DataFrame):
        out_meta = pd.Series([], dtype="M8[ns]" if utc is not True else "M8[ns, UTC]", index=meta.index[:0])
        res = map_rows(_to_datetime_kernel, t, kwargs=dict(kwargs=kwargs), meta=out_meta, name="to-datetime")
        return _unified(res)
    if pd.api.types.is_datetime64_any_dtype(meta.dtype) or (
            _is_numeric_like(meta.dtype) and not pd.api.types.is_bool_dtype(meta.dtype)):
        return map_rows(_to_datetime_kernel, t, kwargs=dict(kwargs=kwargs), name="to-datetime")
    # strings / objects: pandas guesses the format from the first non-null string of the
    # whole input and parses everything with it; the dtype is known once converted
    if format is None and not pd.api.types.is_numeric_dtype(meta.dtype):
        guessed = _guess_format(t, dayfirst)
        if guessed is not None:
            kwargs.update(format=guessed)
    out_meta = _to_datetime_kernel(meta.iloc[:0] if not isinstance(meta, pd.Index) else meta[:0].astype(object),
                                   {**kwargs, "errors": "coerce"})
    res = map_rows(_to_datetime_kernel, t, kwargs=dict(kwargs=kwargs), meta=out_meta, name="to-datetime")
    return _unified(res, skip_null_chunks=True)


def _values_kernel(part, dtype):
    return part.to_numpy(dtype=dtype)


def _series_to_tensor(s):
    """A 1-d tensor of an md Series' values (chunk by chunk, numpy dtypes)."""
    from ..tensor.core import TensorOperand
    from ..tiling.core import ensure_known

    dtype = s.dtype if isinstance(s.dtype, np.dtype) else np.dtype(object)

    class _ToTensor(TensorOperand):
        _op_name = "series-to-tensor"

        def tile(self):
            (src,) = self.inputs
            yield from ensure_known(src)
            rows = src.nsplits[0]
            chunks = [self.new_chunk((i,), (n,), _values_kernel, (c, dtype), inputs=[c], blockwise=True)
                      for i, (c, n) in enumerate(zip(src.chunks, rows))]
            return [(chunks, (tuple(rows),))]

    return _ToTensor([s.data]).new_tensor((s.shape[0],), dtype)


def _to_numeric_kernel(x, errors, downcast):
    res = pd.to_numeric(x, errors=errors, downcast=downcast)
    if isinstance(x, pd.Index) and not isinstance(res, pd.Index):
        res = pd.Index(res, name=x.name)
    return res


def to_numeric(arg, errors="raise", downcast=None):
    """``pandas.to_numeric`` chunk by chunk (Series -> Series, Index -> Index; a list or array
    gives a tensor, as Mars does; a scalar pandas' scalar).

    Numeric input without ``downcast`` keeps its dtype; otherwise the chunks' dtypes are
    unified after conversion (the smallest dtype holding every chunk's values, float if any
    chunk has NaN), which is pandas' dtype for the whole input."""
    if errors not in ("raise", "coerce"):
        pd.to_numeric(pd.Series([], dtype=float), errors=errors)  # pandas' own error
    if downcast not in (None, "integer", "signed", "unsigned", "float"):
        raise ValueError("invalid downcasting method provided")
    if isinstance(arg, pd.DataFrame) or (is_pandas_tileable(arg) and isinstance(arg, DataFrame)):
        raise TypeError("arg must be a list, tuple, 1-d array, or Series")
    if _is_tensor(arg) or isinstance(arg, (list, tuple, np.ndarray)):
        from .. import tensor as mt

        if _is_tensor(arg):
            if arg.dtype.kind in "biuf" and downcast is None:
                return arg
            return _series_to_tensor(to_numeric(from_tensor(arg, "series"), errors=errors, downcast=downcast))
        return mt.tensor(pd.to_numeric(arg, errors=errors, downcast=downcast))
    t = _local_to_tileable(arg)
    if t is None:
        return pd.to_numeric(arg, errors=errors, downcast=downcast)
    meta = t.data.meta
    kw = dict(errors=errors, downcast=downcast)
    if _is_numeric_like(meta.dtype) and downcast is None:
        return map_rows(_to_numeric_kernel, t, kwargs=kw, meta=_to_numeric_kernel(meta, **kw), name="to-numeric")
    guess = meta.astype("float64") if not _is_numeric_like(meta.dtype) else meta
    res = map_rows(_to_numeric_kernel, t, kwargs=kw, meta=guess, name="to-numeric")
    return _unified(res)


# ---- get_dummies -------------------------------------------------------------------------


def _dummies_kernel(data, cats, kwargs, columns=None):
    if isinstance(data, pd.Series):
        data = data.astype(pd.CategoricalDtype(cats[None]))
    else:
        data = data.astype({c: pd.CategoricalDtype(v) for c, v in cats.items()})
    res = pd.get_dummies(data, **kwargs)
    if columns is not None:  # a Series' own labels (not the CategoricalIndex of the stand-in)
        res.columns = columns
    return res


def _sorted_categories(values):
    vals = pd.Index(values)
    vals = vals[~vals.isna()]
    try:
        return vals.sort_values()
    except TypeError:
        return vals


def get_dummies(data, prefix=None, prefix_sep="_", dummy_na=False, columns=None, sparse=False,
                drop_first=False, dtype=None):
    """``pandas.get_dummies`` chunk by chunk: the categories of every encoded column are
    learned first over all chunks (the dtype's categories for categoricals, the sorted
    distinct values otherwise), so every chunk gets the same dummy columns."""
    if columns is not None and not isinstance(columns, list):
        raise TypeError("Input must be a list-like for parameter `columns`")
    t = data if is_pandas_tileable(data) else _local_to_tileable(
        data if isinstance(data, (pd.DataFrame, pd.Series)) else pd.Series(data))
    if isinstance(t, Index):
        raise NotImplementedError("get_dummies of an md.Index: use an md.Series")
    meta = t.data.meta
    kwargs = dict(prefix=prefix, prefix_sep=prefix_sep, dummy_na=dummy_na, columns=columns, sparse=sparse,
                  drop_first=drop_first, dtype=dtype)
    if isinstance(meta, pd.Series):
        kwargs.pop("columns")
        enc = {None: meta}
    else:
        if columns is None:
            names = list(meta.select_dtypes(include=["object", "string", "category"]).columns)
        else:
            names = list(columns)
            for c in names:
                if c not in meta.columns:
                    raise KeyError(f"None of [Index({names!r}, dtype='object')] are in the [columns]")
        enc = {c: meta[c] for c in names}
        if columns is None:
            kwargs["columns"] = names
    cats = {}
    pending = {}
    for c, m in enc.items():
        if isinstance(m.dtype, pd.CategoricalDtype):
            cats[c] = m.dtype.categories
        else:
            pending[c] = t if c is None else t[c]
    if pending:
        from mars_dask import execute

        uniq = {c: s.unique() for c, s in pending.items()}
        execute(*uniq.values())
        for c, u in uniq.items():
            cats[c] = _sorted_categories(u.fetch())
    # pandas' own checks (prefix lengths...) and the output structure, on a stand-in
    kw = dict(cats=cats, kwargs=kwargs)
    if isinstance(meta, pd.Series) and not isinstance(meta.dtype, pd.CategoricalDtype):
        levels = pd.Series(np.asarray(cats[None], dtype=object)).astype(meta.dtype)
        kw["columns"] = pd.get_dummies(levels, **kwargs).columns
    out_meta = _dummies_kernel(meta, **kw).iloc[:0]
    return map_rows(_dummies_kernel, t, kwargs=kw, meta=out_meta, name="get-dummies")


# ---- cut / qcut --------------------------------------------------------------------------


def _cut_kernel(x, bins, kwargs):
    res = pd.cut(x, bins, **kwargs)
    if isinstance(x, pd.Index):
        return pd.Index(res, name=x.name)
    return res


def _fetch_local(b):
    if is_pandas_tileable(b) or _is_tensor(b):
        b.execute()
        b = b.fetch()
    return b


def _cut_input(x):
    if is_pandas_tileable(x):
        if isinstance(x, DataFrame):
            raise ValueError("Input array must be 1 dimensional")
        return x
    if isinstance(x, pd.Series):
        return from_pandas(x)
    if _is_tensor(x):
        if x.ndim != 1:
            raise ValueError("Input array must be 1 dimensional")
        return from_tensor(x, "index")
    arr = np.asarray(x) if not isinstance(x, (pd.Index, pd.api.extensions.ExtensionArray)) else x
    if np.ndim(arr) != 1:
        raise ValueError("Input array must be 1 dimensional")
    return from_pandas(pd.Index(arr))


def _index_to_series(idx):
    return pd.Series(idx, index=None)


def _as_series(t):
    """A Series of ``t``'s values (for reductions; its labels are not meaningful)."""
    if isinstance(t, Series):
        return t
    return map_rows(_index_to_series, t, preserves_index=False, name="to-series")


def cut(x, bins, right=True, labels=None, retbins=False, precision=3, include_lowest=False, duplicates="raise",
        ordered=True):
    """``pandas.cut`` chunk by chunk.  With ``bins`` an integer the edges come from the
    minimum and maximum over all chunks (computed first), exactly as pandas computes them; a
    tileable ``bins`` (e.g. quantiles) is computed first.  Series -> Series; other inputs give
    an ``md.Index`` (pandas gives a Categorical / an array).  ``retbins=True`` also returns the
    edges (a tensor, or the IntervalIndex given)."""
    from .. import tensor as mt

    if isinstance(bins, numbers.Integral) and not isinstance(bins, bool) and bins < 1:
        raise ValueError("`bins` should be a positive integer")
    t = _cut_input(x)
    bins = _fetch_local(bins)
    if isinstance(bins, pd.Series):
        bins = bins.to_numpy()
    kw = dict(right=right, labels=labels, precision=precision, include_lowest=include_lowest,
              duplicates=duplicates, ordered=ordered)
    meta = t.data.meta
    if isinstance(bins, numbers.Integral) and not isinstance(bins, bool):
        mn, mx = _as_series(t).min(), _as_series(t).max()
        from mars_dask import execute

        execute(mn, mx)
        mn, mx = mn.fetch(), mx.fetch()
        if pd.isna(mn):
            raise ValueError("Cannot cut empty array")
        sample = pd.Series([mn, mx], dtype=meta.dtype)
        _, edges = pd.cut(sample, bins, retbins=True, right=right, include_lowest=include_lowest, duplicates=duplicates)
    else:
        edges = bins
        if not isinstance(bins, pd.IntervalIndex):
            _, edges = pd.cut(meta.iloc[:0] if isinstance(meta, pd.Series) else meta[:0], bins, retbins=True,
                              right=right, include_lowest=include_lowest, duplicates=duplicates)
    ckw = dict(bins=edges, kwargs=kw)
    if labels is False:
        res = map_rows(_cut_kernel, t, kwargs=ckw, meta=_cut_kernel(meta, **ckw), name="cut")
        res = _unified(res)
    else:
        res = map_rows(_cut_kernel, t, kwargs=ckw, meta=_cut_kernel(meta, **ckw), name="cut")
    if retbins:
        return res, (edges if isinstance(edges, pd.IntervalIndex) else mt.tensor(np.asarray(edges)))
    return res


def qcut(x, q, labels=None, retbins=False, precision=3, duplicate="raise", **kwargs):
    """``pandas.qcut``: the quantiles are computed over all chunks first (pandas' linear
    interpolation over the non-null values), then every chunk is binned with them.
    ``duplicate=`` is Mars's spelling; pandas' ``duplicates=`` is accepted too."""
    duplicates = kwargs.pop("duplicates", duplicate)
    if kwargs:
        raise TypeError(f"qcut() got unexpected keyword arguments {sorted(kwargs)}")
    if isinstance(q, numbers.Integral) and not isinstance(q, bool):
        if q < 1:
            raise ValueError("`q` should be a positive integer.")
        qs = np.linspace(0, 1, q + 1)
        # pandas rounds up the quantiles not representable in base 2
        np.putmask(qs, q * qs != np.arange(q + 1), np.nextafter(qs, 1))
    elif pd.api.types.is_list_like(q):
        qs = np.asarray(q)
    else:
        raise ValueError("`q` should be a positive integer or list-like of quantiles.")
    t = _cut_input(x)
    quant = _as_series(t).dropna().quantile(list(qs))
    quant.execute()
    edges = pd.Index(quant.fetch().to_numpy())
    return cut(t, edges, labels=labels, retbins=retbins, precision=precision, include_lowest=True,
               duplicates=duplicates)


# ---- melt --------------------------------------------------------------------------------


def _melt_kernel(df, kwargs):
    return pd.melt(df, **kwargs)


def melt(frame, id_vars=None, value_vars=None, var_name=None, value_name="value", col_level=None):
    """``pandas.melt``: each value column is unpivoted chunk by chunk and the pieces are
    concatenated in pandas' order (all rows of the first value column, then the next...),
    with pandas' ``RangeIndex``."""
    from .concat import concat

    if not is_pandas_tileable(frame):
        frame = from_pandas(pd.DataFrame(frame))
    meta = frame.data.meta
    kw = dict(id_vars=id_vars, value_vars=value_vars, var_name=var_name, value_name=value_name, col_level=col_level)
    full_meta = pd.melt(meta, **kw)  # pandas' checks (KeyError for missing columns...)
    ids = [] if id_vars is None else ([id_vars] if not isinstance(id_vars, (list, tuple, np.ndarray)) else list(id_vars))
    if value_vars is None:
        vals = [c for c in meta.columns if c not in ids] if col_level is None else None
    else:
        vals = [value_vars] if not isinstance(value_vars, (list, tuple, np.ndarray)) else list(value_vars)
    if vals is None or len(vals) <= 1 or isinstance(meta.columns, pd.MultiIndex):
        parts = [map_rows(_melt_kernel, frame, kwargs=dict(kwargs=kw), meta=full_meta, rows="unknown",
                          preserves_index=False, name="melt")]
    else:
        var_name = var_name if var_name is not None else (meta.columns.name if meta.columns.name is not None
                                                          else "variable")
        parts = []
        for v in vals:
            pkw = dict(kw, value_vars=[v], var_name=var_name)
            pmeta = pd.melt(meta, **pkw)
            parts.append(map_rows(_melt_kernel, frame, kwargs=dict(kwargs=pkw), meta=pmeta, rows="unknown",
                                  preserves_index=False, name="melt"))
    res = concat(parts, ignore_index=True) if len(parts) > 1 else concat(parts, ignore_index=True)
    if res.data.meta.dtypes.to_dict() != full_meta.dtypes.to_dict():
        res = map_rows(_astype_frame_kernel, res, kwargs=dict(dtypes=full_meta.dtypes.to_dict()), meta=full_meta,
                       name="astype")
    return res


@register_method(DataFrame, name="melt")
def _df_melt(self, id_vars=None, value_vars=None, var_name=None, value_name="value", col_level=None):
    return melt(self, id_vars=id_vars, value_vars=value_vars, var_name=var_name, value_name=value_name,
                col_level=col_level)


# ---- eval --------------------------------------------------------------------------------

_LOCAL_TAG = "_mars_local_var_"
_BACKTICK_TAG = "_mars_backtick_var_"


def _preparse(expr: str) -> str:
    out = []
    toks = tokenize.generate_tokens(StringIO(expr).readline)
    for tok in toks:
        num, val = tok.type, tok.string
        if num == tokenize.OP and val == "@":
            out.append((tokenize.NAME, _LOCAL_TAG))
            continue
        if num == tokenize.OP and val == "&":
            out.append((tokenize.NAME, "and"))
            continue
        if num == tokenize.OP and val == "|":
            out.append((tokenize.NAME, "or"))
            continue
        if val == "`" or (num == tokenize.ERRORTOKEN and val == "`"):
            start = tok.start
            for t2 in toks:
                if t2.string == "`":
                    name = tok.line[start[1] + 1:t2.start[1]]
                    out.append((tokenize.NAME, _BACKTICK_TAG + name.encode().hex()))
                    break
            else:
                raise SyntaxError(f"backtick quote at {start} does not match")
            continue
        out.append((num, val))
    src = tokenize.untokenize(out)
    return src.replace(_LOCAL_TAG + " ", _LOCAL_TAG)


class _Evaluator(ast.NodeVisitor):
    import operator as _op

    _binops = {
        ast.Add: _op.add, ast.Sub: _op.sub, ast.Mult: _op.mul, ast.Div: _op.truediv, ast.FloorDiv: _op.floordiv,
        ast.Mod: _op.mod, ast.Pow: _op.pow, ast.BitAnd: _op.and_, ast.BitOr: _op.or_, ast.BitXor: _op.xor,
        ast.Eq: _op.eq, ast.NotEq: _op.ne, ast.Lt: _op.lt, ast.LtE: _op.le, ast.Gt: _op.gt, ast.GtE: _op.ge,
        ast.In: lambda x, y: x.isin(y if not isinstance(y, (str, numbers.Number)) else [y]),
        ast.NotIn: lambda x, y: ~x.isin(y if not isinstance(y, (str, numbers.Number)) else [y]),
        ast.And: _op.and_, ast.Or: _op.or_,
    }
    _unops = {ast.UAdd: _op.pos, ast.USub: _op.neg, ast.Invert: _op.invert, ast.Not: _op.invert}

    def __init__(self, resolvers, target, env):
        self.resolvers, self.target, self.env = resolvers, target, env
        self.assigned = False

    def lookup(self, name):
        for r in self.resolvers:
            try:
                if name in r.columns:
                    return r[name]
            except (AttributeError, TypeError):
                try:
                    return r[name]
                except (KeyError, IndexError):
                    continue
        if name in self.env:
            return self.env[name]
        raise pd.errors.UndefinedVariableError(name) if hasattr(pd.errors, "UndefinedVariableError") else KeyError(name)

    def generic_visit(self, node):
        raise SyntaxError(f"Query string contains unsupported syntax: {type(node).__name__}")

    def visit_Module(self, node):
        if self.target is None and len(node.body) != 1:
            raise ValueError("multi-line expressions are only valid in the context of data, use DataFrame.eval")
        res = None
        for stmt in node.body:
            res = self.visit(stmt)
        return res

    def visit_Expr(self, node):
        return self.visit(node.value)

    def visit_BinOp(self, node):
        return self._binops[type(node.op)](self.visit(node.left), self.visit(node.right))

    def visit_UnaryOp(self, node):
        return self._unops[type(node.op)](self.visit(node.operand))

    def visit_BoolOp(self, node):
        f = self._binops[type(node.op)]
        return reduce(f, [self.visit(v) for v in node.values])

    def visit_Compare(self, node):
        left = self.visit(node.left)
        res = None
        for op, comp in zip(node.ops, node.comparators):
            right = self.visit(comp)
            part = self._binops[type(op)](left, right)
            res = part if res is None else (res & part)
            left = right
        return res

    def visit_Name(self, node):
        name = node.id
        if name.startswith(_LOCAL_TAG):
            name = name[len(_LOCAL_TAG):]
            if name not in self.env:
                raise KeyError(f"local variable '{name}' is not defined")
            return self.env[name]
        if name.startswith(_BACKTICK_TAG):
            return self.lookup(bytes.fromhex(name[len(_BACKTICK_TAG):]).decode())
        if name in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[name]
        return self.lookup(name)

    def visit_Constant(self, node):
        return node.value

    def visit_List(self, node):
        return [self.visit(e) for e in node.elts]

    visit_Tuple = visit_List

    def visit_Attribute(self, node):
        if not isinstance(node.ctx, ast.Load):
            raise ValueError(f"Invalid Attribute context {type(node.ctx).__name__}")
        return getattr(self.visit(node.value), node.attr)

    def visit_Subscript(self, node):
        return self.visit(node.value)[self.visit(node.slice)]

    def visit_Slice(self, node):
        def v(n):
            return None if n is None else self.visit(n)

        return slice(v(node.lower), v(node.upper), v(node.step))

    def visit_Call(self, node):
        func = self.visit(node.func)
        return func(*[self.visit(a) for a in node.args], **{k.arg: self.visit(k.value) for k in node.keywords})

    def visit_Assign(self, node):
        if self.target is None:
            raise ValueError("cannot assign without a target object")
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            raise ValueError("Does not support assigning to multiple objects")
        self.target[node.targets[0].id] = self.visit(node.value)
        self.assigned = True
        return None


def eval(expr, parser="mars", engine=None, local_dict=None, global_dict=None, resolvers=(), level=0,  # noqa: A001
         target=None, inplace=False):
    """Mars's ``md.eval``: evaluate a string expression whose names are md objects (or
    columns of ``resolvers``/``target``), building the lazy operations element-wise, chunk by
    chunk.  ``@name`` and bare names not found as columns come from ``local_dict``/
    ``global_dict`` or the caller's frame.  An assignment ``c = expr`` sets column ``c`` of
    ``target`` (a copy unless ``inplace=True``) and returns it (``None`` if in place)."""
    if not isinstance(expr, str):
        raise TypeError("expr must be a string")
    if parser not in ("mars", "pandas", "python"):
        raise NotImplementedError("md.eval supports parser='mars' (pandas' syntax) only")
    if engine not in (None, "python", "numexpr"):
        raise ValueError(f"Invalid engine '{engine}' passed")
    expr = textwrap.dedent(expr).strip()
    if not expr:
        raise ValueError("expr cannot be an empty string")
    frame = sys._getframe(level + 1)
    try:
        env = dict(frame.f_globals)
        env.update(frame.f_locals)
    finally:
        del frame
    if global_dict:
        env.update(global_dict)
    if local_dict:
        env.update(local_dict)
    orig_target = target
    if target is not None and not inplace:
        target = target.copy()
    if target is not None and resolvers and resolvers[0] is not None and not inplace:
        resolvers = (target, *resolvers[1:]) if resolvers[0] is orig_target else resolvers
    ev = _Evaluator(list(resolvers), target, env)
    res = ev.visit(ast.parse(_preparse(expr)))
    if ev.assigned:
        return None if inplace else target
    if inplace:
        raise ValueError("Cannot operate inplace if there is no assignment")
    return res


# ---- constructors ------------------------------------------------------------------------


def from_records(data, index=None, exclude=None, columns=None, coerce_float=False, nrows=None, gpu=None,
                 sparse=False, chunk_size=None, **kw):
    """``DataFrame.from_records``: local records are converted by pandas and cut into chunks
    of ``chunk_size`` rows; a 1-d tensor of a structured (record) dtype is converted chunk by
    chunk."""
    if gpu:
        raise NotImplementedError("GPU DataFrames (gpu=True) are not supported by mars_dask")
    if _is_tensor(data):
        if data.ndim != 1 or data.dtype.names is None:
            raise ValueError("from_records needs a 1-d tensor of a structured (record) dtype")
        if index is not None or exclude is not None or nrows is not None or coerce_float:
            raise NotImplementedError("index=, exclude=, nrows=, coerce_float= with a tensor of records")
        return from_tensor(data, "frame", columns=columns)
    return DataFrame.from_records(data, index=index, exclude=exclude, columns=columns, coerce_float=coerce_float,
                                  nrows=nrows, chunk_size=chunk_size)


def dataframe_from_tensor(tensor, index=None, columns=None, gpu=None, sparse=False):
    """Mars's ``dataframe_from_tensor``: a DataFrame over a 1-d/2-d tensor, chunk by chunk."""
    if gpu:
        raise NotImplementedError("GPU DataFrames (gpu=True) are not supported by mars_dask")
    res = from_tensor(tensor, "frame", columns=columns)
    return _with_index(res, index) if index is not None else res


def series_from_tensor(tensor, index=None, name=None, dtype=None, gpu=None, sparse=False):
    """Mars's ``series_from_tensor``: a Series over a 1-d tensor, chunk by chunk."""
    if gpu:
        raise NotImplementedError("GPU DataFrames (gpu=True) are not supported by mars_dask")
    res = from_tensor(tensor, "series", dtype=dtype, name=name)
    return _with_index(res, index) if index is not None else res


def _set_index_kernel(part, labels):
    part = part.copy()
    part.index = labels
    return part


def _with_index(t, index):
    """``t`` relabelled with a local index (list, array, pd.Index) of the same length."""
    from .arithmetic import positional_like

    if is_pandas_tileable(index) or _is_tensor(index):
        from .index import as_index, relabel

        return relabel(t, as_index(index))
    index = index if isinstance(index, pd.Index) else pd.Index(index)
    if not np.isnan(t.shape[0]) and len(index) != t.shape[0]:
        raise ValueError(f"Length of values ({t.shape[0]}) does not match length of index ({len(index)})")
    labels = positional_like(t, index.to_series(index=pd.RangeIndex(len(index))).reset_index(drop=True))
    meta = t.data.meta.copy()
    meta.index = index[:0]

    def kernel(part, lab):
        return _set_index_kernel(part, pd.Index(lab.to_numpy(), dtype=index.dtype, name=index.name))

    return map_rows(kernel, t, labels, meta=meta, preserves_index=False, name="set-index")


def _to_series_kernel(ind, index, name):
    return ind.to_series(index=index, name=name)


def series_from_index(ind, index=None, name=None):
    """Mars's ``series_from_index`` (``Index.to_series``): values and labels both from the
    Index, chunk by chunk."""
    if not isinstance(ind, Index):
        ind = from_pandas(pd.Index(ind))
    name = name if name is not None else ind.data.meta.name
    meta = ind.data.meta.to_series(name=name)
    res = map_rows(_to_series_kernel, ind, kwargs=dict(index=None, name=name), meta=meta.iloc[:0],
                   preserves_index=False, name="series-from-index")
    if index is not None:
        return _with_index(res, index)
    return res


# ---- read_sql ----------------------------------------------------------------------------


# the connection recipe is shared with ``to_sql`` (io/sql.py)
_sqlalchemy = sql_io.sqlalchemy_module
_Con = sql_io.SQLConnection


def _sql_chunk(con, sql, where, params, limit, offset, kwargs, index_col, start):
    """One chunk: ``sql`` restricted by ``where`` and/or ``LIMIT``/``OFFSET``."""
    sa = _sqlalchemy()
    q = f"SELECT * FROM ({sql}) AS _mars_q"
    if where:
        q += f" WHERE {where}"
    if limit is not None:
        q += f" LIMIT {int(limit)} OFFSET {int(offset)}"
    eng = con.engine()
    try:
        with eng.connect() as c:
            df = pd.read_sql_query(sa.text(q), c, index_col=index_col, params=params, **kwargs)
    finally:
        eng.dispose()
    if start is not None:
        df.index = pd.RangeIndex(start, start + len(df))
    return df


def _partition_wheres(conn, sa, sql, col, num_partitions, low, high, params):
    """Mars's ``partition_col`` ranges: ``num_partitions`` equal ranges of ``[low, high]``
    (the column's min and max unless given); the first range takes everything below, the last
    everything above; NULLs of the column are in no partition (as in Mars)."""
    if not isinstance(num_partitions, numbers.Integral) or num_partitions < 1:
        raise ValueError("num_partitions should be a positive integer when partition_col is specified")
    qcol = '"' + str(col).replace('"', '""') + '"'
    if low is None or high is None:
        mn, mx = conn.execute(sa.text(f"SELECT MIN({qcol}), MAX({qcol}) FROM ({sql}) AS _mars_r"), params or {}).one()
        low = mn if low is None else low
        high = mx if high is None else high
    if isinstance(low, (str, pd.Timestamp, np.datetime64)) or hasattr(low, "isoformat"):
        seps = [x.to_pydatetime() for x in pd.date_range(pd.Timestamp(low), pd.Timestamp(high),
                                                          periods=num_partitions + 1)]
    else:
        seps = [x.item() for x in np.linspace(low, high, num_partitions + 1, endpoint=True)]
    wheres = []
    for i in range(num_partitions):
        conds, p = [], {}
        if i > 0:
            conds.append(f"{qcol} >= :_mars_lo")
            p["_mars_lo"] = seps[i]
        if i < num_partitions - 1:
            conds.append(f"{qcol} < :_mars_hi")
            p["_mars_hi"] = seps[i + 1]
        wheres.append((" AND ".join(conds) if conds else f"{qcol} IS NOT NULL", p))
    return wheres


def _read_sql(sql, con, index_col, coerce_float, params, parse_dates, columns, test_rows, chunk_size,
              engine_kwargs, incremental_index, table=None, schema=None, partition_col=None, num_partitions=None,
              low_limit=None, high_limit=None):
    from ..tiling.core import new_key
    from .core import DataFrameOperand
    from .datasource import row_chunks

    sa = _sqlalchemy()
    if params is not None and not isinstance(params, dict):
        raise NotImplementedError("md.read_sql takes params= as a dict of named parameters (:name in the query)")
    params = dict(params or {})
    c = _Con(con, engine_kwargs)
    eng = c.engine()
    kw = dict(coerce_float=coerce_float, parse_dates=parse_dates)
    try:
        if table is not None:
            tbl = sa.Table(table, sa.MetaData(), schema=schema, autoload_with=eng)
            cols = [tbl.c[x] for x in columns] if columns else list(tbl.c)
            if index_col is not None:
                extra = [index_col] if isinstance(index_col, str) else list(index_col)
                cols = [tbl.c[x] for x in extra if x not in [cc.name for cc in cols]] + cols
            sql = str(sa.select(*cols).compile(eng, compile_kwargs={"literal_binds": True}))
        with eng.connect() as conn:
            sample = pd.read_sql_query(sa.text(f"SELECT * FROM ({sql}) AS _mars_t LIMIT {int(test_rows)}"), conn,
                                       index_col=index_col, params=params, **kw)
            if partition_col is not None:
                wheres = _partition_wheres(conn, sa, sql, partition_col, num_partitions, low_limit, high_limit, params)
                specs = []
                for where, p in wheres:
                    n = conn.execute(sa.text(f"SELECT COUNT(*) FROM ({sql}) AS _mars_c WHERE {where}"),
                                     {**params, **p}).scalar()
                    specs.append((int(n), where, {**params, **p}, None, None))
            else:
                n = conn.execute(sa.text(f"SELECT COUNT(*) FROM ({sql}) AS _mars_c"), params).scalar()
                rows = row_chunks(int(n), chunk_size, sample)
                specs, off = [], 0
                for k in rows:
                    specs.append((k, None, params, k, off))
                    off += k
    finally:
        eng.dispose()
    rows = tuple(sp[0] for sp in specs)
    incremental = incremental_index and index_col is None

    class _SqlSource(DataFrameOperand):
        _op_name = "read-sql"

        def tile(self):
            chunks, start = [], 0
            for i, (k, where, p, limit, off) in enumerate(specs):
                chunks.append(self.new_chunk(i, k, _sql_chunk, (c, sql, where, p, limit, off, kw, index_col,
                                                                 start if incremental else None)))
                start += k
            return [(chunks, (rows, (len(sample.columns),)))]

    op = _SqlSource([])
    key = new_key("read-sql", c.uri, sql, index_col, str(specs), str(kw))
    res = op.new_output(sample.iloc[:0], sum(rows), range_index=incremental, key=key)
    return _unified(res, kind="frame")


def read_sql(sql, con, index_col=None, coerce_float=True, params=None, parse_dates=None, columns=None, chunksize=None,
             test_rows=5, chunk_size=None, engine_kwargs=None, incremental_index=True, partition_col=None,
             num_partitions=None, low_limit=None, high_limit=None):
    """Mars's ``read_sql``: a table name or a query, read in chunks of ``chunk_size`` rows
    (``LIMIT``/``OFFSET``), or with ``partition_col`` in ``num_partitions`` ranges of that
    column (``[low_limit, high_limit]``, the column's min and max by default; rows where it is
    NULL are left out and rows come partition by partition, as in Mars).  ``con`` is an
    SQLAlchemy engine/connection or a URI (each task connects on its own).  ``params`` is a
    dict of ``:name`` parameters.  Column dtypes are unified over the chunks (a chunk where an
    int column is all NULL still gives pandas' float64 for the column)."""
    sa = _sqlalchemy()
    eng = _Con(con, engine_kwargs).engine()
    try:
        is_table = sa.inspect(eng).has_table(sql) if isinstance(sql, str) and sql.isidentifier() else False
    finally:
        eng.dispose()
    common = dict(index_col=index_col, coerce_float=coerce_float, parse_dates=parse_dates, test_rows=test_rows,
                  chunksize=chunksize, chunk_size=chunk_size, engine_kwargs=engine_kwargs,
                  incremental_index=incremental_index, partition_col=partition_col, num_partitions=num_partitions,
                  low_limit=low_limit, high_limit=high_limit)
    if is_table:
        return read_sql_table(sql, con, columns=columns, **common)
    return read_sql_query(sql, con, params=params, **common)


def read_sql_table(table_name, con, schema=None, index_col=None, coerce_float=True, parse_dates=None, columns=None,
                   chunksize=None, test_rows=5, chunk_size=None, engine_kwargs=None, incremental_index=True,
                   use_arrow_dtype=None, partition_col=None, num_partitions=None, low_limit=None, high_limit=None):
    """Mars's ``read_sql_table`` (see :func:`read_sql`)."""
    return _read_sql(None, con, index_col, coerce_float, None, parse_dates, columns, test_rows,
                     chunk_size if chunk_size is not None else chunksize, engine_kwargs, incremental_index,
                     table=table_name, schema=schema, partition_col=partition_col, num_partitions=num_partitions,
                     low_limit=low_limit, high_limit=high_limit)


def read_sql_query(sql, con, index_col=None, coerce_float=True, params=None, parse_dates=None, chunksize=None,
                   test_rows=5, chunk_size=None, engine_kwargs=None, incremental_index=True, use_arrow_dtype=None,
                   partition_col=None, num_partitions=None, low_limit=None, high_limit=None):
    """Mars's ``read_sql_query`` (see :func:`read_sql`)."""
    return _read_sql(sql, con, index_col, coerce_float, params, parse_dates, None, test_rows,
                     chunk_size if chunk_size is not None else chunksize, engine_kwargs, incremental_index,
                     partition_col=partition_col, num_partitions=num_partitions, low_limit=low_limit,
                     high_limit=high_limit)


# ---- Arrow dtypes ------------------------------------------------------------------------


def _is_arrow(obj, pred):
    dt = obj if isinstance(obj, pd.ArrowDtype) else getattr(obj, "dtype", None)
    return isinstance(dt, pd.ArrowDtype) and pred(dt.pyarrow_dtype)


def _is_str(t):
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _is_list(t):
    return pa.types.is_list(t) or pa.types.is_large_list(t)


class _DtypeMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, pd.ArrowDtype) and cls._pred(obj.pyarrow_dtype)


class _ArrayMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, pd.arrays.ArrowExtensionArray) and cls._pred(obj.dtype.pyarrow_dtype)


def _pa_type(t):
    if isinstance(t, pa.DataType):
        return t
    if isinstance(t, pd.ArrowDtype):
        return t.pyarrow_dtype
    if t is str or t == "str" or t == "string":
        return pa.string()
    return pa.from_numpy_dtype(np.dtype(t))


class ArrowStringDtype(metaclass=_DtypeMeta):
    """Mars's ``ArrowStringDtype()``: here ``pd.ArrowDtype(pa.string())``."""

    _pred = staticmethod(_is_str)

    def __new__(cls):
        return pd.ArrowDtype(pa.string())


class ArrowListDtype(metaclass=_DtypeMeta):
    """Mars's ``ArrowListDtype(value_type)``: here ``pd.ArrowDtype(pa.list_(value_type))``."""

    _pred = staticmethod(_is_list)

    def __new__(cls, value_type):
        return pd.ArrowDtype(pa.list_(_pa_type(value_type)))


class ArrowStringArray(metaclass=_ArrayMeta):
    """Mars's ``ArrowStringArray(values)``: an ``ArrowExtensionArray`` of ``pa.string()``."""

    _pred = staticmethod(_is_str)

    def __new__(cls, values, dtype=None, copy=False):
        return pd.array(values, dtype=pd.ArrowDtype(pa.string()))


class ArrowListArray(metaclass=_ArrayMeta):
    """Mars's ``ArrowListArray(values)``: an ``ArrowExtensionArray`` of a ``pa.list_`` type
    (the value type inferred by pyarrow unless ``dtype`` is given)."""

    _pred = staticmethod(_is_list)

    def __new__(cls, values, dtype=None, copy=False):
        if isinstance(values, pa.ChunkedArray):
            arr = values
        else:
            typ = dtype.pyarrow_dtype if isinstance(dtype, pd.ArrowDtype) else None
            arr = pa.chunked_array([pa.array(list(values), type=typ)])
        if not _is_list(arr.type):
            raise TypeError(f"ArrowListArray needs lists, got Arrow type {arr.type}")
        return pd.arrays.ArrowExtensionArray(arr)


@pd.api.extensions.register_extension_dtype
class _MarsArrowDtypeName(pd.ArrowDtype):
    """Registers Mars's dtype strings ``"Arrow[string]"``/``"Arrow[<arrow type>]"`` with
    pandas; the dtype built is a plain ``pd.ArrowDtype``."""

    @classmethod
    def construct_from_string(cls, string):
        if not isinstance(string, str) or not (string.startswith("Arrow[") and string.endswith("]")):
            raise TypeError(f"Cannot construct a 'ArrowDtype' from '{string}'")
        inner = string[len("Arrow["):-1]
        if inner == "string":
            return pd.ArrowDtype(pa.string())
        return pd.ArrowDtype.construct_from_string(f"{inner}[pyarrow]")
