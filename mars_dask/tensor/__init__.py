"""Mars's tensor API (numpy's names and arguments, plus ``chunk_size=``) on Dask.

``import mars_dask.tensor as mt``; build lazily, then ``.execute()`` and ``.fetch()``.
Each submodule lists its public functions in ``__all__``; they are all re-exported here.
"""

from . import arithmetic as _arithmetic
from . import datasource as _datasource
from . import indexing as _indexing
from . import linalg
from .linalg import products as _products
from . import manipulation as _manipulation
from . import random
from . import rechunk as _rechunk
from . import reduction as _reduction
from . import sort as _sort
from . import statistics as _statistics
from .core import Tensor, TensorData, astensor

# ufuncs first: modules below override the few ufunc names (numpy 2's ``matmul``, ...)
# that need a non-elementwise implementation
globals().update({_n: getattr(_arithmetic, _n) for _n in _arithmetic.UFUNCS})
for _mod in (_datasource, _indexing, _manipulation, _reduction, _sort, _statistics, _rechunk, _products):
    globals().update({_n: getattr(_mod, _n) for _n in getattr(_mod, "__all__", [])})
from .arithmetic import allclose, around, astype, clip, isclose, round_  # noqa: E402
from .arithmetic import where_ as where  # noqa: E402

abs = _arithmetic.abs  # noqa: A001
mod = _arithmetic.mod
round = around  # noqa: A001
newaxis = None

del _mod
