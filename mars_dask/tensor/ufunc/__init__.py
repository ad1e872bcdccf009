"""``mt.ufunc`` (Mars's ``mars.tensor.ufunc``): importing it installs the hook through which
numpy ufuncs called on tensors stay lazy (``np.sin(t)``, ``np.add.reduce(t)``,
``np.add.at(t, idx, v)``); the table lives in :mod:`mars_dask.tensor.ufunc.ufunc`."""

from . import ufunc


def _install():
    from ..core import Tensor

    current = Tensor.__dict__.get("__array_ufunc__")
    if getattr(current, "_mars_dask_ufunc_hook", False):
        return
    Tensor.__array_ufunc__ = ufunc.make_array_ufunc(current)


_install()
del _install
