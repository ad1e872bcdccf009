"""Every contact of mars_dask with a private part of distributed/dask, one named function each.

Why a room of its own: users upgrade Dask every month or two; each function below says what
it relies on and :func:`check` (run at plugin start: scheduler plugin ``start``, worker and
nanny plugin ``setup``) verifies each contact on the running version. A contact that fails
disables the features that need it, with ONE warning naming them (``logging`` on
``mars_dask.plugins`` and ``log_event`` on the scheduler when there is one) instead of an
AttributeError in the middle of a job; the tensor/DataFrame API keeps working. Checked on
distributed 2026.6.0, 2026.7.1 and 2026.8.0 (the supported range).

Public API is used where it exists and is not listed: plugin hooks, ``Worker.plugins`` /
``plugin_add``, ``Scheduler.set_restrictions``, ``log_event`` / ``subscribe_topic``,
``Server.handlers`` / ``stream_handlers`` (registration still goes through
:func:`register_handlers`, one place).

Contacts (before this module: about 30 kinds spread over 10 files, 75 code lines; now the
functions below. Call sites routed through them: ``plugins/_worker.py``, ``_nanny.py``,
``_scheduler.py``, ``spill/``, ``_reconnect.py``, ``_embedded.py``. NOT YET routed (the
functions exist and are checked, the call sites still touch distributed directly):
``plugins/_restart.py`` (add_to_processing, run_transitions, forget_unrunnable,
detach/attach_dependencies, get/put_restrictions) and ``plugins/_quota.py``
(set_resource_restriction, ``TaskState.run_spec``). "To move" files are listed after the table.)

=================================  ==================================================  ==========================
name                               touches (private part)                              feature that needs it
=================================  ==================================================  ==========================
hook_worker_close                  ``Worker.close`` shadowed per instance; reason      scheduler-loss-restart
                                   ``worker-handle-scheduler-connection-broken`` of
                                   ``Worker.handle_scheduler``
worker_is_running                  ``distributed.worker.WORKER_ANY_RUNNING``           scheduler-loss-restart
set_resource_before_registration   ``WorkerState.total_resources/available_resources`` quota
next_ready_tasks                   ``WorkerState.ready/constrained`` + HeapSet.peekn   store-read-ahead
worker_holding_store               ``Worker._instances``                               store-without-plugin
worker_process                     ``Nanny.process`` (WorkerProcess) ``.process``      restart-recovery
worker_process_address             ``WorkerProcess.worker_address`` (read)             restart-recovery
forget_worker_process_address      ``WorkerProcess.worker_address`` (cleared)          scheduler-loss-restart
worker_process_kwargs              ``WorkerProcess.worker_kwargs`` (reused per start)  scheduler-loss-restart, store
memory_terminated_pid              ``NannyMemoryManager._last_terminated_pid``         restart-recovery
register_handlers                  ``Server.handlers/stream_handlers`` (documented)    (all plugin RPCs)
add_worker_plugin_from_scheduler   ``Scheduler.register_worker_plugin(comm=None)``     (worker plugin install)
is_remove_worker_event             ``log_event("all", {"action": "remove-worker"})``   restart-recovery
                                   payload and its timing (before the transitions)
add_to_processing                  ``Scheduler._add_to_processing`` + ``send_all`` +    restart-recovery
                                   hand-fanned ``plugin.transition``
run_transitions                    ``Scheduler.transitions``                           restart-recovery
forget_unrunnable                  ``Scheduler.unrunnable``                            restart-recovery
detach_dependencies /              ``TaskState.dependencies/dependents/waiters/        restart-recovery
attach_dependencies                waiting_on`` edited
get_restrictions / put_restrictions ``TaskState.*_restrictions`` (host, resource,      restart-recovery, quota
                                   loose: no public setter)
future_cancel_reason               ``Future._state.exception.reason``                  client-reconnect
scheduler_n_workers                ``Client._scheduler_identity``                      client-reconnect
cluster_worker_status              ``Cluster._update_worker_status`` (overridden)      embedded-cluster-respawn
=================================  ==================================================  ==========================

To move (files owned by another change; they still touch distributed directly):
``plugins/_failover.py``: ``Scheduler._find_lost_dependencies`` (wrapped), the
``update-graph`` stream handler (wrapped), ``_materialize_graph``, ``Scheduler.update_data``
(wrapped, ``_orig_update_data``), ``TaskState.run_spec/dependencies/waiters`` edits,
``Scheduler.transitions``, ``remove-worker`` event payload; ``plugins/_journal.py``:
``TaskState.run_spec`` / ``Task`` internals when encoding recipes; ``plugins/_checkpoint.py``:
``get_worker().plugins`` (public) and the checkpoint stream ops.

Removed (no longer touched at all): ``sys._getframe`` + ``WorkerMemoryManager.__init__``'s
locals (the store is bound by the worker plugin, :meth:`MarsStore.bind`), ``Worker._pending_plugins``
(the store's fallback teardown goes into the public ``Worker.plugins``), the hidden
``Worker._mars_dask_state/_mars_dask_scheduler_lost/_mars_dask_close_hooked`` attributes
(state on plugin instances).
"""

