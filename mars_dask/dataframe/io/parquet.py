"""``md.read_parquet`` and ``DataFrame.to_parquet`` (pyarrow).

Reading follows ``pandas.read_parquet(engine="pyarrow")`` exactly (it reads through
``pyarrow.parquet.ParquetDataset``): the same dataset discovery (files, directories, hive
partitions), the same ``filters`` (row-level, as pyarrow applies them) and the same
pandas conversion.  The parts are row groups: the dataset's fragments are pruned by the
partition expressions and then by the row-group statistics against ``filters`` (pyarrow's
``split_by_row_group(filter)``), so row groups that cannot match are never read.  With
``split_row_groups="adaptive"`` (default) consecutive row groups of one file are merged
into parts of about ``chunk_bytes``; ``True``: one part per row group; ``False``: one per
file.  Only the requested ``columns`` (plus the stored index columns) are read.

Without filters the row counts come from the files' footers, so lengths are known at once;
with filters they are known after reading (iterative tiling).  A stored default RangeIndex
gives the global ``RangeIndex`` pandas would give.
"""

from __future__ import annotations

import pandas as pd
from dask.utils import parse_bytes

from ...tiling.core import new_key
from ..core import DataFrame, DataFrameOperand, nan, register_method
from ._common import atomic_write, execute_writes, expand_paths, file_token, finish_parts, needs_finish, stale_targets

__all__ = ["read_parquet"]


def _to_pandas(table, dtype_backend, to_pandas_kwargs):
    import json
    import warnings

    from pandas._libs import lib
    from pandas.io._util import arrow_table_to_pandas

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "make_block is deprecated")
        df = arrow_table_to_pandas(
            table, dtype_backend=lib.no_default if dtype_backend is None else dtype_backend,
            to_pandas_kwargs=to_pandas_kwargs,
        )
    md = table.schema.metadata
    if md and b"PANDAS_ATTRS" in md:
        df.attrs = json.loads(md[b"PANDAS_ATTRS"])
    return df


def _read_parquet_part(path, filesystem, partition_expression, row_groups, schema, columns, filter_expr,
                       dtype_backend, to_pandas_kwargs, meta):
    import pyarrow.dataset as ds

    frag = ds.ParquetFileFormat().make_fragment(
        path, filesystem=filesystem, partition_expression=partition_expression, row_groups=row_groups
    )
    table = frag.to_table(schema=schema, columns=columns, filter=filter_expr)
    df = _to_pandas(table, dtype_backend, to_pandas_kwargs)
    if list(df.columns) != list(meta.columns):
        df = df[list(meta.columns)]
    return df


def _empty_part(meta):
    return meta.copy()


class ReadParquet(DataFrameOperand):
    _op_name = "read-parquet"

    def __init__(self, parts, schema, columns, filter_expr, dtype_backend, to_pandas_kwargs, range_info, known):
        super().__init__([], nparts=len(parts), range_info=range_info, known=known)
        self.parts = parts  # [(path, filesystem, partition_expression, [rg ids], num_rows, bytes)]
        self.schema = schema
        self.columns = columns
        self.filter_expr = filter_expr
        self.dtype_backend = dtype_backend
        self.to_pandas_kwargs = to_pandas_kwargs

    def _range_of(self, total):
        # pyarrow restores a stored RangeIndex only when the row count matches it
        info = self.range_info
        if info is not None and info.get("kind") == "range":
            start, stop, step = info["start"], info["stop"], info["step"]
            if len(range(start, stop, step)) == total:
                return start, step, info.get("name")
        return 0, 1, None

    def tile(self):
        meta = self.output.meta
        range_index = self.range_info is not None
        if not self.parts:
            c = self.new_chunk(0, 0, _empty_part, (meta,))
            return [([c], ((0,), (len(meta.columns),)))]
        suffix = "-read" if needs_finish(range_index, None, len(self.parts)) else ""
        raw = []
        for i, (path, fs, pexpr, rgs, nrows, nbytes) in enumerate(self.parts):
            raw.append(self.new_chunk(
                i, nrows if self.known else nan, _read_parquet_part,
                (path, fs, pexpr, rgs, self.schema, self.columns, self.filter_expr,
                 self.dtype_backend, self.to_pandas_kwargs, meta),
                suffix=suffix, meta=meta, memory=int(nbytes * 3),
            ))
        return (yield from finish_parts(self, raw, range_index=range_index, range_of=self._range_of))


