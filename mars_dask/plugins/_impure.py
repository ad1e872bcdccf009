"""Operands that must not run twice: :func:`impure`.

Recovery re-runs work: a chunk whose worker died mid-run, a result lost with its worker, a
task that killed its worker by OOM (run again alone). That is right for pure functions and
wrong for a user function with side effects (it sends mail, appends to a file, charges a
card). Mars's failover proposal marks such subtasks as not retryable; here the user marks the
tileable with ``mars_dask.impure(t)``, and each of its chunk functions runs at most once:

- each chunk's function is wrapped (:class:`ImpureCall`, which also works when the chunk is
  fused into its consumer's task): before calling the user's function it claims the chunk's
  key from the scheduler (handler ``mars_impure_claim``, :class:`ImpureRuns`);
- the scheduler grants a key once. A second claim -- the same key run again by any recovery
  path -- is refused, and the task fails with :class:`~mars_dask.errors.ImpureTaskLostError`
  naming the key instead of running the function a second time;
- a claim ends when the key is forgotten (nothing holds it: a later ``execute()`` of the same
  expression is a new, deliberate run) or errs (the user may retry a failed run).

Without the mars_dask scheduler plugin (plain Dask, the local scheduler) nothing can be
claimed and the function simply runs. Claims live in the scheduler's memory: a scheduler
restarted after a crash does not know which impure keys already ran.
"""

from __future__ import annotations

import logging

from ..errors import ImpureTaskLostError

logger = logging.getLogger("mars_dask.plugins")

HANDLER = "mars_impure_claim"


class ImpureCall:
    """``func(*args, **kwargs)`` for chunk ``key``, run only if the scheduler grants the key."""

    def __init__(self, func, key):
        self.func, self.key = func, key

    def __call__(self, *args, **kwargs):
        if not _claim(self.key):
            raise ImpureTaskLostError(
                f"chunk {self.key!r} of an impure tileable (mars_dask.impure) ran before and its run or "
                f"result was lost; it is not run a second time. Execute the tileable again to re-run it.")
        return self.func(*args, **kwargs)

    def __reduce__(self):
        return (ImpureCall, (self.func, self.key))

    def __repr__(self) -> str:
        return f"impure({getattr(self.func, '__name__', self.func)!r})"


def _claim(key) -> bool:
    from distributed import get_worker
    from distributed.utils import sync

    try:
        worker = get_worker()
    except ValueError:  # not on a distributed worker: no recovery, nothing to guard against
        return True
    try:
        return bool(sync(worker.loop, getattr(worker.scheduler, HANDLER), key=str(key)))
    except Exception as e:  # a scheduler without the mars_dask plugin
        if "unknown operation" in str(e).lower() or HANDLER in str(e):
            logger.debug("no %s handler on the scheduler: running %r unguarded", HANDLER, key)
            return True
        raise


def impure(tileable):
    """Mark ``tileable`` as having side effects: each of its chunks runs at most once (see
    the module docstring); returns the tileable. Tiles it if needed (without executing
    anything unless its shape depends on data)."""
    from ..session import get_session
    from ..tiling.tile import tile

    data = getattr(tileable, "data", tileable)
    if not data.is_tiled:
        tile([data], lambda chunks: get_session().run_for_meta(chunks))
    for c in data.chunks:
        if c.future is None and c.func is not None and not isinstance(c.func, ImpureCall):
            c.func = ImpureCall(c.func, c.key)
    return tileable


class ImpureRuns:
    """The scheduler's claims (:data:`HANDLER`); see the module docstring."""

    def __init__(self):
        self.claimed: set[str] = set()
        self.refused = 0

    def claim(self, key: str) -> bool:
        if key in self.claimed:
            self.refused += 1
            logger.warning("impure chunk %s would run a second time: refused", key)
            return False
        self.claimed.add(key)
        return True

    def transition(self, key, finish: str) -> None:
        if finish in ("forgotten", "erred") and self.claimed:
            self.claimed.discard(str(key))
