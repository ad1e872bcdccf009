"""The tiling engine and Mars execution semantics on a real cluster: annotations seen by the
scheduler, graph submission only of what is new, data lifetime tied to the tileable,
iterative tiling of unknown shapes, the Dask collection protocol and the embedded cluster."""

import gc
import os
import subprocess
import sys
import textwrap
import time

import dask
import numpy as np
import pytest
from distributed.diagnostics.plugin import SchedulerPlugin

import mars_dask
import mars_dask.tensor as mt
from mars_dask.tiling.emit import build_graph
from mars_dask.tiling.tile import tile


class GraphRecorder(SchedulerPlugin):
    """Records, for each submitted graph, the keys it touched and their annotations, and
    every key the scheduler saw computed (processing -> memory)."""

    name = "test-graph-recorder"

    def __init__(self):
        self.graphs = []
        self.computed = []

    def transition(self, key, start, finish, *args, **kwargs):
        if start == "processing" and finish == "memory":
            self.computed.append(key)

    def update_graph(self, scheduler, *, keys, tasks, annotations, priority, **kwargs):
        self.graphs.append(
            {
                "tasks": list(tasks),
                "annotations": {k: dict(v) for k, v in annotations.items()},
                "priority": {k: priority.get(k) for k in tasks},
            }
        )


@pytest.fixture
def recorder(client):
    client.register_plugin(GraphRecorder())
    def get(what="graphs"):
        return client.run_on_scheduler(
            lambda dask_scheduler: getattr(dask_scheduler.plugins["test-graph-recorder"], what)
        )

    yield get
    client.unregister_scheduler_plugin("test-graph-recorder")


