"""Files on shared places (``/dev/shm``, the temp dir, a shared file system) made safe.

Every local user can create names in ``/dev/shm`` and ``/tmp``; every user who mounts a
shared file system can write there. The rules (those of OpenSSH's StrictModes, systemd's
runtime directories and Ray's session directories):

- :func:`private_dir`: a directory we use is ours, mode 0700, and reached without following
  a symlink that someone else could have planted. Each component of the path is checked
  (``os.lstat``): a missing one is created with ``os.mkdir(path, 0o700)``; an existing one
  must be owned by us or root and not writable by group or others unless it is sticky
  (``/tmp``, ``/dev/shm``); a symlink is followed only when root owns it (``/dev/shm`` ->
  ``/run/shm`` on some systems). The last component must be ours; if its mode lets others
  in we tighten it to 0700 (we own it). Anything else raises :class:`UnsafeDirectoryError`
  naming the path and what is wrong with it.
- :func:`open_private`: files are created 0600, ``O_NOFOLLOW | O_CLOEXEC``.
- :func:`checksum`: a fast non-cryptographic hash of a payload (xxh3-64 from the maintained
  ``xxhash`` package: ~10 GB/s, far above the disk), verified when the file is read back.
- :class:`Authenticator`: a keyed BLAKE2b MAC with a per-cluster secret, for files whose
  directory another user may be able to write (checkpoints and graph files on a shared file
  system). A file whose MAC does not verify is refused before anything in it is decoded.
"""

from __future__ import annotations

import getpass
import hashlib
import hmac
import os
import stat
import tempfile

from .errors import UnsafeDirectoryError

#: bytes of a MAC (BLAKE2b digest size)
MAC_SIZE = 32


def user_name() -> str:
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - getuser fails differently by platform  # pragma: no cover - no user name
        return str(os.getuid())


def runtime_root() -> str:
    """Where per-user runtime directories go by default: ``$XDG_RUNTIME_DIR`` (private to the
    user by construction) when it exists, else the temp dir."""
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isdir(xdg):
        return xdg
    return tempfile.gettempdir()


def _why_unsafe(st: os.stat_result, uid: int, leaf: bool) -> str | None:
    if not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    if leaf:
        if st.st_uid != uid:
            return f"is owned by uid {st.st_uid}, not by this user (uid {uid})"
        return None
    if st.st_uid not in (uid, 0):
        return f"is owned by uid {st.st_uid}, neither this user (uid {uid}) nor root"
    if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
        return f"is writable by group or others (mode {stat.S_IMODE(st.st_mode):04o}) and not sticky"
    return None


def private_dir(path: str) -> str:
    """Create (or check) ``path`` as a private directory; returns its absolute path.

    See the module docstring for the rules. Safe against races with another user: a
    component created by someone else between our ``lstat`` and ``mkdir`` makes ``mkdir``
    fail with ``FileExistsError``, after which it is checked like any existing one."""
    uid = os.geteuid()
    path = os.path.abspath(path)
    parts = [p for p in path.split(os.sep) if p]
    cur = os.sep
    for i, name in enumerate(parts):
        leaf = i == len(parts) - 1
        cur = os.path.join(cur, name)
        try:
            st = os.lstat(cur)
        except FileNotFoundError:
            try:
                os.mkdir(cur, 0o700)
            except FileExistsError:
                pass
            st = os.lstat(cur)
        if stat.S_ISLNK(st.st_mode):
            if st.st_uid != 0 or leaf:
                raise UnsafeDirectoryError(cur, f"is a symlink owned by uid {st.st_uid}")
            cur = os.path.realpath(cur)
            st = os.stat(cur)
        why = _why_unsafe(st, uid, leaf)
        if why is not None:
            raise UnsafeDirectoryError(cur, why)
        if leaf and stat.S_IMODE(st.st_mode) & 0o077:
            os.chmod(cur, 0o700)
    return path


def open_private(path: str, flags: int = os.O_WRONLY | os.O_CREAT | os.O_EXCL) -> int:
    """``os.open`` a file 0600 without following a symlink at its name."""
    return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)


def write_private(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (temporary name in the same directory, then
    rename), 0600."""
    tmp = f"{path}.tmp-{os.getpid()}-{os.urandom(4).hex()}"
    fd = open_private(tmp)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.rename(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


# -- checksums ------------------------------------------------------------------------------
def new_checksum():
    """An incremental payload checksum (``update(buffer)``, ``intdigest()``)."""
    import xxhash

    return xxhash.xxh3_64()


def checksum(*buffers) -> int:
    h = new_checksum()
    for b in buffers:
        h.update(b)
    return h.intdigest()


# -- authentication -------------------------------------------------------------------------
def new_secret() -> bytes:
    return os.urandom(32)


class Authenticator:
    """A keyed BLAKE2b MAC (``digest_size`` :data:`MAC_SIZE`) with a per-cluster secret.

    The scheduler generates the secret and keeps it in its private journal directory (so a
    restarted scheduler on the same journal reads its own files back); workers get it with
    the checkpoint plugin over the Dask connection (which TLS protects where configured)."""

    def __init__(self, secret: bytes):
        if not isinstance(secret, bytes | bytearray) or len(secret) < 16:
            raise ValueError("an authentication secret needs at least 16 bytes")
        self._secret = bytes(secret)

    def new(self):
        return hashlib.blake2b(key=self._secret, digest_size=MAC_SIZE)

    def mac(self, *buffers) -> bytes:
        h = self.new()
        for b in buffers:
            h.update(b)
        return h.digest()

    def verify(self, mac: bytes, *buffers) -> bool:
        return hmac.compare_digest(self.mac(*buffers), bytes(mac))

    def __reduce__(self):
        return (Authenticator, (self._secret,))

    def __repr__(self) -> str:  # never print the secret
        return "<Authenticator>"


def load_or_create_secret(directory: str, name: str = "secret") -> bytes:
    """The secret kept in the private ``directory`` (created, 0600, on first use)."""
    private_dir(directory)
    path = os.path.join(directory, name)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        write_private(path, new_secret())
        fd = os.open(path, flags)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if st.st_uid != os.geteuid() or stat.S_IMODE(st.st_mode) & 0o077:
            raise UnsafeDirectoryError(path, "is not private to this user (mode 0600)")
        data = f.read()
    if len(data) < 16:
        raise UnsafeDirectoryError(path, "is too short to be a secret")
    return data
