"""Index tricks (Mars's ``mars.tensor.lib.index_tricks``): ``mgrid``, ``ogrid``, ``r_``,
``c_`` (from :mod:`mars_dask.tensor.construct`, looked up when first used), the
``nd_grid`` class behind ``mgrid``/``ogrid``, and numpy's ``ndindex``."""

from __future__ import annotations

from numpy import ndindex

__all__ = ["ndindex", "mgrid", "ogrid", "r_", "c_"]  # noqa: F822 - module __getattr__

_FROM_CONSTRUCT = ("mgrid", "ogrid", "r_", "c_")


def _construct(name: str):
    from .. import construct

    try:
        return getattr(construct, name)
    except AttributeError:
        raise NotImplementedError(f"mt.lib.index_tricks.{name} (Mars's {name}) is not available: "
                                  f"mars_dask.tensor.construct has no {name}") from None


class _nd_grid:  # noqa: N801
    """(Used when :mod:`mars_dask.tensor.construct` has no ``nd_grid``.)  A multi-dimensional "meshgrid" builder: ``nd_grid()[0:5, 0:5]`` is ``mgrid[0:5, 0:5]``,
    ``nd_grid(sparse=True)[...]`` is ``ogrid[...]`` (a complex step ``5j`` gives a number of
    points, the stop then included, as numpy)."""

    def __init__(self, sparse=False):
        self.sparse = sparse

    def __getitem__(self, key):
        return _construct("ogrid" if self.sparse else "mgrid")[key]

    def __len__(self):
        return 0


def __getattr__(name):
    if name in _FROM_CONSTRUCT:
        return _construct(name)
    if name == "nd_grid":  # construct's class (``mgrid``/``ogrid`` are instances of it)
        from .. import construct

        return getattr(construct, "nd_grid", _nd_grid)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
