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
- ``mars_operand`` and ``mars_call`` (per-layer constants, when the session knows them): the
  operand class name of the layer's tileable and the id of the ``execute()`` call, which the
  scheduler's tileable tracking reports (``/api/mars/v1/tileables``).

The annotation names are those of ``mars_dask.plugins._protocol`` (shared with the scheduler).

Chunks that are already executed appear as their Futures (as in a persisted dask.array),
so only the new part of a graph is submitted.  Single-use chains are fused into one Task
(nested Tasks run inline), as Dask's blockwise fusion does for dask.array.  A chunk's
fusion is decided the first time it is emitted and kept: the scheduler may still hold the
key's recipe from an earlier graph, and the same key must always carry the same recipe.  So
an input inlined then is inlined again in every later emission of that key, even once it
has been executed or gained other readers (iterative tiling submits a graph in stages).

:func:`build_graph` runs in phases: :func:`postorder` (which chunks, in which order),
:func:`count_consumers` (who reads what by key), :func:`fuse_and_encode` (compact specs,
fusion) and :func:`group_into_layers` (layers, annotations).
"""

from __future__ import annotations

import time
import weakref
from typing import Iterable, Sequence

from .._dask_internals import Task, TaskRef, parse_input
from dask.highlevelgraph import HighLevelGraph, Layer, MaterializedLayer

from ..plugins import _protocol as P
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


class FusedInputs(frozenset):
    """The keys of the inputs a chunk's task inlines (``Chunk.fused``), decided when a chunk
    with that key is first emitted.

    The same expression built twice tiles into new Chunk objects with the same keys (that
    is how its data is shared); they must get the same recipe as the first ones, which the
    scheduler may still hold.  So a decision is registered by key in :data:`_decisions`
    and adopted by every Chunk with that key emitted later; the entry lives as long as some
    Chunk holds the decision (a weak reference: the registry never grows on its own).
    (No ``__slots__``: a subclass of ``frozenset`` is weakly referenceable only without.)"""


#: chunk key -> weak reference to its FusedInputs, while a Chunk holding it lives (a plain
#: dict of ``KeyedRef``s rather than a ``WeakValueDictionary``: looked up for every chunk
#: emitted the first time, where the latter's Python-level ``get`` is measurably slower)
_decisions: dict = {}


def _forget(ref: weakref.KeyedRef, decisions: dict = _decisions) -> None:
    if decisions.get(ref.key) is ref:
        del decisions[ref.key]


def _decided(key) -> FusedInputs | None:
    """The fusion decided for ``key`` by a Chunk that still lives, if any."""
    ref = _decisions.get(key)
    return None if ref is None else ref()


def _decide(key, fused: list) -> FusedInputs:
    f = FusedInputs(fused)
    _decisions[key] = weakref.KeyedRef(f, _forget, key)
    return f


def _inlined(c: Chunk, inp: Chunk) -> bool:
    """Does ``c``'s recipe, as decided when ``c`` was first emitted, inline ``inp``?

    An inlined input is recomputed inside ``c``'s task (even if it has been executed on its
    own since), so that ``c``'s key keeps its first recipe.  An input whose lineage was cut
    since (``func is None``) cannot be inlined any more and is referenced by key."""
    fused = c.fused
    return bool(fused) and inp.key in fused and inp.func is not None


def postorder(outputs: Iterable[Chunk]) -> tuple[list[Chunk], list[Chunk]]:
    """Depth-first post-order of the chunks whose recipes the graph for ``outputs`` needs.

    A Chunk not emitted before adopts the fusion decided for its key (:class:`FusedInputs`).
    Returns ``(order, executed)``: chunks whose recipes are built (inputs before consumers,
    each subtree completed before its next sibling) and the already executed chunks
    referenced by key.  A chunk is walked through (its recipe built) if it is not executed,
    or if a consumer's first recipe inlines it (see :func:`_inlined`: then it is recomputed
    inline even if executed, and only emitted as its own key if something else needs it).
    """
    order: list[Chunk] = []
    executed: list[Chunk] = []
    seen: set = set()  # walked through
    seen_executed: set = set()
    stack: list[tuple[Chunk, bool, bool]] = [(c, False, False) for c in reversed(list(outputs))]
    while stack:
        c, expanded, inline = stack.pop()
        if expanded:
            order.append(c)
            continue
        k = c.key
        if c.future is not None and not inline:
            if k not in seen_executed:
                seen_executed.add(k)
                executed.append(c)
            continue
        if k in seen:
            continue
        seen.add(k)
        if c.func is None:  # lineage cut (checkpointed): a reference by key, see Chunk.cut_lineage
            continue
        stack.append((c, True, False))
        if c.fused is None:  # first emission of this Chunk: the key's recipe may be known
            twin = _decided(k)
            if twin is not None:
                c.fused = twin
        if c.fused:
            for inp in reversed(c.inputs):
                inline = _inlined(c, inp)
                if inp.key not in seen or (not inline and inp.future is not None):
                    stack.append((inp, False, inline))
        else:
            for inp in reversed(c.inputs):
                if inp.key not in seen or inp.future is not None:
                    stack.append((inp, False, False))
    return order, executed


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


def count_consumers(order: Sequence[Chunk]) -> tuple[dict, dict]:
    """Phase 1: how many chunks of ``order`` read each key, by key and inlined.

    Returns ``(by_key, inlined)``.  A chunk may only be fused into a consumer that is its
    only reader by key in this graph (otherwise the others need its key anyway); a chunk
    no task reads by key and that is not an output is not emitted on its own (it lives
    inlined only).  ``inlined`` counts the readers whose first recipe inlines the chunk
    (:func:`_inlined`): its spec is kept until the last of them is encoded.  An inlined
    chunk's own inputs are counted when it is visited (it is in ``order`` too)."""
    n_consumers: dict = {}
    n_inlined: dict = {}
    get = n_consumers.get
    for c in order:
        ins = c.inputs
        if c.fused:
            refs = []
            for i in ins:
                if _inlined(c, i):
                    n_inlined[i.key] = n_inlined.get(i.key, 0) + 1
                else:
                    refs.append(i)
            ins = refs
        if len(ins) == 1:
            k = ins[0].key
            n_consumers[k] = get(k, 0) + 1
        else:
            for k in {i.key for i in ins}:
                n_consumers[k] = get(k, 0) + 1
    return n_consumers, n_inlined


