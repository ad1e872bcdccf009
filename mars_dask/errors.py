"""Exceptions raised by mars_dask; all derive from :class:`MarsDaskError`."""


class MarsDaskError(Exception):
    """Base class of every error mars_dask raises itself."""


class TilingError(MarsDaskError):
    """An operand could not be tiled into chunks."""


class NotExecutedError(MarsDaskError, ValueError):
    """``fetch()`` on a tileable that has not been executed."""


class StoreError(MarsDaskError):
    """The node-local result store (mars_dask.spill) could not store or load a value."""


class StoreCorruptError(StoreError):
    """A store file is incomplete or not a store file (e.g. a write torn by a killed process)."""


class MarsOutOfMemoryError(MarsDaskError):
    """A task killed its worker process by exhausting memory while running alone (with the
    whole memory quota), so retrying cannot help. Names the task, its tileable, the memory
    estimate it was admitted with and what the process used when it died."""

    def __init__(self, key, tileable=None, estimate=None, used=None, memory_limit=None, worker=None):
        super().__init__(key, tileable, estimate, used, memory_limit, worker)
        self.key, self.tileable, self.estimate = key, tileable, estimate
        self.used, self.memory_limit, self.worker = used, memory_limit, worker

    def __str__(self) -> str:
        from dask.utils import format_bytes

        def fb(n):
            return "unknown" if n is None else format_bytes(int(n))

        return (
            f"task {self.key!r} of tileable {self.tileable!r} ran out of memory while running "
            f"alone: estimated {fb(self.estimate)}, its worker process {self.worker!r} used "
            f"{fb(self.used)} of a {fb(self.memory_limit)} limit when it died"
        )


class MarsNoWorkersError(MarsDaskError):
    """The cluster has had no worker for longer than ``mars-dask.failover.no-workers-timeout``
    while work was waiting: the job fails instead of hanging."""

    def __init__(self, key, waited=None):
        super().__init__(key, waited)
        self.key, self.waited = key, waited

    def __str__(self) -> str:
        return (f"task {self.key!r} could not run: the cluster has had no workers for "
                f"{self.waited:.0f} s (mars-dask.failover.no-workers-timeout)")


class LineageLostError(MarsDaskError):
    """A graph needs keys that the cluster no longer holds and whose lineage the failover
    journal cannot rebuild (neither alive, journaled nor checkpointed)."""


class UnsafeDirectoryError(MarsDaskError, PermissionError):
    """A directory (or file) mars_dask would use is not private to this user: owned by
    someone else, writable by group or others, or a symlink (see ``mars_dask._safe_files``).
    Nothing is read from it or written to it."""

    def __init__(self, path, why):
        super().__init__(path, why)
        self.path, self.why = path, why

    def __str__(self) -> str:
        return (f"refusing to use {self.path!r}: it {self.why}; remove it or choose another "
                f"directory (mars-dask.* directory settings)")


class DataIntegrityError(StoreCorruptError):
    """A file's payload does not match its checksum or its authentication code, or is
    shorter than its header says: the data is treated as lost (recomputed from lineage where
    lineage exists). Names the key and the file."""

    def __init__(self, key, path, why):
        super().__init__(key, path, why)
        self.key, self.path, self.why = key, path, why

    def __str__(self) -> str:
        return f"data of key {self.key!r} in {self.path!r} is damaged: {self.why}"


class ImpureTaskLostError(MarsDaskError):
    """The result of an operand marked impure (it has side effects, e.g. writes a file) was
    lost and would have to run a second time: it is not re-run."""


class ClientClosedError(MarsDaskError):
    """The ``distributed.Client`` mars_dask was using has been closed (by ``client.close()``,
    or because it lost its scheduler and gave up reconnecting). mars_dask does not start a
    cluster in its place: create a new Client, or start the embedded cluster explicitly with
    :func:`mars_dask.start_embedded_cluster`. Results held through the closed client
    are gone; execute those tileables again."""


class PluginsNotInstalledWarning(RuntimeWarning):
    """The cluster in use lacks part of mars_dask: its scheduler has no mars_dask plugin
    (warned once per scheduler by the first ``execute()``: the work runs, without memory
    quota, OOM handling, restart without data loss or failover), or its workers have no
    node-local store (warned by :func:`mars_dask.plugins.install`). The message says how to
    install what is missing. Silence it with
    ``warnings.filterwarnings("ignore", category=PluginsNotInstalledWarning)``."""
