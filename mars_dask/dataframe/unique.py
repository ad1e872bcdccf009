"""``value_counts``, ``unique``, ``nlargest``/``nsmallest`` (tree reductions) and
``drop_duplicates``/``duplicated`` (tree or hash shuffle, chosen automatically).

drop_duplicates / duplicated (exact pandas rows, order and index).  Each input chunk ``i``
is first reduced to its *candidates*: the subset columns of the rows that survive a
``duplicated`` inside the chunk, with their source chunk ``i`` and local position (for
``keep=False`` a flag says the key already repeats inside the chunk).  The candidates are
then deduplicated globally, in (chunk, position) order, so the first (or last) occurrence
across chunks wins as in pandas:

- *tree*: concatenate and deduplicate level by level (few distinct rows);
- *shuffle*: hash-partition the candidates by the subset columns
  (:func:`mars_dask.dataframe.shuffle.hash_shuffle`), deduplicate each partition, and route
  the surviving ``(chunk, position)`` pairs back to their source chunk with a second shuffle
  (by chunk number).

Either way the surviving positions finally select rows of the *original* chunks, so the
output keeps the input's partitioning, order and labels (``duplicated`` returns the
complement as a boolean Series aligned with the input).  ``method="auto"`` (Mars's
default) takes the tree when the input is small (known size under
``tiling.chunk-store-limit``) or, otherwise, when the candidates (executed first, by
iterative tiling) are small; else the shuffle.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from dask.utils import parse_bytes

from .. import config
from ..tiling.core import Chunk
from .core import DataFrame, DataFrameOperand, Series, frame_nsplits, nan, register_method, row_nbytes
from .reduction import Reducer, _combine_counts, _probe, _validate_bool, combine_size, tree_reduce
from .shuffle import concat_pieces, hash_shuffle, shuffle_chunks, split_by_codes

__all__ = ["unique"]


# ---- value_counts ----------------------------------------------------------------------


class ValueCountsReducer(Reducer):
    """Per-chunk ``value_counts(sort=False)``, summed by label in first-appearance order
    (so ties keep pandas' order after the final stable sort)."""

    def map(self, x):
        if self.frame:
            return x.value_counts(subset=self.subset, sort=False, dropna=self.dropna)
        return x.value_counts(sort=False, dropna=self.dropna)

    def combine(self, parts):
        if len(parts) == 1:
            return parts[0]
        if not self.frame:
            return _combine_counts(parts)
        cat = pd.concat(parts)
        nlev = cat.index.nlevels
        res = cat.groupby(level=list(range(nlev)) if nlev > 1 else 0, sort=False, dropna=False, observed=True).sum()
        res.index.names = parts[0].index.names
        res.name = parts[0].name
        return res

    def finish(self, parts):
        res = self.combine(parts)
        if self.normalize:
            total = res.sum()
            res = res / total if total else res.astype("float64")
            res.name = "proportion"
        if self.sort:
            res = res.sort_values(ascending=self.ascending, kind="stable")
        return res


def _vc_probe_kw(normalize, sort, ascending, dropna):
    for n, v in (("normalize", normalize), ("sort", sort), ("ascending", ascending), ("dropna", dropna)):
        _validate_bool(n, v)


@register_method(Series)
def value_counts(self, normalize=False, sort=True, ascending=False, bins=None, dropna=True):
    """pandas' ``value_counts`` (tree of per-chunk counts); ties keep pandas' order."""
    if bins is not None:
        raise NotImplementedError("value_counts(bins=...) is not supported")
    _vc_probe_kw(normalize, sort, ascending, dropna)
    res = _probe(self, lambda m: m.value_counts(normalize=normalize, sort=sort, ascending=ascending, dropna=dropna))
    red = ValueCountsReducer(frame=False, subset=None, normalize=normalize, sort=sort, ascending=ascending, dropna=dropna)
    return tree_reduce(self, red, res.iloc[:0], name="value-counts")


def _frame_value_counts(self, subset=None, normalize=False, sort=True, ascending=False, dropna=True):
    """``DataFrame.value_counts`` (counts of distinct rows of ``subset``)."""
    _vc_probe_kw(normalize, sort, ascending, dropna)
    if subset is not None:
        labels = [subset] if not isinstance(subset, (list, tuple, pd.Index)) else list(subset)
        _check_subset(self, labels)
    res = _probe(self, lambda m: m.value_counts(subset=subset, normalize=normalize, sort=sort, ascending=ascending, dropna=dropna))
    red = ValueCountsReducer(frame=True, subset=subset, normalize=normalize, sort=sort, ascending=ascending, dropna=dropna)
    return tree_reduce(self, red, res.iloc[:0], name="value-counts")


DataFrame.value_counts = _frame_value_counts


# ---- unique ------------------------------------------------------------------------------


class UniqueReducer(Reducer):
    def map(self, x):
        return x.drop_duplicates()

    def combine(self, parts):
        if len(parts) == 1:
            return parts[0]
        return pd.concat(parts).drop_duplicates()

    def finish(self, parts):
        return self.combine(parts).unique()


def unique(values):
    """``pd.unique`` of a Series / ``Series.unique()``: distinct values in order of
    appearance (a numpy array or pandas ExtensionArray once fetched)."""
    if not isinstance(values, Series):
        raise TypeError(f"unique() needs a mars_dask Series, got {type(values).__name__}")
    res = _probe(values, lambda m: m.unique())
    dt = res.dtype if isinstance(res.dtype, np.dtype) else np.dtype(object)
    return tree_reduce(values, UniqueReducer(), scalar_dtype=dt, scalar_shape=(nan,), name="unique")


Series.unique = lambda self: unique(self)
Series.unique.__name__ = "unique"
Series.unique.__doc__ = unique.__doc__


# ---- nlargest / nsmallest ------------------------------------------------------------------


class TopReducer(Reducer):
    def _top(self, x, extra=0):
        if self.frame:
            return getattr(x, self.name)(self.n + extra, self.columns, keep=self.keep)
        return getattr(x, self.name)(self.n + extra, keep=self.keep)

    def _candidates(self, x):
        # the top rows, kept in their original order (so that "first"/"last" among ties
        # still refer to global positions when the partials are concatenated)
        # n + 1 candidates: when the whole input has more than n rows, so do the candidates,
        # and pandas takes the same code path (its ties order differs when n >= length)
        top = self._top(x.set_axis(pd.RangeIndex(len(x))), extra=1)
        return x.iloc[np.sort(top.index.to_numpy())]

    def map(self, x):
        return self._candidates(x)

    def combine(self, parts):
        return self._candidates(pd.concat(parts) if len(parts) > 1 else parts[0])

    def finish(self, parts):
        return self._top(pd.concat(parts) if len(parts) > 1 else parts[0])


def _top_method(name):
    def frame_method(self, n, columns, keep="first"):
        if keep not in ("first", "last", "all"):
            raise ValueError('keep must be either "first", "last" or "all"')
        labels = [columns] if not isinstance(columns, (list, tuple, pd.Index)) else list(columns)
        _check_subset(self, labels)
        n = _check_n(n)
        res = _probe(self, lambda m: getattr(m, name)(n, columns, keep=keep))
        red = TopReducer(frame=True, name=name, n=n, columns=columns, keep=keep)
        return tree_reduce(self, red, res.iloc[:0], name=name)

    def series_method(self, n=5, keep="first"):
        if keep not in ("first", "last", "all"):
            raise ValueError('keep must be either "first", "last" or "all"')
        n = _check_n(n)
        res = _probe(self, lambda m: getattr(m, name)(n, keep=keep))
        red = TopReducer(frame=False, name=name, n=n, columns=None, keep=keep)
        return tree_reduce(self, red, res.iloc[:0], name=name)

    frame_method.__name__ = series_method.__name__ = name
    frame_method.__doc__ = series_method.__doc__ = f"pandas' ``{name}``: per-chunk top n, tree-combined."
    setattr(DataFrame, name, frame_method)
    setattr(Series, name, series_method)


def _check_n(n):
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"n must be an integer, got {n!r}")
    return int(n)


