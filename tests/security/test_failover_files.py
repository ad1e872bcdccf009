"""The failover plugin's files (lineage journal, graph files, checkpoints) against a second
local user, on real CLI clusters: nothing is readable by that user, directories that user
prepared are refused with an error naming them, and a planted checkpoint never runs code.

The clusters' directories live under a root-owned directory in /tmp that the other user
can enter (mode 0755, or 1777 where that user must be able to create names, as in /tmp
itself), so only the plugin's own modes keep that user out."""

from __future__ import annotations

import os
import shutil
import stat
import uuid
from pathlib import Path

import dask
import numpy as np
import pytest
from distributed.protocol import serialize_bytelist

import mars_dask
from mars_dask._safe_files import Authenticator, user_name
from mars_dask.errors import DataIntegrityError
from mars_dask.plugins._checkpoint import checkpoint_path
from mars_dask.plugins._failover import default_root
from mars_dask.spill import _files
from tests.failover.test_lineage import FAST_GRACE, _kill_node, _wait_workers
from tests.worker.conftest import CLICluster

N = 100_000


@pytest.fixture
def shared_dir():
    """``shared_dir(mode)``: a fresh root-owned directory in /tmp with that mode."""
    made = []

    def make(mode=0o755) -> Path:
        d = Path("/tmp") / f"mdsec-{uuid.uuid4().hex[:8]}"
        d.mkdir()
        os.chmod(d, mode)
        made.append(d)
        return d

    yield make
    for d in made:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def failover_cluster(tmp_path):
    """``failover_cluster(journal, checkpoints, **kw)``: a CLI cluster whose failover
    directories are the given ones (not started by the fixture: ``.start()``)."""
    made = []

    def make(journal, checkpoints, **kw) -> CLICluster:
        path = tmp_path / f"c{len(made)}"
        path.mkdir()
        c = CLICluster(path, nthreads=1, **kw)
        c.env["DASK_MARS_DASK__FAILOVER__JOURNAL_DIRECTORY"] = str(journal)
        c.env["DASK_MARS_DASK__FAILOVER__CHECKPOINT_DIRECTORY"] = str(checkpoints)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()
        c.cleanup_dirs()


def checkpointed(c: CLICluster, key, value_n=N):
    """A result computed on w0 as a checkpoint boundary, once its checkpoint is written."""
    client = c.client
    before = mars_dask.failover_report(client)["checkpoints_written"]
    with dask.annotate(mars_boundary="checkpoint"):
        f = client.submit(np.arange, value_n, key=key, workers=[c.worker_by_name("w0")[0]],
                          allow_other_workers=True)
    f.result(timeout=30)
    c.wait(lambda: mars_dask.failover_report(client)["checkpoints_written"] > before, 30, "checkpoint")
    return f


def test_default_root_prefers_xdg_runtime_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert default_root() == str(tmp_path / f"mars-dask-{user_name()}")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "missing"))
    import tempfile

    assert default_root() == os.path.join(tempfile.gettempdir(), f"mars-dask-{user_name()}")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))  # checkpoints (large) stay on disk
    assert default_root("checkpoints") == os.path.join(tempfile.gettempdir(), f"mars-dask-{user_name()}")


def test_journal_graphs_and_checkpoints_unreadable_by_another_user(other_user, shared_dir, failover_cluster):
    base = shared_dir(0o755)
    c = failover_cluster(base / "journal", base / "checkpoints", n_workers=1)
    c.start()
    f = checkpointed(c, "sec-data")
    assert c.client.submit(np.sum, f, key="sec-sum").result(timeout=30) == N * (N - 1) // 2
    mars_dask.failover_report(c.client)  # the journal writer is done
    dirs, files = [], []
    for root in (base / "journal", base / "checkpoints"):
        for d, _subdirs, names in os.walk(root):
            dirs.append(Path(d))
            files += [Path(d) / n for n in names]
    names = [p.name for p in files]
    assert "secret" in names and any(n.endswith(".mdj") for n in names)
    assert any(n.endswith(".graph") for n in names) and any(n.endswith(".mdc") for n in names)
    for d in dirs:
        assert stat.S_IMODE(d.stat().st_mode) & 0o777 == 0o700, d  # (+ the sticky lock mark, _leftovers)
    for p in files:
        assert stat.S_IMODE(p.stat().st_mode) == 0o600, p
    assert other_user.can_read(base)  # the test can see a readable path
    readable = [p for p in dirs + files if other_user.can_read(p)]
    assert not readable


