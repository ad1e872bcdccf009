"""The lineage journal's per-key index lives on disk (SQLite), not in Python: memory stays
bounded by live work, and the index is only a cache of the (authenticated) segments: a
missing, damaged, stale or lying index changes no answer. No cluster."""

from __future__ import annotations

import gc
import os
import shutil
import sqlite3
import stat
import tracemalloc
from pathlib import Path

import msgpack
import pytest

from mars_dask.plugins._journal import JournalEntry, LineageIncomplete, LineageJournal


def E(key, deps=(), boundary=None):
    return JournalEntry(key, f"recipe:{key!r}".encode(), tuple(deps), 0, None, boundary)


def _chain_graphs(j, n_graphs, width, start=0):
    """``x = f(x)`` over ``n_graphs`` graphs of ``width`` chunks (tuple keys)."""
    for g in range(start, start + n_graphs):
        j.record(g + 1, [E((f"it-{g}", i), [(f"it-{g - 1}", i)] if g else []) for i in range(width)])


def _per_key_sizes(j) -> dict:
    """Sizes of the journal object's Python containers (its per-key state, if any)."""
    return {name: len(v) for name, v in vars(j).items() if isinstance(v, dict | set | list)}


def test_python_side_holds_only_live_keys(tmp_path):
    """After recording and offloading N keys, nothing per key stays in Python: the
    containers are O(live) (before: _index, _deps, _seqs, _dependents held all N)."""
    n_graphs, width = 400, 50  # 20,000 keys
    j = LineageJournal(tmp_path / "j")
    _chain_graphs(j, n_graphs, width)
    assert len(j) == n_graphs * width
    live = [(f"it-{n_graphs - 1}", i) for i in range(width)]
    j.offload([(f"it-{g}", i) for g in range(n_graphs - 1) for i in range(width)])
    sizes = _per_key_sizes(j)
    assert max(sizes.values()) <= len(live), sizes
    # and every key is still answered, from disk
    assert j.get(("it-3", 7)).dependencies == (("it-2", 7),)
    assert [e.key for e in j.lineage([live[0]])][:2] == [("it-0", 0), ("it-1", 0)]
    assert len(j.lineage(live)) == n_graphs * width
    j.close()


def test_memory_growth_per_offloaded_key_is_bounded(tmp_path):
    """tracemalloc: recording + offloading 20,000 more keys grows Python memory by far less
    than the ~600 bytes per key of an in-memory index."""
    j = LineageJournal(tmp_path / "j", max_memory_entries=1000)
    _chain_graphs(j, 20, 50)  # warm up (statement caches, SQLite pages)
    j.offload(j.keys())
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for g in range(20, 420, 20):
            _chain_graphs(j, 20, 50, start=g)
            j.offload([(f"it-{x}", i) for x in range(g, g + 20) for i in range(50)])
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(j) == 420 * 50
    assert grown < 20_000 * 50, f"{grown} bytes for 20,000 keys"  # < 50 B/key (was ~600)
    j.close()


def _answers(j, keys):
    out = {}
    for k in keys:
        e = j.get(k)
        try:
            lin = [x.key for x in j.lineage([k])]
        except LineageIncomplete as err:
            lin = ("incomplete", tuple(err.missing))
        out[k] = (e, lin, j.is_checkpoint(k))
    return out


def _build(d):
    """A journal with chains, a checkpoint that cut lineage, and tuple/nested keys."""
    j = LineageJournal(d)
    _chain_graphs(j, 6, 4)
    j.record(7, [E(("nested", ("a", 1), 2), [("it-5", 0)]), E("plain", [("it-5", 1)])])
    j.checkpoint(8, E(("it-3", 2), boundary="checkpoint"))
    j.record(9, [E("after", [("it-3", 2), "plain"])])
    return j


ALL_KEYS = ([(f"it-{g}", i) for g in range(6) for i in range(4)]
            + [("nested", ("a", 1), 2), "plain", "after", "never"])


def _index_files(d):
    return [p for p in Path(d).iterdir() if p.name.startswith("index.sqlite")]


