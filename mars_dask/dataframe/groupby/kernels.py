"""Chunk kernels of groupby: module-level functions over pandas objects.

A *work frame* is what every kernel groups: the value columns of the input chunk, plus one
temporary column per Series key (``__mdgb_key<i>__``) and optionally the global row position
``__mdgb_pos__`` (``chunk_index << 40 | row``), used to restore pandas' first-appearance
order (``sort=False``) and the input order (``transform``).  ``spec`` describes the keys:
``("col", label)`` for a column label, ``("tmp", column, name)`` for a Series key.
A Series input lives in the column ``__mdgb_val__``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from ..shuffle import split_by_codes

POS = "__mdgb_pos__"
VAL = "__mdgb_val__"
SIZE = "__mdgb_size__"
POS_SHIFT = 40


def tmp_name(i: int) -> str:
    return f"__mdgb_key{i}__"


class Ctx:
    """What every kernel needs to rebuild the pandas groupby (picklable, small)."""

    __slots__ = ("spec", "cols", "series_name", "is_series", "selection", "dropna", "observed", "sort", "nkeys")

    def __init__(self, spec, cols, series_name, is_series, selection, dropna, observed, sort):
        self.spec = tuple(spec)
        self.cols = cols  # input columns to keep (None: all)
        self.series_name = series_name
        self.is_series = is_series
        self.selection = selection
        self.dropna = dropna
        self.observed = observed
        self.sort = sort
        self.nkeys = len(spec)

    def __getstate__(self):
        return tuple(getattr(self, s) for s in self.__slots__)

    def __setstate__(self, state):
        for s, v in zip(self.__slots__, state):
            setattr(self, s, v)


def work_frame(obj, keys, ctx: Ctx, pos_base=None):
    """The work frame of one chunk (``keys``: the chunks of the Series keys, in order)."""
    if isinstance(obj, pd.Series):
        df = obj.to_frame(VAL)
    elif ctx.cols is not None and len(ctx.cols) != len(obj.columns):
        df = obj[list(ctx.cols)]
    else:
        df = obj
    tmps = [e for e in ctx.spec if e[0] == "tmp"]
    if tmps or pos_base is not None:
        df = df.copy(deep=False)
        for e, k in zip(tmps, keys):
            df[e[1]] = k.set_axis(df.index) if len(k) == len(df) else k
        if pos_base is not None:
            df[POS] = np.arange(len(df), dtype=np.int64) + np.int64(pos_base)
    return df


def key_columns(ctx: Ctx) -> list:
    """Columns of the work frame holding the keys (for hashing)."""
    return [e[1] for e in ctx.spec]


def split_work(work, ctx: Ctx, drop_pos=True, as_frame=False):
    """``(data, by)`` for pandas' groupby from a work frame."""
    by = []
    drop = []
    for e in ctx.spec:
        if e[0] == "col":
            by.append(e[1])
        else:
            by.append(work[e[1]].rename(e[2]))
            drop.append(e[1])
    if drop_pos and POS in work.columns:
        drop.append(POS)
    data = work.drop(columns=drop) if drop else work
    if ctx.is_series and not as_frame:
        data = data[VAL].rename(ctx.series_name)
    return data, by


def pandas_groupby(work, ctx: Ctx, *, sort=None, observed=None, as_index=True, group_keys=True, select=True):
    data, by = split_work(work, ctx)
    kw = dict(
        sort=ctx.sort if sort is None else sort,
        dropna=ctx.dropna,
        observed=ctx.observed if observed is None else observed,
        group_keys=group_keys,
    )
    if not ctx.is_series:
        kw["as_index"] = as_index
    g = data.groupby(by if len(by) != 1 else by[0], **kw)
    if select and ctx.selection is not None:
        g = g[ctx.selection]
    return g


def call(g, call_spec):
    name, args, kwargs = call_spec
    return getattr(g, name)(*args, **kwargs)


