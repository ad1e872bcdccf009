"""Durable checkpoints: results written where every worker can read them, and the task that
reads one back in place of the lineage behind it.

Which results: shuffle map outputs (``mars_boundary="shuffle"``: every one with
``mars-dask.failover.checkpoint-shuffles: true``; with ``auto``, the default, those the
scheduler judges worth it (``_checkpoint_policy.py``), which it asks for on the worker's
stream, ``OP_CHECKPOINT``), outputs of ``execute(checkpoint=True)``
(``mars_boundary="checkpoint"``) and scattered data (at ingest, on the scheduler's request).
The worker that computed a result writes it from a background thread (the task is already
done; nothing waits for the write) in the store's formats (numpy raw buffers, pandas as
Arrow IPC, anything else through Dask's serialization), then tells the scheduler, which
swaps the key's recipe for :func:`load_checkpoint` and cuts its lineage (see
``_failover.py``).

Files (format: ``spill/_files.py``) live in a private directory
(:func:`mars_dask._safe_files.private_dir`: ours, 0700, no symlink), one per key under a
name derived from the key, written atomically (temporary name, then rename) and 0600. Each
carries the checksum of its payload and a MAC with the cluster's secret (the scheduler's
:class:`~mars_dask._safe_files.Authenticator`, which travels to the workers inside this
plugin), because the directory may be on a file system that others can write:

- A file already at a checkpoint's name is kept only if it verifies (checksum, MAC, key):
  then it is an earlier write of the same key, hence the same value. Anything else
  (planted, damaged, torn, another cluster's) is replaced.
- The worker reports the checkpoint (and the scheduler drops the lineage) only after
  reading the written file back and finding its checksum good.
- :func:`load_checkpoint` verifies the file before decoding anything in it. A damaged,
  short, missing or unauthenticated file is lost data; as the lineage behind it was
  dropped when it was written, the task fails with
  :class:`~mars_dask.errors.DataIntegrityError` naming the key and the file (never a wrong
  value, never code from the file).
- A write that fails (read-only or full directory, unsafe directory) is reported to the
  scheduler, which keeps the key's lineage (nothing is cut: the key is recomputed after a
  loss as without checkpoints), logs an error and emits ``checkpoint-failed`` on topic
  ``mars-failover`` and a warning that clients print. ``execute(checkpoint=True)`` returns
  normally, since the write happens after its results are done; scattered data, which has
  no lineage, is then as lost as in plain Dask when its holder dies.

A checkpoint changes a key's dependencies (its new recipe has none), which Dask never does:
a worker adds the dependencies a ``compute-task`` message names to those it already
recorded for the key and never drops any. A worker keeps a released key's task state (with
its old dependencies) while a result it holds was computed from it, so after a node loss
the loader sent to a surviving worker that had computed the key would wait for ever for
inputs the cluster has forgotten (two shuffles in a row: the second one's map outputs,
fused with the first one's reducers). This plugin therefore makes each ``compute-task``
authoritative on its worker (``_dask_internals.install_dependency_pruning``): the recorded dependencies that
it does not name and its recipe does not read are dropped, and those left unused are
forgotten.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor

from distributed.diagnostics.plugin import WorkerPlugin

from .. import _dask_internals as DI
from .._safe_files import Authenticator, private_dir
from ..errors import DataIntegrityError, MarsDaskError, StoreCorruptError
from ..spill import _files
from ..spill._codec import decode, encode
from . import _protocol as P

logger = logging.getLogger("mars_dask.plugins.checkpoint")

SUFFIX = ".mdc"
_IO_CHUNK = 16 * 2**20


def checkpoint_path(directory: str, key) -> str:
    return os.path.join(directory, hashlib.blake2b(repr(key).encode(), digest_size=16).hexdigest() + SUFFIX)


def _verified_size(path: str, key, auth: Authenticator | None) -> int:
    """The size of ``path`` once its checksum, key (and with ``auth`` its MAC) check out;
    raises :class:`DataIntegrityError` (or ``FileNotFoundError``)."""
    _, buf, offset, size = _files.open_verified(path, key=key, auth=auth)
    buf.close()
    return offset + size


def write_checkpoint(directory: str, key, value, auth: Authenticator) -> tuple[str, int]:
    """Write ``value`` as the checkpoint of ``key``; returns ``(path, file size)`` once the
    file is known good. A file already there is kept only if it verifies (keys are
    deterministic: same key, same value); anything else is replaced."""
    private_dir(directory)
    path = checkpoint_path(directory, key)
    try:
        return path, _verified_size(path, key, auth)
    except FileNotFoundError:
        pass
    except StoreCorruptError as e:
        logger.warning("replacing the checkpoint file of %r: %s", key, e)
    enc = encode(value)
    header = {"key": key, "kind": enc.kind, "meta": enc.meta, "nbytes": enc.nbytes,
              "compression": None, "size": enc.size}
    _files.write_file(path, header, enc.write, direct=False, chunk=_IO_CHUNK, auth=auth)
    # read back: the checksum was computed over the bytes the MAC covers
    return path, _verified_size(path, key, None)


def _timed_write(directory, key, value, auth) -> tuple[str, int, float]:
    t0 = time.perf_counter()
    path, size = write_checkpoint(directory, key, value, auth)
    return path, size, time.perf_counter() - t0


def _worker_auth() -> Authenticator:
    from distributed import get_worker

    plugin = get_worker().plugins.get(MarsCheckpointPlugin.name)
    if plugin is None:
        raise MarsDaskError("this worker has no mars_dask checkpoint plugin: it cannot "
                            "authenticate checkpoint files")
    return plugin.auth


def load_checkpoint(path: str, key):
    """The task run in place of a checkpointed key's lineage: its value, read back from
    ``path`` (memory-mapped: numpy results are zero-copy views of the page cache) after
    checking the file's checksum, MAC and key; raises :class:`DataIntegrityError`."""
    try:
        header, buf, offset, size = _files.open_verified(path, key=key, auth=_worker_auth(), willneed=True)
    except FileNotFoundError:
        raise DataIntegrityError(key, path, "the checkpoint file is missing") from None
    return decode(header["kind"], header["meta"], buf, offset, size)


