"""What each ``execute()`` call is doing, per tileable: the scheduler side of
``/api/mars/v1/tileables`` (see ``_http.py``).

Why it is built this way:

- The scheduler plugin's ``transition`` hook runs for every task, so the work there is one
  dict lookup and a few counters; everything is aggregated per tileable (counters), never
  as lists of keys per tileable.
- Registration happens in ``update_graph``, once per new key (Dask passes annotations only
  for the tasks a graph creates). A key is counted by the call whose graph created it.
  The call is the ``mars_call`` annotation (set by the session for each ``execute()``, so
  the several graphs of iterative tiling are one call); a graph without it (``dask.compute``
  of a tileable, ``memory_hint``'s tiling) is its own call, named by its stimulus id.
- Exactly-once counting across losses and recomputations needs to know, per key, whether it
  was counted done already: ``_pending`` holds the keys not finished yet (gone when they
  finish, so a call that is over holds none), ``_done`` the finished keys the scheduler
  still knows (for "bytes held": a key's ``nbytes`` is added when it enters memory and
  taken off when it leaves; bounded by the scheduler's own task table: an entry goes when
  its key is forgotten).
- A finished call's counts stay as they were when the scheduler forgets its keys (lineage
  offload, dropped handles): they only change while keys of it are pending. ``bytes`` is
  what its keys hold *now* (it drops to 0 once they are released), ``result_bytes`` what
  its chunks produced (each counted once, kept).
- Finished calls are kept, the newest ``mars-dask.dashboard.finished-calls-kept``; a
  graph arriving later for a kept call (iterative tiling submits again after its first
  graph finished) reopens it.

A key already submitted by another call that is still running stays counted there. A call
that creates no new key (every key was already on the cluster) is not recorded: nothing ran
for it.
"""

from __future__ import annotations

import time
from collections import deque

from dask.utils import key_split

from . import _protocol as P

_ENDS = frozenset({"memory", "erred", "forgotten"})


class _Tile:
    """One tileable (one layer) of one call: counters only."""

    __slots__ = ("call", "key", "operand", "total", "done", "erred", "cancelled", "pending",
                 "bytes", "result_bytes", "t0", "t1")

    def __init__(self, call: _Call, key: str, operand: str | None, now: float):
        self.call = call
        self.key = key
        self.operand = operand
        self.total = self.done = self.erred = self.cancelled = self.pending = 0
        self.bytes = 0  # nbytes of its keys in memory now
        self.result_bytes = 0  # nbytes of its chunks when each finished (counted once)
        self.t0 = now  # its first task seen (submitted)
        self.t1: float | None = None  # its last chunk finished (None: running)

    @property
    def state(self) -> str:
        if self.pending:
            return "running"
        if self.erred:
            return "erred"
        return "cancelled" if self.cancelled else "finished"

    def report(self, now: float) -> dict:
        return {"key": self.key, "name": key_split(self.key), "operand": self.operand,
                "state": self.state, "done": self.done, "total": self.total, "erred": self.erred,
                "cancelled": self.cancelled, "bytes": self.bytes, "result_bytes": self.result_bytes,
                "elapsed": (self.t1 if self.t1 is not None else now) - self.t0}


class _Call:
    __slots__ = ("id", "client", "grouped", "graphs", "tiles", "running", "t0", "t1", "submitted")

    def __init__(self, cid: str, client, grouped: str, now: float):
        self.id = cid
        self.client = client
        self.grouped = grouped  # "execute": an execute() call; "graph": one submitted graph
        self.graphs = 0
        self.tiles: dict[str, _Tile] = {}
        self.running = 0  # tiles with pending keys
        self.t0 = now
        self.t1: float | None = None
        self.submitted = time.time()

    def report(self, now: float) -> dict:
        tiles = [t.report(now) for t in self.tiles.values()]
        states = {t["state"] for t in tiles}
        state = next((s for s in ("running", "erred", "cancelled") if s in states), "finished")
        return {"id": self.id, "client": self.client, "grouped": self.grouped, "graphs": self.graphs,
                "state": state, "submitted": self.submitted,
                "elapsed": (self.t1 if self.t1 is not None else now) - self.t0,
                "done": sum(t["done"] for t in tiles), "total": sum(t["total"] for t in tiles),
                "erred": sum(t["erred"] for t in tiles), "bytes": sum(t["bytes"] for t in tiles),
                "tileables": tiles}