def concat(parts):
    parts = [p for p in parts if p is not None]
    if len(parts) == 1:
        return parts[0]
    return pd.concat(parts)


# ---- decomposable aggregation: partial -> combine -> finish ------------------------------

# a partial column is (column, kind) with kind in sum count size min max first last prod m2 pos
_COMBINE = {
    "sum": "sum", "count": "sum", "size": "sum", "min": "min", "max": "max", "first": "first",
    "last": "last", "prod": "prod", "m2": "sum", "pos": "min", "all": "all", "any": "any",
}


def partial_agg(obj, keys, ctx: Ctx, pcols, chunk_index, need_pos):
    """One chunk's partial aggregates: a frame indexed by the group keys, one column per
    entry of ``pcols`` (names ``p0, p1, ...``), groups in first-appearance order."""
    pos_base = (chunk_index << POS_SHIFT) if need_pos else None
    work = work_frame(obj, keys, ctx, pos_base)
    data, by = split_work(work, ctx, drop_pos=False, as_frame=True)
    g = data.groupby(by if len(by) != 1 else by[0], sort=False, dropna=ctx.dropna, observed=True)
    out = {}
    counts = {}
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        for i, (col, kind) in enumerate(pcols):
            name = f"p{i}"
            if kind == "size":
                out[name] = g.size()
            elif kind == "pos":
                out[name] = g[POS].min()
            elif kind == "m2":
                if col not in counts:
                    counts[col] = g[col].count()
                out[name] = g[col].var(ddof=0) * counts[col]
            elif kind == "count":
                if col not in counts:
                    counts[col] = g[col].count()
                out[name] = counts[col]
            else:
                out[name] = getattr(g[col], kind)()
    if not out:
        return pd.DataFrame(index=g.size().index)
    return pd.DataFrame(out)


def _adjust_m2(df, levels, pcols):
    """Chan et al.: before summing M2 partials of one group, add n_i (mean_i - mean)^2."""
    df = df.copy(deep=False)
    with np.errstate(all="ignore"):
        for i, (col, kind) in enumerate(pcols):
            if kind != "m2":
                continue
            ni = pcols.index((col, "count"))
            si = pcols.index((col, "sum"))
            n = df[f"p{ni}"].astype("float64")
            s = df[f"p{si}"].astype("float64")
            g = pd.DataFrame({"n": n, "s": s}).groupby(level=levels, sort=False, dropna=False, observed=True)
            tot = g.transform("sum")
            delta = s / n - tot["s"] / tot["n"]
            extra = (n * delta * delta).where(n > 0, 0.0)
            df[f"p{i}"] = df[f"p{i}"].astype("float64").where(n > 0, 0.0) + extra
    return df


def combine_partials(parts, ctx: Ctx, pcols, *, final=False, sort=False, observed=True):
    df = concat(parts)
    levels = list(range(ctx.nkeys))
    if any(k == "m2" for _, k in pcols):
        df = _adjust_m2(df, levels, pcols)
    g = df.groupby(level=levels if len(levels) > 1 else 0, sort=sort, dropna=False, observed=observed)
    out = {}
    for i, (_col, kind) in enumerate(pcols):
        name = f"p{i}"
        out[name] = getattr(g[name], _COMBINE[kind])()
    if not out:
        return pd.DataFrame(index=g.size().index)
    return pd.DataFrame(out)


