"""Unit tests of the scheduler's lineage journal (mars_dask.plugins._journal): no cluster."""

from __future__ import annotations

import logging
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
import zlib
from pathlib import Path

import pytest

from mars_dask._safe_files import Authenticator, load_or_create_secret
from mars_dask.plugins._journal import (
    _FRAME,
    MAGIC,
    JournalEntry,
    LineageIncomplete,
    LineageJournal,
    read_segment,
)


def E(key, deps=(), boundary=None, tileable=None, priority=0):
    return JournalEntry(key, f"recipe:{key!r}".encode(), tuple(deps), priority, tileable,
                        boundary)


def seg_files(d):
    return sorted(Path(d).glob("segment-*.mdj"))


def keys_of(entries):
    return [e.key for e in entries]


def auth_of(d):
    """The authenticator a journal in ``d`` uses by default (the secret kept there)."""
    return Authenticator(load_or_create_secret(str(d)))


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
    offsets = [off for off, _ in read_segment(f, auth_of(d))]
    return f, offsets


@pytest.mark.parametrize("damage", ["truncate-payload", "truncate-header", "flip-byte"])
def test_reopen_after_torn_last_record(tmp_path, caplog, damage):
    f, offsets = _write_three(tmp_path)
    size, last = f.stat().st_size, offsets[-1]
    data = bytearray(f.read_bytes())
    if damage == "truncate-payload":
        data = data[: last + _FRAME + 3]
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
        import mars_dask.plugins._journal as m
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
        for off, _ in read_segment(f, auth_of(d)):
            assert data[off:off + 4] == MAGIC
            n, crc = int.from_bytes(data[off + 4:off + 8], "big"), int.from_bytes(data[off + 8:off + 12], "big")
            assert zlib.crc32(data[off + _FRAME:off + _FRAME + n]) == crc
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


# -- files on disk: private, authenticated, resynchronising ---------------------------------

def _write_many(d, n=12, **kw):
    """``n`` entries k0..k(n-1) (a chain), one record call each; returns (segment, offsets)."""
    with LineageJournal(d, **kw) as j:
        for i in range(n):
            j.record(i, [E(f"k{i}", [f"k{i - 1}"] if i else [])])
    (f,) = seg_files(d)
    return f, [off for off, _ in read_segment(f, kw.get("auth") or auth_of(d))]


def test_journal_files_are_private(tmp_path):
    d = tmp_path / "j"
    _write_many(d, 3)
    assert stat.S_IMODE(d.stat().st_mode) == 0o700
    for p in [*seg_files(d), d / "secret"]:
        assert stat.S_IMODE(p.stat().st_mode) == 0o600, p


@pytest.mark.parametrize("damage", ["flip-payload", "huge-length", "garbage-span"])
def test_corrupt_record_in_the_middle_is_skipped_and_later_records_kept(tmp_path, caplog, damage):
    """The reader resynchronises on the next good record: only the damaged records are
    lost, every later intact one is read back, and the file is not truncated."""
    f, offsets = _write_many(tmp_path, 12)
    data = bytearray(f.read_bytes())
    if damage == "flip-payload":  # k4's payload
        data[offsets[5] - 3] ^= 0x55
        lost = {"k4"}
    elif damage == "huge-length":  # k4's length field points past the end of the file
        data[offsets[4] + 4:offsets[4] + 8] = (10**9).to_bytes(4, "big")
        lost = {"k4"}
    else:  # from the middle of k4 to the middle of k6
        data[offsets[4] + 20:offsets[6] + 30] = os.urandom(offsets[6] + 10 - offsets[4])
        lost = {"k4", "k5", "k6"}
    f.write_bytes(bytes(data))
    size = f.stat().st_size
    with caplog.at_level(logging.WARNING, logger="mars_dask.plugins.journal"):
        j = LineageJournal.open(tmp_path, max_memory_entries=0)
    assert sorted(j.keys()) == sorted({f"k{i}" for i in range(12)} - lost)
    msgs = [r.getMessage() for r in caplog.records]
    assert any(f"at offset {offsets[4]}" in m and "resynchronised" in m for m in msgs), msgs
    assert f.stat().st_size == size  # nothing truncated
    assert j.get("k11").recipe == b"recipe:'k11'"  # read back from disk
    with pytest.raises(LineageIncomplete) as info:
        j.lineage(["k11"])
    assert info.value.missing == [sorted(lost)[-1]]
    j.record(20, [E("after", ["k11"])])
    j.close()
    with LineageJournal.open(tmp_path) as j:
        assert "after" in j and "k11" in j and not lost & set(j.keys())


