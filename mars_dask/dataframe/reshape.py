"""``pivot_table`` and ``crosstab`` basics.

The aggregation is distributed: every chunk computes partial aggregates per group of the
``index + columns`` keys (sum and count for ``mean``; ``sum``, ``count``, ``min``, ``max``,
``size``), a tree (``mars-dask.tensor.combine-size`` chunks per level) combines them into
one small chunk.  The result's *columns* are data values, and DataFrame tileables need
their columns before execution, so -- as Mars does for such operations -- the small
aggregated table is executed when ``pivot_table``/``crosstab`` is called (inside the current
session) and the pivoting (unstack, ``fill_value``, ``dropna``, normalisation) is pandas'
own, on the aggregated groups.  The result is a DataFrame over that local table.
"""

from __future__ import annotations

import pandas as pd

from .. import config
from .core import DataFrame, DataFrameOperand, Series, frame_nsplits, nan, register_method
from .map import aligned

__all__ = ["pivot_table", "crosstab"]

_AGGS = ("mean", "sum", "count", "min", "max", "size")
_PARTIALS = {"mean": ("sum", "count"), "sum": ("sum",), "count": ("count",), "min": ("min",), "max": ("max",)}
_COMBINE = {"sum": "sum", "count": "sum", "min": "min", "max": "max", "size": "sum"}


def _partial(df, keys, values, aggfunc):
    if isinstance(df, list):
        df = pd.concat(df)
    g = df.groupby(keys, observed=True, dropna=False, sort=False)
    if aggfunc == "size":
        return g.size().to_frame(("__size__", "size"))
    out = {}
    for v in values:
        for f in _PARTIALS[aggfunc]:
            out[(v, f)] = getattr(g[v], f)()
    return pd.DataFrame(out)


def _combine(parts, nkeys):
    df = pd.concat(parts)
    g = df.groupby(level=list(range(nkeys)), observed=True, dropna=False, sort=False)
    return g.agg({c: _COMBINE[c[1]] for c in df.columns})


class PivotPartialAgg(DataFrameOperand):
    """The grouped partial aggregates of a pivot table, tree-combined into one chunk."""

    _op_name = "pivot-agg"

    def tile(self):
        (inp,) = self.inputs
        size = max(2, int(config.get("tensor.combine-size")))
        meta = self.output.meta
        level = [
            self.new_chunk(i, nan, _partial, (c, self.keys, self.values, self.aggfunc), suffix="-partial-0")
            for i, c in enumerate(inp.chunks)
        ]
        depth = 0
        while len(level) > 1:
            depth += 1
            groups = [level[i : i + size] for i in range(0, len(level), size)]
            last = len(groups) == 1
            level = [
                self.new_chunk(i, nan, _combine, (g, len(self.keys)), suffix="" if last else f"-partial-{depth}")
                for i, g in enumerate(groups)
            ]
        if depth == 0:
            level = [self.new_chunk(0, nan, _combine, (level, len(self.keys)))]
        return [(level, frame_nsplits(meta, [nan]))]


def _agged(partials: pd.DataFrame, values, aggfunc) -> pd.DataFrame:
    """pandas' ``data.groupby(keys)[values].agg(aggfunc)`` from the combined partials."""
    if aggfunc == "size":
        return partials[("__size__", "size")].rename("__size__").to_frame()
    out = {}
    for v in values:
        if aggfunc == "mean":
            out[v] = partials[(v, "sum")] / partials[(v, "count")]
        else:
            out[v] = partials[(v, aggfunc)]
    return pd.DataFrame(out, index=partials.index)


def _check_keys(df, labels, what):
    for lab in labels:
        if lab not in df.columns:
            raise KeyError(lab)


def _grouped_table(df, keys, values, aggfunc):
    """Execute the distributed partial aggregation and return the pandas ``agged`` frame
    (groups as index levels, one column per value)."""
    meta = df.data.meta
    stand = _partial(meta, keys, values, aggfunc)
    op = PivotPartialAgg([df.data], keys=list(keys), values=list(values), aggfunc=aggfunc)
    t = op.new_output(stand.iloc[:0], nan)
    t.execute()
    partials = t.fetch()
    return _agged(partials, values, aggfunc)


def _as_list(x):
    if x is None:
        return []
    return list(x) if isinstance(x, (list, tuple)) else [x]


@register_method(DataFrame, name="pivot_table")
def _df_pivot_table(self, values=None, index=None, columns=None, aggfunc="mean", fill_value=None,
                    margins=False, dropna=True, margins_name="All", observed=True, sort=True):
    return pivot_table(self, values=values, index=index, columns=columns, aggfunc=aggfunc, fill_value=fill_value,
                       margins=margins, dropna=dropna, margins_name=margins_name, observed=observed, sort=sort)


