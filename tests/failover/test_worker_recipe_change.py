"""A checkpoint changes a key's recipe (and drops its dependencies) on the scheduler; the
worker's own task state must follow (mars_dask/plugins/_checkpoint.py,
``_dask_internals.install_dependency_pruning``). Without a cluster:
a ``WorkerState`` driven by the events the scheduler would send. The CLI-cluster version
(a node loss after two shuffles in a row) is in test_lineage.py."""

from __future__ import annotations

from distributed.worker_state_machine import (
    ComputeTaskEvent,
    Execute,
    ExecuteSuccessEvent,
    FreeKeysEvent,
    WorkerState,
)

from mars_dask import _dask_internals as DI

ME = "tcp://127.0.0.1:1"


class _Worker:
    """What ``DI.install_dependency_pruning`` uses of a ``distributed.Worker``."""

    def __init__(self):
        self.state = WorkerState(nthreads=1, address=ME, validate=True)
        self.instructions = []

    def handle_stimulus(self, *stims):
        self.instructions += self.state.handle_stimulus(*stims)


def _computed(w, key, deps=()):
    w.handle_stimulus(ComputeTaskEvent.dummy(key, who_has={d: [ME] for d in deps}, stimulus_id=f"compute-{key}"))
    w.handle_stimulus(ExecuteSuccessEvent.dummy(key, 1, stimulus_id=f"done-{key}"))


def _state_after_recipe_change(prune: bool):
    """``a -> b -> c`` computed here, ``a`` and ``b`` released (``c``, in memory, keeps
    them in the worker's state), then ``b`` sent again as a loader (no dependencies)."""
    w = _Worker()
    if prune:
        DI.install_dependency_pruning(w)
    _computed(w, "a")
    _computed(w, "b", ["a"])
    _computed(w, "c", ["b"])
    w.handle_stimulus(FreeKeysEvent(keys=["a", "b"], stimulus_id="free"))
    assert {k: ts.state for k, ts in w.state.tasks.items()} == {"a": "released", "b": "released", "c": "memory"}
    w.instructions.clear()
    w.handle_stimulus(ComputeTaskEvent.dummy("b", stimulus_id="loader-b"))
    return w


def test_compute_task_without_the_old_dependencies_runs():
    """The loader runs at once; the old dependency, which nothing needs, is forgotten
    (Dask alone: ``b`` waits for ``a``, "missing" for ever, as nobody has it any more)."""
    plain = _state_after_recipe_change(prune=False)
    assert plain.state.tasks["b"].state == "waiting" and plain.state.tasks["a"].state == "missing"
    w = _state_after_recipe_change(prune=True)
    assert [type(i) for i in w.instructions] == [Execute] and w.instructions[0].key == "b"
    assert "a" not in w.state.tasks
    assert not w.state.tasks["b"].dependencies and w.state.tasks["c"].dependencies == {w.state.tasks["b"]}


def test_dependencies_still_named_are_kept():
    """A recomputation with the same recipe (the usual case) changes nothing."""
    w = _Worker()
    DI.install_dependency_pruning(w)
    DI.install_dependency_pruning(w)  # idempotent
    _computed(w, "a")
    _computed(w, "b", ["a"])
    _computed(w, "c", ["b"])
    w.handle_stimulus(FreeKeysEvent(keys=["b"], stimulus_id="free"))
    w.instructions.clear()
    w.handle_stimulus(ComputeTaskEvent.dummy("b", who_has={"a": [ME]}, stimulus_id="again-b"))
    assert [d.key for d in w.state.tasks["b"].dependencies] == ["a"]
    assert [type(i) for i in w.instructions] == [Execute]
