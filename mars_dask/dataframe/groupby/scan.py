"""Row-wise group scans: ``cumsum cumprod cummax cummin``, ``ffill bfill`` (``backfill``,
``fillna(method=)``), ``fillna(value=)`` and ``head``.

They keep every row where it is (pandas' row order and index), so nothing is shuffled or
gathered: like window.py's prefix states, each chunk is *summarized* in parallel into a small
per-group state, the states flow along the chunks in a chain of tiny *combine* tasks (forward,
or backward for ``bfill`` and ``head(-n)``), and every chunk then computes its own rows from the
state of the chunks before (after) it:

- ``cum<op>``: the state is each group's accumulator so far (the last row of pandas'
  ``cum<op>``, combined along the chain by ``cum<op>`` again); the chunk is computed as
  pandas' ``cum<op>`` of *state rows + chunk rows*, then the state rows are dropped.
  Prepending the state instead of re-deriving the arithmetic keeps pandas' own NaN
  handling and dtypes (nullable, datetime, timedelta, bool).
- ``ffill``/``bfill``: the state is each group's last (first) valid value per column, or with
  ``limit`` its last (first) ``limit`` raw rows, prepended (appended) the same way.
- ``head(n)``: the group counts of :class:`~.core.GroupByCumcount`, then a filter.

A state and a chunk are handled as *values* (the output columns) and *keys* (one Series per
group key) grouped with ``sort=False``; state rows of groups absent from the chunk are left
out (only a cost: they could not change the chunk's rows).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from .._meta import meta_nonempty

from ..core import DataFrame, frame_nsplits, nan
from . import kernels as K
from .core import GroupBy, GroupByCumcount, _empty_chunk_meta, _GroupByOp

# ---- kernels -------------------------------------------------------------------------------


def _values_keys(obj, keys, ctx, vcols):
    """``(values, [key Series])`` of one chunk: the output columns and the group keys."""
    work = K.work_frame(obj, keys, ctx)
    return work[list(vcols)], [work[c] for c in K.key_columns(ctx)]


def _prepare(values, how):
    """pandas' cumsum/cumprod of booleans count in int64: do it before state rows (ints)
    are concatenated with them (bool + int would make an object column)."""
    if how in ("cumsum", "cumprod"):
        bools = [c for c, dt in values.dtypes.items() if dt == np.bool_]
        if bools:
            values = values.astype({c: np.int64 for c in bools})
    return values


def _group(values, keys, dropna):
    # Index keys, not Series: pandas would align Series keys on a (possibly duplicated) index
    return values.groupby([pd.Index(k) for k in keys], sort=False, dropna=dropna, observed=True)


def _as_state(res):
    """A groupby result indexed by the keys -> ``(values, keys frame)`` (RangeIndex)."""
    idx = res.index
    kf = pd.DataFrame({i: idx.get_level_values(i) for i in range(idx.nlevels)})
    return res.reset_index(drop=True), kf


def _key_list(kf):
    return [kf[c] for c in kf.columns]


def _concat_states(a, b):
    # an empty state (a chunk of missing keys only) may have lost its dtypes: leave it out
    if a is None or len(a[0]) == 0:
        return b
    if b is None or len(b[0]) == 0:
        return a
    return (pd.concat([a[0], b[0]], ignore_index=True), pd.concat([a[1], b[1]], ignore_index=True))


#: the aggregation whose result is the last row of each ``cum<op>``
_AGG_OF = {"cumsum": "sum", "cumprod": "prod", "cummax": "max", "cummin": "min"}


def _plain_numeric(values, how, kwargs) -> bool:
    """Whether numpy int/float columns with pandas' default NaN handling: then pandas'
    groupby ``sum``/``prod``/``max``/``min`` (``min_count=1``) are the last valid row of
    ``cum<op>`` bit for bit (the same sequential loop, Kahan's for sums), in one pass
    instead of a scan and a ``last``."""
    if how not in _AGG_OF or any(k != "skipna" for k in kwargs) or not kwargs.get("skipna", True):
        return False
    return all(isinstance(dt, np.dtype) and dt.kind in "fiu" for dt in values.dtypes)


def _acc_state(values, ks, dropna, how, kwargs):
    """Each group's accumulator after these rows: the last row of pandas' ``cum<op>`` (the
    last valid one: with ``skipna`` missing values are left out of the accumulator)."""
    g = _group(values, ks, dropna)
    if _plain_numeric(values, how, kwargs):
        agg = _AGG_OF[how]
        return _as_state(getattr(g, agg)(**({"min_count": 1} if agg in ("sum", "prod") else {})))
    res = getattr(g, how)(**kwargs)
    return _as_state(_group(res, ks, dropna).last(skipna=kwargs.get("skipna", True)))


def cum_summary(obj, keys, ctx, vcols, how, kwargs):
    values, ks = _values_keys(obj, keys, ctx, vcols)
    return _acc_state(_prepare(values, how), ks, ctx.dropna, how, kwargs)


def cum_combine(carry, edge, ctx, vcols, how, kwargs):
    values, kf = _concat_states(carry, edge)
    return _acc_state(values, _key_list(kf), False, how, kwargs)


def fill_summary(obj, keys, ctx, vcols, how, limit):
    values, ks = _values_keys(obj, keys, ctx, vcols)
    return _fill_state(values, pd.DataFrame(dict(enumerate(ks))), ctx.dropna, how, limit)


def fill_combine(carry, edge, ctx, vcols, how, limit):
    # ffill: the carry comes from earlier rows than the edge; bfill: from later rows
    state = _concat_states(carry, edge) if how == "ffill" else _concat_states(edge, carry)
    return _fill_state(state[0], state[1], False, how, limit)


def _fill_state(values, kf, dropna, how, limit):
    values = values.reset_index(drop=True)
    kf = kf.reset_index(drop=True)
    kf.columns = range(len(kf.columns))
    g = _group(values, _key_list(kf), dropna)
    if limit is None:  # the last (first) valid value of each column fills any number of rows
        return _as_state(g.last() if how == "ffill" else g.first())
    rows = g.tail(limit) if how == "ffill" else g.head(limit)
    return rows.reset_index(drop=True), kf.loc[rows.index].reset_index(drop=True)


def _relevant(state, ks):
    """The state rows whose first key occurs in the chunk (a superset of the rows that
    matter: rows of other groups would only cost time)."""
    sv, kf = state
    mask = kf[0].isin(ks[0]).to_numpy()
    if mask.all():
        return sv, kf
    return sv[mask], kf[mask]


def _with_state(values, ks, state, after, method, kwargs, dropna):
    """pandas' ``groupby(keys).<method>(**kwargs)`` of the chunk's rows with the state rows
    before them (``after``: behind them), the state rows dropped again."""
    if state is None:
        return getattr(_group(values, ks, dropna), method)(**kwargs)
    sv, kf = _relevant(state, ks)
    n = len(sv)
    if n == 0:
        return getattr(_group(values, ks, dropna), method)(**kwargs)
    own = values.reset_index(drop=True)
    own_keys = [k.reset_index(drop=True) for k in ks]
    vparts = [own, sv] if after else [sv, own]
    both = pd.concat(vparts, ignore_index=True)
    kboth = [pd.concat([k, kf[i]] if after else [kf[i], k], ignore_index=True) for i, k in enumerate(own_keys)]
    res = getattr(_group(both, kboth, dropna), method)(**kwargs)
    res = res.iloc[: len(values)] if after else res.iloc[n:]
    res.index = values.index
    return res


def _shape_like(res, meta):
    if isinstance(meta, pd.Series):
        res = res.iloc[:, 0]
    return K.cast_like(res, meta)


def cum_final(obj, keys, state, ctx, vcols, how, kwargs, meta):
    values, ks = _values_keys(obj, keys, ctx, vcols)
    res = _with_state(_prepare(values, how), ks, state, False, how, kwargs, ctx.dropna)
    return _shape_like(res, meta)


def fill_final(obj, keys, state, ctx, vcols, how, limit, meta):
    values, ks = _values_keys(obj, keys, ctx, vcols)
    res = _with_state(values, ks, state, how == "bfill", how, {"limit": limit}, ctx.dropna)
    return _shape_like(res, meta)


def _missing_counts(values):
    return values.isna().astype(np.int64)


def na_summary(obj, keys, ctx, vcols):
    """Each group's number of missing values per column (``fillna(value, limit=)``)."""
    values, ks = _values_keys(obj, keys, ctx, vcols)
    return _as_state(_group(_missing_counts(values), ks, ctx.dropna).sum())


def na_combine(carry, edge, ctx, vcols):
    values, kf = _concat_states(carry, edge)
    return _as_state(_group(values, _key_list(kf), False).sum())


def fillna_value(obj, keys, state, ctx, vcols, value, limit, meta):
    """``fillna(value)`` of the value columns (with ``limit``: only each group's first
    ``limit`` missing values per column, counted from the groups' earlier rows in ``state``);
    as in every pandas groupby transform, rows whose key is missing (``dropna=True``) are
    not in a group and come out missing."""
    values, ks = _values_keys(obj, keys, ctx, vcols)
    if limit is None:
        res = values.fillna(value)
    else:
        missing = _missing_counts(values)
        rank = _with_state(missing, ks, state, False, "cumsum", {}, ctx.dropna)
        allowed = (missing.to_numpy() == 1) & (rank.to_numpy() <= limit)
        res = values.copy()
        for j, c in enumerate(values.columns):
            fill = value.get(c, None) if isinstance(value, (dict, pd.Series)) else value
            if fill is not None and allowed[:, j].any():
                res[c] = values[c].mask(allowed[:, j], fill)
    if ctx.dropna:
        missing = np.zeros(len(values), dtype=bool)
        for k in ks:
            missing |= k.isna().to_numpy()
        if missing.any():
            res = res.where(pd.DataFrame(~missing[:, None].repeat(len(res.columns), 1), index=res.index,
                                         columns=res.columns))
    return _shape_like(res, meta) if meta is not None else res


def head_chunk(obj, keys, offsets, ctx, ascending, n, cc_meta, cols):
    cc = K.cumcount_chunk(obj, keys, offsets, ctx, ascending, cc_meta)
    mask = (cc < n).to_numpy() if n >= 0 else (cc >= -n).to_numpy()
    out = obj if cols is None else obj[cols]
    return out[mask]


# ---- operands ----------------------------------------------------------------------------


class GroupByScan(_GroupByOp):
    """Output chunk ``i`` = ``final(chunk_i, keys_i, state_i, *fargs)`` where ``state_i``
    folds ``summarize(chunk_j, keys_j, *sargs)`` of the chunks before ``i`` (after ``i`` when
    ``reverse``) with ``combine(carry, edge, *sargs)``; None for the first one."""

    _op_name = "groupby-scan"

    def __init__(self, gb, summarize, combine, sargs, final, fargs, reverse=False):
        super().__init__(gb, summarize=summarize, combine=combine, sargs=tuple(sargs), final=final,
                         fargs=tuple(fargs), reverse=reverse)

    def tile(self):
        in_chunks = self._in_chunks()
        n = len(in_chunks)
        order = list(range(n - 1, -1, -1)) if self.reverse else list(range(n))
        states = [None] * n
        carry = None
        for step, i in enumerate(order[:-1]):
            oc, kc = in_chunks[i]
            edge = self.new_chunk(i, nan, self.summarize, (oc, kc, *self.sargs), meta=_empty_chunk_meta(),
                                  suffix="-edge")
            edge.small = True  # runs where chunk i is: only the state moves
            if carry is None:
                carry = edge
            else:
                carry = self.new_chunk(step, nan, self.combine, (carry, edge, *self.sargs), meta=_empty_chunk_meta(),
                                       suffix="-carry")
            states[order[step + 1]] = carry
        chunks = [
            self.new_chunk(i, oc.shape[0], self.final, (oc, kc, states[i], *self.fargs))
            for i, (oc, kc) in enumerate(in_chunks)
        ]
        return [(chunks, frame_nsplits(self.output.meta, [c.shape[0] for c in chunks]))]


class GroupByHead(GroupByCumcount):
    """head(n): the rows whose position in their group (from the end for ``n < 0``) is
    within ``n``; original order and index."""

    _op_name = "groupby-head"

    def __init__(self, gb, n, cols, meta):
        super().__init__(gb, n >= 0, meta, n=n, cols=cols)
        self.n = n
        self.cols = cols

    def _final_chunk(self, i, oc, kc, offset, ctx):
        cc_meta = pd.Series([], dtype=np.int64)
        return self.new_chunk(i, nan, head_chunk, (oc, kc, offset, ctx, self.ascending, self.n, cc_meta, self.cols))


# ---- GroupBy methods -----------------------------------------------------------------------


def _transform_like(gb: GroupBy, op, meta):
    obj = gb.obj
    return op.new_output(meta, obj.shape[0], index_key=obj.data.index_key, range_index=obj.data.range_index)


def _scan_setup(gb: GroupBy, meta):
    """Work columns of the output (``vcols``) and the kernel context."""
    if isinstance(meta, pd.DataFrame):
        vcols = list(meta.columns)
    else:
        vcols = [K.VAL] if gb.is_series_obj else [gb.selection]
    return vcols, gb._ctx(gb._needed_cols(vcols))


def _check_axis(axis):
    if axis not in (0, "index", None):
        raise ValueError(f"groupby scans run along the rows (axis=0), got axis={axis!r}")


def _cum(gb: GroupBy, how, axis=0, **kwargs):
    _check_axis(axis)
    meta = gb._infer((how, (), kwargs))
    vcols, ctx = _scan_setup(gb, meta)
    sargs = (ctx, vcols, how, kwargs)
    op = GroupByScan(gb, cum_summary, cum_combine, sargs, cum_final, (ctx, vcols, how, kwargs, meta))
    return _transform_like(gb, op, meta)


def cumsum(self, axis=0, **kwargs):
    """Each group's running sum, rows in place (Mars's ``axis``; pandas' ``numeric_only``,
    ``skipna``)."""
    return _cum(self, "cumsum", axis, **kwargs)


def cumprod(self, axis=0, **kwargs):
    return _cum(self, "cumprod", axis, **kwargs)


def cummax(self, axis=0, **kwargs):
    return _cum(self, "cummax", axis, **kwargs)


def cummin(self, axis=0, **kwargs):
    return _cum(self, "cummin", axis, **kwargs)


def _check_limit(limit):
    if limit is not None and (not isinstance(limit, (int, np.integer)) or isinstance(limit, bool) or limit <= 0):
        raise ValueError("Limit must be greater than 0")


def _fill(gb: GroupBy, how, limit):
    _check_limit(limit)
    meta = gb._infer((how, (), {"limit": limit}))
    vcols, ctx = _scan_setup(gb, meta)
    sargs = (ctx, vcols, how, limit)
    op = GroupByScan(gb, fill_summary, fill_combine, sargs, fill_final, (ctx, vcols, how, limit, meta),
                     reverse=how == "bfill")
    return _transform_like(gb, op, meta)


def ffill(self, limit=None):
    """Forward fill within each group; the last valid values of earlier chunks flow in."""
    return _fill(self, "ffill", limit)


def bfill(self, limit=None):
    """Backward fill within each group; the first valid values of later chunks flow in."""
    return _fill(self, "bfill", limit)


def fillna(self, value=None, method=None, axis=None, limit=None, downcast=None):
    """Mars's ``GroupBy.fillna`` (pandas 3 dropped it): ``method`` ffill/pad or
    bfill/backfill fills within groups; ``value`` fills the value columns."""
    _check_axis(axis)
    if downcast is not None:  # what pandas 3 itself does with the argument
        raise TypeError("fillna() got an unexpected keyword argument 'downcast' (removed from pandas)")
    if value is None and method is None:
        raise ValueError("Must specify a fill 'value' or 'method'.")
    if value is not None and method is not None:
        raise ValueError("Cannot specify both 'value' and 'method'.")
    if method is not None:
        if method in ("ffill", "pad"):
            return _fill(self, "ffill", limit)
        if method in ("bfill", "backfill"):
            return _fill(self, "bfill", limit)
        raise ValueError(f"Invalid fill method. Expecting pad (ffill) or backfill (bfill). Got {method}")
    _check_limit(limit)
    if isinstance(value, (list, tuple)):
        raise TypeError(f'"value" parameter must be a scalar or dict, but you passed a "{type(value).__name__}"')
    ref = self._infer(("ffill", (), {}))
    vcols, ctx = _scan_setup(self, ref)
    obj_ne = meta_nonempty(self.obj.data.meta)
    keys_ne = [meta_nonempty(k.data.meta).set_axis(obj_ne.index) for k in self.keys]
    meta = fillna_value(obj_ne, keys_ne, None, ctx, vcols, value, limit, None).iloc[:0]
    if isinstance(ref, pd.Series):
        meta = meta.iloc[:, 0].rename(ref.name)
    op = GroupByScan(self, na_summary, na_combine, (ctx, vcols), fillna_value, (ctx, vcols, value, limit, meta))
    return _transform_like(self, op, meta)


def head(self, n=5):
    """The first ``n`` rows of each group (all but the last ``-n`` for ``n < 0``) in their
    original order and index; ``as_index`` is ignored, as in pandas."""
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError("n must be an integer")
    meta = self._infer(("head", (), {"n": n}))
    if self.is_series_obj:
        cols = None
    elif isinstance(meta, pd.Series):
        cols = self.selection
    else:
        cols = list(meta.columns)
        if isinstance(self.obj, DataFrame) and cols == list(self.obj.columns):
            cols = None
    op = GroupByHead(self, int(n), cols, meta)
    return op.new_output(meta, nan, range_index=False)


for _f in (cumsum, cumprod, cummax, cummin, ffill, bfill, fillna, head):
    setattr(GroupBy, _f.__name__, _f)
GroupBy.backfill = bfill
