"""mars_dask._dask_internals: every contact checks out on the installed distributed; a
missing one disables the features that need it with one warning, and nothing raises."""

from __future__ import annotations

import logging
import types

import pytest

from mars_dask import _dask_internals as DI


@pytest.fixture(autouse=True)
def _clean():
    DI._reset()
    yield
    DI._reset()


def test_every_contact_checks_out_on_the_installed_version():
    for role in (None, "scheduler", "worker", "nanny", "client"):
        assert DI.check(role) == {}
    assert DI.disabled() == {}
    assert all(DI.enabled(f) for _, fs, _ in DI.CONTACTS.values() for f in fs)


def test_each_contact_is_in_the_docstring_table():
    for name in DI.CONTACTS:
        if name in ("task_edges", "restrictions"):
            continue  # listed as their functions (detach/attach, get/put)
        assert name in DI.__doc__, name


def test_a_missing_contact_disables_its_features_with_one_warning(monkeypatch, caplog):
    from distributed.collections import HeapSet

    monkeypatch.delattr(HeapSet, "peekn")
    events = []
    server = types.SimpleNamespace(log_event=lambda topic, msg: events.append((topic, msg)))
    with caplog.at_level(logging.WARNING, logger="mars_dask.plugins"):
        failed = DI.check("worker", server=server)
        DI.check("worker", server=server)  # a second plugin start: no second warning
    assert failed == {"store-read-ahead": ["next_ready_tasks"]}
    assert not DI.enabled("store-read-ahead") and DI.enabled("quota")
    warnings = [r for r in caplog.records if "store-read-ahead" in r.getMessage()]
    assert len(warnings) == 1 and "next_ready_tasks" in warnings[0].getMessage()
    assert events and events[0][0] == "mars-dask"
    assert events[0][1]["disabled"] == {"store-read-ahead": ["next_ready_tasks"]}


def test_a_probe_that_raises_is_a_failed_contact(monkeypatch):
    def boom():
        raise AttributeError("gone")

    probe, features, role = DI.CONTACTS["memory_terminated_pid"]
    monkeypatch.setitem(DI.CONTACTS, "memory_terminated_pid", (boom, features, role))
    assert DI.check("nanny") == {"restart-recovery": ["memory_terminated_pid"]}
    assert not DI.enabled("restart-recovery")


def test_worker_plugin_skips_a_disabled_feature_without_raising(monkeypatch):
    """A worker plugin started on a distributed without the ready heaps: read-ahead is off,
    task transitions go on."""
    from distributed.collections import HeapSet

    from mars_dask.plugins._worker import MarsWorkerPlugin

    monkeypatch.delattr(HeapSet, "peekn")
    DI.check("worker")

    class Store:
        read_ahead = 2
        reads_ahead = True
        on_disk = True

        def prefetch(self, keys):  # pragma: no cover - must not be reached
            raise AssertionError("read-ahead ran")

    p = MarsWorkerPlugin()
    p.st = types.SimpleNamespace(worker=types.SimpleNamespace(data=None), enabled=False)
    monkeypatch.setattr(p, "_store", lambda: Store())
    p.transition("k", "waiting", "ready")  # no AttributeError, no prefetch


def test_no_stack_walking_no_hidden_attributes():
    import inspect

    import mars_dask.plugins._worker as pw
    import mars_dask.spill._store as ss
    import mars_dask.spill._worker as sw

    for mod in (pw, ss, sw):
        src = inspect.getsource(mod)
        for banned in ("_getframe", "f_locals", "_pending_plugins", "_mars_dask_state",
                       "_mars_dask_scheduler_lost", "_mars_dask_close_hooked"):
            assert banned not in src, (mod.__name__, banned)


class _W(types.SimpleNamespace):
    """A stand-in worker (weakly referenceable, as a Worker is)."""

    __hash__ = object.__hash__


def test_store_bind_takes_the_workers_name_and_limit(tmp_path):
    from mars_dask.spill import MarsStore

    st = MarsStore(directory=str(tmp_path / "shm"), spill_directory=str(tmp_path / "spill"),
                   shm_limit=0.5)
    w = _W(name=None, nanny="tcp://nanny:1", address="tcp://w:2",
                              memory_manager=types.SimpleNamespace(memory_limit=2**20), plugins={})
    owner = object()
    st.bind(w, owner=owner)
    assert st.name == "tcp://nanny:1" and st.memory_limit == 2**20 and st.shm_limit == 2**19
    assert st.bound_by is owner and w.plugins == {}  # the owner closes it
    st.close()

    st2 = MarsStore(directory=str(tmp_path / "shm"), spill_directory=str(tmp_path / "spill"))
    w2 = _W(name="3", nanny=None, address="tcp://w:3",
                               memory_manager=types.SimpleNamespace(memory_limit=None), plugins={},
            state=types.SimpleNamespace(tasks={}))
    st2.bind(w2)  # no owner: the store closes itself on worker close
    assert st2.name == "3" and "mars-store-teardown" in w2.plugins
    st2["x"] = 1
    w2.plugins["mars-store-teardown"].teardown(w2)
    assert st2._closed