for _n in ("nlargest", "nsmallest"):
    _top_method(_n)


# ---- drop_duplicates / duplicated ------------------------------------------------------------


def _check_subset(df, labels):
    missing = [c for c in labels if c not in df.columns]
    if missing:
        raise KeyError(pd.Index(missing) if len(missing) > 1 else missing[0])


def _keys_frame(x, subset_pos):
    if isinstance(x, pd.Series):
        key = x.to_frame()
    else:
        key = x.iloc[:, list(subset_pos)] if subset_pos is not None else x
    key = key.copy(deep=False)
    key.columns = pd.RangeIndex(key.shape[1])
    return key


def _dedup(frame, nkeys, keep):
    """Candidates of ``frame`` (key columns ``0..nkeys-1``, then pos, src[, multi]) kept by
    a ``duplicated`` with ``keep`` (for keep=False: first occurrences, multi flagged)."""
    keys = list(range(nkeys))
    if keep is False:
        dup_any = frame.duplicated(subset=keys, keep=False).to_numpy()
        first = ~frame.duplicated(subset=keys, keep="first").to_numpy()
        out = frame[first]
        multi = dup_any[first]
        if "multi" in frame.columns:
            multi = multi | frame["multi"].to_numpy()[first]
        out = out.copy(deep=False)
        out["multi"] = multi
        return out
    return frame[~frame.duplicated(subset=keys, keep=keep).to_numpy()]