def finish_partials(p, items, pcols, meta, out_series):
    """The user's result (as_index form) from combined partials ``p``."""
    res = []
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        for col, fn, ddof in items:
            if fn == "size":
                res.append(p[f"p{pcols.index((None, 'size'))}"])
            elif fn == "mean":
                s = p[f"p{pcols.index((col, 'sum'))}"]
                n = p[f"p{pcols.index((col, 'count'))}"]
                res.append(s / n)
            elif fn in ("var", "std", "sem"):
                n = p[f"p{pcols.index((col, 'count'))}"].astype("float64")
                m2 = p[f"p{pcols.index((col, 'm2'))}"].astype("float64")
                d = n - ddof
                v = (m2 / d).where(d > 0, np.nan)
                if fn == "sem":  # pandas: std / sqrt(count)
                    res.append(np.sqrt(v) / np.sqrt(n))
                else:
                    res.append(np.sqrt(v) if fn == "std" else v)
            else:
                res.append(p[f"p{pcols.index((col, fn))}"])
    if out_series:
        out = res[0]
        return _cast_series(out.rename(meta.name if isinstance(meta, pd.Series) else None), meta)
    out = pd.concat(res, axis=1, ignore_index=True) if res else pd.DataFrame(index=p.index)
    return out


def _castable(s, dtype) -> bool:
    """Would ``s.astype(dtype)`` keep the values?  Missing values (rows a chunk left out of
    every group, as pandas does) cannot become numpy bools or ints: pandas' own result is
    upcast there, and ``astype(bool)`` would silently turn NaN into True."""
    return not (isinstance(dtype, np.dtype) and dtype.kind in "biu" and s.isna().any())


def _cast_series(s, meta):
    if isinstance(meta, pd.Series) and s.dtype != meta.dtype and _castable(s, meta.dtype):
        try:
            s = s.astype(meta.dtype)
        except (TypeError, ValueError):
            pass
    return s


def cast_like(res, meta):
    """Give ``res`` the columns, names and (where possible) dtypes of ``meta``."""
    if isinstance(meta, pd.Series):
        if isinstance(res, pd.DataFrame):
            res = res.iloc[:, 0]
        res = res.rename(meta.name)
        return _cast_series(res, meta)
    if isinstance(res, pd.Series):
        res = res.to_frame()
    if len(res.columns) == len(meta.columns):
        res.columns = meta.columns
    for c, dt in meta.dtypes.items():
        if c in res.columns and res[c].dtype != dt and _castable(res[c], dt):
            try:
                res[c] = res[c].astype(dt)
            except (TypeError, ValueError):
                pass
    if res.index.nlevels == meta.index.nlevels:
        if res.index.names != meta.index.names:
            res.index = res.index.set_names(meta.index.names)
    return res


def to_output(res, meta, as_index):
    """The as_index=False form of an as_index=True result, then the meta's structure."""
    if not as_index:
        if isinstance(res, pd.Series):
            res = res.to_frame(meta.columns[-1] if isinstance(meta, pd.DataFrame) else res.name)
        res = res.reset_index()
        if len(res.columns) == len(meta.columns):
            res.columns = meta.columns
    return cast_like(res, meta)


def finish_tree(parts, ctx: Ctx, pcols, items, meta, out_series, as_index):
    """The last tree level: combine with the user's sort/observed, finish, shape as meta."""
    p = combine_partials(parts, ctx, pcols, final=True, sort=ctx.sort, observed=ctx.observed)
    res = finish_partials(p, items, pcols, meta, out_series)
    return to_output(res, meta, as_index)


def reduce_shuffled(pieces, ctx: Ctx, pcols, items, meta, out_series, need_pos):
    """A shuffle reducer: combine its partials (groups are complete here) and finish;
    returns ``(result, first positions or None)``."""
    p = combine_partials(pieces, ctx, pcols, sort=False, observed=True)
    res = finish_partials(p, items, pcols, meta, out_series)
    pos = p[f"p{pcols.index((None, 'pos'))}"] if need_pos else None
    return res, pos


