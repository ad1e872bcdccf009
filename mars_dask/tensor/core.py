"""Tensor tileables: :class:`TensorData` (metadata + chunks), :class:`Tensor` (the handle
users hold) and :class:`TensorOperand` (base of every tensor operation).

Conventions every tensor operand follows:

- build time (the user-facing function): validate arguments and raise a clear exception
  naming the problem; compute the output's shape and dtype exactly as numpy would
  (``nan`` for lengths known only after execution); return ``op.new_tensor(...)``.
- tile time (``tile``): produce chunks with ``self.new_chunk(...)``; kernels are plain
  module-level functions over numpy arrays (so they pickle by reference).  Use
  ``yield from ensure_known(t)`` before reading ``t.nsplits`` when they may be unknown.
- chunk keys are ``(tensor_key, *chunk_index)``, as dask.array's.
"""

from __future__ import annotations

import math
import numbers
from typing import Sequence

import numpy as np

from ..tiling.core import Chunk, Operand, TileableData
from ..tiling.tileable import Tileable
from .utils import nbytes_of, prod


class TensorData(TileableData):
    __slots__ = ("dtype", "order", "issparse")

    def __init__(self, op, shape, dtype, key, order: str = "C", issparse: bool = False):
        super().__init__(op, shape, key)
        self.dtype = np.dtype(dtype)
        self.order = order
        #: chunks are sparse matrices (see ``tensor/sparse.py``)
        self.issparse = issparse

    @property
    def size(self) -> float:
        return prod(self.shape)

    @property
    def nbytes(self) -> float:
        return nbytes_of(self.shape, self.dtype)


class TensorOperand(Operand):
    """Base class of tensor operations (see the module docstring for the conventions)."""

    _op_name = "tensor-op"
    #: the operand's kernels take sparse chunks (``tensor/sparse.py``); others get dense inputs
    sparse_aware = False

    def __init__(self, inputs=(), **params):
        inputs = list(inputs)
        if any(getattr(i, "issparse", False) is True for i in inputs):
            from .sparse import densify_inputs

            inputs = densify_inputs(type(self), inputs)
        super().__init__(inputs, **params)

    def new_tensors(self, shapes_dtypes: Sequence[tuple], key: str | None = None, order: str = "C") -> list[Tensor]:
        """Create the output tensors of this operand: one per ``(shape, dtype)``; ``order``
        ("C" or "F") is the memory layout the fetched arrays get (numpy's ``order``)."""
        base = key or self.make_key()
        outs = []
        for i, (shape, dtype) in enumerate(shapes_dtypes):
            k = base if len(shapes_dtypes) == 1 else f"{base}-{i}"
            data = TensorData(self, tuple(shape), dtype, k, order=order)
            self.add_output(data)
            outs.append(Tensor(data))
        return outs

    def new_tensor(self, shape, dtype, key: str | None = None, order: str = "C") -> Tensor:
        return self.new_tensors([(shape, dtype)], key=key, order=order)[0]

    def new_chunk(
        self,
        index: tuple,
        shape: tuple,
        func,
        args: tuple = (),
        kwargs: dict | None = None,
        *,
        out: int = 0,
        dtype=None,
        inputs: Sequence[Chunk] | None = None,
        memory: int | None = None,
        blockwise: bool = False,
    ) -> Chunk:
        """A chunk of output ``out`` at grid ``index`` computed by ``func(*args, **kwargs)``.

        ``memory`` overrides the default estimate (inputs + output bytes); pass it for
        kernels with large temporaries.
        """
        cache = self.__dict__.setdefault("_chunk_cache", {})
        ck = (out, dtype)
        hit = cache.get(ck)
        if hit is None:
            if dtype is None:
                o = self._outputs[out]()
                itemsize = o.dtype.itemsize if o is not None else 8
            else:
                itemsize = np.dtype(dtype).itemsize
            hit = cache[ck] = (self.output_key(out), itemsize)
        okey, itemsize = hit
        n = 1
        for d in shape:
            n *= d
        return Chunk(
            (okey, *index),
            tuple(index),
            tuple(shape),
            func,
            tuple(args),
            kwargs,
            inputs=inputs,
            memory=memory,
            nbytes=float(n * itemsize),
            blockwise=blockwise,
        )


def _binop(name, reflected=False):
    def method(self, other):
        from . import arithmetic

        func = getattr(arithmetic, name)
        try:
            return func(other, self) if reflected else func(self, other)
        except _NotSupported:
            return NotImplemented

    method.__name__ = f"__{'r' if reflected else ''}{name}__"
    return method


class _NotSupported(TypeError):
    pass


