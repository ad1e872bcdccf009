"""Codecs turning a value into a file payload and back.

Metadata (what goes into a file's header) is plain values only -- dtypes as strings, labels
and names as str/int/float/bool/None and tuples of them -- so that nothing read back from a
file can run code (no pickle: ``_safe_files``). A value whose labels or names are not plain
(a Timestamp column label, say) is not declined: it goes through the ``dask`` codec, whose
bytes are in the payload, which the file's checksum (and, for checkpoints, MAC) covers.

- ``numpy``: a plain ndarray of a fixed-size dtype (bool, numbers, datetime64/timedelta64,
  bytes/str, structured without objects) is its raw buffer (C order; an F-ordered
  array is stored as its C-ordered transpose, any other layout is made contiguous) plus a
  small header (dtype, shape, order). Decoding is ``np.frombuffer`` on the file's memory
  map: zero copy, and **read-only** -- a kernel that writes into an input must copy it.
- ``arrow``: pandas DataFrame / Series / Index without object-dtype data, as an Arrow IPC
  file. Plain numpy numeric columns become Arrow arrays without a copy and keep NaN as NaN
  (no null scan); a RangeIndex is metadata, not a column. Decoding reads the IPC file from
  the memory map; numeric columns without nulls stay views of the map
  (``to_pandas(split_blocks=True)``), others are converted.
- ``blocks``: a pandas DataFrame / Series whose data and index are plain numpy (numeric,
  bool, datetime64/timedelta64 columns; a RangeIndex or a plain numeric Index), which is
  what most chunks are: each of pandas' own blocks is stored as its raw buffer (as ``numpy``
  does), the column labels (plain values, see above) and small metadata in the header. Decoding builds the
  frame from views of the map (``pandas.api.internals.create_dataframe_from_blocks``):
  tens of microseconds, where a round trip through Arrow's pandas metadata costs over a
  millisecond per value whatever its size -- paid for every task result on a worker.
- ``seq``: a tuple or list of such arrays and frames (what a shuffle's map task returns:
  one piece per output partition), each item stored as above, one after the other.
- ``dask``: anything else, through ``distributed.protocol.serialize_bytelist`` (Dask's own
  serializers: dask, then pickle), read back with ``deserialize_bytes``.

Compression (``lz4``, disk tier only) wraps the payload as a sequence of blocks, each
prefixed by its raw and compressed lengths; decoding then needs a private buffer.
"""

from __future__ import annotations

import ast
import math
import struct
from dataclasses import dataclass
from typing import Any, Callable

import msgpack
import numpy as np

_ARROW_TYPES: tuple = ()


def _pandas_types() -> tuple:
    global _ARROW_TYPES
    if not _ARROW_TYPES:
        import pandas as pd

        _ARROW_TYPES = (pd.DataFrame, pd.Series, pd.Index)
    return _ARROW_TYPES


@dataclass
class Encoded:
    kind: str
    meta: dict
    nbytes: int                       # size of the value in memory (what sizeof reports)
    write: Callable[[Any], None]      # writes the payload into a sink
    size: int | None = None           # payload bytes, when known up front


# -- plain metadata -------------------------------------------------------------------------
_PLAIN_SCALARS = (str, int, float, bool, type(None))
_RAW_KINDS = "biufcmMSUV"  # fixed-size dtypes whose bytes are the values (not "O", "T")


class _NotPlain(Exception):
    """A label, name or dtype that plain metadata cannot carry exactly."""


def _plain(v):
    """``v`` if it is a plain label (str/int/float/bool/None, or a tuple of those), else
    raise :class:`_NotPlain` (numpy scalars, Timestamps, ... keep their type only through
    Dask's serialization)."""
    t = type(v)
    if t in _PLAIN_SCALARS:
        if t is int and not -2**63 <= v < 2**64:
            raise _NotPlain(v)
        return v
    if t is tuple:
        return tuple(_plain(x) for x in v)
    raise _NotPlain(v)