def loader_task(key, path: str):
    """The recipe of a checkpointed key: ``load_checkpoint(path, key)`` (a dask Task)."""
    return DI.make_task(key, load_checkpoint, path, key)


def is_loader(spec) -> bool:
    return DI.is_task_calling(spec, load_checkpoint)


class MarsCheckpointPlugin(WorkerPlugin):
    """Writes the checkpoints of the results computed on this worker (registered on every
    worker by the scheduler plugin, which chooses ``directory``, the authenticator and the
    boundary kinds)."""

    name = "mars-dask-checkpoint"
    idempotent = True

    def __init__(self, directory: str, auth: Authenticator, kinds=("checkpoint", "shuffle")):
        self.directory = directory
        self.auth = auth
        self.kinds = frozenset(kinds)

    def setup(self, worker):
        self.worker = worker
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="mars-checkpoint")
        DI.register_handlers(worker, handlers={"mars_checkpoint": self._checkpoint_keys},
                             stream_handlers={P.OP_CHECKPOINT: self._checkpoint_now})
        if DI.enabled("failover-checkpoints"):
            DI.install_dependency_pruning(worker)

    def teardown(self, worker):
        self._pool.shutdown(wait=False, cancel_futures=True)
        DI.uninstall_dependency_pruning(worker)

    def transition(self, key, start, finish, **kwargs):
        if finish != "memory" or start not in ("executing", "long-running"):
            return
        ts = self.worker.state.tasks.get(key)
        kind = (ts.annotations or {}).get(P.ANN_BOUNDARY) if ts is not None else None
        if kind in self.kinds:
            self._submit(key)

    def _submit(self, key):
        try:
            value = self.worker.data[key]
        except KeyError:
            return
        fut = self._pool.submit(_timed_write, self.directory, key, value, self.auth)
        loop = self.worker.loop

        def done(f):
            try:
                loop.add_callback(self._report, key, f)
            except RuntimeError:  # the worker is closing
                pass

        fut.add_done_callback(done)
        return fut

    def _report(self, key, f) -> None:
        exc = f.exception()
        if exc is not None:
            logger.warning("could not checkpoint %r: %s", key, exc)
            self.worker.batched_send({"op": P.OP_CHECKPOINT_FAILED, "key": key,
                                      "error": f"{type(exc).__name__}: {exc}"})
            return
        path, size, seconds = f.result()
        self.worker.batched_send({"op": P.OP_CHECKPOINTED, "key": key, "path": path, "nbytes": size,
                                  "seconds": seconds})

    def _checkpoint_now(self, keys=()):
        """Scheduler's stream message (``checkpoint-shuffles: auto``): checkpoint ``keys``."""
        for k in keys:
            self._submit(k)

    async def _checkpoint_keys(self, keys=()):
        """Scheduler request (scattered data): checkpoint ``keys`` held here."""
        import asyncio

        futs = [f for k in keys if (f := self._submit(k)) is not None]
        if futs:
            await asyncio.gather(*(asyncio.wrap_future(f) for f in futs), return_exceptions=True)
        return len(futs)