class TensorFlags(dict):
    """``Tensor.flags``: Mars's dict ``{"C_CONTIGUOUS": ..., "F_CONTIGUOUS": ...}`` (from the
    tensor's ``order``; both true for 0-d and 1-d tensors), also readable as numpy's flags
    object (``flags.c_contiguous``, ``flags["F"]``, ``owndata``/``writeable``: true, as the
    fetched array's)."""

    _ALIASES = {"C": "C_CONTIGUOUS", "CONTIGUOUS": "C_CONTIGUOUS", "F": "F_CONTIGUOUS",
                "FORTRAN": "F_CONTIGUOUS", "O": "OWNDATA", "W": "WRITEABLE"}

    def __missing__(self, key):
        if isinstance(key, str):
            name = self._ALIASES.get(key.upper(), key.upper())
            if name in ("OWNDATA", "WRITEABLE"):
                return True
            if name in self:
                return self[name]
        raise KeyError(f"Unknown flag {key!r}")

    def __getattr__(self, name):
        try:
            return self[name.upper()]
        except KeyError:
            raise AttributeError(f"'flags' object has no attribute {name!r}") from None

    @property
    def contiguous(self) -> bool:
        return self["C_CONTIGUOUS"]

    @property
    def fortran(self) -> bool:
        return self["F_CONTIGUOUS"]


