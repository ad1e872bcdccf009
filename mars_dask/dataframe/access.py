"""Getting values out of DataFrames and Series: scalar access (``at``/``iat``), iteration
(``iterrows``, ``itertuples``, ``items``), ``keys``, ``Series.to_dict``/``to_frame`` and
``plot``, with Mars 0.10's signatures.

- ``at``/``iat`` check that every key is a scalar (Mars's rule, with pandas' messages) and
  then are ``loc``/``iloc`` of one cell, so they give the same lazy scalar those give.
  Mars has no ``at[...] =`` (its docstring shows it commented out), nor do we.
- Iteration executes the object and then fetches it a batch at a time (``batch_size``
  rows, whole chunks), so iterating over a large frame never holds all of it on the client,
  as Mars's ``iterbatch`` does; each batch is iterated with pandas' own method.
- ``plot`` is Mars's: execute the object (and tileables among the keywords) and hand the
  pandas result to pandas' plotting accessor.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
import pandas as pd

from .core import DataFrame, Series, register_method
from .map import map_rows

__all__: list[str] = []


# ---- at / iat -----------------------------------------------------------------------------


class _AtIndexer:
    """``obj.at[row, col]`` (DataFrame) / ``obj.at[label]`` (Series)."""

    __slots__ = ("_obj",)

    def __init__(self, obj):
        self._obj = obj

    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        if not all(np.isscalar(k) or k is None for k in key):
            raise ValueError("Invalid call for scalar access (getting)!")
        _check_ndim(self._obj, key)
        return self._obj.loc[key]


class _IAtIndexer:
    """``obj.iat[i, j]`` (DataFrame) / ``obj.iat[i]`` (Series)."""

    __slots__ = ("_obj",)

    def __init__(self, obj):
        self._obj = obj

    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        if not all(isinstance(k, Integral) and not isinstance(k, bool) for k in key):
            raise ValueError("iAt based indexing can only have integer indexers")
        _check_ndim(self._obj, key)
        return self._obj.iloc[key]


def _check_ndim(obj, key):
    need = 2 if isinstance(obj, DataFrame) else 1
    if len(key) != need:
        # pandas: a DataFrame needs a row and a column, a Series one position/label
        raise (TypeError if len(key) < need else IndexError)(
            f"{type(obj).__name__} scalar access needs {need} key(s), got {len(key)}"
        )


@register_method(DataFrame, Series, name="at")
@property
def at(self):
    """Access one value by row/column labels (``df.at[4, "B"]``, ``s.at["x"]``): a lazy
    scalar, like ``loc``; KeyError for a missing label when executed."""
    return _AtIndexer(self)


@register_method(DataFrame, Series, name="iat")
@property
def iat(self):
    """Access one value by integer positions (``df.iat[1, 2]``, ``s.iat[0]``)."""
    return _IAtIndexer(self)


# ---- batched fetching -------------------------------------------------------------------


def iter_batches(obj, batch_size, session=None):
    """The executed ``obj`` as consecutive pandas pieces of about ``batch_size`` rows (whole
    chunks, gathered one batch at a time)."""
    from ..session import get_session

    if not isinstance(batch_size, Integral) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    obj.execute(session=session)
    session = session or get_session()
    group, rows = [], 0
    chunks = obj.data.chunks
    for i, c in enumerate(chunks):
        group.append(c)
        n = c.shape[0]
        rows += 1 if n != n else int(n)  # an unknown length counts as one row
        if rows >= batch_size or i == len(chunks) - 1:
            # Session.gather reads only ``.chunks`` of what it is given
            parts = session.gather_chunks(group)
            yield type(obj)._assemble(obj.data.meta, parts)
            group, rows = [], 0


@register_method(DataFrame)
def iterrows(self, batch_size=1000, session=None):
    """pandas' ``iterrows``: ``(label, row Series)`` pairs, fetched ``batch_size`` rows at a
    time after executing."""
    for part in iter_batches(self, batch_size, session):
        yield from part.iterrows()


@register_method(DataFrame)
def itertuples(self, index=True, name="Pandas", batch_size=1000, session=None):
    """pandas' ``itertuples`` (namedtuples of the row values), fetched in batches."""
    for part in iter_batches(self, batch_size, session):
        yield from part.itertuples(index=index, name=name)


@register_method(DataFrame, name="items")
def frame_items(self):
    """``(column name, Series)`` pairs; the Series are lazy, nothing is executed."""
    for col in self.dtypes.index:
        yield col, self[col]


@register_method(Series, name="items")
def series_items(self, batch_size=10000, session=None):
    """``(label, value)`` pairs, fetched ``batch_size`` rows at a time after executing."""
    for part in iter_batches(self, batch_size, session):
        yield from part.items()


register_method(DataFrame, name="iteritems")(frame_items)
register_method(Series, name="iteritems")(series_items)


@register_method(DataFrame, name="keys")
def frame_keys(self):
    """The 'info axis': the columns (a pandas Index, known without executing)."""
    return self.columns


@register_method(Series, name="keys")
def series_keys(self):
    """The 'info axis': the index (lazy)."""
    return self.index


@register_method(Series)
def to_dict(self, into=dict, batch_size=10000, session=None):
    """pandas' ``Series.to_dict`` of the executed Series (``{label: value}``)."""
    return self.execute(session=session).fetch(session=session).to_dict(into=into)


def _to_frame(s, name):
    return s.to_frame() if name is None else s.to_frame(name)


@register_method(Series)
def to_frame(self, name=None):
    """A one-column DataFrame.  ``name=None`` (Mars's default) keeps the Series' name (``0``
    if it has none), as pandas does when no name is passed."""
    return map_rows(_to_frame, self, name, name="to-frame")


# ---- plot -------------------------------------------------------------------------------


class PlotAccessor:
    """Mars's ``df.plot``: executes the object (and any tileables among the keywords) and
    calls pandas' plotting on the result.  ``df.plot(kind=...)``, ``df.plot.line()``..."""

    __slots__ = ("_obj",)

    def __init__(self, obj):
        self._obj = obj

    def __call__(self, kind="line", session=None, **kwargs):
        return self._run(session, kwargs, lambda data, kw: data.plot(kind=kind, **kw))

    def _run(self, session, kwargs, draw):
        from ..session import execute
        from ..tiling.tileable import Tileable

        lazy = {k: v for k, v in kwargs.items() if isinstance(v, Tileable)}
        execute(self._obj, *lazy.values(), session=session)
        data = self._obj.fetch(session=session)
        kwargs = {**kwargs, **{k: v.fetch(session=session) for k, v in lazy.items()}}
        return draw(data, kwargs)


def _plot_kind(kind):
    def method(self, *args, session=None, **kwargs):
        return self._run(session, kwargs, lambda data, kw: getattr(data.plot, kind)(*args, **kw))

    method.__name__ = kind
    method.__doc__ = f"pandas' ``plot.{kind}`` on the executed object (Mars's ``plot.{kind}``)."
    return method


for _kind in dir(pd.DataFrame.plot):
    if not _kind.startswith("_") and callable(getattr(pd.DataFrame.plot, _kind)):
        setattr(PlotAccessor, _kind, _plot_kind(_kind))
del _kind


@register_method(DataFrame, Series, name="plot")
@property
def plot(self):
    return PlotAccessor(self)
