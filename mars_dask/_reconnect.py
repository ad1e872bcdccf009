"""Following a Client through the loss of its scheduler: wait, rejoin, resubmit.

Why a room of its own: the reconnection state machine (connected -> lost -> reconnected ->
workers rejoined -> lost work resubmitted) is the subtle part of a session, and it is
easier to reason about apart from tiling and submission. :class:`Session` inherits it
(:class:`Reconnecting`); ``Session.submit_chunks`` drives it.

When the scheduler dies the Client cancels every Future (reason ``scheduler-connection-lost``)
and tries to reconnect to the same address. ``execute()``, ``fetch()`` and the shape queries
of iterative tiling notice it, wait for the client to reconnect
(``mars-dask.session.reconnect-timeout``, then :class:`MarsDaskError`) and for the workers
to rejoin (``mars-dask.session.rejoin-wait``: each restarted worker has listed what its
store holds to the new scheduler), and resubmit: every chunk needed whose Future is dead --
including inputs executed by earlier ``execute()`` calls -- is emitted again from the
client-side chunk graph, with the same keys and recipes, so the new scheduler finds the
results the workers still hold (and its journal) instead of recomputing them.

The names here are re-exported by :mod:`mars_dask.session`, where they have always been
importable from.
"""

from __future__ import annotations

import logging
import time
import weakref
from typing import Sequence

from dask.utils import parse_timedelta
from distributed import Future, wait
from distributed.client import FuturesCancelledError
from distributed.comm import CommClosedError

from . import _dask_internals as DI
from . import _progress, config
from .plugins import _protocol as _P
from .errors import MarsDaskError
from .tiling.core import Chunk, bump_execution_epoch

# the session's logger, as before the split (one name to configure for the whole session)
logger = logging.getLogger("mars_dask.session")


#: Client.cancel's reason for every Future when the client loses the scheduler
#: (distributed 2026.8, Client._reconnect)
LOST_REASON = "scheduler-connection-lost"
#: the event topic each worker logs on once it rejoined (mars_dask.plugins._worker)
REJOIN_TOPIC = _P.REJOIN_TOPIC

# client -> the largest worker count seen on its scheduler (to know how many should rejoin)
_n_workers: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class _SchedulerLost(Exception):
    """Internal: the scheduler connection was lost during an operation."""


class _Vanished(Exception):
    """Internal: a chunk's weakly held Future was released meanwhile (resubmit it)."""


def _dead(f) -> bool:
    """A Future that no longer stands for data on the cluster (cancelled: the client lost
    the scheduler, or the key was cancelled)."""
    return f.status == "cancelled"


def _lost_by_disconnect(f) -> bool:
    # private contact: see mars_dask._dask_internals.future_cancel_reason
    return DI.future_cancel_reason(f) == LOST_REASON


def _revive(outputs: Sequence[Chunk]) -> list[tuple[Chunk, Future]]:
    """Unbind the dead Futures of ``outputs`` and of everything they are built from (down
    to chunks whose Futures are alive), so that the next emission rebuilds them from the
    chunk graph with the same keys and recipes. Returns ``(chunk, its dead Future)``."""
    revived = []
    seen = set()
    stack = list(outputs)
    while stack:
        c = stack.pop()
        k = c.key
        if k in seen:
            continue
        seen.add(k)
        f = c.future
        if f is not None:
            if not _dead(f):
                continue  # alive
            # rebuilt from its recipe, or (lineage cut at a checkpoint: Chunk.cut_lineage)
            # requested by key from the scheduler, whose journal knows how to restore it
            c.future = None
            revived.append((c, f))
        stack.extend(c.inputs)
    return revived


