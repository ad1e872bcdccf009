"""Mars's tensor API (numpy's names and arguments, plus ``chunk_size=``) on Dask.

``import mars_dask.tensor as mt``; build lazily, then ``.execute()`` and ``.fetch()``.
Each submodule lists its public functions in ``__all__``; they are all re-exported here.
"""

from . import _numpy_names
from . import arithmetic as _arithmetic
from . import construct as _construct
from . import datasource as _datasource
from . import fft, lib, special, stats, ufunc
from . import indexing as _indexing
from . import linalg
from .linalg import products as _products
from . import manipulation as _manipulation
from . import random
from . import rechunk as _rechunk
from . import numeric as _numeric
from . import reduction as _reduction
from . import setops as _setops
from . import sort as _sort
from . import sparse as _sparse
from . import statistics as _statistics
from .core import Tensor, TensorData, astensor
from .lib._executable import ExecutableTuple

# ufuncs first: modules below override the few ufunc names (numpy 2's ``matmul``, ...)
# that need a non-elementwise implementation
globals().update({_n: getattr(_arithmetic, _n) for _n in _arithmetic.UFUNCS})
for _mod in (_datasource, _indexing, _manipulation, _reduction, _sort, _statistics, _rechunk, _products,
             _construct, _numeric, _setops, _sparse):
    globals().update({_n: getattr(_mod, _n) for _n in getattr(_mod, "__all__", [])})
from .arithmetic import allclose, around, astype, clip, isclose, round_  # noqa: E402
from .arithmetic import where_ as where  # noqa: E402

abs = _arithmetic.abs  # noqa: A001
mod = _arithmetic.mod
round = around  # noqa: A001
newaxis = None

# numpy's dtype, scalar-type and constant names (``mt.float64``, ``mt.pi``, ``mt.nan``, ...)
globals().update({_n: getattr(_numpy_names, _n) for _n in _numpy_names.__all__})

del _mod
