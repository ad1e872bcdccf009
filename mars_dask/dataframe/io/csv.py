"""``md.read_csv`` and ``DataFrame.to_csv`` / ``Series.to_csv``.

Reading: every file (a path, a glob or a list of them; local or any fsspec filesystem) is one
part, except large uncompressed files, which are cut into byte ranges of about
``chunk_bytes``: each part parses the lines that *start* in its range (it reads on to the end
of its last line, and skips the partial line it starts in), with the file's header lines put
in front, as Mars and dask do.  Compressed files (``compression`` given or inferred from the
extension: gzip, bz2, zip, xz, zstd...) are one part each.  Quoted fields holding newlines
are not supported in split files (use a larger ``chunk_bytes``).

The output metadata comes from parsing the first rows of the first file with pandas and the
same arguments; every part is cast to it (a part whose column parses to an incompatible
dtype raises, naming the column: pass ``dtype=``).  Without ``index_col`` the result has
the default ``RangeIndex(0, n)`` of ``pandas.read_csv`` on the concatenated data: the parts
are read (iterative tiling), then relabelled with their global offsets.
"""

from __future__ import annotations

import io
import math
import secrets
import shutil

import pandas as pd
from dask.utils import parse_bytes

from ...tiling.core import new_key
from ..core import DataFrame, DataFrameOperand, Series, nan, register_method
from ._common import (_WriteOp, atomic_write, execute_writes, expand_paths, file_token, finish_parts,  # noqa: F401
                      is_local, needs_finish, part_path, split_path, stale_targets)

__all__ = ["read_csv"]

_NO_SPLIT = ("skiprows", "skipfooter", "comment", "lineterminator", "chunksize", "iterator")


def _header_lines(header, names) -> int:
    """How many lines of a file the header takes (they are put in front of every part)."""
    if header == "infer":
        header = None if names is not None else 0
    if header is None:
        return 0
    if isinstance(header, (list, tuple)):
        return max(header) + 1
    return int(header) + 1


def _read_header(fs, path, nlines: int) -> bytes:
    if nlines == 0:
        return b""
    out = []
    with fs.open(path, "rb") as f:
        for _ in range(nlines):
            line = f.readline()
            if not line:
                break
            out.append(line)
    return b"".join(out)


def coerce_to_meta(df, meta):
    """Cast a part to the metadata's dtypes (a part may infer a different one)."""
    if list(df.columns) != list(meta.columns):
        raise ValueError(f"a part has columns {list(df.columns)}, expected {list(meta.columns)}")
    want = meta.dtypes
    # categoricals keep the categories their own part found (they differ between parts)
    diff = {c: want[c] for c, d in df.dtypes.items()
            if d != want[c] and not (isinstance(d, pd.CategoricalDtype) and isinstance(want[c], pd.CategoricalDtype))}
    if diff:
        try:
            df = df.astype(diff)
        except (ValueError, TypeError) as e:
            cols = ", ".join(map(repr, diff))
            raise ValueError(
                f"column(s) {cols} of a part do not parse as the dtypes inferred from the first "
                f"rows ({', '.join(str(v) for v in diff.values())}); pass dtype= explicitly ({e})"
            ) from e
    if df.index.dtype != meta.index.dtype and not isinstance(meta.index, pd.RangeIndex):
        try:
            df.index = df.index.astype(meta.index.dtype)
        except (ValueError, TypeError):
            pass
    return df


def _read_csv_part(fs, path, offset, length, header, compression, kwargs, meta):
    """One part: the whole file (``length`` None) or the lines starting in
    ``[offset, offset + length)`` with the header lines in front."""
    from fsspec.utils import read_block

    with fs.open(path, "rb") as f:
        if length is None:
            df = pd.read_csv(f, compression=compression, **kwargs)
        else:
            block = read_block(f, offset, length, b"\n")
            if offset > 0:
                if not block.strip():
                    return meta.copy()
                block = header + block
            df = pd.read_csv(io.BytesIO(block), **kwargs)
    return coerce_to_meta(df, meta)


