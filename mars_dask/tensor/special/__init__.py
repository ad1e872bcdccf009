"""``mt.special``: scipy.special's functions on tensors, element-wise (Mars's
``mars.tensor.special``); see :mod:`mars_dask.tensor.special.core`."""

from . import core as _core
from .core import __all__

globals().update({_n: getattr(_core, _n) for _n in __all__})
