"""Lineage journal for scheduler failover: every key of every graph, across graphs.

Each ``update_graph`` is recorded (``record(graph_seq, entries)``) as one
:class:`JournalEntry` per key: its recipe (the pickled task spec, opaque here), its
dependencies, the graph sequence number, priority, tileable and boundary. Because the
journal spans graphs, ``lineage([key_of_graph_7], is_available)`` walks back into the keys
of graph 2 that graph 7 depended on.

On disk
    A private directory (0700, :func:`mars_dask._safe_files.private_dir`) of append-only
    segment files ``segment-NNNNNNNN.mdj`` (0600). Each record is a frame::

        magic FE 4D 4A 31 | length >I | zlib.crc32(payload) >I | MAC (32 bytes) | payload

    where the MAC is a keyed BLAKE2b of the payload
    (:class:`~mars_dask._safe_files.Authenticator`; by default with the secret kept in the
    directory: recipes are pickles, so nothing is accepted from disk that this journal's
    secret did not sign) and the payload is msgpack:
    ``[0, graph_seq, key, recipe, dependencies, priority, tileable, boundary]`` for an
    entry, ``[1, checkpoint_keys, forgotten_keys]`` for a :meth:`drop_before` marker.
    Re-recording a key replaces it (later record wins). A restarted scheduler reads the
    directory back with :meth:`LineageJournal.open`: segments are replayed in order. A bad
    record (bad magic, length past the end, bad CRC or MAC, undecodable payload) is skipped
    and the reader resynchronises on the next magic whose record checks out, logging what
    it skipped on ``mars_dask.plugins.journal``; later intact records are kept. Only a torn
    tail (bad bytes up to the end of the file, none of them a CRC-intact record) is
    truncated, so that later appends continue cleanly; records that are intact but fail the
    MAC (written with another secret) are never truncated away, only ignored.

Index
    Where each live entry is, its dependencies, graph sequence and checkpoint flag are
    kept in an SQLite database in the same directory (``index.sqlite``, created 0600 before
    SQLite opens it; WAL, ``synchronous=NORMAL``): table ``entries`` (key -> segment,
    offset, graph sequence, dependencies, checkpoint), ``edges`` (dependency -> dependent,
    for the live non-checkpoint entries: what :meth:`drop_before` asks) and ``segments``
    (size and modification time of each segment as indexed). Keys, and dependency lists,
    are stored msgpack-encoded as in the records. Each :meth:`record` /
    :meth:`drop_before` / compaction is one transaction, committed after its records are
    flushed. The index is a cache of the segments and never trusted over them: when it is
    missing, unreadable, fails ``PRAGMA quick_check``, was made with another secret or
    version, or its segments' sizes and times differ from the files (a crash between a
    write and its commit, a segment changed or damaged), it is rebuilt by replaying the
    segments (``rebuilt`` says why). It only locates records: :meth:`get` still reads the
    record, checks its CRC and MAC, and that it is the key asked for.

Memory
    Bounded, whatever the number of journaled keys: at most ``max_memory_entries`` entries
    (with their recipes) are kept in memory, oldest by insertion evicted first, and
    :meth:`offload` drops those of keys the scheduler forgot; everything else per key is in
    the index on disk (SQLite's page cache is capped at 8 MiB). An entry not in memory is
    read back from its segment by :meth:`get`, :meth:`lineage` and compaction (CRC- and
    MAC-checked; a record damaged since it was written counts as not journaled). The rest
    is per segment. On disk the journal grows with the live entries: dead records are
    reclaimed by deleting dead head segments and by compaction (below), so segments hold
    at most the live entries' records plus as many dead ones (or ``compact_min_dead``),
    and the index only live entries.

Checkpoints
    ``drop_before(keys)`` marks ``keys`` as checkpoints: lineage stops there, and every
    ancestor no longer needed by another live entry is forgotten (memory + index, and a
    marker record on disk); forgotten keys that were checkpoints themselves (superseded:
    no journaled recipe reads their checkpoint any more) are reported to the caller
    (``forgotten_checkpoints``), which may delete their files. Segments left with only
    forgotten entries at the head of the journal are deleted; once dead records outnumber
    live ones (and exceed ``compact_min_dead``) the journal is compacted: live entries are
    rewritten into a new segment and the old segments deleted. An iterative job that checkpoints every
    iteration therefore keeps a flat journal.
"""

from __future__ import annotations

import hmac
import logging
import os
import re
import sqlite3
import struct
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from itertools import islice
from pathlib import Path
from typing import Any, NamedTuple

import msgpack

from .._safe_files import MAC_SIZE, Authenticator, load_or_create_secret, open_private, private_dir

logger = logging.getLogger("mars_dask.plugins.journal")

Key = Hashable  # str, or a tuple of str/int (nested tuples allowed)

