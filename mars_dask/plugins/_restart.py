"""What the scheduler does when a worker process dies: hold, adopt, blame, recompute.

Dask's ``Scheduler.remove_worker`` releases every result the worker held and every task it
was processing, in one synchronous pass of transitions, and then tells plugins. What runs
*before* those transitions is ``log_event("all", {"action": "remove-worker", ...})``, which
names the worker, the tasks it was processing, the results lost and the stimulus id of the
transitions to come. That is where a death starts here; the transitions of that stimulus
are then watched (``SchedulerPlugin.transition`` runs after each transition and before
the next, so restrictions set on a task that just became ``waiting`` are those its
``waiting -> processing`` sees):

- *Held*: a task is given a worker restriction that matches no worker
  (``mars-hold://...``), so it goes to ``no-worker`` instead of running. Held are the lost
  results and their released ancestors when the dead process had a persistent store and
  a nanny that restarts it (for ``restart-grace``), and the tasks that were executing on
  it until the nanny says why it died (``death-report-timeout``).
  A held result's inputs that are not in memory elsewhere are detached from it before the
  death's transitions run (and come back if it is recomputed after all), so its released
  lineage is not sent to ``waiting`` and back at every kill. After an unexpected death
  every worker writes each result at once for ``store.write-behind-pause``, so that the
  next kill finds its results in the store.
- *Taken over*: at once, a live worker on the same node (``restart-take-over``) moves the
  held results' files from the dead process's store into its own
  (``MarsStore.take_over``) and they are adopted there, as below. The store outlives the
  process on purpose: this makes a kill cost milliseconds instead of a process restart.
- *Adopted*: the restarted process (same nanny) lists what its store recovered; the held
  results among them (those not taken over) are restricted to it and moved to
  ``processing`` there; the worker already holds them in memory and answers at once with
  ``task-finished`` (nothing runs). A result waiting on held (released) ancestors is
  detached from them first: it no longer needs them, and they are released instead of
  recomputed.
- *Recomputed*: whatever is not adopted when the process is back or the grace period is
  over gets its restrictions back, a priority above all normal work (recovery of lost
  data first, as in Mars), and is scheduled.
- *Blamed*: Dask counts a death against every task the worker was processing and fails a
  task at the fourth with ``KilledWorker``. Here the plugin owns that decision
  (``Scheduler.allowed_failures`` is raised out of reach): an external kill blames nobody,
  a crash counts as in Dask against the tasks that were executing, and an out-of-memory
  death makes each task that was executing run alone with the whole quota, failing with
  ``MarsOutOfMemoryError`` only if it kills a worker while running alone.

Logs (logger ``mars_dask.plugins``): two INFO lines per worker lost, and nothing at INFO on
a run without faults. The *loss line* names the worker, why it was lost as far as is known
(the nanny's report: killed by a signal, out of memory, a crash; or its nanny gone too; it
waits for that report at most ``death-report-timeout``) and what it held and was running.
The *recovery line* follows once the plan is decided (restart over and verdict given):
what the restarted process brought back, what is recomputed (from checkpoints and from
the journal, as the failover plugin knows), what re-runs or fails. Details (keys, holds)
are logged at DEBUG; the failover plugin's ``mars-failover`` events carry the keys and
the time the recovery took.
"""

from __future__ import annotations

import logging
import signal
import time
from dataclasses import dataclass, field

from dask.utils import format_bytes, parse_timedelta

from .. import config
from .. import _dask_internals as DI
from ..errors import MarsOutOfMemoryError
from . import _protocol as P

logger = logging.getLogger("mars_dask.plugins")

#: added to the first element of a recomputed task's priority tuple (smaller runs first);
#: keeps the relative order of recomputations and puts them before every normal task
#: (mars_dask priorities are below 2**60, see tiling/emit.py)
RECOVERY_BOOST = 2**62


@dataclass
class Death:
    address: str
    ident: str  # the nanny address (stable across restarts) or the worker name
    name: object
    pid: int
    stimulus_id: str
    memory_limit: int
    processing: set
    executing: set
    tracked: bool  # the worker ran our worker plugin (executing is exact)
    hold_restart: bool
    t0: float = field(default_factory=time.monotonic)
    saved: dict = field(default_factory=dict)  # held key -> restrictions to restore
    verdict_keys: set = field(default_factory=set)
    restart_keys: set = field(default_factory=set)
    requeued: set = field(default_factory=set)
    report: dict | None = None
    decided: bool = False
    restart_over: bool = False
    adopting: set = field(default_factory=set)
    ws: object = None
    # for the two log lines (see the module docstring)
    nanny: str | None = None
    n_lost: int = 0  # results (and scattered data) only it held
    lost_keys: set = field(default_factory=set)  # lost data and ancestors sent to waiting
    lost: set = field(default_factory=set)  # results only it held (or was being given back)
    readopt: set = field(default_factory=set)  # results it was adopting, still in its store
    hello_seen: bool = False  # its restarted process has listed its store
    taken_over: bool = False  # a live worker on its node took results over from its store
    taking: set = field(default_factory=set)  # held results a live worker is taking over now
    cut: dict = field(default_factory=dict)  # held result -> inputs detached while it is held
    n_adopted: int = 0
    adopted_by: str | None = None
    adopted_after: float | None = None
    recompute: list = field(default_factory=list)  # lost results recomputed
    n_rerun: int = 0  # tasks that were executing, run again
    n_alone: int = 0  # ... of which alone (out-of-memory suspects)
    failed: dict = field(default_factory=dict)  # exception type name -> tasks failed
    nanny_gone: str | None = None  # the nanny did not answer either (why)
    probing: bool = False  # the nanny is being asked whether it is alive
    fplan: object = None  # the failover plugin's Plan of this loss
    loss_logged: bool = False
    planned: bool = False
    plan_line: tuple | None = None  # (format, args) waiting for the loss line


