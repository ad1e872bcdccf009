"""``merge`` / ``DataFrame.merge`` / ``DataFrame.join`` (Mars's two join algorithms).

- **Broadcast join**: when one side is small (its estimated bytes below
  ``mars-dask.dataframe.broadcast-limit``, default 32 MiB, or it is one chunk) the small side
  is gathered whole and merged with every chunk of the big side.  Valid for ``how`` in
  ``inner``, ``left`` (small side on the right), ``right`` (small side on the left) and
  ``cross`` (the right side is gathered).  Broadcasting the right side keeps pandas' row
  order exactly (left order for ``inner``/``left``/``cross``, right order when the left side
  is broadcast for ``right``).
- **Hash-shuffle join**: both sides are hash-partitioned on their keys into the same ``n``
  partitions (:mod:`mars_dask.dataframe.shuffle`; the hash is normalised so keys of
  different dtypes that pandas matches, e.g. int and float, meet) and partition ``j`` of the
  left is merged with partition ``j`` of the right.  Rows come out grouped by partition, so
  the row order differs from pandas' (pandas defines left order for ``inner``/``left`` and
  sorted keys for ``outer``): compare with ``sort_values`` / ``check_like``.  ``validate=``
  is exact (equal keys always share a partition).

``method="auto"|"broadcast"|"shuffle"`` (as Mars's ``method=``) forces an algorithm.

Metadata (dtypes) are pandas' when some rows do not match: for ``left``/``right``/``outer``
joins the other side's integer/bool columns are float/object (as pandas gives them when any
row is unmatched).  Every chunk is cast to that metadata, so dtypes do not depend on the
data; pandas keeps int64 only when *every* row matches.  A result with a default
``RangeIndex`` (merges on columns, ``cross``) gets one ``RangeIndex`` across all chunks.
"""

from __future__ import annotations

import math

import pandas as pd
from dask.dataframe.utils import meta_nonempty
from dask.utils import parse_bytes

from .. import config
from ..tiling.tileable import Tileable
from .core import DataFrame, DataFrameOperand, Series, frame_nsplits, nan, register_method, row_nbytes
from .map import is_pandas_tileable, map_rows
from .shuffle import concat_pieces, hash_shuffle_keys, relabel_range

__all__ = ["merge"]

_HOWS = ("inner", "left", "right", "outer", "cross")
_METHODS = ("auto", "broadcast", "shuffle")


# ---- kernels ------------------------------------------------------------------------------


def _call(kind, left, right, kwargs):
    if kind == "join":
        return left.join(right, **kwargs)
    return pd.merge(left, right, **kwargs)


def cast_like(df, meta):
    """``df`` with the dtypes (columns and a flat index) of ``meta`` where they differ."""
    if isinstance(df, pd.DataFrame) and df.columns.is_unique and list(df.columns) == list(meta.columns):
        diff = {c: t for c, t in meta.dtypes.items() if df.dtypes[c] != t}
        if diff:
            df = df.astype(diff)
    if (
        not isinstance(meta.index, pd.MultiIndex)
        and not isinstance(df.index, pd.MultiIndex)
        and df.index.dtype != meta.index.dtype
    ):
        df = df.copy(deep=False)
        try:
            df.index = df.index.astype(meta.index.dtype)
        except (TypeError, ValueError):  # pragma: no cover - keep the data's own labels
            pass
    return df


def _merge_chunk(left, right, kind, kwargs, meta):
    if isinstance(left, list):
        left = concat_pieces(left)
    if isinstance(right, list):
        right = concat_pieces(right)
    return cast_like(_call(kind, left, right, kwargs), meta)


# ---- metadata and keys ---------------------------------------------------------------------


def _join_meta(kind, lmeta, rmeta, how, kwargs):
    """pandas' result structure, with the dtypes it has when some rows do not match."""
    lne, rne = meta_nonempty(lmeta), meta_nonempty(rmeta)
    kwargs = {k: v for k, v in kwargs.items() if k != "validate"}  # stand-ins repeat their keys
    parts = [_call(kind, lne, rne, kwargs)]
    if how in ("left", "outer"):
        parts.append(_call(kind, lne, rne.iloc[:0], kwargs))
    if how in ("right", "outer"):
        parts.append(_call(kind, lne.iloc[:0], rne, kwargs))
    res = pd.concat(parts) if len(parts) > 1 else parts[0]
    return res.iloc[:0]


def _side_keys(meta, use_index, side_on, on, side):
    """One side's join keys: its index, its own ``*_on`` labels, the shared ``on``, or None."""
    if use_index:
        return _index_keys(meta)
    if side_on is not None:
        return _label_keys(meta, side_on, side)
    if on is not None:
        return _label_keys(meta, on, side)
    return None


