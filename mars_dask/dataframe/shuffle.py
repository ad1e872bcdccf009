"""The task-based shuffle shared by groupby, merge, drop_duplicates and sorting.

Map: each input chunk is split into ``n`` pieces by a vectorised partition function (hash of
key columns, or ranges of a sorted key); one small ``piece`` task per (input, output) pair
takes piece ``j``; reducer ``j`` concatenates its pieces.  The map outputs are marked
``boundary = "shuffle"``: they are never fused away and carry the ``mars_boundary``
annotation, so the failover plugin can checkpoint them and re-run only lost reducers.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from ..tiling.core import Chunk
from .core import DataFrameOperand, nan


def hash_codes(obj, on, n: int) -> np.ndarray:
    """Partition number in ``[0, n)`` of each row, by a stable hash of ``on`` (column labels,
    or None for the index)."""
    if on is None:
        values = obj.index
    elif isinstance(obj, pd.Series) and on == [obj.name]:
        values = obj
    else:
        values = obj[on] if len(on) != 1 else obj[on[0]]
    h = pd.util.hash_pandas_object(values, index=False).to_numpy()
    return (h % np.uint64(n)).astype(np.intp)


def range_codes(obj, on, boundaries, ascending=True) -> np.ndarray:
    """Partition number of each row for range partitioning by ``on`` (one column, or the
    index) at the given sorted ``boundaries`` (``len(boundaries) + 1`` partitions)."""
    values = obj.index if on is None else (obj if isinstance(obj, pd.Series) else obj[on])
    codes = np.searchsorted(np.asarray(boundaries), np.asarray(values), side="right")
    if not ascending:
        codes = len(boundaries) - codes
    return codes.astype(np.intp)


def split_by_codes(obj, codes: np.ndarray, n: int) -> tuple:
    """``obj`` split into ``n`` pieces by partition code, row order kept inside each piece."""
    order = np.argsort(codes, kind="stable")
    bounds = np.cumsum(np.bincount(codes, minlength=n))[:-1]
    return tuple(obj.iloc[idx] for idx in np.split(order, bounds))


def _hash_split(obj, on, n):
    return split_by_codes(obj, hash_codes(obj, on, n), n)


def _range_split(obj, on, boundaries, ascending):
    n = len(boundaries) + 1
    return split_by_codes(obj, range_codes(obj, on, boundaries, ascending), n)


def _piece(pieces, j):
    return pieces[j]


def concat_pieces(pieces):
    pieces = [p for p in pieces]
    if len(pieces) == 1:
        return pieces[0]
    return pd.concat(pieces)


def shuffle_chunks(
    op: DataFrameOperand,
    chunks: Sequence[Chunk],
    n: int,
    split_func,
    split_args: tuple,
    *,
    name: str = "shuffle",
) -> list[list[Chunk]]:
    """Map ``chunks`` through ``split_func(chunk, *split_args) -> tuple of n pieces``; returns,
    for each output partition ``j``, the list of piece chunks that reducer ``j`` reads."""
    okey = op.output_key(0)
    per_output: list[list[Chunk]] = [[] for _ in range(n)]
    for i, c in enumerate(chunks):
        m = Chunk((f"{okey}-{name}-map", i), (i,), (nan,), split_func, (c, *split_args), inputs=[c], nbytes=c.nbytes)
        m.boundary = "shuffle"
        for j in range(n):
            piece = Chunk((f"{okey}-{name}-piece", i, j), (i, j), (nan,), _piece, (m, j), inputs=[m], nbytes=None)
            per_output[j].append(piece)
    return per_output


def hash_shuffle(op, chunks, on, n: int, *, name="shuffle"):
    """Hash-partition rows of ``chunks`` by ``on`` (column labels or None for the index)."""
    return shuffle_chunks(op, chunks, n, _hash_split, (on, n), name=name)


def range_shuffle(op, chunks, on, boundaries, *, ascending=True, name="shuffle"):
    """Range-partition rows by one key at sorted ``boundaries`` (for sort_values/PSRS)."""
    return shuffle_chunks(op, chunks, len(boundaries) + 1, _range_split, (on, tuple(boundaries), ascending), name=name)