class Tileables:
    """Per-call, per-tileable progress. ``tasks`` arguments are the scheduler's task table
    (anything with ``.get(key)`` returning an object with ``nbytes``)."""

    def __init__(self, keep: int):
        self.keep = int(keep)
        self.calls: dict[str, _Call] = {}  # running and kept finished calls, oldest first
        self._finished: deque[str] = deque()  # ids of finished calls, in the order they finished
        self._pending: dict = {}  # key -> _Tile: submitted, not finished
        self._done: dict = {}  # key -> _Tile: finished, still known to the scheduler

    # -- update_graph: registration (once per new key) ---------------------------------------
    def update_graph(self, annotations: dict, *, client=None, stimulus_id=None) -> None:
        tiles = annotations.get(P.ANN_TILEABLE)
        if not tiles:
            return
        ops = annotations.get(P.ANN_OPERAND) or {}
        calls = annotations.get(P.ANN_CALL)
        cid = next(iter(calls.values())) if calls else None
        call = self._open(cid if cid is not None else str(stimulus_id), client,
                          "execute" if cid is not None else "graph")
        now = time.monotonic()
        pending, done = self._pending, self._done
        by_key = call.tiles
        for key, name in tiles.items():
            if key in pending:
                continue  # counted by the running call that submitted it first
            done.pop(key, None)  # (a key submitted anew was forgotten: normally gone already)
            t = by_key.get(name)
            if t is None:
                t = by_key[name] = _Tile(call, name, ops.get(key), now)
            if not t.pending:
                t.t1 = None
                call.running += 1
            t.pending += 1
            t.total += 1
            pending[key] = t
        if not call.running:  # every key was another running call's: nothing to wait for
            self._call_finished(call, now)

    def _open(self, cid: str, client, grouped: str) -> _Call:
        now = time.monotonic()
        call = self.calls.get(cid)
        if call is None:
            call = self.calls[cid] = _Call(cid, client, grouped, now)
        elif call.t1 is not None:  # a kept finished call submits again
            call.t1 = None
            try:
                self._finished.remove(cid)
            except ValueError:  # pragma: no cover - defensive
                pass
        call.graphs += 1
        return call

    # -- transition: O(1) per task ---------------------------------------------------------
    def transition(self, key, start: str, finish: str, tasks) -> None:
        if start == "memory":  # (a forgotten task is still in ``tasks`` during this hook)
            t = self._done.get(key)
            if t is not None:
                t.bytes -= _nbytes(tasks, key)
        if finish not in _ENDS:
            return
        t = self._pending.pop(key, None)
        if t is not None:
            if finish == "memory":
                nb = _nbytes(tasks, key)
                t.done += 1
                t.bytes += nb
                t.result_bytes += nb
                self._done[key] = t
            elif finish == "erred":
                t.erred += 1
            else:
                t.cancelled += 1
            t.pending -= 1
            if not t.pending:
                self._tile_finished(t)
        elif finish == "memory":
            t = self._done.get(key)
            if t is not None:  # in memory again (recomputed after a loss, adopted): not done twice
                t.bytes += _nbytes(tasks, key)
        elif finish == "forgotten":
            self._done.pop(key, None)  # its bytes left with the start == "memory" step

    def _tile_finished(self, t: _Tile) -> None:
        now = time.monotonic()
        t.t1 = now
        call = t.call
        call.running -= 1
        if not call.running:
            self._call_finished(call, now)

    def _call_finished(self, call: _Call, now: float) -> None:
        call.t1 = now
        if self.calls.get(call.id) is not call:
            return  # dropped already (pragma: defensive)
        self._finished.append(call.id)
        while len(self._finished) > self.keep:
            self.calls.pop(self._finished.popleft(), None)

    # -- the route ---------------------------------------------------------------------------
    def report(self) -> dict:
        """``{"calls": [...]}``, newest call first."""
        now = time.monotonic()
        return {"calls": [c.report(now) for c in reversed(list(self.calls.values()))],
                "finished_calls_kept": self.keep}


def _nbytes(tasks, key) -> int:
    ts = tasks.get(key)
    nb = ts.nbytes if ts is not None else 0
    return nb if nb > 0 else 0  # (-1: not known)
