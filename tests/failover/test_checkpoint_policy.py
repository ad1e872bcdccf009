"""The ``checkpoint-shuffles: auto`` rule (``plugins/_checkpoint_policy.py``), on task graphs
shaped like the scheduler's (no cluster: each task is its state, prefix average and edges)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from mars_dask.plugins._checkpoint_policy import DEFAULT_RATE, FIXED_S, CheckpointPolicy, compute_seconds


def task(key, avg=0.0, deps=(), state="released", waiters=(), who_wants=()):
    ts = SimpleNamespace(key=key, prefix=SimpleNamespace(duration_average=avg), dependencies=list(deps),
                         dependents=[], state=state, waiters=set(waiters), who_wants=set(who_wants))
    for d in deps:
        d.dependents.append(ts)
    return ts


def shuffle(name, inputs, map_avg, n_out):
    """A shuffle's map outputs, its pieces and reducers (released, as after the reducers ran)."""
    maps = [task(f"{name}-map-{i}", map_avg, [c]) for i, c in enumerate(inputs)]
    reducers = []
    for j in range(n_out):
        pieces = [task(f"{name}-piece-{i}-{j}", 0.001, [m]) for i, m in enumerate(maps)]
        reducers.append(task(f"{name}-reduce-{j}", 0.05, pieces))
    return maps, reducers


def test_a_shuffle_of_data_just_read_is_not_written_one_behind_a_shuffle_is():
    p = CheckpointPolicy(10)
    reads = [task(f"read-{i}", 0.1) for i in range(20)]
    maps1, reducers1 = shuffle("s1", reads, 0.12, 20)
    # map outputs of the first shuffle: 0.12 s + their read (0.1 s) against 10 x 0.11 s
    assert not p.worth(maps1[0], 0.12, 20_000_000)
    maps2, _ = shuffle("s2", reducers1, 0.12, 20)
    # behind the second: its reducer, 20 pieces and all 20 maps of the first shuffle
    assert p.lineage_seconds(maps2[0], 0.12) == pytest.approx(0.12 + 0.05 + 20 * 0.001 + 20 * 0.12)
    assert p.worth(maps2[0], 0.12, 20_000_000)
    assert p.decided == {"checkpointed": 1, "skipped": 1}


def test_the_walk_stops_at_checkpoints_shared_and_held_results():
    src = task("src", 5.0)
    shared = task("pivots", 0.01, [src])
    task("other-map", 0.1, [shared])  # a second dependent: what is behind the pivots is shared
    held = task("held", 0.02, [task("behind-held", 7.0)], state="memory", who_wants={"client"})
    ckpt = task("ckpt", 0.3, [task("behind-ckpt", 9.0)])
    m = task("map", deps=[shared, held, ckpt])
    p = CheckpointPolicy(10, is_durable=lambda ts: ts.key == "ckpt")
    # counted: the map itself, the pivots and the held result, each once; nothing behind them
    assert p.lineage_seconds(m, 0.5) == pytest.approx(0.5 + 0.01 + 0.02)
    # a result waited for by another task is kept too
    waited = task("waited", 0.02, [task("behind-waited", 3.0)], state="memory", waiters={"t"})
    assert CheckpointPolicy(10).lineage_seconds(task("m2", deps=[waited]), 0) == pytest.approx(0.02)


def test_each_ancestor_counts_once_and_the_walk_stops_at_the_threshold():
    # a diamond: a and b both read base (base counted once, not walked past: shared)
    base = task("base", 1.0)
    a, b = task("a", 0.5, [base]), task("b", 0.5, [base])
    top = task("top", 0, [a, b])
    assert CheckpointPolicy(1).lineage_seconds(top, 0) == pytest.approx(2.0)
    # a long chain is not walked to its end once the threshold is reached
    t = task("c-0", 1.0)
    for i in range(1, 100_000):
        t = task(f"c-{i}", 1.0, [t])
    assert CheckpointPolicy(1).lineage_seconds(t, 0, limit=5) == pytest.approx(5.0)


def test_the_write_cost_is_learned_from_the_writes_reported():
    p = CheckpointPolicy(10)
    assert p.write_seconds(200_000_000) == pytest.approx(FIXED_S + 200_000_000 / DEFAULT_RATE)
    p.wrote(100, 1.0)  # too small to say anything about the rate
    assert p.rate == DEFAULT_RATE
    for _ in range(50):
        p.wrote(50_000_000, 1.0)  # a slow file system: 50 MB/s
    assert p.rate == pytest.approx(50e6, rel=0.01)
    assert p.write_seconds(50_000_000) == pytest.approx(FIXED_S + 1.0, rel=0.01)
    with pytest.raises(ValueError, match="checkpoint-cost-ratio"):
        CheckpointPolicy(-1)


def test_compute_seconds_reads_the_compute_spans_only():
    assert compute_seconds([{"action": "transfer", "start": 0, "stop": 5},
                            {"action": "compute", "start": 1, "stop": 1.25}]) == 0.25
    assert compute_seconds(None) == 0