# -- the scheduler plugins' contacts --------------------------------------------------------------
def _fail_contact(monkeypatch, name):
    probe, features, role = DI.CONTACTS[name]
    monkeypatch.setitem(DI.CONTACTS, name, (lambda: False, features, role))
    return features


def test_scheduler_plugins_touch_distributed_only_through_this_module():
    """The scheduler plugins name no private part of distributed: ``_restart``, ``_quota``,
    ``_failover``, ``_checkpoint``, ``_journal``, ``_http``, ``_tileables``, ``_pages`` go
    through _dask_internals."""
    import inspect
    import re

    from mars_dask.plugins import (_checkpoint, _failover, _http, _journal, _pages, _quota, _restart, _scheduler,
                                   _tileables)

    banned = re.compile(r"_add_to_processing|\.send_all\(|\.unrunnable\b|\.queued\b|\.transitions\("
                        r"|s\.transition\(|\.stream_handlers\b|\.handlers\[|\.register_worker_plugin\("
                        r"|ts\.(worker|host|resource|loose)_restrictions|\bts\.run_spec|\.waiting_on\b"
                        r"|\.(dependencies|dependents|waiters)\.(add|discard)\(|\.new_task\(|\.add_dependency\("
                        r"|_materialize_graph|_task_spec|\.suspicious\s*-=|\.priority\s*=[^=]|\.generation\b"
                        r"|s\.update_data|\"(processing|lost-computed|lost-scattered)-tasks\"|\"expr_ser\""
                        r"|\.applications\b|template_variables\(|BOKEH_THEME|env\.get_template|(from|import) distributed\.dashboard")
    for mod in (_restart, _quota, _failover, _checkpoint, _journal, _scheduler, _http, _tileables, _pages):
        code = [ln for ln in inspect.getsource(mod).splitlines() if not ln.strip().startswith("#")]
        hits = [ln.strip() for ln in code if banned.search(re.sub(r"\bDI\.\w+", "DI.f", ln))
                and not ln.strip().startswith(("``", "-", "*"))]
        assert not hits, (mod.__name__, hits)


def test_a_missing_failover_wrapper_contact_disables_journal_restore_and_jobs_still_run(monkeypatch, caplog):
    """``Scheduler._find_lost_dependencies`` gone while the scheduler plugin starts (as on a
    distributed without it): failover journal restore is reported disabled with the one
    warning, the plugin starts without installing its wrappers, and a mars_dask job runs."""
    import numpy as np
    from distributed import Client, LocalCluster
    from distributed.scheduler import Scheduler

    import mars_dask
    import mars_dask.tensor as mt
    from mars_dask.plugins import _protocol as P
    from mars_dask.session import Session
    from tests.conftest import MARS_PRELOADS

    original = Scheduler._find_lost_dependencies
    monkeypatch.delattr(Scheduler, "_find_lost_dependencies")
    with caplog.at_level(logging.WARNING, logger="mars_dask.plugins"), \
            LocalCluster(n_workers=1, threads_per_worker=1, processes=True, memory_limit="2GiB",
                         dashboard_address=":0", host="127.0.0.1", **MARS_PRELOADS) as cluster, \
            Client(cluster) as client:
        s = cluster.scheduler
        plugin = s.plugins[P.PLUGIN_NAME]
        assert plugin.failover is not None and plugin.failover.journal is not None  # started
        # Dask's own update_graph needs it back for the job; the plugin did not wrap it
        Scheduler._find_lost_dependencies = original  # (monkeypatch restores it too)
        assert "_find_lost_dependencies" not in vars(s)
        assert s.stream_handlers["update-graph"] == s.update_graph  # not wrapped either
        assert not DI.enabled("failover-journal-restore")
        assert DI.enabled("quota") and DI.enabled("restart-recovery") and plugin.quota.enabled
        events = [e for _, e in s.get_events("mars-dask") if e.get("action") == "internals-check-failed"]
        assert len(events) == 1
        assert "wrap_find_lost_dependencies" in events[0]["disabled"]["failover-journal-restore"]
        warned = [r for r in caplog.records if "failover-journal-restore" in r.getMessage()]
        assert len(warned) == 1 and "wrap_find_lost_dependencies" in warned[0].getMessage()

        a = mars_dask.execute((mt.arange(40, chunk_size=10) + 7).sum(), session=Session(client))
        assert a.fetch() == np.arange(40).sum() + 7 * 40


