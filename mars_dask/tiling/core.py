"""The two graphs of Mars: tileables (what the user builds) and chunks (what runs).

A :class:`TileableData` is produced by an :class:`Operand` from input tileables.  It knows
its metadata (shape, possibly with ``nan`` for unknown lengths) but not its chunks until
the operand is *tiled*.  ``Operand.tile()`` returns, for each output, its chunks (in C order
of the chunk grid) and ``nsplits`` (the chunk lengths along each axis).

A :class:`Chunk` is one node of the chunk graph: a plain kernel ``func(*args, **kwargs)``
over numpy/pandas objects, where ``args``/``kwargs`` may hold other chunks (its inputs),
nested in lists, tuples or dicts.  Chunks are emitted as Dask task-spec Tasks
(see :mod:`mars_dask.tiling.emit`).

Ownership avoids reference cycles on purpose: a tileable holds its operand, the operand
holds its inputs and only weak references to its outputs, chunks hold their input chunks.
So dropping the user's last reference to a tileable frees its chunks and with them the
Dask futures that keep executed data alive (Mars's lifecycle = Dask's refcount).
"""

from __future__ import annotations

import itertools
import math
import uuid
import weakref
from typing import Any, Callable, Iterable, Sequence

from dask.base import tokenize


def new_key(prefix: str, *parts) -> str:
    """A deterministic key for an operand: the same inputs and parameters give the same
    key, so executing the same expression twice reuses data on the cluster."""
    return f"{prefix}-{tokenize(*parts)}"


def random_key(prefix: str) -> str:
    """A key that is unique whatever the inputs (for non-deterministic operands)."""
    return f"{prefix}-{uuid.uuid4().hex}"


class Chunk:
    """A node of the chunk graph.

    ``key`` is the Dask key (``(tileable_key, *index)``), ``index`` its position in the chunk
    grid, ``shape`` its shape (``nan`` where unknown until executed), ``memory`` its
    estimated peak memory in bytes (inputs + output + temporaries) used for quota admission.
    ``blockwise`` says the kernel maps aligned blocks of its inputs one to one, so the
    emitter may fuse all of its single-use inputs into it.  ``future`` is set once the
    chunk's data lives on the cluster.  ``fused`` remembers which inputs the emitter
    inlined the first time, so a re-submitted key always carries the same recipe (those
    inputs are inlined again, recomputed inside this task, even if they were executed or
    gained other consumers since).
    ``boundary`` marks outputs that cut lineage (shuffle map outputs): they are emitted as
    their own keys, annotated ``mars_boundary``, so failover can checkpoint them.
    ``small`` marks a chunk whose output is small next to its input (a chunk's edge rows or
    summary for its neighbour): it is never inlined into a task that reads other data too,
    or that task would fetch the whole input from wherever it is instead of the small output.
    """

    __slots__ = (
        "key",
        "index",
        "shape",
        "func",
        "args",
        "kwargs",
        "inputs",
        "memory",
        "blockwise",
        "_future",
        "nbytes",
        "fused",
        "boundary",
        "small",
        "__weakref__",
    )

    def __init__(
        self,
        key,
        index: tuple,
        shape: tuple,
        func: Callable | None,
        args: tuple = (),
        kwargs: dict | None = None,
        *,
        inputs: Sequence[Chunk] | None = None,
        memory: int | None = None,
        nbytes: float | None = None,
        blockwise: bool = False,
    ):
        self.key = key
        self.index = index
        self.shape = shape
        self.func = func
        self.args = args
        self.kwargs = kwargs or {}
        if inputs is None:
            inputs = find_chunks((args, self.kwargs))
        self.inputs = inputs if type(inputs) is tuple else tuple(inputs)
        self.nbytes = nbytes
        self.memory = memory
        self.blockwise = blockwise
        self._future = None
        self.fused = None  # input keys inlined into this chunk's task when first emitted
        self.boundary = None  # e.g. "shuffle": a lineage boundary, never fused, checkpointable
        self.small = False  # see the class notes

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def future(self):
        """The Future of the chunk's data on the cluster, or None. After an ``execute()``
        the session keeps only a weak reference here (see :meth:`weaken`): the data then
        lives as long as a tileable handle pins it, so the inputs an executed result was
        computed from do not keep theirs alive through this chunk graph."""
        f = self._future
        if type(f) is weakref.ref:
            f = f()
            if f is None:
                self._future = None
        return f

    @future.setter
    def future(self, f) -> None:
        self._future = f

    def weaken(self) -> None:
        if self._future is not None and type(self._future) is not weakref.ref:
            self._future = weakref.ref(self._future)

    @property
    def lineage_on_scheduler(self) -> bool:
        """True after :meth:`cut_lineage`: the chunk can only be referenced by key."""
        return self.func is None

    def cut_lineage(self) -> None:
        """Forget how this chunk was computed (it was checkpointed): its recipe now lives
        in the scheduler's lineage journal, which reads the checkpoint back when needed.
        Emitted graphs refer to it by key only once its Future is gone."""
        self.func = None
        self.args = ()
        self.kwargs = {}
        self.inputs = ()
        self.fused = frozenset()

    def __repr__(self) -> str:
        return f"Chunk({self.key!r}, shape={self.shape})"


