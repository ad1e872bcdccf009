import logging

import pytest
from distributed import Client, LocalCluster

#: what ``distributed`` logs when one key is submitted with two recipes (issue 17)
RUN_SPEC_WARNING = "Detected different `run_spec`"


class RunSpecWarnings(logging.Handler):
    """Collects the scheduler's "different run_spec" warnings (one key submitted with two
    task specs: a dependent may be wired to the wrong dependencies).

    Installed on the ``distributed.scheduler`` logger of the test process, where the
    schedulers of :func:`cluster`, :func:`plain_cluster` and every other in-process
    ``LocalCluster`` log; :func:`pytest_runtest_call` fails a test during which one was
    logged. A handler (not a read of ``get_scheduler_logs()``) so the check costs no round
    trip: the suite runs it for every test."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record):  # called under the handler's lock
        if RUN_SPEC_WARNING in str(record.msg):
            self.messages.append(record.getMessage())

    def take(self) -> list[str]:
        """The warnings logged since the last call."""
        self.acquire()
        try:
            out, self.messages = self.messages, []
        finally:
            self.release()
        return out


run_spec_warnings = RunSpecWarnings()
logging.getLogger("distributed.scheduler").addHandler(run_spec_warnings)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """Fail a test during which a scheduler of this process logged "different run_spec":
    one key always has one recipe (issue 17). A warning logged between tests (e.g. while a
    fixture was set up) is counted for the next test's call, not lost."""
    try:
        result = yield
    except BaseException:
        run_spec_warnings.take()  # the test failed anyway: do not blame the next one
        raise
    found = run_spec_warnings.take()
    if found:
        pytest.fail(f"the scheduler logged {len(found)} 'different run_spec' warning(s) (one key, two "
                    f"recipes) during this test; the first:\n{found[0]}", pytrace=False)
    return result


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
