"""The store's file format and its I/O paths.

One file per key, self-describing so that a restarted process can find its keys again by
listing the directory::

    [prelude 64 bytes][msgpack header][zero padding to a 4 KiB boundary][payload]

    prelude: magic 8 bytes | header length uint32 | crc32 of the header uint32 |
             payload length uint64 | payload checksum uint64 | MAC 32 bytes

The payload checksum is a one-level hash tree (:class:`BlockSum`): xxh3-64 of each 4 MiB
block of the payload, then xxh3-64 of those digests. Blocks hash independently, so a reader
checks a large file on all cores, each core faulting in its own blocks as the disk delivers
them (:func:`payload_checksum`): on a cold read that overlaps the check with the read
instead of adding a pass after it. (Files of format 02, whose checksum is one xxh3-64 of
the whole payload, are still read.)

The payload's length and checksum (and, for files another user may be able to write, a
keyed MAC over header + payload: :class:`mars_dask._safe_files.Authenticator`) are computed
while the payload streams out and written into the prelude when the payload is complete.
:func:`verify` checks them before anything in the file is decoded: a short, damaged or
planted file raises :class:`~mars_dask.errors.DataIntegrityError` naming key and file. The
header is msgpack of plain values only (nothing in it can run code; see ``_codec.py``).

The payload starts on a 4 KiB boundary, so a memory map of the whole file yields a
page-aligned payload (numpy views need alignment; O_DIRECT needs it for writes and reads).
A file is written under a temporary name and renamed when complete: a process killed in the
middle of a write leaves only a ``*.tmp-*`` file, which readers ignore and remove.

Disk writes use O_DIRECT with large sequential requests from aligned (mmap-allocated)
buffers: on this kind of machine that runs at the disk's bandwidth with little CPU, while
buffered writes are bound by page-cache copying (ARCHITECTURE.md, "Facts about spill").
Several requests are kept in flight (``depth``, threads issuing ``pwrite``/``preadv`` at
explicit offsets): the caller fills the next staging buffer while the disk writes the
previous ones, and a read is split into ``depth`` pieces read in parallel.

Memory. On this kind of VM touching fresh memory (the first write to a page the process
just got from the kernel, including page-cache pages) runs at 0.3-1 GB/s, slower than the
disk: a buffered read pays it twice (page cache + destination), a fresh O_DIRECT
destination once. Staging buffers (:data:`POOL`) and read buffers (:class:`ReadPool`) are
therefore reused: a read into a recycled buffer runs at the disk's speed.
"""

from __future__ import annotations

import errno
import mmap
import os
import struct
import sys
import threading
import uuid
import zlib
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as _wait_all

import msgpack
import numpy as np

from .._safe_files import MAC_SIZE, new_checksum, open_private
from ..errors import DataIntegrityError, StoreCorruptError

MAGIC = b"MARSDS03"
_MAGIC_V2 = b"MARSDS02"  # whole-payload checksum; read, never written
ALIGN = 4096
SUFFIX = ".mds"
_PRELUDE = struct.Struct(f"<8sIIQQ{MAC_SIZE}s")
_NO_MAC = bytes(MAC_SIZE)


def round_up(n: int, align: int = ALIGN) -> int:
    return (n + align - 1) // align * align


def _address(buf) -> int:
    return np.frombuffer(buf, dtype=np.uint8).ctypes.data if len(buf) else 0


def _as_bytes_view(buf) -> memoryview:
    mv = memoryview(buf)
    if mv.format != "B" or mv.ndim != 1:
        if mv.nbytes == 0:  # cast() refuses views with zeros in shape or strides
            return memoryview(b"")
        mv = mv.cast("B")
    return mv


def _packed_header(header: dict) -> bytes:
    return msgpack.packb(header, use_bin_type=True)


def header_block(header: dict, packed: bytes | None = None, payload_size: int = 0, digest: int = 0,
                 mac: bytes = _NO_MAC) -> bytes:
    """The header region: prelude + msgpack header, zero padded to a 4 KiB multiple."""
    if packed is None:
        packed = _packed_header(header)
    raw = _PRELUDE.pack(MAGIC, len(packed), zlib.crc32(packed), payload_size, digest, mac) + packed
    return raw + b"\0" * (round_up(len(raw)) - len(raw))


