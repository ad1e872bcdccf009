"""``GroupBy.sample``: a random sample of rows from each group.

The rows are hash-partitioned on the group keys (the shuffle of :mod:`.core`'s raw
aggregations, so each group is whole in one partition), each partition samples its groups
with pandas (``n``/``frac``/``replace``/``weights`` exactly as pandas reads them, the
weights travelling with their rows) from its own random stream, and the sampled rows are
put in pandas' order: groups in key order (``sort=True``) or first-appearance order, each
group's rows in the order drawn.  With the same ``random_state`` and chunking the sample is
the same; it is not the rows pandas would draw (pandas draws all groups from one stream).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...tiling.tileable import Tileable
from ..core import Series, nan
from ..shuffle import shuffle_chunks
from . import kernels as K
from . import keys as GK
from .core import GroupBy, _empty_chunk_meta, _GroupByOp

WEIGHT = "__mdgb_weight__"
ORDER = "__mdgb_order__"


def sample_map(obj, keys, weights, ctx, chunk_index):
    work = K.work_frame(obj, keys, ctx, chunk_index << K.POS_SHIFT)
    if weights is not None:
        work = work.copy(deep=False)
        work[WEIGHT] = weights.to_numpy()
    return work


def _draw(work, weights, kcols, ctx, rs, params):
    if len(work) == 0:
        return None
    g = work.groupby([pd.Index(work[c]) for c in kcols], sort=True, dropna=ctx.dropna, observed=True)
    if g.ngroups == 0:  # pandas cannot sample zero groups
        return None
    return g.sample(weights=weights, random_state=rs, **params)


def sample_reduce(pieces, ctx, params, seed, has_weights, errors, meta):
    """Sample one partition's groups (whole here) with pandas; returns the sampled rows
    shaped as ``meta``, the global position of each row's group's first row (pandas'
    ``sort=False`` group order) and the rows' keys (``sort=True`` order)."""
    work = K.concat(pieces)
    if len(work) == 0:
        return None
    weights = work.pop(WEIGHT).to_numpy() if has_weights else None
    kcols = K.key_columns(ctx)
    g = work.groupby([pd.Index(work[c]) for c in kcols], sort=True, dropna=ctx.dropna, observed=True)
    if g.ngroups == 0:  # only rows with missing keys (dropna=True)
        return None
    work = work.assign(**{ORDER: g[K.POS].transform("min")})
    rs = np.random.RandomState(seed)
    if errors == "ignore" and params["n"] is not None and not params["replace"]:
        # Mars: a group smaller than n is taken whole (in random order) instead of raising
        small = (g[K.POS].transform("size") < params["n"]).to_numpy()
        parts = [_draw(work[~small], weights[~small] if has_weights else None, kcols, ctx, rs, params),
                 _draw(work[small], weights[small] if has_weights else None, kcols, ctx, rs,
                       dict(params, n=None, frac=1.0))]
        taken = K.concat([p for p in parts if p is not None] or [work.iloc[:0]])
    else:
        taken = _draw(work, weights, kcols, ctx, rs, params)
    if isinstance(meta, pd.Series):
        res = taken[K.VAL if ctx.is_series else ctx.selection].rename(meta.name)
    else:
        res = taken[list(meta.columns)]
    keys = pd.DataFrame({i: taken[c].to_numpy() for i, c in enumerate(kcols)})
    return res, taken[ORDER].to_numpy(), keys


def sample_gather(parts, ctx, meta):
    parts = [p for p in parts if p is not None]
    if not parts:
        return meta
    res = K.concat([p[0] for p in parts])
    if ctx.sort:
        keys = pd.concat([p[2] for p in parts], ignore_index=True)
        idx = pd.MultiIndex.from_frame(keys) if keys.shape[1] > 1 else pd.Index(keys[0])
        order = K._key_order(idx, ctx.nkeys)
    else:
        order = np.argsort(np.concatenate([p[1] for p in parts]), kind="stable")
    return K.cast_like(res.iloc[order], meta)


class GroupBySample(_GroupByOp):
    _op_name = "groupby-sample"

    def __init__(self, gb, params, seed, weights, errors):
        super().__init__(gb, extra_inputs=[weights] if weights is not None else [], sample_params=params, seed=seed,
                         errors=errors)
        self.errors = errors
        self.sample_params = params
        self.seed = seed
        self.has_weights = weights is not None

    def tile(self):
        ctx = self._ctx(None)
        in_chunks = self._in_chunks()
        n = len(in_chunks)
        wchunks = self.inputs[-1].chunks if self.has_weights else [None] * n
        works = [
            self.new_chunk(i, nan, sample_map, (oc, kc, wchunks[i], ctx, i), meta=_empty_chunk_meta(), suffix="-work",
                           blockwise=True)
            for i, (oc, kc) in enumerate(in_chunks)
        ]
        per_out = shuffle_chunks(self, works, n, K.split_by_keys, (n, None, K.key_columns(ctx)))
        seeds = np.random.RandomState(self.seed).randint(0, 2**31 - 1, size=n)
        reduced = [
            self.new_chunk(j, nan, sample_reduce,
                           (pieces, ctx, self.sample_params, int(seeds[j]), self.has_weights, self.errors,
                            self.output.meta),
                           meta=_empty_chunk_meta(), suffix="-reduce")
            for j, pieces in enumerate(per_out)
        ]
        return self._single_output(sample_gather, (reduced, ctx, self.output.meta))


def sample(self, n=None, frac=None, replace=False, weights=None, random_state=None, errors="ignore"):
    """Mars's ``GroupBy.sample``: pandas' arguments, plus Mars's ``errors``: "ignore" (Mars's
    default) takes a group smaller than ``n`` whole, "raise" raises as pandas does."""
    if errors not in ("ignore", "raise"):
        raise ValueError("errors must be 'ignore' or 'raise'")
    params = {"n": n, "frac": frac, "replace": replace}
    # pandas' own errors for bad arguments; n itself not beyond the stand-in's tiny groups
    probe = dict(params, n=min(n, 0) if isinstance(n, (int, np.integer)) else n)
    meta = self._infer(("sample", (), probe))
    if weights is not None:
        if isinstance(weights, Tileable):
            if not isinstance(weights, Series) or weights.data.index_key != self.obj.data.index_key:
                raise ValueError("weights must be aligned with the grouped object")
        else:
            weights = GK.array_key(self.obj, pd.Series(weights).to_numpy())
    if isinstance(random_state, np.random.RandomState):
        seed = int(random_state.randint(0, 2**31 - 1))
    elif isinstance(random_state, np.random.Generator):
        seed = int(random_state.integers(0, 2**31 - 1))
    elif random_state is None:
        seed = int(np.random.randint(0, 2**31 - 1))
    else:
        seed = int(random_state)
    op = GroupBySample(self, params, seed, weights, errors)
    return op.new_output(meta, nan, range_index=False)


GroupBy.sample = sample