from __future__ import annotations

import inspect
import logging

logger = logging.getLogger("mars_dask.plugins")

#: versions of distributed each contact was checked on
CHECKED_ON = ("2026.6.0", "2026.7.1", "2026.8.0")

#: the reason ``Worker.handle_scheduler`` closes the worker with when its scheduler stream ends
BROKEN_REASON = "worker-handle-scheduler-connection-broken"


# -- the self-check ------------------------------------------------------------------------
def _has(obj, *attrs) -> bool:
    return all(hasattr(obj, a) for a in attrs)


def _params(fn, *names) -> bool:
    try:
        ps = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return all(n in ps for n in names)


def _source_has(fn, text) -> bool:
    try:
        return text in inspect.getsource(fn)
    except (OSError, TypeError):
        return True  # no source (a frozen build): cannot tell, trust the range


def _probe_worker_close():
    from distributed.worker import Worker
    return (_params(Worker.close, "timeout", "executor_wait", "nanny", "reason")
            and _source_has(Worker.handle_scheduler, BROKEN_REASON))


def _probe_worker_running():
    import distributed.worker as w
    return hasattr(w, "WORKER_ANY_RUNNING")


def _probe_worker_state():
    from distributed.worker_state_machine import WorkerState
    return _has(WorkerState, "total_resources", "available_resources")


def _probe_ready_heaps():
    from distributed.collections import HeapSet
    from distributed.worker_state_machine import WorkerState
    return _has(WorkerState, "ready", "constrained") and _has(HeapSet, "peekn")


def _probe_worker_instances():
    from distributed.worker import Worker
    return hasattr(Worker, "_instances")


def _probe_worker_process():
    from distributed.nanny import Nanny, WorkerProcess
    return (_params(WorkerProcess.__init__, "worker_kwargs")
            and _source_has(WorkerProcess, "self.worker_address")
            and _source_has(WorkerProcess, "self.process") and _source_has(Nanny, "self.process"))


def _probe_memory_terminated():
    from distributed.worker_memory import NannyMemoryManager
    return _source_has(NannyMemoryManager, "_last_terminated_pid")


def _probe_handlers():
    from distributed.core import Server
    return _source_has(Server, "self.handlers") and _source_has(Server, "self.stream_handlers")


def _probe_register_worker_plugin():
    from distributed.scheduler import Scheduler
    return _params(Scheduler.register_worker_plugin, "comm", "plugin", "name", "idempotent")


def _probe_remove_worker_event():
    from distributed.scheduler import Scheduler
    return _source_has(Scheduler.remove_worker, '"remove-worker"')


def _probe_add_to_processing():
    from distributed.scheduler import Scheduler
    return (_params(getattr(Scheduler, "_add_to_processing", None), "ts", "ws", "stimulus_id")
            and _params(Scheduler.send_all, "client_msgs", "worker_msgs"))


def _probe_transitions():
    from distributed.scheduler import Scheduler
    return _params(Scheduler.transitions, "recommendations", "stimulus_id")


def _probe_unrunnable():
    from distributed.scheduler import SchedulerState
    return _source_has(SchedulerState, "self.unrunnable")


def _probe_task_edges():
    from distributed.scheduler import TaskState
    return _has(TaskState, "dependencies", "dependents", "waiters", "waiting_on", "who_has")


def _probe_restrictions():
    from distributed.scheduler import TaskState
    return _has(TaskState, "worker_restrictions", "host_restrictions", "resource_restrictions",
                "loose_restrictions", "run_spec")