class ReadCSV(DataFrameOperand):
    _op_name = "read-csv"

    def __init__(self, fs, parts, kwargs, nrows, range_index):
        super().__init__([], nparts=len(parts), kwargs=kwargs, nrows=nrows, range_index=range_index)
        self.fs = fs
        self.parts = parts  # [(path, offset, length, header_bytes, compression, est_bytes)]

    def tile(self):
        out = self.output
        meta = out.meta
        suffix = "-read" if needs_finish(self.range_index, self.nrows, len(self.parts)) else ""
        kwargs = dict(self.kwargs)
        if self.nrows is not None:
            kwargs["nrows"] = self.nrows
        raw = []
        for i, (path, offset, length, header, comp, est) in enumerate(self.parts):
            raw.append(self.new_chunk(
                i, nan, _read_csv_part, (self.fs, path, offset, length, header, comp, kwargs, meta),
                suffix=suffix, meta=meta, memory=int(est * 4),
            ))
        return (yield from finish_parts(self, raw, range_index=self.range_index, nrows=self.nrows))


def read_csv(
    filepath_or_buffer,
    *,
    sep=",",
    header="infer",
    names=None,
    index_col=None,
    usecols=None,
    dtype=None,
    parse_dates=None,
    compression="infer",
    nrows=None,
    chunk_bytes="64MiB",
    sample_rows=1000,
    storage_options=None,
    gpu=None,
    head_bytes="100k",
    head_lines=None,
    incremental_index=True,
    use_arrow_dtype=None,
    memory_scale=None,
    merge_small_files=True,
    merge_small_file_options=None,
    **kwargs,
):
    """Read CSV files into a DataFrame (pandas' ``read_csv`` arguments, plus Mars/dask's).

    ``filepath_or_buffer``: a path, a glob (``"data/*.csv"``) or a list of them; the files
    are read in sorted order of each glob and concatenated.  ``chunk_bytes``: split
    uncompressed files into parts of about this many bytes (int or ``"64MiB"``).
    ``nrows``: the first ``nrows`` rows of the concatenation.  ``sample_rows``: rows of the
    first file parsed to learn the columns and dtypes (Mars's ``head_lines`` sets it;
    ``head_bytes`` is accepted: the sample is counted in rows).  Mars's
    ``incremental_index`` is accepted: the default index is always pandas' RangeIndex,
    increasing across chunks (what ``True`` guarantees); ``use_arrow_dtype``: strings are
    pandas 3's Arrow-backed ``str`` dtype either way; ``memory_scale`` and
    ``merge_small_files``/``merge_small_file_options`` are scheduling hints.  Other
    keyword arguments go to ``pandas.read_csv``.
    """
    if gpu:
        raise NotImplementedError("read_csv(gpu=True): GPU (cudf) support of Mars is not part of mars_dask")
    if head_lines is not None:
        sample_rows = int(head_lines)
    if isinstance(filepath_or_buffer, (io.IOBase, bytes)):
        raise TypeError("md.read_csv needs paths (a buffer cannot be read by the workers); use md.DataFrame(pd.read_csv(buf))")
    if "delimiter" in kwargs:
        sep = kwargs.pop("delimiter")
    for bad in ("chunksize", "iterator"):
        if kwargs.get(bad):
            raise ValueError(f"{bad}= is not supported by md.read_csv (the result is already chunked)")
    if nrows is not None and (not isinstance(nrows, int) or nrows < 0):
        raise ValueError(f"nrows must be a non-negative integer, got {nrows!r}")
    chunk_bytes = parse_bytes(chunk_bytes) if isinstance(chunk_bytes, str) else int(chunk_bytes)
    if chunk_bytes <= 0:
        raise ValueError(f"chunk_bytes must be positive, got {chunk_bytes}")

    fs, paths = expand_paths(filepath_or_buffer, storage_options)
    pd_kwargs = dict(sep=sep, header=header, names=names, index_col=index_col, usecols=usecols, dtype=dtype, parse_dates=parse_dates, **kwargs)

    from pandas.io.common import infer_compression

    comps = [infer_compression(p, compression) for p in paths]

    # the metadata: the first rows of the first file, parsed as pandas would
    n_sample = sample_rows
    with fs.open(paths[0], "rb") as f:
        head = pd.read_csv(f, compression=comps[0], nrows=n_sample, **pd_kwargs)
    meta = head.iloc[:0]

    nheader = _header_lines(header, names)
    split_ok = nrows is None and not any(kwargs.get(k) for k in _NO_SPLIT)
    parts = []
    tokens = []
    for p, comp in zip(paths, comps):
        size = fs.size(p)
        tokens.append(file_token(fs, p))
        if comp is None and split_ok and size > chunk_bytes:
            hdr = _read_header(fs, p, nheader)
            nblocks = math.ceil(size / chunk_bytes)
            for b in range(nblocks):
                parts.append((p, b * chunk_bytes, chunk_bytes, hdr, None, chunk_bytes))
        else:
            parts.append((p, 0, None, b"", comp, size * (5 if comp else 1)))
    range_index = index_col is None or index_col is False
    key = new_key("read-csv", paths, tokens, pd_kwargs, compression, nrows, chunk_bytes, sample_rows, storage_options)
    op = ReadCSV(fs, parts, pd_kwargs, nrows, range_index)
    return op.new_output(meta, nan, range_index=range_index, key=key)


