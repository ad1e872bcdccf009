"""Which shuffle map outputs are worth a durable checkpoint (``checkpoint-shuffles: auto``).

A checkpoint is paid on every run: the worker encodes the map output, checksums and MACs
it, writes it, reads it back and checks it (measured here: ~200 MB/s of one core, 13-22% of
a 10M-row sort or ``groupby.apply`` on two cores). It pays back only when a node is lost
while the shuffle's outputs are still needed, and then it saves recomputing what the lost
output was made from. Mars 0.10 never checkpoints a shuffle; writing every one made a
cheap shuffle (``read_parquet`` then ``sort_values``) slower than both Mars and Dask.

So a map output is checkpointed when the work its loss would redo is at least ``ratio``
times the cost of writing it:

- the work: its own compute time (the worker's report) plus that of the lineage behind it
  back to what is durable (a checkpoint, or a task with no inputs), each ancestor counted
  once at its prefix's average duration (Dask's ``TaskPrefix.duration_average``). An
  ancestor that is shared (several dependents: a sort's pivots, a shuffle's map output) or
  that the scheduler still keeps for other work is counted but not walked past: what is
  behind it is shared too, and charging all of it to whichever output happens to finish
  last would checkpoint that one alone for no reason. A shuffle right after reading
  files has a cheap lineage (the read and the split); one that follows another shuffle has
  all of that shuffle's maps behind each of its inputs, and is checkpointed.
- the write: ``fixed + nbytes / rate``, the rate learned from the writes reported (a
  running mean over writes of at least 1 MiB), starting from the figure measured on this
  kind of machine.

The walk stops as soon as the threshold is reached, so a long lineage costs little to
judge. Nothing is kept per key: the decision reads the scheduler's task graph when the map
output arrives.
"""

from __future__ import annotations

#: bytes per second of a checkpoint write (encode, checksum + MAC, write, read back and
#: check) before any write was measured: ~200 MB/s on a 2-core VM with local disk
DEFAULT_RATE = 200e6
#: per-file cost of a checkpoint (open, rename, read-back, the scheduler's journal record)
FIXED_S = 0.01
_MIN_MEASURED = 2**20
_SMOOTHING = 0.2


class CheckpointPolicy:
    """The ``auto`` rule for shuffle map outputs (see the module docstring)."""

    def __init__(self, ratio: float, *, is_durable=lambda ts: False):
        if ratio < 0:
            raise ValueError(f"checkpoint-cost-ratio must be >= 0, got {ratio!r}")
        self.ratio = float(ratio)
        self.rate = DEFAULT_RATE
        self._is_durable = is_durable
        self.decided = {"checkpointed": 0, "skipped": 0}

    def write_seconds(self, nbytes: int) -> float:
        return FIXED_S + max(int(nbytes or 0), 0) / self.rate

    def wrote(self, nbytes: int, seconds: float) -> None:
        """A checkpoint of ``nbytes`` took ``seconds`` on a worker: learn the rate."""
        if nbytes >= _MIN_MEASURED and seconds > 0:
            self.rate += _SMOOTHING * (nbytes / seconds - self.rate)

    def lineage_seconds(self, ts, own_seconds: float, limit: float = float("inf")) -> float:
        """``own_seconds`` plus the expected compute time of ``ts``'s lineage back to what is
        durable, each ancestor once; stops counting once ``limit`` is reached."""
        total = own_seconds
        seen = {ts.key}
        stack = [d for d in ts.dependencies]
        while stack and total < limit:
            dts = stack.pop()
            if dts.key in seen:
                continue
            seen.add(dts.key)
            if self._is_durable(dts):
                continue
            avg = dts.prefix.duration_average
            total += avg if avg > 0 else 0.0
            if not _held(dts) and len(dts.dependents) <= 1:
                stack.extend(dts.dependencies)
        return total

    def worth(self, ts, own_seconds: float, nbytes: int) -> bool:
        """Whether the map output ``ts`` (just computed in ``own_seconds``, ``nbytes`` big)
        should be checkpointed."""
        threshold = self.ratio * self.write_seconds(nbytes)
        yes = self.lineage_seconds(ts, own_seconds, threshold) >= threshold
        self.decided["checkpointed" if yes else "skipped"] += 1
        return yes


def _held(ts) -> bool:
    """A result the scheduler keeps for others (still wanted or waited for)."""
    return ts.state == "memory" and bool(ts.waiters or ts.who_wants)


def compute_seconds(startstops) -> float:
    """The compute time in a worker's ``startstops`` report."""
    return sum(s["stop"] - s["start"] for s in startstops or () if s.get("action") == "compute")