def _unplain(v):
    """msgpack gives tuples back as lists; labels are never lists (unhashable)."""
    return tuple(_unplain(x) for x in v) if isinstance(v, list) else v


def _dtype_meta(dtype: np.dtype) -> str:
    """A numpy dtype as a string that :func:`_dtype_of` turns back into it: ``dtype.str`` for
    a simple dtype, else the literal of its ``descr`` (as the ``.npy`` format stores it)."""
    if dtype.fields is None and dtype.subdtype is None:
        return dtype.str
    return repr(np.lib.format.dtype_to_descr(dtype))


def _dtype_of(s: str) -> np.dtype:
    if s[:1] in "[(":
        return np.lib.format.descr_to_dtype(ast.literal_eval(s))  # literals only, no code
    return np.dtype(s)


def _index_meta(index) -> dict:
    """Plain metadata of a (column) Index, or raise :class:`_NotPlain`."""
    import pandas as pd
    from pandas.api.types import pandas_dtype

    if type(index) is pd.RangeIndex:
        return {"range": [index.start, index.stop, index.step], "name": _plain(index.name)}
    if type(index) is pd.MultiIndex:
        return {"levels": [_index_meta(lvl) for lvl in index.levels],
                "codes": [c.tolist() for c in index.codes], "names": [_plain(n) for n in index.names]}
    if type(index) is not pd.Index:
        raise _NotPlain(type(index))
    dtype = str(index.dtype)
    try:
        same = pandas_dtype(dtype) == index.dtype
    except TypeError:
        same = False
    if not same:
        raise _NotPlain(index.dtype)
    return {"values": [_plain(v) for v in index.tolist()], "dtype": dtype, "name": _plain(index.name)}


def _index_of(meta: dict):
    import pandas as pd

    if "range" in meta:
        return pd.RangeIndex(*meta["range"], name=_unplain(meta["name"]))
    if "levels" in meta:
        return pd.MultiIndex(levels=[_index_of(m) for m in meta["levels"]], codes=meta["codes"],
                             names=[_unplain(n) for n in meta["names"]], verify_integrity=False)
    values = [_unplain(v) for v in meta["values"]]
    return pd.Index(values, dtype=meta["dtype"], name=_unplain(meta["name"]), tupleize_cols=False)


# -- numpy ------------------------------------------------------------------------------
def _raw_bytes(x: np.ndarray) -> tuple[np.ndarray, str]:
    """``x``'s bytes without a copy when it is contiguous: (uint8 view, "C" or "F"; an
    F-ordered array is its C-ordered transpose); any other layout is made contiguous."""
    if x.flags.c_contiguous:
        flat, order = x, "C"
    elif x.flags.f_contiguous:
        flat, order = x.T, "F"
    else:
        flat, order = np.ascontiguousarray(x), "C"
    return flat.reshape(-1).view(np.uint8), order


def _encode_numpy(x: np.ndarray) -> Encoded:
    raw, order = _raw_bytes(x)
    meta = {"dtype": _dtype_meta(x.dtype), "shape": list(x.shape), "order": order}
    return Encoded("numpy", meta, x.nbytes, lambda sink: sink.write(raw), raw.nbytes)


def _array_view(buf, offset: int, count: int, dtype: np.dtype, shape: tuple, order: str) -> np.ndarray:
    """The read-only array stored by :func:`_raw_bytes` at ``buf[offset:offset + count]``."""
    flat = np.frombuffer(buf, dtype=np.uint8, count=count, offset=offset)
    flat = flat.view(dtype) if dtype.itemsize else np.empty(0, dtype=dtype)
    out = flat.reshape(shape[::-1]).T if order == "F" else flat.reshape(shape)
    if out.flags.writeable:  # private buffers (disk reads) are shared with every reader too
        out.flags.writeable = False
    return out


def _decode_numpy(meta: dict, buf, offset: int, size: int) -> np.ndarray:
    return _array_view(buf, offset, size, _dtype_of(meta["dtype"]), tuple(meta["shape"]), meta["order"])