def wait_for(pred, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


def test_execute_fetch_and_metadata(client):
    a = np.arange(35.0).reshape(5, 7)
    t = mt.tensor(a, chunk_size=(2, 3))
    r = (t + 1) * 2
    assert r.shape == (5, 7) and r.dtype == np.float64
    assert r.nsplits is None  # lazy: not tiled yet
    with pytest.raises(mars_dask.NotExecutedError):
        r.fetch()
    assert r.execute() is r
    assert r.nsplits == ((2, 2, 1), (3, 3, 1))
    np.testing.assert_array_equal(r.fetch(), (a + 1) * 2)
    # mars_dask.execute of several tileables in one graph
    s, d = mars_dask.execute(t - 1, t * t)
    np.testing.assert_array_equal(s.fetch(), a - 1)
    np.testing.assert_array_equal(d.fetch(), a * a)
    assert mars_dask.fetch(s).shape == (5, 7)


def test_annotations_reach_the_scheduler(client, recorder):
    t = mt.ones((6, 6), chunk_size=3)
    r = (t + 1).sum(axis=0)
    r.execute()
    graph = recorder()[-1]
    ann = graph["annotations"]
    assert set(graph["tasks"]) <= set(ann["priority"]), "every submitted key has a priority"
    assert set(graph["tasks"]) <= set(ann["mars_memory"])
    # ones -> add -> partial sum is fused into one task per chunk; its memory estimate
    # covers at least the 3x3 float64 block it reads
    assert not any(k[0] in (t.key, (t + 1).key) for k in graph["tasks"])
    assert len(graph["tasks"]) >= 4
    assert max(ann["mars_memory"][k] for k in graph["tasks"]) >= 72
    assert {ann["mars_tileable"][k] for k in graph["tasks"]} >= {r.key}
    # the scheduler's priority tuple starts with -annotation: Mars order is what it uses
    for k in graph["tasks"]:
        assert graph["priority"][k][0] == -ann["priority"][k]


def test_earlier_graphs_and_depth_first_order():
    a = mt.ones((4, 4), chunk_size=2) + 1
    b = mt.ones((4, 4), chunk_size=2) * 3
    tile([a.data, b.data], None)
    ga = build_graph(a.data.chunks)
    gb = build_graph(b.data.chunks)

    def prios(g):
        out = {}
        for layer in g.layers.values():
            if layer.annotations:
                out.update({k: layer.annotations["priority"](k) for k in layer})
        return out

    pa, pb = prios(ga), prios(gb)
    assert min(pa.values()) > max(pb.values()), "every key of the earlier graph ranks higher"

    # depth-first: each chunk's inputs are scheduled right before it (post-order)
    x = mt.ones((4,), chunk_size=1)
    s = (x + 1).sum()
    tile([s.data], None)
    g = build_graph(s.data.chunks, fuse=False)
    p = prios(g)
    ones_keys = sorted((k for k in p if k[0] == x.key), key=lambda k: -p[k])
    add_keys = sorted((k for k in p if k[0] == (x + 1).key), key=lambda k: -p[k])
    # ones[i] runs right before add[i]: inputs are consumed before the next leaf starts
    for o, ad in zip(ones_keys, add_keys):
        assert p[o] == p[ad] + 1


def test_elementwise_chain_is_fused():
    x = mt.ones((8, 8), chunk_size=4)
    r = ((x + 1) * 2) - 3
    tile([r.data], None)
    g = build_graph(r.data.chunks)
    keys = list(g.keys())
    assert len(keys) == 4, keys  # one task per chunk, like dask's blockwise fusion
    assert np.array_equal(dask.compute(r, scheduler="sync")[0], np.full((8, 8), 1.0))


def test_reexecute_reuses_data_and_only_new_part_is_submitted(client, recorder):
    x = mt.tensor(np.arange(16.0), chunk_size=4)
    y = (x + 1).execute()
    futures = [c.future for c in y.chunks]
    n_graphs = len(recorder())
    y.execute()  # nothing new: no graph at all
    assert len(recorder()) == n_graphs
    assert [c.future for c in y.chunks] == futures
    z = (y * 2).execute()
    computed = recorder("computed")
    assert sorted(k for k in computed if k[0] == y.key) == sorted(c.key for c in y.chunks)  # once
    assert sorted(k for k in computed if k[0] == z.key) == sorted(c.key for c in z.chunks)
    np.testing.assert_array_equal(z.fetch(), (np.arange(16.0) + 1) * 2)


def test_dropping_a_tileable_releases_its_data(client):
    y = (mt.ones((10,), chunk_size=5) + 41).execute()
    key = y.key

    def held():
        return client.run_on_scheduler(
            lambda dask_scheduler: sum(1 for k in dask_scheduler.tasks if isinstance(k, tuple) and k[0] == key)
        )

    assert held() == 2
    del y
    gc.collect()
    assert wait_for(lambda: held() == 0), "scheduler still holds the dropped tileable's chunks"


def test_a_job_that_outlasts_the_wait_poll_is_released_without_a_gc(client):
    """execute() waits in polls (1 s, shorter with the bar); distributed's sync() keeps each
    poll's TimeoutError in a closure of its frame and the error's traceback holds that
    frame and ours, with the Futures: until a full gc ran, a dropped result stayed on the
    cluster (an impure claim was not released, a long session kept dropped data)."""
    import weakref

    from mars_dask.tensor.arithmetic import elementwise
    from tests.worker import _kernels as K

    y = elementwise(K.slow_add_one, mt.ones((6,), chunk_size=1), dtype=float, delay=0.5)
    key = y.key
    gc.disable()
    try:
        t0 = time.monotonic()
        mars_dask.execute(y)
        assert time.monotonic() - t0 > 1.2  # several polls timed out
        ref = weakref.ref(y.data)
        del y
        assert ref() is None, [type(r).__name__ for r in gc.get_referrers(ref())]
        assert wait_for(lambda: not client.run_on_scheduler(
            lambda dask_scheduler: [k for k in dask_scheduler.tasks if isinstance(k, tuple) and k[0] == key]))
    finally:
        gc.enable()


def test_unknown_shapes_are_tiled_iteratively(client):
    rs = np.random.RandomState(0)
    a = rs.rand(30, 20)
    x = mt.tensor(a, chunk_size=7)
    f = x[x > 0.5]
    assert np.isnan(f.shape[0])
    # sum needs no sizes; reshape does: the engine executes the filter first, by itself
    s = f.sum()
    r = f.reshape(-1, 1)
    u = mt.unique((x * 10).astype(int))
    mars_dask.execute(s, r, u)
    np.testing.assert_allclose(s.fetch(), a[a > 0.5].sum())
    np.testing.assert_array_equal(r.fetch(), a[a > 0.5].reshape(-1, 1))
    np.testing.assert_array_equal(u.fetch(), np.unique((a * 10).astype(int)))
    # reshape needed f's sizes: tiling executed f's chunks and learnt its shape
    assert f.shape == ((a > 0.5).sum(),)
    assert f.data.is_executed
    assert r.shape == ((a > 0.5).sum(), 1)
    assert u.shape == (len(np.unique((a * 10).astype(int))),)
    # a later operation on an executed unknown-shape tensor submits only the new part
    np.testing.assert_allclose((f * 2).execute().fetch(), a[a > 0.5] * 2)


def test_dask_collection_protocol(client):
    a = np.arange(24.0).reshape(4, 6)
    t = mt.tensor(a, chunk_size=(3, 4)) * 2
    (res,) = dask.compute(t)
    np.testing.assert_array_equal(res, a * 2)
    np.testing.assert_array_equal(client.compute(t).result(), a * 2)
    p = client.persist(t)
    assert p.data.is_executed
    np.testing.assert_array_equal(p.fetch(), a * 2)
    # local scheduler, no cluster involved
    np.testing.assert_array_equal(dask.compute(t, scheduler="sync")[0], a * 2)
    # dask.array interop both ways
    d = t.to_dask()
    np.testing.assert_array_equal((d + 1).compute(), a * 2 + 1)
    back = mt.from_dask(d + 1)
    np.testing.assert_array_equal(back.execute().fetch(), a * 2 + 1)


def _slow_mask(block):
    """All True; slow unless it is the first chunk."""
    if block[0] != 0:
        time.sleep(1.5)
    return block >= 0


def test_unknown_shapes_are_asked_while_the_graph_runs(client):
    """execute() learns the shapes of unknown-shape chunks from tasks submitted with the
    graph: the fast chunk's shape is known while the slow one still runs, not in a round
    of tasks after everything finished (that round cost every DataFrame join, filter and
    groupby a scheduler round trip)."""
    from distributed import get_task_stream

    from mars_dask.tensor.arithmetic import elementwise

    x = mt.arange(20, chunk_size=10)
    g = x[elementwise(_slow_mask, x, dtype=bool)]  # unknown length
    with get_task_stream(client) as ts:
        mars_dask.execute(g)
    np.testing.assert_array_equal(g.fetch(), np.arange(20))
    assert g.shape == (20,)
    done = {}
    for r in ts.data:
        stop = max(s["stop"] for s in r["startstops"] if s["action"] == "compute")
        done[str(r["key"])] = stop
    shape_stops = sorted(v for k, v in done.items() if k.startswith("_shape_of"))
    last_chunk = max(v for k, v in done.items() if not k.startswith("_shape_of"))
    assert len(shape_stops) == 2, done
    assert shape_stops[0] < last_chunk - 1.0, (shape_stops, last_chunk)


class Boom(Exception):
    pass


def _explode(x):
    raise Boom("kernel failed on purpose")


def test_failing_kernel_raises_original_exception(client):
    from mars_dask.tensor.arithmetic import elementwise

    t = elementwise(_explode, mt.ones((4,), chunk_size=2), dtype=float)
    with pytest.raises(Boom, match="on purpose"):
        t.execute()
    assert not t.data.is_executed


def test_bad_input_is_rejected_before_submission():
    with pytest.raises(ValueError, match="chunk_size must be positive"):
        mt.ones((4, 4), chunk_size=0)
    with pytest.raises(ValueError, match="2 dimensions"):
        mt.ones((4, 4), chunk_size=(2, 2, 2))
    with pytest.raises(ValueError, match="sums to 3"):
        mt.ones((4,), chunk_size=((1, 2),))
    with pytest.raises(ValueError, match="broadcast"):
        mt.ones((3, 4)) + mt.ones((5,))
    with pytest.raises(np.exceptions.AxisError):
        mt.ones((3, 4)).sum(axis=2)
    with pytest.raises(ValueError, match="not aligned"):
        mt.dot(mt.ones((3, 4)), mt.ones((5, 6)))


def test_embedded_cluster_without_client(tmp_path):
    """No Client exists: execute() starts one LocalCluster, reuses it, and shuts it down."""
    script = textwrap.dedent(
        """
        import mars_dask, mars_dask.tensor as mt
        from mars_dask import session
        if __name__ == "__main__":
            a = (mt.ones((100,), chunk_size=10) + 1).execute()
            c1 = mars_dask.get_client()
            b = (a * 3).sum().execute()
            assert mars_dask.get_client() is c1
            workers = c1.scheduler_info()["workers"]
            assert len(workers) >= 1
            print("RESULT", float(b.fetch()), len(workers))
        """
    )
    path = tmp_path / "embedded.py"
    path.write_text(script)
    env = dict(os.environ, DASK_MARS_DASK__EMBEDDED__DASHBOARD_ADDRESS=":0",
               DASK_MARS_DASK__EMBEDDED__N_WORKERS="1")
    out = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "RESULT 600.0 1" in out.stdout
