"""Lineage journal for scheduler failover: every key of every graph, across graphs.

Each ``update_graph`` is recorded (``record(graph_seq, entries)``) as one
:class:`JournalEntry` per key: its recipe (the pickled task spec, opaque here), its
dependencies, the graph sequence number, priority, tileable and boundary. Because the
journal spans graphs, ``lineage([key_of_graph_7], is_available)`` walks back into the keys
of graph 2 that graph 7 depended on.

On disk
    A directory of append-only segment files ``segment-NNNNNNNN.mdj``. Each record is
    ``>II`` (payload length, zlib.crc32(payload)) followed by a msgpack payload:
    ``[0, graph_seq, key, recipe, dependencies, priority, tileable, boundary]`` for an
    entry, ``[1, checkpoint_keys, forgotten_keys]`` for a :meth:`drop_before` marker.
    Re-recording a key replaces it (later record wins). A restarted scheduler reads the
    directory back with :meth:`LineageJournal.open`: segments are replayed in order; a torn
    record (truncated header/payload, bad CRC, undecodable payload) is logged on
    ``mars_dask.plugins.journal``, skipped, and the file is truncated back to the last good
    record so later appends continue cleanly.

Memory
    At most ``max_memory_entries`` entries (with their recipes) are kept in memory, oldest
    by insertion evicted first; every live key also has a small index record
    ``(segment, offset, dependencies)`` so an evicted entry is read back from disk by
    :meth:`get` (CRC-checked) and :meth:`drop_before` never needs disk reads.

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

logger = logging.getLogger("mars_dask.plugins.journal")

Key = Hashable  # str, or a tuple of str/int (nested tuples allowed)

_HEADER = struct.Struct(">II")
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


def _frame(payload_obj) -> bytes:
    payload = msgpack.packb(payload_obj, use_bin_type=True)
    if len(payload) >= _MAX_RECORD:
        raise ValueError(f"journal record too large ({len(payload)} bytes)")
    return _HEADER.pack(len(payload), zlib.crc32(payload)) + payload


def _unpack(payload: bytes):
    # use_list=False: keys (and dependency lists) come back as tuples
    return msgpack.unpackb(payload, use_list=False, raw=False, strict_map_key=False)


def _entry_from(rec) -> JournalEntry:
    _, seq, key, recipe, deps, priority, tileable, boundary = rec
    return JournalEntry(key, recipe, tuple(deps), priority, tileable, boundary, seq)


def read_segment(path: Path):
    """Yield ``(offset, record)`` for the complete records of one segment and return the
    offset just past the last good one (via ``StopIteration.value``); stops at the first
    torn/corrupt record."""
    with open(path, "rb") as f:
        data = f.read()
    pos, n = 0, len(data)
    while pos < n:
        if n - pos < _HEADER.size:
            return pos, "truncated header"
        length, crc = _HEADER.unpack_from(data, pos)
        start = pos + _HEADER.size
        if length > n - start:
            return pos, "truncated payload"
        payload = data[start:start + length]
        if zlib.crc32(payload) != crc:
            return pos, "CRC mismatch"
        try:
            rec = _unpack(payload)
            if not isinstance(rec, tuple) or rec[0] not in (_ENTRY, _DROP):
                raise ValueError("unknown record type")
        except Exception as e:  # noqa: BLE001 - any decode failure is corruption
            return pos, f"undecodable payload ({e})"
        yield pos, rec
        pos = start + length
    return pos, None


class LineageJournal:
    """See the module docstring. Not process-safe (one writer per directory); thread-safe."""

    def __init__(self, directory, max_memory_entries: int = 100_000, *, fsync: bool = False,
                 segment_bytes: int = 64 << 20, compact_min_dead: int = 1024):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
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
            gen = read_segment(path)
            while True:
                try:
                    offset, rec = next(gen)
                except StopIteration as stop:
                    good, problem = stop.value
                    break
                if rec[0] == _ENTRY:
                    entry = _entry_from(rec)
                    self._seg_records[seg] += 1
                    self._put(entry, seg, offset, maintain_dependents=False)
                else:
                    self._apply_drop(rec[1], rec[2])
            if problem is not None:
                size = path.stat().st_size
                logger.warning("lineage journal %s: torn record at offset %d (%s); skipping "
                               "%d trailing bytes and truncating", path, good, problem,
                               size - good)
                with open(path, "r+b") as f:
                    f.truncate(good)
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
        self._writer = open(self._path(seg), "ab")  # noqa: SIM115 - long-lived handle

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
                                entry.tileable, entry.boundary])
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

    def get(self, key) -> JournalEntry | None:
        key = _as_key(key)
        with self._lock:
            e = self._cache.get(key)
            if e is not None:
                return e
            loc = self._index.get(key)
            if loc is None:
                return None
            return self._read(*loc)

    def _read(self, seg: int, offset: int) -> JournalEntry:
        if seg == self._active:
            self._writer.flush()
        f = self._readers.get(seg)
        if f is None:
            f = self._readers[seg] = open(self._path(seg), "rb")  # noqa: SIM115 - cached
        f.seek(offset)
        header = f.read(_HEADER.size)
        length, crc = _HEADER.unpack(header)
        payload = f.read(length)
        if len(payload) != length or zlib.crc32(payload) != crc:
            raise OSError(f"lineage journal: corrupt record in {self._path(seg)} at {offset}")
        return _entry_from(_unpack(payload))

    def lineage(self, keys, is_available: Callable[[Key], bool] = lambda k: False
                ) -> list[JournalEntry]:
        """Entries needed to rebuild ``keys``, inputs first. The walk skips keys for which
        ``is_available(key)`` is true (targets included: nothing to rebuild), and includes
        but does not walk past checkpointed entries (their recipe reads the checkpoint; a
        boundary entry whose checkpoint was never written is walked past like any other). Raises :class:`LineageIncomplete` when a needed
        key is neither available nor journaled."""
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
            self._writer.write(_frame([_DROP, new, forgotten]))
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
                                           e.boundary]))
                self._seg_records[new] += 1
                self._seg_live[self._index[e.key][0]] -= 1
                self._seg_live[new] += 1
                self._index[e.key] = (new, offset)
            if self._checkpoints:
                self._writer.write(_frame([_DROP, list(self._checkpoints), []]))
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