def gather_ordered(results, ctx: Ctx, meta, as_index):
    """Concatenate reducer results ``(result, first positions)`` and order the groups as
    pandas does: by key (sort=True) or by first appearance (sort=False).  The group keys
    are the leading ``nkeys`` levels of the results' index."""
    results = [r for r in results if r[0] is not None]
    if not results:
        return meta
    res = concat([r for r, _ in results])
    if ctx.sort:
        order = _key_order(res.index, ctx.nkeys)
    else:
        pos = concat([p for _, p in results])
        if pos.index.is_unique and res.index.nlevels == ctx.nkeys and len(pos) == len(res):
            # agg results: one row per group, same order as their positions
            vals = pos.to_numpy()
        else:
            idx = res.index
            keys = idx if idx.nlevels == ctx.nkeys else idx.droplevel(list(range(ctx.nkeys, idx.nlevels)))
            vals = pos.reindex(keys).to_numpy()
        order = np.argsort(vals, kind="stable")
    res = res.iloc[order]
    return to_output(res, meta, as_index)


def _key_order(index, nkeys):
    codes = []
    for i in range(nkeys):
        lv = index.get_level_values(i) if index.nlevels > 1 else index
        c, _ = pd.factorize(lv, sort=True, use_na_sentinel=True)
        c = np.where(c < 0, np.iinfo(np.int64).max, c)  # NaN keys last
        codes.append(c)
    if not codes:
        return np.arange(len(index))
    return np.lexsort(codes[::-1])


# ---- raw rows: full pandas per partition -------------------------------------------------


def raw_map(obj, keys, ctx: Ctx, chunk_index, need_pos):
    return work_frame(obj, keys, ctx, (chunk_index << POS_SHIFT) if need_pos else None)


def raw_reduce(pieces, ctx: Ctx, call_spec, need_pos, group_keys=True):
    """Full pandas groupby call on one hash partition (all rows of its groups, in input
    order); returns ``(result, first position of each group or None)``."""
    work = concat(pieces)
    if len(work) == 0:
        return None, None  # user functions need not cope with empty frames
    g = pandas_groupby(work, ctx, sort=False, observed=True, group_keys=group_keys)
    res = call(g, call_spec)
    pos = None
    if need_pos:
        _, by = split_work(work, ctx)
        pos = work.groupby(by if len(by) != 1 else by[0], sort=False, dropna=ctx.dropna, observed=True)[POS].min()
    return res, pos


def raw_single(works, ctx: Ctx, call_spec, as_index, group_keys, meta):
    """All rows in one partition: exactly pandas."""
    work = concat(works)
    if POS in work.columns:
        work = work.drop(columns=[POS])
    g = pandas_groupby(work, ctx, as_index=as_index, group_keys=group_keys)
    res = call(g, call_spec)
    return cast_like(res, meta) if isinstance(res, (pd.DataFrame, pd.Series)) and isinstance(meta, type(res)) else res


# ---- transform -----------------------------------------------------------------------------


def transform_reduce(pieces, ctx: Ctx, call_spec, meta):
    """Transform one hash partition; keeps the rows' positions for the way back."""
    work = concat(pieces)
    if len(work) == 0:
        out = meta.to_frame(VAL) if isinstance(meta, pd.Series) else meta.copy()
        out[POS] = np.array([], dtype=np.int64)
        return out
    g = pandas_groupby(work, ctx, observed=True)
    if g.ngroups == 0:  # only rows with missing keys (dropna=True): all missing
        cols = [VAL] if isinstance(meta, pd.Series) else meta.columns
        res = pd.DataFrame(np.nan, index=work.index, columns=cols)
    else:
        res = call(g, call_spec)
    out = res.to_frame(VAL) if isinstance(res, pd.Series) else res.copy(deep=False)
    out[POS] = work[POS].to_numpy()
    return out


def split_by_chunk(obj, n):
    codes = (obj[POS].to_numpy() >> POS_SHIFT).astype(np.intp)
    return split_by_codes(obj, codes, n)


def transform_restore(pieces, meta):
    df = concat(pieces)
    df = df.iloc[np.argsort(df[POS].to_numpy(), kind="stable")]
    df = df.drop(columns=[POS])
    if isinstance(meta, pd.Series):
        df = df[VAL]
    return cast_like(df, meta)