def fuse_and_encode(
    order: Sequence[Chunk], n_consumers: dict, n_inlined: dict, out_keys: set, fuse: bool
) -> tuple[dict, dict, dict]:
    """Phase 2: each chunk's compact task spec, single-use chains fused into one task.

    A chunk's fusion is decided the first time its key is emitted and recorded in
    ``Chunk.fused`` (shared with later Chunks of that key, see :class:`FusedInputs`);
    every later emission inlines exactly those inputs again, whatever
    became of them (executed, read by new consumers, outputs, boundaries), because the
    scheduler may still hold the key's task from the earlier graph and one key must have one
    recipe (``distributed`` warns about "different run_spec" otherwise, and a dependent
    could be wired to the wrong dependencies).  A new decision fuses an input only if it is
    read by this chunk alone, is not an output or a lineage boundary, is not a ``small``
    summary of data the chunk does not read otherwise (the chunk reads other inputs too), and
    the chunk is blockwise or has just this one pending input (so no wide task recomputes a
    shared subtree).

    Returns ``(built, memory, emit)``: key -> ``(spec, deps)`` of the chunks to emit as
    their own tasks, key -> peak memory estimate (an inlined subtree's peak counts), and
    those keys -> their position in ``order`` (for priorities).  The counts of :func:`count_consumers`
    are updated as inputs get inlined; a spec nobody needs any more is dropped at once (a
    100,000-chunk graph would otherwise keep twice the objects alive and pay for it in
    garbage collections).
    """
    built: dict = {}  # key -> (spec, deps)
    memory: dict = {}
    for c in order:
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
        decided = c.fused
        if decided is None:
            fused = []
            if fuse:
                n_pending = 0
                for inp in ins:
                    if inp.future is None:
                        n_pending += 1
                linear_ok = c.blockwise or n_pending == 1
            for inp in ins:
                k = inp.key
                if k in subst:
                    continue
                if (
                    fuse
                    and linear_ok
                    and inp.future is None
                    and inp.func is not None
                    and inp.boundary is None
                    and not (inp.small and len(ins) > 1)
                    and k not in out_keys
                    and n_consumers[k] == 1
                ):
                    fused.append(k)
                    n_consumers[k] = 0
                    if n_inlined and n_inlined.get(k):
                        subst[k] = built[k]
                        m = memory[k]
                    else:  # its only reader
                        subst[k] = built.pop(k)
                        m = memory.pop(k)
                    if m > mem:
                        mem = m
                else:
                    subst[k] = None
            c.fused = _decide(c.key, fused)
        elif decided:
            for inp in ins:
                k = inp.key
                if k in subst:
                    continue
                if _inlined(c, inp):
                    subst[k] = built[k]
                    m = memory[k]
                    if m > mem:
                        mem = m
                    left = n_inlined[k] - 1
                    n_inlined[k] = left
                    if not left and not n_consumers.get(k) and not (k in out_keys and inp.future is None):
                        del built[k], memory[k]
                else:
                    subst[k] = None
        else:  # decided: nothing inlined
            for inp in ins:
                subst[inp.key] = None
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
        key = c.key
        built[key] = ((key, c.func, args, kinds, kwargs), deps)
        memory[key] = mem
    # a chunk gets its own task if it is an output or read by key, and not executed (an
    # executed chunk in ``order`` was walked through only to be recomputed inline)
    emit = {}
    for i, c in enumerate(order):
        k = c.key
        if (k in out_keys or n_consumers.get(k)) and c.future is None:
            emit[k] = i
    return built, memory, emit