# -- pandas via Arrow -------------------------------------------------------------------
def _arrow_dtype_ok(dtype) -> bool:
    """Whether Arrow gives a column of ``dtype`` back with that same dtype: numpy numbers,
    bool and datetimes, pandas' masked, Arrow-backed, categorical, tz-aware, interval and
    period dtypes; not object, not Python-backed strings (they come back Arrow-backed), not
    sparse (Arrow refuses it)."""
    import pandas as pd

    if isinstance(dtype, np.dtype):
        return dtype.kind in "biufcmM"
    if isinstance(dtype, pd.StringDtype):
        return dtype.storage == "pyarrow"
    if isinstance(dtype, pd.CategoricalDtype):
        # no categories: Arrow gives them back as object, whatever their dtype was
        return dtype.categories is not None and len(dtype.categories) > 0 and _arrow_dtype_ok(dtype.categories.dtype)
    return isinstance(dtype, (pd.ArrowDtype, pd.DatetimeTZDtype, pd.IntervalDtype, pd.PeriodDtype,
                              *_masked_dtypes()))


def _masked_dtypes() -> tuple:
    import pandas as pd

    return (pd.BooleanDtype, pd.Float32Dtype, pd.Float64Dtype,
            *(getattr(pd, f"{s}Int{b}Dtype") for s in ("", "U") for b in (8, 16, 32, 64)))


def _arrow_eligible(x) -> bool:
    import pandas as pd

    if isinstance(x, pd.DataFrame):
        if not x.columns.is_unique or x.columns.dtype == object and not all(
            isinstance(c, str) for c in x.columns
        ):
            return False
        if isinstance(x.columns, pd.MultiIndex):
            return False
        dtypes = list(x.dtypes)
    elif isinstance(x, pd.Series):
        dtypes = [x.dtype]
    elif type(x) is pd.RangeIndex:  # an index alone: Arrow would keep its length as rows
        return False
    else:
        dtypes = []
    index = x if isinstance(x, pd.Index) else x.index
    levels = index.levels if isinstance(index, pd.MultiIndex) else [index]
    dtypes += [lvl.dtype for lvl in levels]
    return all(_arrow_dtype_ok(d) for d in dtypes)


def _arrow_table(df):
    """``pa.Table.from_pandas(df, preserve_index=None)`` without its per-value work on plain
    numeric columns: ``from_pandas`` scans float columns to turn NaN into nulls (~0.7 GB/s
    here, slower than the disk), while ``pa.array`` on a numpy numeric array is a zero-copy
    view that keeps NaN as NaN (which ``to_pandas`` gives back unchanged, and as a view of
    the file since there is no null to fill). A RangeIndex is stored as metadata, not as a
    column (``preserve_index=None``). Anything unusual goes through ``from_pandas``."""
    import pyarrow as pa

    schema = pa.Schema.from_pandas(df, preserve_index=None)
    datas = [df.iloc[:, i] for i in range(df.shape[1])]
    index_fields = len(schema) - len(datas)
    if index_fields:
        if index_fields != df.index.nlevels:
            raise ValueError("unexpected index layout")
        datas += [df.index.get_level_values(i) for i in range(df.index.nlevels)]
    arrays = []
    for field, data in zip(schema, datas):
        dtype = data.dtype
        if isinstance(dtype, np.dtype) and dtype.kind in "iuf":
            arrays.append(pa.array(np.asarray(data), type=field.type))
        else:
            arrays.append(pa.array(data, type=field.type, from_pandas=True))
    return pa.Table.from_arrays(arrays, schema=schema)


