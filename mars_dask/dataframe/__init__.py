"""Mars's DataFrame API (pandas names and arguments, plus ``chunk_size=``) on Dask.

``import mars_dask.dataframe as md``; build lazily, then ``.execute()`` and ``.fetch()``.
Each submodule lists its public functions in ``__all__``; they are re-exported here.
"""

import importlib as _importlib

from .core import DataFrame, Index, Series
from .datasource import from_pandas

_MODULES = (
    "datasource", "map", "indexing", "arithmetic", "interop", "methods", "accessors", "reduction",
    "selection", "merge", "concat", "sort", "reshape", "io", "groupby", "window", "toplevel",
    "index", "statistics", "convert", "align", "access", "custom_reduction",
)
for _name in _MODULES:
    _mod = _importlib.import_module(f".{_name}", __name__)
    globals().update({_n: getattr(_mod, _n) for _n in getattr(_mod, "__all__", [])})
del _name, _mod
