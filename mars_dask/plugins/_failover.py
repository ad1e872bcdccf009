"""The failover half of the scheduler plugin: lineage across graphs, checkpoints, and a
scheduler that can be restarted (Mars's failover service, on Dask).

What Dask does alone, and what this adds:

- While a key is wanted, Dask keeps its recipe and recomputes it after a worker loss.
  Once it is cancelled or forgotten, a later graph that needs it fails at once ("lost
  dependencies", inside ``Scheduler.update_graph`` before any plugin hook). Here every
  key of every graph is recorded in a :class:`~._journal.LineageJournal` (recipe,
  dependencies, graph sequence, priority, tileable; on disk, bounded in memory), and
  ``Scheduler._find_lost_dependencies`` is wrapped: the missing keys' lineage, back to data
  that is alive or to a checkpoint, is put into the submitted graph, which then runs
  instead of failing. Restored keys get the recovery priority (before all other ready
  work; among themselves by graph sequence and position, as recorded).
- Checkpoints cut lineage: the worker that computed a boundary result (shuffle map
  outputs, ``execute(checkpoint=True)``) or holds scattered data writes it to the
  checkpoint directory (``_checkpoint.py``) and tells the scheduler, which swaps the key's
  recipe for "read the checkpoint", detaches it from its inputs (which Dask then forgets
  when nothing else needs them) and drops the lineage behind it from the journal. A lost
  shuffle output is then re-read, not re-shuffled; scattered data is no longer "lost data
  which can't be recovered"; an iterative job's journal and task table stay flat. A
  checkpoint superseded by a newer one (the journal forgot it: no journaled recipe reads it
  any more) has its file deleted as soon as the scheduler no longer holds its key, not
  only when the cluster closes.
- A restarted scheduler (same address, same journal directory) reads the journal back;
  workers that rejoin with results in their stores get them registered (held for
  ``rejoin-hold`` by a pseudo-client) so a reconnecting client's resubmitted graph reuses
  them, and any graph that needs a key nobody holds rebuilds it from the journal.
- A cluster left without workers fails waiting work with :class:`MarsNoWorkersError`
  after ``no-workers-timeout`` instead of hanging.
- Observability: ``scheduler.log_event`` topic ``mars-failover`` ("worker-lost",
  "recovery-plan", "recovered", "journal-restore", "checkpoint", "rejoin", "no-workers")
  and :meth:`Failover.stats` (``mars_dask.failover_report(client)``).

Recording must not slow the scheduler down (pickling 100k task specs costs seconds of
GIL time). So a key's journal entry carries no recipe of its own: the recipe is the graph
as the client sent it (``update-graph``'s serialized expression, already bytes), written
once per graph to ``<journal>/graphs/<seq>.graph`` on a background thread; the scheduler's
own ``run_spec`` objects serve restores while they are in memory (the newest
``journal-memory-entries`` keys the scheduler still holds), and an older key's recipe is
read back by deserializing its graph. Per key, this plugin keeps in memory only what the
scheduler's live tasks need (which keys are journaled is asked of the journal, whose index
is on disk), so a long-lived scheduler's memory does not grow with the keys ever
submitted. Graph files no entry refers to any more are deleted when checkpoints cut
lineage. Anything that reads lineage flushes the writer first.

Files. The journal and checkpoint directories are private (``_safe_files.private_dir``:
ours, 0700, no symlink; an unsafe one makes the scheduler refuse to start, naming it) and
every file in them is 0600. Recipes are pickles, so nothing read back is decoded unless it
is authenticated: the scheduler keeps a per-cluster secret in ``<journal>/secret``
(``_safe_files.load_or_create_secret``: a scheduler restarted on the same journal reads its
own files back) and MACs journal records (``_journal.py``), graph files and, through the
workers' :class:`MarsCheckpointPlugin` that carries the authenticator, checkpoint files.
A graph file is ``magic | MAC | meta length | msgpack [header, frame lengths] | frames``,
the MAC (keyed BLAKE2b) covering the graph's sequence number and everything after it; one
that does not verify is refused before anything in it is decoded, and the keys that needed
it are reported as not restorable ("journal-restore-failed").
"""

from __future__ import annotations

import contextvars
import logging
import os
import pickle
import queue
import shutil
import struct
import tempfile
import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field

import msgpack
from dask.utils import parse_timedelta
from distributed.protocol.pickle import dumps as pickle_dumps
from distributed.protocol.pickle import loads as pickle_loads
from tornado.ioloop import PeriodicCallback

from .. import config
from .. import _dask_internals as DI
from .._leftovers import hold_failover_dirs
from .._safe_files import (
    MAC_SIZE,
    Authenticator,
    load_or_create_secret,
    private_dir,
    runtime_root,
    user_name,
    write_private,
)
from ..errors import DataIntegrityError, MarsNoWorkersError
from . import _protocol as P
from ._checkpoint import MarsCheckpointPlugin, checkpoint_path, is_loader, loader_task
from ._checkpoint_policy import CheckpointPolicy, compute_seconds
from ._journal import JournalEntry, LineageIncomplete, LineageJournal

logger = logging.getLogger("mars_dask.plugins.failover")

#: see _restart.RECOVERY_BOOST (kept equal: recomputations and restorations share the queue)
RECOVERY_BOOST = 2**62
#: graphs read back from the journal are kept while restores use them (see _trim_graph_cache):
#: dropped GRAPH_CACHE_IDLE seconds after their last use, and down to the GRAPH_CACHE_MAX
#: most recently used then
GRAPH_CACHE_IDLE = 10.0
GRAPH_CACHE_MAX = 16
_GRAPH_MAGIC = b"MDGRAPH1"
_GRAPH_PRELUDE = struct.Struct(f"<8s{MAC_SIZE}sI")  # magic, MAC, length of the msgpack meta


def _cfg(name):
    return config.get(f"failover.{name}")


def _address_tag(address: str) -> str:
    return address.split("://")[-1].replace(":", "-").replace("/", "_") or "scheduler"


