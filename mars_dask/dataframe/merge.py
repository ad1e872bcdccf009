"""``merge`` / ``DataFrame.merge`` / ``DataFrame.join``: pandas' results (dtypes, row order,
index) computed chunk-parallel, with Mars's join arguments.

Algorithms (``method="auto"`` picks by size, ``"broadcast"``/``"shuffle"`` force one, as in
Mars):

- **Broadcast join**: the small side (estimated bytes below
  ``mars-dask.dataframe.broadcast-limit`` when the join is built, default 32 MiB, or one
  chunk) is gathered whole and merged with every chunk of the big side; valid for
  ``inner``, ``left`` (small side on the right), ``right`` (small side on the left) and
  ``cross``.  ``method="broadcast"`` with ``validate=`` raises ``ValueError`` (a chunk of
  the big side cannot check its keys' uniqueness).
- **Hash-shuffle join**: both sides are hash-partitioned on their keys into the same ``n``
  partitions (:mod:`mars_dask.dataframe.shuffle`, the hash normalised so that keys pandas
  matches across dtypes meet) and partition ``j`` of the left is merged with partition ``j``
  of the right.  ``validate=`` needs every key's rows together, so it uses this algorithm
  (or the range-partitioned one below).

Row order and index are pandas' exactly (pandas defines them: ``left``/``inner`` keep the
left rows' order, each left row followed by its matches in right order; ``right`` the
mirror image; ``outer`` and ``sort=True`` sort the join keys, nulls last, except
categoricals (category order) and datetimes, whose nulls come first):

- A broadcast of the right side keeps the left order chunk by chunk (and a broadcast of the
  left side the right order for ``how="right"``) at no cost.
- Otherwise the side whose order is kept is tagged with each row's position (chunk number
  and row in chunk, so unknown chunk lengths do not matter), the merged partitions are
  shuffled back by that position into one output chunk per chunk of that side, and each
  output chunk is sorted by the position (stable: the other side's order is kept within a
  row).  The output chunks are aligned to the input's chunks; nothing is gathered.  (An
  inner join broadcasting a small left side cuts the left's positions into as many ranges
  as the right has chunks instead.)  This costs a second shuffle, of the joined rows.
- Key-ordered results (``outer``, ``sort=True``) range-partition the inputs on the first
  join key instead of hashing them (boundaries from regular samples of the keys, as for
  ``sort_values``): partition ``j`` holds keys ordered before those of ``j + 1`` and is
  merged by pandas with ``sort=True``, so the chunks in order are the sorted result.  With
  a broadcast only the big side is range-partitioned.

dtypes: pandas decides them from the data.  A ``left``/``right``/``outer`` join upcasts the
other side's columns (int -> float64, bool -> object, ...) only when some row is unmatched.
When that upcast would change a dtype, the join is executed during tiling (iterative
tiling, as for unknown shapes: the merged chunks are kept, never recomputed), each chunk
reports its dtypes, their common type is the result's (a chunk with unmatched rows has the
upcast dtype, the others the original, so the common type is the upcast one exactly when
pandas upcasts), the tileable's metadata is set to it, and a blockwise step casts the
chunks that differ.  This keeps the merge chunk-parallel (one tiny task reads the chunk
dtypes) where casting by a flag inside the graph could not give the metadata.  Before
execution the metadata holds the upcast dtypes (those of a result with unmatched rows):
operations built on an unexecuted join see those.  Nullable and Arrow dtypes, which pandas
keeps, are kept.  A result with a default ``RangeIndex`` (merges on columns, ``cross``)
gets one ``RangeIndex`` across all chunks.  Its offsets need the chunks' lengths, which a
join only knows after running, except the usual lookup: a left join broadcasting a right
side with unique keys has one row per left row.  One small task during tiling checks the
uniqueness (the answer is kept per right chunk), and the labels are then set inside each
merge task.

Mars's tuning arguments: ``auto_merge``/``auto_merge_threshold`` (Mars concatenates small
chunks before/after a join) and ``bloom_filter``/``bloom_filter_options``/
``bloom_filter_chunk_threshold`` (Mars pre-filters the big side of an inner join with a bloom
filter of the small side's keys) are checked as Mars checks them and change no result.  The
chunk merging is not done: output chunks are aligned to an input's chunks (above), which is
what gives pandas' order without gathering.  The bloom filter is not built: Mars 0.10 itself
applies it only when ``bloom_filter=True`` is explicit (its ``"auto"`` never does), and here
the case where it pays, a small side, is a broadcast join that moves no big-side data.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from ._meta import meta_nonempty
from pandas.core.dtypes.missing import na_value_for_dtype
from dask.utils import parse_bytes

from .. import config
from ..tiling.core import Chunk
from ..tiling.tileable import Tileable
from .core import DataFrame, DataFrameOperand, Series, frame_nsplits, nan, register_method, row_nbytes
from .map import is_pandas_tileable, map_rows
from .shuffle import (
    _choose_pivots,
    concat_pieces,
    hash_shuffle_keys,
    key_values,
    shuffle_chunks,
    split_by_codes,
)

__all__ = ["merge"]

_HOWS = ("inner", "left", "right", "outer", "cross")
_METHODS = ("auto", "broadcast", "shuffle")
_AUTO_MERGE = ("both", "none", "before", "after")
_BLOOM_FILTER_OPTIONS = ("max_elements", "error_rate", "apply_chunk_size_threshold", "filter", "combine_size")
_BLOOM_FILTER_ON = ("large", "small", "both")

#: hidden column carrying a row's position (chunk << _SHIFT | row in chunk) through a join
_POS = "__mars_dask_merge_position__"
_SHIFT = 40


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


def _cast_to(df, meta):
    """:func:`cast_like`, and the index names of ``meta`` (an empty piece of a join may
    lose the names pandas gives the whole result)."""
    df = cast_like(df, meta)
    if list(df.index.names) != list(meta.index.names) and df.index.nlevels == meta.index.nlevels:
        df = df.copy(deep=False)
        df.index = df.index.set_names(meta.index.names)
    return df


def _empty_side_index(res, left, right, how, fix):
    """pandas labels the rows of a join of columns with an index (``left_on`` +
    ``right_index`` or the mirror) by the column side's index, missing labels for
    unmatched rows, except when that side is empty: then it takes the other side's labels.
    A piece of a join may be empty where the whole side is not (``fix``: which sides join
    on their index, whether each whole side has rows): label such a piece as pandas labels
    the whole."""
    if fix is None:
        return res
    lidx, ridx, lrows, rrows = fix
    if ridx and not lidx and how in ("right", "outer") and not len(left) and len(right) and lrows:
        other = left.index
    elif lidx and not ridx and how in ("left", "outer") and not len(right) and len(left) and rrows:
        other = right.index
    else:
        return res
    if isinstance(other, pd.MultiIndex):  # pragma: no cover - pandas does not fill these either
        return res
    filled = other[:0].append(pd.Index([na_value_for_dtype(other.dtype, compat=False)]))
    res = res.copy(deep=False)
    res.index = filled[np.zeros(len(res), dtype=np.intp)].rename(other.name)
    return res


def _merge_chunk(left, right, kind, kwargs, meta, fix=None):
    """One pandas merge; cast to ``meta`` when the dtypes do not depend on the data."""
    if isinstance(left, list):
        left = concat_pieces(left)
    if isinstance(right, list):
        right = concat_pieces(right)
    res = _empty_side_index(_call(kind, left, right, kwargs), left, right, kwargs["how"], fix)
    return res if meta is None else _cast_to(res, meta)


def _key_order(df, keys, modes):
    """Positions of ``df``'s rows stably sorted by the join keys, as pandas' sorted joins
    order them (categories in category order, nulls first for categoricals and datetimes,
    last otherwise)."""
    codes = []
    for values, mode in zip(key_values(df, keys), modes):
        if mode == "obj" and isinstance(values.dtype, pd.CategoricalDtype):
            values = np.asarray(values, dtype=object)
        c, uniques = pd.factorize(values, sort=True)
        c = np.asarray(c, dtype=np.int64)
        if mode in ("num", "obj"):
            c[c < 0] = len(uniques)
        codes.append(c)
    return np.lexsort(codes[::-1])


def _merge_sorted(left, right, kind, kwargs, meta, lkeys, rkeys, modes, fix=None):
    """One key range of a key-ordered join (``kwargs`` has ``sort=True`` or ``how="outer"``).
    pandas sorts a join whose other side is empty with an unstable sort, so that case is a
    join in the non-empty side's order followed by a stable sort of its keys."""
    if isinstance(left, list):
        left = concat_pieces(left)
    if isinstance(right, list):
        right = concat_pieces(right)
    how = kwargs["how"]
    if len(left) and not len(right) and how in ("left", "outer"):
        res = _call(kind, left, right, {**kwargs, "how": "left", "sort": False})
        res = res.iloc[_key_order(left, lkeys, modes)]
    elif len(right) and not len(left) and how in ("right", "outer"):
        res = _call(kind, left, right, {**kwargs, "how": "right", "sort": False})
        res = res.iloc[_key_order(right, rkeys, modes)]
    else:
        res = _call(kind, left, right, kwargs)
    res = _empty_side_index(res, left, right, how, fix)
    return res if meta is None else _cast_to(res, meta)