def operand_of(name: str, operands: dict) -> str | None:
    """The operand class name of layer ``name``: its tileable's, or for a layer of
    intermediate chunks named after a tileable (``<tileable key>-map``) that tileable's."""
    for _ in range(3):
        op = operands.get(name)
        if op is not None or "-" not in name:
            return op
        name = name.rsplit("-", 1)[0]
    return None


def group_into_layers(
    order: Sequence[Chunk], executed: Sequence[Chunk], built: dict, memory: dict, emit: dict, base: int,
    *, call: str | None = None, operands: dict | None = None,
) -> HighLevelGraph:
    """Phase 3: one annotated ``ChunkLayer`` per tileable, and the layers' dependencies.

    One layer per tileable keeps ``mars_tileable`` a constant per layer and lets Dask see
    the tileable graph (its ``HighLevelGraph`` dependencies).  Priorities follow the
    post-order (``-(base + position)``).  A dependency on a chunk referenced by key only
    (lineage cut, data gone) has no layer: the scheduler's failover journal supplies its
    recipe.  ``call`` (the ``execute()`` call's id) and ``operands`` (tileable key ->
    operand class name) become the per-layer constants ``mars_call`` / ``mars_operand``."""
    boundary = {c.key: c.boundary for c in order if c.boundary is not None}
    by_layer: dict[str, tuple[dict, dict]] = {}
    for c in executed:
        by_layer.setdefault(layer_name(c.key), ({}, {}))[1][c.key] = c.future
    layer_deps: dict[str, set] = {}
    for k in emit:
        spec, deps = built[k]
        name = layer_name(k)
        by_layer.setdefault(name, ({}, {}))[0][k] = spec
        ld = layer_deps.setdefault(name, set())
        for d in deps:
            dn = layer_name(d)
            if dn != name:
                ld.add(dn)
    for ld in layer_deps.values():
        ld.intersection_update(by_layer)
    hlg_layers = {}
    for name, (lspecs, lfutures) in by_layer.items():
        if lspecs:
            lp = {k: -(base + emit[k]) for k in lspecs}
            lm = {k: memory[k] for k in lspecs}
            annotations = {"priority": lp.get, P.ANN_MEMORY: lm.get, P.ANN_TILEABLE: name}
            op = operand_of(name, operands) if operands else None
            if op is not None:
                annotations[P.ANN_OPERAND] = op
            if call is not None:
                annotations[P.ANN_CALL] = call
            lb = {k: boundary[k] for k in lspecs if k in boundary}
            if lb:
                annotations[P.ANN_BOUNDARY] = lb.get
        else:
            annotations = None
        hlg_layers[name] = ChunkLayer(lspecs, lfutures, annotations=annotations)
    return HighLevelGraph(hlg_layers, {name: layer_deps.get(name, set()) for name in hlg_layers})


def build_graph(
    outputs: Sequence[Chunk], *, fuse: bool = True, graph_seq: int | None = None,
    call: str | None = None, operands: dict | None = None,
) -> HighLevelGraph:
    """The ``HighLevelGraph`` computing ``outputs`` (chunks), with Mars annotations.

    ``fuse`` applies to chunks emitted for the first time; a chunk emitted before keeps the
    fusion it had (see :func:`fuse_and_encode`).  ``call`` / ``operands``: see
    :func:`group_into_layers`."""
    if graph_seq is None:
        graph_seq = next_graph_seq()
    out_keys = {c.key for c in outputs}
    order, executed = postorder(outputs)
    n_consumers, n_inlined = count_consumers(order)
    built, memory, emit = fuse_and_encode(order, n_consumers, n_inlined, out_keys, fuse)
    return group_into_layers(order, executed, built, memory, emit, graph_seq * PRIORITY_STRIDE,
                             call=call, operands=operands)