def _parse(buf, path=None) -> tuple[dict, int, tuple]:
    """``(header, payload offset, (payload size, checksum, mac, packed header))``."""
    if len(buf) < _PRELUDE.size:
        raise StoreCorruptError(f"{path or 'file'}: shorter than its prelude")
    magic, n, crc, size, digest, mac = _PRELUDE.unpack_from(buf, 0)
    if magic not in (MAGIC, _MAGIC_V2):
        raise StoreCorruptError(f"{path or 'file'}: not a mars_dask store file (bad magic)")
    if len(buf) < _PRELUDE.size + n:
        raise StoreCorruptError(f"{path or 'file'}: truncated header")
    packed = bytes(buf[_PRELUDE.size:_PRELUDE.size + n])
    if zlib.crc32(packed) != crc:
        raise StoreCorruptError(f"{path or 'file'}: damaged header (crc32)")
    try:
        header = msgpack.unpackb(packed, raw=False)
    except Exception as e:  # noqa: BLE001 - any decode failure is corruption
        raise StoreCorruptError(f"{path or 'file'}: undecodable header ({e})") from None
    if not isinstance(header, dict):
        raise StoreCorruptError(f"{path or 'file'}: header is not a map")
    return header, round_up(_PRELUDE.size + n), (size, digest, mac, packed, magic)


def parse_header(buf) -> tuple[dict, int]:
    """(header, payload offset) from the first bytes of a file; raises StoreCorruptError.
    Checks the header only: :func:`verify` checks the payload."""
    header, offset, _ = _parse(buf)
    return header, offset


def read_header(path: str) -> tuple[dict, int, int]:
    """``(header, payload offset, payload size)`` of a file, reading only its head; raises
    StoreCorruptError if the header is damaged or the file is shorter than it says."""
    with open(path, "rb") as f:
        head = f.read(ALIGN)
        if len(head) >= _PRELUDE.size:
            n = _PRELUDE.unpack_from(head, 0)[1]
            if _PRELUDE.size + n > len(head):
                head += f.read(_PRELUDE.size + n - len(head))
        header, offset, (size, *_) = _parse(head, path)
        actual = os.fstat(f.fileno()).st_size
    if actual != offset + size:
        raise StoreCorruptError(f"{path}: {actual} bytes, expected {offset + size}")
    return header, offset, size


#: the payload checksum's block size (a multiple of ALIGN)
BLOCK = 4 * 2**20
_TOP = struct.Struct("<Q")


def _xxh3(buf) -> int:
    h = new_checksum()
    h.update(buf)
    return h.intdigest()


class BlockSum:
    """The payload checksum computed as the payload streams past (``update``), block by
    block; ``intdigest()`` at the end. An empty payload is one empty block."""

    def __init__(self):
        self._digests = bytearray()
        self._h = new_checksum()
        self._fill = 0

    def update(self, buf) -> None:
        mv = _as_bytes_view(buf)
        while len(mv):
            take = min(len(mv), BLOCK - self._fill)
            self._h.update(mv[:take])
            self._fill += take
            mv = mv[take:]
            if self._fill == BLOCK:
                self._digests += _TOP.pack(self._h.intdigest())
                self._h.reset()
                self._fill = 0

    def intdigest(self) -> int:
        digests = bytes(self._digests)
        if self._fill or not digests:
            digests += _TOP.pack(self._h.intdigest())
        return _xxh3(digests)


def _lane(mv, blocks) -> list[tuple[int, int]]:
    return [(i, _xxh3(mv[i * BLOCK:(i + 1) * BLOCK])) for i in blocks]