def _partition_categories(meta, dataset, dtype_backend, to_pandas_kwargs):
    """Hive partition columns are categoricals of all the partition values (as pandas reads
    them): give the metadata those categories."""
    import pyarrow as pa

    part = getattr(dataset, "partitioning", None)
    dicts = getattr(part, "dictionaries", None) if part is not None else None
    if not dicts:
        return meta
    meta = meta.copy()
    for field, values in zip(part.schema, dicts):
        if field.name in meta.columns and values is not None and isinstance(meta[field.name].dtype, pd.CategoricalDtype):
            arr = pa.DictionaryArray.from_arrays(pa.array([], type=pa.int32()), values)
            cats = _to_pandas(pa.table({field.name: arr}), dtype_backend, to_pandas_kwargs)[field.name].dtype
            meta[field.name] = meta[field.name].astype(cats)
    return meta


def _filter_columns(filters) -> list:
    """Column names used by DNF ``filters`` (list of tuples or list of lists of tuples)."""
    names = []
    if filters is None or not isinstance(filters, (list, tuple)):
        return names
    for f in filters:
        if isinstance(f, tuple) and len(f) == 3 and isinstance(f[1], str):
            names.append(f[0])
        elif isinstance(f, (list, tuple)):
            names.extend(_filter_columns(f))
    return names


def read_parquet(
    path,
    engine="auto",
    columns=None,
    groups_as_chunks=False,
    use_arrow_dtype=None,
    incremental_index=False,
    storage_options=None,
    memory_scale=None,
    merge_small_files=True,
    merge_small_file_options=None,
    *,
    filters=None,
    split_row_groups="adaptive",
    chunk_bytes="128MiB",
    dtype_backend=None,
    to_pandas_kwargs=None,
    **kwargs,
):
    """Read Parquet files into a DataFrame (as ``pandas.read_parquet(engine="pyarrow")``),
    with Mars 0.10's signature.

    ``path``: a file, a directory (hive partitions allowed), a glob or a list of files.
    ``columns``: the columns to read (the stored index is restored as pandas does).
    ``groups_as_chunks=True`` (Mars): one chunk per row group (``split_row_groups=True``).
    ``filters``: pyarrow DNF filters (``[("a", ">", 3)]`` or a list of such lists) or a
    ``pyarrow.compute`` expression: they prune files and row groups and filter the rows.
    ``split_row_groups`` / ``chunk_bytes``: how row groups make parts (see module doc).
    Mars's other arguments are accepted with their meaning here: ``incremental_index``
    (Mars: ``True`` guarantees a RangeIndex increasing across chunks; the index is always
    the one pandas gives, which for a stored default index is exactly that),
    ``use_arrow_dtype`` (strings are pandas 3's Arrow-backed ``str`` dtype either way),
    ``memory_scale`` and ``merge_small_files``/``merge_small_file_options`` (scheduling
    hints: small row groups are merged by ``split_row_groups="adaptive"``).  Other keyword
    arguments go to ``pyarrow.parquet.ParquetDataset``.
    """
    if groups_as_chunks:
        split_row_groups = True
    import pyarrow.parquet as pq
    from fsspec.implementations.local import LocalFileSystem

    if engine not in ("pyarrow", "auto"):
        raise ValueError(f"md.read_parquet supports engine='pyarrow' only, got {engine!r}")
    if split_row_groups not in (True, False, "adaptive"):
        raise ValueError(f"split_row_groups must be True, False or 'adaptive', got {split_row_groups!r}")
    chunk_bytes = parse_bytes(chunk_bytes) if isinstance(chunk_bytes, str) else int(chunk_bytes)
    if isinstance(columns, str):
        raise TypeError("columns must be a list of column names")

    fs, paths = expand_paths(path, storage_options)
    if isinstance(fs, LocalFileSystem):
        pafs = None
    else:
        from pyarrow.fs import FSSpecHandler, PyFileSystem

        pafs = PyFileSystem(FSSpecHandler(fs))
    source = paths[0] if len(paths) == 1 else paths
    if len(paths) > 1 and any(fs.isdir(p) for p in paths):
        raise ValueError("a list of paths must hold files, not directories")
    try:
        pdataset = pq.ParquetDataset(source, filesystem=pafs, filters=filters, **kwargs)
    except TypeError:
        raise
    schema = pdataset.schema
    names = list(schema.names)
    if columns is not None:
        missing = [c for c in columns if c not in names]
        if missing:
            raise KeyError(f"columns not found in the parquet data: {missing}")
    missing = [c for c in _filter_columns(filters) if c not in names]
    if missing:
        raise KeyError(f"filters name columns not found in the parquet data: {missing}")

    pmeta = schema.pandas_metadata or {}
    index_cols = pmeta.get("index_columns", [])
    read_cols = None
    if columns is not None:
        stored = [c for c in index_cols if not isinstance(c, dict)]
        read_cols = list(columns) + list(set(stored) - set(columns))
    meta_table = schema.empty_table()
    if read_cols is not None:
        meta_table = meta_table.select(read_cols)
    meta = _to_pandas(meta_table, dtype_backend, to_pandas_kwargs)
    meta = _partition_categories(meta, pdataset._dataset, dtype_backend, to_pandas_kwargs)
    range_info = None
    if not index_cols or isinstance(index_cols[0], dict):
        range_info = index_cols[0] if index_cols else {"kind": "none"}

    filter_expr = pdataset._filter_expression
    dataset = pdataset._dataset
    parts = []
    tokens = []
    for frag in dataset.get_fragments(filter=filter_expr):
        tokens.append(file_token(fs, frag.path) if pafs is None else frag.path)
        rgs = frag.split_by_row_group(filter=filter_expr, schema=dataset.schema) if filter_expr is not None else [frag]
        infos = [rg for f in rgs for rg in (f.row_groups or [])]
        if filter_expr is None:
            infos = list(frag.row_groups)
        if not infos:
            continue
        groups: list[list] = []
        if split_row_groups is True:
            groups = [[rg] for rg in infos]
        elif split_row_groups is False:
            groups = [infos]
        else:
            cur, size = [], 0
            for rg in infos:
                if cur and size + rg.total_byte_size > chunk_bytes:
                    groups.append(cur)
                    cur, size = [], 0
                cur.append(rg)
                size += rg.total_byte_size
            if cur:
                groups.append(cur)
        for g in groups:
            parts.append((
                frag.path, frag.filesystem, frag.partition_expression, [rg.id for rg in g],
                sum(rg.num_rows for rg in g), sum(rg.total_byte_size for rg in g),
            ))
    known = filter_expr is None
    nrows = sum(p[4] for p in parts) if known else nan
    key = new_key("read-parquet", paths, tokens, read_cols, str(filter_expr), split_row_groups, chunk_bytes,
                  dtype_backend, to_pandas_kwargs)
    op = ReadParquet(parts, schema, read_cols, filter_expr, dtype_backend, to_pandas_kwargs, range_info, known)
    return op.new_output(meta, nrows, range_index=range_info is not None, key=key)


