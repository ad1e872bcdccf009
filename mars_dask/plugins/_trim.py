"""Give the scheduler's freed memory back to the operating system after a large job.

When a 100,000-chunk job's handles are dropped, the scheduler forgets 200,000 task states;
Python frees them, but glibc keeps the freed heap for reuse: the scheduler's RSS stayed at
790 MiB with no task left (baseline ~110 MiB). Dask recommends ``malloc_trim`` for workers
("Memory not released back to the OS" in distributed's worker-memory docs; nannies also set
``MALLOC_TRIM_THRESHOLD_`` for their workers); nothing does it for the scheduler. Here it
runs once a burst of forgetting is over (no key forgotten for ``delay``, or at the latest
``max_wait`` after it could have run: a long loop forgets a few keys every iteration) and
at least ``mars-dask.scheduler.trim-after-forgotten`` keys were forgotten since the last
trim: in that run it returned 284 MiB (790 -> 506 MiB). A no-op where libc has no ``malloc_trim``.

First the scheduler plugin's ``prune`` runs (:func:`forget_finished_graphs`): Dask keeps
a span (with its TaskGroups) for every graph submitted, for ever, ``key_split`` caches
every key name, and the scheduler's logs of recent messages hold the recipes sent last;
the spans of finished graphs beyond the newest ``mars-dask.scheduler.finished-spans-kept``
are forgotten, the cache is cleared and the logs are stripped to ops and keys.

What stays after that is CPython's allocator, not live objects: measured on a 20,000-chunk
job, pymalloc's allocated blocks went back to baseline plus the modules the job imported,
while its arenas (1 MiB each, returned only when every object in them is gone) stayed
at or below the high-water mark of the largest job; repeating the job raised that mark
by a few arenas at most (206 -> 219 -> 219, 220 -> 223 MiB over repeated 20,000-chunk jobs).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import time

from dask.utils import key_split

from .. import _dask_internals as DI

logger = logging.getLogger("mars_dask.plugins")

_libc = None


def malloc_trim() -> bool:
    """glibc's ``malloc_trim(0)``; False where it does not exist (musl, macOS, Windows)."""
    global _libc
    if _libc is None:
        try:
            _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _libc.malloc_trim.argtypes = [ctypes.c_size_t]
        except (OSError, AttributeError):
            _libc = False
    if not _libc:
        return False
    _libc.malloc_trim(0)
    return True


def forget_finished_graphs(scheduler, keep: int) -> int:
    """What a finished graph leaves in the scheduler besides its tasks: Dask's spans of it
    (see ``_dask_internals.prune_spans``), ``dask.utils.key_split``'s cache entries for
    its keys (an lru_cache of 100,000 entries, ~0.7 KiB each: one per ``execute()`` in a
    loop, so a long loop filled it by 70 MiB) and its recipes (with any data embedded in
    them) in the logs of recent messages to the workers (see
    ``_dask_internals.strip_message_logs``). Returns how many spans went."""
    clear = getattr(key_split, "cache_clear", None)  # public dask.utils; functools' lru_cache
    if clear is not None:
        clear()
    if DI.enabled("message-log-stripping"):
        DI.strip_message_logs(scheduler)
    return DI.prune_spans(scheduler, keep, 10.0) if DI.enabled("span-pruning") else 0


def _rss() -> int:
    import psutil

    return psutil.Process(os.getpid()).memory_info().rss


class TrimAfterForgetting:
    """Counts forgotten keys (``forgotten()``, from the scheduler plugin's transition hook)
    and trims once ``threshold`` of them were forgotten and none for ``delay`` seconds.
    ``threshold`` 0 disables it."""

    def __init__(self, loop, threshold: int, delay: float = 1.0, max_wait: float = 10.0, prune=None):
        self.loop = loop
        self.prune = prune  # called first: drops what else the forgotten keys leave behind
        self.threshold = threshold
        self.delay = delay
        self.max_wait = max_wait
        self._since = 0.0
        self.count = 0  # forgotten since the last trim
        self._last = 0  # count when the pending check was scheduled
        self._pending = False
        self.trims = 0
        self.freed = 0  # bytes of RSS the trims gave back
        self.pruned = 0  # what ``prune`` reported (Dask spans of finished graphs)

    def forgotten(self) -> None:
        self.count += 1
        if self.threshold and self.count >= self.threshold and not self._pending:
            self._pending = True
            self._last = self.count
            self._since = time.monotonic()
            self.loop.call_later(self.delay, self._check)

    def _check(self) -> None:
        if self.count != self._last and time.monotonic() - self._since < self.max_wait:
            # still forgetting: wait for the burst to end
            self._last = self.count
            self.loop.call_later(self.delay, self._check)
            return
        self._pending = False
        n, self.count = self.count, 0
        if self.prune is not None:
            self.pruned += self.prune()
        before = _rss()
        if malloc_trim():
            after = _rss()
            self.trims += 1
            self.freed += max(0, before - after)
            logger.debug("malloc_trim after %d forgotten keys: RSS %.0f -> %.0f MiB",
                         n, before / 2**20, after / 2**20)