MAGIC = b"\xfeMJ1"
_HEADER = struct.Struct(">4sII")  # magic, payload length, crc32(payload)
_FRAME = _HEADER.size + MAC_SIZE  # bytes before the payload
_ENTRY, _DROP = 0, 1
_SEGMENT_RE = re.compile(r"^segment-(\d{8})\.mdj$")
_MAX_RECORD = 1 << 31


class JournalEntry(NamedTuple):
    key: Key
    recipe: bytes
    dependencies: tuple = ()
    priority: Any = 0  # int (or a Dask priority tuple)
    tileable: str | None = None
    boundary: str | None = None
    graph_seq: int = -1  # filled in by LineageJournal.record


class LineageIncomplete(KeyError):
    """Raised by :meth:`LineageJournal.lineage` when a needed key is neither available
    nor journaled; ``missing`` lists those keys."""

    def __init__(self, missing):
        self.missing = list(missing)
        super().__init__(f"keys neither available nor journaled: {self.missing[:10]!r}")


def _as_key(key: Any) -> Key:
    """msgpack gives lists back for tuples; keys from the scheduler are already flat
    tuples of str/int, returned as they are (this runs for every recorded key)."""
    t = type(key)
    if t is str or t is int:
        return key
    if t is tuple:
        for k in key:
            tk = type(k)
            if tk is not str and tk is not int:
                break
        else:
            return key
    if isinstance(key, list | tuple):
        return tuple(_as_key(k) for k in key)
    return key


def _segment_name(n: int) -> str:
    return f"segment-{n:08d}.mdj"


def _frame(payload_obj, mac0) -> bytes:
    """One record; ``mac0``: the keyed hash (``Authenticator.new()``) copied for each MAC."""
    return _frame_bytes(msgpack.packb(payload_obj, use_bin_type=True), mac0)


def _array_header(n: int) -> bytes:
    """The msgpack header of an array of ``n`` items (what ``packb`` writes before them)."""
    if n < 16:
        return bytes((0x90 | n,))
    if n < 1 << 16:
        return b"\xdc" + n.to_bytes(2, "big")
    return b"\xdd" + n.to_bytes(4, "big")


_EMPTY_ARRAY = _array_header(0)


def _frame_bytes(payload: bytes, mac0) -> bytes:
    if len(payload) >= _MAX_RECORD:
        raise ValueError(f"journal record too large ({len(payload)} bytes)")
    h = mac0.copy()
    h.update(payload)
    return _HEADER.pack(MAGIC, len(payload), zlib.crc32(payload)) + h.digest() + payload


def _unpack(payload: bytes):
    # use_list=False: keys (and dependency lists) come back as tuples
    return msgpack.unpackb(payload, use_list=False, raw=False, strict_map_key=False)


def _entry_from(rec) -> JournalEntry:
    _, seq, key, recipe, deps, priority, tileable, boundary = rec
    return JournalEntry(key, recipe, tuple(deps), priority, tileable, boundary, seq)


_NOT_AUTHENTIC = "MAC mismatch (not written with this journal's secret)"


def _check(data, pos: int, mac0):
    """``(record, end, None)`` for a good record at ``pos``, else ``(None, 0, why)``."""
    n = len(data)
    if n - pos < _FRAME:
        return None, 0, "truncated header"
    magic, length, crc = _HEADER.unpack_from(data, pos)
    if magic != MAGIC:
        return None, 0, "bad magic"
    start = pos + _FRAME
    end = start + length
    if end > n:
        return None, 0, "truncated payload"
    payload = data[start:end]
    if zlib.crc32(payload) != crc:
        return None, 0, "CRC mismatch"
    h = mac0.copy()
    h.update(payload)
    if not hmac.compare_digest(h.digest(), data[pos + _HEADER.size:start]):
        return None, 0, _NOT_AUTHENTIC
    try:
        rec = _unpack(payload)
        if not isinstance(rec, tuple) or rec[0] not in (_ENTRY, _DROP):
            raise ValueError("unknown record type")
    except Exception as e:  # noqa: BLE001 - any decode failure is corruption
        return None, 0, f"undecodable payload ({e})"
    return rec, end, None


def read_segment(path: Path, auth: Authenticator):
    """Yield ``(offset, record)`` for the good records of one segment, skipping bad ones
    (logged) and resynchronising on the next good record. Returns (``StopIteration.value``)
    ``(offset, why)`` of a torn tail to truncate, or ``(None, None)``."""
    with open(path, "rb") as f:
        data = f.read()
    mac0 = auth.new()
    pos, n = 0, len(data)
    while pos < n:
        rec, end, why = _check(data, pos, mac0)
        if rec is None:
            bad, first_why, intact = pos, why, why == _NOT_AUTHENTIC
            pos = data.find(MAGIC, pos + 1)
            while pos != -1:
                rec, end, why = _check(data, pos, mac0)
                if rec is not None:
                    break
                intact = intact or why == _NOT_AUTHENTIC
                pos = data.find(MAGIC, pos + 1)
            if pos == -1 and not intact:
                return bad, first_why
            logger.warning("lineage journal %s: skipped %d bytes at offset %d (%s)%s", path,
                           (n if pos == -1 else pos) - bad, bad, first_why,
                           "" if pos == -1 else f"; resynchronised at offset {pos}")
            if pos == -1:
                return None, None
        yield pos, rec
        pos = end
    return None, None


