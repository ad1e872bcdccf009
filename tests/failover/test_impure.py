"""``mars_dask.impure(t)``: a chunk with side effects runs at most once, on a CLI cluster as
the README starts it. A worker process SIGKILLed while such a chunk runs makes the job fail
with ImpureTaskLostError naming the chunk, and no chunk's side effect happened twice; the
same job unmarked re-runs the killed chunk (what the guard prevents) and succeeds."""

from __future__ import annotations

import threading
import time
from collections import Counter

import numpy as np
import pytest

import mars_dask
import mars_dask.tensor as mt
from mars_dask.errors import ImpureTaskLostError
from mars_dask.tensor.arithmetic import elementwise
from tests.worker import _kernels as K

pytestmark = pytest.mark.timeout(240)


def _runs(path) -> Counter:
    return Counter(path.read_text().split()) if path.exists() else Counter()


def _kill_mid_job(c, y, path, n):
    box = {}

    def run():
        try:
            box["result"] = mars_dask.execute(y)
        except BaseException as e:  # noqa: BLE001 - handed to the test
            box["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    c.wait(lambda: sum(_runs(path).values()) >= 2, 60, "two chunks started")
    time.sleep(0.1)
    c.kill_worker_process("w0")
    t.join(180)
    assert not t.is_alive(), "job did not end\n" + c.logs()
    return box


@pytest.mark.parametrize("marked", [True, False], ids=["impure", "unmarked"])
def test_impure_chunks_never_run_twice(cli_cluster, tmp_path, marked):
    c = cli_cluster(mars=True, n_workers=1, nthreads=1, env={"DASK_MARS_DASK__SCHEDULER__RESTART_GRACE": "60s"})
    n = 6
    path = tmp_path / f"effects-{marked}.txt"
    x = mt.arange(n, chunk_size=1)
    y = elementwise(K.record_then_add_one, x, dtype=x.dtype, path=str(path), delay=0.5)
    if marked:
        assert mars_dask.impure(y) is y
    box = _kill_mid_job(c, y, path, n)
    runs = _runs(path)
    if marked:
        assert isinstance(box.get("error"), ImpureTaskLostError), box
        assert "ran before" in str(box["error"])
        assert max(runs.values()) == 1, runs  # no side effect happened twice
    else:
        assert "error" not in box, box
        np.testing.assert_array_equal(y.fetch(), np.arange(n) + 1)
        assert max(runs.values()) >= 2, runs  # the killed chunk ran again: what impure() prevents


def test_impure_without_faults_and_a_deliberate_rerun(cli_cluster, tmp_path):
    c = cli_cluster(mars=True, n_workers=1, nthreads=2)
    path = tmp_path / "effects.txt"
    x = mt.arange(4, chunk_size=1)

    def build():
        return mars_dask.impure(elementwise(K.record_then_add_one, x, dtype=x.dtype, path=str(path), delay=0.05))

    y = build()
    mars_dask.execute(y)
    np.testing.assert_array_equal(y.fetch(), np.arange(4) + 1)
    assert _runs(path) == Counter({str(i): 1 for i in range(4)})
    del y  # released: executing the same expression again is a new, deliberate run
    c.wait(lambda: not c.client.run_on_scheduler(
        lambda dask_scheduler: dask_scheduler.plugins["mars-dask"].impure.claimed), 30, "claims released")
    y = build()
    mars_dask.execute(y)
    assert _runs(path) == Counter({str(i): 2 for i in range(4)})