def _dup_map(x, i, subset_pos, keep):
    key = _keys_frame(x, subset_pos)
    nkeys = key.shape[1]
    key["pos"] = np.arange(len(key), dtype=np.int64)
    key["src"] = np.full(len(key), i, dtype=np.int64)
    return _dedup(key, nkeys, keep)


def _dup_combine(parts, nkeys, keep):
    parts = list(parts)
    cat = parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)
    return _dedup(cat, nkeys, keep)


def _dup_survivors(parts, nkeys, keep):
    out = _dup_combine(parts, nkeys, keep)
    if keep is False:
        out = out[~out["multi"].to_numpy()]
    return out[["src", "pos"]]


def _split_by_src(frame, n):
    return split_by_codes(frame, frame["src"].to_numpy(dtype=np.intp), n)


def _dup_apply(x, survivors, i, mode):
    if isinstance(survivors, list):
        survivors = concat_pieces(survivors) if survivors else None
    if survivors is None or not len(survivors):
        pos = np.empty(0, dtype=np.int64)
    else:
        src = survivors["src"].to_numpy()
        pos = np.sort(survivors["pos"].to_numpy()[src == i])
    if mode == "drop":
        return x.iloc[pos]
    mask = np.ones(len(x), dtype=bool)
    mask[pos] = False
    return pd.Series(mask, index=x.index, name=x.name if isinstance(x, pd.Series) else None)


def _renumber(x, start):
    x = x.copy(deep=False)
    x.index = pd.RangeIndex(start, start + len(x))
    return x


