"""Directories left by dead clusters: who owns a directory, and sweeping those nobody owns.

A worker's store (``<shm root>/<cluster>/<worker>/`` and ``<spill root>/<cluster>/<worker>/``,
see ``spill/_store.py``) outlives its process on purpose: the nanny restarts a killed process,
which adopts the files. After a crash of the whole cluster (every process SIGKILLed, a Jupyter
kernel that exits, a lost machine) nothing would ever adopt them. Which directories are still
wanted is told by locks, as systemd-tmpfiles and Ray's session directories do:

Liveness: ``flock(2)`` on the directory itself.
    Every live process that owns a directory holds a *shared* ``flock`` on it
    (:func:`hold_dir` -> :class:`DirLock`): the worker process whose store it is, **and its
    nanny** (``plugins/_nanny.py``: the nanny outlives worker-process restarts, so the
    directory stays locked while a restart is in progress, and while the nanny waits up to
    ``mars-dask.worker.scheduler-reconnect-timeout`` for a restarted scheduler). A scheduler
    holds its failover journal and checkpoint directories the same way. The kernel drops a
    process's locks when it dies, however it dies: a directory whose lock nobody holds
    belongs to nobody. The lock is taken on the directory's own inode (opened ``O_RDONLY |
    O_DIRECTORY | O_NOFOLLOW``), the lock systemd-tmpfiles honours, rather than on a ``.lock``
    file inside it: the store directory holds nothing but store files (a restarted process
    removes anything else it finds there as a torn write), and a rename moves the lock with
    the directory. A directory that was locked at least once carries the sticky bit
    (:data:`MARK`, mode ``01700``; harmless on a private directory); a directory without it
    was made by an older version that did not lock, and is stale only once its newest file is
    older than a grace period (``mars-dask.worker.scheduler-reconnect-timeout``).

Removal (:func:`remove_if_unused`), race-free against an owner that is starting.
    The sweeper takes ``LOCK_EX | LOCK_NB`` (failing at once if any owner holds its shared
    lock), checks that the path still names the inode it locked, renames the directory to a
    tombstone (``.<name>.removing-<pid>-<random>`` beside it), drops the lock and deletes the
    tombstone (``shutil.rmtree``: no symlink is followed). An owner takes its lock the other
    way round: create (``_safe_files.private_dir``), open, ``LOCK_SH | LOCK_NB``, then check
    that the path still names the inode it locked; if a sweeper renamed it meanwhile it
    starts again with a new directory. The exclusive lock is held for the rename only, so an
    owner never waits more than a few milliseconds. A tombstone is garbage by construction:
    one renamed more than :data:`TOMBSTONE_AGE` ago (an interrupted removal) is deleted.

Sweeps (:func:`sweep`), cheap: a ``listdir`` of each root and of its cluster directories,
one ``open`` + ``flock`` per worker directory; files are walked only to size what is removed
and to age an unlocked directory without :data:`MARK`. They run in a daemon thread
(:func:`sweep_in_background`), never on an event loop:

- when a store is first opened (a new worker process, ``MarsStore.dirs``): its own roots,
  skipping its own directories (a restarted process adopts them) and its own cluster's
  directories (a sibling may be between two processes under a nanny without the mars_dask
  nanny plugin, whose hold is what protects a restart);
- when a nanny with the nanny plugin starts: its worker's roots, skipping its own worker's
  directories (which it holds);
- when a scheduler's failover plugin starts (:func:`hold_failover_dirs`): the journal and
  checkpoint roots. Those directories must survive a
  scheduler crash for failover (a scheduler restarted on the same address reads them
  back), so ``journal/<tag>`` and ``checkpoints/<tag>`` are in use while any lock under the
  same cluster is held (the scheduler's own, or a store directory's: its nannies waiting
  for it) or while their newest file is younger than :func:`failover_hold`
  (``max(failover.rejoin-hold, session.reconnect-timeout,
  worker.scheduler-reconnect-timeout)``).

Only the user's own private roots are scanned (checked with ``_safe_files.private_dir``;
a root that does not exist is not created); an entry that is not a directory owned by this
user is never touched. ``mars-dask.store.sweep-leftovers: false`` turns the automatic
sweeps off; ``python -m mars_dask.cleanup`` (``mars_dask/cleanup.py``) lists what is there
and removes what nobody owns.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import re
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass

import dask.config
from dask.utils import format_bytes, parse_timedelta

from ._safe_files import private_dir
from .errors import UnsafeDirectoryError

logger = logging.getLogger("mars_dask.leftovers")

#: mode bit of a directory that its owners lock (see the module docstring)
MARK = stat.S_ISVTX
#: part of the name a directory gets while it is being removed
TOMBSTONE = ".removing-"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_SCHEMES = ("tcp", "tls", "ucx", "inproc", "ws", "wss")


class _NoLocks(OSError):
    """The file system does not lock directories (e.g. some network file systems)."""


def _flock(fd: int, how: int) -> bool:
    """``flock(fd, how | LOCK_NB)``: True if taken, False if someone holds a conflicting
    lock; raises :class:`_NoLocks` where the file system cannot lock."""
    try:
        fcntl.flock(fd, how | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    except OSError as e:
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return False
        raise _NoLocks(e.errno, f"cannot lock: {e.strerror}") from e


def _same(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


# -- owners ---------------------------------------------------------------------------------
class DirLock:
    """A shared lock on a directory (see :func:`hold_dir`). ``release()`` (or garbage
    collection, or the death of the process) lets it go."""

    __slots__ = ("path", "_fd", "__weakref__")

    def __init__(self, path: str, fd: int | None):
        self.path = path
        self._fd = fd

    @property
    def held(self) -> bool:
        return self._fd is not None

    def valid(self) -> bool:
        """Whether the lock is held and ``path`` still names the directory it locks (it
        does not after the directory was removed, e.g. by a worker's clean close)."""
        if self._fd is None:
            return False
        try:
            return _same(os.fstat(self._fd), os.lstat(self.path))
        except OSError:
            return False

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.close(fd)  # drops the flock (this process opened the description)
            except OSError:  # pragma: no cover
                pass

    def __enter__(self) -> DirLock:
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def __del__(self):
        self.release()

    def __repr__(self) -> str:
        return f"<DirLock {self.path!r} {'held' if self._fd is not None else 'released'}>"


def hold_dir(path: str, *, timeout: float = 10.0) -> DirLock:
    """Create ``path`` if needed (private: ``_safe_files.private_dir``, which raises
    ``UnsafeDirectoryError`` for a directory that is not safely ours) and hold a shared
    lock on it. Races with a sweeper removing it are retried (a new directory is made);
    where the file system cannot lock directories, the returned lock is not ``held`` (the
    directory is then never swept either: a sweeper cannot lock it). Safe to call again
    on a directory this process already holds (each call holds it once more)."""
    path = os.path.abspath(path)
    deadline = time.monotonic() + timeout
    while True:
        fd = None
        try:
            private_dir(path)
            fd = os.open(path, _DIR_FLAGS)
            if _flock(fd, fcntl.LOCK_SH):
                st = os.fstat(fd)
                if _same(st, os.lstat(path)):
                    if not st.st_mode & MARK:
                        try:
                            os.fchmod(fd, stat.S_IMODE(st.st_mode) | MARK)
                        except OSError as e:  # e.g. a read-only file system: the age rule applies
                            logger.info("%s: cannot mark it as locked by this version (%s)", path, e)
                    lock, fd = DirLock(path, fd), None
                    return lock
        except FileNotFoundError:
            pass  # a sweeper removed it (or its cluster directory) meanwhile: again
        except _NoLocks as e:
            logger.info("%s: %s; it is not protected by a lock (nor swept)", path, e)
            return DirLock(path, None)
        finally:
            if fd is not None:
                os.close(fd)
        if time.monotonic() > deadline:
            raise TimeoutError(f"could not lock the directory {path} within {timeout:.0f} s")
        time.sleep(0.005)


# -- removal --------------------------------------------------------------------------------
def _walk(path: str):
    """``(newest mtime, bytes allocated)`` of the tree at ``path`` (not following links)."""
    newest, size = 0.0, 0
    stack = [path]
    while stack:
        d = stack.pop()
        try:
            st = os.lstat(d)
            newest = max(newest, st.st_mtime)
            with os.scandir(d) as it:
                for e in it:
                    try:
                        s = e.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    newest = max(newest, s.st_mtime)
                    if stat.S_ISDIR(s.st_mode):
                        stack.append(e.path)
                    else:
                        size += s.st_blocks * 512
        except OSError:
            continue
    return newest, size


def remove_if_unused(path: str, *, legacy_grace: float = 0.0, min_age: float = 0.0,
                     dry_run: bool = False, measure: bool = False) -> tuple[bool, str, int | None]:
    """Remove the directory ``path`` if nobody holds its lock; ``(removed, why, bytes)``.

    ``legacy_grace``: a directory never locked (no :data:`MARK`: an older version's) is
    stale only if its newest file is at least this old. ``min_age``: any directory is stale
    only if its newest file is at least this old (the failover directories). ``dry_run``:
    decide (taking and dropping the lock) but remove nothing; ``removed`` then means "would
    be removed". ``measure``: also return the bytes it held (else None). Never touches
    anything that is not a directory owned by this user."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False, "gone", None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        return False, "not a directory of this user", None
    age = max(min_age, 0.0 if st.st_mode & MARK else legacy_grace)
    if age > 0:  # before locking: an unmarked directory's owner does not lock it anyway
        newest, _ = _walk(path)
        if newest > time.time() - age:
            return False, ("recent files" if st.st_mode & MARK else "no lock, recent files"), None
    try:
        fd = os.open(path, _DIR_FLAGS)
    except OSError as e:
        return False, f"cannot open: {e.strerror}", None
    tomb = None
    try:
        try:
            if not _flock(fd, fcntl.LOCK_EX):
                return False, "locked", None
        except _NoLocks as e:
            return False, str(e), None
        if not _same(os.fstat(fd), st) or not _same(st, os.lstat(path)):
            return False, "replaced meanwhile", None
        if dry_run:
            return True, "nobody holds it", _walk(path)[1] if measure else None
        tomb = os.path.join(os.path.dirname(path),
                            f".{os.path.basename(path)}{TOMBSTONE}{os.getpid()}-{os.urandom(3).hex()}")
        os.rename(path, tomb)
    except OSError as e:
        return False, f"cannot remove: {e.strerror}", None
    finally:
        os.close(fd)
    size = _walk(tomb)[1] if measure else None  # nobody can reach it any more
    shutil.rmtree(tomb, ignore_errors=True)
    return True, "nobody holds it", size


def is_locked(path: str) -> bool:
    """Whether some process holds a lock on the directory ``path`` (this process's own
    :class:`DirLock` s count: a lock is per open file description)."""
    try:
        fd = os.open(path, _DIR_FLAGS)
    except OSError:
        return False
    try:
        return not _flock(fd, fcntl.LOCK_EX)
    except _NoLocks:
        return True  # cannot tell: in use
    finally:
        os.close(fd)


# -- roots ----------------------------------------------------------------------------------
def _seconds(key: str, default: float, config=None) -> float:
    v = dask.config.get(key, None, config=config) if config is not None else dask.config.get(key, None)
    if v is None or v is False:
        return default
    return float(parse_timedelta(v) or 0)


def legacy_grace() -> float:
    """How old the newest file of a never-locked store directory must be for it to count
    as stale: ``mars-dask.worker.scheduler-reconnect-timeout`` (120 s)."""
    return _seconds("mars-dask.worker.scheduler-reconnect-timeout", 120.0)


def failover_hold() -> float:
    """How long a dead cluster's journal and checkpoints stay after their last write: as
    long as anything could still come back for them."""
    return max(_seconds("mars-dask.failover.rejoin-hold", 120.0),
               _seconds("mars-dask.session.reconnect-timeout", 120.0),
               _seconds("mars-dask.worker.scheduler-reconnect-timeout", 120.0))


def sweep_enabled() -> bool:
    return bool(dask.config.get("mars-dask.store.sweep-leftovers"))


def store_roots(directory=None, spill_directory=None, *, scratch=None, config=None) -> tuple[str, str]:
    """``(shm root, spill root)`` as ``MarsStore`` resolves them (explicit arguments, then
    ``mars-dask.store.*``, then the defaults). ``scratch``: the directory of the worker's
    local directory (``<local dir>/dask-scratch-space``: the nanny's local directory)."""
    from .spill._store import default_directory

    def cfg(k):
        key = f"mars-dask.store.{k}"
        return dask.config.get(key, None, config=config) if config is not None else dask.config.get(key, None)

    shm = directory or cfg("directory") or default_directory()
    spill = spill_directory or cfg("spill-directory")
    if not spill:
        spill = (os.path.join(scratch, "mars-spill") if scratch
                 else os.path.join(tempfile.gettempdir(), "mars-dask-spill"))
    return os.path.abspath(shm), os.path.abspath(spill)


def default_store_roots() -> list[str]:
    """The store roots of this user's workers as configured here: the shared-memory root
    and the spill root(s) (when not configured, both defaults: beside Dask's default
    worker scratch directory, and in the temp dir)."""
    shm, spill = store_roots()
    roots = [shm]
    if dask.config.get("mars-dask.store.spill-directory"):
        roots.append(spill)
    else:
        local = dask.config.get("temporary-directory") or tempfile.gettempdir()
        roots += [os.path.join(local, "dask-scratch-space", "mars-spill"),
                  os.path.join(tempfile.gettempdir(), "mars-dask-spill")]
    return list(dict.fromkeys(os.path.abspath(r) for r in roots))


def failover_roots() -> tuple[str, str]:
    """``(journal root, checkpoint root)`` as the failover plugin resolves them; the
    directories are ``<root>/<address tag>``."""
    from .plugins._failover import default_root

    j = dask.config.get("mars-dask.failover.journal-directory")
    c = dask.config.get("mars-dask.failover.checkpoint-directory")
    return (os.path.abspath(j or os.path.join(default_root(), "journal")),
            os.path.abspath(c or os.path.join(default_root("checkpoints"), "checkpoints")))


def cluster_id(tag: str) -> str:
    """One name for a cluster across the two ways its scheduler address is made a file
    name (the store's ``tcp_127.0.0.1_8786``, the failover plugin's ``127.0.0.1-8786``).
    Two clusters that collide here are both treated as alive: never a wrong removal."""
    t = str(tag)
    for s in _SCHEMES:
        if t.startswith(s + "_"):
            t = t[len(s) + 1:]
            break
    return re.sub(r"[^A-Za-z0-9.]", "", t).lower()


def _checked_root(root: str) -> str | None:
    """``root`` if it exists and is a private directory of this user (never created
    here); None otherwise (logged when it is unsafe)."""
    try:
        st = os.lstat(root)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode):
        return None
    try:
        return private_dir(root)
    except (UnsafeDirectoryError, OSError) as e:
        logger.warning("not sweeping %s: %s", root, e)
        return None


def _own_dirs(root: str) -> list[str]:
    """Subdirectories of ``root`` owned by this user (no symlinks), sorted."""
    uid = os.geteuid()
    out = []
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return out
    for n in names:
        p = os.path.join(root, n)
        try:
            st = os.lstat(p)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and st.st_uid == uid:
            out.append(p)
    return out


def _finish_removal(out: list, path: str, kind: str, tag: str, sizes: bool, dry_run: bool) -> None:
    """A directory renamed for removal whose removal was interrupted (left by a sweeper that
    died): remove it now and record it, unless another sweeper is still at it."""
    if not _tombstone_left(path):
        return
    size = _walk(path)[1] if sizes else None
    if not dry_run:
        shutil.rmtree(path, ignore_errors=True)
    out.append(Leftover(path, kind, tag, False, "interrupted removal", size, True))


def _is_tombstone(path: str) -> bool:
    n = os.path.basename(path)
    return n.startswith(".") and TOMBSTONE in n


#: a tombstone renamed this long ago is an interrupted removal, not one in progress
TOMBSTONE_AGE = 10.0


def _tombstone_left(path: str) -> bool:
    try:
        return os.lstat(path).st_ctime < time.time() - TOMBSTONE_AGE  # rename sets ctime
    except OSError:
        return False


# -- sweeps ---------------------------------------------------------------------------------
@dataclass
class Leftover:
    """A directory found by a sweep."""

    path: str
    kind: str              # "store" | "journal" | "checkpoints"
    cluster: str           # its cluster directory's name (the address tag)
    in_use: bool
    why: str
    size: int | None = None
    removed: bool = False  # (dry run: would be removed)


def _decide(path, kind, cluster, *, sizes, dry_run, legacy, min_age=0.0) -> Leftover:
    removed, why, size = remove_if_unused(path, legacy_grace=legacy, min_age=min_age, dry_run=dry_run,
                                          measure=bool(sizes))
    if not removed and sizes == "all":
        size = _walk(path)[1]
    return Leftover(path, kind, cluster, in_use=not removed, why=why, size=size, removed=removed)


def _size(path, sizes):
    return _walk(path)[1] if sizes == "all" else None


def sweep_store_roots(roots: Iterable[str], *, own: Iterable[str] = (), skip_clusters: Iterable[str] = (),
                      dry_run: bool = False, sizes: str | None = None,
                      grace: float | None = None) -> list[Leftover]:
    """Remove the ``<root>/<cluster>/<worker>`` directories nobody holds (and the cluster
    directories that are then empty); returns every directory seen. ``own``: directories
    never removed (this worker's); ``skip_clusters``: cluster directory names whose worker
    directories are left alone (listed as in use). ``sizes``: None, "removed" (measure
    what is removed) or "all". ``grace``: see :func:`legacy_grace`."""
    own = {os.path.abspath(p) for p in own}
    skip = {str(c) for c in skip_clusters}
    legacy = legacy_grace() if grace is None else grace
    out: list[Leftover] = []
    for root in dict.fromkeys(os.path.abspath(r) for r in roots):
        if _checked_root(root) is None:
            continue
        for cdir in _own_dirs(root):
            cluster = os.path.basename(cdir)
            for wdir in _own_dirs(cdir):
                if _is_tombstone(wdir):
                    _finish_removal(out, wdir, "store", cluster, sizes, dry_run)
                elif wdir in own:
                    out.append(Leftover(wdir, "store", cluster, True, "this worker's", _size(wdir, sizes)))
                elif cluster in skip:
                    out.append(Leftover(wdir, "store", cluster, True, "this worker's cluster",
                                        _size(wdir, sizes)))
                else:
                    out.append(_decide(wdir, "store", cluster, sizes=sizes, dry_run=dry_run, legacy=legacy))
            if not dry_run:
                try:
                    os.rmdir(cdir)  # only if now empty
                except OSError:
                    pass
    return out


def live_clusters(roots: Iterable[str] = (), journal_root: str | None = None,
                  checkpoint_root: str | None = None) -> set[str]:
    """:func:`cluster_id` s of the clusters with a held lock: on a store directory under
    ``roots``, or on a journal or checkpoint directory."""
    live = set()
    for root in dict.fromkeys(os.path.abspath(r) for r in roots):
        if _checked_root(root) is None:
            continue
        for cdir in _own_dirs(root):
            if any(is_locked(w) for w in _own_dirs(cdir) if not _is_tombstone(w)):
                live.add(cluster_id(os.path.basename(cdir)))
    for root in (journal_root, checkpoint_root):
        if root and _checked_root(root) is not None:
            for d in _own_dirs(root):
                if not _is_tombstone(d) and is_locked(d):
                    live.add(cluster_id(os.path.basename(d)))
    return live


def sweep_failover_roots(journal_root: str, checkpoint_root: str, *, own_tags: Iterable[str] = (),
                         roots: Iterable[str] | None = None, dry_run: bool = False,
                         sizes: str | None = None, hold: float | None = None) -> list[Leftover]:
    """Remove the ``journal/<tag>`` and ``checkpoints/<tag>`` directories of clusters
    nothing can come back for (see the module docstring); returns every one seen.
    ``roots``: the store roots whose locks tell a cluster is alive (default:
    :func:`default_store_roots`); ``hold``: default :func:`failover_hold`."""
    hold = failover_hold() if hold is None else hold
    journal_root, checkpoint_root = os.path.abspath(journal_root), os.path.abspath(checkpoint_root)
    live = live_clusters(default_store_roots() if roots is None else roots, journal_root, checkpoint_root)
    own = {cluster_id(t) for t in own_tags}
    out: list[Leftover] = []
    for kind, root in dict.fromkeys([("journal", journal_root), ("checkpoints", checkpoint_root)]):
        if _checked_root(root) is None:
            continue
        for d in _own_dirs(root):
            tag = os.path.basename(d)
            if _is_tombstone(d):
                _finish_removal(out, d, kind, tag, sizes, dry_run)
            elif cluster_id(tag) in own:
                out.append(Leftover(d, kind, tag, True, "this scheduler's", _size(d, sizes)))
            elif cluster_id(tag) in live:
                out.append(Leftover(d, kind, tag, True, "its cluster holds a lock", _size(d, sizes)))
            else:
                out.append(_decide(d, kind, tag, sizes=sizes, dry_run=dry_run, legacy=hold, min_age=hold))
    return out


def sweep(*, roots: Iterable[str] = (), own: Iterable[str] = (), skip_clusters: Iterable[str] = (),
          failover: bool | tuple[str, str] = False, own_tags: Iterable[str] = (), dry_run: bool = False,
          sizes: str | None = None) -> list[Leftover]:
    """One sweep: the store ``roots`` (:func:`sweep_store_roots`), and with ``failover``
    the journal and checkpoint roots (:func:`sweep_failover_roots`; ``True``: as
    configured, or a ``(journal root, checkpoint root)`` pair; a cluster is alive if it
    holds a lock under ``roots`` or :func:`default_store_roots`)."""
    roots = list(roots)
    out = sweep_store_roots(roots, own=own, skip_clusters=skip_clusters, dry_run=dry_run, sizes=sizes)
    if failover:
        j, c = failover_roots() if failover is True else failover
        out += sweep_failover_roots(j, c, own_tags=own_tags, dry_run=dry_run, sizes=sizes,
                                    roots=roots + default_store_roots())
    return out


def _log_swept(found: list[Leftover], who: str, t0: float) -> None:
    gone = [f for f in found if f.removed]
    if gone:
        total = sum(f.size or 0 for f in gone)
        logger.info("%s removed %d leftover director%s of dead clusters (%s) in %.2f s: %s", who, len(gone),
                    "y" if len(gone) == 1 else "ies", format_bytes(total), time.monotonic() - t0,
                    ", ".join(f.path for f in gone[:20]) + (" ..." if len(gone) > 20 else ""))


def sweep_in_background(*, who: str = "mars_dask", **kw) -> threading.Thread | None:
    """:func:`sweep` (same keyword arguments; sizes are measured for the log) in a daemon
    thread; None when ``mars-dask.store.sweep-leftovers`` is off. Errors are logged."""
    if not sweep_enabled():
        return None
    kw.setdefault("sizes", "removed")

    def run():
        t0 = time.monotonic()
        try:
            _log_swept(sweep(**kw), who, t0)
        except Exception:  # pragma: no cover - never take a worker down for a sweep
            logger.exception("sweeping leftover directories failed")

    t = threading.Thread(target=run, name="mars-dask-sweep", daemon=True)
    t.start()
    return t


# -- the scheduler's failover directories ---------------------------------------------------
def hold_failover_dirs(journal_dir: str, checkpoint_dir: str, tag: str) -> list[DirLock]:
    """What the failover plugin calls when it starts, once it knows its directories
    (``<journal root>/<tag>``, ``<checkpoint root>/<tag>``): hold both (so neither a
    sweep nor ``python -m mars_dask.cleanup`` removes them while this scheduler lives;
    after a crash, a scheduler restarted on the same address holds them again) and sweep
    their roots for the directories of other clusters nothing can come back for (a
    background thread; ``tag``'s own are never swept). ``release()`` the locks at close."""
    locks = [hold_dir(journal_dir)]
    if os.path.abspath(checkpoint_dir) != os.path.abspath(journal_dir):
        locks.append(hold_dir(checkpoint_dir))
    sweep_in_background(failover=(os.path.dirname(os.path.abspath(journal_dir)),
                                  os.path.dirname(os.path.abspath(checkpoint_dir))),
                        own_tags=(tag,), who=f"scheduler {tag}")
    return locks


# -- the nanny's view of its worker's store -------------------------------------------------
def nanny_store_dirs(nanny) -> tuple[tuple[str, str], tuple[str, str]] | None:
    """``((shm root, spill root), (shm dir, spill dir))`` of the store the worker processes
    of ``nanny`` open, resolved from what the nanny hands them exactly as ``MarsStore``
    resolves it (``data=MarsStore`` or ``(MarsStore, kwargs)``; worker name: the nanny's
    name, else its address; cluster: the scheduler address; the spill root's default is
    beside the worker's local directory, i.e. in the nanny's); None if they use no
    MarsStore."""
    from distributed.core import coerce_to_address

    from .spill._store import MarsStore, store_dirs

    data = (getattr(nanny, "worker_kwargs", None) or {}).get("data")
    kwargs = {}
    if isinstance(data, tuple) and len(data) == 2 and isinstance(data[1], dict):
        data, kwargs = data
    if not (isinstance(data, type) and issubclass(data, MarsStore)):
        return None
    roots = store_roots(kwargs.get("directory"), kwargs.get("spill_directory"),
                        scratch=getattr(nanny, "local_directory", None),
                        config=getattr(nanny, "config", None))
    name = kwargs.get("name")
    if name is None:
        name = nanny.name if nanny.name is not None else nanny.address
    cluster = kwargs.get("cluster") or coerce_to_address(nanny.scheduler_addr)
    return roots, store_dirs(roots[0], roots[1], cluster, name)