def payload_checksum(payload, lanes: int | None = None) -> int:
    """:class:`BlockSum`'s digest of a whole payload in memory (or memory-mapped), its
    blocks hashed by ``lanes`` threads (default: one per core, at most 4; the hash releases
    the GIL), lane ``j`` taking blocks ``j, j + lanes, ...`` so that all lanes work near the
    front of the kernel's read-ahead."""
    mv = _as_bytes_view(payload)
    n = max(1, -(-len(mv) // BLOCK))
    lanes = min(n, lanes or min(4, os.cpu_count() or 1))
    if lanes <= 1:
        digests = [d for _, d in _lane(mv, range(n))]
    else:
        ex = _executor()
        futs = [ex.submit(_lane, mv, range(j, n, lanes)) for j in range(1, lanes)]
        try:
            got = _lane(mv, range(0, n, lanes))
        finally:
            _wait_all(futs)  # nothing may still read mv once this returns
        for f in futs:
            got += f.result()
        digests = [d for _, d in sorted(got)]
    return _xxh3(b"".join(_TOP.pack(d) for d in digests))


def _streamed_checksum(payload, offset: int, ready) -> int:
    """:func:`payload_checksum` of a payload at ``offset`` of a buffer still being read,
    block by block as ``ready`` says they have arrived (one thread: it keeps up with a disk)."""
    n = max(1, -(-len(payload) // BLOCK))
    digests = []
    for i in range(n):
        end = min(len(payload), (i + 1) * BLOCK)
        ready(offset + end)
        digests.append(_TOP.pack(_xxh3(payload[i * BLOCK:end])))
    return _xxh3(b"".join(digests))


def verify(buf, *, path: str, key=None, auth=None, lanes: int | None = None,
           ready=None) -> tuple[dict, int, int]:
    """Check a whole file's bytes (``buf``: its memory map or a buffer read from it):
    header, payload length, checksum, with ``auth`` its MAC, with ``key`` that it is that
    key's file (``lanes``: see :func:`payload_checksum`). Returns ``(header, payload offset,
    payload size)``; raises
    :class:`DataIntegrityError` naming key and file.

    ``ready(n)``: ``buf`` is still being filled (:func:`read_file_direct`); the call
    returns once its first ``n`` bytes are there, and each block is hashed as soon as it
    has arrived, so that the check overlaps the read instead of following it."""
    if ready is not None:
        wait = ready

        def ready(n):
            try:
                wait(n)
            except StoreCorruptError as e:
                raise DataIntegrityError(key, path, str(e)) from None

        ready(min(len(buf), _PRELUDE.size))
        if len(buf) >= _PRELUDE.size:
            ready(min(len(buf), _PRELUDE.size + _PRELUDE.unpack_from(buf, 0)[1]))
    try:
        header, offset, (size, digest, mac, packed, magic) = _parse(buf, path)
    except StoreCorruptError as e:
        raise DataIntegrityError(key, path, str(e).removeprefix(f"{path}: ")) from None
    if key is not None and as_key(header.get("key")) != key:
        raise DataIntegrityError(key, path, f"it holds key {header.get('key')!r}")
    if len(buf) < offset + size:
        raise DataIntegrityError(key, path, f"truncated: {len(buf)} bytes, expected {offset + size}")
    payload = memoryview(buf)[offset:offset + size]
    if ready is not None and (auth is not None or magic == _MAGIC_V2):
        ready(offset + size)  # whole-payload digests: nothing to overlap
        ready = None
    try:
        if auth is not None and not auth.verify(mac, packed, payload):
            raise DataIntegrityError(key, path, "authentication failed (not written by this cluster, "
                                                "or altered)")
        if magic == _MAGIC_V2:
            h = new_checksum()
            h.update(payload)
            good = h.intdigest() == digest
        elif ready is not None:
            good = _streamed_checksum(payload, offset, ready) == digest
        else:
            good = payload_checksum(payload, lanes) == digest
        if not good:
            raise DataIntegrityError(key, path, "payload checksum mismatch")
    finally:
        payload.release()
    return header, offset, size


def open_verified(path: str, *, key=None, auth=None, willneed: bool = False):
    """Memory-map ``path`` and :func:`verify` it: ``(header, map, payload offset, payload
    size)``; decode with ``_codec.decode(header["kind"], header["meta"], map, offset, size)``."""
    try:
        buf = map_file(path, willneed=willneed)
    except ValueError:  # an empty file cannot be mapped
        raise DataIntegrityError(key, path, "empty file") from None
    header, offset, size = verify(buf, path=path, key=key, auth=auth)
    return header, buf, offset, size


def as_key(key):
    """msgpack turns tuples into lists; Dask keys are str | bytes | int | float | tuple."""
    return tuple(as_key(k) for k in key) if isinstance(key, list) else key


def aligned_buffer(nbytes: int) -> mmap.mmap:
    """A page-aligned, zero-filled anonymous buffer (what O_DIRECT needs)."""
    return mmap.mmap(-1, max(round_up(nbytes), ALIGN))


class BufferPool:
    """Reuses page-aligned anonymous buffers.

    On this kind of VM, touching fresh memory (page faults) costs as much as the disk
    itself: reading into a reused buffer runs ~2x faster (ARCHITECTURE.md). Used for the
    O_DIRECT write staging buffers, which come back at the end of each write. (Read buffers
    are not pooled: numpy views export the mmap itself, so there is no reliable signal that
    the last view of a buffer died.) At most ``limit`` bytes of free buffers are kept."""

    def __init__(self, limit: int):
        self.limit = limit
        self.free: dict[int, list[mmap.mmap]] = {}
        self.free_bytes = 0
        self._lock = threading.Lock()

    @staticmethod
    def size_class(nbytes: int) -> int:
        return round_up(max(nbytes, ALIGN), 2**20 if nbytes > 2**20 else ALIGN)

    def get(self, nbytes: int) -> mmap.mmap:
        size = self.size_class(nbytes)
        with self._lock:
            bufs = self.free.get(size)
            if bufs:
                self.free_bytes -= size
                return bufs.pop()
        return aligned_buffer(size)

    def put(self, buf: mmap.mmap) -> None:
        size = len(buf)
        with self._lock:
            if self.free_bytes + size <= self.limit:
                self.free.setdefault(size, []).append(buf)
                self.free_bytes += size
                return
        buf.close()


POOL = BufferPool(512 * 2**20)


class ReadPool:
    """Page-aligned read buffers ("slabs", uint8 ndarrays over anonymous maps) recycled once
    no value uses them any more.

    A value decoded from a slab is a view of it (numpy ``frombuffer``, Arrow ``py_buffer``):
    every such view holds a reference to the slab ndarray (numpy sets a view's ``base`` to
    the slab, whose own base is not an ndarray), so a slab whose reference count is back to
    the pool's own is free. Reading into a recycled slab avoids the fresh-memory page
    faults that otherwise cost as much as the disk. At most ``limit`` bytes of free slabs
    are kept (checked on every ``get``; :meth:`trim` on memory pressure); in-use slabs are
    the values' own memory. Sizes are rounded to a class (at most ~1/8 slack).
    """

    MIN = 2**20  # smaller reads use a fresh buffer: nothing to gain, scan cost

    def __init__(self, limit: int):
        self.limit = limit
        self._slabs: dict[int, list[np.ndarray]] = {}
        self._base: int | None = None  # reference count of a free slab (in our list)
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    @staticmethod
    def size_class(nbytes: int) -> int:
        n = max(nbytes, ALIGN)
        return round_up(n, max(2**20, 1 << max(0, n.bit_length() - 4)))

    def _free(self, lst: list, i: int) -> bool:
        return sys.getrefcount(lst[i]) <= self._base

    def get(self, nbytes: int):
        """A buffer of at least ``nbytes`` (page aligned, zeroed only if fresh)."""
        if nbytes < self.MIN or self.limit <= 0:
            return aligned_buffer(nbytes)
        size = self.size_class(nbytes)
        with self._lock:
            lst = self._slabs.setdefault(size, [])
            if self._base is not None:
                for i in range(len(lst)):
                    if self._free(lst, i):
                        self.hits += 1
                        slab = lst[i]
                        self._trim(self.limit)
                        return slab
            self.misses += 1
            lst.append(np.frombuffer(aligned_buffer(size), dtype=np.uint8))
            if self._base is None:
                self._base = sys.getrefcount(lst[-1])
            slab = lst[-1]
            self._trim(self.limit)
            return slab

    def _trim(self, keep: int) -> int:
        freed = kept = 0
        for size in sorted(self._slabs, reverse=True):
            lst = self._slabs[size]
            for i in range(len(lst) - 1, -1, -1):
                if self._free(lst, i):
                    if kept + size <= keep:
                        kept += size
                    else:
                        del lst[i]  # unmapped when the ndarray (the map's only user) goes
                        freed += size
            if not lst:
                del self._slabs[size]
        return freed

    def trim(self, keep: int = 0) -> int:
        """Release free slabs beyond ``keep`` bytes; returns the bytes released."""
        with self._lock:
            return self._trim(keep) if self._base is not None else 0

    def stats(self) -> dict:
        with self._lock:
            total = sum(size * len(lst) for size, lst in self._slabs.items())
            free = sum(size for size, lst in self._slabs.items()
                       for i in range(len(lst)) if self._base is not None and self._free(lst, i))
            return {"bytes": total, "free": free, "hits": self.hits, "misses": self.misses}


READ_POOL = ReadPool(512 * 2**20)

_EXECUTOR: tuple[int, ThreadPoolExecutor] | None = None
_EXECUTOR_LOCK = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    """Shared I/O threads (threads start on demand; a forked child makes its own)."""
    global _EXECUTOR
    ex = _EXECUTOR
    if ex is None or ex[0] != os.getpid():
        with _EXECUTOR_LOCK:
            ex = _EXECUTOR
            if ex is None or ex[0] != os.getpid():
                ex = _EXECUTOR = (os.getpid(), ThreadPoolExecutor(
                    max_workers=16, thread_name_prefix="mars-store-io"))
    return ex[1]


def tmp_name(path: str) -> str:
    return f"{path}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def is_tmp_name(name: str) -> bool:
    return ".tmp-" in name


class _WriteOnly:
    """The file-object protocol pyarrow.PythonFile uses on a sink: bytes written so far are
    ``pos``; pyarrow closes its sink, but the real end of a write is the writer's own."""

    closed = False
    pos = 0

    def writable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


class _Sink(_WriteOnly):
    """Sequential writer of one file; ``write`` accepts any buffer (pyarrow also calls it
    as a Python file object); the real close is ``finish()``."""

    def __init__(self, fd: int):
        self.fd = fd
        self.pos = 0

    def write(self, buf) -> int:
        mv = _as_bytes_view(buf)
        n = len(mv)
        while mv:
            mv = mv[os.write(self.fd, mv):]
        self.pos += n
        return n

    def finish(self) -> int:
        return self.pos

    def abort(self) -> None:
        pass


def _pwrite_all(fd: int, view, offset: int) -> None:
    while view:
        n = os.pwrite(fd, view, offset)
        view, offset = view[n:], offset + n


class _DirectSink(_Sink):
    """O_DIRECT writer with up to ``depth`` requests in flight: bytes are staged in
    ``depth + 1`` aligned (pooled) buffers that I/O threads write at their file offsets
    while the caller fills the next one. Page-aligned input at an aligned file offset
    (numpy data from a page-aligned allocation, a memory-mapped file being moved to disk)
    is written straight from the source, with no staging copy."""

    def __init__(self, fd: int, chunk: int, depth: int = 1):
        super().__init__(fd)
        self.chunk = round_up(chunk)
        self.depth = max(1, int(depth))
        self._bufs = [POOL.get(self.chunk) for _ in range(self.depth + 1)]
        self._free = list(range(len(self._bufs)))
        self._cv = threading.Condition()
        self._inflight = 0
        self._error: BaseException | None = None
        self._cur = self._free.pop()
        self._fill = 0
        self._done = False

    def _job(self, view, offset: int, release) -> None:
        try:
            if self._error is None:
                _pwrite_all(self.fd, view, offset)
        except BaseException as e:  # noqa: BLE001 - reported to the caller by the next write or finish()
            with self._cv:
                if self._error is None:
                    self._error = e
        finally:
            with self._cv:
                self._inflight -= 1
                if release is not None:
                    self._free.append(release)
                self._cv.notify_all()

    def _submit(self, view, offset: int, release=None) -> None:
        with self._cv:
            while self._inflight >= self.depth and self._error is None:
                self._cv.wait()
            if self._error is not None:
                if release is not None:
                    self._free.append(release)
                raise self._error
            self._inflight += 1
        try:
            _executor().submit(self._job, view, offset, release)
        except BaseException:
            with self._cv:
                self._inflight -= 1
                if release is not None:
                    self._free.append(release)
            raise

    def _flush_staging(self) -> None:
        if self._fill:
            n = round_up(self._fill)
            cur, offset = self._cur, self.pos - self._fill
            self._fill = 0
            self._cur = None
            self._submit(memoryview(self._bufs[cur])[:n], offset, cur)
            with self._cv:
                while not self._free:
                    self._cv.wait()
                self._cur = self._free.pop()

    def write(self, buf) -> int:
        mv = _as_bytes_view(buf)
        n = len(mv)
        if self._fill == 0 and n >= ALIGN and _address(mv) % ALIGN == 0:
            # Aligned source at an aligned file offset: write it directly, staging
            # only the unaligned tail.
            bulk = n - n % ALIGN
            for i in range(0, bulk, self.chunk):
                self._submit(mv[i:min(bulk, i + self.chunk)], self.pos + i)
            mv = mv[bulk:]
            self.pos += bulk
        while mv:
            take = min(len(mv), self.chunk - self._fill)
            self._bufs[self._cur][self._fill:self._fill + take] = mv[:take]
            self._fill += take
            self.pos += take
            mv = mv[take:]
            if self._fill == self.chunk:
                self._flush_staging()
        return n

    def _join(self) -> None:
        if self._done:
            return
        with self._cv:
            while self._inflight:
                self._cv.wait()
        self._done = True
        for b in self._bufs:
            POOL.put(b)

    def finish(self) -> int:
        try:
            # the padded last block must not leave its staging buffer before it is written
            self._flush_staging()
        finally:
            self._join()
        if self._error is not None:
            raise self._error
        os.ftruncate(self.fd, self.pos)  # drop the O_DIRECT padding
        return self.pos

    def abort(self) -> None:
        self._join()


def _open_for_write(path: str, direct: bool) -> tuple[int, bool]:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    if direct and hasattr(os, "O_DIRECT"):
        try:
            return open_private(path, flags | os.O_DIRECT), True
        except OSError as e:
            if e.errno != errno.EINVAL:  # EINVAL: the file system refuses O_DIRECT
                raise
    return open_private(path, flags), False


class _Summing(_WriteOnly):
    """Passes the payload on to a sink, counting it (``pos``) and computing its checksum
    (and MAC)."""

    def __init__(self, sink, mac=None):
        self.sink = sink
        self.sum = BlockSum()
        self.mac = mac
        self.pos = 0

    #: a large buffer is checksummed and handed on in pieces of this size (a multiple of
    #: ALIGN): the sink's I/O threads write one piece while this thread hashes the next (the
    #: hash releases the GIL), so the checksum costs no time on top of the write
    PIECE = 4 * 2**20

    def write(self, buf) -> int:
        mv = _as_bytes_view(buf)
        n = len(mv)
        for i in range(0, n, self.PIECE):
            piece = mv[i:i + self.PIECE]
            self.sum.update(piece)
            if self.mac is not None:
                self.mac.update(piece)
            self.sink.write(piece)
        self.pos += n
        return n


def write_file(path: str, header: dict, write_payload, *, direct: bool, chunk: int,
               depth: int = 1, auth=None, reuse: str | None = None) -> int:
    """Write header + payload to ``path`` atomically (temporary name, then rename), 0600.

    ``write_payload(sink)`` writes the payload; returns the file size. ``depth``: O_DIRECT
    write requests kept in flight. ``auth``: an ``Authenticator`` whose MAC the file carries
    (files on a directory others may write: checkpoints). ``reuse``: a free file of ours to
    overwrite instead of creating one (its pages are already allocated: ``_recycle.py``).
    """
    tmp, size = write_tmp(path, header, write_payload, direct=direct, chunk=chunk, depth=depth, auth=auth,
                          reuse=reuse)
    try:
        os.rename(tmp, path)
    except BaseException:
        unlink_quietly(tmp)
        raise
    return size


def write_tmp(path: str, header: dict, write_payload, *, direct: bool, chunk: int,
              depth: int = 1, auth=None, reuse: str | None = None) -> tuple[str, int]:
    """:func:`write_file` without the rename: ``(temporary path, file size)``; the caller
    renames it to ``path`` (publishes it) or unlinks it. A temporary file is never taken
    for a value (:func:`is_tmp_name`)."""
    tmp = tmp_name(path)
    fd = -1
    if reuse is not None:
        try:
            os.rename(reuse, tmp)  # the free file becomes this write's temporary file
            fd, direct = open_private(tmp, os.O_WRONLY), False
        except OSError:
            unlink_quietly(reuse)
            unlink_quietly(tmp)
            reuse = None
    if fd < 0:
        fd, direct = _open_for_write(tmp, direct)
    sink = _DirectSink(fd, chunk, depth) if direct else _Sink(fd)
    packed = _packed_header(header)
    try:
        try:
            sink.write(header_block(header, packed))
            summing = _Summing(sink, auth.new() if auth is not None else None)
            if summing.mac is not None:
                summing.mac.update(packed)
            write_payload(summing)
        except BaseException:
            sink.abort()
            raise
        size = sink.finish()
        if reuse is not None:
            os.ftruncate(fd, size)  # a guard: take() matched the size, so this cuts nothing today
        mac = summing.mac.digest() if summing.mac is not None else _NO_MAC
        _write_prelude(fd, header_block(header, packed, summing.pos, summing.sum.intdigest(), mac), direct)
        os.close(fd)
        fd = -1
    except BaseException:
        if fd >= 0:
            os.close(fd)
        unlink_quietly(tmp)
        raise
    return tmp, size


def _write_prelude(fd: int, block: bytes, direct: bool) -> None:
    """Rewrite the file's header region with its payload's length and checksum filled in
    (the whole aligned region from an aligned buffer where the file is open O_DIRECT)."""
    if not direct:
        _pwrite_all(fd, memoryview(block)[:_PRELUDE.size], 0)
        return
    buf = aligned_buffer(len(block))
    try:
        buf[:len(block)] = block
        _pwrite_all(fd, memoryview(buf)[:len(block)], 0)
    finally:
        buf.close()


def unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def map_file(path: str, willneed: bool = False) -> mmap.mmap:
    """Read-only shared memory map of a whole file (zero copy; pages come from tmpfs or
    the page cache).

    ``willneed`` (disk files) asks the kernel to read the whole file ahead
    (MADV_WILLNEED): the read runs in the background while the caller starts using the
    value (64 MiB files, cold: 0.6-0.8 GB/s here, about the disk's own speed at the time;
    splitting the advice over threads, MADV_SEQUENTIAL or MADV_POPULATE_READ did not do
    better); warm (page cache) it costs only the mapping."""
    with open(path, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    if willneed and hasattr(mm, "madvise"):
        try:
            mm.madvise(mmap.MADV_WILLNEED)
        except (OSError, AttributeError):
            pass
    return mm


def _pread_all(fd: int, view, offset: int) -> int:
    """Read into ``view`` from ``offset`` until it is full or the file ends."""
    got = 0
    while got < len(view):
        n = os.preadv(fd, [view[got:]], offset + got)
        if n <= 0:
            break
        got += n
    return got


def _pread_pieces(fd: int, mv, pieces: list, filled: _Filled | None = None) -> list[int]:
    """Read the ``(index, (start, end))`` pieces in order; stops at the first short one.
    Reports each piece to ``filled``."""
    got = []
    try:
        for i, (a, b) in pieces:
            got.append(_pread_all(fd, mv[a:b], a))
            if filled is not None:
                filled.piece_read(i, got[-1])
            if got[-1] < b - a:
                break
    finally:
        if filled is not None:
            filled.lane_ended()
    return got


class _Filled:
    """How much of a buffer that several threads read piece by piece is there, from its
    start: :meth:`wait` blocks until the first ``n`` bytes are (or the reading stopped)."""

    def __init__(self, pieces: list, lanes: int, size: int):
        self._pieces = pieces
        self._size = size
        self._done = [False] * len(pieces)
        self._ends = [min(b, size) for _, b in pieces]
        self._next = 0
        self._prefix = 0
        self._lanes = lanes
        self._cond = threading.Condition()

    def piece_read(self, i: int, n: int) -> None:
        """Piece ``i`` got ``n`` bytes (complete if they reach its end or the file's)."""
        a, b = self._pieces[i]
        if n < min(b, self._size) - a:
            return
        with self._cond:
            self._done[i] = True
            while self._next < len(self._done) and self._done[self._next]:
                self._prefix = self._ends[self._next]
                self._next += 1
            self._cond.notify_all()

    def lane_ended(self) -> None:
        with self._cond:
            self._lanes -= 1
            self._cond.notify_all()

    def wait(self, n: int) -> None:
        with self._cond:
            while self._prefix < n and self._lanes > 0:
                self._cond.wait()
            if self._prefix < n:  # a lane stopped short (the file ends early) or failed
                raise StoreCorruptError(f"short read ({self._prefix} bytes there, {n} needed)")


def read_file_direct(path: str, chunk: int, *, depth: int = 1, pool: ReadPool | None = None,
                     check=None):
    """Read a whole file into a private aligned buffer, with O_DIRECT where supported (no
    page-cache copy or pollution). The buffer is padded to 4 KiB; the caller slices it by
    the header.

    The file is read in requests of ``chunk`` bytes, ``depth`` of them in flight (I/O
    threads, each reading every ``depth``-th request). ``pool``: take the buffer from a
    :class:`ReadPool` (returns one of its uint8 slabs) instead of a fresh ``mmap``.
    ``check(buf, ready)`` runs in the calling thread while the I/O threads read (see
    :func:`verify`'s ``ready``): the checksum overlaps the read."""
    fd = -1
    if hasattr(os, "O_DIRECT"):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
        except OSError as e:
            if e.errno != errno.EINVAL:
                raise
    if fd < 0:
        fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        buf = pool.get(size) if pool is not None else aligned_buffer(size)
        mv = _as_bytes_view(buf)
        try:
            end, step = round_up(size), round_up(max(chunk, ALIGN))
            pieces = [(o, min(end, o + step)) for o in range(0, end, step)]
            lanes = max(1, min(int(depth), len(pieces)))
            indexed = list(enumerate(pieces))
            if check is not None:
                filled = _Filled(pieces, lanes, size)
                ex = _executor()
                futs = []
                try:
                    for lane in range(lanes):
                        futs.append(ex.submit(_pread_pieces, fd, mv, indexed[lane::lanes], filled))
                    check(buf, filled.wait)
                finally:
                    _wait_all(futs)  # nothing may still write into buf or use fd
                done = {lane: f.result() for lane, f in enumerate(futs)}
            elif lanes == 1:
                done = {0: _pread_pieces(fd, mv, indexed)}
            else:
                ex = _executor()
                futs = []
                try:
                    for lane in range(1, lanes):
                        futs.append(ex.submit(_pread_pieces, fd, mv, indexed[lane::lanes]))
                    first = _pread_pieces(fd, mv, indexed[0::lanes])
                finally:
                    _wait_all(futs)  # nothing may still write into buf or use fd
                done = {0: first, **{lane: f.result() for lane, f in enumerate(futs, 1)}}
            pos = 0
            for i, (a, b) in enumerate(pieces):
                lane_got = done[i % lanes]
                k = i // lanes
                if k >= len(lane_got) or lane_got[k] < min(b, size) - a:
                    break
                pos = min(b, size)
            if pos < size:
                raise StoreCorruptError(f"{path}: short read ({pos} of {size} bytes)")
        finally:
            mv.release()
        return buf
    finally:
        os.close(fd)
