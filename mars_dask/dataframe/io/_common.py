"""Shared pieces of the readers/writers: path expansion, and the global RangeIndex / ``nrows``
step that turns per-part reads (whose lengths are unknown until read) into the frame pandas
would give for the concatenated data."""

from __future__ import annotations

import pandas as pd

from ...tiling.core import has_unknown
from ..core import frame_nsplits


def expand_paths(path, storage_options=None, *, what="files"):
    """``(fs, sorted paths)`` for a path, a glob or a list of them (fsspec, local or remote).
    Raises FileNotFoundError at build time when nothing matches."""
    from fsspec.core import get_fs_token_paths

    if hasattr(path, "__fspath__"):
        path = path.__fspath__()
    if isinstance(path, (list, tuple)):
        path = [p.__fspath__() if hasattr(p, "__fspath__") else p for p in path]
        if not path:
            raise ValueError(f"no {what} given")
    fs, _, paths = get_fs_token_paths(path, mode="rb", storage_options=storage_options)
    if not paths:
        raise FileNotFoundError(f"no {what} match {path!r}")
    for p in paths:
        if not fs.exists(p):
            raise FileNotFoundError(f"no such file: {p!r}")
    return fs, list(paths)


def file_token(fs, path):
    """Identifies a file's content version (size and modification time), for keys."""
    try:
        return fs.ukey(path)
    except Exception:  # pragma: no cover - filesystems without ukey
        return path


def set_range_index(df, start: int, name=None, step: int = 1):
    """The part with the global labels ``RangeIndex(start, start + len * step, step)``
    (no data copy)."""
    return df.set_axis(pd.RangeIndex(start, start + len(df) * step, step, name=name), axis=0)


def head_range_index(df, n: int, start, name=None, step: int = 1):
    """The first ``n`` rows of the part, relabelled from ``start`` (None: labels kept)."""
    df = df.iloc[:n]
    if start is None:
        return df
    return set_range_index(df, start, name, step)


def needs_finish(range_index: bool, nrows, nparts: int) -> bool:
    """Whether the parts need the follow-up step of :func:`finish_parts` (then the part
    chunks are intermediate: give them a ``suffix``)."""
    return nrows is not None or (range_index and nparts > 1)


def finish_parts(op, raw, *, range_index: bool, nrows=None, range_of=None):
    """Generator for ``Operand.tile``: ``return (yield from finish_parts(...))``.

    ``raw`` are the part-reading chunks (lengths possibly unknown).  With ``range_index`` the
    result carries the global ``RangeIndex(0, n)`` (each part relabelled with its offset in a
    cheap follow-up chunk); with ``nrows`` only the first ``nrows`` rows overall are kept.
    Both need the parts' lengths: unknown ones are resolved by iterative tiling (the parts
    are executed once and their data kept on the cluster).  ``range_of(total_rows)`` may
    give ``(start, step, name)`` of the global RangeIndex (default ``(0, 1, None)``).
    """
    meta = op.output.meta
    lengths = [c.shape[0] for c in raw]
    unknown = any(has_unknown((n,)) for n in lengths)
    if not needs_finish(range_index, nrows, len(raw)):
        return [(raw, frame_nsplits(meta, lengths))]
    if unknown:
        yield [c for c in raw if has_unknown(c.shape)]
        lengths = [c.shape[0] for c in raw]
    lengths = [int(n) for n in lengths]
    total = sum(lengths) if nrows is None else min(sum(lengths), nrows)
    start, step, name = range_of(total) if range_of is not None else (0, 1, None)
    out, rows = [], []
    offset = 0
    for c, n in zip(raw, lengths):
        take = n if nrows is None else max(0, min(n, nrows - offset))
        if nrows is not None and take == 0 and out:
            break
        if nrows is None or take == n:
            if range_index:
                ch = op.new_chunk(len(out), take, set_range_index, (c, start + offset * step, name, step), inputs=[c], blockwise=True)
            else:
                ch = op.new_chunk(len(out), take, _identity, (c,), inputs=[c], blockwise=True)
        else:
            ch = op.new_chunk(
                len(out), take, head_range_index, (c, take, start + offset * step if range_index else None, name, step),
                inputs=[c], blockwise=True,
            )
        out.append(ch)
        rows.append(take)
        offset += take
    return [(out, frame_nsplits(meta, rows))]


def _identity(x):
    return x


__all__: list[str] = []
