"""Interoperation with ``dask.dataframe``: ``df.to_dask()`` and ``md.from_dask(ddf)``.

``to_dask`` hands our emitted chunk graph (executed chunks appear as their Futures) to
``dask.dataframe.from_graph``; the partitions are our row chunks in order.  Divisions are
known when the index is the default RangeIndex with known, non-empty chunk lengths
(the divisions are the chunks' offsets), or when the object is executed and its index is
sorted across chunks (``divisions="compute"`` asks for this check even if not executed:
it executes the object); otherwise they are unknown (``(None,) * (n + 1)``).

``from_dask`` takes the partitions of a dask DataFrame/Series/Index: its graph is merged
into ours (one chunk per dask task), lengths unknown until executed, as
``mars_dask.tensor.from_dask`` does for arrays.  Dask collection protocol: ``dask.compute``,
``client.compute`` and ``client.persist`` work on md objects directly (see
``mars_dask.tiling.tileable``).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..tiling.core import Chunk, new_key
from .core import DataFrame, DataFrameOperand, Index, Series, frame_nsplits, nan, register_method

__all__ = ["from_dask"]


def _min_max(part):
    if len(part) == 0:
        return None
    idx = part if isinstance(part, pd.Index) else part.index
    if not idx.is_monotonic_increasing:
        return False
    return idx[0], idx[-1]


def _divisions(t, compute: bool):
    data = t.data
    rows = data.nsplits[0]
    n = len(rows)
    unknown = (None,) * (n + 1)
    if data.range_index and not any(math.isnan(r) for r in rows):
        if all(r > 0 for r in rows):
            offs = np.concatenate([[0], np.cumsum(rows)]).astype(int)
            return tuple(int(o) for o in offs[:-1]) + (int(offs[-1]) - 1,)
        return unknown
    if not (compute or data.is_executed):
        return unknown
    if isinstance(data.meta, pd.DataFrame) or isinstance(data.meta, pd.Series):
        idx_meta = data.meta.index
    else:
        idx_meta = data.meta
    if isinstance(idx_meta, pd.MultiIndex) or idx_meta.dtype == object:
        return unknown
    if not data.is_executed:
        t.execute()
    from ..session import get_session

    client = get_session().client
    mm = client.gather(client.map(_min_max, [c.future for c in data.chunks], pure=False))
    if any(m is None or m is False for m in mm):
        return unknown
    divs = [m[0] for m in mm] + [mm[-1][1]]
    for i in range(len(mm) - 1):
        if not mm[i][1] < mm[i + 1][0]:
            return unknown
    return tuple(divs)


def _identity(x):
    return x


def to_dask(self, divisions=None):
    """A ``dask.dataframe`` DataFrame/Series/Index over this object's chunks.

    ``divisions``: None (known where cheap: default RangeIndex with known lengths, or an
    executed object with a sorted index), ``"compute"`` (execute and check the index order
    if needed), or an explicit tuple.
    """
    import dask.dataframe as dd

    self._ensure_tiled()
    data = self.data
    if divisions is None or isinstance(divisions, str):
        if isinstance(divisions, str) and divisions != "compute":
            raise ValueError(f"divisions must be None, 'compute' or a tuple, got {divisions!r}")
        divs = _divisions(self, divisions == "compute")
    else:
        divs = tuple(divisions)
        if len(divs) != len(data.chunks) + 1:
            raise ValueError(f"divisions needs {len(data.chunks) + 1} values, got {len(divs)}")
    graph = self.__dask_graph__()
    layer = dict(graph)
    keys = [c.key for c in data.chunks]
    return dd.from_graph(layer, data.meta, divs, keys, "from-mars")


register_method(DataFrame, Series, Index, name="to_dask")(to_dask)


# ---- from dask ----------------------------------------------------------------------------


def _run_task(boxed_task, dep_values, dep_keys):
    # the dask Task travels boxed in a tuple so that it is not run inline as a nested task
    return boxed_task[0](dict(zip(dep_keys, dep_values)))


class FromDaskFrame(DataFrameOperand):
    """Partitions of a dask DataFrame/Series/Index: its graph becomes chunks of ours."""

    _op_name = "from-dask"

    def __init__(self, coll):
        super().__init__([])
        self.coll = coll

    def tile(self):
        from .._dask_internals import DataNode, convert_legacy_graph

        coll = self.coll
        dsk = convert_legacy_graph(dict(coll.__dask_graph__()))
        keys = list(coll.__dask_keys__())
        nodes: dict = {}

        def node(key):
            # iterative post-order (deep graphs must not hit the recursion limit)
            stack = [key]
            while stack:
                k = stack[-1]
                if k in nodes:
                    stack.pop()
                    continue
                task = dsk[k]
                pending = [d for d in task.dependencies if d not in nodes]
                if pending:
                    stack.extend(pending)
                    continue
                stack.pop()
                deps = [nodes[d] for d in task.dependencies]
                if isinstance(task, DataNode):
                    nodes[k] = Chunk(k, (), (nan,), _identity, (task.value,), inputs=[])
                else:
                    nodes[k] = Chunk(k, (), (nan,), _run_task, ((task,), deps, list(task.dependencies)), inputs=deps)
            return nodes[key]

        meta = self.output.meta
        chunks = []
        for i, k in enumerate(keys):
            src = node(k)
            chunks.append(self.new_chunk(i, nan, _identity, (src,), inputs=[src]))
        return [(chunks, frame_nsplits(meta, [nan] * len(chunks)))]


def from_dask(ddf):
    """An md DataFrame/Series/Index computing the partitions of a dask one (lengths and
    index are those of the dask partitions; lengths are known after execution)."""
    import dask.dataframe as dd

    if not isinstance(ddf, (dd.DataFrame, dd.Series, dd.Index)):
        raise TypeError(f"from_dask needs a dask DataFrame, Series or Index, got {type(ddf).__name__}")
    ddf = ddf.optimize()
    meta = ddf._meta
    op = FromDaskFrame(ddf)
    key = new_key("from-dask", ddf._name)
    range_index = False
    return op.new_output(meta, nan, range_index=range_index, key=key)