_INDEX_NAME = "index.sqlite"
_INDEX_VERSION = 1
_IN_CHUNK = 500  # keys per "key IN (...)" query
_BATCH = 10_000  # rows per executemany while rebuilding or compacting
_CHUNK = 4096  # entries indexed at a time by record()
_SCHEMA = """
CREATE TABLE meta(name TEXT PRIMARY KEY, value) WITHOUT ROWID;
CREATE TABLE entries(key BLOB PRIMARY KEY, seg INTEGER NOT NULL, off INTEGER NOT NULL,
                     seq INTEGER NOT NULL, deps BLOB NOT NULL, ckpt INTEGER NOT NULL DEFAULT 0
                     ) WITHOUT ROWID;
CREATE INDEX entries_seq ON entries(seq);
CREATE INDEX entries_ckpt ON entries(ckpt) WHERE ckpt;
CREATE TABLE edges(dep BLOB NOT NULL, child BLOB NOT NULL, PRIMARY KEY (dep, child)) WITHOUT ROWID;
CREATE TABLE segments(seg INTEGER PRIMARY KEY, records INTEGER NOT NULL, size INTEGER NOT NULL,
                      mtime INTEGER NOT NULL);
"""
# graph sequence numbers of live entries: a loose index scan (one B-tree probe per graph)
_LIVE_SEQS = """
WITH RECURSIVE s(x) AS (SELECT MIN(seq) FROM entries
                        UNION ALL SELECT (SELECT MIN(seq) FROM entries WHERE seq > x) FROM s
                        WHERE x IS NOT NULL)
SELECT x FROM s WHERE x IS NOT NULL
"""


def _kb(key) -> bytes:
    """A key (or a tuple of keys) as the index stores it: msgpack, as in the records."""
    return msgpack.packb(key, use_bin_type=True)


def _chunks(seq, n=_IN_CHUNK):
    seq = list(seq)
    for i in range(0, len(seq), n):
        yield seq[i:i + n]


