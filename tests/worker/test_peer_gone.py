"""A worker fails its connections to a peer the scheduler saw die at once
(``MarsWorkerPlugin._peer_gone``: the ``mars_peer_gone`` broadcast), instead of retrying the
refused connection for ``distributed.comm.timeouts.connect`` (30 s by default) while the
task that needs the input waits."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest
from distributed import Scheduler, Worker
from distributed.comm.core import CommClosedError

from mars_dask.plugins import _protocol as P
from mars_dask.plugins._worker import MarsWorkerPlugin


def _dead_address() -> str:
    """A loopback port nothing listens on (bound, then closed): connecting is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"tcp://127.0.0.1:{port}"


def test_a_connection_to_a_dead_peer_fails_when_the_scheduler_says_so():
    async def main():
        async with Scheduler(host="127.0.0.1", port=0, dashboard_address=":0") as s, \
                Worker(s.address, host="127.0.0.1", nthreads=1) as w:
            await w.plugin_add(MarsWorkerPlugin())
            dead = _dead_address()
            # a fetch's connection to the dead peer: Dask retries the refused connect
            connecting = asyncio.ensure_future(w.rpc.connect(dead, timeout=30))
            await asyncio.sleep(0.5)
            assert not connecting.done()
            t0 = time.monotonic()
            # what the scheduler plugin sends every other worker when one dies
            answers = await s.broadcast(msg={"op": P.OP_PEER_GONE, "address": dead}, workers=[w.address])
            assert answers == {w.address: "OK"}
            with pytest.raises(CommClosedError, match="saw .* die"):
                await connecting
            assert time.monotonic() - t0 < 2
            t0 = time.monotonic()  # a new connection to it fails at once too
            with pytest.raises(OSError):
                await w.rpc.connect(dead, timeout=30)
            assert time.monotonic() - t0 < 0.5
            comm = await w.rpc.connect(s.address)  # others are untouched
            w.rpc.reuse(s.address, comm)

    asyncio.run(main())
