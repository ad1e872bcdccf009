"""A worker that holds no inputs still gets work (``mars_dask.plugins._balance``).

Dask places a task with inputs only on a worker that holds one, and its work stealing leaves
queues under 0.2 s of work alone: with millisecond tasks a worker that joins late (or a
process restarted after a kill) was given nothing, for good. These run chains of such tasks
on a cluster with our plugins, add a second worker once they run, and count where the
tasks ran after it joined: with balancing it takes a share of them; without (interval 0)
it takes none, which is why the feature exists."""

import time

import dask
import numpy as np
import pytest
from distributed import Client, LocalCluster, get_worker, wait

import mars_dask  # noqa: F401 - its config defaults before dask.config.set snapshots them
from tests.conftest import MARS_PRELOADS


def _step(prev, i):
    time.sleep(0.002)
    arr = prev[0] if isinstance(prev, tuple) else prev
    return arr + 1, get_worker().address, time.time()


@pytest.mark.parametrize("interval", ["200ms", "0"])
def test_a_late_worker_takes_part_in_chains_of_small_tasks(interval):
    with dask.config.set({"mars-dask.scheduler.balance-interval": interval}):
        with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                          memory_limit="2GiB", host="127.0.0.1", **MARS_PRELOADS) as cluster, \
                Client(cluster) as client:
            heads = [client.scatter(np.zeros(8192), hash=False) for _ in range(16)]  # 64 KB each
            chains = []
            for c, head in enumerate(heads):
                futs, prev = [], head
                for i in range(120):
                    prev = client.submit(_step, prev, i, key=f"chain-{c}-{i}")
                    futs.append(prev)
                chains.append(futs)
            wait([chains[0][5]])
            cluster.scale(2)
            client.wait_for_workers(2, timeout=60)
            joined = time.time()
            wait([f[-1] for f in chains])
            late = next(iter(set(client.scheduler_info()["workers"]) - {chains[0][0].result()[1]}))
            after = [(addr, t) for futs in chains for _, addr, t in client.gather(futs) if t > joined + 0.5]
            for futs in chains:
                np.testing.assert_array_equal(futs[-1].result()[0], np.full(8192, 120.0))
    share = sum(addr == late for addr, _ in after) / len(after)
    if interval == "0":
        assert share < 0.05, share  # plain Dask: the new worker never gets a task
    else:
        assert share > 0.25, share
