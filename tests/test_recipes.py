"""One key, one recipe (issue 17).

A chunk graph is often submitted in stages: iterative tiling executes part of it to learn
unknown shapes, later graphs re-emit what was not kept. The emitter decides a chunk's
fusion the first time the chunk is emitted; a later emission of the same key must carry the
same task (same dependencies), or the scheduler, which may still hold the key from the
earlier graph, logs "Detected different `run_spec`" and may wire dependents to the wrong
dependencies. ``tests/conftest.py`` fails any test during which that warning was logged.
"""

from __future__ import annotations

import random
import time

import dask
import pytest

from mars_dask.tiling.core import Chunk
from mars_dask.tiling import emit
from mars_dask.tiling.emit import build_graph, spec_to_task
from tests.conftest import RUN_SPEC_WARNING, run_spec_warnings


def _recipes(graph) -> dict:
    """key -> (function, dependencies) of every task the graph submits (not Futures)."""
    out = {}
    for layer in graph.layers.values():
        for k, spec in layer.specs.items():
            t = spec_to_task(spec)
            out[k] = (t.func, frozenset(t.dependencies))
    return out


class _Done:
    """Stands for the Future of an executed chunk (build_graph only places it)."""

    def __init__(self, key):
        self.key = key


def _ident(*xs):
    return xs


def _submit(outputs, seen: dict, fuse=True) -> dict:
    """Emit ``outputs`` as a session does (outputs then hold 'Futures'), checking that no
    key already submitted comes with other dependencies."""
    g = build_graph(outputs, fuse=fuse)
    recipes = _recipes(g)
    for k, r in recipes.items():
        if k in seen:
            assert seen[k] == r, f"{k!r}: first {sorted(seen[k][1])}, now {sorted(r[1])}"
        seen[k] = r
    for c in outputs:
        c.future = _Done(c.key)
    # every dependency is in the graph (a task, or a Future of an executed chunk)
    keys = {k for layer in g.layers.values() for k in layer}
    for k, (_, deps) in recipes.items():
        assert deps <= keys, (k, deps - keys)
    return recipes


def _relabel_pattern(n):
    """The merge's relabel_range over executed src_i: part_i -> len_i -> offsets -> out_i(part_i, offsets)."""
    src = [Chunk(("src", i), (i,), (1,), _ident, (i,), nbytes=8) for i in range(n)]
    for s in src:  # executed already (as the ETL's inputs of the merge)
        s.future = _Done(s.key)
    part = [Chunk(("part", i), (i,), (1,), _ident, (s,), nbytes=8) for i, s in enumerate(src)]
    lens = [Chunk(("len", i), (i,), (), _ident, (p,), nbytes=8) for i, p in enumerate(part)]
    offs = Chunk(("offs", 0), (0,), (n,), _ident, (lens,), nbytes=8)
    out = [Chunk(("out", i), (i,), (1,), _ident, (p, offs, i), nbytes=8) for i, p in enumerate(part)]
    return part, lens, offs, out


def test_staged_emission_keeps_each_keys_recipe():
    """The ETL's case: a first stage needs half of a merge's outputs (so ``part_i`` of the
    other half has one reader there, ``len_i``, and is fused into it); the second stage
    needs the rest (``part_i`` now has two readers): ``len_i`` must still inline it."""
    part, lens, offs, out = _relabel_pattern(6)
    seen: dict = {}
    first = _submit(out[:3], seen)
    assert ("part", 4) not in first and first[("len", 4)][1] == {("src", 4)}  # fused
    second = _submit(out, seen)
    assert second[("len", 4)][1] == {("src", 4)}  # the same recipe
    assert ("part", 4) in second  # computed on its own too, for out_4


def test_inlined_input_executed_since_is_recomputed_inline():
    """An input inlined into a key stays inlined there after it was executed on its own."""
    part, lens, offs, out = _relabel_pattern(3)
    seen: dict = {}
    _submit(out[:1], seen)  # len_1, len_2 inline part_1, part_2
    _submit(part, seen)  # part_i executed on their own
    offs.future = None
    again = _submit([offs], seen)
    assert again[("len", 1)][1] == {("src", 1)}


def test_same_expression_built_twice_gets_the_first_recipe():
    """The same expression built again tiles into new Chunk objects with the same keys (so
    the data held on the cluster is reused): they adopt the first objects' fusion, even
    where their own graph would decide otherwise."""
    part, lens, offs, out = _relabel_pattern(4)
    seen: dict = {}
    _submit(out[:2], seen)  # len_2, len_3 inline part_2, part_3
    part2, lens2, offs2, out2 = _relabel_pattern(4)  # rebuilt: nothing executed there
    again = _submit(out2, seen)  # part_2 has two readers now: still inlined into len_2
    assert again[("len", 2)][1] == {("src", 2)}
    del part, lens, offs, out
    assert emit._decided(("len", 2)) is not None  # held by the rebuilt chunks
    del part2, lens2, offs2, out2
    import gc

    gc.collect()
    assert ("len", 2) not in emit._decisions  # the registry does not outlive the chunks


def _random_dag(rng: random.Random, n: int) -> list[Chunk]:
    chunks: list[Chunk] = []
    for i in range(n):
        k = rng.choice([0, 1, 1, 1, 2, 3]) if chunks else 0
        ins = rng.sample(chunks, min(k, len(chunks)))
        chunks.append(Chunk(("c", i), (i,), (1,), _ident, (*ins, i), nbytes=8,
                            blockwise=rng.random() < 0.5))
    return chunks


