"""``MarsStore``: the worker's ``data`` mapping, a node-local store that outlives the process.

Tiers (as Mars's plasma store + spill): every value is written once to a file in the
shared-memory directory (``/dev/shm``) and the store holds the value *read back from that
file's memory map* -- the result is in memory once, in pages that belong to tmpfs rather
than to the process, so they survive a SIGKILL (a frame is read back when first read:
building it costs more than mapping an array). When the shared-memory tier exceeds its
limit, least recently used values move to the disk directory (an O_DIRECT sequential copy
of the file; the shared-memory file is then deleted). Values read back from disk are cached
(bounded by the same limit) and dropped again without rewriting: a key's file is written
once and never rewritten by eviction or read-back (zict.Buffer rewrites on every cycle).

The in-memory part is a ``zict.LRU`` (``store.fast``) whose eviction callback demotes a
value to disk; ``store.evict()`` implements Dask's ``ManualEvictProto`` so the worker's
memory monitor spills under pressure at ``distributed.worker.memory.spill`` exactly as it
does with the default ``SpillBuffer``.

Files live under ``<directory>/<scheduler address>/<worker name>/`` and
``<spill-directory>/<scheduler address>/<worker name>/``. A new process with the same name
finds the previous process's keys (:meth:`MarsStore.existing_keys`) without exposing them
in the mapping (Dask requires ``Worker.data`` to be empty when the worker registers); the
restart logic calls :meth:`MarsStore.recover` for each key still wanted and hands the value
to the worker (``store[key] = value`` with that same object adopts the file, no rewrite),
then :meth:`MarsStore.discard_existing` for the rest.

Write-behind (``write-delay``): a result that took less than ``write-delay-max-compute`` to
compute is held in the process (tier ``pending``) and written by a background thread once
it is ``write-delay`` old (up to ``WRITE_BEHIND_SLACK`` later: due writes are handled in
bursts), unless it has been deleted by then. Most intermediate results of
a pipeline (and each iteration's result in a loop ``x = f(x).execute()``) are consumed and
released within a second, so they never cost a write (writing to /dev/shm costs about
1 ms/MB here, as much as many small tasks take to compute); a SIGKILL loses only results
younger than ``write-delay`` that were each cheaper than ``write-delay-max-compute`` to
compute (the restart logic recomputes them). Results that took longer, transfers' copies
excepted, and values that did not come from a task (scatter) are written at once.
``write-delay: 0`` writes every value before ``store[key] = value`` returns.

Checks and read-ahead: a file read back from disk (or left by a previous process) has its
length and payload checksum checked before anything in it is decoded (``_files.verify``),
once per file and process. A check has to read the whole file before the value can be
used, which would serialise the read with the task's compute; so the worker plugin tells
the store which inputs the next ready tasks will read (:meth:`MarsStore.prefetch`) and a
background thread reads and checks up to ``read-ahead`` of them while the current task
runs.

Who removes the files: ``store.close(remove=True)``, called by the teardown of the mars_dask
worker plugin that bound the store (:meth:`MarsStore.bind`), else by the ``StoreTeardown``
worker plugin the store puts in its worker's ``plugins`` (see ``_worker.py``; so a clean
worker close, ``client.restart()`` and cluster close remove everything); deleting a key removes its file at once. A process
killed by a signal leaves its files for its successor. Directories nobody will adopt (the
whole cluster crashed, a machine was lost) are swept (``mars_dask/_leftovers.py``): the
store holds a shared ``flock`` on its two directories while it is open (so does its nanny,
through restarts), and when a store is first opened it removes, in a background thread,
the directories under its roots that no live process holds (other clusters' only: its own
cluster's are left to their nannies); :func:`purge_store` and ``python -m
mars_dask.cleanup`` remove them on demand.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import tempfile
import threading
import time
import weakref
from collections import deque
from collections.abc import Iterator, MutableMapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import dask.config
import zict
from dask.utils import parse_bytes, parse_timedelta

from .. import config
from .._safe_files import private_dir, user_name
from ..errors import StoreCorruptError, StoreError
from . import _files
from ._codec import Lz4Sink, decode, encode, lz4_decompress
from ._recycle import ShmRecycler
from ._worker import install_teardown

logger = logging.getLogger("mars_dask.spill")

_UNSET: Any = object()


def _cfg(key: str):
    return config.get(f"store.{key}")


def _safe(s) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", str(s)).strip("_") or "_"


def default_directory() -> str:
    """Per-user shared-memory root: ``/dev/shm/mars-dask-<user>`` (temp dir if no /dev/shm)."""
    base = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
    return os.path.join(base, f"mars-dask-{_safe(user_name())}")


def store_dirs(directory: str, spill_directory: str, cluster: str, name: str) -> tuple[str, str]:
    """The two directories holding the files of worker ``name`` in cluster ``cluster``."""
    return (os.path.join(directory, _safe(cluster), _safe(name)),
            os.path.join(spill_directory, _safe(cluster), _safe(name)))


def _remove_dir(path: str) -> None:
    """Remove a store directory (this store's own, whoever else holds it) and its cluster
    directory if that is now empty."""
    shutil.rmtree(path, ignore_errors=True)
    try:
        os.rmdir(os.path.dirname(path))
    except OSError:
        pass


def purge_store(directory: str, spill_directory: str, cluster: str, name: str) -> bool:
    """Remove the files a dead worker left, unless a live process (the worker, its nanny)
    holds its directories (see ``mars_dask/_leftovers.py``). Returns whether they are gone."""
    from .._leftovers import remove_if_unused

    gone = True
    for d in store_dirs(directory, spill_directory, cluster, name):
        removed, _, _ = remove_if_unused(d)
        if removed:
            try:
                os.rmdir(os.path.dirname(d))
            except OSError:
                pass
        elif os.path.lexists(d):
            gone = False
    return gone


def _taken_apart(ts) -> bool:
    """A shuffle's map output (annotation ``mars_boundary: shuffle``, ``tiling/emit.py``): its
    only readers are its piece tasks, which run on this worker as soon as it is stored and
    hold the same data (views of it); written at once, however long its compute, its file
    was written and unlinked within milliseconds (4% of a cold sort's worker CPU). It waits
    like a cheap result, and its pieces are written behind if they live long enough.
    Asked only of slow results, so the import (not at module level: the plugins import
    the store) is off the common path."""
    from ..plugins._protocol import ANN_BOUNDARY

    return (ts.annotations or {}).get(ANN_BOUNDARY) == "shuffle"


def _key_file(key) -> str:
    return hashlib.blake2b(repr(key).encode(), digest_size=16).hexdigest() + _files.SUFFIX



#: a written frame (or tuple of them) up to this size is held as the object the task
#: returned, not re-read from its file: re-reading builds the frame again (~0.1-0.3 ms,
#: whatever its size), and holding both costs little memory at this size
HOLD_AS_IS = 2**20

#: the write-behind thread sleeps this much past the next due time, and then handles every
#: value due by then: one wake-up (taking the GIL from the task thread and the event loop)
#: per burst of results instead of one per result, most of which were deleted before
#: their write was due
WRITE_BEHIND_SLACK = 0.05

#: held in the LRU in place of a written frame that was not re-read yet: building frames
#: from a file is not free (each block, each frame of a tuple), so it is done when the value
#: is first read, not when it is written; most long-lived results are read once or never
#: (the file is accounted for all the same: the LRU weight is the entry's)
_UNREAD: Any = type("_Unread", (), {"__repr__": lambda self: "<not read back yet>"})()


class _SpillFailed(Exception):
    """Moving a value to disk failed (logged); it stays in memory."""


class _Entry:
    __slots__ = ("key", "tier", "path", "header", "offset", "size", "nbytes", "own", "verified", "mm")

    def __init__(self, key, tier, path, header, offset, size, nbytes):
        self.own = False          # shm tier: the held value is the original (file + heap)
        self.verified = False     # the file's checksum was checked by this process
        self.mm = None            # shm tier: the one mapping of the file this process hands out
        self.key = key
        self.tier = tier          # "shm" | "disk" | "pending" (write-behind) | "heap" (no file:
        #                           both writes failed)
        self.path = path
        self.header = header
        self.offset = offset      # payload offset in the file
        self.size = size          # payload bytes in the file
        self.nbytes = nbytes      # bytes in memory when materialized

    @property
    def weight_in_memory(self) -> int:
        """What holding the value costs: the whole file for the shared-memory tier (and
        the value's own memory if that is held too)."""
        if self.tier == "shm":
            return self.offset + self.size + (self.nbytes if self.own else 0)
        return self.nbytes


def _entry_of(tier: str, path: str) -> _Entry:
    """The entry of a store file found on disk (a previous process's, or a dead sibling's
    taken over): its header read, and its key checked against the file's name (raises
    ``StoreCorruptError``, or what reading the header raises)."""
    header, offset, size = _files.read_header(path)
    key = _files.as_key(header["key"])
    if _key_file(key) != os.path.basename(path):
        raise StoreCorruptError(f"holds key {key!r}, not the key of its name")
    header["key"] = key
    return _Entry(key, tier, path, header, offset, size, header["nbytes"])


class MarsStore(MutableMapping):
    """Node-local result store; use as ``Worker(data=MarsStore)`` or
    ``Worker(data=(MarsStore, {...}))`` / ``LocalCluster(data=...)``.

    Parameters (keyword-only; each defaults to ``mars-dask.store.*`` in dask.config)
    ----------
    worker_local_directory: filled in by Dask (positionally) when the store is built by the
        worker; the default disk directory is beside it.
    directory: shared-memory root (default :func:`default_directory`).
    spill_directory: disk root (default ``<worker local dir>/../mars-spill``, else temp dir).
    name: stable worker identity (default: the worker's name, else its nanny's address).
    cluster: cluster identity (default: the scheduler address).
    memory_limit: the worker's memory limit (default: discovered from the worker).
    shm_limit: bytes in memory (shared-memory tier + cached read-backs) before LRU values
        go to disk; fraction (<= 1) of ``memory_limit`` or bytes.
    compression: None or "lz4" (disk tier only).
    o_direct: O_DIRECT disk writes.
    read_mode: how disk files are read back: "mmap" (memory map + MADV_WILLNEED: the
        kernel reads the whole file ahead while the caller starts using it; zero copy;
        re-reads hit the page cache) or "direct" (O_DIRECT, ``read_depth`` requests in
        flight, into a recycled private buffer; zero copy from there).
    io_chunk: size of each O_DIRECT request.
    io_depth: O_DIRECT write requests in flight per file.
    read_depth: O_DIRECT read requests in flight per file (``read_mode="direct"``).
    read_pool: bytes of free read buffers kept for reuse (reading into fresh memory costs
        page faults as slow as the disk on VMs); fraction (<= 1) of ``memory_limit`` or bytes.
    write_delay: write-behind delay (seconds or a string such as "1s"; 0: write at once).
    write_delay_max_compute: only results that took less than this to compute wait.
    read_ahead: disk files read and checked ahead at most (:meth:`prefetch`, ``read_mode``
        "mmap" only); 0: none.
    shm_recycle: bytes of deleted values' shared-memory files kept for the next write of
        the same size (``_recycle.py``); fraction (<= 1) of ``memory_limit`` or bytes; 0: none.
    """

    def __init__(self, worker_local_directory=None, *, directory=None, spill_directory=None,
                 name=None, cluster=None, memory_limit=None, shm_limit=_UNSET,
                 compression=_UNSET, o_direct=_UNSET, io_chunk=_UNSET, read_mode=_UNSET,
                 io_depth=_UNSET, read_depth=_UNSET, read_pool=_UNSET, write_delay=_UNSET,
                 write_delay_max_compute=_UNSET, read_ahead=_UNSET, shm_recycle=_UNSET):
        # the worker is learnt later (bind(), see _worker.py); until then: no worker
        self._worker = None
        self.bound_by = None  # the worker plugin that bound this store and closes it
        self._bind_tried = False
        self._explicit = {"name": name is not None, "memory_limit": memory_limit is not None}
        self.memory_limit = parse_bytes(memory_limit) if isinstance(memory_limit, str) else memory_limit
        from .._leftovers import store_roots  # one resolution, shared with the nanny's

        self.directory, spill = store_roots(
            directory, spill_directory,
            scratch=os.path.dirname(worker_local_directory) if worker_local_directory else None)
        self.spill_directory = spill
        for root in (self.directory, spill):  # refuse a planted or shared root now, clearly
            private_dir(root)
        self._name = name
        self._cluster = cluster
        self._shm_limit_arg = _cfg("shm-limit") if shm_limit is _UNSET else shm_limit
        self.shm_limit = self._parse_limit(self._shm_limit_arg)
        self.compression = _cfg("compression") if compression is _UNSET else compression
        if self.compression not in (None, "lz4"):
            raise ValueError(f"compression must be None or 'lz4', got {self.compression!r}")
        if self.compression == "lz4":
            try:
                import lz4.block  # noqa: F401
            except ImportError:
                raise ImportError("mars-dask.store.compression 'lz4' needs the lz4 package: "
                                  "pip install 'mars_dask[lz4]'") from None
        self.o_direct = bool(_cfg("o-direct") if o_direct is _UNSET else o_direct)
        self.read_mode = (_cfg("read") or "mmap") if read_mode is _UNSET else read_mode
        if self.read_mode not in ("mmap", "direct"):
            raise ValueError(f"read_mode must be 'mmap' or 'direct', got {self.read_mode!r}")
        chunk = _cfg("io-chunk") if io_chunk is _UNSET else io_chunk
        self.io_chunk = parse_bytes(chunk) if isinstance(chunk, str) else int(chunk or 4 * 2**20)
        depth = _cfg("io-depth") if io_depth is _UNSET else io_depth
        self.io_depth = max(1, int(depth or 4))
        depth = _cfg("read-depth") if read_depth is _UNSET else read_depth
        self.read_depth = max(1, int(depth or 16))
        pool = _cfg("read-pool") if read_pool is _UNSET else read_pool
        if pool is None:
            pool = 512 * 2**20
        self._read_pool_arg = pool
        self.read_pool = _files.ReadPool(0 if pool in (0, False) else self._parse_limit(pool))

        def seconds(value, name, default):
            value = _cfg(name) if value is _UNSET else value
            return default if value is None else float(parse_timedelta(value) or 0)

        self.write_delay = seconds(write_delay, "write-delay", 0.0)
        self._write_now_until = 0.0  # monotonic time: write-behind paused until then
        self.write_behind_pause = seconds(_UNSET, "write-behind-pause", 0.0)
        self.write_delay_max_compute = seconds(write_delay_max_compute, "write-delay-max-compute",
                                               self.write_delay)

        self._lock = threading.RLock()
        self._queued = threading.Condition(self._lock)
        self._queue: deque = deque()  # (due, key, entry) of pending values, due times in order
        self._young: deque = deque()  # (due, key, entry) of values written young: see _settle
        self._writer: threading.Thread | None = None
        self._writing: _Entry | None = None  # the writer thread's write in flight (lock released)
        self._entries: dict = {}
        self._orphans: dict = {}
        self._recovering: dict = {}
        self._dirs: tuple[str, str] | None = None
        self._closed = False
        self._warned: dict = {}
        self._lru: zict.LRU = zict.LRU(self.shm_limit, {}, on_evict=[self._demote],
                                       weight=lambda k, v: self._entries[k].weight_in_memory)
        ahead = _cfg("read-ahead") if read_ahead is _UNSET else read_ahead
        self.read_ahead = max(0, int(2 if ahead is None else ahead))
        self._ahead: dict = {}  # key -> (entry, future of its verified buffer)
        self._maybe_disk = False  # a disk-tier file was written or found (never reset)
        self._ahead_next: list | None = None  # the latest prefetch() list, not yet considered
        self._ahead_mutex = threading.Lock()
        self._ahead_draining = False
        self._ahead_pool: ThreadPoolExecutor | None = None
        self.ahead_hits = 0
        # disk-tier I/O counters (see stats()): [operations, bytes, seconds] per direction;
        # updated by the writer and read-ahead threads too, hence their own small lock
        self._io_lock = threading.Lock()
        self._io = {"write": [0, 0, 0.0], "read": [0, 0, 0.0]}
        self._mapped_reads = 0  # disk files mapped without the store reading them (see stats())
        recycle = _cfg("shm-recycle") if shm_recycle is _UNSET else shm_recycle
        self._recycler = ShmRecycler(0 if recycle in (None, 0, False) else self._parse_limit(recycle),
                                     lambda: self.dirs[0])

    # -- its worker (see _worker.py) ------------------------------------------------------
    def bind(self, worker, owner=None) -> None:
        """Tie this store to ``worker`` (called by the mars_dask worker plugin's ``setup``,
        ``owner`` being that plugin, which closes the store in its ``teardown``): the
        worker's stable name, memory limit and state (write-behind) are used from now on.
        Without ``owner`` the store closes itself on worker close (:class:`StoreTeardown`)."""
        with self._lock:
            self._bind_tried = True
            if owner is not None:
                self.bound_by = owner
            if self._worker is not None and self._worker() is worker:
                return
            self._worker = weakref.ref(worker)
            if not self._explicit["name"] and self._dirs is None:
                # the name as configured: Worker.start replaces None by the worker's address,
                # and a nameless worker's stable identity is its nanny's address
                wname = worker.name
                if wname is None or (worker.nanny and str(wname) == str(getattr(worker, "address", None))):
                    wname = worker.nanny
                self._name = wname
            limit = getattr(getattr(worker, "memory_manager", None), "memory_limit", None)
            if not self._explicit["memory_limit"] and limit and limit != self.memory_limit:
                self.memory_limit = limit
                self.shm_limit = self._parse_limit(self._shm_limit_arg)
                self._lru.n = self.shm_limit
                pool = self._read_pool_arg
                self.read_pool = _files.ReadPool(0 if pool in (0, False) else self._parse_limit(pool))
        if owner is None:
            install_teardown(self, worker)

    def _bound_worker(self):
        """The worker this store belongs to, or None; a store nobody bound looks for its
        worker once (``LocalCluster(data=MarsStore)`` without the mars_dask plugins)."""
        if self._worker is None and not self._bind_tried:
            self._bind_tried = True
            from .. import _dask_internals as DI

            if DI.enabled("store-without-plugin"):
                try:
                    w = DI.worker_holding_store(self)
                except Exception as e:  # noqa: BLE001 - the store works unbound
                    logger.warning("store %s cannot find its worker: %r", self._name, e)
                    w = None
                if w is not None:
                    self.bind(w)
        return self._worker() if self._worker is not None else None

    # -- configuration ------------------------------------------------------------------
    def _parse_limit(self, limit) -> int:
        if isinstance(limit, str):
            return parse_bytes(limit)
        if limit is None:
            frac = dask.config.get("distributed.worker.memory.target") or 0.6
        elif limit <= 1:
            frac = float(limit)
        else:
            return int(limit)
        total = self.memory_limit
        if not total:
            import psutil

            total = psutil.virtual_memory().total // 2
        return int(total * frac)

    @property
    def name(self) -> str:
        if self._name is None:
            self._bound_worker()  # binding sets the worker's name
        if self._name is None:
            self._name = f"pid{os.getpid()}-{os.urandom(4).hex()}"  # not restartable
        return str(self._name)

    @property
    def cluster(self) -> str:
        if self._cluster is None:
            w = self._bound_worker()
            sched = getattr(getattr(w, "scheduler", None), "address", None)
            self._cluster = sched or "local"
        return str(self._cluster)

    #: the shared locks this store holds on its two directories (see ``dirs``)
    _dir_locks: tuple = ()

    @property
    def dirs(self) -> tuple[str, str]:
        """(shared-memory dir, disk dir) of this store; scanning for a previous process's
        files happens the first time they are needed. Opening them holds a shared lock on
        each (``mars_dask._leftovers.hold_dir``: created private, 0700, no symlinks, see
        ``mars_dask._safe_files``) until :meth:`close`, and starts a sweep of the roots for
        other clusters' directories nobody holds (a background thread)."""
        with self._lock:
            if self._dirs is None:
                if self._closed:
                    raise StoreError("store is closed")
                from .._leftovers import hold_dir, sweep_in_background

                dirs = store_dirs(self.directory, self.spill_directory, self.cluster, self.name)
                locks = []
                try:
                    for d in dirs:
                        locks.append(hold_dir(d))
                except BaseException:
                    for lk in locks:
                        lk.release()
                    raise
                self._dir_locks = tuple(locks)
                self._dirs = dirs
                self._scan()
                sweep_in_background(roots=(self.directory, self.spill_directory), own=dirs,
                                    skip_clusters=(_safe(self.cluster),), who=f"store {self.name}")
            return self._dirs

    def _release_dirs(self) -> None:
        locks, self._dir_locks = self._dir_locks, ()
        for lk in locks:
            lk.release()

    # -- the mapping --------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator:
        return iter(list(self._entries))

    def __contains__(self, key) -> bool:
        return key in self._entries

    def __getitem__(self, key):
        with self._lock:
            try:
                value = self._lru[key]
            except KeyError:
                pass
            else:
                if value is _UNREAD:
                    value = self._lru.d[key] = self._load(self._entries[key])  # same weight
                return value
            entry = self._entries[key]
            value = self._load(entry)
            if entry.nbytes <= self._lru.n:
                self._hold(key, value)
            return value

    def __setitem__(self, key, value) -> None:
        with self._lock:
            if key in self._entries:
                del self[key]
            pending = self._recovering.pop(key, None)
            if pending is not None and pending[1] is value:
                self._adopt(pending[0], value)
                return
            if key in self._orphans:
                self._unlink(self._orphans.pop(key))
            nbytes = self._deferrable(key)
            if nbytes is None:
                self._persist(key, value)
            elif time.monotonic() < self._write_now_until:  # write-behind paused: write_now_for
                self._persist(key, value, young=True)
            else:
                entry = self._entries[key] = _Entry(key, "pending", None, None, 0, 0, nbytes)
                self._queue.append((time.monotonic() + self.write_delay, key, entry))
                self._hold(key, value)  # an eviction now writes it to disk (_demote)
                self._wake_writer(len(self._queue) == 1)

    def _wake_writer(self, notify: bool) -> None:
        """(Lock held.) Start the writer thread on the first value it has to handle, else
        wake it if ``notify`` (its next due time may have moved earlier)."""
        if self._writer is None:
            self._writer = threading.Thread(target=self._write_behind, daemon=True,
                                            name=f"mars-dask-store-{self.name}")
            self._writer.start()
        elif notify:
            self._queued.notify()

    def _persist(self, key, value, young: bool = False) -> None:
        """Write ``value`` (shared memory, else disk, else keep it in the heap) and hold it;
        ``young``: see :meth:`_install`."""
        enc, new, _ = self._write_out(key, value, publish=True)
        self._install(key, value, enc, new, young=young)

    def _write_out(self, key, value, publish: bool):
        """Encode and write ``value`` to shared memory, else disk: ``(encoded, entry, tmp)``;
        ``publish=False`` leaves the file under its temporary name ``tmp`` (the writer
        thread renames it under the lock). Changes no state of the store (it takes the
        lock only to create the directories on their first use): the writer thread calls it
        without the lock."""
        enc = encode(value)
        new = tmp = None
        if (enc.size if enc.size is not None else enc.nbytes) <= self._lru.n:
            new, tmp = self._try_write(key, enc, "shm", publish)
        if new is None:
            new, tmp = self._try_write(key, enc, "disk", publish)
        if new is None:  # no file at all; keep it in the heap like a plain dict
            new = _Entry(key, "heap", None, None, 0, 0, enc.nbytes)
        return enc, new, tmp

    def _install(self, key, value, enc, new: _Entry, entry: _Entry | None = None,
                 young: bool = False) -> None:
        """Make the written ``new`` the key's entry (``entry``: the pending entry it
        completes) and hold the value as read back from the file (arrays: now; larger
        frames: when first read; small frames and pickled values: as they are).

        ``young``: a result that would have waited for its write-behind, written at once
        because write-behind is paused. It is held as the task returned it (file + heap,
        accounted so) for ``write_delay``, then as the file (:meth:`_settle`): most such
        results are deleted before that, and mapping the file only to read it back once
        (mmap, a page fault per page in the next task, munmap) cost as much as the write
        itself; held as is, the file is never mapped and is recycled whole on delete."""
        if entry is None:
            entry = self._entries[key] = new
        else:
            for f in _Entry.__slots__:
                setattr(entry, f, getattr(new, f))
        if entry.tier == "shm":
            if enc.kind == "dask":
                held = value
            elif young and (enc.kind == "numpy" or enc.nbytes > HOLD_AS_IS):
                held, entry.own = value, True
                self._young.append((time.monotonic() + self.write_delay, key, entry))
                self._wake_writer(len(self._young) == 1)
            elif enc.kind == "numpy":
                held = self._load(entry)
            elif enc.nbytes <= HOLD_AS_IS:
                held, entry.own = value, True
            else:
                held = _UNREAD  # built from the file when first read (see _UNREAD)
            self._hold(key, held)
        elif entry.tier == "heap":
            self._lru.set_noevict(key, value)
        elif key in self._lru:  # a pending value written to disk: it is in the file now
            del self._lru[key]

    def _deferrable(self, key) -> int | None:
        """The size of the value being stored if its write may wait (a task result cheaper
        than ``write_delay_max_compute`` to compute, or a copy fetched from another worker),
        else None. (While write-behind is paused, :meth:`write_now_for`, such a value is
        written at once but held as is while young: :meth:`_install`.)
        The worker's TaskState says which when the value is stored: a fetched copy is still
        in state ``flight`` (Dask records the transfer's time on the task that needed it,
        not on the key), a task result has its compute time as its last ``startstops``."""
        if self.write_delay <= 0 or self._closed:
            return None
        if self._dirs is None:
            _ = self.dirs  # opened (and scanned: see _scan) before the first value waits
        w = self._bound_worker()
        ts = w.state.tasks.get(key) if w is not None else None
        if ts is None or ts.nbytes is None:
            return None
        if ts.state == "flight" or (ts.state == "resumed" and ts.previous == "flight"):
            return int(ts.nbytes)
        if not ts.startstops:
            return None
        last = ts.startstops[-1]
        if last["action"] != "compute":
            return None
        if last["stop"] - last["start"] >= self.write_delay_max_compute and not _taken_apart(ts):
            return None
        return int(ts.nbytes)

    def _write_behind(self) -> None:
        """The writer thread: writes each pending value when it is due, skipping those
        deleted or spilled meanwhile. The write itself runs without the lock (the worker's
        event loop and task threads read and store values meanwhile; a write holds the
        lock only to publish its file), so a value deleted, replaced or spilled during its
        write has its temporary file unlinked instead."""
        with self._lock:
            while not self._closed:
                now = time.monotonic()
                settle = self._young[0][0] - now if self._young else None
                if settle is not None and settle <= 0:
                    self._settle(*self._young.popleft()[1:])
                    continue
                if not self._queue:
                    self._queued.wait(None if settle is None else settle + WRITE_BEHIND_SLACK)
                    continue
                due, key, entry = self._queue[0]
                wait = due - now if now >= self._write_now_until else 0
                if wait > 0:
                    self._queued.wait((wait if settle is None else min(wait, settle)) + WRITE_BEHIND_SLACK)
                    continue
                self._queue.popleft()
                if not self._is_pending(key, entry):
                    continue
                value = self._lru.d[key]
                self._writing = entry
                self._lock.release()
                try:
                    written = self._write_behind_one(key, value)
                finally:
                    self._lock.acquire()
                try:
                    self._publish(key, entry, value, written)
                finally:
                    self._writing = None
                    del value, written
                    self._queued.notify_all()

    def _settle(self, key, entry: _Entry) -> None:
        """(Lock held.) A value written young (:meth:`_install`) and still stored is held as
        its file from now on: the task's object is let go (its memory freed once no task
        or transfer uses it) and the file is mapped when the value is next read."""
        if self._entries.get(key) is entry and entry.tier == "shm" and entry.own and key in self._lru:
            entry.own = False
            self._lru.set_noevict(key, _UNREAD)

    def _write_behind_one(self, key, value):
        """``_write_out(publish=False)``; None if it failed (logged: the value stays in
        memory only, as after any failed write)."""
        try:
            return self._write_out(key, value, publish=False)
        except Exception:
            logger.exception("write-behind of %s failed; keeping it in memory only", key)
            return None

    def _publish(self, key, entry: _Entry, value, written) -> None:
        """(Lock held.) Rename the writer thread's file into place and complete ``entry``;
        or drop the file if the entry was deleted, replaced or spilled during the write."""
        if written is None:  # failed (logged): keep the value in memory only
            if self._is_pending(key, entry):
                entry.tier = "heap"
            return
        enc, new, tmp = written
        if not self._is_pending(key, entry) or self._closed:
            if tmp is not None:
                _files.unlink_quietly(tmp)
            return
        try:
            if tmp is not None:
                os.rename(tmp, new.path)
            self._install(key, value, enc, new, entry)
        except Exception:
            logger.exception("write-behind of %s failed; keeping it in memory only", key)
            if tmp is not None:
                _files.unlink_quietly(tmp)
            entry.tier = "heap"

    def _is_pending(self, key, entry: _Entry) -> bool:
        """``entry`` is still ``key``'s and still waits for its write (not deleted, replaced
        or spilled to disk)."""
        return entry.tier == "pending" and self._entries.get(key) is entry

    def _write_pending(self, key, entry: _Entry) -> None:
        """(Lock held.) Write a pending value now."""
        if self._is_pending(key, entry):
            value = self._lru.d[key]
            self._publish(key, entry, value, self._write_behind_one(key, value))

    def _wait_for_writer(self) -> None:
        """Wait (lock held) until the writer thread's write in flight is published or
        dropped."""
        while self._writing is not None:
            self._queued.wait()

    def write_now_for(self, seconds: float) -> None:
        """Pause write-behind for ``seconds``: every value stored meanwhile is written before
        it is stored, and the values still waiting are written now (by the writer thread).
        The scheduler asks this of every worker after a worker process was lost
        (``mars-dask.store.write-behind-pause``): while processes are being killed, a result
        the store held back is lost with its process and recomputed, and the recomputation
        runs back through lineage that was released (a lost result of a chain's 5-step stage
        cost ~100 tasks); written, it is taken over from the store in milliseconds."""
        with self._lock:
            self._write_now_until = max(self._write_now_until, time.monotonic() + float(seconds))
            self._queued.notify_all()

    def flush(self) -> None:
        """Write every pending value now (before a close that keeps the files)."""
        with self._lock:
            self._wait_for_writer()
            while self._queue:
                _, key, entry = self._queue.popleft()
                self._write_pending(key, entry)

    def __delitem__(self, key) -> None:
        with self._lock:
            entry = self._entries.pop(key)
            self._ahead.pop(key, None)
            if key in self._lru:
                del self._lru[key]
            self._unlink(entry, recycle=True)

    # -- read ahead ---------------------------------------------------------------------
    @property
    def reads_ahead(self) -> bool:
        """Read-ahead is on: ``read_ahead > 0`` and memory-mapped reads (direct reads land
        in private buffers: reading ahead would hold one more per file, and fresh memory
        costs page faults as slow as the disk here, 0.6-0.8x in bench_spill; their check
        runs on every core right after the read instead)."""
        return self.read_ahead > 0 and self.read_mode != "direct"

    @property
    def on_disk(self) -> bool:
        """Whether this store ever had a value on its disk tier (cheap, conservative: the
        worker plugin skips read-ahead entirely until then)."""
        return self._maybe_disk
    def prefetch(self, keys) -> None:
        """Read and check the disk files of ``keys`` (the inputs of the next tasks, in the
        order they will run) in the background, at most ``read_ahead`` files read and not
        yet taken, so that the task that reads them finds them checked and in memory: the
        read and its checksum overlap the compute of the task running now instead of
        delaying the next one. Each call replaces the previous one's list; a file read
        ahead that is no longer in it is let go (its check stays done, its pages stay in
        the page cache). The worker plugin calls this from the event loop: it never waits
        for the store's lock. Keys held in memory, not on disk or already read ahead are
        skipped. A file that fails its check here is simply read again by the task, which
        then gets the error."""
        if self._closed or not self.reads_ahead:
            return
        entries = self._entries  # (reads of a dict are atomic; the thread re-checks under the lock)
        keys = [k for k in keys if (e := entries.get(k)) is not None and e.tier == "disk"]
        if not keys:
            return  # inputs in memory (the common case): no thread woken, no lock taken
        with self._ahead_mutex:
            self._ahead_next = list(keys)[:64]
            if self._ahead_draining:
                return
            self._ahead_draining = True
        if self._ahead_pool is None:
            self._ahead_pool = ThreadPoolExecutor(1, thread_name_prefix="mars-store-ahead")
        try:
            self._ahead_pool.submit(self._drain_ahead)
        except RuntimeError:  # shut down by close()
            self._ahead_draining = False

    def _drain_ahead(self) -> None:
        while True:
            with self._ahead_mutex:
                keys, self._ahead_next = self._ahead_next, None
                if keys is None or self._closed:
                    self._ahead_draining = False
                    return
            todo = []
            with self._lock:
                wanted = set(keys)
                for k in [k for k, (_, f) in self._ahead.items() if k not in wanted and f.done()]:
                    del self._ahead[k]
                for key in keys:
                    if len(self._ahead) >= self.read_ahead:
                        break
                    entry = self._entries.get(key)
                    if (entry is None or entry.tier != "disk" or key in self._ahead
                            or (key in self._lru and self._lru.d.get(key) is not _UNREAD)):
                        continue
                    fut: Future = Future()
                    self._ahead[key] = (entry, fut)
                    todo.append((entry, fut))
            for entry, fut in todo:  # in order: a task waiting for one gets it soonest
                try:
                    fut.set_result(self._read_file(entry))
                except BaseException as e:  # noqa: BLE001 - handed to the task that waits for it
                    fut.set_exception(e)

    def _take_ahead(self, entry: _Entry):
        """The buffer read ahead for ``entry``, or None (not read ahead, or that failed)."""
        ahead = self._ahead.pop(entry.key, None)
        if ahead is None or ahead[0] is not entry:
            return None
        try:
            buf = ahead[1].result()
        except Exception:  # noqa: BLE001 - a failed read-ahead: the caller reads the file itself
            return None
        self.ahead_hits += 1
        return buf

    # -- Dask's ManualEvictProto (worker memory monitor) --------------------------------
    @property
    def fast(self) -> zict.LRU:
        """Values materialized in this process (shared-memory tier + cached read-backs)."""
        return self._lru

    def evict(self) -> int:
        """Move the least recently used in-memory value to disk (or drop its cached copy
        if it is already there). Returns the bytes freed, -1 if nothing could be evicted."""
        with self._lock:
            self.read_pool.trim(0)  # free read buffers first: memory nobody uses
            try:
                _, _, weight = self._lru.evict()
                return int(weight)
            except Exception as e:  # noqa: BLE001 - the memory monitor expects -1, not an error
                if self._lru:
                    logger.error("Spill to disk failed: %s", e)
                return -1

    @property
    def spilled_total(self):
        """``SpilledSize(memory, disk)`` of the keys on disk (what Worker metrics read)."""
        from distributed.spill import SpilledSize

        on_disk = [e for e in self._entries.values() if e.tier == "disk"]
        return SpilledSize(sum(e.nbytes for e in on_disk),
                           sum(e.offset + e.size for e in on_disk))

    def nbytes_of(self, key) -> int:
        """Size in memory of a stored (or recoverable) key's value."""
        entry = self._entries.get(key) or self._orphans[key]
        return entry.nbytes

    def tier_of(self, key) -> str:
        """"shm", "disk" or "heap"."""
        return self._entries[key].tier

    def path_of(self, key) -> str | None:
        return self._entries[key].path

    # -- restart: keys left by a previous process with the same name --------------------
    def existing_keys(self) -> dict:
        """``{key: nbytes}`` of the files a previous process of this worker left (not part
        of the mapping until adopted)."""
        _ = self.dirs  # for its side effect: opens the directories, scans for the files
        with self._lock:
            return {k: e.nbytes for k, e in self._orphans.items()}

    def recover(self, key):
        """The value of a previous process's key, read from its file. Storing exactly this
        object under ``key`` (``store[key] = value``, which ``Worker.update_data`` does)
        adopts the file instead of writing a new one."""
        _ = self.dirs  # for its side effect: opens the directories, scans for the files
        with self._lock:
            entry = self._orphans[key]
            value = self._load(entry, verify=True)
            self._recovering[key] = (entry, value)
            return value

    def take_over(self, name, keys) -> dict:
        """``{key: value}`` for those of ``keys`` that the dead worker ``name`` of this
        cluster (another process on this node) left in its store, each file moved into
        this store's own directory (a rename: the same file system, no copy; the dead
        worker's successor then no longer finds it) and checked before anything in it is
        decoded. Storing exactly the returned object under its key (``Worker.update_data``)
        adopts the file, as :meth:`recover`. Keys whose file is missing (never written,
        or already taken by the successor) or damaged are left out.

        Why: the node-local store outlives the process, so a live worker on the node can
        give the results back at once; waiting for the nanny to restart the process (a
        process start, imports, registration, two round trips to the scheduler: 1.5-3 s
        on 2 cores) stalled every task downstream of the lost results."""
        own = self.dirs
        other = store_dirs(self.directory, self.spill_directory, self.cluster, name)
        if other == own:
            return {}
        out = {}
        for key in keys:
            fn = _key_file(key)
            for tier, src_dir, dst_dir in zip(("shm", "disk"), other, own):
                src, dst = os.path.join(src_dir, fn), os.path.join(dst_dir, fn)
                with self._lock:
                    if self._closed or key in self._entries or key in self._orphans:
                        break
                    try:
                        os.rename(src, dst)
                    except FileNotFoundError:
                        continue
                    except OSError as e:  # e.g. not the same file system
                        logger.debug("cannot take over %s: %s", src, e)
                        break
                    try:
                        entry = _entry_of(tier, dst)
                        if entry.key != key:
                            raise StoreCorruptError(f"holds key {entry.key!r}, not {key!r}")
                        value = self._load(entry, verify=True)
                    except (StoreCorruptError, ValueError, KeyError, TypeError, OSError) as e:
                        logger.warning("not taking over damaged store file %s: %s", src, e)
                        _files.unlink_quietly(dst)
                        break
                    self._orphans[key] = entry
                    self._recovering[key] = (entry, value)
                    self._maybe_disk = self._maybe_disk or tier == "disk"
                out[key] = value
                break
        return out

    def discard_existing(self, keys=None) -> None:
        """Delete a previous process's files (all, or ``keys``) that are not wanted."""
        _ = self.dirs  # for its side effect: opens the directories, scans for the files
        with self._lock:
            for k in list(self._orphans if keys is None else keys):
                entry = self._orphans.pop(k, None)
                self._recovering.pop(k, None)
                if entry is not None:
                    self._unlink(entry)

    def close(self, remove: bool = True) -> None:
        """Forget every value; with ``remove`` delete every file and directory the store
        wrote (including a previous process's leftovers). Idempotent."""
        with self._lock:
            if self._closed:
                return
            if not remove:
                self.flush()
            self._closed = True
            self._ahead.clear()
            if self._ahead_pool is not None:
                self._ahead_pool.shutdown(wait=False, cancel_futures=True)  # it may wait for our lock
            self._queue.clear()
            self._young.clear()
            self._queued.notify_all()
            self._wait_for_writer()  # its temporary file is gone before the directory is
            self._lru = zict.LRU(0, {})  # drop the held values without demoting them
            self.read_pool.trim(0)
            entries = list(self._entries.values()) + list(self._orphans.values())
            self._entries.clear()
            self._orphans.clear()
            self._recovering.clear()
            self._recycler.clear()
            if remove and self._dirs is not None:
                for e in entries:
                    self._unlink(e)
                for d in self._dirs:
                    _remove_dir(d)
            self._release_dirs()  # kept files are then held by the nanny alone, if any

    def __repr__(self) -> str:
        n = len(self._entries)
        return f"<MarsStore {self._name!r}: {n} keys, {self._lru.total_weight}/{self._lru.n} B in memory>"

    # -- internals ----------------------------------------------------------------------
    def _path(self, tier: str, key) -> str:
        shm, disk = self.dirs
        return os.path.join(shm if tier == "shm" else disk, _key_file(key))

    def _try_write(self, key, enc, tier: str, publish: bool = True) -> tuple[_Entry | None, str | None]:
        """``(entry, temporary path or None once published)``; ``(None, None)`` when the
        tier cannot take the value."""
        path = self._path(tier, key)
        compress = tier == "disk" and self.compression == "lz4"
        header = {"key": key, "kind": enc.kind, "meta": enc.meta, "nbytes": enc.nbytes,
                  "compression": "lz4" if compress else None,
                  "size": None if compress else enc.size}
        reuse = None
        if tier == "shm" and enc.size is not None and self._recycler.limit:
            reuse = self._recycler.take(len(_files.header_block(header)) + enc.size)
        try:
            tmp, size = self._write(path, header, enc.write, tier, compress, publish, reuse)
        except OSError as e:
            self._write_failed(key, tier, e)
            return None, None
        return self._entry_from(key, tier, path, header, size), tmp

    def _write(self, path, header, write_payload, tier, compress, publish=True,
               reuse=None) -> tuple[str | None, int]:
        """``(temporary path, or None once renamed to path; file size)``; ``reuse``: a free
        shared-memory file to overwrite."""
        if tier != "disk":
            return self._write_tier(path, header, write_payload, tier, compress, publish, reuse)
        self._maybe_disk = True
        t0 = time.perf_counter()
        out = self._write_tier(path, header, write_payload, tier, compress, publish)
        self._count_io("write", out[1], time.perf_counter() - t0)
        return out

    def _count_io(self, direction: str, nbytes: int, seconds: float) -> None:
        with self._io_lock:
            c = self._io[direction]
            c[0] += 1
            c[1] += nbytes
            c[2] += seconds

    def _write_tier(self, path, header, write_payload, tier, compress, publish=True,
                    reuse=None) -> tuple[str | None, int]:
        def payload(sink):
            if compress:
                z = Lz4Sink(sink)
                write_payload(z)
                z.finish()
            else:
                write_payload(sink)

        kw = {"direct": self.o_direct and tier == "disk", "chunk": self.io_chunk, "depth": self.io_depth,
              "reuse": reuse}
        if publish:
            return None, _files.write_file(path, header, payload, **kw)
        return _files.write_tmp(path, header, payload, **kw)

    @staticmethod
    def _entry_from(key, tier, path, header, file_size) -> _Entry:
        offset = len(_files.header_block(header))
        e = _Entry(key, tier, path, header, offset, file_size - offset, header["nbytes"])
        return e

    def _load(self, entry: _Entry, verify: bool | None = None):
        """The value in ``entry``'s file. ``verify`` (default: for the disk tier) checks the
        file's length and checksum first (:func:`_files.verify`), once per file and process:
        a file read back from disk or left by a previous process is checked when first read
        (later reads of it come from the page cache that check covered); a value this
        process wrote to shared memory and holds mapped is not re-checked."""
        if entry.tier in ("heap", "pending"):
            raise StoreError(f"{entry.key!r} is held in the heap only")  # always in the LRU
        h = entry.header
        offset, size = entry.offset, entry.size
        compressed = h.get("compression") == "lz4"
        buf = self._take_ahead(entry) if self._ahead else None
        if buf is None:
            buf = self._read_file(entry, verify)
        if compressed:
            src = memoryview(buf)[offset:offset + size]
            try:
                raw = lz4_decompress(src, self.read_pool.get)
            finally:
                src.release()
            buf, offset, size = raw.obj, 0, raw.nbytes
        return decode(h["kind"], h["meta"], buf, offset, size)

    def _read_file(self, entry: _Entry, verify: bool | None = None):
        """``entry``'s file in memory (mapped, or read O_DIRECT), checked as :meth:`_load`
        says. Runs without the lock in the read-ahead thread."""
        check = (entry.tier == "disk" if verify is None else verify) and not entry.verified
        end = entry.offset + entry.size
        timed = entry.tier == "disk" and (check or self.read_mode == "direct")  # the store reads it
        if entry.tier == "disk" and not timed:
            self._mapped_reads += 1  # (a counter for the curious: a lost increment costs nothing)
        t0 = time.perf_counter() if timed else 0.0
        if entry.tier == "disk" and self.read_mode == "direct":
            def streamed(buf, ready):  # each block hashed as it arrives, overlapping the read
                _files.verify(memoryview(buf)[:end], path=entry.path, key=entry.key, ready=ready)

            buf = _files.read_file_direct(entry.path, self.io_chunk, depth=self.read_depth,
                                          pool=self.read_pool, check=streamed if check else None)
        else:
            buf = entry.mm
            if buf is None or buf.closed:
                buf = _files.map_file(entry.path, willneed=entry.tier == "disk")
                if entry.tier == "shm":
                    entry.mm = buf  # one mapping per file: see _unlink
            if check:  # mapped: one pass in file order keeps the kernel's read-ahead ahead
                _files.verify(memoryview(buf)[:end], path=entry.path, key=entry.key, lanes=1)
        if check:
            entry.verified = True
        if timed:
            self._count_io("read", end, time.perf_counter() - t0)
        return buf

    def stats(self) -> dict:
        """What the store holds and how fast it spilled (``/api/mars/v1/store``, asked of
        the worker when the route is requested): keys and bytes per tier (``shm`` and
        ``disk``: file bytes; ``pending``: values waiting for their write-behind; ``heap``:
        values no tier could take), ``memory`` (what the in-memory LRU holds: mapped
        shared-memory files, cached read-backs, pending and heap values) against
        ``memory_limit``, the write-behind backlog, and the disk tier's I/O since the store
        opened: operations, bytes, seconds and bytes per second, for writes (spilling, or
        values the shared-memory tier could not take) and reads the store itself does
        (O_DIRECT reads and the checksum pass over a mapped file when it is first read;
        later reads of a mapped file are page faults in the task that uses it, counted
        only as ``mapped_reads``). One pass over the keys, only when asked."""
        with self._lock:
            tiers = {t: {"keys": 0, "bytes": 0} for t in ("shm", "disk", "pending", "heap")}
            for e in self._entries.values():
                t = tiers[e.tier]
                t["keys"] += 1
                t["bytes"] += e.offset + e.size if e.tier in ("shm", "disk") else e.nbytes
            backlog = [e.nbytes for _, key, e in self._queue if self._is_pending(key, e)]
            memory, limit = self._lru.total_weight, self._lru.n
            recoverable = len(self._orphans)
        with self._io_lock:
            io = {d: list(c) for d, c in self._io.items()}
        spill = {}
        for d, (n, nbytes, secs) in io.items():
            spill[d] = {"count": n, "bytes": nbytes, "seconds": secs,
                        "bytes_per_second": nbytes / secs if secs > 0 else None}
        spill["mapped_reads"] = self._mapped_reads
        return {"keys": len(self._entries), "memory": memory, "memory_limit": limit, "tiers": tiers,
                "write_behind": {"keys": len(backlog), "bytes": sum(backlog)},
                "recoverable_keys": recoverable, "spill": spill, "recycle": self._recycler.stats(),
                "closed": self._closed}

    def _hold(self, key, value) -> None:
        """Hold ``value`` in memory, moving least recently used values to disk while over the
        limit. A move that fails (a full disk: :class:`_SpillFailed`) leaves that value in
        memory, over the limit, instead of failing the caller (a task storing its result)."""
        self._lru.set_noevict(key, value)
        try:
            self._lru.evict_until_below_target()
        except _SpillFailed:
            pass

    def _write_failed(self, key, tier: str, exc: OSError) -> None:
        """Log (and report on the worker's ``mars-store`` event topic) a write that failed;
        at most once a minute per tier and error, e.g. while a file system is full."""
        now = time.monotonic()
        what = (tier, exc.errno)
        if now - self._warned.get(what, -1e9) < 60:
            return
        self._warned[what] = now
        logger.warning("cannot write %r to the %s tier (%s); the value stays in memory", key, tier, exc)
        w = self._bound_worker()
        if w is not None:
            try:
                w.log_event("mars-store", {"action": "write-failed", "tier": tier, "key": str(key),
                                           "error": str(exc), "errno": exc.errno})
            except Exception:  # noqa: BLE001,S110 - the warning above is the report  # pragma: no cover - a closing worker
                pass

    def _demote(self, key, value) -> None:
        """zict.LRU on_evict: make sure the value is on disk before it leaves memory. A write
        that fails raises :class:`_SpillFailed`: zict then keeps the value in memory."""
        entry = self._entries.get(key)
        if entry is None or entry.tier == "disk":
            return  # a cached read-back: the file is already there
        try:
            self._demote_write(key, value, entry)
        except OSError as e:
            self._write_failed(key, "disk", e)
            raise _SpillFailed(key) from e

    def _demote_write(self, key, value, entry: _Entry) -> None:
        path = self._path("disk", key)
        compress = self.compression == "lz4"
        if entry.tier in ("heap", "pending"):
            enc = encode(value)
            header = dict(entry.header or {}, key=key, kind=enc.kind, meta=enc.meta,
                          nbytes=enc.nbytes, compression="lz4" if compress else None,
                          size=None if compress else enc.size)
            _, size = self._write(path, header, enc.write, "disk", compress)
        else:
            header = dict(entry.header, compression="lz4" if compress else None,
                          size=None if compress else entry.size)
            mm = _files.map_file(entry.path)
            src = memoryview(mm)[entry.offset:entry.offset + entry.size]
            try:
                _, size = self._write(path, header, lambda sink: sink.write(src), "disk", compress)
            finally:
                src.release()
                del src
                mm.close()
            old = entry.path
            os.unlink(old)
        new = self._entry_from(key, "disk", path, header, size)
        entry.tier, entry.path, entry.header, entry.own, entry.verified = "disk", path, header, False, False
        entry.mm = None  # (the old mapping lives on with the values that use it)
        entry.offset, entry.size = new.offset, new.size

    def _adopt(self, entry: _Entry, value) -> None:
        self._orphans.pop(entry.key, None)
        self._entries[entry.key] = entry
        if entry.tier == "shm" or entry.nbytes <= self._lru.n:
            self._hold(entry.key, value)

    def _unlink(self, entry: _Entry, recycle: bool = False) -> None:
        """Remove ``entry``'s file; with ``recycle`` (a value deleted) give a shared-memory
        file to the recycler instead if no value of this process can still see its pages
        (its one mapping closes: ``_recycle.py``)."""
        if not entry.path:
            return
        mm, entry.mm = entry.mm, None
        if recycle and entry.tier == "shm" and self._recycler.limit and not self._closed:
            try:
                if mm is not None:
                    mm.close()  # BufferError: an array, view or transfer still uses the pages
                if self._recycler.give(entry.path, entry.offset + entry.size):
                    return
            except BufferError:
                pass
        _files.unlink_quietly(entry.path)

    def _scan(self) -> None:
        """Find a previous process's files: remove torn writes and unreadable files; a key
        found in both tiers (killed while moving it to disk) keeps its disk file."""
        for tier, d in zip(("shm", "disk"), self._dirs):
            for fn in os.listdir(d):
                path = os.path.join(d, fn)
                if _files.is_tmp_name(fn) or not fn.endswith(_files.SUFFIX):
                    logger.info("removing incomplete store file %s", path)
                    _files.unlink_quietly(path)
                    continue
                try:
                    entry = _entry_of(tier, path)
                except FileNotFoundError:  # taken over by a sibling meanwhile (take_over)
                    continue
                except (StoreCorruptError, ValueError, KeyError, TypeError, OSError) as e:
                    logger.warning("removing unreadable store file %s: %s", path, e)
                    _files.unlink_quietly(path)
                    continue
                prev = self._orphans.get(entry.key)
                if prev is not None:  # shm is scanned first: keep the disk copy
                    _files.unlink_quietly(prev.path)
                self._orphans[entry.key] = entry
                self._maybe_disk = self._maybe_disk or tier == "disk"
        if self._orphans and self.write_behind_pause > 0:
            # A previous process of this worker died holding values: this one was restarted
            # after a loss, so write-behind pauses as the scheduler asks of every worker
            # after one (write_now_for), from the first result on. The scheduler's word
            # comes only after registration and a round trip (mars_hello), and results this
            # process held back meanwhile were lost when it was killed again within the
            # delay: each such result was recomputed through its whole released lineage.
            self.write_now_for(self.write_behind_pause)