def _encode_arrow(x) -> Encoded | None:
    import pandas as pd
    import pyarrow as pa

    if isinstance(x, pd.DataFrame):
        form, df, name = "frame", x, None
    elif isinstance(x, pd.Series):
        form, df, name = "series", x.to_frame(name="__series__"), x.name
    else:
        form, df, name = "index", pd.DataFrame(index=x), None
    try:
        try:
            table = _arrow_table(df)
        except (pa.ArrowException, TypeError, ValueError, KeyError, IndexError):
            table = pa.Table.from_pandas(df, preserve_index=None)
    except (pa.ArrowException, TypeError, ValueError):
        return None
    try:
        meta = {"form": form, "name": _plain(name),
                # Arrow keeps the values of a DatetimeIndex/TimedeltaIndex, not its freq
                "freq": getattr(df.index, "freqstr", None)}
        if form == "index":
            meta["index_name"] = _plain(x.name)
        else:  # Arrow keeps labels as strings: the labels themselves are restored exactly
            meta["columns"] = _columns_blob(df.columns)
    except _NotPlain:
        return None

    def write(sink):
        with pa.ipc.new_file(pa.PythonFile(sink, mode="w"), table.schema) as w:
            w.write_table(table)

    return Encoded("arrow", meta, int(table.nbytes), write)


def _decode_arrow(meta: dict, buf, offset: int, size: int):
    import pyarrow as pa

    table = pa.ipc.open_file(pa.py_buffer(buf).slice(offset, size)).read_all()
    df = table.to_pandas(split_blocks=True)
    if meta.get("freq"):
        df.index = type(df.index)(df.index, freq=meta["freq"])
    form = meta["form"]
    if "columns" in meta:
        df.columns = _columns(meta["columns"])
    if form == "frame":
        return _copy_on_write(df)
    if form == "series":
        s = df["__series__"]
        s.name = _unplain(meta["name"])
        return _copy_on_write(s)
    idx = df.index
    idx.name = _unplain(meta["index_name"]) if idx.nlevels == 1 else idx.name
    return idx


# -- pandas blocks ----------------------------------------------------------------------
_ALIGN = 64
_ZEROS = bytes(_ALIGN)
_BLOCK_KINDS = "biufcmM"


def _pad(sink, n: int) -> None:
    """Alignment padding (``n < _ALIGN`` zero bytes) between stored buffers."""
    if n:
        sink.write(_ZEROS[:n])


def _ndarray(values):
    """The numpy array behind pandas values of a numpy dtype (tz-naive datetime64 and
    timedelta64 blocks hold it in a DatetimeArray/TimedeltaArray), else None."""
    if type(values) is not np.ndarray:
        if not isinstance(values.dtype, np.dtype):
            return None
        values = getattr(values, "_ndarray", None)
        if type(values) is not np.ndarray:
            return None
    return values if values.dtype.kind in _BLOCK_KINDS else None


def _plain_index(index) -> bool:
    import pandas as pd

    return type(index) is pd.RangeIndex or (type(index) is pd.Index and _ndarray(index._values) is not None)


def _encode_blocks(x) -> Encoded | None:
    """pandas' blocks as raw buffers, or None when ``x`` is not all plain numpy."""
    import pandas as pd

    if not _plain_index(x.index):
        return None
    try:
        if isinstance(x, pd.DataFrame):
            arrays = [(_ndarray(b.values), b.mgr_locs.as_array) for b in x._mgr.blocks]
            if not all(v is not None and v.ndim == 2 for v, _ in arrays):
                return None
            meta = {"form": "frame", "columns": _columns_blob(x.columns)}
        else:
            values = _ndarray(x._values)
            if values is None or values.ndim != 1:
                return None
            arrays = [(values, None)]
            meta = {"form": "series", "name": _plain(x.name)}
        index = x.index
        meta["index_name"] = _plain(index.name)
    except _NotPlain:
        return None
    if type(index) is pd.RangeIndex:
        meta["range"] = [index.start, index.stop, index.step]
    else:
        arrays.append((_ndarray(index._values), "index"))
    parts, specs, offset, nbytes = [], [], 0, 0
    for values, place in arrays:
        raw, order = _raw_bytes(values)
        pad = -raw.nbytes % _ALIGN
        specs.append({"dtype": values.dtype.str, "shape": list(values.shape),
                      "order": order, "offset": offset,
                      "place": place if isinstance(place, str) or place is None else place.tolist()})
        parts.append((raw, pad))
        offset += raw.nbytes + pad
        nbytes += values.nbytes
    meta["arrays"] = specs

    def write(sink):
        for raw, pad in parts:
            sink.write(raw)
            _pad(sink, pad)

    return Encoded("blocks", meta, nbytes, write, offset)