@pytest.mark.parametrize("damage", ["deleted", "garbage", "truncated", "stale", "empty-tables"])
def test_index_rebuilt_from_segments_gives_the_same_answers(tmp_path, damage):
    d = tmp_path / "j"
    j = _build(d)
    if damage == "stale":  # the index of an earlier state of this journal
        j.close()
        shutil.copy(d / "index.sqlite", tmp_path / "old-index")
        j = LineageJournal.open(d)
        j.record(10, [E("later", ["after"]), E(("it-0", 0), [])])  # a new key and a replaced one
    want = _answers(j, ALL_KEYS + ["later"])
    n = len(j)
    j.close()
    assert not [p for p in _index_files(d) if not p.name.endswith("index.sqlite")]  # WAL merged
    idx = d / "index.sqlite"
    if damage == "deleted":
        idx.unlink()
    elif damage == "garbage":
        data = bytearray(idx.read_bytes())
        data[100:4096] = os.urandom(3996)
        idx.write_bytes(bytes(data))
    elif damage == "truncated":
        with open(idx, "r+b") as f:
            f.truncate(idx.stat().st_size // 2)
    elif damage == "stale":
        shutil.copy(tmp_path / "old-index", idx)
    elif damage == "empty-tables":
        db = sqlite3.connect(idx)
        db.execute("DELETE FROM entries")
        db.execute("DELETE FROM edges")
        db.commit()
        db.close()
        # sizes and times of the segments still match: only quick_check-level damage and
        # disagreement with the files are detected, so make the index disagree
        for seg in sorted(d.glob("segment-*.mdj")):
            os.utime(seg, ns=(1, 1))
    j = LineageJournal.open(d)
    assert j.rebuilt is not None
    assert len(j) == n
    assert _answers(j, ALL_KEYS + ["later"]) == want
    # and it keeps working: record, checkpoint, compaction, reopen (this time trusted)
    j.record(10, [E("new", ["after"])])
    j.checkpoint(11, E("after", boundary="checkpoint"))
    j.compact()
    want2 = _answers(j, ALL_KEYS + ["new"])
    j.close()
    j = LineageJournal.open(d)
    assert j.rebuilt is None
    assert _answers(j, ALL_KEYS + ["new"]) == want2
    j.close()


def test_consistent_index_is_used_without_replay(tmp_path, monkeypatch):
    d = tmp_path / "j"
    j = _build(d)
    want = _answers(j, ALL_KEYS)
    j.close()
    import mars_dask.plugins._journal as J

    def no_replay(*a, **k):
        raise AssertionError("segments replayed although the index is consistent")

    monkeypatch.setattr(J, "read_segment", no_replay)
    j = LineageJournal.open(d)
    assert j.rebuilt is None
    assert _answers(j, ALL_KEYS) == want
    j.close()


def test_a_lying_index_never_returns_another_keys_record(tmp_path, caplog):
    """The index only locates records: one that points a key at another key's (intact,
    authenticated) record yields 'not journaled', never the wrong recipe."""
    d = tmp_path / "j"
    j = _build(d)
    j.close()
    db = sqlite3.connect(d / "index.sqlite")
    kb = lambda k: msgpack.packb(k, use_bin_type=True)  # noqa: E731
    seg, off = db.execute("SELECT seg, off FROM entries WHERE key = ?", (kb("plain"),)).fetchone()
    db.execute("UPDATE entries SET seg = ?, off = ? WHERE key = ?", (seg, off, kb(("it-5", 3))))
    db.commit()
    db.close()
    j = LineageJournal.open(d)  # sizes and times agree: the index is used as it is
    assert j.get("plain").key == "plain"
    assert j.get(("it-5", 3)) is None  # located at "plain"'s record: refused
    assert "not" in caplog.text and "it-5" in caplog.text
    j.close()


def test_index_file_is_private(tmp_path):
    d = tmp_path / "j"
    j = _build(d)
    j.close()
    j = LineageJournal.open(d)
    j.record(20, [E("x")])
    files = _index_files(d)
    assert files
    for p in files:
        assert stat.S_IMODE(p.stat().st_mode) == 0o600, p
    j.close()


def test_forgotten_checkpoints_are_reported(tmp_path):
    """drop_before reports the checkpoints it forgot (superseded), not one still needed."""
    j = LineageJournal(tmp_path / "j")
    j.record(1, [E("a"), E("b")])
    j.checkpoint(2, E("a", boundary="checkpoint"))
    j.checkpoint(2, E("b", boundary="checkpoint"))
    j.record(3, [E("a1", ["a"]), E("b1", ["b"]), E("uses-b", ["b"])])
    out: list = []
    forgotten = j.checkpoint(4, E("a1", boundary="checkpoint"), forgotten_checkpoints=out)
    assert forgotten == ["a"] and out == ["a"]
    out = []
    j.checkpoint(4, E("b1", boundary="checkpoint"), forgotten_checkpoints=out)
    assert out == [] and "b" in j and j.is_checkpoint("b")  # "uses-b" still needs it
    j.close()


def test_only_new_keeps_journaled_entries(tmp_path):
    j = LineageJournal(tmp_path / "j")
    j.record(1, [E("a"), E("b", ["a"])])
    j.checkpoint(2, E("b", boundary="checkpoint"))
    assert j.record(5, [E("b", ["a"]), E("c", ["b"])], only_new=True) == 1
    assert j.is_checkpoint("b") and j.get("b").graph_seq == 2 and j.get("c").graph_seq == 5
    j.close()
