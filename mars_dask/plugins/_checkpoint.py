"""Durable checkpoints: results written where every worker can read them, and the task that
reads one back in place of the lineage behind it.

Which results: shuffle map outputs (``mars_boundary="shuffle"``, if
``mars-dask.failover.checkpoint-shuffles``), outputs of ``execute(checkpoint=True)``
(``mars_boundary="checkpoint"``) and scattered data (at ingest, on the scheduler's request).
The worker that computed a result writes it from a background thread (the task is already
done; nothing waits for the write) in the store's formats (numpy raw buffers, pandas as
Arrow IPC, anything else through Dask's serialization), then tells the scheduler, which
swaps the key's recipe for :func:`load_checkpoint` and cuts its lineage (see
``_failover.py``). A checkpoint file is written once under a name derived from the key
(a temporary name renamed into place, so a reader never sees half a file).
"""

from __future__ import annotations

import hashlib
import logging
import os
from concurrent.futures import ThreadPoolExecutor

from dask._task_spec import Task
from distributed.diagnostics.plugin import WorkerPlugin

from ..spill import _files
from ..spill._codec import decode, encode
from . import _protocol as P

logger = logging.getLogger("mars_dask.plugins.checkpoint")

SUFFIX = ".mdc"
_IO_CHUNK = 16 * 2**20


def checkpoint_path(directory: str, key) -> str:
    return os.path.join(directory, hashlib.blake2b(repr(key).encode(), digest_size=16).hexdigest() + SUFFIX)


def write_checkpoint(directory: str, key, value) -> tuple[str, int]:
    """Write ``value`` as the checkpoint of ``key``; returns ``(path, file size)``. A key
    already checkpointed is not written again (keys are deterministic: same key, same value)."""
    path = checkpoint_path(directory, key)
    try:
        return path, os.stat(path).st_size
    except FileNotFoundError:
        pass
    enc = encode(value)
    header = {"key": key, "kind": enc.kind, "meta": enc.meta, "nbytes": enc.nbytes,
              "compression": None, "size": enc.size}
    try:
        size = _files.write_file(path, header, enc.write, direct=False, chunk=_IO_CHUNK)
    except FileExistsError:  # another worker wrote it first (a replica)
        size = os.stat(path).st_size
    return path, size


def load_checkpoint(path: str):
    """The task run in place of a checkpointed key's lineage: its value, read back from
    ``path`` (memory-mapped: numpy results are zero-copy views of the page cache)."""
    buf = _files.map_file(path, willneed=True)
    header, offset = _files.parse_header(buf)
    return decode(header["kind"], header["meta"], buf, offset, len(buf) - offset)


def loader_task(key, path: str) -> Task:
    return Task(key, load_checkpoint, path)


def is_loader(run_spec) -> bool:
    return isinstance(run_spec, Task) and run_spec.func is load_checkpoint


class MarsCheckpointPlugin(WorkerPlugin):
    """Writes the checkpoints of the results computed on this worker (registered on every
    worker by the scheduler plugin, which chooses ``directory`` and the boundary kinds)."""

    name = "mars-dask-checkpoint"
    idempotent = True

    def __init__(self, directory: str, kinds=("checkpoint", "shuffle")):
        self.directory = directory
        self.kinds = frozenset(kinds)

    def setup(self, worker):
        self.worker = worker
        os.makedirs(self.directory, exist_ok=True)
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="mars-checkpoint")
        worker.handlers["mars_checkpoint"] = self._checkpoint_keys

    def teardown(self, worker):
        self._pool.shutdown(wait=False, cancel_futures=True)

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
        fut = self._pool.submit(write_checkpoint, self.directory, key, value)
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
            return
        path, size = f.result()
        self.worker.batched_send({"op": P.OP_CHECKPOINTED, "key": key, "path": path, "nbytes": size})

    async def _checkpoint_keys(self, keys=()):
        """Scheduler request (scattered data): checkpoint ``keys`` held here."""
        import asyncio

        futs = [f for k in keys if (f := self._submit(k)) is not None]
        if futs:
            await asyncio.gather(*(asyncio.wrap_future(f) for f in futs), return_exceptions=True)
        return len(futs)
