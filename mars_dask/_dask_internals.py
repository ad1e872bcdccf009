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

Contacts. Before this module: about 30 kinds spread over 10 files, 75 code lines (the worker,
nanny, store, session side) plus 83 in the scheduler plugins (``_restart.py`` 29, ``_quota.py``
5, ``_failover.py`` 47, ``_checkpoint.py`` 2, ``_journal.py`` 0). Now: 41 checked contacts
(:data:`CONTACTS`, the rows below; a row with several names is one contact read and written)
served by 64 functions, and 0 code lines outside this module in ``plugins/`` (``_worker.py``,
``_nanny.py``, ``_scheduler.py``, ``_restart.py``, ``_quota.py``, ``_failover.py``,
``_checkpoint.py``, ``_journal.py``, ``_pages.py``), ``spill/``, ``_reconnect.py`` and ``_embedded.py``: every
call site goes through them. Graph building uses dask's task spec (``dask._task_spec``: a
private module although every Dask graph is made of it): ``tiling/emit.py``,
``tensor/datasource.py`` and ``dataframe/interop.py`` import ``Task``, ``TaskRef``,
``DataNode``, ``parse_input`` and ``convert_legacy_graph`` from here (re-exported below, checked
by ``make_task``'s probe). How the scheduler-plugin
lines were counted: the source with comments and docstrings removed (``tokenize``), grepped
for the private names and edits listed in the table (``_add_to_processing``,
``_find_lost_dependencies``, ``_materialize_graph``, ``_task_spec``, ``.send_all``,
``.unrunnable``, ``.queued``, ``.transitions(``, ``s.transition(``, ``plugin.transition(``,
``.stream_handlers``, ``.handlers[``, ``.register_worker_plugin(``, ``*_restrictions``,
``.run_spec``, ``.waiting_on``, ``.dependencies/.dependents/.waiters .add/.discard``,
``.add_dependency(``, ``.new_task(``, writes of ``.suspicious`` / ``.priority``,
``scheduler.allowed_failures``, ``.generation``, ``update_data``, ``"update-graph"``,
``expr_ser``, ``observe_tasks``, the ``remove-worker`` payload keys), ``DI.<name>`` calls
excepted. Reading documented ``TaskState`` / ``WorkerState`` fields (``state``, ``key``,
``who_has``, ``who_wants``, ``waiters``, ``dependencies``, ``dependents``, ``priority``,
``annotations``, ``processing_on``, ``suspicious``, ``nthreads``, ``status``) is public API
and not counted.

=================================  ==================================================  ==========================
name                               touches (private part)                              feature that needs it
=================================  ==================================================  ==========================
hook_worker_close                  ``Worker.close`` shadowed per instance; reason      scheduler-loss-restart
                                   ``worker-handle-scheduler-connection-broken`` of
                                   ``Worker.handle_scheduler``
worker_is_running                  ``distributed.worker.WORKER_ANY_RUNNING``           scheduler-loss-restart
set_resource_before_registration   ``WorkerState.total_resources/available_resources`` quota
next_ready_tasks                   ``WorkerState.ready/constrained`` + HeapSet.peekn   store-read-ahead
prune_worker_dependencies          ``Worker.handle_stimulus`` wrapped per instance;    failover-checkpoints
                                   worker task edges edited before a compute-task;
                                   ``WorkerState._transitions`` (released->forgotten)
worker_holding_store               ``Worker._instances``                               store-without-plugin
refuse_connections                 ``Worker.rpc.connect`` wrapped per instance (the    fail-fast-fetch
                                   pool gather_dep connects through)
worker_process                     ``Nanny.process`` (WorkerProcess) ``.process``      restart-recovery
worker_process_address             ``WorkerProcess.worker_address`` (read)             restart-recovery
forget_worker_process_address      ``WorkerProcess.worker_address`` (cleared)          scheduler-loss-restart
worker_process_kwargs              ``WorkerProcess.worker_kwargs`` (reused per start)  scheduler-loss-restart, store
memory_terminated_pid              ``NannyMemoryManager._last_terminated_pid``         restart-recovery
nanny_pre_spawn_env                ``Nanny.pre_spawn_env`` (and its WorkerProcess's),  worker-malloc
                                   updated before a process is spawned
forkserver_preload                 ``distributed.utils.get_mp_context`` (sets its      worker-forkserver
(in_worker_cli,                    forkserver preload once per process; read by
preload_forkserver)                ``WorkerProcess.start``); ``distributed.cli.
                                   dask_worker`` / ``dask_spec`` (a CLI process)
register_handlers                  ``Server.handlers/stream_handlers`` (documented)    (all plugin RPCs)
add_worker_plugin_from_scheduler   ``Scheduler.register_worker_plugin(comm=None)``     (worker and checkpoint
                                                                                       plugin install)
is_remove_worker_event             ``log_event("all", {"action": "remove-worker"})``   restart-recovery
                                   and its timing (before the transitions)
remove_worker_event_fields         that event's payload (``processing-tasks``,         restart-recovery,
                                   ``lost-computed-tasks``, ``lost-scattered-tasks``,  failover-recovery-plans
                                   ``expected``, ``worker``, ``stimulus_id``)
add_to_processing                  ``Scheduler._add_to_processing`` + ``send_all`` +    restart-recovery
                                   hand-fanned ``plugin.transition``
run_transitions                    ``Scheduler.transitions``                           restart-recovery
forget_unrunnable                  ``Scheduler.unrunnable``                            restart-recovery
detach_dependencies /              ``TaskState.dependencies/dependents/waiters/        restart-recovery
attach_dependencies                waiting_on`` edited (check: task_edges)
get_restrictions / put_restrictions ``TaskState.*_restrictions`` (host, resource,      restart-recovery, quota
                                   loose: no public setter; check: restrictions)
hold_to_worker                     public ``Scheduler.set_restrictions`` (checked to   restart-recovery
                                   set only ``worker_restrictions``, no transition)
                                   + ``TaskState.loose/host/resource_restrictions``
take_over_allowed_failures /       ``Scheduler.allowed_failures`` (read, raised out    restart-recovery
allowed_failures                   of reach of ``remove_worker``'s KilledWorker)
unsuspect                          ``TaskState.suspicious``, ``TaskPrefix.suspicious`` restart-recovery
set_priority /                     ``TaskState.priority`` written; the ``(first,       restart-recovery,
priority_in_generation             Scheduler.generation, 0)`` shape                    failover-journal-restore,
                                                                                       failover-checkpoints,
                                                                                       lineage-offload
fail_task                          ``Scheduler.transition(key, "erred", exception=     restart-recovery,
                                   pickled, cause)`` + ``transitions``                 no-workers-timeout
resource_restriction /             ``TaskState.resource_restrictions`` (read; written: quota
set_resource_restriction           no public setter; check: restrictions)
run_spec / set_run_spec            ``TaskState.run_spec`` (read; written when a        quota, failover-journal-restore,
                                   checkpoint cuts lineage)                            failover-checkpoints
wrap_find_lost_dependencies        ``Scheduler._find_lost_dependencies`` wrapped per   failover-journal-restore
                                   instance (called by ``update_graph``)
wrap_update_graph_handler /        the ``update-graph`` stream handler wrapped; its    failover-journal-restore
update_graph_expr                  ``expr_ser`` field
materialize_graph                  ``distributed.scheduler._materialize_graph``        failover-journal-restore,
                                                                                       lineage-offload
wrap_add_keys                      the ``add-keys`` stream handler wrapped              restart-recovery
                                   (``Scheduler.stream_handlers``, looked up per
                                   message)
wrap_update_data / update_data     ``Scheduler.update_data`` wrapped (instance         failover-scatter-checkpoint,
                                   attribute ``scatter`` calls + ``update_data``       failover-rejoin
                                   handler); called for rejoined keys
make_task / is_task_calling        ``dask._task_spec.Task(key, func, *args)``, .func   failover-checkpoints
cut_dependencies /                 ``TaskState.dependencies/dependents/waiters/        failover-checkpoints,
detach_dependents / add_dependency waiting_on`` edited; ``TaskState.add_dependency``   lineage-offload
new_released_task                  ``Scheduler.new_task(key, spec, "released")``       lineage-offload
observe_new_tasks                  spans extension ``observe_tasks``                   lineage-offload
prune_spans                        spans extension ``spans/root_spans/spans_search_by_ span-pruning
                                   name/_tag``; ``Span.children/groups/stop``;
                                   ``TaskGroup.states``
strip_message_logs                 ``BatchedSend.recent_message_log`` (a developers'   message-log-stripping
                                   log of sent batches) of ``Scheduler.stream_comms``
                                   / ``client_comms``
dashboard_pages                    ``distributed.dashboard.scheduler.applications``    dashboard-pages
(register_dashboard_pages,         (the dict ``connect`` serves) and ``template_
add_dashboard_nav_page,            variables(scheduler)`` (memoized: its ``pages``
use_dashboard_template,            list is the top bar); ``components.scheduler.env``
dashboard_theme)                   (``simple.html``) and ``BOKEH_THEME``
waiting_for_workers                ``Scheduler.unrunnable`` + ``Scheduler.queued``     no-workers-timeout
future_cancel_reason               ``Future._state.exception.reason``                  client-reconnect
scheduler_n_workers                ``Client._scheduler_identity``                      client-reconnect
cluster_worker_status              ``Cluster._update_worker_status`` (overridden)      embedded-cluster-respawn
=================================  ==================================================  ==========================

What a disabled feature means: restart-recovery (worker deaths are left to Dask: no holds,
adoption or blame; ``Scheduler.allowed_failures`` stays Dask's), quota (no resource
restrictions), failover-journal-restore (the ``_find_lost_dependencies`` and ``update-graph``
wrappers are not installed: a graph needing a forgotten key fails as in Dask),
failover-checkpoints (no checkpoint worker plugin, nothing cut), failover-scatter-checkpoint
(``update_data`` not wrapped), failover-rejoin (a restarted scheduler does not register the
rejoining workers' results), failover-recovery-plans (no recovery plans / ``worker-lost``
events), lineage-offload (off, as ``mars-dask.failover.offload-lineage: false``), span-pruning (Dask's
spans of finished graphs are kept for the scheduler's life, as in plain Dask),
dashboard-pages (no Mars pages on the dashboard; the JSON routes stay),
message-log-stripping (the scheduler's logs of recent messages keep the recipes, and the data
embedded in them, of the last ~1,000 batches sent to each worker, as in plain Dask),
no-workers-timeout (waiting work is not failed), worker-malloc (worker processes keep Dask's
``MALLOC_TRIM_THRESHOLD_`` alone), worker-forkserver (worker processes are spawned, Dask's
default), fail-fast-fetch (a worker fetching from a dead peer retries the refused connection
for ``distributed.comm.timeouts.connect``, as in plain Dask). ``plugins/_journal.py`` touches nothing of
distributed (the recipes it stores come from the functions above).

Removed (no longer touched at all): ``sys._getframe`` + ``WorkerMemoryManager.__init__``'s
locals (the store is bound by the worker plugin, :meth:`MarsStore.bind`), ``Worker._pending_plugins``
(the store's fallback teardown goes into the public ``Worker.plugins``), the hidden
``Worker._mars_dask_state/_mars_dask_scheduler_lost/_mars_dask_close_hooked`` attributes
(state on plugin instances).
"""

from __future__ import annotations

import functools
import inspect
import logging
import re
import sys
import weakref

# dask's task spec, what every graph is built of (relies on: dask._task_spec, private
# module, same names on 2026.6.0-2026.8.0)
from dask._task_spec import DataNode, Task, TaskRef, convert_legacy_graph, parse_input  # noqa: E402, F401

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


@functools.lru_cache(maxsize=None)
def _source_of(obj) -> str:
    """The source text of a function or class.  A class's is cut from its module's text
    (``inspect.getsource`` of a class parses the whole module: ``Scheduler``,
    ``SchedulerState`` and ``Client`` cost a second and a half per scheduler start)."""
    if not inspect.isclass(obj):
        return inspect.getsource(obj)
    lines = _module_lines(obj.__module__)
    head = re.compile(rf"class {re.escape(obj.__name__)}\b")
    top = re.compile(r"[A-Za-z_@]")  # a statement of the module level ends the class
    for i, line in enumerate(lines):
        if head.match(line):
            j = i + 1
            while j < len(lines) and not top.match(lines[j]):
                j += 1
            return "".join(lines[i:j])
    raise OSError(f"class {obj.__name__} not found in {obj.__module__}")


@functools.lru_cache(maxsize=None)
def _module_lines(name) -> list:
    return inspect.getsourcelines(sys.modules[name])[0]


def _source_has(fn, text) -> bool:
    try:
        return text in _source_of(fn)
    except (OSError, TypeError, KeyError):
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


def _probe_dependency_pruning():
    from distributed.worker import Worker
    from distributed.worker_state_machine import ComputeTaskEvent, FreeKeysEvent, TaskState, WorkerState
    return (_has(Worker, "handle_stimulus") and {"keys", "stimulus_id"} <= set(FreeKeysEvent.__dataclass_fields__)
            and _params(WorkerState._transitions, "recommendations", "stimulus_id")
            and {"who_has", "run_spec", "key"} <= set(ComputeTaskEvent.__dataclass_fields__)
            and {"dependencies", "dependents", "waiters", "waiting_for_data", "state"}
            <= set(TaskState.__dataclass_fields__))


def _probe_ready_heaps():
    from distributed.collections import HeapSet
    from distributed.worker_state_machine import WorkerState
    return _has(WorkerState, "ready", "constrained") and _has(HeapSet, "peekn")


def _probe_worker_instances():
    from distributed.worker import Worker
    return hasattr(Worker, "_instances")


def _probe_connection_pool():
    from distributed.core import ConnectionPool
    return _params(ConnectionPool.connect, "addr", "timeout") and _params(ConnectionPool.remove, "reason")


def _probe_worker_process():
    from distributed.nanny import Nanny, WorkerProcess
    return (_params(WorkerProcess.__init__, "worker_kwargs")
            and _source_has(WorkerProcess, "self.worker_address")
            and _source_has(WorkerProcess, "self.process") and _source_has(Nanny, "self.process"))


def _probe_pre_spawn_env():
    from distributed.nanny import Nanny, WorkerProcess
    return (_source_has(Nanny.__init__, "self.pre_spawn_env =")
            and _source_has(Nanny.instantiate, "pre_spawn_env=self.pre_spawn_env")
            and _source_has(WorkerProcess.start, "os.environ.update(self.pre_spawn_env)"))


def _probe_worker_start():
    import importlib.util

    from distributed import utils
    from distributed.nanny import WorkerProcess
    return (importlib.util.find_spec("distributed.cli.dask_worker") is not None
            and _source_has(utils.get_mp_context, "set_forkserver_preload")
            and _source_has(utils.get_mp_context, "_forkserver_preload_set")
            and _source_has(WorkerProcess.start, "get_mp_context()"))


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


def _probe_set_restrictions():
    from distributed.scheduler import Scheduler, TaskState
    return (_params(Scheduler.set_restrictions, "worker") and _has(TaskState, "loose_restrictions")
            and not _source_has(Scheduler.set_restrictions, "transition")
            and not _source_has(Scheduler.set_restrictions, "loose_restrictions"))


def _probe_run_spec():
    from distributed.scheduler import TaskState
    return _has(TaskState, "run_spec")


def _probe_allowed_failures():
    from distributed.scheduler import Scheduler
    return _source_has(Scheduler, "self.allowed_failures =") and _source_has(
        Scheduler.remove_worker, "self.allowed_failures")


def _probe_suspicious():
    from distributed.scheduler import TaskPrefix, TaskState
    return _has(TaskState, "suspicious", "prefix") and _source_has(TaskPrefix, "self.suspicious")


def _probe_priority():
    from distributed.scheduler import Scheduler, TaskState
    return _has(TaskState, "priority") and _source_has(Scheduler, "self.generation")


def _probe_fail_task():
    from distributed.scheduler import Scheduler, SchedulerState
    return (_params(Scheduler.transition, "key", "finish", "stimulus_id")
            and _source_has(SchedulerState._transition_no_worker_erred, "exception")
            and _probe_transitions())


def _probe_remove_worker_payload():
    from distributed.scheduler import Scheduler
    src = _source_of(Scheduler.remove_worker)
    return all(f'"{f}"' in src for f in ("processing-tasks", "lost-computed-tasks", "lost-scattered-tasks",
                                          "expected", "worker"))


def _probe_find_lost_dependencies():
    from distributed.scheduler import Scheduler
    return (_params(getattr(Scheduler, "_find_lost_dependencies", None), "dsk", "keys")
            and _source_has(Scheduler.update_graph, "self._find_lost_dependencies("))


def _probe_update_graph_handler():
    from distributed.scheduler import Scheduler
    return _source_has(Scheduler, '"update-graph": self.update_graph') and _params(
        Scheduler.update_graph, "expr_ser")


def _probe_materialize_graph():
    from distributed.scheduler import _materialize_graph
    return _params(_materialize_graph, "expr", "validate")


def _probe_add_keys():
    from distributed.scheduler import Scheduler

    return _source_has(Scheduler.__init__, '"add-keys": self.add_keys') and _params(Scheduler.add_keys, "worker", "keys", "stimulus_id")


def _probe_update_data():
    from distributed.scheduler import Scheduler
    return (_params(Scheduler.update_data, "who_has", "nbytes", "client")
            and _source_has(Scheduler.scatter, "self.update_data(")
            and _source_has(Scheduler, '"update_data": self.update_data'))


def _probe_task_spec():
    return _has(Task, "func")


def _probe_new_task():
    from distributed.scheduler import Scheduler, TaskState
    return (_params(Scheduler.new_task, "key", "spec", "state") and _has(TaskState, "add_dependency")
            and _probe_task_edges())


def _probe_spans():
    from distributed.spans import SpansSchedulerExtension
    return _params(SpansSchedulerExtension.observe_tasks, "tss", "code", "span_metadata")


def _probe_span_registry():
    from distributed.spans import Span, SpansSchedulerExtension
    init = SpansSchedulerExtension.__init__
    return (all(_source_has(init, f"self.{a} =") for a in ("spans", "root_spans", "spans_search_by_name",
                                                           "spans_search_by_tag"))
            and {"children", "groups"} <= set(Span.__slots__) and isinstance(getattr(Span, "stop", None), property)
            and _source_has(SpansSchedulerExtension.heartbeat, "self.spans[span_id]")
            and _probe_task_group_states()
            and _params(Span.__init__, "name", "id_", "parent", "total_nthreads_history"))


def _probe_task_group_states():
    from distributed.scheduler import TaskGroup, TaskPrefix
    states = TaskGroup("x", TaskPrefix("x")).states
    return isinstance(states, dict) and "forgotten" in states and "memory" in states


def _probe_message_logs():
    from distributed.batched import BatchedSend
    from distributed.scheduler import Scheduler
    return (_source_has(BatchedSend.__init__, "self.recent_message_log = deque(")
            and _source_has(BatchedSend._background_send, "self.recent_message_log.append(payload)")
            and _source_has(Scheduler.__init__, "self.stream_comms = {}")
            and _source_has(Scheduler.__init__, "self.client_comms = {}"))


def _probe_dashboard():
    import sys
    if "distributed.dashboard.scheduler" not in sys.modules:
        return True  # no dashboard in this process: nothing to contact
    from distributed.dashboard import scheduler as ds
    from distributed.dashboard.components import scheduler as comps
    return (isinstance(ds.applications, dict) and _source_has(ds.connect, "applications,")
            and _source_has(ds.template_variables, '"pages": [')
            and _source_has(ds.template_variables, 'if "individual" in x')
            and hasattr(comps.env, "get_template") and hasattr(comps, "BOKEH_THEME"))


def _probe_waiting_for_workers():
    from distributed.scheduler import SchedulerState
    return (_source_has(SchedulerState, "self.unrunnable") and _source_has(SchedulerState, "self.queued")
            and _probe_fail_task())


#: contact name -> (probe, features that need it, role that checks it)
CONTACTS: dict = {
    "hook_worker_close": (_probe_worker_close, ("scheduler-loss-restart",), "worker"),
    "worker_is_running": (_probe_worker_running, ("scheduler-loss-restart",), "worker"),
    "set_resource_before_registration": (_probe_worker_state, ("quota",), "worker"),
    "next_ready_tasks": (_probe_ready_heaps, ("store-read-ahead",), "worker"),
    "prune_worker_dependencies": (_probe_dependency_pruning, ("failover-checkpoints",), "worker"),
    "worker_holding_store": (_probe_worker_instances, ("store-without-plugin",), "worker"),
    "refuse_connections": (_probe_connection_pool, ("fail-fast-fetch",), "worker"),
    "worker_process": (_probe_worker_process, ("restart-recovery", "scheduler-loss-restart"), "nanny"),
    "memory_terminated_pid": (_probe_memory_terminated, ("restart-recovery",), "nanny"),
    "nanny_pre_spawn_env": (_probe_pre_spawn_env, ("worker-malloc",), "nanny"),
    "forkserver_preload": (_probe_worker_start, ("worker-forkserver",), "nanny"),
    "register_handlers": (_probe_handlers, ("plugins",), "any"),
    "add_worker_plugin_from_scheduler": (_probe_register_worker_plugin, ("plugins",), "scheduler"),
    "is_remove_worker_event": (_probe_remove_worker_event, ("restart-recovery",), "scheduler"),
    "add_to_processing": (_probe_add_to_processing, ("restart-recovery",), "scheduler"),
    "run_transitions": (_probe_transitions, ("restart-recovery",), "scheduler"),
    "forget_unrunnable": (_probe_unrunnable, ("restart-recovery",), "scheduler"),
    "task_edges": (_probe_task_edges, ("restart-recovery",), "scheduler"),
    "restrictions": (_probe_restrictions, ("restart-recovery", "quota"), "scheduler"),
    "hold_to_worker": (_probe_set_restrictions, ("restart-recovery",), "scheduler"),
    "take_over_allowed_failures": (_probe_allowed_failures, ("restart-recovery",), "scheduler"),
    "unsuspect": (_probe_suspicious, ("restart-recovery",), "scheduler"),
    "set_priority": (_probe_priority, ("restart-recovery", "failover-journal-restore",
                                       "failover-checkpoints", "lineage-offload"), "scheduler"),
    "fail_task": (_probe_fail_task, ("restart-recovery",), "scheduler"),
    "remove_worker_event_fields": (_probe_remove_worker_payload, ("restart-recovery", "failover-recovery-plans"),
                                   "scheduler"),
    "run_spec": (_probe_run_spec, ("quota", "failover-journal-restore", "failover-checkpoints"), "scheduler"),
    "wrap_find_lost_dependencies": (_probe_find_lost_dependencies, ("failover-journal-restore",), "scheduler"),
    "wrap_update_graph_handler": (_probe_update_graph_handler, ("failover-journal-restore",), "scheduler"),
    "materialize_graph": (_probe_materialize_graph, ("failover-journal-restore", "lineage-offload"), "scheduler"),
    "wrap_add_keys": (_probe_add_keys, ("restart-recovery",), "scheduler"),
    "wrap_update_data": (_probe_update_data, ("failover-scatter-checkpoint", "failover-rejoin"), "scheduler"),
    "make_task": (_probe_task_spec, ("failover-checkpoints",), "any"),
    "cut_dependencies": (_probe_task_edges, ("failover-checkpoints", "lineage-offload"), "scheduler"),
    "new_released_task": (_probe_new_task, ("lineage-offload",), "scheduler"),
    "observe_new_tasks": (_probe_spans, ("lineage-offload",), "scheduler"),
    "prune_spans": (_probe_span_registry, ("span-pruning",), "scheduler"),
    "strip_message_logs": (_probe_message_logs, ("message-log-stripping",), "scheduler"),
    "dashboard_pages": (_probe_dashboard, ("dashboard-pages",), "scheduler"),
    "waiting_for_workers": (_probe_waiting_for_workers, ("no-workers-timeout",), "scheduler"),
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
#: worker task states in which a ``compute-task`` (re)links the key's dependencies
#: (``WorkerState._handle_compute_task``, distributed 2026.6.0-2026.8.0); executing ones
#: ("cancelled", "resumed") keep theirs: their run is under way
_RELINKED = frozenset({"released", "error", "fetch", "flight", "missing"})
#: states of a dependency left unused by a pruning that the pruning lets go of (in memory it
#: is the scheduler's to release)
_UNUSED_STATES = frozenset({"released", "fetch", "flight", "missing"})


def _prune_dependencies(state, ev) -> list:
    """Before ``ev`` (a ``ComputeTaskEvent``) is handled: drop the dependencies the worker
    recorded for ``ev.key`` that neither ``ev`` names nor its recipe reads (the key's recipe
    changed: a checkpoint; see the module docstring). Returns those no other task of the
    worker needs any more (to be forgotten)."""
    ts = state.tasks.get(ev.key)
    if ts is None or not ts.dependencies or ts.state not in _RELINKED:
        return []
    needed = getattr(ev.run_spec, "dependencies", None)  # the keys the new recipe reads
    if needed is None:
        return []
    named = ev.who_has
    unused = []
    for dts in [d for d in ts.dependencies if d.key not in named and d.key not in needed]:
        ts.dependencies.discard(dts)
        ts.waiting_for_data.discard(dts)
        dts.dependents.discard(ts)
        dts.waiters.discard(ts)
        if not dts.dependents:
            unused.append(dts)
    return unused


def install_dependency_pruning(worker) -> None:
    """Make each ``compute-task`` authoritative about its key's dependencies on ``worker``:
    the ones the worker recorded that the message does not name and the new recipe does not
    read are dropped before Dask handles it, and those left unused are forgotten (why: a
    checkpoint changes a key's recipe, which Dask never does: ``plugins/_checkpoint.py``).
    Wraps ``worker.handle_stimulus`` (an instance attribute: every event reaches the
    ``WorkerState`` through it) and relies on ``WorkerState.tasks`` / ``_transitions``,
    ``ComputeTaskEvent.who_has`` / ``run_spec``, ``FreeKeysEvent`` and the task states'
    edges (``dependencies``, ``dependents``, ``waiters``, ``waiting_for_data``):
    2026.6.0-2026.8.0. Installing twice is harmless."""
    from distributed.worker_state_machine import ComputeTaskEvent, FreeKeysEvent

    orig = worker.handle_stimulus
    if getattr(orig, "_mars_prunes", False):
        return
    state = worker.state

    def handle_stimulus(*stims):
        unused = []
        for ev in stims:
            if isinstance(ev, ComputeTaskEvent):
                unused += _prune_dependencies(state, ev)
        orig(*stims)
        # let go of them the way the scheduler's "free-keys" does (through the worker's own
        # handle_stimulus, so that whatever instructions follow are carried out)
        forget = [d for d in unused if d.state in _UNUSED_STATES and not d.dependents and not d.waiters
                  and state.tasks.get(d.key) is d]
        sid = f"mars-checkpoint-prune-{stims[-1].stimulus_id}"
        released = {d: "forgotten" for d in forget if d.state == "released"}
        if released:  # ("free-keys" leaves a released key be; forgetting one instructs nothing)
            state._transitions(released, stimulus_id=sid)
        others = [d.key for d in forget if d not in released]
        if others:
            orig(FreeKeysEvent(keys=others, stimulus_id=sid))

    handle_stimulus._mars_prunes = True
    worker.handle_stimulus = handle_stimulus


def uninstall_dependency_pruning(worker) -> None:
    if getattr(worker.__dict__.get("handle_stimulus"), "_mars_prunes", False):
        del worker.handle_stimulus  # the class's method again


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


def refuse_connections(worker, gone: dict) -> None:
    """Make ``worker``'s new connections to an address in ``gone`` (address -> monotonic
    deadline; the caller's record of peers the scheduler saw die) fail at once, until its
    deadline: an OSError (``CommClosedError``) that ``gather_dep`` handles as the peer gone
    (Dask's own handling: the inputs are asked of other holders, or of the scheduler),
    instead of ``distributed.comm.core.connect`` retrying the refused connection for
    ``distributed.comm.timeouts.connect``. Wraps ``worker.rpc.connect`` on the instance
    (relies on ``Worker.rpc`` being the ConnectionPool ``get_data_from_worker`` connects
    through, and on ``ConnectionPool.connect`` being looked up on the instance)
    (2026.6.0-2026.8.0)."""
    import time

    from distributed.comm.core import CommClosedError

    pool = worker.rpc
    real = pool.connect

    async def connect(addr, timeout=None):
        until = gone.get(addr)
        if until is not None:
            if time.monotonic() < until:
                raise CommClosedError(f"mars_dask: the scheduler saw {addr} die")
            gone.pop(addr, None)
        return await real(addr, timeout=timeout)

    pool.connect = connect


def fail_connections_to(worker, address: str) -> None:
    """Fail the connections ``worker`` is making to ``address`` now (public:
    ``ConnectionPool.remove`` cancels them with ``CommClosedError(reason)``) and close those
    it has."""
    worker.rpc.remove(address, reason=f"mars_dask: the scheduler saw {address} die")


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


def set_pre_spawn_env(nanny, env: dict) -> None:
    # relies on Nanny.pre_spawn_env being handed to each new WorkerProcess, which puts it in
    # os.environ just before spawning (2026.6.0-2026.8.0); a running nanny's process keeps its own copy
    nanny.pre_spawn_env.update(env)
    proc = getattr(nanny, "process", None)
    if isinstance(getattr(proc, "pre_spawn_env", None), dict):
        proc.pre_spawn_env.update(env)


def in_worker_cli() -> bool:
    """Whether this process is a ``dask worker`` (or ``dask spec``) CLI process: relies on
    those commands being loaded from ``distributed.cli.*`` (2026.6.0-2026.8.0)."""
    main = getattr(sys.modules.get("__main__"), "__spec__", None)
    names = {"distributed.cli.dask_worker", "distributed.cli.dask_spec"}
    return any(n in sys.modules for n in names) or getattr(main, "name", None) in names


def preload_forkserver(modules) -> list:
    """Have the forkserver that will start this process's worker processes import
    ``modules`` (after distributed's own list) when it starts. Relies on
    ``distributed.utils.get_mp_context`` setting its forkserver preload list once per process
    (``_forkserver_preload_set``) and on ``WorkerProcess.start`` getting its context from it
    (2026.6.0-2026.8.0): called after that first set, ours is the list the forkserver reads
    when the first worker process starts. Returns the list set."""
    import multiprocessing

    from distributed.utils import get_mp_context

    get_mp_context()  # distributed's one-time set_forkserver_preload (needs the method configured)
    preload = list(dict.fromkeys(["distributed", *modules]))
    multiprocessing.get_context("forkserver").set_forkserver_preload(preload)
    return preload


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


def hold_to_worker(scheduler, ts, address: str, *, only: bool = False) -> None:
    """Restrict ``ts`` to the worker ``address``, not loosely (``only``: and drop its host and
    resource restrictions). The worker part goes through the public
    ``Scheduler.set_restrictions`` (as distributed/shuffle does); relies on it setting only
    ``worker_restrictions`` (no transition, ``loose_restrictions`` untouched: checked) and on
    ``TaskState.loose/host/resource_restrictions`` (no public setter) being read at each
    decision (2026.6.0-2026.8.0)."""
    set_restrictions = getattr(scheduler, "set_restrictions", None)
    if set_restrictions is not None:
        set_restrictions(worker={ts.key: {address}})
    else:  # a stand-in scheduler without the method (tests/failover/test_restart_holds.py)
        ts.worker_restrictions = {address}
    if only:
        ts.host_restrictions = None
        ts.resource_restrictions = None
    ts.loose_restrictions = False


def resource_restriction(ts, name: str):
    # relies on TaskState.resource_restrictions (2026.6.0-2026.8.0)
    return (ts.resource_restrictions or {}).get(name)


def set_resource_restriction(ts, name: str, amount) -> None:
    # relies on TaskState.resource_restrictions being read at each decision (no public setter) (2026.6.0-2026.8.0)
    rr = dict(ts.resource_restrictions or {})
    rr[name] = amount
    ts.resource_restrictions = rr


def allowed_failures(scheduler) -> int:
    # relies on Scheduler.allowed_failures (distributed.scheduler.allowed-failures) (2026.6.0-2026.8.0)
    return scheduler.allowed_failures


def take_over_allowed_failures(scheduler, value: int = 2**31) -> int:
    """Set ``Scheduler.allowed_failures`` (Dask's KilledWorker verdict in ``remove_worker``
    runs before any hook: raised out of reach, the plugin decides) and return what it was;
    relies on SchedulerState.allowed_failures being read at each death (2026.6.0-2026.8.0)."""
    before = scheduler.allowed_failures
    scheduler.allowed_failures = value
    return before


def unsuspect(ts) -> None:
    # relies on TaskState.suspicious and TaskPrefix.suspicious counting deaths (2026.6.0-2026.8.0)
    if ts.suspicious > 0:
        ts.suspicious -= 1
        ts.prefix.suspicious = max(0, ts.prefix.suspicious - 1)


def set_priority(ts, priority: tuple) -> None:
    # relies on TaskState.priority being read when the task is next scheduled (2026.6.0-2026.8.0)
    ts.priority = priority


def priority_in_generation(scheduler, first) -> tuple:
    # relies on the (first, SchedulerState.generation, position) shape of priorities (2026.6.0-2026.8.0)
    return (first, scheduler.generation, 0)


def fail_task(scheduler, key, exc, stimulus_id: str) -> None:
    """Fail ``key`` (no-worker or queued) with ``exc``: relies on
    ``Scheduler.transition(key, "erred", exception=pickled, cause)`` and ``transitions``
    (2026.6.0-2026.8.0)."""
    import pickle

    recs = scheduler.transition(key, "erred", exception=pickle.dumps(exc), cause=key, stimulus_id=stimulus_id)
    scheduler.transitions(recs, stimulus_id=stimulus_id)


def remove_worker_event_fields(msg: dict) -> dict:
    """The fields of a ``remove-worker`` event (see :func:`is_remove_worker_event`):
    ``worker``, ``expected``, ``stimulus_id``, ``processing``, ``lost`` (computed results),
    ``scattered`` (lists); relies on that undocumented payload (2026.6.0-2026.8.0)."""
    return {"worker": msg.get("worker"), "expected": msg.get("expected"),
            "stimulus_id": msg.get("stimulus_id"),
            "processing": list(msg.get("processing-tasks") or ()),
            "lost": list(msg.get("lost-computed-tasks") or ()),
            "scattered": list(msg.get("lost-scattered-tasks") or ())}


def run_spec(ts):
    # relies on TaskState.run_spec (a dask Task/DataNode since 2024.12; None: no recipe) (2026.6.0-2026.8.0)
    return ts.run_spec


def set_run_spec(ts, spec) -> None:
    # relies on TaskState.run_spec being read when the task is sent to a worker (2026.6.0-2026.8.0)
    ts.run_spec = spec


def cut_dependencies(ts) -> list:
    """Detach ``ts`` from all its dependencies (also from their waiters and its
    waiting_on) and return them; relies on TaskState.dependencies/dependents/waiters/
    waiting_on (2026.6.0-2026.8.0)."""
    deps = list(ts.dependencies)
    for dts in deps:
        ts.dependencies.discard(dts)
        dts.dependents.discard(ts)
        if dts.waiters:
            dts.waiters.discard(ts)
        if ts.waiting_on:
            ts.waiting_on.discard(dts)
    return deps


def detach_dependents(ts) -> list:
    # relies on TaskState.dependencies/dependents (2026.6.0-2026.8.0)
    dependents = ts.dependents
    out = list(dependents)
    for d in out:
        d.dependencies.discard(ts)
        dependents.discard(d)
    return out


def add_dependency(ts, dts) -> None:
    # relies on TaskState.add_dependency (2026.6.0-2026.8.0)
    if dts not in ts.dependencies:
        ts.add_dependency(dts)


def new_released_task(scheduler, key, spec, priority: tuple, dependencies=()):
    """A new released task ``key`` with ``spec`` and ``priority`` depending on the keys
    ``dependencies`` (all in ``scheduler.tasks``); relies on ``Scheduler.new_task(key, spec,
    state)`` and ``TaskState.add_dependency`` (2026.6.0-2026.8.0)."""
    ts = scheduler.new_task(key, spec, "released")
    ts.priority = priority
    for d in dependencies:
        ts.add_dependency(scheduler.tasks[d])
    return ts


def observe_new_tasks(scheduler, tss) -> None:
    # relies on the spans extension's observe_tasks(tss, code, span_metadata) (2026.6.0-2026.8.0)
    spans = scheduler.extensions.get("spans")
    if spans is not None and tss:
        spans.observe_tasks(tss, code=(), span_metadata={})


_tombs: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _pruned_span(ext):
    tomb = _tombs.get(ext)
    if tomb is None:
        from distributed.spans import Span

        tomb = _tombs[ext] = Span(("mars-dask-pruned",), "mars-dask-pruned", None,
                                  ext.scheduler.total_nthreads_history)
    return tomb


def prune_spans(scheduler, keep: int, min_age: float) -> int:
    """Forget the span trees of finished graphs, all but the newest ``keep`` root spans:
    those whose task groups hold no task any more (all forgotten) and that stopped more than ``min_age``
    seconds ago (a worker's heartbeat may still report metrics for a span it ran; Dask
    looks the span up by id). Dask keeps every span, and through it every TaskGroup, for
    the scheduler's life: one per graph submitted without a span, so a loop of small
    ``execute()`` calls grew the scheduler by ~5 KiB per call. Returns how many spans went.
    Relies on the spans extension's ``spans``, ``root_spans``, ``spans_search_by_name``,
    ``spans_search_by_tag``, ``Span.children/groups/stop`` and ``TaskGroup.states``, and
    the ``Span(name, id_, parent, total_nthreads_history)`` constructor (2026.6.0-2026.8.0)."""
    ext = scheduler.extensions.get("spans")
    if ext is None or len(ext.root_spans) <= keep:
        return 0
    from time import time

    roots = ext.root_spans
    old, newest = roots[:len(roots) - keep], roots[len(roots) - keep:]
    now = time()
    drop: set = set()
    kept = []
    for sp in old:
        tree = list(sp.traverse_spans())
        if (not any(n for t in tree for tg in t.groups for st, n in tg.states.items() if st != "forgotten")
                and now - sp.stop > min_age):
            drop.update(t.id for t in tree)
        else:
            kept.append(sp)
    if not drop:
        return 0
    roots[:] = kept + newest
    # Each id stays, mapped to one shared stand-in span outside every index: a late
    # heartbeat (a worker cut off for longer than min_age) adds its metrics there instead of
    # failing on a missing id (which stalls that worker's heartbeats). ~120 bytes a graph.
    tomb = _pruned_span(ext)
    for i in drop:
        ext.spans[i] = tomb
    for index in (ext.spans_search_by_name, ext.spans_search_by_tag):
        for k in list(index):
            left = [t for t in index[k] if t.id not in drop]
            if left:
                index[k][:] = left
            else:
                del index[k]
    return len(drop)


#: what :func:`strip_message_logs` keeps of each logged message: enough to read what was sent
_LOGGED_FIELDS = frozenset({"op", "key", "keys", "stimulus_id", "run_id", "worker", "status"})


def strip_message_logs(scheduler) -> int:
    """Strip the scheduler's logs of recent messages down to their ops and keys; returns
    how many messages were stripped. Each ``BatchedSend`` keeps its last
    ``distributed.admin.low-level-log-length`` batches (1,000; each under 1 MB) for
    debugging, and a ``compute-task`` message holds its task's recipe: after a job that
    embedded 320 MB of numpy data in its graph was dropped, the scheduler kept 136 MiB of
    it alive through these logs (RSS 267 -> 131 MiB once stripped), and a 20,000-chunk job's
    recipes pinned ~12 MB of small objects across the heap. What stays (``op``, ``key``,
    ``stimulus_id``, ...) is what a developer reads them for. Relies on
    ``BatchedSend.recent_message_log`` (a deque of the payloads sent: lists of message
    dicts, or the string ``"large-message"``) and ``Scheduler.stream_comms`` /
    ``client_comms`` (dicts of BatchedSend) (2026.6.0-2026.8.0)."""
    n = 0
    for bcomm in [*scheduler.stream_comms.values(), *scheduler.client_comms.values()]:
        log = getattr(bcomm, "recent_message_log", None)
        if not log:
            continue
        kept = []
        for payload in log:
            if isinstance(payload, list):
                stripped = []
                for msg in payload:
                    if isinstance(msg, dict) and not msg.keys() <= _LOGGED_FIELDS:
                        msg = {k: v for k, v in msg.items() if k in _LOGGED_FIELDS}
                        n += 1
                    stripped.append(msg)
                payload = stripped
            kept.append(payload)
        log.clear()
        log.extend(kept)  # the same deque (its maxlen) stays in place
    return n


def waiting_for_workers(scheduler) -> list:
    # relies on Scheduler.unrunnable (no-worker) and Scheduler.queued (2026.6.0-2026.8.0)
    return [ts.key for ts in list(scheduler.unrunnable)] + [ts.key for ts in list(scheduler.queued)]


# -- scheduler: failover wrappers --------------------------------------------------------------
def wrap_find_lost_dependencies(scheduler, wrapper):
    """Install ``wrapper(dsk, keys)`` as the instance's ``_find_lost_dependencies`` and
    return the original; relies on ``Scheduler.update_graph`` calling
    ``self._find_lost_dependencies(dsk, keys)`` before it compares the graph with its tasks
    (2026.6.0-2026.8.0)."""
    original = scheduler._find_lost_dependencies
    scheduler._find_lost_dependencies = wrapper
    return original


def wrap_update_graph_handler(scheduler, wrapper):
    """Install ``wrapper(**msg)`` as the ``update-graph`` stream handler and return the
    original; relies on that handler name and its message (see :func:`update_graph_expr`)
    (2026.6.0-2026.8.0)."""
    original = scheduler.stream_handlers["update-graph"]
    scheduler.stream_handlers["update-graph"] = wrapper
    return original


def update_graph_expr(msg: dict):
    # relies on the update-graph message's serialized graph "expr_ser" (header, frames) (2026.6.0-2026.8.0)
    return msg.get("expr_ser")


def materialize_graph(header, frames) -> dict:
    # relies on distributed.scheduler._materialize_graph(expr, validate) -> (dsk, annotations) (2026.6.0-2026.8.0)
    from distributed.protocol import deserialize
    from distributed.scheduler import _materialize_graph

    dsk, _ = _materialize_graph(deserialize(header, frames), validate=False)
    return dsk


def wrap_add_keys(scheduler, wrapper):
    """Install ``wrapper(worker=, keys=, stimulus_id=)`` as the scheduler's ``add-keys``
    stream handler (a worker telling it of values it holds: scattered to it, or put there
    by ``Worker.update_data``); returns the original. Relies on the handler's name and
    signature (2026.6.0-2026.8.0)."""
    original = scheduler.stream_handlers["add-keys"]
    scheduler.stream_handlers["add-keys"] = wrapper
    return original


def wrap_update_data(scheduler, wrapper):
    """Install ``wrapper(*, who_has, nbytes, client)`` as ``Scheduler.update_data`` (the
    instance attribute ``Scheduler.scatter`` calls) and as the ``update_data`` handler;
    returns the original. Relies on both calling sites (2026.6.0-2026.8.0)."""
    original = scheduler.update_data
    scheduler.update_data = wrapper
    scheduler.handlers["update_data"] = wrapper
    return original


def update_data(scheduler, who_has: dict, nbytes: dict, client, original=None) -> None:
    # relies on Scheduler.update_data(who_has, nbytes, client) registering data as in memory (2026.6.0-2026.8.0)
    (original or scheduler.update_data)(who_has=who_has, nbytes=nbytes, client=client)


# -- dask task specs -------------------------------------------------------------------------
@functools.cache
def _task_class():
    return Task


def make_task(key, func, *args):
    # relies on dask._task_spec.Task(key, func, *args) (2026.6.0-2026.8.0)
    return _task_class()(key, func, *args)


def is_task_calling(spec, func) -> bool:
    # relies on dask._task_spec.Task.func (2026.6.0-2026.8.0)
    return isinstance(spec, _task_class()) and spec.func is func


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


# -- dashboard -------------------------------------------------------------------------------
def register_dashboard_pages(applications: dict) -> bool:
    """Add bokeh application functions (``url -> fn(scheduler, extra, doc)``) to the pages
    every scheduler built from now on in this process serves: ``distributed.dashboard.
    scheduler.applications``, the module dict ``connect`` hands to its ``BokehApplication``
    (how distributed registers its own pages). ``individual-*`` urls are listed by
    ``template_variables`` (the "More..." menu) and ``/individual-plots.json``. Returns False
    where distributed has no dashboard (bokeh missing or refused: the import fails)
    (2026.6.0-2026.8.0)."""
    try:
        from distributed.dashboard import scheduler as ds
    except ImportError:
        return False
    if not isinstance(getattr(ds, "applications", None), dict):
        return False
    for url, fn in applications.items():
        ds.applications.setdefault(url, fn)
    return True


def add_dashboard_nav_page(scheduler, page: str) -> bool:
    """Link ``page`` in the top bar of ``scheduler``'s dashboard: ``template_variables`` is
    memoized per scheduler and ``connect`` passed its ``pages`` list (the same list object)
    to every page's template, so appending to it after ``connect`` shows on every page
    rendered from then on. Called at plugin start (after ``connect``); a scheduler without a
    dashboard is left alone (2026.6.0-2026.8.0)."""
    import sys
    ds = sys.modules.get("distributed.dashboard.scheduler")
    if ds is None or getattr(scheduler, "http_application", None) is None:
        return False
    if "/" + page not in ds.applications:  # (not registered: this scheduler does not serve it)
        return False
    pages = ds.template_variables(scheduler).get("pages")
    if not isinstance(pages, list):
        return False
    if page not in pages:
        pages.append(page)
    return True


def dashboard_theme():
    """Dask's bokeh theme for the dashboard's pages (``components.scheduler.BOKEH_THEME``)."""
    try:
        from distributed.dashboard.components.scheduler import BOKEH_THEME
    except ImportError:
        return None
    return BOKEH_THEME


def use_dashboard_template(doc, extra: dict) -> None:
    """Render ``doc`` inside the dashboard's page template (``simple.html`` of
    ``components.scheduler.env``: the top bar and "More..." menu), as Dask's full pages
    do."""
    from distributed.dashboard.components.scheduler import BOKEH_THEME, env
    doc.template = env.get_template("simple.html")
    doc.template_variables.update(extra)
    doc.theme = BOKEH_THEME