def _decode_blocks(meta: dict, buf, offset: int, size: int):
    import pandas as pd
    from pandas.api.internals import create_dataframe_from_blocks

    blocks, index, data = [], None, None
    for spec in meta["arrays"]:
        dtype = np.dtype(spec["dtype"])
        shape = tuple(spec["shape"])
        values = _array_view(buf, offset + spec["offset"], math.prod(shape) * dtype.itemsize, dtype, shape,
                             spec["order"])
        place = spec["place"]
        if place == "index":
            index = pd.Index(values, copy=False)
        elif place is None:
            data = values
        else:
            blocks.append((values, np.asarray(place, dtype=np.intp)))
    if index is None:
        index = pd.RangeIndex(*meta["range"])
    index.name = _unplain(meta["index_name"])
    if meta["form"] == "series":
        return _copy_on_write(pd.Series(data, index=index, name=_unplain(meta["name"]), copy=False))
    return _copy_on_write(create_dataframe_from_blocks(blocks, index=index, columns=_columns(meta["columns"])))


def _copy_on_write(obj):
    """A shallow copy of ``obj`` that keeps ``obj`` alive: pandas then sees every block as
    shared and copies it before an in-place write (copy-on-write), instead of writing into
    the read-only map (``ValueError: assignment destination is read-only``)."""
    out = obj.copy(deep=False)
    object.__setattr__(out, "_mars_base", obj)  # not a column, not pickled
    return out


_COLUMNS: dict = {}
_COLUMN_BLOBS: dict = {}


def _columns_blob(columns) -> bytes:
    """The column labels as msgpack bytes of :func:`_index_meta` (raises _NotPlain);
    computed once per Index object in a row (the chunks of a tileable share theirs)."""
    cached = _COLUMN_BLOBS.get(id(columns))
    if cached is not None and cached[0] is columns:
        return cached[1]
    blob = msgpack.packb(_index_meta(columns), use_bin_type=True)
    if len(_COLUMN_BLOBS) >= 256:
        _COLUMN_BLOBS.clear()
    _COLUMN_BLOBS[id(columns)] = (columns, blob)
    return blob


def _columns(blob: bytes):
    """Column labels, decoded once per distinct set: the chunks of a tileable share them
    (an Index is immutable, so frames may share one object, as pandas' own operations do)."""
    cols = _COLUMNS.get(blob)
    if cols is None:
        if len(_COLUMNS) >= 256:
            _COLUMNS.clear()
        cols = _COLUMNS[blob] = _index_of(msgpack.unpackb(blob, raw=False))
    return cols


# -- tuples and lists of arrays / frames ------------------------------------------------
_SEQ_MAX = 65536


def _encode_item(x) -> Encoded | None:
    """A plain numpy array, or a frame / Series of pandas blocks; else None."""
    if type(x) in (np.ndarray, np.memmap) and x.dtype.kind in _RAW_KINDS and not x.dtype.hasobject:
        return _encode_numpy(x)
    if type(x) in _pandas_types()[:2]:
        return _encode_blocks(x)
    return None


def _encode_seq(x) -> Encoded | None:
    """Each item by its own codec, back to back (aligned); None unless every item is a
    plain array or frame (anything else pickles the whole sequence, as Dask would)."""
    encs = []
    for item in x:
        enc = _encode_item(item)
        if enc is None or enc.size is None:
            return None
        encs.append(enc)
    items, offset = [], 0
    for enc in encs:
        items.append({"kind": enc.kind, "meta": enc.meta, "offset": offset, "size": enc.size})
        offset += enc.size + (-enc.size % _ALIGN)

    def write(sink):
        for enc in encs:
            enc.write(sink)
            _pad(sink, -enc.size % _ALIGN)

    meta = {"form": "list" if type(x) is list else "tuple", "items": items}
    return Encoded("seq", meta, sum(e.nbytes for e in encs), write, offset)