class DropDuplicates(DataFrameOperand):
    """drop_duplicates (``mode="drop"``) / duplicated (``mode="flags"``); see the module
    docstring for the tree and shuffle algorithms."""

    _op_name = "drop-duplicates"

    def tile(self):
        (x,) = self.inputs
        okey = self.output_key()
        nkeys, keep = self.nkeys, self.keep
        cands = [
            Chunk((f"{okey}-cand", i), (i,), (nan,), _dup_map, (c, i, self.subset_pos, keep), inputs=[c])
            for i, c in enumerate(x.chunks)
        ]
        method = self.method
        limit = self.store_limit
        if method == "auto":
            nrows = x.shape[0]
            if len(cands) <= 1 or (not math.isnan(nrows) and nrows * row_nbytes(x.meta) <= limit):
                method = "tree"
            else:
                yield cands  # Mars: the tree when the distinct rows are few
                total = sum(c.shape[0] for c in cands)
                method = "tree" if total * (8.0 * (nkeys + 3)) <= limit else "shuffle"
        if method == "tree":
            parts = cands
            size = self.combine
            level = 0
            while len(parts) > size:
                parts = [
                    Chunk((f"{okey}-comb{level}", j // size), (j // size,), (nan,), _dup_combine,
                          (parts[j : j + size], nkeys, keep), inputs=parts[j : j + size])
                    for j in range(0, len(parts), size)
                ]
                level += 1
            surv = Chunk((f"{okey}-survivors", 0), (0,), (nan,), _dup_survivors, (parts, nkeys, keep), inputs=parts)
            routed = [surv] * len(cands)
        else:
            n = max(1, len(cands))
            per_part = hash_shuffle(self, cands, list(range(nkeys)), n, name="dedup")
            reducers = [
                Chunk((f"{okey}-survivors", j), (j,), (nan,), _dup_survivors, (pieces, nkeys, keep), inputs=pieces)
                for j, pieces in enumerate(per_part)
            ]
            back = shuffle_chunks(self, reducers, len(cands), _split_by_src, (len(cands),), name="route")
            routed = back
        out = self.output
        mode = self.mode
        chunks = []
        for i, c in enumerate(x.chunks):
            nrows = c.shape[0] if mode == "flags" else nan
            suffix = "-sel" if self.ignore_index else ""
            chunks.append(self.new_chunk(i, nrows, _dup_apply, (c, routed[i], i, mode), meta=out.meta, suffix=suffix,
                                         inputs=[c, routed[i]] if isinstance(routed[i], Chunk) else [c, *routed[i]]))
        if self.ignore_index:
            yield chunks
            start = 0
            final = []
            for i, c in enumerate(chunks):
                final.append(self.new_chunk(i, c.shape[0], _renumber, (c, start), meta=out.meta))
                start += c.shape[0]
            chunks = final
        return [(chunks, frame_nsplits(out.meta, tuple(c.shape[0] for c in chunks)))]


def _dup_args(obj, subset, keep, method):
    if keep not in ("first", "last", False):
        raise ValueError('keep must be either "first", "last" or False')
    if method not in ("auto", "tree", "shuffle"):
        raise ValueError(f"method must be 'auto', 'tree' or 'shuffle', got {method!r}")
    if isinstance(obj, Series) or subset is None:
        ncols = 1 if isinstance(obj, Series) else len(obj.columns)
        return None, ncols
    labels = [subset] if not isinstance(subset, (list, tuple, pd.Index)) or (isinstance(subset, tuple) and subset in obj.columns) else list(subset)
    _check_subset(obj, labels)
    cols = obj.columns
    pos = [i for i, c in enumerate(cols) if c in set(labels)]
    return pos, len(pos)


def _tiling_params() -> dict:
    """The configuration the tile plan depends on, read when the operation is built: as
    parameters they are part of its key, so one key always has one chunk graph (a key
    tiled under another limit would name other chunks, issue 17)."""
    return {"store_limit": parse_bytes(config.get("tiling.chunk-store-limit")),
            "combine": combine_size()}


def _drop_duplicates(self, subset=None, keep="first", inplace=False, ignore_index=False, method="auto"):
    """pandas' ``drop_duplicates`` (exact rows, order and labels); ``method`` as Mars:
    ``"auto"``, ``"tree"`` or ``"shuffle"``."""
    if isinstance(self, Series):
        if subset is not None:
            raise TypeError("Series.drop_duplicates() got an unexpected keyword argument 'subset'")
    _validate_bool("ignore_index", ignore_index)
    pos, nkeys = _dup_args(self, subset, keep, method)
    meta = self.data.meta
    if ignore_index:
        meta = meta.reset_index(drop=True).iloc[:0]
    op = DropDuplicates([self.data], subset_pos=pos, nkeys=nkeys, keep=keep, method=method, mode="drop",
                        ignore_index=ignore_index, **_tiling_params())
    out = op.new_output(meta, nan, range_index=bool(ignore_index))
    if inplace:
        self.data = out.data
        return None
    return out


def _frame_drop_duplicates(self, subset=None, *, keep="first", inplace=False, ignore_index=False, method="auto"):
    return _drop_duplicates(self, subset, keep, inplace, ignore_index, method)


def _series_drop_duplicates(self, *, keep="first", inplace=False, ignore_index=False, method="auto"):
    return _drop_duplicates(self, None, keep, inplace, ignore_index, method)


def _duplicated(self, subset=None, keep="first", method="auto"):
    """pandas' ``duplicated``: a boolean Series aligned with the input."""
    pos, nkeys = _dup_args(self, subset, keep, method)
    meta = pd.Series([], dtype=bool, index=self.data.meta.index[:0], name=self.data.meta.name if isinstance(self, Series) else None)
    op = DropDuplicates([self.data], subset_pos=pos, nkeys=nkeys, keep=keep, method=method, mode="flags",
                        ignore_index=False, **_tiling_params())
    return op.new_output(meta, self.shape[0], index_key=self.data.index_key, range_index=self.data.range_index)


_frame_drop_duplicates.__doc__ = _series_drop_duplicates.__doc__ = _drop_duplicates.__doc__
DataFrame.drop_duplicates = _frame_drop_duplicates
Series.drop_duplicates = _series_drop_duplicates
DataFrame.duplicated = lambda self, subset=None, keep="first", method="auto": _duplicated(self, subset, keep, method)
Series.duplicated = lambda self, keep="first", method="auto": _duplicated(self, None, keep, method)
DataFrame.duplicated.__doc__ = Series.duplicated.__doc__ = _duplicated.__doc__