@pytest.mark.parametrize("how", ["world-writable", "symlink"])
@pytest.mark.parametrize("which", ["journal", "checkpoints"])
def test_directory_prepared_by_another_user_is_refused(other_user, shared_dir, failover_cluster, which, how):
    """Another user creates the root first (mode 0777, or a symlink to a directory of
    theirs): the scheduler does not start, and its error names the directory."""
    base = shared_dir(0o1777)
    target, trap = base / which, base / "trap"
    if how == "world-writable":
        code = f"import os; os.mkdir({str(target)!r}); os.chmod({str(target)!r}, 0o777)"
        planted = target
    else:
        code = (f"import os; os.mkdir({str(trap)!r}); os.chmod({str(trap)!r}, 0o777); "
                f"os.symlink({str(trap)!r}, {str(target)!r})")
        planted = trap
    r = other_user.run(code)
    assert r.returncode == 0, r.stderr
    c = failover_cluster(base / "journal", base / "checkpoints", n_workers=1)
    try:  # the scheduler file is written before the plugins start: it may appear
        c.start_scheduler()
    except RuntimeError as e:
        assert "scheduler exited" in str(e)
    assert c.scheduler_proc.wait(60) != 0
    log = (c.tmp / "scheduler.log").read_text()
    assert f"refusing to use '{target}'" in log
    assert ("is a symlink owned by uid" if how == "symlink" else f"owned by uid {other_user.uid}") in log
    assert os.listdir(planted) == []  # nothing written where that user can read it


def _planted_file(path, key, marker) -> bytes:
    """A well-formed checkpoint file for ``key`` (right checksum, a MAC with some other
    secret) whose payload, if decoded, unpickles to ``os.mkdir(marker)``."""

    class MakeDir:
        def __reduce__(self):
            return (os.mkdir, (str(marker),))

    frames = serialize_bytelist(MakeDir(), compression=False, on_error="raise")
    size = sum(memoryview(f).nbytes for f in frames)
    header = {"key": key, "kind": "dask", "meta": {}, "nbytes": size, "compression": None, "size": size}

    def write(sink):
        for fr in frames:
            sink.write(fr)

    tmp = f"{path}.plant"
    _files.write_file(tmp, header, write, direct=False, chunk=2**20, auth=Authenticator(os.urandom(32)))
    with open(tmp, "rb") as fh:
        data = fh.read()
    os.unlink(tmp)
    return data


def test_planted_checkpoint_never_runs(other_user, shared_dir, failover_cluster):
    """Files planted under the names checkpoints will have (or replacing one that was
    written), as someone who can write the directory could on a shared file system: the
    first is replaced by the real checkpoint, the second is refused at load with an error
    naming key and file; neither is decoded (the marker directory never appears)."""
    base = shared_dir(0o755)
    c = failover_cluster(base / "journal", base / "checkpoints", n_workers=2, env=FAST_GRACE)
    client = c.start()
    ckdir = mars_dask.failover_report(client)["checkpoint_directory"]
    marker = base / "pwned"
    before, after = "sec-planted-before", "sec-replaced-after"
    p_before, p_after = checkpoint_path(ckdir, before), checkpoint_path(ckdir, after)
    r = other_user.run(f"open({p_before!r}, 'wb').write(b'x')")
    assert r.returncode != 0 and "Permission denied" in r.stderr  # the directory is private
    evil = _planted_file(p_before, before, marker)
    with open(p_before, "wb") as fh:
        fh.write(evil)

    f1 = checkpointed(c, before)
    f2 = checkpointed(c, after)
    with open(p_before, "rb") as fh:
        assert fh.read() != evil  # replaced by the real checkpoint
    with open(p_after, "wb") as fh:
        fh.write(_planted_file(p_after, after, marker))

    _kill_node(c, "w0")
    _wait_workers(c, 1)
    assert client.submit(np.sum, f1, key="sum-1").result(timeout=60) == N * (N - 1) // 2
    with pytest.raises(DataIntegrityError, match="authentication failed") as info:
        client.submit(np.sum, f2, key="sum-2").result(timeout=60)
    assert info.value.key == after and info.value.path == p_after
    assert mars_dask.failover_report(client)["checkpoint_loads"] == 1
    assert not marker.exists()
