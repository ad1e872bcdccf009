"""``df[...]`` and ``df[...] = value``: column selection, boolean filters, column assignment."""

from __future__ import annotations

import pandas as pd

from ..tiling.tileable import Tileable
from .core import DataFrame, Series
from .map import aligned, boolean_filter, is_pandas_tileable, map_rows

__all__: list[str] = []


def _getitem_kernel(df, item):
    return df[item]


def _check_columns(df: DataFrame, labels) -> None:
    missing = [c for c in labels if c not in df.columns]
    if missing:
        raise KeyError(f"None of {missing} are in the columns" if len(missing) == len(labels) else f"{missing} not in columns")


def getitem(obj, item):
    """``obj[item]`` for DataFrames (columns or a boolean mask) and Series (a boolean mask)."""
    if is_pandas_tileable(item):
        if not (isinstance(item, Series) and pd.api.types.is_bool_dtype(item.dtype)):
            raise TypeError(f"indexing with a {type(item).__name__} needs a boolean Series mask")
        if not aligned(obj, item):
            raise ValueError("the boolean mask has a different index than the object it filters")
        return boolean_filter(obj, item)
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


def setitem(df: DataFrame, key, value) -> None:
    """``df[key] = value``: the handle now points at a new tileable (Mars semantics), with
    a scalar, an aligned Series/DataFrame, or a list/array of the frame's length."""
    if isinstance(value, Tileable) and not is_pandas_tileable(value):
        from ..tensor.core import Tensor

        if isinstance(value, Tensor):
            from .datasource import from_tensor

            value = from_tensor(value, "series" if value.ndim == 1 else "frame")
    if is_pandas_tileable(value) and not aligned(df, value):
        from .arithmetic import align

        df_al, value = align(df, value)
        new = map_rows(_setitem_kernel, df_al, key, value, name="setitem")
    else:
        new = map_rows(_setitem_kernel, df, key, value, name="setitem")
    df.data = new.data
