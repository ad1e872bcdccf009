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


@pytest.fixture(scope="session")
def cluster():
    """One real multi-process cluster for the API tests (2 worker processes, loopback)."""
    with LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=":0",
        memory_limit="4GiB",
        host="127.0.0.1",
    ) as c:
        yield c


@pytest.fixture(scope="session")
def client(cluster):
    # not ``with Client(...)``: that makes it the *current* client of this thread for the
    # whole session, and clients that later tests start (CLI clusters) would not become the
    # default that mars_dask.execute() uses
    c = Client(cluster)
    yield c
    c.close()
