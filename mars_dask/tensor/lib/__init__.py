"""``mt.lib`` (Mars's ``mars.tensor.lib``): the ``index_tricks`` module and ``nd_grid``."""

from . import index_tricks
from .index_tricks import nd_grid

__all__ = ["index_tricks", "nd_grid"]