class Recovery:
    def __init__(self, scheduler, quota):
        self.s = scheduler
        self.quota = quota
        self.grace = parse_timedelta(config.get("scheduler.restart-grace"))
        self.take_over = bool(config.get("scheduler.restart-take-over"))
        self.write_pause = parse_timedelta(config.get("store.write-behind-pause") or 0)
        self._write_now_until = 0.0  # monotonic: workers write every result at once until then
        self.report_timeout = parse_timedelta(config.get("scheduler.death-report-timeout"))
        self.oom_fraction = float(config.get("scheduler.oom-rss-fraction"))
        af = config.get("scheduler.allowed-failures")
        self.allowed_failures = int(af if af is not None else DI.allowed_failures(scheduler))
        if DI.enabled("restart-recovery"):  # else deaths are left to Dask (_dask_internals.check)
            # Dask's KilledWorker verdict in remove_worker runs before any hook; we decide
            DI.take_over_allowed_failures(scheduler)
        self.workers: dict[str, dict] = {}  # address -> {"persistent", "closing", "tracked"}
        self.executing: dict[str, set] = {}  # address -> keys executing there
        self.executing_on: dict = {}  # key -> address
        self.by_stimulus: dict[str, Death] = {}
        self.deaths: dict[str, list[Death]] = {}  # ident -> deaths not finished
        self.reports: dict = {}  # (nanny, pid) -> exit report that came before the removal
        self._adopting_saved: dict = {}  # adopted key -> restrictions to restore in memory
        self._detached: dict = {}  # adopted key -> inputs detached while it is processing
        self._fail_when_runnable: dict = {}  # key -> exception (failed while waiting)
        self._awaiting: dict = {}  # (nanny, pid) -> Death whose loss line waits for the report
        self.failover = None  # set by the scheduler plugin: keys a new scheduler does not know
        self.counts = {"adopted": 0, "recomputed": 0, "oom_retries": 0, "oom_failures": 0, "held": 0,
                       "lost": 0, "lost_unwritten": 0, "taken_over": 0}
        self._persistent: dict = {}  # ident (nanny) -> whether its last process had a store

    # -- worker bookkeeping ---------------------------------------------------------------
    def add_worker(self, address) -> None:
        ws = self.s.workers.get(address)
        if ws is None:
            return
        info = self.workers.setdefault(address, {"persistent": False, "tracked": False, "closing": False})
        info.update(ws=ws, ident=self._ident(ws), name=ws.name, pid=ws.pid, nanny=ws.nanny, memory_limit=ws.memory_limit)

    def hello(self, worker, persistent, keys):
        info = self.workers.setdefault(worker, {})
        info.update(persistent=bool(persistent), tracked=True, closing=False, hello_at=time.monotonic())
        # a worker (nanny) this scheduler has not met: its store may hold results of a
        # previous scheduler's work (rejoined from the journal). One it has met restarted a
        # process: what the scheduler no longer knows it forgot on purpose, and registering
        # it again as data (no recipe) made a later loss of it cancel the client's futures
        first_meeting = info.get("ident") not in self._persistent
        if info.get("ident"):
            self._persistent.pop(info["ident"], None)
            self._persistent[info["ident"]] = info["persistent"]
            if len(self._persistent) > 1000:  # nannies long gone
                self._persistent.pop(next(iter(self._persistent)))
        ws = self.s.workers.get(worker)
        if ws is None:
            return {"adopt": []}
        adopt = []
        if self.failover is not None and keys and first_meeting:
            adopt.extend(self.failover.rejoin(worker, keys))
        listed = set(keys)
        leave = set()  # being taken over by a sibling: the successor must not drop their files
        for d in self.deaths.get(self._ident(ws), ()):
            leave |= d.taking & listed
            if d.restart_over:
                continue
            d.hello_seen = True
            # lost results its store did not have (held back by its write-behind, or damaged):
            # recomputed, through their lineage if it was released (the failover page shows
            # them, so that a policy losing results under repeated kills can be seen)
            unwritten = [k for k in d.restart_keys if k in d.lost and k in d.saved
                         and k not in listed and k not in d.taking]
            if unwritten:
                self.counts["lost_unwritten"] += len(unwritten)
                self.s.log_event(P.EVENT_TOPIC, {"action": "lost-unwritten", "worker": d.address,
                                                 "restarted": worker, "n": len(unwritten),
                                                 "keys": unwritten[:P.KEYS_IN_EVENT]})
            for k in keys:
                if k in d.restart_keys and k in d.saved and k not in d.taking:
                    ts = self.s.tasks.get(k)
                    if ts is not None and ts.state in ("no-worker", "waiting"):
                        adopt.append(k)
                        d.adopting.add(k)
        # The restarted process listed its whole store: what it did not list (results that
        # were still waiting for their write-behind, or all of them if it has no store) will
        # not come back, so it is recomputed now rather than after the grace period (an
        # adoption under way ends the hold in adopted())
        for d in list(self.deaths.get(self._ident(ws), ())):
            if not d.restart_over and not d.adopting and not d.taking:
                self._end_restart(d)
        left = self._write_now_until - time.monotonic()
        return {"adopt": adopt, "leave": list(leave), "write_now": left if left > 0 else 0}

    def adopted(self, worker, keys, deaths=None):
        """The restarted process (or, with ``deaths``, a sibling that took over their
        stores: :meth:`_take_over`) holds ``keys`` in memory: make them ``processing`` there
        (it answers ``task-finished`` at once, nothing runs)."""
        ws = self.s.workers.get(worker)
        if ws is None:
            return
        keys = set(keys)
        sid = f"mars-adopt-{time.time()}"
        recs: dict = {}
        total = 0
        restarted = deaths is None
        if restarted:
            deaths = list(self.deaths.get(self._ident(ws), ()))
        for d in deaths:
            if d.restart_over:
                continue
            got = []
            for k in (d.adopting if restarted else d.taking) & keys:
                ts = self.s.tasks.get(k)
                if ts is None or k not in d.saved or ts.state not in ("no-worker", "waiting"):
                    continue
                start = ts.state
                if start == "no-worker":
                    DI.forget_unrunnable(self.s, ts)
                # Inputs not in memory (held, or released long ago) are not needed: the
                # value is back. Dask's processing state insists on inputs in memory, so
                # they are detached until the key leaves processing (see transition);
                # once nothing waits for them they are released instead of recomputed.
                missing = [dts for dts in ts.dependencies if not dts.who_has]
                DI.detach_dependencies(ts, missing)
                missing += d.cut.pop(k, [])
                if missing:
                    self._detached[k] = missing
                DI.hold_to_worker(self.s, ts, ws.address, only=True)
                d.restart_keys.discard(k)
                # restrictions come back when the key reaches memory (see transition)
                self._adopting_saved[k] = d.saved.pop(k)
                # Scheduler.decide_worker insists on inputs in memory, which an adopted
                # result does not need: put it in processing on ws directly, as
                # _transition_waiting_processing would, and tell the plugins.
                recs.update(DI.add_to_processing(self.s, ts, ws, start, sid))
                got.append(k)
            n = len(got)
            if restarted:
                d.adopting.clear()
            d.n_adopted += n
            d.adopted_by = ws.address
            d.adopted_after = time.monotonic() - d.t0
            total += n
            logger.debug("adopted %d results of the restarted worker %s (was %s)", n, ws.address, d.address)
            if n:  # the failover page's timeline shows restarts beside losses and plans
                self.s.log_event(P.EVENT_TOPIC, {"action": "restart-adopted", "worker": d.address,
                                                 "restarted": ws.address, "n": n, "keys": got[:P.KEYS_IN_EVENT]})
                if self.failover is not None:
                    self.failover.adopted(got)
        self.counts["adopted"] += total
        if recs:
            DI.run_transitions(self.s, recs, sid)
        if restarted:
            for d in list(self.deaths.get(self._ident(ws), ())):
                self._end_restart(d)

    def _sibling(self, d: Death):
        """A live worker on the dead process's node that can read its store (our plugin,
        a persistent store), the least busy one; None if there is none."""
        host = getattr(d.ws, "host", None)
        best = None
        for addr, ws in self.s.workers.items():
            info = self.workers.get(addr) or {}
            if (addr == d.address or ws.host != host or not info.get("persistent")
                    or info.get("closing") or ws.status.name != "running"):
                continue
            if best is None or len(ws.processing) < len(best.processing):
                best = ws
        return best

    async def _take_over(self, d: Death, ws, keys: list) -> None:
        """Ask ``ws``, on the dead process's node, for the held ``keys`` from the dead
        process's store (``MarsStore.take_over``) and adopt what it gives back; what it
        could not (files never written or damaged) is recomputed once nothing else can
        bring it back. The restarted process, when it comes, is not asked for these keys."""
        got, answered = [], False
        try:
            resp = await self.s.rpc(ws.address).mars_take_over(name=str(d.name), keys=keys)
            got, answered = list(resp.get("keys") or ()), True
        except Exception as e:  # noqa: BLE001 - the sibling died or is too old: the restart may still bring them
            logger.debug("worker %s could not take over the store of %s: %s", ws.address, d.address, e)
        if got and ws.address in self.s.workers:
            d.taken_over = True
            self.adopted(ws.address, got, deaths=[d])
        d.taking -= set(keys)
        self.counts["taken_over"] += len(got)
        if answered:  # not in the dead process's store: held back by its write-behind (or damaged)
            self.counts["lost_unwritten"] += len(set(keys) - set(got))
        # what the sibling did not find is in no store (it looked in the dead process's):
        # recomputed now, unless the restart may still bring back keys it was not asked for
        if not d.restart_over and (d.hello_seen or (answered and not (d.restart_keys - set(keys)))):
            self._end_restart(d)

    def being_given_back(self, key) -> bool:
        """``key`` is being adopted (by a restarted process or a sibling taking over)."""
        if key in self._adopting_saved:
            return True
        return any(key in d.adopting or key in d.taking for lst in self.deaths.values() for d in lst)

    def held_keys(self) -> set:
        if not self.deaths:
            return set()
        return {k for lst in self.deaths.values() for d in lst for k in d.saved}

    def started(self, worker, key):
        ts = self.s.tasks.get(key)
        if ts is None or ts.processing_on is None or ts.processing_on.address != worker:
            return
        self.executing.setdefault(worker, set()).add(key)
        self.executing_on[key] = worker

    def closing(self, worker):
        self.workers.setdefault(worker, {})["closing"] = True

    def _not_executing(self, key):
        w = self.executing_on.pop(key, None)
        if w is not None:
            s = self.executing.get(w)
            if s is not None:
                s.discard(key)

    @staticmethod
    def _ident(ws) -> str:
        return ws.nanny or str(ws.name)

    # -- a death ------------------------------------------------------------------------
    def remove_worker_event(self, msg: dict) -> None:
        ev = DI.remove_worker_event_fields(msg)
        addr = ev["worker"]
        info = self.workers.pop(addr, None) or {}
        if not info.get("tracked") and info.get("ident") in self._persistent:
            # a restarted process killed before its plugin said hello: its nanny's earlier
            # processes said whether it has a store (results it computed meanwhile are in it)
            info = {**info, "persistent": self._persistent[info["ident"]]}
        executing = self.executing.pop(addr, set())
        for k in executing:
            self.executing_on.pop(k, None)
        if ev["expected"]:
            return
        if not info.get("closing"):  # a clean close (the cluster shutting down) is no fault
            self._pause_write_behind(addr)
            self._tell_peers_gone(addr)
        tracked = bool(info.get("tracked"))
        processing = set(ev["processing"])
        # results it was being given back (adopted, in processing there until it answers):
        # still in its store, so lost data to hold for the next restart, not tasks to re-run
        # (re-running them would recompute their whole lineage)
        readopt = {k for k in processing if k in self._adopting_saved}
        processing -= readopt
        executing -= readopt
        d = Death(
            address=addr,
            ident=info.get("ident") or addr,
            name=info.get("name"),
            pid=info.get("pid") or 0,
            stimulus_id=ev["stimulus_id"],
            memory_limit=info.get("memory_limit") or 0,
            processing=processing,
            # untracked, or the start messages may have been lost (a process killed right
            # after it started): every task it was processing is a suspect. A tracked worker
            # that executed nothing was waiting for inputs: holding its queue for the
            # nanny's report would only stall it.
            executing=(executing & processing) if self._exact_starts(info) else ((executing & processing) or processing),
            tracked=tracked,
            hold_restart=bool(
                info.get("persistent") and info.get("nanny") and not info.get("closing") and self.grace > 0
            ),
        )
        d.ws = info.get("ws")
        d.nanny = info.get("nanny")
        d.readopt = readopt
        d.lost = set(ev["lost"]) | set(ev["scattered"]) | readopt
        d.n_lost = len(d.lost)
        if d.hold_restart:
            self._cut_lineage(d, addr)
        self.counts["lost"] += d.n_lost
        d.report = self.reports.pop((d.nanny, d.pid), None)
        self.by_stimulus[d.stimulus_id] = d

    def _cut_lineage(self, d: Death, addr: str) -> None:
        """Detach, before Dask's transitions of this death run, the inputs not in memory
        elsewhere of each lost result that will be held for the restart, so that sending it
        back to ``waiting`` does not send its whole released lineage there too. (A chain of
        80 steps had ~10,000 ancestors marked waiting, and held, at each kill, and released
        again at each adoption: scheduler work that grew with the job's length.) The inputs
        come back when the result is not adopted (:meth:`_release`), not held after all
        (:meth:`remove_worker`), or once its adopted value is in memory (:meth:`transition`)."""
        tasks = self.s.tasks
        for k in d.lost:
            ts = tasks.get(k)
            if ts is None:
                continue
            missing = [dts for dts in ts.dependencies
                       if not (dts.state == "memory" and any(w.address != addr for w in dts.who_has or ()))]
            if k in d.readopt:  # detached at its adoption; they stay detached
                missing += self._detached.pop(k, [])
            if missing:
                DI.detach_dependencies(ts, missing)
                d.cut[k] = missing

    def _reattach(self, d: Death, k) -> bool:
        """Give a held result back the inputs :meth:`_cut_lineage` detached."""
        missing = d.cut.pop(k, None)
        ts = self.s.tasks.get(k)
        if not missing or ts is None or ts.state == "forgotten":
            return False
        DI.attach_dependencies(ts, [dts for dts in missing if self.s.tasks.get(dts.key) is dts])
        return True

    def _pause_write_behind(self, dead: str) -> None:
        """A worker process was lost: every worker writes each result at once for
        ``store.write-behind-pause`` (``MarsStore.write_now_for``), so that another loss
        meanwhile finds its results in the store (to take over) instead of recomputing them
        through their released lineage. Write-behind saves a write per short-lived result
        (~1 ms/MB) on a healthy cluster; under a kill every 3 s the results it held back and
        lost cost far more (a chain's lost stage results re-ran ~100 tasks each)."""
        if self.write_pause <= 0:
            return
        self._write_now_until = time.monotonic() + self.write_pause
        self._tell_others(dead, {"op": P.OP_WRITE_NOW, "seconds": self.write_pause})

    def _tell_peers_gone(self, dead: str) -> None:
        """A worker process died: every other worker fails its connections to it at once
        (:func:`mars_dask._dask_internals.fail_connections_to`). A worker fetching an input
        from it otherwise retries the refused connection for
        ``distributed.comm.timeouts.connect`` (30 s) before it asks for the input elsewhere:
        under a kill every 3 s a worker whose only task waited so sat idle for 5-12 s."""
        self._tell_others(dead, {"op": P.OP_PEER_GONE, "address": dead})

    def _tell_others(self, dead: str, msg: dict) -> None:
        """Send ``msg`` to every worker but ``dead`` and those closing (from the event loop)."""
        others = [a for a in self.s.workers if a != dead and not self.workers.get(a, {}).get("closing")]
        if others:
            self.s.loop.add_callback(self.s.broadcast, msg=msg, workers=others, on_error="ignore")

    @staticmethod
    def _exact_starts(info: dict) -> bool:
        """The worker's task starts are known: its plugin said hello a while ago (so its
        start messages, sent every few milliseconds, have had time to arrive)."""
        t = info.get("hello_at")
        return bool(info.get("tracked")) and t is not None and time.monotonic() - t > 1.0

    def _worth_holding(self, d: Death, ts) -> bool:
        """Hold ``ts`` (lost, or an ancestor being recomputed) for the restart? A lost result
        always (its store may have it); an ancestor only while every result waiting for it is
        held (its recomputation is needed only if they are not adopted)."""
        if ts.key in d.lost:
            return True
        waiting = [dts for dts in ts.dependents if dts.state in ("waiting", "no-worker")]
        return bool(waiting) and all(dts.key in d.saved or any(self._deaths_holding(dts.key))
                                     for dts in waiting)

    def transition(self, key, start, finish, stimulus_id) -> None:
        if start == "processing":
            self._not_executing(key)
            if key in self._detached:
                ts = self.s.tasks.get(key)
                missing = self._detached.pop(key)
                if ts is not None:
                    DI.attach_dependencies(ts, missing)
        if key in self._adopting_saved and (start == "processing" or finish in ("memory", "forgotten", "erred")):
            # an adopted key done, or lost again (its new process died before answering):
            # its restrictions come back before anything holds it for another restart, or it
            # would wait forever for the dead process it was restricted to
            saved = self._adopting_saved.pop(key)
            ts = self.s.tasks.get(key)
            if ts is not None:
                self._restore(ts, saved)
        if finish == "no-worker" and key in self._fail_when_runnable:
            self.s.loop.add_callback(self._fail, {key: self._fail_when_runnable.pop(key)})
        d = self.by_stimulus.get(stimulus_id)
        if d is None:
            return
        if start == "processing" and finish == "released":
            if key not in d.readopt:
                d.requeued.add(key)
        elif start == "released" and finish == "waiting":
            ts = self.s.tasks[key]
            if key in d.executing:
                self._hold(d, ts)
                d.verdict_keys.add(key)
            elif key in d.requeued:
                if key in d.processing:  # never ran there: not a suspect
                    self._unsuspect(ts)
            else:  # lost data, or an ancestor of lost data being recomputed
                self._boost(ts)
                d.lost_keys.add(key)
                if d.hold_restart and self._worth_holding(d, ts):
                    self._hold(d, ts)
                    d.restart_keys.add(key)

    def remove_worker(self, stimulus_id) -> None:
        loop = self.s.loop
        d = self.by_stimulus.pop(stimulus_id, None)
        if d is None:
            return
        for k in [k for k in d.cut if k not in d.saved]:  # not held by this death
            holder = next(self._deaths_holding(k), None)
            if holder is not None:  # held for an earlier death's restart: its inputs go with it
                holder.cut.setdefault(k, []).extend(d.cut.pop(k))
            elif self._reattach(d, k):
                ts = self.s.tasks[k]
                if ts.state in ("waiting", "no-worker", "queued"):
                    DI.run_transitions(self.s, {k: "released"}, f"mars-reattach-{time.time()}")
        if self.failover is not None:
            d.fplan = self.failover.loss_plan(stimulus_id)
        self._expect_report(d)
        if not d.saved:
            # nothing held: Dask recomputes the lost results at once (boosted)
            d.recompute = self._still_to_compute(d.lost_keys)
            d.restart_over = True
            self._decide(d)
            return
        self.deaths.setdefault(d.ident, []).append(d)
        self.counts["held"] += len(d.saved)
        logger.debug(
            "worker %s died: holding %d lost results for its restart and %d running tasks "
            "for the nanny's report", d.address, len(d.restart_keys), len(d.verdict_keys),
        )
        if not d.restart_keys:  # only running tasks held: the lost results are recomputed at once
            d.restart_over = True
            d.recompute = self._still_to_compute(d.lost_keys)
        if d.report is not None or not d.verdict_keys:
            self._decide(d)
        else:
            loop.call_later(self.report_timeout, self._decide, d)
        if d.restart_keys:
            loop.call_later(self.grace, self._end_restart, d)
            sibling = self._sibling(d) if self.take_over else None
            keys = [k for k in d.restart_keys if k in d.lost and k in d.saved]
            if sibling is not None and keys:
                d.taking |= set(keys)
                loop.add_callback(self._take_over, d, sibling, keys)

    def _expect_report(self, d: Death) -> None:
        """Log the loss line once the nanny's report says why (it usually follows the
        removal within its monitor interval), its nanny is found gone, or
        ``death-report-timeout`` has passed."""
        if d.report is not None or not d.nanny:
            self._log_loss(d)
            if d.restart_keys and d.nanny:
                self.s.loop.add_callback(self._probe_nanny, d, d.nanny)
            return
        self._awaiting[(d.nanny, d.pid)] = d
        d.probing = True
        self.s.loop.call_later(self.report_timeout, self._report_timeout, d)
        self.s.loop.add_callback(self._probe_nanny, d, d.nanny)

    def _report_timeout(self, d: Death) -> None:
        if not d.probing:  # else the probe's answer logs it
            self._log_loss(d)

    async def _probe_nanny(self, d: Death, nanny: str) -> None:
        """A node that is gone (nanny dead too) will not restart its worker: stop holding
        its results at once instead of waiting for the grace period. (Also asked when the
        nanny's report has not come yet, for the loss line.)"""
        import asyncio

        try:
            await asyncio.wait_for(self.s.rpc(nanny).identity(), 3)
        except (OSError, asyncio.TimeoutError) as e:
            d.probing = False
            if d.report is None:
                d.nanny_gone = type(e).__name__
                self._log_loss(d)
            if not d.restart_over:
                logger.debug("the nanny %s of dead worker %s is gone too (%s): recomputing now",
                             nanny, d.address, type(e).__name__)
                self._end_restart(d)
        except Exception:  # noqa: BLE001, S110 - alive but odd: keep waiting for the grace period
            pass
        finally:
            if d.probing:  # alive: its report is still awaited, for death-report-timeout at most
                d.probing = False
                if time.monotonic() - d.t0 >= self.report_timeout:
                    self._log_loss(d)

    def worker_exit(self, report: dict) -> None:
        """The nanny's account of a dead process (may come before or after removal)."""
        nanny, pid = report.get("nanny"), report.get("pid")
        waiting = self._awaiting.get((nanny, pid))
        if waiting is not None and waiting.report is None:
            waiting.report = report
            self._log_loss(waiting)
        for d in self.deaths.get(nanny, ()):
            if d.pid == pid and not d.decided:
                d.report = report
                self._log_loss(d)
                self._decide(d)
                if not report.get("restarting"):
                    self._end_restart(d)
                return
        if waiting is not None:  # a death known already: nothing to keep for a later removal
            return
        for d in self.by_stimulus.values():  # pragma: no cover - within one tick
            if d.pid == pid:
                d.report = report
                return
        self.reports[(nanny, pid)] = report
        if len(self.reports) > 1000:
            self.reports.pop(next(iter(self.reports)))

    # -- decisions ----------------------------------------------------------------------
    def _verdict(self, d: Death) -> str:
        r = d.report
        if r is None:
            return "unknown"
        code = r.get("exitcode")
        limit = r.get("memory_limit") or d.memory_limit
        rss = r.get("rss") or 0
        if r.get("memory_terminated") or (code == -9 and limit and rss >= self.oom_fraction * limit):
            return "oom"
        if code in (-9, -15):
            return "external"
        return "crash"

    def _decide(self, d: Death) -> None:
        if d.decided:
            return
        d.decided = True
        verdict = self._verdict(d)
        keys = [k for k in d.verdict_keys if k in d.saved]
        if not d.saved:
            keys = list(d.executing)  # nothing held: only counting is left
        if d.executing:
            logger.debug("worker %s died (%s) while executing %s", d.address, verdict, sorted(map(str, d.executing)))
        release, fail = [], {}
        alone = len(d.executing) == 1
        quota = self.quota.quota()
        for k in keys:
            ts = self.s.tasks.get(k)
            if ts is None:
                continue
            if verdict != "external" and ts.suspicious > self.allowed_failures + 2:
                # a safety net whatever the verdicts were: never retry forever
                from distributed.scheduler import KilledWorker

                last = d.ws.clean() if d.ws is not None else None
                fail[k] = KilledWorker(task=k, last_worker=last, allowed_failures=ts.suspicious - 1)
                continue
            if verdict == "external":
                self._unsuspect(ts)
                release.append(k)
            elif verdict == "oom":
                if alone:
                    ann = ts.annotations or {}
                    r = d.report or {}
                    fail[k] = MarsOutOfMemoryError(
                        k, ann.get(P.ANN_TILEABLE), quota if k in self.quota.exclusive else self.quota.estimate(ts),
                        r.get("rss"), r.get("memory_limit") or d.memory_limit, d.address,
                    )
                    self.counts["oom_failures"] += 1
                else:
                    self.quota.exclusive.add(k)
                    if k in d.saved and quota > 0:
                        wr, hr, rr, loose = d.saved[k]
                        rr = dict(rr or {})
                        rr[P.RESOURCE] = quota
                        d.saved[k] = (wr, hr, rr, loose)
                    self.counts["oom_retries"] += 1
                    release.append(k)
            else:  # crash or unknown: count it as Dask does
                if ts.suspicious > self.allowed_failures:
                    from distributed.scheduler import KilledWorker

                    last = d.ws.clean() if d.ws is not None else None
                    fail[k] = KilledWorker(task=k, last_worker=last, allowed_failures=self.allowed_failures)
                else:
                    release.append(k)
        d.verdict_keys.clear()
        d.n_rerun = sum(1 for k in keys if k not in fail and k in self.s.tasks)
        d.n_alone = sum(1 for k in release if k in self.quota.exclusive) if verdict == "oom" else 0
        for exc in fail.values():
            name = type(exc).__name__
            d.failed[name] = d.failed.get(name, 0) + 1
        self._fail(fail)
        self._release(d, release)
        self._maybe_forget(d)

    def _end_restart(self, d: Death) -> None:
        if d.restart_over:
            return
        if d.adopting or d.taking:  # adoption under way: the worker will call adopted() shortly
            if time.monotonic() - d.t0 < self.grace + 30:
                # ...unless it dies first: look again
                self.s.loop.call_later(5, self._end_restart, d)
                return
        d.restart_over = True
        keys = [k for k in d.restart_keys if k in d.saved]
        d.restart_keys.clear()
        n = self._release(d, keys)
        self.counts["recomputed"] += n
        d.recompute = self._still_to_compute(keys)
        if n:
            logger.debug("recomputing %d results of %s that no restarted process brought back", n, d.address)
        self._maybe_forget(d)

    def _maybe_forget(self, d: Death) -> None:
        if d.decided and d.restart_over:
            self._log_plan(d)
            lst = self.deaths.get(d.ident)
            if lst and d in lst:
                lst.remove(d)
                if not lst:
                    del self.deaths[d.ident]

    def _still_to_compute(self, keys) -> list:
        tasks = self.s.tasks
        return [k for k in keys if (ts := tasks.get(k)) is not None
                and ts.state not in ("released", "forgotten", "memory")]

    # -- the two log lines --------------------------------------------------------------
    @staticmethod
    def _who(d: Death) -> str:
        return f"{d.address} ({d.name})" if d.name is not None and str(d.name) != d.address else d.address

    def _cause(self, d: Death) -> str:
        r = d.report
        if r is None:
            if d.nanny_gone:
                return f"its nanny {d.nanny} does not answer either ({d.nanny_gone}): lost for good"
            if not d.nanny:
                return "it had no nanny (no restart)"
            return f"no word from its nanny within {self.report_timeout:g} s"
        code = r.get("exitcode")
        limit = r.get("memory_limit") or d.memory_limit
        rss = r.get("rss") or 0
        mem = f"RSS {format_bytes(rss)} of {format_bytes(limit)}" if limit else f"RSS {format_bytes(rss)}"
        if r.get("memory_terminated"):
            why = f"out of memory: terminated by its nanny ({mem})"
        elif isinstance(code, int) and code < 0:
            try:
                sig = signal.Signals(-code).name
            except ValueError:
                sig = f"signal {-code}"
            why = f"killed by signal {-code} ({sig})"
            if self._verdict(d) == "oom":
                why = f"out of memory: {why} at {mem}"
        elif code is None:
            why = "its process is gone"
        else:
            why = f"exited with code {code}"
        return why + ("; its nanny restarts it" if r.get("restarting") else "; not restarted")

    def _log_loss(self, d: Death) -> None:
        """The loss line (once per death), then its recovery line if that is ready."""
        if d.loss_logged:
            return
        d.loss_logged = True
        if d.nanny:
            self._awaiting.pop((d.nanny, d.pid), None)
        queued = len(d.processing - d.executing)
        logger.info("lost worker %s: %s; it held %d results no other worker has and was running %d tasks%s",
                    self._who(d), self._cause(d), d.n_lost, len(d.executing),
                    f" ({queued} more queued)" if queued else "")
        if d.plan_line is not None:
            fmt, args = d.plan_line
            d.plan_line = None
            logger.info(fmt, *args)

    def _log_plan(self, d: Death) -> None:
        """The recovery line (once per death, after its loss line): decided once the restart
        is over and the verdict given."""
        if d.planned:
            return
        d.planned = True
        parts, args = [], []
        if d.n_adopted:
            whose = "taken over from its store by worker" if d.taken_over else "of its restarted process"
            parts.append(f"adopted %d results {whose} %s after %.2f s")
            args += [d.n_adopted, d.adopted_by, d.adopted_after]
        n = len(d.recompute)
        if n:
            s = "recomputing %d keys"
            if self.failover is not None:
                k, j = self.failover.loss_sources(d.recompute, d.fplan)
                s += " (%d from checkpoints, %d from the journal)"
                args += [n, k, j]
            else:
                args.append(n)
            parts.append(s)
        if d.n_rerun:
            parts.append("re-running the %d tasks it was running" + (" (%d alone: out of memory)" if d.n_alone else ""))
            args += [d.n_rerun] + ([d.n_alone] if d.n_alone else [])
        for name, m in sorted(d.failed.items()):
            parts.append("failing %d tasks with %s")
            args += [m, name]
        if not n and not d.n_rerun and not d.failed:
            parts.append("nothing recomputed")
        line = ("recovery for worker %s: " + "; ".join(parts), (self._who(d), *args))
        if d.loss_logged:
            logger.info(line[0], *line[1])
        else:
            d.plan_line = line

    # -- mechanics ----------------------------------------------------------------------
    def _hold(self, d: Death, ts) -> None:
        if ts.key in d.saved or any(self._deaths_holding(ts.key)):
            # already held (for an earlier death's restart, which gives the key its own
            # restrictions back): saving the hold as "its restrictions" would leave the key
            # restricted to a dead process for good
            return
        wr, hr, rr, loose = DI.get_restrictions(ts)
        if wr and any(str(r).startswith(P.HOLD_PREFIX) for r in wr):
            # a hold nobody owns any more: never the key's own restrictions. The holds'
            # bookkeeping should make this impossible; say so if it happens
            logger.warning("%s carries a stale hold %s: dropping it", ts.key, sorted(map(str, wr)))
            wr = None
        d.saved[ts.key] = (wr, hr, rr, loose)
        DI.hold_to_worker(self.s, ts, P.HOLD_PREFIX + d.ident)

    @staticmethod
    def _restore(ts, saved) -> None:
        DI.put_restrictions(ts, saved)

    def _release(self, d: Death, keys) -> int:
        """Give ``keys`` their restrictions back and schedule those still needed; the others
        are released (e.g. the ancestors of an adopted result). Returns how many are to be
        computed."""
        held, reattached = {}, set()
        for k in keys:
            saved = d.saved.pop(k, None)
            ts = self.s.tasks.get(k)
            if saved is None or ts is None:
                continue
            self._restore(ts, saved)
            if self._reattach(d, k):
                reattached.add(k)
            held[k] = ts
        needed = self._needed(held)
        recs = {}
        for k, ts in held.items():
            if k not in needed or k in reattached:
                # (re-attached inputs: back to released, from where Dask sends the result
                # and the inputs it needs to waiting)
                if ts.state in ("no-worker", "waiting", "queued"):
                    recs[k] = "released"
            elif ts.state == "no-worker":
                recs[k] = "processing"
        if recs:
            DI.run_transitions(self.s, recs, f"mars-release-{time.time()}")
        return sum(1 for k in keys if (ts := self.s.tasks.get(k)) is not None and ts.state not in ("released", "forgotten", "memory"))

    @staticmethod
    def _needed(held: dict) -> set:
        """The held keys still needed: wanted by a client, waited for by a task that is not
        held, or (transitively) by a needed held key. A held key waited for only by held
        keys that are not needed (the ancestors of an adopted result, which no longer
        waits for them) is not: releasing it instead of recomputing it saves re-running
        its whole lineage."""
        needed, stack = set(), []
        for k, ts in held.items():
            if ts.who_wants or any(w.key not in held for w in ts.waiters or ()):
                needed.add(k)
                stack.append(ts)
        while stack:
            ts = stack.pop()
            for dts in ts.dependencies:
                k = dts.key
                if k in held and k not in needed and ts in (dts.waiters or ()):
                    needed.add(k)
                    stack.append(dts)
        return needed

    def _fail(self, fail: dict) -> None:
        for k, exc in fail.items():
            ts = self.s.tasks.get(k)
            if ts is None:
                continue
            logger.error("%s", exc)
            sid = f"mars-fail-{time.time()}"
            if ts.state == "waiting":  # its inputs are being recomputed: fail it once ready
                self._fail_when_runnable[k] = exc
                continue
            if ts.state != "no-worker":
                continue
            for d in self._deaths_holding(k):
                d.saved.pop(k, None)
            DI.fail_task(self.s, k, exc, sid)

    def _deaths_holding(self, k):
        for lst in self.deaths.values():
            for d in lst:
                if k in d.saved:
                    yield d

    def _boost(self, ts) -> None:
        p = ts.priority
        if p and p[0] > -RECOVERY_BOOST // 2:
            DI.set_priority(ts, (p[0] - RECOVERY_BOOST, *p[1:]))

    @staticmethod
    def _unsuspect(ts) -> None:
        DI.unsuspect(ts)
