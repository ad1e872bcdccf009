"""``sort_values`` and ``sort_index`` for DataFrame and Series (Mars's PSRS).

One chunk: sorted on its own.  Otherwise (parallel sorting by regular sampling, as Mars):

1. every chunk gives regular samples of its (non-null) first sort key;
2. one small task sorts all samples and picks ``P - 1`` pivots (``P`` = number of chunks);
3. every chunk is range-partitioned on the first key by the pivots
   (:func:`mars_dask.dataframe.shuffle.range_shuffle_key`: equal keys share a partition,
   nulls go to the first or last partition by ``na_position``, descending keys reverse the
   partitions);
4. partition ``j`` concatenates its pieces (in input chunk order) and sorts them by all keys.

Sorts are stable (pandas' ``kind="stable"``): ties keep their input order, whatever the
chunking, because pieces are concatenated in input order and every sort is stable.  The
output has one chunk per partition, with lengths known after execution.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .core import DataFrame, DataFrameOperand, Series, frame_nsplits, infer_meta, nan, register_method
from .shuffle import concat_pieces, range_shuffle_key, relabel_range, sample_pivots

__all__: list[str] = []


def _numeric_order(obj, by, ascending):
    """The stable ascending order of a numeric key without missing values, or None.

    pandas' ``sort_values`` goes through ``nargsort``, which masks missing values, copies
    the rest and their positions, sorts, gathers and concatenates: for a float key without
    NaN that is the one stable argsort (the same permutation) plus ~40% more time."""
    if ascending is not True and ascending != [True]:
        return None
    if isinstance(obj, pd.Series):
        col = obj
    elif len(by) == 1 and not isinstance(obj.columns, pd.MultiIndex) and obj.columns.is_unique:
        col = obj[by[0]]
    else:
        return None
    if col.dtype.kind not in "iuf" or not isinstance(col.dtype, np.dtype):
        return None
    values = col.to_numpy()
    if values.dtype.kind == "f" and np.isnan(values).any():
        return None
    return np.argsort(values, kind="stable")


def _sort_kernel(obj, spec):
    if isinstance(obj, list):
        obj = concat_pieces(obj)
    what, by, ascending, na_position, level, sort_remaining, ignore_index = spec
    order = _numeric_order(obj, by, ascending) if what == "values" else None
    if order is not None:
        res = obj.take(order)
        if ignore_index:
            res.index = pd.RangeIndex(len(res))
        return res
    if what == "values":
        if isinstance(obj, pd.Series):
            res = obj.sort_values(ascending=ascending, kind="stable", na_position=na_position, ignore_index=ignore_index)
        else:
            res = obj.sort_values(by, ascending=ascending, kind="stable", na_position=na_position, ignore_index=ignore_index)
    else:
        res = obj.sort_index(
            level=level, ascending=ascending, kind="stable", na_position=na_position,
            sort_remaining=sort_remaining, ignore_index=ignore_index,
        )
    return res


class DataFrameSort(DataFrameOperand):
    _op_name = "sort"

    def tile(self):
        (inp,) = self.inputs
        meta = self.output.meta
        spec = self.spec
        if len(inp.chunks) == 1:
            c = inp.chunks[0]
            chunk = self.new_chunk(0, c.shape[0], _sort_kernel, (c, spec), blockwise=True)
            return [([chunk], frame_nsplits(meta, [c.shape[0]]))]
        n = len(inp.chunks)
        pivots = sample_pivots(self, inp.chunks, self.first_key, n)
        parts = range_shuffle_key(
            self, inp.chunks, self.first_key, pivots, n_parts=n, ascending=self.first_ascending,
            na_position=spec[3],
        )
        suffix = "-partial" if spec[-1] else ""
        chunks = [self.new_chunk(j, nan, _sort_kernel, (pieces, spec), suffix=suffix) for j, pieces in enumerate(parts)]
        if spec[-1]:
            chunks = relabel_range(self, chunks)
        return [(chunks, frame_nsplits(meta, [nan] * len(chunks)))]


def _check_common(axis, inplace, key, na_position):
    if axis not in (0, "index", "rows"):
        raise NotImplementedError("only axis=0 sorts are supported (rows are distributed, columns are not)")
    if key is not None:
        raise NotImplementedError("sorting with key= is not supported; assign the transformed key as a column")
    if na_position not in ("first", "last"):
        raise ValueError(f"invalid na_position: {na_position}")


def _finish(self, spec, first_key, first_ascending, inplace):
    data = self.data
    meta = infer_meta(_sort_kernel, data.meta, spec)
    op = DataFrameSort([data], spec=spec, first_key=first_key, first_ascending=first_ascending)
    out = op.new_output(meta, data.shape[0], range_index=spec[-1])
    if inplace:
        self.data = out.data
        return None
    return out


def _first_ascending(ascending):
    if isinstance(ascending, (list, tuple)):
        return bool(ascending[0]) if ascending else True
    return bool(ascending)


@register_method(DataFrame, name="sort_values")
def _df_sort_values(self, by, *, axis=0, ascending=True, inplace=False, kind="quicksort",
                    na_position="last", ignore_index=False, key=None):
    """``DataFrame.sort_values`` (stable for every ``kind``); ``by`` names columns."""
    _check_common(axis, inplace, key, na_position)
    by = list(by) if isinstance(by, (list, tuple)) else [by]
    if not by:
        raise ValueError("sort_values needs at least one column in by")
    missing = [b for b in by if b not in self.columns]
    if missing:
        raise KeyError(missing[0] if len(missing) == 1 else missing)
    if isinstance(ascending, (list, tuple)) and len(ascending) != len(by):
        raise ValueError(f"Length of ascending ({len(ascending)}) != length of by ({len(by)})")
    spec = ("values", by, ascending, na_position, None, True, bool(ignore_index))
    return _finish(self, spec, ("c", by[0]), _first_ascending(ascending), inplace)


@register_method(Series, name="sort_values")
def _series_sort_values(self, *, axis=0, ascending=True, inplace=False, kind="quicksort",
                        na_position="last", ignore_index=False, key=None):
    """``Series.sort_values`` (stable for every ``kind``)."""
    _check_common(axis, inplace, key, na_position)
    if isinstance(ascending, (list, tuple)):
        if len(ascending) != 1:
            raise ValueError(f"Length of ascending ({len(ascending)}) must be 1 for Series")
        ascending = ascending[0]
    spec = ("values", None, bool(ascending), na_position, None, True, bool(ignore_index))
    return _finish(self, spec, ("c", self.name), bool(ascending), inplace)


def _sort_index(self, axis=0, level=None, ascending=True, inplace=False, kind="quicksort",
                na_position="last", sort_remaining=True, ignore_index=False, key=None):
    """``sort_index`` (stable for every ``kind``)."""
    _check_common(axis, inplace, key, na_position)
    nlevels = self.data.meta.index.nlevels
    levels = level if isinstance(level, (list, tuple)) else ([level] if level is not None else None)
    if levels is not None:
        names = list(self.data.meta.index.names)
        for lv in levels:
            if isinstance(lv, int) and not isinstance(lv, bool):
                if not -nlevels <= lv < nlevels:
                    raise IndexError(f"Too many levels: Index has only {nlevels} levels, not {lv + 1}")
            elif lv not in names:
                raise KeyError(f"Level {lv} not found")
        first = levels[0]
    else:
        first = 0
    if isinstance(ascending, (list, tuple)) and levels is None and len(ascending) != nlevels:
        raise ValueError("ascending must be a single bool value or a list of bool values of length equal to the number of levels")
    spec = ("index", None, ascending, na_position, level, sort_remaining, bool(ignore_index))
    return _finish(self, spec, ("i", first), _first_ascending(ascending), inplace)


register_method(DataFrame, Series, name="sort_index")(_sort_index)
