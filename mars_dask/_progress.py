"""The progress bar of ``execute()``.

Why: Mars shows a progress bar while ``execute()`` runs, and a job on a cluster can take
minutes with nothing else to look at. Why a room of its own: the bar has nothing to do with
tiling, submission or reconnection; those only tell it what they do
(:func:`track`: the chunks this call waits for, :func:`wait_timeout` and :func:`poll`: the
session's wait loop, ``Reconnecting._wait_all``, waking up to refresh it).

The bar counts the chunks of the tileables being executed that are finished (with iterative
tiling, also the chunks executed to learn shapes: the total grows as tiling asks for them).
``show_progress``: ``True`` shows it at once, ``False`` never, ``"auto"`` only once the call
has run for ``mars-dask.session.progress-after`` (a fast call prints nothing), ``None`` is
``mars-dask.session.show-progress``. The count is a pass over the Futures (cheap), redone
every ``progress_update_interval`` seconds (Mars's argument), but never more often than
every :data:`MIN_PERIOD`.

In a terminal the bar is ``tqdm``'s text bar on stderr; in a Jupyter kernel it is a
``tqdm.notebook`` widget when ``ipywidgets`` is installed (the text bar otherwise).
"""

from __future__ import annotations

import contextvars
import importlib.util
import sys
import time
from typing import Sequence

from dask.utils import parse_timedelta

from . import config

#: the bar is counted and redrawn at most this often (seconds), whatever
#: ``progress_update_interval`` says
MIN_PERIOD = 0.2
#: the longest the wait loop blocks between two looks at the bar (its timeout without one)
_IDLE_TIMEOUT = 1.0

_SHOW = (None, True, False, "auto")

# the reporter of the execute() running in this thread (a ContextVar: threads executing
# concurrently each have their own, and none outside execute())
_current: contextvars.ContextVar[Progress | None] = contextvars.ContextVar("mars_dask_progress", default=None)


def check_args(show_progress, progress_update_interval, what: str = "show_progress") -> None:
    """Reject bad values before any work starts (``execute()``'s own arguments; ``what``:
    where ``show_progress`` came from)."""
    if show_progress not in _SHOW or (show_progress is not None and not isinstance(show_progress, (bool, str))):
        raise ValueError(f"{what} must be True, False, 'auto' or None, not {show_progress!r}")
    if (isinstance(progress_update_interval, bool) or not isinstance(progress_update_interval, (int, float))
            or not progress_update_interval > 0):
        raise ValueError(f"progress_update_interval must be a positive number of seconds, "
                         f"not {progress_update_interval!r}")


def _in_notebook() -> bool:
    """Running in a Jupyter kernel (an IPython ZMQ shell)? IPython is not imported for this:
    a kernel has imported it already."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    return type(shell).__name__ == "ZMQInteractiveShell"


def _bar_class():
    if _in_notebook() and importlib.util.find_spec("ipywidgets") is not None:
        from tqdm.notebook import tqdm
    else:
        from tqdm import tqdm
    return tqdm


class Progress:
    """One ``execute()`` call's bar: a context manager; while it is open, :func:`track`,
    :func:`poll` and :func:`wait_timeout` reach it. ``file``: where the text bar is written
    (``None``: ``sys.stderr`` when it appears)."""

    def __init__(self, show_progress=None, progress_update_interval=1, file=None):
        check_args(show_progress, progress_update_interval)
        if show_progress is None:
            show_progress = config.get("session.show-progress")
            check_args(show_progress, progress_update_interval, "mars-dask.session.show-progress")
        if show_progress == "auto":
            self._after = parse_timedelta(config.get("session.progress-after"))
        else:
            self._after = 0.0 if show_progress else None  # None: never
        self._period = max(MIN_PERIOD, float(progress_update_interval))
        self._file = file
        self._chunks: dict = {}  # the chunks counted (insertion-ordered set)
        self._bar = None
        self._t0 = time.monotonic()
        self._next = self._t0 + (self._after or 0.0)  # the next count (or the bar's appearance)
        self._token = None

    # -- what the session tells it ---------------------------------------------------------
    def track(self, chunks: Sequence) -> None:
        if self._after is None:
            return
        for c in chunks:
            self._chunks.setdefault(c, None)
        if self._bar is not None or self._after == 0.0:
            self.poll(force=True)

    def wait_timeout(self) -> float:
        """How long the wait loop may block before it should call :meth:`poll`."""
        if self._after is None:
            return _IDLE_TIMEOUT
        return min(_IDLE_TIMEOUT, max(0.05, self._next - time.monotonic()))

    def poll(self, force: bool = False) -> None:
        """Show the bar once it is due, and update it (at most every period)."""
        if self._after is None:
            return
        now = time.monotonic()
        if now < self._next and not force:
            return
        if self._bar is None and now - self._t0 < self._after:
            return
        self._next = now + self._period
        self._update()

    # -- drawing ---------------------------------------------------------------------------
    def _done(self) -> int:
        return sum(1 for c in self._chunks if c.future is not None and c.future.status == "finished")

    def _update(self, done: int | None = None) -> None:
        total = len(self._chunks)
        if done is None:
            done = self._done()
        bar = self._bar
        if bar is None:  # (initial: what was done before the bar is no rate)
            bar = self._bar = _bar_class()(total=total, initial=done, desc="execute", unit="chunk",
                                           file=self._file, mininterval=0, dynamic_ncols=True)
            bar.start_t -= time.monotonic() - self._t0  # elapsed: since the call started
            bar.refresh()
            return
        if bar.total != total:
            bar.total = total
        if done > bar.n:
            bar.update(done - bar.n)  # (update, not n=: tqdm's rate follows the increments)
        else:  # the same, or fewer (lost chunks are computed again)
            bar.n = done
            bar.refresh()

    def close(self, ok: bool) -> None:
        """The bar closed, if it was shown. After a success it ends full: every chunk was
        computed (the Futures of some may be gone already: inputs that iterative tiling
        executed, released since). After an error it keeps its last count (nothing that
        could raise in place of the job's exception)."""
        if self._bar is None:
            return
        try:
            if ok:
                self._update(len(self._chunks))
        finally:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Progress:
        self._token = _current.set(self)
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            self.close(ok=exc_type is None)
        finally:
            _current.reset(self._token)


def track(chunks: Sequence) -> None:
    """The current ``execute()`` waits for ``chunks`` too (nothing without a bar)."""
    p = _current.get()
    if p is not None:
        p.track(chunks)


def poll() -> None:
    p = _current.get()
    if p is not None:
        p.poll()


def wait_timeout(default: float) -> float:
    """The wait loop's timeout: ``default``, or shorter while a bar is due or shown."""
    p = _current.get()
    return default if p is None else min(default, p.wait_timeout())
