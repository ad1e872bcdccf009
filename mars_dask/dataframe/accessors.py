"""``Series.str`` and ``Series.dt``: pandas' accessors chunk by chunk.

Every method/property of pandas' accessor is available (they all work row by row);
the output metadata comes from pandas on a non-empty stand-in, and pandas validates the
accessor itself at build time (``.str`` on numbers raises AttributeError, as in pandas).
Data-dependent output structures are refused: ``str.split/rsplit(expand=True)`` (the
number of columns depends on the data) and ``str.cat`` without ``others`` (a reduction).
"""

from __future__ import annotations

import pandas as pd
from ._meta import meta_nonempty

from .core import Series, register_method
from .map import is_pandas_tileable, map_rows

__all__: list[str] = []


def _accessor_call(s, acc, name, args, kwargs):
    return getattr(getattr(s, acc), name)(*args, **kwargs)


def _accessor_attr(s, acc, name):
    return getattr(getattr(s, acc), name)


class _Accessor:
    _acc = ""

    def __init__(self, series: Series):
        self._series = series
        self._sample = getattr(meta_nonempty(series.data.meta), self._acc)  # validates like pandas

    def __dir__(self):
        return sorted(set(dir(self._sample)) - {n for n in dir(self._sample) if n.startswith("_")})

    def _check(self, name, args, kwargs):
        pass

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        target = getattr(type(self._sample), name, None)
        if target is None and not hasattr(self._sample, name):
            raise AttributeError(f"'{type(self._sample).__name__}' object has no attribute {name!r}")
        if isinstance(target, property) or not callable(getattr(self._sample, name)):
            # pandas' dtype for data without nulls (``dt.month`` is int32), as Mars: a chunk
            # holding NaT gives pandas' float64 and the fetched result is then float64, as
            # pandas gives for the whole; the metadata says int32 (chunks are not cast, so
            # values are never invented or lost)
            meta = getattr(getattr(meta_nonempty(self._series.data.meta), self._acc), name).iloc[:0]
            meta.index = self._series.data.meta.index
            return map_rows(_accessor_attr, self._series, self._acc, name, meta=meta, name=f"{self._acc}-{name}")
        series = self._series
        acc = self._acc

        def method(*args, **kwargs):
            self._check(name, args, kwargs)
            if any(is_pandas_tileable(a) for a in (*args, *kwargs.values())):
                raise NotImplementedError(f".{acc}.{name} with tileable arguments is not supported")
            from .map import map_rows

            return map_rows(_accessor_call, series, acc, name, args, kwargs, name=f"{acc}-{name}")

        method.__name__ = name
        method.__doc__ = getattr(getattr(type(self._sample), name, None), "__doc__", None)
        return method


class StringAccessor(_Accessor):
    """pandas' ``Series.str`` methods chunk by chunk."""

    _acc = "str"

    def _check(self, name, args, kwargs):
        if name in ("split", "rsplit") and kwargs.get("expand", False):
            raise NotImplementedError(f"str.{name}(expand=True): the number of columns depends on the data")
        others = args[0] if args else kwargs.get("others")
        if name == "cat" and others is None:
            raise NotImplementedError("str.cat without others (a reduction to one string) is not supported")
        if name == "cat" and not isinstance(others, (pd.Series, pd.DataFrame)):
            raise NotImplementedError("str.cat with positional others (lists/arrays) is not supported: pass a pandas Series")
        if name in ("get_dummies", "partition", "rpartition") and name == "get_dummies":
            raise NotImplementedError("str.get_dummies: the columns depend on the data")


class DatetimeAccessor(_Accessor):
    """pandas' ``Series.dt`` properties and methods chunk by chunk."""

    _acc = "dt"


@register_method(Series, name="str")
@property
def _str(self):
    return StringAccessor(self)


@register_method(Series, name="dt")
@property
def _dt(self):
    return DatetimeAccessor(self)
