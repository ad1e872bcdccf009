"""A process's resident set size, cheap enough to sample every few milliseconds.

The worker's task sampler reads its own RSS every ``mars-dask.worker.sample-interval``
while tasks run, and the nanny reads its worker's every
``mars-dask.worker.monitor-interval``. ``psutil.Process.memory_info()`` opens, reads and
parses ``/proc/<pid>/statm`` through several layers of Python (about 40 us a call on the
2-core VM of the benchmarks); a ``pread`` of that same file on a descriptor kept open
costs about 6 us, and the figure is the same (psutil's ``rss`` is statm's second field
times the page size). Where there is no ``/proc`` the reader falls back to psutil.
"""

from __future__ import annotations

import os

import psutil

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class RSSReader:
    """``reader()``: the current RSS in bytes of process ``pid`` (default: this process),
    or None once it cannot be read (the process is gone). Raises ``psutil.NoSuchProcess``
    if there is no such process to begin with. ``close()`` releases the descriptor."""

    def __init__(self, pid: int | None = None):
        self.pid = os.getpid() if pid is None else pid
        self._fd: int | None = None
        self._ps: psutil.Process | None = None
        try:
            self._fd = os.open(f"/proc/{self.pid}/statm", os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            if os.path.isdir("/proc/self"):  # Linux: the process does not exist
                raise psutil.NoSuchProcess(self.pid) from None
            self._ps = psutil.Process(self.pid)
        except OSError:
            self._ps = psutil.Process(self.pid)

    def __call__(self) -> int | None:
        if self._fd is not None:
            try:
                return int(os.pread(self._fd, 256, 0).split()[1]) * _PAGE
            except (OSError, ValueError, IndexError):
                return None
        if self._ps is None:
            return None
        try:
            return self._ps.memory_info().rss
        except psutil.Error:
            return None

    def close(self) -> None:
        fd, self._fd, self._ps = self._fd, None, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError:  # pragma: no cover
                pass

    def __del__(self):
        self.close()