def _key_index(work, ctx: Ctx):
    _, by = split_work(work, ctx)
    arrays = [work[b] if not isinstance(b, pd.Series) else b for b in by]
    if len(arrays) == 1:
        return pd.Index(arrays[0])
    return pd.MultiIndex.from_arrays(arrays)


def broadcast(obj, keys, agg, ctx: Ctx, meta):
    """Per input chunk: the group aggregate of each row (transform of a reduction)."""
    work = work_frame(obj, keys, ctx)
    kidx = _key_index(work, ctx)
    res = agg.reindex(kidx)
    res.index = work.index
    return cast_like(res, meta)


# ---- cumcount ----------------------------------------------------------------------------


def group_sizes(obj, keys, ctx: Ctx):
    work = work_frame(obj, keys, ctx)
    data, by = split_work(work, ctx)
    return data.groupby(by if len(by) != 1 else by[0], sort=False, dropna=ctx.dropna, observed=True).size()


def add_sizes(a, b):
    if a is None:
        return b
    return a.add(b, fill_value=0).astype(np.int64)


def cumcount_chunk(obj, keys, offsets, ctx: Ctx, ascending, meta):
    work = work_frame(obj, keys, ctx)
    data, by = split_work(work, ctx)
    g = data.groupby(by if len(by) != 1 else by[0], sort=False, dropna=ctx.dropna, observed=True)
    local = g.cumcount(ascending=ascending)
    if offsets is not None and len(offsets):
        off = offsets.reindex(_key_index(work, ctx)).fillna(0).to_numpy()
        local = local + off.astype(local.dtype) if local.dtype.kind == "i" else local + off
    return _cast_series(local, meta) if local.isna().sum() == 0 else local


# ---- apply ---------------------------------------------------------------------------------


def apply_single(works, ctx: Ctx, call_spec, as_index, group_keys):
    work = concat(works)
    if POS in work.columns:
        work = work.drop(columns=[POS])
    g = pandas_groupby(work, ctx, as_index=as_index, group_keys=group_keys)
    return call(g, call_spec)


def gather_apply(results, ctx: Ctx, meta):
    results = [r for r in results if r[0] is not None]
    if not results:
        return meta
    res = concat([r for r, _ in results])
    if ctx.sort:
        order = _key_order(res.index, ctx.nkeys)
    else:
        pos = concat([p for _, p in results])
        idx = res.index
        keys = idx if idx.nlevels == ctx.nkeys else idx.droplevel(list(range(ctx.nkeys, idx.nlevels)))
        order = np.argsort(pos.reindex(keys).to_numpy(), kind="stable")
    return res.iloc[order]


# ---- hashing the group keys -----------------------------------------------------------------


def _hash_values(values) -> np.ndarray:
    return pd.util.hash_pandas_object(pd.Series(values) if not isinstance(values, pd.Series) else values,
                                      index=False).to_numpy()


def hash_keys(obj, nkeys=None, columns=None) -> np.ndarray:
    """A stable uint64 hash per row of the group keys: the first ``nkeys`` index levels, or
    the ``columns``.  Levels are hashed one by one (NaN keys allowed) and mixed."""
    if columns is not None:
        arrays = [obj[c] for c in columns]
    else:
        idx = obj.index
        arrays = [idx.get_level_values(i) if idx.nlevels > 1 else idx for i in range(nkeys)]
    h = None
    for a in arrays:
        ha = _hash_values(a.array if isinstance(a, pd.Series) else pd.Series(a, copy=False))
        h = ha if h is None else (h * np.uint64(0x9E3779B97F4A7C15)) ^ ha
    if h is None:
        return np.zeros(len(obj), dtype=np.uint64)
    return h


def split_by_keys(obj, n, nkeys=None, columns=None):
    """Hash partitioning of a partial (keys in the index) or a work frame (key columns)."""
    codes = (hash_keys(obj, nkeys, columns) % np.uint64(n)).astype(np.intp)
    return split_by_codes(obj, codes, n)
