"""Emit a chunk graph as a Dask ``HighLevelGraph`` of task-spec Tasks with annotations.

One layer per tileable (named by the tileable key, the first element of its chunk keys).
Every emitted key is annotated with

- ``priority``: Mars operand order.  Dask orders ready tasks by
  ``(-priority, generation, dask.order)``; we encode ``-(graph_seq * 2**33 + i)`` where
  ``graph_seq`` grows with each submitted graph and ``i`` is the chunk's position in a
  depth-first post-order walk from the outputs (a subtree finishes before the next starts,
  so inputs are freed early).  Earlier graphs therefore run first, then depth-first order.
  Recomputations of lost data can be given a priority above 0 to jump the queue.
- ``mars_memory``: the chunk's estimated peak memory in bytes, which the quota plugin turns
  into a ``resources={"mars-memory": ...}`` restriction.  Plain Dask ignores it.
- ``mars_tileable``: the tileable key (lineage tag for failover and the dashboard).
- ``mars_boundary``: on keys that cut lineage (e.g. ``"shuffle"`` map outputs), which the
  failover plugin checkpoints.

Chunks that are already executed appear as their Futures (as in a persisted dask.array),
so only the new part of a graph is submitted.  Single-use chains are fused into one Task
(nested Tasks run inline), as Dask's blockwise fusion does for dask.array.  A chunk's
fusion is decided the first time it is emitted and kept: the scheduler may still hold the
key's recipe from an earlier graph, and the same key must always carry the same recipe.
"""

from __future__ import annotations

import math
import time
from typing import Iterable, Sequence

from dask._task_spec import Task, TaskRef, parse_input
from dask.highlevelgraph import HighLevelGraph, MaterializedLayer

from .core import Chunk, has_unknown

_EPOCH = 1_767_225_600  # 2026-01-01T00:00:00Z; graph sequence numbers count seconds from it
_last_seq = 0
PRIORITY_STRIDE = 2**33


def next_graph_seq() -> int:
    """A number that grows with every submitted graph (and with wall time, so graphs from
    different client processes of one cluster are ordered roughly by submission)."""
    global _last_seq
    _last_seq = max(_last_seq + 1, int(time.time()) - _EPOCH)
    return _last_seq


def layer_name(key) -> str:
    return key[0] if isinstance(key, tuple) else key


def postorder(outputs: Iterable[Chunk]) -> tuple[list[Chunk], list[Chunk]]:
    """Depth-first post-order of the not-yet-executed chunks needed for ``outputs``.

    Returns ``(order, executed)``: chunks to run (inputs before consumers, each subtree
    completed before its next sibling) and the already executed chunks they read.
    """
    order: list[Chunk] = []
    executed: list[Chunk] = []
    seen: set = set()
    stack: list[tuple[Chunk, bool]] = [(c, False) for c in reversed(list(outputs))]
    while stack:
        c, expanded = stack.pop()
        if expanded:
            order.append(c)
            continue
        if c.key in seen:
            continue
        seen.add(c.key)
        if c.future is not None:
            executed.append(c)
            continue
        stack.append((c, True))
        for inp in reversed(c.inputs):
            if inp.key not in seen:
                stack.append((inp, False))
    return order, executed


def estimate_memory(c: Chunk) -> int:
    """Peak memory of running ``c``: its own ``memory`` if the operand set one, otherwise
    the bytes of its inputs plus its output (unknown sizes count as 0)."""
    if c.memory is not None:
        return int(c.memory)
    total = 0.0
    for x in (c, *c.inputs):
        nb = x.nbytes
        if nb is not None and not math.isnan(nb):
            total += nb
    return int(total)


_CONTAINERS = (list, tuple, dict)


def _convert(obj, subst: dict):
    if isinstance(obj, Chunk):
        return subst[obj.key]
    if isinstance(obj, (list, tuple)):
        if not any(isinstance(o, (Chunk, list, tuple, dict)) for o in obj):
            return obj
        return parse_input(type(obj)(_convert(o, subst) for o in obj))
    if isinstance(obj, dict):
        if not any(isinstance(o, (Chunk, list, tuple, dict)) for o in obj.values()):
            return obj
        return parse_input({k: _convert(v, subst) for k, v in obj.items()})
    return obj