def _tag_positions(df, i):
    """``df`` with the hidden position column (chunk ``i``, row in chunk)."""
    df = df.copy(deep=False)
    df[_POS] = (np.int64(i) << _SHIFT) + np.arange(len(df), dtype=np.int64)
    return df


def _concat_tagged(pieces, n):
    """The broadcast left side of an inner join, its rows tagged with their position, cut
    into ``n`` ranges of positions (the output chunks: the big side's count, so a small left
    side does not make one big output chunk)."""
    df = concat_pieces(pieces).copy(deep=False)
    rows = np.arange(len(df), dtype=np.int64)
    df[_POS] = ((rows * n) // max(len(df), 1) << _SHIFT) + rows
    return df


def _split_by_origin(df, n):
    codes = (df[_POS].to_numpy() >> _SHIFT).astype(np.intp)
    return split_by_codes(df, codes, n)


def _gather_origin(pieces, columns, meta):
    """Output chunk of an order-restoring shuffle: the merged rows coming from one input
    chunk, in the order of their position there (stable), without the position column."""
    df = concat_pieces([p for p in pieces if len(p)] or pieces[:1])
    order = np.argsort(df[_POS].to_numpy(), kind="stable")
    df = df.iloc[order].drop(columns=_POS)
    df.columns = columns  # the label added for the position may have changed the Index's dtype
    return df if meta is None else _cast_to(df, meta)


def _range_array(values, mode):
    """``(array, null_mask)`` ordering key values as pandas' join sorts them (see
    :func:`_key_mode`); both sides of a join map into the same space.  Masked nulls go last,
    unmasked ones (categorical code -1, NaT) sort first, as in pandas' joins."""
    s = values if isinstance(values, pd.Series) else pd.Series(values, copy=False)
    if mode == "cat":  # category order, nulls (code -1) first
        codes = s.cat.codes.to_numpy().astype(np.int64)
        return codes, np.zeros(len(codes), dtype=bool)
    if mode == "dt":  # int64 ns, NaT (the smallest int64) first
        if isinstance(s.dtype, pd.DatetimeTZDtype):
            s = s.dt.tz_convert("UTC").dt.tz_localize(None)
        unit = "datetime64[ns]" if s.dtype.kind == "M" else "timedelta64[ns]"
        i8 = s.astype(unit).to_numpy().view("i8")
        return i8, np.zeros(len(i8), dtype=bool)
    mask = s.isna().to_numpy()
    if mode == "num":
        return s.to_numpy(dtype=np.float64, na_value=np.nan), mask
    return s.to_numpy(dtype=object, na_value=None), mask


def _sample_range_keys(obj, key, mode, n):
    (values,) = key_values(obj, (key,))
    arr, mask = _range_array(values, mode)
    vals = np.sort(arr[~mask])
    if not len(vals):
        return vals
    pos = np.unique(np.linspace(0, len(vals), n, endpoint=False).astype(np.intp))
    return vals[pos]


def _range_split(obj, key, mode, pivots, n):
    """``obj`` split into ``n`` key ranges at ``pivots`` (nulls in the last one)."""
    (values,) = key_values(obj, (key,))
    arr, mask = _range_array(values, mode)
    codes = np.full(len(arr), n - 1, dtype=np.intp)
    ok = ~mask
    if ok.any():
        codes[ok] = np.searchsorted(pivots, arr[ok], side="right") if len(pivots) else 0
    return split_by_codes(obj, codes, n)


def _probe(df):
    return df.iloc[:0], len(df) > 0


def _settle(probes):
    """The result's dtypes: the common type of the non-empty chunks' (all if none is)."""
    used = [e for e, nonempty in probes if nonempty] or [e for e, _ in probes]
    return pd.concat(used).iloc[:0] if len(used) > 1 else used[0]


def _cast(df, meta):
    return _cast_to(df, meta)


# ---- metadata and keys ---------------------------------------------------------------------


def _join_meta(kind, lmeta, rmeta, how, kwargs, matched_only=False):
    """pandas' result structure, with the dtypes it has when some rows do not match (or,
    with ``matched_only``, when every row matches)."""
    lne, rne = meta_nonempty(lmeta), meta_nonempty(rmeta)
    kwargs = {k: v for k, v in kwargs.items() if k != "validate"}  # stand-ins repeat their keys
    parts = [_call(kind, lne, rne, kwargs)]
    if not matched_only:
        if how in ("left", "outer"):
            parts.append(_call(kind, lne, rne.iloc[:0], kwargs))
        if how in ("right", "outer"):
            parts.append(_call(kind, lne.iloc[:0], rne, kwargs))
    res = pd.concat(parts) if len(parts) > 1 else parts[0]
    res = res.iloc[:0]
    if res.index.names != parts[0].index.names:
        res.index = res.index.set_names(parts[0].index.names)
    return res


def _same_dtypes(a, b) -> bool:
    return a.dtypes.to_dict() == b.dtypes.to_dict() and a.index.dtype == b.index.dtype


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


def _key_modes(lmeta, rmeta, lkeys, rkeys) -> tuple:
    """How each join key is ordered in a key-ordered join: ``"cat"`` (the same categorical
    dtype on both sides: category order, nulls first), ``"dt"`` (datetimes or timedeltas as
    int64 ns, NaT first), ``"num"`` (as float64, nulls last), ``"obj"`` (Python objects, e.g.
    strings or a categorical against strings, which pandas orders by value, nulls last)."""
    lvals, rvals = key_values(lmeta, lkeys), key_values(rmeta, rkeys)
    return tuple(_key_mode(lv.dtype, rv.dtype) for lv, rv in zip(lvals, rvals))


def _key_mode(lt, rt) -> str:
    if isinstance(lt, pd.CategoricalDtype) or isinstance(rt, pd.CategoricalDtype):
        return "cat" if lt == rt else "obj"
    if {getattr(t, "kind", "O") for t in (lt, rt)} <= set("mM"):
        return "dt"
    if all(pd.api.types.is_numeric_dtype(t) or pd.api.types.is_bool_dtype(t) for t in (lt, rt)):
        return "num"
    return "obj"


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


def _relabel_at(obj, offsets, i, meta):
    """Chunk ``i`` labelled with its slice of one ``RangeIndex`` (``offsets``: a list or the
    result of a chunk), cast to ``meta`` unless None."""
    obj = obj.copy(deep=False)
    start = int(offsets[i])
    obj.index = pd.RangeIndex(start, start + len(obj))
    return obj if meta is None else _cast_to(obj, meta)


def _len(obj):
    return len(obj)


def _keys_unique(df, keys) -> bool:
    """Whether no two rows of ``df`` share their join keys (nulls equal, as pandas matches
    them): then a left join has one output row per left row."""
    vals = key_values(df, keys)
    if len(vals) == 1:
        return bool(pd.Index(vals[0]).is_unique)
    return not pd.MultiIndex.from_arrays(vals).duplicated().any()


def _offsets(lengths):
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


class DataFrameMerge(DataFrameOperand):
    """A merge/join of two frames (algorithm chosen at tiling time, see the module notes)."""

    _op_name = "merge"

    def _algorithm(self, left, right) -> str:
        how, method = self.how, self.method
        nl, nr = len(left.chunks), len(right.chunks)
        if how == "cross":
            return "bcast-right"
        if nl == 1 and nr == 1:
            return "single"
        if method == "shuffle" or (method == "auto" and self.validate is not None):
            return "shuffle"
        if method == "broadcast":
            if how in ("left", "right"):
                return "bcast-right" if how == "left" else "bcast-left"
            bl, br = _estimated_bytes(left), _estimated_bytes(right)
            if bl == br:  # unknown sizes: fewer chunks is smaller; the right's order is free
                bl, br = nl, nr
            return "bcast-left" if bl < br else "bcast-right"
        limit = self.broadcast_limit
        if how in ("inner", "left") and (nr == 1 or _estimated_bytes(right) < limit):
            return "bcast-right"
        if how in ("inner", "right") and (nl == 1 or _estimated_bytes(left) < limit):
            return "bcast-left"
        return "shuffle"

    def _range_split(self, sides, n, name):
        """Range-partition each ``(chunks, key)`` side into ``n`` key ranges with common
        boundaries (regular samples of all sides' keys)."""
        okey, mode = self.output_key(0), self.key_modes[0]
        samples = []
        for s, (chunks, key) in enumerate(sides):
            for i, c in enumerate(chunks):
                samples.append(Chunk((f"{okey}-{name}-sample", s, i), (s, i), (nan,), _sample_range_keys,
                                     (c, key, mode, n), inputs=[c], nbytes=None))
        pivots = Chunk((f"{okey}-{name}-pivots", 0), (0,), (nan,), _choose_pivots, (samples, n), inputs=samples,
                       nbytes=None)
        return [shuffle_chunks(self, chunks, n, _range_split, (key, mode, pivots, n), name=f"{name}{s}")
                for s, (chunks, key) in enumerate(sides)]

    def _tagged(self, chunks, meta):
        return [self.new_chunk(i, c.shape[0], _tag_positions, (c, i), meta=meta, suffix="-tag", blockwise=True)
                for i, c in enumerate(chunks)]

    def tile(self):
        left, right = self.inputs
        how, kind, kw = self.how, self.kind, self.kwargs
        meta = self.output.meta
        settled = self.settled
        algo = self._algorithm(left, right)
        self.algorithm = algo  # for tests / introspection
        sort_keys = how != "cross" and (self.sort or how == "outer")
        kws = {**kw, "sort": True} if sort_keys else kw
        cast_meta = meta if settled else None
        lchunks, rchunks = list(left.chunks), list(right.chunks)
        nl, nr = len(lchunks), len(rchunks)
        reorder = None  # number of output chunks of an order-restoring shuffle
        data_last = settled and not self.relabel

        lidx, ridx = self.index_sides
        fix = None
        if lidx != ridx and algo != "single":
            fix = (lidx, ridx, not left.shape[0] == 0, not right.shape[0] == 0)  # unknown: assume rows

        def merged(i, lpart, rpart, last, length=nan):
            if sort_keys and algo != "single":
                func, args = _merge_sorted, (lpart, rpart, kind, kws, cast_meta, self.left_keys, self.right_keys,
                                             self.key_modes, fix)
            else:
                func, args = _merge_chunk, (lpart, rpart, kind, kws, cast_meta, fix)
            return self.new_chunk(i, length, func, args, suffix="" if last else "-merge")

        if algo == "single":
            out = [merged(0, lchunks[0], rchunks[0], data_last)]
        elif algo in ("bcast-right", "bcast-left"):
            to_right = algo == "bcast-right"
            big, small = (lchunks, rchunks) if to_right else (rchunks, lchunks)
            small_meta = (right if to_right else left).meta
            if sort_keys:
                bkey = (self.left_keys if to_right else self.right_keys)[0]
                (big,) = self._range_split([(big, bkey)], len(big), "range")
            if not sort_keys and not to_right and how == "inner":  # left order, from the left positions
                reorder = nr
                whole = self.new_chunk(0, nan, _concat_tagged, (list(small), nr), meta=small_meta, suffix="-broadcast")
            elif len(small) == 1:
                whole = small[0]
            else:
                whole = self.new_chunk(0, nan, concat_pieces, (list(small),), meta=small_meta, suffix="-broadcast")
            last = data_last and reorder is None
            lengths = [nan] * len(big)
            if to_right and how == "left" and kind == "merge" and not sort_keys and self.relabel:
                lengths = yield from self._left_lengths(left, whole)
            out = [merged(i, c, whole, last, n) if to_right else merged(i, whole, c, last)
                   for i, (c, n) in enumerate(zip(big, lengths))]
        else:
            n = max(nl, nr)
            if sort_keys:
                lparts, rparts = self._range_split(
                    [(lchunks, self.left_keys[0]), (rchunks, self.right_keys[0])], n, "range")
            else:
                if how == "right":
                    rchunks, reorder = self._tagged(rchunks, right.meta), nr
                else:
                    lchunks, reorder = self._tagged(lchunks, left.meta), nl
                lparts = hash_shuffle_keys(self, lchunks, self.left_keys, n, name="shuffle-left")
                rparts = hash_shuffle_keys(self, rchunks, self.right_keys, n, name="shuffle-right")
            last = data_last and reorder is None
            out = [merged(j, lparts[j], rparts[j], last) for j in range(n)]

        if reorder is not None:
            parts = shuffle_chunks(self, out, reorder, _split_by_origin, (reorder,), name="reorder")
            out = [self.new_chunk(i, nan, _gather_origin, (parts[i], meta.columns, cast_meta),
                                  suffix="" if data_last else "-ordered") for i in range(reorder)]

        if not settled:
            # the dtypes depend on the data (module notes): run the join, read its chunks' dtypes
            okey = self.output_key(0)
            probes = [Chunk((f"{okey}-probe", i), (i,), (), _probe, (c,), inputs=[c], nbytes=None)
                      for i, c in enumerate(out)]
            settle = Chunk((f"{okey}-settle", 0), (0,), (), _settle, (probes,), inputs=probes, nbytes=None)
            yield [*out, settle]
            meta = cast_like(meta, settle.future.result())
            self.output.meta = meta
            if not self.relabel:
                out = [self.new_chunk(i, c.shape[0], _cast, (c, meta), blockwise=True) for i, c in enumerate(out)]
        if self.relabel:
            out = self._relabel(out, None if settled else meta)
        return [(out, frame_nsplits(meta, [c.shape[0] for c in out]))]

    def _left_lengths(self, left, right):
        """The output chunks' lengths of a left join broadcasting ``right``: the left chunks'
        when the right keys are unique (the usual lookup table), found by one small task
        during tiling (its answer kept per right chunk); else unknown.  Known lengths spare
        the relabelling its length-gathering tasks (the labels are then fused into the
        merge) and ``execute()`` its shape query."""
        lens = list(left.nsplits[0])
        if any(isinstance(n, float) and math.isnan(n) for n in lens):
            return [nan] * len(lens)
        unique = _UNIQUE_KEYS.get((right.key, self.right_keys))
        if unique is None:
            check = Chunk((f"{self.output_key(0)}-unique", 0), (0,), (), _keys_unique, (right, self.right_keys),
                          inputs=[right], nbytes=None)
            yield [right, check]
            unique = bool(check.future.result())
            _UNIQUE_KEYS[(right.key, self.right_keys)] = unique
            while len(_UNIQUE_KEYS) > 1024:
                del _UNIQUE_KEYS[next(iter(_UNIQUE_KEYS))]
        return lens if unique else [nan] * len(lens)

    def _relabel(self, chunks, meta):
        """One ``RangeIndex`` across ``chunks`` (offsets from the known lengths, else from a
        small task gathering them), cast to ``meta`` unless None."""
        lens = [c.shape[0] for c in chunks]
        if any(isinstance(n, float) and math.isnan(n) for n in lens):
            okey = self.output_key(0)
            lc = [Chunk((f"{okey}-len", i), (i,), (), _len, (c,), inputs=[c], nbytes=8) for i, c in enumerate(chunks)]
            offs = Chunk((f"{okey}-offsets", 0), (0,), (len(chunks) + 1,), _offsets, (lc,), inputs=lc,
                         nbytes=8 * (len(chunks) + 1))
            return [self.new_chunk(i, nan, _relabel_at, (c, offs, i, meta)) for i, c in enumerate(chunks)]
        offs = [int(x) for x in _offsets(lens)]  # known: each chunk's labels fuse into its task
        return [self.new_chunk(i, c.shape[0], _relabel_at, (c, offs[i : i + 1], 0, meta), blockwise=True)
                for i, c in enumerate(chunks)]


#: (right chunk key, right key spec) -> whether those keys are unique: a chunk key names
#: its data, so the answer holds for as long as the key does (bounded: oldest dropped)
_UNIQUE_KEYS: dict = {}


def _check_args(how, method, validate, sort, auto_merge, auto_merge_threshold, bloom_filter,
                bloom_filter_options, bloom_filter_chunk_threshold):
    if how not in _HOWS:
        raise ValueError(f"how must be one of {_HOWS}, got {how!r}")
    if method not in _METHODS:
        raise NotImplementedError(f"{method} merge is not supported (method must be one of {_METHODS})")
    if method == "broadcast" and how == "outer":
        raise ValueError("a broadcast join supports how='inner', 'left', 'right' or 'cross', not 'outer'")
    if method == "broadcast" and validate is not None and not sort:
        raise ValueError("validate= checks all the rows of a key together, which a broadcast join does not do: "
                         "use method='auto' or 'shuffle'")
    if auto_merge not in _AUTO_MERGE:
        raise ValueError(f"auto_merge can only be `both`, `none`, `before` or `after`, got {auto_merge}")
    if not isinstance(auto_merge_threshold, (int, np.integer)) or isinstance(auto_merge_threshold, bool):
        raise TypeError(f"auto_merge_threshold must be an int, got {type(auto_merge_threshold).__name__}")
    if bloom_filter not in (True, False, "auto"):
        raise ValueError(f'bloom_filter can only be True, False, or "auto", got {bloom_filter}')
    if bloom_filter_options:
        if not isinstance(bloom_filter_options, dict):
            raise TypeError(f"bloom_filter_options must be a dict, got {type(bloom_filter_options)}")
        for k, v in bloom_filter_options.items():
            if k not in _BLOOM_FILTER_OPTIONS:
                raise ValueError(f"Invalid bloom filter option {k}, available: {list(_BLOOM_FILTER_OPTIONS)}")
            if k == "filter" and v not in _BLOOM_FILTER_ON:
                raise ValueError(f"Invalid filter {k}, available: {list(_BLOOM_FILTER_ON)}")
    if not isinstance(bloom_filter_chunk_threshold, (int, np.integer)) or isinstance(bloom_filter_chunk_threshold, bool):
        raise TypeError("bloom_filter_chunk_threshold must be an int")


def _stand_ins_match(kind, lmeta, rmeta, how, kwargs) -> bool:
    """Whether the non-empty stand-ins of the two sides have matching keys (they may not,
    e.g. a categorical against strings: their join then tells nothing of a matched one)."""
    if how == "cross":
        return True
    kwargs = {k: v for k, v in kwargs.items() if k != "validate"}
    return len(_call(kind, meta_nonempty(lmeta), meta_nonempty(rmeta), {**kwargs, "how": "inner"})) > 0


def _build(kind, left, right, how, kwargs, lkeys, rkeys, relabel, sort, method, validate, index_sides):
    lmeta, rmeta = left.data.meta, right.data.meta
    meta = _join_meta(kind, lmeta, rmeta, how, kwargs)
    settled = _stand_ins_match(kind, lmeta, rmeta, how, kwargs) and (
        how in ("inner", "cross") or _same_dtypes(meta, _join_meta(kind, lmeta, rmeta, how, kwargs, matched_only=True)))
    op = DataFrameMerge(
        [left.data, right.data], kind=kind, kwargs=kwargs, how=how, method=method, relabel=relabel,
        left_keys=lkeys, right_keys=rkeys, validate=validate, sort=bool(sort), settled=settled,
        key_modes=_key_modes(lmeta, rmeta, lkeys, rkeys), index_sides=index_sides,
        # read when the join is built (part of its key: another limit may pick another graph)
        broadcast_limit=parse_bytes(config.get("dataframe.broadcast-limit")),
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
    copy=True,
    indicator=False,
    validate=None,
    method="auto",
    auto_merge="both",
    auto_merge_threshold=8,
    bloom_filter="auto",
    bloom_filter_options=None,
    bloom_filter_chunk_threshold=10,
):
    """``pandas.merge`` with Mars's ``md.merge`` arguments: pandas' dtypes, row order and
    index (see the module notes); ``method="auto"|"broadcast"|"shuffle"`` picks the join
    algorithm; ``auto_merge*`` and ``bloom_filter*`` are checked as Mars checks them and do
    not change the result (module notes).  ``copy`` is accepted and ignored (pandas 3)."""
    _check_args(how, method, validate, sort, auto_merge, auto_merge_threshold, bloom_filter,
                bloom_filter_options, bloom_filter_chunk_threshold)
    left, right = _as_frame(left, "left"), _as_frame(right, "right")
    kwargs = dict(
        how=how, on=on, left_on=left_on, right_on=right_on, left_index=left_index,
        right_index=right_index, suffixes=suffixes, indicator=indicator, validate=validate,
    )
    if how == "cross":
        kwargs = dict(how=how, suffixes=suffixes, indicator=indicator, validate=validate)
    # pandas validates names, dtypes and argument combinations on the stand-ins
    _join_meta("merge", left.data.meta, right.data.meta, "inner", {**kwargs, "sort": bool(sort)})
    lkeys, rkeys = _merge_keys(left.data.meta, right.data.meta, how, on, left_on, right_on, left_index, right_index)
    relabel = how == "cross" or not (left_index or right_index)
    return _build("merge", left, right, how, kwargs, lkeys, rkeys, relabel, sort, method, validate,
                  (bool(left_index), bool(right_index)))


@register_method(DataFrame, name="merge")
def _df_merge(self, right, how="inner", on=None, left_on=None, right_on=None, left_index=False,
              right_index=False, sort=False, suffixes=("_x", "_y"), copy=True, indicator=False,
              validate=None, method="auto", auto_merge="both", auto_merge_threshold=8, bloom_filter="auto",
              bloom_filter_options=None, bloom_filter_chunk_threshold=10):
    return merge(self, right, how=how, on=on, left_on=left_on, right_on=right_on, left_index=left_index,
                 right_index=right_index, sort=sort, suffixes=suffixes, copy=copy, indicator=indicator,
                 validate=validate, method=method, auto_merge=auto_merge, auto_merge_threshold=auto_merge_threshold,
                 bloom_filter=bloom_filter, bloom_filter_options=bloom_filter_options,
                 bloom_filter_chunk_threshold=bloom_filter_chunk_threshold)


_df_merge.__doc__ = merge.__doc__


@register_method(DataFrame, name="join")
def _df_join(self, other, on=None, how="left", lsuffix="", rsuffix="", sort=False, method=None,
             auto_merge="both", auto_merge_threshold=8, bloom_filter=True, bloom_filter_options=None, *,
             validate=None, suffixes=None, bloom_filter_chunk_threshold=10):
    """``DataFrame.join`` with Mars's signature (``method``, ``auto_merge*``, ``bloom_filter*``
    as in :func:`merge`; ``method=None`` is ``"auto"``) and pandas' ``validate``/``suffixes``
    (keyword-only: Mars's positional order has ``method`` where pandas has ``validate``).
    ``other`` is one DataFrame or named Series, joined on its index."""
    if isinstance(other, (list, tuple)):
        raise NotImplementedError("join with a list of frames is not supported; merge them one by one")
    method = "auto" if method is None else method
    _check_args(how, method, validate, sort, auto_merge, auto_merge_threshold, bloom_filter,
                bloom_filter_options, bloom_filter_chunk_threshold)
    if isinstance(other, Tileable) and isinstance(other, Series) and other.name is None:
        raise ValueError("Other Series must have a name")
    other = _as_frame(other, "right")
    kwargs = dict(on=on, how=how, validate=validate)
    if suffixes is not None:
        kwargs["suffixes"] = suffixes
    elif lsuffix or rsuffix:
        kwargs["suffixes"] = (lsuffix or "", rsuffix or "")
    _join_meta("join", self.data.meta, other.data.meta, "inner", {**kwargs, "sort": bool(sort)})
    if how == "cross":
        lkeys = rkeys = ()
    else:
        rkeys = _index_keys(other.data.meta)
        lkeys = _label_keys(self.data.meta, _as_list(on), "left") if on is not None else _index_keys(self.data.meta)
        if len(lkeys) != len(rkeys):
            raise ValueError("len(left_on) must equal the number of levels in the index of \"right\"")
    return _build("join", self, other, how, kwargs, lkeys, rkeys, how == "cross", sort, method, validate,
                  (on is None, True))
