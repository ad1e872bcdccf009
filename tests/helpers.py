"""Shared by the tests: results of lazy tileables against numpy, a call run in a thread,
and the environment of an embedded cluster started in a fresh interpreter."""

import math
import os
import threading
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent

#: Only the restarted process gives a dead process's results back (no live worker takes its
#: store over: ``mars-dask.scheduler.restart-take-over``): for tests of that path, and where
#: one machine plays a node lost for good (worker and nanny SIGKILLed), whose store files
#: are still readable here but would be gone with a real lost node
NO_TAKE_OVER_ENV = {"DASK_MARS_DASK__SCHEDULER__RESTART_TAKE_OVER": "false"}


def run_in_thread(fn, *args, **kwargs):
    """Start ``fn(*args, **kwargs)`` in a daemon thread; returns ``(thread, box)``, the box
    getting ``"result"`` or ``"error"`` (the exception, handed to the test)."""
    box: dict = {}

    def run():
        try:
            box["result"] = fn(*args, **kwargs)
        except BaseException as e:  # noqa: BLE001 - handed to the test
            box["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, box


def embedded_env(tmp_path) -> dict:
    """``os.environ`` plus what makes ``execute()``'s embedded cluster small (1 worker, 1
    thread, 1 GiB) with its files in ``tmp_path``, for a script run in a fresh interpreter."""
    env = dict(os.environ)
    env.update({
        "DASK_MARS_DASK__EMBEDDED__N_WORKERS": "1",
        "DASK_MARS_DASK__EMBEDDED__THREADS_PER_WORKER": "1",
        "DASK_MARS_DASK__EMBEDDED__MEMORY_LIMIT": "1GiB",
        "DASK_MARS_DASK__STORE__DIRECTORY": str(tmp_path / "shm"),
        "DASK_MARS_DASK__STORE__SPILL_DIRECTORY": str(tmp_path / "spill"),
        "DASK_MARS_DASK__FAILOVER__JOURNAL_DIRECTORY": str(tmp_path / "journal"),
        "DASK_MARS_DASK__FAILOVER__CHECKPOINT_DIRECTORY": str(tmp_path / "checkpoints"),
        "DASK_DISTRIBUTED__WORKER__DAEMON": "False",
        "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    })
    return env


def _same_shape(lazy_shape, real_shape):
    assert len(lazy_shape) == len(real_shape), (lazy_shape, real_shape)
    for a, b in zip(lazy_shape, real_shape):
        assert (isinstance(a, float) and math.isnan(a)) or a == b, (lazy_shape, real_shape)


def assert_tensor(t, expected, *, rtol=1e-7, atol=0, check_dtype=True, exact=None):
    """Execute ``t`` and compare with the numpy result ``expected``.

    Checks that the lazy metadata (shape where known, dtype) matched numpy's before
    execution, that the shape is fully known afterwards, and the values (exactly for
    integer/bool dtypes, to ``rtol``/``atol`` for floats); a 0-d result must fetch as a numpy
    scalar, as numpy's reductions give.
    """
    expected = np.asarray(expected)
    _same_shape(t.shape, expected.shape)
    if check_dtype:
        assert t.dtype == expected.dtype, (t.dtype, expected.dtype)
    t.execute()
    assert tuple(t.shape) == expected.shape, (t.shape, expected.shape)
    got = t.fetch()
    # numpy (and Mars) give a scalar for a 0-d result, an array otherwise
    assert isinstance(got, np.generic if expected.ndim == 0 else np.ndarray), type(got)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    if check_dtype:
        assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    if exact is None:
        exact = expected.dtype.kind not in "fc"
    if exact:
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)
    return got
