"""Names shared by the scheduler, worker and nanny halves (one place, so they agree)."""

PLUGIN_NAME = "mars-dask"
#: the worker resource that quota admission restricts
RESOURCE = "mars-memory"
#: per-key annotations emitted by mars_dask.tiling.emit
ANN_MEMORY = "mars_memory"
ANN_TILEABLE = "mars_tileable"
#: per-layer constants emitted with them: the operand class name of the tileable (e.g.
#: "TensorAdd") and the id of the ``execute()`` call that submitted the graph (one call may
#: submit several graphs: iterative tiling); read by the scheduler's tileable tracking
#: (``_tileables.py``, served at /api/mars/v1/tileables)
ANN_OPERAND = "mars_operand"
ANN_CALL = "mars_call"
#: worker -> scheduler batched-stream messages
OP_STARTED = "mars-task-started"
OP_USED = "mars-task-used"
OP_CLOSING = "mars-worker-closing"
#: scheduler -> worker RPC (``scheduler.broadcast``): the node-local store's figures, asked
#: when /api/mars/v1/store is requested
OP_STORE_STATS = "mars_store_stats"
#: scheduler -> worker RPC: take over the results a dead worker process on the same node
#: left in its store (``MarsStore.take_over``), instead of waiting for its restart
OP_TAKE_OVER = "mars_take_over"
#: scheduler -> worker RPC: write every result at once for a while (``MarsStore.write_now_for``)
OP_WRITE_NOW = "mars_write_now"
#: scheduler -> worker RPC: a worker process died; connections to it fail at once instead of
#: being retried for ``distributed.comm.timeouts.connect`` (``fail_connections_to``)
OP_PEER_GONE = "mars_peer_gone"
#: worker restrictions that match no worker: how a result is held back
HOLD_PREFIX = "mars-hold://"

ANN_BOUNDARY = "mars_boundary"
#: worker -> scheduler: a checkpoint of a key was written (and read back intact)
OP_CHECKPOINTED = "mars-checkpointed"
#: scheduler -> worker batched-stream message: checkpoint these keys held here
#: (``checkpoint-shuffles: auto``: the map outputs the scheduler judged worth it)
OP_CHECKPOINT = "mars-checkpoint"
#: worker -> scheduler: a checkpoint of a key could not be written
OP_CHECKPOINT_FAILED = "mars-checkpoint-failed"
#: scheduler.log_event topic of the failover plugin
EVENT_TOPIC = "mars-failover"
#: keys listed at most in one event of that topic (the counts are exact)
KEYS_IN_EVENT = 200
#: the pseudo-client that keeps results alive for a reconnecting client after a scheduler restart
HOLD_CLIENT = "mars-failover-hold"
#: worker -> nanny RPC: the worker lost its scheduler and closes for the nanny to restart it
NANNY_SCHEDULER_LOST = "mars_scheduler_lost"
#: Worker.close reason of a worker closing alone after losing its scheduler
REASON_SCHEDULER_LOST = "mars-scheduler-lost"
#: topic of the event each worker logs once its start-up recovery is done (a reconnecting
#: client waits for those before resubmitting)
REJOIN_TOPIC = "mars-worker-rejoin"
#: name of the worker's sibling plugin holding the mars_dask worker plugin's state
WORKER_STATE_PLUGIN = "mars-dask-state"
