"""``memory_hint``: tell quota admission how much memory each chunk of a tileable needs.

Tiling estimates a chunk's peak as its inputs plus its output; a kernel with large
temporaries (a user function, a sort, an outer product) needs more. The hint replaces the
estimate of every chunk of the tileable (the scheduler still refines it from what the
first chunks really use).
"""

from __future__ import annotations

from dask.utils import parse_bytes


def memory_hint(tileable, bytes_per_chunk):
    """Set the memory estimate of every chunk of ``tileable`` (bytes, or a string such as
    ``"1.5GiB"``) and return the tileable. Tiles it if needed (without executing anything
    unless its shape depends on data)."""
    from ..session import get_session
    from ..tiling.tile import tile

    nbytes = parse_bytes(bytes_per_chunk) if isinstance(bytes_per_chunk, str) else int(bytes_per_chunk)
    if nbytes < 0:
        raise ValueError(f"bytes_per_chunk must be >= 0, got {bytes_per_chunk!r}")
    data = getattr(tileable, "data", tileable)
    if not data.is_tiled:
        tile([data], lambda chunks: get_session().run_for_meta(chunks))
    for c in data.chunks:
        if c.future is None:
            c.memory = nbytes
    return tileable