# ---- writing ----------------------------------------------------------------------------


def _write_parquet_part(part, fs, path, kwargs):
    """One chunk to the file ``path``, atomically (``_common.atomic_write``: a temporary
    name, then a rename; a re-run replaces the file with the same content)."""
    if isinstance(part, pd.Series):
        part = part.to_frame()
    with atomic_write(fs, path) as f:
        part.to_parquet(f, engine="pyarrow", **kwargs)
    return pd.Series([path], dtype=object)


def to_parquet(self, path, engine="pyarrow", compression="snappy", index=None, *, name_function=None,
               storage_options=None, partition_cols=None, **kwargs):
    """Write one Parquet file per chunk into the directory ``path`` (``part.0.parquet``,
    ``part.1.parquet``, ...; ``name_function(i)`` names them otherwise).  Runs immediately
    and returns None, as pandas does; ``md.read_parquet(path)`` reads the directory back
    (a default RangeIndex round-trips).  Each file is written under a hidden temporary name
    and renamed into place, so a write task re-run by failover or killed half-way never
    leaves a torn file (pyarrow's dataset discovery skips the hidden temporaries)."""
    from fsspec.core import url_to_fs

    if engine not in ("pyarrow", "auto"):
        raise ValueError(f"to_parquet supports engine='pyarrow' only, got {engine!r}")
    if partition_cols:
        raise NotImplementedError("partition_cols is not supported by md to_parquet")
    path = path.__fspath__() if hasattr(path, "__fspath__") else path
    if not isinstance(path, str):
        raise TypeError(f"to_parquet needs a directory path, got {type(path).__name__}")
    fs, root = url_to_fs(path, **(storage_options or {}))
    fs.makedirs(root, exist_ok=True)
    kw = dict(compression=compression, index=index, **kwargs)
    written: list = []

    def writer(op, chunks):
        out = []
        width = len(str(len(chunks) - 1))  # part.0 ... part.9, or part.00 ... part.42: sorted order
        for i, c in enumerate(chunks):
            name = name_function(i) if name_function else f"part.{i:0{width}d}.parquet"
            p = f"{root.rstrip('/')}/{name}"
            written.append(p)
            out.append(op.new_chunk(i, 1, _write_parquet_part, (c, fs, p, kw), inputs=[c],
                                    meta=pd.Series([], dtype=object)))
        return out

    execute_writes(self.data, writer, "to-parquet", cleanup=lambda: (fs, stale_targets(written)))
    return None


register_method(DataFrame, name="to_parquet")(to_parquet)
