"""The store's file format and its I/O paths.

One file per key, self-describing so that a restarted process can find its keys again by
listing the directory::

    [magic 8 bytes][header length uint32][msgpack header][zero padding to a 4 KiB boundary]
    [payload]

The payload starts on a 4 KiB boundary, so a memory map of the whole file yields a
page-aligned payload (numpy views need alignment; O_DIRECT needs it for writes and reads).
A file is written under a temporary name and renamed when complete: a process killed in the
middle of a write leaves only a ``*.tmp-*`` file, which readers ignore and remove.

Disk writes use O_DIRECT with large sequential requests from aligned (mmap-allocated)
buffers: on this kind of machine that runs at the disk's bandwidth with little CPU, while
buffered writes are bound by page-cache copying (ARCHITECTURE.md, "Facts about spill").
A background thread writes one buffer while the caller fills the next.
"""

from __future__ import annotations

import errno
import mmap
import os
import queue
import struct
import threading
import uuid

import msgpack
import numpy as np

from ..errors import StoreCorruptError

MAGIC = b"MARSDS01"
ALIGN = 4096
SUFFIX = ".mds"
_PRELUDE = struct.Struct("<8sI")


def round_up(n: int, align: int = ALIGN) -> int:
    return (n + align - 1) // align * align


def _address(buf) -> int:
    return np.frombuffer(buf, dtype=np.uint8).ctypes.data if len(buf) else 0


def _as_bytes_view(buf) -> memoryview:
    mv = memoryview(buf)
    if mv.format != "B" or mv.ndim != 1:
        mv = mv.cast("B")
    return mv


def header_block(header: dict) -> bytes:
    """The header region: prelude + msgpack header, zero padded to a 4 KiB multiple."""
    packed = msgpack.packb(header, use_bin_type=True)
    raw = _PRELUDE.pack(MAGIC, len(packed)) + packed
    return raw + b"\0" * (round_up(len(raw)) - len(raw))


def parse_header(buf) -> tuple[dict, int]:
    """(header, payload offset) from the first bytes of a file; raises StoreCorruptError."""
    if len(buf) < _PRELUDE.size:
        raise StoreCorruptError("file shorter than its prelude")
    magic, n = _PRELUDE.unpack_from(buf, 0)
    if magic != MAGIC:
        raise StoreCorruptError("bad magic")
    if len(buf) < _PRELUDE.size + n:
        raise StoreCorruptError("truncated header")
    header = msgpack.unpackb(bytes(buf[_PRELUDE.size:_PRELUDE.size + n]), raw=False)
    return header, round_up(_PRELUDE.size + n)


def read_header(path: str) -> tuple[dict, int]:
    with open(path, "rb") as f:
        head = f.read(ALIGN)
        if len(head) >= _PRELUDE.size:
            _, n = _PRELUDE.unpack_from(head, 0)
            if _PRELUDE.size + n > len(head):
                head += f.read(_PRELUDE.size + n - len(head))
        header, offset = parse_header(head)
        size = os.fstat(f.fileno()).st_size
    expected = header.get("size")
    if expected is not None and size < offset + expected:
        raise StoreCorruptError(f"{path}: {size} bytes, expected {offset + expected}")
    return header, offset


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


def tmp_name(path: str) -> str:
    return f"{path}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def is_tmp_name(name: str) -> bool:
    return ".tmp-" in name


class _Sink:
    """Sequential writer of one file; ``write`` accepts any buffer (pyarrow also calls it
    as a Python file object)."""

    closed = False

    def __init__(self, fd: int):
        self.fd = fd
        self.pos = 0

    # file-object protocol used by pyarrow.PythonFile
    def writable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def flush(self) -> None:
        pass

    def close(self) -> None:  # pyarrow closes its sink; the real close is finish()
        pass

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


