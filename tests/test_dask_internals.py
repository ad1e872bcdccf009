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