def build_graph(
    outputs: Sequence[Chunk], *, fuse: bool = True, graph_seq: int | None = None
) -> HighLevelGraph:
    """The ``HighLevelGraph`` computing ``outputs`` (chunks), with Mars annotations."""
    if graph_seq is None:
        graph_seq = next_graph_seq()
    base = graph_seq * PRIORITY_STRIDE
    out_keys = {c.key for c in outputs}
    order, executed = postorder(outputs)

    n_consumers: dict = {}
    get = n_consumers.get
    for c in order:
        ins = c.inputs
        if len(ins) == 1:
            k = ins[0].key
            n_consumers[k] = get(k, 0) + 1
        else:
            for k in {i.key for i in ins}:
                n_consumers[k] = get(k, 0) + 1

    tasks: dict = {}  # key -> Task (emitted, unless later fused into its consumer)
    memory: dict = {}
    prio: dict = {}
    boundary: dict = {}
    for i, c in enumerate(order):
        subst = {}
        ins = c.inputs
        mem = c.memory
        if mem is None:
            mem = 0.0
            nb = c.nbytes
            if nb is not None and nb == nb:
                mem += nb
            for inp in ins:
                nb = inp.nbytes
                if nb is not None and nb == nb:
                    mem += nb
        mem = int(mem)
        sticky = c.fused
        if fuse and sticky is None:
            n_pending = 0
            for inp in ins:
                if inp.future is None:
                    n_pending += 1
            linear_ok = c.blockwise or n_pending == 1
        fused = []
        for inp in ins:
            k = inp.key
            if k in subst:
                continue
            if (
                fuse
                and inp.future is None
                and inp.boundary is None
                and k not in out_keys
                and n_consumers[k] == 1
                and (k in sticky if sticky is not None else linear_ok)
            ):
                fused.append(k)
                subst[k] = tasks.pop(k)
                m = memory.pop(k)
                if m > mem:
                    mem = m
                del prio[k]
            else:
                subst[k] = TaskRef(k)
        args = [
            subst[a.key] if type(a) is Chunk else (_convert(a, subst) if type(a) in _CONTAINERS else a)
            for a in c.args
        ]
        kwargs = {k: _convert(v, subst) for k, v in c.kwargs.items()} if c.kwargs else {}
        if sticky is None:
            c.fused = frozenset(fused)
        key = c.key
        tasks[key] = Task(key, c.func, *args, **kwargs)
        memory[key] = mem
        prio[key] = -(base + i)
        if c.boundary is not None:
            boundary[key] = c.boundary

    layers: dict[str, dict] = {}
    for c in executed:
        layers.setdefault(layer_name(c.key), {})[c.key] = c.future
    for k, t in tasks.items():
        layers.setdefault(layer_name(k), {})[k] = t

    deps: dict[str, set] = {name: set() for name in layers}
    for k, t in tasks.items():
        name = layer_name(k)
        for d in t.dependencies:
            dn = layer_name(d)
            if dn != name:
                deps[name].add(dn)

    hlg_layers = {}
    for name, mapping in layers.items():
        lp = {k: prio[k] for k in mapping if k in prio}
        if lp:
            lm = {k: memory[k] for k in mapping if k in memory}
            annotations = {"priority": lp.get, "mars_memory": lm.get, "mars_tileable": name}
            lb = {k: boundary[k] for k in mapping if k in boundary}
            if lb:
                annotations["mars_boundary"] = lb.get
        else:
            annotations = None
        hlg_layers[name] = MaterializedLayer(mapping, annotations=annotations)
    return HighLevelGraph(hlg_layers, deps)


def unknown_chunks(chunks: Iterable[Chunk]) -> list[Chunk]:
    return [c for c in chunks if has_unknown(c.shape)]
