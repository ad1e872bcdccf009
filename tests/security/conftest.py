"""A second, unprivileged local user for the security tests.

Created with ``useradd`` when the tests run as root (removed again at the end of the
session), else every test that needs it is skipped with the reason. The other user runs
Debian's system ``/usr/bin/python3`` (stdlib only: the test interpreter may live under
``/root``, which that user cannot enter), in a subprocess with its own uid and gid."""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
import uuid

import pytest

from tests.worker.conftest import cli_cluster  # noqa: F401 - the CLI cluster factory, shared

_PYTHONS = ("/usr/bin/python3", "/usr/local/bin/python3")


class OtherUser:
    def __init__(self, name: str, uid: int, gid: int, python: str):
        self.name, self.uid, self.gid, self.python = name, uid, gid, python

    def run(self, code: str, timeout: float = 60) -> subprocess.CompletedProcess:
        """Run Python ``code`` as this user; returns the completed process (text output)."""
        return subprocess.run([self.python, "-c", textwrap.dedent(code)], user=self.uid, group=self.gid,
                              extra_groups=[], capture_output=True, text=True, timeout=timeout,
                              cwd="/", env={"PATH": "/usr/bin:/bin", "HOME": "/"})

    def can_read(self, path: str) -> bool:
        """Whether this user can open ``path`` for reading (file) or list it (directory)."""
        r = self.run(f"""
            import os, sys
            p = {str(path)!r}
            try:
                os.listdir(p) if os.path.isdir(p) else open(p, "rb").read(1)
            except OSError:
                sys.exit(3)
            """)
        return r.returncode == 0


@pytest.fixture(scope="session")
def other_user():
    if os.geteuid() != 0:
        pytest.skip("needs root to create a second local user (useradd); not running as root")
    python = next((p for p in _PYTHONS if os.access(p, os.X_OK)), None)
    if python is None or shutil.which("useradd") is None:
        pytest.skip("needs useradd and a system python3 the second user can run")
    name = f"mdsec{uuid.uuid4().hex[:8]}"
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                   check=True, capture_output=True)
    try:
        import pwd

        pw = pwd.getpwnam(name)
        yield OtherUser(name, pw.pw_uid, pw.pw_gid, python)
    finally:
        subprocess.run(["userdel", name], capture_output=True)