def _decode_seq(meta: dict, buf, offset: int, size: int):
    out = [_DECODERS[it["kind"]](it["meta"], buf, offset + it["offset"], it["size"]) for it in meta["items"]]
    return out if meta["form"] == "list" else tuple(out)


# -- everything else: Dask's serialization ----------------------------------------------
def _encode_dask(x) -> Encoded:
    from distributed.protocol import serialize_bytelist
    from distributed.sizeof import safe_sizeof

    frames = serialize_bytelist(x, compression=False, on_error="raise")

    def write(sink):
        for f in frames:
            sink.write(f)

    size = sum(memoryview(f).nbytes for f in frames)
    return Encoded("dask", {}, safe_sizeof(x), write, size)


def _decode_dask(meta: dict, buf, offset: int, size: int):
    from distributed.protocol import deserialize_bytes

    return deserialize_bytes(memoryview(buf)[offset:offset + size])


def encode(x) -> Encoded:
    """Pick the codec for ``x`` (see the module docstring)."""
    enc = _encode_item(x)
    if enc is None and type(x) in (tuple, list) and 0 < len(x) <= _SEQ_MAX:
        enc = _encode_seq(x)
    if enc is not None:
        return enc
    if isinstance(x, _pandas_types()) and _arrow_eligible(x):
        enc = _encode_arrow(x)
        if enc is not None:
            return enc
    return _encode_dask(x)


_DECODERS = {"numpy": _decode_numpy, "blocks": _decode_blocks, "seq": _decode_seq, "arrow": _decode_arrow,
             "dask": _decode_dask}


def decode(kind: str, meta: dict, buf, offset: int, size: int):
    """The value stored in ``buf[offset:offset + size]``; views keep ``buf`` itself alive."""
    return _DECODERS[kind](meta, buf, offset, size)


# -- lz4 block stream -------------------------------------------------------------------
_BLOCK = struct.Struct("<II")
LZ4_BLOCK = 4 * 2**20


class Lz4Sink:
    """Wraps a sink: buffers raw bytes and writes ``[raw len][compressed len][block]``."""

    def __init__(self, sink):
        self.sink = sink
        self.buf = bytearray()
        self.raw = 0

    def writable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.raw

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    closed = False

    def _emit(self, block) -> None:
        import lz4.block

        comp = lz4.block.compress(block, store_size=False)
        self.sink.write(_BLOCK.pack(len(block), len(comp)) + comp)

    def write(self, data) -> int:
        mv = memoryview(data).cast("B")
        n = len(mv)
        self.raw += n
        if not self.buf and len(mv) >= LZ4_BLOCK:
            while len(mv) >= LZ4_BLOCK:
                self._emit(mv[:LZ4_BLOCK])
                mv = mv[LZ4_BLOCK:]
        self.buf += mv
        while len(self.buf) >= LZ4_BLOCK:
            self._emit(bytes(self.buf[:LZ4_BLOCK]))
            del self.buf[:LZ4_BLOCK]
        return n

    def finish(self) -> None:
        if self.buf:
            self._emit(bytes(self.buf))
            self.buf = bytearray()


def lz4_decompress(payload, out_alloc) -> memoryview:
    """Decompress a block stream into ``out_alloc(raw_size)``; returns the raw bytes view."""
    import lz4.block

    mv = memoryview(payload).cast("B")
    blocks, pos, total = [], 0, 0
    while pos < len(mv):
        raw, comp = _BLOCK.unpack_from(mv, pos)
        blocks.append((pos + _BLOCK.size, raw, comp))
        pos += _BLOCK.size + comp
        total += raw
    out = out_alloc(total)
    dst = memoryview(out)[:total]
    at = 0
    for start, raw, comp in blocks:
        dst[at:at + raw] = lz4.block.decompress(mv[start:start + comp], uncompressed_size=raw)
        at += raw
    return dst