_CONTAINERS = (list, tuple, dict)


def find_chunks(obj) -> list[Chunk]:
    """Chunks referenced by ``obj`` (a chunk, or lists/tuples/dicts holding chunks)."""
    found: list[Chunk] = []
    stack = [obj]
    while stack:
        o = stack.pop()
        t = type(o)
        if t is Chunk:
            found.append(o)
        elif t is dict:
            stack.extend(v for v in o.values() if type(v) is Chunk or isinstance(v, _CONTAINERS))
        elif isinstance(o, (list, tuple)):
            stack.extend(v for v in o if type(v) is Chunk or isinstance(v, _CONTAINERS))
    found.reverse()
    return found


# Grows whenever chunks get (or lose) data on the cluster; an emitted graph stays valid while
# it is unchanged (see Tileable.__dask_graph__'s cache).
execution_epoch = [0]


def bump_execution_epoch() -> None:
    execution_epoch[0] += 1


def has_unknown(shape) -> bool:
    return any(isinstance(s, float) and math.isnan(s) for s in shape)


class TileableData:
    """Metadata of a lazy result plus, once tiled, its chunk layout.

    ``shape`` may contain ``nan`` for lengths only known after execution; ``nsplits`` is a
    tuple (one per axis) of chunk lengths, ``nan`` where unknown.
    """

    __slots__ = ("key", "op", "shape", "chunks", "_nsplits", "_strides", "output_index", "_pins", "__weakref__")

    def __init__(self, op: Operand | None, shape: tuple, key: str, output_index: int = 0):
        self.op = op
        self._pins = None
        self.shape = tuple(shape)
        self.key = key
        self.chunks: list[Chunk] | None = None
        self._nsplits: tuple | None = None
        self._strides: tuple = ()
        self.output_index = output_index

    @property
    def nsplits(self) -> tuple | None:
        return self._nsplits

    @nsplits.setter
    def nsplits(self, value) -> None:
        self._nsplits = value
        strides = []
        n = 1
        for s in reversed(value or ()):
            strides.append(n)
            n *= len(s)
        self._strides = tuple(reversed(strides))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def inputs(self) -> list[TileableData]:
        return list(self.op.inputs) if self.op is not None else []

    @property
    def is_tiled(self) -> bool:
        return self.chunks is not None

    @property
    def is_executed(self) -> bool:
        return self.chunks is not None and all(c.future is not None for c in self.chunks)

    def pin(self) -> None:
        """Hold the Futures of this tileable's chunks (see :meth:`seal`)."""
        self._pins = [c.future for c in self.chunks] if self.chunks is not None else None

    def seal(self) -> None:
        """After ``execute()``: this tileable holds its results (``pin``), its chunks hold
        them only weakly and it lets go of its input tileables. So the results live exactly
        as long as this tileable (its handle, or a lazy tileable built on it), and
        ``x = f(x).execute()`` frees the previous ``x``: the new chunks still name the old
        ones as inputs (lineage, for rebuilding lost data), but no longer keep them alive."""
        self.pin()
        for c in self.chunks:
            c.weaken()
        if self.op is not None:
            self.op.inputs = []

    @property
    def chunk_shape(self) -> tuple:
        return tuple(len(s) for s in self.nsplits)

    def set_chunks(self, chunks: list[Chunk], nsplits: Sequence[Sequence]) -> None:
        self.chunks = list(chunks)
        self.nsplits = tuple(tuple(s) for s in nsplits)
        if has_unknown(self.shape) and not any(has_unknown(s) for s in self.nsplits):
            self.shape = tuple(sum(s) for s in self.nsplits)

    def chunk_at(self, index: tuple) -> Chunk:
        """The chunk at grid position ``index`` (chunks are stored in C order)."""
        return self.chunks[sum(i * s for i, s in zip(index, self._strides))]

    def chunk_grid(self) -> Iterable[tuple]:
        """All chunk grid indices in C order."""
        return itertools.product(*(range(len(s)) for s in self.nsplits))

    def refresh_nsplits(self) -> None:
        """Recompute ``nsplits`` and ``shape`` from the chunks' (now known) shapes."""
        nsplits = []
        for ax, splits in enumerate(self.nsplits):
            new = []
            for i in range(len(splits)):
                idx = tuple(i if a == ax else 0 for a in range(len(self.nsplits)))
                new.append(self.chunk_at(idx).shape[ax])
            nsplits.append(tuple(new))
        self.nsplits = tuple(nsplits)
        if not any(has_unknown(s) for s in self.nsplits):
            self.shape = tuple(sum(s) for s in self.nsplits)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.key!r}, shape={self.shape})"


