"""rechunk and chunk-size normalisation against numpy."""

import numpy as np
import pytest

import mars_dask.tensor as mt
from mars_dask.tensor.utils import normalize_chunk_size
from tests.helpers import assert_tensor

A = np.arange(7 * 11 * 3, dtype=np.float64).reshape(7, 11, 3)


@pytest.mark.parametrize(
    "src, dst, nsplits",
    [
        (3, 4, ((4, 3), (4, 4, 3), (3,))),
        ((2, 5, 1), (7, 11, 3), ((7,), (11,), (3,))),
        (4, ((1, 6), (5, 6), (1, 2)), ((1, 6), (5, 6), (1, 2))),
        (5, {1: 2}, ((5, 2), (2, 2, 2, 2, 2, 1), (3,))),
        (2, (-1, None, 1), ((7,), (11,), (1, 1, 1))),
    ],
)
def test_rechunk_values_and_layout(client, src, dst, nsplits):
    t = mt.tensor(A, chunk_size=src).rechunk(dst)
    assert t.shape == A.shape
    t.execute()
    assert t.nsplits == nsplits
    np.testing.assert_array_equal(t.fetch(), A)


def test_rechunk_to_same_layout_is_a_no_op():
    t = mt.tensor(A, chunk_size=3)
    t._ensure_tiled()
    assert t.rechunk(3) is t


def test_rechunk_1d_and_size_zero(client):
    assert_tensor(mt.arange(10, chunk_size=3).rechunk(4), np.arange(10))
    z = mt.ones((0, 4), chunk_size=2).rechunk(3)
    assert_tensor(z, np.ones((0, 4)))


def test_rechunk_unknown_shape_is_tiled_iteratively(client):
    x = mt.tensor(A.ravel(), chunk_size=20)
    f = x[x % 3 == 0]
    assert np.isnan(f.shape[0])
    r = f.rechunk(7).execute()
    expected = A.ravel()[A.ravel() % 3 == 0]
    assert r.nsplits[0][:-1] == (7,) * (len(r.nsplits[0]) - 1)
    np.testing.assert_array_equal(r.fetch(), expected)


def test_rechunk_reads_only_overlapping_chunks():
    t = mt.tensor(np.arange(100), chunk_size=10).rechunk(25)
    t._ensure_tiled()
    for chunk in t.chunks:
        assert len(chunk.inputs) in (3, 2)  # 25 elements overlap 3 (or 2) chunks of 10


def test_chunk_size_errors():
    with pytest.raises(ValueError, match="positive"):
        normalize_chunk_size((4, 4), 0)
    with pytest.raises(ValueError, match="sums to"):
        normalize_chunk_size((5,), ((2, 2),))
    with pytest.raises(ValueError, match="more dimensions"):
        normalize_chunk_size((5,), (2, 2))
    assert normalize_chunk_size((5, 5), (2,)) == ((2, 2, 1), (5,))  # Mars: the rest chosen for you
    with pytest.raises(TypeError):
        normalize_chunk_size((5,), "big")
    with pytest.raises(ValueError):
        mt.ones((4, 4), chunk_size=2).rechunk(0)


def test_auto_chunks_respect_the_byte_limit():
    import dask

    with dask.config.set({"mars-dask.tiling.chunk-store-limit": "1KiB"}):
        ns = normalize_chunk_size((100, 100), None, 8)
    assert max(ns[0]) * max(ns[1]) * 8 <= 1024
    assert sum(ns[0]) == 100 and sum(ns[1]) == 100


_IMPORT_RACE = r'''
import sys, threading, time

class SlowFinder:
    """Holds the thread importing dask.array inside dask/array/backends.py: after
    dask.array.core is loaded, before numpy is registered with concatenate's dispatch."""
    def find_spec(self, name, path=None, target=None):
        if name == "dask.array.percentile" and threading.current_thread().name == "importer":
            time.sleep(1.5)
        return None

sys.meta_path.insert(0, SlowFinder())
import numpy as np
from mars_dask.tiling.tileable import concatenate_grid

t = threading.Thread(target=lambda: __import__("dask.array"), name="importer")
t.start()
deadline = time.monotonic() + 30
while not hasattr(sys.modules.get("dask.array.core"), "concatenate3"):
    assert time.monotonic() < deadline
    time.sleep(0.005)
assert "dask.array.percentile" not in sys.modules  # the importer is still inside the package
out = concatenate_grid([np.zeros((2, 2)), np.ones((2, 2))], (2, 1))
t.join()
assert out.shape == (4, 2) and out.sum() == 4
print("joined")
'''


def test_joining_blocks_while_another_thread_imports_dask_array():
    """A worker thread joining blocks (rechunk, fetch, repr) while another thread is still
    importing dask.array got "No dispatch for <class 'numpy.ndarray'>" (seen once in a
    two-thread worker): ``dask.array.core`` was loaded, the package had not registered
    numpy yet. Reproduced deterministically in a fresh interpreter by holding the importing
    thread inside the package."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _IMPORT_RACE], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "joined" in out.stdout, out.stderr[-2000:]