class Tensor(Tileable):
    """A lazy n-dimensional array (Mars's ``Tensor``).  Build expressions with numpy-style
    functions and operators, then ``.execute()`` and ``.fetch()``."""

    __slots__ = ()
    __array_priority__ = 1000

    # -- metadata --------------------------------------------------------------------
    @property
    def dtype(self) -> np.dtype:
        return self._data.dtype

    @property
    def size(self):
        return self._data.size

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self):
        return self._data.nbytes

    @property
    def order(self):
        return self._data.order

    @property
    def flags(self) -> TensorFlags:
        """Mars's ``{"C_CONTIGUOUS": ..., "F_CONTIGUOUS": ...}`` from ``order``; both true where
        numpy's fetched array has both (0-d/1-d, at most one axis longer than 1, or empty)."""
        shape = self.shape
        both = 0 in shape or sum(1 for s in shape if s != 1) <= 1
        return TensorFlags(C_CONTIGUOUS=both or self.order != "F", F_CONTIGUOUS=both or self.order == "F")

    @property
    def T(self) -> Tensor:
        return self.transpose()

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        n = self.shape[0]
        if isinstance(n, float) and math.isnan(n):
            raise ValueError("len() of a tensor whose length is unknown until it is executed")
        return int(n)

    def __bool__(self):
        raise TypeError(
            "the truth value of a lazy tensor is undefined; execute() and fetch() it first"
        )

    def __iter__(self):
        raise TypeError("iterating over a lazy tensor is not supported; fetch() it first")

    def issparse(self) -> bool:
        return self._data.issparse

    def tosparse(self, missing=None) -> Tensor:
        from .sparse import tosparse

        return tosparse(self, missing=missing)

    def todense(self, fill_value=None) -> Tensor:
        from .sparse import todense

        return todense(self, fill_value=fill_value)

    @staticmethod
    def _assemble_meta(data: TensorData):
        if data.issparse:
            return ("sparse", data.chunk_shape, data.dtype, data.shape)
        return (data.chunk_shape, data.dtype, data.shape, data.order)

    @staticmethod
    def _assemble(meta, parts: list):
        if meta[0] == "sparse":
            from .sparse import assemble

            return assemble(meta[1:], parts)
        chunk_shape, dtype, shape, order = meta
        if len(shape) == 0:  # numpy gives a scalar (np.float64(15.0)), not a 0-d array
            return np.asarray(parts[0]).reshape(())[()]
        if not parts or 0 in chunk_shape:
            return np.empty(tuple(0 if s != s else int(s) for s in shape), dtype=dtype, order=order)
        if len(parts) == 1:  # a fresh C-ordered copy, as concatenate3 gives
            out = np.array(parts[0], order="C")
        else:  # imported here: dask.array costs a fifth of a second, a scalar's fetch needs none of it
            from ..tiling.tileable import concatenate_grid

            out = concatenate_grid(parts, chunk_shape)
        if order == "F" and len(shape) > 1 and isinstance(out, np.ndarray) and not out.flags.f_contiguous:
            return np.asfortranarray(out)
        return out

    def __array__(self, dtype=None, copy=None):
        if not self._data.is_executed:
            self.execute()
        got = self.fetch()
        arr = got.toarray() if self._data.issparse else np.asarray(got)
        return arr.astype(dtype) if dtype is not None else arr

    def to_numpy(self):
        return self.execute().fetch()

    def to_dask(self):
        """A ``dask.array.Array`` with the same chunks (shapes must be known)."""
        from .datasource import to_dask

        return to_dask(self)

    # -- numpy protocols -----------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        from . import arithmetic

        return arithmetic.array_ufunc(ufunc, method, *inputs, **kwargs)

    # -- operators -----------------------------------------------------------------------
    __add__ = _binop("add")
    __radd__ = _binop("add", True)
    __sub__ = _binop("subtract")
    __rsub__ = _binop("subtract", True)
    __mul__ = _binop("multiply")
    __rmul__ = _binop("multiply", True)
    __truediv__ = _binop("true_divide")
    __rtruediv__ = _binop("true_divide", True)
    __floordiv__ = _binop("floor_divide")
    __rfloordiv__ = _binop("floor_divide", True)
    __mod__ = _binop("mod")
    __rmod__ = _binop("mod", True)
    __pow__ = _binop("power")
    __rpow__ = _binop("power", True)
    __lshift__ = _binop("left_shift")
    __rlshift__ = _binop("left_shift", True)
    __rshift__ = _binop("right_shift")
    __rrshift__ = _binop("right_shift", True)
    __and__ = _binop("bitwise_and")
    __rand__ = _binop("bitwise_and", True)
    __or__ = _binop("bitwise_or")
    __ror__ = _binop("bitwise_or", True)
    __xor__ = _binop("bitwise_xor")
    __rxor__ = _binop("bitwise_xor", True)
    __lt__ = _binop("less")
    __le__ = _binop("less_equal")
    __gt__ = _binop("greater")
    __ge__ = _binop("greater_equal")
    __eq__ = _binop("equal")
    __ne__ = _binop("not_equal")
    __hash__ = object.__hash__

    def __matmul__(self, other):
        from .linalg import matmul

        return matmul(self, other)

    def __rmatmul__(self, other):
        from .linalg import matmul

        return matmul(other, self)

    def __neg__(self):
        from .arithmetic import negative

        return negative(self)

    def __pos__(self):
        from .arithmetic import positive

        return positive(self)

    def __abs__(self):
        from .arithmetic import absolute

        return absolute(self)

    def __invert__(self):
        from .arithmetic import invert

        return invert(self)

    def __divmod__(self, other):
        from .arithmetic import divmod as _divmod

        return _divmod(self, other)

    def __rdivmod__(self, other):
        from .arithmetic import divmod as _divmod

        return _divmod(other, self)

    # -- indexing ----------------------------------------------------------------------
    def __getitem__(self, item):
        from .indexing import getitem

        return getitem(self, item)

    def __setitem__(self, item, value):
        from .indexing import setitem

        setitem(self, item, value)

    # -- methods (thin wrappers over the module-level functions) --------------------------
    def astype(self, dtype, order="K", casting="unsafe", copy=True):
        from .arithmetic import astype

        return astype(self, dtype, casting=casting, copy=copy, order=order)

    def copy(self, order="C"):
        """A copy (numpy's ``ndarray.copy``: C order unless ``order`` says otherwise)."""
        from .arithmetic import astype

        return astype(self, self.dtype, copy=True, order=order)

    def rechunk(self, chunk_size):
        from .rechunk import rechunk

        return rechunk(self, chunk_size)

    def reshape(self, *shape, order="C"):
        from .manipulation import reshape

        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return reshape(self, shape, order=order)

    def transpose(self, *axes):
        from .manipulation import transpose

        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        return transpose(self, axes or None)

    def swapaxes(self, axis1, axis2):
        from .manipulation import swapaxes

        return swapaxes(self, axis1, axis2)

    def ravel(self, order="C"):
        from .manipulation import ravel

        return ravel(self, order=order)

    def flatten(self, order="C"):
        from .manipulation import ravel

        return ravel(self, order=order)

    def squeeze(self, axis=None):
        from .manipulation import squeeze

        return squeeze(self, axis=axis)

    def dot(self, other):
        from .linalg import dot

        return dot(self, other)

    def clip(self, a_min=None, a_max=None, out=None):
        # ``out`` also lets ``np.clip(tensor, ...)`` (which calls this method) stay lazy
        from .arithmetic import clip

        return clip(self, a_min, a_max, out=out)

    def round(self, decimals=0, out=None):
        from .arithmetic import around

        return around(self, decimals=decimals, out=out)

    def sort(self, axis=-1, kind=None, order=None):
        """In-place sort, as ``numpy.ndarray.sort`` (the handle now points at sorted data)."""
        from .sort import sort

        self._data = sort(self, axis=axis, kind=kind, order=order).data

    def argsort(self, axis=-1, kind=None, order=None):
        from .sort import argsort

        return argsort(self, axis=axis, kind=kind, order=order)


def _reduction_method(name):
    def method(self, *args, **kwargs):
        from . import reduction

        return getattr(reduction, name)(self, *args, **kwargs)

    method.__name__ = name
    return method


for _name in (
    "sum", "prod", "mean", "std", "var", "min", "max", "argmin", "argmax",
    "any", "all", "cumsum", "cumprod",
):
    setattr(Tensor, _name, _reduction_method(_name))


def astensor(x, dtype=None, chunk_size=None) -> Tensor:
    """``x`` as a Tensor: tensors pass through (cast if ``dtype``), array-likes and
    scalars are wrapped as data sources."""
    if isinstance(x, Tensor):
        if dtype is not None and np.dtype(dtype) != x.dtype:
            return x.astype(dtype)
        return x
    from .datasource import tensor

    return tensor(x, dtype=dtype, chunk_size=chunk_size)


def is_scalar_like(x) -> bool:
    return isinstance(x, (numbers.Number, np.generic, bool, str, bytes)) or (
        isinstance(x, np.ndarray) and x.ndim == 0
    )