def _label_keys(meta, labels, side):
    keys = []
    for lab in labels:
        if lab in meta.columns:
            keys.append(("c", lab))
        elif lab is not None and lab in meta.index.names:
            keys.append(("i", lab))
        else:
            raise KeyError(f"{lab!r} is not a column or index level of the {side} frame")
    return tuple(keys)


def _index_keys(meta):
    n = meta.index.nlevels
    return (("i", None),) if n == 1 else tuple(("i", i) for i in range(n))


def _as_list(x):
    if x is None:
        return None
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _merge_keys(lmeta, rmeta, how, on, left_on, right_on, left_index, right_index):
    """Key specs (columns/index levels) of both sides, as pandas would pair them."""
    if how == "cross":
        return (), ()
    on, left_on, right_on = _as_list(on), _as_list(left_on), _as_list(right_on)
    for arg in (on, left_on, right_on):
        if arg is not None and any(is_pandas_tileable(a) or hasattr(a, "__array__") for a in arg):
            raise NotImplementedError("merge keys must be column or index level names (arrays are not supported)")
    lkeys = _side_keys(lmeta, left_index, left_on, on, "left")
    rkeys = _side_keys(rmeta, right_index, right_on, on, "right")
    if lkeys is None and rkeys is None:
        common = [c for c in lmeta.columns if c in set(rmeta.columns)]
        lkeys = rkeys = tuple(("c", c) for c in common)
    if lkeys is None or rkeys is None or len(lkeys) != len(rkeys) or not lkeys:
        # pandas raised already for the stand-ins in nearly every such case
        raise pd.errors.MergeError("cannot pair the merge keys of the two sides")
    return lkeys, rkeys


def _to_frame_kernel(s):
    return s.to_frame()


def _as_frame(obj, side):
    if isinstance(obj, DataFrame):
        return obj
    if isinstance(obj, Series):
        if obj.name is None:
            raise ValueError("Cannot merge a Series without a name")
        return map_rows(_to_frame_kernel, obj, meta=obj.data.meta.to_frame(), name="to-frame")
    if isinstance(obj, (pd.DataFrame, pd.Series)):
        from .datasource import from_pandas

        return _as_frame(from_pandas(obj, chunk_size=max(1, len(obj))), side)
    raise TypeError(f"Can only merge Series or DataFrame objects, a {type(obj).__name__} was passed")


def _estimated_bytes(data) -> float:
    n = data.shape[0]
    if isinstance(n, float) and math.isnan(n):
        return math.inf
    return float(n) * row_nbytes(data.meta)


# ---- operand ------------------------------------------------------------------------------


class DataFrameMerge(DataFrameOperand):
    """A merge/join of two frames by broadcast or hash shuffle (chosen at tiling time)."""

    _op_name = "merge"

    def tile(self):
        left, right = self.inputs
        how, method = self.how, self.method
        meta = self.output.meta
        nl, nr = len(left.chunks), len(right.chunks)
        limit = parse_bytes(config.get("dataframe.broadcast-limit"))
        small_l = nl == 1 or _estimated_bytes(left) < limit
        small_r = nr == 1 or _estimated_bytes(right) < limit
        if how == "cross":
            algo = "bcast-right"
        elif nl == 1 and nr == 1:
            algo = "bcast-right" if how != "right" else "bcast-left"
        elif method == "shuffle" or self.validate is not None:
            algo = "shuffle"
        elif method == "broadcast":
            if how == "inner":
                algo = "bcast-left" if _estimated_bytes(left) < _estimated_bytes(right) else "bcast-right"
            else:
                algo = "bcast-right" if how == "left" else "bcast-left"
        else:
            if how in ("inner", "left") and small_r:
                algo = "bcast-right"
            elif how in ("inner", "right") and small_l:
                algo = "bcast-left"
            else:
                algo = "shuffle"
        self.algorithm = algo  # for tests / introspection
        suffix = "-partial" if self.relabel else ""
        args = (self.kind, self.kwargs, meta)
        chunks = []
        if algo == "shuffle":
            n = max(nl, nr)
            lparts = hash_shuffle_keys(self, left.chunks, self.left_keys, n, name="shuffle-left")
            rparts = hash_shuffle_keys(self, right.chunks, self.right_keys, n, name="shuffle-right")
            for j in range(n):
                chunks.append(self.new_chunk(j, nan, _merge_chunk, (lparts[j], rparts[j], *args), suffix=suffix))
        else:
            small, big = (right, left) if algo == "bcast-right" else (left, right)
            if len(small.chunks) == 1:
                whole = small.chunks[0]
            else:
                whole = self.new_chunk(0, small.shape[0], concat_pieces, (list(small.chunks),), meta=small.meta, suffix="-broadcast")
            for i, c in enumerate(big.chunks):
                pair = (c, whole) if algo == "bcast-right" else (whole, c)
                chunks.append(self.new_chunk(i, nan, _merge_chunk, (*pair, *args), suffix=suffix))
        if self.relabel:
            chunks = relabel_range(self, chunks)
        return [(chunks, frame_nsplits(meta, [c.shape[0] for c in chunks]))]


