"""Arithmetic and comparisons between DataFrames, Series and scalars (pandas semantics)."""

from __future__ import annotations

import operator

from .map import aligned, is_pandas_tileable, map_rows

__all__: list[str] = []

_OPS = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
    "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow,
    "and": operator.and_, "or": operator.or_, "xor": operator.xor,
    "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
    "eq": operator.eq, "ne": operator.ne,
}


def _binary_kernel(left, right, name):
    return _OPS[name](left, right)


def _unary_kernel(x, name):
    if name == "neg":
        return -x
    if name == "invert":
        return ~x
    if name == "abs":
        return abs(x)
    return +x


def align(left, right):
    """Bring two objects with different indexes onto one row partitioning with the same
    labels (pandas' outer alignment).  Returns the aligned pair."""
    raise NotImplementedError(
        "operations between DataFrames/Series with different indexes or partitioning are not supported yet"
    )


def binary_op(name, left, right):
    """``left <op> right`` where either side is a tileable, a scalar or a local pandas/numpy value."""
    if name not in _OPS:
        raise ValueError(f"unknown operator {name!r}")
    if is_pandas_tileable(left) and is_pandas_tileable(right) and not aligned(left, right):
        left, right = align(left, right)
    return map_rows(_binary_kernel, left, right, name, name=name)


def unary_op(name, obj):
    return map_rows(_unary_kernel, obj, name, name=name)

