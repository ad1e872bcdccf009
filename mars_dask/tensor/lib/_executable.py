"""A tuple of tensors that executes and fetches as one (Mars's ``ExecutableTuple``): what
``mt.special.fresnel``, ``mt.stats.ttest_ind`` and the like return."""

from __future__ import annotations

from collections import namedtuple


class ExecutableTuple(tuple):
    """``execute()`` runs every member in one graph and returns the tuple itself;
    ``fetch()`` gives the members' values: a named tuple when the result has field names
    (``statistic``, ``pvalue``), else a list, as Mars."""

    def __new__(cls, items, fields: tuple | None = None, name: str | None = None):
        self = super().__new__(cls, items)
        self._fields = tuple(fields) if fields else None
        self._raw_type = namedtuple(name or "Result", self._fields) if self._fields else None
        return self

    def __getattr__(self, item):
        fields = self.__dict__.get("_fields")
        if fields and item in fields:
            return self[fields.index(item)]
        raise AttributeError(item)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._fields or ()))

    def __repr__(self):
        if not self._fields:
            return super().__repr__()
        items = ", ".join(f"{k}={v!r}" for k, v in zip(self._fields, self))
        return f"{self._raw_type.__name__}({items})"

    def __reduce__(self):
        return (_rebuild, (tuple(self), self._fields, self._raw_type.__name__ if self._raw_type else None))

    def execute(self, session=None, **kw):
        from ...session import execute

        if len(self):
            execute(*self, session=session, **kw)
        return self

    def fetch(self, session=None):
        if not len(self):
            return ()
        values = [t.fetch(session=session) for t in self]
        if self._raw_type is not None:
            return self._raw_type(*values)
        return values


def _rebuild(items, fields, name):
    return ExecutableTuple(items, fields, name)
