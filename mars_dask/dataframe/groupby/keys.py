"""Group keys that are not columns: index levels (``level=``), functions and mappings of the
index labels, and arrays with one key per row.

pandas turns each of them into one key value per row of the grouped object; here they become
a Series tileable *aligned* with that object (same ``index_key``: the same labels in the same
chunks), so the rest of groupby treats them exactly like an aligned Series key.  Each key chunk
is computed from its own object chunk: ``index.get_level_values`` / ``index.map`` (what pandas'
``Grouping`` does), or the slice of the array at the chunk's global rows (the row lengths are
resolved first when a filter left them unknown).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from .._meta import meta_nonempty

from ...tiling.core import ensure_known
from ..core import DataFrameOperand, frame_nsplits


def _level_key(obj, level, name):
    return pd.Series(obj.index.get_level_values(level), index=obj.index, name=name)


def _map_key(obj, mapper, name):
    if isinstance(mapper, pd.Series):
        # pandas aligns a Series key on the grouped object's labels
        return mapper.reindex(obj.index).rename(name)
    return pd.Series(obj.index.map(mapper), index=obj.index, name=name)


def _array_key(obj, values, name):
    return pd.Series(values, index=obj.index, name=name)


class GroupKey(DataFrameOperand):
    """One key per row of ``obj``: ``kind`` is ``"level"``, ``"map"`` or ``"array"``."""

    _op_name = "groupby-key"

    def __init__(self, obj, kind, value, name):
        super().__init__([obj.data], kind=kind, value=value, name=name)
        self.kind = kind
        self.value = value
        self.key_name = name

    def tile(self):
        (obj,) = self.inputs
        if self.kind == "array":
            yield from ensure_known(obj)
            lengths = [int(c.shape[0]) for c in obj.chunks]
            if sum(lengths) != len(self.value):
                raise ValueError("Grouper and axis must be same length")
            offsets = np.concatenate([[0], np.cumsum(lengths)])
            chunks = [
                self.new_chunk(i, lengths[i], _array_key, (c, self.value[offsets[i]:offsets[i + 1]], self.key_name))
                for i, c in enumerate(obj.chunks)
            ]
        else:
            func = _level_key if self.kind == "level" else _map_key
            chunks = [
                self.new_chunk(i, c.shape[0], func, (c, self.value, self.key_name), blockwise=True)
                for i, c in enumerate(obj.chunks)
            ]
        return [(chunks, frame_nsplits(self.output.meta, [c.shape[0] for c in chunks]))]


def _output(obj, kind, value, name, meta):
    op = GroupKey(obj, kind, value, name)
    data = obj.data
    return op.new_output(meta, data.shape[0], index_key=data.index_key, range_index=data.range_index)


def level_key(obj, level):
    """The values of index level ``level`` (a position or a name) as an aligned Series key."""
    idx = obj.data.meta.index
    pos = idx._get_level_number(level)  # pandas' own KeyError/IndexError for a bad level
    name = idx.names[pos]
    meta = _level_key(meta_nonempty(obj.data.meta), pos, name).iloc[:0]
    return _output(obj, "level", pos, name, meta)


def map_key(obj, mapper):
    """A function, dict or pandas Series applied to the index labels (pandas' semantics)."""
    name = mapper.name if isinstance(mapper, pd.Series) else None
    meta = _map_key(meta_nonempty(obj.data.meta), mapper, name).iloc[:0]
    return _output(obj, "map", mapper, name, meta)


def array_key(obj, values):
    """One key per row given as a numpy array, pandas Index or list."""
    name = values.name if isinstance(values, pd.Index) else None
    if not isinstance(values, (pd.Index, pd.api.extensions.ExtensionArray)):
        values = np.asarray(values)
    n = obj.shape[0]
    if not (isinstance(n, float) and np.isnan(n)) and len(values) != n:
        raise ValueError("Grouper and axis must be same length")
    meta = pd.Series(values[:0], name=name)
    meta.index = obj.data.meta.index[:0]
    return _output(obj, "array", values, name, meta)
