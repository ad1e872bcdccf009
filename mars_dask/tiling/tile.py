"""The tiling driver: tile every operand reachable from some tileables, inputs first.

Operands whose ``tile`` is a generator may ``yield`` chunks whose real shapes they need
(after a boolean filter, ``unique``, ...).  The driver hands those to ``run_for_meta``
(supplied by the session: it executes the chunks on the cluster, keeps their futures so the
work is never repeated, and writes their shapes back) and resumes tiling.  This is how
Mars tiles unknown shapes iteratively, and what spares users dask.array's
``compute_chunk_sizes()``.
"""

from __future__ import annotations

import itertools
import types
from typing import Callable, Iterable

from ..errors import TilingError
from .core import Chunk, TileableData

RunForMeta = Callable[[list[Chunk]], None]


def walk_tileables(tileables: Iterable[TileableData], *, stop_at_tiled: bool = True) -> list[TileableData]:
    """Tileables reachable from ``tileables`` in dependency order (inputs first).

    With ``stop_at_tiled`` the walk does not go behind tileables that are already tiled.
    Iterative, so a chain of thousands of operations does not hit the recursion limit.
    """
    order: list[TileableData] = []
    seen: set[int] = set()
    stack: list[tuple[TileableData, bool]] = [(t, False) for t in reversed(list(tileables))]
    while stack:
        t, expanded = stack.pop()
        if expanded:
            order.append(t)
            continue
        if id(t) in seen:
            continue
        seen.add(id(t))
        stack.append((t, True))
        if stop_at_tiled and t.is_tiled:
            continue
        for inp in reversed(t.inputs):
            if id(inp) not in seen:
                stack.append((inp, False))
    return order


def tile(tileables: Iterable[TileableData], run_for_meta: RunForMeta | None) -> None:
    """Tile everything reachable from ``tileables`` that is not tiled yet."""
    for t in walk_tileables(tileables):
        if not t.is_tiled:
            _tile_op(t, run_for_meta)


def _tile_op(t: TileableData, run_for_meta: RunForMeta | None) -> None:
    op = t.op
    result = op.tile()
    if isinstance(result, types.GeneratorType):
        result = _drive(result, run_for_meta, op)
    outputs = op.outputs
    if len(result) != len(outputs):
        raise TilingError(f"{type(op).__name__}.tile returned {len(result)} outputs, expected {len(outputs)}")
    for out, (chunks, nsplits) in zip(outputs, result):
        if out is not None:
            out.set_chunks(_at_their_place(out, chunks, nsplits), nsplits)
    if not t.is_tiled:  # pragma: no cover - defensive
        raise TilingError(f"{type(op).__name__} did not tile {t!r}")


def _same(x):
    return x


def _at_their_place(out: TileableData, chunks: list, nsplits) -> list:
    """``chunks`` (in C order of the grid) with each one's ``index`` equal to its position.

    An operand may hand an input's chunk on unchanged (``concatenate`` does, and slicing along
    chunk boundaries), but that chunk's ``index`` is its place in the input: an operand
    downstream that keys or places its own chunks by ``c.index`` would then make two chunks
    with one key, silently wrong (``sort(concatenate([a, b]), axis=1)`` returned a row twice).
    Such a chunk is put behind an identity chunk at its place in ``out``: blockwise, so the
    emitter fuses it into a blockwise consumer (free), else one trivial task."""
    fixed = None
    for i, idx in enumerate(itertools.product(*(range(len(s)) for s in nsplits))):
        c = chunks[i]
        if tuple(c.index) != idx:
            if fixed is None:
                fixed = list(chunks)
            fixed[i] = Chunk((out.key, *idx), idx, c.shape, _same, (c,), inputs=(c,), nbytes=c.nbytes,
                             memory=c.nbytes if c.nbytes == c.nbytes else None, blockwise=True)
    return chunks if fixed is None else fixed


def _drive(gen: types.GeneratorType, run_for_meta: RunForMeta | None, op) -> list:
    try:
        request = next(gen)
        while True:
            if run_for_meta is None:
                raise TilingError(
                    f"{type(op).__name__} needs shapes that are only known after execution; "
                    "tile it within a session (execute() or a distributed Client)"
                )
            run_for_meta(list(request))
            request = gen.send(None)
    except StopIteration as stop:
        return stop.value