def _probe_future_state():
    from distributed.client import Future, FutureState
    return _source_has(Future, "self._state") and _has(FutureState, "exception")


def _probe_scheduler_identity():
    from distributed.client import Client
    return _source_has(Client, "self._scheduler_identity")


def _probe_cluster_worker_status():
    from distributed.deploy.cluster import Cluster
    from distributed.deploy.spec import SpecCluster
    return (_params(getattr(Cluster, "_update_worker_status", None), "op", "msg")
            and _params(getattr(SpecCluster, "_update_worker_status", None), "op", "msg"))


#: contact name -> (probe, features that need it, role that checks it)
CONTACTS: dict = {
    "hook_worker_close": (_probe_worker_close, ("scheduler-loss-restart",), "worker"),
    "worker_is_running": (_probe_worker_running, ("scheduler-loss-restart",), "worker"),
    "set_resource_before_registration": (_probe_worker_state, ("quota",), "worker"),
    "next_ready_tasks": (_probe_ready_heaps, ("store-read-ahead",), "worker"),
    "worker_holding_store": (_probe_worker_instances, ("store-without-plugin",), "worker"),
    "worker_process": (_probe_worker_process, ("restart-recovery", "scheduler-loss-restart"), "nanny"),
    "memory_terminated_pid": (_probe_memory_terminated, ("restart-recovery",), "nanny"),
    "register_handlers": (_probe_handlers, ("plugins",), "any"),
    "add_worker_plugin_from_scheduler": (_probe_register_worker_plugin, ("plugins",), "scheduler"),
    "is_remove_worker_event": (_probe_remove_worker_event, ("restart-recovery",), "scheduler"),
    "add_to_processing": (_probe_add_to_processing, ("restart-recovery",), "scheduler"),
    "run_transitions": (_probe_transitions, ("restart-recovery",), "scheduler"),
    "forget_unrunnable": (_probe_unrunnable, ("restart-recovery",), "scheduler"),
    "task_edges": (_probe_task_edges, ("restart-recovery",), "scheduler"),
    "restrictions": (_probe_restrictions, ("restart-recovery", "quota"), "scheduler"),
    "future_cancel_reason": (_probe_future_state, ("client-reconnect",), "client"),
    "scheduler_n_workers": (_probe_scheduler_identity, ("client-reconnect",), "client"),
    "cluster_worker_status": (_probe_cluster_worker_status, ("embedded-cluster-respawn",), "client"),
}

#: feature -> failed contacts (filled by check())
_disabled: dict = {}
_checked: set = set()
_warned: set = set()


def check(role: str | None = None, server=None) -> dict:
    """Verify the contacts ``role`` ("scheduler", "worker", "nanny", "client"; None: all)
    uses on the running distributed. Returns ``{feature: [failed contacts]}`` for the
    features now disabled (empty when all is well); warns once per set of failures."""
    failed: dict = {}
    for name, (probe, features, who) in CONTACTS.items():
        if role is not None and who not in (role, "any"):
            continue
        try:
            ok = bool(probe())
        except Exception:  # noqa: BLE001 - a missing module or name is a failed contact
            ok = False
        if not ok:
            for f in features:
                failed.setdefault(f, []).append(name)
    for f, names in failed.items():
        _disabled[f] = sorted(set(_disabled.get(f, ())) | set(names))
    _checked.add(role)
    if failed:
        _warn(failed, server)
    return failed


def _warn(failed: dict, server) -> None:
    import distributed

    key = tuple(sorted(failed))
    text = ("mars_dask: distributed %s lacks internals mars_dask relies on; disabled: %s "
            "(checked on distributed %s; the tensor/DataFrame API keeps working)" % (
                distributed.__version__,
                "; ".join(f"{f} (needs {', '.join(n)})" for f, n in sorted(failed.items())),
                ", ".join(CHECKED_ON)))
    if key not in _warned:
        _warned.add(key)
        logger.warning(text)
    log_event = getattr(server, "log_event", None)
    if log_event is not None:
        try:
            log_event("mars-dask", {"action": "internals-check-failed", "disabled": dict(failed),
                                    "message": text})
        except Exception:  # noqa: BLE001,S110 - the warning above is the report
            pass