def pivot_table(data, values=None, index=None, columns=None, aggfunc="mean", fill_value=None, margins=False,
                dropna=True, margins_name="All", observed=True, sort=True):
    """``pandas.pivot_table`` for ``aggfunc`` in mean/sum/count/min/max (see the module
    notes: the small aggregated table is executed when this is called)."""
    if not isinstance(data, DataFrame):
        raise TypeError("pivot_table needs a DataFrame")
    if aggfunc not in _AGGS or aggfunc == "size":
        raise NotImplementedError(f"pivot_table supports aggfunc in {_AGGS[:-1]}, got {aggfunc!r}")
    if margins:
        raise NotImplementedError("pivot_table(margins=True) is not supported")
    if not observed:
        raise NotImplementedError("pivot_table(observed=False) is not supported")
    index_l, columns_l = _as_list(index), _as_list(columns)
    keys = index_l + columns_l
    if not keys:
        raise ValueError("No group keys passed!")
    _check_keys(data, keys, "key")
    meta = data.data.meta
    if values is None:
        vals = [c for c in meta.columns if c not in keys]
    else:
        vals = _as_list(values)
        _check_keys(data, vals, "value")
    # pandas validates the aggregation's dtypes on a stand-in before anything runs
    from dask.dataframe.utils import meta_nonempty

    pd.pivot_table(meta_nonempty(meta), values=values, index=index, columns=columns, aggfunc=aggfunc,
                   fill_value=fill_value, dropna=dropna, observed=observed, sort=sort)
    agged = _grouped_table(data[keys + vals] if len(keys + vals) < len(meta.columns) else data, keys, vals, aggfunc)
    frame = agged.reset_index()
    table = pd.pivot_table(frame, values=values if values is not None else vals, index=index, columns=columns,
                           aggfunc="first", fill_value=fill_value, dropna=dropna, observed=True, sort=sort)
    from .datasource import from_pandas

    return from_pandas(table, chunk_size=max(1, len(table)))


def crosstab(index, columns, values=None, rownames=None, colnames=None, aggfunc=None, margins=False,
             margins_name="All", dropna=True, normalize=False):
    """``pandas.crosstab`` of Series tileables sharing one index (counts, or ``values``
    aggregated by ``aggfunc`` in mean/sum/count/min/max; ``normalize`` as pandas)."""
    from pandas.core.reshape.pivot import _normalize

    idx_list, col_list = _as_list(index), _as_list(columns)
    if margins:
        raise NotImplementedError("crosstab(margins=True) is not supported")
    if (values is None) != (aggfunc is None):
        raise ValueError("values cannot be used without an aggfunc." if aggfunc is None else "aggfunc cannot be used without values.")
    if aggfunc is not None and aggfunc not in _AGGS[:-1]:
        raise NotImplementedError(f"crosstab supports aggfunc in {_AGGS[:-1]}, got {aggfunc!r}")
    if normalize not in (False, True, "all", "index", "columns", 0, 1):
        raise ValueError("Not a valid normalize argument")
    series = idx_list + col_list + ([values] if values is not None else [])
    if not series or not all(isinstance(s, Series) for s in series):
        raise TypeError("crosstab needs Series tileables for index, columns and values")
    if not aligned(*series):
        raise ValueError("crosstab: the Series have different indexes or row partitioning")
    rown = list(rownames) if rownames is not None else [s.name if s.name is not None else f"row_{i}" for i, s in enumerate(idx_list)]
    coln = list(colnames) if colnames is not None else [s.name if s.name is not None else f"col_{i}" for i, s in enumerate(col_list)]
    if len(rown) != len(idx_list) or len(coln) != len(col_list):
        raise ValueError("rownames/colnames must have one name per Series")
    names = [f"__k{i}__" for i in range(len(rown) + len(coln))]
    from .concat import concat

    parts = [s for s in idx_list + col_list]
    cols = list(names)
    if values is not None:
        parts.append(values)
        cols.append("__dummy__")
    frame = concat(parts, axis=1, keys=cols)
    keys = names
    if values is None:
        agged = _grouped_table(frame, keys, [], "size")
        agged = agged.rename(columns={"__size__": "__dummy__"})
        kwargs = dict(fill_value=0)
    else:
        agged = _grouped_table(frame, keys, ["__dummy__"], aggfunc)
        kwargs = {}
    table = pd.pivot_table(agged.reset_index(), values="__dummy__", index=names[: len(rown)], columns=names[len(rown):],
                           aggfunc="first", dropna=dropna, observed=True, **kwargs)
    if normalize is not False:
        table = _normalize(table, normalize=normalize, margins=False, margins_name=margins_name)
    table = table.rename_axis(index=dict(zip(names[: len(rown)], rown)), axis=0)
    table = table.rename_axis(columns=dict(zip(names[len(rown):], coln)), axis=1)
    from .datasource import from_pandas

    return from_pandas(table, chunk_size=max(1, len(table)))