def _check_how_method(how, method, validate):
    if how not in _HOWS:
        raise ValueError(f"how must be one of {_HOWS}, got {how!r}")
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
    if method == "broadcast" and how == "outer":
        raise ValueError("a broadcast join supports how='inner', 'left', 'right' or 'cross', not 'outer'")


def _build(kind, left, right, how, kwargs, lkeys, rkeys, relabel, method, validate):
    meta = _join_meta(kind, left.data.meta, right.data.meta, how, kwargs)
    op = DataFrameMerge(
        [left.data, right.data], kind=kind, kwargs=kwargs, how=how, method=method, relabel=relabel,
        left_keys=lkeys, right_keys=rkeys, validate=validate,
    )
    return op.new_output(meta, nan, range_index=relabel)


def merge(
    left,
    right,
    how="inner",
    on=None,
    left_on=None,
    right_on=None,
    left_index=False,
    right_index=False,
    sort=False,
    suffixes=("_x", "_y"),
    copy=None,
    indicator=False,
    validate=None,
    method="auto",
):
    """``pandas.merge`` (Mars's ``md.merge``; ``method=`` picks the join algorithm, see the
    module notes for the row order of shuffle joins)."""
    _check_how_method(how, method, validate)
    if sort:
        raise NotImplementedError("merge(sort=True) is not supported; sort_values() the result")
    left, right = _as_frame(left, "left"), _as_frame(right, "right")
    kwargs = dict(
        how=how, on=on, left_on=left_on, right_on=right_on, left_index=left_index,
        right_index=right_index, suffixes=suffixes, indicator=indicator, validate=validate,
    )
    if how == "cross":
        kwargs = dict(how=how, suffixes=suffixes, indicator=indicator, validate=validate)
    # pandas validates names, dtypes and argument combinations on the stand-ins
    _join_meta("merge", left.data.meta, right.data.meta, "inner", kwargs)
    lkeys, rkeys = _merge_keys(left.data.meta, right.data.meta, how, on, left_on, right_on, left_index, right_index)
    relabel = how == "cross" or not (left_index or right_index)
    return _build("merge", left, right, how, kwargs, lkeys, rkeys, relabel, method, validate)


@register_method(DataFrame, name="merge")
def _df_merge(self, right, how="inner", on=None, left_on=None, right_on=None, left_index=False,
              right_index=False, sort=False, suffixes=("_x", "_y"), copy=None, indicator=False,
              validate=None, method="auto"):
    return merge(self, right, how=how, on=on, left_on=left_on, right_on=right_on, left_index=left_index,
                 right_index=right_index, sort=sort, suffixes=suffixes, indicator=indicator,
                 validate=validate, method=method)


@register_method(DataFrame, name="join")
def _df_join(self, other, on=None, how="left", lsuffix=None, rsuffix=None, sort=False, validate=None, *,
             suffixes=None, method="auto"):
    """``DataFrame.join`` with one DataFrame or named Series (``other`` joined on its index);
    ``suffixes=`` (pandas 3) or the older ``lsuffix``/``rsuffix``."""
    if isinstance(other, (list, tuple)):
        raise NotImplementedError("join with a list of frames is not supported; merge them one by one")
    _check_how_method(how, method, validate)
    if sort:
        raise NotImplementedError("join(sort=True) is not supported; sort_index() the result")
    if isinstance(other, Tileable) and isinstance(other, Series) and other.name is None:
        raise ValueError("Other Series must have a name")
    other = _as_frame(other, "right")
    kwargs = dict(on=on, how=how, validate=validate)
    if suffixes is not None:
        kwargs["suffixes"] = suffixes
    elif lsuffix is not None or rsuffix is not None:
        kwargs["suffixes"] = (lsuffix or "", rsuffix or "")
    _join_meta("join", self.data.meta, other.data.meta, "inner", kwargs)
    if how == "cross":
        lkeys = rkeys = ()
    else:
        rkeys = _index_keys(other.data.meta)
        lkeys = _label_keys(self.data.meta, _as_list(on), "left") if on is not None else _index_keys(self.data.meta)
        if len(lkeys) != len(rkeys):
            raise ValueError("len(left_on) must equal the number of levels in the index of \"right\"")
    return _build("join", self, other, how, kwargs, lkeys, rkeys, how == "cross", method, validate)