class Reconnecting:
    """The scheduler-loss half of :class:`mars_dask.session.Session` (a mixin: it needs
    ``self.client`` and ``self.submit_chunks``)."""

    # -- scheduler loss ------------------------------------------------------------------
    def _note_workers(self) -> None:
        # private contact: the Client's cached scheduler identity (_dask_internals.scheduler_n_workers)
        n = DI.scheduler_n_workers(self.client)
        if n > _n_workers.get(self.client, 0):
            _n_workers[self.client] = n

    def _connected(self) -> bool:
        return self.client.status == "running"

    def _recover_connection(self, deadline: float | None = None) -> None:
        """After a scheduler loss: wait for the client to reconnect (or fail clearly), then
        give the workers a bounded time to rejoin with what their stores hold."""
        c = self.client
        timeout = parse_timedelta(config.get("session.reconnect-timeout"))
        if deadline is None:
            deadline = time.monotonic() + timeout
        address = getattr(getattr(c, "scheduler", None), "address", None)
        t0 = time.monotonic()
        if not self._connected():
            logger.warning("lost the scheduler %s: waiting up to %.0f s for it to come back", address, timeout)
        while not self._connected():
            if c.status in ("closing", "closed") or time.monotonic() > deadline:
                raise MarsDaskError(
                    f"lost the connection to the scheduler {address} and could not reconnect "
                    f"within {timeout:.0f} s (mars-dask.session.reconnect-timeout; the Client "
                    f"itself gives up after its `timeout`): the results of this job are lost"
                )
            time.sleep(0.05)
        rejoin = parse_timedelta(config.get("session.rejoin-wait"))
        want = _n_workers.get(c, 0)
        end = min(time.monotonic() + rejoin, deadline)
        while True:
            if not self._connected():  # lost again while waiting
                return self._recover_connection(deadline)
            try:
                info = c.scheduler_info(n_workers=-1)
                workers = set(info["workers"])
                joined = {m.get("worker") for _, m in c.get_events(REJOIN_TOPIC) if isinstance(m, dict)}
            except Exception:  # noqa: BLE001 - lost again: see above
                workers, joined = set(), set()
            if workers and len(workers) >= want and workers <= joined:
                break
            if time.monotonic() > end:
                logger.warning("resubmitting with %d of %d workers rejoined", len(workers & joined), want)
                break
            time.sleep(0.1)
        if time.monotonic() - t0 > 0.5:
            logger.warning("reconnected to %s after %.1f s, %d workers; resubmitting lost work",
                           address, time.monotonic() - t0, len(workers))

    def _is_loss(self, exc: BaseException, futures=()) -> bool:
        """Did ``exc`` come from losing the scheduler (rather than from a kernel)?"""
        if not self._connected():
            return True  # reconnecting, or closed (then _recover_connection raises)
        if isinstance(exc, CommClosedError):
            return True
        return any(f is not None and _lost_by_disconnect(f) for f in futures)

    def _wait_all(self, futs, deadline_holder: list) -> None:
        """``distributed.wait`` that cannot hang on a client that never reconnects. While
        ``execute()`` shows a progress bar (:mod:`mars_dask._progress`) the waits are
        shorter, and the bar is updated between them."""
        timeout = parse_timedelta(config.get("session.reconnect-timeout"))
        while True:
            try:
                wait(futs, timeout=_progress.wait_timeout(1.0))
                return
            except (FuturesCancelledError, TimeoutError) as e:
                # distributed's sync() keeps the error in a closure cell of its frame and
                # the error's traceback holds that frame, and ours with ``futs``: a cycle
                # that kept the results on the cluster after the user dropped them, until
                # a full gc. The traceback says nothing here: drop it.
                e.__traceback__ = None
                if isinstance(e, FuturesCancelledError):
                    return  # all done, some cancelled: the caller looks at why
                _progress.poll()
                st = self.client.status
                if st == "running":
                    deadline_holder[0] = None
                    continue
                if st in ("closing", "closed"):
                    raise _SchedulerLost() from None
                if deadline_holder[0] is None:
                    deadline_holder[0] = time.monotonic() + timeout
                elif time.monotonic() > deadline_holder[0]:
                    raise _SchedulerLost() from None


    # -- waiting for submitted work --------------------------------------------------------
    def _wait(self, chunks: Sequence[Chunk]) -> None:
        futs = [c.future for c in chunks]
        if any(f is None for f in futs):
            raise _Vanished()
        holder = [None]
        self._wait_all(futs, holder)
        for c in chunks:
            f = c.future
            if f is None:
                raise _Vanished()
            if f.status != "finished":
                if any(_lost_by_disconnect(c2.future) for c2 in chunks) or (
                    not self._connected() and self.client.status not in ("closing", "closed")
                ):
                    raise _SchedulerLost()
                for c2 in chunks:
                    if c2.future is not None and c2.future.status != "finished":
                        c2.future = None
                bump_execution_epoch()
                if self.client.status in ("closing", "closed") and f.status == "cancelled":
                    raise MarsDaskError(
                        f"the client closed (it lost the scheduler and did not reconnect within "
                        f"its timeout) while waiting for {f.key!r}"
                    )
                f.result()  # raises the kernel's original exception

    def _retrying(self, chunks: Sequence[Chunk], fn):
        """``fn()`` (a client call on the Futures of ``chunks``), resubmitting lost chunks
        and retrying if the scheduler is lost meanwhile."""
        while True:
            self.submit_chunks(chunks)  # nothing to do unless something was lost
            try:
                return fn()
            except Exception as e:
                if not self._is_loss(e, [c.future for c in chunks]):
                    raise
                self._recover_connection()
