"""``md.CustomReduction``: Mars's user-defined reductions, run as a tree.

A user subclasses it and defines ``pre(chunk) -> values``, ``agg(*values) -> values`` and
``post(*values) -> result`` (Mars 0.10's protocol); ``df.agg(r)``, ``s.agg(r)`` and
``r(s)`` then reduce each column as Mars does: every chunk runs ``pre`` and ``agg``
(``agg`` alone when ``pre_with_agg``); each node of the tree concatenates its children's
values, position by position (a scalar counts as a one-element Series), and runs ``agg``
again; the root runs ``post``. So ``agg`` must accept its own output concatenated, which is
what Mars asks of it too. On a local pandas object, ``r(s)`` is ``post(agg(*pre(s)))``.

Why a tree and not pandas' ``agg(callable)``: the callable path gathers whole columns onto
one worker; the protocol exists precisely so that it need not.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .core import DataFrame, Series
from .reduction import Reducer, _np_dtype, _probe, tree_reduce

__all__ = ["CustomReduction"]


class CustomReduction:
    """Base class of a user-defined reduction (Mars's ``md.CustomReduction``): override
    ``pre``, ``agg`` and ``post``; set ``pre_with_agg = True`` when ``pre`` already
    aggregates a chunk."""

    #: True when pre() already aggregates (agg then runs only when partials are combined)
    pre_with_agg = False

    def __init__(self, name=None, is_gpu=None):
        if is_gpu:
            raise NotImplementedError("CustomReduction(is_gpu=True): mars_dask has no GPU support (Mars's to_gpu)")
        self.name = name or "<custom>"
        self.output_limit = 1

    @property
    def __name__(self):
        return self.name

    def pre(self, value):
        return (value,)

    def agg(self, *values):
        raise NotImplementedError

    def post(self, *values):
        if len(values) != 1:
            raise ValueError(f"{type(self).__name__}.post: define it to combine {len(values)} values into one")
        return values[0]

    def __call__(self, value):
        if isinstance(value, (DataFrame, Series)):
            return custom_reduce(value, self)
        return self.post(*self._chunk(value))

    # -- the steps, on pandas objects ------------------------------------------------------
    def _chunk(self, value) -> tuple:
        r = _tuple(self.pre(value))
        self.output_limit = len(r)
        return r if self.pre_with_agg else _tuple(self.agg(*r))


def _tuple(r) -> tuple:
    return r if isinstance(r, tuple) else (r,)


def _wrap(v):
    """A partial as a Series, so that the partials of several chunks concatenate."""
    if isinstance(v, (pd.Series, pd.DataFrame, pd.Index)):
        return v
    return pd.Series([v])


class CustomReducer(Reducer):
    """The tree steps of ``custom`` on each column of a Series or DataFrame chunk
    (``series``: the input is a Series and the result its one value)."""

    def _columns(self, x):
        return [x] if self.series else [x.iloc[:, j] for j in range(x.shape[1])]

    def map(self, x):
        return [tuple(_wrap(v) for v in self.custom._chunk(col)) for col in self._columns(x)]

    def _agg(self, parts):
        out = []
        for j in range(len(parts[0])):
            n = len(parts[0][j])
            joined = [pd.concat([p[j][i] for p in parts]) if len(parts) > 1 else parts[0][j][i] for i in range(n)]
            out.append(_tuple(self.custom.agg(*joined)))
        return out

    def combine(self, parts):
        return [tuple(_wrap(v) for v in r) for r in self._agg(parts)]

    def finish(self, parts):
        values = [self.custom.post(*r) for r in self._agg(parts)]
        if self.series:
            return values[0]
        return pd.Series(values, index=self.labels, dtype=self.dtype)


def custom_reduce(obj, custom: CustomReduction):
    """``custom`` applied to each column of ``obj`` by a tree reduction: a scalar for a
    Series, a Series indexed by the columns for a DataFrame (Mars's result types)."""
    series = isinstance(obj, Series)
    res = _probe(obj, lambda m: m.agg(custom) if not series else custom(m))
    red = CustomReducer(custom=custom, series=series, labels=None if series else obj.data.meta.columns,
                        dtype=None if series else res.dtype)
    if series:
        shape = (np.nan,) * np.ndim(res) if isinstance(res, np.ndarray) else ()  # (its length: known once run)
        return tree_reduce(obj, red, scalar_dtype=_np_dtype(res), scalar_shape=shape, name="custom-reduction")
    return tree_reduce(obj, red, res.iloc[:0], len(res), name="custom-reduction")
