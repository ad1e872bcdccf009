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
from dask.highlevelgraph import HighLevelGraph, Layer, MaterializedLayer

from .core import Chunk

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
        if c.func is None:  # lineage cut (checkpointed): a reference by key, see Chunk.cut_lineage
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

# A task is kept as a compact *spec* until the layer is materialized (on the scheduler):
# ``(key, func, args, kinds, kwargs)``.  ``kinds`` is None when every argument is a constant,
# else one code per argument: 0 constant, 1 reference to a key (the value is the key),
# 2 an inlined (fused) spec, 3 a list/tuple holding references (value: (type, kinds,
# values)), 4 a dict holding references (value: (keys, kinds, values)).  ``kwargs`` is None
# or ``(names, kinds, values)``.  Plain tuples pickle at C speed; task-spec objects do not,
# and a 100,000-chunk graph spends most of its submission time pickling them.
_CONST, _REF, _INLINE, _SEQ, _DICT = range(5)


def _has_chunk(obj) -> bool:
    t = type(obj)
    if t is Chunk:
        return True
    if t is dict:
        return any(_has_chunk(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return any(type(o) is Chunk or (type(o) in _CONTAINERS and _has_chunk(o)) for o in obj)
    return False


def _encode_seq(values, subst: dict, deps: set) -> tuple[tuple | None, tuple]:
    """Encode a sequence of arguments: (kinds or None, values)."""
    kinds = None
    out = list(values)
    for i, v in enumerate(values):
        t = type(v)
        if t is Chunk:
            kind, out[i] = _encode_chunk(v, subst, deps)
        elif t in _CONTAINERS and _has_chunk(v):
            if t is dict:
                ks = tuple(v)
                ck, cv = _encode_seq([v[k] for k in ks], subst, deps)
                kind, out[i] = _DICT, (ks, ck, cv)
            else:
                ck, cv = _encode_seq(v, subst, deps)
                kind, out[i] = _SEQ, (t, ck, cv)
        else:
            continue
        if kinds is None:
            kinds = [_CONST] * len(out)
        kinds[i] = kind
    return (tuple(kinds) if kinds is not None else None), tuple(out)


def _encode_chunk(c: Chunk, subst: dict, deps: set):
    s = subst[c.key]
    if s is None:
        deps.add(c.key)
        return _REF, c.key
    spec, sdeps = s
    deps.update(sdeps)
    return _INLINE, spec


def _decode_seq(kinds, values) -> list:
    if kinds is None:
        return list(values)
    out = []
    for kind, v in zip(kinds, values):
        if kind == _CONST:
            out.append(v)
        elif kind == _REF:
            out.append(TaskRef(v))
        elif kind == _INLINE:
            out.append(spec_to_task(v))
        elif kind == _SEQ:
            typ, ck, cv = v
            out.append(parse_input(typ(_decode_seq(ck, cv))))
        else:
            ks, ck, cv = v
            out.append(parse_input(dict(zip(ks, _decode_seq(ck, cv)))))
    return out


def spec_to_task(spec) -> Task:
    """The task-spec ``Task`` of a compact spec (nested specs become nested Tasks)."""
    key, func, args, kinds, kwargs = spec
    if kwargs is None:
        return Task(key, func, *_decode_seq(kinds, args))
    names, kk, kv = kwargs
    return Task(key, func, *_decode_seq(kinds, args), **dict(zip(names, _decode_seq(kk, kv))))


class ChunkLayer(MaterializedLayer):
    """One tileable's tasks as compact specs (plus Futures of executed chunks), turned into
    task-spec Tasks only when the graph is materialized, i.e. on the scheduler."""

    def __init__(self, specs: dict, futures: dict, annotations=None):
        Layer.__init__(self, annotations=annotations)
        self.specs = specs
        self.futures = futures
        self._mapping = None

    @property
    def mapping(self) -> dict:
        if self._mapping is None:
            m = dict(self.futures)
            for k, spec in self.specs.items():
                m[k] = spec_to_task(spec)
            self._mapping = m
        return self._mapping

    def __contains__(self, k):
        return k in self.specs or k in self.futures

    def __iter__(self):
        yield from self.futures
        yield from self.specs

    def __len__(self):
        return len(self.specs) + len(self.futures)

    def get_output_keys(self):
        return set(self.specs) | set(self.futures)

    def __reduce__(self):
        return ChunkLayer, (self.specs, self.futures, self.annotations)


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

    specs: dict = {}  # key -> (spec, deps) emitted, unless later fused into its consumer
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
                and inp.func is not None
                and k not in out_keys
                and n_consumers[k] == 1
                # a recipe once emitted stays (even if the input became a boundary later)
                and (k in sticky if sticky is not None else (inp.boundary is None and linear_ok))
            ):
                fused.append(k)
                subst[k] = specs.pop(k)
                m = memory.pop(k)
                if m > mem:
                    mem = m
                del prio[k]
            else:
                subst[k] = None
        deps: set = set()
        if ins:
            kinds, args = _encode_seq(c.args, subst, deps)
        else:  # a source chunk: its arguments are all constants
            kinds, args = None, c.args
        kwargs = None
        if c.kwargs:
            names = tuple(c.kwargs)
            kk, kv = _encode_seq([c.kwargs[n] for n in names], subst, deps)
            kwargs = (names, kk, kv)
        if sticky is None:
            c.fused = frozenset(fused)
        key = c.key
        specs[key] = ((key, c.func, args, kinds, kwargs), deps)
        memory[key] = mem
        prio[key] = -(base + i)
        if c.boundary is not None:
            boundary[key] = c.boundary

    by_layer: dict[str, tuple[dict, dict]] = {}
    for c in executed:
        by_layer.setdefault(layer_name(c.key), ({}, {}))[1][c.key] = c.future
    layer_deps: dict[str, set] = {}
    for k, (spec, deps) in specs.items():
        name = layer_name(k)
        by_layer.setdefault(name, ({}, {}))[0][k] = spec
        ld = layer_deps.setdefault(name, set())
        for d in deps:
            dn = layer_name(d)
            if dn != name:
                ld.add(dn)

    hlg_layers = {}
    # a dependency on a chunk referenced by key only (lineage cut, data gone) has no layer:
    # the scheduler's failover journal supplies its recipe
    for ld in layer_deps.values():
        ld.intersection_update(by_layer)
    for name, (lspecs, lfutures) in by_layer.items():
        if lspecs:
            lp = {k: prio[k] for k in lspecs}
            lm = {k: memory[k] for k in lspecs}
            annotations = {"priority": lp.get, "mars_memory": lm.get, "mars_tileable": name}
            lb = {k: boundary[k] for k in lspecs if k in boundary}
            if lb:
                annotations["mars_boundary"] = lb.get
        else:
            annotations = None
        hlg_layers[name] = ChunkLayer(lspecs, lfutures, annotations=annotations)
    return HighLevelGraph(hlg_layers, {name: layer_deps.get(name, set()) for name in hlg_layers})