class Operand:
    """An operation from input tileables to output tileables.

    Subclasses set ``_op_name`` and implement :meth:`tile`, which returns one
    ``(chunks, nsplits)`` pair per output.  ``tile`` may be a generator: ``yield chunks``
    asks the engine to execute those chunks first and fill in their real shapes (Mars's
    iterative tiling for unknown shapes); tiling then resumes.  See :func:`ensure_known`.
    """

    _op_name = "op"

    def __init__(self, inputs: Sequence[TileableData] = (), **params: Any):
        self.inputs = list(inputs)
        self.params = params
        self._outputs: list[weakref.ref] = []
        # parameters become plain attributes (fast in tile loops) unless a name is taken
        cls = type(self)
        for k, v in params.items():
            if not hasattr(cls, k) and k not in ("inputs", "params", "_outputs"):
                self.__dict__[k] = v

    def __getattr__(self, item):
        # parameters read as attributes: op.axis, op.dtype, ...
        params = self.__dict__.get("params")
        if params is not None and item in params:
            return params[item]
        raise AttributeError(item)

    @property
    def outputs(self) -> list[TileableData | None]:
        return [r() for r in self._outputs]

    def add_output(self, data: TileableData) -> TileableData:
        data.output_index = len(self._outputs)
        self._outputs.append(weakref.ref(data))
        return data

    @property
    def output(self):
        return self.outputs[0]

    def make_key(self) -> str:
        """Deterministic key from the operand type, inputs' keys and parameters: the same
        expression built twice gets the same key, so its data is shared on the cluster."""
        return new_key(
            self._op_name,
            type(self).__name__,
            [getattr(i, "key", i) for i in self.inputs],
            tokenize_params(self.params),
        )

    def output_key(self, i: int = 0) -> str:
        """Key of output ``i`` (valid even if the user dropped that output)."""
        ref = self._outputs[i]()
        if ref is not None:
            return ref.key
        first = next(r() for r in self._outputs if r() is not None)
        base = first.key.rsplit("-", 1)[0] if len(self._outputs) > 1 else first.key
        return f"{base}-{i}"

    def tile(self):  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__}.tile")


def _key_of(v):
    """Tileables (handles or data) in operand parameters are identified by their key."""
    k = getattr(v, "key", None)
    return k if isinstance(k, str) and hasattr(v, "op") else v


def tokenize_params(params: dict) -> Any:
    out = []
    for k in sorted(params):
        v = params[k]
        if isinstance(v, (list, tuple)):
            v = [_key_of(x) for x in v]
        else:
            v = _key_of(v)
        out.append((k, v))
    return out


def ensure_known(*tileables: TileableData):
    """Generator for use inside ``Operand.tile``: ``yield from ensure_known(a, b)``.

    If any chunk of the given (already tiled) tileables has an unknown shape, the chunks
    are handed to the engine, which executes them and fills in their shapes; afterwards
    every tileable's ``nsplits`` and ``shape`` are known.
    """
    need = [c for t in tileables for c in t.chunks if has_unknown(c.shape)]
    if need:
        yield need
    for t in tileables:
        if any(has_unknown(s) for s in t.nsplits):  # shapes may have been learnt elsewhere
            t.refresh_nsplits()