class LineageJournal:
    """See the module docstring. Not process-safe (one writer per directory); thread-safe.
    ``auth``: the :class:`~mars_dask._safe_files.Authenticator` that signs and checks the
    records (default: one with the secret kept in ``directory``). After opening,
    ``rebuilt`` says why the index was rebuilt from the segments (``None``: it was not)."""

    def __init__(self, directory, max_memory_entries: int = 100_000, *, fsync: bool = False,
                 segment_bytes: int = 64 << 20, compact_min_dead: int = 1024,
                 auth: Authenticator | None = None):
        self.directory = Path(private_dir(str(directory)))
        # default: the secret kept in the directory itself (see the module docstring)
        self.auth = auth or Authenticator(load_or_create_secret(str(self.directory)))
        self._mac0 = self.auth.new()
        self._fingerprint = self.auth.mac(b"mars-dask lineage journal index", bytes([_INDEX_VERSION]))
        self.max_memory_entries = max(0, int(max_memory_entries))
        self.fsync = fsync
        self.segment_bytes = segment_bytes
        self.compact_min_dead = compact_min_dead
        self._lock = threading.RLock()
        # newest entries (with their checkpoint flag) until offloaded or evicted
        self._cache: OrderedDict[Key, tuple[JournalEntry, bool]] = OrderedDict()
        self._seg_live: dict[int, int] = {}  # segment -> live entries indexed there
        self._seg_records: dict[int, int] = {}  # segment -> entry records written there
        self._readers: dict[int, Any] = {}
        self._writer = None
        self._active = -1
        self._db: sqlite3.Connection | None = None
        self.rebuilt: str | None = None
        self._open_index()

    @classmethod
    def open(cls, directory, **kwargs) -> LineageJournal:
        """Open (and recover) the journal in ``directory``, e.g. after a killed scheduler."""
        return cls(directory, **kwargs)

    # ------------------------------------------------------------------ the index

    @property
    def index_path(self) -> Path:
        return self.directory / _INDEX_NAME

    def _index_files(self) -> list[Path]:
        p = self.index_path
        return [p, p.with_name(p.name + "-wal"), p.with_name(p.name + "-shm"),
                p.with_name(p.name + "-journal")]

    def _connect(self) -> None:
        path = str(self.index_path)
        os.close(open_private(path, os.O_RDWR | os.O_CREAT))  # 0600 before sqlite opens it
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db = db
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")  # a cache of the segments: rebuilt if behind
        db.execute("PRAGMA journal_size_limit=16777216")
        db.execute("PRAGMA cache_size=-2048")  # 2 MiB of pages at most (scheduler memory)

    def _disconnect(self) -> None:
        if self._db is not None:
            try:
                self._db.close()
            except sqlite3.Error:
                pass
            self._db = None

    def _check_index(self, segments: list[int]) -> str | None:
        """``None`` if the index describes exactly these segments, else why not."""
        db = self._db
        if not db.execute("SELECT 1 FROM sqlite_master WHERE type='table'").fetchone():
            return "missing"
        meta = dict(db.execute("SELECT name, value FROM meta"))
        if meta.get("version") != _INDEX_VERSION:
            return "another version"
        if meta.get("auth") != self._fingerprint:
            return "made with another secret"
        if db.execute("PRAGMA quick_check").fetchone()[0] != "ok":
            return "damaged"
        recorded = {seg: (records, size, mtime)
                    for seg, records, size, mtime in db.execute("SELECT * FROM segments")}
        if set(recorded) != set(segments):
            return "its segments are not those on disk"
        for seg in segments:
            st = os.stat(self._path(seg))
            if (st.st_size, st.st_mtime_ns) != recorded[seg][1:]:
                return f"{_segment_name(seg)} changed since it was indexed"
        self._seg_records = {seg: r[0] for seg, r in recorded.items()}
        self._seg_live = dict.fromkeys(segments, 0)
        self._seg_live.update(db.execute("SELECT seg, COUNT(*) FROM entries GROUP BY seg"))
        return None

    def _open_index(self) -> None:
        segments = self._segments()
        try:
            self._connect()
            why = self._check_index(segments)
        except (sqlite3.Error, OSError, ValueError, TypeError) as e:
            why = f"unreadable ({e})"
        if why is not None:
            if segments:
                logger.warning("lineage journal %s: rebuilding the index from the segments (index %s)",
                               self.directory, why)
            self.rebuilt = why
            self._rebuild(segments)
        self._open_writer(segments[-1] if segments else 0)

    def _rebuild(self, segments: list[int] | None = None) -> None:
        """(Re)create the index from the segments: the only source of truth."""
        self._disconnect()
        for p in self._index_files():
            try:
                p.unlink()
            except FileNotFoundError:
                pass
        self._cache.clear()
        self._connect()
        db = self._db
        db.executescript(_SCHEMA)
        db.execute("BEGIN")
        db.executemany("INSERT INTO meta VALUES (?, ?)",
                       [("version", _INDEX_VERSION), ("auth", self._fingerprint)])
        self._replay(self._segments() if segments is None else segments)
        db.execute("COMMIT")

    def _replay(self, segments: list[int]) -> None:
        """Replay the segments in order into the (empty) index, in the open transaction."""
        db = self._db
        pending: list = []

        def flush():
            db.executemany("INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?, ?, 0)", pending)
            pending.clear()

        self._seg_records = {}
        for seg in segments:
            path = self._path(seg)
            records = 0
            gen = read_segment(path, self.auth)
            while True:
                try:
                    offset, rec = next(gen)
                except StopIteration as stop:
                    torn, problem = stop.value
                    break
                if rec[0] == _ENTRY:
                    records += 1
                    pending.append((_kb(rec[2]), seg, offset, rec[1], _kb(tuple(rec[4]))))
                    if len(pending) >= _BATCH:
                        flush()
                else:
                    flush()
                    db.executemany("DELETE FROM entries WHERE key = ?", [(_kb(k),) for k in rec[2]])
                    db.executemany("UPDATE entries SET ckpt = 1 WHERE key = ?", [(_kb(k),) for k in rec[1]])
            flush()
            self._seg_records[seg] = records
            if torn is not None:
                size = path.stat().st_size
                logger.warning("lineage journal %s: torn record at offset %d (%s); skipping "
                               "%d trailing bytes and truncating", path, torn, problem,
                               size - torn)
                with open(path, "r+b") as f:
                    f.truncate(torn)
                    f.flush()
                    os.fsync(f.fileno())
        # dependency edges, once, from the final state (a checkpoint has none: lineage stops)
        edges: list = []
        ins = db.cursor()
        for kb, depsb in db.execute("SELECT key, deps FROM entries WHERE ckpt = 0").fetchall():
            edges.extend((_kb(d), kb) for d in _unpack(depsb))
            if len(edges) >= _BATCH:
                ins.executemany("INSERT OR IGNORE INTO edges VALUES (?, ?)", edges)
                edges.clear()
        ins.executemany("INSERT OR IGNORE INTO edges VALUES (?, ?)", edges)
        self._seg_live = dict.fromkeys(segments, 0)
        self._seg_live.update(db.execute("SELECT seg, COUNT(*) FROM entries GROUP BY seg"))
        self._save_segments(segments)

    def _save_segments(self, segs) -> None:
        """Record the segments' sizes and modification times as indexed (see _check_index)."""
        rows = []
        for seg in segs:
            if seg == self._active and self._writer is not None:
                self._writer.flush()
                st = os.fstat(self._writer.fileno())
            else:
                try:
                    st = os.stat(self._path(seg))
                except FileNotFoundError:
                    continue
            rows.append((seg, self._seg_records.get(seg, 0), st.st_size, st.st_mtime_ns))
        self._db.executemany("INSERT OR REPLACE INTO segments VALUES (?, ?, ?, ?)", rows)

    def _begin(self) -> None:
        self._db.execute("BEGIN")

    def _commit(self) -> None:
        self._db.execute("COMMIT")

    def _abort(self) -> None:
        """A write failed midway: the segments are the truth, rebuild the index from them."""
        try:
            if self._db is not None and self._db.in_transaction:
                self._db.execute("ROLLBACK")
        except sqlite3.Error:
            pass
        try:
            if self._writer is not None:
                self._writer.flush()
        except OSError:
            pass
        logger.warning("lineage journal %s: a write failed; rebuilding the index", self.directory)
        self._rebuild()
        self._save_segments([self._active])

    def _row(self, key):
        """``(seg, offset, graph_seq, packed dependencies, checkpoint)`` of ``key``, or None."""
        return self._db.execute("SELECT seg, off, seq, deps, ckpt FROM entries WHERE key = ?",
                                (_kb(key),)).fetchone()

    def _rows_of(self, kbs) -> dict:
        """``{packed key: (seg, packed dependencies, checkpoint)}`` of those journaled."""
        out = {}
        for chunk in _chunks(kbs):
            q = f"SELECT key, seg, deps, ckpt FROM entries WHERE key IN ({','.join('?' * len(chunk))})"
            for kb, seg, depsb, ckpt in self._db.execute(q, chunk):
                out[kb] = (seg, depsb, ckpt)
        return out

    # ------------------------------------------------------------------ segments

    def _segments(self) -> list[int]:
        out = []
        for p in self.directory.iterdir():
            m = _SEGMENT_RE.match(p.name)
            if m:
                out.append(int(m.group(1)))
        return sorted(out)

    def _path(self, seg: int) -> Path:
        return self.directory / _segment_name(seg)

    # ------------------------------------------------------------------ writing

    def _open_writer(self, seg: int) -> None:
        if self._writer is not None:
            self._writer.close()
        self._active = seg
        self._seg_live.setdefault(seg, 0)
        self._seg_records.setdefault(seg, 0)
        fd = open_private(str(self._path(seg)), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        self._writer = os.fdopen(fd, "ab")
        self._save_segments([seg])  # in the caller's transaction, if any

    def _sync(self, fsync) -> None:
        self._writer.flush()
        if self.fsync if fsync is None else fsync:
            os.fsync(self._writer.fileno())

    def record(self, graph_seq: int, entries: Iterable[JournalEntry], *,
               fsync: bool | None = None, only_new: bool = False) -> int:
        """Append ``entries`` of graph ``graph_seq``; returns how many were recorded. A key
        already journaled is replaced (the same key twice in ``entries``: the later one
        wins); with ``only_new`` it is kept, and its new entry not written. One flush and
        one index transaction per call (plus ``os.fsync`` when ``fsync`` / the journal's
        default says so); ``entries`` are indexed in chunks, so what a call holds in memory
        besides them is bounded."""
        seq = int(graph_seq)
        n = 0
        with self._lock:
            self._begin()
            try:
                touched = {self._active}
                it = iter(entries)
                while True:
                    chunk: dict = {}
                    for e in islice(it, _CHUNK):
                        key = _as_key(e.key)
                        chunk.pop(key, None)
                        chunk[key] = e
                    if not chunk:
                        break
                    n += self._record_chunk(seq, chunk, fsync, only_new, touched)
                self._sync(fsync)
                self._save_segments(touched)
                self._commit()
            except BaseException:
                self._abort()
                raise
            if n:
                self._maybe_compact()
        return n

    def _record_chunk(self, seq: int, chunk: dict, fsync, only_new: bool, touched: set) -> int:
        """Write and index ``chunk`` (key -> entry), in :meth:`record`'s transaction."""
        db = self._db
        kbs = {k: _kb(k) for k in chunk}
        existing = self._rows_of(kbs.values())  # also keys of earlier chunks of this call
        if existing:
            if only_new:
                chunk = {k: e for k, e in chunk.items() if kbs[k] not in existing}
            else:
                old_edges = []
                for kb, (seg, depsb, ckpt) in existing.items():
                    self._seg_live[seg] -= 1
                    if not ckpt:
                        old_edges.extend((_kb(d), kb) for d in _unpack(depsb))
                db.executemany("DELETE FROM edges WHERE dep = ? AND child = ?", old_edges)
        rows, edges = [], []
        offset = self._writer.tell()
        write = self._writer.write
        mac0, active, cache, keep = self._mac0, self._active, self._cache, self.max_memory_entries
        # the payload is the msgpack array [_ENTRY, seq, key, recipe, deps, priority,
        # tileable, boundary], assembled from the packed key and dependencies that the
        # index stores too (the same bytes as packing the whole list)
        prefix = _array_header(8) + _kb(_ENTRY) + _kb(seq)
        n = here = 0  # here: entries written to the active segment
        for key, e in chunk.items():
            kb = kbs[key]
            deps = e.dependencies
            if deps:
                deps = tuple(_as_key(d) for d in deps)
                dkbs = [kbs.get(d) or _kb(d) for d in deps]
                depsb = _array_header(len(dkbs)) + b"".join(dkbs)
                edges.extend([(d, kb) for d in dkbs])
            else:
                deps, depsb = (), _EMPTY_ARRAY
            recipe = bytes(e.recipe)
            priority = _as_key(e.priority)
            payload = b"".join((prefix, kb, _kb(recipe), depsb,
                                _kb((priority, e.tileable, e.boundary))[1:]))
            frame = _frame_bytes(payload, mac0)
            write(frame)
            rows.append((kb, active, offset, seq, depsb))
            if keep:
                if key in cache:
                    del cache[key]
                cache[key] = (JournalEntry(key, recipe, deps, priority, e.tileable, e.boundary, seq), False)
                if len(cache) > keep:
                    cache.popitem(last=False)
            offset += len(frame)
            n += 1
            here += 1
            if offset >= self.segment_bytes:
                self._seg_records[active] += here
                self._seg_live[active] += here
                here = 0
                self._sync(fsync)
                self._open_writer(self._active + 1)
                active = self._active
                touched.add(active)
                offset = self._writer.tell()
                write = self._writer.write
        self._seg_records[active] += here
        self._seg_live[active] += here
        db.executemany("INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?, ?, 0)", rows)
        db.executemany("INSERT OR IGNORE INTO edges VALUES (?, ?)", edges)
        return n

    # ------------------------------------------------------------------ reading

    def __contains__(self, key) -> bool:
        key = _as_key(key)
        with self._lock:
            if key in self._cache:
                return True
            return self._db.execute("SELECT 1 FROM entries WHERE key = ?", (_kb(key),)).fetchone() is not None

    def journaled(self, keys) -> list:
        """Those of ``keys`` that are journaled (one index query per few hundred keys)."""
        keys = [_as_key(k) for k in keys]
        with self._lock:
            found = self._rows_of([_kb(k) for k in keys])
        return [k for k in keys if _kb(k) in found]

    def __len__(self) -> int:
        with self._lock:
            return sum(self._seg_live.values())

    def __iter__(self):
        return iter(self.keys())

    def keys(self) -> list:
        """Every journaled key (read from the index on disk: for tests and tools)."""
        with self._lock:
            return [_unpack(kb) for (kb,) in self._db.execute("SELECT key FROM entries")]

    def live_graph_seqs(self) -> set:
        """Graph sequence numbers that live entries were recorded with."""
        with self._lock:
            return {x for (x,) in self._db.execute(_LIVE_SEQS)}

    def max_graph_seq(self) -> int:
        with self._lock:
            return self._db.execute("SELECT MAX(seq) FROM entries").fetchone()[0] or 0

    def is_checkpoint(self, key) -> bool:
        key = _as_key(key)
        with self._lock:
            c = self._cache.get(key)
            if c is not None:
                return c[1]
            row = self._row(key)
            return bool(row and row[4])

    def offload(self, keys) -> None:
        """Drop the in-memory copies of ``keys``' entries (the scheduler forgot them): they
        stay on disk, where :meth:`get` reads them back if their lineage is needed."""
        with self._lock:
            cache = self._cache
            for k in keys:
                cache.pop(_as_key(k), None)
            if not cache:
                self._cache = OrderedDict()  # an emptied dict keeps its table: let it go

    def _lookup(self, key):
        """``(entry, is_checkpoint)`` of ``key`` or None (also for a damaged record)."""
        c = self._cache.get(key)
        if c is not None:
            return c
        row = self._row(key)
        if row is None:
            return None
        try:
            return self._read(row[0], row[1], key), bool(row[4])
        except OSError as e:  # damaged since it was written: its lineage is unavailable
            logger.warning("%s", e)
            return None

    def get(self, key) -> JournalEntry | None:
        with self._lock:
            found = self._lookup(_as_key(key))
        return None if found is None else found[0]

    def _read(self, seg: int, offset: int, key=None) -> JournalEntry:
        """The entry at ``offset`` of segment ``seg``, CRC- and MAC-checked (and, given
        ``key``, checked to be ``key``'s: the index only locates records)."""
        if seg == self._active:
            self._writer.flush()
        f = self._readers.get(seg)
        if f is None:
            try:
                f = self._readers[seg] = open(self._path(seg), "rb")  # noqa: SIM115 - cached
            except FileNotFoundError:
                raise OSError(f"lineage journal: {self._path(seg)} is missing") from None
        f.seek(offset)
        data = f.read(_FRAME)
        if len(data) == _FRAME:
            data += f.read(_HEADER.unpack_from(data)[1])
        rec, _, why = _check(data, 0, self._mac0)
        if rec is None or rec[0] != _ENTRY:
            raise OSError(f"lineage journal: bad record in {self._path(seg)} at {offset} "
                          f"({why or 'not an entry'})")
        entry = _entry_from(rec)
        if key is not None and entry.key != key:
            raise OSError(f"lineage journal: the record in {self._path(seg)} at {offset} is not "
                          f"{key!r}'s (index out of date)")
        return entry

    def lineage(self, keys, is_available: Callable[[Key], bool] = lambda k: False
                ) -> list[JournalEntry]:
        """Entries needed to rebuild ``keys``, inputs first. The walk skips keys for which
        ``is_available(key)`` is true (targets included: nothing to rebuild), and includes
        but does not walk past checkpointed entries (their recipe reads the checkpoint; a
        boundary entry whose checkpoint was never written is walked past like any other).
        Raises :class:`LineageIncomplete` when a needed key is neither available nor
        journaled."""
        out: list[JournalEntry] = []
        done: set = set()
        missing: list = []
        with self._lock:
            for root in keys:
                root = _as_key(root)
                if root in done:
                    continue
                # iterative post-order DFS: (key, expanded?)
                stack: list = [(root, False)]
                entries: dict = {}
                while stack:
                    key, expanded = stack.pop()
                    if expanded:
                        if key not in done:
                            done.add(key)
                            out.append(entries.pop(key))
                        continue
                    if key in done or key in entries:
                        continue
                    if is_available(key):
                        done.add(key)
                        continue
                    found = self._lookup(key)
                    if found is None:
                        done.add(key)
                        missing.append(key)
                        continue
                    e, is_checkpoint = found
                    entries[key] = e
                    stack.append((key, True))
                    if is_checkpoint:
                        continue
                    for d in reversed(e.dependencies):
                        if d not in done and d not in entries:
                            stack.append((d, False))
        if missing:
            raise LineageIncomplete(missing)
        return out

    # ------------------------------------------------------------------ checkpoints

    def drop_before(self, keys, *, fsync: bool | None = None,
                    forgotten_checkpoints: list | None = None) -> list:
        """Mark journaled ``keys`` as checkpoints and forget every ancestor no other live
        entry needs any more. Returns the forgotten keys; those that were checkpoints
        themselves (superseded: their checkpoint files are needed no more by the journal)
        are also appended to ``forgotten_checkpoints``."""
        with self._lock:
            db = self._db
            kbmap = {}
            for k in map(_as_key, keys):
                if k not in kbmap:
                    kbmap[k] = _kb(k)
            rows = self._rows_of(kbmap.values())
            new = [(k, _unpack(rows[kb][1])) for k, kb in kbmap.items()
                   if kb in rows and not rows[kb][2]]
            if not new:
                return []
            newset = {k for k, _ in new}
            forgotten: list = []
            self._begin()
            try:
                db.executemany("UPDATE entries SET ckpt = 1 WHERE key = ?", [(kbmap[k],) for k, _ in new])
                db.executemany("DELETE FROM edges WHERE dep = ? AND child = ?",  # cut their edges
                               [(_kb(d), kbmap[k]) for k, deps in new for d in deps])
                queue: list = []
                cache = self._cache
                for k, deps in new:
                    c = cache.get(k)
                    if c is not None:
                        cache[k] = (c[0], True)
                    queue.extend(deps)
                # in waves (one query per few hundred keys, not several per key): a key goes
                # once no live entry depends on it; its dependencies are the next wave
                gone: set = set()
                wave = queue
                while wave:
                    cand = {}
                    for k in wave:
                        if k not in newset and k not in gone and k not in cand:
                            cand[k] = _kb(k)
                    rows = self._rows_of(cand.values())
                    kbs = [kb for kb in cand.values() if kb in rows]
                    needed = set()
                    for chunk in _chunks(kbs):
                        needed.update(kb for (kb,) in db.execute(
                            f"SELECT DISTINCT dep FROM edges WHERE dep IN ({','.join('?' * len(chunk))})",
                            chunk))
                    wave, dead_edges, dead = [], [], []
                    for k, kb in cand.items():
                        if kb not in rows or kb in needed:
                            continue  # not journaled, or still needed
                        seg, depsb, ckpt = rows[kb]
                        deps = () if ckpt else _unpack(depsb)
                        dead_edges.extend((_kb(d), kb) for d in deps)
                        dead.append((kb,))
                        self._seg_live[seg] -= 1
                        self._cache.pop(k, None)
                        gone.add(k)
                        forgotten.append(k)
                        if ckpt and forgotten_checkpoints is not None:
                            forgotten_checkpoints.append(k)
                        wave.extend(deps)
                    db.executemany("DELETE FROM edges WHERE dep = ? AND child = ?", dead_edges)
                    db.executemany("DELETE FROM entries WHERE key = ?", dead)
                self._writer.write(_frame([_DROP, [k for k, _ in new], forgotten], self._mac0))
                self._sync(fsync)
                self._save_segments([self._active])
                self._commit()
            except BaseException:
                self._abort()
                raise
            self._delete_dead_head()
            self._maybe_compact()
            return forgotten

    def checkpoint(self, graph_seq: int, entry: JournalEntry, *, fsync: bool | None = None,
                   forgotten_checkpoints: list | None = None) -> list:
        """``entry.key`` was checkpointed: forget the lineage behind it (as
        :meth:`drop_before`) and record ``entry`` (the recipe that reads the checkpoint, no
        dependencies) in its place. Returns the forgotten keys."""
        with self._lock:
            forgotten = self.drop_before([entry.key], fsync=False,
                                         forgotten_checkpoints=forgotten_checkpoints)
            self.record(graph_seq, [entry], fsync=False)
            self.drop_before([entry.key], fsync=fsync)  # record() replaced the marked entry
            return forgotten

    def _delete_dead_head(self) -> None:
        # Only a prefix of all-dead segments can go: a later segment's drop markers may
        # refer to entries of an earlier one, never the other way round.
        for seg in sorted(self._seg_live):
            if seg == self._active or self._seg_live[seg] > 0:
                break
            self._remove_segment(seg)

    def _remove_segment(self, seg: int) -> None:
        f = self._readers.pop(seg, None)
        if f is not None:
            f.close()
        self._seg_live.pop(seg, None)
        self._seg_records.pop(seg, None)
        self._db.execute("DELETE FROM segments WHERE seg = ?", (seg,))
        try:
            self._path(seg).unlink()
        except FileNotFoundError:
            pass

    def dead_records(self) -> int:
        return sum(self._seg_records.values()) - len(self)

    def _maybe_compact(self) -> None:
        dead = self.dead_records()
        if dead >= self.compact_min_dead and dead > len(self):
            self.compact()

    def compact(self) -> None:
        """Rewrite live entries (in record order) into a new segment, delete the old ones.
        A crash midway leaves old segments plus a (possibly torn) copy: replay is the same."""
        with self._lock:
            db = self._db
            old = sorted(self._seg_live)
            locs = db.execute("SELECT key, seg, off FROM entries ORDER BY seg, off").fetchall()
            ckpts = [_unpack(kb) for (kb,) in db.execute("SELECT key FROM entries WHERE ckpt")]
            new = self._active + 1
            self._begin()
            try:
                self._open_writer(new)
                updates, lost = [], []
                for kb, seg, off in locs:
                    key = _unpack(kb)
                    c = self._cache.get(key)
                    try:
                        e = c[0] if c is not None else self._read(seg, off, key)
                    except OSError as exc:  # damaged since written: not journaled any more
                        logger.warning("%s", exc)
                        lost.append((kb,))
                        self._seg_live[seg] -= 1
                        continue
                    offset = self._writer.tell()
                    self._writer.write(_frame([_ENTRY, e.graph_seq, e.key, e.recipe,
                                               e.dependencies, e.priority, e.tileable,
                                               e.boundary], self._mac0))
                    self._seg_records[new] += 1
                    self._seg_live[seg] -= 1
                    self._seg_live[new] += 1
                    updates.append((new, offset, kb))
                    if len(updates) >= _BATCH:
                        db.executemany("UPDATE entries SET seg = ?, off = ? WHERE key = ?", updates)
                        updates.clear()
                db.executemany("UPDATE entries SET seg = ?, off = ? WHERE key = ?", updates)
                if lost:
                    db.executemany("DELETE FROM edges WHERE child = ?", lost)
                    db.executemany("DELETE FROM entries WHERE key = ?", lost)
                if ckpts:
                    self._writer.write(_frame([_DROP, ckpts, []], self._mac0))
                self._writer.flush()
                os.fsync(self._writer.fileno())
                self._save_segments([new])
                self._commit()
            except BaseException:
                self._abort()
                raise
            for seg in old:
                self._remove_segment(seg)

    # ------------------------------------------------------------------ misc

    def stats(self) -> dict:
        with self._lock:
            segs = [self._path(s) for s in sorted(self._seg_live)]
            if self._writer is not None:
                self._writer.flush()
            n = len(self)
            return {
                "entries": n,
                "entries_in_memory": len(self._cache),
                # every entry is persisted; these are the ones held only on disk
                "entries_on_disk": n - len(self._cache),
                "checkpoints": self._db.execute("SELECT COUNT(*) FROM entries WHERE ckpt").fetchone()[0],
                "dead_records": self.dead_records(),
                "segments": len(segs),
                "bytes": sum(p.stat().st_size for p in segs if p.exists()),
                "index_bytes": sum(p.stat().st_size for p in self._index_files() if p.exists()),
            }

    def close(self) -> None:
        with self._lock:
            for f in self._readers.values():
                f.close()
            self._readers.clear()
            if self._writer is not None:
                self._sync(None)
                self._writer.close()
                self._writer = None
            self._disconnect()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
