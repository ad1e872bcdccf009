"""Shared pieces of the readers/writers: path expansion, the global RangeIndex / ``nrows``
step that turns per-part reads (whose lengths are unknown until read) into the frame pandas
would give for the concatenated data, and atomic, idempotent file writes.

Writes (``to_csv`` / ``to_parquet``)
------------------------------------
A write task may run more than once (failover re-runs a task whose worker died, a worker
may be killed in the middle of a write), so every file is written by :func:`atomic_write`:
to a temporary name in the destination directory, ``.<name>.tmp-<pid>-<8 hex>`` (unique per
attempt; hidden, and not ending with the output's extension, so ``read_csv("dir/*.csv")``
and ``read_parquet(dir)`` never read it), then renamed over ``<name>``.  The same chunk
always writes the same final name, so a re-run replaces the file with identical content,
and a reader sees either no file or a complete one, never a torn one.  A write that raises
removes its temporary; one that is killed leaves it, and the clean-up job that
:func:`execute_writes` runs after the writes (also when they failed) removes the stale
temporaries of every output it wrote (``remove_stale``), whoever left them.

The rename: on the local filesystem ``os.replace`` (atomic; the data is ``fsync``-ed
first).  On other fsspec filesystems ``fs.mv`` (atomic where the filesystem renames
atomically; on object stores it is a server-side copy, and objects appear whole anyway).  A
filesystem with no ``mv``/copy (``NotImplementedError``) gets the temporary's bytes
streamed to the final name, as writes went before: not atomic there.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import warnings

import pandas as pd

from ...tiling.core import has_unknown, random_key
from ..core import DataFrameOperand, frame_nsplits, nan


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
    if any(ch in p for p in (path if isinstance(path, list) else [path]) for ch in "*?["):
        # a glob: never the temporaries or parts of a write in progress (fsspec's ``*``
        # matches hidden names, unlike Python's glob and pyarrow's dataset discovery)
        paths = [p for p in paths if not is_write_temporary(split_path(p)[1])]
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
    except Exception:  # noqa: BLE001 - any ukey failure: key on the path  # pragma: no cover - filesystems without ukey
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


# ---- atomic, idempotent writes --------------------------------------------------------------

_TMP_RE = re.compile(r"^\.(?P<name>.+)\.tmp-(?P<pid>\d+)-(?P<rand>[0-9a-f]{8})$")
_PART_RE = re.compile(r"^\.(?P<name>.+)\.part-(?P<token>[0-9a-f]{12})-(?P<i>\d{6})$")


def split_path(path: str) -> tuple[str, str]:
    """``(parent, name)`` of an fsspec path (``/``-separated)."""
    path = path.rstrip("/")
    if "/" not in path:
        return ".", path
    parent, name = path.rsplit("/", 1)
    return parent or "/", name


def join_path(parent: str, name: str) -> str:
    return name if parent == "." else f"{parent.rstrip('/')}/{name}"


def temp_path(path: str) -> str:
    """A fresh temporary name for writing ``path``: ``<dir>/.<name>.tmp-<pid>-<8 hex>``."""
    parent, name = split_path(path)
    return join_path(parent, f".{name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")


def part_path(path: str, token: str, i: int) -> str:
    """The hidden part ``i`` of single-file output ``path`` written by the job ``token``
    (12 hex digits): ``<dir>/.<name>.part-<token>-<i:06d>``."""
    parent, name = split_path(path)
    return join_path(parent, f".{name}.part-{token}-{i:06d}")


def is_local(fs) -> bool:
    from fsspec.implementations.local import LocalFileSystem

    return isinstance(fs, LocalFileSystem)


def _quiet_rm(fs, path) -> None:
    try:
        if is_local(fs):
            os.remove(path)
        else:
            fs.rm_file(path)
    except FileNotFoundError:
        pass
    except Exception:  # noqa: BLE001,S110 - best effort: the clean-up job tries again
        pass


def replace_file(fs, src: str, dst: str) -> None:
    """Rename ``src`` over ``dst`` (see the module doc for what that means per filesystem)."""
    if is_local(fs):
        os.replace(src, dst)
        return
    try:
        fs.mv(src, dst)
    except NotImplementedError:
        with fs.open(src, "rb") as fi, fs.open(dst, "wb") as fo:
            shutil.copyfileobj(fi, fo, 1 << 20)
        _quiet_rm(fs, src)
    fs.invalidate_cache(split_path(dst)[0])


@contextlib.contextmanager
def atomic_write(fs, path: str):
    """``with atomic_write(fs, path) as f:`` -- write the bytes of ``path`` to ``f`` (a
    binary file on a fresh temporary name, see :func:`temp_path`); when the block ends
    normally the file is closed (``fsync``-ed on the local filesystem) and renamed over
    ``path``; when it raises, the temporary is removed and nothing changes under ``path``."""
    tmp = temp_path(path)
    local = is_local(fs)
    f = open(tmp, "xb") if local else fs.open(tmp, "wb")  # noqa: SIM115 - closed below, before the rename
    try:
        yield f
        if local:
            f.flush()
            os.fsync(f.fileno())
        f.close()
        replace_file(fs, tmp, path)
    except BaseException:
        with contextlib.suppress(Exception):
            discard = getattr(f, "discard", None)  # fsspec buffered files: abort the upload
            if discard is not None and not local:
                discard()
            f.close()
        _quiet_rm(fs, tmp)
        raise


def _listdir(fs, parent: str) -> list[str]:
    if is_local(fs):
        try:
            return os.listdir(parent)
        except FileNotFoundError:
            return []
    try:
        fs.invalidate_cache(parent)
        return [split_path(p)[1] for p in fs.ls(parent, detail=False)]
    except FileNotFoundError:
        return []


def is_write_temporary(entry: str) -> bool:
    """Whether a file name is a temporary or a part of a write (``to_csv``/``to_parquet``)."""
    return _TMP_RE.match(entry) is not None or _PART_RE.match(entry) is not None


def is_stale(entry: str, names, parts: bool = False) -> bool:
    """Whether directory entry ``entry`` is a temporary of one of the outputs ``names``
    (``parts``: or a part of a single-file output, or a part's temporary)."""
    m = _TMP_RE.match(entry)
    if m is not None:
        name = m["name"]
        if name in names:
            return True
        entry = name  # a part's temporary: ".<part>.tmp-..."
        if not parts:
            return False
    if parts:
        p = _PART_RE.match(entry)
        return p is not None and p["name"] in names
    return False


def remove_stale(fs, targets: dict) -> pd.Series:
    """Remove the temporaries (and, for single-file outputs, the parts) of the outputs in
    ``targets``: ``{parent: (names, parts)}``.  Returns ``Series([number removed])``."""
    n = 0
    for parent, (names, parts) in targets.items():
        names = set(names)
        for entry in _listdir(fs, parent):
            if is_stale(entry, names, parts):
                _quiet_rm(fs, join_path(parent, entry))
                n += 1
    return pd.Series([n], dtype="int64")


def stale_targets(paths, parts: bool = False) -> dict:
    """``targets`` for :func:`remove_stale` from a list of output paths."""
    out: dict = {}
    for p in paths:
        parent, name = split_path(p)
        out.setdefault(parent, (set(), parts))[0].add(name)
    return {k: (sorted(v[0]), v[1]) for k, v in out.items()}


class _WriteOp(DataFrameOperand):
    """Writes every chunk of its input; its output chunks are Series of written paths (the
    writer may put intermediate steps before them)."""

    _op_name = "write"

    def __init__(self, data, writer):
        super().__init__([data], writer=writer)

    def tile(self):
        (inp,) = self.inputs
        chunks = self.writer(self, inp.chunks)
        return [(chunks, (tuple(c.shape[0] for c in chunks),))]


class _RemoveStaleOp(DataFrameOperand):
    """One task on a worker: :func:`remove_stale`."""

    _op_name = "write-cleanup"

    def __init__(self, fs, targets):
        super().__init__([])
        self.fs = fs
        self.targets = targets

    def tile(self):
        c = self.new_chunk(0, 1, remove_stale, (self.fs, self.targets), meta=pd.Series([], dtype="int64"))
        return [([c], ((1,),))]


def run_cleanup(fs, targets: dict) -> int:
    """Run :func:`remove_stale` on the cluster (the workers see the output's filesystem);
    returns the number of entries removed."""
    if not targets:
        return 0
    op = _RemoveStaleOp(fs, targets)
    out = op.new_output(pd.Series([], dtype="int64"), 1, key=random_key("write-cleanup"))
    out.execute()
    return int(out.fetch().sum())


def execute_writes(data, writer, name, cleanup=None) -> list:
    """Build the write operand over ``data`` and execute it now; returns the written paths.

    ``cleanup``: a function giving ``(fs, targets)`` for :func:`remove_stale` (called after
    tiling: the writer may collect the paths), run as a job of its own once the writes are
    done (or failed).  The write tasks themselves never delete anything, so a write task
    re-run by failover always finds the files that its inputs name."""
    op = _WriteOp(data, writer)
    op._op_name = name
    out = op.new_output(pd.Series([], dtype=object), nan, key=random_key(name))
    try:
        out.execute()
        paths = list(out.fetch())
    except Exception:  # not on KeyboardInterrupt & co: the user wants out, not another job
        if cleanup is not None:
            with contextlib.suppress(Exception):
                run_cleanup(*cleanup())
        raise
    if cleanup is not None:
        try:
            run_cleanup(*cleanup())
        except Exception as e:  # noqa: BLE001 - the output is complete: say so, do not fail
            warnings.warn(f"{name}: the output is written, but removing its temporary files failed: {e!r}",
                          RuntimeWarning, stacklevel=3)
    return paths


__all__: list[str] = []
