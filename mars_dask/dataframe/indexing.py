"""``df[...]`` and ``df[...] = value``: column selection, boolean filters, column assignment."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..tiling.tileable import Tileable
from .core import DataFrame, Series
from .map import aligned, boolean_filter, is_pandas_tileable, is_scalar_tileable, map_rows

__all__: list[str] = []


def _getitem_kernel(df, item):
    return df[item]


def _check_columns(df: DataFrame, labels) -> None:
    missing = [c for c in labels if c not in df.columns]
    if missing:
        raise KeyError(f"None of {missing} are in the columns" if len(missing) == len(labels) else f"{missing} not in columns")


def getitem(obj, item):
    """``obj[item]`` for DataFrames (columns, a boolean mask: a Series tileable matched by
    label, or a local boolean list/array by position) and Series (see
    :func:`.selection.series_getitem`)."""
    if is_pandas_tileable(item):
        if not (isinstance(item, Series) and pd.api.types.is_bool_dtype(item.dtype)):
            raise TypeError(f"indexing with a {type(item).__name__} needs a boolean Series mask")
        if not aligned(obj, item):
            from .methods import _with_labels_like

            recut = _with_labels_like(obj, item)
            if recut is None:
                raise ValueError("the boolean mask has a different index than the object it filters")
            item = recut
        return boolean_filter(obj, item)
    if isinstance(obj, DataFrame) and isinstance(item, (np.ndarray, pd.api.extensions.ExtensionArray)) or (
        isinstance(obj, DataFrame) and isinstance(item, list) and item and all(isinstance(x, (bool, np.bool_)) for x in item)
    ):
        arr = np.asarray(item)
        if arr.ndim != 1:
            raise ValueError(f"Cannot index with a {arr.ndim}-d array")
        if arr.dtype == bool:
            from . import selection

            n = obj.shape[0]
            if n == n and len(arr) != n:
                raise ValueError(f"Item wrong length {len(arr)} instead of {int(n)}.")
            return selection.iloc_select(obj, arr)
        item = list(arr)
    if isinstance(obj, DataFrame):
        if isinstance(item, (list, pd.Index, tuple)) and not (isinstance(item, tuple) and item in obj.columns):
            labels = list(item)
            _check_columns(obj, labels)
            return map_rows(_getitem_kernel, obj, labels, meta=obj.data.meta[labels], name="getitem")
        if isinstance(item, slice):
            from . import selection

            return selection.slice_rows(obj, item)
        _check_columns(obj, [item])
        return map_rows(_getitem_kernel, obj, item, meta=obj.data.meta[item], name="getitem")
    from . import selection

    return selection.series_getitem(obj, item)


def _setitem_kernel(df, key, value):
    df = df.copy(deep=False)
    df[key] = value
    return df


def _setitem_whole(df, whole, key):
    """``df[key] = whole`` where ``whole`` holds all rows of a differently indexed Series:
    pandas reindexes it to ``df``'s labels."""
    df = df.copy(deep=False)
    df[key] = whole
    return df


def setitem(df: DataFrame, key, value) -> None:
    """``df[key] = value``: the handle now points at a new tileable (Mars semantics), with
    a scalar, an aligned Series/DataFrame, a Series with other labels or partitioning
    (re-cut when the labels are equal, otherwise passed whole to every chunk, which pandas
    reindexes to the chunk's labels), a 0-d tileable (its value in every row), or a
    list/array/tensor of the frame's length (positional)."""
    from ..tensor.core import Tensor
    from .arithmetic import _recut_like, known_labels, positional_like

    if isinstance(key, (list, tuple, pd.Index)) and not (isinstance(key, tuple) and key in df.columns):
        keys = list(key)
    else:
        keys = [key]
    if is_scalar_tileable(value):  # ``df["c"] = df["a"].mean()``: broadcast, as a scalar
        pass
    elif isinstance(value, Tensor):
        value = positional_like(df, value)
    elif isinstance(value, Tileable) and not is_pandas_tileable(value):
        raise TypeError(f"cannot assign a {type(value).__name__}")
    elif isinstance(value, (list, np.ndarray, pd.api.extensions.ExtensionArray, range)) or (
        isinstance(value, tuple) and len(keys) == 1
    ):
        arr = np.asarray(value) if not isinstance(value, pd.api.extensions.ExtensionArray) else value
        if arr.ndim == 0:
            value = arr.item()
        elif arr.ndim == 2 and len(keys) > 1:
            if arr.shape[1] != len(keys):
                raise ValueError("Columns must be same length as key")
            value = _positional_frame(df, arr, keys)
        else:
            value = positional_like(df, value)
    if is_pandas_tileable(value) and not aligned(df, value):
        ll, lv = known_labels(df.data), known_labels(value.data)
        if ll is not None and lv is not None and ll.equals(lv):
            value = _recut_like(value, df, index_key=df.data.index_key)
        else:
            from .methods import broadcast_map

            meta = _setitem_kernel(df.data.meta, key, value.data.meta)
            new = broadcast_map(_setitem_whole, df, value, key, meta=meta)
            df.data = new.data
            return
    new = map_rows(_setitem_kernel, df, key, value, name="setitem")
    df.data = new.data


def _positional_frame(df, arr, keys):
    from .arithmetic import _recut_like
    from .datasource import from_pandas

    local = pd.DataFrame(arr, columns=keys)
    v = from_pandas(local, chunk_size=max(1, len(local)))
    n = df.shape[0]
    if n == n and len(local) != n:
        raise ValueError(f"Length of values ({len(local)}) does not match length of index ({int(n)})")
    meta = v.data.meta.set_axis(df.data.meta.index, axis=0)
    return _recut_like(v, df, index_key=df.data.index_key, meta=meta, adopt=True)
