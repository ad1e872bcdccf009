"""Idle workers take queued tasks from busy ones: Dask's work stealing, for small tasks.

Why: Dask places a task that has inputs on a worker holding one of them
(``Scheduler.decide_worker`` looks nowhere else), and its work stealing moves queued tasks
only off a worker whose queue holds over 0.2 s of expected work (``WorkStealing.balance``).
A chain of millisecond tasks (``x = (x + x.T) * 0.5 + 1`` on 250² chunks: 0.4 ms each)
never queues that much, so a worker that holds no inputs is never given a task again: a
worker that joins late, or a process restarted after a kill (the tasks reading its adopted
results were queued elsewhere when it died). With a worker SIGKILLed every 3 s the 80-step
chain ran on one worker of three for most of its run.

Every ``mars-dask.scheduler.balance-interval`` a worker with a free thread and nothing
queued takes, from the worker with the longest queue, up to half the difference in queue
length: the tasks that worker would start last (lowest priority), through Dask's own
stealing protocol (the victim gives a task up only if it has not started it; see
:func:`mars_dask._dask_internals.move_queued_task`). Their results are then held by the
thief, so their dependents follow them there by locality and the work spreads again. Tasks
with restrictions stay where Dask put them.
"""

from __future__ import annotations

import logging

from distributed.core import Status

from .. import _dask_internals as DI

logger = logging.getLogger("mars_dask.plugins")

#: a worker with fewer queued tasks than this per thread is not worth taking from
MIN_QUEUE_PER_THREAD = 4
#: at most this many tasks moved to one idle worker per round
MAX_MOVES = 64


def _restricted(ts) -> bool:
    return bool(ts.worker_restrictions or ts.host_restrictions or ts.resource_restrictions
                or ts.actor)


class Balance:
    """The periodic balancing round (the scheduler plugin runs :meth:`round`)."""

    def __init__(self, scheduler):
        self.s = scheduler
        self.moved = 0  # tasks asked to move since the start (the /api/mars figures)

    def round(self) -> int:
        """One round; returns how many moves were requested."""
        workers = [ws for ws in self.s.workers.values() if ws.status == Status.running]
        if len(workers) < 2:
            return 0
        idle = [ws for ws in workers if not ws.processing]
        if not idle:
            return 0
        busy = sorted((ws for ws in workers if len(ws.processing) >= MIN_QUEUE_PER_THREAD * ws.nthreads),
                      key=lambda ws: len(ws.processing), reverse=True)
        asked = 0
        for i, thief in enumerate(idle):
            if not busy:
                break
            victim = busy[i % len(busy)]
            n = min(MAX_MOVES, (len(victim.processing) - victim.nthreads) // 2)
            tasks = sorted((ts for ts in victim.processing if not _restricted(ts)),
                           key=lambda ts: ts.priority, reverse=True)[:n]
            for ts in tasks:
                asked += DI.move_queued_task(self.s, ts, victim, thief)
        if asked:
            logger.debug("balance: asked to move %d queued tasks to %d idle workers", asked, len(idle))
        self.moved += asked
        return asked