def default_root(kind: str = "journal") -> str:
    """``<root>/mars-dask-<user>``: for the journal (lineage and graphs: small) the runtime
    directory (``$XDG_RUNTIME_DIR`` where it exists, else the temp dir); for checkpoints
    (results: large) always the temp dir, on disk (``$XDG_RUNTIME_DIR`` is a small tmpfs)."""
    root = runtime_root() if kind == "journal" else tempfile.gettempdir()
    return os.path.join(root, f"mars-dask-{user_name()}")


def _graph_bytes(auth: Authenticator, seq: int, header, frames) -> bytes:
    """A graph file's bytes (see the module docstring); raises if ``header`` is not plain
    msgpack data."""
    meta = msgpack.packb([header, [memoryview(f).nbytes for f in frames]], use_bin_type=True)
    n = struct.pack("<I", len(meta))
    mac = auth.mac(seq.to_bytes(8, "big"), n, meta, *frames)
    return b"".join([_GRAPH_PRELUDE.pack(_GRAPH_MAGIC, mac, len(meta)), meta, *frames])


def _graph_from(auth: Authenticator, seq: int, data: bytes, path: str, key):
    """``(header, frames)`` of a graph file's bytes, once its MAC checks out; raises
    :class:`DataIntegrityError` (naming ``key``, a key that needs it) before decoding
    anything otherwise."""
    if len(data) < _GRAPH_PRELUDE.size or data[:8] != _GRAPH_MAGIC:
        raise DataIntegrityError(key, path, "not a graph file (bad magic)")
    _, mac, n = _GRAPH_PRELUDE.unpack_from(data)
    body = memoryview(data)[_GRAPH_PRELUDE.size - 4:]  # meta length, meta, frames
    if not auth.verify(mac, seq.to_bytes(8, "big"), body):
        raise DataIntegrityError(key, path, "graph file authentication failed (not written by "
                                            "this cluster, or altered)")
    header, sizes = msgpack.unpackb(body[4:4 + n], use_list=False, raw=False, strict_map_key=False)
    frames, pos = [], 4 + n
    for size in sizes:
        frames.append(body[pos:pos + size])
        pos += size
    return header, frames


@dataclass
class Plan:
    """A recovery: the keys to recompute (or re-read) after ``cause``."""

    cause: str
    t0: float = field(default_factory=time.monotonic)
    keys: set = field(default_factory=set)
    pending: set = field(default_factory=set)
    n: int = 0
    restored: set = field(default_factory=set)  # keys whose lineage came back from the journal
    adopted: set = field(default_factory=set)  # keys a restarted process brought back instead