class _DirectSink(_Sink):
    """O_DIRECT writer: stages bytes in two aligned buffers that a background thread writes
    alternately (copying the next chunk overlaps the disk writing the previous one).
    Page-aligned input (e.g. a memory-mapped file being moved to disk) is written straight
    from the source, with no staging copy."""

    def __init__(self, fd: int, chunk: int):
        super().__init__(fd)
        self.chunk = round_up(chunk)
        self._bufs = [POOL.get(self.chunk), POOL.get(self.chunk)]
        self._cur = 0
        self._fill = 0
        self._free: queue.Queue = queue.Queue()
        for i in range(2):
            self._free.put(i)
        self._todo: queue.Queue = queue.Queue(maxsize=2)
        self._error: BaseException | None = None
        self._cur = self._free.get()
        self._thread = threading.Thread(target=self._run, name="mars-store-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            job = self._todo.get()
            if job is None:
                return
            view, release = job
            try:
                if self._error is None:
                    while view:
                        view = view[os.write(self.fd, view):]
            except BaseException as e:  # reported by finish()
                self._error = e
            finally:
                if release is not None:
                    self._free.put(release)

    def _submit(self, view, release=None) -> None:
        if self._error is not None:
            raise self._error
        self._todo.put((view, release))

    def _flush_staging(self) -> None:
        if self._fill:
            n = round_up(self._fill)
            self._submit(memoryview(self._bufs[self._cur])[:n], self._cur)
            self._cur = self._free.get()
            self._fill = 0

    def write(self, buf) -> int:
        mv = _as_bytes_view(buf)
        n = len(mv)
        if self._fill == 0 and n >= ALIGN and _address(mv) % ALIGN == 0:
            # Aligned source at an aligned file offset: write it directly, staging
            # only the unaligned tail.
            bulk = n - n % ALIGN
            for i in range(0, bulk, self.chunk):
                self._submit(mv[i:min(bulk, i + self.chunk)])
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
        self._todo.put(None)
        self._thread.join()
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
            return os.open(path, flags | os.O_DIRECT, 0o600), True
        except OSError as e:
            if e.errno != errno.EINVAL:  # EINVAL: the file system refuses O_DIRECT
                raise
    return os.open(path, flags, 0o600), False


def write_file(path: str, header: dict, write_payload, *, direct: bool, chunk: int) -> int:
    """Write header + payload to ``path`` atomically (temporary name, then rename).

    ``write_payload(sink)`` writes the payload; returns the file size.
    """
    tmp = tmp_name(path)
    fd, direct = _open_for_write(tmp, direct)
    sink = _DirectSink(fd, chunk) if direct else _Sink(fd)
    try:
        try:
            sink.write(header_block(header))
            write_payload(sink)
        except BaseException:
            sink.abort()
            raise
        size = sink.finish()
        os.close(fd)
        fd = -1
        os.rename(tmp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return size


def map_file(path: str, willneed: bool = False) -> mmap.mmap:
    """Read-only shared memory map of a whole file (zero copy; pages come from tmpfs or
    the page cache).

    ``willneed`` (disk files) asks the kernel to read the whole file ahead
    (MADV_WILLNEED): measured 1.2 GB/s cold on this machine against 0.35 GB/s for plain
    page faults, 0.5 GB/s for O_DIRECT reads (one request at a time) and 0.9 GB/s for four
    parallel O_DIRECT reads; warm (page cache) it costs only the mapping."""
    with open(path, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    if willneed and hasattr(mm, "madvise"):
        try:
            mm.madvise(mmap.MADV_WILLNEED)
        except (OSError, AttributeError):
            pass
    return mm


def read_file_direct(path: str, chunk: int) -> mmap.mmap:
    """Read a whole file into a fresh private aligned buffer, with O_DIRECT where supported
    (no page-cache copy or pollution). The buffer is padded to 4 KiB; the caller slices it
    by the header."""
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
        buf = aligned_buffer(size)
        mv = memoryview(buf)
        pos, end = 0, round_up(size)
        while pos < size:
            n = os.preadv(fd, [mv[pos:min(end, pos + chunk)]], pos)
            if n <= 0:
                break
            pos += n
        if pos < size:
            raise StoreCorruptError(f"{path}: short read ({pos} of {size} bytes)")
        mv.release()
        return buf
    finally:
        os.close(fd)
