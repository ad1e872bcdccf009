"""``python -m mars_dask.demo``: a small Mars-style job on the embedded local cluster.

No Client is created here on purpose: ``execute()`` starts the embedded ``LocalCluster``
(sized to the machine) the first time it is needed, and reuses it. It listens on 127.0.0.1
only: the dashboard printed below is reachable from this machine (e.g. through an SSH tunnel
from another one), not from the network.
"""

from __future__ import annotations

import time

import numpy as np


def main() -> None:
    import mars_dask
    import mars_dask.tensor as mt

    t0 = time.perf_counter()
    x = mt.random.RandomState(42).rand(4_000, 4_000, chunk_size=1_000)
    col_sums = ((x + 1) * 2).sum(axis=0)
    big = x[x > 0.99]  # length unknown until executed: tiled iteratively, as Mars does
    gram = x[:, :200].T @ x[:, :200]
    mars_dask.execute(col_sums, big, gram)

    client = mars_dask.get_client()
    workers = client.scheduler_info()["workers"]
    print(f"embedded cluster {client.scheduler.address}: {len(workers)} Dask workers, dashboard {client.dashboard_link}")
    print(f"column sums of ((x + 1) * 2), first 4: {np.round(col_sums.fetch()[:4], 3)}")
    print(f"x[x > 0.99] has {big.shape[0]} elements (shape learnt by execution: {big.shape})")
    g = gram.fetch()
    print(f"x[:, :200].T @ x[:, :200]: shape {g.shape}, trace {np.trace(g):.3f}")
    local = np.random.default_rng(0)  # cross-check on local data of the same expression
    a = local.random((300, 70))
    t = mt.tensor(a, chunk_size=64)
    ok = np.allclose(((t - t.mean(axis=0)) ** 2).sum(axis=0).execute().fetch(), ((a - a.mean(axis=0)) ** 2).sum(axis=0))
    print(f"matches numpy on a local array: {ok}")
    print(f"done in {time.perf_counter() - t0:.1f}s")
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