def test_the_failover_wrappers_are_installed_when_their_contacts_check_out(monkeypatch):
    """The same start with every contact there: both wrappers in place (what the test above
    shows missing); with the check failed at the probe level, neither."""
    from mars_dask.plugins._failover import Failover

    calls = []

    class S(types.SimpleNamespace):
        def _find_lost_dependencies(self, dsk, keys):  # pragma: no cover - replaced
            return set()

        def update_data(self, **kw):  # pragma: no cover - replaced
            calls.append(kw)

    def scheduler():
        s = S(stream_handlers={"update-graph": "orig"}, handlers={}, address="tcp://127.0.0.1:1",
              tasks={}, loop=None)
        return s

    async def no_plugin(*a, **k):
        return None

    import asyncio

    import dask

    for failing in (None, "wrap_find_lost_dependencies", "wrap_update_graph_handler", "wrap_update_data"):
        DI._reset()
        with monkeypatch.context() as m:
            m.setattr(DI, "add_worker_plugin_from_scheduler", no_plugin)
            if failing:
                _fail_contact(m, failing)
            DI.check("scheduler")
            s = scheduler()
            with dask.config.set({"mars-dask.failover.no-workers-timeout": None,
                                  "mars-dask.failover.checkpoint-scattered": True}):
                f = Failover(s)
                asyncio.run(f.start())
            try:
                restore = failing not in ("wrap_find_lost_dependencies", "wrap_update_graph_handler")
                assert ("_find_lost_dependencies" in vars(s)) is restore, failing
                assert (s.stream_handlers["update-graph"] != "orig") is restore, failing
                assert ("update_data" in vars(s)) is (failing != "wrap_update_data"), failing
                assert "mars_failover_stats" in s.handlers  # the plugin's own handlers always
            finally:
                f.close()


def test_quota_restrictions_go_through_the_restriction_contact(monkeypatch):
    """Quota admission sets and re-estimates ``mars-memory`` resource restrictions through
    _dask_internals; with the restriction contact failed, the scheduler plugin starts with
    quota (and restart recovery) off and restricts nothing, and Dask's allowed_failures is
    left alone."""
    import asyncio

    import dask
    from distributed.scheduler import TaskGroup, TaskPrefix, TaskState

    from mars_dask.plugins import _protocol as P
    from mars_dask.plugins._quota import Quota
    from mars_dask.plugins._scheduler import MarsSchedulerPlugin

    def stand_in():
        ts = TaskState("x", DI.make_task("x", int, "1"), "released", TaskGroup("x", TaskPrefix("x")),
                       validate=False)
        ts.annotations = {P.ANN_MEMORY: 1000, P.ANN_TILEABLE: "t"}
        return types.SimpleNamespace(
            tasks={"x": ts}, resources={P.RESOURCE: {"w": 4000}},
            workers={"w": types.SimpleNamespace(nthreads=2, nanny=None, name="w", pid=1, memory_limit=0)},
            handlers={}, stream_handlers={}, allowed_failures=3, log_event=lambda *a: None, loop=None), ts

    s, ts = stand_in()
    q = Quota(s)
    q.update_graph({P.ANN_MEMORY: {"x": 1000}})
    assert DI.resource_restriction(ts, P.RESOURCE) == 1000 == ts.resource_restrictions[P.RESOURCE]
    q.observe("t", 3000)
    assert DI.resource_restriction(ts, P.RESOURCE) == min(int(3000 * q.margin), 4000)

    features = _fail_contact(monkeypatch, "restrictions")
    assert "quota" in features
    s, ts = stand_in()
    plugin = MarsSchedulerPlugin(install_worker_plugin=False)
    with dask.config.set({"mars-dask.failover.enabled": False}):
        asyncio.run(plugin.start(s))
    assert not DI.enabled("quota") and not DI.enabled("restart-recovery")
    assert plugin.quota.enabled is False and s.allowed_failures == 3
    plugin.update_graph(s, annotations={P.ANN_MEMORY: {"x": 1000}}, tasks=["x"])
    assert ts.resource_restrictions is None


def _status_page(client) -> str:
    import urllib.request

    port = client.scheduler_info()["services"]["dashboard"]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=30) as r:
        return r.read().decode()


@pytest.mark.parametrize("contact_ok", [True, False])
def test_the_dashboard_links_the_mars_page_only_when_its_contact_checks_out(monkeypatch, contact_ok):
    """The Mars pages are in the dashboard's "More..." menu (registered at build time) and,
    when ``dashboard_pages`` checks out at plugin start, "Mars" is in its top bar; with the
    contact failed, the feature is off and the top bar is Dask's own."""
    from distributed import Client, LocalCluster

    from tests.conftest import MARS_PRELOADS

    if not contact_ok:
        _fail_contact(monkeypatch, "dashboard_pages")
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, memory_limit="2GiB",
                      dashboard_address="127.0.0.1:0", host="127.0.0.1", **MARS_PRELOADS) as cluster, \
            Client(cluster) as client:
        page = _status_page(client)
        assert DI.enabled("dashboard-pages") is contact_ok
        assert 'href="individual-mars-tileables"' in page and 'href="individual-mars-failover"' in page
        assert ('<a href="mars">Mars</a>' in page) is contact_ok
