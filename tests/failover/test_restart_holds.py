"""The restart logic's holds (``plugins/_restart.py``) on Dask's own TaskStates, without a
cluster: the two ways in which two quick kills left keys restricted to a dead process (the
job then hung). The chaos tests find them only now and then; these replay them exactly."""

from __future__ import annotations

import pytest
from distributed.scheduler import TaskGroup, TaskPrefix, TaskState

import mars_dask  # noqa: F401 - the mars-dask.* config defaults
from mars_dask.plugins import _protocol as P
from mars_dask.plugins._restart import Death, Recovery


class _Scheduler:
    """What Recovery reads and calls of the scheduler on these paths."""

    allowed_failures = 3

    def __init__(self, tasks):
        self.tasks = {ts.key: ts for ts in tasks}
        self.transitions_made: list[dict] = []

    def transitions(self, recs, stimulus_id):
        self.transitions_made.append(dict(recs))


def _task(key, state="no-worker", restrictions=None) -> TaskState:
    ts = TaskState(key, None, state, TaskGroup(key, TaskPrefix(key)), validate=False)
    ts.worker_restrictions = set(restrictions) if restrictions else None
    ts.who_wants = {object()}  # a client wants it: recomputed when released
    return ts


def _death(recovery: Recovery, ident: str) -> Death:
    d = Death(address=f"tcp://127.0.0.1:{len(recovery.deaths) + 40000}", ident=ident, name=ident, pid=1,
              stimulus_id=f"remove-{ident}", memory_limit=0, processing=set(), executing=set(),
              tracked=True, hold_restart=True)
    recovery.deaths.setdefault(ident, []).append(d)
    return d


@pytest.mark.parametrize("first_over", ["first", "second"])
def test_a_key_held_by_one_death_is_not_held_again_by_another(first_over):
    own = {"tcp://127.0.0.1:1"}
    ts = _task("x", restrictions=own)
    r = Recovery(_Scheduler([ts]), quota=None)
    a, b = _death(r, "nanny-a"), _death(r, "nanny-b")
    r._hold(a, ts)
    assert ts.worker_restrictions == {P.HOLD_PREFIX + "nanny-a"} and a.saved["x"][0] == own
    r._hold(b, ts)  # the second kill, while the first still holds it
    assert "x" not in b.saved and ts.worker_restrictions == {P.HOLD_PREFIX + "nanny-a"}
    for d in ((a, b) if first_over == "first" else (b, a)):
        r._release(d, list(d.saved))
    assert ts.worker_restrictions == own  # not the first death's hold
    assert r.s.transitions_made == [{"x": "processing"}]


def test_a_stale_hold_is_never_saved_as_a_keys_own_restrictions():
    ts = _task("x", restrictions={P.HOLD_PREFIX + "nanny-gone"})  # nobody holds it any more
    r = Recovery(_Scheduler([ts]), quota=None)
    d = _death(r, "nanny-a")
    r._hold(d, ts)
    r._release(d, ["x"])
    assert ts.worker_restrictions is None


@pytest.mark.parametrize("finish", ["released", "memory", "erred"])
def test_an_adopted_key_gets_its_restrictions_back_whenever_it_leaves_processing(finish):
    """Adoption restricts a key to the restarted process; if that process dies before it
    answers, the key leaves ``processing`` for ``released`` and must not stay restricted
    to the dead address (a third death then holds it with its own restrictions)."""
    own = (None, None, None, False)
    ts = _task("x", state="processing", restrictions={"tcp://127.0.0.1:2"})
    r = Recovery(_Scheduler([ts]), quota=None)
    r._adopting_saved["x"] = own
    r.transition("x", "processing", finish, stimulus_id="remove-new-process")
    assert ts.worker_restrictions is None and "x" not in r._adopting_saved
    c = _death(r, "nanny-c")
    r._hold(c, ts)
    assert c.saved["x"] == own


@pytest.mark.parametrize("child_wanted", [True, False])
def test_held_ancestors_are_recomputed_only_if_something_still_needs_them(child_wanted):
    """A held ancestor waited for only by held keys nobody needs (the lineage of a result
    that was adopted meanwhile) is released, not recomputed: re-running it would re-run the
    whole lineage after each kill."""
    parent, child = _task("p"), _task("c")
    parent.who_wants = set()
    child.who_wants = {object()} if child_wanted else set()
    child.dependencies, parent.dependents, parent.waiters = {parent}, {child}, {child}
    r = Recovery(_Scheduler([parent, child]), quota=None)
    d = _death(r, "nanny-a")
    for ts in (parent, child):
        r._hold(d, ts)
    r._release(d, ["p", "c"])
    want = {"p": "processing", "c": "processing"} if child_wanted else {"p": "released", "c": "released"}
    assert r.s.transitions_made == [want]
