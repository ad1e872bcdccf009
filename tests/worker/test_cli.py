"""Installing mars_dask: the CLI preloads (with preload argv), ``install(client)`` on a
running plain cluster, and the embedded cluster of ``execute()``."""

from __future__ import annotations

import warnings

import dask.config
import pytest

GiB = 2**30


def _worker_view(dask_worker):
    return {
        "data": type(dask_worker.data).__name__,
        "quota": dask_worker.state.total_resources.get("mars-memory"),
        "limit": dask_worker.memory_manager.memory_limit,
        "plugins": sorted(dask_worker.plugins),
        # what the process was spawned with (glibc read it then)
        "malloc": {k: v for k, v in (kv.split(b"=", 1) for kv in open("/proc/self/environ", "rb").read().split(b"\0")
                                       if kv.startswith(b"MALLOC_"))},
    }


def _nanny_view(dask_worker):  # run with nanny=True: dask_worker is the Nanny
    return sorted(dask_worker.plugins)


def _scheduler_view(dask_scheduler):
    p = dask_scheduler.plugins.get("mars-dask")
    return None if p is None else {"grace": p.recovery.grace, "allowed": dask_scheduler.allowed_failures}


@pytest.mark.timeout(180)
def test_cli_preloads_scheduler_argv_and_config(cli_cluster):
    c = cli_cluster(mars=True, n_workers=1, nthreads=1, memory_limit="1GiB",
                    scheduler_args=["--mars-restart-grace", "7s"],
                    # `dask worker --nanny` does not hand preload argv to its processes:
                    # worker options come from dask.config (here an environment variable)
                    env={"DASK_MARS_DASK__WORKER__QUOTA_FRACTION": "0.5"})
    sv = c.client.run_on_scheduler(_scheduler_view)
    assert sv["grace"] == 7
    (wv,) = c.client.run(_worker_view).values()
    assert wv["data"] == "MarsStore"
    assert wv["quota"] == int(0.5 * wv["limit"])
    assert "mars-dask" in wv["plugins"]
    assert wv["malloc"] == {b"MALLOC_MMAP_THRESHOLD_": b"33554432", b"MALLOC_TRIM_THRESHOLD_": b"67108864"}
    (nv,) = c.client.run(_nanny_view, nanny=True).values()
    assert "mars-dask-nanny" in nv


def test_malloc_thresholds_leave_a_users_own_setting_alone():
    """The nanny preload sets glibc's heap thresholds for its worker processes, except a
    variable the user's Dask config set to something other than Dask's default."""
    from types import SimpleNamespace

    from mars_dask.plugins._nanny import tune_malloc

    dask_default = SimpleNamespace(pre_spawn_env={"MALLOC_TRIM_THRESHOLD_": "65536", "OMP_NUM_THREADS": "1"})
    assert tune_malloc(dask_default) == {"MALLOC_MMAP_THRESHOLD_": "33554432", "MALLOC_TRIM_THRESHOLD_": "67108864"}
    assert dask_default.pre_spawn_env["MALLOC_TRIM_THRESHOLD_"] == "67108864"
    assert dask_default.pre_spawn_env["OMP_NUM_THREADS"] == "1"
    users = SimpleNamespace(pre_spawn_env={"MALLOC_TRIM_THRESHOLD_": "0"})
    assert tune_malloc(users) == {"MALLOC_MMAP_THRESHOLD_": "33554432"}
    assert users.pre_spawn_env["MALLOC_TRIM_THRESHOLD_"] == "0"
    own_mmap = SimpleNamespace(pre_spawn_env={"MALLOC_MMAP_THRESHOLD_": "1000", "MALLOC_TRIM_THRESHOLD_": "65536"})
    assert tune_malloc(own_mmap) == {"MALLOC_TRIM_THRESHOLD_": "67108864"}
    assert own_mmap.pre_spawn_env["MALLOC_MMAP_THRESHOLD_"] == "1000"
    with dask.config.set({"mars-dask.worker.malloc-mmap-threshold": None, "mars-dask.worker.malloc-trim-threshold": None}):
        untouched = SimpleNamespace(pre_spawn_env={"MALLOC_TRIM_THRESHOLD_": "65536"})
        assert tune_malloc(untouched) == {}
        assert untouched.pre_spawn_env == {"MALLOC_TRIM_THRESHOLD_": "65536"}


@pytest.mark.timeout(180)
def test_install_on_running_plain_cluster(cli_cluster):
    from mars_dask.plugins import install

    c = cli_cluster(mars=False, n_workers=1, nthreads=1, memory_limit="1GiB")
    with pytest.warns(RuntimeWarning, match="cannot be added to running worker processes"):
        done = install(c.client)
    assert done == {"scheduler": True, "nanny": True, "store": False}
    assert c.client.run_on_scheduler(_scheduler_view) is not None
    c.wait(lambda: all(v["quota"] for v in c.client.run(_worker_view).values()), 30, "quota resource")
    (nv,) = c.client.run(_nanny_view, nanny=True).values()
    assert "mars-dask-nanny" in nv
    # store=True restarts the worker processes with the store
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        install(c.client, store=True)
    c.client.wait_for_workers(1, timeout=60)
    c.wait(lambda: [v["data"] for v in c.client.run(_worker_view).values()] == ["MarsStore"], 60, "store")


@pytest.mark.timeout(180)
def test_embedded_cluster_installs_the_same(tmp_path):
    from mars_dask import session

    with dask.config.set({
        "mars-dask.embedded.n-workers": 1, "mars-dask.embedded.threads-per-worker": 1,
        "mars-dask.embedded.memory-limit": "1GiB", "mars-dask.embedded.dashboard-address": ":0",
        "mars-dask.store.directory": str(tmp_path / "shm"),
        "mars-dask.store.spill-directory": str(tmp_path / "spill"),
    }):
        assert session._embedded is None
        client = session.start_embedded_cluster()
        try:
            assert client.run_on_scheduler(_scheduler_view) is not None
            (wv,) = client.run(_worker_view).values()
            assert wv["data"] == "MarsStore" and wv["quota"] == int(0.6 * GiB)
            (nv,) = client.run(_nanny_view, nanny=True).values()
            assert "mars-dask-nanny" in nv
        finally:
            session.stop_embedded_cluster()
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]