def enabled(feature: str) -> bool:
    """False once :func:`check` found a contact ``feature`` needs missing."""
    return feature not in _disabled


def disabled() -> dict:
    return dict(_disabled)


def _reset() -> None:  # tests
    _disabled.clear()
    _checked.clear()
    _warned.clear()


# -- worker ----------------------------------------------------------------------------------
def hook_worker_close(worker, make_close) -> None:
    """Shadow ``worker.close`` with ``make_close(original)`` (an instance attribute, so that
    ``Worker.handle_scheduler``'s ``self.close(reason=BROKEN_REASON)`` comes there); relies on
    that call and ``Worker.close(timeout, executor_wait, nanny, reason)``: 2026.6.0-2026.8.0."""
    worker.close = make_close(worker.close)


def is_scheduler_connection_broken(reason) -> bool:
    # relies on Worker.handle_scheduler's reason string (2026.6.0-2026.8.0)
    return reason == BROKEN_REASON


def worker_is_running(worker) -> bool:
    # relies on distributed.worker.WORKER_ANY_RUNNING (2026.6.0-2026.8.0)
    from distributed.worker import WORKER_ANY_RUNNING
    return worker.status in WORKER_ANY_RUNNING


def set_resource_before_registration(worker, name: str, amount) -> None:
    # relies on WorkerState.total_resources/available_resources travelling with registration (2026.6.0-2026.8.0)
    state = worker.state
    state.available_resources[name] = (
        state.available_resources.get(name, 0) + amount - state.total_resources.get(name, 0))
    state.total_resources[name] = amount


def next_ready_tasks(worker, n: int) -> list:
    # relies on WorkerState.ready/constrained being HeapSets with peekn (2026.6.0-2026.8.0)
    state = worker.state
    out: list = []
    for heap in (getattr(state, "ready", None), getattr(state, "constrained", None)):
        if heap:
            out.extend(heap.peekn(n))
    return out


def worker_holding_store(store):
    # relies on Worker._instances, the live Workers of this process (2026.6.0-2026.8.0)
    from distributed.worker import Worker
    for w in list(getattr(Worker, "_instances", ())):
        mm = getattr(w, "memory_manager", None)
        if mm is not None and getattr(mm, "data", None) is store:
            return w
    return None


# -- nanny -----------------------------------------------------------------------------------
def worker_process(nanny):
    # relies on Nanny.process (WorkerProcess) .process (AsyncProcess: pid, exitcode) (2026.6.0-2026.8.0)
    return getattr(getattr(nanny, "process", None), "process", None)


def worker_process_status(nanny):
    # relies on Nanny.process (WorkerProcess) .status (2026.6.0-2026.8.0)
    return getattr(getattr(nanny, "process", None), "status", None)


def worker_process_address(nanny):
    # relies on WorkerProcess.worker_address, set once the process registered (2026.6.0-2026.8.0)
    return getattr(getattr(nanny, "process", None), "worker_address", None)


def forget_worker_process_address(nanny):
    """Clear ``WorkerProcess.worker_address`` (so ``Nanny._on_worker_exit`` skips
    unregistering from a dead scheduler) and return what it was; relies on that check (2026.6.0-2026.8.0)."""
    wp = getattr(nanny, "process", None)
    addr = getattr(wp, "worker_address", None)
    if addr is not None:
        wp.worker_address = None
    return addr


def worker_process_kwargs(nanny) -> dict | None:
    # relies on WorkerProcess.worker_kwargs being reused for every process the nanny starts (2026.6.0-2026.8.0)
    kw = getattr(getattr(nanny, "process", None), "worker_kwargs", None)
    return kw if isinstance(kw, dict) else None


def memory_terminated_pid(nanny):
    # relies on NannyMemoryManager._last_terminated_pid (2026.6.0-2026.8.0)
    return getattr(getattr(nanny, "memory_manager", None), "_last_terminated_pid", None)


# -- scheduler / any server ------------------------------------------------------------------
def register_handlers(server, handlers: dict | None = None, stream_handlers: dict | None = None) -> None:
    # relies on Server.handlers/stream_handlers being looked up per message (documented for plugins)
    if handlers:
        server.handlers.update(handlers)
    if stream_handlers:
        server.stream_handlers.update(stream_handlers)


def unregister_handler(server, name: str, fn) -> None:
    # relies on Server.handlers (documented for plugins)
    if server.handlers.get(name) == fn:
        del server.handlers[name]


