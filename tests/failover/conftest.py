"""Fixtures of the chaos tests: CLI clusters (tests/worker/conftest.py) shared by the tests
of a module, one per system, on a fixed port (so a scheduler can be killed and restarted)."""

from __future__ import annotations

import pytest

from tests.worker.conftest import CLICluster
from tests.worker.conftest import cli_cluster  # noqa: F401 - the per-test CLI cluster factory

# a SIGKILLed worker process restarts in seconds here, but the machine is shared and slow
MARS_ENV = {"DASK_MARS_DASK__SCHEDULER__RESTART_GRACE": "60s"}


def make_cluster(path, mars: bool, **kw) -> CLICluster:
    path.mkdir(parents=True, exist_ok=True)
    env = dict(MARS_ENV) if mars else {}
    env.update(kw.pop("env", None) or {})
    c = CLICluster(path, mars=mars, n_workers=kw.pop("n_workers", 2), nthreads=kw.pop("nthreads", 1),
                   memory_limit=kw.pop("memory_limit", "3GiB"), env=env, fixed_port=True, **kw)
    return c.start_or_clean_up()


@pytest.fixture(scope="module")
def chaos_clusters(tmp_path_factory):
    """``chaos_clusters("mars")`` / ``chaos_clusters("plain")``: a started cluster of that
    system, made once per module (later tests find its workers restarted by their nannies)."""
    made: dict[str, CLICluster] = {}

    def get(system: str) -> CLICluster:
        if system not in made:
            made[system] = make_cluster(tmp_path_factory.mktemp(f"chaos-{system}"), system == "mars")
        c = made[system]
        c.client.wait_for_workers(c.n_workers, timeout=120)
        return c

    yield get
    for c in made.values():
        c.close()
        c.cleanup_dirs()


@pytest.fixture
def own_cluster(tmp_path):
    """Factory for a cluster of a test's own (faults that leave it changed for good)."""
    made = []

    def make(system: str, **kw) -> CLICluster:
        c = make_cluster(tmp_path / f"c{len(made)}", system == "mars", **kw)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()
        c.cleanup_dirs()
