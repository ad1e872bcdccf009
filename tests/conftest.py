import pytest
from distributed import Client, LocalCluster


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False, help="run tests marked slow")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--runslow"):
        return
    skip_slow = pytest.mark.skip(reason="slow: run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip_slow)


#: what execute()'s embedded cluster and the README's CLI cluster install: the scheduler
#: plugin (quota, ordering, restart, failover journal), the worker plugin, and the nanny
#: plugin that makes MarsStore every worker's ``data``
MARS_PRELOADS = {"scheduler_kwargs": {"preload": ["mars_dask"]}, "preload": ["mars_dask"],
                 "preload_nanny": ["mars_dask"]}


def _local_cluster(**kw):
    return LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0",
                        memory_limit="4GiB", host="127.0.0.1", **kw)


@pytest.fixture(scope="session")
def cluster():
    """The cluster the API tests run on: 2 worker processes on loopback, configured as
    users get it (store and plugins installed, as :data:`MARS_PRELOADS`)."""
    with _local_cluster(**MARS_PRELOADS) as c:
        yield c


@pytest.fixture(scope="session")
def plain_cluster():
    """Plain Dask (no mars_dask plugins or store): only for tests that compare with it."""
    with _local_cluster() as c:
        yield c


@pytest.fixture(scope="session")
def client(cluster):
    # not ``with Client(...)``: that makes it the *current* client of this thread for the
    # whole session, and clients that later tests start (CLI clusters) would not become the
    # default that mars_dask.execute() uses
    c = Client(cluster)
    yield c
    c.close()