@pytest.mark.parametrize("seed", range(40))
def test_random_stages_keep_each_keys_recipe(seed):
    """Random DAGs submitted in random stages, with executed chunks randomly lost (their
    Futures dropped, as when intermediate results are released): every key keeps the
    dependencies it was first submitted with."""
    rng = random.Random(seed)
    chunks = _random_dag(rng, rng.randint(5, 40))
    seen: dict = {}
    for _ in range(rng.randint(2, 6)):
        for c in chunks:
            if c.future is not None and rng.random() < 0.3:
                c.future = None
        outs = rng.sample(chunks, rng.randint(1, max(1, len(chunks) // 3)))
        _submit(outs, seen, fuse=rng.random() < 0.9)


def _inc(x):
    return x + 1


def test_a_key_with_two_recipes_is_noticed(client):
    """The hook in conftest sees the scheduler's warning (this test takes it, so that it
    does not fail itself)."""
    run_spec_warnings.take()
    held = client.get({"a": 1, "b": 2, "x-17": (_inc, "a"), "y-17": (_inc, "x-17")}, "y-17", sync=False)
    assert held.result() == 3  # x-17 is released but its task state stays (y-17 holds it)
    other = client.get({"b": 2, "x-17": (_inc, "b"), "z-17": (_inc, "x-17")}, "z-17", sync=False)
    other.result()
    deadline = time.monotonic() + 10
    while not run_spec_warnings.messages and time.monotonic() < deadline:
        time.sleep(0.05)
    found = run_spec_warnings.take()
    del held, other
    assert found and RUN_SPEC_WARNING in found[0] and "x-17" in found[0]


def _dup_frame():
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(3)  # few distinct rows: after its candidates, "auto" picks the tree
    return pd.DataFrame({"a": rng.integers(0, 5, 2000), "b": rng.integers(0, 3, 2000)})


def test_drop_duplicates_rebuilt_after_its_input_was_executed(client):
    """drop_duplicates executes its candidates first (a tiling stage) with the input
    chunks inlined into them; built again once its input was executed, the candidates'
    keys must keep the recipe the scheduler holds (the hook in conftest fails this test
    otherwise)."""
    import pandas as pd

    import mars_dask.dataframe as md

    p = _dup_frame()
    df = md.DataFrame(p, chunk_size=300)
    with dask.config.set({"mars-dask.tiling.chunk-store-limit": 10_000}):  # candidates first
        r = df.drop_duplicates(["a", "b"]).execute()
        df.execute()
        r2 = df.drop_duplicates(["a", "b"]).execute()
    assert r2.key == r.key
    pd.testing.assert_frame_equal(r2.fetch(), p.drop_duplicates(["a", "b"]))
    pd.testing.assert_frame_equal(r.fetch(), p.drop_duplicates(["a", "b"]))


def test_tiling_configuration_is_part_of_the_key(client):
    """The same drop_duplicates under another chunk-store limit tiles into another chunk
    graph: it gets another key (before, the second graph re-used the first one's output
    keys with other dependencies)."""
    import mars_dask.dataframe as md

    df = md.DataFrame(_dup_frame(), chunk_size=300)
    with dask.config.set({"mars-dask.tiling.chunk-store-limit": 16}):
        a = df.drop_duplicates(["a", "b"])
    b = df.drop_duplicates(["a", "b"])
    assert a.key != b.key
    assert df.drop_duplicates(["a", "b"]).key == b.key  # still the same expression, same key


def test_shuffle_rebuilt_after_its_boundaries_were_checkpointed(client):
    import pandas as pd

    import mars_dask.dataframe as md

    p = _dup_frame()
    df = md.DataFrame(p, chunk_size=300)
    r = df.drop_duplicates(["a", "b"], method="shuffle").execute()
    df.execute()
    r2 = df.drop_duplicates(["a", "b"], method="shuffle").execute()
    pd.testing.assert_frame_equal(r2.fetch(), p.drop_duplicates(["a", "b"]))
    del r


def test_resubmitted_key_whose_lineage_was_offloaded(client):
    """A key in memory whose released inputs the scheduler forgot (lineage offload, #16:
    their recipes live in the journal) is submitted again with its own recipe, the same
    expression built again. Dask compares the recipe's dependencies with the ones its task
    still has (none, after the offload) and would warn about a second recipe (and keep the
    edges cut); the failover plugin recognises the same recipe, and the graph refers to the
    key by name. This happened between tests in CI (a previous test's release arrived late)."""
    import numpy as np

    import mars_dask.tensor as mt

    def build():
        return mt.arange(12, chunk_size=4)

    x = build().execute()
    y = (x * 2).execute()
    x_keys = [c.key for c in x.data.chunks]
    del x
    deadline = time.monotonic() + 10

    def held(keys):
        return client.run_on_scheduler(lambda dask_scheduler: [k for k in keys if k in dask_scheduler.tasks])

    while held(x_keys) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not held(x_keys), "the inputs' lineage was not offloaded"
    y2 = (build() * 2).execute()
    assert y2.key == y.key
    np.testing.assert_array_equal(y2.fetch(), np.arange(12) * 2)
    assert not run_spec_warnings.messages
