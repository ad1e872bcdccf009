"""Superseded checkpoint files are deleted as soon as nothing can need them (not only when
the cluster closes); a checkpoint the journal still needs is kept. Real CLI cluster."""

from __future__ import annotations

import gc
import os
import time

import numpy as np

import mars_dask
from mars_dask.plugins._checkpoint import checkpoint_path


def _files(client, t):
    d = mars_dask.failover_report(client)["checkpoint_directory"]
    return [checkpoint_path(d, ch.key) for ch in t.data.chunks]


def test_superseded_checkpoint_files_deleted_needed_ones_kept(cli_cluster):
    import mars_dask.tensor as mt

    c = cli_cluster(n_workers=1)
    client = c.client

    def written(n):
        c.wait(lambda: mars_dask.failover_report(client)["journal_checkpoints"] >= n, 30, f"{n} checkpoints")

    a = (mt.ones((40, 40), chunk_size=20) + 1).execute(checkpoint=True)  # 4 chunks
    written(4)
    fa = _files(client, a)
    c.wait(lambda: all(map(os.path.exists, fa)), 30, "a's checkpoint files")
    b = (a * 2).execute()  # journaled lineage through a's checkpoints
    a2 = (a + 5).execute(checkpoint=True)  # a newer checkpoint downstream of a...
    written(8)
    fa2 = _files(client, a2)
    del a
    gc.collect()
    time.sleep(2)
    # ...but b's journaled recipe reads a's checkpoints: they stay
    assert all(map(os.path.exists, fa)), "a checkpoint that b still needs was deleted"

    a3 = (a2 + 1).execute(checkpoint=True)  # supersedes a2: nothing else depends on it
    del a2
    gc.collect()
    c.wait(lambda: not any(map(os.path.exists, fa2)), 30, "superseded checkpoint files deleted")
    assert mars_dask.failover_report(client)["checkpoints_deleted"] >= 4
    assert all(map(os.path.exists, fa)) and all(map(os.path.exists, _files(client, a3)))
    np.testing.assert_array_equal(a3.fetch(), np.full((40, 40), 8.0))
    np.testing.assert_array_equal(b.fetch(), np.full((40, 40), 4.0))


def _failover_sizes(dask_scheduler):
    """Sizes of the failover plugin's containers, the journal's, and the task count."""
    f = dask_scheduler.plugins["mars-dask"].failover
    f.flush()
    sizes = {n: len(v) for n, v in vars(f).items() if isinstance(v, dict | set | list) and n != "counts"}
    sizes.update({f"journal.{n}": len(v) for n, v in vars(f.journal).items()
                  if isinstance(v, dict | set | list)})
    return sizes, len(dask_scheduler.tasks), len(f.journal)


def test_failover_holds_per_key_state_only_for_live_keys(cli_cluster):
    """Without lineage offload (the scheduler keeps every iteration of x = f(x) while x is
    held, as plain Dask does), once the handles are dropped and the scheduler forgot the
    keys, neither the plugin nor the journal keeps anything per key in memory (before: a
    set of every journaled key); the journal still has them all, on disk."""
    import mars_dask.tensor as mt

    c = cli_cluster(n_workers=1, env={"DASK_MARS_DASK__FAILOVER__OFFLOAD_LINEAGE": "False"})
    client = c.client
    x = mt.ones((20, 20), chunk_size=10).execute()
    for _ in range(30):
        x = (x + 1).execute()
    assert (x.fetch() == 31).all()
    del x
    gc.collect()
    c.wait(lambda: client.run_on_scheduler(_failover_sizes)[1] == 0, 30, "the scheduler forgets")
    time.sleep(1)
    sizes, ntasks, journaled = client.run_on_scheduler(_failover_sizes)
    assert journaled >= 31 * 4
    assert max(sizes.values()) < 10, sizes
