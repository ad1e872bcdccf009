"""numpy's names that Mars's ``mars.tensor`` re-exports: dtypes and scalar types, constants,
``finfo``/``iinfo``, the floating-point error handling (``errstate``, ``seterr``,
``geterr``), ``AxisError``, ``ndindex``, plus Mars's ``result_type`` (tensors stand for
their dtypes) and ``scalar`` (a 0-d tensor from a value).

Names numpy 2 removed keep the meaning they had in numpy 1 (which Mars 0.10 used):
``float_`` is float64, ``cfloat`` complex128, ``unicode_`` str_, ``Inf``/``NaN``/``NAN``/
``NINF`` the infinities and nan, and ``bool``/``int``/``float``/``object`` the Python
builtins (numpy 1.19's aliases).
"""

from __future__ import annotations

import builtins
import math

import numpy as np

__all__ = [
    # scalar types and dtypes
    "bool", "bool_", "int", "int_", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32",
    "uint64", "intc", "intp", "float", "float16", "float32", "float64", "float_", "double", "cfloat",
    "complex64", "complex128", "object", "object_", "bytes_", "unicode_", "str_", "void", "datetime64",
    "timedelta64", "generic", "number", "integer", "signedinteger", "unsignedinteger", "inexact", "floating",
    "complexfloating", "character", "flexible", "dtype",
    # constants
    "e", "pi", "inf", "Inf", "NINF", "nan", "NaN", "NAN",
    # numpy helpers
    "finfo", "iinfo", "errstate", "seterr", "geterr", "AxisError", "ndindex",
    # Mars's own
    "result_type", "scalar",
]

bool = builtins.bool  # noqa: A001 - numpy 1's alias of the builtin, as Mars exports it
int = builtins.int  # noqa: A001
float = builtins.float  # noqa: A001
object = builtins.object  # noqa: A001

bool_ = np.bool_
int_ = np.int_
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint = np.uint
uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64
intc, intp = np.intc, np.intp
float16, float32, float64 = np.float16, np.float32, np.float64
float_ = np.float64
double = np.double
cfloat = np.complex128
complex64, complex128 = np.complex64, np.complex128
object_ = np.object_
bytes_ = np.bytes_
unicode_ = np.str_
str_ = np.str_
void = np.void
datetime64, timedelta64 = np.datetime64, np.timedelta64
generic, number, integer = np.generic, np.number, np.integer
signedinteger, unsignedinteger = np.signedinteger, np.unsignedinteger
inexact, floating, complexfloating = np.inexact, np.floating, np.complexfloating
character, flexible = np.character, np.flexible
dtype = np.dtype

e = math.e
pi = math.pi
inf = Inf = math.inf
NINF = -math.inf
nan = NaN = NAN = math.nan

finfo, iinfo = np.finfo, np.iinfo
errstate, seterr, geterr = np.errstate, np.seterr, np.geterr
AxisError = np.exceptions.AxisError
ndindex = np.ndindex


def result_type(*tensors_and_dtypes) -> np.dtype:
    """``numpy.result_type`` where a tensor stands for its dtype (as Mars's)."""
    from .core import Tensor

    return np.result_type(*[a.dtype if isinstance(a, Tensor) else a for a in tensors_and_dtypes])


def scalar(data, dtype=None, gpu=None):
    """A 0-d tensor holding ``data`` (Mars's ``mt.scalar``); ``TypeError`` when ``data`` is
    not a scalar."""
    from .datasource import tensor

    if gpu:
        raise NotImplementedError("scalar: gpu=True (Mars's GPU tensors) is not supported")
    try:
        arr = np.array(data, dtype=dtype)
    except ValueError:
        raise TypeError(f"Expect scalar, got: {data}") from None
    if arr.ndim != 0:
        raise TypeError(f"Expect scalar, got: {data}")
    return tensor(arr)