def test_corrupt_middle_and_torn_tail(tmp_path, caplog):
    f, offsets = _write_many(tmp_path, 6)
    data = bytearray(f.read_bytes())
    data[offsets[2] + _FRAME + 1] ^= 0xFF
    data = data[:offsets[5] + _FRAME + 2]  # k5 torn
    f.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING, logger="mars_dask.plugins.journal"):
        with LineageJournal.open(tmp_path) as j:
            assert sorted(j.keys()) == ["k0", "k1", "k3", "k4"]
    assert f.stat().st_size == offsets[5]
    assert any("torn record" in r.getMessage() for r in caplog.records)


def test_records_of_another_secret_are_not_accepted(tmp_path, caplog):
    """A journal read with another secret accepts nothing (and truncates nothing); a record
    forged with another secret between good ones is skipped, the good ones are kept."""
    mine, theirs = Authenticator(os.urandom(32)), Authenticator(os.urandom(32))
    f, _ = _write_many(tmp_path, 4, auth=mine)
    size = f.stat().st_size
    with caplog.at_level(logging.WARNING, logger="mars_dask.plugins.journal"):
        with LineageJournal.open(tmp_path, auth=theirs) as j:
            assert len(j) == 0
    assert f.stat().st_size == size
    assert any("MAC mismatch" in r.getMessage() for r in caplog.records)
    # forge: a record written by a journal with another secret, appended between good ones
    with LineageJournal.open(tmp_path, auth=mine) as j:
        assert len(j) == 4
    other = tmp_path / "other"
    with LineageJournal(other, auth=theirs) as j:
        j.record(9, [E("k1", ["evil"]), E("evil")])
    (g,) = seg_files(other)
    with open(f, "ab") as out:
        out.write(g.read_bytes())
    with LineageJournal.open(tmp_path, auth=mine) as j:
        j.record(10, [E("k9", ["k3"])])
    with LineageJournal.open(tmp_path, auth=mine, max_memory_entries=0) as j:
        assert sorted(j.keys()) == ["k0", "k1", "k2", "k3", "k9"]
        assert j.get("k1").dependencies == ("k0",)
        assert keys_of(j.lineage(["k9"])) == ["k0", "k1", "k2", "k3", "k9"]
    # the default secret is the one kept in the directory: a new one refuses the records
    d = tmp_path / "default"
    _write_many(d, 2)
    (d / "secret").unlink()
    with LineageJournal.open(d) as j:
        assert len(j) == 0


def test_record_damaged_after_replay_counts_as_missing(tmp_path, caplog):
    f, offsets = _write_many(tmp_path, 4)
    with LineageJournal.open(tmp_path, max_memory_entries=0) as j:
        data = bytearray(f.read_bytes())
        data[offsets[1] + _FRAME + 2] ^= 0xFF
        f.write_bytes(bytes(data))
        with caplog.at_level(logging.WARNING, logger="mars_dask.plugins.journal"):
            assert j.get("k1") is None
            with pytest.raises(LineageIncomplete) as info:
                j.lineage(["k3"])
        assert info.value.missing == ["k1"]
        assert any("CRC mismatch" in r.getMessage() for r in caplog.records)
