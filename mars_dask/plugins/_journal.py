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

Memory
    At most ``max_memory_entries`` entries (with their recipes) are kept in memory, oldest
    by insertion evicted first; every live key also has a small index record
    ``(segment, offset, dependencies)`` so an evicted entry is read back from disk by
    :meth:`get` (CRC- and MAC-checked; a record damaged since it was written counts as not
    journaled) and :meth:`drop_before` never needs disk reads.

Checkpoints
    ``drop_before(keys)`` marks ``keys`` as checkpoints: lineage stops there, and every
    ancestor no longer needed by another live entry is forgotten (memory + index, and a
    marker record on disk). Segments left with only forgotten entries at the head of the
    journal are deleted; once dead records outnumber live ones (and exceed
    ``compact_min_dead``) the journal is compacted: live entries are rewritten into a new
    segment and the old segments deleted. An iterative job that checkpoints every
    iteration therefore keeps a flat journal.
"""

from __future__ import annotations

import hmac
import logging
import os
import re
import struct
import threading
import zlib
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Iterable
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
    payload = msgpack.packb(payload_obj, use_bin_type=True)
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


class LineageJournal:
    """See the module docstring. Not process-safe (one writer per directory); thread-safe.
    ``auth``: the :class:`~mars_dask._safe_files.Authenticator` that signs and checks the
    records (default: one with the secret kept in ``directory``)."""

    def __init__(self, directory, max_memory_entries: int = 100_000, *, fsync: bool = False,
                 segment_bytes: int = 64 << 20, compact_min_dead: int = 1024,
                 auth: Authenticator | None = None):
        self.directory = Path(private_dir(str(directory)))
        # default: the secret kept in the directory itself (see the module docstring)
        self.auth = auth or Authenticator(load_or_create_secret(str(self.directory)))
        self._mac0 = self.auth.new()
        self.max_memory_entries = max(0, int(max_memory_entries))
        self.fsync = fsync
        self.segment_bytes = segment_bytes
        self.compact_min_dead = compact_min_dead
        self._lock = threading.RLock()
        self._cache: OrderedDict[Key, JournalEntry] = OrderedDict()
        self._index: dict[Key, tuple[int, int]] = {}  # key -> (segment, offset)
        self._deps: dict[Key, tuple] = {}
        self._seqs: dict[Key, int] = {}  # key -> graph sequence number of its live entry
        self._dependents: dict[Key, int] = {}  # live, non-checkpoint entries depending on key
        self._checkpoints: set[Key] = set()
        self._seg_live: dict[int, int] = {}  # segment -> live entries indexed there
        self._seg_records: dict[int, int] = {}  # segment -> entry records written there
        self._readers: dict[int, Any] = {}
        self._writer = None
        self._active = -1
        self._replay()

    @classmethod
    def open(cls, directory, **kwargs) -> LineageJournal:
        """Open (and recover) the journal in ``directory``, e.g. after a killed scheduler."""
        return cls(directory, **kwargs)

    # ------------------------------------------------------------------ recovery

    def _segments(self) -> list[int]:
        out = []
        for p in self.directory.iterdir():
            m = _SEGMENT_RE.match(p.name)
            if m:
                out.append(int(m.group(1)))
        return sorted(out)

    def _path(self, seg: int) -> Path:
        return self.directory / _segment_name(seg)

    def _replay(self) -> None:
        segments = self._segments()
        for seg in segments:
            path = self._path(seg)
            self._seg_live.setdefault(seg, 0)
            self._seg_records.setdefault(seg, 0)
            gen = read_segment(path, self.auth)
            while True:
                try:
                    offset, rec = next(gen)
                except StopIteration as stop:
                    torn, problem = stop.value
                    break
                if rec[0] == _ENTRY:
                    entry = _entry_from(rec)
                    self._seg_records[seg] += 1
                    self._put(entry, seg, offset, maintain_dependents=False)
                else:
                    self._apply_drop(rec[1], rec[2])
            if torn is not None:
                size = path.stat().st_size
                logger.warning("lineage journal %s: torn record at offset %d (%s); skipping "
                               "%d trailing bytes and truncating", path, torn, problem,
                               size - torn)
                with open(path, "r+b") as f:
                    f.truncate(torn)
                    f.flush()
                    os.fsync(f.fileno())
        # dependents are rebuilt once, from the final state
        for key, deps in self._deps.items():
            if key not in self._checkpoints:
                for d in deps:
                    self._dependents[d] = self._dependents.get(d, 0) + 1
        self._open_writer(segments[-1] if segments else 0)

    def _apply_drop(self, checkpoints, forgotten) -> None:
        for k in forgotten:
            self._forget(k)
        for k in checkpoints:
            if k in self._index:
                self._checkpoints.add(k)

    # ------------------------------------------------------------------ state helpers

    def _put(self, entry: JournalEntry, seg: int, offset: int, maintain_dependents=True):
        key = entry.key
        if key in self._index:
            self._unlink(key, maintain_dependents)
        self._index[key] = (seg, offset)
        self._deps[key] = entry.dependencies
        self._seqs[key] = entry.graph_seq
        self._seg_live[seg] = self._seg_live.get(seg, 0) + 1
        if maintain_dependents:
            for d in entry.dependencies:
                self._dependents[d] = self._dependents.get(d, 0) + 1
        if self.max_memory_entries:
            self._cache[key] = entry
            while len(self._cache) > self.max_memory_entries:
                self._cache.popitem(last=False)

    def _unlink(self, key, maintain_dependents=True) -> None:
        """Remove ``key``'s entry from memory and index (its own dependents count stays)."""
        seg, _ = self._index.pop(key)
        self._seg_live[seg] -= 1
        deps = self._deps.pop(key)
        self._seqs.pop(key, None)
        self._cache.pop(key, None)
        was_checkpoint = key in self._checkpoints
        self._checkpoints.discard(key)
        if maintain_dependents and not was_checkpoint:
            for d in deps:
                self._decref(d)

    def _decref(self, d) -> int:
        c = self._dependents.get(d, 0) - 1
        if c <= 0:
            self._dependents.pop(d, None)
            return 0
        self._dependents[d] = c
        return c

    def _forget(self, key) -> None:
        if key in self._index:
            self._unlink(key, maintain_dependents=False)

    # ------------------------------------------------------------------ writing

    def _open_writer(self, seg: int) -> None:
        if self._writer is not None:
            self._writer.close()
        self._active = seg
        self._seg_live.setdefault(seg, 0)
        self._seg_records.setdefault(seg, 0)
        fd = open_private(str(self._path(seg)), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        self._writer = os.fdopen(fd, "ab")

    def _sync(self, fsync) -> None:
        self._writer.flush()
        if self.fsync if fsync is None else fsync:
            os.fsync(self._writer.fileno())

    def record(self, graph_seq: int, entries: Iterable[JournalEntry], *,
               fsync: bool | None = None) -> int:
        """Append ``entries`` of graph ``graph_seq``; returns how many were recorded. One
        flush per call (plus ``os.fsync`` when ``fsync`` / the journal's default says so)."""
        n = 0
        seq = int(graph_seq)
        with self._lock:
            offset = self._writer.tell()
            write = self._writer.write
            for e in entries:
                key = _as_key(e.key)
                deps = tuple(_as_key(d) for d in e.dependencies)
                entry = JournalEntry(key, bytes(e.recipe), deps, _as_key(e.priority), e.tileable,
                                     e.boundary, seq)
                frame = _frame([_ENTRY, seq, key, entry.recipe, deps, entry.priority,
                                entry.tileable, entry.boundary], self._mac0)
                write(frame)
                self._seg_records[self._active] += 1
                self._put(entry, self._active, offset)
                offset += len(frame)
                n += 1
                if offset >= self.segment_bytes:
                    self._sync(fsync)
                    self._open_writer(self._active + 1)
                    offset = self._writer.tell()
                    write = self._writer.write
            self._sync(fsync)
            self._maybe_compact()
        return n

    # ------------------------------------------------------------------ reading

    def __contains__(self, key) -> bool:
        return _as_key(key) in self._index

    def __len__(self) -> int:
        return len(self._index)

    def __iter__(self):
        return iter(list(self._index))

    def keys(self) -> list:
        return list(self._index)

    def live_graph_seqs(self) -> set:
        """Graph sequence numbers that live entries were recorded with."""
        with self._lock:
            return set(self._seqs.values())

    def max_graph_seq(self) -> int:
        with self._lock:
            return max(self._seqs.values(), default=0)

    def is_checkpoint(self, key) -> bool:
        return _as_key(key) in self._checkpoints

    def offload(self, keys) -> None:
        """Drop the in-memory copies of ``keys``' entries (the scheduler forgot them): they
        stay on disk, where :meth:`get` reads them back if their lineage is needed."""
        with self._lock:
            for k in keys:
                self._cache.pop(_as_key(k), None)

    def get(self, key) -> JournalEntry | None:
        key = _as_key(key)
        with self._lock:
            e = self._cache.get(key)
            if e is not None:
                return e
            loc = self._index.get(key)
            if loc is None:
                return None
            try:
                return self._read(*loc)
            except OSError as e:  # damaged since it was written: its lineage is unavailable
                logger.warning("%s", e)
                return None

    def _read(self, seg: int, offset: int) -> JournalEntry:
        if seg == self._active:
            self._writer.flush()
        f = self._readers.get(seg)
        if f is None:
            f = self._readers[seg] = open(self._path(seg), "rb")  # noqa: SIM115 - cached
        f.seek(offset)
        data = f.read(_FRAME)
        if len(data) == _FRAME:
            data += f.read(_HEADER.unpack_from(data)[1])
        rec, _, why = _check(data, 0, self._mac0)
        if rec is None or rec[0] != _ENTRY:
            raise OSError(f"lineage journal: bad record in {self._path(seg)} at {offset} "
                          f"({why or 'not an entry'})")
        return _entry_from(rec)

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
                # iterative post-order DFS: (key, entry or None, expanded?)
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
                    e = self.get(key)
                    if e is None:
                        done.add(key)
                        missing.append(key)
                        continue
                    entries[key] = e
                    stack.append((key, True))
                    if key in self._checkpoints:
                        continue
                    for d in reversed(e.dependencies):
                        if d not in done and d not in entries:
                            stack.append((d, False))
        if missing:
            raise LineageIncomplete(missing)
        return out

    # ------------------------------------------------------------------ checkpoints

    def drop_before(self, keys, *, fsync: bool | None = None) -> list:
        """Mark journaled ``keys`` as checkpoints and forget every ancestor no other live
        entry needs any more. Returns the forgotten keys."""
        with self._lock:
            new = [k for k in map(_as_key, keys)
                   if k in self._index and k not in self._checkpoints]
            if not new:
                return []
            newset = set(new)
            queue = deque()
            for k in new:
                self._checkpoints.add(k)
                for d in self._deps[k]:  # cut the checkpoint's edges
                    if self._decref(d) == 0:
                        queue.append(d)
            forgotten = []
            while queue:
                k = queue.popleft()
                if k not in self._index or k in newset or self._dependents.get(k, 0) > 0:
                    continue
                deps = self._deps[k] if k not in self._checkpoints else ()
                self._unlink(k, maintain_dependents=False)
                forgotten.append(k)
                for d in deps:
                    if self._decref(d) == 0:
                        queue.append(d)
            self._writer.write(_frame([_DROP, new, forgotten], self._mac0))
            self._sync(fsync)
            self._delete_dead_head()
            self._maybe_compact()
            return forgotten

    def checkpoint(self, graph_seq: int, entry: JournalEntry, *, fsync: bool | None = None) -> list:
        """``entry.key`` was checkpointed: forget the lineage behind it (as
        :meth:`drop_before`) and record ``entry`` (the recipe that reads the checkpoint, no
        dependencies) in its place. Returns the forgotten keys."""
        with self._lock:
            forgotten = self.drop_before([entry.key], fsync=False)
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
        try:
            self._path(seg).unlink()
        except FileNotFoundError:
            pass

    def dead_records(self) -> int:
        return sum(self._seg_records.values()) - len(self._index)

    def _maybe_compact(self) -> None:
        dead = self.dead_records()
        if dead >= self.compact_min_dead and dead > len(self._index):
            self.compact()

    def compact(self) -> None:
        """Rewrite live entries (in record order) into a new segment, delete the old ones.
        A crash midway leaves old segments plus a (possibly torn) copy: replay is the same."""
        with self._lock:
            old = sorted(self._seg_live)
            order = sorted(self._index.items(), key=lambda kv: kv[1])
            entries = [self._cache.get(k) or self._read(*loc) for k, loc in order]
            new = self._active + 1
            self._open_writer(new)
            for e in entries:
                offset = self._writer.tell()
                self._writer.write(_frame([_ENTRY, e.graph_seq, e.key, e.recipe,
                                           e.dependencies, e.priority, e.tileable,
                                           e.boundary], self._mac0))
                self._seg_records[new] += 1
                self._seg_live[self._index[e.key][0]] -= 1
                self._seg_live[new] += 1
                self._index[e.key] = (new, offset)
            if self._checkpoints:
                self._writer.write(_frame([_DROP, list(self._checkpoints), []], self._mac0))
            self._writer.flush()
            os.fsync(self._writer.fileno())
            for seg in old:
                self._remove_segment(seg)

    # ------------------------------------------------------------------ misc

    def stats(self) -> dict:
        with self._lock:
            segs = [self._path(s) for s in sorted(self._seg_live)]
            if self._writer is not None:
                self._writer.flush()
            return {
                "entries": len(self._index),
                "entries_in_memory": len(self._cache),
                # every entry is persisted; these are the ones held only on disk
                "entries_on_disk": len(self._index) - len(self._cache),
                "checkpoints": len(self._checkpoints),
                "dead_records": self.dead_records(),
                "segments": len(segs),
                "bytes": sum(p.stat().st_size for p in segs if p.exists()),
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

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