async def add_worker_plugin_from_scheduler(scheduler, plugin_bytes: bytes, name: str) -> None:
    # relies on the handler Scheduler.register_worker_plugin(comm, plugin, name, idempotent) (2026.6.0-2026.8.0)
    await scheduler.register_worker_plugin(comm=None, plugin=plugin_bytes, name=name, idempotent=True)


def is_remove_worker_event(topic, msg) -> bool:
    # relies on Scheduler.remove_worker logging {"action": "remove-worker"} on "all" before its transitions (2026.6.0-2026.8.0)
    return topic == "all" and isinstance(msg, dict) and msg.get("action") == "remove-worker"


def add_to_processing(scheduler, ts, ws, start: str, stimulus_id: str) -> dict:
    """Put ``ts`` in processing on ``ws`` as ``_transition_waiting_processing`` would, send
    its messages and tell the plugins; returns the recommendations. Relies on
    ``Scheduler._add_to_processing(ts, ws, stimulus_id)`` and ``send_all`` (2026.6.0-2026.8.0)."""
    recs, cmsgs, wmsgs = scheduler._add_to_processing(ts, ws, stimulus_id=stimulus_id)
    scheduler.send_all(cmsgs, wmsgs)
    for plugin in list(scheduler.plugins.values()):
        try:
            plugin.transition(ts.key, start, "processing", stimulus_id=stimulus_id)
        except Exception:  # pragma: no cover
            logger.exception("plugin failed on an adoption transition")
    return recs


def run_transitions(scheduler, recs: dict, stimulus_id: str) -> None:
    # relies on Scheduler.transitions(recommendations, stimulus_id) (2026.6.0-2026.8.0)
    scheduler.transitions(recs, stimulus_id=stimulus_id)


def forget_unrunnable(scheduler, ts) -> None:
    # relies on Scheduler.unrunnable, the dict of no-worker tasks (2026.6.0-2026.8.0)
    scheduler.unrunnable.pop(ts, None)


def detach_dependencies(ts, deps) -> None:
    # relies on TaskState.dependencies/dependents/waiters/waiting_on (2026.6.0-2026.8.0)
    for dts in deps:
        ts.dependencies.discard(dts)
        dts.dependents.discard(ts)
        if dts.waiters:
            dts.waiters.discard(ts)
    ts.waiting_on = set()


def attach_dependencies(ts, deps) -> None:
    # relies on TaskState.dependencies/dependents (2026.6.0-2026.8.0)
    for dts in deps:
        ts.dependencies.add(dts)
        dts.dependents.add(ts)


def get_restrictions(ts) -> tuple:
    # relies on TaskState.worker/host/resource/loose_restrictions (2026.6.0-2026.8.0)
    return (ts.worker_restrictions, ts.host_restrictions, ts.resource_restrictions, ts.loose_restrictions)


def put_restrictions(ts, saved: tuple) -> None:
    # relies on TaskState.*_restrictions being read at each decision (no public setter but workers) (2026.6.0-2026.8.0)
    ts.worker_restrictions, ts.host_restrictions, ts.resource_restrictions, ts.loose_restrictions = saved


def set_resource_restriction(ts, name: str, amount) -> None:
    # relies on TaskState.resource_restrictions (no public setter) (2026.6.0-2026.8.0)
    rr = dict(ts.resource_restrictions or {})
    rr[name] = amount
    ts.resource_restrictions = rr


# -- client ------------------------------------------------------------------------------------
def future_cancel_reason(future):
    # relies on Future._state.exception being the FutureCancelledError with its reason (2026.6.0-2026.8.0)
    exc = getattr(getattr(future, "_state", None), "exception", None)
    return getattr(exc, "reason", None)


def scheduler_n_workers(client) -> int:
    # relies on Client._scheduler_identity (the last identity seen) (2026.6.0-2026.8.0)
    return (getattr(client, "_scheduler_identity", None) or {}).get("n_workers") or 0


def cluster_worker_status(cluster, op, msg) -> None:
    # relies on Cluster._update_worker_status(op, msg), bypassing SpecCluster's timed close (2026.6.0-2026.8.0)
    from distributed.deploy.cluster import Cluster
    Cluster._update_worker_status(cluster, op, msg)
