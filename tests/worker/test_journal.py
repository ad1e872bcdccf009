"""Unit tests of the scheduler's lineage journal (mars_dask.plugins._journal): no cluster."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
import zlib
from pathlib import Path

import pytest

from mars_dask.plugins._journal import (
    JournalEntry,
    LineageIncomplete,
    LineageJournal,
    read_segment,
)

JOURNAL_PY = Path(__file__).resolve().parents[2] / "mars_dask" / "plugins" / "_journal.py"


def E(key, deps=(), boundary=None, tileable=None, priority=0):
    return JournalEntry(key, f"recipe:{key!r}".encode(), tuple(deps), priority, tileable,
                        boundary)


def seg_files(d):
    return sorted(Path(d).glob("segment-*.mdj"))


def keys_of(entries):
    return [e.key for e in entries]


def test_round_trip_across_graphs(tmp_path):
    j = LineageJournal(tmp_path)
    j.record(2, [E("a2", boundary="source"), E("b2", ["a2"], tileable="t-b")])
    j.record(5, [E("c5", ["b2"])])
    j.record(7, [E("d7", ["c5", "a2"], priority=-3)])
    got = j.get("d7")
    assert got == JournalEntry("d7", b"recipe:'d7'", ("c5", "a2"), -3, None, None, 7)
    assert j.get("b2").tileable == "t-b" and j.get("b2").graph_seq == 2
    assert j.get("nope") is None
    lin = j.lineage(["d7"], lambda k: False)
    assert keys_of(lin) == ["a2", "b2", "c5", "d7"]  # inputs first
    assert {e.graph_seq for e in lin} == {2, 5, 7}
    j.close()
    # read back by a new process-equivalent
    j2 = LineageJournal.open(tmp_path)
    assert keys_of(j2.lineage(["d7"])) == ["a2", "b2", "c5", "d7"]
    assert j2.get("d7") == got
    j2.close()


def test_tuple_keys_preserved(tmp_path):
    k0, k1 = ("x-abc", 0), ("y-def", 1, 2)
    with LineageJournal(tmp_path) as j:
        j.record(1, [E(k0), E(k1, [k0, "s"]), E("s")])
    with LineageJournal.open(tmp_path, max_memory_entries=0) as j:  # forces disk reads
        e = j.get(k1)
        assert e.key == k1 and isinstance(e.key, tuple)
        assert e.dependencies == (k0, "s") and isinstance(e.dependencies[0], tuple)
        assert j.get(["y-def", 1, 2]) == e  # lists normalised to tuples
        assert keys_of(j.lineage([k1])) == [k0, "s", k1]
        assert k0 in j and j.get("s").key == "s"


def test_memory_bound_and_disk_lookups(tmp_path):
    with LineageJournal(tmp_path, max_memory_entries=10) as j:
        for g in range(10):
            j.record(g, [E(("k", g, i), [("k", g - 1, i)] if g else []) for i in range(10)])
        st = j.stats()
        assert st["entries_in_memory"] == 10
        assert st["entries"] == 100 and st["entries_on_disk"] == 90
        assert st["segments"] == 1 and st["bytes"] > 0
        old = j.get(("k", 0, 3))  # evicted: read from disk
        assert old.graph_seq == 0 and old.recipe == b"recipe:('k', 0, 3)"
        assert j.stats()["entries_in_memory"] == 10
        assert keys_of(j.lineage([("k", 9, 3)])) == [("k", g, 3) for g in range(10)]


def test_segment_rotation(tmp_path):
    with LineageJournal(tmp_path, max_memory_entries=5, segment_bytes=200) as j:
        j.record(1, [E(f"k{i}") for i in range(20)])
        assert j.stats()["segments"] >= 3
        assert all(j.get(f"k{i}").key == f"k{i}" for i in range(20))
    with LineageJournal.open(tmp_path, max_memory_entries=5, segment_bytes=200) as j:
        assert sorted(j.keys()) == sorted(f"k{i}" for i in range(20))


def _write_three(d):
    with LineageJournal(d) as j:
        j.record(1, [E("a"), E("b", ["a"])])
        j.record(2, [E("c", ["b"])])
    (f,) = seg_files(d)
    offsets = [off for off, _ in read_segment(f)]
    return f, offsets


@pytest.mark.parametrize("damage", ["truncate-payload", "truncate-header", "flip-byte"])
def test_reopen_after_torn_last_record(tmp_path, caplog, damage):
    f, offsets = _write_three(tmp_path)
    size, last = f.stat().st_size, offsets[-1]
    data = bytearray(f.read_bytes())
    if damage == "truncate-payload":
        data = data[: last + 8 + 3]
    elif damage == "truncate-header":
        data = data[: last + 5]
    else:
        data[size - 2] ^= 0xFF
    f.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING, logger="mars_dask.plugins.journal"):
        j = LineageJournal.open(tmp_path)
    assert any("torn record" in r.getMessage() for r in caplog.records)
    assert sorted(j.keys()) == ["a", "b"]
    assert f.stat().st_size == last  # truncated back to the last good record
    j.record(3, [E("c2", ["b"])])  # appends continue cleanly
    j.close()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="mars_dask.plugins.journal"):
        j = LineageJournal.open(tmp_path)
    assert not caplog.records
    assert keys_of(j.lineage(["c2"])) == ["a", "b", "c2"]
    j.close()


def test_lineage_stops_at_available_and_checkpoints(tmp_path):
    with LineageJournal(tmp_path) as j:
        j.record(1, [E("a"), E("b", ["a"]), E("c", ["b"]), E("x", boundary="read-parquet")])
        j.record(2, [E("d", ["c", "x"]), E("e", ["d"])])
        assert keys_of(j.lineage(["e"])) == ["a", "b", "c", "x", "d", "e"]
        # available keys end the walk (and are not returned)
        assert keys_of(j.lineage(["e"], lambda k: k == "c")) == ["x", "d", "e"]
        assert j.lineage(["e"], lambda k: k == "e") == []
        # shared ancestry is returned once
        assert keys_of(j.lineage(["d", "e", "b"])) == ["a", "b", "c", "x", "d", "e"]
        # checkpoint cuts lineage: included (restored from the checkpoint), not walked past
        forgotten = j.drop_before(["c"])
        assert sorted(forgotten) == ["a", "b"]
        assert j.get("a") is None and j.is_checkpoint("c")
        assert keys_of(j.lineage(["e"])) == ["c", "x", "d", "e"]
        # unknown, unavailable inputs are reported
        j.record(3, [E("f", ["ghost"])])
        with pytest.raises(LineageIncomplete) as info:
            j.lineage(["f"])
        assert info.value.missing == ["ghost"]
        assert keys_of(j.lineage(["f"], lambda k: k == "ghost")) == ["f"]
    with LineageJournal.open(tmp_path) as j:  # checkpoints and forgetting survive reopen
        assert j.get("a") is None and j.is_checkpoint("c")
        assert keys_of(j.lineage(["e"])) == ["c", "x", "d", "e"]


def test_drop_before_keeps_shared_ancestors(tmp_path):
    with LineageJournal(tmp_path) as j:
        j.record(1, [E("a"), E("b", ["a"]), E("c", ["a"])])
        assert j.drop_before(["b"]) == []  # "a" still needed by "c"
        assert j.get("a") is not None
        assert j.drop_before(["c"]) == ["a"]
        assert j.drop_before(["c", "zzz"]) == []  # idempotent, unknown keys ignored


def test_drop_before_bounded_over_iterations(tmp_path):
    j = LineageJournal(tmp_path, max_memory_entries=50, compact_min_dead=20)
    prev = None
    sizes = []
    for it in range(100):
        keys = [(f"step-{it}", i) for i in range(4)]
        j.record(it, [E(k, [prev] if prev else []) for k in keys[:3]]
                 + [E(keys[3], keys[:3])])
        if it % 3 == 2:
            j.drop_before([keys[3]])
        prev = keys[3]
        if it >= 10:
            sizes.append(j.stats())
    assert max(s["entries"] for s in sizes) <= 13
    assert max(s["segments"] for s in sizes) <= 2
    # compaction keeps the files flat: the last iterations are no bigger than the first
    assert max(s["bytes"] for s in sizes[-30:]) <= 1.2 * max(s["bytes"] for s in sizes[:30])
    assert max(s["bytes"] for s in sizes) < 4000
    last = ("step-99", 3)
    lin = keys_of(j.lineage([last]))
    assert lin[0] == ("step-98", 3) and j.is_checkpoint(("step-98", 3))
    n = len(j)
    j.close()
    with LineageJournal.open(tmp_path) as j2:
        assert len(j2) == n and keys_of(j2.lineage([last])) == lin


def test_subprocess_sigkill_while_appending(tmp_path):
    d = tmp_path / "journal"
    script = textwrap.dedent(f"""
        import importlib.util, sys
        spec = importlib.util.spec_from_file_location("_journal", {str(JOURNAL_PY)!r})
        m = importlib.util.module_from_spec(spec); sys.modules["_journal"] = m
        spec.loader.exec_module(m)
        j = m.LineageJournal({str(d)!r}, max_memory_entries=100)
        i = 0
        while True:
            recipe = bytes([i % 251]) * (1 + (i * 7919) % 30000)
            j.record(i, [m.JournalEntry(("k", i), recipe, (("k", i - 1),) if i else ())])
            if i == 50:
                print("ready", flush=True)
            i += 1
    """)
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                             start_new_session=True)
    try:
        assert child.stdout.readline().strip() == b"ready"
        time.sleep(0.05)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
        child.stdout.close()
    assert child.returncode == -signal.SIGKILL
    # every record on disk either decodes with a good CRC or is the torn tail
    (f,) = seg_files(d)
    with LineageJournal.open(d, max_memory_entries=0) as j:
        ns = sorted(k[1] for k in j)
        assert len(ns) > 50 and ns == list(range(len(ns)))  # a prefix of what was written
        for i in (0, len(ns) // 2, len(ns) - 1):
            e = j.get(("k", i))
            assert e.recipe == bytes([i % 251]) * (1 + (i * 7919) % 30000)
            assert e.graph_seq == i
        data = f.read_bytes()
        for off, _ in read_segment(f):
            n, crc = int.from_bytes(data[off:off + 4], "big"), int.from_bytes(data[off + 4:off + 8], "big")
            assert zlib.crc32(data[off + 8:off + 8 + n]) == crc
        j.record(10**6, [JournalEntry(("k", len(ns)), b"after", (("k", len(ns) - 1),))])
    with LineageJournal.open(d) as j:
        assert len(j) == len(ns) + 1


def test_checkpoint_replaces_recipe_and_forgets_lineage(tmp_path):
    """An iterative chain checkpointed every few steps keeps a flat journal, also read back."""
    with LineageJournal(tmp_path) as j:
        prev = None
        for i in range(28):
            j.record(i, [E(f"x{i}", [prev] if prev else [])])
            if i % 5 == 4:
                forgotten = j.checkpoint(i, JournalEntry(f"x{i}", b"load", ()))
                assert f"x{i - 1}" in forgotten
                assert j.is_checkpoint(f"x{i}") and j.get(f"x{i}").recipe == b"load"
                assert len(j) == 1
            prev = f"x{i}"
        assert keys_of(j.lineage(["x27"])) == ["x24", "x25", "x26", "x27"]
    with LineageJournal.open(tmp_path) as j2:
        assert len(j2) == 4 and j2.is_checkpoint("x24") and j2.get("x24").recipe == b"load"
        assert keys_of(j2.lineage(["x27"])) == ["x24", "x25", "x26", "x27"]