# ---- writing ----------------------------------------------------------------------------
#
# Every file is written atomically (``_common.atomic_write``: a temporary name, then a rename),
# and every task writes the same final name each time it runs, so a task re-run by failover or
# killed half-way never leaves a torn or duplicated file.
#
# One file per chunk (``"out/part-*.csv"``): each chunk's task writes its file.
#
# One file (a plain path): chunk ``i``'s task writes its rows (with the header for chunk 0
# only, uncompressed) to the hidden part ``.<name>.part-<job token>-<i:06d>`` next to the
# target; one more task concatenates the parts in order into the target (compressing as
# asked) -- through a temporary and a rename too.  No task appends to a shared file, so any
# task may run again at any time: a part is rewritten with identical bytes, the concatenation
# reads complete parts only.  The parts are removed by the clean-up job that runs after the
# writes (``execute_writes``), never by a write task (a re-run of the concatenation must
# still find them).  A frame of one chunk is written straight to the target.


def _no_bom(encoding: str) -> str:
    """The encoding to continue a text with: without the byte-order mark that
    ``utf-8-sig`` / ``utf-16`` / ``utf-32`` put at the start of a stream."""
    import codecs

    info = codecs.lookup(encoding)
    bom = codecs.getincrementalencoder(info.name)().encode("")
    if not bom:
        return encoding
    if info.name == "utf-8-sig":
        return "utf-8"
    for base in ("utf-16", "utf-32"):
        if info.name == base:
            return base + ("-le" if bom in (codecs.BOM_UTF16_LE, codecs.BOM_UTF32_LE) else "-be")
    raise ValueError(f"md to_csv cannot write encoding {encoding!r} in parts (it starts with a byte-order mark)")


def csv_compression(path: str, compression):
    """pandas' compression argument for writing ``path`` (``None``, or a dict with
    ``method``), with the names pandas would derive from ``path`` filled in: the gzip
    header's file name, the member name in zip/tar archives and the tar mode (the file is
    written under a temporary name, which must not show up inside it)."""
    from pathlib import PurePosixPath

    from pandas.io.common import get_compression_method, infer_compression

    method, args = get_compression_method(compression)
    method = infer_compression(path, method)
    if method is None:
        return None
    args = dict(args)
    name = split_path(path)[1]
    suffix = PurePosixPath(name).suffix
    if method == "gzip":
        args.setdefault("filename", name)
    elif method == "zip":
        args.setdefault("archive_name", name[: -len(suffix)] if suffix == ".zip" else name)
    elif method == "tar":
        args.setdefault("archive_name", name[: -len(suffix)] if suffix == ".tar" else name)
        args.setdefault("mode", "w:" + suffix[1:] if suffix in (".gz", ".xz", ".bz2") else "w")
    return {"method": method, **args}


def _split_kwargs(kwargs):
    kw = dict(kwargs)
    encoding = kw.pop("encoding", None) or "utf-8"
    errors = kw.pop("errors", None) or "strict"
    compression = kw.pop("compression", "infer")
    kw.pop("mode", None)
    return kw, encoding, errors, compression


def _csv_to(part, f, kwargs, compression, first=True):
    """``part.to_csv`` into the binary file ``f`` (``first``: the start of the file)."""
    kw, encoding, errors, _ = _split_kwargs(kwargs)
    if not first:
        kw["header"] = False
        encoding = _no_bom(encoding)
    part.to_csv(f, mode="wb", encoding=encoding, errors=errors, compression=compression, **kw)


