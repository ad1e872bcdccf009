"""Storage faults under the failover plugin's checkpoints, on real CLI clusters: a damaged
or short checkpoint is detected when it is read back (a clear error naming key and file,
never a wrong value), and a checkpoint directory that cannot be written keeps the lineage
and says so (see mars_dask/plugins/_checkpoint.py)."""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess

import dask
import numpy as np
import pytest

import mars_dask
import mars_dask.tensor as mt
from mars_dask.errors import DataIntegrityError
from mars_dask.plugins._checkpoint import checkpoint_path
from tests.failover.test_lineage import FAST_GRACE, _events, _kill_node, _wait_workers
from tests.worker.conftest import CLICluster

N = 200_000


def checkpointed(c: CLICluster, key: str, worker="w0"):
    """A result computed on ``worker`` as a checkpoint boundary, once its checkpoint is
    written: ``(future, checkpoint file)``."""
    client = c.client
    with dask.annotate(mars_boundary="checkpoint"):
        f = client.submit(np.arange, N, key=key, workers=[c.worker_by_name(worker)[0]], allow_other_workers=True)
    assert f.result(timeout=30).sum() == N * (N - 1) // 2
    c.wait(lambda: mars_dask.failover_report(client)["checkpoints_written"] >= 1, 30, "checkpoint written")
    rep = mars_dask.failover_report(client)
    return f, checkpoint_path(rep["checkpoint_directory"], key)


@pytest.mark.parametrize("damage", ["flipped-bytes", "truncated"])
def test_damaged_checkpoint_is_detected_at_load(cli_cluster, damage):
    """The lineage behind a checkpoint is gone once it is written: a damaged checkpoint
    read after its holder died fails the graph with DataIntegrityError naming key and file
    (before this check: 8 flipped bytes gave a wrong sum, a short file a bare reshape
    error)."""
    c = cli_cluster(n_workers=2, nthreads=1, env=FAST_GRACE)
    f, path = checkpointed(c, "ckpt-data")
    with open(path, "rb") as fi:
        data = bytearray(fi.read())
    if damage == "flipped-bytes":
        data[-N * 4:-N * 4 + 8] = bytes(b ^ 0x5A for b in data[-N * 4:-N * 4 + 8])
    else:
        data = data[:len(data) // 2]
    with open(path, "wb") as out:
        out.write(data)
    _kill_node(c, "w0")
    _wait_workers(c, 1)
    with pytest.raises(DataIntegrityError) as info:
        c.client.submit(np.sum, f, key="sum-after-loss").result(timeout=60)
    err = info.value
    assert err.key == "ckpt-data" and err.path == path
    assert "ckpt-data" in str(err) and path in str(err)


def _mount_tmpfs(path, *options) -> None:
    subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join(("size=16m", "mode=0700", *options)), "tmpfs",
                    str(path)], check=True, capture_output=True)


@pytest.mark.filterwarnings("ignore:mars_dask. checkpoints cannot be written:RuntimeWarning")
def test_read_only_checkpoint_directory_keeps_lineage_and_says_so(tmp_path):
    """A checkpoint directory that cannot be written (a read-only mount): the scheduler
    reports it at start, every failed write is reported (event, and a warning the client
    prints), nothing is cut, and a result lost with its node is recomputed from lineage."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("needs root to mount a read-only tmpfs")
    ro = tmp_path / "ro"
    ro.mkdir()
    try:
        _mount_tmpfs(ro)
    except subprocess.CalledProcessError as e:
        pytest.skip(f"cannot mount a tmpfs here: {e.stderr.decode(errors='replace').strip()}")
    c = None
    try:
        c = CLICluster(tmp_path / "c", n_workers=2, nthreads=1, fixed_port=True, env=FAST_GRACE)
        c.tmp.mkdir()
        c.env["DASK_MARS_DASK__FAILOVER__CHECKPOINT_DIRECTORY"] = str(ro)
        os.mkdir(ro / f"127.0.0.1-{c.port}", 0o700)  # as the scheduler would have made it
        subprocess.run(["mount", "-o", "remount,ro", str(ro)], check=True, capture_output=True)
        client = c.start()
        [ev] = _events(client, "checkpoint-directory-unwritable")
        assert str(ro) in ev["directory"] and "Read-only" in ev["error"]

        x = mt.arange(40_000, chunk_size=10_000)
        y = (x * 2).execute(checkpoint=True)
        keys = {str(ch.key) for ch in y.data.chunks}
        c.wait(lambda: mars_dask.failover_report(client)["checkpoint_failures"] >= 4, 30, "failures reported")
        rep = mars_dask.failover_report(client)
        assert rep["checkpoints_written"] == 0 and rep["journal_checkpoints"] == 0
        failed = _events(client, "checkpoint-failed")
        assert {str(e["key"]) for e in failed} == keys
        assert all("Read-only" in e["error"] for e in failed)
        warns = [pickle.loads(e["message"]) for _, e in client.get_events("warn")]
        assert len(warns) == 1 and f"checkpoints cannot be written to {ro}" in warns[0]
        assert not os.listdir(ro / f"127.0.0.1-{c.port}")

        who = client.who_has([ch.future for ch in y.data.chunks])
        holder = max(c.workers(), key=lambda w: sum(list(a) == [w] for a in who.values()))
        _kill_node(c, c.workers()[holder]["name"])
        _wait_workers(c, 1)
        np.testing.assert_array_equal(y.fetch(), np.arange(40_000) * 2)
    finally:
        if c is not None:
            c.close()
            c.cleanup_dirs()
        subprocess.run(["umount", str(ro)], capture_output=True)
