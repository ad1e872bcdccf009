"""Clusters started with the real CLIs (``dask scheduler`` / ``dask worker --nanny``) on
127.0.0.1, in a temporary directory, killed by pid at the end (each process in its own
session, so a leftover worker process is killed with its nanny)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from distributed import Client

HERE = Path(__file__).parent
REPO = HERE.parent.parent
COUNTING = str(HERE / "_counting.py")


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _dask_cli() -> list[str]:
    """The ``dask`` CLI of the interpreter running the tests (its venv's, even when the venv
    is not activated: ``.ci/release_range.py`` runs each release's python directly, and a
    ``dask`` found on PATH would be another release's)."""
    exe = Path(sys.executable).with_name("dask")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "dask"]


def _nannies_starting(dask_scheduler) -> int:
    return len(getattr(dask_scheduler, "_starting_nannies", ()))


class CLICluster:
    """``mars=True``: scheduler ``--preload mars_dask``, workers ``--nanny --preload mars_dask
    --preload-nanny mars_dask`` (the documented installation). ``mars=False``: the same
    cluster without mars_dask (plain Dask). The scheduler always has the counting plugin."""

    def __init__(self, tmp_path: Path, *, mars=True, n_workers=2, nthreads=2, memory_limit="2GiB",
                 env: dict | None = None, scheduler_args=(), worker_args=(), fixed_port: bool = False):
        self.tmp = Path(tmp_path)
        self.mars = mars
        self.n_workers = n_workers
        self.nthreads = nthreads
        self.memory_limit = memory_limit
        self.shm_dir = Path("/dev/shm") / f"mars-dask-test-{uuid.uuid4().hex[:8]}"
        self.spill_dir = self.tmp / "spill"
        self.env = dict(os.environ)
        self.env.update({
            "DASK_MARS_DASK__STORE__DIRECTORY": str(self.shm_dir),
            "DASK_MARS_DASK__STORE__SPILL_DIRECTORY": str(self.spill_dir),
            "DASK_DISTRIBUTED__WORKER__DAEMON": "False",
            "DASK_LOGGING__MARS_DASK": "info",
            "PYTHONPATH": str(REPO) + os.pathsep + self.env.get("PYTHONPATH", ""),
        })
        for k, v in (env or {}).items():  # (None: unset, e.g. to run with the default logging)
            if v is None:
                self.env.pop(k, None)
            else:
                self.env[k] = v
        self.scheduler_args = list(scheduler_args)
        self.worker_args = list(worker_args)
        self.procs: list[subprocess.Popen] = []
        self.scheduler_file = self.tmp / "scheduler.json"
        self.client: Client | None = None
        # fixed_port: the scheduler listens on a port chosen once, so that a scheduler
        # restarted after a kill (restart_scheduler) is found at the same address
        self.port = _free_port() if fixed_port else 0
        self.scheduler_proc: subprocess.Popen | None = None
        if self.mars:
            self.env.update({
                "DASK_MARS_DASK__FAILOVER__JOURNAL_DIRECTORY": str(self.tmp / "journal"),
                "DASK_MARS_DASK__FAILOVER__CHECKPOINT_DIRECTORY": str(self.tmp / "checkpoints"),
            })

    # -- start / stop ----------------------------------------------------------------
    def _spawn(self, args, log):
        with open(self.tmp / log, "wb") as f:  # the process has its own copy of the descriptor
            p = subprocess.Popen(args, stdout=f, stderr=subprocess.STDOUT, env=self.env, cwd=str(self.tmp),
                                 start_new_session=True)
        self.procs.append(p)
        return p

    def start_scheduler(self, timeout=60) -> subprocess.Popen:
        """Start the scheduler process (again, after kill_scheduler: same port, journal and
        checkpoint directories)."""
        cli = _dask_cli()
        self.scheduler_file.unlink(missing_ok=True)
        sargs = [*cli, "scheduler", "--host", "127.0.0.1", "--port", str(self.port), "--no-dashboard",
                 "--scheduler-file", str(self.scheduler_file), "--preload", COUNTING]
        if self.mars:
            sargs += ["--preload", "mars_dask"]
        n = sum(1 for p in self.tmp.glob("scheduler*.log"))
        self.scheduler_proc = self._spawn(sargs + self.scheduler_args, f"scheduler{'-%d' % n if n else ''}.log")
        deadline = time.monotonic() + timeout
        while not self.scheduler_file.exists():
            if time.monotonic() > deadline:
                raise TimeoutError("scheduler did not start:\n" + self.logs())
            if self.scheduler_proc.poll() is not None:
                raise RuntimeError("scheduler exited:\n" + self.logs())
            time.sleep(0.1)
        return self.scheduler_proc

    def kill_scheduler(self) -> int:
        """SIGKILL the scheduler process; returns its pid."""
        p = self.scheduler_proc
        os.kill(p.pid, signal.SIGKILL)
        p.wait(10)
        return p.pid

    def start(self, timeout=60) -> Client:
        cli = _dask_cli()
        self.start_scheduler(timeout)
        for i in range(self.n_workers):
            wargs = [*cli, "worker", "--scheduler-file", str(self.scheduler_file), "--host", "127.0.0.1",
                     "--nanny", "--nworkers", "1", "--nthreads", str(self.nthreads),
                     "--memory-limit", str(self.memory_limit), "--name", f"w{i}",
                     "--local-directory", str(self.tmp / f"local-w{i}"), "--no-dashboard"]
            if self.mars:
                wargs += ["--preload-nanny", "mars_dask", "--preload", "mars_dask"]
            self._spawn(wargs + self.worker_args, f"worker-{i}.log")
        self.client = Client(scheduler_file=str(self.scheduler_file), timeout=timeout)
        self.client.wait_for_workers(self.n_workers, timeout=timeout)
        # A worker registers before its nanny has finished starting (Nanny.start_unsafe
        # still writes its final "ok" to the scheduler); a scheduler killed in between makes
        # the whole `dask worker` exit ("Nanny failed to start"), with or without mars_dask.
        # Fault tests kill the scheduler, so the cluster is started only once no nanny is
        # still starting (private: Scheduler._starting_nannies, distributed >= 2024.4).
        self.wait(lambda: not self.client.run_on_scheduler(_nannies_starting), timeout,
                  "nannies did not finish starting")
        if self.mars:  # quota resources arrive with (or right after) registration
            self.wait(lambda: all(w["resources"].get("mars-memory") for w in self.workers().values()),
                      timeout, "workers did not advertise mars-memory")
        return self.client

    def close(self) -> None:
        if self.client is not None:
            try:
                self.client.shutdown()
            except Exception:  # noqa: BLE001,S110 - best effort: the processes are killed below
                pass
            try:
                self.client.close(timeout=5)
            except Exception:  # noqa: BLE001,S110 - best effort: the processes are killed below
                pass
            # the shutdown closes every worker and nanny: let them finish (each store removes
            # its files in its close) before any signal cuts a close short
            deadline = time.monotonic() + 10
            for p in self.procs:
                try:
                    p.wait(max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
        deadline = time.monotonic() + 20
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for p in self.procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait(5)

    def cleanup_dirs(self) -> None:
        shutil.rmtree(self.shm_dir, ignore_errors=True)

    def start_or_clean_up(self) -> CLICluster:
        """:meth:`start`; if that fails, kill what was started and remove the dirs."""
        try:
            self.start()
        except BaseException:
            self.close()
            self.cleanup_dirs()
            raise
        return self

    # -- helpers ---------------------------------------------------------------------
    def workers(self) -> dict:
        return self.client.scheduler_info(n_workers=-1)["workers"]

    def worker_by_name(self, name) -> tuple[str, dict]:
        for addr, w in self.workers().items():
            if str(w["name"]) == str(name):
                return addr, w
        raise KeyError(name)

    def pids(self, addr) -> tuple[int, int]:
        """``(nanny pid, worker process pid)`` of the worker at ``addr``. Asked of each
        process itself: a worker process started from a fork server is not its nanny's child."""
        (nanny_pid,) = self.client.run(os.getpid, workers=[addr], nanny=True).values()
        return nanny_pid, self.client.run(os.getpid, workers=[addr])[addr]

    def kill_worker_process(self, name) -> int:
        """SIGKILL the worker process (not its nanny) of worker ``name``; returns its pid."""
        addr, _ = self.worker_by_name(name)
        pid = self.client.run(os.getpid, workers=[addr])[addr]
        os.kill(pid, signal.SIGKILL)
        return pid

    def counts(self) -> dict:
        sys.path.insert(0, str(REPO))
        from tests.worker._counting import counting_state

        return self.client.run_on_scheduler(counting_state)

    def mars_stats(self) -> dict:
        def stats(dask_scheduler):
            p = dask_scheduler.plugins.get("mars-dask")
            return p._stats() if p is not None else None

        return self.client.run_on_scheduler(stats)

    def wait(self, pred, timeout, what="condition"):
        deadline = time.monotonic() + timeout
        while not pred():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what} not met within {timeout}s\n" + self.logs(4000))
            time.sleep(0.05)

    def logs(self, tail=3000) -> str:
        out = []
        for f in sorted(self.tmp.glob("*.log")):
            out.append(f"--- {f.name}\n" + f.read_text(errors="replace")[-tail:])
        return "\n".join(out)


@pytest.fixture
def store_dirs(tmp_path):
    """``(shm directory, spill directory)`` for a MarsStore made by the test: the first
    under /dev/shm (not created; removed after the test), the second in ``tmp_path``."""
    base = "/dev/shm" if os.path.isdir("/dev/shm") else str(tmp_path)
    shm = os.path.join(base, f"mars-dask-test-{uuid.uuid4().hex[:10]}")
    yield shm, str(tmp_path / "spill")
    shutil.rmtree(shm, ignore_errors=True)


@pytest.fixture
def cli_cluster(tmp_path):
    """Factory: ``cli_cluster(mars=True, n_workers=2, ...)`` -> started CLICluster; all are
    closed (and their processes killed) at the end of the test."""
    made = []

    def make(**kw):
        c = CLICluster(tmp_path / f"c{len(made)}", **kw)
        (tmp_path / f"c{len(made)}").mkdir()
        made.append(c)
        c.start()
        return c

    yield make
    for c in made:
        c.close()
        c.cleanup_dirs()