class Failover:
    def __init__(self, scheduler):
        self.s = scheduler
        self.journal: LineageJournal | None = None
        self.counts = {"restored_keys": 0, "restore_failures": 0, "checkpoints_written": 0,
                       "checkpoint_failures": 0, "checkpoints_deleted": 0, "checkpoint_loads": 0,
                       "worker_losses": 0, "recomputed": 0, "rejoined_keys": 0, "no_worker_failures": 0,
                       "graphs": 0, "graph_reads": 0}
        self.graph_seq = 0
        # journaled keys the scheduler still holds (a key the scheduler forgot is asked of
        # the journal, whose index is on disk): bounded by the scheduler's tasks
        self._recorded: set = set()
        self._specs: OrderedDict = OrderedDict()  # key -> run_spec (newest keys) for restores
        self._graph_cache: OrderedDict = OrderedDict()  # seq -> materialized graph read back
        self._expr = contextvars.ContextVar("mars_dask_graph_expr", default=None)
        self._restoring: dict = {}  # key -> recorded priority, for the graph being submitted
        self._loading: set = set()  # keys whose task now reads its checkpoint (until forgotten)
        self._journal_plan: Plan | None = None
        self._by_stimulus: dict[str, Plan] = {}
        self._plan_of: dict = {}  # key -> Plan still pending
        self.history: deque = deque(maxlen=100)  # finished plans (summaries)
        self._queue: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._no_workers_since: float | None = None
        self._pc: PeriodicCallback | None = None
        self._closed = False
        self._checkpoints_failing = False  # the clients were warned; cleared by a success
        self._dir_locks: list = []
        # lineage offload (see _offload): keys in memory some of whose dependency edges this
        # plugin removed, and released keys waiting to be forgotten
        self._cut_keys: set = set()
        self._to_forget: set = set()
        self._seq_of: dict = {}  # key -> sequence number of the graph that submitted it
        self._forgotten: list = []  # keys forgotten since the journal last dropped their copies
        # superseded checkpoints (see _checkpoints_superseded): keys whose checkpoint file
        # the journal no longer needs but the scheduler still holds, and file deletions
        # queued on the writer thread (a new report of the key cancels its deletion)
        self._superseded_held: set = set()
        self._unlinking: set = set()
        self._deleted: OrderedDict = OrderedDict()  # the latest deleted (bounded)
        self._unlink_lock = threading.Lock()
        self.offload = bool(_cfg("offload-lineage")) and DI.enabled("lineage-offload")
        # shuffle map outputs: every one (True), none (False) or those worth it ("auto":
        # the scheduler judges each as it arrives and asks its worker to write it)
        self.shuffle_checkpoints = _shuffle_mode(_cfg("checkpoint-shuffles"))
        self.policy = CheckpointPolicy(float(_cfg("checkpoint-cost-ratio")),
                                       is_durable=lambda ts: ts.key in self._loading)

    # -- lifecycle ------------------------------------------------------------------------
    async def start(self) -> None:
        s = self.s
        tag = _address_tag(s.address)
        # private directories (refused, naming them, if unsafe: see the module docstring)
        self.journal_dir = private_dir(os.path.join(
            _cfg("journal-directory") or os.path.join(default_root(), "journal"), tag))
        self.checkpoint_dir = private_dir(os.path.join(
            _cfg("checkpoint-directory") or os.path.join(default_root("checkpoints"), "checkpoints"), tag))
        # held while this scheduler lives (a crash releases them): a later start's sweep
        # (mars_dask._leftovers) removes directories of clusters nobody holds any more
        self._dir_locks = hold_failover_dirs(self.journal_dir, self.checkpoint_dir, tag)
        self._probe_checkpoint_dir()
        self.auth = Authenticator(load_or_create_secret(self.journal_dir))
        self.journal = LineageJournal.open(self.journal_dir, max_memory_entries=int(_cfg("journal-memory-entries")),
                                           auth=self.auth)
        self.graphs_dir = private_dir(os.path.join(self.journal_dir, "graphs"))
        self.graph_seq = self.journal.max_graph_seq()
        self.memory_entries = int(_cfg("journal-memory-entries"))
        if n := len(self.journal):
            logger.info("read the lineage journal of a previous scheduler: %d keys (%s)",
                        n, self.journal_dir)
            self.event("journal-reopened", entries=n, directory=self.journal_dir)
        self._thread = threading.Thread(target=self._writer, name="mars-journal", daemon=True)
        self._thread.start()

        # each wrapper only where _dask_internals.check found its contact (else: the feature
        # is off, named in its one warning)
        if DI.enabled("failover-journal-restore"):
            self._orig_update_graph = DI.wrap_update_graph_handler(s, self._update_graph_msg)
            self._orig_find_lost = DI.wrap_find_lost_dependencies(s, self._lost_dependencies)  # module docstring
        checkpoints = DI.enabled("failover-checkpoints")
        if _cfg("checkpoint-scattered") and checkpoints and DI.enabled("failover-scatter-checkpoint"):
            self._orig_update_data = DI.wrap_update_data(s, self._update_data)
        DI.register_handlers(s, handlers={"mars_failover_stats": self.stats}, stream_handlers={
            P.OP_CHECKPOINTED: self.checkpointed, P.OP_CHECKPOINT_FAILED: self.checkpoint_failed})

        if checkpoints:
            kinds = ["checkpoint"] + (["shuffle"] if self.shuffle_checkpoints is True else [])
            await DI.add_worker_plugin_from_scheduler(
                s, pickle_dumps(MarsCheckpointPlugin(self.checkpoint_dir, self.auth, kinds)),
                MarsCheckpointPlugin.name)
        timeout = _cfg("no-workers-timeout")
        self.no_workers_timeout = parse_timedelta(timeout) if timeout is not None else None
        if self.no_workers_timeout is not None and DI.enabled("no-workers-timeout"):
            self._pc = PeriodicCallback(self._check_workers, 1000)
            self._pc.start()

    def _probe_checkpoint_dir(self) -> None:
        """Say at once (log and event) if the checkpoint directory cannot be written; the
        workers' failed writes are then reported one by one (:meth:`checkpoint_failed`)."""
        probe = os.path.join(self.checkpoint_dir, f".probe-{os.getpid()}")
        try:
            write_private(probe, b"")
            os.unlink(probe)
        except OSError as e:
            logger.error("the checkpoint directory %s cannot be written (%s): results will keep "
                         "their lineage instead of being checkpointed", self.checkpoint_dir, e)
            self.event("checkpoint-directory-unwritable", directory=self.checkpoint_dir, error=str(e))

    def close(self) -> None:
        """A normal close: the job is over, nothing needs the journal or the checkpoints."""
        if self._closed:
            return
        self._closed = True
        if self._pc is not None:
            self._pc.stop()
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(30)
        if self.journal is not None:
            self.journal.close()
            shutil.rmtree(self.journal_dir, ignore_errors=True)
            shutil.rmtree(self.checkpoint_dir, ignore_errors=True)
        for lock in self._dir_locks:
            lock.release()

    # -- the journal ------------------------------------------------------------------------
    def _writer(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                item()
            except Exception:  # pragma: no cover - keep journaling
                logger.exception("lineage journal write failed")
            finally:
                # not kept while waiting for the next write: a write's closure holds its
                # keys (the offload of a dropped 20,000-chunk job: all 40,000 of them, and
                # the ~120,000 objects they are made of, kept alive until the next job)
                item = None
                self._queue.task_done()

    def flush(self, timeout: float = 30.0) -> None:
        """Wait (blocking the event loop: only where lineage is read) until every queued
        journal write is done, at most ``timeout`` seconds. It waits on the queue's own
        condition, which the writer notifies when the last write is done: a loop of short
        sleeps here took the GIL from the scheduler's thread 200 times a second (the
        dashboard's failover page waits here in a thread while a job runs)."""
        if self._thread is None or not self._thread.is_alive():
            return
        q = self._queue
        deadline = time.monotonic() + timeout
        with q.all_tasks_done:
            while q.unfinished_tasks:
                left = deadline - time.monotonic()
                if left <= 0:
                    logger.warning("lineage journal writer is %d writes behind", q.unfinished_tasks)
                    return
                q.all_tasks_done.wait(left)

    async def _update_graph_msg(self, **msg):
        """The ``update-graph`` stream handler: remember the serialized graph for the
        update_graph hook of this same call (a context variable: calls may interleave)."""
        token = self._expr.set(DI.update_graph_expr(msg))
        try:
            return await self._orig_update_graph(**msg)
        finally:
            self._expr.reset(token)

    def _graph_path(self, seq: int) -> str:
        return os.path.join(self.graphs_dir, f"{seq:012d}.graph")

    def _record(self, seq: int, items: list, expr) -> None:
        """On the writer thread: the graph file (once), then the entries."""
        entries = []
        if expr is not None:
            try:
                data = _graph_bytes(self.auth, seq, expr.header, expr.frames)
            except Exception as e:  # noqa: BLE001 - a header msgpack refuses: journal each recipe
                logger.debug("graph %d: header not storable (%s); journaling its recipes one by one", seq, e)
                expr = None
            else:
                write_private(self._graph_path(seq), data)
        for key, spec, deps, prio, tileable, boundary in items:
            recipe = b""  # in the graph file
            if expr is None:
                try:
                    recipe = _dumps(spec)
                except Exception as e:  # noqa: BLE001 - any pickling error: not recoverable from the journal after a restart
                    logger.warning("cannot journal %r: %s", key, e)
            entries.append(JournalEntry(key, recipe, deps, prio, tileable, boundary))
        # a key journaled before (its entry names the graph file that has its recipe, or
        # reads its checkpoint) keeps its entry: the scheduler may have forgotten it and
        # got it back from the journal, or from a client that submitted it again
        self.journal.record(seq, entries, only_new=True)

    def _spec_of(self, entry: JournalEntry):
        """The recipe of a journaled key: the scheduler's own object while remembered,
        else from the entry (journal records are authenticated) or its graph file (verified
        before it is decoded)."""
        spec = self._specs.get(entry.key)
        if spec is not None:
            return spec
        if entry.recipe:
            return pickle_loads(entry.recipe)
        cached = self._graph_cache.pop(entry.graph_seq, None)
        if cached is not None:
            dsk = cached[0]
        else:
            path = self._graph_path(entry.graph_seq)
            with open(path, "rb") as f:
                header, frames = _graph_from(self.auth, entry.graph_seq, f.read(), path, entry.key)
            dsk = DI.materialize_graph(header, frames)
            self.counts["graph_reads"] += 1
            if not self._graph_cache:
                self.s.loop.call_later(GRAPH_CACHE_IDLE, self._trim_graph_cache)
        self._graph_cache[entry.graph_seq] = (dsk, time.monotonic())  # the newest last
        return dsk[entry.key]

    def _trim_graph_cache(self) -> None:
        """Drop the graphs read back that no restore used for ``GRAPH_CACHE_IDLE`` seconds,
        then all but the ``GRAPH_CACHE_MAX`` most recently used (between two trims a run of
        restores keeps every graph it reads: a lineage runs through them in turn).

        Why keep them that long: each graph read back is decoded whole, and restores come
        in runs: a worker loss restores the
        lineage of each lost key in turn, and while workers keep dying every released key
        whose dependents are not all in memory restores its own, through the same few
        graphs. Kept for one restore only, the scheduler spent 55% of its time decoding
        graphs and a 3-second kill cycle stopped the job's progress for minutes."""
        now = time.monotonic()
        for seq in [seq for seq, (_, used) in self._graph_cache.items() if now - used >= GRAPH_CACHE_IDLE]:
            del self._graph_cache[seq]
        while len(self._graph_cache) > GRAPH_CACHE_MAX:  # the least recently used first
            self._graph_cache.popitem(last=False)
        if self._graph_cache:
            self.s.loop.call_later(GRAPH_CACHE_IDLE, self._trim_graph_cache)

    def _drop_unused_graphs(self) -> None:
        """On the writer thread, after checkpoints cut lineage: delete graph files that no
        journal entry refers to."""
        live = self.journal.live_graph_seqs()
        for name in os.listdir(self.graphs_dir):
            if name.endswith(".graph") and int(name.split(".")[0]) not in live:
                try:
                    os.unlink(os.path.join(self.graphs_dir, name))
                except FileNotFoundError:
                    pass

    def update_graph(self, tasks, annotations) -> None:
        """``SchedulerPlugin.update_graph``: journal the new keys, prioritise restored ones."""
        s = self.s
        self.graph_seq += 1
        self.counts["graphs"] += 1
        seq = self.graph_seq
        tiles = annotations.get(P.ANN_TILEABLE, {}) if annotations else {}
        bounds = annotations.get(P.ANN_BOUNDARY, {}) if annotations else {}
        recorded = self._recorded
        items = []
        get = s.tasks.get
        for k in tasks:
            if k in recorded:
                continue
            ts = get(k)
            if ts is None or (spec := DI.run_spec(ts)) is None:
                continue
            recorded.add(k)
            p = ts.priority
            items.append((k, spec, tuple(d.key for d in ts.dependencies),
                          p[0] if p else 0, tiles.get(k), bounds.get(k)))
        if items:
            specs = self._specs
            for it in items:
                specs[it[0]] = it[1]
            if self.offload:
                self._seq_of.update((it[0], seq) for it in items)
            while len(specs) > self.memory_entries:
                specs.popitem(last=False)
            expr = self._expr.get()
            self._queue.put(lambda: self._record(seq, items, expr))
        if self._restoring:
            restoring, self._restoring = self._restoring, {}
            n = 0
            for k, prio in restoring.items():
                ts = get(k)
                if ts is None:
                    continue
                DI.set_priority(ts, DI.priority_in_generation(s, prio - RECOVERY_BOOST))
                n += 1
            self.counts["restored_keys"] += n
        if self._journal_plan is not None:
            plan, self._journal_plan = self._journal_plan, None
            self._start_plan(plan)

    def _lost_dependencies(self, dsk, keys):
        """(In place of ``Scheduler._find_lost_dependencies``.) Dask's check, after putting
        the lineage of keys it no longer has into ``dsk``.

        Also (it runs before Dask compares the graph with its tasks): a key whose task
        reads its checkpoint keeps that recipe when a client submits the key's own recipe
        again (the same expression built again), so one key has one recipe on the
        scheduler and its cut lineage is not pulled back in. And a key in memory whose
        inputs :meth:`_offload` cut and forgot, submitted again with the same recipe, is
        referred to by name (as a persisted Future would be): Dask compares the recipe's
        dependencies with the edges its task still has and would warn about a second recipe
        where there is one."""
        if self._loading:
            tasks = self.s.tasks
            for k in self._loading.intersection(dsk):
                ts = tasks.get(k)
                if ts is not None and is_loader(spec := DI.run_spec(ts)):
                    dsk[k] = spec
        if self._cut_keys:
            tasks = self.s.tasks
            cut = self._cut_keys
            for k in [k for k in cut if k in dsk] if len(cut) < len(dsk) else [k for k in dsk if k in cut]:
                ts = tasks.get(k)
                if (ts is not None and ts.state == "memory" and (spec := DI.run_spec(ts)) is not None
                        and spec.dependencies == dsk[k].dependencies):
                    del dsk[k]
        lost = self._orig_find_lost(dsk, keys)
        if not lost or self.journal is None:
            return lost
        tasks = self.s.tasks
        missing = [k for k in lost if k not in dsk and k not in tasks]
        t0 = time.monotonic()
        self.flush()
        try:
            entries = self.journal.lineage(missing, lambda k: k in dsk or k in tasks)
        except LineageIncomplete as e:
            self.counts["restore_failures"] += 1
            logger.warning("cannot rebuild %d lost keys from the journal: %s", len(e.missing), e)
            self.event("journal-restore-failed", missing=_some(e.missing), n=len(e.missing))
            return lost
        loaded = []
        for e in entries:
            try:
                spec = self._spec_of(e)
            except Exception as exc:  # noqa: BLE001 - an unreadable recipe: restore fails, reported
                self.counts["restore_failures"] += 1
                logger.warning("cannot read the journaled recipe of %r: %s", e.key, exc)
                self.event("journal-restore-failed", missing=_some(missing), n=len(missing),
                           unreadable=e.key, error=str(exc))
                return lost
            dsk[e.key] = spec
            self._restoring[e.key] = e.priority if isinstance(e.priority, (int, float)) else 0
            if is_loader(spec):
                loaded.append(e.key)
        lost = self._orig_find_lost(dsk, keys)
        if entries:
            # a recovery of its own (one line): a graph needs keys the scheduler had forgotten
            logger.info("rebuilding %d forgotten keys of earlier graphs from the journal for a new graph "
                        "(%d from checkpoints)", len(entries), len(loaded))
            self.event("journal-restore", missing=_some(missing), recompute=_some([e.key for e in entries]),
                       n=len(entries), from_checkpoint=_some(loaded), n_from_checkpoint=len(loaded),
                       duration=time.monotonic() - t0, complete=not lost)
            # started once update_graph has created the keys' task states
            self._journal_plan = Plan("journal", keys={e.key for e in entries})
        return lost

    # -- checkpoints ------------------------------------------------------------------------
    def checkpointed(self, worker=None, key=None, path=None, nbytes=0, seconds=None) -> None:
        """A worker wrote ``key``'s checkpoint to ``path`` (in ``seconds``): cut its lineage."""
        s = self.s
        if seconds is not None:
            self.policy.wrote(nbytes, seconds)
        with self._unlink_lock:
            if key in self._unlinking:
                self._unlinking.discard(key)  # its file is needed again: keep it
            elif key in self._deleted and not (path and os.path.exists(path)):  # deleted meanwhile
                logger.debug("checkpoint of %r reported after its file was deleted; keeping its lineage", key)
                return
        self._superseded_held.discard(key)
        ts = s.tasks.get(key)
        if ts is None or ts.state == "forgotten":
            self._unlink_checkpoint(key)  # unless the journal reads it (an earlier report)
            return
        self.counts["checkpoints_written"] += 1
        self._checkpoints_failing = False
        spec = loader_task(key, path)
        ann = ts.annotations or {}
        p = ts.priority
        entry = JournalEntry(key, _dumps(spec), (), p[0] if p else 0, ann.get(P.ANN_TILEABLE), "checkpoint")
        seq = self.graph_seq
        self._recorded.add(key)
        self._specs[key] = spec

        def write():
            superseded: list = []
            forgotten = self.journal.checkpoint(seq, entry, forgotten_checkpoints=superseded)
            for k in forgotten:
                self._recorded.discard(k)
                self._specs.pop(k, None)
            if forgotten:
                self._drop_unused_graphs()
            if superseded:
                self.s.loop.add_callback(self._checkpoints_superseded, superseded)

        self._queue.put(write)
        if ts.state == "memory" or (DI.run_spec(ts) is None and ts.state != "processing"):
            self._cut(ts, spec)
        self.event("checkpoint", key=key, nbytes=nbytes, worker=worker)

    def checkpoint_failed(self, worker=None, key=None, error=None) -> None:
        """A worker could not write ``key``'s checkpoint: nothing is cut (the journal and
        the scheduler keep its lineage); said loudly: log, event, and a warning to the
        clients at the first failure after a success."""
        self.counts["checkpoint_failures"] += 1
        logger.error("could not checkpoint %r on %s: %s; its lineage is kept", key, worker, error)
        self.event("checkpoint-failed", key=key, worker=worker, error=error, directory=self.checkpoint_dir)
        if not self._checkpoints_failing:
            self._checkpoints_failing = True
            msg = (f"mars_dask: checkpoints cannot be written to {self.checkpoint_dir} ({error}); "
                   f"results keep their lineage instead (see the 'checkpoint-failed' events on topic "
                   f"{P.EVENT_TOPIC!r})")
            self.s.log_event("warn", {"message": pickle.dumps(msg), "category": pickle.dumps(RuntimeWarning)})

    def _checkpoints_superseded(self, keys) -> None:
        """(Event loop.) The journal forgot these checkpointed keys (a newer checkpoint cut
        the lineage that went through them): their files are needed only while the
        scheduler holds the keys (its recipe for them reads the file). Delete them now, or
        when the scheduler forgets them."""
        tasks = self.s.tasks
        for k in keys:
            if k in tasks:
                self._superseded_held.add(k)
            else:
                self._unlink_checkpoint(k)

    def _unlink_checkpoint(self, key) -> None:
        """Delete ``key``'s checkpoint file on the writer thread (after the journal writes
        queued before), unless the journal reads it by then or the key is reported
        checkpointed again first."""
        with self._unlink_lock:
            self._unlinking.add(key)

        def unlink():
            if self.journal.is_checkpoint(key):
                with self._unlink_lock:
                    self._unlinking.discard(key)
                return
            with self._unlink_lock:
                if key not in self._unlinking:
                    return
                self._unlinking.discard(key)
                try:
                    os.unlink(checkpoint_path(self.checkpoint_dir, key))
                    self.counts["checkpoints_deleted"] += 1
                    self._deleted[key] = None
                    if len(self._deleted) > 4096:
                        self._deleted.popitem(last=False)
                except FileNotFoundError:
                    pass
                except OSError as e:
                    logger.warning("could not delete the superseded checkpoint of %r: %s", key, e)

        self._queue.put(unlink)

    def _cut(self, ts, spec) -> None:
        """``ts`` now reads its checkpoint: detach it from its inputs and let Dask forget the
        inputs nothing else needs."""
        DI.set_run_spec(ts, spec)
        self._loading.add(ts.key)
        if not ts.priority:  # scattered data never had one; Dask needs it to schedule
            DI.set_priority(ts, DI.priority_in_generation(self.s, 0))
        recs = {}
        for dts in DI.cut_dependencies(ts):
            if not dts.dependents and not dts.who_wants and not dts.waiters:
                if dts.state == "memory":
                    recs[dts.key] = "released"
                elif dts.state == "released":
                    recs[dts.key] = "forgotten"
        if recs:
            DI.run_transitions(self.s, recs, f"mars-checkpoint-cut-{time.time()}")

    def _update_data(self, *, who_has, nbytes, client=None):
        """``Scheduler.update_data`` (scatter): learn the data, then have it checkpointed."""
        r = self._orig_update_data(who_has=who_has, nbytes=nbytes, client=client)
        by_worker: dict = {}
        for key, workers in who_has.items():
            if workers:
                by_worker.setdefault(self.s.coerce_address(workers[0]), []).append(key)
        for addr, keys in by_worker.items():
            self.s.loop.add_callback(self._checkpoint_on, addr, keys)
        return r

    async def _checkpoint_on(self, addr, keys) -> None:
        try:
            await self.s.rpc(addr).mars_checkpoint(keys=keys)
        except Exception as e:  # noqa: BLE001 - a worker that cannot checkpoint: lineage kept, reported
            logger.warning("could not checkpoint scattered data on %s: %s", addr, e)

    # -- a scheduler restarted on a journal ----------------------------------------------------
    def rejoin(self, worker, keys) -> list:
        """A (re)started worker holds ``keys`` in its store that this scheduler does not
        know, typically after a scheduler restart: register the journaled ones as in memory
        there and keep them for ``rejoin-hold`` so a reconnecting client finds them."""
        if self.journal is None or not DI.enabled("failover-rejoin"):
            return []
        s = self.s
        unknown = [k for k in keys if k not in s.tasks]
        if not unknown:
            return []
        known = self.journal.journaled(unknown)
        if not known:
            return []
        # not the checkpointing wrapper: it is journaled
        DI.update_data(s, who_has={k: [worker] for k in known}, nbytes={}, client=P.HOLD_CLIENT,
                       original=getattr(self, "_orig_update_data", None))
        hold = parse_timedelta(_cfg("rejoin-hold"))
        s.loop.call_later(hold, self._release_hold, known)
        self.counts["rejoined_keys"] += len(known)
        self.event("rejoin", worker=worker, keys=_some(known), n=len(known))
        return known

    def _release_hold(self, keys) -> None:
        keys = [k for k in keys if k in self.s.tasks]
        if keys and P.HOLD_CLIENT in self.s.clients:
            self.s.client_releases_keys(keys=keys, client=P.HOLD_CLIENT, stimulus_id=f"mars-rejoin-hold-{time.time()}")

    # -- worker losses and recovery plans ----------------------------------------------------
    def remove_worker_event(self, msg: dict) -> None:
        """Before Dask's transitions for a removed worker (see _restart.py)."""
        ev = DI.remove_worker_event_fields(msg)
        if ev["expected"]:
            return
        self.counts["worker_losses"] += 1
        lost, scattered = ev["lost"], ev["scattered"]
        self._by_stimulus[ev["stimulus_id"]] = Plan(ev["worker"])
        self.event("worker-lost", worker=ev["worker"], lost=_some(lost), n_lost=len(lost),
                   lost_scattered=_some(scattered), processing=_some(ev["processing"]))

    def remove_worker(self, stimulus_id) -> None:
        plan = self._by_stimulus.pop(stimulus_id, None)
        if plan is not None:
            self._start_plan(plan)

    def loss_plan(self, stimulus_id) -> Plan | None:
        """The recovery plan of the worker removal ``stimulus_id`` (between the removal's
        transitions and :meth:`remove_worker`), for the restart half's recovery line."""
        return self._by_stimulus.get(stimulus_id)

    def loss_sources(self, keys, plan: Plan | None) -> tuple[int, int]:
        """Of ``keys`` (lost results being recomputed): how many read their checkpoint, and
        how many had their lineage restored from the journal for ``plan``."""
        tasks = self.s.tasks
        k = sum(1 for key in keys if (ts := tasks.get(key)) is not None and is_loader(DI.run_spec(ts)))
        j = len(plan.restored.intersection(keys)) if plan is not None and plan.restored else 0
        return k, j

    def adopted(self, keys) -> None:
        """Keys of a pending recovery plan that a restarted worker process brought back
        (the restart half adopted them from its store): not recomputed after all."""
        for k in keys:
            plan = self._plan_of.get(k)
            if plan is not None and k not in plan.adopted:
                plan.adopted.add(k)
                self.counts["recomputed"] -= 1

    def _start_plan(self, plan: Plan) -> None:
        tasks = self.s.tasks
        plan.pending = {k for k in plan.keys if k in tasks and tasks[k].state not in ("memory", "forgotten", "erred")}
        plan.n = len(plan.keys)
        loaders = [k for k in plan.keys if k in tasks and is_loader(DI.run_spec(tasks[k]))]
        if plan.cause != "journal":
            self.event("recovery-plan", cause=plan.cause, recompute=_some(plan.keys), n=plan.n,
                       from_checkpoint=_some(loaders), n_from_checkpoint=len(loaders))
        self.counts["recomputed"] += len(plan.pending)
        for k in plan.pending:
            self._plan_of[k] = plan
        if not plan.pending:
            self._finish(plan)

    def _finish(self, plan: Plan) -> None:
        d = time.monotonic() - plan.t0
        summary = {"cause": plan.cause, "n": plan.n, "adopted": len(plan.adopted),
                   "recomputed": plan.n - len(plan.adopted), "duration": d}
        self.history.append(summary)
        self.event("recovered", **summary)
        logger.debug("recovered from %s: %d keys in %.2f s", plan.cause, plan.n, d)

    def transition(self, key, start, finish, stimulus_id, worker=None, startstops=None, nbytes=0) -> None:
        if finish == "forgotten":
            # its recipe is in the journal on disk: nothing about it stays in memory (the
            # journal's index of it is on disk too)
            self._recorded.discard(key)
            self._specs.pop(key, None)
            self._loading.discard(key)
            if self.offload:
                self._cut_keys.discard(key)
                self._seq_of.pop(key, None)
            if not self._forgotten:
                self.s.loop.add_callback(self._offload_journal)
            self._forgotten.append(key)
            if self._superseded_held and key in self._superseded_held:
                self._superseded_held.discard(key)
                self._unlink_checkpoint(key)
        elif self.offload and start == "memory" and finish == "released":
            self._offload(key, stimulus_id)
        if self._by_stimulus:
            plan = self._by_stimulus.get(stimulus_id)
            if plan is not None and finish == "waiting":
                plan.keys.add(key)
        if finish == "memory" and start == "processing":
            ts = self.s.tasks.get(key)
            if ts is not None and is_loader(DI.run_spec(ts)):
                self.counts["checkpoint_loads"] += 1
            elif (ts is not None and self.shuffle_checkpoints == "auto" and worker is not None
                  and (ts.annotations or {}).get(P.ANN_BOUNDARY) == "shuffle"
                  and self.policy.worth(ts, compute_seconds(startstops), nbytes)):
                # on the worker's stream, so before the compute-task messages of the
                # pieces that read it (queued after this transition): the worker still
                # holds the value when it takes this message
                self.s.worker_send(worker, {"op": P.OP_CHECKPOINT, "keys": [key]})
        if self._plan_of and (finish in ("memory", "forgotten", "erred")
                              or (finish == "released" and start != "processing")):
            # done, or no longer needed (a key lost again while processing stays pending)
            plan = self._plan_of.pop(key, None)
            if plan is not None:
                plan.pending.discard(key)
                if not plan.pending:
                    self._finish(plan)

    # -- lineage offload --------------------------------------------------------------------
    def _offload(self, key, stimulus_id=None) -> None:
        """(Transition hook, ``key`` just left memory.) Keep only the lineage live work needs.

        Dask keeps a released key for as long as a dependent exists, so that it can
        recompute the dependent if its result is lost: in ``x = f(x).execute()`` every
        iteration's keys stay in the scheduler for ever. Here a released key that nobody
        wants and whose dependents all hold their results and came from later graphs (later
        ``execute()`` calls: inside one graph, Dask's own bookkeeping and the restart holds
        of ``_restart.py`` work on the lineage as Dask keeps it) is cut from them and
        forgotten:
        its recipe lives on in the journal (on disk). If such a dependent later leaves
        memory while still needed (its result lost), its dependencies are restored from the
        journal before Dask decides how to recompute it (:meth:`_restore_dependencies`), so
        recoverability is what it was, and the scheduler holds only the keys of live work."""
        ts = self.s.tasks.get(key)
        if ts is None:
            return
        dependents = ts.dependents
        seq = self._seq_of.get(key)
        if (seq is not None and not ts.who_wants and not ts.waiters and dependents
                and all(d.state == "memory" and self._seq_of.get(d.key, -1) > seq for d in dependents)):
            for d in DI.detach_dependents(ts):
                self._cut_keys.add(d.key)
            self._cut_keys.discard(key)
            if not self._to_forget:
                self.s.loop.add_callback(self._forget_offloaded)
            self._to_forget.add(key)
        elif key in self._cut_keys:
            self._cut_keys.discard(key)
            if ts.who_wants or ts.waiters or ts.dependents:
                restored = self._restore_dependencies(ts)
                plan = self._by_stimulus.get(stimulus_id) if restored and self._by_stimulus else None
                if plan is not None:  # a worker loss: counted in its recovery line
                    plan.restored.update(restored)

    def _offload_journal(self) -> None:
        keys, self._forgotten = self._forgotten, []
        # emptied containers keep their tables (sized for the largest job): let them go
        if not self._recorded:
            self._recorded = set()
        if not self._specs:
            self._specs = OrderedDict()
        if not self._seq_of:
            self._seq_of = {}
        self._queue.put(lambda: self.journal.offload(keys))  # the writer thread: no lock wait here

    def _forget_offloaded(self) -> None:
        keys, self._to_forget = self._to_forget, set()
        tasks = self.s.tasks
        recs = {k: "forgotten" for k in keys if (ts := tasks.get(k)) is not None and ts.state == "released"
                and not ts.dependents and not ts.who_wants and not ts.waiters}
        if recs:
            DI.run_transitions(self.s, recs, f"mars-lineage-offload-{time.time()}")

    def _restore_dependencies(self, ts) -> list:
        """Give ``ts`` (released, still needed) back the dependencies :meth:`_offload` cut,
        restoring forgotten ones (and their lineage) from the journal as released tasks;
        returns the keys restored."""
        s = self.s
        self.flush()
        entry = self.journal.get(ts.key)
        if entry is None:
            logger.warning("cannot restore the lineage of %r: not in the journal", ts.key)
            return []
        missing = [d for d in entry.dependencies if d not in s.tasks]
        try:
            entries = self.journal.lineage(missing, lambda k: k in s.tasks) if missing else []
            # graph by graph: the lineage alternates between graphs (inputs first), and
            # each graph read back is decoded whole
            by_graph = sorted(range(len(entries)), key=lambda i: entries[i].graph_seq)
            spec_of = {i: self._spec_of(entries[i]) for i in by_graph}
            specs = [(e, spec_of[i]) for i, e in enumerate(entries)]
        except Exception as e:  # noqa: BLE001 - LineageIncomplete, an unreadable graph file
            self.counts["restore_failures"] += 1
            logger.warning("cannot restore the lineage of %r from the journal: %s", ts.key, e)
            self.event("journal-restore-failed", missing=_some(missing), n=len(missing))
            return []
        restored = []
        for e, spec in specs:
            prio = e.priority if isinstance(e.priority, int | float) else 0
            dts = DI.new_released_task(s, e.key, spec, DI.priority_in_generation(s, prio - RECOVERY_BOOST),
                                       e.dependencies)
            restored.append(dts)
            self._seq_of[e.key] = e.graph_seq
        DI.observe_new_tasks(s, restored)  # as update_graph does for the tasks it creates
        for d in entry.dependencies:
            DI.add_dependency(ts, s.tasks[d])
        if specs:
            self.counts["restored_keys"] += len(specs)
            self.event("lineage-restored", key=ts.key, restored=_some(e.key for e, _ in specs), n=len(specs))
            logger.debug("restored the lineage of %r from the journal: %d keys", ts.key, len(specs))
        return [e.key for e, _ in specs]

    # -- no workers -------------------------------------------------------------------------
    def _check_workers(self) -> None:
        s = self.s
        if any(ws.status.name == "running" for ws in s.workers.values()):
            self._no_workers_since = None
            return
        waiting = DI.waiting_for_workers(s)
        if not waiting:
            self._no_workers_since = None
            return
        now = time.monotonic()
        if self._no_workers_since is None:
            self._no_workers_since = now
            logger.warning("no workers: %d tasks are waiting for one", len(waiting))
            self.event("no-workers", waiting=len(waiting), timeout=self.no_workers_timeout)
            return
        waited = now - self._no_workers_since
        if waited < self.no_workers_timeout:
            return
        sid = f"mars-no-workers-{time.time()}"
        logger.error("no workers for %.0f s: failing %d waiting tasks", waited, len(waiting))
        self.event("no-workers-failed", waiting=len(waiting), waited=waited)
        for k in waiting:
            ts = s.tasks.get(k)
            if ts is None or ts.state not in ("no-worker", "queued"):
                continue
            DI.fail_task(s, k, MarsNoWorkersError(k, waited), sid)
            self.counts["no_worker_failures"] += 1
        self._no_workers_since = None

    # -- reporting ---------------------------------------------------------------------------
    def event(self, action: str, **msg) -> None:
        self.s.log_event(P.EVENT_TOPIC, {"action": action, **msg})

    def stats(self, wait: float = 2.0) -> dict:
        """Counters, journal size and recent events (``mars_dask.failover_report``); the
        journal figures wait at most ``wait`` seconds for the writer thread (blocking:
        the dashboard's callers wait for it in a thread and pass 0)."""
        if wait > 0:
            self.flush(timeout=wait)
        js = self.journal.stats() if self.journal is not None else {}
        return {
            **self.counts,
            "journal_entries": js.get("entries", 0),
            "journal_entries_in_memory": js.get("entries_in_memory", 0),
            "journal_checkpoints": js.get("checkpoints", 0),
            "journal_bytes": js.get("bytes", 0),
            "journal_index_bytes": js.get("index_bytes", 0),
            "journal_directory": getattr(self, "journal_dir", None),
            "checkpoint_directory": getattr(self, "checkpoint_dir", None),
            "scheduler_tasks": len(self.s.tasks),
            "pending_recovery": len(self._plan_of),
            # checkpoint-shuffles: auto, map outputs judged (see _checkpoint_policy)
            "shuffle_checkpoints_skipped": self.policy.decided["skipped"],
            "recoveries": list(self.history),
            "events": [e for _, e in list(self.s.get_events(P.EVENT_TOPIC))[-100:]],
        }


def _shuffle_mode(value):
    """``checkpoint-shuffles``: True, False or "auto"."""
    if isinstance(value, str) and value.lower() in ("auto", "true", "false"):
        value = {"auto": "auto", "true": True, "false": False}[value.lower()]
    if value not in (True, False, "auto"):
        raise ValueError(f"mars-dask.failover.checkpoint-shuffles must be true, false or 'auto', got {value!r}")
    return value


def _dumps(obj) -> bytes:
    """pickle, or cloudpickle for what pickle refuses (functions defined in __main__...),
    without distributed's error logging: the caller decides what a failure means."""
    try:
        return pickle.dumps(obj, protocol=5)
    except Exception:  # noqa: BLE001 - not picklable by pickle: fall back below
        import cloudpickle

        return cloudpickle.dumps(obj, protocol=5)


def _some(keys) -> list:
    keys = list(keys)
    return keys[:P.KEYS_IN_EVENT]


def failover_report(client=None) -> dict:
    """What the failover plugin of ``client``'s scheduler has seen and done: counters
    (worker losses, keys recomputed, restored from the journal, checkpoints written and
    read), journal size, the scheduler's task count, recent recoveries with durations and
    the latest ``mars-failover`` events."""
    from ..errors import MarsDaskError
    from ..session import get_client

    client = client or get_client()

    def stats(dask_scheduler):
        p = dask_scheduler.plugins.get(P.PLUGIN_NAME)
        f = getattr(p, "failover", None)
        return f.stats() if f is not None else None

    out = client.run_on_scheduler(stats)
    if out is None:
        raise MarsDaskError("the scheduler has no mars_dask failover plugin (start it with "
                            "`dask scheduler --preload mars_dask`, or mars_dask.plugins.install(client))")
    return out
