"""Installing mars_dask: the CLI preloads (with preload argv), ``install(client)`` on a
running plain cluster, and the embedded cluster of ``execute()``."""

from __future__ import annotations

import os
import signal
import time
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


def _process_origin(dask_worker):
    import sys

    import psutil

    parent = psutil.Process().parent()
    return {"pid": os.getpid(), "parent": parent.pid, "grandparent": parent.ppid(),
            "parent_cmd": " ".join(parent.cmdline()),
            # a spawned worker imports these on its first mars_dask task, not before
            "preloaded": "mars_dask.tensor" in sys.modules and "mars_dask.dataframe" in sys.modules}


def _gone(pids, timeout) -> list:
    """The pids of ``pids`` still alive after ``timeout`` seconds (zombies count as gone)."""
    import psutil

    deadline = time.monotonic() + timeout
    while True:
        alive = [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.1)


@pytest.mark.timeout(240)
def test_cli_worker_processes_fork_from_a_preloaded_server(cli_cluster):
    """`dask worker --preload-nanny mars_dask` starts its worker processes from a fork server
    that imported mars_dask once (mars-dask.worker.start-method: auto): a process SIGKILLed
    mid-life comes back from it with mars_dask loaded and computes; a SIGKILLed nanny leaves
    neither the fork server nor the worker behind. With the key null, Dask's spawn."""
    import numpy as np

    import mars_dask.tensor as mt

    c = cli_cluster(mars=True, n_workers=1, nthreads=1, memory_limit="1GiB")
    (nanny_pid,) = c.client.run(os.getpid, nanny=True).values()
    (first,) = c.client.run(_process_origin).values()
    assert first["parent"] != nanny_pid and first["grandparent"] == nanny_pid
    assert "forkserver" in first["parent_cmd"] and first["preloaded"]
    killed = c.kill_worker_process("w0")

    def back() -> bool:
        try:
            return [v["pid"] for v in c.client.run(_process_origin).values()] not in ([], [killed])
        except OSError:  # CommClosedError: the run reached the dead process
            return False

    c.wait(back, 60, "the killed worker process back")
    (second,) = c.client.run(_process_origin).values()
    assert second["parent"] == first["parent"] and second["preloaded"]  # the same fork server
    assert _gone([killed], 10) == []
    x = np.arange(40_000, dtype="f8").reshape(200, 200)
    got = (mt.tensor(x, chunk_size=50) * 2).sum(axis=0).execute().fetch()
    np.testing.assert_array_equal(got, (x * 2).sum(axis=0))
    # the nanny SIGKILLed: the fork server sees its pipe close, the worker its parent-alive pipe
    worker_cli = c.procs[1]
    assert worker_cli.pid == nanny_pid  # --nworkers 1: the nanny is the `dask worker` process
    os.kill(nanny_pid, signal.SIGKILL)
    worker_cli.wait(10)
    assert _gone([second["pid"], second["parent"]], 20) == []


@pytest.mark.timeout(180)
def test_start_method_null_keeps_dasks_spawn(cli_cluster):
    c = cli_cluster(mars=True, n_workers=1, nthreads=1, memory_limit="1GiB",
                    env={"DASK_MARS_DASK__WORKER__START_METHOD": "null"})
    (nanny_pid,) = c.client.run(os.getpid, nanny=True).values()
    (origin,) = c.client.run(_process_origin).values()
    assert origin["parent"] == nanny_pid and not origin["preloaded"]


def test_start_method_choice():
    """What choose_start_method does with each value, in a process that is not `dask worker`
    (here: pytest). A method the user configured for Dask is kept."""
    from mars_dask.plugins._nanny import choose_start_method

    key = "distributed.worker.multiprocessing-method"
    with dask.config.set({key: "spawn"}):  # restored on exit, whatever the function sets
        for value in ("auto", None, "spawn"):
            with dask.config.set({"mars-dask.worker.start-method": value}):
                assert choose_start_method() is None
                assert dask.config.get(key) == "spawn"
        with dask.config.set({"mars-dask.worker.start-method": "fork"}), \
                pytest.raises(ValueError, match="start-method is 'fork': it is one of auto, forkserver"):
            choose_start_method()
        with dask.config.set({"mars-dask.worker.start-method": "forkserver", key: "fork"}):
            assert choose_start_method() is None
            assert dask.config.get(key) == "fork"
        with dask.config.set({"mars-dask.worker.start-method": "forkserver"}):
            assert choose_start_method() == "forkserver"
            assert dask.config.get(key) == "forkserver"
    assert dask.config.get(key) == "spawn"


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