def _write_csv_file(part, fs, path, kwargs):
    """One chunk to its own file ``path`` (atomically); returns ``Series([path])``."""
    comp = csv_compression(path, _split_kwargs(kwargs)[3])
    with atomic_write(fs, path) as f:
        _csv_to(part, f, kwargs, comp)
    return pd.Series([path], dtype=object)


def _write_csv_part(part, fs, ppath, first, kwargs):
    """Chunk ``i`` of a single-file CSV to its part file ``ppath`` (uncompressed, header
    for the first chunk only); returns ``Series([ppath])``."""
    with atomic_write(fs, ppath) as f:
        _csv_to(part, f, kwargs, None, first=first)
    return pd.Series([ppath], dtype=object)


def _concat_csv_parts(fs, path, compression, *parts):
    """The part files, in order, into ``path`` (atomically, compressed as asked)."""
    from pandas.io.common import get_handle

    local = is_local(fs)
    with atomic_write(fs, path) as f:
        handles = get_handle(f, "wb", compression=compression, is_text=False)
        try:
            for s in parts:
                for p in s:
                    with (open(p, "rb") if local else fs.open(p, "rb")) as src:
                        shutil.copyfileobj(src, handles.handle, 1 << 20)
        finally:
            handles.close()
    return pd.Series([path], dtype=object)


def to_csv(self, path_or_buf=None, *, sep=",", index=True, header=True, mode="w", compression="infer",
           storage_options=None, name_function=None, single_file=None, **kwargs):
    """Write as CSV; runs immediately.

    ``path_or_buf`` with a ``*`` (``"out/part-*.csv"``): one file per chunk (``*`` replaced
    by the chunk number, or ``name_function(i)``); returns the list of written paths (as
    dask does).  A plain path: one file, byte for byte what pandas writes for the whole
    frame (header once), returning None as pandas does.  ``None``: the CSV text, as pandas
    returns it.  Every file is written under a temporary name and renamed into place, so a
    re-run or killed write task never leaves a torn or duplicated file (module comment).
    """
    from fsspec.core import url_to_fs

    if path_or_buf is None:
        return self.to_pandas().to_csv(None, sep=sep, index=index, header=header, **kwargs)
    if mode != "w":
        raise ValueError("md to_csv writes new files (mode='w')")
    path = path_or_buf.__fspath__() if hasattr(path_or_buf, "__fspath__") else path_or_buf
    if not isinstance(path, str):
        raise TypeError(f"to_csv needs a path, got {type(path_or_buf).__name__}")
    fs, root = url_to_fs(path, **(storage_options or {}))
    kw = dict(sep=sep, index=index, header=header, compression=compression, **kwargs)
    meta = pd.Series([], dtype=object)
    many = "*" in root if single_file is None else not single_file
    if many:
        if "*" not in root:
            raise ValueError("to_csv with several files needs a '*' in the path")
        parent = split_path(root)[0]
        fs.makedirs(parent, exist_ok=True)
        written: list = []

        def writer(op, chunks):
            out = []
            for i, c in enumerate(chunks):
                p = root.replace("*", name_function(i) if name_function else str(i))
                written.append(p)
                out.append(op.new_chunk(i, 1, _write_csv_file, (c, fs, p, kw), inputs=[c], meta=meta))
            return out

        # the paths are known once the frame is tiled (in execute): the clean-up reads them then
        return execute_writes(self.data, writer, "to-csv", cleanup=lambda: (fs, stale_targets(written)))
    parent = split_path(root)[0]
    fs.makedirs(parent, exist_ok=True)
    token = secrets.token_hex(6)
    comp = csv_compression(root, compression)

    def writer(op, chunks):
        if len(chunks) == 1:
            return [op.new_chunk(0, 1, _write_csv_file, (chunks[0], fs, root, kw), inputs=list(chunks), meta=meta)]
        parts = [
            op.new_chunk(i, 1, _write_csv_part, (c, fs, part_path(root, token, i), i == 0, kw),
                         inputs=[c], meta=meta, suffix="-part")
            for i, c in enumerate(chunks)
        ]
        return [op.new_chunk(0, 1, _concat_csv_parts, (fs, root, comp, *parts), inputs=parts, meta=meta)]

    execute_writes(self.data, writer, "to-csv", cleanup=lambda: (fs, stale_targets([root], parts=True)))
    return None


register_method(DataFrame, Series, name="to_csv")(to_csv)
